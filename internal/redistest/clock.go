package redistest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

//go:embed testdata/clockshift.c
var clockShiftSource []byte

// clockShiftLib builds testdata/clockshift.c into a shared library, once a
// process, and returns its path.
var clockShiftLib = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ringflake-clockshift-")
	if err != nil {
		return "", err
	}
	src, lib := filepath.Join(dir, "clockshift.c"), filepath.Join(dir, "clockshift.so")
	if err := os.WriteFile(src, clockShiftSource, 0o600); err != nil {
		return "", err
	}
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-O2", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v: %s", src, err, out)
	}
	return lib, nil
})

// StartClocked starts a standalone server, as Start does, whose wall clock
// the test can step with ShiftClock: the server runs with a preloaded
// library (testdata/clockshift.c, built with cc) that adds the shift to
// every reading of CLOCK_REALTIME, so TIME, key expiry and the uptime
// INFO reports all move with it. The shift outlives a Restart, as a host's
// clock outlives its Redis.
func StartClocked(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	lib, err := clockShiftLib()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	shift := filepath.Join(tb.TempDir(), "clock-shift")
	if err := os.WriteFile(shift, []byte("0"), 0o600); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	env := []string{"LD_PRELOAD=" + lib, "RINGFLAKE_CLOCK_SHIFT=" + shift}
	return start(tb, env, extra)
}

// ShiftClock sets the server's clock to the true time plus d (rounded to
// the millisecond), from its next reading on, at most 2 ms later. It fails
// the test for a server not started by StartClocked.
func (s *Server) ShiftClock(d time.Duration) {
	s.tb.Helper()
	if s.shift == "" {
		s.tb.Fatalf("redistest: the server on port %d was not started by StartClocked", s.Port)
	}
	tmp := s.shift + ".new"
	err := os.WriteFile(tmp, []byte(strconv.FormatInt(d.Milliseconds(), 10)), 0o600)
	if err == nil {
		err = os.Rename(tmp, s.shift) // whole, never half written
	}
	if err != nil {
		s.tb.Fatalf("redistest: shifting the clock of the server on port %d: %v", s.Port, err)
	}
	time.Sleep(5 * time.Millisecond) // past the library's 2 ms between readings of the file
}
