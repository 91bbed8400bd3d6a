package machineid_k8s

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ringflake/ringflake/machineid"
)

// What a Lease holds for machine ID n, named prefix+"n":
//   - spec.holderIdentity: the holding's identity and token, or empty (or
//     absent) once released;
//   - spec.leaseDurationSeconds: the holder's TTL, rounded up to whole
//     seconds, which a contender waits out (see expiry);
//   - the annotation markKey: the latest time, on the holders' clocks,
//     that any holder of n may have issued;
//   - the annotation afterKey: the mark the current holding inherited, so
//     that a Take retried by the same token reports the same After.
//
// The marks are RFC 3339 times in UTC with nanoseconds: exact to the
// nanosecond, as the generator needs, and readable in kubectl get -o yaml,
// where an operator judges a holding. acquireTime and renewTime are set for
// people to read; no decision rests on them, since they are other hosts'
// clocks.
const (
	markKey  = "ringflake.io/mark"
	afterKey = "ringflake.io/after"
)

// name is the Lease name of machine ID id.
func (s *store) name(id int64) string { return s.prefix + strconv.FormatInt(id, 10) }

// idOf returns the machine ID a Lease name stands for, and whether it is
// one in lo..hi: the prefix and the ID in canonical decimal.
func (s *store) idOf(name string, lo, hi int64) (int64, bool) {
	rest, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && strconv.FormatInt(n, 10) == rest && n >= lo && n <= hi
}

// holder returns the Lease's holderIdentity, "" if none.
func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// timeAt returns the time in the Lease's annotation key, the zero Time if
// there is none, or an error naming the Lease and the annotation if it is
// not a time: a Lease edited by hand, whose ID is refused rather than
// taken as unmarked.
func (s *store) timeAt(l *coordinationv1.Lease, key string) (time.Time, error) {
	v, ok := l.Annotations[key]
	if !ok {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("the Lease %s/%s has the annotation %s = %q, not an RFC 3339 time; it was not written by this package, so its machine ID is refused until the annotation is set right or the Lease deleted",
			s.namespace, l.Name, key, v)
	}
	return t, nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// durationOf returns how long a contender waits to see l unchanged before
// it takes l over: l's leaseDurationSeconds, or ttl if that is longer or l
// has none, plus margin.
func durationOf(l *coordinationv1.Lease, ttl, margin time.Duration) time.Duration {
	d := ttl
	if l.Spec.LeaseDurationSeconds != nil {
		d = max(d, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
	}
	return d + margin
}

// seconds is a TTL in whole seconds, rounded up.
func seconds(ttl time.Duration) int32 {
	return int32((ttl + time.Second - 1) / time.Second)
}

// holding returns l, or a new Lease for id if l is nil, as held by c.Token
// with the mark until (its own, if zero) and the inherited mark after (none
// if zero). taken
// says whether the holding begins now, which counts a transition if the
// Lease had another holder.
func (s *store) holding(l *coordinationv1.Lease, id int64, c machineid.Claim, after, until time.Time, taken bool) *coordinationv1.Lease {
	if l == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: s.name(id), Namespace: s.namespace}}
	} else {
		l = l.DeepCopy()
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	if !until.IsZero() { // a zero until raises no mark: the Lease keeps its own, if any
		l.Annotations[markKey] = formatTime(until)
	}
	if after.IsZero() {
		delete(l.Annotations, afterKey)
	} else {
		l.Annotations[afterKey] = formatTime(after)
	}
	now := metav1.NewMicroTime(time.Now())
	if taken {
		if l.ResourceVersion != "" { // a Lease that had a holder before
			n := int32(1)
			if l.Spec.LeaseTransitions != nil {
				n += *l.Spec.LeaseTransitions
			}
			l.Spec.LeaseTransitions = &n
		}
		l.Spec.AcquireTime = &now
	}
	who, secs := s.holderOf(c.Token), seconds(c.TTL)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &who, &secs, &now
	return l
}

// released returns a copy of l with no holder and, unless issued is zero,
// the mark lowered to issued.
func released(l *coordinationv1.Lease, issued time.Time) *coordinationv1.Lease {
	l = l.DeepCopy()
	l.Spec.HolderIdentity = nil
	delete(l.Annotations, afterKey)
	if !issued.IsZero() {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[markKey] = formatTime(issued)
	}
	return l
}

// serverClock is the API server's clock as the Lease l, just written,
// shows it: the time of its latest managedFields entry, which the API
// server stamps, on its own clock, when a write changes the fields a
// manager owns, as every write here does (renewTime moves). It holds whole
// seconds, cut short, so the reading is the middle of its second, within
// half a second. The zero Reading if l has no such time (a server without
// field management, or a fake clientset).
func serverClock(l *coordinationv1.Lease) machineid.Reading {
	var last time.Time
	for _, f := range l.ManagedFields {
		if f.Time != nil && f.Time.After(last) {
			last = f.Time.Time
		}
	}
	if last.IsZero() {
		return machineid.Reading{}
	}
	return machineid.Reading{Source: "the API server's clock", Time: last.Add(time.Second / 2), Within: time.Second / 2}
}
