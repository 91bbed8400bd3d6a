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

// Snapshot saves the server's data to its RDB file (SAVE) and returns the
// path of a copy, which UseSnapshot can hand to a later Restart, in any
// order: a backup restored, or a node that kept an older dump. It fails
// the test if the save or the copy fails.
func (s *Server) Snapshot() string {
	s.tb.Helper()
	if got := s.Do("SAVE"); got != "OK" {
		s.tb.Fatalf("redistest: SAVE on port %d answered %q", s.Port, got)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "dump.rdb"))
	if err != nil {
		s.tb.Fatalf("redistest: reading the snapshot of the server on port %d: %v", s.Port, err)
	}
	f, err := os.CreateTemp(s.dir, "snapshot-*.rdb")
	if err == nil {
		_, err = f.Write(data)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		s.tb.Fatalf("redistest: copying the snapshot of the server on port %d: %v", s.Port, err)
	}
	return f.Name()
}

// UseSnapshot makes the server's next Restart load the snapshot at path,
// which Snapshot returned. It fails the test if the file cannot be copied.
func (s *Server) UseSnapshot(path string) {
	s.tb.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.WriteFile(filepath.Join(s.dir, "dump.rdb"), data, 0o600)
	}
	if err != nil {
		s.tb.Fatalf("redistest: restoring snapshot %s for the server on port %d: %v", path, s.Port, err)
	}
}
