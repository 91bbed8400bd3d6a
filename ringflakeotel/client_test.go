package ringflakeotel_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeclient"
	"github.com/ringflake/ringflake/ringflakeotel"
)

// A client's instruments give its counters, its waits by bound and each
// server's state, with the attributes of WithAttributes. The one server
// refuses connections: the client's first call waits for its first
// answer, then fails.
func TestRegisterClient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := ringflakeclient.New(context.Background(), []string{down}, ringflakeclient.WithLayout(ringflake.DefaultLayout()))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.NextID(ctx)
	var e *ringflakeclient.Error
	require.True(t, errors.As(err, &e), "NextID() = %v; want an *Error", err)

	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	reg, err := ringflakeotel.RegisterClient(c, mp, ringflakeotel.WithAttributes(attribute.String("client", "orders")))
	require.NoError(t, err)
	defer func() { assert.NoError(t, reg.Unregister()) }()
	samples, kinds := collect(t, r)
	w := c.Stats().Waits
	for name, want := range map[string]float64{
		`ringflake.client.ids.served{client="orders"}`:                                         0,
		`ringflake.client.ids.buffered{client="orders"}`:                                       0,
		`ringflake.client.waits{client="orders",le="+Inf"}`:                                    1,
		`ringflake.client.waits{client="orders",le="10"}`:                                      float64(w.Counts[len(w.Counts)-1]),
		`ringflake.client.wait.longest{client="orders"}`:                                       w.Longest.Seconds(),
		`ringflake.client.server.state{client="orders",state="failing",target="` + down + `"}`: 1,
		`ringflake.client.server.state{client="orders",state="ready",target="` + down + `"}`:   0,
		`ringflake.client.server.ids{client="orders",target="` + down + `"}`:                   0,
	} {
		got, ok := samples[name]
		if assert.True(t, ok, "no %s among %v", name, samples) {
			assert.Equal(t, want, got, name)
		}
	}
	assert.Equal(t, "Int64 counter {call}", kinds["ringflake.client.waits"])
	assert.Equal(t, "Int64 gauge ", kinds["ringflake.client.server.state"])
}
