package ringflakeclient

import (
	"context"
	"fmt"
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

	// mu protects every field below, and each server's err. The buffer is
	// a queue of blocks: blocks[0][head:] is taken first. count is how many
	// IDs it holds; pending how many the fill has asked for and not yet
	// received. Whoever changes what another goroutine waits for (IDs
	// arriving, IDs taken below the low mark, a server failing or
	// answering, Close) closes changed and makes a new one, waking every
	// waiter, who looks again under mu.
	mu      sync.Mutex
	blocks  [][]int64
	head    int
	count   int
	pending int
	waiting int // NextID calls waiting on an empty buffer
	closed  bool
	changed chan struct{}
	stats   Stats
}

// Stats counts what a Client did since New.
type Stats struct {
	Served    uint64 // IDs NextID returned
	Fetched   uint64 // IDs received from the servers
	Dropped   uint64 // IDs dropped as older than the maximum age
	Failovers uint64 // calls to a server that failed, whose work passed to the next attempt
	Buffered  int    // IDs in the buffer now
}

// server is one target and the fill's view of it.
type server struct {
	target   string
	conn     *grpc.ClientConn
	api      pb.IDsClient
	maxBatch int   // from Info; written and read by the server's fill goroutine
	err      error // the failure since the server last answered, or nil; protected by Client.mu
}

// New returns a Client of the servers at targets (grpc.NewClient targets,
// such as "host:port" or "dns:///name:port"), and starts its fill. Unless
// WithLayout gives the layout, New asks the servers for it in turn, until
// one answers within ctx and the timeout. It fails with an error for a
// bad option or no target, or an [*Error] if no server gave the layout.
// Close the Client to end its fill.
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
	for _, s := range c.servers {
		info, err := c.info(ctx, s)
		if err != nil {
			s.err = err
			continue
		}
		l, err := layoutOf(info.GetLayout())
		if err != nil {
			s.err = err
			continue
		}
		c.layout = l
		return nil
	}
	return c.everyFailure()
}

// NextID returns an ID from the buffer. It waits only while the buffer is
// empty: until the fill brings IDs, ctx is done, or every server has
// failed since it last answered, when it returns an [*Error] naming each.
// After Close it returns [ErrClosed]. An ID handed out is at most the
// maximum age old, by this process's clock; no ID is handed out twice.
func (c *Client) NextID(ctx context.Context) (ringflake.ID, error) {
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return 0, ErrClosed
		}
		if c.count > 0 {
			min := c.freshFrom(time.Now())
			for c.count > 0 {
				// IDs below min are older than the maximum age: the time
				// field is the ID's top bits, so the order of IDs is the
				// order of their ticks.
				id := c.pop()
				if id >= min {
					c.stats.Served++
					c.mu.Unlock()
					return ringflake.ID(id), nil
				}
				c.stats.Dropped++
			}
		}
		if err := c.everyFailure(); err != nil {
			c.mu.Unlock()
			return 0, err
		}
		if c.waiting++; c.waiting == 1 {
			c.broadcast() // the fill may ask a second server (reserve)
		}
		ch := c.changed
		c.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		c.waiting--
		if err != nil {
			c.mu.Unlock()
			return 0, err
		}
	}
}

// pop takes the next ID from the buffer, which is not empty, and wakes the
// fill if the buffer falls below the low mark. It requires c.mu.
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
	if c.count+c.pending == c.o.low-1 { // just fell below the mark
		c.broadcast()
	}
	return id
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

// everyFailure returns an [*Error] if every server has failed since it
// last answered, else nil. It requires c.mu, or no fill running.
func (c *Client) everyFailure() error {
	e := &Error{}
	for _, s := range c.servers {
		if s.err == nil {
			return nil
		}
		e.Failures = append(e.Failures, Failure{Target: s.target, Err: s.err})
	}
	return e
}

// broadcast wakes every goroutine waiting on c.changed. It requires c.mu.
func (c *Client) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Buffered = c.count
	return s
}

// Close ends the fill, drops the buffer and closes the connections. It
// returns once the fill goroutines have stopped, which cancelling their
// calls makes prompt: it waits on no server. It returns nil, also when
// called again.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.blocks, c.head, c.count = nil, 0, 0
	c.broadcast()
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

// layoutOf is the ringflake.Layout of an Info answer.
func layoutOf(l *pb.Layout) (ringflake.Layout, error) {
	out := ringflake.Layout{
		TimeBits: int(l.GetTimeBits()), MachineBits: int(l.GetMachineBits()), SequenceBits: int(l.GetSequenceBits()),
		Epoch: time.Unix(0, l.GetEpochUnixNanos()).UTC(), Tick: time.Duration(l.GetTickNanos()), DatacenterBits: int(l.GetDatacenterBits()),
	}
	if out.TimeBits < 1 || out.SequenceBits < 1 || out.TimeBits+out.MachineBits+out.SequenceBits > 63 || out.Tick <= 0 {
		return out, fmt.Errorf("ringflakeclient: the server's layout %+v is not one ringflake makes", out)
	}
	return out, nil
}

// sameLayout reports whether a and b split and time IDs alike.
func sameLayout(a, b ringflake.Layout) bool {
	return a.TimeBits == b.TimeBits && a.MachineBits == b.MachineBits && a.SequenceBits == b.SequenceBits &&
		a.Epoch.Equal(b.Epoch) && a.Tick == b.Tick
}
