// Package machineid_redis hands out ringflake machine IDs from Redis, on
// leases that a generator follows so that no two processes issue the same
// (machine, tick) pair, even across crashes and clock steps.
//
// It accepts any redis.UniversalClient: a standalone or Sentinel
// *redis.Client, or a *redis.ClusterClient. Every key lives under one
// prefix with a hash tag (default "{ringflake}:"), so each Lua script runs
// on one Cluster slot; the prefix is checked when the Service is made.
//
// # Two modes
//
// [NewLeased] (recommended): each process takes the lowest free ID in a
// range and holds it with a random owner token and a TTL. A background
// goroutine renews every TTL/3; Close releases, and CloseIssued (which a
// generator's Close calls) also lowers the ID's mark to the time really
// issued. A crashed process's ID is
// free again after its TTL.
//
// [NewHostMapped]: compatible with the seed design's keys and data,
// <prefix>IP_MACHINE_ID_MAPPING (host -> ID) and <prefix>MAX_ID (last ID
// handed out). Lookup and allocation are one atomic script that never goes
// past the range. The host's ID is then leased like in lease mode, so a
// second live process on the host is refused ([ErrHostInUse]). IDs are
// never recycled.
//
// # High-water marks
//
// Redis keeps, per ID, a mark: the latest time (ms since the Unix epoch,
// on the holders' clock; see [WithClock]) that any holder of the ID may
// issue. Every acquisition and renewal raises it to now + TTL before the
// holder may use that time, and reports it as [machineid.Lease].Until; the
// generator never issues past it. A new holder is told the mark it found as
// Lease.After and never issues at or before it. So a process restarted with
// its clock behind the previous holder's cannot repeat its pairs: it waits
// for its clock to pass the mark or, in lease mode, takes a free ID whose
// mark has already passed. Release leaves the mark in place.
//
// A restarted server may have lost, or rolled back to a snapshot, the marks
// and leases of holders still running. Their marks are at most restart time
// + TTL, so for one TTL after the server starts (by INFO's
// uptime_in_seconds) acquisition takes every ID's mark to be at least that.
// A new holder then waits up to a TTL for its clock, after a restart and
// after a new server's first start alike. The restart time is counted back
// from when the answer arrived, so a call that ran late (a stalled server,
// a resend) cannot lower it. Lost marks were on their holders' clocks and
// the floor is on the acquirer's, so it assumes the clocks agree; allow
// for skew with [WithMaxClockSkew], which adds it to the floor and its
// window.
//
// # Losing the lease
//
// The lease is valid until (send time of the last successful acquire or
// renewal) + TTL - safety margin, by the local monotonic clock. The server
// cannot expire the key before send time + TTL, so the holder stops
// vouching for it before anyone else can take it. Past that deadline
// watchers see Valid = false and the generator returns its lease-lost
// error; renewal keeps trying, and the lease (maybe a new ID) is taken
// again when Redis answers.
//
// Each call is bounded by the call timeout whatever the client's settings
// (go-redis honours context deadlines only with ContextTimeoutEnabled).
// Every script is idempotent for one owner token, so go-redis's retries and
// this package's own repeat after a timeout cannot take two IDs or count an
// ID twice.
//
// # What is guaranteed
//
// With one Redis primary whose keys are neither flushed nor evicted (use
// maxmemory-policy noeviction), clocks whose rates differ by less than the
// safety margin over a TTL, and one TTL for every process sharing a prefix
// (the restart guard assumes no holder's TTL is longer than the
// acquirer's):
//   - two live leases never hold one ID at the same time;
//   - no holder issues a time later than the mark Redis confirmed for it;
//   - no holder issues a time at or before a previous holder's mark;
//   - hence no (machine, tick, sequence) is issued twice by different
//     holders, whatever their wall clocks say, and a generator never
//     issues while its lease cannot be proven.
//
// # What is not
//
//   - Replication is asynchronous. If the primary fails before a lease or
//     mark write reaches the replica that is promoted, the new primary has
//     lost it: another process can take the same ID at once, or below its
//     last holder's mark. WAIT, or persistence with appendfsync always,
//     narrows the window but does not close it.
//   - FLUSHALL, deleting the keys, or eviction loses leases and marks
//     without a restart, which the restart guard cannot see.
//   - After Redis loses its marks, a holder's clock that ran ahead of the
//     next holder's by more than WithMaxClockSkew (default 0) is not
//     covered: the next holder may reuse its times. While marks survive,
//     no skew matters.
//   - Key expiry runs on the server's clock: a server clock jump forward
//     can expire a lease early, before the holder's deadline.
//   - A process paused longer than the margin (GC, SIGSTOP, VM migration)
//     between checking the lease and issuing could issue after its
//     deadline; the margin is its only protection.
//   - A late answer to a call given up on may keep an ID held until its
//     TTL runs out; it costs a free ID for a while, never uniqueness.
//   - Host mode never recycles IDs: host churn exhausts the range.
package machineid_redis
