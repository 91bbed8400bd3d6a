package machineid_file

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

// store is the machineid.Store of one Holder: it holds at most one machine
// ID, by an exclusive lock on the ID's file, and writes the ID's mark
// there. The lock is the store's judge of expiry: the kernel drops it when
// the process dies, however it dies, so the ID is free at once, and never
// before.
type store struct {
	disk fileSystem       // osFS; written once by New
	dir  string           // absolute; written once by New
	src  machineid.Source // nil: the lowest free ID in the range; written once by New
	host string           // this host's name, recorded with each mark; written once by New

	// sem is held by whoever does the store's I/O, one call at a time. A
	// call runs on a goroutine of its own and returns when its context
	// ends, even if a write or an fsync hangs; the next call then waits
	// for that one to finish, so they never overlap on a file.
	sem chan struct{}

	held *holding // guarded by sem; nil when no ID is held

	// mutant, none but in this package's tests, breaks the store on
	// purpose (mutant.go); late is the mark a mutantLateMark store granted
	// and has yet to write, guarded by sem.
	mutant mutant
	late   time.Time
}

// holding is a machine ID held by the store.
type holding struct {
	token string
	id    int64
	lock  fsFile    // the flock'ed file, open for reading; unlock frees the ID
	after time.Time // the mark inherited when it was taken
	st    state     // what the file holds now, as last written
}

var _ machineid.Store = (*store)(nil)

// do runs fn, one I/O call, on a goroutine holding s.sem, and returns its
// results, or ctx's error if ctx ends first; fn then finishes in the
// background, its results dropped.
func do[T any](ctx context.Context, s *store, what string, fn func() (T, error)) (T, error) {
	var zero T
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: an earlier call on %s still runs: %w", what, s.dir, ctx.Err())
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: fn's goroutine never waits for a caller that left
	go func() {
		defer func() { <-s.sem }()
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: the filesystem under %s did not answer: %w", what, s.dir, ctx.Err())
	}
}

// Take locks the file of the lowest free machine ID in c.Lo..c.Hi (or of
// the Source's), reads the mark it inherits, and writes the new one.
func (s *store) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	return do(ctx, s, "taking a machine ID", func() (machineid.Grant, error) { return s.take(ctx, c) })
}

func (s *store) take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	if h := s.held; h != nil {
		if h.token == c.Token && h.id >= c.Lo && h.id <= c.Hi {
			return s.raise(h, c.Until)
		}
		s.free() // a holding of an earlier session, which Release did not reach
	}
	if err := s.prepareDir(s.dir); err != nil {
		return machineid.Grant{}, err
	}
	lo, hi, err := s.candidates(ctx, c)
	if err != nil {
		return machineid.Grant{}, err
	}
	for wait := time.Millisecond; ; wait *= 2 {
		g, busy, err := s.lockFirst(lo, hi, c)
		if busy == "" {
			return g, err
		}
		// Every ID busy. The lock of a process that crashed may live on
		// for a moment in a child it forked (a copy of the descriptor
		// until the child's exec closes it; a live holder frees its lock
		// for every copy, see unlock), so look again a few times before
		// refusing: a real twin is refused within 63ms.
		if wait > busyWait || sleep(ctx, wait) != nil {
			if lo == hi {
				return machineid.Grant{}, fmt.Errorf("%w: machine ID %d is held by another live process (%s); its file is %s", machineid.ErrExhausted, lo, busy, s.path(lo))
			}
			return machineid.Grant{}, fmt.Errorf("%w: every machine ID in %d..%d is held by a live process, each by a lock on its file in %s", machineid.ErrExhausted, lo, hi, s.dir)
		}
	}
}

// busyWait is the longest of Take's waits for a free ID: 1, 2, 4, ... 32ms.
const busyWait = 32 * time.Millisecond

// sleep waits d, or until ctx ends, and then returns ctx's error.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockFirst holds the first ID in lo..hi whose file it can lock. If every
// one is locked by another, it returns who holds the last one tried.
func (s *store) lockFirst(lo, hi int64, c machineid.Claim) (g machineid.Grant, busy string, err error) {
	for id := lo; id <= hi; id++ {
		f, err := s.lockFile(s.path(id))
		if err != nil {
			return machineid.Grant{}, "", err
		}
		if f == nil {
			busy = holder(s.path(id), id)
			continue
		}
		g, err = s.adopt(f, id, c)
		return g, "", err
	}
	return machineid.Grant{}, busy, nil
}

// candidates returns the IDs Take may lock: the range, or the Source's ID.
func (s *store) candidates(ctx context.Context, c machineid.Claim) (lo, hi int64, err error) {
	if s.src == nil {
		return c.Lo, c.Hi, nil
	}
	id, err := s.src.MachineID(ctx)
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("the machine ID source (%T): %w", s.src, err)
	case id < c.Lo || id > c.Hi:
		return 0, 0, fmt.Errorf("%w: the machine ID source (%T) gave %d, outside the range %d..%d", ringflake.ErrInvalidConfig, s.src, id, c.Lo, c.Hi)
	}
	return id, id, nil
}

// adopt reads the mark in the file f, just locked, of machine ID id, and
// holds the ID if the mark is sound and the new one is written.
func (s *store) adopt(f fsFile, id int64, c machineid.Claim) (machineid.Grant, error) {
	path := s.path(id)
	st, err := readState(f, id)
	if err == nil {
		err = tooFar(st.last.until, c.Until.Add(-c.TTL), path)
	}
	if err == nil && st.slot >= 0 && s.mutant != mutantNoTakeSync {
		// The mark read may be a release's, written without an fsync;
		// the other slot, which the next write overwrites, may be the
		// only durable copy of a mark as high. Make this one durable
		// first.
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("syncing the mark of machine ID %d in %s: %w", id, path, err)
		}
	}
	if err != nil {
		unlock(f)
		return machineid.Grant{}, err
	}
	h := &holding{token: c.Token, id: id, lock: f, after: st.last.until, st: st}
	g, err := s.raise(h, c.Until)
	if err == nil {
		// The file's name must be as durable as its mark, whether this
		// process made the file or one that crashed before saying so.
		err = s.syncDir(s.dir)
	}
	if err != nil {
		unlock(f)
		return machineid.Grant{}, err
	}
	s.held = h
	g.After = h.after
	return g, nil
}

// tooFar refuses a mark more than maxAhead ahead of now.
func tooFar(mark, now time.Time, path string) error {
	if ahead := mark.Sub(now); ahead > maxAhead {
		return fmt.Errorf("%w: the mark in %s is %v ahead of this clock (mark %s, clock %s), more than the %v a mark can be from a sound clock: set the clock right; or, if the mark came from a clock that was far ahead, remove the file once no process uses the ID, accepting that the IDs it issued ahead may come again",
			ringflake.ErrMarkAhead, path, ahead.Round(time.Second), mark.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), maxAhead)
	}
	return nil
}

// raise writes h's mark, raised to at least until, and returns the grant.
func (s *store) raise(h *holding, until time.Time) (machineid.Grant, error) {
	if h.st.last.until.After(until) {
		until = h.st.last.until
	}
	mark := until
	if s.mutant == mutantLateMark {
		mark, s.late = cmp.Or(s.late, until), until
	}
	if err := s.write(h, mark, true); err != nil {
		return machineid.Grant{}, err
	}
	return machineid.Grant{ID: h.id, After: h.after, Until: until}, nil
}

// Renew writes the held ID's mark, raised to at least c.Until.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	return do(ctx, s, fmt.Sprintf("renewing machine ID %d", id), func() (machineid.Grant, error) {
		h := s.held
		if h == nil || h.token != c.Token || h.id != id {
			return machineid.Grant{}, fmt.Errorf("%w: machine ID %d is not held by this holder", machineid.ErrLeaseLost, id)
		}
		g, err := s.raise(h, c.Until)
		if errors.Is(err, machineid.ErrLeaseLost) {
			s.free()
		}
		return g, err
	})
}

// Release lowers the mark to issued, if given, and unlocks the file. It
// writes the lower mark without an fsync, which a stop need not wait for:
// a power loss may take it, leaving the mark higher, which is safe (the
// next holder waits a little longer), as is a failure to write it. The
// next Take makes it durable before it writes (see adopt).
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	_, err := do(ctx, s, fmt.Sprintf("releasing machine ID %d", id), func() (struct{}, error) {
		h := s.held
		if h != nil && h.token == c.Token && (id < 0 || h.id == id) {
			if !issued.IsZero() && issued.Before(h.st.last.until) {
				_ = s.write(h, issued, false)
			}
			s.free()
		}
		return struct{}{}, nil
	})
	return err
}

// free unlocks the held file, if any. The caller holds s.sem.
func (s *store) free() {
	if s.held != nil {
		unlock(s.held.lock)
		s.held = nil
	}
}
