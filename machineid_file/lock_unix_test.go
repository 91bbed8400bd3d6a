//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package machineid_file

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnlockWhileAChildHoldsACopy gives a lock up while a child process
// holds a copy of its descriptor, as a child that another goroutine forked
// holds one until its exec closes it: the ID is free at once all the same.
// With the lock merely closed, the copy kept it held, and a range skipped
// the ID as another's (TestBadFiles failed so under a CPU hog).
func TestUnlockWhileAChildHoldsACopy(t *testing.T) {
	t.Parallel()
	s := &store{disk: osFS{}}
	path := filepath.Join(t.TempDir(), "machine-0")
	f, err := s.lockFile(path)
	require.NoError(t, err)
	require.NotNil(t, f, "a new file is free")
	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f.(*os.File)}
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	unlock(f)
	again, err := s.lockFile(path)
	require.NoError(t, err)
	if assert.NotNil(t, again, "the lock is free once given up, though a child still holds a copy of its descriptor") {
		unlock(again)
	}
}
