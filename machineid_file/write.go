package machineid_file

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// write records until as h's mark, in the slot that does not hold the
// current one, and, if durable, fsyncs the file: one fsync, off the
// generator's path. It opens the file for the write alone, so that between writes nothing
// holds it open for writing (a filesystem can then be remounted read-only
// under a holder, which then loses its lease when the next renewal fails).
// It returns an error wrapping machineid.ErrLeaseLost if the file at the
// ID's path is no longer the one locked: removed or replaced, so another
// process may lock a new one.
func (s *store) write(h *holding, until time.Time, durable bool) error {
	path := s.path(h.id)
	rec, off := h.st.next(until, os.Getpid(), s.host)
	if s.mutant == mutantOneSlot && h.st.slot >= 0 {
		off = int64(h.st.slot) * slotOff1
	}
	f, err := s.disk.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		defer f.Close() // after the fsync, which reports write errors
		err = sameFile(f, h.lock)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errReplaced) {
		return fmt.Errorf("%w: machine ID %d: %s was removed or replaced while held, so another process may hold the ID now: %w", machineid.ErrLeaseLost, h.id, path, err)
	}
	buf := rec.encode()
	if h.st.slot < 0 {
		// The first write: allocate both slots, the second left blank.
		buf = append(buf, make([]byte, fileSize-slotSize)...)
	}
	if err == nil {
		_, err = f.WriteAt(buf, off)
	}
	if err == nil && durable && s.mutant != mutantNoSync {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("writing the mark of machine ID %d (%s) to %s: %w", h.id, until.UTC().Format(time.RFC3339Nano), path, err)
	}
	h.st = state{last: rec, slot: int(off / slotOff1)}
	return nil
}

var errReplaced = errors.New("not the file locked")

// sameFile returns errReplaced unless a and b are one file.
func sameFile(a, b fsFile) error {
	sa, err := a.Stat()
	if err != nil {
		return err
	}
	sb, err := b.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(sa, sb) {
		return errReplaced
	}
	return nil
}

// readState reads the mark in f, the file of machine ID id.
func readState(f fsFile, id int64) (state, error) {
	b := make([]byte, fileSize+1) // one more, to tell a file too long
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return state{}, fmt.Errorf("reading the mark of machine ID %d in %s: %w", id, f.Name(), err)
	}
	st, err := parseFile(b[:n], id)
	if err != nil {
		return state{}, fmt.Errorf("%s: %w. This process holds its lock, so no ringflake process uses it: move it aside, and start on machine ID %d again only once the clock is surely past the last ID issued with it",
			f.Name(), err, id)
	}
	return st, nil
}

// holder describes who holds locked the file at path, of machine ID id,
// from the record its holder wrote last.
func holder(path string, id int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "its mark is unreadable: " + err.Error()
	}
	st, err := parseFile(b, id)
	if err != nil || st.slot < 0 {
		return "it has written no mark yet"
	}
	return fmt.Sprintf("pid %d on host %s wrote its mark last", st.last.pid, st.last.host)
}
