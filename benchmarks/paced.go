package main

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// maxLag is how far behind its schedule a paced worker may fall before it
// drops deadlines: one millisecond, a tick of most peers.
const maxLag = int64(time.Millisecond)

// pacedResult is one paced run: latencies of every call, sorted.
type pacedResult struct {
	lat     []uint32 // nanoseconds per call, sorted
	ids     int64
	fails   int64
	elapsed time.Duration
	wanted  int64   // IDs the schedule asked for
	lag     []int64 // per worker, how far behind its schedule it fell at worst (ns)
}

func (r pacedResult) rate() float64 { return float64(r.ids) / r.elapsed.Seconds() }

// maxLag is how far the furthest-behind worker fell behind its schedule.
func (r pacedResult) maxLag() float64 { return float64(slices.Max(r.lag)) }

// quantile returns the q-th quantile of the sorted latencies.
func (r pacedResult) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := min(int(q*float64(len(r.lat))), len(r.lat)-1)
	return time.Duration(r.lat[i])
}

// pacedBufs are the per-worker buffers of paced runs, allocated once.
type pacedBufs struct {
	lat [][]uint32
	ids [][]int64
}

func newPacedBufs(workers, perWorker int) *pacedBufs {
	b := &pacedBufs{lat: make([][]uint32, workers), ids: make([][]int64, workers)}
	for i := range workers {
		b.lat[i] = make([]uint32, perWorker)
		b.ids[i] = make([]int64, perWorker)
		for j := range perWorker { // touch every page before any run
			b.lat[i][j], b.ids[i][j] = 1, empty
		}
	}
	return b
}

// pace issues rate IDs per second for dur, spread over the workers. Each
// worker paces its share against absolute deadlines (start + k×interval,
// the workers' schedules staggered evenly): when it is ahead it sleeps
// until its next deadline, when it is behind it issues back to back until
// it has caught up, so a late wake-up does not lower the rate. Deadlines
// more than maxLag overdue are dropped instead, so that a stalled worker
// (the machine is busy, or the peer is slower than the rate) does not come
// back with a burst far above the rate. Only the NextID call is timed. The
// run reports the rate it got.
func pace(p *peer, rate float64, workers int, dur time.Duration, bufs *pacedBufs) (pacedResult, []int64) {
	runtime.GC()
	interval := time.Duration(float64(workers) * float64(time.Second) / rate)
	quota := min(int(dur/interval), len(bufs.lat[0]))
	counts := make([]int, workers)
	fails := make([]int64, workers)
	lags := make([]int64, workers)
	var wg sync.WaitGroup
	t0 := mono() + int64(time.Millisecond)
	end := t0 + int64(dur)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, ids := bufs.lat[w], bufs.ids[w]
			next := t0 + int64(w)*int64(interval)/int64(workers)
			n := 0
			for k := 0; k < quota; k++ {
				now := mono()
				if now > end {
					break
				}
				if now < next {
					time.Sleep(time.Duration(next - now))
				} else if late := now - next; late > maxLag {
					// Drop the deadlines more than maxLag overdue.
					skip := (late-maxLag)/int64(interval) + 1
					next += skip * int64(interval)
					k += int(skip) - 1
					lags[w] = max(lags[w], late)
					continue
				} else {
					lags[w] = max(lags[w], late)
				}
				s := mono()
				id, ok := p.next()
				lat[n] = uint32(min(mono()-s, 1<<32-1))
				if ok {
					ids[n] = id
					n++
				} else {
					fails[w]++
				}
				next += int64(interval)
			}
			counts[w] = n
		}()
	}
	wg.Wait()
	t1 := mono()

	r := pacedResult{elapsed: time.Duration(t1 - t0), wanted: int64(quota) * int64(workers), lag: lags}
	var all []int64
	for w := range workers {
		r.ids += int64(counts[w])
		r.fails += fails[w]
		r.lat = append(r.lat, bufs.lat[w][:counts[w]]...)
		all = append(all, bufs.ids[w][:counts[w]]...)
	}
	slices.Sort(r.lat)
	return r, all
}
