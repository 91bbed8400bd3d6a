// Package machineid_etcd hands out ringflake machine IDs from etcd, on
// leases that a generator follows, so that no two processes issue the same
// ID, across crashes, etcd restarts and leader failovers.
//
// Each process's [Leaser] claims a free ID in a range (default 0..1023)
// and holds it with a random owner token on an etcd lease, whose TTL etcd
// enforces: a crashed holder's ID is free a TTL after its last renewal.
// Per ID, etcd also keeps a mark, without a lease: the latest time any
// holder of the ID may have issued. Every write compares before it writes,
// in one transaction: an ID is claimed only if no one owns it, and its
// mark is read in the same transaction; a mark is written only by the ID's
// current owner.
//
// # What a user sees
//
// The first lease: MachineID claims the lowest free ID whose mark its
// clock has passed (if every free ID's mark is ahead, the one with the
// earliest mark), raises the mark to the clock plus the TTL and reports it
// as [machineid.Lease].Until, the latest time the generator may issue;
// renewals every TTL/3 raise it again. The mark the ID had is Lease.After,
// and the generator issues only later times: for a fresh ID there is none;
// after a previous holder's Close it is the time that holder last issued;
// after a crash it is at most a TTL past the crashed holder's last
// renewal, and the ID is free only a TTL after that renewal. So, on clocks
// that agree, a new holder hardly waits.
//
// A lost lease: if etcd has not confirmed a renewal by the TTL less the
// safety margin after the last confirmed one was sent, watchers see Held =
// false, with an Err wrapping [ErrLeaseLost] and the last call's error,
// and the generator returns ringflake.ErrLeaseLost, before etcd itself can
// expire the lease. The Leaser goes on trying, every TTL/10. If the etcd
// lease survived, the same ID comes back with the same After. If etcd says
// the lease expired or the ID's key was taken, the Leaser acquires again,
// possibly another ID, whose mark becomes After.
//
// A restart of etcd: etcd keeps keys, leases and marks on disk, and a
// member that becomes leader gives every lease a full TTL again, so no
// lease expires while etcd is down. An outage shorter than about two
// thirds of the TTL less the margin (some 4s with the defaults) goes
// unseen; a longer one shows as a lost lease, and the same ID comes back
// once etcd answers.
// After a failed call the Leaser makes the client dial again at once, not
// on gRPC's backoff, which grows to two minutes by default.
//
// A leader failover: calls wait while the other members elect a leader,
// about an election timeout (1s by etcd's default), and the new leader
// also gives every lease a full TTL, so a holder sees a short outage.
//
// # Clocks
//
// The marks are times on the holders' clocks ([WithClock], time.Now by
// default): etcd has no clock that clients can read. While etcd keeps its
// data, which it does across restarts and failovers, uniqueness across a
// handover needs no agreement between clocks: every time the previous
// holder issued is at or before its last Until, which is at or before the
// mark; the next holder issues only times its own clock reads after the
// mark. A clock that disagrees costs waiting, never a repeated ID:
//   - a holder whose clock runs ahead by d leaves a mark up to d ahead of
//     true time, and the ID's next holder, if its clock is right, waits up
//     to d before it issues (ringflake.New fails with
//     ringflake.ErrMarkAhead if that is longer than its acquire timeout);
//     a clock that jumps a year ahead makes its ID unusable for a year to
//     every other clock, and new holders then take other IDs;
//   - a holder whose clock runs behind by d waits up to d when it takes an
//     ID from a holder whose clock was right.
//
// Clock rates matter for the deadline alone: the Leaser measures it on the
// local monotonic clock, etcd the TTL on its leader's, and the margin
// covers the difference over a TTL. A faster etcd clock, or a process
// paused past its deadline, can let etcd give the ID to another process
// while this one still issues; the two still issue disjoint times, because
// this one can no longer raise the mark that separates them.
//
// # What is guaranteed
//
// While etcd keeps its data (no restore from an older backup, no loss of a
// majority of its members' data):
//   - an ID has at most one owner key at a time, and a Leaser reports Held
//     only while etcd cannot have expired its lease, for an ID whose owner
//     key held its token when its mark was last raised;
//   - no holder is told an Until that etcd has not recorded as the ID's
//     mark;
//   - a new holder's After is at or past every Until an earlier holder was
//     given, or, after a Release(issued), at or past issued and the
//     releasing holder's After;
//   - hence two generators on leases never issue the same ID, whatever
//     their clocks say, and, with clock rates within the margin, a
//     generator stops before etcd could give its ID to another.
//
// # What is not
//
//   - Restoring etcd from a backup, or losing a majority of its members'
//     data, rolls marks back: stop every generator sharing the prefix
//     first, and start them again no sooner than a TTL later, on clocks
//     that agree.
//   - A call given up on (its timeout ran out) may still be applied: a
//     claim then holds an ID, or an etcd lease lives, until its TTL runs
//     out or the Leaser is released. That costs free IDs for a while,
//     never uniqueness.
//   - Each ID that was ever leased keeps a mark key of a few dozen bytes,
//     and each acquisition reads all of them.
//
// The package is tested against etcd 3.4; it uses the v3 API's leases and
// transactions only.
//
// # Usage
//
// One Leaser serves one generator, which releases the lease on Close; see
// the Example.
package machineid_etcd
