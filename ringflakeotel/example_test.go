package ringflakeotel_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeotel"
)

func ExampleRegister() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(7), ringflake.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer g.Close()

	// A real program gives the provider a periodic reader and an exporter;
	// a manual reader shows what they would see.
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := ringflakeotel.Register(g, provider,
		ringflakeotel.WithAttributes(attribute.String("generator", "orders")))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	for range 3 {
		_, _ = g.NextID()
	}
	now = now.Add(-20 * time.Millisecond) // an NTP step back
	_, _ = g.NextID()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			if m.Name == "ringflake.ids.issued" {
				fmt.Println(m.Name, d.DataPoints[0].Value, m.Unit)
			}
		case metricdata.Gauge[float64]:
			if m.Name == "ringflake.clock.largest_step_back" {
				fmt.Println(m.Name, d.DataPoints[0].Value, m.Unit)
			}
		}
	}
	// Output:
	// ringflake.ids.issued 4 {id}
	// ringflake.clock.largest_step_back 0.02 s
}
