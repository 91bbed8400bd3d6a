// Package sim is "ringflake simulate": the same load against ringflake and
// a strict Snowflake while an injected clock steps back, the table and
// timeline of what each did, and an SVG chart of it.
package sim

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/strict"
)

// Config describes one simulation: a load of Rate requests per second for
// Duration against each generator, and a clock that steps back by
// Rollback at StepAt.
type Config struct {
	Rollback time.Duration
	StepAt   time.Duration // when, after the start, the clock steps back
	Duration time.Duration
	Rate     float64       // requests per second to each generator
	Ring     int           // ringflake's ring size, in slots
	MaxWait  time.Duration // each generator's bound on one call's waiting
	SVG      string        // the file Run draws the chart in; "" for none
	// Mods are the N of id % N to count the IDs served by; with any, the
	// chart is of those counts rather than of the timeline.
	Mods []int

	rows int // timeline rows; 0 means defaultRows
	// virtual runs without real time: each request sets the elapsed time
	// to its schedule, so a run takes only as long as the calls. Tests
	// use it; the command runs in real time.
	virtual bool
}

// Requests returns how many requests each generator receives.
func (c Config) Requests() int { return int(c.Rate * c.Duration.Seconds()) }

// due returns when request i is scheduled, after the start.
func (c Config) due(i int) time.Duration {
	return time.Duration(float64(i) / c.Rate * float64(time.Second))
}

// bucketsPerRow is how many chart buckets make one timeline row. Requests
// are counted by bucket and a row is the sum of its buckets, so the chart
// and the table show the same counts.
const bucketsPerRow = 5

// buckets returns how many chart buckets the run has.
func (c Config) buckets() int { return c.rows * bucketsPerRow }

// bucket returns the chart bucket of a request scheduled at d. Its row is
// bucket(d) / bucketsPerRow: floor(floor(x*k)/k) is floor(x).
func (c Config) bucket(d time.Duration) int {
	n := c.buckets()
	return min(int(int64(d)*int64(n)/int64(c.Duration)), n-1)
}

// bucketWidth returns how much of the run one chart bucket covers.
func (c Config) bucketWidth() time.Duration { return c.Duration / time.Duration(c.buckets()) }

// pacer is the simulation's notion of elapsed time.
type pacer interface {
	elapsed() time.Duration
	// waitUntil returns once elapsed() has reached d, or about then.
	waitUntil(d time.Duration)
}

// realPacer is real elapsed time since start. It sleeps only when at least
// a millisecond ahead, so requests go out in small bursts rather than
// paying a timer per request.
type realPacer struct{ start time.Time }

func (p realPacer) elapsed() time.Duration { return time.Since(p.start) }

func (p realPacer) waitUntil(d time.Duration) {
	if ahead := d - p.elapsed(); ahead >= time.Millisecond {
		time.Sleep(ahead)
	}
}

// virtualPacer is elapsed time that moves only when the driver says.
type virtualPacer struct{ now atomic.Int64 }

func (p *virtualPacer) elapsed() time.Duration { return time.Duration(p.now.Load()) }

func (p *virtualPacer) waitUntil(d time.Duration) { p.now.Store(int64(d)) }

// simClock is the injected clock: base plus elapsed time, minus rollback
// from stepAt on. It remembers the highest tick it has shown, so the
// simulator can tell, independently of the generators, when the clock is
// behind time it already showed.
type simClock struct {
	base     time.Time
	stepAt   time.Duration
	rollback time.Duration
	tick     time.Duration
	pace     pacer
	high     atomic.Int64 // highest tick since base shown by Now; raised by Now, read by behind
}

func (c *simClock) at(e time.Duration) time.Duration {
	if e >= c.stepAt {
		e -= c.rollback
	}
	return e
}

// Now returns the current reading. It is safe for concurrent use.
func (c *simClock) Now() time.Time {
	off := c.at(c.pace.elapsed())
	t := int64(off / c.tick)
	// high only grows: raise it to t unless it is already at or above. A
	// failed CAS means another reading raised it; look again.
	for {
		h := c.high.Load()
		if t <= h || c.high.CompareAndSwap(h, t) {
			break
		}
	}
	return c.base.Add(off)
}

// behind reports whether the clock now reads a tick below the highest it
// has shown. It does not count as showing a reading.
func (c *simClock) behind() bool {
	return int64(c.at(c.pace.elapsed())/c.tick) < c.high.Load()
}

// laneResult is what one generator did under the load.
type laneResult struct {
	name         string
	served       int
	failed       int
	spare        int           // served while the clock was behind
	failedBehind int           // failed while the clock was behind
	longest      time.Duration // the longest single call
	dups         int           // IDs served more than once
	firstErr     error
	buckets      []rowCount // by when requests were due; the chart draws them
	rows         []rowCount // the timeline's rows, each bucketsPerRow buckets added up
	residues     [][]int    // for each of Config.Mods, the IDs served by id % N
}

// rowCount is what a lane did with the requests due in one stretch of the
// run: a chart bucket or a timeline row.
type rowCount struct {
	served, failed int
	behind         int           // requests due while the clock was behind (scheduledBehind)
	longest        time.Duration // the longest single call
}

// add counts o's requests in r too.
func (r *rowCount) add(o rowCount) {
	r.served += o.served
	r.failed += o.failed
	r.behind += o.behind
	r.longest = max(r.longest, o.longest)
}

// lane is one generator under load, with its own clock of the common
// schedule.
type lane struct {
	name  string
	next  func() (ringflake.ID, error)
	clock *simClock
	pace  pacer
	close func()
}

// simulate runs the load against ringflake and the strict generator, each
// with the same clock schedule, and returns their results in that order.
// In real time both run at once, each in its own goroutine, so a wait in
// one does not hold up the other.
func simulate(c Config) ([]laneResult, error) {
	base := time.Now().UTC().Truncate(time.Millisecond)
	start := time.Now()
	newClock := func() *simClock {
		var p pacer = realPacer{start: start}
		if c.virtual {
			p = &virtualPacer{}
		}
		return &simClock{base: base, stepAt: c.StepAt, rollback: c.Rollback, tick: time.Millisecond, pace: p}
	}
	rc, sc := newClock(), newClock()
	maxWait := c.MaxWait
	if maxWait == 0 {
		maxWait = -1 // never wait: the library's 0 is its default
	}
	rg, err := ringflake.New(context.Background(), ringflake.WithClock(rc.Now), ringflake.WithRingSize(c.Ring),
		ringflake.WithMaxWait(maxWait), ringflake.WithMachineID(1))
	if err != nil {
		return nil, err
	}
	sg, err := strict.New(ringflake.DefaultLayout(), 1, sc.Now, c.MaxWait)
	if err != nil {
		rg.Close()
		return nil, err
	}
	lanes := []lane{
		{name: "ringflake", next: rg.NextID, clock: rc, pace: rc.pace, close: func() { rg.Close() }},
		{name: "strict", next: sg.NextID, clock: sc, pace: sc.pace, close: func() {}},
	}
	results := make([]laneResult, len(lanes))
	if c.virtual {
		for i, l := range lanes {
			results[i] = c.drive(l)
		}
		return results, nil
	}
	var wg sync.WaitGroup
	for i, l := range lanes {
		wg.Go(func() { results[i] = c.drive(l) })
	}
	wg.Wait()
	return results, nil
}

// drive sends the load to one lane and counts what it did. In real time
// the load is open: a request goes out when it is due, whatever the
// requests before it are doing, from a pool of workers large enough for
// every request of MaxWait to wait at once, so a wait in one call does not
// delay the calls due after it (a single caller would push them past the
// step back, where they would look like ordinary requests). Virtual time
// runs the calls one after another, each at its due time.
func (c Config) drive(l lane) laneResult {
	defer l.close()
	n := c.Requests()
	if c.virtual {
		t := c.newTally(n)
		for i := range n {
			l.pace.waitUntil(c.due(i))
			c.call(l, i, t)
		}
		return c.merge(l.name, []*tally{t})
	}
	workers := int(min(max(1.5*c.Rate*(c.MaxWait+10*time.Millisecond).Seconds(), 16), 8192))
	jobs := make(chan int, workers)
	tallies := make([]*tally, workers)
	var wg sync.WaitGroup
	for w := range tallies {
		tallies[w] = c.newTally(n/workers + 1)
		wg.Go(func() {
			for i := range jobs {
				c.call(l, i, tallies[w])
			}
		})
	}
	for i := range n {
		l.pace.waitUntil(c.due(i))
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return c.merge(l.name, tallies)
}

// tally is one worker's count of the requests it sent.
type tally struct {
	r        laneResult
	ids      []ringflake.ID
	firstIdx int // the request whose error is r.firstErr
}

func (c Config) newTally(capacity int) *tally {
	return &tally{r: laneResult{buckets: make([]rowCount, c.buckets())}, ids: make([]ringflake.ID, 0, capacity)}
}

// call sends request i to l and counts it in t. An ID served while the
// clock was behind the latest time it had shown, which a strict generator
// refuses, is from spare space: the unused sequence of a recent tick.
func (c Config) call(l lane, i int, t *tally) {
	due := c.due(i)
	behind := l.clock.behind()
	t0 := time.Now()
	id, err := l.next()
	b := &t.r.buckets[c.bucket(due)]
	b.longest = max(b.longest, time.Since(t0))
	if c.scheduledBehind(due) {
		b.behind++
	}
	if err != nil {
		t.r.failed++
		b.failed++
		if behind {
			t.r.failedBehind++
		}
		if t.r.firstErr == nil || i < t.firstIdx {
			t.r.firstErr, t.firstIdx = err, i
		}
		return
	}
	t.r.served++
	b.served++
	if behind {
		t.r.spare++
	}
	t.ids = append(t.ids, id)
}

// merge adds up the workers' tallies and checks every ID for duplicates.
// The timeline's rows and the longest call come from the buckets.
func (c Config) merge(name string, ts []*tally) laneResult {
	r := laneResult{name: name, buckets: make([]rowCount, c.buckets()), rows: make([]rowCount, c.rows)}
	firstIdx := 0
	var ids []ringflake.ID
	for _, t := range ts {
		r.served += t.r.served
		r.failed += t.r.failed
		r.spare += t.r.spare
		r.failedBehind += t.r.failedBehind
		if t.r.firstErr != nil && (r.firstErr == nil || t.firstIdx < firstIdx) {
			r.firstErr, firstIdx = t.r.firstErr, t.firstIdx
		}
		for k, b := range t.r.buckets {
			r.buckets[k].add(b)
		}
		if ids == nil {
			ids = t.ids
		} else {
			ids = append(ids, t.ids...)
		}
	}
	for k, b := range r.buckets {
		r.rows[k/bucketsPerRow].add(b)
		r.longest = max(r.longest, b.longest)
	}
	r.residues = residues(ids, c.Mods)
	r.dups = duplicates(ids)
	return r
}

// scheduledBehind reports whether the clock reads behind the latest time
// it has shown at d into the run, by the schedule alone: from the step on,
// until it reads the tick it showed just before the step again. Timeline
// rows are marked by it, so that the marks do not depend on when calls
// happened to run.
func (c Config) scheduledBehind(d time.Duration) bool {
	if c.Rollback <= 0 || d < c.StepAt {
		return false
	}
	return (d-c.Rollback)/time.Millisecond < (c.StepAt-1)/time.Millisecond
}

// duplicates counts IDs that equal an earlier one; it sorts ids.
func duplicates(ids []ringflake.ID) int {
	slices.Sort(ids)
	n := 0
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			n++
		}
	}
	return n
}
