package main

import (
	"context"
	"strings"
	"testing"

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
