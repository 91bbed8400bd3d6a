package ringflakeclient

import (
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/ringflake/ringflake"
)

// Option configures New.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	low, high  int
	block      int
	timeout    time.Duration
	maxAge     time.Duration
	minBackoff time.Duration
	maxBackoff time.Duration
	layout     *ringflake.Layout
	dial       []grpc.DialOption
	failFast   bool
}

// The defaults of the options.
const (
	DefaultLow        = 16
	DefaultHigh       = 8192
	DefaultBlock      = 1024
	DefaultTimeout    = time.Second
	DefaultMaxAge     = time.Second
	DefaultMinBackoff = 50 * time.Millisecond
	DefaultMaxBackoff = 2 * time.Second
)

func defaults() options {
	return options{low: DefaultLow, high: DefaultHigh, block: DefaultBlock, timeout: DefaultTimeout,
		maxAge: DefaultMaxAge, minBackoff: DefaultMinBackoff, maxBackoff: DefaultMaxBackoff}
}

// WithWaterMarks bounds the buffer's target. The fill learns the rate at
// which IDs are taken and aims to hold, with what it has asked for, the
// IDs taken in half the maximum age: at least low, at most high. It asks
// for more once the buffer falls below half its target. So low is what a
// slow or idle caller keeps (and may see age out), and high the most the
// fill asks for at a time. 0 < low <= high; defaults DefaultLow and
// DefaultHigh.
func WithWaterMarks(low, high int) Option {
	return optionFunc(func(o *options) { o.low, o.high = low, high })
}

// WithBlock sets how many IDs the fill asks for in one block, at least 1;
// a server's --max-batch caps it. Default DefaultBlock.
func WithBlock(n int) Option { return optionFunc(func(o *options) { o.block = n }) }

// WithTimeout sets how long a server has to answer a call or send the next
// block before the fill skips it. Default DefaultTimeout.
func WithTimeout(d time.Duration) Option { return optionFunc(func(o *options) { o.timeout = d }) }

// WithMaxAge sets the age past which an ID is dropped rather than handed
// out. Default DefaultMaxAge.
func WithMaxAge(d time.Duration) Option { return optionFunc(func(o *options) { o.maxAge = d }) }

// WithBackoff sets the first and the longest wait before a failed server
// is asked again; the wait doubles from min to max. Defaults
// DefaultMinBackoff and DefaultMaxBackoff.
func WithBackoff(min, max time.Duration) Option {
	return optionFunc(func(o *options) { o.minBackoff, o.maxBackoff = min, max })
}

// WithLayout gives the servers' layout, so that New need not ask a server
// for it. The client still refuses a server that reports another.
func WithLayout(l ringflake.Layout) Option {
	return optionFunc(func(o *options) { o.layout = &l })
}

// WithFailFast makes NextID fail at once, with an [*Error], when no server
// is ready: by default it waits, within its context, for a server that is
// acquiring its machine ID or has asked to be called again later, as
// gRPC's wait-for-ready does. Either way it waits for a server's first
// answer, and fails at once when every server failed or refused.
func WithFailFast() Option { return optionFunc(func(o *options) { o.failFast = true }) }

// WithDialOptions adds options to every connection's grpc.NewClient; by
// default the connections have no transport security, as serve's API has
// none.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return optionFunc(func(o *options) { o.dial = append(o.dial, opts...) })
}

// check rejects options out of range.
func (o *options) check() error {
	switch {
	case o.low < 1 || o.high < o.low:
		return fmt.Errorf("ringflakeclient: WithWaterMarks(%d, %d); want 0 < low <= high", o.low, o.high)
	case o.block < 1 || o.block > 1<<16:
		return fmt.Errorf("ringflakeclient: WithBlock(%d); want 1..65536", o.block)
	case o.timeout <= 0:
		return fmt.Errorf("ringflakeclient: WithTimeout(%v); want above 0", o.timeout)
	case o.maxAge <= 0:
		return fmt.Errorf("ringflakeclient: WithMaxAge(%v); want above 0", o.maxAge)
	case o.minBackoff <= 0 || o.maxBackoff < o.minBackoff:
		return fmt.Errorf("ringflakeclient: WithBackoff(%v, %v); want 0 < min <= max", o.minBackoff, o.maxBackoff)
	}
	return nil
}
