package machineid

import (
	"cmp"
	"fmt"
	"time"

	"github.com/ringflake/ringflake/internal/sentinel"
)

// An Option configures a [Holder]. The options in this package mean the
// same in every store; a store's own, such as a key prefix, are in its
// package. A nil Option is ignored. Zero, for every duration, means the
// default; a negative one is refused, except by [WithMaxClockOffset], where
// it turns the check off.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// The Holder's own bounds; a store may narrow them ([Limits]).
const (
	defaultTTL  = 10 * time.Second
	minTTL      = 100 * time.Millisecond
	maxTTL      = time.Hour
	minDuration = time.Millisecond // of the margin and the call timeout
	maxCallTime = 2 * time.Second  // the default call timeout's ceiling

	defaultMaxOffset = 2 * time.Second
	maxMaxOffset     = time.Hour
)

type config struct {
	lo, hi      int64
	ttl         time.Duration
	margin      time.Duration
	callTimeout time.Duration
	maxOffset   time.Duration // negative: the clock check is off
	store       []storeOption // applied by NewHolder to the store's settings
}

// WithRange sets the machine IDs to take, lo..hi inclusive, with
// 0 <= lo <= hi; hi is usually the generator's Layout.MaxMachine. The
// default is 0..1023, the default layout's IDs. A store may bound the
// range further (see its Limits).
func WithRange(lo, hi int64) Option {
	return optionFunc(func(c *config) { c.lo, c.hi = lo, hi })
}

// WithTTL sets how long the store keeps a lease without a renewal, within
// 100ms..1h and the store's own bounds; 0 means the default, 10s, or the
// store's own (see [Limits]; the file store's is 500ms). Renewals
// run every TTL/3. The TTL is how long a crashed holder's ID stays taken,
// and how far ahead of the clock the mark is raised. The lease rides out a
// store outage of up to 2·TTL/3 − safety margin (4.67s at the defaults)
// when the store answers the renewal in flight once it is back (a paused
// or overloaded server, delayed packets); one that refuses connections
// meanwhile costs up to TTL/10 more, one that drops packets a TCP
// retransmission. A longer outage stops the generator until a renewal
// succeeds; a longer TTL rides out a longer one.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithSafetyMargin sets how long before its lease could expire in the store
// the Holder stops vouching for it: the lease is held until the send time
// of the last confirmed call plus the TTL less the margin, on the holder's
// monotonic clock. It covers a difference between the holder's and the
// store's clock rates and the delay before a generator hears of the loss.
// It must be at least 1ms, since none would cover nothing, and below
// TTL/2; 0 means the default, TTL/5.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.margin = d })
}

// WithCallTimeout bounds each call to the store that the Holder makes on
// its own: renewals, takes after a loss, and the release. It must be
// 1ms..TTL/3, so that a renewal that times out leaves time to retry before
// the lease's deadline; 0 means the default, min(TTL/3, 2s). MachineID's
// call is bounded by its context's deadline instead, when it has one.
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.callTimeout = d })
}

// WithMaxClockOffset bounds how far the holder's clock (the generator's)
// may be from the fleet's when it takes a machine ID, in either direction:
// from its store's reference clock, as the store's Take reports it (Redis's
// TIME, PostgreSQL's clock, the Kubernetes API server's, the median of the
// live holders' clocks on etcd; the file store has none). A clock surely
// further off (the offset, less the measurement's uncertainty, above d) is
// refused at once, before it writes a mark, with a [*ClockOffsetError]
// wrapping [ErrClockOffset]: waiting does not set a clock right. While an
// ID is held, every renewal that reads the reference measures the offset
// again, for [Lease].Clock; one past the bound is reported, not refused:
// the generator stops only where its clock leaves the lease's marks
// ([Lease].After and Until). A reference the store marks tentative (on
// etcd, fewer than three live holders' clocks agree) refuses no one: the
// offset is reported, with [ClockOffset].Tentative.
//
// 0 means the default, 2s; d may be up to 1h. A negative d turns the check
// off: no refusal, and the offset is still measured and reported. On Redis
// the bound also caps how far past its clock a mark may be set, which its
// restart floor (its start + TTL + d) relies on; see docs/machineid_redis.md.
func WithMaxClockOffset(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxOffset = d })
}

// StoreOption returns an Option that sets one of a store's own settings,
// of type S, for stores written on [Holder]; name, such as
// "machineid_redis.WithPrefix", is what an error says when the Option is
// given to another store. Users of a store need not call it: the store's
// package has its options ready made.
func StoreOption[S any](name string, set func(*S)) Option {
	return optionFunc(func(c *config) { c.store = append(c.store, storeOption{name, set}) })
}

type storeOption struct {
	name string
	set  any // a func(*S)
}

// validate fills in the defaults and returns an error wrapping
// ringflake.ErrInvalidConfig for the first value out of its range: the
// Holder's own, narrowed by lim.
func (c *config) validate(lim Limits) error {
	if c.ttl == 0 {
		c.ttl = cmp.Or(lim.DefaultTTL, defaultTTL)
	}
	if c.margin == 0 {
		c.margin = c.ttl / 5
	}
	if c.callTimeout == 0 {
		c.callTimeout = min(c.ttl/3, maxCallTime)
	}
	switch {
	case c.maxOffset == 0:
		c.maxOffset = defaultMaxOffset
	case c.maxOffset < 0:
		c.maxOffset = -1
	case c.maxOffset > maxMaxOffset:
		return invalid("max clock offset", c.maxOffset, fmt.Sprintf("up to %v; negative turns the check off", maxMaxOffset))
	}
	if err := c.validRange(lim); err != nil {
		return err
	}
	if err := c.validTTL(lim); err != nil {
		return err
	}
	switch {
	case c.margin < minDuration || c.margin >= c.ttl/2:
		return invalid("safety margin", c.margin, fmt.Sprintf("%v up to, not including, TTL/2 = %v", minDuration, c.ttl/2))
	case c.callTimeout < minDuration || c.callTimeout > c.ttl/3:
		return invalid("call timeout", c.callTimeout, fmt.Sprintf("%v..%v (TTL/3)", minDuration, c.ttl/3))
	}
	return nil
}

func (c *config) validRange(lim Limits) error {
	maxID := lim.MaxID
	if maxID <= 0 {
		maxID = 1<<63 - 1
	}
	switch {
	case c.lo < 0 || c.lo > c.hi || c.hi > maxID:
		return invalid("range", fmt.Sprintf("%d..%d", c.lo, c.hi), fmt.Sprintf("lo..hi with 0 <= lo <= hi <= %d", maxID))
	case lim.MaxIDs > 0 && c.hi-c.lo >= lim.MaxIDs:
		return invalid("range", fmt.Sprintf("%d..%d (%d IDs)", c.lo, c.hi, c.hi-c.lo+1), fmt.Sprintf("at most %d IDs", lim.MaxIDs))
	}
	return nil
}

func (c *config) validTTL(lim Limits) error {
	lo, hi := max(minTTL, lim.MinTTL), maxTTL
	if lim.MaxTTL > 0 {
		hi = min(hi, lim.MaxTTL)
	}
	switch {
	case c.ttl < lo || c.ttl > hi:
		return invalid("TTL", c.ttl, fmt.Sprintf("%v..%v", lo, hi))
	case lim.TTLStep > 0 && c.ttl%lim.TTLStep != 0:
		return invalid("TTL", c.ttl, fmt.Sprintf("a whole number of %v", lim.TTLStep))
	}
	return nil
}

// invalid returns an error wrapping ringflake.ErrInvalidConfig that names
// the setting, its value and what is valid. It names no store: the
// sentinel names its package, and the caller knows the store it made.
func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", sentinel.ErrInvalidConfig, name, value, valid)
}
