package ringflakeprom_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeclient"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
	"github.com/ringflake/ringflake/ringflakeprom"
)

// idServer is an IDs server in the test's process, over a generator of
// machine ID 1 in the default layout.
type idServer struct {
	pb.UnimplementedIDsServer
	g *ringflake.Generator
}

func (s idServer) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	l := ringflake.DefaultLayout()
	return &pb.InfoResponse{Machine: 1, MaxBatch: 1000, Layout: &pb.Layout{
		TimeBits: uint32(l.TimeBits), MachineBits: uint32(l.MachineBits), SequenceBits: uint32(l.SequenceBits),
		EpochUnixNanos: l.Epoch.UnixNano(), TickNanos: int64(l.Tick)}}, nil
}

func (s idServer) Blocks(r *pb.BlocksRequest, stream pb.IDs_BlocksServer) error {
	for range r.GetCount() {
		ids := make([]ringflake.ID, r.GetSize())
		if _, err := s.g.NextN(ids); err != nil {
			return err
		}
		b := &pb.Block{}
		for _, id := range ids {
			b.Ids = append(b.Ids, int64(id))
		}
		if err := stream.Send(b); err != nil {
			return err
		}
	}
	return nil
}

// serveIDs serves an idServer on a loopback port until the test ends.
func serveIDs(t *testing.T) string {
	g, err := ringflake.New(context.Background(), ringflake.WithMachineID(1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	pb.RegisterIDsServer(s, idServer{g: g})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// A client's collector gives its counters, the histogram of its waits and
// each server's state, under the constant labels.
func TestClientCollector(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close())
	up := serveIDs(t)
	c, err := ringflakeclient.New(context.Background(), []string{up, down})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 100 {
		_, err := c.NextID(ctx)
		require.NoError(t, err)
	}
	for c.Stats().Servers[1].State != ringflakeclient.Failing { // its first greeting is refused
		time.Sleep(5 * time.Millisecond)
	}
	s := c.Stats()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ringflakeprom.NewClientCollector(c, ringflakeprom.WithConstLabels(prometheus.Labels{"client": "orders"}))))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 6+2*(5+2), n, "six series of the client's own, and 5 states, blocks and IDs for each of 2 servers")
	want := `
# HELP ringflake_client_ids_served_total IDs NextID returned.
# TYPE ringflake_client_ids_served_total counter
ringflake_client_ids_served_total{client="orders"} 100
# HELP ringflake_client_server_state 1 for each server's state now (connecting, ready, acquiring, refused, failing), 0 for the others.
# TYPE ringflake_client_server_state gauge
ringflake_client_server_state{client="orders",state="acquiring",target="` + down + `"} 0
ringflake_client_server_state{client="orders",state="connecting",target="` + down + `"} 0
ringflake_client_server_state{client="orders",state="failing",target="` + down + `"} 1
ringflake_client_server_state{client="orders",state="ready",target="` + down + `"} 0
ringflake_client_server_state{client="orders",state="refused",target="` + down + `"} 0
ringflake_client_server_state{client="orders",state="acquiring",target="` + up + `"} 0
ringflake_client_server_state{client="orders",state="connecting",target="` + up + `"} 0
ringflake_client_server_state{client="orders",state="failing",target="` + up + `"} 0
ringflake_client_server_state{client="orders",state="ready",target="` + up + `"} 1
ringflake_client_server_state{client="orders",state="refused",target="` + up + `"} 0
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "ringflake_client_ids_served_total", "ringflake_client_server_state"))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "ringflake_client_wait_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			require.Equal(t, s.Waits.Count, h.GetSampleCount(), "the waits counted")
			require.NotZero(t, h.GetSampleCount(), "the first call waited for the first block")
			require.Len(t, h.GetBucket(), len(s.Waits.Bounds))
		}
	}
}
