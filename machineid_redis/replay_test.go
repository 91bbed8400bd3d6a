package machineid_redis_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/leasesim"
	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

var replayVerbose = flag.Bool("replay.v", false, "print the replay's events")

var replayMutant = flag.String("replay.mutant", "",
	"switch on this mutant of the store's past logic (mutants.go; needs -tags ringflake_mutant) and replay only the traces of the seeds that caught it in the simulation, which must then repeat an ID")

// TestReplaySimulatedWorlds replays, against a real redis-server each, the
// worlds of the lease simulation's seeds that caught a mutant of its
// simulated Redis (testdata/replay, written by scripts/leasesim -seed S
// -mutant NAME -trace FILE): the same hosts, with clocks stepped as the
// world stepped them, the same Redis restarts, forgetting or rolled back to
// the snapshots the world took, and real Holders and generators made and
// closed or crashed when the world made and closed or crashed them, each
// taking the machine ID its world's generator took, in real time, to 3 s
// past the world's failure. On the store as it is, no ID may repeat, and
// no ID may be at or below the mark its holding inherited. With
// -replay.mutant the store's past logic is back, and the replay must find
// repeats as the simulation did; .ci/run requires it to.
func TestReplaySimulatedWorlds(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "replay", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no traces in testdata/replay")
	if *replayMutant != "" {
		require.True(t, mutant.Set(*replayMutant), "switching the mutant %q on needs -tags ringflake_mutant", *replayMutant)
		t.Cleanup(func() { _ = mutant.Set("") })
	}
	ran := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		tr, err := leasesim.ReadTrace(b)
		require.NoError(t, err, f)
		if *replayMutant != "" && tr.Mutant != *replayMutant {
			continue
		}
		ran++
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			t.Parallel()
			r := runReplay(t, tr)
			require.NoError(t, r.bad)
			t.Logf("seed %d (%s): %d IDs from %d generators (%d News failed); the simulation's failure: %+v",
				tr.Seed, tr.Mutant, r.count, r.news, r.failed, tr.Failure)
			assert.Zero(t, r.ndup, "replay of seed %d, mutant %q on: %d IDs issued twice, first ones: %s",
				tr.Seed, *replayMutant, r.ndup, strings.Join(r.dups, "; "))
			assert.Zero(t, r.nlow, "replay of seed %d, mutant %q on: %d IDs at or below the mark their holding inherited, first ones: %s",
				tr.Seed, *replayMutant, r.nlow, strings.Join(r.low, "; "))
			if r.ndup > 0 {
				fmt.Printf("replay: seed=%d trace=%s mutant=%q: %d IDs repeated\n", tr.Seed, filepath.Base(f), *replayMutant, r.ndup)
			}
		})
	}
	require.NotZero(t, ran, "no trace of a seed that caught the mutant %q", *replayMutant)
}

// replay is one trace's run against a real server.
type replay struct {
	tr     *leasesim.Trace
	srv    *redistest.Server
	base   time.Time // the real time of the trace's time 0
	layout ringflake.Layout
	stop   chan struct{}   // closed at the trace's end
	ctx    context.Context // ends at the trace's end: New waits no longer

	mu     sync.Mutex              // protects the fields below
	ids    map[ringflake.ID]string // who issued each ID
	count  int                     // IDs issued
	ndup   int                     // IDs issued again
	dups   []string                // the first few
	nlow   int                     // IDs at or below their holding's After
	low    []string                // the first few
	news   int                     // generators made
	failed int                     // News that failed
	bad    error                   // why a Holder could not be made, if one could not
	open   []*replayGen            // generators not yet closed
}

// replayHost is one host of the trace: its clock, and its link to Redis.
type replayHost struct {
	n      int
	offset atomic.Int64 // ns the clock reads ahead of the true time
	pause  atomic.Int64 // ns the next reading blocks for
	cut    atomic.Int64 // Unix ns until which the host is cut off from Redis
}

// now reads the host's clock: the true time plus its offset; a pause
// blocks the reading and returns the time read before it, as the
// simulation's clock does.
func (h *replayHost) now() time.Time {
	t := time.Now().Add(time.Duration(h.offset.Load()))
	if d := time.Duration(h.pause.Swap(0)); d > 0 {
		time.Sleep(d)
	}
	return t
}

// µs converts a trace's µs to a duration; -1 (an option's "none") stays
// negative.
func µs(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

// runReplay replays tr on a redis-server of its own and returns what came
// of it. Redis starts just after a whole second of its clock, which is the
// trace's time 0, so that its uptime (whole seconds, which the restart
// floor reads) counts as the simulated store's does.
func runReplay(t *testing.T, tr *leasesim.Trace) *replay {
	require.Equal(t, "redis", tr.Store, "a replay needs a trace of a Redis world")
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	base := time.Now().Truncate(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &replay{tr: tr, srv: redistest.Start(t), base: base, stop: make(chan struct{}), ctx: ctx, ids: map[ringflake.ID]string{},
		layout: ringflake.Layout{TimeBits: tr.TimeBits, MachineBits: tr.MachineBits, SequenceBits: tr.SequenceBits,
			Tick: µs(tr.Tick), Epoch: base.Add(-time.Hour)}}
	hosts := make([]*replayHost, tr.Procs)
	life := make([][]leasesim.Event, tr.Procs)    // News, the steps just after them, Closes and crashes
	weather := make([][]leasesim.Event, tr.Procs) // the other clock steps, pauses and cuts
	var store []leasesim.Event
	for i := range hosts {
		hosts[i] = &replayHost{n: i}
	}
	for _, e := range tr.Events {
		switch {
		case e.Op == leasesim.OpRestart || e.Op == leasesim.OpSnapshot:
			store = append(store, e)
		case e.Op == leasesim.OpNew || e.Op == leasesim.OpClose || e.Op == leasesim.OpCrash || e.AfterNew:
			life[e.Proc] = append(life[e.Proc], e)
		case e.At == 0 && e.Op == leasesim.OpOffset:
			hosts[e.Proc].offset.Store(int64(µs(e.Offset)))
		default:
			weather[e.Proc] = append(weather[e.Proc], e)
		}
	}
	end := tr.Events[len(tr.Events)-1].At
	if tr.Failure != nil {
		end = tr.Failure.At
	}
	// Three seconds past the failure, for the repeat to show though the
	// real timing moves it: the world halted at its first repeat, and a
	// replay that stopped there too missed seed 471's by two ticks.
	end += 3_000_000
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { r.live(h, life[i]) })
		wg.Go(func() { r.weather(h, weather[i]) })
	}
	// The store's events run here, on the test's goroutine, which may
	// fail the test.
	downUntil := int64(-1) // the end of the latest restart's down time
	for _, e := range store {
		if e.Op == leasesim.OpSnapshot && e.At <= downUntil {
			continue // the simulated store saves nothing while it is down
		}
		if !r.sleepUntil(e.At) {
			break
		}
		switch e.Op {
		case leasesim.OpSnapshot:
			r.srv.Do("SAVE")
		case leasesim.OpRestart:
			downUntil = e.At + e.Dur
			r.srv.Stop()
			time.Sleep(µs(e.Dur))
			if !e.Rollback {
				r.srv.DropSnapshot()
			}
			r.srv.Restart()
		}
	}
	r.sleepUntil(end)
	close(r.stop)
	cancel()
	wg.Wait()
	r.mu.Lock()
	open := r.open
	r.mu.Unlock()
	for _, g := range open {
		g.close()
		if *replayVerbose {
			fmt.Printf("%s: machine %d, ticks %d..%d\n", g.name, g.id, g.lo, g.hi)
		}
	}
	return r
}

// sleepUntil sleeps until the trace's time at (µs), and reports whether
// the trace goes on.
func (r *replay) sleepUntil(at int64) bool {
	t := time.NewTimer(time.Until(r.base.Add(µs(at))))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stop:
		return false
	}
}

// weather steps h's clock, pauses it and cuts it off, as the trace did.
func (r *replay) weather(h *replayHost, events []leasesim.Event) {
	for _, e := range events {
		if !r.sleepUntil(e.At) {
			return
		}
		switch e.Op {
		case leasesim.OpOffset:
			h.offset.Store(int64(µs(e.Offset)))
		case leasesim.OpPause:
			h.pause.Store(int64(µs(e.Dur)))
		case leasesim.OpCut:
			h.cut.Store(time.Now().Add(µs(e.Dur)).UnixNano())
		}
	}
}

// live makes h's generators, and closes or crashes them, as the trace
// did. A step that came just after a New comes just after its replay's.
func (r *replay) live(h *replayHost, events []leasesim.Event) {
	gens := map[int]*replayGen{}
	for _, e := range events {
		if !e.AfterNew && !r.sleepUntil(e.At) {
			return
		}
		switch e.Op {
		case leasesim.OpNew:
			gens[e.Inc] = r.start(h, e)
		case leasesim.OpOffset:
			h.offset.Store(int64(µs(e.Offset)))
		case leasesim.OpClose:
			if g := gens[e.Inc]; g != nil {
				g.close()
			}
		case leasesim.OpCrash:
			if g := gens[e.Inc]; g != nil {
				g.crash()
			}
		}
	}
}

// replayGen is one generator of the replay, over a Holder of its own.
type replayGen struct {
	r              *replay
	name           string
	g              *ringflake.Generator
	h              *machineid.Holder
	c              *redis.Client
	gate           *gate
	quit           chan struct{} // closed by halt, to stop the issuers
	wg             sync.WaitGroup
	halted, closed sync.Once
	id             int64 // the machine ID it asked for
	lo, hi         int64 // the ticks issued, guarded by replay.mu
}

// start makes the generator of e, whose Holder asks for the machine ID the
// world's generator got (a range of that ID alone), within New's deadline
// in the world and a second more, or the trace's end. It returns nil if
// New fails.
func (r *replay) start(h *replayHost, e leasesim.Event) *replayGen {
	tr := r.tr
	gt := &gate{h: h}
	c := redis.NewClient(&redis.Options{Addr: r.srv.Addr, MaxRetries: 1, DialTimeout: 200 * time.Millisecond})
	c.AddHook(gt)
	holder, err := mr.New(c, machineid.WithRange(e.ID, e.ID), machineid.WithTTL(µs(tr.TTL)),
		machineid.WithSafetyMargin(µs(tr.Margin)), machineid.WithCallTimeout(µs(tr.Call)), machineid.WithMaxClockOffset(µs(tr.Bound)))
	if err != nil { // the trace's options are out of the store's range
		r.mu.Lock()
		r.bad = err
		r.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, µs(e.Dur)+time.Second)
	defer cancel()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(holder), ringflake.WithClock(h.now),
		ringflake.WithLayout(r.layout), ringflake.WithRingSize(tr.Ring), ringflake.WithMaxWait(µs(tr.MaxWait)),
		ringflake.WithLogger(slog.New(slog.DiscardHandler)))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.news++
	if *replayVerbose {
		l := holder.Lease()
		fmt.Printf("%8.3fs p%d/%d New: err=%v lease=%d after %v until %v\n", time.Since(r.base).Seconds(), h.n, e.Inc, err, l.ID, l.After.Sub(r.base), l.Until.Sub(r.base))
	}
	if err != nil {
		r.failed++
		_ = holder.Release(time.Time{})
		_ = c.Close()
		return nil
	}
	rg := &replayGen{r: r, name: fmt.Sprintf("p%d/%d", h.n, e.Inc), id: e.ID, g: g, h: holder, c: c, gate: gt, quit: make(chan struct{})}
	for i := range 2 {
		rng := rand.New(rand.NewPCG(tr.Seed, uint64(h.n)<<32|uint64(e.Inc)<<1|uint64(i)))
		rg.wg.Go(func() { rg.issue(rng) })
	}
	r.open = append(r.open, rg)
	return rg
}

// issue calls NextID or NextN at random gaps, as the world's issuers do,
// until the generator closes or crashes.
func (rg *replayGen) issue(rng *rand.Rand) {
	buf := make([]ringflake.ID, 40)
	for {
		t := time.NewTimer(time.Duration(rng.ExpFloat64() * float64(5*time.Millisecond)))
		select {
		case <-t.C:
		case <-rg.quit:
			t.Stop()
			return
		}
		want := 1
		if rng.IntN(5) < 2 {
			want = 1 + rng.IntN(len(buf))
		}
		before := rg.g.Lease()
		var err error
		n := want
		if want == 1 {
			if buf[0], err = rg.g.NextID(); err != nil {
				n = 0
			}
		} else {
			n, err = rg.g.NextN(buf[:want])
		}
		rg.r.issued(rg, buf[:n], before, rg.g.Lease())
		if errors.Is(err, ringflake.ErrClosed) {
			return
		}
	}
}

// issued records ids, which rg issued while its lease went from before to
// after: each must be new, and, if the holding stayed the same, past the
// mark it inherited.
func (r *replay) issued(rg *replayGen, ids []ringflake.ID, before, after machineid.Lease) {
	same := before.Held && after.Held && before.ID == after.ID && before.After.Equal(after.After)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.count++
		p := r.layout.Decompose(id)
		if first, ok := r.ids[id]; ok {
			r.ndup++
			if len(r.dups) < 3 {
				r.dups = append(r.dups, fmt.Sprintf("ID %d (tick %d, machine %d) issued by %s and %s", id, p.Ticks, p.Machine, first, rg.name))
			}
			continue
		}
		r.ids[id] = rg.name
		if rg.lo == 0 || p.Ticks < rg.lo {
			rg.lo = p.Ticks
		}
		rg.hi = max(rg.hi, p.Ticks)
		if same && !p.Time.After(before.After) {
			r.nlow++
			if len(r.low) < 3 {
				r.low = append(r.low, fmt.Sprintf("ID %d of %s at %v, its holding's After %v", id, rg.name, p.Time, before.After))
			}
		}
	}
}

// close closes the generator while its issuers still call it, as a
// service that stops does, and then stops them.
func (rg *replayGen) close() {
	rg.closed.Do(func() {
		_ = rg.g.Close()
		rg.halt()
		_ = rg.c.Close()
	})
}

// halt stops the issuers and waits for them.
func (rg *replayGen) halt() {
	rg.halted.Do(func() { close(rg.quit) })
	rg.wg.Wait()
}

// crash kills the generator's process: its issuers stop, and its Holder
// reaches Redis no more. The generator is closed at the replay's end.
func (rg *replayGen) crash() {
	rg.halt()
	rg.gate.dead.Store(true)
}

// gate is a process's link to Redis, which a crash cuts for good and its
// host's cuts for a while: a call made through it then fails before it is
// sent.
type gate struct {
	h    *replayHost
	dead atomic.Bool
}

var errCut = errors.New("replay: the process is cut off from Redis")

func (g *gate) err() error {
	if g.dead.Load() || time.Now().UnixNano() < g.h.cut.Load() {
		return errCut
	}
	return nil
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := g.err(); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := g.err(); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}
