package machineid_redis

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/internal/redistest"
)

// TestCallsAfterASettleThatTimedOut makes calls right after a settle that
// gave up waiting for a call eval had given up on, as a Holder does when
// New's deadline cuts its take short: it releases what the take may have
// got (settle), and takes again. The settle's wait for the late call then
// ends while new calls begin. No call may panic: a sync.WaitGroup's Wait
// that is woken as its count reaches 0 panics ("WaitGroup is reused before
// previous Wait has returned") if an Add from 0 comes before it returns,
// which the replay of the lease simulation's seed 471 hit (replay_test.go).
func TestCallsAfterASettleThatTimedOut(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var slow atomic.Int64 // ns each call waits before it is sent
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	c.AddHook(delay{&slow})
	t.Cleanup(func() { _ = c.Close() })
	s := &store{client: c, keys: []string{"{t}:MARKS"}}
	ping := redis.NewScript("return {1}")
	bg := context.Background()
	for range 300 {
		slow.Store(int64(3 * time.Millisecond))
		ctx, cancel := context.WithTimeout(bg, time.Millisecond)
		_, _ = s.eval(ctx, ping) // given up on, and still running
		cancel()
		ctx, cancel = context.WithTimeout(bg, 2*time.Millisecond)
		s.settle(ctx) // gives up after a millisecond
		cancel()
		slow.Store(0)
		for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
			_, _ = s.eval(bg, ping)
		}
	}
}

// delay is a client hook that holds each call back for a while.
type delay struct{ d *atomic.Int64 }

func (h delay) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h delay) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		time.Sleep(time.Duration(h.d.Load()))
		return next(ctx, cmd)
	}
}

func (h delay) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
