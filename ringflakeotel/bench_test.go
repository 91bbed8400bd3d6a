package ringflakeotel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

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
		g, err := ringflake.New(ringflake.WithMachineID(1))
		if err != nil {
			b.Fatal(err)
		}
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
		_ = g.Close()
	}
}
