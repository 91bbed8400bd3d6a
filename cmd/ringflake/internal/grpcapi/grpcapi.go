// Package grpcapi is the gRPC API of "ringflake serve" (--grpc-addr): the
// ringflake.v1.IDs service of ringflakeclient/ringflakepb over the HTTP
// API's serve.Service, the standard grpc.health.v1 health service, with a
// liveness name that answers as /healthz does and a readiness name that
// follows /readyz, and server reflection; over TLS when given a config.
package grpcapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/idtext"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/serve"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// HealthPoll is how often the health service's Watch streams read the
// readiness again: a lease lost shows on them as NOT_SERVING within it.
// Check reads it as it is asked.
const HealthPoll = 100 * time.Millisecond

// MaxBlocks is the most blocks one Blocks call may ask for; 0 asks for
// blocks until the client cancels.
const MaxBlocks = 1 << 20

// Server is the gRPC API over one serve.Service. It is safe for concurrent
// use.
type Server struct {
	pb.UnimplementedIDsServer
	svc    *serve.Service
	gs     *grpc.Server
	health *health.Server
	drain  chan struct{} // closed by Stop: Blocks streams end at their next block
	polled chan struct{} // closed when the health poll has stopped
}

// The health service's names. Liveness and its alias "" (the name a probe
// asks by default) answer SERVING while the process serves, as /healthz
// does, so that a liveness probe does not restart a server that waits out
// its lease store; Readiness and its alias, the IDs service's own name,
// follow the service's readiness, as /readyz does. Every name answers
// NOT_SERVING once Stop has begun.
const (
	Liveness  = "liveness"
	Readiness = "readiness"
)

// healthNames maps each health name to whether it follows the readiness.
var healthNames = map[string]bool{
	"": false, Liveness: false,
	Readiness: true, pb.IDs_ServiceDesc.ServiceName: true,
}

// Listen listens on addr and serves the API over svc until Stop, and
// returns the address it listens on; over TLS when conf is not nil. An
// empty addr serves nothing: the nil Server it returns stops at once.
func Listen(addr string, svc *serve.Service, conf *tls.Config) (*Server, string, error) {
	if addr == "" {
		return nil, "", nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--grpc-addr: %w", err)
	}
	var opts []grpc.ServerOption
	if conf != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(conf)))
	}
	s := &Server{svc: svc, gs: grpc.NewServer(opts...), health: health.NewServer(),
		drain: make(chan struct{}), polled: make(chan struct{})}
	pb.RegisterIDsServer(s.gs, s)
	healthpb.RegisterHealthServer(s.gs, healthService{s.health, s})
	reflection.Register(s.gs)
	s.setHealth(svc.Readiness().Ready)
	go s.poll()
	go func() { _ = s.gs.Serve(ln) }() // returns when Stop stops the server
	return s, ln.Addr().String(), nil
}

// Stop sets every health status to NOT_SERVING, ends the health Watch
// streams and, at their next block, the Blocks streams (UNAVAILABLE),
// waits for the calls in flight until ctx is done, then cuts those left.
// It returns ctx's error if it had to cut any. A Blocks stream whose
// client stopped reading waits in its Send, on gRPC's flow control, and
// is one of those cut.
func (s *Server) Stop(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.health.Shutdown() // later statuses from poll are ignored
	close(s.drain)
	<-s.polled
	done := make(chan struct{})
	go func() { s.gs.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.gs.Stop()
		<-done
		return ctx.Err()
	}
}

// Close cuts every connection and call at once.
func (s *Server) Close() {
	if s != nil {
		s.health.Shutdown()
		close(s.drain)
		s.gs.Stop()
	}
}

// healthService is the health service: Check reads the readiness as it is
// asked, as /readyz does; Watch is health.Server's, whose statuses poll
// sets, on streams that end when Stop begins, which they would otherwise
// hold to its timeout.
type healthService struct {
	*health.Server
	s *Server
}

// Check answers the status of a health name: SERVING for liveness, and
// for readiness from the readiness now; NOT_SERVING once Stop has begun.
func (h healthService) Check(_ context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	ready, known := healthNames[r.GetService()]
	if !known {
		return nil, status.Errorf(codes.NotFound, "unknown service %s; want %q or %q (or %q, %q)",
			idtext.Quote(r.GetService()), Liveness, Readiness, "", pb.IDs_ServiceDesc.ServiceName)
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	select {
	case <-h.s.drain:
	default:
		if !ready || h.s.svc.Readiness().Ready {
			st = healthpb.HealthCheckResponse_SERVING
		}
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// Watch is health.Server's Watch, on a stream whose context is also done
// once Stop begins.
func (h healthService) Watch(r *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.s.drain:
			cancel()
		case <-ctx.Done():
		}
	}()
	return h.Server.Watch(r, ctxStream{stream, ctx})
}

// ctxStream is a Watch stream with another context.
type ctxStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (s ctxStream) Context() context.Context { return s.ctx }

// poll sets the health statuses from the service's readiness every
// HealthPoll until Stop.
func (s *Server) poll() {
	defer close(s.polled)
	t := time.NewTicker(HealthPoll)
	defer t.Stop()
	for {
		select {
		case <-s.drain:
			return
		case <-t.C:
			s.setHealth(s.svc.Readiness().Ready)
		}
	}
}

// setHealth sets the status of every health name: SERVING for liveness,
// and for readiness as ready says.
func (s *Server) setHealth(ready bool) {
	for name, follows := range healthNames {
		st := healthpb.HealthCheckResponse_SERVING
		if follows && !ready {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		s.health.SetServingStatus(name, st)
	}
}

// generator returns the generator, or the UNAVAILABLE status of a service
// that has none yet.
func (s *Server) generator() (*ringflake.Generator, error) {
	if g := s.svc.Generator(); g != nil {
		return g, nil
	}
	r := s.svc.Readiness()
	return nil, unavailable("not ready: "+r.Reason, r.Wait)
}

// issueError is the status of a failure to issue: UNAVAILABLE with a
// RetryInfo when waiting helps, and FAILED_PRECONDITION when it does not
// (a clock outside the layout's range, a closed generator).
func issueError(err error) error {
	msg := serve.OneLine(err.Error())
	if wait, ok := serve.RetryDelay(err); ok {
		return unavailable(msg, wait)
	}
	if errors.Is(err, ringflake.ErrClosed) {
		return status.Error(codes.Unavailable, msg)
	}
	return status.Error(codes.FailedPrecondition, msg)
}

// unavailable is UNAVAILABLE with msg and a google.rpc.RetryInfo detail of
// the wait rounded up to whole seconds, at least 1, as Retry-After is.
func unavailable(msg string, wait time.Duration) error {
	st := status.New(codes.Unavailable, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(serve.Seconds(wait))}); err == nil {
		st = d
	}
	return st.Err()
}

// NextID issues one ID.
func (s *Server) NextID(context.Context, *pb.NextIDRequest) (*pb.NextIDResponse, error) {
	g, err := s.generator()
	if err != nil {
		return nil, err
	}
	id, err := g.NextID()
	if err != nil {
		return nil, issueError(err)
	}
	return &pb.NextIDResponse{Id: int64(id)}, nil
}

// NextIDs issues n IDs with one NextN call; a batch that fails part way
// is an error, its IDs dropped unused, as /v1/ids does.
func (s *Server) NextIDs(_ context.Context, r *pb.NextIDsRequest) (*pb.NextIDsResponse, error) {
	if err := s.checkSize("n", r.GetN()); err != nil {
		return nil, err
	}
	g, err := s.generator()
	if err != nil {
		return nil, err
	}
	ids, err := issue(g, int(r.GetN()))
	if err != nil {
		return nil, err
	}
	return &pb.NextIDsResponse{Ids: ids}, nil
}

// Blocks sends count blocks of size IDs (count 0: until the client
// cancels), each from one NextN call made just before it is sent. Every
// block is issued afresh, so no ID is sent twice, on this stream or
// another. Send waits while the client's flow-control window is full, so
// a client that does not read holds back the issuing rather than a queue
// of aging IDs. Stop ends the stream at its next block with UNAVAILABLE.
func (s *Server) Blocks(r *pb.BlocksRequest, stream pb.IDs_BlocksServer) error {
	if err := s.checkSize("size", r.GetSize()); err != nil {
		return err
	}
	if r.GetCount() > MaxBlocks {
		return status.Errorf(codes.InvalidArgument, "count = %d; want 0 (until cancelled) or 1..%d", r.GetCount(), MaxBlocks)
	}
	g, err := s.generator()
	if err != nil {
		return err
	}
	for i := uint32(0); r.GetCount() == 0 || i < r.GetCount(); i++ {
		select {
		case <-s.drain:
			return unavailable("the server is stopping", 0)
		case <-stream.Context().Done():
			return stream.Context().Err()
		default:
		}
		ids, err := issue(g, int(r.GetSize()))
		if err != nil {
			return err
		}
		if err := stream.Send(&pb.Block{Ids: ids}); err != nil {
			return err
		}
	}
	return nil
}

// issue issues n IDs from g in one NextN call.
func issue(g *ringflake.Generator, n int) ([]int64, error) {
	ids := make([]ringflake.ID, n)
	if _, err := g.NextN(ids); err != nil {
		return nil, issueError(err)
	}
	out := make([]int64, n)
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out, nil
}

// checkSize rejects a batch size outside 1..the service's cap.
func (s *Server) checkSize(name string, n uint32) error {
	if n < 1 || int64(n) > int64(s.svc.MaxBatch()) {
		return status.Errorf(codes.InvalidArgument, "%s = %d; want 1..%d (--max-batch)", name, n, s.svc.MaxBatch())
	}
	return nil
}

// Decode gives the parts of an ID under the layout, read as /v1/decode
// reads it.
func (s *Server) Decode(_ context.Context, r *pb.DecodeRequest) (*pb.DecodeResponse, error) {
	format := r.GetFormat()
	if format == "" {
		format = "auto"
	}
	if !idtext.Known(format) {
		return nil, status.Errorf(codes.InvalidArgument, "format = %s; want %s", idtext.Quote(format), idtext.Formats)
	}
	l := s.svc.Layout()
	id, err := idtext.Reader{Layout: l, Ask: "format "}.Parse(r.GetId(), format)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	p := l.Decompose(id)
	d := &pb.DecodeResponse{Id: int64(id), UnixNanos: p.Time.UnixNano(), Machine: p.Machine, Sequence: p.Sequence}
	if l.DatacenterBits > 0 {
		d.DatacenterPart = &pb.DecodeResponse_Datacenter{Datacenter: p.Datacenter}
		d.WorkerPart = &pb.DecodeResponse_Worker{Worker: p.Worker}
	}
	return d, nil
}

// Info gives the layout, the machine ID (-1 before there is one) and the
// batch cap. It answers before the service is ready.
func (s *Server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	l := s.svc.Layout()
	if l.Tick == 0 { // the zero values' meanings, spelled out for the client
		l.Tick = time.Millisecond
	}
	if l.Epoch.IsZero() {
		l.Epoch = ringflake.DefaultLayout().Epoch
	}
	return &pb.InfoResponse{
		Layout: &pb.Layout{
			TimeBits: uint32(l.TimeBits), MachineBits: uint32(l.MachineBits), SequenceBits: uint32(l.SequenceBits),
			EpochUnixNanos: l.Epoch.UnixNano(), TickNanos: int64(l.Tick), DatacenterBits: uint32(l.DatacenterBits),
		},
		Machine:  s.svc.Readiness().Machine,
		MaxBatch: uint32(s.svc.MaxBatch()),
	}, nil
}
