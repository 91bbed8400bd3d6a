package main

import (
	"runtime"
	"slices"
	"time"
)

// singleCost measures one goroutine's cost per call below the ceiling: at
// the start of a fresh tick it times a batch of a quarter of a tick's IDs,
// back to back, then waits for the next tick untimed. A plain loop would
// measure the wait for the next tick instead, since every peer issues
// faster than its ceiling. It returns the ns/op of each batch.
func singleCost(p *peer, batches int) []float64 {
	n := max(p.perTick/4, 1)
	out := make([]float64, 0, batches)
	at := mono()
	var acc int64
	for range batches {
		at = alignedWait(p.tick, at+1)
		s := mono()
		for range n {
			id, _ := p.next()
			acc ^= id
		}
		out = append(out, float64(mono()-s)/float64(n))
	}
	runtime.KeepAlive(acc)
	return out
}

// burstCalls is the length of a burst: most of a default 4096-ID tick.
const burstCalls = 4000

// burstMargin keeps a burst inside one tick of a peer with fewer IDs per
// tick: it issues at most perTick-burstMargin, so that no burst waits for
// the next tick even if the peer's tick starts a little after the harness's.
const burstMargin = 96

// burstLen is how many calls a burst makes on p.
func burstLen(p *peer) int {
	return max(min(burstCalls, p.perTick-burstMargin), 1)
}

// burstCost measures one goroutine's cost per call as a burst of requests
// sees it: right after a tick boundary it times burstLen(p) calls back to
// back, then waits for the next boundary untimed. It differs from
// singleCost only in the burst's length, which covers most of the tick
// rather than its first quarter. It returns the ns/op of each burst.
func burstCost(p *peer, bursts int) []float64 {
	n := burstLen(p)
	out := make([]float64, 0, bursts)
	at := mono()
	var acc int64
	for range bursts {
		at = alignedWait(p.tick, at+1)
		s := mono()
		for range n {
			id, _ := p.next()
			acc ^= id
		}
		out = append(out, float64(mono()-s)/float64(n))
	}
	runtime.KeepAlive(acc)
	return out
}

// clockCost times a clock read the way singleCost times a peer, as a
// reference for what one ID must cost at least.
func clockCost(read func() int64, batches int) []float64 {
	const n = 1024
	out := make([]float64, 0, batches)
	var acc int64
	for range batches {
		s := mono()
		for range n {
			acc ^= read()
		}
		out = append(out, float64(mono()-s)/n)
	}
	runtime.KeepAlive(acc)
	return out
}

// allocsPerID counts heap allocations per call over two and a half ticks'
// worth of IDs from one goroutine, so that waits for the next tick are
// included. It reads the allocator's counters itself rather than use
// testing.AllocsPerRun, which rounds down to a whole number and so would
// hide one allocation per tick.
func allocsPerID(p *peer) float64 {
	n := p.perTick*5/2 + 1
	p.next() // warm up
	before := mallocs()
	for range n {
		p.next()
	}
	return float64(mallocs()-before) / float64(n)
}

// mallocs returns the number of heap objects allocated so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// References for singleCost's table.
var (
	readWall = func() int64 { return time.Now().UnixNano() }
	readMono = func() int64 { return int64(time.Since(base)) }
)
