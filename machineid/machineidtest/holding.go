package machineidtest

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// A holding is one unbroken hold of an ID by one holder, as its reports
// tell it. It begins with a report that holds the ID, and ends with one that
// holds another ID, or holds the ID with another After. Reports that do not
// hold the ID pause it: a holder that lost its lease and proved it again,
// with the same After, goes on with the same holding, since nobody else
// can have held the ID meanwhile.
type holding struct {
	h         *holder
	id        int64
	after     time.Time
	began     time.Time // the clock when the first report of the holding came
	until     time.Time // the largest Until reported
	unlimited bool      // a report held the ID with the zero Until: no limit
	spans     []span    // while its reports said Held
	released  bool      // the holder's Release came during this holding (after it began, before the next)
	issued    time.Time // the latest time of an ID issued under it; zero if none
}

// span is a stretch of reports that hold the ID. to is the seq of the
// report that ended it, or math.MaxInt if recording stopped first.
type span struct {
	from, to     int
	fromAt, toAt time.Duration
}

func (g *holding) start() int { return g.spans[0].from }

// floor returns the latest time at or before which the holding cannot
// issue: its After, or, if later, the clock when it began, since a
// generator issues only times its clock shows. A store that lost its marks
// may grant an ID with no After once every earlier Until has passed (by
// the clock, within the skew it allows): the suite's holders share one
// clock, so that is a fair test of it.
func (g *holding) floor() time.Time { return later(g.after, g.began) }

func (g *holding) startAt() time.Duration { return g.spans[0].fromAt }

// bound returns the time that the After of a later holding, which began
// with event seq, must reach, and says what it is.
func (g *holding) bound(seq int) (t time.Time, what string, ok bool) {
	if g.released && g.h.released < seq && !g.h.issued.IsZero() {
		t = later(g.h.issued, g.after)
		return t, fmt.Sprintf("%s, the mark holder %d released (issued %s, its After %s)", stamp(t), g.h.n, stamp(g.h.issued), stamp(g.after)), true
	}
	if g.unlimited {
		return time.Time{}, fmt.Sprintf("holder %d's Until, which was the zero Time (no limit): no After can cover it", g.h.n), false
	}
	return g.until, fmt.Sprintf("%s, the Until holder %d was given", stamp(g.until), g.h.n), true
}

// checker reports failures, at most maxPerKind for each message format, so
// that a store broken everywhere does not flood the log.
type checker struct {
	t     *testing.T
	count map[string]int
	order []string
}

const maxPerKind = 5

func newChecker(t *testing.T) *checker { return &checker{t: t, count: map[string]int{}} }

func (c *checker) errorf(format string, args ...any) {
	c.t.Helper()
	if c.count[format] == 0 {
		c.order = append(c.order, format)
	}
	c.count[format]++
	if c.count[format] <= maxPerKind {
		c.t.Errorf(format, args...)
	}
}

// flush reports how many failures of each kind were left out.
func (c *checker) flush() {
	c.t.Helper()
	for _, f := range c.order {
		if n := c.count[f]; n > maxPerKind {
			c.t.Errorf("... and %d more failures like %q", n-maxPerKind, f)
		}
	}
}

// holdings reads h's reports into holdings, checking each holding on the
// way: the ID in range, Err nil while held and set on a loss, After fixed,
// Until never going down, and a loss reported after an abandonment. The
// caller holds led.mu.
func (c *checker) holdings(h *holder) []*holding {
	c.t.Helper()
	rd := reader{c: c, h: h}
	for _, r := range h.reports {
		if r.Held {
			rd.held(r)
		} else {
			rd.notHeld(r)
		}
	}
	switch {
	case rd.open && h.abandoned != 0:
		c.errorf("holder %d was abandoned and never reported the loss of ID %d; want Held = false, with the cause, before anyone else gets the ID", h.n, rd.cur.id)
	case rd.open && h.released != 0:
		c.errorf("holder %d: its watcher still saw ID %d held after Release returned; want Held = false", h.n, rd.cur.id)
	}
	for i := len(rd.hs) - 1; i >= 0 && h.released != 0; i-- {
		if rd.hs[i].start() < h.released {
			rd.hs[i].released = true
			break
		}
	}
	return rd.hs
}

// reader reads one holder's reports into holdings.
type reader struct {
	c    *checker
	h    *holder
	hs   []*holding
	cur  *holding // the latest holding
	open bool     // the latest report held cur's ID
}

// notHeld reads a report that holds no ID: a loss, unless it follows
// Release.
func (rd *reader) notHeld(r report) {
	rd.c.t.Helper()
	h := rd.h
	if rd.open && r.Err == nil && (h.released == 0 || r.seq < h.released) {
		rd.c.errorf("holder %d lost ID %d at +%v with Err nil; want the loss's cause", h.n, rd.cur.id, r.at)
	}
	rd.end(r)
}

// held reads a report that holds an ID: the current holding goes on, or a
// new one begins.
func (rd *reader) held(r report) {
	rd.c.t.Helper()
	c, h, cur := rd.c, rd.h, rd.cur
	c.checkHeld(h, r)
	same := cur != nil && cur.id == r.ID
	if same && !cur.after.Equal(r.After) {
		if rd.open {
			c.errorf("holder %d: After of ID %d changed from %s to %s at +%v while it held the ID; want it fixed for the holding",
				h.n, r.ID, stamp(cur.after), stamp(r.After), r.at)
		}
		same = false
	}
	if !same {
		rd.end(r)
		cur = &holding{h: h, id: r.ID, after: r.After, began: r.when}
		rd.cur, rd.hs = cur, append(rd.hs, cur)
	} else if !r.Until.IsZero() && (cur.unlimited || r.Until.Before(cur.until)) {
		c.errorf("holder %d: Until of ID %d went down from %s to %s at +%v; want it never to decrease",
			h.n, r.ID, stampUntil(cur.until, cur.unlimited), stamp(r.Until), r.at)
	}
	cur.unlimited = cur.unlimited || r.Until.IsZero()
	cur.until = later(cur.until, r.Until)
	if !rd.open {
		cur.spans = append(cur.spans, span{from: r.seq, fromAt: r.at, to: math.MaxInt})
		rd.open = true
	}
}

// end ends the current span, if one is open, at r.
func (rd *reader) end(r report) {
	if rd.open {
		s := &rd.cur.spans[len(rd.cur.spans)-1]
		s.to, s.toAt, rd.open = r.seq, r.at, false
	}
}

// checkHeld checks a report that holds an ID.
func (c *checker) checkHeld(h *holder, r report) {
	c.t.Helper()
	if r.ID < h.lo || r.ID > h.hi {
		c.errorf("holder %d reported ID %d held at +%v, outside the range %d..%d it was made with", h.n, r.ID, r.at, h.lo, h.hi)
	}
	if r.Err != nil {
		c.errorf("holder %d reported ID %d held at +%v with Err %v; want Err nil while held", h.n, r.ID, r.at, r.Err)
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// stamp formats a mark for messages, to the microsecond.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "the zero Time"
	}
	return t.UTC().Format("15:04:05.000000")
}

func stampUntil(t time.Time, unlimited bool) string {
	if unlimited {
		return "the zero Time (no limit)"
	}
	return stamp(t)
}

// spanEnd formats the end of a span for messages.
func spanEnd(s span) string {
	if s.to == math.MaxInt {
		return "to the end"
	}
	return fmt.Sprintf("to +%v", s.toAt)
}
