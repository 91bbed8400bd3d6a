package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/mysqltest"
)

// gen leases its machine ID from MariaDB, creating the table the first
// time: while one process holds an ID, another gets a different one, and
// the table shows the holder's row.
func TestCLIMySQLLease(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := mysqltest.Start(t)
	url := srv.URL() + "?table=leases"
	held := holdLease(t, bin, url)
	other := genMachine(t, bin, url, 1000)
	assert.NotEqual(t, held, other, "a second process should get another machine ID while the first holds its lease")
	out, err := srv.Client("SELECT id FROM test.leases WHERE owner IS NOT NULL ORDER BY id")
	require.NoError(t, err, out)
	assert.Equal(t, []string{strings.TrimSpace(out)}, []string{strconv.FormatInt(held, 10)},
		"the holder's ID should be the one owned in the table; the second process released its own")
}

// A second process on a full range waits, saying once who holds the range,
// and issues once the holder is killed (SIGKILL: nothing released) and its
// lease has expired on the database's clock.
func TestCLIMySQLFullRangeWaits(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := mysqltest.Start(t)
	holder := exec.Command(bin, "gen", "--lease", srv.URL(), "--machine-range", "3-3", "--lease-ttl", "2s", "-n", "1000000000000")
	out, err := holder.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	_, err = bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the holder should print an ID")

	errFile := filepath.Join(t.TempDir(), "stderr")
	stderr, err := os.Create(errFile)
	require.NoError(t, err)
	defer stderr.Close()
	waiter := exec.Command(bin, "gen", "--lease", srv.URL(), "--machine-range", "3-3", "--lease-ttl", "2s", "--acquire-timeout", "30s", "-n", "3")
	var ids strings.Builder
	waiter.Stdout, waiter.Stderr = &ids, stderr
	require.NoError(t, waiter.Start())
	done := make(chan error, 1)
	go func() { done <- waiter.Wait() }()
	t.Cleanup(func() { _ = waiter.Process.Kill() })
	said := func() string { b, _ := os.ReadFile(errFile); return string(b) }
	require.Eventually(t, func() bool { return strings.Contains(said(), "waiting for a machine ID") }, 20*time.Second, 20*time.Millisecond,
		"the newcomer should say it waits; stderr %q", said())
	assert.Contains(t, said(), `level=WARN msg="ringflake: waiting for a machine ID: every ID in the range is held"`)
	assert.Contains(t, said(), "machine IDs 3..3 of ringflake_machine_ids held, each by an unexpired owner: root@127.0.0.1 (1)", "the message names the holder")

	require.NoError(t, holder.Process.Kill())
	select {
	case err := <-done:
		require.NoError(t, err, "the newcomer's exit; stderr %q", said())
	case <-time.After(40 * time.Second):
		t.Fatalf("the newcomer did not issue within 40s of the holder's death; stderr %q", said())
	}
	assert.Len(t, strings.Fields(ids.String()), 3, "the newcomer's IDs")
	assert.Equal(t, 1, strings.Count(said(), "\n"), "one line on stderr, the wait's; got %q", said())
}

// A wrong password is refused with one line that names the URL without
// the password; a URL without a database is refused before any connection.
func TestCLIMySQLRefusals(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	srv := mysqltest.Start(t)
	out, err := srv.Client("CREATE USER 'ringflake'@'127.0.0.1' IDENTIFIED BY 's3cret'", "GRANT ALL ON test.* TO 'ringflake'@'127.0.0.1'")
	require.NoError(t, err, out)
	good := strings.Replace(srv.URL(), "root@", "ringflake:s3cret@", 1)
	genMachine(t, bin, good, 10)
	for _, tt := range []struct{ name, url, want string }{
		{"wrong password", strings.Replace(good, ":s3cret@", ":wrong@", 1), "Access denied for user 'ringflake'@'127.0.0.1' (using password: YES)"},
		{"no database", strings.TrimSuffix(good, "/test"), `want the database as the URL's path, as in mysql://user:pass@host:3306/app; got ""`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", tt.url}, 0, 0)
			require.NoError(t, err)
			assert.NotZero(t, p.code, "exit status; stderr %q", p.stderr)
			assert.Empty(t, p.ids)
			assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)
			assert.Contains(t, p.stderr, tt.want)
			assert.NotContains(t, p.stderr, "wrong@")
		})
	}
}

func TestCLIMySQLUnreachable(t *testing.T) {
	t.Parallel()
	checkUnreachable(t, buildCLI(t), "mysql://ringflake:s3cret@"+deadPort(t)+"/app")
}
