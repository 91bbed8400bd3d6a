package ringflakeprom

import "github.com/prometheus/client_golang/prometheus"

// An Option configures a [Collector] made by [NewCollector].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	labels prometheus.Labels
}

// WithConstLabels adds labels to every metric of the Collector, such as
// {"generator": "orders"} to tell two generators of one process apart. nil,
// the default, adds none.
func WithConstLabels(l prometheus.Labels) Option {
	return optionFunc(func(c *config) { c.labels = l })
}
