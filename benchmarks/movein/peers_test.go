package movein

import (
	"math/rand/v2"
	"testing"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"
	sonyflake "github.com/sony/sonyflake"
	sonyflakev2 "github.com/sony/sonyflake/v2"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/peerlayout"
)

// named returns the layout the CLI's --layout calls name.
func named(t *testing.T, name string) ringflake.Layout {
	t.Helper()
	l, ok := peerlayout.Named(name)
	if !ok {
		t.Fatalf("no layout named %q", name)
	}
	return l
}

// want is what a peer says an ID of its holds.
type want struct {
	time     time.Time // the start of the ID's tick, by the peer's own reading
	machine  int64
	sequence int64
}

// check decodes id under l and compares it with what the peer says, and
// composes the parts back into id, bit for bit.
func check(t *testing.T, l ringflake.Layout, id int64, w want) {
	t.Helper()
	p := l.Decompose(ringflake.ID(id))
	if !p.Time.Equal(w.time) || p.Machine != w.machine || p.Sequence != w.sequence {
		t.Fatalf("ID %d reads time %s, machine %d, sequence %d; the peer says %s, %d, %d",
			id, p.Time.Format(time.RFC3339Nano), p.Machine, p.Sequence, w.time.Format(time.RFC3339Nano), w.machine, w.sequence)
	}
	back, err := l.Compose(ringflake.Parts{Time: w.time, Machine: w.machine, Sequence: w.sequence})
	if err != nil || int64(back) != id {
		t.Fatalf("composing time %s, machine %d, sequence %d gives %d (%v); the peer made %d", w.time.Format(time.RFC3339Nano), w.machine, w.sequence, back, err, id)
	}
}

// within fails the test if the time of the ID, the start of its tick, is
// not in the tick of before or later, up to after: the peer read its
// clock between the two.
func within(t *testing.T, l ringflake.Layout, id int64, before, after time.Time) {
	t.Helper()
	got := l.Decompose(ringflake.ID(id)).Time
	if got.Before(before.Add(-l.Tick)) || got.After(after) {
		t.Fatalf("ID %d has time %s, outside the call's %s..%s", id, got.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}
}

// sequences counts the distinct sequence numbers among ids under l, so
// that a test shows it exercised the field.
func sequences(l ringflake.Layout, ids []int64) int {
	seen := map[int64]bool{}
	for _, id := range ids {
		seen[l.Decompose(ringflake.ID(id)).Sequence] = true
	}
	return len(seen)
}

// bwmarrin/snowflake's own IDs, from NewNode and Generate with its
// defaults, read under the "bwmarrin" layout as bwmarrin's Time, Node and
// Step read them; and, with its package-level Epoch, NodeBits and StepBits
// changed (which the package allows before NewNode), under that layout
// with the same changes. Not parallel: those settings are package state.
func TestBwmarrin(t *testing.T) {
	l := named(t, "bwmarrin")
	run := func(t *testing.T, l ringflake.Layout, node int64) {
		t.Helper()
		n, err := bwmarrin.NewNode(node)
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		ids := make([]int64, 20000)
		for i := range ids {
			ids[i] = n.Generate().Int64()
		}
		after := time.Now()
		for _, id := range ids {
			b := bwmarrin.ParseInt64(id)
			check(t, l, id, want{time.UnixMilli(b.Time()).UTC(), b.Node(), b.Step()})
			within(t, l, id, before, after)
		}
		if s := sequences(l, ids); s < 2 {
			t.Fatalf("%d distinct steps in %d IDs: the test did not exercise the sequence", s, len(ids))
		}
	}
	run(t, l, 1023)

	defer func(epoch int64, node, step uint8) {
		bwmarrin.Epoch, bwmarrin.NodeBits, bwmarrin.StepBits = epoch, node, step
	}(bwmarrin.Epoch, bwmarrin.NodeBits, bwmarrin.StepBits)
	bwmarrin.Epoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	bwmarrin.NodeBits, bwmarrin.StepBits = 8, 14
	custom := l
	custom.Epoch = time.UnixMilli(bwmarrin.Epoch).UTC()
	custom.MachineBits, custom.SequenceBits = 8, 14
	run(t, custom, 200)
}

// sonyflake v1's own IDs, from New and NextID with its default start time
// (2014-09-01) and with one that is not a whole tick (sonyflake counts
// whole 10 ms ticks since the Unix epoch, so the layout's Epoch is the
// start truncated to 10 ms), read under "sonyflake-v1" as its Decompose
// reads them; and its Compose and the layout's agree on random parts.
func TestSonyflakeV1(t *testing.T) {
	t.Parallel()
	l := named(t, "sonyflake-v1")
	start := time.Date(2020, time.February, 3, 4, 5, 6, 7_654_321, time.UTC)
	custom := l
	custom.Epoch = start.Truncate(l.Tick)
	for _, c := range []struct {
		name   string
		layout ringflake.Layout
		start  time.Time
	}{{"default start", l, time.Time{}}, {"start inside a tick", custom, start}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sf, err := sonyflake.New(sonyflake.Settings{StartTime: c.start, MachineID: func() (uint16, error) { return 0xbeef, nil }})
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			ids := make([]int64, 3000)
			for i := range ids {
				id, err := sf.NextID()
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = int64(id)
			}
			after := time.Now()
			for _, id := range ids {
				d := sonyflake.Decompose(uint64(id))
				at := c.layout.Epoch.Add(time.Duration(d["time"]) * c.layout.Tick)
				check(t, c.layout, id, want{at, int64(d["machine-id"]), int64(d["sequence"])})
				within(t, c.layout, id, before, after)
			}
			if s := sequences(c.layout, ids); s < 2 {
				t.Fatalf("%d distinct sequences: the test did not exercise the field", s)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 1000 {
				at := c.layout.Epoch.Add(time.Duration(r.Int64N(int64(50 * 365 * 24 * time.Hour))))
				seq, m := uint16(r.IntN(256)), uint16(r.IntN(65536))
				id, err := sonyflake.Compose(sf, at, seq, m)
				if err != nil {
					t.Fatal(err)
				}
				check(t, c.layout, int64(id), want{at.Truncate(c.layout.Tick), int64(m), int64(seq)})
			}
		})
	}
}

// sonyflake v2's own IDs, with its defaults (2025-01-01, 10 ms, 8 bits of
// sequence, 16 of machine ID) under "sonyflake-v2", and with every setting
// changed (1 ms, 12 bits of sequence, 10 of machine ID) under that layout
// changed the same way, read as its Decompose and ToTime read them.
func TestSonyflakeV2(t *testing.T) {
	t.Parallel()
	l := named(t, "sonyflake-v2")
	custom := l
	custom.Tick, custom.SequenceBits, custom.MachineBits, custom.TimeBits = time.Millisecond, 12, 10, 41
	custom.Epoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		layout ringflake.Layout
		st     sonyflakev2.Settings
	}{
		{"defaults", l, sonyflakev2.Settings{}},
		{"every setting", custom, sonyflakev2.Settings{BitsSequence: 12, BitsMachineID: 10, TimeUnit: time.Millisecond, StartTime: custom.Epoch}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.st.MachineID = func() (int, error) { return 1000, nil }
			sf, err := sonyflakev2.New(c.st)
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			ids := make([]int64, 5000)
			for i := range ids {
				if ids[i], err = sf.NextID(); err != nil {
					t.Fatal(err)
				}
			}
			after := time.Now()
			for _, id := range ids {
				d := sf.Decompose(id)
				check(t, c.layout, id, want{sf.ToTime(id).UTC(), d["machine"], d["sequence"]})
				within(t, c.layout, id, before, after)
			}
			if s := sequences(c.layout, ids); s < 2 {
				t.Fatalf("%d distinct sequences: the test did not exercise the field", s)
			}
			r := rand.New(rand.NewPCG(3, 4))
			for range 1000 {
				at := c.layout.Epoch.Add(time.Duration(r.Int64N(int64(30 * 365 * 24 * time.Hour))))
				seq, m := r.Int64N(1<<c.layout.SequenceBits), r.Int64N(1<<c.layout.MachineBits)
				id, err := sf.Compose(at, int(seq), int(m))
				if err != nil {
					t.Fatal(err)
				}
				check(t, c.layout, id, want{at.Truncate(c.layout.Tick), m, seq})
			}
		})
	}
}

// twepoch is Twitter's Snowflake epoch in Unix milliseconds: IdWorker's
// twepoch, and the default of Leaf and bwmarrin.
const twepoch = 1288834974657

// Twitter's Snowflake has no Go code: its IDs are built here by IdWorker's
// nextId (twitter-archive/snowflake, IdWorker.scala), ((timestamp -
// twepoch) << 22) | (datacenterId << 17) | (workerId << 12) | sequence,
// from the wall clock in milliseconds, and read under "twitter", whose
// 5 datacenter bits give both halves of the machine ID.
func TestTwitter(t *testing.T) {
	t.Parallel()
	l := named(t, "twitter")
	var last, seq int64 = -1, 0
	for dc := int64(0); dc < 32; dc += 7 {
		for worker := int64(0); worker < 32; worker += 5 {
			before := time.Now()
			ms := time.Now().UnixMilli()
			if ms == last {
				seq++
			} else {
				seq = 0
			}
			last = ms
			id := (ms-twepoch)<<22 | dc<<17 | worker<<12 | seq
			check(t, l, id, want{time.UnixMilli(ms).UTC(), dc<<5 | worker, seq})
			within(t, l, id, before, time.Now())
			if p := l.Decompose(ringflake.ID(id)); p.Datacenter != dc || p.Worker != worker {
				t.Fatalf("ID %d reads datacenter %d, worker %d; want %d, %d", id, p.Datacenter, p.Worker, dc, worker)
			}
		}
	}
}

// Leaf's snowflake mode has no Go code: its IDs are built here by
// SnowflakeIDGenImpl.get (Meituan-Dianping/Leaf), ((timestamp - twepoch)
// << 22) | (workerId << 12) | sequence, with its sequence drawn from 0..99
// at each new millisecond, and read under "leaf".
func TestLeaf(t *testing.T) {
	t.Parallel()
	l := named(t, "leaf")
	r := rand.New(rand.NewPCG(5, 6))
	var last, seq int64 = -1, 0
	for i := range 5000 {
		worker := int64(i % 1024)
		before := time.Now()
		ms := time.Now().UnixMilli()
		if ms == last {
			seq = (seq + 1) & 4095
		} else {
			seq = r.Int64N(100)
		}
		last = ms
		id := (ms-twepoch)<<22 | worker<<12 | seq
		check(t, l, id, want{time.UnixMilli(ms).UTC(), worker, seq})
		within(t, l, id, before, time.Now())
	}
}

// Baidu's uid-generator has no Go code: its IDs are built here by
// DefaultUidGenerator.nextId and BitsAllocator.allocate (baidu/uid-generator),
// (deltaSeconds << 35) | (workerId << 13) | sequence, with deltaSeconds
// counted from epochSeconds. Its default epochSeconds, 1463673600
// (2016-05-20 00:00 UTC+8), ran out of its 28 bits on 2024-11-20, so IDs
// of now are built with the epoch a fleet sets through epochStr
// ("2024-01-01", midnight in the JVM's zone: UTC+8 here), read under
// "baidu" with that Epoch; IDs of 2020, under the default one.
func TestBaidu(t *testing.T) {
	t.Parallel()
	l := named(t, "baidu")
	if got := l.Epoch.Unix(); got != 1463673600 {
		t.Fatalf("baidu's epoch is Unix %d; want DefaultUidGenerator's epochSeconds 1463673600", got)
	}
	allocate := func(sec, epochSeconds, worker, seq int64) int64 {
		return (sec-epochSeconds)<<35 | worker<<13 | seq
	}
	old := time.Date(2020, time.May, 4, 3, 2, 1, 0, time.UTC).Unix()
	for seq := int64(0); seq < 8192; seq += 1111 {
		check(t, l, allocate(old, 1463673600, 4194303, seq), want{time.Unix(old, 0).UTC(), 4194303, seq})
	}

	custom := l
	custom.Epoch = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.FixedZone("UTC+8", 8*3600))
	for worker := int64(1); worker < 4194304; worker *= 9 {
		before := time.Now()
		sec := time.Now().Unix()
		id := allocate(sec, custom.Epoch.Unix(), worker, worker%8192)
		check(t, custom, id, want{time.Unix(sec, 0).UTC(), worker, worker % 8192})
		within(t, custom, id, before, time.Now())
	}
}
