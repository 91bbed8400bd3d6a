package nemesis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ringflake/ringflake/machineid"
	mr "github.com/ringflake/ringflake/machineid_redis"

	"github.com/ringflake/ringflake/internal/clockshift"
)

// redisServer is a primary redis-server and its replica (--replicaof),
// each with RDB persistence (save 1 1: a BGSAVE each second that saw a
// write) in its own directory, their wall clocks shifted together through
// clockshift.c (one store-clock file: Redis's clock is the primary's, and a
// switch-over hands it to the replica as it is). The embedded node is the
// current primary, on which every fault but the switch-over acts; the
// replica only follows it until a switch-over (replica_test.go) swaps them.
// The harness copies snapshots aside, so that any earlier one can be
// restored.
type redisServer struct {
	*redisNode // the primary
	replica    *redisNode
	w          *world
	u          unit
	clock      *storeClock
	snaps      []string // the snapshots taken, oldest first
	// clockHi is the highest offset clock has had: R3 lets Redis's clock
	// step back by up to the bound in all, from its highest reading.
	clockHi time.Duration
}

// A redisNode is one redis-server process, in its directory, on its port.
type redisNode struct {
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

func startRedis(w *world) server {
	s := &redisServer{w: w}
	s.u = unit{name: "redis-server", pause: func() { s.signal(syscall.SIGSTOP) }, resume: func() { s.signal(syscall.SIGCONT) }}
	dir := filepath.Join(w.dir, "redis")
	if err := os.Mkdir(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	var err error
	if s.clock, err = clockshift.New(dir); err != nil {
		w.t.Fatal(err)
	}
	s.redisNode, s.replica = s.newNode(filepath.Join(dir, "a")), s.newNode(filepath.Join(dir, "b"))
	s.launch()
	s.launchNode(s.replica, s.redisNode)
	w.t.Cleanup(func() { s.killNode(s.replica); s.kill() })
	return s
}

// newNode makes a node's directory and picks its port.
func (s *redisServer) newNode(dir string) *redisNode {
	if err := os.Mkdir(dir, 0o755); err != nil {
		s.w.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.w.t.Fatal(err)
	}
	defer ln.Close()
	return &redisNode{dir: dir, port: ln.Addr().(*net.TCPAddr).Port}
}

func (n *redisNode) upstream() string            { return fmt.Sprintf("127.0.0.1:%d", n.port) }
func (s *redisServer) target(addr string) string { return addr }

// launch starts the primary from dump.rdb in its directory, if there is
// one, and waits until it answers PING.
func (s *redisServer) launch() { s.launchNode(s.redisNode, nil) }

// launchNode starts n, a replica of primary unless that is nil. A full
// sync starts at once (no diskless delay), so that a replica has every
// write soon after its primary restarts.
func (s *redisServer) launchNode(n, primary *redisNode) {
	env, err := s.clock.Env()
	if err != nil {
		s.w.t.Fatal(err)
	}
	args := []string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
		"--save", "1 1", "--appendonly", "no", "--dir", n.dir, "--dbfilename", "dump.rdb",
		"--repl-diskless-sync-delay", "0",
		"--protected-mode", "no", "--loglevel", "warning", "--logfile", filepath.Join(n.dir, "log")}
	if primary != nil {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	}
	for try := 0; ; try++ {
		cmd := exec.Command("redis-server", args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			s.w.t.Fatalf("nemesis: redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if n.ready(exited) {
			n.cmd, n.exited = cmd, exited
			return
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if try == 20 {
			log, _ := os.ReadFile(filepath.Join(n.dir, "log"))
			s.w.t.Fatalf("nemesis: redis-server did not answer on port %d: %s", n.port, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready waits up to 10 s for PING to be answered.
func (n *redisNode) ready(exited chan struct{}) bool {
	c := redis.NewClient(&redis.Options{Addr: n.upstream(), MaxRetries: -1})
	defer c.Close()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		select {
		case <-exited:
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func (n *redisNode) signal(sig syscall.Signal) {
	if n.cmd != nil {
		_ = syscall.Kill(-n.cmd.Process.Pid, sig)
	}
}

// kill ends the primary with SIGKILL, as a crash: nothing since the last
// SAVE is kept.
func (s *redisServer) kill() { s.killNode(s.redisNode) }

func (s *redisServer) killNode(n *redisNode) {
	if n.cmd == nil {
		return
	}
	n.signal(syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

// keep copies the latest snapshot, dump.rdb, aside.
func (s *redisServer) keep() error {
	b, err := os.ReadFile(filepath.Join(s.dir, "dump.rdb"))
	if err != nil {
		return err
	}
	snap := filepath.Join(s.dir, fmt.Sprintf("snap-%d.rdb", len(s.snaps)))
	s.snaps = append(s.snaps, snap)
	return os.WriteFile(snap, b, 0o644)
}

// faults are Redis's own, each allowed by docs/machineid_redis.md, with
// downtimes of up to 0.15 TTL (a restart on the spot, or a pod moved): a
// crash and restart from the latest snapshot; a restart that forgets
// everything; a restart from an earlier snapshot (a pod moved back to a
// node with an old dump, a backup restored); a paused server; and its
// clock stepping either way (R3), within the bound; a switch-over to the
// replica (R4, replica_test.go); and issue 36's two worlds and R4's, aimed
// at one holding (worlds_test.go, replica_test.go). Each acts on the
// current primary.
func (s *redisServer) faults() []fault {
	u := &s.u
	return []fault{
		pauseFault(u),
		{"the latest snapshot copied aside", func(w *world) (func(), time.Duration, bool) {
			if err := s.keep(); err != nil {
				w.note("redis-server: no snapshot to copy: %v", err)
				return nil, 0, false
			}
			w.note("redis-server: snapshot %d copied aside", len(s.snaps)-1)
			return nil, 0, true
		}},
		restartFault(u, "kill -9, restart from the latest snapshot", 0.15, func(*world) { s.kill() }, func(*world) { s.launch() }),
		// The server moves to an empty node; the old node keeps its dump,
		// which a restore may bring back (issue 36's first world).
		restartFault(u, "kill -9, restart empty", 0.15, func(*world) { s.kill() }, func(w *world) {
			if err := s.keep(); err == nil {
				w.note("redis-server: snapshot %d copied aside, dump.rdb removed", len(s.snaps)-1)
			}
			_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
			s.launch()
		}),
		s.restoreFault(),
		s.awayAndBackFault(),
		{"Redis's clock steps", func(w *world) (func(), time.Duration, bool) {
			// Anywhere from the bound below its highest reading so far to
			// the bound ahead of true time (R3 allows any jump forward,
			// but one past the bound gets every newcomer refused).
			lo := max(-w.set.Bound, s.clockHi-w.set.Bound)
			to := lo + time.Duration(w.rng.Float64()*float64(w.set.Bound-lo))
			w.note("redis-server: clock steps %v, to %v off", to-s.clock.Offset(), to)
			if err := s.setClock(to); err != nil {
				w.t.Fatal(err)
			}
			return nil, 0, true
		}},
		s.firstWorldFault(),
		s.earlyExpiryFault(),
		s.switchOverFault(),
		s.switchWorldFault(),
	}
}

// setClock shifts the server's clock to d off true time, and keeps the
// highest offset so far, which a later step back may go at most a bound
// below.
func (s *redisServer) setClock(d time.Duration) error {
	s.clockHi = max(s.clockHi, d)
	return s.clock.Set(d)
}

// restoreFault kills the server and starts it from a snapshot copied aside
// before, after a downtime of up to 0.15 TTL: half the time the last one
// copied, else one drawn from all of them. A snapshot's leases expire on load once their TTL has
// passed, so only a recent one revives a lease, as issue 36's first world
// needs.
func (s *redisServer) restoreFault() fault {
	u := &s.u
	return fault{"kill -9, restart from an earlier snapshot", func(w *world) (func(), time.Duration, bool) {
		d := w.span(0, 0.15)
		latest := w.rng.IntN(2) == 0
		if u.down || len(s.snaps) == 0 {
			return nil, 0, false
		}
		k := len(s.snaps) - 1
		if !latest {
			k = w.rng.IntN(len(s.snaps))
		}
		w.note("redis-server: kill -9, down for %v, then restored from snapshot %d of %d", d, k, len(s.snaps))
		u.paused = false
		s.kill()
		u.down = true
		return func() {
			if err := s.restore(k); err != nil {
				w.t.Fatal(err)
			}
			s.launch()
			u.down = false
			w.note("redis-server: up from snapshot %d", k)
		}, d, true
	}}
}

// awayAndBackFault moves the server to an empty node and back: a kill -9
// and a restart empty, then, 0.3 to 0.9 TTLs later, a kill -9 and a restart
// from the dump the first kill left on the old node, half the time with a
// holder cut off meanwhile (issue 36's first world: a lease revived from
// that dump was renewed by its holder, back from the cut, or taken again
// with its old After, while a newcomer rode out the second restart).
func (s *redisServer) awayAndBackFault() fault {
	u := &s.u
	return fault{"kill -9, restart empty, then back on the old dump", func(w *world) (func(), time.Duration, bool) {
		down, away, back := w.span(0, 0.15), w.span(0.3, 0.9), w.span(0, 0.15)
		// Half the time one holder is cut off from before the move until
		// a little after the return, as issue 36's holder H was.
		cut, after := w.pick(func(h *holder) bool { return !h.cut }), w.span(0, 0.3)
		if w.rng.IntN(2) == 0 || w.hs[0].proxy == nil {
			cut = nil
		}
		if u.down {
			return nil, 0, false
		}
		if cut != nil {
			w.note("holder %d: partitioned both ways for the move", cut.i)
			cut.proxy.partition(true, true)
			cut.cut = true
			w.due = append(w.due, due{w.now + down + away + back + after, "heal", func() {
				w.note("holder %d: healed after the move", cut.i)
				cut.proxy.heal(false)
				cut.cut = false
			}})
		}
		w.note("redis-server: kill -9, away to an empty node after %v, back after %v more, down %v", down, away, back)
		u.paused = false
		s.kill()
		u.down = true
		old := -1
		if err := s.keep(); err != nil {
			w.note("redis-server: no dump to come back to: %v", err)
		} else {
			old = len(s.snaps) - 1
		}
		_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
		return func() {
			s.launch()
			w.note("redis-server: up, empty")
			w.due = append(w.due, due{w.now + away, "back", func() {
				s.kill()
				w.due = append(w.due, due{w.now + back, "back up", func() {
					if old >= 0 {
						if err := s.restore(old); err != nil {
							w.t.Fatal(err)
						}
					}
					s.launch()
					u.down = false
					w.note("redis-server: up, back on snapshot %d", old)
				}})
				w.note("redis-server: kill -9, going back")
			}})
		}, down, true
	}}
}

// redisLeaser is a holder's client and Holder.
func redisLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	c := redis.NewClient(&redis.Options{Addr: cfg.Target, DialTimeout: time.Second})
	l, err := mr.New(c, cfg.options()...)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return l, func() { c.Close() }, nil
}
