package movein

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"

	"github.com/ringflake/ringflake"
)

// oldFleet is a running fleet of bwmarrin nodes, each issuing IDs in its
// own goroutine until stop, at a paced rate, as a service would.
type oldFleet struct {
	newest atomic.Int64 // the largest ID issued so far: what SELECT max(id) would give
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	ids    []int64
}

// startOld starts one bwmarrin node per machine ID and waits for each to
// have issued.
func startOld(t *testing.T, machines ...int64) *oldFleet {
	t.Helper()
	f := &oldFleet{stop: make(chan struct{})}
	var started sync.WaitGroup
	for _, m := range machines {
		n, err := bwmarrin.NewNode(m)
		if err != nil {
			t.Fatal(err)
		}
		f.wg.Add(1)
		started.Add(1)
		go func() {
			defer f.wg.Done()
			var mine []int64
			defer func() { f.mu.Lock(); f.ids = append(f.ids, mine...); f.mu.Unlock() }()
			for i := 0; ; i++ {
				id := n.Generate().Int64()
				mine = append(mine, id)
				raise(&f.newest, id)
				if i == 0 {
					started.Done()
				}
				if i%50 == 49 { // paced: about 50 IDs a millisecond at most
					select {
					case <-f.stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
			}
		}()
	}
	started.Wait()
	return f
}

// halt stops the fleet and returns every ID it issued.
func (f *oldFleet) halt() []int64 {
	close(f.stop)
	f.wg.Wait()
	return f.ids
}

func raise(max *atomic.Int64, id int64) {
	for {
		old := max.Load()
		if id <= old || max.CompareAndSwap(old, id) {
			return
		}
	}
}

// issue has each generator issue n IDs, in a goroutine of its own, and
// returns them all.
func issue(t *testing.T, gens []*ringflake.Generator, n int) []int64 {
	t.Helper()
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	errs := make(chan error, len(gens))
	for _, g := range gens {
		wg.Go(func() {
			mine := make([]int64, 0, n)
			for range n {
				id, err := g.NextID()
				if err != nil {
					errs <- err
					return
				}
				mine = append(mine, int64(id))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return all
}

// noRepeat fails the test if any ID appears twice among the lists.
func noRepeat(t *testing.T, lists ...[]int64) int {
	t.Helper()
	seen := map[int64]bool{}
	for _, l := range lists {
		for _, id := range l {
			if seen[id] {
				t.Fatalf("ID %d issued twice", id)
			}
			seen[id] = true
		}
	}
	return len(seen)
}

// above fails the test unless every ID is above floor.
func above(t *testing.T, ids []int64, floor int64) {
	t.Helper()
	for _, id := range ids {
		if id <= floor {
			t.Fatalf("ID %d is at or below the old fleet's newest, %d", id, floor)
		}
	}
}

// lag is how far the new fleet's clocks are behind the old fleet's: a new
// host whose clock is behind, or a clock stepped back across the switch.
// It is long enough that a busy machine starts the new generators well
// within it.
const lag = 2 * time.Second

// behind is a clock lag behind the wall clock.
func behind() time.Time { return time.Now().Add(-lag) }

// The recipe of docs/moving-in.md with the old fleet's machine IDs carried
// over: a bwmarrin fleet of four nodes (machine IDs 1..4) issues; it stops;
// its newest ID (SELECT max(id)) goes to WithAbove; ringflake generators
// start on the same machine IDs, in bwmarrin's layout, with clocks 2 s
// behind the old fleet's. They wait out the 2 s in New, then every ID they
// issue is above the old fleet's newest, and no ID repeats across both
// fleets. The same generators without WithAbove issue below the old
// fleet's newest at once: the safety the recipe adds, shown failing
// without it.
func TestSwitchCarryingMachineIDsOver(t *testing.T) {
	t.Parallel()
	l := named(t, "bwmarrin")
	old := startOld(t, 1, 2, 3, 4)
	time.Sleep(20 * time.Millisecond) // let the old fleet issue a while; no assertion rests on it
	oldIDs := old.halt()
	newest := old.newest.Load()

	start := func(withAbove bool) []*ringflake.Generator {
		var gens []*ringflake.Generator
		for m := int64(1); m <= 4; m++ {
			opts := []ringflake.Option{ringflake.WithLayout(l), ringflake.WithMachineID(m), ringflake.WithClock(behind), ringflake.WithMaxWait(time.Second)}
			if withAbove {
				opts = append(opts, ringflake.WithAbove(ringflake.ID(newest)))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			g, err := ringflake.New(ctx, opts...)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = g.Close() })
			gens = append(gens, g)
		}
		return gens
	}

	unsafe := issue(t, start(false), 1)
	below := 0
	for _, id := range unsafe {
		if id <= newest {
			below++
		}
	}
	if below == 0 {
		t.Fatalf("without WithAbove, no ID of a clock %v behind was below the old fleet's newest: the test shows nothing", lag)
	}

	newIDs := issue(t, start(true), 20000)
	above(t, newIDs, newest)
	total := noRepeat(t, oldIDs, newIDs)
	t.Logf("old fleet: %d IDs, newest %d (%s); new fleet: %d IDs, the first %s; %d distinct",
		len(oldIDs), newest, l.Decompose(ringflake.ID(newest)).Time.Format(time.RFC3339Nano), len(newIDs),
		l.Decompose(ringflake.ID(minOf(newIDs))).Time.Format(time.RFC3339Nano), total)
}

// The recipe with a disjoint range, and a rolling switch: the old fleet
// (machine IDs 1..4) keeps issuing while ringflake generators on machine
// IDs 512..515 start with WithAbove the old fleet's newest at that moment,
// and issue beside it; then the old fleet stops. No ID repeats, and every
// new ID is above the old fleet's newest when its generator started.
func TestSwitchWithADisjointRange(t *testing.T) {
	t.Parallel()
	l := named(t, "bwmarrin")
	old := startOld(t, 1, 2, 3, 4)
	var gens []*ringflake.Generator
	var floors []int64
	for m := int64(512); m <= 515; m++ {
		floor := old.newest.Load()
		g, err := ringflake.New(context.Background(), ringflake.WithLayout(l), ringflake.WithMachineID(m), ringflake.WithAbove(ringflake.ID(floor)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Close() })
		gens = append(gens, g)
		floors = append(floors, floor)
	}
	var newIDs [][]int64
	for i, g := range gens {
		ids := issue(t, []*ringflake.Generator{g}, 5000)
		above(t, ids, floors[i])
		newIDs = append(newIDs, ids)
	}
	oldIDs := old.halt()
	noRepeat(t, append(newIDs, oldIDs)...)
	for _, ids := range newIDs {
		for _, id := range ids {
			if m := l.Decompose(ringflake.ID(id)).Machine; m < 512 {
				t.Fatalf("ID %d has machine ID %d, in the old fleet's range", id, m)
			}
		}
	}
}

// A clock that steps back across the switch, to before the old fleet's
// newest ID, issues nothing below it: the generator's calls fail with
// ErrMarkAhead, naming WithAbove and how far the clock is short, until the
// clock has passed it again; then they issue above it.
func TestClockSteppedBackAcrossTheSwitch(t *testing.T) {
	t.Parallel()
	l := named(t, "bwmarrin")
	old := startOld(t, 7)
	oldIDs := old.halt()
	newest := old.newest.Load()
	var offset atomic.Int64 // how far the generator's clock is behind the wall clock
	clock := func() time.Time { return time.Now().Add(-time.Duration(offset.Load())) }
	g, err := ringflake.New(context.Background(), ringflake.WithLayout(l), ringflake.WithMachineID(7),
		ringflake.WithClock(clock), ringflake.WithMaxWait(-1), ringflake.WithAbove(ringflake.ID(newest)))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	before := issue(t, []*ringflake.Generator{g}, 1000)

	offset.Store(int64(time.Hour)) // the step back: far behind the old fleet's newest
	for range 100 {
		id, err := g.NextID()
		var ce *ringflake.ClockError
		if !errors.Is(err, ringflake.ErrMarkAhead) || !errors.As(err, &ce) || ce.By < time.Hour-time.Minute {
			t.Fatalf("NextID with the clock an hour back gave %d, %v; want ErrMarkAhead, short by about an hour", id, err)
		}
	}
	offset.Store(0)
	after := issue(t, []*ringflake.Generator{g}, 1000)
	above(t, append(before, after...), newest)
	noRepeat(t, oldIDs, before, after)
}

func minOf(ids []int64) int64 {
	m := ids[0]
	for _, id := range ids {
		m = min(m, id)
	}
	return m
}
