package machineid_etcd

import (
	"fmt"
	"time"

	"github.com/ringflake/ringflake"
)

// An Option configures a [Leaser] made by [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	prefix      string
	lo, hi      int64
	ttl         time.Duration
	margin      time.Duration // ttl/5 unless marginSet
	marginSet   bool
	callTimeout time.Duration // min(ttl/3, 2s) unless timeoutSet
	timeoutSet  bool
	clock       func() time.Time
}

func defaultConfig() config {
	return config{prefix: "ringflake/machineid/", lo: 0, hi: 1023, ttl: 10 * time.Second, clock: time.Now}
}

// maxTTL is the longest TTL New accepts.
const maxTTL = time.Hour

// WithPrefix sets the prefix of every key the Leaser writes: the owner of
// ID n is at prefix+"owner/n", attached to the holder's etcd lease, and its
// mark at prefix+"mark/n", kept without a lease. Leasers that share a
// prefix share the IDs. It must not be empty; the default is
// "ringflake/machineid/".
func WithPrefix(p string) Option {
	return optionFunc(func(c *config) { c.prefix = p })
}

// WithRange sets the machine IDs the Leaser may take, lo..hi inclusive,
// with 0 <= lo <= hi; hi is usually the generator's Layout.MaxMachine. The
// default is 0..1023, the default layout's.
func WithRange(lo, hi int64) Option {
	return optionFunc(func(c *config) { c.lo, c.hi = lo, hi })
}

// WithTTL sets the etcd lease's time to live, a whole number of seconds
// from 1s to 1h, as etcd counts lease TTLs in seconds; the Leaser renews
// every TTL/3. A crashed holder's ID is free again a TTL after its last
// renewal. etcd raises a TTL below its own minimum (1.5 election timeouts,
// rounded up to a second: 2s with its default settings); the ID of a
// crashed holder then stays taken that long, while the holder still
// vouches for its lease only as long as this TTL allows. The default is
// 10s.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithSafetyMargin sets how long before the lease could expire in etcd the
// Leaser reports it not held: at (send time of the last confirmed grant or
// renewal) + TTL - margin, on the local monotonic clock. It covers a
// difference in rate between the local clock and the etcd leader's, and a
// watcher's scheduling delay. It must be at least 0 and below TTL/2; the
// default is TTL/5.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.margin, c.marginSet = d, true })
}

// WithCallTimeout bounds each etcd call the Leaser makes on its own
// (renewals, re-acquisitions, Release); MachineID's calls are bounded by
// its context's deadline instead when it has one. It must be at least 1ms
// and at most the TTL; the default is min(TTL/3, 2s).
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.callTimeout, c.timeoutSet = d, true })
}

// WithClock sets the clock the marks are read from. Give it the
// generator's clock (ringflake.WithClock), so that the marks are in the
// time the generator issues in. It must not be nil; the default is
// time.Now.
func WithClock(clock func() time.Time) Option {
	return optionFunc(func(c *config) { c.clock = clock })
}

// validate fills in the defaults that depend on the TTL and returns an
// error wrapping ringflake.ErrInvalidConfig for the first value out of
// range.
func (c *config) validate() error {
	if !c.marginSet {
		c.margin = c.ttl / 5
	}
	if !c.timeoutSet {
		c.callTimeout = min(c.ttl/3, 2*time.Second)
	}
	switch {
	case c.prefix == "":
		return invalid("prefix", `""`, "any non-empty string")
	case c.lo < 0 || c.lo > c.hi:
		return invalid("range", fmt.Sprintf("%d..%d", c.lo, c.hi), "lo..hi with 0 <= lo <= hi")
	case c.ttl < time.Second || c.ttl > maxTTL || c.ttl%time.Second != 0:
		return invalid("TTL", c.ttl, "whole seconds from 1s to 1h")
	case c.margin < 0 || c.margin >= c.ttl/2:
		return invalid("safety margin", c.margin, fmt.Sprintf("0 to below %v (TTL/2)", c.ttl/2))
	case c.callTimeout < time.Millisecond || c.callTimeout > c.ttl:
		return invalid("call timeout", c.callTimeout, fmt.Sprintf("1ms..%v (the TTL)", c.ttl))
	case c.clock == nil:
		return invalid("clock", "nil", "a function")
	}
	return nil
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: machineid_etcd: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}
