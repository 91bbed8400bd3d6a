package machineidtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/machineid"
)

// clockOff is how far the clocks of the refused newcomers are off.
const clockOff = 30 * time.Second

// testClock checks the fleet's clock, for a store with a reference
// (Harness.Reference): with one holder on the true clock in place (the
// reference of a store that reads the live holders' clocks), a newcomer
// whose clock is 30s ahead, then one 30s behind, is refused at once with
// an error wrapping machineid.ErrClockOffset that names the reference and
// says which way the clock is off; then a newcomer on the true clock takes
// the same ID with no mark of theirs to wait out, and issues,
// with its offset measured against the reference.
func testClock(t *testing.T, h Harness) {
	led := newLedger(t, h)
	anchor := led.newHolder(clockLo, clockLo)
	ctx, cancel := context.WithTimeout(context.Background(), 2*h.TTL)
	defer cancel()
	if _, err := anchor.MachineID(ctx); err != nil {
		t.Fatalf("holder %d on the true clock: MachineID = %v; want ID %d", anchor.n, err, clockLo)
	}
	for _, off := range []time.Duration{clockOff, -clockOff} {
		way := "ahead of"
		if off < 0 {
			way = "behind"
		}
		n := led.newHolder(clockID, clockID)
		start := time.Now()
		err := n.startGeneratorAt(off)
		took := time.Since(start)
		var ce *machineid.ClockOffsetError
		switch {
		case err == nil:
			t.Errorf("holder %d, its clock %v %s: ringflake.New succeeded; want it refused with machineid.ErrClockOffset", n.n, clockOff, way)
			continue
		case !errors.Is(err, machineid.ErrClockOffset) || !errors.As(err, &ce):
			t.Errorf("holder %d, its clock %v %s: ringflake.New = %v; want a *machineid.ClockOffsetError", n.n, clockOff, way, err)
			continue
		}
		if d := ce.By - off; d > ce.Within+time.Second || -d > ce.Within+time.Second {
			t.Errorf("holder %d's clock was %v off; the refusal measured %v", n.n, off, ce.ClockOffset)
		}
		if !strings.Contains(err.Error(), way+" ") || !strings.Contains(err.Error(), h.Reference) {
			t.Errorf("holder %d: the refusal %q does not say %q and %q", n.n, err, way, h.Reference)
		}
		if took > 2*h.TTL {
			t.Errorf("holder %d: the refusal took %v; want it at once (within 2 TTLs): waiting does not set a clock right", n.n, took)
		}
	}
	right := led.newHolder(clockID, clockID)
	start := time.Now()
	if err := right.startGeneratorAt(0); err != nil {
		t.Fatalf("holder %d on the true clock, after the refused ones: %v; want it to issue, with no mark left to wait out", right.n, err)
	}
	// A mark left 30s ahead would make New fail at once with ErrMarkAhead;
	// a store's restart floor may make it wait a little.
	if l := right.lease(); l.After.After(start.Add(clockOff / 2)) {
		t.Errorf("holder %d took ID %d with After %s, %v ahead; want no mark from the refused clocks",
			right.n, clockID, stamp(l.After), l.After.Sub(start).Round(time.Millisecond))
	}
	if !right.gen.waitCount(1, h.TTL) {
		t.Errorf("holder %d's generator issued nothing in %v: %v", right.n, h.TTL, right.gen)
	}
	if got := right.gen.g.Lease().Clock; !strings.Contains(got.Against, h.Reference) || got.Past() {
		t.Errorf("holder %d's Lease().Clock = %+v; want a measurement against %s within its bound", right.n, got, h.Reference)
	}
	led.check()
}

// startGeneratorAt is startGenerator with the generator's clock off the
// true one by off. ringflake.New hands its clock to a *machineid.Holder,
// but it gets the holder, which wraps the Leaser, so the clock is handed
// here.
func (h *holder) startGeneratorAt(off time.Duration) error {
	clock := func() time.Time { return time.Now().Add(off) }
	if !holderclock.Set(h.Leaser, clock) {
		return fmt.Errorf("holder %d: NewLeaser returned a %T; Harness.Reference needs a *machineid.Holder, which takes the generator's clock", h.n, h.Leaser)
	}
	return h.startGenerator(h.led.h.TTL/10, ringflake.WithClock(clock))
}
