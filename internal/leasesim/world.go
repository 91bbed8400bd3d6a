package leasesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/holderseed"
	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/machineid"
)

// acquireGrace is how long past its context's end New may take (ringflake's
// acquireGrace): a source that does not honour its context is waited for
// that long.
const acquireGrace = 50 * time.Millisecond

// world is one seed's simulation: a store, processes that come and go on
// their hosts, each making generators over a Holder of the store, with
// issuers calling them, and the faults of clocks and store, all drawn from
// the seed and run in virtual time. Run it inside a synctest bubble.
type world struct {
	seed   uint64
	p      params
	mutant string // the mutant switched on, for the store's own; "" for none

	start time.Time // the bubble's time when the world began
	base  time.Time // the true wall time then, on the store's clock

	log *eventLog
	srv *server
	chk *checker
	tr  *tracer // the trace (trace.go), nil when none is recorded

	procs  []*proc
	stop   chan struct{} // closed at the end, or at the first failure
	healed chan struct{} // closed at the heal (heal.go)
	lively chan struct{} // closed once enough processes issued after the heal

	healedFlag atomic.Bool // the world has healed
	halting    sync.Once
	wg         sync.WaitGroup // the world's own goroutines

	mu      sync.Mutex // protects holders
	holders []*machineid.Holder

	aheadSeen atomic.Int64 // ns: the furthest any clock has read ahead of the true time

	pmu  sync.Mutex // protects pert
	pert *rand.Rand // the perturbation's draws, in the order the engine reaches its sites

	dmu   sync.Mutex     // protects whens
	whens map[int64]bool // the instants (virtual Unix ns) of the timers set through delay, none long past
}

// The mutants that live in the simulated store, not the engine: see
// Mutants.
const (
	storeMutantName        = "renew-no-token"
	renewAcrossRestartName = "renew-across-restart"
	ownLeaseNoFloorName    = "own-lease-no-floor"
	replicaUptimeName      = "floor-replica-uptime"
	shortFloorName         = "short-floor"
	windowFloorName        = "window-floor"
	uncappedName           = "uncapped"
)

// newWorld makes the world of seed. It must be called inside the bubble it
// runs in.
func newWorld(seed uint64, mutant string, verbose bool) *world {
	w := &world{seed: seed, p: draw(seed), mutant: mutant, stop: make(chan struct{}), pert: rand.New(rand.NewPCG(seed, 400)), whens: map[int64]bool{},
		healed: make(chan struct{}), lively: make(chan struct{})}
	w.start = time.Now()
	w.base = w.start.Round(0)
	w.p.layout.Epoch = w.base.Add(-time.Hour)
	w.log = &eventLog{start: w.start, verbose: verbose}
	w.srv = newServer(w)
	w.chk = newChecker(w)
	for i := range w.p.procs {
		p := &proc{w: w, n: i, r: rand.New(rand.NewPCG(seed, uint64(100+i))), down: make(chan time.Duration, 1)}
		p.clk = &clock{epoch: w.p.layout.Epoch, p: p}
		if w.p.kind.lock && i > 0 {
			p.clk = w.procs[0].clk // one host, one clock
		}
		// A third of the clocks sit at either end of the offsets: the
		// bound's edges are where a holder ahead and a newcomer behind
		// meet (Redis's restart floor once ended a bound too soon there).
		switch p.r.IntN(6) {
		case 0:
			p.base = w.p.offsets
		case 1:
			p.base = -w.p.offsets
		default:
			p.base = between(p.r, -w.p.offsets, w.p.offsets)
		}
		p.base = min(p.base, w.p.ahead)
		if w.p.kind.lock && i > 0 {
			p.base = w.procs[0].base
		}
		p.clk.offset.Store(int64(p.base))
		w.noteAhead(p.base)
		w.procs = append(w.procs, p)
	}
	return w
}

// perturb is the world's perturbation of the engine's schedule, run at
// each of its sites (mutant.Yield): it yields the processor now and then
// and, before a store call, sometimes waits up to 200µs of virtual time,
// and within a claim up to 100µs (a few claims of one NextN stay within
// the 1 ms a call may take past its bound).
// The draws come in the order the sites are reached, which one P and no
// asynchronous preemption make the same in every run of the seed, so the
// schedule it makes replays. It never waits at a site that may hold a lock
// (see mutant.Site), nor yields at one that does (SiteCAS, under Close's
// sync.Once or the Holder's watchers' lock): a goroutine that blocks on
// that lock meanwhile, and finds it taken again when it wakes, switches the
// mutex to starvation mode if it waited a millisecond of real time
// (sync.Mutex's rule), which hands the lock over in another order; on a
// loaded machine a seed's replay then took another turn (renew-no-token's
// seed 12 replayed 1/2). The draw is still made there, so that the other
// sites' draws are as before.
func (w *world) perturb(site mutant.Site) {
	if w.p.yield == 0 && w.p.nap == 0 {
		return
	}
	w.pmu.Lock()
	yield := w.pert.Float64() < w.p.yield
	var nap time.Duration
	switch {
	case site == mutant.SiteStore && w.pert.Float64() < w.p.nap:
		nap = between(w.pert, time.Microsecond, 200*time.Microsecond)
	case site == mutant.SiteClaim && w.pert.Float64() < w.p.nap:
		nap = between(w.pert, time.Microsecond, 100*time.Microsecond)
	}
	w.pmu.Unlock()
	if nap > 0 {
		time.Sleep(w.delay(nap))
	}
	if yield && site != mutant.SiteCAS {
		runtime.Gosched()
	}
}

// delay is the time a timer set for d runs, as the world sets every timer
// of its own and, through mutant.Delay, of the engine: d, at least 0,
// lengthened by the fewest nanoseconds (at least one) that make its
// instant one no other such timer has. testing/synctest fires the timers
// due at one instant in a random order (the runtime draws a random number
// for each, to break ties), which would let two goroutines woken at the
// same instant run in either order, and a seed's replay take another
// turn. With every instant distinct, the timers fire in the order of
// their instants, and the schedule is the seed's alone. A nanosecond or a
// few is nothing to any bound the checks keep.
func (w *world) delay(d time.Duration) time.Duration {
	d = max(d, 0)
	w.dmu.Lock()
	defer w.dmu.Unlock()
	now := time.Now().UnixNano()
	at := now + int64(d) + 1
	for w.whens[at] {
		at++
	}
	if len(w.whens) >= 4096 {
		for t := range w.whens {
			if t < now {
				delete(w.whens, t)
			}
		}
	}
	w.whens[at] = true
	return time.Duration(at - now)
}

// mutantOn reports whether the store's mutant name is switched on.
func (w *world) mutantOn(name string) bool { return w.mutant == name }

// run runs the world to its end, or to its first failure, and winds it
// down: every generator closed, every Holder released.
func (w *world) run() *Failure {
	w.log.add("world", "seed %d: %s", w.seed, w.p)
	for _, p := range w.procs {
		w.goRun(p.run)
		w.goRun(p.drive)
	}
	if w.p.restarts > 0 {
		w.goRun(w.restarts)
	}
	if w.p.jumps {
		w.goRun(w.storeClock)
	}
	t := time.NewTimer(w.delay(w.p.duration))
	select {
	case <-t.C:
		w.heal()
		w.awaitLive()
	case <-w.stop:
		t.Stop()
	}
	w.halt()
	w.wg.Wait()
	w.mu.Lock()
	holders := w.holders
	w.mu.Unlock()
	for _, h := range holders {
		_ = h.Release(time.Time{}) // a crashed process's, or one a failed New left
	}
	// Calls stuck past their context, and the releases New left to run in
	// the background once they end, finish within a few TTLs; the bubble
	// ends only when every goroutine in it has.
	time.Sleep(w.delay(3 * w.p.ttl))
	w.srv.calls.Wait()
	return w.chk.failed()
}

// goRun runs f on a goroutine of the world's.
func (w *world) goRun(f func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f()
	}()
}

// halt stops the world.
func (w *world) halt() { w.halting.Do(func() { close(w.stop) }) }

// stopping reports whether the world is stopping.
func (w *world) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// sleep sleeps d, or until the world stops; it reports whether the world
// goes on.
func (w *world) sleep(d time.Duration) bool {
	t := time.NewTimer(w.delay(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.stop:
		return false
	}
}

// restarts restarts the store now and then; after half the restarts, half
// the hosts' clocks step back to about the restart's time a while later: a
// newcomer that took after the restart, even after a window the restart
// floor once had, then issues ticks of the time the restart forgot.
func (w *world) restarts() {
	r := rand.New(rand.NewPCG(w.seed, 300))
	jr := rand.New(rand.NewPCG(w.seed, 700)) // the draws added for issue 36, apart
	sr := rand.New(rand.NewPCG(w.seed, 900)) // and for R4's switch-overs
	if w.p.kind.forgets {
		w.goRun(w.snapshots)
	}
	for w.sleepFault(time.Duration(r.ExpFloat64()*float64(w.p.restarts))) && !w.isHealed() {
		if w.p.kind.lock {
			w.powerLoss(r)
			continue
		}
		down, rollback := between(r, 10*time.Millisecond, 300*time.Millisecond), r.IntN(2) == 0
		switch {
		case w.p.switches && sr.IntN(3) == 0:
			w.switchOver(sr, down)
		case w.p.anySnap && jr.IntN(2) == 0:
			w.moveBack(jr, down)
		default:
			w.restartRedis(jr, down, rollback)
		}
		if w.p.kind.fleet {
			// etcd: a restart is a leader change, and one leader change
			// comes close after another now and then (a flapping leader),
			// before every holder has renewed in the new term.
			for r.IntN(3) == 0 && w.sleepFault(between(r, 50*time.Millisecond, w.p.ttl/2)) && !w.isHealed() {
				down := between(r, 10*time.Millisecond, 300*time.Millisecond)
				w.tr.add(Event{Op: OpRestart, Dur: us(down)})
				w.srv.restart(down, false, time.Time{})
			}
		}
		if !w.p.steps || r.IntN(2) == 0 {
			continue
		}
		at := time.Now()
		if r.IntN(2) == 0 {
			// The host of one process goes down with the store, its
			// process crashed, for about the restart window the floor
			// once had; back, it takes an ID again, perhaps the one it
			// held, which no one has taken since, and its clock steps
			// back to the ticks it issued before.
			p := w.procs[r.IntN(len(w.procs))]
			window := w.p.ttl + 2*w.slack()
			down := between(r, window-time.Second, window+3*time.Second)
			select {
			case p.down <- down:
				p.armed.Store(&stepBack{from: at.Add(down), to: at.Add(-between(r, 0, w.p.ttl/2))})
			default:
			}
			continue
		}
		for _, p := range w.procs {
			if r.IntN(2) == 0 {
				p.armed.Store(&stepBack{
					from: at.Add(between(r, w.p.ttl/2, w.p.ttl+2*w.slack()+3*time.Second)),
					to:   at.Add(-between(r, 0, w.p.ttl)),
				})
			}
		}
	}
}

// restartRedis restarts the store, down for d, rolling back to a snapshot
// if rollback; before it, where Redis's clock steps, its clock may jump
// forward within the bound (issue 36's second world: leases run out early,
// and a newcomer may take an ID whose holder then rides the restart out).
func (w *world) restartRedis(jr *rand.Rand, d time.Duration, rollback bool) {
	var snap time.Time
	if rollback {
		snap = w.srv.pickSnapshot(jr.Float64())
	}
	if w.p.jumps && jr.IntN(2) == 0 {
		w.stepStore(between(jr, w.srv.skewNow(), jumpsAhead(w.p.bound)))
	}
	w.tr.add(Event{Op: OpRestart, Dur: us(d), Rollback: rollback, Snapshot: w.tr.since(snap)})
	w.srv.restart(d, rollback, snap)
}

// moveBack is issue 36's first world, for params.anySnap: Redis saves its
// dump and restarts empty, down for d (up to 100 ms: a pod moved to an
// empty node), and soon after, within TTL/4, from an older dump (moved
// back to the node that holds it, or a backup restored): the one it saved
// as it stopped, or any one kept; meanwhile one host is cut off from it,
// from the first restart to just after the second, so that its holder may
// come back to a lease the dump revived, which a newcomer took in between.
func (w *world) moveBack(jr *rand.Rand, d time.Duration) {
	// Redis saves its dump as it shuts down (SHUTDOWN's default with RDB
	// persistence), the one the node keeps.
	w.tr.add(Event{Op: OpSnapshot})
	w.srv.snapshot()
	before := time.Now().Add(1)
	d = min(d, 100*time.Millisecond)
	gap, d2 := between(jr, 50*time.Millisecond, w.p.ttl/4), between(jr, 10*time.Millisecond, 100*time.Millisecond)
	p := w.procs[jr.IntN(len(w.procs))]
	cut := d + gap + d2 + between(jr, 0, 50*time.Millisecond)
	p.cut.Store(time.Now().Add(cut).UnixNano())
	w.tr.add(Event{Op: OpCut, Proc: p.n, Dur: us(cut)})
	w.log.add(p.name(), "cut off from the store for %v, while it moves and moves back", cut)
	w.restartRedis(jr, d, false)
	if !w.sleepFault(gap) || w.isHealed() {
		return
	}
	snap := w.srv.pickSnapshot(jr.Float64())
	if jr.IntN(2) == 0 {
		snap = w.srv.lastSnapshotBefore(before)
	}
	w.tr.add(Event{Op: OpRestart, Dur: us(d2), Rollback: true, Snapshot: w.tr.since(snap)})
	w.srv.restart(d2, true, snap)
}

// switchOver is R4 of docs/leases.md: Redis switches over to its replica,
// which has every write, its clients cut off for up to d (connections
// reset, as a switch of DNS or of a service's endpoints does); half the
// time just after its primary restarted empty, down for d, and the replica
// resynced the empty data, 10 to 500 ms later (during which the restarted
// primary serves, and what it writes the replica has too).
func (w *world) switchOver(sr *rand.Rand, d time.Duration) {
	d = min(d, 100*time.Millisecond)
	if sr.IntN(2) == 0 {
		w.restartRedis(sr, d, false)
		if !w.sleepFault(between(sr, 10*time.Millisecond, 500*time.Millisecond)) || w.isHealed() {
			return
		}
	}
	d2 := between(sr, 10*time.Millisecond, 100*time.Millisecond)
	w.tr.add(Event{Op: OpSwitch, Dur: us(d2)})
	w.srv.switchOver(d2)
}

// powerLoss is a restart of kind.lock's one host: every process dies at
// once (its client reaches nothing more, and the kernel drops its locks),
// the disk loses what was not synced, and the processes come back after
// the host.
func (w *world) powerLoss(r *rand.Rand) {
	w.log.add("world", "power loss: every process on the host dies")
	for _, p := range w.procs {
		if c := p.curCl.Load(); c != nil {
			c.dead.Store(true)
		}
	}
	down := between(r, 10*time.Millisecond, 300*time.Millisecond)
	for _, p := range w.procs {
		select {
		case p.down <- down:
		default:
		}
	}
	w.srv.restart(down, false, time.Time{})
}

// snapshots saves the store's records now and then, for restarts that
// roll back to them (Redis's RDB snapshots).
func (w *world) snapshots() {
	r := rand.New(rand.NewPCG(w.seed, 500))
	for w.sleepFault(between(r, 200*time.Millisecond, 3*time.Second)) && !w.isHealed() {
		w.tr.add(Event{Op: OpSnapshot})
		w.srv.snapshot()
	}
}

// storeClock steps and jumps Redis's clock now and then while it runs
// (params.jumps), as R3 of docs/leases.md allows: forward by any amount
// (here up to jumpsAhead), and back by up to the bound in all from the
// furthest it read, while it runs or across a restart (see
// server.stepClock and newRun). The holders' clocks are checked against
// it, and its marks, floor and leases' expiry are on it.
func (w *world) storeClock() {
	r := rand.New(rand.NewPCG(w.seed, 800))
	for w.sleepFault(between(r, 300*time.Millisecond, 4*time.Second)) && !w.isHealed() {
		w.stepStore(between(r, -w.p.bound, jumpsAhead(w.p.bound)))
	}
}

// jumpsAhead is how far ahead of the true time Redis's clock jumps at
// most, for a clock bound of bound: past the bound, which R3 allows
// (newcomers are refused against it, and marks and floors lie further
// ahead), by up to a second more than the bound again.
func jumpsAhead(bound time.Duration) time.Duration { return 2*bound + time.Second }

// stepStore steps Redis's clock to read skew ahead of the true time.
func (w *world) stepStore(skew time.Duration) {
	w.tr.add(Event{Op: OpStoreClock, Offset: us(skew)})
	w.srv.stepClock(skew)
}

// stepBack is a step of a host's clock back to about a restart's time,
// armed by the restart: the host's first generator made from time from on
// sees its clock step back to read to, just after New returns and before
// it issues, as a newcomer's that took with its clock right and then had
// it set from a bad source. (A generator that has issued for a while
// continues the later ticks in its ring after a step back; a new one's
// ring is empty, and starts the past ticks fresh.)
type stepBack struct{ from, to time.Time }

// sleepFault sleeps d, or until the world heals or stops; it reports
// whether faults go on.
func (w *world) sleepFault(d time.Duration) bool {
	t := time.NewTimer(w.delay(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.healed:
		return false
	case <-w.stop:
		return false
	}
}

// at formats a time on the holders' clocks as its offset from the world's
// start, for messages; the zero Time is "none".
func (w *world) at(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%+.4fs", t.Sub(w.base).Seconds())
}

// tickOf returns the tick containing t, -1 for the zero Time.
func (w *world) tickOf(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	d := t.Sub(w.p.layout.Epoch)
	if d < 0 {
		return -1
	}
	return int64(d / tick)
}

// ticks describes the ticks and machine ID of ids, for the log.
func (w *world) ticks(ids []ringflake.ID) string {
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf(": ticks %d..%d, machine ID %d", w.ticksOf(ids[0]), w.ticksOf(ids[len(ids)-1]), w.machineOf(ids[0]))
}

// ticksOf and machineOf decode an ID of the world's layout.
func (w *world) ticksOf(id ringflake.ID) int64 { return int64(id) >> 7 }
func (w *world) machineOf(id ringflake.ID) int64 {
	return int64(id) >> 4 & 7
}

// proc is one host, where processes come and go: each makes a Holder (or
// keeps the last), and generators over it one after another.
type proc struct {
	w    *world
	n    int
	r    *rand.Rand // the process loop's draws
	clk  *clock
	base time.Duration // the clock's usual offset
	cut  atomic.Int64  // the host is cut off from the store until this virtual Unix ns

	armed atomic.Pointer[stepBack] // a step back after a restart, for the next generator; nil for none
	down  chan time.Duration       // a restart takes the host down with it, for this long; buffered
	curCl atomic.Pointer[client]   // p.cl, for the power loss of kind.lock

	holder *machineid.Holder // the process's Holder, nil before the first or after a crash
	cl     *client           // its client
	incs   int
}

func (p *proc) name() string { return fmt.Sprintf("p%d", p.n) }

// incarnation is one generator's life on a proc, from its New to its
// Close or crash.
type incarnation struct {
	p        *proc
	n        int
	cl       *client              // the client of its process's Holder
	g        *ringflake.Generator // nil until New returns; written under checker.mu
	closing  atomic.Bool          // Close has begun
	issuedAt atomic.Int64         // virtual Unix ns: the latest start of a call that returned IDs
	quit     chan struct{}        // closed to stop the issuers
	issuers  sync.WaitGroup
}

func (inc *incarnation) String() string { return fmt.Sprintf("p%d/%d", inc.p.n, inc.n) }

// run is the host's life: process after process, each with a generator
// that issues for a while and then closes or crashes.
func (p *proc) run() {
	w := p.w
	if !w.sleep(between(p.r, 0, time.Second)) {
		return
	}
	for !w.stopping() {
		select {
		case d := <-p.down:
			p.hostDown(d)
			continue
		default:
		}
		if p.holder == nil || p.r.IntN(2) == 0 {
			p.newHolder()
		}
		p.incs++
		inc := &incarnation{p: p, n: p.incs, cl: p.cl, quit: make(chan struct{})}
		w.chk.add(inc)
		p.cl.setCurrent(inc)
		if !p.start(inc) {
			if p.r.IntN(2) == 0 {
				p.holder = nil // the next process makes its own
			}
			w.sleep(between(p.r, 0, 500*time.Millisecond))
			continue
		}
		for range 1 + p.r.IntN(3) {
			r := rand.New(rand.NewPCG(p.r.Uint64(), p.r.Uint64()))
			inc.issuers.Add(1)
			go inc.issue(r)
		}
		live, down := p.live(between(p.r, 300*time.Millisecond, 6*time.Second))
		switch {
		case down > 0:
			p.crash(inc)
			p.hostDown(down)
			continue
		case live && p.r.IntN(7) == 0:
			p.crash(inc)
		default:
			p.close(inc)
		}
		w.sleep(between(p.r, 0, time.Second))
	}
}

// live waits d while the process runs, and reports whether the world goes
// on and, if the host went down meanwhile, for how long.
func (p *proc) live(d time.Duration) (bool, time.Duration) {
	t := time.NewTimer(p.w.delay(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true, 0
	case <-p.w.stop:
		return false, 0
	case down := <-p.down:
		return true, down
	case <-p.w.healed:
		<-p.w.stop // no more comings and goings: it lives to the end
		return false, 0
	}
}

// hostDown keeps the host down for d, after its process crashed.
func (p *proc) hostDown(d time.Duration) {
	p.holder = nil
	p.w.log.add(p.name(), "the host is down for %v", d)
	p.w.sleepFault(d)
}

// newHolder starts a new process on the host: a new client and Holder.
func (p *proc) newHolder() {
	w := p.w
	if w.p.kind.lock && p.cl != nil {
		// The process before exited, and the kernel dropped its locks,
		// those of a Release that failed among them.
		p.cl.dead.Store(true)
	}
	p.cl = newClient(p)
	p.curCl.Store(p.cl)
	opts := []machineid.Option{
		machineid.WithRange(w.p.lo, w.p.hi), machineid.WithTTL(w.p.ttl),
		machineid.WithSafetyMargin(w.p.optMarg), machineid.WithCallTimeout(w.p.optCall),
		machineid.WithMaxClockOffset(w.p.optOff),
	}
	// Every kind's store reads a reference clock to the Holder, its own or
	// (etcd) the fleet's, but the file store's, whose holders share a host.
	lim := machineid.Limits{Name: "leasesim", Clock: !w.p.kind.lock}
	h, err := machineid.NewHolder[struct{}](p.cl, nil, lim, opts...)
	if err != nil {
		panic(err) // the parameters are the simulation's own
	}
	holderseed.Set(h, p.r.Uint64()) // the jitter of its waits for a free ID
	var prev machineid.Lease
	h.Watch(func(l machineid.Lease) {
		w.chk.leaseSeen(p, prev, l)
		if w.log.verbose || l.Held != prev.Held || l.ID != prev.ID || !l.After.Equal(prev.After) {
			w.log.add(p.name(), "lease: machine ID %d held=%v after %s until %s err=%v", l.ID, l.Held, w.at(l.After), w.at(l.Until), l.Err)
		}
		prev = l
	})
	p.holder = h
	w.mu.Lock()
	w.holders = append(w.holders, h)
	w.mu.Unlock()
	w.log.add(p.name(), "a new process, with a new Holder")
}

// start makes inc's generator with New, within a deadline, and reports
// whether it did.
func (p *proc) start(inc *incarnation) bool {
	w := p.w
	limit := between(p.r, 200*time.Millisecond, 4*time.Second)
	if w.isHealed() {
		limit = time.Minute // no deadline short of the world's end
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.delay(limit))
	defer cancel()
	began := time.Now()
	g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(p.holder), ringflake.WithClock(p.clk.now),
		ringflake.WithLayout(w.p.layout), ringflake.WithRingSize(w.p.ring), ringflake.WithMaxWait(w.p.maxWait),
		ringflake.WithLogger(slog.New(slog.DiscardHandler)))
	w.chk.bound(inc, "New", p.took(began), limit+acquireGrace)
	if err != nil {
		w.log.add(p.name(), "New of %s (within %v) failed: %v", inc, limit, err)
		if ce := (*machineid.ClockOffsetError)(nil); errors.As(err, &ce) {
			w.chk.refused(inc, p.cl.lastJudged(), ce)
		}
		return false
	}
	w.chk.mu.Lock()
	inc.g = g
	w.chk.mu.Unlock()
	w.log.add(p.name(), "New of %s: machine ID %d", inc, g.Lease().ID)
	w.tr.started(inc, began, g.Lease().ID, limit)
	if sb := p.armed.Load(); sb != nil && !time.Now().Before(sb.from) && p.armed.CompareAndSwap(sb, nil) {
		p.setOffset(time.Until(sb.to))
	}
	return true
}

// took returns the time since began, less the pauses of p's clock.
func (p *proc) took(began time.Time) time.Duration {
	now := time.Now()
	return now.Sub(began) - p.clk.pausedDuring(began, now)
}

// close closes inc's generator while its issuers still call it, as a
// service that stops does.
func (p *proc) close(inc *incarnation) {
	inc.closing.Store(true)
	began := time.Now()
	p.w.tr.add(Event{Op: OpClose, Proc: p.n, Inc: inc.n})
	err := inc.g.Close()
	c := p.w.p.call
	p.w.chk.bound(inc, "Close", p.took(began), 2*c+c/10)
	p.w.log.add(p.name(), "Close of %s: %v", inc, err)
	close(inc.quit)
	inc.issuers.Wait()
}

// crash kills the process: its issuers stop, and its Holder no longer
// reaches the store. Its generator stays open, unused, until the world's
// end.
func (p *proc) crash(inc *incarnation) {
	close(inc.quit)
	inc.issuers.Wait()
	p.cl.dead.Store(true)
	p.holder = nil
	p.w.log.add(p.name(), "%s crashes", inc)
	p.w.tr.add(Event{Op: OpCrash, Proc: p.n, Inc: inc.n})
	p.w.goRun(func() {
		<-p.w.stop
		inc.closing.Store(true)
		_ = inc.g.Close()
	})
}

// issue is one issuer of inc: calls of NextID or NextN at random gaps.
func (inc *incarnation) issue(r *rand.Rand) {
	defer inc.issuers.Done()
	p := inc.p
	w := p.w
	buf := make([]ringflake.ID, 40)
	for {
		gap := time.Duration(r.ExpFloat64() * float64(5*time.Millisecond))
		t := time.NewTimer(w.delay(gap))
		select {
		case <-t.C:
		case <-inc.quit:
			t.Stop()
			return
		case <-w.stop:
			t.Stop()
			return
		}
		want := 1
		if r.IntN(5) < 2 {
			want = 1 + r.IntN(len(buf))
		}
		began := time.Now()
		var err error
		n := want
		if want == 1 {
			buf[0], err = inc.g.NextID()
			if err != nil {
				n = 0
			}
		} else {
			n, err = inc.g.NextN(buf[:n])
		}
		if took := p.took(began); took > w.p.wait+slack {
			w.chk.bound(inc, fmt.Sprintf("NextN(%d)", want), took, w.p.wait)
		}
		w.chk.issued(inc, buf[:n])
		if n > 0 {
			w.chk.revived(p, began)
			for b := began.UnixNano(); ; {
				if old := inc.issuedAt.Load(); old >= b || inc.issuedAt.CompareAndSwap(old, b) {
					break
				}
			}
		}
		if w.log.verbose {
			w.log.add(p.name(), "%s: %d of %d IDs since %.6fs%s, err=%v", inc, n, want, began.Sub(w.start).Seconds(), w.ticks(buf[:n]), err)
		}
		if err != nil {
			w.chk.callError(inc, err)
			if errors.Is(err, ringflake.ErrClosed) {
				return
			}
		}
	}
}

// drive is the host's weather: its clock steps back (by less and by more
// than the ring's span) and forth, the process pauses, and the network cuts
// it off from the store for a while.
func (p *proc) drive() {
	w := p.w
	r := rand.New(rand.NewPCG(w.seed, uint64(200+p.n)))
	var faults []func()
	if w.p.steps {
		faults = append(faults, func() { p.step(r) }, func() { p.step(r) })
	}
	if w.p.pauses {
		faults = append(faults, func() {
			d := between(r, w.p.ttl, 2*w.p.ttl)
			w.tr.add(Event{Op: OpPause, Proc: p.n, Dur: us(d)})
			p.clk.pause.Store(int64(d))
		})
	}
	if w.p.cuts {
		faults = append(faults, func() {
			d := between(r, w.p.ttl*3/10, 2*w.p.ttl)
			p.cut.Store(time.Now().Add(d).UnixNano())
			w.tr.add(Event{Op: OpCut, Proc: p.n, Dur: us(d)})
			w.log.add(p.name(), "cut off from the store for %v", d)
		})
	}
	if len(faults) == 0 {
		return
	}
	for w.sleepFault(between(r, 300*time.Millisecond, 3*time.Second)) && !w.isHealed() {
		faults[r.IntN(len(faults))]()
	}
}

// step steps the clock: back by less or more than the ring's span, back by
// more than the TTL and the restart window (a clock set from a bad source,
// a VM restored from a snapshot), forth, to past the clock bound ahead, or
// back to its usual offset.
func (p *proc) step(r *rand.Rand) {
	w := p.w
	old := time.Duration(p.clk.offset.Load())
	next := old
	span := time.Duration(w.p.ring) * tick
	switch x := r.IntN(10); {
	case x < 3 && old != p.base:
		next = p.base
	case x < 5:
		next = old - between(r, quantum, span)
	case x < 6:
		next = old - between(r, span, 2*time.Second)
	case x < 7:
		next = old - between(r, w.p.ttl, w.p.ttl+2*w.slack()+3*time.Second)
	case x < 8:
		// Past the bound ahead: a holder is not refused for it once it
		// holds, and Redis caps its marks.
		next = max(w.p.bound, 0) + between(r, 0, w.p.ttl+6*time.Second)
	default:
		next = old + between(r, 100*time.Millisecond, 1500*time.Millisecond)
	}
	p.setOffset(next)
}

// setOffset sets the clock to read next ahead of the true time (behind, if
// negative), or as far ahead as the world allows.
func (p *proc) setOffset(next time.Duration) {
	next = min(next, p.w.p.ahead)
	old := time.Duration(p.clk.offset.Swap(int64(next)))
	p.clk.moved.Store(time.Now().UnixNano())
	p.w.noteAhead(next)
	p.w.tr.offset(p, next)
	p.w.log.add(p.name(), "clock steps by %v, to %v off", next-old, next)
}

// slack is how far past the server's time, beyond the TTL, Redis lets a
// mark be set, and its restart floor lies past the restart (the clock
// bound, or the margin with the check off).
func (w *world) slack() time.Duration {
	if w.p.bound < 0 {
		return w.p.margin
	}
	return w.p.bound
}

// noteAhead notes that a clock reads d ahead of the true time.
func (w *world) noteAhead(d time.Duration) {
	for {
		old := w.aheadSeen.Load()
		if int64(d) <= old || w.aheadSeen.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}
