package machineid_redis

import (
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults and limits of the options; the option docs give the reasons.
const (
	defaultPrefix = "{ringflake}:"
	defaultTTL    = 10 * time.Second
	minTTL        = time.Second
	maxTTL        = 5 * time.Minute
	minMargin     = time.Millisecond
	minCall       = time.Millisecond
	maxCall       = 2 * time.Second // the default's ceiling, not a limit
	maxSkew       = time.Minute
	// maxID is the largest machine ID a Service hands out: the largest
	// number Lua's tostring spells out digit by digit, which lease keys
	// need.
	maxID = 1e14 - 1
)

// An Option configures a [Service] made by [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix      string
	min, max    int64
	rangeSet    bool // the default range depends on the mode
	ttl         time.Duration
	margin      time.Duration
	callTimeout time.Duration
	skew        time.Duration
	clock       func() time.Time
	hostMode    bool
	host        string
}

// WithPrefix sets the prefix of every key. It must contain a Redis Cluster
// hash tag, a non-empty "{...}", so all keys share one slot, unless the
// client is a plain *redis.Client (standalone or Sentinel), where any
// prefix works; deployments with an untagged prefix keep theirs that
// way. "", the default, means "{ringflake}:".
func WithPrefix(p string) Option {
	return optionFunc(func(c *config) { c.prefix = p })
}

// WithRange sets the machine IDs the service may hand out, min..max
// inclusive, with 0 <= min <= max < 10^14; keep max within the layout's
// MaxMachine, or the generator refuses an ID above it. The default is
// 0..1023 in lease mode and 1..1023 in host mode, as host mappings number them, which fit the
// default layout. Lease mode's acquire script scans the range inside
// Redis, blocking it meanwhile: about 1ms for 1024 IDs all held, so keep
// ranges to a few thousand IDs. The bound 10^14 is where Lua starts
// spelling numbers in exponent form, and two IDs could share a lease key.
func WithRange(min, max int64) Option {
	return optionFunc(func(c *config) { c.min, c.max, c.rangeSet = min, max, true })
}

// WithTTL sets the lease's time to live, 1s..5m; 0 means the default, 10s.
// Renewals run every TTL/3. The TTL is how long a crashed holder's ID
// stays taken, how far ahead of the time issued its mark is raised, and
// how long a generator waits after Redis restarts (see the package doc).
// Below 1s, the safety margin and the renewal interval are within reach of
// a GC pause or a busy scheduler, and leases would lapse in normal
// running; above 5m, IDs of crashed holders stay unusable for that long
// and the wait after a Redis restart exceeds any sensible acquire timeout
// (ringflake.WithAcquireTimeout, 30s by default, must cover TTL +
// WithMaxClockSkew for New to wait it out).
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithSafetyMargin sets how long before the TTL could run out on the
// server the service stops vouching for its lease: it reports the lease
// not held at (send time of the last successful renewal) + TTL − margin,
// by the local monotonic clock. The margin covers the gap between the
// local and the server's clock rates and a watcher's scheduling delay; it
// is also how far this process's clock may read ahead of the Redis
// server's, beyond WithMaxClockSkew, before acquisitions and renewals
// refuse to raise a mark (see the package doc). It must be at least 1ms,
// less would cover nothing, and below TTL/2, which would leave a lease
// vouched for too short a part of its TTL for a failed renewal to be
// retried; 0 means the default, TTL/5.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.margin = d })
}

// WithCallTimeout bounds each Redis call, whatever the client's own
// settings: go-redis honours context deadlines only with
// ContextTimeoutEnabled, so the service stops waiting itself. It must be
// 1ms..TTL/3, so that a renewal sent at TTL/3 that times out still leaves
// time to retry before the lease's deadline; 0 means the default,
// min(TTL/3, 2s). The first acquisition is bounded by its context's
// deadline instead, when it has one.
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.callTimeout = d })
}

// WithMaxClockSkew sets how far apart the clocks of the processes sharing
// the prefix, and the Redis server's, may be; 0..1m, and 0, the default,
// means they agree (within the safety margin).
//
// It matters in two places. After a Redis restart that lost marks (no
// persistence, or an older snapshot), every ID is taken to have been used
// up to the restart + TTL + d, so a process whose clock is up to d behind
// a holder that was live before the restart does not reuse that holder's
// times; the price is a wait of up to TTL + d after a Redis restart. And a
// process whose clock reads more than d plus the safety margin ahead of
// the server's is refused, so that no mark is set further ahead of the
// server's time than TTL + margin + d. NTP keeps clocks within
// milliseconds, so a minute is already a broken clock, which the
// allowance should not hide. While the marks survive, skew between holders
// needs no allowance: a new holder waits for its clock to pass the mark,
// however far behind it is. Marks lost without a restart (a failover to a
// replica that lagged, a FLUSHALL) are not covered at all; see the package
// doc.
func WithMaxClockSkew(d time.Duration) Option {
	return optionFunc(func(c *config) { c.skew = d })
}

// WithClock sets the clock the high-water marks are read from. Give it the
// same clock as the generator's (ringflake.WithClock), so the marks are in
// the time the generator issues in. nil, the default, is time.Now.
func WithClock(clock func() time.Time) Option {
	return optionFunc(func(c *config) { c.clock = clock })
}

// WithHostMapping puts the service in host mode, compatible with the keys
// and data of an existing host mapping: host is looked up in
// <prefix>IP_MACHINE_ID_MAPPING and, if absent, given the ID after
// <prefix>MAX_ID, in one atomic script that never goes past the range. The
// ID is then leased like in lease mode, so a second live process on the
// host is refused with [ErrHostInUse] instead of sharing it. IDs are never
// recycled, so host churn can exhaust the range ([ErrExhausted]). host ""
// means this host's first private IPv4 address, as host mappings use, or
// its hostname if it has none.
func WithHostMapping(host string) Option {
	return optionFunc(func(c *config) { c.hostMode, c.host = true, host })
}

// validate fills in the defaults and checks every option.
func (c *config) validate(client redis.UniversalClient) error {
	if c.prefix == "" {
		c.prefix = defaultPrefix
	}
	if !c.rangeSet {
		c.min, c.max = 0, 1023
		if c.hostMode {
			c.min = 1 // host mappings number IDs from 1
		}
	}
	if c.ttl == 0 {
		c.ttl = defaultTTL
	}
	if c.margin == 0 {
		c.margin = c.ttl / 5
	}
	if c.callTimeout == 0 {
		c.callTimeout = min(c.ttl/3, maxCall)
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	switch {
	case client == nil:
		return configErr("client is nil")
	case !hasHashTag(c.prefix) && !isSingleNode(client):
		return configErr("prefix %q has no hash tag; Lua scripts need every key in one Cluster slot, so use one like %q",
			c.prefix, "{"+strings.Trim(c.prefix, ":")+"}:")
	case c.min < 0 || c.min > c.max || c.max > maxID:
		return configErr("machine ID range %d..%d; want 0 <= min <= max <= %d", c.min, c.max, int64(maxID))
	case c.ttl < minTTL || c.ttl > maxTTL:
		return configErr("TTL = %v; valid range %v..%v", c.ttl, minTTL, maxTTL)
	case c.margin < minMargin || c.margin >= c.ttl/2:
		return configErr("safety margin = %v; valid range %v up to, not including, TTL/2 = %v", c.margin, minMargin, c.ttl/2)
	case c.callTimeout < minCall || c.callTimeout > c.ttl/3:
		return configErr("call timeout = %v; valid range %v..%v (TTL/3)", c.callTimeout, minCall, c.ttl/3)
	case c.skew < 0 || c.skew > maxSkew:
		return configErr("max clock skew = %v; valid range 0..%v", c.skew, maxSkew)
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
