package ringflake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
)

func ExampleNew() {
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(42))
	if err != nil {
		panic(err)
	}
	defer g.Close()
	id, err := g.NextID()
	if err != nil {
		panic(err)
	}
	fmt.Println(id > 0, g.Layout().Decompose(id).Machine)
	// Output: true 42
}

func ExampleNew_invalid() {
	_, err := ringflake.New(context.Background(), ringflake.WithMachineID(5000))
	fmt.Println(errors.Is(err, ringflake.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// ringflake: invalid configuration: machine ID = 5000; valid range 0..1023
}

func ExampleGenerator_NextID() {
	// A fixed clock makes the output repeatable; real code uses the default.
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(7), ringflake.WithClock(func() time.Time { return now }))
	for range 3 {
		id, _ := g.NextID()
		fmt.Println(id)
	}
	// Output:
	// 382862780006429885
	// 382862780006429886
	// 382862780006429887
}

// A clock that steps back keeps getting IDs: the ring still holds the
// sequence each recent tick reached. Each tick starts its sequence at its
// own place (see the package doc's "Sequence starts").
func ExampleGenerator_stepBack() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1), ringflake.WithClock(clock))
	a, _ := g.NextID()
	now = now.Add(-200 * time.Millisecond) // an NTP step back
	b, _ := g.NextID()
	now = now.Add(200 * time.Millisecond) // back where it was
	c, _ := g.NextID()
	l := g.Layout()
	for _, id := range []ringflake.ID{a, b, c} {
		p := l.Decompose(id)
		fmt.Println(p.Time.Format("15:04:05.000"), p.Sequence)
	}
	// Output:
	// 12:00:00.000 767
	// 11:59:59.800 1094
	// 12:00:00.000 768
}

func ExampleDefaultLayout() {
	l := ringflake.DefaultLayout()
	fmt.Println(l.TimeBits, l.MachineBits, l.SequenceBits, l.Tick)
	fmt.Println(l.Epoch.Format(time.RFC3339), l.End().Format(time.RFC3339))
	// Output:
	// 41 10 12 1ms
	// 2024-01-01T00:00:00Z 2093-09-06T15:47:35Z
}

func ExampleJSLayout() {
	l := ringflake.JSLayout()
	fmt.Println(l.TimeBits, l.MachineBits, l.SequenceBits, l.Tick, l.MaxMachine())
	fmt.Println(l.End().Format(time.RFC3339))
	id, _ := l.Compose(ringflake.Parts{Time: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), Machine: 7, Sequence: 1})
	fmt.Println(id, id < 1<<53)
	// Output:
	// 41 6 6 1ms 63
	// 2093-09-06T15:47:35Z
	// 373889433600449 true
}

func ExampleNumberID() {
	noon := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(7), ringflake.WithLayout(ringflake.JSLayout()),
		ringflake.WithClock(func() time.Time { return noon }))
	if err != nil {
		panic(err)
	}
	defer g.Close()
	id, _ := g.NextID()
	b, _ := json.Marshal(struct {
		ID ringflake.NumberID `json:"id"`
	}{ringflake.NumberID(id)})
	fmt.Println(string(b)) // a number below 2^53: exact in JavaScript

	_, err = json.Marshal(ringflake.NumberID(382862780006428673)) // an ID of DefaultLayout
	fmt.Println(errors.Is(err, ringflake.ErrRange))
	// Output:
	// {"id":373889433600460}
	// true
}

func ExampleLayout_Decompose() {
	p := ringflake.DefaultLayout().Decompose(382862780006428673)
	fmt.Println(p.Time.Format(time.RFC3339Nano), p.Machine, p.Sequence)
	// Output: 2026-11-22T12:00:00Z 7 1
}

func ExampleLayout_Compose() {
	l := ringflake.DefaultLayout()
	id, err := l.Compose(ringflake.Parts{Ticks: 91281600000, Machine: 7, Sequence: 1})
	fmt.Println(id, err)
	id, err = l.Compose(ringflake.Parts{Time: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), Machine: 7, Sequence: 1})
	fmt.Println(id, err)
	_, err = l.Compose(ringflake.Parts{Machine: 1024})
	fmt.Println(err)
	// Output:
	// 382862780006428673 <nil>
	// 382862780006428673 <nil>
	// ringflake: invalid configuration: Parts.Machine = 1024; valid range 0..1023
}

func ExampleLayout_MaxMachine() {
	l := ringflake.Layout{TimeBits: 39, MachineBits: 8, SequenceBits: 16, Epoch: time.Unix(0, 0), Tick: 10 * time.Millisecond}
	fmt.Println(l.MaxMachine())
	// Output: 255
}

func ExampleWithMaxWait() {
	// With a negative MaxWait a call never waits: a full tick is an error
	// at once. (0 means the default, 100 ms.)
	frozen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tiny := ringflake.Layout{TimeBits: 60, MachineBits: 1, SequenceBits: 2, Epoch: frozen, Tick: time.Millisecond}
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1), ringflake.WithLayout(tiny), ringflake.WithMaxWait(-1),
		ringflake.WithClock(func() time.Time { return frozen }))
	for { // at most 4 IDs a tick
		if _, err := g.NextID(); err != nil {
			fmt.Println(err)
			break
		}
	}
	// Output: ringflake: sequence exhausted and MaxWait ran out before the next tick: clock 2026-01-01T00:00:00Z
}

func ExampleGenerator_NextN() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(7), ringflake.WithClock(func() time.Time { return now }))
	batch := make([]ringflake.ID, 4)
	n, err := g.NextN(batch) // one CAS claims all four
	fmt.Println(n, err)
	for _, id := range batch {
		fmt.Println(g.Layout().Decompose(id).Sequence)
	}
	// Output:
	// 4 <nil>
	// 1213
	// 1214
	// 1215
	// 1216
}

func ExampleGenerator_Stats() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1), ringflake.WithClock(func() time.Time { return now }))
	g.NextID()
	now = now.Add(-300 * time.Millisecond) // NTP steps the clock back
	g.NextID()
	g.NextID()
	s := g.Stats()
	fmt.Println(s.Issued, s.StepBacks, s.LargestStepBack, s.SpareIssued)
	// Output: 3 1 300ms 2
}

func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // drop the timestamp for a repeatable example
			}
			return a
		},
	}))
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(5),
		ringflake.WithClock(func() time.Time { return now }),
		ringflake.WithLogger(logger))
	g.NextID()
	now = now.Add(-750 * time.Millisecond)
	g.NextID()
	// Output: level=WARN msg="ringflake: clock stepped back" by=750ms machine=5
}

func ExampleWithRingSize() {
	// 256 slots remember 256 ms of ticks; a step back of 1 s borrows the
	// spare sequence of a later tick instead, so it still succeeds.
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1), ringflake.WithRingSize(256), ringflake.WithClock(func() time.Time { return now }))
	a, _ := g.NextID()
	now = now.Add(-1024 * time.Millisecond) // a multiple of the ring: same slot
	b, err := g.NextID()
	fmt.Println(b == a+1, err)
	// Output: true <nil>
}

func ExampleWithClock() {
	// Any func works; tests use a fake one. The default reads the wall
	// clock cheaply (see the package doc).
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1), ringflake.WithClock(func() time.Time { return now }))
	id, _ := g.NextID()
	fmt.Println(g.Layout().Decompose(id).Time.Equal(now))
	// Output: true
}

func ExampleWithLayout() {
	// 10 ms ticks for 174 years from 2025, 512 machines, 32 768 IDs per tick.
	l := ringflake.Layout{TimeBits: 39, MachineBits: 9, SequenceBits: 15,
		Epoch: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Tick: 10 * time.Millisecond}
	g, err := ringflake.New(context.Background(), ringflake.WithLayout(l), ringflake.WithMachineID(511))
	fmt.Println(err, g.Layout().MaxMachine(), g.Layout().End().Year())
	_, err = ringflake.New(context.Background(), ringflake.WithLayout(l), ringflake.WithMachineID(512))
	fmt.Println(err)
	// Output:
	// <nil> 511 2199
	// ringflake: invalid configuration: machine ID = 512; valid range 0..511
}

func ExampleWithMachineIDSource() {
	// A source from package machineid; leases (machineid_redis and the
	// others) work the same way, and New also waits out a lease's
	// inherited mark.
	os.Setenv("EXAMPLE_MACHINE_ID", "9")
	defer os.Unsetenv("EXAMPLE_MACHINE_ID")
	max := ringflake.DefaultLayout().MaxMachine()
	g, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(machineid.Env("EXAMPLE_MACHINE_ID", max)))
	if err != nil {
		panic(err)
	}
	defer g.Close()
	fmt.Println(g.Lease().ID, g.Lease().Held)
	// Output: 9 true
}

func ExampleNew_noMachineID() {
	_, err := ringflake.New(context.Background())
	fmt.Println(errors.Is(err, ringflake.ErrInvalidConfig))
	// Output: true
}

func ExampleGenerator_Close() {
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(3))
	fmt.Println(g.Close(), g.Lease().ID) // Close also releases a leased machine ID
	_, err := g.NextID()
	fmt.Println(err)
	// Output:
	// <nil> -1
	// ringflake: generator is closed
}

func ExampleClockError() {
	// A clock 300 ms behind, with a MaxWait that never waits and no spare
	// sequence left in that tick: the error says by how much and how long
	// it waited.
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	l := ringflake.Layout{TimeBits: 60, MachineBits: 1, SequenceBits: 2, Epoch: now.Add(-time.Hour), Tick: time.Millisecond}
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1), ringflake.WithLayout(l), ringflake.WithMaxWait(-1),
		ringflake.WithClock(func() time.Time { return now }))
	now = now.Add(-300 * time.Millisecond)
	for range 4 {
		g.NextID() // the earlier tick's 4 IDs, from spare space
	}
	now = now.Add(300 * time.Millisecond)
	g.NextID() // the latest tick moves on
	now = now.Add(-300 * time.Millisecond)
	_, err := g.NextID()
	var ce *ringflake.ClockError
	if errors.As(err, &ce) {
		fmt.Println(errors.Is(err, ringflake.ErrClockBehind), ce.By, ce.Waited)
	}
	// Output: true 300ms 0s
}

func ExampleLayout_Bounds() {
	// The IDs made on 2026-11-22 between noon and 1 pm UTC, for
	// SELECT ... WHERE id >= lo AND id < hi.
	l := ringflake.DefaultLayout()
	from := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	lo, hi, err := l.Bounds(from, from.Add(time.Hour))
	fmt.Println(lo, hi, err)
	fmt.Println(lo <= 382862780006428673 && 382862780006428673 < hi) // made at noon by machine 7
	// Output:
	// 382862780006400000 382877879500800000 <nil>
	// true
}

func ExampleLayout_Workers() {
	// Twitter's split: 5 bits of datacenter, 5 of worker. Datacenter 3's
	// worker 7 is machine ID lo+7; a lease of datacenter 3's IDs would take
	// machineid.WithRange(lo, hi).
	l := ringflake.DefaultLayout()
	l.DatacenterBits = 5
	lo, hi, err := l.Workers(3)
	fmt.Println(lo, hi, err)
	g, err := ringflake.New(context.Background(), ringflake.WithLayout(l), ringflake.WithMachineID(lo+7))
	if err != nil {
		panic(err)
	}
	defer g.Close()
	id, _ := g.NextID()
	p := l.Decompose(id)
	fmt.Println(p.Datacenter, p.Worker, p.Machine)
	// Output:
	// 96 127 <nil>
	// 3 7 103
}

func ExampleGenerator_Ready() {
	// Ready says whether NextID could issue now without waiting for the
	// lease: always, for a fixed machine ID, until Close. With a lease, it
	// is nil while the lease is held and the clock is within its marks, and
	// otherwise the error NextID would return, with the figures (a readiness
	// probe's answer and its Retry-After).
	g, _ := ringflake.New(context.Background(), ringflake.WithMachineID(1))
	fmt.Println(g.Ready())
	g.Close()
	fmt.Println(g.Ready())
	// Output:
	// <nil>
	// ringflake: generator is closed
}
