package machineid_redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// eval runs a script with the store's keys and returns when it answers or
// ctx ends, whichever comes first.
//
// The client's call does not get ctx: go-redis honours a context's
// deadline only with ContextTimeoutEnabled, and, given one, answers a
// failed dial with the context's error, losing the cause (a refused
// connection, say). So a call that eval gives up on runs on until the
// client gives up by its own dial, read and retry limits; its error is
// then kept, and the next call that gets no answer says it. Its late
// success is dropped: the scripts are idempotent, so the next call finds
// its effect.
func (s *store) eval(ctx context.Context, sc *redis.Script, args ...any) ([]int64, error) {
	type result struct {
		v   []int64
		err error
	}
	got := make(chan result, 1) // buffered: the call never waits for a caller that left
	// The call ends early only when ctx is cancelled (by Release), not
	// when its deadline passes.
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	s.inflight.add()
	go func() {
		defer s.inflight.done()
		defer cancel()
		defer stop()
		v, err := mutantScript(sc).Run(callCtx, s.client, s.keys, args...).Int64Slice()
		got <- result{v, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			return nil, fmt.Errorf("redis: %w", r.err)
		}
		s.late.set(nil)
		return r.v, nil
	case <-ctx.Done():
		go func() {
			if r := <-got; r.err != nil {
				s.late.set(r.err)
			}
		}()
		if err := s.late.get(); err != nil {
			return nil, fmt.Errorf("%w (a call given up on before failed later: %w)", ctx.Err(), err)
		}
		return nil, ctx.Err()
	}
}

// calls counts the calls eval started that are still running, even those
// it gave up on. A sync.WaitGroup cannot: settle may give up on its Wait,
// and the Holder's next call then Adds from 0 while that Wait, woken as
// the late call ended, has not yet returned, which panics ("WaitGroup is
// reused before previous Wait has returned"). Here a wait is a channel,
// closed when the count it was taken at has reached 0 and left for the
// collector if no one waits on it any more.
type calls struct {
	mu    sync.Mutex    // protects n and empty
	n     int           // calls running
	empty chan struct{} // closed when n drops to 0; nil while n is 0
}

func (c *calls) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.empty = make(chan struct{})
	}
	c.n++
}

func (c *calls) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.empty)
		c.empty = nil
	}
}

// idle returns a channel closed once no call is running.
func (c *calls) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	return c.empty
}

// late holds the error of the latest call that eval gave up on and that
// failed afterwards, until a call succeeds.
type late struct {
	mu  sync.Mutex
	err error
}

func (l *late) set(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil || !errors.Is(err, context.Canceled) {
		l.err = err
	}
}

func (l *late) get() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// settle waits until no call that eval gave up on is still running, or
// until half of what is left of ctx, so that a lease such a call took is in
// Redis before the release script looks for it. The Holder makes no other
// call meanwhile.
func (s *store) settle(ctx context.Context) {
	idle := s.inflight.idle()
	wait := time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) / 2
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}
