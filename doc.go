// Package ringflake generates unique 64-bit IDs in the Snowflake style,
// without locks, and keeps generating them when the wall clock steps back.
//
// # Bit layout
//
// An [ID] is a non-negative int64. With [DefaultLayout]:
//
//	 bit 63 62                         22 21          12 11           0
//	+------+-----------------------------+--------------+--------------+
//	|  0   | 41 bits: ms since 2024-01-01 | 10 bits:     | 12 bits:     |
//	|      | 00:00:00 UTC (to 2093)       | machine ID   | sequence     |
//	+------+-----------------------------+--------------+--------------+
//
// Any split of the 63 bits works (see [Layout]), the machine ID itself split
// into datacenter and worker if wanted ([Layout.DatacenterBits],
// [WithDatacenter]). Decode IDs with the Layout they were made with:
// [Layout.Decompose]. A layout ends ([Layout.End]); New warns of one that
// ends within a year.
//
// # Time ranges
//
// An ID's time is the start of its tick. [Layout.Bounds] turns a time range
// into the range of IDs whose time lies in it, lo <= id < hi, for SQL's
// WHERE id >= lo AND id < hi. The time is the clock's reading, rounded down
// to its tick, except after a step back longer than the ring's span (below),
// when it is a later tick the clock had already shown.
//
// # Uniqueness
//
// A [Generator] keeps a ring of N atomic slots (4096 by default,
// [WithRingSize]). The slot of tick t is t mod N, and it holds the last
// (tick, sequence) pair issued for any tick with that residue, packed so
// that comparing two slot values compares the pairs. Issuing is a
// compare-and-swap that makes the slot's value strictly larger and issues
// exactly the pairs it passes over. Each tick is only ever issued through
// the slot of its residue, so issuing the same (tick, sequence) twice would
// need one slot to hold the same value twice, which a strictly increasing
// value cannot do. Nothing in this depends on what the clock says, so IDs
// stay unique under any clock and any number of concurrent callers. Across
// machines, uniqueness rests on distinct machine IDs.
//
// # Machine IDs
//
// [New] needs a machine ID: [WithMachineID], or [WithMachineIDSource]. A
// leased ID (a [machineid.Leaser], such as packages machineid_file, for a
// fixed ID on one host, machineid_redis, machineid_etcd and
// machineid_postgres provide) also covers restarts: the
// store records how far in time each machine ID may have issued, and a new
// holder of the ID only issues later times. New waits, within its acquire
// timeout, until the clock has passed that mark ([ErrMarkAhead] otherwise).
// The generator issues nothing while its lease is not held
// ([ErrLeaseLost], wrapping the cause), and [Generator.Lease] reports the
// lease's state. One Leaser serves one generator at a time.
//
// # When the clock steps back
//
// When the clock steps back by d, calls keep succeeding while the ring has
// spare sequence for the ticks the clock shows again:
//
//   - d shorter than the ring's span (N × Tick): each tick shown again
//     continues its sequence where it stopped, or starts fresh if unused.
//     IDs carry the clock's time.
//   - d longer: IDs continue the sequence of a later tick the clock showed
//     before the step, so they carry a time up to d ahead of the clock, but
//     never past the latest time the clock showed. Spare space is then at
//     most N × 2^SequenceBits IDs.
//   - no spare sequence left: the call waits for the clock to reach a tick
//     that can serve it, and fails with a [*ClockError] wrapping
//     [ErrClockBehind], saying how far behind the clock was and how long
//     the call waited, if that takes longer than MaxWait ([WithMaxWait],
//     100 ms by default) or the clock at its normal rate would.
//
// A clock before the layout's epoch or past its end fails at once
// ([ErrClockBeforeEpoch], [ErrTimeOverflow]). With a clock that does not go
// back, the IDs one goroutine receives strictly increase.
//
// # Concurrency and blocking
//
// A Generator is safe for concurrent use, and issuing takes no lock.
// [Generator.NextID] and [Generator.NextN] wait only when the current tick
// has no sequence left, when the clock is behind with no spare sequence, or
// when the lease does not allow the current time; they wait at most MaxWait
// in real time (plus the timers' lateness), however the injected clock
// moves, and never with MaxWait 0. Callers that wait for the same tick share
// one sleeper, which claims IDs for all of them when the tick comes, before
// callers arriving later. [New] blocks only with a machine ID source, for at
// most the acquire timeout ([WithAcquireTimeout]) and 50 ms more. IDs,
// Layouts and errors are plain values.
//
// # Observability
//
// [Generator.Stats] counts IDs issued, step backs, IDs served from spare
// space, waits and failures by kind, at no cost to the issuing path.
// [WithLogger] logs step backs, long waits and lease changes to log/slog,
// rate-limited.
package ringflake
