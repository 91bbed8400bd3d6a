package ringflakeprom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringflake/ringflake"
)

// Collector is a [prometheus.Collector] over one [ringflake.Generator]. It
// holds the generator and the metrics' descriptors, nothing else: the
// figures are read from [ringflake.Generator.Stats] and
// [ringflake.Generator.Lease] when it is collected, so a generator nobody
// scrapes pays nothing for it. Collector is safe for concurrent use.
type Collector struct {
	g *ringflake.Generator // written once by NewCollector

	issued, spare, stepBacks, largestBack, waits, waitTime, longestWait, startWait, failures *prometheus.Desc
	held, machine, confirmed, inherited, clockOffset, clockWithin, layoutEnd                 *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// reasons are the values of ringflake_failures_total's reason label, in the
// order failures lists the counts.
var reasons = [...]string{"before_epoch", "time_overflow", "clock_behind", "sequence_exhausted", "mark_ahead", "lease_lost"}

// failures returns s's failure counts in the order of reasons.
func failures(s *ringflake.Stats) [len(reasons)]uint64 {
	f := &s.Failed
	return [...]uint64{f.BeforeEpoch, f.TimeOverflow, f.ClockBehind, f.SequenceExhausted, f.MarkAhead, f.LeaseLost}
}

// NewCollector returns a Collector of g's metrics, to register with a
// [prometheus.Registerer]. Two collectors in one registry need distinct
// constant labels ([WithConstLabels]), or the registry refuses the second
// as a duplicate. NewCollector does not touch g.
func NewCollector(g *ringflake.Generator, opts ...Option) *Collector {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("ringflake_"+name, help, labels, c.labels)
	}
	return &Collector{
		g:           g,
		issued:      desc("ids_issued_total", "IDs issued."),
		spare:       desc("spare_ids_issued_total", "IDs issued from the spare sequence while the clock was behind the latest time it had shown."),
		stepBacks:   desc("clock_step_backs_total", "Steps back of the clock seen by the generator."),
		largestBack: desc("clock_largest_step_back_seconds", "The furthest the clock was seen behind the latest time it had shown, in whole ticks."),
		waits:       desc("waits_total", "Calls that waited for a tick, a clock that was behind or a lease."),
		waitTime:    desc("wait_seconds_total", "Time spent by the calls that waited."),
		longestWait: desc("longest_wait_seconds", "The longest that one call waited."),
		startWait: desc("start_wait_seconds",
			"How long New took to get the machine ID: the source, a wait for an ID of a full range to free, and for the clock to pass the lease's inherited mark."),
		failures: desc("failures_total", "Calls that failed, by the error they returned.", "reason"),
		held:     desc("lease_held", "1 if the generator holds its machine ID (always, for a fixed one), else 0."),
		machine:  desc("machine_id", "The generator's machine ID; -1 when it has none, as after Close."),
		confirmed: desc("lease_confirmed_mark_timestamp_seconds",
			"The mark the store confirmed for the lease (Lease.Until), in seconds since 1970 on the generator's clock: it issues no later time. Absent without one."),
		inherited: desc("lease_inherited_mark_timestamp_seconds",
			"The mark the lease inherited (Lease.After), in seconds since 1970 on the generator's clock: it issues only later times. Absent without one."),
		clockOffset: desc("clock_offset_seconds",
			"The generator's clock less the lease store's reference clock (Lease.Clock.By), as the latest take or renewal measured it: positive when ahead. Absent without a measurement."),
		clockWithin: desc("clock_offset_uncertainty_seconds",
			"How far the true offset may be from ringflake_clock_offset_seconds (Lease.Clock.Within). Absent without a measurement."),
		layoutEnd: desc("layout_end_timestamp_seconds",
			"When the generator's layout runs out (Layout.End), in seconds since 1970; IDs fail with ErrTimeOverflow from then on."),
	}
}

// Describe sends the descriptors of every metric the Collector can send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{
		c.issued, c.spare, c.stepBacks, c.largestBack, c.waits, c.waitTime, c.longestWait, c.startWait, c.failures,
		c.held, c.machine, c.confirmed, c.inherited, c.clockOffset, c.clockWithin, c.layoutEnd,
	} {
		ch <- d
	}
}

// Collect reads the generator's Stats and Lease once and sends their
// figures; see the package doc for the list.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s, l := c.g.Stats(), c.g.Lease()
	counter := func(d *prometheus.Desc, v float64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, label...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(c.issued, float64(s.Issued))
	counter(c.spare, float64(s.SpareIssued))
	counter(c.stepBacks, float64(s.StepBacks))
	gauge(c.largestBack, s.LargestStepBack.Seconds())
	counter(c.waits, float64(s.Waits))
	counter(c.waitTime, s.WaitTime.Seconds())
	gauge(c.longestWait, s.LongestWait.Seconds())
	gauge(c.startWait, s.StartWait.Seconds())
	for i, n := range failures(&s) {
		counter(c.failures, float64(n), reasons[i])
	}
	held := 0.0
	if l.Held {
		held = 1
	}
	gauge(c.held, held)
	gauge(c.machine, float64(l.ID))
	if !l.Until.IsZero() {
		gauge(c.confirmed, unixSeconds(l.Until))
	}
	if !l.After.IsZero() {
		gauge(c.inherited, unixSeconds(l.After))
	}
	if l.Clock.Against != "" {
		gauge(c.clockOffset, l.Clock.By.Seconds())
		gauge(c.clockWithin, l.Clock.Within.Seconds())
	}
	gauge(c.layoutEnd, unixSeconds(c.g.Layout().End()))
}

// unixSeconds returns t in seconds since 1970, to the nanosecond where a
// float64 holds it.
func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}
