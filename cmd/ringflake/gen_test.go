package main

import (
	"bytes"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/internal/redistest"
)

// syncBuffer is a bytes.Buffer safe for a process to write while a test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGen starts gen with args, its output in the buffers returned.
func startGen(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *syncBuffer, exited chan struct{}) {
	t.Helper()
	cmd = exec.Command(buildCLI(t), append([]string{"gen"}, args...)...)
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	return cmd, stdout, stderr, exited
}

// waitExit waits for the process to exit, at most within, which is the
// bound under test with room to spare, and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd, exited chan struct{}, within time.Duration, stderr *syncBuffer) int {
	t.Helper()
	select {
	case <-exited:
	case <-time.After(within):
		t.Fatalf("gen did not exit within %v of the signal; stderr %q", within, stderr.String())
	}
	return cmd.ProcessState.ExitCode()
}

// A SIGTERM while gen waits for a lost lease with a long --max-wait stops
// it within its bound (a second, plus the release), not after --max-wait;
// it says it was interrupted, and that the release failed, the store being
// down.
func TestGenSIGTERMWhileWaitingForALostLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.WaitUptime(2 * time.Second) // past the fresh Redis's floor (a 1s TTL)
	cmd, stdout, stderr, exited := startGen(t, "--lease", "redis://"+srv.Addr, "--lease-ttl", "1s", "--max-wait", "60s", "-n", "1000000000000")
	require.Eventually(t, func() bool { return stdout.String() != "" }, 20*time.Second, 10*time.Millisecond, "gen should print IDs; stderr %q", stderr.String())
	srv.Stop()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "ringflake: machine ID lease lost") }, 20*time.Second, 10*time.Millisecond,
		"the lease should be lost once Redis is down")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code := waitExit(t, cmd, exited, 30*time.Second, stderr) // --max-wait is 60s
	assert.Equal(t, 1, code)
	assert.Regexp(t, `ringflake: gen: interrupted after \d+ IDs`, stderr.String())
	assert.Contains(t, stderr.String(), "gen: releasing the machine ID's lease: ", "the failed release is reported")
	out := stdout.String()
	assert.True(t, strings.HasSuffix(out, "\n"), "every ID printed is a whole line")
}

// A SIGTERM while gen waits out a fresh Redis's floor stops it there, and
// releases the lease it took.
func TestGenSIGTERMWhileGettingItsMachineID(t *testing.T) {
	t.Parallel()
	buildCLI(t) // before Redis starts its floor: a build can outlast it
	srv := redistest.Start(t)
	cmd, stdout, stderr, exited := startGen(t, "--lease", "redis://"+srv.Addr, "--lease-ttl", "20s", "-n", "1")
	require.Eventually(t, func() bool { return srv.Do("EXISTS", "{ringflake}:LEASE:0") == "1" }, 10*time.Second, 10*time.Millisecond,
		"the lease on machine ID 0 is taken while New waits out the floor")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code := waitExit(t, cmd, exited, 15*time.Second, stderr) // the floor is 20s
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "ringflake: gen: interrupted while getting the machine ID\n")
	assert.Empty(t, stdout.String())
	assert.Equal(t, "0", srv.Do("EXISTS", "{ringflake}:LEASE:0"), "the lease is released at exit")
}

// gen's log leaves out the library's long-wait records, and nothing else:
// a call that waits 20ms on a frozen clock is logged as a long wait by a
// plain handler, which checks that the record is still the one gen drops,
// and not by gen's; a step back of the clock is logged by both.
func TestGenLogLeavesOutLongWaits(t *testing.T) {
	t.Parallel()
	logOf := func(log func(io.Writer) *slog.Logger) string {
		var out syncBuffer
		t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		clock := fakeclock.New(t0)
		one := ringflake.Layout{TimeBits: 50, MachineBits: 1, SequenceBits: 1} // 2 IDs a tick, from 0
		g, err := ringflake.New(t.Context(), ringflake.WithMachineID(1), ringflake.WithLayout(one), ringflake.WithClock(clock.Now),
			ringflake.WithMaxWait(10*time.Second), ringflake.WithLogger(log(&out)))
		require.NoError(t, err)
		defer g.Close()
		for range 2 {
			_, err := g.NextID()
			require.NoError(t, err)
		}
		time.AfterFunc(20*time.Millisecond, func() { clock.Add(time.Millisecond) }) // the frozen tick is full until then
		_, err = g.NextID()
		require.NoError(t, err)
		require.GreaterOrEqual(t, g.Stats().WaitTime, 10*time.Millisecond)
		clock.Add(-time.Second)
		_, err = g.NextID()
		require.NoError(t, err, "a tick the clock shows again")
		return out.String()
	}
	plain := logOf(func(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) })
	assert.Contains(t, plain, `msg="ringflake: long wait"`, "the library's record of a long wait")
	assert.Contains(t, plain, `msg="ringflake: clock stepped back"`)
	quiet := logOf(genLog)
	assert.NotContains(t, quiet, "ringflake: long wait")
	assert.Regexp(t, `^level=WARN msg="ringflake: clock stepped back" .*\n$`, quiet, "the step back, without the time")
}
