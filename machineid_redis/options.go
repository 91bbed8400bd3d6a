package machineid_redis

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// DefaultPrefix is the key prefix when WithPrefix is not given. Its
	// hash tag {ringflake} puts every key in one Cluster slot.
	DefaultPrefix = "{ringflake}:"
	// DefaultTTL is the lease's time to live when WithTTL is not given. A
	// crashed holder's ID is free again after at most this long.
	DefaultTTL = 10 * time.Second
)

// An Option configures a [Service] made by [NewLeased] or [NewHostMapped].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix      string
	min, max    int64
	rangeSet    bool
	ttl         time.Duration
	margin      time.Duration // ttl/5 unless set
	marginSet   bool
	callTimeout time.Duration // min(ttl/3, 2s) unless set
	timeoutSet  bool
	skew        time.Duration
	clock       func() time.Time
	host        string
}

// WithPrefix sets the prefix of every key. It must contain a Redis Cluster
// hash tag, a non-empty "{...}", so all keys share one slot, unless the
// client is a plain *redis.Client (standalone or Sentinel), where any
// prefix works; seed deployments with an untagged prefix keep theirs that
// way. The default is [DefaultPrefix].
func WithPrefix(p string) Option {
	return optionFunc(func(c *config) { c.prefix = p })
}

// MaxID is the largest machine ID the service hands out: the largest
// number Lua's tostring spells out digit by digit, which lease keys need.
const MaxID = 1e14 - 1

// WithRange sets the machine IDs the service may hand out, min..max
// inclusive, with 0 <= min <= max; max is usually the layout's
// MaxMachine. The default is 0..1023 in lease mode and the seed's 1..1023
// in host mode. Lease mode's acquire script scans the range inside Redis,
// blocking it meanwhile: about 1ms for 1024 IDs all held, so keep ranges to
// a few thousand IDs. max must be below 10^14 ([MaxID]): Lua spells larger
// numbers in exponent form, and two IDs could then share a lease key.
func WithRange(min, max int64) Option {
	return optionFunc(func(c *config) { c.min, c.max, c.rangeSet = min, max, true })
}

// WithTTL sets the lease's time to live, at least 30ms; renewals run every
// TTL/3. A shorter TTL frees a crashed holder's ID sooner and costs more
// Redis calls. The default is [DefaultTTL].
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithSafetyMargin sets how long before the TTL could run out on the
// server the service stops vouching for its lease: it reports the lease
// invalid at (send time of the last successful renewal) + TTL - margin,
// by the local monotonic clock. The margin covers the gap between the
// local and the server's clock rates and a watcher's scheduling delay. It
// must be at least 0 and below TTL/2; the default is TTL/5.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.margin, c.marginSet = d, true })
}

// WithCallTimeout bounds each Redis call, whatever the client's own
// settings: go-redis honours context deadlines only with
// ContextTimeoutEnabled, so the service stops waiting itself. It must be
// positive and at most the TTL; the default is min(TTL/3, 2s).
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.callTimeout, c.timeoutSet = d, true })
}

// WithMaxClockSkew sets how far apart the clocks of the processes sharing
// the prefix may be, for the one case the marks cannot cover: a Redis that
// restarted without them (no persistence, or an older snapshot). Marks
// lost without a restart (a failover to a replica that lagged, a FLUSHALL)
// are not covered at all; see the package doc. For the TTL plus d after
// such a server starts,
// every ID is taken to have been used up to its start + TTL + d, so a
// process whose clock is up to d behind a holder that was live before the
// restart does not reuse that holder's times. The price is a pause of up
// to TTL + d after a Redis restart. It must be at least 0; the default is
// 0: clocks are taken to agree. While the marks survive, skew needs no
// allowance: a new holder waits for its clock to pass the mark, however
// far behind it is.
func WithMaxClockSkew(d time.Duration) Option {
	return optionFunc(func(c *config) { c.skew = d })
}

// WithClock sets the clock the high-water marks are read from. Give it the
// same clock as the generator's (ringflake.WithClock), so the marks are in
// the time the generator issues in. The default is time.Now.
func WithClock(clock func() time.Time) Option {
	return optionFunc(func(c *config) { c.clock = clock })
}

// WithHost sets, in host mode, the name the mapping files the machine ID
// under. The default is the host's first private IPv4 address, as the
// seed's mapping uses, or the hostname if it has none.
func WithHost(h string) Option {
	return optionFunc(func(c *config) { c.host = h })
}

func (c *config) validate(client redis.UniversalClient) error {
	if !c.marginSet {
		c.margin = c.ttl / 5
	}
	if !c.timeoutSet {
		c.callTimeout = min(c.ttl/3, 2*time.Second)
	}
	switch {
	case client == nil:
		return fmt.Errorf("%w: client is nil", ErrInvalidConfig)
	case !hasHashTag(c.prefix) && !isSingleNode(client):
		return fmt.Errorf("%w: prefix %q has no hash tag; Lua scripts need every key in one Cluster slot, so use one like %q",
			ErrInvalidConfig, c.prefix, "{"+strings.Trim(c.prefix, ":")+"}:")
	case c.min < 0 || c.min > c.max || c.max > MaxID:
		return fmt.Errorf("%w: machine ID range %d..%d; want 0 <= min <= max <= %d", ErrInvalidConfig, c.min, c.max, int64(MaxID))
	case c.ttl < 30*time.Millisecond:
		return fmt.Errorf("%w: TTL = %v; want at least 30ms", ErrInvalidConfig, c.ttl)
	case c.margin < 0 || c.margin >= c.ttl/2:
		return fmt.Errorf("%w: safety margin = %v; valid range 0..%v (below TTL/2)", ErrInvalidConfig, c.margin, c.ttl/2)
	case c.callTimeout <= 0 || c.callTimeout > c.ttl:
		return fmt.Errorf("%w: call timeout = %v; valid range 1ns..%v (the TTL)", ErrInvalidConfig, c.callTimeout, c.ttl)
	case c.clock == nil:
		return fmt.Errorf("%w: clock is nil", ErrInvalidConfig)
	case c.skew < 0:
		return fmt.Errorf("%w: max clock skew = %v; want 0 or more", ErrInvalidConfig, c.skew)
	}
	return nil
}

// hasHashTag reports whether every key starting with prefix hashes on a
// tag inside prefix: Redis Cluster hashes the text between the first "{"
// and the next "}" when it is non-empty, and the suffixes this package
// appends contain no braces.
func hasHashTag(prefix string) bool {
	i := strings.IndexByte(prefix, '{')
	if i < 0 {
		return false
	}
	j := strings.IndexByte(prefix[i+1:], '}')
	return j > 0
}

// isSingleNode reports whether client talks to one server at a time, so
// multi-key scripts work without a hash tag.
func isSingleNode(client redis.UniversalClient) bool {
	_, ok := client.(*redis.Client)
	return ok
}
