// Package machineid_redis hands out ringflake machine IDs from Redis, on
// leases that a generator follows so that no two processes issue the same
// (machine, tick) pair, even across crashes, clock steps and Redis
// restarts.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	svc, err := machineid_redis.New(client)
//	...
//	g, err := ringflake.New(ringflake.WithMachineIDSource(svc))
//	...
//	defer g.Close() // releases the lease
//
// A [Service] is a machineid.Leaser and serves one generator, once. It
// accepts any redis.UniversalClient: a standalone or Sentinel
// *redis.Client, or a *redis.ClusterClient. Every key lives under one
// prefix with a hash tag (default "{ringflake}:"), so each Lua script runs
// on one Cluster slot. The scripts read INFO and TIME before they write,
// which needs Redis 5 or later.
//
// # Two modes
//
// Lease mode, the default and the recommended one: each process takes the
// lowest free ID in a range and holds it with a random owner token and a
// TTL. A background goroutine renews every TTL/3; the generator's Close
// releases the ID and lowers its mark to the time it really issued. A
// crashed process's ID is free again after its TTL.
//
// Host mode ([WithHostMapping]): compatible with an existing host mapping's keys
// and data, <prefix>IP_MACHINE_ID_MAPPING (host -> ID) and <prefix>MAX_ID
// (last ID handed out). Lookup and allocation are one atomic script that
// never goes past the range. The host's ID is then leased like in lease
// mode, so a second live process on the host is refused ([ErrHostInUse]).
// IDs are never recycled.
//
// # High-water marks
//
// Redis keeps, per ID, a mark: the latest time (ms since the Unix epoch,
// on the holders' clock; see [WithClock]) that any holder of the ID may
// issue. Every acquisition and renewal raises it to now + TTL before the
// holder may use that time, and reports it as the lease's Until; the
// generator never issues past it. A new holder is told the mark it found
// as the lease's After, and ringflake.New waits, within its acquire
// timeout, for the clock to pass it: so a process restarted with its
// clock behind the previous holder's cannot repeat its pairs. In lease
// mode it prefers a free ID whose mark has already passed. Release lowers
// the mark to the time the holder really issued, never below the mark it
// inherited, so the next holder rarely waits.
//
// No mark is set more than TTL + safety margin + WithMaxClockSkew past the
// Redis server's own time (TIME): a process whose clock reads further
// ahead of the server's than the margin plus the skew allowance is
// refused, with an error that says by how much, instead of pushing its
// IDs' marks out of every later holder's reach. Every duration option has
// bounds (TTL 1s..5m, for one), and New refuses a value outside them with
// an error wrapping ringflake.ErrInvalidConfig.
//
// # A fresh or restarted Redis
//
// A Redis that restarted may have lost, or rolled back to a snapshot, the
// marks and leases of holders still running. Their marks are at most
// restart time + TTL, so for a TTL (plus WithMaxClockSkew) after the server
// starts (INFO's uptime_in_seconds), every ID's mark is taken to be at
// least that: the restart floor. It is reported as the lease's After, so
// on a fresh Redis, ringflake.New takes up to a TTL to return, logs that it
// is waiting for the machine ID's inherited mark (a restarted store's
// floor) through ringflake.WithLogger, and then returns a generator that
// issues at once.
// With an acquire timeout shorter than the wait, New fails with an error
// wrapping ringflake.ErrMarkAhead that says how far ahead the mark is. The
// floor is counted from when the answer arrived, so a call that ran late
// (a stalled server, a resend) cannot lower it.
//
// # Losing the lease
//
// The lease is held until (send time of the last successful acquire or
// renewal) + TTL − safety margin, by the local monotonic clock. The server
// cannot expire the key before send time + TTL, so the holder stops
// vouching for it before anyone else can take it. Past that deadline the
// lease is reported not held, with its cause in the lease's Err: the error
// of the renewals that failed (a refused connection, a timeout), the lease
// taken by another owner, or gone from Redis. The generator then returns a
// *ringflake.ClockError wrapping ringflake.ErrLeaseLost and that cause.
// Renewal keeps trying, and the lease (maybe a new ID) is taken again when
// Redis answers.
//
// Each call is bounded by the call timeout whatever the client's settings
// (go-redis honours context deadlines only with ContextTimeoutEnabled). A
// call that times out runs on until the client gives up, so that its
// error, which go-redis would otherwise replace with the context's, can
// still become the lease's cause. Every script is idempotent for one owner
// token, so go-redis's retries and this package's own repeat after a
// timeout cannot take two IDs or count an ID twice.
//
// # What the clocks must agree on
//
// While the marks survive, holders' clocks need not agree: a new holder
// waits for its own clock to pass the mark, however far behind it is. Two
// things do need agreement:
//   - A holder's clock must not read ahead of the Redis server's by more
//     than the safety margin plus WithMaxClockSkew, or it is refused.
//   - After Redis loses its marks, the restart floor covers a previous
//     holder's times only if its clock was at most WithMaxClockSkew
//     (default 0) ahead of the next holder's.
//
// Clock rates matter too: the local and the server's clocks must differ by
// less than the safety margin over a TTL.
//
// # What is guaranteed
//
// With one Redis primary whose keys are neither flushed nor evicted (use
// maxmemory-policy noeviction), clocks as above, and one TTL for every
// process sharing a prefix (the restart guard assumes no holder's TTL is
// longer than the acquirer's):
//   - two live leases never hold one ID at the same time;
//   - no holder issues a time later than the mark Redis confirmed for it;
//   - no holder issues a time at or before a previous holder's mark;
//   - hence no (machine, tick, sequence) is issued twice by different
//     holders, whatever their wall clocks say, and a generator never
//     issues while its lease cannot be proven.
//
// # Limits
//
//   - Replication is asynchronous. If the primary fails before a lease or
//     mark write reaches the replica that is promoted, the new primary has
//     lost it: another process can take the same ID at once, or below its
//     last holder's mark. The new primary's uptime does not reset, so the
//     restart floor does not apply. WAIT, or persistence with appendfsync
//     always, narrows the window but does not close it.
//   - Redis Cluster: a failover of the master of the prefix's slot has
//     the window above. Resharding that slot is unsafe while generators
//     run: the scripts build the per-ID keys' names themselves, so while
//     the keys move, a script on the old node does not see the ones
//     already moved, and may take an ID that is held. Move the slot with
//     no generator running, or keep it where it is. Only one slot is
//     used, so the Cluster adds availability, not capacity.
//   - FLUSHALL, deleting the keys, or eviction loses leases and marks
//     without a restart, which the restart floor cannot see.
//   - Key expiry runs on the server's clock: a server clock jump forward
//     can expire a lease early, before the holder's deadline.
//   - A process paused longer than the margin (GC, SIGSTOP, VM migration)
//     between checking the lease and issuing could issue after its
//     deadline; the margin is its only protection.
//   - A late answer to a call given up on may keep an ID held until its
//     TTL runs out; it costs a free ID for a while, never uniqueness.
//   - Host mode never recycles IDs: host churn exhausts the range.
package machineid_redis
