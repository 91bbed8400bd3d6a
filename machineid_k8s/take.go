package machineid_k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringflake/ringflake/machineid"
)

// Expiry is judged as client-go's leader election judges it, without
// trusting any clock but the contender's own monotonic one. A holder writes
// its Lease at least every TTL/3, and every write changes the Lease's
// resourceVersion. A contender notes when it first saw a resourceVersion,
// at the moment the List that showed it returned: the write that made it
// was sent before then, and its holder vouches for the lease no longer than
// the TTL after sending it. So once the contender has seen the same
// resourceVersion for the Lease's duration (the holder's TTL, rounded up)
// plus its safety margin, the holder has stopped vouching, and the
// contender's update, conditioned on that resourceVersion, can only succeed
// if no renewal came in between. A Lease released (no holderIdentity) is
// free at once.

// errMovedFirst means a write conditioned on what Take listed found the
// Lease changed: someone else moved first, and Take lists again.
var errMovedFirst = errors.New("another holder moved first")

// slot is what a Take knows of one machine ID in its range.
type slot struct {
	id    int64
	lease *coordinationv1.Lease // nil if the ID has no Lease
	mark  time.Time             // the Lease's mark; zero if none
	bad   error                 // the mark does not parse
	mine  bool                  // held by the Claim's token: a Take whose answer was lost
	left  time.Duration         // held by another: how long until it may be taken over
}

// Take lists the Leases, notes their resourceVersions (see expiry) and
// claims the ID that pick chooses with a write conditioned on what it
// listed; if another holder moved first, it lists again. If every ID is
// held, and one may be taken over before ctx's deadline, it waits for that.
func (s *store) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	for {
		list, err := s.leases.List(ctx, metav1.ListOptions{})
		if err != nil {
			return machineid.Grant{}, s.explain("listing the Leases", err)
		}
		ch := s.pick(c, s.survey(c, list.Items, time.Now()))
		if ch.slot != nil {
			g, err := s.claim(ctx, c, ch.slot)
			if errors.Is(err, errMovedFirst) {
				continue
			}
			return g, err
		}
		if !fits(ctx, ch.wait) {
			return machineid.Grant{}, ch.err
		}
		t := time.NewTimer(ch.wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return machineid.Grant{}, fmt.Errorf("%w; waiting for it: %w", ch.err, ctx.Err())
		}
	}
}

// survey returns what items, the Leases listed at now, say of the IDs in
// c's range, and notes when each resourceVersion was first seen.
func (s *store) survey(c machineid.Claim, items []coordinationv1.Lease, now time.Time) map[int64]*slot {
	slots := make(map[int64]*slot, len(items))
	seen := make(map[string]sighting, len(items))
	mine := s.holderOf(c.Token)
	for i := range items {
		l := &items[i]
		id, ok := s.idOf(l.Name, c.Lo, c.Hi)
		if !ok {
			continue
		}
		sg, ok := s.seen[l.Name]
		if !ok || sg.version != l.ResourceVersion {
			sg = sighting{version: l.ResourceVersion, since: now}
		}
		seen[l.Name] = sg
		sl := &slot{id: id, lease: l}
		sl.mark, sl.bad = s.timeAt(l, markKey)
		switch who := holder(l); who {
		case "": // released: free at once
		case mine:
			sl.mine = true
		default:
			sl.left = durationOf(l, c.TTL, c.Margin) - now.Sub(sg.since)
		}
		slots[id] = sl
	}
	s.seen = seen // Leases gone from the list are forgotten
	return slots
}

// choice is pick's answer: a slot to claim, or why there is none and how
// long until a held Lease may be taken over (0 if never).
type choice struct {
	slot *slot
	wait time.Duration
	err  error
}

// pick chooses the ID to claim: one the token holds already (the trace of
// a Take whose answer was lost); else the lowest free one whose mark is
// before the holder's clock (c.Now), so that it can issue at
// once, an ID without a Lease among them; else the free one with the
// earliest mark. A free ID whose mark does not parse is refused.
func (s *store) pick(c machineid.Claim, slots map[int64]*slot) choice {
	for _, sl := range slots {
		if sl.mine {
			return choice{slot: sl, err: sl.bad}
		}
	}
	clock := c.Now
	var best *slot
	var bad error
	var held []*slot
	wait := time.Duration(0)
	// An ID without a Lease ends the loop, so it runs at most len(slots)+1
	// times, however wide the range.
	for n := c.Lo; ; n++ {
		sl := slots[n]
		switch {
		case sl == nil:
			return choice{slot: &slot{id: n}}
		case sl.left > 0:
			held = append(held, sl)
			if wait == 0 || sl.left < wait {
				wait = sl.left
			}
		case sl.bad != nil:
			if bad == nil {
				bad = sl.bad
			}
		case sl.mark.Before(clock):
			return choice{slot: sl}
		case best == nil || sl.mark.Before(best.mark):
			best = sl
		}
		if n == c.Hi {
			break
		}
	}
	if best != nil {
		return choice{slot: best}
	}
	return choice{wait: wait, err: s.exhausted(c, held, wait, bad)}
}

// exhausted is Take's error when no ID can be taken: held are the slots
// held, the first of which may be taken over after wait, and bad is the
// refusal of a free one whose mark does not parse, or nil.
func (s *store) exhausted(c machineid.Claim, held []*slot, wait time.Duration, bad error) error {
	if len(held) == 0 {
		return bad
	}
	err := fmt.Errorf("%w: machine IDs %d..%d held by %s (Leases %s* in the namespace %s, seen renewed within their duration plus the margin); the first may be taken over in at most %v unless renewed",
		machineid.ErrExhausted, c.Lo, c.Hi, s.holders(held), s.prefix, s.namespace, wait.Round(time.Millisecond))
	if bad != nil {
		err = fmt.Errorf("%w; and %w", err, bad)
	}
	return err
}

// holders names the holders of slots, as their holderIdentity gives them
// less the token: the first few, and how many more.
func (s *store) holders(slots []*slot) string {
	const most = 4
	var names []string
	for _, sl := range slots {
		who := holder(sl.lease)
		if i := strings.LastIndexByte(who, '_'); i > 0 {
			who = who[:i]
		}
		if !slices.Contains(names, who) {
			names = append(names, who)
		}
	}
	if len(names) > most {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
	}
	return strings.Join(names, ", ")
}

// fits reports whether ctx leaves time to wait d and then claim an ID.
func fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return d > 0 && ok && time.Until(deadline) > d+d/10+250*time.Millisecond
}

// claim writes sl's Lease as held by c.Token, with the mark raised to
// c.Until, conditioned on the resourceVersion listed (or created, if it had
// none), and returns errMovedFirst if another write came first. The After
// is the mark found, or, on a Lease the token holds already, the After its
// first claim recorded.
func (s *store) claim(ctx context.Context, c machineid.Claim, sl *slot) (machineid.Grant, error) {
	if sl.bad != nil {
		return machineid.Grant{}, sl.bad
	}
	after := sl.mark
	if sl.mine {
		var err error
		if after, err = s.timeAt(sl.lease, afterKey); err != nil {
			return machineid.Grant{}, err
		}
	}
	until := later(sl.mark, c.Until)
	next := s.holding(sl.lease, sl.id, c, after, until, !sl.mine)
	var got *coordinationv1.Lease
	var err error
	doing := "updating"
	if sl.lease == nil {
		doing = "creating"
		got, err = s.leases.Create(ctx, next, metav1.CreateOptions{})
	} else {
		got, err = s.leases.Update(ctx, next, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || (sl.lease != nil && apierrors.IsNotFound(err)):
		return machineid.Grant{}, errMovedFirst
	case err != nil:
		return machineid.Grant{}, s.explain(fmt.Sprintf("%s the Lease %s for machine ID %d", doing, next.Name, sl.id), err)
	}
	s.held[c.Token] = got
	return machineid.Grant{ID: sl.id, After: after, Until: until, Clock: serverClock(got)}, nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
