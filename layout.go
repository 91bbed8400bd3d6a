package ringflake

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Layout describes how an ID's bits are split and what its time field
// counts. From the most significant bit down, an ID is zero bits (the sign
// bit, and any bits the layout leaves unused), TimeBits of ticks since Epoch,
// MachineBits of machine ID and SequenceBits of sequence. The machine ID may
// itself be split into DatacenterBits of datacenter and the rest of worker,
// as Twitter's Snowflake splits its 10 bits into 5 and 5:
//
//	63 .. T+M+S  T+M+S-1 ... M+S  M+S-1 ...... S  S-1 ........ 0
//	+-----------+-----------------+---------------+--------------+
//	|   zeros   | ticks since     |  machine ID   |   sequence   |
//	|           | Epoch           | datacenter|wkr|              |
//	+-----------+-----------------+---------------+--------------+
//	              TimeBits (T)      MachineBits (M) SequenceBits (S)
//
// The bits sum to at most 63: [DefaultLayout] uses all 63, and [JSLayout]
// 53, so that every ID is exact as a JavaScript Number. A zero Tick means
// 1ms and a zero Epoch 2024-01-01T00:00:00Z, the defaults, so a custom
// split needs only its bits. A Layout says when it ends ([Layout.End]);
// [New] logs a warning for one that ends within a year.
//
// MachineLow swaps the two low fields, as sonyflake lays out its IDs: the
// sequence above the machine ID, which takes the low MachineBits. Such a
// layout reads and composes IDs ([Layout.Decompose], [Layout.Compose],
// [Layout.Bounds]); a generator issues only with the machine ID above the
// sequence, and [New] refuses it (docs/moving-in.md says how a sonyflake
// fleet moves on).
//
// A Layout is a plain value: decoding an ID needs only the Layout it was made
// with, never package state. The zero Layout cannot decode (Decompose gives
// zero Parts); given to [WithLayout] it means [DefaultLayout]. A Layout is
// safe for concurrent use as long as nobody writes to it.
type Layout struct {
	// TimeBits is the width of the time field, at least 1.
	TimeBits int
	// MachineBits is the width of the machine ID field, at least 0.
	MachineBits int
	// SequenceBits is the width of the per-tick sequence, at least 1.
	// TimeBits+MachineBits+SequenceBits must be at most 63; the bits above
	// them are zero in every ID.
	SequenceBits int
	// Epoch is the instant of tick 0. It must lie within the years
	// 1678..2262, where time.Time.UnixNano is defined. The zero Time means
	// 2024-01-01T00:00:00Z.
	Epoch time.Time
	// Tick is the length of one time unit, at least 1µs: below that the
	// time field counts instants no clock tells apart. 0 means 1ms.
	Tick time.Duration
	// DatacenterBits is how many of the machine ID's bits, the high ones,
	// are the datacenter, 0..MachineBits; the rest are the worker within
	// it. 0, the default, means no split. It is a view of the machine ID:
	// Decompose reports both parts, and [Layout.Workers] gives a
	// datacenter's machine IDs; a generator issues with the whole machine
	// ID all the same.
	DatacenterBits int
	// MachineLow puts the machine ID in the low MachineBits bits and the
	// sequence above it, as sonyflake does; false, the default, puts the
	// sequence lowest. A layout with MachineLow decodes and composes IDs,
	// but New refuses to issue with it.
	MachineLow bool
}

// Parts is an ID taken apart by [Layout.Decompose], or the input of
// [Layout.Compose]. Some fields say the same thing twice, Time and Ticks,
// and Machine and Datacenter with Worker: Decompose fills them all, and
// Compose takes either form, or both if they agree.
type Parts struct {
	// Time is Epoch + Ticks×Tick, in UTC: the start of the ID's tick.
	Time time.Time
	// Ticks is the raw time field: ticks since the epoch.
	Ticks int64
	// Machine is the machine ID field, Datacenter and Worker together.
	Machine int64
	// Datacenter is the machine ID's high Layout.DatacenterBits; 0 when
	// the layout has no split.
	Datacenter int64
	// Worker is the rest of the machine ID, the worker within its
	// datacenter; the whole machine ID when the layout has no split.
	Worker int64
	// Sequence is the sequence field.
	Sequence int64
}

// defaultEpoch is 2024-01-01T00:00:00Z. With 41 bits of milliseconds the
// default layout runs out in September 2093.
var defaultEpoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// DefaultLayout returns the layout used when none is given: 41 bits of
// milliseconds since 2024-01-01T00:00:00Z (good until 2093-09-06), 10 bits
// of machine ID (0..1023) and 12 bits of sequence (4096 IDs per
// millisecond). It is a function rather than a variable so that no package
// state can change how IDs are made or read.
func DefaultLayout() Layout {
	return Layout{TimeBits: 41, MachineBits: 10, SequenceBits: 12, Epoch: defaultEpoch, Tick: time.Millisecond}
}

// JSLayout returns a 53-bit layout for IDs that travel as JavaScript
// Numbers (float64), which hold every integer up to 2^53-1 exactly and
// round those above: the default's 41 bits of milliseconds since
// 2024-01-01T00:00:00Z (good until 2093-09-06), 6 bits of machine ID
// (0..63) and 6 bits of sequence (64 IDs per millisecond, 64,000 a second
// per machine). Every ID it makes is below 2^53, so a [NumberID] of it
// never fails to marshal. It gives up machines and throughput, not
// lifetime. IDs of JSLayout and of DefaultLayout do not mix: decode each
// with its own.
func JSLayout() Layout {
	return Layout{TimeBits: 41, MachineBits: 6, SequenceBits: 6, Epoch: defaultEpoch, Tick: time.Millisecond}
}

// minTick is the shortest Tick a Layout may have.
const minTick = time.Microsecond

// withDefaults returns l with a zero Tick and a zero Epoch replaced by the
// defaults. Every exported method starts with it, and New stores its result.
func (l Layout) withDefaults() Layout {
	if l.Tick == 0 {
		l.Tick = time.Millisecond
	}
	if l.Epoch.IsZero() {
		l.Epoch = defaultEpoch
	}
	return l
}

// validate reports whether l, with its defaults applied, can make and read
// IDs. It returns an error wrapping [ErrInvalidConfig] that names the bad
// field, its value and the valid range.
func (l Layout) validate() error {
	l = l.withDefaults()
	switch {
	case l.TimeBits < 1 || l.TimeBits > 62:
		return configErr("Layout.TimeBits", l.TimeBits, "1..62")
	case l.SequenceBits < 1 || l.SequenceBits > 62:
		return configErr("Layout.SequenceBits", l.SequenceBits, "1..62")
	case l.MachineBits < 0 || l.MachineBits > 61:
		return configErr("Layout.MachineBits", l.MachineBits, "0..61")
	case l.TimeBits+l.MachineBits+l.SequenceBits > 63:
		return fmt.Errorf("%w: Layout bits %d+%d+%d = %d; want a sum of at most 63",
			ErrInvalidConfig, l.TimeBits, l.MachineBits, l.SequenceBits,
			l.TimeBits+l.MachineBits+l.SequenceBits)
	case l.DatacenterBits < 0 || l.DatacenterBits > l.MachineBits:
		return configErr("Layout.DatacenterBits", l.DatacenterBits, fmt.Sprintf("0..%d (Layout.MachineBits)", l.MachineBits))
	case l.Tick < minTick:
		return configErr("Layout.Tick", l.Tick, "at least 1µs (0 means 1ms)")
	case l.Epoch.Before(minEpoch) || l.Epoch.After(maxEpoch):
		return configErr("Layout.Epoch", l.Epoch.Format(time.RFC3339Nano), "1678-01-01..2262-01-01 (the zero Time means 2024-01-01)")
	}
	return nil
}

var (
	minEpoch = time.Date(1678, time.January, 1, 0, 0, 0, 0, time.UTC)
	maxEpoch = time.Date(2262, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// MaxMachine returns the largest machine ID l can hold, 2^MachineBits-1,
// or -1 if MachineBits is outside 0..61.
func (l Layout) MaxMachine() int64 { return maxOf(l.MachineBits, 61) }

// Workers returns the machine IDs of datacenter dc's workers, lo..hi
// inclusive, under a layout whose machine ID is split into datacenter and
// worker (DatacenterBits): datacenter dc's worker w has machine ID lo+w.
// Give a generator ringflake.WithMachineID(lo+w), or lease one of the
// datacenter's IDs with machineid.WithRange(lo, hi). It returns an error
// wrapping [ErrInvalidConfig] if l is invalid, has no datacenter split, or
// dc is outside 0..2^DatacenterBits-1. It is safe for concurrent use.
func (l Layout) Workers(dc int64) (lo, hi int64, err error) {
	l = l.withDefaults()
	if err := l.validate(); err != nil {
		return 0, 0, err
	}
	maxDC := maxOf(l.DatacenterBits, 61)
	switch {
	case l.DatacenterBits == 0:
		return 0, 0, fmt.Errorf("%w: the layout has no datacenter split (Layout.DatacenterBits is 0), so no datacenter's workers", ErrInvalidConfig)
	case dc < 0 || dc > maxDC:
		return 0, 0, configErr("datacenter", dc, fmt.Sprintf("0..%d (Layout.DatacenterBits %d)", maxDC, l.DatacenterBits))
	}
	workerBits := uint(l.MachineBits - l.DatacenterBits)
	lo = dc << workerBits
	return lo, lo + maxOf(int(workerBits), 61), nil
}

func maxOf(bits, limit int) int64 {
	if bits < 0 || bits > limit {
		return -1
	}
	return int64(1)<<bits - 1
}

// maxTicks returns the last tick a generator with l can issue: the smaller of
// 2^TimeBits-1 and the last tick whose offset from Epoch, (maxTicks+1)×Tick
// included, still fits in a time.Duration (about 292 years). It returns -1
// for an invalid layout.
func (l Layout) maxTicks() int64 {
	l = l.withDefaults()
	if l.validate() != nil {
		return -1
	}
	return min(int64(1)<<l.TimeBits-1, math.MaxInt64/int64(l.Tick)-1)
}

// End returns the first instant past the range of l: Epoch + (T+1)×Tick,
// where T is the last tick, the smaller of 2^TimeBits-1 and the last whose
// offset from Epoch fits in a time.Duration (about 292 years). A clock at or
// after End makes the generator fail with [ErrTimeOverflow]. It returns the
// zero Time for an invalid layout.
func (l Layout) End() time.Time {
	l = l.withDefaults()
	if l.validate() != nil {
		return time.Time{}
	}
	return l.timeOf(l.maxTicks() + 1)
}

// ticksAt converts an offset from the epoch, as returned by time.Time.Sub,
// to ticks. ok is false if d is negative (before the epoch) or at or past
// the end of the range: past maxTicks, or saturated. recip is
// reciprocal(l.Tick).
func (l Layout) ticksAt(d time.Duration, maxTicks int64, recip uint64) (ticks int64, ok bool) {
	if d < 0 || d == math.MaxInt64 {
		return 0, false
	}
	ticks = int64(divide(uint64(d), uint64(l.Tick), recip))
	return ticks, ticks <= maxTicks
}

// reciprocal returns floor((2^64-1)/t) for divide; t must be positive.
func reciprocal(t time.Duration) uint64 { return ^uint64(0) / uint64(t) }

// divide returns x/t for x < 2^63 using recip = reciprocal(t): a multiply
// in place of a 64-bit division, which costs several times more and sits
// on the path of every ID. recip is within 2 of 2^64/t, so for x < 2^63
// the estimate hi(x×recip) is ⌊x/t⌋ or one less, and one correction makes
// it exact.
func divide(x, t, recip uint64) uint64 {
	q, _ := bits.Mul64(x, recip)
	if x-q*t >= t {
		q++
	}
	return q
}

// timeOf returns Epoch + ticks×Tick in UTC, saturating instead of
// overflowing for ticks a layout with huge spans can hold.
func (l Layout) timeOf(ticks int64) time.Time {
	if ticks < 0 || l.Tick <= 0 {
		return l.Epoch.UTC()
	}
	hi, lo := bits.Mul64(uint64(ticks), uint64(l.Tick))
	if hi >= 1e9 {
		return maxTime
	}
	sec, nsec := bits.Div64(hi, lo, 1e9)
	base := l.Epoch.Unix()
	if sec > uint64(maxUnixSec-base) {
		return maxTime
	}
	return time.Unix(base+int64(sec), int64(l.Epoch.Nanosecond())+int64(nsec)).UTC()
}

// maxUnixSec keeps time.Unix inside time.Time's own range.
const maxUnixSec = math.MaxInt64 - 62135596800 - 1

var maxTime = time.Unix(maxUnixSec, 999999999).UTC()

// Decompose splits id into its fields under l. It never fails: the sign bit
// is ignored, and an invalid layout yields the zero Parts. Under a layout of
// fewer than 63 bits, the bits above it count in Ticks, so that an ID too
// wide for l, made with another layout, decodes to a time at or past
// l.End() (which Compose refuses) rather than to a plausible one.
// Decompose is safe for concurrent use.
func (l Layout) Decompose(id ID) Parts {
	l = l.withDefaults()
	if l.validate() != nil {
		return Parts{}
	}
	v := uint64(id) &^ (1 << 63)
	s, m := uint(l.SequenceBits), uint(l.MachineBits)
	p := Parts{
		Ticks:    int64(v >> (s + m)),
		Machine:  int64(v>>s) & l.MaxMachine(),
		Sequence: int64(v) & maxOf(l.SequenceBits, 62),
	}
	if l.MachineLow {
		p.Machine, p.Sequence = int64(v)&l.MaxMachine(), int64(v>>m)&maxOf(l.SequenceBits, 62)
	}
	wb := uint(l.MachineBits - l.DatacenterBits)
	p.Datacenter, p.Worker = p.Machine>>wb, p.Machine&maxOf(int(wb), 61)
	p.Time = l.timeOf(p.Ticks)
	return p
}

// Compose builds the ID of p under l. The time is p.Ticks, or the tick
// holding p.Time if that is set; the machine ID is p.Machine, or
// p.Datacenter and p.Worker if either is set. It returns an error wrapping
// [ErrInvalidConfig] that names the field if l is invalid, a field is
// negative or too wide for its bits, p.Time lies outside the layout's range
// (Epoch to End), or the two forms of the time or of the machine ID
// disagree; it never drops a field it was given. Compose is safe for
// concurrent use.
func (l Layout) Compose(p Parts) (ID, error) {
	l = l.withDefaults()
	if err := l.validate(); err != nil {
		return 0, err
	}
	ticks, err := l.partTicks(p)
	if err != nil {
		return 0, err
	}
	machine, err := l.partMachine(p)
	if err != nil {
		return 0, err
	}
	if p.Sequence < 0 || p.Sequence > maxOf(l.SequenceBits, 62) {
		return 0, configErr("Parts.Sequence", p.Sequence, fmt.Sprintf("0..%d", maxOf(l.SequenceBits, 62)))
	}
	return l.compose(ticks, machine, p.Sequence), nil
}

// partTicks returns the time field p asks for: p.Ticks, or the tick holding
// p.Time, which must then agree with a non-zero p.Ticks.
func (l Layout) partTicks(p Parts) (int64, error) {
	if p.Ticks < 0 || p.Ticks > int64(1)<<l.TimeBits-1 {
		return 0, configErr("Parts.Ticks", p.Ticks, fmt.Sprintf("0..%d", int64(1)<<l.TimeBits-1))
	}
	if p.Time.IsZero() || p.Time.Equal(l.timeOf(p.Ticks)) {
		return p.Ticks, nil // Decompose's own Parts, whatever the layout's span
	}
	ticks, ok := l.ticksAt(p.Time.Sub(l.Epoch), l.maxTicks(), reciprocal(l.Tick))
	switch {
	case !ok:
		return 0, configErr("Parts.Time", p.Time.Format(time.RFC3339Nano),
			l.Epoch.UTC().Format(time.RFC3339Nano)+" up to "+l.End().Format(time.RFC3339Nano))
	case p.Ticks != 0 && p.Ticks != ticks:
		return 0, fmt.Errorf("%w: Parts.Time %s is tick %d, but Parts.Ticks is %d; give one, or both alike",
			ErrInvalidConfig, p.Time.Format(time.RFC3339Nano), ticks, p.Ticks)
	}
	return ticks, nil
}

// partMachine returns the machine ID p asks for: p.Machine, or p.Datacenter
// and p.Worker, which must then agree with a non-zero p.Machine.
func (l Layout) partMachine(p Parts) (int64, error) {
	m := p.Machine
	if m < 0 || m > l.MaxMachine() {
		return 0, configErr("Parts.Machine", m, fmt.Sprintf("0..%d", l.MaxMachine()))
	}
	if p.Datacenter == 0 && p.Worker == 0 {
		return m, nil
	}
	maxDC := maxOf(l.DatacenterBits, 61)
	switch {
	case p.Datacenter < 0 || p.Datacenter > maxDC:
		return 0, configErr("Parts.Datacenter", p.Datacenter, fmt.Sprintf("0..%d (Layout.DatacenterBits %d)", maxDC, l.DatacenterBits))
	case p.Worker < 0 || p.Worker > maxOf(l.MachineBits-l.DatacenterBits, 61):
		return 0, configErr("Parts.Worker", p.Worker, fmt.Sprintf("0..%d", maxOf(l.MachineBits-l.DatacenterBits, 61)))
	}
	c := p.Datacenter<<uint(l.MachineBits-l.DatacenterBits) | p.Worker
	if m != 0 && m != c {
		return 0, fmt.Errorf("%w: Parts.Machine is %d, but Parts.Datacenter %d and Parts.Worker %d make machine %d; give one, or both alike",
			ErrInvalidConfig, m, p.Datacenter, p.Worker, c)
	}
	return c, nil
}

// compose packs fields already known to fit.
func (l Layout) compose(ticks, machine, seq int64) ID {
	s, m := uint(l.SequenceBits)&63, uint(l.MachineBits)&63
	if l.MachineLow {
		return ID(ticks<<((s+m)&63) | seq<<m | machine)
	}
	return ID(ticks<<((s+m)&63) | machine<<s | seq)
}
