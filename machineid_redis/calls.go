package machineid_redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// eval runs a script with the service's keys and waits for its answer at
// most timeout, whatever the client's settings (go-redis ignores ctx
// deadlines unless ContextTimeoutEnabled is set).
//
// The client's call gets ctx, not the timeout: given a deadline, go-redis
// answers a failed dial with the context's error, and the cause (a refused
// connection, say) is lost. So a call eval gives up on runs on until the
// client gives up, by its own dial, read and retry limits, or ctx ends;
// if it then fails, its error is recorded as late (see late). Its late
// success is dropped: the scripts are idempotent, so the next call finds
// its effect.
func (s *Service) eval(ctx context.Context, timeout time.Duration, sc *redis.Script, args ...any) ([]int64, error) {
	callCtx, cancel := context.WithCancel(ctx) // cancelled when the call ends, so check ctx below
	sent := time.Now()
	type result struct {
		v   []int64
		err error
	}
	got := make(chan result) // unbuffered: a send succeeds only while eval waits
	abandoned := make(chan struct{})
	s.inflight.add()
	go func() {
		defer s.inflight.done()
		defer cancel()
		v, err := sc.Run(callCtx, s.client, s.keys, args...).Int64Slice()
		select {
		case got <- result{v, err}:
		case <-abandoned:
			if err != nil && ctx.Err() == nil {
				s.late(sent, fmt.Errorf("%w after %v; the client's error came later: %w", ErrTimeout, timeout.Round(time.Millisecond), err))
			}
		}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-got:
		var ne net.Error
		switch {
		case r.err == nil:
			return r.v, nil
		case ctx.Err() != nil:
			return nil, s.ctxErr(ctx, timeout, r.err)
		case errors.As(r.err, &ne) && ne.Timeout():
			// The client's own read or dial timeout came first.
			return nil, fmt.Errorf("%w: %w", ErrTimeout, r.err)
		}
		return nil, fmt.Errorf("machineid_redis: redis: %w", r.err)
	case <-t.C:
		close(abandoned)
		return nil, fmt.Errorf("%w after %v: %w", ErrTimeout, timeout.Round(time.Millisecond), errNoAnswer)
	case <-ctx.Done():
		close(abandoned)
		return nil, s.ctxErr(ctx, timeout, nil)
	}
}

// errNoAnswer is the cause of a timeout before the client said why.
var errNoAnswer = errors.New("no answer yet")

// ctxErr explains why a call's context ended: Release (errReleased), the
// caller's deadline ([ErrTimeout]) or its cancellation. cause is the
// client's error, if it returned one; it is kept unless it only repeats
// the context's.
func (s *Service) ctxErr(ctx context.Context, timeout time.Duration, cause error) error {
	if cause == nil || errors.Is(cause, context.DeadlineExceeded) || errors.Is(cause, context.Canceled) {
		cause = context.Cause(ctx)
	}
	switch {
	case s.ctx.Err() != nil:
		return errReleased
	case errors.Is(cause, context.DeadlineExceeded):
		return fmt.Errorf("%w after %v: %w", ErrTimeout, timeout.Round(time.Millisecond), cause)
	}
	return fmt.Errorf("machineid_redis: %w", cause)
}

// calls counts Redis calls in flight. Unlike a sync.WaitGroup, it can be
// waited on with a timeout, and counting up again while a timed-out waiter
// has gone is fine: settle gives up on stuck calls, and the release that
// follows is a call too. The zero value is ready to use.
type calls struct {
	mu     sync.Mutex
	n      int
	idleCh chan struct{} // closed when n drops to 0; replaced when n leaves 0
}

func (c *calls) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idleCh = make(chan struct{})
	}
	c.n++
}

func (c *calls) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.idleCh)
	}
}

// idle returns a channel that is closed once no call is in flight.
func (c *calls) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return closedCh
	}
	return c.idleCh
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
