package leasesim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ringflake/ringflake/machineid"
)

// server is the in-memory store every Holder of a world leases from, through
// a client of its own. Per machine ID it keeps a record: the token holding
// it and until when (on the store's clock, which runs at the world's rate
// against the holders' monotonic clocks), the ID's mark, the mark the token
// inherited, and a version that every write moves on. It keeps the
// promises of machineid.Store as its kind's real store does (see kind),
// and tells the checker of every write as it makes it.
type server struct {
	w *world
	k kind

	calls sync.WaitGroup // the calls in flight

	mu        sync.Mutex    // protects the fields below
	recs      []record      // by machine ID
	hist      [][]record    // by machine ID, the latest versions, for stale reads
	version   int64         // the latest version written
	epoch     int           // restarts that forgot something so far
	run       int           // kind.forgets: the run id of the server process, one more at each restart
	snaps     []snapshot    // the snapshots a restart may roll back to, oldest first
	skew      time.Duration // kind.forgets: how far the store's clock reads ahead of the true time (params.jumps)
	high      time.Time     // the furthest the store's wall clock had read at its latest step
	restarted time.Duration // when the instance started, on the store's wall clock, since the world's base
	marker    time.Time     // kind.forgets: the instance's clock at the first take or renewal it served; zero before
	promoted  bool          // kind.forgets: the instance is a replica switched to (R4), not restarted since
	replica   time.Duration // kind.forgets: when the replica's process started, as restarted
	down      bool
	term      int                  // kind.fleet: the raft term, one more at each leader change
	clocks    map[string]*clockRec // kind.fleet: each token's clock record and etcd lease (fleet.go)
	keys      *rand.Rand           // kind.fleet: the records' keys
}

// record is one machine ID's state in the store.
type record struct {
	token   string        // the lease's holder; "" when free
	expires time.Duration // the lease ends here on the store's clock (kinds that judge expiry themselves)
	mark    time.Time     // the latest time any holder may have issued; zero if none
	after   time.Time     // the mark token inherited
	version int64
	at      time.Time // when it was written, in virtual time
	hold    *holding  // the checker's view of token's holding; nil when free
	owner   *client   // kind.lock: the process whose lock holds it
	synced  time.Time // kind.lock: the mark as last synced to the disk
	run     int       // kind.forgets: the run id of the server process that granted the lease
}

// snapshot is one RDB snapshot: the records as the server saved them, with
// the run ids they were written by, as a dump keeps what was written.
type snapshot struct {
	recs []record
	at   time.Time // when it was taken, in virtual time
}

// histDepth is how many versions of a record a stale read can go back.
const histDepth = 8

var (
	errDown       = errors.New("leasesim: the store is restarting")
	errCut        = errors.New("leasesim: no route to the store")
	errLostBefore = errors.New("leasesim: the connection broke before the call reached the store")
	errLostAfter  = errors.New("leasesim: the connection broke before the store's answer came")
)

func newServer(w *world) *server {
	s := &server{w: w, k: w.p.kind, recs: make([]record, 8), hist: make([][]record, 8), clocks: map[string]*clockRec{}, keys: newKeys(w.seed)}
	// A fresh Redis has just started: its restart floor applies.
	s.restarted = 0
	return s
}

// clock reads the store's clock: time since the world began, at the
// world's rate, plus the steps of Redis's clock (a key's expiry is an
// absolute time on it, so a step forward ends leases early).
func (s *server) clock() time.Duration {
	return time.Duration(float64(time.Since(s.w.start))*s.w.p.rate) + s.skew
}

// alive reports whether r is a lease the store still counts as held. An
// observed kind's store judges nothing: a contender does (client.free).
func (s *server) alive(r *record) bool {
	if s.k.lock {
		return r.token != "" && r.owner != nil && !r.owner.dead.Load()
	}
	return r.token != "" && (s.k.observed || s.clock() < r.expires)
}

// write stores r as id's record, with a new version.
func (s *server) write(id int64, r record) {
	s.version++
	r.version, r.at = s.version, time.Now()
	s.recs[id] = r
	h := append(s.hist[id], r)
	if len(h) > histDepth {
		h = h[1:]
	}
	s.hist[id] = h
}

// view returns the records of lo..hi as a read stale by up to stale sees
// them: each one's latest version written at least stale ago, or the
// oldest one kept.
func (s *server) view(lo, hi int64, stale time.Duration) []record {
	v := make([]record, hi-lo+1)
	cut := time.Now().Add(-stale)
	for id := lo; id <= hi; id++ {
		v[id-lo] = s.recs[id]
		if stale <= 0 {
			continue
		}
		for i := len(s.hist[id]) - 1; i >= 0; i-- {
			v[id-lo] = s.hist[id][i]
			if !s.hist[id][i].at.After(cut) {
				break
			}
		}
	}
	return v
}

// take is the store's side of a Take by cl: the ID the token holds, else
// the lowest free one whose mark is behind the caller's clock, else the
// free one with the lowest mark (as machineid_redis and machineid_k8s
// choose). A store that forgets gives every ID at least its restart floor.
func (s *server) take(cl *client, c machineid.Claim, stale time.Duration) (machineid.Grant, judged, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return machineid.Grant{}, judged{}, errDown
	}
	s.mark()
	if s.k.fleet {
		s.keepAlive(c.Token, c.TTL)
	}
	for id := c.Lo; id <= c.Hi; id++ {
		// The token's own lease, the trace of a take whose answer was
		// lost, keeps the after recorded with it, as machineid_redis's
		// mine does, without the restart floor: the same run of the
		// server recorded it, and no one else could take the ID while it
		// lasted; the token is its own session's, whose generator's ring
		// keeps its own ticks apart. One that a rollback brought back is
		// void (below): before issue 36 it was kept too (the mutant
		// own-lease-no-floor), and a holding that had ridden out the
		// restarts in between issued a newcomer's ticks with it.
		if r := &s.recs[id]; r.token == c.Token && s.alive(r) {
			if s.k.forgets && r.run != s.run && !s.w.mutantOn(ownLeaseNoFloorName) {
				// A lease another run of the server recorded (a snapshot
				// restored: issue 36) is void: the token's holding may
				// have been ridden out and the ID taken since, on a run
				// that this one forgot. It is deleted, and the take goes
				// on as a new one, inheriting the restart floor, as
				// machineid_redis's mine does.
				s.void(id)
				break
			}
			g, j := s.grant(cl, c, id, r.after, false)
			return g, j, nil
		}
	}
	if s.k.lock {
		// The process's own lock of an earlier session, which its Release
		// did not reach, is freed first, as machineid_file's Take does.
		for id := c.Lo; id <= c.Hi; id++ {
			if r := s.recs[id]; r.owner == cl && r.token != c.Token && r.token != "" {
				r.token, r.hold, r.after, r.owner = "", nil, time.Time{}, nil
				s.write(id, r)
			}
		}
	}
	floor := s.floor(c)
	for {
		v := s.view(c.Lo, c.Hi, stale)
		if s.k.observed {
			cl.survey(c, v)
		}
		id, after, ok := s.pick(cl, c, v, c.Now, floor)
		if !ok {
			return machineid.Grant{}, judged{}, fmt.Errorf("%w: every ID in %d..%d is held", machineid.ErrExhausted, c.Lo, c.Hi)
		}
		if v[id-c.Lo].version != s.recs[id].version {
			// The write compares the version read: a stale read moved
			// first by someone else is read again, fresh.
			cl.w.log.add(cl.p.name(), "store: take of machine ID %d read a stale version; reading again", id)
			stale = 0
			continue
		}
		g, j := s.grant(cl, c, id, after, true)
		return g, j, nil
	}
}

// pick chooses the ID to take from the records v of c's range.
func (s *server) pick(cl *client, c machineid.Claim, v []record, now, floor time.Time) (int64, time.Time, bool) {
	best, bestMark := int64(-1), time.Time{}
	for id := c.Lo; id <= c.Hi; id++ {
		r := &v[id-c.Lo]
		if s.k.observed && r.token != "" && !cl.free(id, r, c) || !s.k.observed && s.alive(r) {
			continue
		}
		m := later(r.mark, floor)
		if m.Before(now) {
			return id, m, true
		}
		if best < 0 || m.Before(bestMark) {
			best, bestMark = id, m
		}
	}
	return best, bestMark, best >= 0
}

// grant gives id to c's token, raising its mark to c's Until (if any, and
// capped as the store caps it); a fresh grant starts a holding that
// inherits after. It returns, with the grant, what the Holder will judge
// its clock by.
func (s *server) grant(cl *client, c machineid.Claim, id int64, after time.Time, fresh bool) (machineid.Grant, judged) {
	r := s.recs[id]
	r.after = after
	if fresh {
		r.token, r.owner = c.Token, cl
		r.hold = s.w.chk.grant(cl.incOf(c.Token), id, c.Token, after, s.epoch)
	}
	r.mark = later(r.mark, s.capped(c.Until, c))
	r.synced = r.mark
	r.expires = s.clock() + c.TTL
	r.run = s.run
	s.write(id, r)
	read, ref, weak := s.reading(c)
	s.w.chk.recorded(r.hold, r.mark, s.epoch, read.Time, s.rideFloor(c))
	what := "grants again"
	if fresh {
		what = "grants"
	}
	s.w.log.add(cl.p.name(), "store: %s machine ID %d to token %s: after %s, until %s", what, id, short(c.Token), s.w.at(r.after), s.w.at(r.mark))
	j := judged{read: !read.Time.IsZero(), ref: ref, off: time.Duration(cl.p.clk.offset.Load()), source: read.Source, weak: weak}
	return machineid.Grant{ID: id, After: r.after, Until: r.mark, Clock: read}, j
}

// renew is the store's side of a Renew. With a *machineid.RestartError it
// also returns it, and the holding it ends, even when the mutant
// no-restart-error answers a plain loss instead.
func (s *server) renew(cl *client, c machineid.Claim, id int64) (machineid.Grant, *restartAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return machineid.Grant{}, nil, errDown
	}
	s.mark()
	if s.k.fleet {
		s.keepAlive(c.Token, c.TTL)
	}
	r := s.recs[id]
	// A lease of the token's that another run of the server recorded came
	// back from a snapshot: the token's holding may have been ridden out
	// meanwhile, on a run this one forgot, and its ID taken there, so it
	// is void, deleted and answered as the restart it is (issue 36), as
	// machineid_redis's renew does; unless the mutant renew-across-restart
	// keeps it.
	if s.k.forgets && r.token == c.Token && r.run != s.run && s.alive(&r) && !s.w.mutantOn(renewAcrossRestartName) {
		s.void(id)
		r = s.recs[id]
	}
	if r.token != c.Token || !s.alive(&r) {
		if s.k.forgets && (!s.w.mutantOn(storeMutantName) || r.token == "") {
			// No lease of the token's on the ID, none at all or another
			// holder's: machineid_redis's renew script answers {0, the
			// server's start}, and its Renew a *RestartError, with which
			// a live holder rides out a restart, up to the mark the
			// store confirmed for it. Another holder's lease is no
			// reason not to: every take since that confirmation
			// inherited at least that mark (machineid, ride.go).
			re := s.restartError(c, id, s.alive(&r) && r.token != c.Token)
			rs := &restartAnswer{re: re, hold: s.w.chk.holdingOf(c.Token, id), inc: cl.incOf(c.Token)}
			if s.w.mutantOn(noRestartErrorName) {
				return machineid.Grant{}, rs, re.Err
			}
			return machineid.Grant{}, rs, re
		}
		if !s.w.mutantOn(storeMutantName) || r.token == "" {
			return machineid.Grant{}, nil, fmt.Errorf("%w: machine ID %d has another holder or none", machineid.ErrLeaseLost, id)
		}
		// The mutant: the renewal does not check its token, and takes
		// the lease back from whoever holds it.
		r.token, r.hold, r.owner = c.Token, s.w.chk.holdingOf(c.Token, id), cl
	}
	r.mark = later(r.mark, s.capped(c.Until, c))
	r.synced = r.mark
	r.expires = s.clock() + c.TTL
	s.write(id, r) // the run id stays the take's, as in machineid_redis's OWNER hash
	if s.k.fleet {
		s.recordClock(c)
	}
	read, _, _ := s.reading(c)
	s.w.chk.recorded(r.hold, r.mark, s.epoch, read.Time, s.rideFloor(c))
	s.w.log.add(cl.p.name(), "store: renews machine ID %d for token %s: until %s", id, short(c.Token), s.w.at(r.mark))
	return machineid.Grant{ID: id, Until: r.mark, Clock: read}, nil, nil
}

// void deletes id's lease, which another run of the server recorded (a
// snapshot restored), keeping its mark, as machineid_redis deletes a void
// lease. The caller holds mu.
func (s *server) void(id int64) {
	r := s.recs[id]
	s.w.log.add("store", "machine ID %d: the lease of token %s is void, recorded by run %d (this is run %d)", id, short(r.token), r.run, s.run)
	r.token, r.hold, r.after, r.owner = "", nil, time.Time{}, nil
	s.write(id, r)
}

// start returns when the instance started, on the store's clock, as
// machineid_redis's serverStart reads it, in whole milliseconds: see
// started.
func (s *server) start() time.Time { return time.UnixMilli(s.started().UnixMilli()) }

// started returns the instance's start as machineid_redis reads it for
// its restart floor and a RestartError's Start: the earlier of the
// instance's marker, its clock at the first take or renewal it served
// (a per-process key, which a restart clears: see mark), and its time
// less its uptime in whole seconds less one. Both are at or after the
// instance's true start, after every write of the instance before it, so
// the floor still covers every mark a restart lost; the marker puts Start
// at or before the reading of every call the instance answered, so a
// holder confirmed by this instance itself never rides (Start is not
// after its c), whatever the uptime's rounding.
//
// A promoted replica's uptime predates the data it holds, which came by a
// sync, perhaps of a primary that restarted empty: its start is its marker
// alone, as machineid_redis's promoted() reads it; with the mutant
// floor-replica-uptime, its uptime counts too, as before issue 36's second
// review.
func (s *server) started() time.Time {
	if s.promoted && !s.w.mutantOn(replicaUptimeName) {
		s.mark()
		return s.marker
	}
	now := s.wall()
	up := max(now.Sub(s.w.base)/time.Second-s.restarted/time.Second-1, 0) * time.Second
	est := now.Add(-up)
	if !s.marker.IsZero() && s.marker.Before(est) {
		return s.marker
	}
	return est
}

// mark sets the instance's marker at the first take or renewal it serves:
// its clock then, in whole milliseconds. The caller holds mu.
func (s *server) mark() {
	if s.k.forgets && s.marker.IsZero() {
		s.marker = time.UnixMilli(s.wall().UnixMilli())
	}
}

// rideFloor is the Floor of the RestartError a store that forgets answers
// c's renewal with: machineid_redis's restartMs less the millisecond its
// restarted takes off (the start is in whole ms, the clock's reading in
// µs); 0 for other kinds. The restart floor, TTL + slack past an
// instance's start (floor), is past Start + rideFloor.
func (s *server) rideFloor(c machineid.Claim) time.Duration {
	if !s.k.forgets {
		return 0
	}
	return (c.TTL + 2*markSlack(c)).Truncate(time.Millisecond) - time.Millisecond
}

// restartError is a forgetting store's answer to a renewal of an ID with
// no lease of the token's on it, none or another holder's (other), as
// machineid_redis gives it.
func (s *server) restartError(c machineid.Claim, id int64, other bool) *machineid.RestartError {
	start := s.start()
	err := fmt.Errorf("%w: machine ID %d is gone from the store (expired, or lost in a restart)", machineid.ErrLeaseLost, id)
	if other {
		err = fmt.Errorf("%w: machine ID %d has another holder", machineid.ErrLeaseLost, id)
	}
	s.w.log.add("store", "no lease of token %s on machine ID %d (another's: %v): the instance started at %s", short(c.Token), id, other, s.w.at(start))
	return &machineid.RestartError{ID: id, Start: start, Floor: s.rideFloor(c), Err: err}
}

// release is the store's side of a Release: it frees what the token holds,
// id or, for -1, whatever it holds, and brings the mark of id down to
// issued, never below the mark the token inherited; or raises it to
// issued, if that is later, as machineid_redis does (capped as it caps
// marks; machineid_etcd and machineid_k8s write issued as it is). The
// Holder folds the inherited mark into issued, and a mark inherited from
// Redis's restart floor is later than the ID's own, which a holding that
// took without a mark and never renewed leaves as it was: the raise keeps
// the floor past the window. (machineid_postgres never raises; a store
// that does not forget has no floor, so there issued is past the mark only
// for a holder that issued past it, which the checker catches at the tick.)
func (s *server) release(cl *client, c machineid.Claim, id int64, issued time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errDown
	}
	if s.k.fleet {
		s.revoke(c.Token) // Release revokes the token's etcd lease last
	}
	for rid := c.Lo; rid <= c.Hi; rid++ {
		r := s.recs[rid]
		if r.token != c.Token || id >= 0 && rid != id {
			continue
		}
		mark := r.mark
		if !issued.IsZero() && id >= 0 {
			switch low := later(issued, r.after); {
			case low.Before(mark):
				mark = low
			case issued.After(mark) && !s.k.lock: // machineid_file only lowers
				mark = later(mark, s.capped(issued, c))
			}
		}
		s.w.chk.released(r.hold, mark, !issued.IsZero() && id >= 0)
		s.w.log.add(cl.p.name(), "store: frees machine ID %d of token %s: mark %s (was %s)", rid, short(c.Token), s.w.at(mark), s.w.at(r.mark))
		r.token, r.hold, r.after, r.mark, r.owner = "", nil, time.Time{}, mark, nil
		s.write(rid, r) // not synced: a power loss brings back r.synced
	}
	return nil
}

// wall reads the store's wall clock: the true time, plus the steps of
// Redis's clock. (Its rate is that of clock, but over a world's 20 s the
// two part by less than a second.)
func (s *server) wall() time.Time { return s.w.base.Add(time.Since(s.w.start) + s.skew) }

// reading is the store's reading of the reference clock a Holder checks
// its own against, for a call by token, and that reference's offset from
// the true time: a Kubernetes API server stamps its answers in whole
// seconds; etcd's reference is the fleet's (fleet.go); every other store
// reads its own clock, which is the true time.
func (s *server) reading(c machineid.Claim) (machineid.Reading, time.Duration, bool) {
	switch {
	case s.k.fleet:
		return s.fleetReading(c.Token, c.MaxOffset)
	case s.k.observed:
		return machineid.Reading{Source: "the store's clock (whole seconds)", Time: s.wall().Truncate(time.Second), Within: time.Second}, 0, false
	}
	return machineid.Reading{Source: "the store's clock", Time: s.wall()}, s.skew, false
}

// window is how long after a restart the mutants window-floor and
// short-floor give every ID the restart floor: TTL + 2·slack, as
// machineid_redis did until the swarmed worlds found a newcomer that took
// after it and then stepped its clock back below a lost mark; TTL + slack,
// as it did before the bound's edges found that a newcomer a slack behind
// the server issued below it. Without them there is no window: the floor
// holds for as long as the instance runs (see floor).
func (s *server) window(c machineid.Claim) (time.Duration, bool) {
	switch {
	case s.w.mutantOn(windowFloorName):
		return c.TTL + 2*markSlack(c), true
	case s.w.mutantOn(shortFloorName):
		return c.TTL + markSlack(c), true
	}
	return 0, false
}

// markSlack is how far past the server's time, beyond the TTL, a mark may be
// set: the holders' bound on their clocks' offset, or, with the check off,
// the safety margin.
func markSlack(c machineid.Claim) time.Duration {
	if c.MaxOffset < 0 {
		return c.Margin
	}
	return c.MaxOffset
}

// capped returns until, for a store that forgets, no later than the TTL
// plus the clock bound past the server's time, as machineid_redis caps its
// marks so that its restart floor covers them; the zero Time (a take that
// raises no mark) stays zero.
func (s *server) capped(until time.Time, c machineid.Claim) time.Time {
	if !s.k.forgets || c.MaxOffset < 0 || until.IsZero() || s.w.mutantOn(uncappedName) {
		return until
	}
	if top := s.wall().Add(c.TTL + c.MaxOffset); until.After(top) {
		return top
	}
	return until
}

// floor returns, for a store that forgets, the mark every ID is taken to
// have, as machineid_redis reads it: the instance's start on the server's
// clock (its time less its uptime) plus the TTL and twice the mark slack,
// for as long as the instance runs. Every mark the instance may have lost
// was set before its start, capped at TTL + slack past the server's time
// then, which the server's clock may have stepped back from by the slack, so
// every tick a holder of the old instance issued is at or below the floor,
// whatever the clock of a later holder says when it takes or after: a
// newcomer's ticks must pass the floor too. Redis's uptime_in_seconds is
// the difference of two whole seconds of its clock, which may read a
// second high, and the script takes a second off (the floor may come out
// up to two seconds late: a longer wait, never a lower floor). Zero when
// none applies.
func (s *server) floor(c machineid.Claim) time.Time {
	if !s.k.forgets {
		return time.Time{}
	}
	now := s.wall()
	up := max(now.Sub(s.w.base)/time.Second-s.restarted/time.Second-1, 0) * time.Second
	if w, ok := s.window(c); ok && up >= w {
		return time.Time{}
	}
	return s.started().Add(c.TTL + 2*markSlack(c))
}

// restart takes the store down for d and brings it back: having forgotten
// everything, for a kind that forgets, or, with rollback, rolled back to
// the snapshot taken at snap (the latest, if none was), a new run of the
// server; with every live lease renewed for a TTL, for a kind that extends
// them; as it was, otherwise.
func (s *server) restart(d time.Duration, rollback bool, snap time.Time) {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	s.w.log.add("store", "restarts, down for %v", d)
	time.Sleep(s.w.delay(d))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.promoted = false // a new process, which replicates from no one
	switch {
	case s.k.lock:
		// A power loss: the restarts goroutine has killed every process,
		// whose locks the kernel dropped; what was not synced is lost.
		for id := range s.recs {
			r := s.recs[id]
			r.token, r.hold, r.after, r.owner, r.mark = "", nil, time.Time{}, nil, r.synced
			s.write(int64(id), r)
		}
		s.w.log.add("store", "the host is back from a power loss; every mark is as last synced")
	case s.k.forgets && rollback && len(s.snaps) > 0:
		// Redis's default persistence: an RDB snapshot comes back, with
		// every lease and mark in it, and the run id that wrote each; a
		// lease's expiry is an absolute time, so one that ran out since is
		// gone.
		s.newRun()
		sn := s.snaps[len(s.snaps)-1]
		for _, o := range s.snaps {
			if o.at.Equal(snap) {
				sn = o
			}
		}
		s.recs = append([]record(nil), sn.recs...)
		s.hist = make([][]record, len(s.hist))
		for id := range s.recs {
			if r := &s.recs[id]; r.token != "" && !s.alive(r) {
				*r = record{mark: r.mark}
			}
		}
		s.restarted, s.marker = s.wall().Sub(s.w.base), time.Time{} // the snapshot's marker is the old process's
		s.w.log.add("store", "is back (run %d), rolled back to its snapshot of %.6fs", s.run, sn.at.Sub(s.w.start).Seconds())
	case s.k.forgets:
		s.newRun()
		s.recs = make([]record, len(s.recs))
		s.hist = make([][]record, len(s.hist))
		if !s.w.p.anySnap {
			s.snaps = nil // an instance that starts empty saves its own
		}
		s.restarted, s.marker = s.wall().Sub(s.w.base), time.Time{}
		s.w.log.add("store", "is back (run %d), having forgotten every lease and mark", s.run)
	case s.k.extends:
		for id := range s.recs {
			if r := s.recs[id]; s.alive(&r) {
				r.expires = s.clock() + s.w.p.ttl
				s.write(int64(id), r)
			}
		}
		if s.k.fleet {
			s.leaderChange()
		}
		s.w.log.add("store", "is back under a new leader (term %d); every live lease runs a whole TTL again", s.term)
	default:
		s.w.log.add("store", "is back")
	}
	s.down = false
}

// switchOver promotes Redis's replica, its clients cut off for d (R4 in
// docs/leases.md). The replica has every write: the records stay as they
// are, with the run ids that recorded them. Its process is another, with
// a run id of its own, so every lease the old primary recorded is void (a
// restart to every holder: a new run and epoch, as newRun starts), and a
// start of its own: the first call it serves as a primary (started), its
// process's start as the mutant floor-replica-uptime reads it. The old
// primary's process becomes its replica.
func (s *server) switchOver(d time.Duration) {
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	s.w.log.add("store", "switches over to its replica, its clients cut off for %v", d)
	time.Sleep(s.w.delay(d))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newRun()
	s.restarted, s.replica = s.replica, s.restarted
	s.marker, s.promoted, s.down = time.Time{}, true, false
	s.w.log.add("store", "is back on its replica (run %d), started at %.3fs, with every write", s.run, s.restarted.Seconds())
}

// snapshot saves the store's records, as Redis's RDB save does, for a
// restart that rolls back to them: the latest only, or, with
// params.anySnap, every one, old dumps kept across restarts that forget.
func (s *server) snapshot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return
	}
	if !s.w.p.anySnap {
		s.snaps = s.snaps[:0]
	}
	s.snaps = append(s.snaps, snapshot{recs: append([]record(nil), s.recs...), at: time.Now()})
}

// pickSnapshot returns when the snapshot a rollback restores was taken:
// with params.anySnap, the one x (in 0..1) picks among those kept;
// otherwise the latest; the zero Time if there is none.
func (s *server) pickSnapshot(x float64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.snaps) == 0 {
		return time.Time{}
	}
	if !s.w.p.anySnap {
		return s.snaps[len(s.snaps)-1].at
	}
	return s.snaps[int(x*float64(len(s.snaps)))].at
}

// skewNow returns how far the store's clock reads ahead of the true time.
func (s *server) skewNow() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skew
}

// lastSnapshotBefore returns when the latest snapshot taken before t was
// taken, or the zero Time (the latest) if none was.
func (s *server) lastSnapshotBefore(t time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	for _, sn := range s.snaps {
		if sn.at.Before(t) {
			at = sn.at
		}
	}
	return at
}

// newRun starts a new run of the server, after a restart that forgets: a
// new run id, a new epoch, and a clock at most the bound behind the
// furthest it read before (R3 in docs/leases.md: Redis's clock may step
// back by up to the bound in all, while it runs or across a restart; more
// is outside the promise, so a step the clock has not made up for by then
// is undone that far). The caller holds mu.
func (s *server) newRun() {
	s.epoch++
	s.run++
	if low := s.lowest(); s.wall().Before(low) && !s.w.isHealed() {
		s.w.log.add("store", "its clock steps forward by %v as it restarts, to the bound behind the furthest it read before", low.Sub(s.wall()))
		s.skew += low.Sub(s.wall())
	}
}

// lowest is the earliest Redis's clock may read (R3): the bound behind the
// furthest it has read. The caller holds mu.
func (s *server) lowest() time.Time {
	return later(s.high, s.wall()).Add(-max(s.w.p.bound, 0))
}

// stepClock steps Redis's clock to read skew ahead of the true time
// (behind, if negative), as an NTP step or a VM's resume does while the
// server runs: forward by any amount, back to no more than the bound
// behind the furthest it has read.
func (s *server) stepClock(skew time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w.isHealed() {
		return // set right for good (healClock)
	}
	skew = max(skew, s.lowest().Sub(s.w.base.Add(time.Since(s.w.start))))
	s.high = later(s.high, s.wall())
	s.w.log.add("store", "its clock steps by %v, to %v off", skew-s.skew, skew)
	s.skew = skew
}

// healClock sets Redis's clock right at the heal, for good: a step back
// of any size, which no restart follows (one under way when the world
// heals keeps the clock as it is), only keeps leases a while longer.
func (s *server) healClock() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew, s.high = 0, time.Time{}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// short abbreviates a token for the log.
func short(token string) string {
	if len(token) > 6 {
		return token[:6]
	}
	return token
}
