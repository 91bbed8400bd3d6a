// Package ringflakeotel reports a ringflake generator's statistics and
// lease state as OpenTelemetry metrics. It is a module of its own, so that
// the core module does not depend on OpenTelemetry.
//
// [Register] creates asynchronous instruments on a [metric.MeterProvider]
// and one callback that observes them all from
// [ringflake.Generator.Stats] and [ringflake.Generator.Lease] when a
// reader collects; nothing is added to the path that issues IDs:
//
//	reg, err := ringflakeotel.Register(g, provider)
//	...
//	defer reg.Unregister()
//
// The instruments, each with the attributes of [WithAttributes]:
//
//	name                                   instrument       unit
//	ringflake.ids.issued                   Int64 counter    {id}
//	ringflake.spare_ids.issued             Int64 counter    {id}         from the spare sequence, clock behind
//	ringflake.clock.step_backs             Int64 counter    {step_back}
//	ringflake.clock.largest_step_back      Float64 gauge    s
//	ringflake.waits                        Int64 counter    {call}       calls that waited
//	ringflake.wait.time                    Float64 counter  s            their total wait
//	ringflake.wait.longest                 Float64 gauge    s            the longest one call waited
//	ringflake.start.wait                   Float64 gauge    s            how long New took to get the machine ID
//	ringflake.failures                     Int64 counter    {call}       failed calls, by error.type
//	ringflake.lease.held                   Int64 gauge                   1 if the machine ID is held, else 0
//	ringflake.machine.id                   Int64 gauge                   the machine ID, -1 if none
//	ringflake.lease.confirmed_mark         Float64 gauge    s            Lease.Until, since 1970
//	ringflake.lease.inherited_mark         Float64 gauge    s            Lease.After, since 1970
//	ringflake.clock.offset                 Float64 gauge    s            Lease.Clock.By: the clock less the store's reference
//	ringflake.clock.offset.uncertainty     Float64 gauge    s            Lease.Clock.Within
//	ringflake.layout.end                   Float64 gauge    s            when the layout runs out (Layout.End), since 1970
//
// The counters are observable counters (monotonic, cumulative) and the
// gauges observable gauges. The error.type attribute of ringflake.failures
// is one of before_epoch, time_overflow, clock_behind, sequence_exhausted,
// mark_ahead and lease_lost, for the errors [ringflake.ErrClockBeforeEpoch],
// [ringflake.ErrTimeOverflow], [ringflake.ErrClockBehind],
// [ringflake.ErrSequenceExhausted], [ringflake.ErrMarkAhead] and
// [ringflake.ErrLeaseLost]; every value is observed, zero included.
//
// The marks are times on the generator's clock, as the layout's end is, so
// Register needs no clock of its own. A fixed machine ID is always held and
// has no marks: neither mark gauge is observed. With a leased ID, a
// confirmed mark that comes within a second of the current time means
// renewals are failing, and one behind it that the generator is refusing
// to issue until a renewal raises it; an inherited mark ahead of the
// current time means the generator waits for the clock to pass the time up
// to which the ID's previous holder may have issued. The clock's offset
// from the lease store's reference is observed once a take or renewal has
// measured it; the generator issues whatever it says, so alert on it, with
// the bound of machineid.WithMaxClockOffset. ringflake.layout.end
// minus the current time is how long the layout has left: alert well ahead
// of it, a year say.
//
// # The client
//
// [RegisterClient] does the same for a [ringflakeclient.Client], from its
// Stats:
//
//	ringflake.client.ids.served       Int64 counter    {id}
//	ringflake.client.ids.fetched      Int64 counter    {id}
//	ringflake.client.ids.dropped      Int64 counter    {id}         past the maximum age
//	ringflake.client.failovers        Int64 counter    {failover}   a ready server failed or said it was not ready
//	ringflake.client.ids.buffered     Int64 gauge      {id}
//	ringflake.client.waits            Int64 counter    {call}       calls that waited at most le seconds, by le
//	ringflake.client.wait.time        Float64 counter  s            their total wait
//	ringflake.client.wait.longest     Float64 gauge    s
//	ringflake.client.server.state     Int64 gauge                   1 for each server's state, 0 for the others, by target and state
//	ringflake.client.server.blocks    Int64 counter    {block}      by target
//	ringflake.client.server.ids       Int64 counter    {id}         by target
//
// OpenTelemetry has no asynchronous histogram, and the client's waits are
// counted where they end, so ringflake.client.waits gives the histogram's
// cumulative buckets as Prometheus does, one point per bound (le="0.25",
// ..., le="+Inf" for every wait), rather than a histogram instrument.
package ringflakeotel
