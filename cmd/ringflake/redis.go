package main

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"
)

// redisFlags are gen's flags for taking the machine ID from Redis.
type redisFlags struct {
	addr   string
	prefix string
	mode   string
	rng    string
	ttl    time.Duration
}

func (r *redisFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.addr, "redis", "", "take the machine ID from Redis at `ADDR` (host:port; several, comma-separated, for a Cluster)")
	fs.StringVar(&r.prefix, "redis-prefix", mr.DefaultPrefix, "key prefix `P`, with a {hash tag} on a Cluster")
	fs.StringVar(&r.mode, "redis-mode", "lease", "lease: lowest free ID on a lease; host: the seed's host-IP mapping")
	fs.StringVar(&r.rng, "machine-range", "", "machine IDs Redis may hand out, `MIN-MAX` (default 0-1023 lease, 1-1023 host)")
	fs.DurationVar(&r.ttl, "lease-ttl", mr.DefaultTTL, "lease time to live `D`; a crashed process's ID is free after it")
}

// check rejects Redis flags given without --redis, and bad values.
func (r *redisFlags) check(set map[string]bool) error {
	if set["redis"] {
		// An empty address would fall back to machine ID 0 (a script with
		// an unset variable), and an empty item to go-redis's default
		// address: either way not the server the user meant.
		for _, a := range strings.Split(r.addr, ",") {
			if strings.TrimSpace(a) == "" {
				return usageError("gen: --redis = %q; want host:port, or several comma-separated for a Cluster", r.addr)
			}
		}
	}
	if r.addr == "" {
		for _, name := range []string{"redis-prefix", "redis-mode", "machine-range", "lease-ttl"} {
			if set[name] {
				return usageError("gen: --%s needs --redis", name)
			}
		}
		return nil
	}
	if set["machine-id"] {
		return usageError("gen: --machine-id and --redis both set the machine ID; choose one")
	}
	if r.mode != "lease" && r.mode != "host" {
		return usageError("gen: --redis-mode = %q; want lease or host", r.mode)
	}
	if r.rng != "" {
		if _, _, err := parseRange(r.rng); err != nil {
			return err
		}
	}
	return nil
}

// parseRange parses "MIN-MAX".
func parseRange(s string) (lo, hi int64, err error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || lo < 0 || lo > hi {
		return 0, 0, usageError("gen: --machine-range = %q; want MIN-MAX with 0 <= MIN <= MAX", s)
	}
	return lo, hi, nil
}

// service connects to Redis and returns the machine ID service and a func
// that closes the client. clock, if not nil, is the generator's clock.
func (r *redisFlags) service(maxMachine int64, clock func() time.Time) (machineid.Service, func(), error) {
	redis.SetLogger(quietLogger{}) // go-redis's log lines would break the one-line error rule
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:       strings.Split(r.addr, ","),
		DialTimeout: time.Second,
		MaxRetries:  1,
	})
	opts := []mr.Option{mr.WithPrefix(r.prefix), mr.WithTTL(r.ttl)}
	if r.rng != "" {
		lo, hi, _ := parseRange(r.rng)
		if hi > maxMachine {
			_ = client.Close()
			return nil, nil, usageError("gen: --machine-range = %q; the layout's machine IDs are 0..%d", r.rng, maxMachine)
		}
		opts = append(opts, mr.WithRange(lo, hi))
	}
	if clock != nil {
		opts = append(opts, mr.WithClock(clock))
	}
	newService := mr.NewLeased
	if r.mode == "host" {
		newService = mr.NewHostMapped
	}
	svc, err := newService(client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, usageError("gen: %v", err)
	}
	return svc, func() { _ = client.Close() }, nil
}

// quietLogger drops go-redis's internal log lines; failures reach the user
// as errors instead.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
