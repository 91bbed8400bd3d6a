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
		g := uncapped(b)
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
	}
}

// BenchmarkGather is the cost of one scrape of a registry holding one
// Collector, before encoding: Stats reads every ring slot.
func BenchmarkGather(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(ringflakeprom.NewCollector(uncapped(b)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// uncapped returns a generator whose layout has 22 bits of sequence and no
// machine bits: 4M IDs a millisecond, so that NextID never waits for a tick
// and ns/op is the cost of a call, not the default layout's ceiling of
// 244 ns an ID.
func uncapped(b *testing.B) *ringflake.Generator {
	l := ringflake.DefaultLayout()
	l.MachineBits, l.SequenceBits = 0, 22
	g, err := ringflake.New(b.Context(), ringflake.WithLayout(l), ringflake.WithMachineID(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	return g
}
