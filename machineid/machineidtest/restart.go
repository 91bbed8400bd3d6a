package machineidtest

import (
	"testing"
	"time"
)

const restartIDs = 4

// testRestart restarts the store while generators issue on three leases,
// after a fourth holder has released the last ID, leaving its mark. Each
// old holder keeps its lease or reports the loss, with its cause, and
// issues again soon after; a new holder gets an ID, with an After at or
// past the marks the ID had (a store that keeps its data) or every Until
// given before the restart (one that loses it); and every ID issued before
// and after is distinct. The ledger checks the marks and the IDs. An old
// holder that rides the restart out (machineid.RestartError) reports its
// ceiling as the Until of a holding begun before the restart, which every
// later holding of the ID must then start past.
func testRestart(t *testing.T, h Harness) {
	led := newLedger(t, h)
	hi := int64(restartLo + restartIDs - 1)
	old := make([]*holder, restartIDs-1)
	for i := range old {
		old[i] = led.newHolder(restartLo, hi)
		if err := old[i].startGenerator(h.TTL / 10); err != nil {
			t.Fatal(err)
		}
	}
	issueAndClose(t, led.newHolder(restartLo, hi), h.TTL/3)

	led.markRestart(func() { h.Restart(t) })
	restarted := time.Now()
	counts := make([]int, len(old))
	for i, o := range old {
		counts[i] = o.gen.count()
	}
	late := led.newHolder(restartLo, hi)
	if _, err := late.take(3*h.TTL, h.TTL/10); err != nil {
		t.Errorf("holder %d got no ID within %v after the restart: %v; want one, with %d holders for %d IDs",
			late.n, time.Since(restarted).Round(time.Millisecond), err, restartIDs, restartIDs)
	} else if err := late.startGenerator(h.TTL / 10); err != nil {
		t.Error(err)
	}
	for i, o := range old {
		if !o.gen.waitCount(counts[i]+1, 4*h.TTL-time.Since(restarted)) {
			t.Errorf("holder %d's generator issued nothing in the %v after the restart: %v; want the lease kept, or lost and taken again",
				o.n, time.Since(restarted).Round(time.Millisecond), o.gen)
		}
	}
	led.check()
}
