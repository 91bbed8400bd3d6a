package main

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/pgtest"
)

// gen leases its machine ID from PostgreSQL, as a role with a password,
// creating the table the first time: while one process holds an ID,
// another gets a different one, and the table shows the holder's row.
func TestCLIPostgresLease(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	pg := pgtest.Start(t)
	dsn := pg.AddRole("ringflake", "s3cret")
	url := dsn + "&table=leases"
	held := holdLease(t, bin, url)
	other := genMachine(t, bin, strings.Replace(url, "postgres://", "postgresql://", 1), 1000)
	assert.NotEqual(t, held, other, "a second process should get another machine ID while the first holds its lease")

	assert.Equal(t, []int64{held}, tableOwners(t, pg, "leases"),
		"the holder's ID should be the one owned in the table; the second process released its own")
}

// pgOwners returns the machine IDs owned in pg's default table.
func pgOwners(t *testing.T, pg *pgtest.Server) []int64 {
	t.Helper()
	return tableOwners(t, pg, "ringflake_machine_ids")
}

// tableOwners returns the machine IDs owned in table, in order.
func tableOwners(t *testing.T, pg *pgtest.Server, table string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id FROM "+table+" WHERE owner IS NOT NULL ORDER BY id")
	require.NoError(t, err)
	owned, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return owned
}

// A wrong password, or none, is refused with one line that shows the URL
// without the password.
func TestCLIPostgresCredentials(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	pg := pgtest.Start(t)
	dsn := pg.AddRole("ringflake", "s3cret")
	for _, tt := range []struct {
		name, url string
	}{
		{"wrong password", strings.Replace(dsn, ":s3cret@", ":wrong@", 1)},
		{"no password", strings.Replace(dsn, ":s3cret@", "@", 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := runCLI(context.Background(), bin, []string{"gen", "--lease", tt.url}, 0, 0)
			require.NoError(t, err)
			assert.Equal(t, 1, p.code, "exit status; stderr %q", p.stderr)
			assert.Empty(t, p.ids)
			assert.Equal(t, 1, strings.Count(p.stderr, "\n"), "want one line on stderr, got %q", p.stderr)
			assert.Equal(t, 1, strings.Count(p.stderr, "ringflake: "), "want one prefix, got %q", p.stderr)
			assert.Contains(t, p.stderr, `password authentication failed for user "ringflake"`)
			assert.NotContains(t, p.stderr, "wrong@")
		})
	}
}

func TestCLIPostgresUnreachable(t *testing.T) {
	t.Parallel()
	checkUnreachable(t, buildCLI(t), "postgres://ringflake:s3cret@"+deadPort(t)+"/postgres?sslmode=disable")
}

// genStopBound is how long gen may take to stop after SIGTERM when its
// database cannot be reached, at the default TTL of 10s: the release waits
// at most twice the call timeout (2s) and a tenth, and the pool's close
// pgCloseWait; the rest is slack for a busy machine. It must stay well
// inside Kubernetes' default grace period of 30s, with serve's drain.
const genStopBound = 10 * time.Second

// gen stops soon after SIGTERM when the database stops answering (the
// server is paused, as a host that cannot be reached): the release gives up
// after the call timeout, and the pool's close does not wait for pgx's
// cancel requests.
func TestCLIPostgresStopWhenUnreachable(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	pg := pgtest.Start(t)
	cmd := exec.Command(bin, "gen", "--lease", pg.AddRole("ringflake", "s3cret"), "-n", "1000000000000")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{}) // closed when gen has exited
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	r := bufio.NewReader(out)
	_, err = r.ReadString('\n')
	require.NoError(t, err, "gen should print an ID")
	go func() { _, _ = io.Copy(io.Discard, r) }() // gen must never block on stdout

	pg.Pause()
	defer pg.Resume()
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-done:
		took := time.Since(start)
		t.Logf("gen exited %v after SIGTERM; stderr %q", took, stderr.String())
		assert.Less(t, took, genStopBound, "gen's stop with the database unreachable")
	case <-time.After(time.Minute):
		t.Fatalf("gen did not exit within a minute of SIGTERM; stderr %q", stderr.String())
	}
}
