package leasesim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// The fleet clock of a store that keeps no clock of its own (kind.fleet:
// etcd), modelled as machineid_etcd keeps it (clock.go there). Each token
// has an etcd lease, kept alive by every take and renewal it makes; each
// renewal records the holder's clock (Claim.Now) in a record attached to
// that lease, with the raft term its keep-alive was answered in. A reader
// takes up to five other tokens' records, the first by key (a random
// order: keys are tokens), and ages each by how long ago its lease was
// kept alive, which etcd's TimeToLive says in whole seconds (GrantedTTL
// less the TTL left, less half a second, at least 0), leaving out a record
// whose term is not the current one; the median of the estimates is the
// reading, within half a second, tentative (it refuses no clock) unless at
// least three of the estimates, and more than half, lie within the clock
// bound and a second of it (issue 36: one holder's clock, or two, decided
// who was refused). A leader change (a restart of the kind)
// starts a new term and keeps every lease alive anew: a record of the old
// term would look as young as the change, and a reader that aged it so
// (the mutant fleet-no-term, machineid_etcd before D4 of issue 28) would
// see the fleet's clock behind by up to a renewal period.
//
// The TTL left is counted at the true rate, not the world's: a leader's
// clock runs at its host's rate, parts per million from the holders', and
// the world's rate is there to test the Holder's margin, not this
// estimate; the lease itself still ends on the store's clock, but its
// record is read only while the TTL left at the true rate is not
// negative, as the lease would be gone by then at etcd's own rate.

// clockRec is a token's clock record, and the etcd lease it is attached to.
type clockRec struct {
	key     uint64        // its place among the records' keys: a random draw, as a token is random
	ns      time.Time     // the holder's clock, as the renewal recorded it (Claim.Now)
	term    int           // the raft term the renewal's keep-alive was answered in
	kept    time.Time     // the store's wall clock at the lease's latest keep-alive
	expires time.Duration // the lease ends here, on the store's clock
	ttl     time.Duration // the lease's granted TTL
	// ref is the offset from the true time of the holder's clock as the
	// record stands for it: ns less the store's wall clock at the keep-alive
	// of the renewal that wrote it. The reading estimates the median of the
	// refs of the records it takes (the checker's reference; see refused).
	// A renewal's request that was slow on its way records a clock read
	// that much before its keep-alive, so its holder reads that much behind
	// its true offset: machineid_etcd's estimate has that error, and the
	// checks leave it out by taking the record as it stands.
	ref time.Duration
}

// fleetNoTermName is the mutant that ages the records as machineid_etcd
// did before D4: by the TTL left alone, whatever the term.
const fleetNoTermName = "fleet-no-term"

// keepAlive is etcd's keep-alive of token's lease, which every take and
// renewal of the token makes first: the lease runs a whole TTL again, and
// its record, if any, with it. The caller holds mu.
func (s *server) keepAlive(token string, ttl time.Duration) {
	if r := s.clocks[token]; r != nil && s.clock() < r.expires {
		r.kept, r.expires, r.ttl = s.wall(), s.clock()+ttl, ttl
	}
}

// recordClock is a renewal's record of the holder's clock, on its lease,
// in the current term. The caller holds mu.
func (s *server) recordClock(c machineid.Claim) {
	r := s.clocks[c.Token]
	if r == nil || s.clock() >= r.expires {
		r = &clockRec{key: s.keys.Uint64()}
		s.clocks[c.Token] = r
	}
	now := s.wall()
	r.ns, r.term, r.kept, r.expires, r.ttl = c.Now, s.term, now, s.clock()+c.TTL, c.TTL
	r.ref = c.Now.Sub(now)
}

// revoke is a release's revocation of token's lease: its record goes.
// The caller holds mu.
func (s *server) revoke(token string) { delete(s.clocks, token) }

// leaderChange starts a new term, in which every live lease was kept alive
// anew. The caller holds mu.
func (s *server) leaderChange() {
	s.term++
	for _, r := range s.clocks {
		if s.clock() < r.expires {
			r.kept, r.expires = s.wall(), s.clock()+r.ttl
		}
	}
}

// fleetReading is the reading a take or renewal by token, with the clock
// bound bound, gets: the median of up to five other holders' records, aged,
// tentative unless at least three of them, and more than half, agree on it
// within the bound and a second, and the reference it estimates (the
// median of their refs), and whether the records agree on it (weak if
// not: the reading is then tentative, unless the mutant fleet-one-decides
// is on). It reads nothing when there is no record. The caller holds mu.
func (s *server) fleetReading(token string, bound time.Duration) (r machineid.Reading, ref time.Duration, weak bool) {
	recs := make([]*clockRec, 0, len(s.clocks))
	toks := make(map[*clockRec]string, len(s.clocks))
	for t, r := range s.clocks {
		if s.clock() < r.expires {
			recs = append(recs, r)
			toks[r] = t
		}
	}
	slices.SortFunc(recs, func(a, b *clockRec) int { return cmpU(a.key, b.key) })
	recs = recs[:min(len(recs), records+1)] // listClocks: one more than records
	var est []time.Time
	var refs []time.Duration
	taken := 0
	for _, r := range recs {
		if toks[r] == token || taken == records {
			continue
		}
		taken++
		t, ok := s.aged(r)
		if !ok {
			continue
		}
		est, refs = append(est, t), append(refs, r.ref)
	}
	if len(est) == 0 {
		return machineid.Reading{}, 0, false
	}
	source := fmt.Sprintf("the median of %d live holders' clocks", len(est))
	if len(est) == 1 {
		source = "the one live holder's clock"
	}
	mid := medianTime(est)
	weak = !agreed(est, mid, bound)
	tentative := weak && !s.w.mutantOn(fleetOneDecidesName)
	return machineid.Reading{Source: source, Time: mid, Within: time.Second / 2, Tentative: tentative}, medianDur(refs), weak
}

// records is how many other holders' records a reading takes, and
// agreeing how many must agree on their median for it to refuse a clock,
// as in machineid_etcd.
const (
	records  = 5
	agreeing = 3
)

// fleetOneDecidesName is the mutant whose fleet clock is never tentative,
// as machineid_etcd's was before issue 36: one holder's record, or two,
// decides who is refused.
const fleetOneDecidesName = "fleet-one-decides"

// agreed reports whether the estimates est agree on their median mid, as
// machineid_etcd's agreed does: at least agreeing of them, and more than
// half, within bound plus a second of it.
func agreed(est []time.Time, mid time.Time, bound time.Duration) bool {
	n := 0
	for _, e := range est {
		if e.Sub(mid).Abs() <= max(bound, 0)+time.Second {
			n++
		}
	}
	return n >= agreeing && 2*n > len(est)
}

// aged returns r's holder's clock now as machineid_etcd's aged estimates
// it, or false if it leaves r out: a record of another term than the
// current one (unless the mutant fleet-no-term is on).
func (s *server) aged(r *clockRec) (time.Time, bool) {
	if r.term != s.term && !s.w.mutantOn(fleetNoTermName) {
		return time.Time{}, false
	}
	granted := r.ttl / time.Second
	left := r.kept.Add(r.ttl).Sub(s.wall())
	if left < 0 {
		// Past its TTL at the true rate: a lease that the world's slower
		// store clock keeps alive a while longer would, at etcd's own
		// rate, be gone with its record (seed 4053 read one aged as 0 s
		// left, a second too young).
		return time.Time{}, false
	}
	left /= time.Second // etcd truncates it to whole seconds
	age := max(time.Duration(granted-left)*time.Second-time.Second/2, 0)
	return r.ns.Add(age), true
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// medianTime is machineid_etcd's median: the middle estimate, or the
// midpoint of the two middle ones.
func medianTime(ts []time.Time) time.Time {
	slices.SortFunc(ts, time.Time.Compare)
	mid := ts[len(ts)/2]
	if len(ts)%2 == 0 {
		mid = ts[len(ts)/2-1].Add(mid.Sub(ts[len(ts)/2-1]) / 2)
	}
	return mid
}

// medianDur is medianTime's rule for durations.
func medianDur(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	mid := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		mid = ds[len(ds)/2-1] + (mid-ds[len(ds)/2-1])/2
	}
	return mid
}

// newKeys returns the stream the records' keys are drawn from.
func newKeys(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 600)) }
