// Package ringflake generates unique 64-bit IDs in the Snowflake style,
// with no lock on the issuing path (a call that must wait for the clock
// takes one), and keeps generating them when the wall clock steps back.
//
//	ids, err := machineid_file.New("/var/lib/myapp/ringflake", machineid.WithRange(42, 42))
//	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(ids))
//	defer g.Close()
//	id, err := g.NextID()
//
// An [ID] is time | machine | sequence; with [DefaultLayout]:
//
//	 bit 63 62                         22 21          12 11           0
//	+------+-----------------------------+--------------+--------------+
//	|  0   | 41 bits: ms since 2024-01-01 | 10 bits:     | 12 bits:     |
//	|      | 00:00:00 UTC (to 2093)       | machine ID   | sequence     |
//	+------+-----------------------------+--------------+--------------+
//
// A [Layout] may use fewer than 63 bits: [JSLayout]'s 53 (41 of time, 6 of
// machine, 6 of sequence) keep every ID exact as a JavaScript Number, and
// [NumberID] sends such IDs as JSON numbers.
//
// # Uniqueness
//
// A [Generator] keeps a ring of N atomic slots ([WithRingSize]). The slot of
// tick t is t mod N, and it holds the last (tick, sequence) pair issued for
// any tick with that residue, packed so that comparing two slot values
// compares the pairs. Issuing is a compare-and-swap that makes the slot's
// value strictly larger and issues only pairs it passes over. Each tick is
// only ever issued through the slot of its residue, so issuing one pair
// twice would need a slot to pass one value twice, which a strictly
// increasing value cannot do. A tick the slot has not held, new or shown
// again by a step back shorter than the ring, starts fresh at its start
// (below), passing over the sequences beneath it for good; after a longer
// step back, the slot's later tick goes on from where it is. Nothing in
// this depends on the clock or on where a tick starts. Across processes it
// rests on distinct machine IDs, and across restarts on a
// [machineid.Leaser] (a file, or a store), whose mark a new holder of the
// ID waits out in [New].
//
// # Sequence starts
//
// A tick starts its sequence at a hash of the tick and the machine ID,
// below half the sequence space (2048 with [DefaultLayout]), rather than at
// 0, so that at low traffic the low bits of IDs are even: id % N spreads
// evenly for N a power of two up to 2048, and for other N too, as the time
// bits mix in. A tick starts lower where one of the 16 ticks before it, or
// the batch that starts it, needs the room, and at 0 soon after a full
// tick, so demand that fills the ticks keeps all 4096 IDs per tick. The sequences below a
// start are never issued, so a tick after a quiet one is sure to hold 2049
// NextID calls, not 4096; calls past its end wait for the next tick. One
// goroutine's IDs still increase while the clock does not go back.
//
// # Clocks and waits
//
// After a step back, the ticks the clock shows again keep serving from their
// spare sequence. After a step longer than the ring's span (N ticks), a tick
// whose slot last served a later tick (N, 2N, ... ticks on) continues that
// tick's sequence, and one whose slot is empty or served an earlier tick
// starts fresh. When no spare sequence is left, a call
// waits at most MaxWait ([WithMaxWait]) and then fails with a [*ClockError]
// wrapping [ErrClockBehind] that says by how much. An ID's time is therefore
// the clock's reading, or after a long step back a time the clock had
// shown: [Layout.Bounds] is exact about ID times. docs/clock.md has the whole
// policy.
//
// # Why New takes a context
//
// [New]'s safe default path, a state file or a lease, does I/O and may wait
// out the mark the machine ID inherited, up to a lease's TTL after a store
// restart, or for an ID of a full range to free. A service stopping during
// start-up must be able to end that wait, so New takes a context, as pgxpool.New and semaphore.Acquire do for
// calls that may block on I/O: cancelling it ends New at once, and its
// deadline bounds the wait (30 s without one). sonyflake's New and
// clientv3.New take none because they do not wait on I/O. New returns
// within 50 ms of the context's end even if the source ignores it, and the
// generator outlives the context.
package ringflake
