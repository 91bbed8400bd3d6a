package machineidtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// testWait fills a range of one ID: a newcomer whose deadline comes first
// fails with an error wrapping machineid.ErrExhausted that says it waited;
// then the holder is abandoned, and a newcomer asking once, with a
// deadline of four TTLs, gets the ID once the abandoned lease has expired
// (a store whose lock dies with its holder: at once).
func testWait(t *testing.T, h Harness) {
	led := newLedger(t, h)
	a := led.newHolder(waitID, waitID)
	ctx, cancel := context.WithTimeout(context.Background(), 2*h.TTL)
	defer cancel()
	if _, err := a.MachineID(ctx); err != nil {
		t.Fatalf("holder %d: MachineID = %v; want ID %d", a.n, err, waitID)
	}
	short := led.newHolder(waitID, waitID)
	ctx, cancel = context.WithTimeout(context.Background(), h.TTL/2)
	defer cancel()
	start := time.Now()
	_, err := short.MachineID(ctx)
	switch {
	case !errors.Is(err, machineid.ErrExhausted):
		t.Errorf("holder %d, while holder %d held ID %d: MachineID = %v; want an error wrapping machineid.ErrExhausted", short.n, a.n, waitID, err)
	case !strings.Contains(err.Error(), "wait"):
		t.Errorf("holder %d: MachineID = %q; want it to say how long it waited", short.n, err)
	case time.Since(start) < h.TTL/4:
		t.Errorf("holder %d: MachineID failed in %v, within a deadline of %v; want it to wait for an ID to free until the deadline",
			short.n, time.Since(start).Round(time.Millisecond), h.TTL/2)
	}

	a.abandon()
	abandoned := time.Now()
	b := led.newHolder(waitID, waitID)
	ctx, cancel = context.WithTimeout(context.Background(), 4*h.TTL)
	defer cancel()
	if _, err := b.MachineID(ctx); err != nil {
		t.Errorf("holder %d asked once, with a deadline of %v, after holder %d, which held ID %d, was abandoned: %v; want the ID once the lease expired",
			b.n, 4*h.TTL, a.n, waitID, err)
	} else {
		t.Logf("holder %d got ID %d %v after holder %d was abandoned", b.n, waitID, time.Since(abandoned).Round(time.Millisecond), a.n)
	}
	led.check()
}
