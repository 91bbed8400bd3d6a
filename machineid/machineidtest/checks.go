package machineidtest

import (
	"maps"
	"slices"
	"time"

	"github.com/ringflake/ringflake"
)

// check settles the ledger and checks what it recorded against the
// contract, for every holder and ID of the subtest: each holding on its own
// (see holdings), no two holders holding an ID at once, each holding's
// After at or past what every earlier holding of the ID left, the restart
// floor after a restart that lost the data, and every ID issued distinct,
// within its holding's marks and before the next holding's After.
func (led *ledger) check() {
	led.t.Helper()
	led.settle()
	led.mu.Lock()
	defer led.mu.Unlock()
	c := newChecker(led.t)
	byID := map[int64][]*holding{}
	var mine [][]*holding // by holder, in led.holders' order
	for _, h := range led.holders {
		hs := c.holdings(h)
		mine = append(mine, hs)
		for _, g := range hs {
			byID[g.id] = append(byID[g.id], g)
		}
	}
	ids := slices.Sorted(maps.Keys(byID))
	for _, id := range ids {
		slices.SortFunc(byID[id], func(a, b *holding) int { return a.start() - b.start() })
	}
	for _, id := range ids {
		led.exclusive(c, id, byID[id])
		led.succession(c, id, byID[id])
	}
	led.restartFloor(c, byID)
	led.issuedIDs(c, mine)
	for _, id := range ids {
		led.handedOver(c, id, byID[id])
	}
	c.flush()
}

// exclusive checks that no two holders held id at the same time: each one
// reported its loss before the next was granted the ID. Across a restart
// that lost the store's data the store cannot know who held what; there the
// restart floor keeps the IDs apart, which restartFloor checks.
func (led *ledger) exclusive(c *checker, id int64, hs []*holding) {
	led.t.Helper()
	for i, a := range hs {
		for _, b := range hs[i+1:] {
			if a.h == b.h || led.lostData > 0 && a.start() < led.lostData && led.lostData <= b.start() {
				continue
			}
			for _, sa := range a.spans {
				for _, sb := range b.spans {
					if sa.from < sb.to && sb.from < sa.to {
						first, firstSpan, second, secondSpan := a, sa, b, sb
						if sb.from < sa.from {
							first, firstSpan, second, secondSpan = b, sb, a, sa
						}
						c.errorf("holder %d got ID %d at +%v while holder %d held it (from +%v %s)",
							second.h.n, id, secondSpan.fromAt, first.h.n, firstSpan.fromAt, spanEnd(firstSpan))
					}
				}
			}
		}
	}
}

// succession checks that each holding of id starts at or past what every
// earlier holding left: its Until, or what it released.
func (led *ledger) succession(c *checker, id int64, hs []*holding) {
	led.t.Helper()
	for j, next := range hs {
		for _, prev := range hs[:j] {
			floor, what, ok := prev.bound(next.start())
			if !ok || next.floor().Before(floor) {
				c.errorf("holder %d took ID %d at +%v with After %s; want it, or the clock then, at or past %s",
					next.h.n, id, next.startAt(), stamp(next.after), what)
			}
		}
	}
}

// restartFloor checks, after a restart that lost the store's data, that
// every holding of an ID that began after it has an After (or began at a
// time) at or past every Until given to a holding of that ID that began
// before it: the store can no longer tell who held the ID, nor how far,
// and a holder from before may still be issuing on it.
func (led *ledger) restartFloor(c *checker, byID map[int64][]*holding) {
	led.t.Helper()
	if led.lostData == 0 {
		return
	}
	for id, hs := range byID {
		var (
			floor     time.Time
			unlimited bool
			who       int
		)
		for _, g := range hs {
			if g.start() < led.lostData {
				unlimited = unlimited || g.unlimited
				if g.until.After(floor) {
					floor, who = g.until, g.h.n
				}
			}
		}
		if floor.IsZero() && !unlimited {
			continue
		}
		for _, g := range hs {
			if g.start() >= led.lostData && (unlimited || g.floor().Before(floor)) {
				c.errorf("holder %d took ID %d at +%v, after a restart that lost the store's data, with After %s; want a restart floor (or the clock then) at or past every Until given to its holders before, the latest %s (holder %d)",
					g.h.n, id, g.startAt(), stamp(g.after), stampUntil(floor, unlimited), who)
			}
		}
	}
}

// issuedIDs checks every ID the holders' generators issued: distinct, and
// each inside a holding of its holder on its machine ID, past its After and
// not past its Until. It notes each holding's latest issued time.
func (led *ledger) issuedIDs(c *checker, mine [][]*holding) {
	led.t.Helper()
	seen := map[ringflake.ID]int{}
	for i, h := range led.holders {
		if h.gen == nil {
			continue
		}
		layout := h.gen.g.Layout()
		for _, id := range h.gen.issued() {
			if other, dup := seen[id]; dup {
				c.errorf("ID %d issued twice: by holder %d and by holder %d", id, other, h.n)
			}
			seen[id] = h.n
			p := layout.Decompose(id)
			g := within(mine[i], p)
			if g == nil {
				c.errorf("holder %d issued ID %d (machine %d, time %s) outside every lease it held on that machine ID; want a time past After and not past Until",
					h.n, id, p.Machine, stamp(p.Time))
				continue
			}
			g.issued = later(g.issued, p.Time)
		}
	}
}

// within returns the holding of hs whose marks allow p, or nil.
func within(hs []*holding, p ringflake.Parts) *holding {
	for _, g := range hs {
		if g.id == p.Machine && p.Time.After(g.after) && (g.unlimited || !p.Time.After(g.until)) {
			return g
		}
	}
	return nil
}

// handedOver checks that the IDs issued under each holding of id have
// times at or before the After of every later holding, which issues only
// past it: so no tick is used on both sides of a handover.
func (led *ledger) handedOver(c *checker, id int64, hs []*holding) {
	led.t.Helper()
	for j, next := range hs {
		for _, prev := range hs[:j] {
			if prev.issued.After(next.floor()) {
				c.errorf("holder %d issued an ID of time %s on machine ID %d, past the After %s of holder %d, which took the ID at +%v",
					prev.h.n, stamp(prev.issued), id, stamp(next.after), next.h.n, next.startAt())
			}
		}
	}
}
