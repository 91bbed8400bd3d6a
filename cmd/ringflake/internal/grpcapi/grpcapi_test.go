package grpcapi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/serve"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// listen serves svc's gRPC API on a free loopback port, and returns a
// connection to it; both end with the test.
func listen(t *testing.T, svc *serve.Service) *grpc.ClientConn {
	t.Helper()
	s, addr, err := Listen("127.0.0.1:0", svc, nil)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// checkAll returns the status Check gives each of names.
func checkAll(t *testing.T, h healthpb.HealthClient, names ...string) map[string]healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	got := map[string]healthpb.HealthCheckResponse_ServingStatus{}
	for _, name := range names {
		r, err := h.Check(t.Context(), &healthpb.HealthCheckRequest{Service: name})
		require.NoError(t, err, "Check(%q)", name)
		got[name] = r.GetStatus()
	}
	return got
}

// Liveness ("" and "liveness") is SERVING while the server waits for its
// machine ID, when readiness ("readiness" and the IDs service's name) is
// NOT_SERVING, as Check and as Watch tell it; once the generator is ready
// every name is SERVING. An unknown name is NOT_FOUND, and the not-ready
// error is one line, whatever the reason's lines.
func TestHealthLivenessAndReadiness(t *testing.T) {
	t.Parallel()
	svc := serve.New(nil, serve.Config{Starting: func() (string, int64, time.Duration) {
		return "acquiring the machine ID from the lease redis://x: ERR first line\n  second line\n", -1, 0
	}})
	conn := listen(t, svc)
	h := healthpb.NewHealthClient(conn)
	const (
		up   = healthpb.HealthCheckResponse_SERVING
		down = healthpb.HealthCheckResponse_NOT_SERVING
	)
	names := []string{"", Liveness, Readiness, "ringflake.v1.IDs"}
	assert.Equal(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": up, Liveness: up, Readiness: down, "ringflake.v1.IDs": down},
		checkAll(t, h, names...), "while the machine ID is acquired")
	_, err := h.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "ready"})
	assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)

	_, err = pb.NewIDsClient(conn).NextID(t.Context(), &pb.NextIDRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, "not ready: acquiring the machine ID from the lease redis://x: ERR first line; second line", status.Convert(err).Message())

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	watchLive, err := h.Watch(ctx, &healthpb.HealthCheckRequest{Service: Liveness})
	require.NoError(t, err)
	watchReady, err := h.Watch(ctx, &healthpb.HealthCheckRequest{Service: Readiness})
	require.NoError(t, err)
	first, err := watchReady.Recv()
	require.NoError(t, err)
	assert.Equal(t, down, first.GetStatus())
	first, err = watchLive.Recv()
	require.NoError(t, err)
	assert.Equal(t, up, first.GetStatus())

	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(5))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	svc.Ready(g)
	next, err := watchReady.Recv() // within HealthPoll
	require.NoError(t, err)
	assert.Equal(t, up, next.GetStatus())
	assert.Equal(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": up, Liveness: up, Readiness: up, "ringflake.v1.IDs": up},
		checkAll(t, h, names...), "once ready")

	require.NoError(t, g.Close()) // a closed generator cannot issue: not ready, but alive
	assert.Equal(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": up, Liveness: up, Readiness: down, "ringflake.v1.IDs": down},
		checkAll(t, h, names...), "generator closed")
}

// Decode sets datacenter and worker, a oneof of one field each, only under
// a split layout, so that a client tells a split machine ID from none.
func TestDecodeSplitFields(t *testing.T) {
	t.Parallel()
	split := ringflake.DefaultLayout()
	split.DatacenterBits = 5
	for _, tt := range []struct {
		name   string
		layout ringflake.Layout
		split  bool
	}{{"default", ringflake.DefaultLayout(), false}, {"split", split, true}} {
		conn := listen(t, serve.New(nil, serve.Config{Layout: tt.layout}))
		id, err := tt.layout.Compose(ringflake.Parts{Time: time.Now(), Machine: 37, Sequence: 2})
		require.NoError(t, err)
		d, err := pb.NewIDsClient(conn).Decode(t.Context(), &pb.DecodeRequest{Id: id.String()})
		require.NoError(t, err, tt.name)
		assert.Equal(t, int64(37), d.GetMachine(), tt.name)
		assert.Equal(t, tt.split, d.DatacenterPart != nil && d.WorkerPart != nil, tt.name)
		if tt.split {
			assert.Equal(t, int64(1), d.GetDatacenter(), tt.name) // 37 = 1<<5 + 5
			assert.Equal(t, int64(5), d.GetWorker(), tt.name)
		}
	}
}
