package ringflake

// Internals that the external tests check.
var (
	LayoutValidate = Layout.validate
	LayoutMaxTicks = Layout.maxTicks
)

func LayoutMaxSequence(l Layout) int64 { return maxOf(l.SequenceBits, 62) }

// SoloWaits makes each of g's callers wait for a tick on its own, the
// design the shared rounds replace, so that benchmarks can compare them.
func SoloWaits(g *Generator) { g.ticks.solo = true }
