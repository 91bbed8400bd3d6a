package main

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/ringflakeclient"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// longWait is the wait for IDs no NextID may reach while a server answers.
const longWait = 250 * time.Millisecond

// Eight goroutines take IDs from one client as fast as they can, from
// three serve processes, while one is stopped (SIGSTOP) for 3 s, three
// times the client's timeout, and continued. No call waits longWait or
// more for IDs, none fails, no ID repeats. The waits are counted, in the
// client's histogram, not timed against a budget: a wait behind the
// stopped server would last its timeout, four times longWait. The callers
// also time their calls, which under a CPU hog include the time the
// process is not scheduled (300 ms at a load of 30 on 2 cores, with no
// wait in the client over 20 ms): none may reach the timeout.
func TestClientNoStallBehindAStoppedServer(t *testing.T) {
	t.Parallel()
	var servers []*server
	var targets []string
	for _, m := range []string{"21", "22", "23"} {
		s := startServer(t, "--machine-id", m, "--grpc-addr", "127.0.0.1:0")
		servers = append(servers, s)
		targets = append(targets, s.grpcAddr(t))
	}
	c, err := ringflakeclient.New(context.Background(), targets) // timeout 1s
	require.NoError(t, err)
	defer c.Close()

	const goroutines = 8
	type run struct {
		ids  []int64
		errs []error
		long int           // calls of the client's timeout or more
		max  time.Duration // the longest call
	}
	runs := make([]run, goroutines)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &runs[i]
			for {
				select {
				case <-stop:
					return
				default:
				}
				began := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				id, err := c.NextID(ctx)
				cancel()
				d := time.Since(began)
				r.max = max(r.max, d)
				if d >= ringflakeclient.DefaultTimeout {
					r.long++
				}
				if err != nil {
					r.errs = append(r.errs, err)
					continue
				}
				r.ids = append(r.ids, int64(id))
			}
		}()
	}
	time.Sleep(time.Second)
	victim := servers[1]
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(3 * time.Second)
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGCONT))
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()

	st := c.Stats()
	var all []int64
	for i, r := range runs {
		assert.Zero(t, r.long, "goroutine %d: calls of the timeout, %v, or more (the longest %v)", i, ringflakeclient.DefaultTimeout, r.max)
		if !assert.Empty(t, r.errs, "goroutine %d: no call fails while two servers answer", i) {
			t.Logf("goroutine %d: the first failure: %v", i, r.errs[0])
		}
		assert.NotEmpty(t, r.ids, "goroutine %d", i)
		all = append(all, r.ids...)
		t.Logf("goroutine %d: %d IDs, the longest call %v", i, len(r.ids), r.max)
	}
	assert.Zero(t, st.Waits.Count-waitedAtMost(st.Waits, longWait), "the client counted waits past %v: %+v", longWait, st.Waits)
	assert.NotZero(t, st.Failovers, "the client saw the stopped server fail: %+v", st)
	slices.Sort(all)
	dups := 0
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			dups++
		}
	}
	assert.Zero(t, dups, "repeats among %d IDs", len(all))
	t.Logf("%d IDs; waits %d, longest %v; failovers %d; servers %+v", len(all), st.Waits.Count, st.Waits.Longest, st.Failovers, st.Servers)
}

// waitedAtMost is how many waits of w took at most d, one of its bounds.
func waitedAtMost(w ringflakeclient.Waits, d time.Duration) uint64 {
	i := slices.Index(w.Bounds, d)
	if i < 0 {
		panic("no bucket bound " + d.String())
	}
	return w.Counts[i]
}

// A server on a fresh Redis waits out the restart floor (TTL + twice the
// clock bound, 8 s here) before it has a machine ID; a client's first
// NextID, given 20 s, waits for it and returns its ID, where it used to
// fail at once with "not ready".
func TestClientWaitsForAServerAcquiring(t *testing.T) {
	t.Parallel()
	buildCLI(t) // before Redis starts: the floor runs from there
	srv := redistest.Start(t)
	s := startServerUntil(t, "ringflake: listening", "--lease", "redis://"+srv.Addr, "--lease-ttl", "4s", "--grpc-addr", "127.0.0.1:0")
	target := s.grpcAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Not ready: Info's machine ID is no sign of it, since it is -1 only
	// until the take, and names the ID taken while serve waits for its
	// floor (under load the take came first, and Info said 0).
	h, err := healthpb.NewHealthClient(dialGRPC(t, target)).Check(ctx, &healthpb.HealthCheckRequest{Service: "ringflake.v1.IDs"})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, h.GetStatus(), "the server is waiting for its machine ID")

	c, err := ringflakeclient.New(ctx, []string{target})
	require.NoError(t, err)
	defer c.Close()
	began := time.Now()
	id, err := c.NextID(ctx)
	require.NoError(t, err, "stats %+v; server log %v", c.Stats(), s.log())
	t.Logf("the first NextID took %v", time.Since(began))
	info, err := pb.NewIDsClient(dialGRPC(t, target)).Info(ctx, &pb.InfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, info.GetMachine(), ringflake.DefaultLayout().Decompose(id).Machine, "the ID is the server's")
	st := c.Stats()
	assert.Equal(t, uint64(1), st.Waits.Count, "the call waited: %+v", st)
	assert.Equal(t, ringflakeclient.Ready, st.Servers[0].State, "%+v", st.Servers[0])
	assert.ErrorContains(t, st.Servers[0].Err, "not ready", "the client saw the server acquiring")
}
