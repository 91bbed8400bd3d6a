// Package ringflake generates unique 64-bit IDs in the Snowflake style,
// without locks, and keeps generating them when the wall clock steps back.
//
// # Bit layout
//
// An [ID] is a non-negative int64 (the sign bit is always 0). With [DefaultLayout]:
//
//	 bit 63 62                        22 21          12 11           0
//	+------+----------------------------+--------------+--------------+
//	|  0   | 41 bits: ms since 2024-01-01| 10 bits:     | 12 bits:     |
//	|      | 00:00:00 UTC (to 2093)      | machine ID   | sequence     |
//	+------+----------------------------+--------------+--------------+
//
// Any split with at least one bit of time and of sequence works (see
// [Layout]); small layouts make exhaustion easy to reach in tests. Decode
// IDs with the Layout they were made with: [Layout.Decompose].
//
// # The ring
//
// A [Generator] keeps a ring of N atomic 64-bit slots (N = 4096 by default,
// [WithRingSize]). The slot for tick t is t mod N, and it holds the last
// (tick, sequence) pair issued for any tick with that residue, packed so
// that comparing two slot values compares the pairs. Issuing an ID is one
// clock read and one compare-and-swap on the slot:
//
//   - slot older than t, or empty: the slot becomes (t, 0);
//   - slot at t: its sequence goes up by one;
//   - slot newer than t (the clock went back by at least N ticks): the
//     newer tick's sequence goes up by one.
//
// Uniqueness rests on one invariant: every successful CAS makes its slot's
// value strictly larger, and the ID issued is the new value (with the
// machine ID). Each tick is only ever issued through the slot of its
// residue, so the same (tick, sequence) would need one slot to hold the
// same value twice, which a strictly increasing value cannot do. Nothing in
// the argument depends on what the clock says, which is why the generator
// stays correct under any sequence of clock readings and any number of
// concurrent callers.
//
// # Clock rollback policy
//
// The default clock is the wall clock (time.Now), so IDs carry real time
// and a step of the wall clock is seen. What happens when it steps back by
// d:
//
//   - d shorter than the ring's span (N × Tick): each tick the clock shows
//     again still has its slot. Ticks that were never used start fresh;
//     ticks that were used continue their sequence where it stopped. IDs
//     carry the clock's time. No call fails while spare sequence is left.
//   - d longer than the span: the slot of the tick the clock shows holds a
//     later tick (one the clock showed before the step), and IDs continue
//     that tick's sequence, so they carry a time up to d ahead of the clock
//     but never beyond the latest time the clock ever showed. Spare space
//     during such a step is at most N × 2^SequenceBits IDs.
//   - spare sequence used up: the call waits, in real time, for the clock
//     to reach the first tick whose slot can serve it (the next one, or,
//     when the slots of the ticks after it are used up at later ticks, the
//     first reading past those) and retries. If MaxWait ([WithMaxWait],
//     default [DefaultMaxWait]) passes first, or the clock, going at its
//     normal rate, would need longer than that to get there, it returns a
//     [*ClockError] wrapping [ErrClockBehind] that says how far behind the
//     clock was and how long the call waited. A clock that jumps forward
//     again sooner (a step back corrected within MaxWait) is not waited
//     for: the call fails at once rather than wake every tick in case.
//
// Forward jumps need nothing: new ticks start fresh. A clock before the
// layout's epoch or past its end fails at once ([ErrClockBeforeEpoch],
// [ErrTimeOverflow]). With a non-decreasing clock and an unchanged machine
// ID, the IDs one goroutine receives strictly increase.
//
// The ring protects one process. A process that restarts while its clock
// is behind the time it used before its restart could reissue IDs; a
// leased machine ID ([WithMachineIDService] with a [machineid.Leaser],
// such as package machineid_redis) closes that gap by recording how far
// each machine ID may have issued.
//
// # Concurrency
//
// A Generator is safe for concurrent use. Issuing takes no lock: a clock
// read, an atomic load of the machine state and a CAS loop that retries
// only when another caller won the same slot. A Layout and an ID are plain
// values.
//
// # The default clock
//
// Without [WithClock], the generator reads the wall clock cheaply: a
// monotonic reading plus the offset between the monotonic and wall clocks,
// refreshed from time.Now at most every millisecond. A monotonic-only read
// costs about half of time.Now. The trade-off: a wall-clock step is seen
// up to 1 ms late, and until then IDs follow the monotonic clock, which
// never goes back, so the delay costs no uniqueness.
//
// # What may block, and for how long
//
// NextID and NextN wait only when their tick has no sequence left, when
// the clock is behind with no spare sequence, or when a leased machine ID
// is not confirmed. They sleep, for MaxWait in total at most (plus the
// timers' lateness; see [WithMaxWait]), measured with the monotonic clock,
// so neither an injected frozen clock nor a wall-clock step can stretch
// it. With
// MaxWait 0 they never wait. Callers waiting for the same tick share one
// sleeper: on Linux it sleeps in nanosleep(2) until just before the tick
// (the runtime's timers can wake a millisecond late and skip a whole tick),
// yields the processor for the last 100 µs or so until the clock shows the
// tick, and then claims IDs for every caller that waited, before callers
// arriving fresh can use the tick up; the others block until it is done
// and take their share. If the tick cannot cover them all, those that have
// come away empty from the most earlier ticks go first, so callers are
// served in turn: 32 callers looping on a layout of 2 IDs per tick each
// wait about 16 ticks, and none runs out of MaxWait while the clock is
// healthy. A clock that still does not show the tick when that yielding
// ends (a frozen injected clock) makes the call's next wait a plain sleep,
// so it costs wake-ups, not a busy core. The wait reuses its bookkeeping from tick to
// tick, so it allocates nothing either (beyond the timer the Go runtime
// gives a goroutine the first time it sleeps: once per goroutine, not per
// ID). A call waiting for a lost lease
// sleeps until the lease watcher reports a change, or Close is called,
// rather than polling.
// [Generator.NextIDContext] and [Generator.NextNContext] also return when
// their context is done (noticed within 2 ms). [New] blocks only with
// [WithMachineIDService], for at most the acquire timeout
// ([WithAcquireTimeout]) and 50 ms of grace, even with a service that
// ignores its context; releasing what a failed acquisition may have taken
// goes on in the background past that.
//
// # The ID in the wild
//
// An [ID] converts to and from decimal ([ID.String], [ParseID]), a
// fixed-width sortable Base32 ([ID.Base32], [ParseBase32]) and Base58 for
// people ([ID.Base58], [ParseBase58]). It marshals to JSON as a string, so
// JavaScript keeps every digit, and works with database/sql; [NullID]
// holds a nullable column.
//
// # Observability
//
// [Generator.Stats] returns counters: IDs issued, step backs and the
// largest, IDs served from spare space during step backs, waits and their
// total time, and errors by kind. None of them costs the issuing path a
// lock or a shared write in the common case. [WithEvents] delivers step
// backs, long waits and lease changes as they happen, rate-limited per
// kind; [SlogEvents] logs them with log/slog.
package ringflake
