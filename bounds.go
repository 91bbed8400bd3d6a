package ringflake

import (
	"fmt"
	"time"
)

// Bounds returns the IDs whose time lies in [from, to), of every machine,
// as a half-open range of IDs: they are exactly the IDs id with
// lo <= id < hi, as in SQL's WHERE id >= lo AND id < hi. From == to gives
// an empty range (lo == hi).
//
// An ID's time is the start of its tick (see [Parts].Time), so the range is
// exact about ID times; a from or to between two tick starts acts as the
// next tick start. It relates to the clock's reading w when the ID was
// made as follows: the ID's time is w rounded down to its tick, or, after
// the clock stepped back by more than the ring's span, a later tick the
// clock had already shown, up to the step's size ahead of w. So every ID
// made while the clock read within [from rounded up to a tick, to) is in
// the range, except such IDs made after a long step back, which carry a
// later time. IDs made earlier in the tick that holds from are not: their
// time is before from.
//
// For the IDs of the tick holding t, pass its start,
// l.Decompose(id).Time for an ID of it, and that plus Tick.
//
// Bounds returns an error wrapping [ErrInvalidConfig] if the layout is
// invalid, to is before from, or either lies outside Epoch up to the start
// of the layout's last tick (for the IDs from a time on, use id >= lo
// alone).
func (l Layout) Bounds(from, to time.Time) (lo, hi ID, err error) {
	l = l.withDefaults()
	first, last, err := l.tickRange(from, to)
	if err != nil {
		return 0, 0, err
	}
	return l.compose(first, 0, 0), l.compose(last, 0, 0), nil
}

// tickRange returns the ticks whose start lies in [from, to): first up to
// last, exclusive.
func (l Layout) tickRange(from, to time.Time) (first, last int64, err error) {
	if err := l.validate(); err != nil {
		return 0, 0, err
	}
	if to.Before(from) {
		return 0, 0, fmt.Errorf("%w: range from %s to %s: to is %v before from",
			ErrInvalidConfig, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), from.Sub(to))
	}
	if first, err = l.tickFrom("from", from); err != nil {
		return 0, 0, err
	}
	last, err = l.tickFrom("to", to)
	return first, last, err
}

// tickFrom returns the first tick that starts at or after t, which must lie
// between the epoch and the start of the last tick: the last tick's IDs
// reach the largest ID, so one past them has no ID.
func (l Layout) tickFrom(name string, t time.Time) (int64, error) {
	maxTicks := l.maxTicks()
	lastStart := l.timeOf(maxTicks)
	if t.Before(l.Epoch) || t.After(lastStart) {
		return 0, configErr(name, t.Format(time.RFC3339Nano),
			l.Epoch.UTC().Format(time.RFC3339Nano)+" up to "+lastStart.Format(time.RFC3339Nano)+", the layout's first and last tick")
	}
	// d <= maxTicks×Tick, and maxTicks+1 ticks fit in a Duration, so the
	// rounding up cannot overflow.
	d := t.Sub(l.Epoch)
	return int64((d + l.Tick - 1) / l.Tick), nil
}
