package ringflake

// Internals that the external tests check.
var (
	LayoutValidate = Layout.validate
	LayoutMaxTicks = Layout.maxTicks
)

func LayoutMaxSequence(l Layout) int64 { return maxOf(l.SequenceBits, 62) }
