package ringflakeclient

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ringflake/ringflake"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// errNotReady is the failure of a server that answers Info without a
// machine ID.
var errNotReady = errors.New("ringflakeclient: not ready: the server has no machine ID yet")

// run is the fill of one server, until Close. It greets the server (Info:
// the layout, the batch cap, whether it has a machine ID), then takes
// what the buffer needs (reserve) and fetches it. A failure sets the
// server's state, hands the work back for another server to take, and
// waits a backoff, or the delay the server's RetryInfo asks for, before
// greeting it again.
func (c *Client) run(s *server) {
	defer c.wg.Done()
	wait := c.o.minBackoff
	for {
		err := c.greet(s)
		for err == nil {
			k, ok := c.reserve(s)
			if !ok {
				return
			}
			if err = c.fetch(s, k); err == nil {
				wait = c.o.minBackoff
			}
		}
		if c.ctx.Err() != nil {
			return
		}
		c.fail(s, err)
		t := time.NewTimer(min(max(wait, retryDelay(err)), c.o.maxBackoff))
		wait = min(2*wait, c.o.maxBackoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
	}
}

// greet asks s for its Info within the timeout, and marks it ready if it
// has a machine ID and the client's layout.
func (c *Client) greet(s *server) error {
	began := time.Now()
	info, err := c.info(c.ctx, s)
	if err != nil {
		return err
	}
	l, err := layoutOf(info.GetLayout())
	if err != nil || !sameLayout(l, c.layout) {
		return fmt.Errorf("%w: %s gives %s, the client has %s", ErrLayout, s.target, layoutText(l), layoutText(c.layout))
	}
	if info.GetMachine() < 0 {
		return errNotReady
	}
	s.maxBatch = int(info.GetMaxBatch())
	c.mu.Lock()
	s.state = Ready
	c.answered(time.Since(began))
	c.wakeFills()
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

// reserve waits until the buffer needs IDs (need), then reserves them for
// the calling fill's server s, and returns how many; or returns false
// after Close. It wakes on every wakeFills, and when a fetch in flight is
// due to become late, since the IDs it asked for then count no more.
func (c *Client) reserve(s *server) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed {
		now := time.Now()
		c.size.learn(now, c.stats.Served, &c.o)
		due := c.markLate(now)
		if k := c.need(); k > 0 {
			s.asked, s.heard = k, now
			c.pending += k
			return k, true
		}
		if !c.sleep(due) {
			return 0, false
		}
	}
	return 0, false
}

// need is how many IDs a free fill should ask for now, or 0: those that
// bring the buffer, with what is asked on time, to its target, once it has
// fallen below the refill point, and at least one for each caller waiting
// beyond what is asked. It requires c.mu.
func (c *Client) need() int {
	have := c.count + c.pending
	if have < c.size.refill() || len(c.waiters) > have {
		return max(c.size.target, len(c.waiters)) - have
	}
	return 0
}

// markLate marks late each fetch in flight that has not brought a block
// within hedgeAfter, and takes what it asked for out of pending: the
// buffer then needs those IDs again, and another fill asks for them while
// this one may yet answer. A stopped server so holds the callers back for
// about one answer of a live one, not for the timeout. markLate returns
// when the next fetch on time becomes late, or the zero time if none is in
// flight. It requires c.mu.
func (c *Client) markLate(now time.Time) time.Time {
	after := min(max(4*c.answer, time.Millisecond), c.o.timeout)
	var due time.Time
	for _, s := range c.servers {
		if s.asked == 0 || s.late {
			continue
		}
		if d := s.heard.Add(after); now.Before(d) {
			if due.IsZero() || d.Before(due) {
				due = d
			}
			continue
		}
		s.late = true
		c.pending -= s.asked
	}
	return due
}

// sleep waits, without c.mu, for wakeFills, until due (unless zero), or
// Close, and reports false after Close. It requires c.mu, and returns with
// it held.
func (c *Client) sleep(due time.Time) bool {
	c.asleep = true
	ch := c.changed
	c.mu.Unlock()
	defer c.mu.Lock()
	var timeout <-chan time.Time
	if !due.IsZero() {
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
	case <-timeout:
	case <-c.ctx.Done():
		return false
	}
	return true
}

// fetch asks s for k IDs over one Blocks stream, in even blocks of at most
// the client's block size and the server's cap, adding each block to the
// buffer as it comes. The server must answer the call, and send every
// block, within the timeout of the last. Whatever it did not send is
// handed back, for the next attempt, on this server or another.
func (c *Client) fetch(s *server, k int) (err error) {
	left := k
	defer func() { c.settle(s, nil, left) }()
	most := max(min(c.o.block, s.maxBatch), 1)
	blocks := (k + most - 1) / most
	size := (k + blocks - 1) / blocks
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	var late atomic.Bool
	timer := time.AfterFunc(c.o.timeout, func() { late.Store(true); cancel() })
	defer timer.Stop()
	stream, err := s.api.Blocks(ctx, &pb.BlocksRequest{Size: uint32(size), Count: uint32(blocks)})
	for i := 0; err == nil && i < blocks; i++ {
		var b *pb.Block
		if b, err = stream.Recv(); err == nil {
			timer.Reset(c.o.timeout)
			take := min(len(b.GetIds()), left)
			left -= take
			if c.settle(s, b.GetIds(), take) {
				err = c.tooOld(b.GetIds())
			}
		}
	}
	if err != nil && late.Load() {
		return fmt.Errorf("%w (%v): Blocks: %w", ErrNoAnswer, c.o.timeout, err)
	}
	return err
}

// settle adds ids, a block from s, to the buffer, after handing what it
// can to the callers waiting, dropping those already older than the
// maximum age, and takes done IDs off what s was asked. It reports
// whether ids were all too old. Each block comes here once, from the one
// stream that received it, and each ID leaves the buffer once: so no ID is
// handed out twice.
func (c *Client) settle(s *server, ids []int64, done int) (old bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.asked -= done
	if !s.late {
		c.pending -= done
	}
	if s.asked == 0 {
		s.late = false
	}
	if len(ids) > 0 {
		now := time.Now()
		c.answered(now.Sub(s.heard))
		s.heard = now
		s.blocks++
		s.ids += uint64(len(ids))
		c.stats.Fetched += uint64(len(ids))
		if !c.closed {
			// A block's IDs increase: those before the first fresh one are stale.
			min := c.freshFrom(now)
			i := 0
			for i < len(ids) && ids[i] < min {
				i++
			}
			c.stats.Dropped += uint64(i)
			if i < len(ids) {
				c.blocks = append(c.blocks, ids[i:])
				c.count += len(ids) - i
				c.serveWaiters(now)
			}
			old = i == len(ids)
		}
	}
	c.wakeFills()
	return old
}

// tooOld is the failure of a server that sent ids, a block all older than
// the maximum age: its clock is behind the client's by about that much.
func (c *Client) tooOld(ids []int64) error {
	age := time.Since(c.layout.Decompose(ringflake.ID(ids[len(ids)-1])).Time)
	return fmt.Errorf("ringflakeclient: the server's IDs are %v old, past the maximum age %v: its clock is behind this host's",
		age.Round(time.Millisecond), c.o.maxAge)
}

// answered counts d, the time a server took to answer, in the average
// that judges a fetch late. It requires c.mu.
func (c *Client) answered(d time.Duration) {
	c.answer += (d - c.answer) / 8
}

// fail sets s's state from err, its failure, counts a failover if s was
// ready, and ends the waits if no server can serve now.
func (c *Client) fail(s *server, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.state == Ready {
		c.stats.Failovers++
	}
	s.state, s.err = stateOf(err), err
	c.failWaiters()
	c.wakeFills()
}

// stateOf is the state of a server that failed with err: refused if it
// will not serve this client as it is (another layout, no such service,
// no permission, a request it rejects), acquiring if it says it has no
// machine ID yet or asks to be called again later (RetryInfo), else
// failing.
func stateOf(err error) State {
	if errors.Is(err, ErrLayout) {
		return Refused
	}
	switch status.Code(err) {
	case codes.Unimplemented, codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument:
		return Refused
	}
	if errors.Is(err, errNotReady) || retryDelay(err) > 0 {
		return Acquiring
	}
	return Failing
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
