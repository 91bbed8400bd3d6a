package machineidtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

const (
	exclusiveIDs     = 3
	exclusiveHolders = 8
)

// testExclusive races many holders, each with its own client, for fewer IDs
// than there are holders. As many win as there are IDs, with distinct IDs,
// and keep them past the TTL while the others keep asking; then a winner is
// abandoned, and its ID goes to one of the others once it has expired.
func testExclusive(t *testing.T, h Harness) {
	led := newLedger(t, h)
	hs := make([]*holder, exclusiveHolders)
	for i := range hs {
		hs[i] = led.newHolder(exclusiveLo, exclusiveLo+exclusiveIDs-1)
	}
	winners, losers := raceFor(t, hs)
	if len(winners) != exclusiveIDs {
		t.Errorf("%d of %d holders racing for %d IDs got one; want exactly %d, and an error for the others",
			len(winners), len(hs), exclusiveIDs, exclusiveIDs)
	}

	// Past the TTL, the winners renew while the others keep asking.
	late := contend(losers, 3*h.TTL/2, h.TTL/4, false)
	for _, w := range winners {
		if r, ok := w.kept(); !ok {
			t.Errorf("holder %d lost ID %d at +%v (Err %v) while it could reach the store; want a lease kept by renewing",
				w.n, r.ID, r.at, r.Err)
		}
	}
	if len(winners) > 0 && len(losers) > len(late) {
		victim := winners[0]
		id := victim.lease().ID
		victim.abandon()
		start := time.Now()
		if got := contend(without(losers, late), 3*h.TTL, h.TTL/10, true); len(got) == 0 {
			t.Errorf("no holder got ID %d within %v after holder %d, which held it, was abandoned; want it free once its lease expired",
				id, time.Since(start).Round(time.Millisecond), victim.n)
		}
	}
	led.check()
}

// raceFor has every holder ask for an ID at once, and returns those that
// got one and those that got an error. It reports two holders given one ID.
func raceFor(t *testing.T, hs []*holder) (winners, losers []*holder) {
	t.Helper()
	type answer struct {
		id  int64
		err error
	}
	answers := make([]answer, len(hs))
	var g errgroup.Group
	for i, h := range hs {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), h.led.h.TTL)
			defer cancel()
			answers[i].id, answers[i].err = h.MachineID(ctx)
			return nil
		})
	}
	_ = g.Wait() // the goroutines return nil
	byID := map[int64]*holder{}
	for i, a := range answers {
		if a.err != nil {
			losers = append(losers, hs[i])
			continue
		}
		winners = append(winners, hs[i])
		if other := byID[a.id]; other != nil {
			t.Errorf("holders %d and %d both got ID %d from MachineID at once", other.n, hs[i].n, a.id)
		}
		byID[a.id] = hs[i]
	}
	return winners, losers
}

// contend has each holder ask for an ID every retry until it gets one or d
// has passed, or, if first, until any holder has got one. It returns the
// holders that got one.
func contend(hs []*holder, d, retry time.Duration, first bool) []*holder {
	var (
		mu  sync.Mutex // protects got
		got []*holder
	)
	stop := make(chan struct{})
	var once sync.Once
	deadline := time.Now().Add(d)
	var g errgroup.Group
	for _, h := range hs {
		g.Go(func() error {
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), h.led.h.TTL)
				_, err := h.MachineID(ctx)
				cancel()
				if err == nil {
					mu.Lock()
					got = append(got, h)
					mu.Unlock()
					if first {
						once.Do(func() { close(stop) })
					}
					return nil
				}
				select {
				case <-stop:
					return nil
				case <-time.After(min(retry, time.Until(deadline))):
				}
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines return nil
	return got
}

// without returns hs less the holders in drop.
func without(hs, drop []*holder) []*holder {
	var rest []*holder
	for _, h := range hs {
		keep := true
		for _, d := range drop {
			keep = keep && h != d
		}
		if keep {
			rest = append(rest, h)
		}
	}
	return rest
}
