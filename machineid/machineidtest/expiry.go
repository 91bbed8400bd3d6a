package machineidtest

import (
	"testing"
	"time"
)

// testExpiry abandons a holder whose generator is issuing. The holder
// reports the loss, with its cause, before anyone else gets the ID; another
// holder gets it once the lease has expired, with an After at or past every
// Until the abandoned holder was given; and the IDs issued on both sides of
// the handover are distinct, the abandoned generator's within its marks.
func testExpiry(t *testing.T, h Harness) {
	led := newLedger(t, h)
	a := led.newHolder(expiryID, expiryID)
	if err := a.startGenerator(h.TTL / 10); err != nil {
		t.Fatal(err)
	}
	if !a.gen.waitCount(1, h.TTL) {
		t.Fatalf("holder %d's generator issued nothing in %v: %v", a.n, h.TTL, a.gen)
	}
	time.Sleep(h.TTL / 2) // a renewal or so
	a.abandon()
	abandoned := time.Now()

	b := led.newHolder(expiryID, expiryID)
	if _, err := b.take(3*h.TTL, h.TTL/10); err != nil {
		t.Errorf("holder %d got no ID within %v after holder %d, which held ID %d, was abandoned: %v; want it once the lease expired",
			b.n, time.Since(abandoned).Round(time.Millisecond), a.n, expiryID, err)
		led.check()
		return
	}
	if err := b.startGenerator(h.TTL / 10); err != nil {
		t.Fatal(err)
	}
	if !b.gen.waitCount(20, h.TTL) {
		t.Errorf("holder %d's generator issued %d IDs in %v; want 20 or more: %v", b.n, b.gen.count(), h.TTL, b.gen)
	}
	if !a.gen.sawLoss() {
		t.Errorf("the generator on holder %d, abandoned, never failed with ringflake.ErrLeaseLost (%v); want it stopped by the lease's loss", a.n, a.gen)
	}
	led.check()
}
