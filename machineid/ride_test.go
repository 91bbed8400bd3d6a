package machineid_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
)

// restartStore grants ID 0 and renews it, reporting its clock (time.Now)
// and recording extra past each proposed mark, until told to answer a
// number of renewals with a RestartError whose Start is start(the clock
// read in the last confirmed call). A take after the first inherits
// newAfter.
type restartStore struct {
	floor    time.Duration
	extra    time.Duration
	start    func(read time.Time) time.Time
	newAfter time.Time

	gone  atomic.Int32 // renewals still to answer with the RestartError
	mu    sync.Mutex   // protects the fields below
	read  time.Time    // the clock read in the last call confirmed
	until time.Time    // the mark recorded in the last call confirmed
	lost  time.Time    // read, when a renewal was answered with the RestartError
	held  time.Time    // until, then: the ride's ceiling
	takes int
}

// confirmed records until as the last mark confirmed, and returns it.
func (s *restartStore) confirmed(until time.Time) time.Time {
	if until.IsZero() {
		return until // a take that raises no mark
	}
	until = until.Add(s.extra)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until = until
	return until
}

func (s *restartStore) answer() machineid.Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = time.Now()
	return machineid.Reading{Source: "the test's clock", Time: s.read}
}

func (s *restartStore) Take(_ context.Context, c machineid.Claim) (machineid.Grant, error) {
	s.mu.Lock()
	s.takes++
	var after time.Time
	if s.takes > 1 {
		after = s.newAfter
	}
	s.mu.Unlock()
	return machineid.Grant{ID: 0, After: after, Until: s.confirmed(c.Until), Clock: s.answer()}, nil
}

func (s *restartStore) Renew(_ context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	if s.gone.Add(-1) >= 0 {
		s.mu.Lock()
		start := s.start(s.read)
		s.lost, s.held = s.read, s.until
		s.mu.Unlock()
		return machineid.Grant{}, &machineid.RestartError{ID: id, Start: start, Floor: s.floor,
			Err: fmt.Errorf("%w: machine ID %d is gone (test)", machineid.ErrLeaseLost, id)}
	}
	return machineid.Grant{ID: id, Until: s.confirmed(c.Until), Clock: s.answer()}, nil
}

func (s *restartStore) Release(context.Context, machineid.Claim, int64, time.Time) error { return nil }

// TestHolderRidesARestart checks the Holder's side of riding out a store's
// restart, on a scripted store: what watchers see, and when.
func TestHolderRidesARestart(t *testing.T) {
	t.Parallel()
	const ttl = 600 * time.Millisecond
	const floor = 700 * time.Millisecond
	for _, tt := range []struct {
		name  string
		start func(read time.Time) time.Time
		rides bool
	}{
		{"started after the last confirmation", func(read time.Time) time.Time { return read.Add(time.Millisecond) }, true},
		{"started before it: a flush", func(read time.Time) time.Time { return read.Add(-time.Millisecond) }, false},
		{"started at it", func(read time.Time) time.Time { return read }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &restartStore{floor: floor, start: tt.start, newAfter: time.Now().Add(time.Hour)}
			h, err := machineid.NewHolder[struct{}](s, nil, machineid.Limits{Name: "ridetest"}, machineid.WithTTL(ttl), machineid.WithRange(0, 0))
			require.NoError(t, err)
			t.Cleanup(func() { _ = h.Release(time.Time{}) })
			reports := make(chan machineid.Lease, 100)
			t.Cleanup(h.Watch(func(l machineid.Lease) { reports <- l }))
			_, err = h.MachineID(t.Context())
			require.NoError(t, err)
			for l := <-reports; !l.Held; l = <-reports { // before the take
			}
			s.gone.Store(1)
			var ride machineid.Lease // the held report of the first holding with the latest Until
			deadline := time.After(5 * ttl)
			for {
				var l machineid.Lease
				select {
				case l = <-reports:
				case <-deadline:
					require.FailNow(t, "no new holding reported", "ride: %+v", ride)
				}
				if !l.Held || !l.After.IsZero() {
					if tt.rides {
						// The ride ends, at its ceiling, with a report of
						// the holding's end, its cause the restart, when
						// the take got the same ID back: one holding, one
						// After (Leaser's contract). No loss before it.
						require.False(t, l.Held, "the new holding of the same ID (%+v) with no end of the ride reported before it", l)
						require.False(t, time.Now().Before(ride.Until), "a loss reported during the ride, %v before its ceiling: %v", time.Until(ride.Until), l.Err)
						var re *machineid.RestartError
						require.ErrorAs(t, l.Err, &re, "the ride's end gives the restart as its cause")
						select {
						case l = <-reports:
						case <-deadline:
							require.FailNow(t, "no new holding reported after the ride", "ride: %+v", ride)
						}
						require.True(t, l.Held, "after the ride's end, the new holding: %+v", l)
						s.mu.Lock()
						until := s.held
						s.mu.Unlock()
						require.Equal(t, until, ride.Until, "the ride's ceiling: the mark last confirmed, not the last confirmation's clock + floor")
						assert.False(t, time.Now().Before(ride.Until), "the new holding reported %v before the ride's ceiling %v", time.Until(ride.Until), ride.Until)
						assert.Equal(t, s.newAfter, l.After)
					} else {
						require.False(t, l.Held, "a new holding (%+v) with no loss reported before it", l)
						var re *machineid.RestartError
						assert.ErrorAs(t, l.Err, &re)
					}
					return
				}
				if l.Until.After(ride.Until) {
					ride = l // the last: the ride, if any
				}
			}
		})
	}
}

// TestHolderReleaseEndsARide has the Holder released while it rides out a
// restart: the watchers see the release at once.
func TestHolderReleaseEndsARide(t *testing.T) {
	t.Parallel()
	s := &restartStore{floor: time.Hour, extra: time.Hour, start: func(read time.Time) time.Time { return read.Add(time.Millisecond) }, newAfter: time.Now().Add(2 * time.Hour)}
	h, err := machineid.NewHolder[struct{}](s, nil, machineid.Limits{Name: "ridetest"}, machineid.WithTTL(300*time.Millisecond), machineid.WithRange(0, 0))
	require.NoError(t, err)
	_, err = h.MachineID(t.Context())
	require.NoError(t, err)
	s.gone.Store(1)
	require.Eventually(t, func() bool {
		s.mu.Lock()
		lost := !s.lost.IsZero()
		s.mu.Unlock()
		l := h.Lease()
		return lost && l.Held && l.Until.After(time.Now().Add(time.Minute))
	}, 5*time.Second, 5*time.Millisecond, "the ride, up to the mark confirmed an hour on, reported after the restart's answer")
	require.NoError(t, h.Release(time.Time{}))
	l := h.Lease()
	assert.False(t, l.Held)
	assert.True(t, errors.Is(l.Err, machineid.ErrReleased), "%v", l.Err)
}
