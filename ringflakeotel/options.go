package ringflakeotel

import "go.opentelemetry.io/otel/attribute"

// An Option configures [Register].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	attrs []attribute.KeyValue
}

// WithAttributes adds attributes to every measurement, such as
// attribute.String("generator", "orders") to tell two generators of one
// process apart. None by default.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) { c.attrs = append(c.attrs, attrs...) })
}
