package ringflakeprom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// An Option configures a [Collector] made by [NewCollector].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	labels prometheus.Labels
	now    func() time.Time
}

// WithConstLabels adds labels to every metric of the Collector, such as
// {"generator": "orders"} to tell two generators of one process apart. nil,
// the default, adds none.
func WithConstLabels(l prometheus.Labels) Option {
	return optionFunc(func(c *config) { c.labels = l })
}

// WithClock sets the clock against which the lease's marks are measured.
// Give the generator's own clock if it was made with [ringflake.WithClock];
// nil, the default, is time.Now. It is called once per Collect.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) { c.now = now })
}
