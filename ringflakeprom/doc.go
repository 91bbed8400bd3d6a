// Package ringflakeprom exports a ringflake generator's statistics and lease
// state to Prometheus. It is a module of its own, so that the core module
// does not depend on the Prometheus client.
//
// Register a [Collector] for each generator:
//
//	prometheus.MustRegister(ringflakeprom.NewCollector(g))
//
// The Collector reads [ringflake.Generator.Stats] and
// [ringflake.Generator.Lease] when it is collected, at scrape time, and
// touches nothing on the path that issues IDs. The metrics, each with the
// constant labels of [WithConstLabels]:
//
//	ringflake_ids_issued_total                     counter  IDs issued
//	ringflake_spare_ids_issued_total               counter  IDs from the spare sequence, clock behind
//	ringflake_clock_step_backs_total               counter  steps back of the clock
//	ringflake_clock_largest_step_back_seconds      gauge    the largest step back
//	ringflake_waits_total                          counter  calls that waited
//	ringflake_wait_seconds_total                   counter  their total wait
//	ringflake_longest_wait_seconds                 gauge    the longest one call waited
//	ringflake_start_wait_seconds                   gauge    how long New took to get the machine ID
//	ringflake_failures_total{reason}               counter  failed calls, by error
//	ringflake_lease_held                           gauge    1 if the machine ID is held, else 0
//	ringflake_machine_id                           gauge    the machine ID, -1 if none
//	ringflake_lease_confirmed_mark_timestamp_seconds  gauge  Lease.Until, since 1970
//	ringflake_lease_inherited_mark_timestamp_seconds  gauge  Lease.After, since 1970
//	ringflake_clock_offset_seconds                    gauge  Lease.Clock.By: the clock less the store's reference
//	ringflake_clock_offset_uncertainty_seconds        gauge  Lease.Clock.Within
//	ringflake_layout_end_timestamp_seconds            gauge  when the layout runs out (Layout.End)
//
// The reason label is one of before_epoch, time_overflow, clock_behind,
// sequence_exhausted, mark_ahead and lease_lost, for the errors
// [ringflake.ErrClockBeforeEpoch], [ringflake.ErrTimeOverflow],
// [ringflake.ErrClockBehind], [ringflake.ErrSequenceExhausted],
// [ringflake.ErrMarkAhead] and [ringflake.ErrLeaseLost]; every reason is
// sent, zero included, so that rates start from the first scrape.
//
// The marks are timestamps on the generator's clock, as the layout's end
// is, so the Collector needs no clock of its own. A fixed machine ID is
// always held and has no marks: both mark gauges are absent. With a leased
// ID, a confirmed mark that comes within a second of the time means
// renewals are failing, and one behind it that the generator is refusing to
// issue until a renewal raises it; an inherited mark ahead of the time
// means the generator waits for the clock to pass the time up to which the
// ID's previous holder may have issued:
//
//	ringflake_lease_confirmed_mark_timestamp_seconds - time() < 1
//	ringflake_lease_inherited_mark_timestamp_seconds > time()
//
// The clock's offset from the lease store's reference (Redis's TIME,
// PostgreSQL's clock, the API server's, the median of the live holders'
// clocks on etcd) is measured at every renewal, and absent until then and
// for a store without one; the generator keeps issuing whatever it says,
// so alert on it, with the bound of machineid.WithMaxClockOffset (2s by
// default), and on New's slow starts:
//
//	abs(ringflake_clock_offset_seconds) - ringflake_clock_offset_uncertainty_seconds > 2
//	ringflake_start_wait_seconds > 5
//
// The layout's end makes an alert that fires a year before IDs run out:
//
//	ringflake_layout_end_timestamp_seconds - time() < 365 * 86400
//
// # The client
//
// [NewClientCollector] does the same for a [ringflakeclient.Client], from
// its Stats:
//
//	ringflake_client_ids_served_total            counter    IDs NextID returned
//	ringflake_client_ids_fetched_total           counter    IDs received from the servers
//	ringflake_client_ids_dropped_total           counter    IDs dropped past the maximum age
//	ringflake_client_failovers_total             counter    times a ready server failed or said it was not ready
//	ringflake_client_ids_buffered                gauge      IDs in the buffer
//	ringflake_client_wait_seconds                histogram  the waits of NextID calls that found the buffer empty
//	ringflake_client_server_state{target,state}  gauge      1 for each server's state, 0 for the others
//	ringflake_client_server_blocks_total{target} counter    blocks each server sent
//	ringflake_client_server_ids_total{target}    counter    IDs each server sent
//
// A client that no server can serve shows no ready or acquiring server:
//
//	sum by (instance) (ringflake_client_server_state{state=~"ready|acquiring"}) == 0
package ringflakeprom
