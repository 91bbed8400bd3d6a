// Package clockshift steps the wall clock of a server process that reads
// it through libc (redis-server, postgres, mariadbd) while it runs, for the
// tests of worlds where a store's clock moves: testdata/clockshift.c,
// built with cc into a library the server preloads, adds the offset kept
// in a Clock's file to every reading of CLOCK_REALTIME (and
// gettimeofday, time), and leaves the monotonic clock alone. Debian's
// libfaketime cannot do this for redis-server (testdata/clockshift.c says
// why).
package clockshift

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

//go:embed testdata/clockshift.c
var source []byte

// built is the directory the library was built in, for Cleanup.
var (
	mu    sync.Mutex
	built string
)

// library builds testdata/clockshift.c once per process, in a directory
// every user can read (postgres runs as its own user), and returns the
// library's path.
var library = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ringflake-clockshift-")
	if err != nil {
		return "", err
	}
	mu.Lock()
	built = dir
	mu.Unlock()
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	src, lib := filepath.Join(dir, "clockshift.c"), filepath.Join(dir, "clockshift.so")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command("cc", "-O2", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("clockshift: building the library with cc: %v: %s", err, out)
	}
	return lib, nil
})

// Cleanup removes the built library, if any; a TestMain calls it once its
// servers are gone.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if built != "" {
		os.RemoveAll(built)
	}
}

// A Clock is one server's offset from the true time: an 8-byte file the
// library maps, so that a Set moves the server's next reading.
type Clock struct {
	f      *os.File
	offset time.Duration
}

// New creates a Clock's file in dir, at offset 0, readable by every user.
func New(dir string) (*Clock, error) {
	f, err := os.OpenFile(filepath.Join(dir, "clock-offset"), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	c := &Clock{f: f}
	return c, c.Set(0)
}

// Env is what a server's environment needs for its clock to follow c. It
// builds the library on its first call.
func (c *Clock) Env() ([]string, error) {
	lib, err := library()
	if err != nil {
		return nil, err
	}
	return []string{"LD_PRELOAD=" + lib, "RINGFLAKE_CLOCK_FILE=" + c.f.Name()}, nil
}

// Set makes the server's clock read the true time plus d, from its next
// reading on. It writes the file in place: it never shrinks under a
// mapping.
func (c *Clock) Set(d time.Duration) error {
	c.offset = d
	_, err := c.f.WriteAt(binary.NativeEndian.AppendUint64(nil, uint64(d)), 0)
	return err
}

// Offset is the offset last set.
func (c *Clock) Offset() time.Duration { return c.offset }
