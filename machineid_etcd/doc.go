// Package machineid_etcd hands out ringflake machine IDs from etcd, on
// leases that a generator follows, so that no two processes issue the same
// ID, across crashes, etcd restarts and leader failovers.
//
// Each process's [Leaser] takes the lowest free ID in a range (default
// 0..1023) and holds it with a random owner token on an etcd lease, whose
// TTL etcd enforces: a crashed holder's ID is free a TTL after its last
// renewal. Per ID, etcd also keeps a mark, without a lease: the latest time
// any holder of the ID may have issued. Every write compares before it
// writes, in one transaction: an ID is claimed only if no one owns it, and
// its mark is read in the same transaction; a mark is raised only by the
// ID's current owner.
//
// # What a user sees
//
// The first lease: MachineID claims the ID, raises its mark to the clock
// plus the TTL and reports it as [machineid.Lease].Until, the time the
// generator may issue up to; renewals every TTL/3 raise it again. The mark
// the ID had is reported as Lease.After, and the generator issues only
// later times. For a fresh ID it is zero; after a previous holder's Close
// it is the time that holder last issued; after a crash it is at most a
// TTL past the crashed holder's last renewal, and the ID becomes free only
// a TTL after that renewal. So with clocks that agree, the new holder
// hardly waits.
//
// A lost lease: if etcd does not confirm a renewal within the TTL less the
// safety margin of the last confirmed one being sent, watchers see Held =
// false, with an Err wrapping [ErrLeaseLost] and etcd's error, and the
// generator returns ringflake.ErrLeaseLost, before etcd itself could
// expire the lease. The Leaser goes on trying. If the etcd lease survived,
// the same ID comes back with the same After. If etcd says the lease
// expired or the ID's key was taken, the Leaser acquires again, possibly
// another ID, whose mark becomes After.
//
// A restart of etcd: etcd keeps keys, leases and marks on disk, and a
// member that becomes leader gives every lease a full TTL again, so no
// lease expires while etcd is down. A holder sees nothing of a short
// outage; one longer than about two thirds of the TTL less the margin
// shows as a lost lease, and the same ID comes back once etcd answers.
//
// A leader failover: calls wait while the other members elect a leader,
// about an election timeout (1s by etcd's default); the new leader also
// gives every lease a full TTL. A holder sees it as a short outage, and
// nothing at all if the TTL leaves room.
//
// # Clocks
//
// The marks are times on the holders' clocks ([WithClock], time.Now by
// default): etcd has no clock clients can read. While etcd keeps its data,
// which it does across restarts and failovers, a handover needs no clock
// agreement for uniqueness: every time the previous holder issued is at or
// before its last Until, which is at or before the mark; the next holder
// issues only times its own clock reads after the mark. What a clock that
// disagrees costs is waiting: a holder whose clock runs ahead by d leaves
// a mark d ahead, and the ID's next holder waits about d before it issues
// (ringflake.New fails with ringflake.ErrMarkAhead if that is longer than
// its acquire timeout); a holder whose clock runs behind by d waits about
// d when it takes an ID from a holder with a correct clock. Neither can
// make an ID repeat.
//
// Clock rates matter for the deadline: the Leaser measures it on the local
// monotonic clock, etcd the lease's TTL on its leader's, and the margin
// covers their difference over a TTL. A faster etcd clock, or a process
// paused longer than the margin, can let etcd give the ID to another
// process while this one still issues; they still issue disjoint times,
// because the mark this holder can no longer raise separates them.
//
// # What is guaranteed
//
// With etcd keeping its data (no restore from an older backup, no loss of
// a majority of members' data):
//   - an ID has one owner key at a time, and a Leaser reports Held only
//     for an ID whose key held its token when etcd last answered;
//   - no holder is told an Until that etcd has not recorded as the ID's
//     mark;
//   - a new holder's After is at or past every Until an earlier holder was
//     given, or, for a holder that released with an issued time, at or
//     past that time;
//   - hence two generators never issue the same ID, whatever their clocks
//     say, and a generator stops issuing before etcd could expire its
//     lease, given the clock rates above.
//
// # What is not
//
//   - Restoring etcd from a backup, or losing a majority of its members'
//     data, rolls marks back: stop every generator sharing the prefix
//     first, and start them again no sooner than a TTL later, on clocks
//     that agree.
//   - A call given up on (its timeout ran out) may still be applied: a
//     claim then holds an extra ID, or an etcd lease lives, until its TTL
//     runs out. That costs free IDs for a while, never uniqueness.
//   - The range is scanned from the keys etcd holds; each ID that was ever
//     leased keeps a mark key of a few dozen bytes.
//
// # Usage
//
// One Leaser serves one generator, which releases the lease on Close:
//
//	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints})
//	...
//	leaser, err := machineid_etcd.New(client, machineid_etcd.WithTTL(10*time.Second))
//	...
//	gen, err := ringflake.New(ringflake.WithMachineIDSource(leaser))
//	...
//	defer gen.Close()
package machineid_etcd
