package ringflake

import "time"

// Internals that the external tests check.
var (
	LayoutValidate = Layout.validate
	LayoutMaxTicks = Layout.maxTicks
	ModBuckets     = modBuckets
)

func LayoutMaxSequence(l Layout) int64 { return maxOf(l.SequenceBits, 62) }

// FreshStart returns the sequence at which the tick of instant at would
// start fresh now for a NextID on g: how many sequences a tick that starts
// now passes over, so that a test can expect the exact number of IDs left.
func FreshStart(g *Generator, at time.Time) int {
	ticks, _ := g.layout.ticksAt(at.Sub(g.layout.Epoch), g.maxTicks, g.recip)
	return int(g.ring.start(ticks, uint64(g.state.Load().part), 1))
}

// SoloNextID is NextID with each caller waiting for a tick on its own,
// the design tickWait's shared rounds replace, so that BenchmarkOverload
// can compare them; it lives here so that the production path carries no
// switch for it. It follows NextID's path, the fast path, claim, plan and
// budget, as pause does, but sleeps to the tick with sleepUntil instead of
// joining a round. It leaves out what the benchmark's steady wall clock
// and fixed machine ID never need: the second look at a step back, the
// fresh reading before a wait longer than a tick, and the stats; any wait
// but one for a tick is a plain sleep.
func SoloNextID(g *Generator) (ID, error) {
	if id, ok := g.fast(); ok {
		return id, nil
	}
	var a attempt
	var id [1]ID
	for {
		if err := g.look(&a); err != nil {
			return 0, err
		}
		a.st = g.state.Load()
		c, cs := g.claim(&a, 1)
		switch cs {
		case claimed:
			c.put(g.layout, 0, id[:])
			return id[0], nil
		case stale:
			continue
		}
		a.cs, a.t = cs, c.tick
		need, at, fail := g.plan(&a)
		sleepFor, err := a.budget(g.maxWait, need, fail, false)
		if err != nil {
			err.Clock = a.r.time()
			return 0, err
		}
		if cs != exhausted {
			time.Sleep(sleepFor)
			continue
		}
		a.stalled = !g.sleepUntil(at, sleepFor, !a.stalled)
	}
}
