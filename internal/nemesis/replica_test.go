package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// R4 of docs/leases.md: a switch-over to a replica that has every write,
// after a restart of the primary that forgot or not. The replica runs its
// own process, whose run_id is not the one its data was written under, so
// the switch-over is a restart to every holder (their leases there are
// void), and the promoted replica's start is its first call as a primary:
// its uptime predates the data it holds, which a restarted primary may
// have emptied (the replica then resynced the empty data).

// switchOverFault is R4 drawn from the menu: half the time the primary is
// first killed and restarted empty, then the replica, once it has every
// write, is switched to.
func (s *redisServer) switchOverFault() fault {
	u := &s.u
	return fault{"switch-over to the replica (half the time after a restart of the primary that forgot)", func(w *world) (func(), time.Duration, bool) {
		empty := w.rng.IntN(2) == 0
		if u.down || u.paused {
			return nil, 0, false
		}
		if empty {
			s.restartEmpty(w)
		}
		s.switchOver(w)
		return nil, 0, true
	}}
}

// switchWorldFault is R4's world aimed at one holding, as machineid_redis's
// TestSwitchOverAfterARestart plays it. A holder H of ID x, its clock
// stepped lead ahead (within the bound), renews: its mark lies lead + TTL
// past true time, and it issues up to lead ahead until its deadline. H is
// cut off; the primary restarts empty, forgetting that mark; the replica
// resyncs the empty data and is switched to; a newcomer K on x alone, its
// clock lead behind, takes x. The promoted replica's start is its first
// call as a primary, so K inherits a floor past every tick H issued; with
// its start read from its uptime (mutant floor-replica-uptime), the floor
// is long past once it has run TTL + 2·bound, and K issues H's ticks of up
// to 2·lead before. H's cut heals once K holds x, and its clock is set
// right as K stops.
func (s *redisServer) switchWorldFault() fault {
	u := &s.u
	return fault{"R4's world: a holder's marks lost in a restart of the primary, its replica switched to, a newcomer behind on its ID", func(w *world) (func(), time.Duration, bool) {
		lead := time.Duration((0.75 + 0.2*w.rng.Float64()) * float64(w.set.Bound))
		stay := w.span(1.5, 3)
		h, x := w.holding()
		if u.down || u.paused || h == nil || h.proxy == nil {
			return nil, 0, false
		}
		w.setClock(h, lead)
		w.note("R4's world: holder %d.%d holds ID %d; its clock %v ahead", h.i, h.n, x, lead)
		w.renewed(h)
		h.proxy.partition(true, true)
		h.cut = true
		s.restartEmpty(w)
		s.switchOver(w)
		k := w.newcomer(x, -lead)
		w.await(w.set.TTL, func() bool { st, ok := w.status(k); return ok && st.Held })
		w.note("holder %d: healed", h.i)
		h.proxy.heal(false)
		h.cut = false
		return func() {
			w.note("holder %d: the newcomer stops; holder %d's clock set right", k.i, h.i)
			w.stop(k)
			w.setClock(h, 0)
		}, stay, true
	}}
}

// restartEmpty kills the primary and starts it again at once, empty (its
// dump copied aside, as a node that keeps it): its replica then resyncs
// the empty data.
func (s *redisServer) restartEmpty(w *world) {
	s.u.paused = false
	s.kill()
	if err := s.keep(); err == nil {
		w.note("redis-server: snapshot %d copied aside, dump.rdb removed", len(s.snaps)-1)
	}
	_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
	s.launch()
	w.note("redis-server: kill -9, restarted empty")
}

// switchOver moves the primary's role to the replica once the replica has
// every write, as an operator's switch-over (or Redis's FAILOVER) does:
// the primary's writes are paused (CLIENT PAUSE WRITE holds back scripts
// and expiries), the replica is awaited until it has read all the primary
// wrote, then promoted (REPLICAOF NO ONE), every holder's proxy is turned
// to it, resetting its connections, as a switch of DNS or of a service's
// endpoints does, and the old primary becomes its replica. A replica that
// has not caught up within 5 s is not switched to: the switch would lose
// writes, which the promise leaves out. It reports whether it switched.
func (s *redisServer) switchOver(w *world) bool {
	if err := s.do("CLIENT", "PAUSE", "10000", "WRITE"); err != nil {
		w.note("redis-server: CLIENT PAUSE: %v; no switch-over", err)
		return false
	}
	old := s.redisNode
	if !w.await(5*time.Second, s.caughtUp) {
		_ = old.do("CLIENT", "UNPAUSE")
		w.note("redis-server: the replica did not catch up within 5 s; no switch-over")
		return false
	}
	if err := s.replica.do("REPLICAOF", "NO", "ONE"); err != nil {
		w.t.Fatalf("nemesis: promoting the replica: %v", err)
	}
	s.redisNode, s.replica = s.replica, old
	for _, h := range w.hs {
		if h.proxy != nil {
			h.proxy.retarget(s.upstream())
		}
	}
	if err := old.do("REPLICAOF", "127.0.0.1", strconv.Itoa(s.port)); err != nil {
		w.t.Fatalf("nemesis: making the old primary a replica: %v", err)
	}
	_ = old.do("CLIENT", "UNPAUSE")
	w.note("redis-server: switched over to the replica (port %d); the old primary (port %d) is its replica", s.port, old.port)
	return true
}

// caughtUp reports whether the replica follows the primary, its link up,
// and has read every byte of the primary's replication stream.
func (s *redisServer) caughtUp() bool {
	p, err := s.info("replication")
	if err != nil {
		return false
	}
	r, err := s.replica.info("replication")
	if err != nil {
		return false
	}
	return field(r, "master_port") == strconv.Itoa(s.port) && field(r, "master_link_status") == "up" &&
		field(r, "master_replid") == field(p, "master_replid") &&
		field(r, "slave_repl_offset") == field(p, "master_repl_offset")
}

// info returns the node's INFO section.
func (n *redisNode) info(section string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: n.upstream(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Info(ctx, section).Result()
}

// field returns the value of key in an INFO answer, "" if none.
func field(info, key string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+":"); ok {
			return v
		}
	}
	return ""
}
