package ringflake_test

import (
	"fmt"
	"testing"

	"github.com/ringflake/ringflake"
)

// BenchmarkNextN compares a batch from NextN with the same number of
// NextID calls, in ns per ID. With seq=22 nothing waits, so it measures
// the call; with the default seq=12 both are capped at the ceiling.
func BenchmarkNextN(b *testing.B) {
	for _, seqBits := range []int{22, 12} {
		for _, batch := range []int{16, 256} {
			b.Run(fmt.Sprintf("seq=%d/batch=%d/NextN", seqBits, batch), func(b *testing.B) {
				g := newRingflake(b, seqBits).(*ringflake.Generator)
				dst := make([]ringflake.ID, batch)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := g.NextN(dst); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/ID")
			})
			b.Run(fmt.Sprintf("seq=%d/batch=%d/NextID-loop", seqBits, batch), func(b *testing.B) {
				g := newRingflake(b, seqBits)
				b.ReportAllocs()
				for b.Loop() {
					for range batch {
						if _, err := g.NextID(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/ID")
			})
		}
	}
}
