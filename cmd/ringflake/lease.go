package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringflake/ringflake/cmd/ringflake/internal/startup"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/store"
	"github.com/ringflake/ringflake/machineid"
)

// leaseFlags are the flags of gen and serve for leasing the machine ID from a store: the
// store's URL, and the settings every lease has whatever the store.
type leaseFlags struct {
	cmd    string // the command's name, for messages; set by register
	url    string
	rng    string
	ttl    time.Duration
	margin time.Duration
	offset time.Duration
}

func (l *leaseFlags) register(fs *flag.FlagSet) {
	l.cmd = fs.Name()
	fs.StringVar(&l.url, "lease", "", "lease the machine ID from the store at `URL`: "+
		"redis://[user:pass@]host:port[/db], rediss:// for TLS, redis://host:port?addr=host2:port2&addr=... for a Cluster "+
		"(query parameters prefix=P (default {ringflake}:), mode=host[&host=NAME] for a host-IP mapping (IP_MACHINE_ID_MAPPING, MAX_ID), and go-redis's own); "+
		"etcd://host:port[,host:port...][?prefix=P] (default prefix ringflake/machineid/); "+
		"postgres://user:pass@host:port/db (or postgresql://) with table=NAME (default ringflake_machine_ids, created if missing) and pgx's own parameters; "+
		"mysql://user:pass@host[:port]/db, MySQL or MariaDB, with table=NAME as for postgres and the Go MySQL driver's own parameters; "+
		"k8s://NAMESPACE[?prefix=P&identity=NAME], Lease objects on the cluster of $KUBECONFIG (or ~/.kube/config), or of the pod's service account in a pod "+
		"(default prefix ringflake-machine-, identity $POD_NAME or the hostname); "+
		"zk://host:port[,host:port...][/path], ZooKeeper (default path /ringflake/machineid)")
	fs.StringVar(&l.rng, "machine-range", "", "machine IDs the lease may hand out, `MIN-MAX` (default 0-1023, or the layout's IDs if fewer, 0-63 in js; 1-1023 with mode=host)")
	fs.DurationVar(&l.ttl, "lease-ttl", 0, "lease time to live `D` (default 10s): a crashed process's ID is free after it, and a new process may wait up to it after the store restarts; "+
		"redis 1s..5m, etcd whole seconds 1s..1h, postgres and mysql 100ms..1h, k8s 1s..1h (Leases count whole seconds, rounded up), zk up to the servers' maxSessionTimeout; "+
		"on Redis, every process of one prefix must use the same --lease-ttl and --max-clock-offset, or its restart floor may not cover their marks")
	fs.DurationVar(&l.margin, "safety-margin", 0, "stop vouching for the lease `D` before its TTL could run out on the server; below TTL/2 (default TTL/5)")
	fs.DurationVar(&l.offset, "max-clock-offset", 0, "refuse, at once, to take a machine ID while this clock is further than `D` ahead of or behind the store's: "+
		"Redis's TIME, PostgreSQL's, MySQL's, the API server's, the median of the live holders' on etcd, ZooKeeper's (a write's mtime) (0, the default: 2s; up to 1h; negative: no check). "+
		"Redis also caps marks at TTL + D past its clock, and a fresh or restarted Redis's holders wait TTL + 2·D")
}

// leaseOnly are the flags that mean nothing without --lease.
var leaseOnly = []string{"machine-range", "lease-ttl", "safety-margin", "max-clock-offset"}

// check rejects lease flags given without --lease, and bad values.
func (l *leaseFlags) check(set map[string]bool) error {
	if set["lease"] && l.url == "" {
		return usageError("%s: --lease = \"\"; want a URL such as redis://host:port", l.cmd)
	}
	if l.url == "" {
		for _, name := range leaseOnly {
			if set[name] {
				return usageError("%s: --%s needs --lease", l.cmd, name)
			}
		}
		return nil
	}
	if set["machine-id"] {
		return usageError("%s: --machine-id and --lease both set the machine ID; choose one", l.cmd)
	}
	if l.rng != "" {
		if _, _, err := l.parseRange(); err != nil {
			return err
		}
	}
	return nil
}

// parseRange parses --machine-range, "MIN-MAX".
func (l *leaseFlags) parseRange() (lo, hi int64, err error) {
	a, b, ok := strings.Cut(l.rng, "-")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || lo < 0 || lo > hi {
		return 0, 0, usageError("%s: --machine-range = %q; want MIN-MAX with 0 <= MIN <= MAX", l.cmd, l.rng)
	}
	return lo, hi, nil
}

// schemes lists the supported schemes, for messages.
func schemes() string { return strings.Join(store.Schemes(), ", ") }

// parsed returns the --lease URL, or a usage error that does not repeat
// it: it may hold a password.
func (l *leaseFlags) parsed() (*url.URL, error) {
	if !strings.Contains(l.url, "://") {
		return nil, usageError("%s: --lease wants a URL such as redis://host:port; supported schemes: %s", l.cmd, schemes())
	}
	u, err := url.Parse(l.url)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case err != nil:
		return nil, usageError("%s: --lease is not a valid URL: %v", l.cmd, err)
	case !slices.Contains(store.Schemes(), u.Scheme):
		return nil, usageError("%s: --lease: unsupported scheme %q; supported: %s", l.cmd, u.Scheme, schemes())
	}
	return u, nil
}

// defaultMaxMachine is the top of a store's default range: the default
// layout's largest machine ID.
const defaultMaxMachine = 1023

// leaser makes the Leaser the flags describe, and returns with it a func
// that closes its connection and the URL without its password, for
// messages. The lease hands out machine IDs base..base+maxMachine: the
// layout's (base 0), or, with a datacenter split (split), the datacenter's
// (Layout.Workers), the default range then, of which --machine-range
// names the workers. clock is the generator's, nil for time.Now.
func (l *leaseFlags) leaser(base, maxMachine int64, split bool, clock func() time.Time) (_ machineid.Leaser, done func(), name string, _ error) {
	u, err := l.parsed()
	if err != nil {
		return nil, nil, "", err
	}
	c := store.Config{Hi: -1, TTL: l.ttl, Margin: l.margin, MaxOffset: l.offset, Clock: clock}
	what := "machine IDs"
	switch {
	case split:
		c.Lo, c.Hi, what = base, base+maxMachine, "workers in a datacenter"
	case maxMachine < defaultMaxMachine:
		c.Lo, c.Hi = 0, maxMachine // a narrow layout's, such as js's 0..63, in place of the store's 0..1023
	}
	if l.rng != "" {
		lo, hi, _ := l.parseRange()
		if hi > maxMachine {
			return nil, nil, "", usageError("%s: --machine-range = %q; the layout's %s are 0..%d", l.cmd, l.rng, what, maxMachine)
		}
		c.Lo, c.Hi = base+lo, base+hi
	}
	leaser, done, err := store.Open(u, c)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %w", errUsage, inContext(fmt.Sprintf("%s: lease %s", l.cmd, u.Redacted()), err))
	}
	return leaser, startup.CloseAfterRelease(leaser, done), u.Redacted(), nil
}
