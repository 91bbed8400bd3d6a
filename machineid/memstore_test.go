package machineid_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// memStore is an in-memory lease store: per ID, the token holding it and
// when that lease expires on the monotonic clock, and the ID's mark. A
// restart that drops the data sets a restart floor: for a TTL after it,
// every taken ID inherits at least the restart's time plus the TTL.
type memStore struct {
	keeps   bool // a restart keeps leases and marks; written once
	clocked bool // Take and Renew report the store's clock, time.Now; written once

	mu        sync.Mutex // protects the fields below
	leases    map[int64]memLease
	marks     map[int64]time.Time
	inherited map[int64]time.Time // the After of each ID's current holding
	restarted time.Time
	down      bool
	calls     int
	gate      chan struct{} // while paused, closed on resume; nil otherwise
}

// pause makes calls wait, as on a paused server, until resume.
func (s *memStore) pause() (resume func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.gate = nil
		s.mu.Unlock()
		close(gate)
	}
}

type memLease struct {
	token   string
	expires time.Time
}

var (
	errDown = errors.New("memstore: store is down")
	errCut  = errors.New("memstore: client is cut off")
)

func newMemStore(keeps bool) *memStore {
	return &memStore{keeps: keeps, leases: map[int64]memLease{}, marks: map[int64]time.Time{}, inherited: map[int64]time.Time{}}
}

// memClient is one process's client of a memStore: a machineid.Store that
// can be cut off, as a crashed process's would be, or made to hang until
// its context ends.
type memClient struct {
	s       *memStore
	cut     atomic.Bool
	hang    atomic.Bool // calls wait for their context to end
	stuck   atomic.Bool // calls ignore their context and wait for unstick
	unstick chan struct{}
	delay   atomic.Int64  // a Take answers this many ns late, whatever its context
	release chan struct{} // if not nil, a Release waits for it to close
}

func newMemClient(s *memStore) *memClient { return &memClient{s: s, unstick: make(chan struct{})} }

func (c *memClient) enter(ctx context.Context) error {
	c.s.mu.Lock()
	gate := c.s.gate
	c.s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.stuck.Load() {
		<-c.unstick
	}
	if c.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if c.cut.Load() {
		return errCut
	}
	return ctx.Err()
}

func (c *memClient) Take(ctx context.Context, cl machineid.Claim) (machineid.Grant, error) {
	defer time.Sleep(time.Duration(c.delay.Load()))
	if err := c.enter(ctx); err != nil {
		return machineid.Grant{}, err
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down {
		return machineid.Grant{}, errDown
	}
	now := time.Now()
	pick := int64(-1)
	for id := cl.Lo; id <= cl.Hi; id++ {
		l, ok := s.leases[id]
		if ok && l.token == cl.Token {
			pick = id
			break
		}
		if (!ok || !now.Before(l.expires)) && pick < 0 {
			pick = id
		}
	}
	if pick < 0 {
		return machineid.Grant{}, fmt.Errorf("%w: every ID in %d..%d is held", machineid.ErrExhausted, cl.Lo, cl.Hi)
	}
	if l, ok := s.leases[pick]; !ok || l.token != cl.Token {
		after := s.marks[pick]
		if floor := s.restarted.Add(cl.TTL); !s.restarted.IsZero() && now.Before(floor) {
			after = later(after, floor)
		}
		s.inherited[pick] = after
	}
	s.leases[pick] = memLease{token: cl.Token, expires: now.Add(cl.TTL)}
	s.marks[pick] = later(s.marks[pick], cl.Until)
	return machineid.Grant{ID: pick, After: s.inherited[pick], Until: s.marks[pick], Clock: s.reading()}, nil
}

// reading is the store's clock, if it reports one.
func (s *memStore) reading() machineid.Reading {
	if !s.clocked {
		return machineid.Reading{}
	}
	return machineid.Reading{Source: "the memstore's clock", Time: time.Now()}
}

func (c *memClient) Renew(ctx context.Context, cl machineid.Claim, id int64) (machineid.Grant, error) {
	if err := c.enter(ctx); err != nil {
		return machineid.Grant{}, err
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	now := time.Now()
	l, ok := s.leases[id]
	switch {
	case s.down:
		return machineid.Grant{}, errDown
	case !ok || l.token != cl.Token:
		return machineid.Grant{}, fmt.Errorf("%w: machine ID %d has another holder or none", machineid.ErrLeaseLost, id)
	}
	s.leases[id] = memLease{token: cl.Token, expires: now.Add(cl.TTL)}
	s.marks[id] = later(s.marks[id], cl.Until)
	return machineid.Grant{ID: id, Until: s.marks[id], Clock: s.reading()}, nil
}

func (c *memClient) Release(ctx context.Context, cl machineid.Claim, id int64, issued time.Time) error {
	if c.release != nil {
		<-c.release
	}
	if err := c.enter(ctx); err != nil {
		return err
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down {
		return errDown
	}
	for i, l := range s.leases {
		if l.token == cl.Token && (id < 0 || i == id) {
			delete(s.leases, i)
			if !issued.IsZero() {
				s.marks[i] = later(issued, s.inherited[i])
			}
		}
	}
	return nil
}

// restart takes the store down for a moment and, unless it keeps its
// data, drops every lease and mark and sets the restart floor.
func (s *memStore) restart() {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keeps {
		s.leases = map[int64]memLease{}
		s.marks = map[int64]time.Time{}
		s.inherited = map[int64]time.Time{}
		s.restarted = time.Now()
	}
	s.down = false
}

// later returns the later of a and b, without a monotonic reading: a mark
// is a time on the wall clock.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b.Round(0)
	}
	return a.Round(0)
}

// mark returns id's mark.
func (s *memStore) mark(id int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marks[id]
}
