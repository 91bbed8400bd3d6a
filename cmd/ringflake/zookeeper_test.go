package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/zktest"
)

// gen leases its machine ID from ZooKeeper: while one process holds an ID,
// another gets a different one; and on a full range, a third waits, saying
// so, and then fails naming the holder.
func TestCLIZooKeeperLease(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	e := zktest.Start(t)
	url := "zk://" + strings.Join(e.Addrs(), ",") + "/cli"
	held := holdLease(t, bin, url)
	other := genMachine(t, bin, url, 1000)
	assert.NotEqual(t, held, other, "a second process should get another machine ID while the first holds its lease")

	p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", url, "--lease-ttl", "2s", "--machine-range", "0-0", "--acquire-timeout", "1s"}, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, p.code, "exit status; stderr %q", p.stderr)
	lines := strings.Split(strings.TrimSuffix(p.stderr, "\n"), "\n")
	require.Len(t, lines, 2, "the wait's record and the error; stderr %q", p.stderr)
	assert.Contains(t, lines[0], `level=WARN msg="ringflake: waiting for a machine ID: every ID in the range is held"`)
	assert.True(t, strings.HasPrefix(lines[1], "ringflake: gen: lease "+url+": getting the machine ID: "), "the error %q", lines[1])
	assert.Contains(t, lines[1], "machine IDs 0..0 held")
	assert.Regexp(t, `0 by \S+ pid \d+ \(session 0x[0-9a-f]+\)`, lines[1], "the error should name the holder")
}

func TestCLIZooKeeperUnreachable(t *testing.T) {
	t.Parallel()
	checkUnreachable(t, buildCLI(t), "zk://"+deadPort(t))
}

// A gen paused (SIGSTOP) past its session timeout loses its ID: ZooKeeper
// expires the session and another gen takes the ID. When the paused one
// runs again, it is past its lease's deadline: it fails with the lease
// lost, and every ID it printed is below every ID of the other.
func TestCLIZooKeeperPausedHolder(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	e := zktest.Start(t)
	url := "zk://" + e.Addrs()[0] + "/paused"
	cmd := exec.Command(bin, "gen", "--lease", url, "--lease-ttl", "2s", "--machine-range", "0-0", "-n", "1000000000000")
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer errFile.Close()
	cmd.Stderr = errFile
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{}) // closed once waitErr is set
	var waitErr error
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	var (
		mu    sync.Mutex
		first []int64
	)
	printed := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			id, _ := strconv.ParseInt(sc.Text(), 10, 64)
			mu.Lock()
			first = append(first, id)
			mu.Unlock()
			select {
			case printed <- struct{}{}:
			default:
			}
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	select {
	case <-printed:
	case <-time.After(30 * time.Second):
		b, _ := os.ReadFile(errFile.Name())
		t.Fatalf("the first gen printed no ID within 30s; stderr %q", b)
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGSTOP))
	p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", url, "--lease-ttl", "2s", "--machine-range", "0-0", "-n", "100", "--acquire-timeout", "30s"}, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 0, p.code, "the second gen should get ID 0 once ZooKeeper expired the paused one's session; stderr %q", p.stderr)
	require.Len(t, p.ids, 100)
	require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))

	select {
	case <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, waitErr, &ee, "the resumed gen should fail")
		assert.Equal(t, 1, ee.ExitCode())
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed gen still runs 30s after SIGCONT; want it to fail with its lease lost")
	}
	b, _ := os.ReadFile(errFile.Name())
	assert.Contains(t, string(b), "lease lost", "the resumed gen's stderr")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, first)
	assert.Less(t, slices.Max(first), slices.Min(p.ids), "every ID of the paused gen should be below every ID of the one that took its machine ID")
}
