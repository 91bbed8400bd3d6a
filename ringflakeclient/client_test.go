package ringflakeclient_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeclient"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// fake is an IDs server in the test's process that issues IDs of its own
// machine ID from a generator whose clock is age behind; hang makes Blocks
// wait for the client to give up.
type fake struct {
	pb.UnimplementedIDsServer
	layout  ringflake.Layout
	machine int64
	age     time.Duration // how old the time of the IDs it issues is
	hang    atomic.Bool
	waiting atomic.Bool // no machine ID yet: Info says -1, Blocks UNAVAILABLE
	gen     *ringflake.Generator
}

func (f *fake) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	l := f.layout
	machine := f.machine
	if f.waiting.Load() {
		machine = -1
	}
	return &pb.InfoResponse{Machine: machine, MaxBatch: 1000, Layout: &pb.Layout{
		TimeBits: uint32(l.TimeBits), MachineBits: uint32(l.MachineBits), SequenceBits: uint32(l.SequenceBits),
		EpochUnixNanos: l.Epoch.UnixNano(), TickNanos: int64(l.Tick)}}, nil
}

func (f *fake) Blocks(r *pb.BlocksRequest, stream pb.IDs_BlocksServer) error {
	if f.waiting.Load() {
		st, _ := status.New(codes.Unavailable, "not ready: acquiring the machine ID").
			WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
		return st.Err()
	}
	if f.hang.Load() {
		<-stream.Context().Done()
		return status.Error(codes.Canceled, "the client gave up")
	}
	for range r.GetCount() {
		b := &pb.Block{}
		for range r.GetSize() {
			id, err := f.gen.NextID()
			if err != nil {
				return err
			}
			b.Ids = append(b.Ids, int64(id))
		}
		if err := stream.Send(b); err != nil {
			return err
		}
	}
	return nil
}

// start serves f on a loopback port until the test ends.
func start(t *testing.T, f *fake) string {
	t.Helper()
	if f.layout == (ringflake.Layout{}) {
		f.layout = ringflake.DefaultLayout()
	}
	age := f.age
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(f.machine), ringflake.WithLayout(f.layout),
		ringflake.WithClock(func() time.Time { return time.Now().Add(-age) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	f.gen = g
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterIDsServer(s, f)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// A server whose IDs are older than the maximum age has them all dropped
// and counted; none is handed out, and the server is failing, with an
// error that says how old its IDs are.
func TestDropsIDsPastTheMaximumAge(t *testing.T) {
	t.Parallel()
	old := &fake{machine: 1, age: 10 * time.Second}
	c, err := ringflakeclient.New(context.Background(), []string{start(t, old)},
		ringflakeclient.WithMaxAge(5*time.Second), ringflakeclient.WithWaterMarks(10, 100), ringflakeclient.WithBlock(10))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Some IDs fetched first, however loaded the machine: the check below
	// is about what became of them.
	for deadline := time.Now().Add(10 * time.Second); c.Stats().Fetched == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Stats() = %+v after 10s; want IDs fetched", c.Stats())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var e *ringflakeclient.Error
	if id, err := c.NextID(ctx); !errors.As(err, &e) || !strings.Contains(err.Error(), "past the maximum age 5s") {
		t.Fatalf("NextID() = %v, %v; want an *Error: the server's IDs are too old", id, err)
	}
	if s := c.Stats(); s.Dropped == 0 || s.Served != 0 || s.Dropped != s.Fetched || s.Servers[0].State != ringflakeclient.Failing {
		t.Fatalf("Stats() = %+v; want every ID fetched dropped, none served, the server failing", s)
	}
}

// IDs within the age are handed out: each once, each at most the age old.
func TestHandsOutFreshIDsOnce(t *testing.T) {
	t.Parallel()
	f := &fake{machine: 2, age: 100 * time.Millisecond}
	c, err := ringflakeclient.New(context.Background(), []string{start(t, f)},
		ringflakeclient.WithMaxAge(5*time.Second), ringflakeclient.WithWaterMarks(50, 200), ringflakeclient.WithBlock(30))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[ringflake.ID]bool{}
	l := ringflake.DefaultLayout()
	for range 5000 {
		began := time.Now()
		id, err := c.NextID(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("NextID() = %v twice", id)
		}
		seen[id] = true
		if l.Decompose(id).Time.Before(began.Add(-5 * time.Second)) {
			t.Fatalf("NextID() = %v of %v; older than 5s", id, l.Decompose(id).Time)
		}
	}
	if s := c.Stats(); s.Served != 5000 || s.Fetched < 5000 {
		t.Fatalf("Stats() = %+v; want 5000 served, at least as many fetched", s)
	}
}

// When every server fails, NextID says so, naming each; a server with
// another layout is one that fails.
func TestEveryServerFailed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	other := ringflake.DefaultLayout()
	other.SequenceBits--
	otherLayout := start(t, &fake{machine: 3, layout: other})

	c, err := ringflakeclient.New(context.Background(), []string{refused, otherLayout},
		ringflakeclient.WithLayout(ringflake.DefaultLayout()), ringflakeclient.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.NextID(ctx)
	var e *ringflakeclient.Error
	if !errors.As(err, &e) || len(e.Failures) != 2 || e.Failures[0].Target != refused || e.Failures[1].Target != otherLayout {
		t.Fatalf("NextID() error = %v; want an *Error naming %s and %s", err, refused, otherLayout)
	}
	if !errors.Is(err, ringflakeclient.ErrLayout) || !strings.Contains(err.Error(), "the server's layout is not the client's: "+otherLayout+" gives ") {
		t.Errorf("NextID() error = %v; want it to wrap ErrLayout, naming the server", err)
	}
	st := c.Stats().Servers
	if len(st) != 2 || st[0].State != ringflakeclient.Failing || st[1].State != ringflakeclient.Refused || !errors.Is(st[1].Err, ringflakeclient.ErrLayout) {
		t.Errorf("Stats().Servers = %+v; want %s failing, %s refused for its layout", st, refused, otherLayout)
	}
}

// A server still acquiring its machine ID is waited for, by default,
// within the caller's context: NextID returns its first ID once it is
// ready. With WithFailFast, NextID fails at once with the server's state.
func TestWaitsForAServerToBeReady(t *testing.T) {
	t.Parallel()
	f := &fake{machine: 6}
	f.waiting.Store(true)
	target := start(t, f)
	fast, err := ringflakeclient.New(context.Background(), []string{target}, ringflakeclient.WithFailFast())
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var e *ringflakeclient.Error
	if id, err := fast.NextID(ctx); !errors.As(err, &e) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("NextID() with WithFailFast = %v, %v; want an *Error: not ready", id, err)
	}
	if st := fast.Stats().Servers[0]; st.State != ringflakeclient.Acquiring {
		t.Fatalf("Stats().Servers[0] = %+v; want acquiring", st)
	}

	c, err := ringflakeclient.New(context.Background(), []string{target}, ringflakeclient.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan error, 1)
	go func() { _, err := c.NextID(ctx); got <- err }()
	// The server becomes ready once the client has seen it acquiring.
	for c.Stats().Servers[0].State != ringflakeclient.Acquiring {
		time.Sleep(5 * time.Millisecond)
	}
	f.waiting.Store(false)
	if err := <-got; err != nil {
		t.Fatalf("NextID() = %v; want the ID of the server once ready", err)
	}
	if s := c.Stats(); s.Waits.Count != 1 || s.Servers[0].State != ringflakeclient.Ready || s.Servers[0].Blocks == 0 {
		t.Fatalf("Stats() = %+v; want one wait, the server ready, blocks from it", s)
	}
}

// A caller that takes about 2,000 IDs a second has few dropped for age,
// with the default marks and a maximum age of a second: the fill keeps
// what the rate needs, not the high mark. Once idle, the first call drops
// what is left of the busy buffer; the next ones drop little (the rate
// learned fades within a fraction of the maximum age), and soon at most a
// low mark's worth.
func TestBufferFitsTheRate(t *testing.T) {
	t.Parallel()
	c, err := ringflakeclient.New(context.Background(), []string{start(t, &fake{machine: 7})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	next := time.Now()
	for range 1000 { // 2 ms apart, in steps of 4: 2,000 a second
		for range 4 {
			if _, err := c.NextID(ctx); err != nil {
				t.Fatal(err)
			}
		}
		next = next.Add(2 * time.Millisecond)
		time.Sleep(time.Until(next))
	}
	busy := c.Stats()
	if busy.Dropped*4 > busy.Served {
		t.Errorf("at 2,000 IDs/s: %d served, %d fetched, %d dropped; want at most a quarter as many dropped as served",
			busy.Served, busy.Fetched, busy.Dropped)
	}
	t.Logf("at 2,000 IDs/s: %d served, %d fetched, %d dropped", busy.Served, busy.Fetched, busy.Dropped)
	last := busy
	for i := range 3 { // idle past the maximum age, then one call
		time.Sleep(1500 * time.Millisecond)
		if _, err := c.NextID(ctx); err != nil {
			t.Fatal(err)
		}
		s := c.Stats()
		t.Logf("idle call %d: %d dropped", i, s.Dropped-last.Dropped)
		want := map[int]uint64{0: 1 << 62, 1: 250, 2: 2 * ringflakeclient.DefaultLow}[i] // 250: a quarter of what 2,000/s keeps
		if d := s.Dropped - last.Dropped; d > want {
			t.Errorf("idle call %d dropped %d IDs; want at most %d", i, d, want)
		}
		last = s
	}
}

// A server that does not answer within the timeout is skipped for one
// that does, and Close returns while a call to it is open. The timeout is
// the default, 1 s: it applies to the live server too, and a NextID fails
// once both servers have failed since they last answered, which a timeout
// of 200 ms, overrun by the live one on a loaded machine while the hung
// one waited out its backoff, would make it do.
func TestSkipsAServerThatHangs(t *testing.T) {
	t.Parallel()
	hung := &fake{machine: 4}
	hung.hang.Store(true)
	live := &fake{machine: 5}
	c, err := ringflakeclient.New(context.Background(), []string{start(t, hung), start(t, live)},
		ringflakeclient.WithWaterMarks(10, 20), ringflakeclient.WithBlock(10))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 1000 {
		if _, err := c.NextID(ctx); err != nil {
			t.Fatalf("NextID() error = %v; want IDs from the live server", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s")
	}
	if _, err := c.NextID(ctx); !errors.Is(err, ringflakeclient.ErrClosed) {
		t.Fatalf("NextID() after Close = %v; want ErrClosed", err)
	}
}

// Eight goroutines take IDs as fast as they can from three servers while
// one hangs for three times the timeout: no wait for IDs reaches half the
// timeout (a wait behind the hung server lasts up to the timeout), none
// fails, no ID repeats. The waits are counted in the client's histogram.
// The timeout is 2 s, twice the default, so that half of it stands well
// clear of what the hedge leaves (about four answers of a live server):
// under a CPU hog at load 10 on 2 cores, those waits reached 430 ms.
// cmd/ringflake's TestClientNoStallBehindAStoppedServer does this with
// serve processes and SIGSTOP.
func TestNoStallBehindAHungServer(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	hung := &fake{machine: 9}
	c, err := ringflakeclient.New(context.Background(), []string{start(t, &fake{machine: 8}), start(t, hung), start(t, &fake{machine: 10})},
		ringflakeclient.WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	got := make([][]ringflake.ID, 8)
	errs := make(chan error, len(got))
	for i := range got {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				id, err := c.NextID(ctx)
				if err != nil {
					errs <- err
					return
				}
				got[i] = append(got[i], id)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	hung.hang.Store(true)
	time.Sleep(3 * timeout)
	hung.hang.Store(false)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	for range got {
		if err := <-errs; err != nil {
			t.Errorf("NextID() = %v; want IDs while two servers answer", err)
		}
	}
	s := c.Stats()
	w := s.Waits
	if long := w.Count - w.Counts[slices.Index(w.Bounds, timeout/2)]; long != 0 {
		t.Errorf("%d waits for IDs past %v, the longest %v; want none", long, timeout/2, w.Longest)
	}
	seen := map[ringflake.ID]bool{}
	for _, ids := range got {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%v handed out twice", id)
			}
			seen[id] = true
		}
	}
	t.Logf("%d IDs, %d waits, the longest %v; servers %+v", len(seen), w.Count, w.Longest, s.Servers)
}
