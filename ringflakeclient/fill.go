package ringflakeclient

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// run is the fill of one server, until Close. It greets the server (Info:
// the layout, the batch cap, whether it has a machine ID), then takes
// what the buffer needs (reserve) and fetches it. A failure marks the
// server failed, hands the work back for another server to take, and
// waits a backoff before greeting it again; a greeting that succeeds marks
// it answering again, even while the buffer needs nothing, so that NextID
// knows it is there when the others fail.
func (c *Client) run(s *server) {
	defer c.wg.Done()
	wait := c.o.minBackoff
	greeted := false
	for {
		var err error
		if !greeted {
			err = c.greet(s)
			greeted = err == nil
		}
		if err == nil {
			k, ok := c.reserve()
			if !ok {
				return
			}
			err = c.fetch(s, k)
		}
		if c.ctx.Err() != nil {
			return
		}
		if err == nil {
			wait = c.o.minBackoff
			continue
		}
		greeted = false
		pause := max(wait, retryDelay(err))
		c.fail(s, err)
		wait = min(2*wait, c.o.maxBackoff)
		t := time.NewTimer(min(pause, c.o.maxBackoff))
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
}

// greet asks s for its Info within the timeout, and marks it answering if
// it has a machine ID and the client's layout.
func (c *Client) greet(s *server) error {
	info, err := c.info(c.ctx, s)
	if err != nil {
		return err
	}
	l, err := layoutOf(info.GetLayout())
	if err != nil {
		return err
	}
	if !sameLayout(l, c.layout) {
		return fmt.Errorf("%w: %+v, the client's %+v", ErrLayout, l, c.layout)
	}
	if info.GetMachine() < 0 {
		return errors.New("ringflakeclient: not ready: the server has no machine ID yet")
	}
	s.maxBatch = int(info.GetMaxBatch())
	c.mu.Lock()
	s.err = nil
	c.broadcast()
	c.mu.Unlock()
	return nil
}

// info is s's Info, within the timeout.
func (c *Client) info(ctx context.Context, s *server) (*pb.InfoResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.timeout)
	defer cancel()
	info, err := s.api.Info(ctx, &pb.InfoRequest{})
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%w (%v): Info: %w", ErrNoAnswer, c.o.timeout, err)
	}
	return info, err
}

// reserve waits until the buffer, with the IDs asked for, holds fewer
// than the low mark, then reserves what brings it to the high mark and
// returns how many; or returns false after Close. The IDs reserved count
// as pending, so that no other server's fill asks for them too. But while
// the buffer is empty and a NextID waits, the IDs asked of a server that
// is slow to answer do not hold the others back: the fill asks another
// server for the high mark again, and so at most one high mark per
// server is pending. A stall then lasts about one answer of a live
// server, not the timeout of a stopped one.
func (c *Client) reserve() (int, bool) {
	c.mu.Lock()
	for !c.closed {
		have := c.count + c.pending
		hedge := c.count == 0 && c.waiting > 0 && c.pending < c.o.high*len(c.servers)
		if have < c.o.low || hedge {
			k := max(c.o.high-have, c.o.low)
			c.pending += k
			c.mu.Unlock()
			return k, true
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-c.ctx.Done():
			return 0, false
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return 0, false
}

// fetch asks s for k IDs over one Blocks stream, in blocks of the client's
// size (at most the server's cap), adding each block to the buffer as it
// comes. The server must answer the call, and send every block, within the
// timeout of the last. Whatever it did not send is handed back to pending
// for the next attempt, on this server or another.
func (c *Client) fetch(s *server, k int) (err error) {
	left := k
	defer func() { c.settle(nil, left) }()
	size := min(c.o.block, max(s.maxBatch, 1))
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	var late atomic.Bool
	timer := time.AfterFunc(c.o.timeout, func() { late.Store(true); cancel() })
	defer timer.Stop()
	blocks := (k + size - 1) / size
	stream, err := s.api.Blocks(ctx, &pb.BlocksRequest{Size: uint32(size), Count: uint32(blocks)})
	for i := 0; err == nil && i < blocks; i++ {
		var b *pb.Block
		if b, err = stream.Recv(); err == nil {
			timer.Reset(c.o.timeout)
			take := min(len(b.GetIds()), left)
			left -= take
			c.settle(b.GetIds(), take)
		}
	}
	if err != nil && late.Load() {
		return fmt.Errorf("%w (%v): Blocks: %w", ErrNoAnswer, c.o.timeout, err)
	}
	return err
}

// settle adds ids, a block from one server, to the buffer, dropping those
// already older than the maximum age, and takes done IDs off pending. Each
// block comes here once, from the one stream that received it, and the
// buffer hands each ID out once: so no ID is handed out twice.
func (c *Client) settle(ids []int64, done int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending -= done
	c.stats.Fetched += uint64(len(ids))
	if len(ids) > 0 && !c.closed {
		// A block's IDs increase: those before the first fresh one are stale.
		min := c.freshFrom(time.Now())
		i := 0
		for i < len(ids) && ids[i] < min {
			i++
		}
		c.stats.Dropped += uint64(i)
		if i < len(ids) {
			c.blocks = append(c.blocks, ids[i:])
			c.count += len(ids) - i
		}
	}
	c.broadcast()
}

// fail marks s failed with err, counted as a failover.
func (c *Client) fail(s *server, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.err = err
	c.stats.Failovers++
	c.broadcast()
}

// retryDelay is the delay a server's google.rpc.RetryInfo asks for, or 0.
func retryDelay(err error) time.Duration {
	st, ok := status.FromError(err)
	if !ok {
		return 0
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}
