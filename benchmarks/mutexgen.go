package main

import (
	"sync"
	"time"
)

const mutexSeqBits = 12

// mutexGen is the obvious Snowflake: one mutex around a wall-clock read
// and a counter, 41/10/12 bits with 1 ms ticks. It never issues a time
// behind the last one (a step back keeps using the last millisecond), and
// when a millisecond is used up it spins for the next one with the lock
// held, as most mutex designs do.
type mutexGen struct {
	mu      sync.Mutex // protects last and seq
	last    int64      // milliseconds since epoch of the last ID
	seq     int64      // sequence of the last ID
	machine int64      // written once by newMutexGen
	epochMs int64      // written once by newMutexGen
}

func newMutexGen(machine int64) *mutexGen {
	return &mutexGen{machine: machine, epochMs: epoch.UnixMilli(), last: -1}
}

func (g *mutexGen) next() int64 {
	const maxSeq = 1<<mutexSeqBits - 1
	g.mu.Lock()
	now := max(time.Now().UnixMilli()-g.epochMs, g.last)
	if now == g.last {
		g.seq++
		if g.seq > maxSeq {
			for now <= g.last {
				now = time.Now().UnixMilli() - g.epochMs
			}
			g.seq = 0
		}
	} else {
		g.seq = 0
	}
	g.last = now
	id := now<<22 | g.machine<<mutexSeqBits | g.seq
	g.mu.Unlock()
	return id
}
