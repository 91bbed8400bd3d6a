package machineidtest

import (
	"testing"
	"time"
)

// testMarks runs a generator on one lease for a few TTLs. Renewals raise
// Until before the clock reaches it, so the generator never fails. Within
// the holding After stays fixed and Until never goes down, and no ID's time
// is past an Until the holder was given: the ledger checks those.
func testMarks(t *testing.T, h Harness) {
	led := newLedger(t, h)
	a := led.newHolder(marksID, marksID)
	if err := a.startGenerator(h.TTL / 10); err != nil {
		t.Fatal(err)
	}
	first := a.lease()
	d := 5 * h.TTL / 2
	time.Sleep(d)
	last := a.lease()
	switch {
	case a.gen.failureCount() > 0:
		t.Errorf("holder %d's generator failed while its lease was renewed: %v; want no failure, with Until raised before the clock reaches it",
			a.n, a.gen)
	case a.gen.count() == 0:
		t.Errorf("holder %d's generator issued nothing in %v", a.n, d)
	}
	if !last.Until.After(first.Until) {
		t.Errorf("holder %d's Until went from %s to %s in %v; want renewals to raise it ahead of the clock",
			a.n, stamp(first.Until), stamp(last.Until), d)
	}
	led.check()
}
