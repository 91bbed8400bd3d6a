package machineid_mysql

import (
	"strings"
	"time"
)

// TableSQL creates the table of leases under its default name. For another
// name ([WithTable]), put that name in its place, or call [CreateTable].
// Each row is one machine ID:
//
//   - owner is the random token of the process holding the ID, NULL when
//     it was released;
//   - holder is the account the owner connected as, USER() (user@host as
//     the server saw the client), for messages only;
//   - expires_at is when the lease runs out, on the database's clock in UTC
//     (UTC_TIMESTAMP); a row whose owner is NULL or whose expires_at has
//     passed is free;
//   - mark is the latest time, on the holders' clocks in UTC, that a holder
//     of the ID may have issued IDs with (NULL: never held);
//   - inherited is the mark the current owner found when it took the ID;
//   - writes counts the statements that changed the row, one each, so that
//     the rows a statement changed, which the server reports, are the rows
//     it matched, whether or not the connection sets clientFoundRows.
const TableSQL = "CREATE TABLE IF NOT EXISTS `ringflake_machine_ids` (\n" +
	"    id         BIGINT       NOT NULL PRIMARY KEY,\n" +
	"    owner      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NULL,\n" +
	"    holder     VARCHAR(255) CHARACTER SET utf8mb4 NULL,\n" +
	"    expires_at DATETIME(6)  NOT NULL,\n" +
	"    mark       DATETIME(6)  NULL,\n" +
	"    inherited  DATETIME(6)  NULL,\n" +
	"    writes     BIGINT       NOT NULL DEFAULT 0\n" +
	") ENGINE=InnoDB"

// statements are the SQL statements of one table. Every one that changes a
// row is a single UPDATE or INSERT, committed on its own, that acts only
// for one owner token and is idempotent for it: a statement whose answer
// was lost (a timeout, a broken connection) may have committed, and the
// next one must find its effect and carry on from it.
//
// Times cross the wire as microseconds since the Unix epoch, and become
// DATETIME(6) in UTC in the statement ($from and $us below), so that no
// session time zone, nor the driver's parseTime and loc, can shift them.
//
// Expiry is judged by UTC_TIMESTAMP(6), which MySQL and MariaDB fix when
// the statement starts: it is never before the holder sent it, so a lease
// set to expire at UTC_TIMESTAMP(6) + TTL expires no sooner than TTL after
// the send, and a row found expired at UTC_TIMESTAMP(6) is expired still.
//
// Why two takes never hold one ID: see grant, and the package doc.
type statements struct {
	create string
	find   string
	gap    string
	fill   string
	grant  string
	read   string
	renew  string
	clock  string
	free   string
	held   string
}

func newStatements(table string) statements {
	quoted := quote(table)
	r := strings.NewReplacer(
		"$table", quoted,
		// $at is an argument's µs since the epoch as a DATETIME(6) in
		// UTC; NULL stays NULL.
		"$at", "TIMESTAMPADD(MICROSECOND, ?, "+epoch+")",
		"$epoch", epoch,
		"$now", "UTC_TIMESTAMP(6)",
	)
	us := func(col string) string { return "TIMESTAMPDIFF(MICROSECOND, $epoch, " + col + ")" }
	return statements{
		// create runs TableSQL under the name. MySQL and MariaDB take an
		// exclusive metadata lock on the name for the statement, so many
		// creators at once take turns, and each after the first finds the
		// table made (a note, not an error).
		create: strings.Replace(TableSQL, "`"+defaultTable+"`", quoted, 1),

		// find answers the row of lo..hi to try first: one the token owns
		// (the trace of a take whose answer was lost), else the lowest free
		// one. It is a plain read, which takes no lock: grant decides. It
		// reads the range's rows through the primary key, which are the IDs
		// ever handed out, not the range's width.
		//	? token, lo, hi, token
		//	returns the ID, or no row when every row is held
		find: r.Replace(`SELECT id FROM $table
WHERE id BETWEEN ? AND ? AND (owner = ? OR owner IS NULL OR expires_at < $now)
ORDER BY owner <=> ? DESC, id
LIMIT 1`),

		// gap answers the lowest ID of lo..hi that has no row, found among
		// lo and the IDs just past a row's, through the primary key, so that
		// it costs the range's rows, not its width.
		//	? lo, lo, hi
		//	returns the ID, or no row when every ID of lo..hi has one
		gap: r.Replace(`SELECT c.id FROM (
  SELECT CAST(? AS SIGNED) AS id
  UNION ALL
  SELECT f.id + 1 FROM $table AS f WHERE f.id >= ? AND f.id < ?
) AS c
WHERE NOT EXISTS (SELECT 1 FROM $table AS n WHERE n.id = c.id)
ORDER BY c.id
LIMIT 1`),

		// fill adds a free row for an ID that gap found, so that grant can
		// change rows rather than race to insert them; a concurrent fill
		// that added it first leaves this one nothing to do.
		//	? id
		fill: r.Replace(`INSERT INTO $table (id, expires_at) VALUES (?, $now)
ON DUPLICATE KEY UPDATE id = id`),

		// grant gives the token the row id if it is free or the token's
		// own, and raises its mark ahead, unless the proposed mark is NULL.
		// It changes one row or none, and says which through the rows it
		// changed (writes grows by one in every row it changes).
		//
		// Two grants of one ID cannot both succeed. InnoDB runs an UPDATE
		// on a row by taking the row's exclusive lock, held until the
		// statement commits, and judges its WHERE on the newest committed
		// version of the row, not on a snapshot, at any isolation level. So
		// grants of one row run one after the other, and the second sees
		// the first's owner and expires_at, which is past its own $now: the
		// first started earlier, and sets TTL past its own start.
		//
		// MySQL assigns the columns left to right, each seeing those
		// assigned before it (MariaDB too, unless SIMULTANEOUS_ASSIGNMENT
		// is on): inherited and mark come first, so that they read the old
		// owner and mark, whichever the mode. expires_at never comes down
		// for the token's own row, so that a take whose answer was lost,
		// run late, cannot shorten the lease a later take or renewal set.
		//	? token, proposed mark (µs or NULL) twice, token, TTL µs twice,
		//	token, id, token
		grant: r.Replace(`UPDATE $table SET
  inherited = IF(owner <=> ?, inherited, mark),
  mark = GREATEST(COALESCE(mark, $at), COALESCE($at, mark)),
  expires_at = IF(owner <=> ?, GREATEST(expires_at, $now + INTERVAL ? MICROSECOND), $now + INTERVAL ? MICROSECOND),
  owner = ?,
  holder = LEFT(USER(), 255),
  writes = writes + 1
WHERE id = ? AND (owner IS NULL OR owner = ? OR expires_at < $now)`),

		// read answers what the token's take of id left in its row, and the
		// database's clock. Only the token changes its own row before it
		// expires, and only upward (the mark, expires_at) or not at all
		// (inherited), so the row read is at least what grant wrote.
		//	? id, token
		//	returns inherited and mark (µs or NULL) and the clock (µs), or
		//	no row when the token no longer owns id
		read: r.Replace(`SELECT ` + us("inherited") + `, ` + us("mark") + `, ` + us("$now") + `
FROM $table WHERE id = ? AND owner = ?`),

		// renew extends the token's lease on id and raises the mark ahead.
		// It succeeds on a row that expired and that nobody took: the owner
		// never changed, so nobody else held it meanwhile. It changes the
		// row, or none when the token no longer owns id.
		//	? proposed mark (µs) twice, TTL µs, id, token
		renew: r.Replace(`UPDATE $table SET
  mark = GREATEST(COALESCE(mark, $at), COALESCE($at, mark)),
  expires_at = GREATEST(expires_at, $now + INTERVAL ? MICROSECOND),
  writes = writes + 1
WHERE id = ? AND owner = ?`),

		// clock answers the database's clock, in µs.
		clock: r.Replace(`SELECT ` + us("$now")),

		// free releases every row of lo..hi the token owns and, if the
		// holder says how far it issued, lowers the mark to that time or to
		// the mark the holder inherited, whichever is later; never raises
		// it. A row with no mark gets the later of the two. mark comes
		// before owner, as in grant.
		//	? issued (µs or NULL) five times, lo, hi, token
		free: r.Replace(`UPDATE $table SET
  mark = CASE WHEN ? IS NULL THEN mark
              ELSE LEAST(COALESCE(mark, GREATEST($at, COALESCE(inherited, $at))),
                         GREATEST($at, COALESCE(inherited, $at))) END,
  owner = NULL,
  holder = NULL,
  expires_at = $now,
  writes = writes + 1
WHERE id BETWEEN ? AND ? AND owner = ?`),

		// held names the accounts that hold rows of lo..hi unexpired, with
		// how many each, and in how many µs the first of their rows
		// expires: the first account's is the first of all.
		//	? lo, hi
		held: r.Replace(`SELECT COALESCE(holder, '?'), COUNT(*), MIN(TIMESTAMPDIFF(MICROSECOND, $now, expires_at))
FROM $table
WHERE id BETWEEN ? AND ? AND owner IS NOT NULL AND expires_at >= $now
GROUP BY holder
ORDER BY MIN(expires_at), holder
LIMIT 5`),
	}
}

// epoch is the Unix epoch as a DATETIME literal, from which times count in
// µs.
const epoch = "TIMESTAMP'1970-01-01 00:00:00'"

// quote quotes each part of a valid table name.
func quote(table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = "`" + p + "`"
	}
	return strings.Join(parts, ".")
}

// micros is t as a statement's argument, in µs since the Unix epoch, rounded
// up so that a mark lowered to it still covers t; NULL for the zero Time.
func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

// fromMicros is the time of µs since the Unix epoch, or the zero Time for
// NULL.
func fromMicros(us *int64) time.Time {
	if us == nil {
		return time.Time{}
	}
	return time.UnixMicro(*us)
}
