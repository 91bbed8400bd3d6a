// Package machineid_mysql leases ringflake machine IDs from a MySQL or
// MariaDB table (InnoDB), so that no two processes issue the same
// (machine, time) pair, across crashes, restarts of the database and steps
// of the clock.
//
// [New] returns a [machineid.Holder] over a *sql.DB of the driver
// github.com/go-sql-driver/mysql (any [DB]); the options are package
// machineid's and [WithTable]. Each row of the table is one machine ID:
// the random token of its holder, when its lease expires by the database's
// clock (UTC_TIMESTAMP), and its mark, the latest time a holder may issue
// with. Create the table with [TableSQL] in a migration, or with
// [CreateTable]:
//
//	db, _ := sql.Open("mysql", "app:secret@tcp(db.internal:3306)/app?interpolateParams=true")
//	_ = machineid_mysql.CreateTable(ctx, db, "")
//	holder, _ := machineid_mysql.New(db, machineid.WithTTL(10*time.Second))
//	g, _ := ringflake.New(ctx, ringflake.WithMachineIDSource(holder))
//	defer g.Close() // releases the lease
//
// # Why two takes never hold one ID
//
// Every statement that changes a row runs alone, committed when it
// returns, whatever the isolation level (REPEATABLE READ by default) and
// whether or not the table is read in a snapshot meanwhile. A take first
// reads, with no lock, which row to try; that read may be stale, and
// decides nothing. The grant is one UPDATE of that row by its primary key,
// whose WHERE says the row is free (no owner, or expired by UTC_TIMESTAMP
// at the statement's start) or the taker's own. InnoDB runs it by locking
// the row exclusively until the statement commits, and judges the WHERE on
// the newest committed version of the row, never on a snapshot: an UPDATE
// is a locking read at every isolation level. Two grants of one row
// therefore run one after the other, and the second finds the first's
// owner, with an expiry TTL past the first's start, which is later than
// the second's start unless a whole TTL passed. The grant tells whether it
// changed the row through the count of rows changed, and every grant
// changes a row it matches (writes grows by one), so the count does not
// depend on the connection's clientFoundRows. Only then does the take read
// the row back. Every statement but a release locks one row; a release
// locks its token's rows in the primary key's order: no cycle of waits, so
// no deadlock.
//
// docs/machineid_mysql.md lists the server's behaviours this rests on,
// each step citing them.
//
// The guarantee: with one primary whose committed data survives
// (innodb_flush_log_at_trx_commit=1, and semi-synchronous or synchronous
// replication for failovers), nobody deleting the table's rows, and the
// holders' and the database's clocks running at nearly the same rate (apart
// by less than the safety margin over a TTL), no ID is issued twice by
// different holders. Wall clocks need not agree.
//
// What a user sees on a loss or a restart, what failovers and backups
// risk, and why the clocks need only agree on their rate:
// docs/machineid_mysql.md.
package machineid_mysql
