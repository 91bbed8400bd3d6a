package machineidtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// testOutage checks the outage a lease rides out: on a TTL of 3·Harness.TTL
// and the default safety margin of TTL/5, the store is paused from just
// before a renewal is due, the worst moment, for half of 2·TTL/3 − margin,
// the bound a Holder keeps (see machineid.WithTTL); the lease must stay
// held throughout, and be renewed once the store answers again.
func testOutage(t *testing.T, h Harness) {
	ttl := 3 * h.TTL
	pause := (2*ttl/3 - ttl/5) / 2
	l, err := h.NewLeaser(t, outageID, outageID, ttl)
	if err != nil {
		t.Fatalf("NewLeaser(%d, %d, %v) = %v", outageID, outageID, ttl, err)
	}
	defer func() { _ = l.Release(time.Time{}) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*ttl)
	defer cancel()
	if _, err := l.MachineID(ctx); err != nil {
		t.Fatalf("MachineID = %v; want ID %d", err, outageID)
	}
	var (
		mu      sync.Mutex
		dropped []machineid.Lease
	)
	renewed := make(chan time.Time, 16)
	last := time.Time{}
	stop := l.Watch(func(le machineid.Lease) {
		mu.Lock()
		defer mu.Unlock()
		if !le.Held {
			dropped = append(dropped, le)
		}
		if le.Held && le.Until.After(last) {
			last = le.Until
			select {
			case renewed <- time.Now():
			default:
			}
		}
	})
	defer stop()
	awaitRenewal := func(what string) time.Time {
		for {
			select {
			case at := <-renewed:
				if len(renewed) == 0 {
					return at
				}
			case <-time.After(2 * ttl):
				t.Fatalf("no renewal of ID %d within %v %s", outageID, 2*ttl, what)
			}
		}
	}
	awaitRenewal("before the outage")
	at := awaitRenewal("before the outage") // a renewal, not the first report
	time.Sleep(time.Until(at.Add(ttl/3 - 50*time.Millisecond)))
	resume := h.Pause(t)
	time.Sleep(pause)
	resume()
	awaitRenewal("after the outage")
	mu.Lock()
	defer mu.Unlock()
	if len(dropped) > 0 {
		t.Errorf("ID %d was reported not held in an outage of %v, from just before a renewal was due, on a TTL of %v: %v; want it ridden out (up to 2·TTL/3 − margin = %v)",
			outageID, pause, ttl, dropped[0].Err, 2*ttl/3-ttl/5)
	}
}
