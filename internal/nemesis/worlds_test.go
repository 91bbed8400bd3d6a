package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Issue 36's worlds, aimed. Drawn at random, faults rarely line up into a
// world that needs several things to happen to one holding in order, a
// TTL apart at most; the swarm never made the three below, though each is
// allowed by docs/leases.md (R1 to R3, S7) and each repeated IDs before
// issue 36 (machineid_redis/void_test.go has them as fixed tests). Here
// each is one fault of the menu: it picks a holder H that holds an ID x,
// waits for H's next renewal, and plays the world against it, with a
// newcomer K started on x alone. Its spans are drawn from the seed; which
// holder it picks, and when H renews, the machine decides.

// firstWorldFault is issue 36's first world. Redis saves a snapshot
// (S_a) with H's lease, just renewed; H is cut off from Redis; Redis moves
// to an empty node (S_b), where K takes x, inherits S_b's floor, issues
// once its clock is past it, and renews; Redis moves back onto S_a's dump
// (S_c), where H's lease is back; H's cut heals before its deadline.
// Either H is cut off for the whole move (its renewal then finds its own
// lease on S_c: mutant renew-across-restart extends it), or, half the
// time, only until K holds x (H's renewal on S_b finds x K's, H takes
// another ID or waits, and its next take finds x its own on S_c: mutant
// own-lease-no-floor keeps S_a's After).
func (s *redisServer) firstWorldFault() fault {
	u := &s.u
	return fault{"issue 36's first world: a holder's ID taken on an empty Redis, then Redis back on its old dump", func(w *world) (func(), time.Duration, bool) {
		whole := w.rng.IntN(2) == 0
		stay := w.span(1.5, 3)
		h, x := w.holding()
		if u.down || u.paused || h == nil || h.proxy == nil {
			return nil, 0, false
		}
		w.note("first world: holder %d.%d holds ID %d; cut off %s", h.i, h.n, x, map[bool]string{true: "for the whole move", false: "until a newcomer holds its ID"}[whole])
		c := w.renewed(h)
		if err := s.save(); err != nil {
			w.note("redis-server: SAVE: %v", err)
		}
		h.proxy.partition(true, true)
		h.cut = true
		s.kill()
		old := -1
		if s.keep() == nil {
			old = len(s.snaps) - 1
		}
		_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
		s.launch()
		w.note("redis-server: kill -9, up on an empty node; snapshot %d kept (with holder %d's lease)", old, h.i)
		k := w.newcomer(x, 0)
		heal := func() {
			w.note("holder %d: healed", h.i)
			h.proxy.heal(false)
			h.cut = false
		}
		if !whole {
			w.await(w.set.TTL/2, func() bool { st, ok := w.status(k); return ok && st.Held })
			heal()
		}
		// K's issuing needs a confirmation past S_b's floor; H's return,
		// time before its deadline to renew: S_c comes up once K has it,
		// or with a TTL/10 (H's retry) and a restart to spare.
		spare := time.Until(c.Add(w.set.TTL-w.set.Margin-w.set.TTL/10)) - 300*time.Millisecond
		if c.IsZero() {
			spare = w.set.TTL / 3
		}
		w.await(spare, func() bool { st, ok := w.status(k); return ok && st.Held && st.Until > st.After })
		s.kill()
		if old >= 0 {
			if err := s.restore(old); err != nil {
				w.t.Fatal(err)
			}
		}
		s.launch()
		w.note("redis-server: kill -9, back up on snapshot %d", old)
		if whole {
			heal()
		}
		return func() {
			w.note("holder %d: the newcomer stops", k.i)
			w.stop(k)
		}, stay, true
	}}
}

// earlyExpiryFault is issue 36's second world: H, just renewed, is cut
// off; Redis's clock jumps forward, within the bound, by more than H's
// margin, so that H's lease there ends before H's deadline; K takes x once
// it has, inheriting H's mark; Redis restarts and forgets; H's cut heals,
// and its renewal, before its deadline, is answered as a restart. H may
// issue up to the mark Redis confirmed for it, which K's ticks are past
// (mutant ride-past-mark rides on to H's last confirmation + TTL + bound,
// into them).
func (s *redisServer) earlyExpiryFault() fault {
	u := &s.u
	return fault{"issue 36's second world: a lease ended early by Redis's clock, taken, then Redis restarts empty", func(w *world) (func(), time.Duration, bool) {
		room := w.set.Bound - s.clock.Offset()
		jump := time.Duration((0.5 + 0.5*w.rng.Float64()) * float64(room))
		stay := w.span(1.5, 3)
		h, x := w.holding()
		if u.down || u.paused || h == nil || h.proxy == nil || jump <= w.set.Margin {
			return nil, 0, false
		}
		w.note("second world: holder %d.%d holds ID %d; Redis's clock jumps %v forward", h.i, h.n, x, jump)
		c := w.renewed(h)
		if c.IsZero() {
			c = time.Now()
		}
		h.proxy.partition(true, true)
		h.cut = true
		if err := s.setClock(s.clock.Offset() + jump); err != nil {
			w.t.Fatal(err)
		}
		// H's lease ends on Redis's clock at c + TTL, which is c + TTL −
		// jump on H's.
		w.until(w.now + time.Until(c.Add(w.set.TTL-jump)) + 20*time.Millisecond)
		k := w.newcomer(x, 0)
		if !w.await(w.set.TTL/2, func() bool { st, ok := w.status(k); return ok && st.Held }) {
			w.note("holder %d: the newcomer holds nothing yet", k.i)
		}
		s.kill()
		_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
		s.launch()
		w.note("redis-server: kill -9, restarted empty")
		w.note("holder %d: healed", h.i)
		h.proxy.heal(false)
		h.cut = false
		return func() {
			w.note("holder %d: the newcomer stops", k.i)
			w.stop(k)
		}, stay, true
	}}
}

// do sends one command to the server and returns its error.
func (n *redisNode) do(args ...any) error {
	c := redis.NewClient(&redis.Options{Addr: n.upstream(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Err()
}

// save has the server write its snapshot now (SAVE), after the
// background save its save 1 1 may have under way.
func (s *redisServer) save() error {
	err := s.do("SAVE")
	for end := time.Now().Add(2 * time.Second); err != nil && strings.Contains(err.Error(), "in progress") && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		err = s.do("SAVE")
	}
	return err
}

// restore makes snapshot k the server's dump.rdb, for its next start.
func (s *redisServer) restore(k int) error {
	b, err := os.ReadFile(s.snaps[k])
	if err == nil {
		err = os.WriteFile(filepath.Join(s.dir, "dump.rdb"), b, 0o644)
	}
	return err
}
