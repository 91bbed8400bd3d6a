package ringflakeclient

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ringflake/ringflake"
	pb "github.com/ringflake/ringflake/ringflakeclient/ringflakepb"
)

// Client hands out IDs from a local buffer that a fill in the background
// keeps stocked from one or more servers. See the package doc.
type Client struct {
	o       options
	layout  ringflake.Layout // the servers', written once by New
	servers []*server        // written once by New
	ctx     context.Context  // done on Close: ends the fill
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the fill goroutines, one per server

	// mu protects every field below, and each server's fields marked so.
	//
	// The buffer is a queue of blocks: blocks[0][head:] is taken first;
	// count is how many IDs it holds. pending is how many the fills have
	// asked for, on time, and not yet received (see markLate).
	//
	// waiters are the NextID calls waiting for an ID, in the order they
	// came. Whenever mu is released, waiters is empty or the buffer is:
	// settle hands new IDs to the waiters before the buffer keeps any, so
	// a caller that finds an ID in the buffer has no one ahead of it.
	//
	// The fills sleep on changed (see reserve). Whoever changes what they
	// wait for (IDs taken below the refill point, a caller waiting, IDs
	// arriving, a fetch ending, Close) calls wakeFills, which wakes every
	// fill asleep; each looks again under mu.
	mu      sync.Mutex
	blocks  [][]int64
	head    int
	count   int
	pending int
	waiters []*waiter
	closed  bool
	changed chan struct{}
	asleep  bool          // a fill waits on changed
	size    sizer         // the rate IDs are taken at, and the buffer's target
	answer  time.Duration // how long a server takes to answer, averaged
	stats   Stats         // the counters; Buffered, Waits and Servers are filled in by Stats
	waits   waitCounts
}

// server is one target and the fill's view of it.
type server struct {
	target   string
	conn     *grpc.ClientConn
	api      pb.IDsClient
	maxBatch int // from Info; written and read by the server's fill goroutine

	// Protected by Client.mu.
	state  State
	err    error     // the last failure, kept after the server answers again
	asked  int       // IDs asked of it and not yet received or handed back
	heard  time.Time // when the fetch began or last brought a block, while asked > 0
	late   bool      // asked is not counted in Client.pending: see markLate
	blocks uint64    // blocks it sent
	ids    uint64    // IDs it sent
}

// waiter is a NextID call waiting for an ID. id and err are written under
// Client.mu before ready is closed.
type waiter struct {
	ready chan struct{}
	began time.Time
	id    int64
	err   error
}

// New returns a Client of the servers at targets (grpc.NewClient targets,
// such as "host:port" or "dns:///name:port"), and starts its fill. Unless
// WithLayout gives the layout, New asks the servers for it in turn, until
// one answers within ctx and the timeout. It fails with an error naming
// the option or target that is wrong, or an [*Error] if no server gave the
// layout. Close the Client to end its fill.
func New(ctx context.Context, targets []string, opts ...Option) (*Client, error) {
	o := defaults()
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("ringflakeclient: no target; want one or more servers' host:port")
	}
	c := &Client{o: o, changed: make(chan struct{})}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Reconnect on the client's backoff rather than gRPC's own, which
		// grows to two minutes: a restarted server is asked again soon.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: o.minBackoff, Multiplier: 2, Jitter: 0.2, MaxDelay: o.maxBackoff},
			MinConnectTimeout: o.timeout,
		}),
	}, o.dial...)
	for _, t := range targets {
		conn, err := grpc.NewClient(t, dial...)
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("ringflakeclient: target %q: %w", t, err)
		}
		c.servers = append(c.servers, &server{target: t, conn: conn, api: pb.NewIDsClient(conn)})
	}
	if o.layout != nil {
		c.layout = *o.layout
		if c.layout.Tick == 0 { // the zero values' meanings, as WithLayout's
			c.layout.Tick = time.Millisecond
		}
		if c.layout.Epoch.IsZero() {
			c.layout.Epoch = ringflake.DefaultLayout().Epoch
		}
	} else if err := c.askLayout(ctx); err != nil {
		c.closeConns()
		return nil, err
	}
	c.size = sizer{at: time.Now(), target: o.low}
	c.answer = o.timeout / 10 // until a server has answered
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, s := range c.servers {
		c.wg.Add(1)
		go c.run(s)
	}
	return c, nil
}

// askLayout sets c.layout from the first server to answer Info, and
// records the failures of those before it.
func (c *Client) askLayout(ctx context.Context) error {
	e := &Error{}
	for _, s := range c.servers {
		info, err := c.info(ctx, s)
		if err == nil {
			var l ringflake.Layout
			if l, err = layoutOf(info.GetLayout()); err == nil {
				c.layout = l
				return nil
			}
			err = fmt.Errorf("%w: %s gives %s, which ringflake does not make", ErrLayout, s.target, layoutText(l))
		}
		s.state, s.err = stateOf(err), err
		e.Failures = append(e.Failures, Failure{Target: s.target, Err: err})
	}
	return e
}

// NextID returns an ID from the buffer. If the buffer is empty it waits,
// behind the calls that waited first, until the fill brings an ID or ctx
// is done. By default it waits also while the servers acquire their
// machine IDs; it fails at once only when no server can serve: each one
// failed since it last answered, or refused the client, or (with
// WithFailFast) is not ready. It then returns an [*Error] naming each. After
// Close it returns [ErrClosed]. An ID handed out is at most the maximum
// age old, by this process's clock; no ID is handed out twice.
func (c *Client) NextID(ctx context.Context) (ringflake.ID, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, ErrClosed
	}
	now := time.Now()
	if id, ok := c.take(c.freshFrom(now)); ok { // no one waits: see Client.mu
		c.stats.Served++
		c.mu.Unlock()
		return ringflake.ID(id), nil
	}
	if err := c.unservable(); err != nil {
		c.mu.Unlock()
		return 0, err
	}
	w := &waiter{ready: make(chan struct{}), began: now}
	c.waiters = append(c.waiters, w)
	c.wakeFills()
	c.mu.Unlock()
	select {
	case <-w.ready:
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.waiters, w); i >= 0 {
			c.waiters = slices.Delete(c.waiters, i, i+1)
			c.finish(w, 0, ctx.Err(), time.Now())
		} // else it was answered meanwhile: the answer stands
		c.mu.Unlock()
	}
	return ringflake.ID(w.id), w.err
}

// take returns the next ID of the buffer, dropping those below min (older
// than the maximum age: the time field is the ID's top bits, so the order
// of IDs is the order of their ticks), or false if none is left. It
// requires c.mu.
func (c *Client) take(min int64) (int64, bool) {
	for c.count > 0 {
		id := c.pop()
		if id >= min {
			return id, true
		}
		c.stats.Dropped++
	}
	return 0, false
}

// pop takes the next ID from the buffer, which is not empty, and wakes the
// fills if the buffer falls below the refill point. It requires c.mu.
func (c *Client) pop() int64 {
	b := c.blocks[0]
	id := b[c.head]
	c.head++
	if c.head == len(b) {
		c.blocks[0] = nil
		c.blocks = c.blocks[1:]
		c.head = 0
	}
	c.count--
	if c.asleep && c.count+c.pending < c.size.refill() {
		c.wakeFills()
	}
	return id
}

// serveWaiters hands the buffer's IDs to the waiters, first come first
// served, until one or the other runs out. It requires c.mu.
func (c *Client) serveWaiters(now time.Time) {
	min := c.freshFrom(now)
	for len(c.waiters) > 0 {
		id, ok := c.take(min)
		if !ok {
			return
		}
		c.stats.Served++
		c.finish(c.waiters[0], id, nil, now)
		c.waiters[0] = nil
		c.waiters = c.waiters[1:]
	}
}

// failWaiters ends every wait with the client's *Error if no server can
// serve. It requires c.mu.
func (c *Client) failWaiters() {
	if len(c.waiters) == 0 {
		return
	}
	if err := c.unservable(); err != nil {
		c.endWaits(err)
	}
}

// endWaits ends every wait with err. It requires c.mu.
func (c *Client) endWaits(err error) {
	now := time.Now()
	for _, w := range c.waiters {
		c.finish(w, 0, err, now)
	}
	c.waiters = nil
}

// finish answers w, which the caller has taken off c.waiters, and counts
// its wait. It requires c.mu.
func (c *Client) finish(w *waiter, id int64, err error, now time.Time) {
	w.id, w.err = id, err
	c.waits.add(now.Sub(w.began))
	close(w.ready)
}

// freshFrom returns the least ID of a tick that is at most the maximum age
// old at now: the first tick at or after now-maxAge.
func (c *Client) freshFrom(now time.Time) int64 {
	cutoff := now.Add(-c.o.maxAge).Sub(c.layout.Epoch)
	if cutoff <= 0 {
		return 0
	}
	tick := (int64(cutoff) + int64(c.layout.Tick) - 1) / int64(c.layout.Tick) // rounded up
	return tick << (c.layout.MachineBits + c.layout.SequenceBits)
}

// unservable returns an [*Error] if no server can serve: none is ready,
// yet to answer, or (unless WithFailFast) acquiring its machine ID. Else
// it returns nil. It requires c.mu, or no fill running.
func (c *Client) unservable() error {
	e := &Error{}
	for _, s := range c.servers {
		if s.state == Ready || s.state == Connecting || s.state == Acquiring && !c.o.failFast {
			return nil
		}
		e.Failures = append(e.Failures, Failure{Target: s.target, Err: s.err})
	}
	return e
}

// wakeFills wakes every fill asleep in reserve. It requires c.mu.
func (c *Client) wakeFills() {
	if c.asleep {
		close(c.changed)
		c.changed = make(chan struct{})
		c.asleep = false
	}
}

// Close ends the fill, drops the buffer, ends the waiting NextID calls
// with ErrClosed and closes the connections. It returns once the fill
// goroutines have stopped, which cancelling their calls makes prompt: it
// waits on no server. It returns nil, also when called again.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.blocks, c.head, c.count = nil, 0, 0
	c.endWaits(ErrClosed)
	c.wakeFills()
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.closeConns()
	return nil
}

func (c *Client) closeConns() {
	for _, s := range c.servers {
		_ = s.conn.Close()
	}
}

// layoutOf is the ringflake.Layout of an Info answer, and an error if
// ringflake makes no such layout.
func layoutOf(l *pb.Layout) (ringflake.Layout, error) {
	out := ringflake.Layout{
		TimeBits: int(l.GetTimeBits()), MachineBits: int(l.GetMachineBits()), SequenceBits: int(l.GetSequenceBits()),
		Epoch: time.Unix(0, l.GetEpochUnixNanos()).UTC(), Tick: time.Duration(l.GetTickNanos()), DatacenterBits: int(l.GetDatacenterBits()),
	}
	if out.TimeBits < 1 || out.SequenceBits < 1 || out.TimeBits+out.MachineBits+out.SequenceBits > 63 || out.Tick <= 0 {
		return out, fmt.Errorf("not a layout")
	}
	return out, nil
}

// layoutText is l in a line: its bits, tick and epoch.
func layoutText(l ringflake.Layout) string {
	return fmt.Sprintf("%d+%d+%d bits, tick %v, epoch %s", l.TimeBits, l.MachineBits, l.SequenceBits, l.Tick,
		l.Epoch.UTC().Format(time.RFC3339Nano))
}

// sameLayout reports whether a and b split and time IDs alike.
func sameLayout(a, b ringflake.Layout) bool {
	return a.TimeBits == b.TimeBits && a.MachineBits == b.MachineBits && a.SequenceBits == b.SequenceBits &&
		a.Epoch.Equal(b.Epoch) && a.Tick == b.Tick
}
