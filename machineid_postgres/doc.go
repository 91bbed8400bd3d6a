// Package machineid_postgres leases ringflake machine IDs from a
// PostgreSQL table, so that no two processes issue the same (machine,
// time) pair, across crashes, restarts of the database and steps of the
// clock.
//
// [New] returns a [machineid.Holder] over a *pgxpool.Pool (any [DB]); the
// options are package machineid's and [WithTable]. Each row of the table is
// one machine ID: the random token of its holder, when its lease expires by
// the database's clock (statement_timestamp()), and its mark, the latest
// time a holder may issue with. Create the table with [TableSQL] in a
// migration, or with [CreateTable]:
//
//	pool, _ := pgxpool.New(ctx, "postgres://app@db.internal/app")
//	_ = machineid_postgres.CreateTable(ctx, pool, "")
//	holder, _ := machineid_postgres.New(pool, machineid.WithTTL(10*time.Second))
//	g, _ := ringflake.New(ctx, ringflake.WithMachineIDSource(holder))
//	defer g.Close() // releases the lease
//
// The guarantee: with one primary whose committed data survives
// (synchronous_commit on, and synchronous replication for failovers), nobody
// deleting the table's rows, and the holders' and the database's clocks
// running at nearly the same rate (apart by less than the safety margin
// over a TTL), no ID is issued twice by different holders. Wall clocks need
// not agree.
//
// What a user sees on a loss or a restart, what failovers and backups
// risk, and why the clocks need only agree on their rate:
// docs/machineid_postgres.md.
package machineid_postgres
