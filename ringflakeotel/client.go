package ringflakeotel

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ringflake/ringflake/ringflakeclient"
)

// clientStates are the values of ringflake.client.server.state's state
// attribute, in the order of ringflakeclient's State.
var clientStates = [...]ringflakeclient.State{
	ringflakeclient.Connecting, ringflakeclient.Ready, ringflakeclient.Acquiring, ringflakeclient.Refused, ringflakeclient.Failing,
}

// RegisterClient is [Register] for a [ringflakeclient.Client]: it creates
// the client's instruments with a meter of mp (nil: the global provider)
// and one callback that reads [ringflakeclient.Client.Stats] when a reader
// collects; see the package doc for the list. Unregister the returned
// Registration to stop observing c.
func RegisterClient(c *ringflakeclient.Client, mp metric.MeterProvider, opts ...Option) (metric.Registration, error) {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	o := &clientObserver{c: c, attrs: cfg.attrs}
	if err := o.create(m); err != nil {
		return nil, fmt.Errorf("ringflakeotel: creating instruments: %w", err)
	}
	reg, err := m.RegisterCallback(o.observe, o.served, o.fetched, o.dropped, o.failovers, o.buffered,
		o.waits, o.waitTime, o.longest, o.state, o.blocks, o.ids)
	if err != nil {
		return nil, fmt.Errorf("ringflakeotel: registering the callback: %w", err)
	}
	return reg, nil
}

// clientObserver observes one client. Its fields are written by
// RegisterClient before the callback is registered, and only read after.
type clientObserver struct {
	c     *ringflakeclient.Client
	attrs []attribute.KeyValue

	served, fetched, dropped, failovers, buffered, waits, state, blocks, ids metric.Int64Observable
	waitTime, longest                                                        metric.Float64Observable
}

func (o *clientObserver) create(m metric.Meter) error {
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	counter := func(name, unit, desc string) metric.Int64Observable {
		x, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		keep(err)
		return x
	}
	gauge := func(name, unit, desc string) metric.Int64Observable {
		x, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		keep(err)
		return x
	}
	o.served = counter("ringflake.client.ids.served", "{id}", "IDs NextID returned.")
	o.fetched = counter("ringflake.client.ids.fetched", "{id}", "IDs received from the servers.")
	o.dropped = counter("ringflake.client.ids.dropped", "{id}", "IDs dropped as older than the maximum age.")
	o.failovers = counter("ringflake.client.failovers", "{failover}", "Times a server that was ready failed a call, or said it was not ready.")
	o.buffered = gauge("ringflake.client.ids.buffered", "{id}", "IDs in the buffer now.")
	o.waits = counter("ringflake.client.waits", "{call}",
		"NextID calls that found the buffer empty and waited at most le seconds (le=+Inf: all of them): a cumulative histogram.")
	waitTime, err := m.Float64ObservableCounter("ringflake.client.wait.time", metric.WithUnit("s"), metric.WithDescription("Time spent by the calls that waited."))
	keep(err)
	o.waitTime = waitTime
	longest, err := m.Float64ObservableGauge("ringflake.client.wait.longest", metric.WithUnit("s"), metric.WithDescription("The longest that one call waited."))
	keep(err)
	o.longest = longest
	o.state = gauge("ringflake.client.server.state", "", "1 for each server's state now (connecting, ready, acquiring, refused, failing), 0 for the others.")
	o.blocks = counter("ringflake.client.server.blocks", "{block}", "Blocks of IDs each server sent.")
	o.ids = counter("ringflake.client.server.ids", "{id}", "IDs each server sent.")
	return errors.Join(errs...)
}

// with is the observation's attributes: WithAttributes' and kv.
func (o *clientObserver) with(kv ...attribute.KeyValue) metric.ObserveOption {
	return metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue(nil), o.attrs...), kv...)...))
}

func (o *clientObserver) observe(_ context.Context, ob metric.Observer) error {
	s := o.c.Stats()
	base := o.with()
	ob.ObserveInt64(o.served, count(s.Served), base)
	ob.ObserveInt64(o.fetched, count(s.Fetched), base)
	ob.ObserveInt64(o.dropped, count(s.Dropped), base)
	ob.ObserveInt64(o.failovers, count(s.Failovers), base)
	ob.ObserveInt64(o.buffered, int64(s.Buffered), base)
	for i, b := range s.Waits.Bounds {
		ob.ObserveInt64(o.waits, count(s.Waits.Counts[i]), o.with(attribute.String("le", strconv.FormatFloat(b.Seconds(), 'g', -1, 64))))
	}
	ob.ObserveInt64(o.waits, count(s.Waits.Count), o.with(attribute.String("le", "+Inf")))
	ob.ObserveFloat64(o.waitTime, s.Waits.Sum.Seconds(), base)
	ob.ObserveFloat64(o.longest, s.Waits.Longest.Seconds(), base)
	for _, v := range s.Servers {
		target := attribute.String("target", v.Target)
		for _, st := range clientStates {
			on := int64(0)
			if v.State == st {
				on = 1
			}
			ob.ObserveInt64(o.state, on, o.with(target, attribute.String("state", st.String())))
		}
		ob.ObserveInt64(o.blocks, count(v.Blocks), o.with(target))
		ob.ObserveInt64(o.ids, count(v.IDs), o.with(target))
	}
	return nil
}
