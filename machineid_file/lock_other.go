//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package machineid_file

import (
	"errors"
	"fmt"
	"runtime"
)

// lockFile fails: the store needs flock, which this platform's package
// syscall lacks.
func (*store) lockFile(string) (fsFile, error) {
	return nil, fmt.Errorf("no file locks on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func unlock(f fsFile) { _ = f.Close() }

func (*store) prepareDir(string) error { return nil }

func (*store) syncDir(string) error { return nil }
