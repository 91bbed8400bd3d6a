package machineid_postgres

import (
	"fmt"
	"strings"
	"time"
)

// TableSQL creates the table of leases under its default name. For another
// name ([WithTable]), put that name in its place, or call [CreateTable].
// Each row is one machine ID:
//
//   - owner is the random token of the process holding the ID, NULL when
//     it was released;
//   - expires_at is when the lease runs out, on the database's clock; a
//     row whose owner is NULL or whose expires_at has passed is free;
//   - mark is the latest time, on the holders' clocks, that a holder of the
//     ID may have issued IDs with (NULL: never held);
//   - inherited is the mark the current owner found when it took the ID.
const TableSQL = `CREATE TABLE IF NOT EXISTS ringflake_machine_ids (
    id         bigint      PRIMARY KEY,
    owner      text,
    expires_at timestamptz NOT NULL,
    mark       timestamptz,
    inherited  timestamptz
)`

// statements are the SQL statements of one table. Every one that changes a
// row acts only for one owner token and is idempotent for it: a statement
// whose answer was lost (a timeout, a broken connection) may have
// committed, and the next one must find its effect and carry on from it.
//
// Expiry is judged by statement_timestamp(), when the database received the
// statement: it is never before the holder sent it, so a lease set to expire
// at statement_timestamp() + TTL expires no sooner than TTL after the send,
// and a row taken as expired at statement_timestamp() is expired still. It
// holds inside a transaction too, unlike now().
type statements struct {
	create string
	fill   string
	take   string
	renew  string
	free   string
	held   string
}

func newStatements(table string) statements {
	quoted := quote(table)
	r := strings.NewReplacer("$table", quoted)
	return statements{
		// create makes the table under a transaction-scoped advisory lock
		// keyed by its name: CREATE TABLE IF NOT EXISTS alone lets two
		// creators that start together both try, and one fails on the
		// catalog's unique index (SQLSTATE 23505). One DO statement runs as
		// one transaction in either protocol.
		create: fmt.Sprintf(`DO $do$ BEGIN
PERFORM pg_advisory_xact_lock(%d, hashtext(%s));
%s;
END $do$`, createLockClass, literal(quoted), strings.Replace(TableSQL, defaultTable, quoted, 1)),

		// fill adds a free row for the lowest ID of lo..hi that has none,
		// so that take can lock rows rather than race to insert them. It
		// finds it among lo and the IDs just past a row's, through the
		// primary key, so that it costs as many rows as the range has, not
		// the range's width: rows are added as IDs are first needed. A
		// concurrent fill that added the same ID first leaves this one's
		// insert to do nothing; either way it answers the ID found.
		//	$1 lo, $2 hi
		//	returns the ID, or no row when every ID of lo..hi has one
		fill: r.Replace(`WITH gap AS (
  SELECT c.id FROM (
    SELECT $1::bigint AS id
    UNION ALL
    SELECT f.id + 1 FROM $table AS f WHERE f.id >= $1::bigint AND f.id < $2::bigint
  ) AS c
  WHERE NOT EXISTS (SELECT 1 FROM $table AS n WHERE n.id = c.id)
  ORDER BY c.id
  LIMIT 1
), added AS (
  INSERT INTO $table (id, expires_at)
  SELECT id, statement_timestamp() FROM gap
  ON CONFLICT (id) DO NOTHING
)
SELECT id FROM gap`),

		// take gives the token a row in lo..hi it already owns (the trace
		// of an earlier take whose answer was lost, or its own lease after
		// a loss the row did not see), else the lowest free one, and raises
		// the row's mark ahead, unless the proposed mark is NULL (GREATEST
		// ignores it). It answers with the database's clock, the reference
		// a holder's clock is checked against. A row locked by another
		// statement is skipped, not waited for: it is being taken, renewed
		// or released. FOR UPDATE locks the newest version of the row and
		// checks the WHERE clause against it again, so a row another
		// statement took since this one's snapshot is passed over too.
		//
		// The two are looked for apart, so that each can stop at the first
		// row it finds in the primary key's order: the lowest free row
		// costs the rows held below it, not the range. COALESCE looks for
		// a free row only if the token owns none.
		//	$1 token, $2 TTL in µs, $3 the proposed mark (the holder's clock
		//	+ TTL) or NULL, $4 lo, $5 hi
		//	returns id, inherited, mark, the database's clock
		take: r.Replace(`UPDATE $table AS t SET
  owner = $1,
  expires_at = statement_timestamp() + $2::bigint * interval '1 microsecond',
  inherited = CASE WHEN t.owner = $1 THEN t.inherited ELSE t.mark END,
  mark = GREATEST(t.mark, $3::timestamptz)
WHERE t.id = COALESCE(
  (SELECT f.id FROM $table AS f
   WHERE f.id BETWEEN $4::bigint AND $5::bigint AND f.owner = $1
   ORDER BY f.id
   LIMIT 1
   FOR UPDATE SKIP LOCKED),
  (SELECT f.id FROM $table AS f
   WHERE f.id BETWEEN $4::bigint AND $5::bigint
     AND (f.owner IS NULL OR f.expires_at < statement_timestamp())
   ORDER BY f.id
   LIMIT 1
   FOR UPDATE SKIP LOCKED))
RETURNING t.id, t.inherited, t.mark, clock_timestamp()`),

		// renew extends the token's lease on id and raises the mark
		// ahead. It succeeds on a row that expired and that nobody took:
		// the owner never changed, so nobody else held it meanwhile.
		//	$1 id, $2 token, $3 TTL in µs, $4 the proposed mark
		//	returns mark and the database's clock, or no row when the token
		//	no longer owns id
		renew: r.Replace(`UPDATE $table SET
  expires_at = statement_timestamp() + $3::bigint * interval '1 microsecond',
  mark = GREATEST(mark, $4::timestamptz)
WHERE id = $1::bigint AND owner = $2
RETURNING mark, clock_timestamp()`),

		// free releases every row the token owns and, if the holder says
		// how far it issued, lowers the mark to that time or to the mark
		// the holder inherited, whichever is later; never raises it.
		//	$1 token, $2 issued (NULL: keep the mark)
		free: r.Replace(`UPDATE $table SET
  owner = NULL,
  expires_at = statement_timestamp(),
  mark = CASE WHEN $2::timestamptz IS NULL THEN mark
              ELSE LEAST(mark, GREATEST($2::timestamptz, inherited)) END
WHERE owner = $1`),

		// held says in how many seconds the first of the rows of lo..hi
		// that an unexpired owner holds expires.
		//	$1 lo, $2 hi
		held: r.Replace(`SELECT EXTRACT(EPOCH FROM min(expires_at) - statement_timestamp())::float8
FROM $table
WHERE id BETWEEN $1::bigint AND $2::bigint AND owner IS NOT NULL AND expires_at >= statement_timestamp()`),
	}
}

// createLockClass is the first key of create's advisory lock, "rflk", so
// that it does not meet an application's own single-key locks.
const createLockClass = 0x72666c6b

// literal quotes s as an SQL string literal; a valid quoted table name
// holds no single quote.
func literal(s string) string { return "'" + s + "'" }

// quote quotes each part of a valid table name.
func quote(table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = `"` + p + `"`
	}
	return strings.Join(parts, ".")
}

// ceilMicro rounds t up to the database's resolution, a microsecond, so a
// mark lowered to it still covers t.
func ceilMicro(t time.Time) time.Time {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}
