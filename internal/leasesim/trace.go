package leasesim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Trace is the schedule of one seed's world as data, for a replay against
// a real store (machineid_redis's replay test): its settings, and the timed
// events that a real store sees or that shape what it sees. Times are in
// µs of virtual time since the world began, durations and clock offsets in
// µs. What it leaves out: the issuers' calls (a replay issues as the
// world's issuers do, at random gaps), the faults of single store calls
// (delays, losses, calls stuck past their context), the schedule's
// perturbations, the store's clock rate, and the News that failed.
type Trace struct {
	Seed   uint64 `json:"seed"`
	Mutant string `json:"mutant,omitempty"` // the mutant the world ran with
	Store  string `json:"store"`            // the kind of store: a replay needs "redis"
	Params string `json:"params"`           // the world's settings, as the simulation prints them

	// The Holders' options, as the world passes them (0: the default;
	// a bound below 0: the check off).
	TTL    int64 `json:"ttl"`
	Margin int64 `json:"margin"`
	Call   int64 `json:"call"`
	Bound  int64 `json:"bound"`
	Lo     int64 `json:"lo"`
	Hi     int64 `json:"hi"`
	// The generators' options.
	TimeBits     int   `json:"timeBits"`
	MachineBits  int   `json:"machineBits"`
	SequenceBits int   `json:"sequenceBits"`
	Tick         int64 `json:"tick"`
	Ring         int   `json:"ring"`
	MaxWait      int64 `json:"maxWait"` // -1: never wait

	// Procs is how many hosts the world has; each event's Proc is one.
	Procs int `json:"procs"`
	// Failure is the first invariant the world broke, nil for none; the
	// events stop before it.
	Failure *TraceFailure `json:"failure,omitempty"`
	Events  []Event       `json:"events,omitempty"`
}

// TraceFailure is the failure a trace's world ended with.
type TraceFailure struct {
	At        int64  `json:"at"`
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
}

// The kinds of Event.
const (
	// OpOffset: Proc's clock reads Offset ahead of the true time (behind,
	// if negative). With AfterNew, the step came just after the New of the
	// process's latest generator returned, and a replay applies it then.
	OpOffset = "offset"
	// OpPause: Proc's next clock reading blocks for Dur and then returns
	// the time it read before.
	OpPause = "pause"
	// OpCut: Proc is cut off from the store for Dur.
	OpCut = "cut"
	// OpNew: Proc's generator Inc began its New at At, and got machine ID
	// ID; Dur is the deadline New had.
	OpNew = "new"
	// OpClose: Proc closes generator Inc; OpCrash: Proc's process dies,
	// its generator Inc open and its Holder cut off from the store for
	// good.
	OpClose = "close"
	OpCrash = "crash"
	// OpRestart: the store restarts, down for Dur, and comes back having
	// forgotten everything, or with Rollback rolled back to the
	// OpSnapshot taken at Snapshot, or if that is 0 its latest (empty if
	// none since it last forgot).
	OpRestart  = "restart"
	OpSnapshot = "snapshot"
	// OpSwitch: the store switches over to its replica, which has every
	// write, its clients cut off for Dur (machineid_redis's replay, on one
	// server, plays none: TestSwitchOverAfterARestart plays R4 there).
	OpSwitch = "switch-over"
	// OpStoreClock: the store's own clock steps to read Offset ahead of
	// the true time (behind, if negative).
	OpStoreClock = "store-clock"
)

// Event is one timed event of a Trace.
type Event struct {
	At       int64  `json:"at"`
	Op       string `json:"op"`
	Proc     int    `json:"proc"`
	Inc      int    `json:"inc,omitempty"`
	ID       int64  `json:"id,omitempty"`
	Dur      int64  `json:"dur,omitempty"`
	Offset   int64  `json:"offset,omitempty"`
	AfterNew bool   `json:"afterNew,omitempty"`
	Rollback bool   `json:"rollback,omitempty"`
	Snapshot int64  `json:"snapshot,omitempty"`
}

// Record runs the world of seed as Run does (inside a synctest bubble of
// its own, after Switch), and returns what came of it and its trace.
func Record(seed uint64, name string) (Result, *Trace) {
	w := newWorld(seed, name, false)
	w.tr = &tracer{w: w, lastNew: map[int]time.Time{}}
	for _, p := range w.procs {
		w.tr.add(Event{Op: OpOffset, Proc: p.n, Offset: us(p.base)})
	}
	r := w.result()
	return r, w.tr.trace(r.Failure)
}

// tracer records a world's trace. A nil *tracer records nothing, so that
// the world's hooks cost a Run nothing. Safe for concurrent use.
type tracer struct {
	w *world

	mu      sync.Mutex        // protects the fields below
	events  []Event           // in the order they came, which is their time's
	lastNew map[int]time.Time // each proc's latest return from New, in virtual time
}

// us returns d in µs.
func us(d time.Duration) int64 { return d.Microseconds() }

// opt returns an option's duration in µs, and a negative one (the option's
// "none") as -1.
func opt(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Microseconds()
}

// add records e at the present virtual time.
func (t *tracer) add(e Event) {
	if t == nil {
		return
	}
	e.At = us(time.Since(t.w.start))
	t.mu.Lock()
	t.events = append(t.events, e)
	t.mu.Unlock()
}

// since returns at as a trace's time, µs since the world began; 0 for the
// zero Time (and for a nil tracer, which records nothing).
func (t *tracer) since(at time.Time) int64 {
	if t == nil || at.IsZero() {
		return 0
	}
	return us(at.Sub(t.w.start))
}

// started records that inc's New, begun at began, got machine ID id within
// a deadline of limit.
func (t *tracer) started(inc *incarnation, began time.Time, id int64, limit time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.lastNew[inc.p.n] = time.Now()
	t.events = append(t.events, Event{At: us(began.Sub(t.w.start)), Op: OpNew, Proc: inc.p.n, Inc: inc.n, ID: id, Dur: us(limit)})
	t.mu.Unlock()
}

// offset records that p's clock now reads off ahead of the true time. No
// virtual time passes between New's return and the step back a restart
// armed (start), and every other step comes from a timer of its own, which
// the world never lets fire at the instant of another: an offset set at
// the instant New returned is that step.
func (t *tracer) offset(p *proc, off time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	after := t.lastNew[p.n].Equal(time.Now())
	t.mu.Unlock()
	t.add(Event{Op: OpOffset, Proc: p.n, Offset: us(off), AfterNew: after})
}

// trace returns the trace, in the order of the events' times, cut at the
// failure f, if any: what the world did as it halted is not its schedule.
func (t *tracer) trace(f *Failure) *Trace {
	w := t.w
	p := w.p
	tr := &Trace{Seed: w.seed, Mutant: w.mutant, Store: p.kind.name, Params: p.String(),
		TTL: opt(p.ttl), Margin: opt(p.optMarg), Call: opt(p.optCall), Bound: opt(p.optOff), Lo: p.lo, Hi: p.hi,
		TimeBits: p.layout.TimeBits, MachineBits: p.layout.MachineBits, SequenceBits: p.layout.SequenceBits,
		Tick: us(p.layout.Tick), Ring: p.ring, MaxWait: opt(p.maxWait), Procs: p.procs}
	end := int64(-1)
	if f != nil {
		tr.Failure = &TraceFailure{At: us(f.At), Invariant: f.Invariant, Detail: f.Detail}
		end = us(f.At)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.events {
		if end < 0 || e.At < end {
			tr.Events = append(tr.Events, e)
		}
	}
	// A New is recorded when it returns, at the time it began.
	slices.SortStableFunc(tr.Events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	return tr
}

// Marshal encodes tr as JSON, one event a line, so that a trace checked in
// reads and diffs by the event.
func (tr *Trace) Marshal() ([]byte, error) {
	head := *tr
	head.Events = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(head); err != nil {
		return nil, err
	}
	b := bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(buf.Bytes()), []byte("}")))
	buf = *bytes.NewBuffer(b)
	buf.WriteString(",\n  \"events\": [\n")
	var line bytes.Buffer
	enc = json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	for i, e := range tr.Events {
		line.Reset()
		if err := enc.Encode(e); err != nil {
			return nil, err
		}
		buf.WriteString("    ")
		buf.Write(bytes.TrimSpace(line.Bytes()))
		if i < len(tr.Events)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("  ]\n}\n")
	return buf.Bytes(), nil
}

// ReadTrace decodes a trace Marshal wrote.
func ReadTrace(b []byte) (*Trace, error) {
	var tr Trace
	if err := json.Unmarshal(b, &tr); err != nil {
		return nil, fmt.Errorf("leasesim: reading a trace: %w", err)
	}
	return &tr, nil
}
