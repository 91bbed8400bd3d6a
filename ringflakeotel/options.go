package ringflakeotel

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// An Option configures [Register].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	attrs []attribute.KeyValue
	now   func() time.Time
}

// WithAttributes adds attributes to every measurement, such as
// attribute.String("generator", "orders") to tell two generators of one
// process apart. None by default.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) { c.attrs = append(c.attrs, attrs...) })
}

// WithClock sets the clock against which the lease's marks are measured.
// Give the generator's own clock if it was made with [ringflake.WithClock];
// nil, the default, is time.Now. It is called once per collection.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) { c.now = now })
}
