package redistest

import (
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/clockshift"
)

// StartClocked starts a standalone server, as Start does, whose wall clock
// the test can step with ShiftClock: the server preloads internal/
// clockshift's library, which adds the shift to every reading of
// CLOCK_REALTIME, so TIME, key expiry and the uptime INFO reports all move
// with it. The shift outlives a Restart, as a host's clock outlives its
// Redis.
func StartClocked(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	c, err := clockshift.New(tb.TempDir())
	if err == nil {
		var env []string
		if env, err = c.Env(); err == nil {
			s := start(tb, env, extra)
			s.clock = c
			return s
		}
	}
	tb.Fatalf("redistest: %v", err)
	return nil
}

// ShiftClock sets the server's clock to the true time plus d, from its
// next reading on. It fails the test for a server not started by
// StartClocked.
func (s *Server) ShiftClock(d time.Duration) {
	s.tb.Helper()
	if s.clock == nil {
		s.tb.Fatalf("redistest: the server on port %d was not started by StartClocked", s.Port)
	}
	if err := s.clock.Set(d); err != nil {
		s.tb.Fatalf("redistest: shifting the clock of the server on port %d: %v", s.Port, err)
	}
}
