package redistest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// DropSnapshot deletes the server's RDB snapshot (SAVE's dump.rdb), if it
// has one, so that its next Restart comes back empty rather than rolled
// back to it. It fails the test if the file is there and cannot be
// removed.
func (s *Server) DropSnapshot() {
	s.tb.Helper()
	if err := os.Remove(filepath.Join(s.dir, "dump.rdb")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.tb.Fatalf("redistest: dropping the snapshot of the server on port %d: %v", s.Port, err)
	}
}
