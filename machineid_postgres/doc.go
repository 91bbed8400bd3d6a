// Package machineid_postgres hands out ringflake machine IDs from a
// PostgreSQL table, on leases that a generator follows, so that no two
// processes issue the same (machine, time) pair, across crashes, restarts
// of the database and steps of the clock.
//
// A [Leaser] takes the lowest free ID in its range (default 0..1023) and
// holds it with a random owner token and a TTL (default 10s), renewing it
// every TTL/3 in the background; a generator's Close releases it. Pass it a
// *pgxpool.Pool (any [DB]); the application keeps using the pool.
//
// # The table
//
// One table holds every lease: one row per machine ID handed out. Create it
// in a migration with [TableSQL]:
//
//	CREATE TABLE IF NOT EXISTS ringflake_machine_ids (
//	    id         bigint      PRIMARY KEY,
//	    owner      text,         -- the holder's random token; NULL once released
//	    expires_at timestamptz NOT NULL, -- on the database's clock
//	    mark       timestamptz,  -- times issued up to, on the holders' clocks
//	    inherited  timestamptz   -- the mark the current owner found
//	)
//
// or let the program do it with [Leaser.CreateTable]. [WithTable] names
// another table. The Leaser's role needs SELECT, INSERT and UPDATE on it.
//
// # What a user sees
//
// The first lease: ringflake.New calls MachineID, which takes the lowest
// free ID in one statement (the first time, one more adds the range's rows)
// and starts renewing. The ID is free when it has no owner or its lease has
// expired by the database's clock, and concurrent processes never take the
// same one: each locks its row and skips rows others have locked.
//
// A lost lease: when renewals fail (the database is down, slow, or out of
// reach) the lease is reported not held at the time the last successful
// statement was sent plus the TTL less the safety margin, measured on the
// holder's monotonic clock, before the row can expire in the database. The
// generator then stops issuing and returns ringflake.ErrLeaseLost, wrapping
// [ErrExpired] and the database's error. If the database says the row has
// another owner ([ErrLost]), the loss is reported at once. The Leaser keeps
// trying: it renews the same row if nobody took it meanwhile, or takes the
// lowest free ID, and the generator issues again.
//
// A database restart: the data survives, and so do leases and marks. A
// restart that ends before a holder's deadline costs it a failed renewal or
// two and nothing else; a longer one loses its lease for the while, and it
// gets its own ID back once the database answers, unless the row expired
// and another process took it first. The pool reconnects by itself.
//
// A failover to a replica: with synchronous replication (the standby named
// in synchronous_standby_names, synchronous_commit on or stricter), every
// statement the Leaser saw committed is on the new primary, and a failover
// is a restart at another address that the pool must reach (a multi-host
// connection string with target_session_attrs=read-write, or a proxy).
// With asynchronous replication, the usual kind, a failover loses the
// statements of the last moments: a lease taken then, or a mark raised
// then, is gone. Another process can then take an ID that is still in use,
// or a time below its last holder's mark, and two processes can issue the
// same IDs until the first one's next renewal finds the row taken or its
// lease runs out, at most a TTL later. The same goes for restoring a
// backup, deleting rows, and a server running with synchronous_commit off,
// which can lose its last commits in a crash.
//
// # Marks
//
// Each row keeps a mark: the latest time a holder of the ID may issue,
// on the holders' clocks ([WithClock]). Taking and renewing a lease raise
// it to the holder's clock plus the TTL, ahead of time, and report it as
// Lease.Until once it is committed; the generator never issues past it. A
// new holder is told the mark it found as Lease.After and only issues later
// times. Release lowers the mark to the time the generator really issued,
// but never below the mark its holder inherited, so the next holder need not
// wait for a time nobody used.
//
// # What clocks must agree on
//
// Expiry uses the database's clock alone: a row expires TTL after the
// database received the statement that last extended it, and is free when
// the database's clock has passed that. The holder measures its own
// deadline on its monotonic clock from when it sent that statement. So the
// two clocks must only run at nearly the same rate: they may drift apart by
// less than the safety margin over a TTL (default a fifth). Their wall times
// need not agree, and a holder's wall clock may step.
//
// Marks are on the holders' clocks, compared by the next holder of the ID
// against its own. While the marks survive, this needs no agreement for
// safety: a holder whose clock is behind waits for it to pass the mark
// (ringflake.ErrMarkAhead if that takes longer than the generator's acquire
// timeout). Clocks within a fraction of the TTL of each other keep the
// wait short.
//
// # What is guaranteed
//
// With one primary whose committed data survives (synchronous_commit on,
// synchronous replication for failovers), no one deleting the table's rows,
// and the clock rates above:
//   - two live leases never hold one ID at the same time;
//   - a holder never issues a time later than the mark the database
//     confirmed for it;
//   - a holder never issues a time at or before the mark it inherited,
//     which is at or past every mark any earlier holder of the ID was
//     given, or lowered to what that holder really issued on release;
//   - hence no ID is issued twice by different holders, and a generator
//     issues nothing while its lease cannot be proven.
//
// What is not: the failover and data losses above; a jump forward of the
// database's clock, which expires rows early; a holder paused for longer
// than the margin (a GC pause, SIGSTOP, a VM migration) between checking
// its lease and issuing. A statement given up on may still commit and keep
// an ID held until its TTL runs out; that costs a free ID for a while,
// never uniqueness.
package machineid_postgres
