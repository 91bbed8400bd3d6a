package machineid_file

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// newHolder returns a Holder from New, released at the end of the test.
func newHolder(t *testing.T, dir string, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	h, err := New(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Release(time.Time{}) })
	return h
}

func take(h *machineid.Holder) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.MachineID(ctx)
}

// TestTwinRefused holds one fixed ID twice in one process: the second
// waits until its deadline and is refused, naming the file and the
// holder's PID, and a second try gets the ID once the first releases it,
// inheriting the mark it released.
func TestTwinRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := newHolder(t, dir, machineid.WithRange(5, 5))
	id, err := take(a)
	require.NoError(t, err)
	require.Equal(t, int64(5), id)

	b := newHolder(t, dir, machineid.WithRange(5, 5))
	// Long enough for a take to be answered on a loaded machine: with
	// 300ms, CI's Go 1.25 step beside a CPU hog got no answer from the
	// filesystem in time, and a context deadline in place of the refusal.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = b.MachineID(ctx)
	require.ErrorIs(t, err, machineid.ErrExhausted, "a second holder of a held fixed ID")
	assert.Contains(t, err.Error(), filepath.Join(dir, "machine-5"), "names the file")
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d", os.Getpid()), "names the holder's PID")
	assert.Contains(t, err.Error(), "; waited ", "says how long it waited")

	got := make(chan error, 1)
	go func() { _, err := take(b); got <- err }()
	issued := time.Now()
	require.NoError(t, a.Release(issued))
	require.NoError(t, <-got, "the ID once released, to a holder that waits for it")
	assert.True(t, b.Lease().After.Equal(issued.Round(0)), "After = %v; want the released mark %v", b.Lease().After, issued)
}

// TestRange takes the lowest free IDs of a range, and ErrExhausted when
// every one is held.
func TestRange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for want := int64(3); want <= 5; want++ {
		id, err := take(newHolder(t, dir, machineid.WithRange(3, 5)))
		require.NoError(t, err)
		assert.Equal(t, want, id, "the lowest free ID")
	}
	_, err := take(newHolder(t, dir, machineid.WithRange(3, 5)))
	require.ErrorIs(t, err, machineid.ErrExhausted)
	assert.Contains(t, err.Error(), "every machine ID in 3..5 is held")
}

// TestWithSource guards the ID a Source gives, and refuses one outside
// the range and a Leaser.
func TestWithSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := machineid.FromFunc(1023, func(context.Context) (int64, error) { return 9, nil })
	id, err := take(newHolder(t, dir, WithSource(src)))
	require.NoError(t, err)
	assert.Equal(t, int64(9), id)
	_, err = take(newHolder(t, dir, WithSource(src)))
	assert.ErrorIs(t, err, machineid.ErrExhausted, "a twin of a Source's ID")

	_, err = take(newHolder(t, dir, WithSource(src), machineid.WithRange(0, 8)))
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "the Source's ID outside the range")
	broken := machineid.Env("MACHINEID_FILE_TEST_UNSET", 1023)
	_, err = take(newHolder(t, dir, WithSource(broken)))
	assert.ErrorIs(t, err, machineid.ErrNotFound, "the Source's error")

	leaser := newHolder(t, dir)
	_, err = New(dir, WithSource(leaser))
	assert.ErrorIs(t, err, ringflake.ErrInvalidConfig, "a Leaser as the Source")
}

// TestBadFiles refuses a file that is not ours and a mark far ahead,
// naming the file, and leaves the ID free.
func TestBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "machine-1"), []byte("#!/bin/sh\n"), 0o600))
	_, err := take(newHolder(t, dir, machineid.WithRange(1, 1)))
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), filepath.Join(dir, "machine-1"))
	assert.Contains(t, err.Error(), "move it aside", "says what to do")

	ahead := time.Now().Add(72 * time.Hour)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "machine-2"), file2(2, ahead), 0o600))
	before := time.Now()
	_, err = take(newHolder(t, dir, machineid.WithRange(2, 2)))
	after := time.Now()
	require.ErrorIs(t, err, ringflake.ErrMarkAhead)
	// How far, to the second, as the clock read it during the take: 72h
	// less however long a loaded machine took to get there.
	far := []string{ahead.Sub(after).Round(time.Second).String(), ahead.Sub(before).Round(time.Second).String()}
	assert.True(t, strings.Contains(err.Error(), far[0]+" ahead of this clock") || strings.Contains(err.Error(), far[1]+" ahead of this clock"),
		"says how far, %s or %s: %v", far[0], far[1], err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "machine-2"))

	_, err = take(newHolder(t, dir, machineid.WithRange(1, 3)))
	assert.ErrorIs(t, err, ErrCorrupt, "a range refuses its first bad file rather than skip it")

	notDir := filepath.Join(dir, "machine-1")
	_, err = take(newHolder(t, notDir))
	assert.ErrorContains(t, err, "is not a directory")
}

// file2 is the file of machine ID id with one record, of mark until.
func file2(id int64, until time.Time) []byte {
	b := make([]byte, fileSize)
	copy(b, record{id: id, seq: 1, until: until, pid: 1, host: "h"}.encode())
	return b
}

// TestMarkWrittenAhead checks the mark on disk: a TTL ahead, raised by
// renewals before the clock reaches it, lowered to what was issued on
// Release, and inherited by the next holder.
func TestMarkWrittenAhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ttl := time.Second
	h := newHolder(t, dir, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	_, err := take(h)
	require.NoError(t, err)
	first := onDisk(t, dir, 0)
	assert.True(t, first.Equal(h.Lease().Until), "the mark on disk %v is the lease's Until %v", first, h.Lease().Until)
	assert.True(t, first.After(time.Now().Add(ttl/2)), "the mark %v is about a TTL ahead", first)
	require.Eventually(t, func() bool { return onDisk(t, dir, 0).After(first) }, 5*ttl, 10*time.Millisecond, "a renewal raises the mark")
	assert.True(t, time.Now().Before(onDisk(t, dir, 0)), "the clock never reaches the mark while renewals run")

	issued := time.Now()
	require.NoError(t, h.Release(issued))
	assert.True(t, onDisk(t, dir, 0).Equal(issued.Round(0)), "Release lowers the mark to what was issued")
	next := newHolder(t, dir, machineid.WithRange(0, 0), machineid.WithTTL(ttl))
	_, err = take(next)
	require.NoError(t, err)
	assert.True(t, next.Lease().After.Equal(issued.Round(0)), "the next holder inherits the mark")
}

// onDisk reads the mark of machine ID id in dir.
func onDisk(t *testing.T, dir string, id int64) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("machine-%d", id)))
	require.NoError(t, err)
	st, err := parseFile(b, id)
	require.NoError(t, err)
	return st.last.until
}

// TestFileRemoved removes a held ID's file: the lease is lost at the next
// renewal, since another process could lock a new file, and taken again
// on a new one.
func TestFileRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHolder(t, dir, machineid.WithRange(0, 0), machineid.WithTTL(time.Second))
	_, err := take(h)
	require.NoError(t, err)
	lost := make(chan machineid.Lease, 16)
	stop := h.Watch(func(l machineid.Lease) {
		if !l.Held && l.Err != nil {
			select {
			case lost <- l:
			default:
			}
		}
	})
	defer stop()
	require.NoError(t, os.Remove(filepath.Join(dir, "machine-0")))
	select {
	case l := <-lost:
		assert.ErrorIs(t, l.Err, machineid.ErrLeaseLost)
		assert.Contains(t, l.Err.Error(), "was removed or replaced")
	case <-time.After(10 * time.Second):
		t.Fatal("no loss reported within 10s of the held file's removal")
	}
}

// TestReadOnly takes an ID on a read-only filesystem (refused, naming
// EROFS), and renews one on a filesystem made read-only under it (the
// lease lost once its deadline passes, with EROFS as the cause). Both on
// a tmpfs of the test's own.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	dir := tmpfs(t, "1m")
	h := newHolder(t, dir, machineid.WithRange(0, 0), machineid.WithTTL(time.Second))
	_, err := take(h)
	require.NoError(t, err)
	lost := watchLoss(t, h)
	remount(t, dir, "ro")
	select {
	case l := <-lost:
		assert.ErrorIs(t, l.Err, machineid.ErrLeaseLost)
		assert.ErrorIs(t, l.Err, syscall.EROFS, "the cause: %v", l.Err)
		assert.False(t, time.Now().After(onDisk(t, dir, 0)), "lost before the clock passed the durable mark")
	case <-time.After(10 * time.Second):
		t.Fatal("no loss reported within 10s of the filesystem turning read-only")
	}
	_, err = take(newHolder(t, dir, machineid.WithRange(1, 1)))
	assert.ErrorIs(t, err, syscall.EROFS, "a take on a read-only filesystem")
	assert.ErrorContains(t, err, filepath.Join(dir, "machine-1"))
}

// TestFull takes an ID on a full filesystem: refused with ENOSPC, and the
// ID left free.
func TestFull(t *testing.T) {
	t.Parallel()
	dir := tmpfs(t, "64k")
	fill, err := os.Create(filepath.Join(dir, "fill"))
	require.NoError(t, err)
	for err == nil {
		_, err = fill.Write(make([]byte, 4096))
	}
	require.ErrorIs(t, err, syscall.ENOSPC, "filling the tmpfs")
	_, err = take(newHolder(t, dir, machineid.WithRange(0, 0)))
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Contains(t, err.Error(), "writing the mark of machine ID 0")
	require.NoError(t, fill.Truncate(0))
	require.NoError(t, fill.Close())
	_, err = take(newHolder(t, dir, machineid.WithRange(0, 0)))
	assert.NoError(t, err, "the ID is free once there is room")
}

// watchLoss returns a channel that gets h's first report of a loss.
func watchLoss(t *testing.T, h *machineid.Holder) <-chan machineid.Lease {
	lost := make(chan machineid.Lease, 1)
	stop := h.Watch(func(l machineid.Lease) {
		if !l.Held && l.Err != nil {
			select {
			case lost <- l:
			default:
			}
		}
	})
	t.Cleanup(stop)
	return lost
}

// tmpfs mounts a tmpfs of the given size in a temporary directory, and
// unmounts it at the end.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	mount(t, "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// TestDirCreated makes the state directory and its parents.
func TestDirCreated(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b", "state")
	_, err := take(newHolder(t, dir))
	require.NoError(t, err)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "a new state directory is the user's alone")
}

// TestStateDir resolves the default directory, in order.
func TestStateDir(t *testing.T) {
	home, _ := os.UserHomeDir()
	for _, tt := range []struct {
		env, xdg, arg, want string
	}{
		{"/s", "/x", "/a", "/a"},
		{"/s", "/x", "", "/s"},
		{"", "/x", "", "/x/ringflake"},
		{"", "", "", filepath.Join(home, ".local/state/ringflake")},
	} {
		t.Setenv("RINGFLAKE_STATE_DIR", tt.env)
		t.Setenv("XDG_STATE_HOME", tt.xdg)
		got, err := stateDir(tt.arg)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "stateDir(%q) with RINGFLAKE_STATE_DIR=%q XDG_STATE_HOME=%q", tt.arg, tt.env, tt.xdg)
	}
	got, err := stateDir("rel")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(got) && strings.HasSuffix(got, "/rel"), "a relative directory made absolute: %s", got)
}
