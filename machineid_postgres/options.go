package machineid_postgres

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ringflake/ringflake"
)

// Defaults and bounds of the options.
const (
	defaultTable         = "ringflake_machine_ids"
	defaultTTL           = 10 * time.Second
	minTTL               = 100 * time.Millisecond
	maxTTL               = 24 * time.Hour
	maxCallTimeout       = 2 * time.Second // the default call timeout is min(TTL/3, this)
	maxRangeSize         = 1 << 16         // one row per ID
	defaultMaxID   int64 = 1023
)

// An Option configures a [Leaser] made by [New]. A nil Option is ignored.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	table       string
	lo, hi      int64
	ttl         time.Duration
	margin      time.Duration // 0: ttl/5
	callTimeout time.Duration // 0: min(ttl/3, 2s)
	clock       func() time.Time
}

// WithTable sets the table holding the leases: a lowercase SQL identifier
// (a-z, 0-9 and _, not starting with a digit, at most 63 bytes), optionally
// qualified by a schema named the same way, as in "ids.machine_leases". The
// default is ringflake_machine_ids. Leasers that share a table share its
// machine IDs, and their ranges should not overlap unless they issue into
// one ID space.
func WithTable(name string) Option {
	return optionFunc(func(c *config) { c.table = name })
}

// WithRange sets the machine IDs the Leaser may take, lo..hi inclusive,
// with 0 <= lo <= hi and at most 65536 IDs (the table holds a row for each
// ID it has handed out); hi is usually the generator's
// Layout.MaxMachine(). The default is 0..1023, the default layout's IDs.
func WithRange(lo, hi int64) Option {
	return optionFunc(func(c *config) { c.lo, c.hi = lo, hi })
}

// WithTTL sets how long a lease lives in the database without a renewal,
// 100ms..24h; renewals run every TTL/3. A shorter TTL frees a crashed
// holder's ID sooner and costs more statements. 0 means the default, 10s.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.ttl = d })
}

// WithSafetyMargin sets how long before its row can expire in the database
// the holder stops vouching for its lease: the lease is held until the time
// the last successful statement was sent plus the TTL less the margin, on
// the holder's monotonic clock. The margin covers a difference between the
// rates of the holder's and the database's clocks, and the delay before a
// generator hears of the loss. It must be above 0 and below TTL/2; 0 means
// the default, TTL/5.
func WithSafetyMargin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.margin = d })
}

// WithCallTimeout bounds each statement the Leaser runs in the background
// (renewals, acquisitions after a loss) and its release. It must be above 0
// and at most the TTL; 0 means the default, min(TTL/3, 2s). MachineID is
// bounded by its context's deadline instead, when it has one.
func WithCallTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.callTimeout = d })
}

// WithClock sets the clock that marks are read from: the times up to which
// holders may issue. Give it the generator's clock (ringflake.WithClock),
// so the marks are in the time the generator issues in. It must be safe for
// concurrent use. nil, the default, is time.Now. Expiry never uses it: the
// database's clock decides when a row expires, and the holder's monotonic
// clock when its lease ends.
func WithClock(clock func() time.Time) Option {
	return optionFunc(func(c *config) { c.clock = clock })
}

// identifier is one lowercase SQL identifier, which reads the same quoted
// or not.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// validate fills in the defaults and returns an error wrapping
// ringflake.ErrInvalidConfig for the first value out of range.
func (c *config) validate() error {
	if c.ttl == 0 {
		c.ttl = defaultTTL
	}
	if c.margin == 0 {
		c.margin = c.ttl / 5
	}
	if c.callTimeout == 0 {
		c.callTimeout = min(c.ttl/3, maxCallTimeout)
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	switch {
	case !validTable(c.table):
		return invalid("table", fmt.Sprintf("%q", c.table), "a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit; at most 63 bytes), optionally schema.table")
	case c.lo < 0 || c.lo > c.hi || c.hi-c.lo >= maxRangeSize:
		return invalid("range", fmt.Sprintf("%d..%d", c.lo, c.hi), fmt.Sprintf("lo..hi with 0 <= lo <= hi and at most %d IDs", maxRangeSize))
	case c.ttl < minTTL || c.ttl > maxTTL:
		return invalid("TTL", c.ttl, fmt.Sprintf("%v..%v", minTTL, maxTTL))
	case c.margin < 0 || c.margin >= c.ttl/2:
		return invalid("safety margin", c.margin, fmt.Sprintf("above 0 and below TTL/2 (%v)", c.ttl/2))
	case c.callTimeout < 0 || c.callTimeout > c.ttl:
		return invalid("call timeout", c.callTimeout, fmt.Sprintf("above 0 and at most the TTL (%v)", c.ttl))
	}
	return nil
}

// validTable reports whether name is an identifier, or two joined by a
// dot.
func validTable(name string) bool {
	schema, table, qualified := strings.Cut(name, ".")
	if !qualified {
		return identifier.MatchString(name)
	}
	return identifier.MatchString(schema) && identifier.MatchString(table)
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: machineid_postgres: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}
