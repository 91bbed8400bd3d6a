package ringflakeprom_test

import (
	"context"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeprom"
)

func ExampleNewCollector() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(7), ringflake.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer g.Close()

	// A real program registers with prometheus.DefaultRegisterer (or its
	// own registry) and serves it with promhttp.
	reg := prometheus.NewRegistry()
	reg.MustRegister(ringflakeprom.NewCollector(g,
		ringflakeprom.WithConstLabels(prometheus.Labels{"generator": "orders"})))

	for range 3 {
		_, _ = g.NextID()
	}
	now = now.Add(-20 * time.Millisecond) // an NTP step back
	_, _ = g.NextID()

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "ringflake_ids_issued_total", "ringflake_clock_largest_step_back_seconds":
			_, _ = expfmt.MetricFamilyToText(os.Stdout, f)
		}
	}
	// Output:
	// # HELP ringflake_clock_largest_step_back_seconds The furthest the clock was seen behind the latest time it had shown, in whole ticks.
	// # TYPE ringflake_clock_largest_step_back_seconds gauge
	// ringflake_clock_largest_step_back_seconds{generator="orders"} 0.02
	// # HELP ringflake_ids_issued_total IDs issued.
	// # TYPE ringflake_ids_issued_total counter
	// ringflake_ids_issued_total{generator="orders"} 4
}
