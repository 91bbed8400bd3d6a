// Package store makes the machine ID Leaser that a --lease URL names, on
// Redis, etcd, PostgreSQL, MySQL or Kubernetes, from the URL and the settings
// every lease has. It does not contact the store: the generator does.
package store

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ringflake/ringflake/internal/holderclock"
	"github.com/ringflake/ringflake/machineid"
)

// Config is what a store gets besides its URL.
type Config struct {
	Lo, Hi                 int64         // the machine IDs it may hand out; Hi < 0 means the store's default
	TTL, Margin, MaxOffset time.Duration // 0 means the store's default; a negative MaxOffset turns the clock check off
	// Clock is the generator's clock, nil for time.Now. ringflake.New hands
	// its clock to a *machineid.Holder, but not through the wrappers some
	// stores here put around theirs (reachable, tableMaker), so Open hands
	// it to the Holder itself: its marks, and the check of its clock
	// against the store's, are then in the generator's time.
	Clock func() time.Time
}

// common are the options of package machineid that c sets, for every store.
func (c Config) common() []machineid.Option {
	opts := []machineid.Option{machineid.WithTTL(c.TTL), machineid.WithSafetyMargin(c.Margin), machineid.WithMaxClockOffset(c.MaxOffset)}
	if c.Hi >= 0 {
		opts = append(opts, machineid.WithRange(c.Lo, c.Hi))
	}
	return opts
}

// An opener makes the Leaser of one store from its URL.
type opener func(u *url.URL, c Config) (machineid.Leaser, func(), error)

// openers maps each URL scheme to its store's opener. A store plugs in
// here, with one function.
var openers = map[string]opener{
	"redis":      redisLease,
	"rediss":     redisLease,
	"etcd":       etcdLease,
	"k8s":        k8sLease,
	"mysql":      mysqlLease,
	"postgres":   postgresLease,
	"postgresql": postgresLease,
}

// Schemes returns the URL schemes Open takes, sorted.
func Schemes() []string {
	s := make([]string, 0, len(openers))
	for k := range openers {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Open makes the Leaser that u names, and a func that closes its
// connection. Its errors are in the URL or the settings: it does not
// contact the store.
func Open(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	open := openers[u.Scheme]
	if open == nil {
		return nil, nil, fmt.Errorf("unsupported scheme %q; supported: %s", u.Scheme, strings.Join(Schemes(), ", "))
	}
	l, done, err := open(u, c)
	if err == nil && c.Clock != nil {
		holderclock.Set(holderOf(l), c.Clock)
	}
	return l, done, err
}

// holderOf returns the *machineid.Holder that l wraps, or l.
func holderOf(l machineid.Leaser) machineid.Leaser {
	if w, ok := l.(interface{ holder() *machineid.Holder }); ok {
		return w.holder()
	}
	return l
}
