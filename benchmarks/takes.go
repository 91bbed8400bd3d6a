package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
	"github.com/ringflake/ringflake/machineid_k8s"
	"github.com/ringflake/ringflake/machineid_mysql"
	"github.com/ringflake/ringflake/machineid_postgres"
	"github.com/ringflake/ringflake/machineid_redis"
)

// The takes scenario measures how long a machine-ID lease store takes to
// lease an ID, at two widths of range, with holders taking one after
// another: first on a fresh server (for Redis, in its restart window, where
// every free ID's mark is the restart floor), then in steady state, once
// the first holders have released their IDs (for Redis, once the window has
// passed). Each store and range gets a server of its own, started as the
// repository's tests start theirs.

// takeRanges are the widths of range measured: the default layout's 10
// machine bits, and 16 (sonyflake's split, and the most PostgreSQL and
// MySQL take).
var takeRanges = []int64{1 << 10, 1 << 16}

// takeTTL is the holders' lease TTL: the default.
const takeTTL = 10 * time.Second

// rig is one store's server, started for one range.
type rig struct {
	// holder returns a new holder on the server, over lo..hi.
	holder func(lo, hi int64) (*machineid.Holder, error)
	// steady waits until a take is in steady state (Redis: until its
	// restart window has passed); nil if it is at once.
	steady func()
	// busy starts a measure of how long the server was busy with each
	// take; the function it returns ends it and gives them. nil if the
	// store does not report it.
	busy func() (end func() []time.Duration)
}

// takeStore names a store and starts its rig.
type takeStore struct {
	name  string
	start func(tb testing.TB) rig
}

var takeStores = []takeStore{
	{"Redis", redisRig},
	{"etcd", etcdRig},
	{"PostgreSQL", postgresRig},
	{"MySQL (MariaDB)", mysqlRig},
	{"Kubernetes", k8sRig},
}

func redisRig(tb testing.TB) rig {
	srv := redistest.Start(tb)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	tb.Cleanup(func() { _ = c.Close() })
	// Every call goes in the slowlog, with how long Redis ran it.
	srv.Do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	srv.Do("CONFIG", "SET", "slowlog-max-len", "100000")
	return rig{
		holder: func(lo, hi int64) (*machineid.Holder, error) {
			return machineid_redis.New(c, machineid.WithRange(lo, hi), machineid.WithTTL(takeTTL))
		},
		// The restart floor lasts the TTL and twice the bound on the
		// clocks' offset (the default, 2s) from the server's start.
		steady: func() { srv.WaitUptime(takeTTL + 4*time.Second) },
		busy: func() func() []time.Duration {
			srv.Do("SLOWLOG", "RESET")
			return func() []time.Duration {
				logs, err := c.SlowLogGet(context.Background(), -1).Result()
				if err != nil {
					tb.Fatalf("SLOWLOG GET: %v", err)
				}
				var took []time.Duration
				for _, l := range logs {
					if isTake(l.Args) {
						took = append(took, l.Duration)
					}
				}
				return took
			}
		},
	}
}

// isTake reports whether a Redis call is a take: EVALSHA (or EVAL) of the
// lease-mode acquire script, which alone has one key and 11 arguments;
// renewals have 7, releases 6.
func isTake(args []string) bool {
	return len(args) == 15 && strings.HasPrefix(strings.ToLower(args[0]), "eval") && args[2] == "1"
}

func etcdRig(tb testing.TB) rig {
	c, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Start(tb).Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		tb.Fatalf("clientv3.New: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return rig{holder: func(lo, hi int64) (*machineid.Holder, error) {
		return machineid_etcd.New(c, machineid.WithRange(lo, hi), machineid.WithTTL(takeTTL))
	}}
}

func postgresRig(tb testing.TB) rig {
	srv := pgtest.Start(tb)
	pool, err := pgxpool.New(context.Background(), srv.DSN())
	if err != nil {
		tb.Fatalf("pgxpool.New: %v", err)
	}
	tb.Cleanup(pool.Close)
	if err := machineid_postgres.CreateTable(context.Background(), pool, ""); err != nil {
		tb.Fatalf("CreateTable: %v", err)
	}
	return rig{holder: func(lo, hi int64) (*machineid.Holder, error) {
		return machineid_postgres.New(pool, machineid.WithRange(lo, hi), machineid.WithTTL(takeTTL))
	}}
}

func mysqlRig(tb testing.TB) rig {
	db, err := sql.Open("mysql", mysqltest.Start(tb).DSN()+"?interpolateParams=true")
	if err != nil {
		tb.Fatalf("sql.Open: %v", err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if err := machineid_mysql.CreateTable(context.Background(), db, ""); err != nil {
		tb.Fatalf("CreateTable: %v", err)
	}
	return rig{holder: func(lo, hi int64) (*machineid.Holder, error) {
		return machineid_mysql.New(db, machineid.WithRange(lo, hi), machineid.WithTTL(takeTTL))
	}}
}

func k8sRig(tb testing.TB) rig {
	srv := k8stest.Start(tb)
	srv.CreateNamespace("bench")
	c, err := kubernetes.NewForConfig(&rest.Config{
		Host:            srv.URL,
		BearerToken:     srv.Token(k8stest.Admin),
		TLSClientConfig: rest.TLSClientConfig{CAData: srv.CA},
		QPS:             1000,
		Burst:           1000,
	})
	if err != nil {
		tb.Fatalf("kubernetes.NewForConfig: %v", err)
	}
	return rig{holder: func(lo, hi int64) (*machineid.Holder, error) {
		return machineid_k8s.New(c.CoordinationV1(), machineid.WithRange(lo, hi), machineid.WithTTL(takeTTL), machineid_k8s.WithNamespace("bench"))
	}}
}

// takeRow is one line of the table: a store, a range and a phase.
type takeRow struct {
	store, phase string
	ids          int64
	took         []time.Duration // each take, as its holder's MachineID saw it
	busy         []time.Duration // the server's time on each take; nil if unknown
	err          error
}

// takes runs the takes scenario and prints its table.
func takes(o options) {
	defer mysqltest.Cleanup() // the data directory its servers are copied from
	var rows []takeRow
	for _, st := range takeStores {
		for _, n := range takeRanges {
			progress("takes: %s, %d IDs ...", st.name, n)
			fresh, steady := takeRow{phase: "fresh"}, takeRow{phase: "steady"}
			err := withTB(func(tb testing.TB) {
				r := st.start(tb)
				fresh = takeAll(r, "fresh", o.holders, n)
				if r.steady != nil {
					r.steady()
				}
				steady = takeAll(r, "steady", o.holders, n)
			})
			for _, row := range []*takeRow{&fresh, &steady} {
				row.store, row.ids = st.name, n
				if row.err == nil {
					row.err = err
				}
			}
			rows = append(rows, fresh, steady)
		}
	}
	w := table(fmt.Sprintf("(6) Machine-ID takes, %d holders one after another, each taking the lowest free ID, TTL %v: ms per take, as MachineID saw it; "+
		"fresh = a new server (Redis: in its restart window), steady = the same server once those holders released their IDs (Redis: past the window); "+
		"server busy = how long the server ran each take (Redis: its SLOWLOG), where it reports it", o.holders, takeTTL))
	fmt.Fprintln(w, "store	IDs	phase	median ms	max ms	server busy median ms	server busy max ms")
	for _, r := range rows {
		if r.err == nil && len(r.took) == 0 {
			r.err = fmt.Errorf("no take ran")
		}
		if r.err != nil {
			fmt.Fprintf(w, "%s\t%d\t%s\tfailed: %v\n", r.store, r.ids, r.phase, r.err)
			continue
		}
		busy := "-\t-"
		if len(r.busy) > 0 {
			busy = fmt.Sprintf("%.2f\t%.2f", ms(medianDur(r.busy)), ms(slices.Max(r.busy)))
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%.2f\t%.2f\t%s\n", r.store, r.ids, r.phase, ms(medianDur(r.took)), ms(slices.Max(r.took)), busy)
	}
	w.Flush()
}

// takeAll has holders take IDs of 0..n-1 one after another, each keeping
// its ID until all have taken, then releases them all.
func takeAll(r rig, phase string, holders int, n int64) takeRow {
	row := takeRow{phase: phase}
	var hs []*machineid.Holder
	defer func() {
		for _, h := range hs {
			_ = h.Release(time.Now())
		}
	}()
	var busy func() []time.Duration
	if r.busy != nil {
		busy = r.busy()
	}
	for range holders {
		h, err := r.holder(0, n-1)
		if err != nil {
			row.err = err
			return row
		}
		hs = append(hs, h)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		_, err = h.MachineID(ctx)
		row.took = append(row.took, time.Since(start))
		cancel()
		if err != nil {
			row.err = err
			return row
		}
	}
	if busy != nil {
		row.busy = busy()
	}
	return row
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func medianDur(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// withTB runs fn once with a testing.TB, which the repository's server
// helpers (internal/redistest and the others) take, outside `go test`:
// testing.Benchmark provides one, and runs its cleanups, which stop the
// servers fn started, when fn returns. It returns the first failure fn
// reported, if any.
func withTB(fn func(tb testing.TB)) error {
	var (
		ran  bool
		msgs []string
	)
	testing.Benchmark(func(b *testing.B) {
		if ran { // testing.Benchmark calls again with a higher b.N
			return
		}
		ran = true
		fn(failures{b, &msgs})
	})
	if len(msgs) > 0 {
		return fmt.Errorf("%s", msgs[0])
	}
	return nil
}

// failures is a testing.TB whose failures are kept, since a
// testing.Benchmark's output goes nowhere.
type failures struct {
	*testing.B
	msgs *[]string
}

func (r failures) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}

func (r failures) Fatal(args ...any) {
	r.Error(args...)
	r.FailNow()
}

func (r failures) Errorf(format string, args ...any) {
	*r.msgs = append(*r.msgs, fmt.Sprintf(format, args...))
	r.Fail()
}

func (r failures) Error(args ...any) {
	*r.msgs = append(*r.msgs, fmt.Sprint(args...))
	r.Fail()
}
