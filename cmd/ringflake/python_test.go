package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// python is Debian's Python, whose python3-grpcio and python3-grpc-tools
// scripts/test installs; a python3 earlier on PATH (pyenv's, say) lacks
// them.
const python = "/usr/bin/python3"

// A Python caller, with Debian's grpcio and stubs that Debian's grpc_tools
// (libprotoc 3.5.1) generates from ringflake.proto as it runs, takes 3,000
// IDs from serve by NextID, NextIDs and Blocks and checks them
// (testdata/idclient.py): none twice, each above the one before, each of
// the server's machine ID and of the calls' time under Info's layout, and
// Decode's parts, datacenter and worker set under this split layout, equal
// to its own reading.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	_, err := os.Stat(python)
	require.NoError(t, err, "Debian's python3 is needed, with python3-grpcio and python3-grpc-tools: scripts/test installs them")
	s := startServer(t, "--machine-id", "3", "--datacenter-bits", "5", "--datacenter", "1", "--grpc-addr", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/idclient.py", "../../ringflakeclient/ringflakepb", s.grpcAddr(t), "3000")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "idclient.py: %s", stderr)
	var got struct {
		Count, Unique, Machine int64
		First, Last            string
		Datacenter             *int64
	}
	require.NoError(t, json.Unmarshal(out, &got), "idclient.py's summary: %s", out)
	assert.GreaterOrEqual(t, got.Count, int64(3000))
	assert.Equal(t, got.Count, got.Unique)
	assert.Equal(t, int64(1<<5|3), got.Machine, "datacenter 1, worker 3")
	if assert.NotNil(t, got.Datacenter, "Decode's datacenter is set under a split layout") {
		assert.Equal(t, int64(1), *got.Datacenter)
	}
	l := ringflake.DefaultLayout()
	l.DatacenterBits = 5
	for _, v := range []string{got.First, got.Last} {
		id, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
		p := l.Decompose(ringflake.ID(id))
		assert.Equal(t, [2]int64{1, 3}, [2]int64{p.Datacenter, p.Worker}, "ID %d", id)
	}
}
