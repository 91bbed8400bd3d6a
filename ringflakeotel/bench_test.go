package ringflakeotel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeotel"
)

// BenchmarkNextID compares NextID on a generator without instruments and
// on one registered with a provider whose reader never collects: the
// callback touches the generator only when a reader collects, so the two
// should not differ.
func BenchmarkNextID(b *testing.B) {
	for _, bc := range []struct {
		name       string
		registered bool
	}{{"bare", false}, {"registered", true}} {
		g := uncapped(b)
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		if bc.registered {
			if _, err := ringflakeotel.Register(g, mp); err != nil {
				b.Fatal(err)
			}
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
		_ = mp.Shutdown(context.Background())
	}
}

// BenchmarkCollect is the cost of one collection by a manual reader of a
// provider with one generator registered: Stats reads every ring slot.
func BenchmarkCollect(b *testing.B) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	if _, err := ringflakeotel.Register(uncapped(b), mp); err != nil {
		b.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Collect(context.Background(), &rm); err != nil {
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
