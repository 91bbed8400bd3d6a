package machineid_etcd

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringflake/ringflake/machineid"
)

// etcd keeps no clock that clients can read, so the reference a holder's
// clock is checked against is the fleet's: the median of the live holders'
// clocks. Each holding records its holder's clock at prefix+"clock/"+token,
// attached to its etcd lease, with every renewal, right after the renewal
// kept the lease alive; the record goes when the lease does. A record is up
// to a renewal period old (TTL/3, or the whole TTL while renewals fail), too
// old to read as it is; instead its lease's TimeToLive says how long ago it
// was last kept alive, to the second (etcd truncates what is left to whole
// seconds), so a record is aged to within half a second, whatever the TTL.
//
// That holds only while no leader has been elected since: a new leader
// keeps every lease alive anew, so for a renewal period after a leader
// change a record's TimeToLive would make it seem as young as the change,
// and a fleet clock read from it lag by up to TTL/3 (or a TTL). So each
// record carries the raft term its keep-alive was answered in, and a
// reader leaves out a record whose term is not the one its own TimeToLive
// is answered in: etcd elects every leader in a term of its own, and a
// lease is kept alive anew only by the leader of a new term. Within TTL/3
// of a change every live holder has recorded its clock in the new term;
// until then a newcomer reads fewer records, or none, and with none its
// clock goes unchecked, as the first holder's does.
//
// The median of a few such estimates stands for the fleet's clock, with an
// uncertainty of half a second plus the call's round trip. It decides who
// is refused only where the fleet agrees on it: at least agreeing (3) of
// the estimates, and more than half of those read, lie within the clock
// bound plus a second (the two estimates' uncertainty) of the median.
// Otherwise the reading is tentative (machineid.Reading.Tentative): the
// Holder measures against it and reports the offset, but refuses no clock.
// So one holder's clock, or two, can get no one refused: with fewer than
// half the estimates off, the median lies between the clocks of the rest;
// with one or two read, nothing is refused; and three that include one or
// two far off do not agree. A refusal needs three holders' clocks, more
// than half of those read, within the bound and a second of the median.

// records is how many of the other holders' records a reading takes: five,
// so that one or two clocks off leave three that agree.
const records = 5

// agreeing is how many estimates must agree on the median for it to
// decide who is refused.
const agreeing = 3

// clockKey is the key of token's record.
func (s *store) clockKey(token string) string { return s.prefix + "clock/" + token }

// listClocks is the operation that reads a few holders' records, one more
// than records so that the reader's own can be left out. Keys sort by
// token, which is random, so these are a random few, read in O(records).
func (s *store) listClocks() clientv3.Op {
	return clientv3.OpGet(s.prefix+"clock/", clientv3.WithPrefix(), clientv3.WithLimit(records+1))
}

// putClock is the operation that records the holder's clock, c.Now, on
// lease, which was kept alive in the raft term term: "<ns> <term>".
func (s *store) putClock(c machineid.Claim, lease clientv3.LeaseID, term uint64) clientv3.Op {
	v := strconv.FormatInt(c.Now.UnixNano(), 10) + " " + strconv.FormatUint(term, 10)
	return clientv3.OpPut(s.clockKey(c.Token), v, clientv3.WithLease(lease))
}

// parseClock returns the clock and raft term of a record putClock wrote;
// ok is false if it does not parse (a record of v0.1.0 has no term).
func parseClock(v []byte) (ns int64, term uint64, ok bool) {
	a, b, found := strings.Cut(string(v), " ")
	if !found {
		return 0, 0, false
	}
	ns, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	term, err = strconv.ParseUint(b, 10, 64)
	return ns, term, err == nil
}

// termOf returns the raft term of a response's header, 0 if it has none.
func termOf(h *etcdserverpb.ResponseHeader) uint64 {
	if h == nil {
		return 0
	}
	return h.RaftTerm
}

// fleetClock estimates the live holders' clocks from kvs, their records,
// leaving c.Token's own out: the median of up to records estimates, each a
// record aged by how long ago its lease was kept alive, tentative unless
// the estimates agree on it (see above) within c.MaxOffset. It reads
// nothing without another holder's record, or if etcd does not answer.
func (s *store) fleetClock(ctx context.Context, c machineid.Claim, kvs []*mvccpb.KeyValue) machineid.Reading {
	own := s.clockKey(c.Token)
	var recs []*mvccpb.KeyValue
	for _, kv := range kvs {
		if string(kv.Key) != own && kv.Lease != 0 && len(recs) < records {
			recs = append(recs, kv)
		}
	}
	ctx, cancel := briefly(ctx)
	defer cancel()
	est := make([]time.Time, len(recs))
	var wg sync.WaitGroup
	for i, kv := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			est[i] = s.aged(ctx, kv)
		}()
	}
	wg.Wait()
	est = slices.DeleteFunc(est, time.Time.IsZero)
	if len(est) == 0 {
		return machineid.Reading{}
	}
	slices.SortFunc(est, time.Time.Compare)
	mid := est[len(est)/2]
	if len(est)%2 == 0 {
		mid = est[len(est)/2-1].Add(mid.Sub(est[len(est)/2-1]) / 2)
	}
	source := fmt.Sprintf("the median of %d live holders' clocks", len(est))
	if len(est) == 1 {
		source = "the one live holder's clock"
	}
	return machineid.Reading{
		Source:    source,
		Time:      mid,
		Within:    time.Second / 2,
		Tentative: !agreed(est, mid, c.MaxOffset),
	}
}

// agreed reports whether the estimates est agree on their median mid, for
// a clock bound of bound: at least agreeing of them, and more than half,
// lie within bound plus a second (each estimate's ±½ s) of it.
func agreed(est []time.Time, mid time.Time, bound time.Duration) bool {
	n := 0
	for _, e := range est {
		if d := e.Sub(mid); d.Abs() <= max(bound, 0)+time.Second {
			n++
		}
	}
	return n >= agreeing && 2*n > len(est)
}

// briefly bounds the calls that read holders' clocks or leases to half of
// what is left of ctx, and a second: they are worth having, but must not
// make the take or renewal they serve late.
func briefly(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := time.Second
	if d, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(d)/2)
	}
	return context.WithTimeout(ctx, limit)
}

// aged returns the record kv's holder's clock now: the clock it recorded
// when it kept its lease alive, plus how long ago that was by the lease's
// TimeToLive, the middle of the second etcd truncates it to. It returns the
// zero Time if the record does not parse, its lease is gone, or a leader
// was elected since it was recorded (see above).
func (s *store) aged(ctx context.Context, kv *mvccpb.KeyValue) time.Time {
	ns, term, ok := parseClock(kv.Value)
	if !ok || term == 0 {
		return time.Time{}
	}
	r, err := s.client.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil || r.TTL < 0 || termOf(r.ResponseHeader) != term {
		return time.Time{}
	}
	age := max(time.Duration(r.GrantedTTL-r.TTL)*time.Second-time.Second/2, 0)
	return time.Unix(0, ns).Add(age)
}

// firstFree returns how soon, at most, the first of the leases of owners,
// the owner keys of the IDs held in a range, runs out, asking etcd about at
// most 16 of them; ok is false if it learnt nothing.
func (s *store) firstFree(ctx context.Context, owners []*mvccpb.KeyValue) (left time.Duration, asked int, ok bool) {
	leases := map[int64]bool{}
	for _, kv := range owners {
		if kv.Lease != 0 && len(leases) < 16 {
			leases[kv.Lease] = true
		}
	}
	ctx, cancel := briefly(ctx)
	defer cancel()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	left = -1
	for id := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.client.TimeToLive(ctx, clientv3.LeaseID(id))
			if err != nil || r.TTL < 0 {
				return
			}
			// etcd truncates what is left to whole seconds.
			d := time.Duration(r.TTL+1) * time.Second
			mu.Lock()
			if left < 0 || d < left {
				left = d
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return left, len(leases), left >= 0
}
