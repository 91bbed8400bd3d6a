package main

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/ringflakeclient"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// grpcAddr returns the --grpc-addr a server logged it listens on.
func (s *server) grpcAddr(t *testing.T) string {
	t.Helper()
	for _, r := range s.log() {
		if a, _ := r["grpc_addr"].(string); a != "" {
			return a
		}
	}
	t.Fatalf("serve logged no grpc_addr; log: %v", s.log())
	return ""
}

// dialGRPC connects to addr, closing the connection when the test ends.
func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// The gRPC API answers beside HTTP: its calls, INVALID_ARGUMENT for bad
// input, health SERVING, reflection listing the services (what grpcurl
// reads), and a stop on SIGTERM with a stream open.
func TestServeGRPC(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--machine-id", "9", "--max-batch", "500", "--grpc-addr", "127.0.0.1:0")
	conn := dialGRPC(t, s.grpcAddr(t))
	api := pb.NewIDsClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	one, err := api.NextID(ctx, &pb.NextIDRequest{})
	require.NoError(t, err)
	batch, err := api.NextIDs(ctx, &pb.NextIDsRequest{N: 500})
	require.NoError(t, err)
	require.Len(t, batch.GetIds(), 500)
	ids := append([]int64{one.GetId()}, batch.GetIds()...)
	stream, err := api.Blocks(ctx, &pb.BlocksRequest{Size: 100, Count: 3})
	require.NoError(t, err)
	for range 3 {
		b, err := stream.Recv()
		require.NoError(t, err)
		require.Len(t, b.GetIds(), 100)
		ids = append(ids, b.GetIds()...)
	}
	_, err = stream.Recv()
	assert.Error(t, err, "the stream ends after count blocks")
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i], ids[i-1], "one server's IDs increase across calls")
	}
	assert.Equal(t, int64(9), ringflake.DefaultLayout().Decompose(ringflake.ID(ids[0])).Machine)

	d, err := api.Decode(ctx, &pb.DecodeRequest{Id: fmt.Sprint(ids[0])})
	require.NoError(t, err)
	assert.Equal(t, int64(9), d.GetMachine())
	info, err := api.Info(ctx, &pb.InfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, int64(9), info.GetMachine())
	assert.Equal(t, uint32(500), info.GetMaxBatch())

	for name, call := range map[string]func() error{
		"n 0":          func() error { _, err := api.NextIDs(ctx, &pb.NextIDsRequest{N: 0}); return err },
		"n past cap":   func() error { _, err := api.NextIDs(ctx, &pb.NextIDsRequest{N: 501}); return err },
		"bad id":       func() error { _, err := api.Decode(ctx, &pb.DecodeRequest{Id: "x!"}); return err },
		"bad format":   func() error { _, err := api.Decode(ctx, &pb.DecodeRequest{Id: "1", Format: "hex"}); return err },
		"block size 0": func() error { st, _ := api.Blocks(ctx, &pb.BlocksRequest{}); _, err := st.Recv(); return err },
	} {
		assert.Equal(t, codes.InvalidArgument, grpcstatus.Code(call()), name)
	}

	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, h.GetStatus())
	refl, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, refl.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}))
	lr, err := refl.Recv()
	require.NoError(t, err)
	require.NoError(t, refl.CloseSend()) // as grpcurl does: an open stream holds a drain
	var names []string
	for _, svc := range lr.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	assert.Subset(t, names, []string{"ringflake.v1.IDs", "grpc.health.v1.Health"})

	// An endless stream, read, and a health Watch are open at SIGTERM:
	// the stream ends with UNAVAILABLE, the Watch ends, and serve exits 0
	// without waiting out --shutdown-timeout (10s).
	endless, err := api.Blocks(ctx, &pb.BlocksRequest{Size: 10})
	require.NoError(t, err)
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := endless.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)
	began := time.Now()
	assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log: %v", s.log())
	assert.Less(t, time.Since(began), 10*time.Second, "the streams end at once rather than hold the drain to --shutdown-timeout")
	assert.Equal(t, codes.Unavailable, grpcstatus.Code(<-ended))
}

// While serve waits for a machine ID, health is NOT_SERVING and an issuing
// call fails with UNAVAILABLE and a RetryInfo; Info answers, with machine
// -1.
func TestServeGRPCNotReady(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lease := "redis://" + srv.Addr
	startServer(t, "--lease", lease, "--machine-range", "0-0", "--lease-ttl", "2s") // holds the one machine ID
	s := startServerUntil(t, "ringflake: listening", "--lease", lease, "--machine-range", "0-0", "--lease-ttl", "2s", "--grpc-addr", "127.0.0.1:0")
	conn := dialGRPC(t, s.grpcAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "ringflake.v1.IDs"})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, h.GetStatus())
	_, err = pb.NewIDsClient(conn).NextID(ctx, &pb.NextIDRequest{})
	st := grpcstatus.Convert(err)
	assert.Equal(t, codes.Unavailable, st.Code(), "%v", err)
	assert.Contains(t, st.Message(), "not ready: acquiring the machine ID")
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if assert.NotNil(t, retry, "UNAVAILABLE carries a RetryInfo") {
		assert.GreaterOrEqual(t, retry.GetRetryDelay().AsDuration(), time.Second)
	}
	info, err := pb.NewIDsClient(conn).Info(ctx, &pb.InfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), info.GetMachine())
}

// startGRPCServer starts serve on a lease of lease, serving gRPC on addr
// ("127.0.0.1:0" for any port).
func startGRPCServer(t *testing.T, lease, addr string) *server {
	return startServer(t, "--lease", lease, "--machine-range", "0-15", "--lease-ttl", "2s",
		"--grpc-addr", addr, "--shutdown-timeout", "2s")
}

// clientRun is what one client's caller saw.
type clientRun struct {
	ids    []int64
	errs   []error
	stale  int // IDs older than the maximum age when their call began
	closed time.Duration
	stats  ringflakeclient.Stats
}

// Several clients take IDs from three serve processes leased from one
// Redis while one server is killed (SIGKILL), another stopped (SIGSTOP)
// for longer than the clients' timeout and continued, and the first
// restarted on its address; the third lives throughout. No two IDs repeat
// across the clients, no call fails, no ID is older than the maximum age,
// every ID comes from a machine ID one of the servers held, and every
// stop ends within its bound. No timing is asserted beyond generous
// bounds, so that this holds under a CPU hog.
func TestClientFailoverAcrossServeProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lease := "redis://" + srv.Addr
	a := startGRPCServer(t, lease, "127.0.0.1:0")
	b := startGRPCServer(t, lease, "127.0.0.1:0")
	c := startGRPCServer(t, lease, "127.0.0.1:0")
	targets := []string{a.grpcAddr(t), b.grpcAddr(t), c.grpcAddr(t)}
	machines := []int64{a.machine, b.machine, c.machine}

	const (
		clients = 4
		timeout = 2 * time.Second // the clients' deadline; b is stopped for 3 of them
		maxAge  = 5 * time.Second
		closeBy = 5 * time.Second // Close cancels its calls: it waits on no server
	)
	layout := ringflake.DefaultLayout()
	stop := make(chan struct{})
	runs := make([]clientRun, clients)
	var g errgroup.Group
	for i := range clients {
		cl, err := ringflakeclient.New(context.Background(), targets, ringflakeclient.WithTimeout(timeout),
			ringflakeclient.WithMaxAge(maxAge), ringflakeclient.WithWaterMarks(200, 1000), ringflakeclient.WithBlock(250),
			ringflakeclient.WithBackoff(50*time.Millisecond, time.Second))
		require.NoError(t, err)
		g.Go(func() error {
			r := &runs[i]
			for {
				select {
				case <-stop:
					r.stats = cl.Stats()
					began := time.Now()
					err := cl.Close()
					r.closed = time.Since(began)
					return err
				default:
				}
				for range 50 { // about 50 IDs a millisecond, a client
					began := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					id, err := cl.NextID(ctx)
					cancel()
					if err != nil {
						r.errs = append(r.errs, err)
						continue
					}
					if layout.Decompose(id).Time.Before(began.Add(-maxAge)) {
						r.stale++
					}
					r.ids = append(r.ids, int64(id))
				}
				time.Sleep(time.Millisecond)
			}
		})
	}

	time.Sleep(time.Second)
	require.NoError(t, a.cmd.Process.Kill())
	<-a.exited
	time.Sleep(2 * time.Second)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(timeout + 3*time.Second)
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGCONT))
	time.Sleep(time.Second)
	a2 := startGRPCServer(t, lease, targets[0]) // a new machine ID: a's lease runs out after its TTL
	machines = append(machines, a2.machine)
	time.Sleep(2 * time.Second)
	close(stop)
	require.NoError(t, g.Wait())

	var all []int64
	var failovers uint64
	for i, r := range runs {
		if !assert.Zero(t, len(r.errs), "client %d: no call fails while a server lives", i) {
			t.Logf("client %d: the first failure: %v", i, r.errs[0])
		}
		assert.Zero(t, r.stale, "client %d: IDs older than %v", i, maxAge)
		assert.NotEmpty(t, r.ids, "client %d", i)
		assert.Less(t, r.closed, closeBy, "client %d: Close", i)
		assert.Equal(t, uint64(len(r.ids)), r.stats.Served, "client %d: Served counts the IDs handed out", i)
		failovers += r.stats.Failovers
		all = append(all, r.ids...)
		t.Logf("client %d: %d IDs, stats %+v, Close took %v", i, len(r.ids), r.stats, r.closed)
	}
	assert.NotZero(t, failovers, "the clients saw a server fail")
	slices.Sort(all)
	dups := 0
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			dups++
		}
	}
	assert.Zero(t, dups, "duplicate IDs among %d", len(all))
	seen := map[int64]int{}
	for _, id := range all {
		seen[layout.Decompose(ringflake.ID(id)).Machine]++
	}
	for m := range seen {
		assert.Contains(t, machines, m, "every ID comes from a machine ID a server held (%v): %v", machines, seen)
	}
	t.Logf("%d IDs by machine ID: %v (servers' machines %v)", len(all), seen, machines)

	// Each server stops on SIGTERM within --shutdown-timeout (2s) and the
	// release's bound, with room for a busy machine.
	for _, s := range []*server{b, c, a2} {
		began := time.Now()
		assert.Equal(t, 0, s.stop(t, syscall.SIGTERM), "log: %v", s.log())
		assert.Less(t, time.Since(began), 2*time.Second+5*time.Second+10*time.Second)
	}
}

// While the lease is lost (its store paused past the TTL) health is
// NOT_SERVING and the issuing calls fail with UNAVAILABLE; once the store
// is back and the lease regained, SERVING again. Both are polled with a
// generous bound rather than timed.
func TestServeGRPCHealthFollowsTheLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := startServer(t, "--lease", "redis://"+srv.Addr, "--lease-ttl", "1s", "--grpc-addr", "127.0.0.1:0")
	conn := dialGRPC(t, s.grpcAddr(t))
	health := healthpb.NewHealthClient(conn)
	api := pb.NewIDsClient(conn)
	status := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: "ringflake.v1.IDs"})
		if err != nil {
			return healthpb.HealthCheckResponse_UNKNOWN
		}
		return h.GetStatus()
	}
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, status())

	srv.Pause()
	assert.Eventually(t, func() bool { return status() == healthpb.HealthCheckResponse_NOT_SERVING }, 30*time.Second, 50*time.Millisecond,
		"NOT_SERVING once the lease is lost")
	_, err := api.NextID(context.Background(), &pb.NextIDRequest{})
	assert.Equal(t, codes.Unavailable, grpcstatus.Code(err), "%v", err)
	srv.Resume()
	assert.Eventually(t, func() bool { return status() == healthpb.HealthCheckResponse_SERVING }, 60*time.Second, 50*time.Millisecond,
		"SERVING once the lease is regained")
}
