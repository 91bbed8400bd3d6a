package ringflakeprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringflake/ringflake/ringflakeclient"
)

// clientStates are the values of ringflake_client_server_state's state
// label, in the order of ringflakeclient's State.
var clientStates = [...]ringflakeclient.State{
	ringflakeclient.Connecting, ringflakeclient.Ready, ringflakeclient.Acquiring, ringflakeclient.Refused, ringflakeclient.Failing,
}

// clientCollector is the Collector of one ringflakeclient.Client.
type clientCollector struct {
	c *ringflakeclient.Client // written once by NewClientCollector

	served, fetched, dropped, failovers, buffered, waits, state, blocks, ids *prometheus.Desc
}

// NewClientCollector returns a [prometheus.Collector] of c's metrics, read
// from [ringflakeclient.Client.Stats] when it is collected; see the
// package doc for the list. Two clients in one registry need distinct
// constant labels ([WithConstLabels]).
func NewClientCollector(c *ringflakeclient.Client, opts ...Option) prometheus.Collector {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("ringflake_client_"+name, help, labels, cfg.labels)
	}
	return &clientCollector{
		c:         c,
		served:    desc("ids_served_total", "IDs NextID returned."),
		fetched:   desc("ids_fetched_total", "IDs received from the servers."),
		dropped:   desc("ids_dropped_total", "IDs dropped as older than the maximum age."),
		failovers: desc("failovers_total", "Times a server that was ready failed a call, or said it was not ready."),
		buffered:  desc("ids_buffered", "IDs in the buffer now."),
		waits:     desc("wait_seconds", "How long the NextID calls that found the buffer empty waited."),
		state:     desc("server_state", "1 for each server's state now (connecting, ready, acquiring, refused, failing), 0 for the others.", "target", "state"),
		blocks:    desc("server_blocks_total", "Blocks of IDs each server sent.", "target"),
		ids:       desc("server_ids_total", "IDs each server sent.", "target"),
	}
}

func (k *clientCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{k.served, k.fetched, k.dropped, k.failovers, k.buffered, k.waits, k.state, k.blocks, k.ids} {
		ch <- d
	}
}

func (k *clientCollector) Collect(ch chan<- prometheus.Metric) {
	s := k.c.Stats()
	counter := func(d *prometheus.Desc, v uint64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label...)
	}
	counter(k.served, s.Served)
	counter(k.fetched, s.Fetched)
	counter(k.dropped, s.Dropped)
	counter(k.failovers, s.Failovers)
	ch <- prometheus.MustNewConstMetric(k.buffered, prometheus.GaugeValue, float64(s.Buffered))
	buckets := make(map[float64]uint64, len(s.Waits.Bounds))
	for i, b := range s.Waits.Bounds {
		buckets[b.Seconds()] = s.Waits.Counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(k.waits, s.Waits.Count, s.Waits.Sum.Seconds(), buckets)
	for _, v := range s.Servers {
		for _, st := range clientStates {
			on := 0.0
			if v.State == st {
				on = 1
			}
			ch <- prometheus.MustNewConstMetric(k.state, prometheus.GaugeValue, on, v.Target, st.String())
		}
		counter(k.blocks, v.Blocks, v.Target)
		counter(k.ids, v.IDs, v.Target)
	}
}
