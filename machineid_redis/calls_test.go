package machineid_redis

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSettleThenReleaseRace gives settle a call that ends at about the
// call timeout, so settle sometimes gives up just as it ends, and then
// counts a new call, as the release after settle does. A sync.WaitGroup
// here panicked ("WaitGroup misuse: Add called concurrently with Wait") or,
// under -race, reported a race; the counter must take it.
func TestSettleThenReleaseRace(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	const timeout = time.Millisecond // the shortest call timeout
	for i := range 2000 {
		s, err := New(c, WithTTL(time.Second), WithCallTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		s.inflight.add() // a call eval gave up on
		go func() {
			time.Sleep(timeout + time.Duration(i%40)*timeout/160)
			s.inflight.done()
		}()
		s.settle()
		s.inflight.add() // the release's call
		s.inflight.done()
	}
}

// TestCallsIdle checks the in-flight counter's idle channel: closed with
// nothing in flight, open while a call runs, closed when the last ends.
func TestCallsIdle(t *testing.T) {
	t.Parallel()
	var c calls
	select {
	case <-c.idle():
	default:
		t.Fatal("idle() is open with no call in flight")
	}
	c.add()
	c.add()
	idle := c.idle()
	c.done()
	select {
	case <-idle:
		t.Fatal("idle() closed with a call still in flight")
	default:
	}
	c.done()
	select {
	case <-idle:
	default:
		t.Fatal("idle() still open after the last call ended")
	}
	c.add()
	select {
	case <-c.idle():
		t.Fatal("idle() is closed with a new call in flight")
	default:
	}
	c.done()
}
