package nemesis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A world is one seed's run: a store's real servers, holder processes each
// behind its own proxy, and a schedule of faults drawn from the seed. The
// schedule runs on the test's goroutine, in the seed's own time: each fault
// and each end of a fault (a resume, a heal, a restart) is due at an offset
// from the world's start drawn from the seed alone, so a seed replays the
// same faults in the same order; only how the processes answer them is
// timed by the machine.
type world struct {
	t      *testing.T
	kind   string
	seed   uint64
	mutant string
	rng    *rand.Rand
	dir    string
	set    settings
	srv    server
	hs     []*holder
	menu   []fault // the faults this seed enabled, swarm style
	due    []due   // ends of faults, by time
	now    time.Duration
	start  time.Time
	events []string
}

// settings are a seed's lease options and fleet.
type settings struct {
	TTL, Margin, Bound time.Duration
	Lo, Hi             int64
	Holders            int
}

// A fault is one entry of the menu: do applies it now, and returns what
// ends it and when, or nil; ok false means it did not apply (its target is
// down), and nothing happened.
type fault struct {
	name string
	do   func(w *world) (undo func(), after time.Duration, ok bool)
}

type due struct {
	at   time.Duration
	name string
	undo func()
}

// newWorld draws a seed's settings; the store's servers start in run.
func newWorld(t *testing.T, kind string, seed uint64, mutant string) *world {
	w := &world{t: t, kind: kind, seed: seed, mutant: mutant, dir: t.TempDir(),
		rng: rand.New(rand.NewPCG(seed, 0x6e656d65736973))}
	if *flagKeep != "" {
		w.dir = filepath.Join(*flagKeep, fmt.Sprintf("%s-%d", kind, seed))
		if err := os.MkdirAll(w.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	st := stores[kind]
	s := &w.set
	s.TTL = st.ttls[w.rng.IntN(len(st.ttls))]
	s.Margin = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, s.TTL / 5}[w.rng.IntN(3)]
	s.Margin = min(s.Margin, s.TTL/5)
	s.Bound = []time.Duration{400 * time.Millisecond, 2 * time.Second}[w.rng.IntN(2)]
	s.Holders = 2 + w.rng.IntN(3)
	s.Lo, s.Hi = 0, int64(w.rng.IntN(min(s.Holders, 3)))
	return w
}

// note logs an event at the world's time.
func (w *world) note(format string, a ...any) {
	line := fmt.Sprintf("%7.3fs (late %v) %s", w.now.Seconds(), time.Since(w.start.Add(w.now)).Round(time.Millisecond), fmt.Sprintf(format, a...))
	w.events = append(w.events, line)
	if *flagEvents {
		w.t.Log(line)
	}
}

// span draws a duration in [lo, hi) times the TTL.
func (w *world) span(lo, hi float64) time.Duration {
	return time.Duration((lo + (hi-lo)*w.rng.Float64()) * float64(w.set.TTL))
}

// swarm enables each fault of the menu with probability 1/2 (at least one),
// as swarm testing does: a seed that leaves some faults out lets the others
// reach states that the whole menu would interrupt.
func (w *world) swarm(all []fault) {
	for len(w.menu) == 0 {
		for _, f := range all {
			if w.rng.IntN(2) == 0 {
				w.menu = append(w.menu, f)
			}
		}
	}
	names := make([]string, len(w.menu))
	for i, f := range w.menu {
		names[i] = f.name
	}
	w.note("settings %+v; faults: %s", w.set, strings.Join(names, ", "))
}

// run applies faults for d, in bursts: a quiet stretch of 0.5 to 2.5 TTLs,
// in which holders can take and hold their IDs (a restarted Redis makes
// every take wait TTL + bound), then 1 to 4 faults about TTL/8 apart, so
// that faults compose (a holder cut off while Redis restarts empty, then
// from an older snapshot). Each fault's end is applied when it is due.
func (w *world) run(d time.Duration) {
	for w.now < d {
		w.until(w.now + w.span(0.5, 2.5))
		for n := 1 + w.rng.IntN(4); n > 0; n-- {
			f := w.menu[w.rng.IntN(len(w.menu))]
			if undo, after, ok := f.do(w); ok && undo != nil {
				w.due = append(w.due, due{w.now + after, f.name, undo})
			}
			w.until(w.now + time.Duration(w.rng.ExpFloat64()*float64(w.set.TTL/8)) + 20*time.Millisecond)
		}
	}
}

// until applies every end of a fault due before t, in order, then waits
// until t of the world's time.
func (w *world) until(t time.Duration) {
	for {
		slices.SortStableFunc(w.due, func(a, b due) int { return int(a.at - b.at) })
		if len(w.due) == 0 || w.due[0].at > t {
			break
		}
		d := w.due[0]
		w.due = w.due[1:]
		w.wait(d.at)
		d.undo()
	}
	w.wait(t)
}

// wait sleeps until the world's time t, or not at all if it is past.
func (w *world) wait(t time.Duration) {
	w.now = max(w.now, t)
	time.Sleep(time.Until(w.start.Add(w.now)))
}

// heal ends every fault now, in the order they were due, and those their
// ends bring (a server moved back).
func (w *world) heal() {
	for len(w.due) > 0 {
		slices.SortStableFunc(w.due, func(a, b due) int { return int(a.at - b.at) })
		d := w.due[0]
		w.due = w.due[1:]
		d.undo()
	}
	w.note("healed")
}

// A holder is one holder slot: a process, restarted as a new incarnation
// after each kill or stop, behind one proxy.
type holder struct {
	i      int
	n      int   // incarnations so far
	lo, hi int64 // its range: the fleet's, or one ID for a newcomer
	aimed  bool  // a newcomer started on one holding's ID
	proxy  *proxy
	clock  string // its clock offset file
	offset time.Duration
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	cut    bool
}

// up reports whether the holder's process runs.
func (h *holder) up() bool { return h.cmd != nil }

// startHolders makes each holder's proxy and clock file and starts it.
func (w *world) startHolders() {
	for range w.set.Holders {
		w.addHolder(w.set.Lo, w.set.Hi, 0)
	}
	w.t.Cleanup(func() {
		for _, h := range w.hs {
			w.kill(h)
		}
	})
}

// addHolder makes a holder slot on the range lo..hi, with its proxy and
// clock file (offset ahead of true time), and starts it.
func (w *world) addHolder(lo, hi int64, offset time.Duration) *holder {
	i := len(w.hs)
	h := &holder{i: i, lo: lo, hi: hi, offset: offset, clock: filepath.Join(w.dir, fmt.Sprintf("h%d.clock", i))}
	if up := w.srv.upstream(); up != "" {
		p, err := newProxy(up)
		if err != nil {
			w.t.Fatalf("nemesis: proxy: %v", err)
		}
		w.t.Cleanup(p.close)
		h.proxy = p
	}
	w.setClock(h, offset)
	w.hs = append(w.hs, h)
	w.launch(h)
	return h
}

// newcomer starts a holder beside the fleet on the one ID x, its clock
// offset ahead of true time, as the worlds aimed at one holding need
// (worlds_test.go): it takes x as soon as x is free, and no other.
func (w *world) newcomer(x int64, offset time.Duration) *holder {
	h := w.addHolder(x, x, offset)
	h.aimed = true
	w.note("holder %d: a newcomer on ID %d alone, its clock %v off", h.i, x, offset)
	return h
}

// setClock sets h's clock to read offset ahead of true time (behind, if
// negative), through its clock file, which the holder reads every 10 ms.
func (w *world) setClock(h *holder, offset time.Duration) {
	h.offset = offset
	if err := os.WriteFile(h.clock, []byte(fmt.Sprint(int64(offset))), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// status reads what the holder last told of its lease (holder_test.go's
// writeStatus); ok is false before it told anything.
func (w *world) status(h *holder) (st status, ok bool) {
	b, err := os.ReadFile(h.statusFile())
	if err != nil || json.Unmarshal(b, &st) != nil {
		return status{}, false
	}
	return st, true
}

func (h *holder) statusFile() string { return h.clock[:len(h.clock)-len(".clock")] + ".lease" }

// holding returns a holder that runs, is neither paused nor cut off, and
// holds an ID, with that ID; nil if none does. Which one is drawn from the
// seed among those that do, which the machine's timing decides.
func (w *world) holding() (*holder, int64) {
	var x int64
	h := w.pick(func(h *holder) bool {
		st, ok := w.status(h)
		if !h.up() || h.paused || h.cut || !ok || !st.Held || h.aimed {
			return false
		}
		x = st.ID
		return true
	})
	return h, x
}

// await polls ok every 10 ms for at most d, and reports whether it came
// true; the world's time moves on to now.
func (w *world) await(d time.Duration, ok func() bool) bool {
	end := time.Now().Add(d)
	for !ok() && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	w.now = max(w.now, time.Since(w.start))
	return ok()
}

// renewed waits up to half a TTL for h's next confirmation (a later
// Until), so that what follows starts a full TTL before h's deadline; it
// returns when that came, or the zero Time.
func (w *world) renewed(h *holder) time.Time {
	first, _ := w.status(h)
	if w.await(w.set.TTL/2, func() bool { st, _ := w.status(h); return st.Held && st.Until > first.Until }) {
		return time.Now()
	}
	return time.Time{}
}

// launch starts a holder's next incarnation: this test binary again, as a
// holder (TestMain), in a process group of its own, killed if the harness
// dies.
func (w *world) launch(h *holder) {
	h.n++
	addr := ""
	if h.proxy != nil {
		addr = h.proxy.addr()
	}
	cfg := holderConfig{
		Store: w.kind, Target: w.srv.target(addr), ClockFile: h.clock, Mutant: w.mutant,
		Out:       filepath.Join(w.dir, fmt.Sprintf("h%d.%d.ids", h.i, h.n)),
		LeaseFile: h.statusFile(),
		TTL:       w.set.TTL, Margin: w.set.Margin, Bound: w.set.Bound, Lo: h.lo, Hi: h.hi,
	}
	b, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(holderEnviron(), holderEnv+"="+string(b))
	logf, err := os.Create(filepath.Join(w.dir, fmt.Sprintf("h%d.%d.log", h.i, h.n)))
	if err != nil {
		w.t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("nemesis: starting holder %d: %v", h.i, err)
	}
	h.cmd, h.exited, h.paused = cmd, make(chan struct{}), false
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(cmd, h.exited)
	w.note("holder %d.%d started (pid %d)", h.i, h.n, cmd.Process.Pid)
}

// holderEnviron is the harness's environment without what a store's
// server was given (the clock shim).
func holderEnviron() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "LD_PRELOAD=") && !strings.HasPrefix(e, "RINGFLAKE_CLOCK_FILE=") && !strings.HasPrefix(e, "NEMESIS_") {
			env = append(env, e)
		}
	}
	return env
}

// signal sends sig to the holder's process group.
func (h *holder) signal(sig syscall.Signal) {
	if h.cmd != nil {
		_ = syscall.Kill(-h.cmd.Process.Pid, sig)
	}
}

// kill ends a holder at once, as a crash.
func (w *world) kill(h *holder) {
	if !h.up() {
		return
	}
	h.signal(syscall.SIGKILL)
	<-h.exited
	h.cmd, h.paused = nil, false
}

// stop ends a holder as an operator would: SIGTERM, so that it closes its
// generator and releases its lease; after 15 s, SIGKILL.
func (w *world) stop(h *holder) {
	if !h.up() {
		return
	}
	h.signal(syscall.SIGCONT)
	h.signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(15 * time.Second):
		w.note("holder %d.%d did not stop within 15 s of SIGTERM: killed", h.i, h.n)
	}
	w.kill(h)
}

// pick returns a holder drawn from those ok accepts, or nil. It draws
// whether or not one is found, so that the seed's draws stay in step.
func (w *world) pick(ok func(*holder) bool) *holder {
	i := w.rng.IntN(len(w.hs))
	for j := range w.hs {
		if h := w.hs[(i+j)%len(w.hs)]; ok(h) {
			return h
		}
	}
	return nil
}

// holderFaults are the faults of holders that every store's docs allow:
// a crash, a stop that releases, a pause past the TTL, a clock step (a
// holder's clock may go anywhere once it holds; a newcomer's beyond the
// bound is refused), and partitions from the store, one way or both.
func holderFaults(proxied bool) []fault {
	fs := []fault{
		{"kill -9 a holder, restart it", func(w *world) (func(), time.Duration, bool) {
			h := w.pick((*holder).up)
			if h == nil {
				return nil, 0, false
			}
			w.note("holder %d.%d: kill -9", h.i, h.n)
			w.kill(h)
			return func() { w.launch(h) }, w.span(0, 2), true
		}},
		{"stop a holder (SIGTERM: it releases), restart it", func(w *world) (func(), time.Duration, bool) {
			h := w.pick((*holder).up)
			if h == nil {
				return nil, 0, false
			}
			w.note("holder %d.%d: SIGTERM", h.i, h.n)
			w.stop(h)
			return func() { w.launch(h) }, w.span(0, 1), true
		}},
		{"SIGSTOP a holder", func(w *world) (func(), time.Duration, bool) {
			h := w.pick(func(h *holder) bool { return h.up() && !h.paused })
			d := w.span(0.1, 2)
			if h == nil {
				return nil, 0, false
			}
			w.note("holder %d.%d: SIGSTOP for %v", h.i, h.n, d)
			h.signal(syscall.SIGSTOP)
			h.paused = true
			cmd := h.cmd
			return func() {
				if h.cmd == cmd && h.paused {
					w.note("holder %d.%d: SIGCONT", h.i, h.n)
					h.signal(syscall.SIGCONT)
					h.paused = false
				}
			}, d, true
		}},
		{"step a holder's clock", func(w *world) (func(), time.Duration, bool) {
			h := w.pick(func(*holder) bool { return true })
			// Within the bound of true time mostly; a fifth past it.
			reach := w.set.Bound
			if w.rng.IntN(5) == 0 {
				reach *= 3
			}
			w.setClock(h, time.Duration((2*w.rng.Float64()-1)*float64(reach)))
			w.note("holder %d: clock offset now %v", h.i, h.offset)
			return nil, 0, true
		}},
	}
	if !proxied {
		return fs
	}
	return append(fs, fault{"partition a holder from the store (both ways or one way)", func(w *world) (func(), time.Duration, bool) {
		h := w.pick(func(h *holder) bool { return !h.cut })
		way := w.rng.IntN(3)
		d := w.span(0.2, 1.5)
		reset := w.rng.IntN(2) == 0
		if h == nil {
			return nil, 0, false
		}
		desc := []string{"both ways", "holder to store", "store to holder"}[way]
		w.note("holder %d: partitioned %s for %v", h.i, desc, d)
		h.proxy.partition(way != 2, way != 1)
		h.cut = true
		return func() {
			w.note("holder %d: healed (reset connections: %v)", h.i, reset)
			h.proxy.heal(reset)
			h.cut = false
		}, d, true
	}})
}

// A unit is one server process of a store (Redis, etcd, the postmaster,
// kube-apiserver), for the faults every server shares.
type unit struct {
	name   string
	down   bool
	paused bool
	pause  func()
	resume func()
}

// pauseFault is SIGSTOP of a server for 0.2 to 1.5 TTLs.
func pauseFault(u *unit) fault {
	return fault{"SIGSTOP " + u.name, func(w *world) (func(), time.Duration, bool) {
		d := w.span(0.2, 1.5)
		if u.down || u.paused {
			return nil, 0, false
		}
		w.note("%s: SIGSTOP for %v", u.name, d)
		u.pause()
		u.paused = true
		return func() {
			if u.paused {
				w.note("%s: SIGCONT", u.name)
				u.resume()
				u.paused = false
			}
		}, d, true
	}}
}

// restartFault stops a server with end (a kill -9, a SIGTERM) and starts it
// again with begin after a downtime of up to down TTLs.
func restartFault(u *unit, name string, down float64, end, begin func(w *world)) fault {
	return fault{name, func(w *world) (func(), time.Duration, bool) {
		d := w.span(0, down)
		if u.down {
			return nil, 0, false
		}
		w.note("%s: %s, down for %v", u.name, name, d)
		if u.paused {
			u.resume()
			u.paused = false
		}
		end(w)
		u.down = true
		return func() {
			begin(w)
			u.down = false
			w.note("%s: up", u.name)
		}, d, true
	}}
}

// guarded is f, applied only when ok says so (it still draws what it draws).
func guarded(f fault, ok func() bool) fault {
	return fault{f.name, func(w *world) (func(), time.Duration, bool) {
		if !ok() {
			return nil, 0, false
		}
		return f.do(w)
	}}
}
