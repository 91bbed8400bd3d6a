package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// holdLease starts gen with --lease url and a -n it never reaches, and
// returns the machine ID of its first ID. gen then blocks writing to a
// pipe nobody reads, holding its lease, until the test ends: the pipe is
// closed, and gen must release the lease and exit with status 141.
func holdLease(t *testing.T, bin, url string) int64 {
	t.Helper()
	cmd := exec.Command(bin, "gen", "--lease", url, "--lease-ttl", "2s", "-n", "1000000000000")
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer errFile.Close() // the process has its own copy
	cmd.Stderr = errFile
	stderr := func() string { b, _ := os.ReadFile(errFile.Name()); return string(b) }
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = out.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if assert.ErrorAs(t, err, &ee, "the holder should end on its closed pipe") {
				assert.Equal(t, 141, ee.ExitCode(), "the holder's exit status; stderr %q", stderr())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("the holder did not exit within 10s of its pipe closing; stderr %q", stderr())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the holder should print an ID; stderr %q", stderr())
	id, err := ringflake.ParseID(strings.TrimSpace(line))
	require.NoError(t, err)
	return ringflake.DefaultLayout().Decompose(id).Machine
}

// genMachine runs gen -n n with --lease url and returns the machine ID of
// its IDs, checking that it printed n distinct IDs, in increasing order, all
// with that machine ID.
func genMachine(t *testing.T, bin, url string, n int) int64 {
	t.Helper()
	p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", url, "--lease-ttl", "2s", "-n", strconv.Itoa(n)}, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 0, p.code, "exit status; stderr %q", p.stderr)
	require.Len(t, p.ids, n, "IDs printed")
	layout := ringflake.DefaultLayout()
	machine := layout.Decompose(ringflake.ID(p.ids[0])).Machine
	for i, id := range p.ids {
		assert.Equal(t, machine, layout.Decompose(ringflake.ID(id)).Machine, "machine ID of ID %d", i)
		if i > 0 {
			require.Greater(t, id, p.ids[i-1], "ID %d should be above the one before", i)
		}
	}
	return machine
}

// checkUnreachable runs gen against a store URL that nobody listens at and
// checks that it fails with one line that names the URL and the refused
// connection, well within the acquire timeout.
func checkUnreachable(t *testing.T, bin, url string) {
	t.Helper()
	start := time.Now()
	p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", url, "--acquire-timeout", "5s"}, 0, 0)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "gen should give up within the acquire timeout")
	assert.Equal(t, 1, p.code, "exit status for an unreachable store; stderr %q", p.stderr)
	assert.Empty(t, p.ids)
	assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)
	assert.Equal(t, 1, strings.Count(p.stderr, "ringflake: "), "want one prefix, got %q", p.stderr)
	assert.True(t, strings.HasPrefix(p.stderr, "ringflake: gen: lease "), "stderr %q should name the lease", p.stderr)
	assert.Contains(t, p.stderr, syscall.ECONNREFUSED.Error(), "the line should carry the system's own word for the refusal")
}

// deadPort returns a loopback address that was free a moment ago, where
// nothing listens.
func deadPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
