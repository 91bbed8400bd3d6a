package ringflakeprom_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeprom"
)

// BenchmarkNextID compares NextID on a generator without a collector and
// on one with a registered collector that nobody scrapes: the collector
// touches the generator only in Collect, so the two should not differ.
func BenchmarkNextID(b *testing.B) {
	for _, bc := range []struct {
		name      string
		collector bool
	}{{"bare", false}, {"collector", true}} {
		g, err := ringflake.New(ringflake.WithMachineID(1))
		if err != nil {
			b.Fatal(err)
		}
		if bc.collector {
			prometheus.NewRegistry().MustRegister(ringflakeprom.NewCollector(g))
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.NextID(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := g.NextID(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		_ = g.Close()
	}
}
