package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// satResult is one saturation run: G goroutines issuing as fast as they can
// for one window.
type satResult struct {
	ids     int64         // IDs whose call returned inside the window
	fails   int64         // calls that returned an error
	elapsed time.Duration // the window, from the start signal to the stop flag
	cpu     time.Duration // user+system CPU of the whole process over the run
	allocs  uint64        // heap allocations of the whole process over the run
}

func (r satResult) rate() float64 { return float64(r.ids) / r.elapsed.Seconds() }

// cpuPerM is CPU seconds per million IDs.
func (r satResult) cpuPerM() float64 {
	if r.ids == 0 {
		return 0
	}
	return r.cpu.Seconds() / (float64(r.ids) / 1e6)
}

// allocsPerID is heap allocations per ID counted; the harness itself
// allocates nothing while the workers run.
func (r satResult) allocsPerID() float64 {
	if r.ids == 0 {
		return 0
	}
	return float64(r.allocs) / float64(r.ids)
}

// cores is the CPU used per second of window.
func (r satResult) cores() float64 { return r.cpu.Seconds() / r.elapsed.Seconds() }

// worker is one goroutine's tally, padded so that workers never share a
// cache line.
type worker struct {
	ids, fails int64
	unrecorded int64
	_          [40]byte
}

// stopEarly is how long before a boundary a window closes.
const stopEarly = int64(2 * time.Microsecond)

// stopFlag is a flag on a cache line of its own: read by every worker on
// every call, written once.
type stopFlag struct {
	_ [64]byte
	atomic.Bool
	_ [63]byte
}

// saturate runs G goroutines against p for window and records every ID in
// rec. The window opens on a 10 ms wall-clock boundary, so that it starts
// on a tick of every peer, and closes on the first tick boundary at least
// window later; a call that returns after the close is recorded for the
// duplicate check but not counted.
// The result's CPU time covers the workers from the start signal until the
// last one has returned.
func saturate(p *peer, g int, window time.Duration, rec *recorder) (satResult, int64) {
	rec.reset()
	runtime.GC()
	var stop stopFlag
	start := make(chan struct{})
	ws := make([]worker, g)
	var ready, done sync.WaitGroup
	ready.Add(g)
	done.Add(g)
	for i := range ws {
		go func(w *worker) {
			defer done.Done()
			t := tape{r: rec}
			// The runtime gives a goroutine its sleep timer at its first
			// time.Sleep, one allocation per goroutine, not per ID;
			// workers are new goroutines each run, so sleep once here.
			time.Sleep(time.Nanosecond)
			ready.Done()
			<-start
			for !stop.Load() {
				id, ok := p.next()
				if !ok {
					w.fails++
					continue
				}
				t.add(id)
				if stop.Load() {
					break
				}
				w.ids++
			}
			t.close()
			w.unrecorded = t.unrecorded
		}(&ws[i])
	}
	ready.Wait()
	alignedWait(10*time.Millisecond, mono()+int64(2*time.Millisecond))
	m0 := mallocs()
	cpu0 := cpuTime()
	t0 := mono()
	close(start)
	// Stop just before the boundary: a worker woken at the boundary would
	// otherwise race the flag and count IDs of a tick past the window.
	spinUntil(alignedBoundary(p.tick, t0+int64(window)) - stopEarly)
	stop.Store(true)
	t1 := mono()
	done.Wait()
	cpu1 := cpuTime()
	m1 := mallocs()

	r := satResult{elapsed: time.Duration(t1 - t0), cpu: cpu1 - cpu0, allocs: m1 - m0}
	var unrecorded int64
	for i := range ws {
		r.ids += ws[i].ids
		r.fails += ws[i].fails
		unrecorded += ws[i].unrecorded
	}
	return r, unrecorded
}
