package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_file"
)

// TestGenRestartBehind runs gen on a fixed machine ID, then again with
// the clock behind by a second more than the first ran, as after a clock
// step at boot: the second waits out the first's mark, saying so in one
// line (a wait under a second goes unsaid, as the library's), and
// no ID comes twice. With an acquire timeout too short for the wait, it
// fails with the mark ahead and prints nothing.
func TestGenRestartBehind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	began := time.Now()
	code, first, stderr := invoke("gen", "-n", "200000", "--machine-id", "5", "--state-dir", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	behind := "--clock-offset=-" + (time.Since(began) + time.Second).String()

	code, second, stderr := invoke("gen", "-n", "200000", "--machine-id", "5", "--state-dir", dir, behind)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	// One line for the wait; a loaded machine may add the state file's
	// lease lost and regained, which are no part of this.
	assert.Equal(t, 1, strings.Count(stderr, "waiting for the clock to pass the mark"), "says what it waits for, once: %q", stderr)
	assert.Contains(t, stderr, "until=", "and until when")
	seen := map[string]bool{}
	for _, id := range strings.Fields(first) {
		seen[id] = true
	}
	dups := 0
	for _, id := range strings.Fields(second) {
		if seen[id] {
			dups++
		}
	}
	assert.Zero(t, dups, "IDs the restart issued again")
	assert.Equal(t, 400000, len(seen)+len(strings.Fields(second))-dups, "IDs in all")

	code, stdout, stderr := invoke("gen", "-n", "1", "--machine-id", "5", "--state-dir", dir, "--clock-offset=-1h", "--acquire-timeout", "100ms")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "ahead of the clock", "fails with the mark ahead: %s", stderr)
	assert.Contains(t, stderr, "--acquire-timeout", "names the flag that buys a longer wait: %s", stderr)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "in one line: %q", stderr)
}

// TestGenRestartAfterKill SIGKILLs gen issuing on a fixed machine ID, with
// the CLI's defaults, and takes the ID at once, as a restart would: the
// mark it inherits covers every ID the killed process printed, and is at
// most 500ms (the state file's default TTL) past the moment it died, so a
// restart waits no longer than that for its clock to pass it. (How long a
// restart takes, measured, is in docs/leases.md.)
func TestGenRestartAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, printed := startStateGen(t, buildCLI(t), dir, 13)
	lines := make(chan string, 1)
	go func() { b, _ := io.ReadAll(printed); lines <- string(b) }()
	time.Sleep(300 * time.Millisecond) // a renewal or two (every 167ms); the bound holds at any moment
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	died := time.Now()
	var last time.Time
	for _, line := range strings.Split(<-lines, "\n") {
		if id, err := ringflake.ParseID(line); err == nil {
			if at := ringflake.DefaultLayout().Decompose(id).Time; at.After(last) {
				last = at
			}
		}
	}
	require.False(t, last.IsZero(), "the killed process printed IDs")

	h, err := machineid_file.New(dir, machineid.WithRange(13, 13))
	require.NoError(t, err)
	defer h.Release(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = h.MachineID(ctx)
	require.NoError(t, err, "the killed process's ID is free at once")
	mark := h.Lease().After
	assert.False(t, mark.Before(last), "the mark %v covers the last ID printed, of %v", mark, last)
	assert.LessOrEqual(t, mark.Sub(died), 500*time.Millisecond, "how far past the crash the mark is: what a restart waits at most")
}

// startStateGen starts the CLI bin's gen on the fixed machine ID id with its
// state file in dir, issuing until it is killed (at the end of the test at
// the latest), and returns it once it has printed its first ID, with the
// rest of its output to read.
func startStateGen(t *testing.T, bin, dir string, id int) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(bin, "gen", "-n", "1000000000000", "--machine-id", strconv.Itoa(id), "--state-dir", dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	printed := bufio.NewReader(out)
	_, err = printed.ReadString('\n') // it issues
	require.NoError(t, err)
	return cmd, printed
}

// TestGenTwinRefused runs gen on a fixed machine ID that another holder
// has: it waits for the holder to let go, saying so, and fails once
// --acquire-timeout has passed, in one line naming the file, and prints no
// ID.
func TestGenTwinRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, err := machineid_file.New(dir, machineid.WithRange(6, 6))
	require.NoError(t, err)
	defer h.Release(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = h.MachineID(ctx)
	require.NoError(t, err)

	code, stdout, stderr := invoke("gen", "-n", "5", "--machine-id", "6", "--state-dir", dir, "--acquire-timeout", "1s")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, 2, "the wait's record and the error: %q", stderr)
	assert.Contains(t, lines[0], `msg="ringflake: waiting for a machine ID: every ID in the range is held"`)
	assert.Contains(t, lines[1], "machine ID 6 is held by another live process")
	assert.Contains(t, lines[1], filepath.Join(dir, "machine-6"))
	assert.Contains(t, lines[1], "; waited ")
}

// TestGenStateDir keeps the state in $RINGFLAKE_STATE_DIR (the tests'
// own, set by TestMain) by default, and in --state-dir when given; gen's
// default machine ID 0 is guarded too. --no-state-file writes nothing and
// says what it gives up.
func TestGenStateDir(t *testing.T) {
	t.Parallel()
	code, _, stderr := invoke("gen", "-n", "1", "--machine-id", "11")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.FileExists(t, filepath.Join(os.Getenv("RINGFLAKE_STATE_DIR"), "machine-11"))

	dir := filepath.Join(t.TempDir(), "made")
	code, _, stderr = invoke("gen", "-n", "1", "--state-dir", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.FileExists(t, filepath.Join(dir, "machine-0"), "the default machine ID 0 is guarded")

	code, stdout, stderr := invoke("gen", "-n", "2", "--machine-id", "12", "--no-state-file")
	assert.Equal(t, 0, code)
	assert.Equal(t, 2, strings.Count(stdout, "\n"))
	assert.Contains(t, stderr, noStateFileNote, "says what it gives up")
	assert.NoFileExists(t, filepath.Join(os.Getenv("RINGFLAKE_STATE_DIR"), "machine-12"))
}

// TestGenTwinProcesses runs two gen processes on one fixed machine ID at
// once: the second waits, saying so, while the first lives, and fails once
// --acquire-timeout has passed, with one line of error and a non-zero exit.
func TestGenTwinProcesses(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	dir := t.TempDir()
	first, out := startStateGen(t, bin, dir, 8)
	go func() { _, _ = io.Copy(io.Discard, out) }()

	var stdout, stderr bytes.Buffer
	second := exec.Command(bin, "gen", "-n", "1000000", "--machine-id", "8", "--state-dir", dir, "--acquire-timeout", "1s")
	second.Stdout, second.Stderr = &stdout, &stderr
	err := second.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the second exits non-zero")
	assert.Equal(t, 1, exit.ExitCode())
	assert.Empty(t, stdout.String(), "the second prints no ID")
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	require.Len(t, lines, 2, "the wait's record and the error: %q", stderr.String())
	assert.Contains(t, lines[1], fmt.Sprintf("machine ID 8 is held by another live process (pid %d", first.Process.Pid))
}

// TestStateFlagUsage refuses the state flags where they mean nothing.
func TestStateFlagUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--lease", "redis://127.0.0.1:1", "--state-dir", "/x"}, "ringflake: gen: --state-dir and --no-state-file guard a fixed machine ID; --lease has its own store"},
		{[]string{"serve", "--lease", "redis://127.0.0.1:1", "--no-state-file"}, "ringflake: serve: --state-dir and --no-state-file guard a fixed machine ID; --lease has its own store"},
		{[]string{"gen", "--state-dir", "/x", "--no-state-file"}, "ringflake: gen: --state-dir and --no-state-file contradict each other; choose one"},
		{[]string{"gen", "--state-dir", ""}, `ringflake: gen: --state-dir = ""; want a directory`},
	} {
		code, _, stderr := invoke(tt.args...)
		assert.Equal(t, 2, code, "%v", tt.args)
		assert.Equal(t, tt.want+"\n", stderr, "%v", tt.args)
	}
}

// TestStateFileDatacenterSplit guards the whole machine ID under a
// datacenter split: datacenter 3's worker 4 is machine ID 100, so a second
// process on --machine-id 100 without the split is refused while the first
// lives (it once took a file of its own and repeated every ID), and
// another datacenter's worker 4 is not.
func TestStateFileDatacenterSplit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildCLI(t)
	holder := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--datacenter-bits", "5", "--datacenter", "3", "--machine-id", "4", "--state-dir", dir)
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	// The holder's mark in the file names the whole machine ID, and says
	// the holder has locked it: it is written only then. The file alone
	// exists a moment before the lock, and a gen started in that moment
	// took the ID first (under a CPU hog, 3 runs in 60).
	holds := fmt.Sprintf(" pid=%d ", holder.Process.Pid)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "machine-100"))
		return err == nil && strings.Contains(string(b), holds)
	}, 10*time.Second, 5*time.Millisecond, "the holder's mark is in machine-100's file")

	code, stdout, stderr := invoke("gen", "-n", "1", "--machine-id", "100", "--state-dir", dir)
	assert.Equal(t, 1, code, "the same machine ID without the split: stderr %q", stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "held by another live process")

	code, stdout, stderr = invoke("gen", "-n", "1", "--datacenter-bits", "5", "--datacenter", "2", "--machine-id", "4", "--state-dir", dir)
	assert.Equal(t, 0, code, "another datacenter's worker 4: stderr %q", stderr)
	assert.Len(t, strings.Fields(stdout), 1)
}
