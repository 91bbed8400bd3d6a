package machineidtest

import (
	"context"
	"testing"
	"time"
)

// testRelease hands one ID on by Release, from holder to holder. Each next
// holder gets it at once, with an After at or past what the one before
// released: the last instant its generator issued, or for the zero Time its
// Until, and never below that holder's own After. Watchers see each
// release; Release may be called twice, and on a Leaser that never asked
// for an ID.
func testRelease(t *testing.T, h Harness) {
	led := newLedger(t, h)
	// a and b run generators, whose Close releases with the last instant
	// issued; a's runs past a renewal, which raises Until ahead of it.
	a := led.newHolder(releaseID, releaseID)
	issueAndClose(t, a, h.TTL/2)
	b := takeReleased(t, led, a)
	issueAndClose(t, b, h.TTL/10)

	c := takeReleased(t, led, b)
	for i := range 2 {
		if err := c.Release(time.Time{}); err != nil {
			t.Errorf("holder %d: Release(zero Time) #%d = %v; want nil", c.n, i+1, err)
		}
	}
	released(t, c)

	d := takeReleased(t, led, c)
	below := d.lease().After.Add(-time.Hour)
	if d.lease().After.IsZero() {
		below = time.Now().Add(-time.Hour)
	}
	if err := d.Release(below); err != nil {
		t.Errorf("holder %d: Release(an hour before its After) = %v; want nil", d.n, err)
	}
	released(t, d)
	takeReleased(t, led, d)

	idle := led.newHolder(releaseID, releaseID)
	if err := idle.Release(time.Time{}); err != nil {
		t.Errorf("holder %d, which never asked for an ID: Release = %v; want nil", idle.n, err)
	}
	led.check()
}

// issueAndClose runs a generator on h for about d and closes it, which
// releases h's lease.
func issueAndClose(t *testing.T, h *holder, d time.Duration) {
	t.Helper()
	if err := h.startGenerator(h.led.h.TTL / 10); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	if h.gen.count() == 0 {
		t.Errorf("holder %d's generator issued nothing in %v: %v", h.n, d, h.gen)
	}
	if err := h.gen.close(); err != nil {
		t.Errorf("holder %d: Generator.Close, which releases, = %v; want nil", h.n, err)
	}
	released(t, h)
}

// released checks that h's watcher soon sees that h no longer holds its ID.
func released(t *testing.T, h *holder) {
	t.Helper()
	if !h.waitReleased(h.led.h.TTL / 4) {
		t.Errorf("holder %d: its watcher still saw ID %d held %v after Release returned; want Held = false",
			h.n, h.lease().ID, h.led.h.TTL/4)
	}
}

// takeReleased makes a holder that takes the ID prev has just released,
// which it must get at once.
func takeReleased(t *testing.T, led *ledger, prev *holder) *holder {
	t.Helper()
	next := led.newHolder(releaseID, releaseID)
	ctx, cancel := context.WithTimeout(context.Background(), led.h.TTL)
	defer cancel()
	if _, err := next.MachineID(ctx); err != nil {
		t.Fatalf("holder %d could not take ID %d that holder %d had just released: %v; want it at once",
			next.n, releaseID, prev.n, err)
	}
	return next
}
