package machineid_redis

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/mutant"
	"github.com/ringflake/ringflake/machineid"
)

// limits are Redis's bounds on the common options. Below a TTL of 1s the
// margin and the renewal interval are within reach of a GC pause; above
// 5m a crashed holder's ID, and the wait after a Redis restart, last too
// long. Past 10^14 Lua spells numbers in exponent form, and two IDs could
// share a lease key.
var limits = machineid.Limits{
	Name:   "machineid_redis",
	MinTTL: time.Second,
	MaxTTL: 5 * time.Minute,
	MaxID:  1e14 - 1,
	Clock:  true,
}

const defaultPrefix = "{ringflake}:"

// reference names the server's clock, which every script reads.
const reference = "Redis's clock (TIME)"

// settings are the options of this store alone.
type settings struct {
	prefix   string
	hostMode bool
	host     string
}

// WithPrefix sets the prefix of every key. It must contain a Redis Cluster
// hash tag, a non-empty "{...}", so that all keys share one slot, unless
// the client is a plain *redis.Client (standalone or Sentinel). "", the
// default, means "{ringflake}:".
func WithPrefix(p string) machineid.Option {
	return machineid.StoreOption("machineid_redis.WithPrefix", func(s *settings) { s.prefix = p })
}

// WithHostMapping selects host mode, compatible with the keys of an
// existing host mapping: host is looked up in <prefix>IP_MACHINE_ID_MAPPING
// and, if absent, given the ID after <prefix>MAX_ID, in one atomic script
// that never goes past the range; the ID is then leased, so that a second
// live process on the host is refused with [ErrHostInUse]. IDs are never
// recycled. host "" means this host's first private IPv4 address, or its
// hostname if it has none.
func WithHostMapping(host string) machineid.Option {
	return machineid.StoreOption("machineid_redis.WithHostMapping", func(s *settings) { s.hostMode, s.host = true, host })
}

// store is a machineid.Store on Redis.
type store struct {
	client redis.UniversalClient // written once by New
	settings
	keys []string // the scripts' KEYS; written once by New
	late late     // the error of a call eval gave up on

	inflight calls // calls running, even those eval gave up on
}

// New returns a Holder of machine IDs leased from Redis through client, a
// standalone, Sentinel or Cluster client. It does not contact Redis; the
// first MachineID does. It returns an error wrapping
// ringflake.ErrInvalidConfig, naming the value and its valid range, if
// client is nil, an option is out of range, or the prefix has no hash tag
// on a multi-node client.
func New(client redis.UniversalClient, opts ...machineid.Option) (*machineid.Holder, error) {
	h, _, err := newStore(client, opts)
	return h, err
}

// newStore is New, with the store too.
func newStore(client redis.UniversalClient, opts []machineid.Option) (*machineid.Holder, *store, error) {
	if client == nil {
		return nil, nil, invalid("client", "nil", "a redis.UniversalClient")
	}
	s := &store{client: client}
	h, err := machineid.NewHolder(s, &s.settings, limits, opts...)
	if err != nil {
		return nil, nil, err
	}
	if s.prefix == "" {
		s.prefix = defaultPrefix
	}
	_, single := client.(*redis.Client)
	if !hasHashTag(s.prefix) && !single {
		return nil, nil, invalid("prefix", fmt.Sprintf("%q", s.prefix), fmt.Sprintf("one with a hash tag, such as %q: Lua scripts need every key in one Cluster slot", "{"+strings.Trim(s.prefix, ":")+"}:"))
	}
	if s.hostMode && s.host == "" {
		if s.host, err = defaultHost(); err != nil {
			return nil, nil, err
		}
	}
	s.keys = []string{s.prefix + "MARKS"}
	if s.hostMode {
		s.keys = append(s.keys, s.prefix+"IP_MACHINE_ID_MAPPING", s.prefix+"MAX_ID")
	}
	return h, s, nil
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}

// hasHashTag reports whether every key starting with prefix hashes on a
// tag inside prefix: Redis Cluster hashes the text between the first "{"
// and the next "}" when it is non-empty, and the suffixes this package
// appends contain no braces.
func hasHashTag(prefix string) bool {
	_, rest, ok := strings.Cut(prefix, "{")
	return ok && strings.IndexByte(rest, '}') > 0
}

// defaultHost is host mode's name for this host: its first private IPv4
// address, as host mappings use, or else its hostname.
func defaultHost() (string, error) {
	if n, err := machineid.PrivateIP(1<<32 - 1).MachineID(context.Background()); err == nil {
		return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String(), nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", invalid("host", `""`, fmt.Sprintf("a host name: this host has no private IPv4 address and no hostname (%v)", err))
	}
	return h, nil
}

// Take runs the mode's acquire script. The scripts work in ms on the
// holder's clock, c.Now, and answer with the server's time, the reference.
func (s *store) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	now, ttl, until := c.Now.UnixMilli(), c.TTL.Milliseconds(), ceilMs(c.Until)
	restart, slack := s.mutantRestart(ctx, c, restartMs(c)), slackMs(c)
	var (
		res []int64
		err error
	)
	if s.hostMode {
		res, err = s.eval(ctx, hostAcquire, s.prefix, c.Token, s.host, c.Lo, c.Hi, ttl, until, ttl, restart, slack)
	} else {
		prefer := int64(-1)
		if c.Prefer != nil {
			prefer = *c.Prefer
		}
		res, err = s.eval(ctx, leaseAcquire, s.prefix, c.Token, c.Lo, c.Hi, ttl, now, until, ttl, restart, slack, prefer)
	}
	if err != nil {
		return machineid.Grant{}, err
	}
	if err := s.refused(res, c); err != nil {
		return machineid.Grant{}, err
	}
	return machineid.Grant{ID: res[0], After: msTime(res[1]), Until: msTime(res[2]), Clock: serverTime(res[3])}, nil
}

// Renew runs the renew script on id.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	ttl := c.TTL.Milliseconds()
	res, err := s.eval(ctx, renew, s.prefix, c.Token, id, ttl, ceilMs(c.Until), ttl, slackMs(c))
	switch {
	case err != nil:
		return machineid.Grant{}, err
	case len(res) == 3 && res[0] == 1:
		return machineid.Grant{ID: id, Until: msTime(res[1]), Clock: serverTime(res[2])}, nil
	}
	lost := fmt.Errorf("%w: machine ID %d is gone from Redis (expired on the server, deleted, or lost in a restart)", machineid.ErrLeaseLost, id)
	if len(res) > 0 && res[0] == -1 {
		lost = fmt.Errorf("%w: machine ID %d was taken by another owner", machineid.ErrLeaseLost, id)
	}
	if len(res) == 2 && (res[0] == 0 || res[0] == -1) && res[1] > 0 {
		return machineid.Grant{}, restarted(c, id, res[1], lost)
	}
	return machineid.Grant{}, lost
}

// restarted is Renew's error for a lease lost, gone or another owner's,
// on a server that started at startMs on its clock: the Holder judges
// whether that start allows a ride (machineid.RestartError, whose promise
// covers every take since the holding's last confirmed call, whoever
// took the ID). Every take inherits the restart floor, the
// server's start plus restartMs(c) (scripts.go), and a server started
// after a script's run counts its start after that run's TIME, less a
// millisecond at most: the start is in whole ms, TIME in µs. The Floor
// promised is therefore the restart floor's offset less that millisecond.
// It holds for holders that share the TTL and the clock bound, as the
// restart floor itself does.
func restarted(c machineid.Claim, id, startMs int64, lost error) error {
	return &machineid.RestartError{
		ID:    id,
		Start: time.UnixMilli(startMs),
		Floor: time.Duration(restartMs(c)-1) * time.Millisecond,
		Err:   lost,
	}
}

// Release runs the release script, which frees the lease the token's
// owner hash names as well as id.
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	issuedMs := int64(-1) // keep the mark
	if !issued.IsZero() {
		issuedMs = max(ceilMs(issued), 0)
	}
	s.settle(ctx)
	_, err := s.eval(ctx, release, s.prefix, c.Token, id, issuedMs, c.TTL.Milliseconds(), slackMs(c))
	return err
}

// refused turns an acquire script's refusal into an error, or returns nil
// for a well-formed {id, after, mark, server µs}.
func (s *store) refused(res []int64, c machineid.Claim) error {
	if len(res) == 0 {
		return errors.New("the acquire script returned nothing")
	}
	arg := func(i int) int64 {
		if i < len(res) {
			return res[i]
		}
		return 0
	}
	rng := fmt.Sprintf("%d..%d", c.Lo, c.Hi)
	switch code := res[0]; {
	case code >= 0 && len(res) == 4:
		return nil
	case code == -1 && !s.hostMode:
		return fmt.Errorf("%w: machine IDs %s held, each by a lease under the prefix %q (holders are random tokens); the first frees in at most %v",
			machineid.ErrExhausted, rng, s.prefix, time.Duration(arg(2))*time.Millisecond)
	case code == -1:
		return fmt.Errorf("%w: %sMAX_ID = %d, the end of %s, and host %q has no mapping; host mode never recycles IDs, lease mode does",
			machineid.ErrExhausted, s.prefix, arg(1), rng, s.host)
	case code == -2:
		return fmt.Errorf("%w: host %q maps to machine ID %d, leased by another process for %v more; run one process per host or use lease mode",
			ErrHostInUse, s.host, arg(1), time.Duration(arg(2))*time.Millisecond)
	case code == -3:
		return fmt.Errorf("%w: host %q maps to %d, outside %s", ErrBadMapping, s.host, arg(1), rng)
	case code == -4:
		return fmt.Errorf("%w: host %q maps to a value that is not a decimal ID (1-15 digits) in %sIP_MACHINE_ID_MAPPING", ErrBadMapping, s.host, s.prefix)
	case code == -5:
		return fmt.Errorf("%w: %sMAX_ID holds a value that is not a decimal ID (1-15 digits)", ErrBadMapping, s.prefix)
	}
	return fmt.Errorf("the acquire script returned %v", res)
}

// restartMs is how far past a restart, on the server's clock, every ID's
// mark is taken to be (the restart floor), in ms: the TTL, plus how far
// past the server's time a mark may be set (the holders' bound on their
// clocks' offset, which the scripts enforce), plus as far again for
// Redis's own clock stepping back, within the bound, between the write of
// a mark and the restart that lost it (a step while the server ran, or
// across the restart): a mark capped at TTL + bound past Redis's time then
// is within TTL + 2·bound of any later reading of that clock. With the
// check off nothing bounds a mark, and the safety margin stands in: the
// floor then covers a lost mark only if its holder's clock was at most the
// margin ahead of the server's and Redis's clock did not step back;
// nothing checks it. The floor holds for as long as the server runs (see
// restartFloor in scripts.go); a newcomer whose clock is within the bound
// behind the server's finds it in the past once the server has been up for
// this plus the bound.
func restartMs(c machineid.Claim) int64 {
	if c.MaxOffset < 0 {
		return (c.TTL + c.Margin).Milliseconds()
	}
	return (c.TTL + 2*c.MaxOffset).Milliseconds()
}

// slackMs is the scripts' slack: how far past the server's time, beyond
// the TTL, a mark may be set, in ms; -1 for no cap.
func slackMs(c machineid.Claim) int64 {
	if c.MaxOffset < 0 || mutant.On(mutantUncapped) {
		return -1
	}
	return c.MaxOffset.Milliseconds()
}

// serverTime is the reading of the server's clock a script answered with,
// in µs since the Unix epoch.
func serverTime(us int64) machineid.Reading {
	return machineid.Reading{Source: reference, Time: time.UnixMicro(us)}
}

// msTime converts a mark in ms since the Unix epoch to a time; 0 or less
// means no mark, the zero Time.
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// ceilMs returns t in ms since the Unix epoch, rounded up, so that a mark
// made from it covers every instant up to t; 0 for the zero Time.
func ceilMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}
