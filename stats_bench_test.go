package ringflake

import "testing"

// BenchmarkObserve is all that counting costs the path that issues in the
// common case: one load of the latest tick and a compare. Issued is derived
// from the ring when Stats is called; the other counters move only on step
// backs, waits and errors.
func BenchmarkObserve(b *testing.B) {
	g, err := New(WithMachineID(1))
	if err != nil {
		b.Fatal(err)
	}
	g.observe(1000)
	b.ReportAllocs()
	for b.Loop() {
		g.observe(1000)
	}
}

// BenchmarkStats is the cost of a snapshot with the default 4096-slot ring.
func BenchmarkStats(b *testing.B) {
	g, err := New(WithMachineID(1))
	if err != nil {
		b.Fatal(err)
	}
	for range 10000 {
		if _, err := g.NextID(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Stats()
	}
}
