package ringflakeotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ringflake/ringflake"
)

// scope is the name of the instrumentation scope: the package's path.
const scope = "github.com/ringflake/ringflake/ringflakeotel"

// reasons are the values of ringflake.failures' error.type attribute, in
// the order failures lists the counts.
var reasons = [...]string{"before_epoch", "time_overflow", "clock_behind", "sequence_exhausted", "mark_ahead", "lease_lost"}

// failures returns s's failure counts in the order of reasons.
func failures(s *ringflake.Stats) [len(reasons)]uint64 {
	f := &s.Failed
	return [...]uint64{f.BeforeEpoch, f.TimeOverflow, f.ClockBehind, f.SequenceExhausted, f.MarkAhead, f.LeaseLost}
}

// Register creates g's instruments with a meter of mp, named after this
// package, and registers one callback that observes them all; see the
// package doc for the list. The callback reads [ringflake.Generator.Stats]
// and [ringflake.Generator.Lease] when the provider's readers collect, and
// nothing touches g before then. A nil mp means otel.GetMeterProvider().
//
// Unregister the returned Registration to stop observing g, before or after
// closing it. Two generators registered with one provider need distinct
// attributes ([WithAttributes]), or their figures collide in one
// series. Register returns an error, and no Registration, if the meter
// refuses an instrument or the callback. It is safe for concurrent use.
func Register(g *ringflake.Generator, mp metric.MeterProvider, opts ...Option) (metric.Registration, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	o := &observer{g: g}
	if err := o.create(m); err != nil {
		return nil, fmt.Errorf("ringflakeotel: creating instruments: %w", err)
	}
	base := attribute.NewSet(c.attrs...)
	o.attrs = metric.WithAttributeSet(base)
	for i, r := range reasons {
		o.reasons[i] = metric.WithAttributeSet(attribute.NewSet(append(base.ToSlice(), attribute.String("error.type", r))...))
	}
	reg, err := m.RegisterCallback(o.observe,
		o.issued, o.spare, o.stepBacks, o.largestBack, o.waits, o.waitTime, o.longestWait, o.startWait, o.failures,
		o.held, o.machine, o.confirmed, o.inherited, o.clockOffset, o.clockWithin, o.layoutEnd)
	if err != nil {
		return nil, fmt.Errorf("ringflakeotel: registering the callback: %w", err)
	}
	return reg, nil
}

// observer observes one generator. All its fields are written by Register
// before the callback is registered, and only read after.
type observer struct {
	g *ringflake.Generator

	issued, spare, stepBacks, waits, failures, held, machine  metric.Int64Observable
	largestBack, waitTime, longestWait, startWait             metric.Float64Observable
	confirmed, inherited, clockOffset, clockWithin, layoutEnd metric.Float64Observable

	attrs   metric.ObserveOption               // the attributes of WithAttributes
	reasons [len(reasons)]metric.ObserveOption // attrs with each error.type
}

// create creates the instruments with m and returns the errors of those
// it refused.
func (o *observer) create(m metric.Meter) error {
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	counter := func(name, unit, desc string) metric.Int64Observable {
		x, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		keep(err)
		return x
	}
	gauge := func(name, unit, desc string) metric.Int64Observable {
		x, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		keep(err)
		return x
	}
	seconds := func(name, desc string) metric.Float64Observable {
		x, err := m.Float64ObservableGauge(name, metric.WithUnit("s"), metric.WithDescription(desc))
		keep(err)
		return x
	}
	o.issued = counter("ringflake.ids.issued", "{id}", "IDs issued.")
	o.spare = counter("ringflake.spare_ids.issued", "{id}", "IDs issued from the spare sequence while the clock was behind the latest time it had shown.")
	o.stepBacks = counter("ringflake.clock.step_backs", "{step_back}", "Steps back of the clock seen by the generator.")
	o.largestBack = seconds("ringflake.clock.largest_step_back", "The furthest the clock was seen behind the latest time it had shown, in whole ticks.")
	o.waits = counter("ringflake.waits", "{call}", "Calls that waited for a tick, a clock that was behind or a lease.")
	waitTime, err := m.Float64ObservableCounter("ringflake.wait.time", metric.WithUnit("s"), metric.WithDescription("Time spent by the calls that waited."))
	keep(err)
	o.waitTime = waitTime
	o.longestWait = seconds("ringflake.wait.longest", "The longest that one call waited.")
	o.startWait = seconds("ringflake.start.wait",
		"How long New took to get the machine ID: the source, a wait for an ID of a full range to free, and for the clock to pass the lease's inherited mark.")
	o.failures = counter("ringflake.failures", "{call}", "Calls that failed, by the error they returned.")
	o.held = gauge("ringflake.lease.held", "", "1 if the generator holds its machine ID (always, for a fixed one), else 0.")
	o.machine = gauge("ringflake.machine.id", "", "The generator's machine ID; -1 when it has none, as after Close.")
	o.confirmed = seconds("ringflake.lease.confirmed_mark",
		"The mark the store confirmed for the lease (Lease.Until), in seconds since 1970 on the generator's clock: it issues no later time. Absent without one.")
	o.inherited = seconds("ringflake.lease.inherited_mark",
		"The mark the lease inherited (Lease.After), in seconds since 1970 on the generator's clock: it issues only later times. Absent without one.")
	o.clockOffset = seconds("ringflake.clock.offset",
		"The generator's clock less the lease store's reference clock (Lease.Clock.By), as the latest take or renewal measured it: positive when ahead. Absent without a measurement.")
	o.clockWithin = seconds("ringflake.clock.offset.uncertainty",
		"How far the true offset may be from ringflake.clock.offset (Lease.Clock.Within). Absent without a measurement.")
	o.layoutEnd = seconds("ringflake.layout.end",
		"When the generator's layout runs out (Layout.End), in seconds since 1970; IDs fail with ErrTimeOverflow from then on.")
	return errors.Join(errs...)
}

// observe is the callback: it reads the generator's Stats and Lease once
// and observes every instrument.
func (o *observer) observe(_ context.Context, ob metric.Observer) error {
	s, l := o.g.Stats(), o.g.Lease()
	ob.ObserveInt64(o.issued, count(s.Issued), o.attrs)
	ob.ObserveInt64(o.spare, count(s.SpareIssued), o.attrs)
	ob.ObserveInt64(o.stepBacks, count(s.StepBacks), o.attrs)
	ob.ObserveFloat64(o.largestBack, s.LargestStepBack.Seconds(), o.attrs)
	ob.ObserveInt64(o.waits, count(s.Waits), o.attrs)
	ob.ObserveFloat64(o.waitTime, s.WaitTime.Seconds(), o.attrs)
	ob.ObserveFloat64(o.longestWait, s.LongestWait.Seconds(), o.attrs)
	ob.ObserveFloat64(o.startWait, s.StartWait.Seconds(), o.attrs)
	for i, n := range failures(&s) {
		ob.ObserveInt64(o.failures, count(n), o.reasons[i])
	}
	held := int64(0)
	if l.Held {
		held = 1
	}
	ob.ObserveInt64(o.held, held, o.attrs)
	ob.ObserveInt64(o.machine, l.ID, o.attrs)
	if !l.Until.IsZero() {
		ob.ObserveFloat64(o.confirmed, unixSeconds(l.Until), o.attrs)
	}
	if !l.After.IsZero() {
		ob.ObserveFloat64(o.inherited, unixSeconds(l.After), o.attrs)
	}
	if l.Clock.Against != "" {
		ob.ObserveFloat64(o.clockOffset, l.Clock.By.Seconds(), o.attrs)
		ob.ObserveFloat64(o.clockWithin, l.Clock.Within.Seconds(), o.attrs)
	}
	ob.ObserveFloat64(o.layoutEnd, unixSeconds(o.g.Layout().End()), o.attrs)
	return nil
}

// unixSeconds returns t in seconds since 1970, to the nanosecond where a
// float64 holds it.
func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// count converts a counter for an int64 instrument. The generator's counts
// cannot reach 2^63 (IDs have at most 63 bits), so the clamp is only for form.
func count(n uint64) int64 { return int64(min(n, math.MaxInt64)) }
