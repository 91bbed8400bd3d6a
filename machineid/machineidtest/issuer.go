package machineidtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ringflake/ringflake"
)

// issuer runs a real generator on a holder's lease, taking an ID about
// every millisecond on a goroutine of its own, as an application would. It
// records what it got and never fails the test itself.
type issuer struct {
	g      *ringflake.Generator // written once by startGenerator
	led    *ledger              // written once by startGenerator
	quit   chan struct{}        // closed by close to stop run
	done   chan struct{}        // closed by run when it returns
	closed bool                 // written and read on the test's goroutine

	mu       sync.Mutex     // protects the fields below; run writes them, the test reads them
	ids      []ringflake.ID // in the order issued
	failures []failure      // the first few, for messages
	failed   int            // how many calls failed
	lost     bool           // a call failed with ErrLeaseLost
}

// failure is one NextID that failed.
type failure struct {
	at  time.Duration // since the subtest began
	err error
}

// keptFailures is how many failures an issuer keeps for messages.
const keptFailures = 8

// startGenerator makes a generator on the holder, with maxWait as its
// MaxWait and opts, and starts issuing. New waits, up to four TTLs, for
// the lease and for the clock to pass its After; its error is returned.
func (h *holder) startGenerator(maxWait time.Duration, opts ...ringflake.Option) error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*h.led.h.TTL)
	defer cancel()
	opts = append([]ringflake.Option{ringflake.WithMachineIDSource(h), ringflake.WithMaxWait(maxWait)}, opts...)
	g, err := ringflake.New(ctx, opts...)
	if err != nil {
		return fmt.Errorf("ringflake.New on holder %d: %w", h.n, err)
	}
	is := &issuer{g: g, led: h.led, quit: make(chan struct{}), done: make(chan struct{})}
	h.gen = is
	go is.run()
	return nil
}

func (is *issuer) run() {
	defer close(is.done)
	for {
		id, err := is.g.NextID()
		is.mu.Lock()
		if err != nil {
			is.failed++
			is.lost = is.lost || errors.Is(err, ringflake.ErrLeaseLost)
			if len(is.failures) < keptFailures {
				is.failures = append(is.failures, failure{is.led.since(), err})
			}
		} else {
			is.ids = append(is.ids, id)
		}
		is.mu.Unlock()
		pause := time.Millisecond
		if err != nil {
			pause = 5 * time.Millisecond
		}
		select {
		case <-is.quit:
			return
		case <-time.After(pause):
		}
	}
}

// close stops issuing and closes the generator, which releases the lease
// with the last instant it issued; it returns Close's error.
func (is *issuer) close() error {
	close(is.quit)
	<-is.done
	is.closed = true
	return is.g.Close()
}

// count returns how many IDs have been issued so far.
func (is *issuer) count() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return len(is.ids)
}

// waitCount waits up to within for at least n IDs, and reports whether they
// came.
func (is *issuer) waitCount(n int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for is.count() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// issued returns the IDs issued so far.
func (is *issuer) issued() []ringflake.ID {
	is.mu.Lock()
	defer is.mu.Unlock()
	return append([]ringflake.ID(nil), is.ids...)
}

// sawLoss reports whether a call failed with ErrLeaseLost.
func (is *issuer) sawLoss() bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.lost
}

// failureCount returns how many calls failed.
func (is *issuer) failureCount() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.failed
}

// String summarizes the failures, for messages.
func (is *issuer) String() string {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.failed == 0 {
		return "no failures"
	}
	s := fmt.Sprintf("%d failures", is.failed)
	for _, f := range is.failures {
		s += fmt.Sprintf("; at +%v: %v", f.at, f.err)
	}
	return s
}
