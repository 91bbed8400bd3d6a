package machineid_postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ringflake/ringflake/machineid"
)

// take gives s's token the lowest free ID in the range, filling in the
// range's rows first if there is none, and records the lease. The caller
// holds l.turn.
func (l *Leaser) take(ctx context.Context, s *session) error {
	err := l.takeOnce(ctx, s)
	if errors.Is(err, pgx.ErrNoRows) {
		// No free row: perhaps because the range's rows are not there yet.
		if _, err := l.db.Exec(ctx, l.sql.fill, l.cfg.lo, l.cfg.hi); err != nil {
			return l.failed(s, l.dbErr("adding the range's rows", err))
		}
		err = l.takeOnce(ctx, s)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return l.failed(s, fmt.Errorf("%w: every ID in %d..%d of %s is held", ErrExhausted, l.cfg.lo, l.cfg.hi, l.cfg.table))
	}
	if err != nil {
		return l.failed(s, l.dbErr("taking a machine ID", err))
	}
	return nil
}

// takeOnce runs the take statement once and, if it took a row, records the
// lease.
func (l *Leaser) takeOnce(ctx context.Context, s *session) error {
	var (
		id              int64
		inherited, mark *time.Time
	)
	sent := time.Now() // before the statement: the row's TTL starts later
	ahead := l.cfg.clock().Add(l.cfg.ttl)
	err := l.db.QueryRow(ctx, l.sql.take, s.token, micros(l.cfg.ttl), ahead, l.cfg.lo, l.cfg.hi).Scan(&id, &inherited, &mark)
	if err != nil {
		return err
	}
	l.confirm(s, id, sent, deref(inherited), deref(mark), true)
	return nil
}

// renew extends s's lease once. It returns an error wrapping ErrLost if
// the database says the token no longer owns the ID. The caller holds
// l.turn.
func (l *Leaser) renew(ctx context.Context, s *session) error {
	l.mu.Lock()
	id := l.lease.ID
	l.mu.Unlock()
	var mark *time.Time
	sent := time.Now()
	ahead := l.cfg.clock().Add(l.cfg.ttl)
	err := l.db.QueryRow(ctx, l.sql.renew, id, s.token, micros(l.cfg.ttl), ahead).Scan(&mark)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		lost := fmt.Errorf("%w: machine ID %d in %s has another owner or no row", ErrLost, id, l.cfg.table)
		l.mu.Lock()
		if l.sess == s {
			l.owned = false
			l.setLocked(machineid.Lease{ID: id, Err: lost})
		}
		l.mu.Unlock()
		l.notify()
		return lost
	case err != nil:
		return l.failed(s, l.dbErr("renewing machine ID "+fmt.Sprint(id), err))
	}
	l.confirm(s, id, sent, time.Time{}, deref(mark), false)
	return nil
}

// confirm records a lease the database confirmed for a statement sent at
// sent: held until sent + TTL - margin on the monotonic clock. A fresh
// lease (a take) sets After to inherited; a renewal keeps it.
func (l *Leaser) confirm(s *session, id int64, sent, inherited, mark time.Time, fresh bool) {
	deadline := sent.Add(l.cfg.ttl - l.cfg.margin)
	l.mu.Lock()
	if l.sess != s {
		l.mu.Unlock()
		return // released meanwhile; Release frees the row by token
	}
	next := machineid.Lease{ID: id, Held: true, After: l.lease.After, Until: mark}
	if fresh {
		next.After = inherited
	}
	left := time.Until(deadline)
	if left <= 0 {
		// The answer came too late to vouch for anything; the next
		// renewal, sooner, may.
		next.Held = false
		next.Err = fmt.Errorf("%w: the database's answer came after the lease's deadline", ErrExpired)
	} else {
		l.expiry.Reset(left)
	}
	l.owned, l.deadline, l.lastErr = true, deadline, nil
	changed := l.setLocked(next)
	l.mu.Unlock()
	if changed {
		l.notify()
	}
}

// failed records err as the last failure of s's statements and returns
// it. A lease still held stays held until its deadline; one already lost
// reports err as its cause.
func (l *Leaser) failed(s *session, err error) error {
	l.mu.Lock()
	changed := false
	if l.sess == s {
		l.lastErr = err
		if !l.lease.Held && l.lease.ID >= 0 {
			next := l.lease
			next.Err = err
			if l.owned {
				next.Err = fmt.Errorf("%w: %w", ErrExpired, err)
			}
			changed = l.setLocked(next)
		}
	}
	l.mu.Unlock()
	if changed {
		l.notify()
	}
	return err
}

// expire runs at the deadline: unless a renewal moved it on, the lease can
// no longer be proven, since the row may expire in the database from then
// on (less the margin), so watchers must stop issuing.
func (l *Leaser) expire() {
	l.mu.Lock()
	changed := false
	if l.lease.Held {
		if left := time.Until(l.deadline); left > 0 {
			l.expiry.Reset(left)
		} else {
			next := l.lease
			next.Held = false
			next.Err = ErrExpired
			if l.lastErr != nil {
				next.Err = fmt.Errorf("%w: %w", ErrExpired, l.lastErr)
			}
			changed = l.setLocked(next)
		}
	}
	l.mu.Unlock()
	if changed {
		l.notify()
	}
}

// run renews s's lease every TTL/3 until Release, and takes one again when
// it is lost. After a failed statement it tries again sooner, every TTL/10.
func (l *Leaser) run(s *session) {
	defer close(s.stopped)
	every, retry := l.cfg.ttl/3, l.cfg.ttl/10
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		next := every
		if l.refresh(s) != nil {
			next = retry
		}
		t.Reset(next)
	}
}

// refresh renews s's lease, or takes one if the token owns none.
func (l *Leaser) refresh(s *session) error {
	select {
	case l.turn <- struct{}{}:
	case <-s.ctx.Done():
		return ErrReleased
	}
	defer func() { <-l.turn }()
	ctx, cancel := context.WithTimeout(s.ctx, l.cfg.callTimeout)
	defer cancel()
	l.mu.Lock()
	owned := l.owned
	l.mu.Unlock()
	if owned {
		err := l.renew(ctx, s)
		if !errors.Is(err, ErrLost) {
			return err
		}
	}
	return l.take(ctx, s)
}

// setLocked replaces the lease and reports whether watchers must hear of
// it. The caller holds l.mu.
func (l *Leaser) setLocked(next machineid.Lease) bool {
	old := l.lease
	l.lease = next
	return old.ID != next.ID || old.Held != next.Held ||
		!old.After.Equal(next.After) || !old.Until.Equal(next.Until) ||
		errText(old.Err) != errText(next.Err)
}

// dbErr wraps a statement's error with what it was doing, and says how to
// create a missing table.
func (l *Leaser) dbErr(doing string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return fmt.Errorf("machineid_postgres: %s: table %s does not exist; create it with TableSQL or Leaser.CreateTable: %w", doing, l.cfg.table, err)
	}
	return fmt.Errorf("machineid_postgres: %s in %s: %w", doing, l.cfg.table, err)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
