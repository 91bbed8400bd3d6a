package machineidtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// A ledger records what the holders of one subtest were told and did: every
// lease report, in the order the reports arrived, every Release, and the IDs
// each holder's generator issued. The checks read it once the holders are
// done, on the test's goroutine.
type ledger struct {
	t     *testing.T // written once by newLedger
	h     Harness    // written once by newLedger
	start time.Time  // written once by newLedger; reports are timed from it

	mu       sync.Mutex // protects the fields below and every holder's record
	seq      int        // numbers events (reports, releases, restarts) in the order they happen
	holders  []*holder
	settled  bool
	lostData int    // seq at which a restart that lost the store's data began; 0 if none
	restart  [2]int // seqs at which Harness.Restart was called and returned
}

// newLedger returns an empty ledger for t.
func newLedger(t *testing.T, h Harness) *ledger {
	return &ledger{t: t, h: h, start: time.Now()}
}

// next returns the number of a new event. The caller holds mu.
func (led *ledger) next() int {
	led.seq++
	return led.seq
}

// since returns how long ago the subtest began, for messages.
func (led *ledger) since() time.Duration {
	return time.Since(led.start).Round(time.Millisecond)
}

// holder wraps a Leaser from Harness.NewLeaser. A generator is given the
// holder, not the Leaser, so that the ledger sees what it releases.
type holder struct {
	machineid.Leaser // from Harness.NewLeaser; MachineID and Watch go straight to it

	led    *ledger
	n      int     // its number in messages, from 1
	lo, hi int64   // the range it was made with
	stop   func()  // stops recording
	gen    *issuer // the generator running on it, or nil; written on the test's goroutine

	// Written under led.mu:
	reports   []report
	released  int       // seq of the first Release, or 0
	issued    time.Time // the first Release's argument
	abandoned int       // seq of Abandon, or 0
	ended     bool      // end was called
}

// report is one call of a holder's watcher.
type report struct {
	seq  int
	at   time.Duration // since the subtest began
	when time.Time     // the clock when it came
	machineid.Lease
}

// newHolder makes a Leaser for lo..hi and starts recording its reports. It
// must be called on the test's goroutine. If the test ends without settling
// the ledger (after a Fatal, say), the holder is ended then, before
// NewLeaser's cleanup runs, so that no lease outlives its test.
func (led *ledger) newHolder(lo, hi int64) *holder {
	led.t.Helper()
	l, err := led.h.NewLeaser(led.t, lo, hi, led.h.TTL)
	switch {
	case err != nil:
		led.t.Fatalf("NewLeaser(%d, %d, %v) = %v; want a Leaser", lo, hi, led.h.TTL, err)
	case l == nil:
		led.t.Fatalf("NewLeaser(%d, %d, %v) = nil, nil; want a Leaser", lo, hi, led.h.TTL)
	}
	h := &holder{Leaser: l, led: led, lo: lo, hi: hi}
	led.mu.Lock()
	led.holders = append(led.holders, h)
	h.n = len(led.holders)
	led.mu.Unlock()
	h.stop = sync.OnceFunc(l.Watch(h.record)) // settle and the cleanup both stop it
	led.t.Cleanup(func() {
		_, _ = h.end()
		h.stop()
	})
	return h
}

// record is the holder's watcher.
func (h *holder) record(l machineid.Lease) {
	h.led.mu.Lock()
	defer h.led.mu.Unlock()
	h.reports = append(h.reports, report{seq: h.led.next(), at: h.led.since(), when: time.Now(), Lease: l})
}

// Release records the release, so that the next holder's After is held to
// issued rather than to the Until this holder was given, and releases. An
// abandoned holder's Leaser is not used again: its generator's Close comes
// here, and is not passed on.
func (h *holder) Release(issued time.Time) error {
	h.led.mu.Lock()
	abandoned := h.abandoned != 0
	if h.released == 0 && !abandoned {
		h.released, h.issued = h.led.next(), issued
	}
	h.led.mu.Unlock()
	if abandoned {
		return nil
	}
	return h.Leaser.Release(issued)
}

// abandon has the harness cut the holder off as a crash would.
func (h *holder) abandon() {
	h.led.mu.Lock()
	h.abandoned = h.led.next()
	h.led.mu.Unlock()
	h.led.h.Abandon(h.Leaser)
}

// lease returns the latest lease the holder reported.
func (h *holder) lease() machineid.Lease {
	h.led.mu.Lock()
	defer h.led.mu.Unlock()
	if len(h.reports) == 0 {
		return machineid.Lease{ID: -1}
	}
	return h.reports[len(h.reports)-1].Lease
}

// take asks for an ID every retry until it gets one or within has passed,
// and returns the last answer. Each call may take up to a TTL.
func (h *holder) take(within, retry time.Duration) (int64, error) {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), h.led.h.TTL)
		id, err := h.MachineID(ctx)
		cancel()
		if err == nil || time.Now().Add(retry).After(deadline) {
			return id, err
		}
		time.Sleep(retry)
	}
}

// waitReleased waits up to within for the holder's watcher to see a lease
// that is not held, and reports whether it did.
func (h *holder) waitReleased(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !time.Now().After(deadline) {
		if !h.lease().Held {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// markRestart brackets Harness.Restart in the ledger.
func (led *ledger) markRestart(run func()) {
	led.mu.Lock()
	led.restart[0] = led.next()
	if !led.h.KeepsData {
		led.lostData = led.restart[0]
	}
	led.mu.Unlock()
	run()
	led.mu.Lock()
	led.restart[1] = led.next()
	led.mu.Unlock()
}

// settle ends every holder (see end), waits a little for the watchers of
// those released to see it, and stops recording. A healthy store's Release
// returns nil, even for a holder that never got an ID. settle acts once;
// later calls do nothing.
func (led *ledger) settle() {
	led.t.Helper()
	led.mu.Lock()
	done := led.settled
	led.settled = true
	hs := led.holders
	led.mu.Unlock()
	if done {
		return
	}
	for _, h := range hs {
		if what, err := h.end(); err != nil {
			led.t.Errorf("holder %d: %s = %v; want nil", h.n, what, err)
		}
	}
	for _, h := range hs {
		led.mu.Lock()
		released := h.released != 0
		led.mu.Unlock()
		if released {
			h.waitReleased(led.h.TTL / 4)
		}
		h.stop()
	}
}

// end stops the holder's generator, whose Close releases, or else
// releases the holder unless it was released or abandoned. It returns
// what it called and its error, if it released. end acts once; later
// calls do nothing.
func (h *holder) end() (what string, err error) {
	h.led.mu.Lock()
	ended, released, abandoned := h.ended, h.released != 0, h.abandoned != 0
	h.ended = true
	h.led.mu.Unlock()
	switch {
	case ended:
	case h.gen != nil && !h.gen.closed:
		// An abandoned holder's Release does nothing; see Release.
		return "Generator.Close, which releases,", h.gen.close()
	case !released && !abandoned:
		return "Release", h.Release(time.Time{})
	}
	return "", nil
}

// kept reports whether every report since the holder first held an ID
// held that ID; if not, it returns the first report that did not.
func (h *holder) kept() (report, bool) {
	h.led.mu.Lock()
	defer h.led.mu.Unlock()
	id := int64(-1)
	for _, r := range h.reports {
		switch {
		case id < 0 && r.Held:
			id = r.ID
		case id >= 0 && (!r.Held || r.ID != id):
			return r, false
		}
	}
	return report{}, true
}
