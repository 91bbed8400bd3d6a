package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
	"github.com/ringflake/ringflake/machineid_file"
	"github.com/ringflake/ringflake/machineid_k8s"
	"github.com/ringflake/ringflake/machineid_postgres"

	"github.com/ringflake/ringflake/internal/clockshift"
)

// A storeKind is one store in the harness. Adding one (ZooKeeper, MySQL) is
// one entry: start its servers as a server, with the faults its docs allow
// on them (most are pauseFault and restartFault of a unit), and make a
// holder's client and Holder in leaser.
type storeKind struct {
	// start starts the store's servers for w, ending them at w.t.Cleanup.
	start func(w *world) server
	// leaser makes a holder's Leaser, and what closes its client.
	leaser func(cfg holderConfig) (machineid.Leaser, func(), error)
	// ttls are the TTLs a seed draws from, within the store's bounds.
	ttls []time.Duration
}

// A server is a store's running servers, as the harness sees them.
type server interface {
	// upstream is the address each holder's proxy forwards to; "" for a
	// store with no server (the file store): its holders get no proxy.
	upstream() string
	// target is what a holder is given to reach the store through addr,
	// its proxy's.
	target(addr string) string
	// faults are the store's own faults, beside holderFaults.
	faults() []fault
}

var stores = map[string]storeKind{
	"redis":    {startRedis, redisLeaser, []time.Duration{2 * time.Second, 3 * time.Second, 6 * time.Second}},
	"etcd":     {startEtcd, etcdLeaser, []time.Duration{2 * time.Second, 3 * time.Second}},
	"postgres": {startPostgres, postgresLeaser, []time.Duration{2 * time.Second, 3 * time.Second}},
	"k8s":      {startK8s, k8sLeaser, []time.Duration{2 * time.Second, 3 * time.Second}},
	"file":     {startFile, fileLeaser, []time.Duration{300 * time.Millisecond, 500 * time.Millisecond, time.Second}},
}

func storeNames() []string {
	var names []string
	for n := range stores {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// fileServer is the state file's directory, shared by holders on one host:
// no server, and no fault of its own that a harness without root can
// inflict (a power loss is machineid_file's crash test's).
type fileServer struct{ dir string }

func startFile(w *world) server {
	s := fileServer{filepath.Join(w.dir, "state")}
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (fileServer) upstream() string       { return "" }
func (s fileServer) target(string) string { return s.dir }
func (fileServer) faults() []fault        { return nil }

func fileLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	opts := cfg.options()[:3] // no reference clock: WithMaxClockOffset has nothing to check
	l, err := machineid_file.New(cfg.Target, opts...)
	return l, func() {}, err
}

// etcdServer is a one-member etcd. Its faults: a crash (kill -9) and a
// stop (SIGTERM), each restarted on its data, and a pause. etcd keeps its
// data: a restart that loses it, or a restore of an older snapshot
// (etcdutl snapshot restore makes a new cluster from it, which etcd's
// disaster-recovery docs use for a cluster that lost its quorum), is
// outside the promise (docs/leases.md). Its clock is not shifted: leases
// expire on the leader's monotonic clock, and the marks and the fleet's
// clock are the holders' (docs/leases.md, the fault menu).
type etcdServer struct {
	m *etcdtest.Member
	u unit
}

func startEtcd(w *world) server {
	c := etcdtest.Start(w.t)
	s := &etcdServer{m: c.Members[0]}
	s.u = unit{name: "etcd", pause: s.m.Pause, resume: s.m.Resume}
	return s
}

func (s *etcdServer) upstream() string          { return strings.TrimPrefix(s.m.ClientURL, "http://") }
func (s *etcdServer) target(addr string) string { return addr }
func (s *etcdServer) faults() []fault {
	return []fault{
		pauseFault(&s.u),
		restartFault(&s.u, "kill -9, restart", 1, func(*world) { s.m.Kill() }, func(*world) { s.m.Start() }),
		restartFault(&s.u, "SIGTERM, restart", 1, func(*world) { s.m.Stop() }, func(*world) { s.m.Start() }),
	}
}

func etcdLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{cfg.Target}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, err
	}
	l, err := machineid_etcd.New(c, cfg.options()...)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return l, func() { c.Close() }, nil
}

// pgServer is a PostgreSQL server (pgtest: fsync off, so a kill -9 keeps
// what was committed; a lost commit would take an OS crash). Its faults: a
// crash and a fast shutdown, each restarted, a pause, and clock steps.
type pgServer struct {
	s     *pgtest.Server
	u     unit
	clock *storeClock
}

func startPostgres(w *world) server {
	s := &pgServer{clock: shiftedByEnv(w, "nemesis-pg")}
	s.s = pgtest.Start(w.t)
	s.u = unit{name: "postgres", pause: s.s.Pause, resume: s.s.Resume}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, s.target(s.upstream()))
	if err == nil {
		err = machineid_postgres.CreateTable(ctx, pool, "")
		pool.Close()
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// shiftedByEnv makes a store clock in a directory every user can read
// (postgres runs as its own user) and puts the clock shim in the harness's
// environment, which pgtest and mysqltest start their servers with (the
// holders are started without it: holderEnviron).
func shiftedByEnv(w *world, name string) *storeClock {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	c, err := clockshift.New(dir)
	if err != nil {
		w.t.Fatal(err)
	}
	env, err := c.Env()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		w.t.Setenv(k, v)
	}
	return c
}

// clockStepFault steps a database's clock, which judges expiry, to
// anywhere within the bound of true time, back or forth (docs/leases.md's
// P2 and M3: leases end early or late; the marks, on the holders' clocks,
// stay).
func clockStepFault(name string, c *storeClock) fault {
	return fault{name + "'s clock steps within the bound", func(w *world) (func(), time.Duration, bool) {
		to := time.Duration((2*w.rng.Float64() - 1) * float64(w.set.Bound))
		w.note("%s: clock steps %v, to %v", name, to-c.Offset(), to)
		if err := c.Set(to); err != nil {
			w.t.Fatal(err)
		}
		return nil, 0, true
	}}
}

func (s *pgServer) upstream() string { return fmt.Sprintf("127.0.0.1:%d", s.s.Port) }
func (s *pgServer) target(addr string) string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=2", addr)
}

// faults: a crash and a fast shutdown, each restarted; a pause; and the
// database's clock stepping within the bound.
func (s *pgServer) faults() []fault {
	return []fault{
		pauseFault(&s.u),
		restartFault(&s.u, "kill -9, restart", 1, func(*world) { s.s.Kill() }, func(*world) { s.s.Start() }),
		restartFault(&s.u, "fast shutdown, restart", 1, func(*world) { s.s.Stop() }, func(*world) { s.s.Start() }),
		clockStepFault("PostgreSQL", s.clock),
	}
}

func postgresLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	pool, err := pgxpool.New(context.Background(), cfg.Target)
	if err != nil {
		return nil, nil, err
	}
	l, err := machineid_postgres.New(pool, cfg.options()...)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return l, pool.Close, nil
}

// k8sServer is a kube-apiserver over its etcd. Its faults: the apiserver
// stopped (SIGTERM) and started, paused; its etcd killed and restarted,
// paused. The apiserver's clock stamps the Lease writes that newcomers'
// clocks are checked against, but expiry is judged on each contender's
// monotonic clock and the marks are the holders': a wrong apiserver clock
// can refuse or admit a newcomer, never repeat an ID (docs/leases.md).
type k8sServer struct {
	s         *k8stest.Server
	api, etcd unit
	dir       string
}

func startK8s(w *world) server {
	s := &k8sServer{s: k8stest.Start(w.t), dir: w.dir}
	s.s.CreateNamespace("nemesis")
	m := s.s.Etcd.Members[0]
	s.api = unit{name: "kube-apiserver", pause: s.s.Pause, resume: s.s.Resume}
	s.etcd = unit{name: "kube-apiserver's etcd", pause: m.Pause, resume: m.Resume}
	return s
}

func (s *k8sServer) upstream() string { return strings.TrimPrefix(s.s.URL, "https://") }

// target writes a kubeconfig for the admin user whose server is addr.
func (s *k8sServer) target(addr string) string {
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "n",
		"clusters": []any{map[string]any{"name": "n", "cluster": map[string]any{
			"server": "https://" + addr, "certificate-authority-data": s.s.CA}}},
		"users":    []any{map[string]any{"name": "n", "user": map[string]any{"token": s.s.Token(k8stest.Admin)}}},
		"contexts": []any{map[string]any{"name": "n", "context": map[string]any{"cluster": "n", "user": "n"}}},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(s.dir, "kubeconfig-"+strings.ReplaceAll(addr, ":", "_"))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		panic(err)
	}
	return path
}

func (s *k8sServer) faults() []fault {
	m := s.s.Etcd.Members[0]
	// The apiserver waits for its etcd to start: neither is stopped while
	// the other is down or paused, or the schedule would wait on itself.
	api, etcd := func() bool { return !s.etcd.down && !s.etcd.paused }, func() bool { return !s.api.down }
	return []fault{
		pauseFault(&s.api),
		guarded(pauseFault(&s.etcd), etcd),
		guarded(restartFault(&s.api, "SIGTERM, restart", 1, func(*world) { s.s.Stop() }, func(*world) { s.s.Start() }), api),
		guarded(restartFault(&s.etcd, "kill -9, restart", 1, func(*world) { m.Kill() }, func(*world) { m.Start() }), etcd),
	}
}

func k8sLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Target)
	if err != nil {
		return nil, nil, err
	}
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	l, err := machineid_k8s.New(cs.CoordinationV1(), append(cfg.options(),
		machineid_k8s.WithNamespace("nemesis"), machineid_k8s.WithIdentity(fmt.Sprintf("nemesis-%d", syscall.Getpid())))...)
	return l, func() {}, err
}
