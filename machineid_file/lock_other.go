//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package machineid_file

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// lockFile fails: the store needs flock, which this platform's package
// syscall lacks.
func lockFile(string) (*os.File, error) {
	return nil, fmt.Errorf("no file locks on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func prepareDir(string) error { return nil }

func syncDir(string) error { return nil }
