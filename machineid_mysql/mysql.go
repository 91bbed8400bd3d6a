package machineid_mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/sentinel"
	"github.com/ringflake/ringflake/machineid"
)

// DB runs the statements. A *sql.DB of the MySQL driver
// (github.com/go-sql-driver/mysql) satisfies it and is the one to pass: it
// reconnects after the server restarts or fails over, and lets the
// renewals run beside the application's queries. A *sql.Conn satisfies it
// too, but dies with its connection, and must not be used by anyone else
// meanwhile. Each statement must commit when it returns: not a *sql.Tx.
// The driver's settings do not matter (parseTime, loc, clientFoundRows):
// times cross as integers, and row counts do not depend on them.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const defaultTable = "ringflake_machine_ids"

// limits are MySQL's bounds on the common options: one row per ID. Take
// and Renew read the database's clock.
var limits = machineid.Limits{Name: "machineid_mysql", MaxIDs: 1 << 16, Clock: true}

// reference names the database's clock, UTC_TIMESTAMP(6), which every
// take and renewal reads.
const reference = "MySQL's clock (UTC_TIMESTAMP)"

// store is the machineid.Store of one table, and its settings.
type store struct {
	db    DB         // written once by New
	table string     // written by WithTable, then once by New
	sql   statements // written once by New
}

// New returns a Holder of machine IDs leased from db's table (see
// [WithTable] and [CreateTable]), configured by the options of package
// machineid and WithTable. It does not contact the database: the first
// MachineID does. It returns an error wrapping ringflake.ErrInvalidConfig,
// naming the value and its valid range, if db is nil or an option is out of
// range; ranges hold at most 65536 IDs.
func New(db DB, opts ...machineid.Option) (*machineid.Holder, error) {
	if db == nil {
		return nil, invalid("db", "nil", "a *sql.DB of the MySQL driver, or another DB")
	}
	s := &store{db: db, table: defaultTable}
	h, err := machineid.NewHolder(s, s, limits, opts...)
	if err != nil {
		return nil, err
	}
	if err := checkTable(s.table); err != nil {
		return nil, err
	}
	s.sql = newStatements(s.table)
	return h, nil
}

// WithTable sets the table holding the leases: a lowercase SQL identifier
// (a-z, 0-9 and _, not starting with a digit, at most 64 bytes), optionally
// qualified by a database named the same way, as in "ids.machine_leases".
// "", the default, means ringflake_machine_ids. Holders that share a table
// share its machine IDs.
func WithTable(name string) machineid.Option {
	return machineid.StoreOption("machineid_mysql.WithTable", func(s *store) {
		if name != "" {
			s.table = name
		}
	})
}

// CreateTable creates the table named table ("" for the default) if it does
// not exist, with the statement [TableSQL] shows, for applications that let
// the program create its tables; others run TableSQL in a migration. Many
// processes may call it at once on an empty database: they take turns, and
// each finds the table made. It returns an error wrapping
// ringflake.ErrInvalidConfig for a bad name, or the database's error.
func CreateTable(ctx context.Context, db DB, table string) error {
	if table == "" {
		table = defaultTable
	}
	if err := checkTable(table); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, newStatements(table).create); err != nil {
		return sentinel.Name("machineid_mysql", fmt.Errorf("creating table %s: %w", table, err))
	}
	return nil
}

// Take finds a row to try, grants it, and reads what the grant left. When
// no row is free it adds one for the lowest ID of the range without one
// (gap, fill) and tries that. It tries again when another take won the row
// it tried: each round that does not end the call saw another take succeed,
// or added a row, and the call's context bounds them all.
func (s *store) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	for {
		var id int64
		switch err := s.db.QueryRowContext(ctx, s.sql.find, c.Lo, c.Hi, c.Token, c.Token).Scan(&id); {
		case errors.Is(err, sql.ErrNoRows):
			switch err := s.db.QueryRowContext(ctx, s.sql.gap, c.Lo, c.Lo, c.Hi).Scan(&id); {
			case errors.Is(err, sql.ErrNoRows):
				return machineid.Grant{}, s.exhausted(ctx, c)
			case err != nil:
				return machineid.Grant{}, fmt.Errorf("looking for an ID of %d..%d without a row: %w", c.Lo, c.Hi, s.dbErr(err))
			}
			if _, err := s.db.ExecContext(ctx, s.sql.fill, id); err != nil {
				return machineid.Grant{}, fmt.Errorf("adding a row for machine ID %d: %w", id, s.dbErr(err))
			}
		case err != nil:
			return machineid.Grant{}, s.dbErr(err)
		}
		g, granted, err := s.grant(ctx, c, id)
		if granted || err != nil {
			return g, err
		}
		if err := ctx.Err(); err != nil {
			return machineid.Grant{}, err
		}
	}
}

// grant runs grant on id and, if it changed the row, read; granted is false
// when the row was not free (another take won it).
func (s *store) grant(ctx context.Context, c machineid.Claim, id int64) (g machineid.Grant, granted bool, err error) {
	mark, ttl := micros(c.Until), c.TTL.Microseconds()
	res, err := s.db.ExecContext(ctx, s.sql.grant, c.Token, mark, mark, c.Token, ttl, ttl, c.Token, id, c.Token)
	if err != nil {
		return g, false, s.dbErr(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			err = s.dbErr(err)
		}
		return g, false, err
	}
	var inherited, until sql.NullInt64
	var clock int64
	err = s.db.QueryRowContext(ctx, s.sql.read, id, c.Token).Scan(&inherited, &until, &clock)
	if errors.Is(err, sql.ErrNoRows) {
		// The lease ran out, and was taken, between the two statements.
		return g, false, fmt.Errorf("machine ID %d of %s was taken from this holder between its grant and the read that followed (the take outlasted the TTL, %v)", id, s.table, c.TTL)
	}
	if err != nil {
		return g, false, s.dbErr(err)
	}
	g = machineid.Grant{ID: id, After: fromMicros(nullable(inherited)), Until: fromMicros(nullable(until)), Clock: s.reading(clock)}
	return g, true, nil
}

// exhausted is Take's error when every row of c's range is held, naming
// the accounts that hold them and saying when the first frees by the
// database's clock.
func (s *store) exhausted(ctx context.Context, c machineid.Claim) error {
	err := fmt.Errorf("%w: machine IDs %d..%d of %s held, each by an unexpired owner", machineid.ErrExhausted, c.Lo, c.Hi, s.table)
	rows, qerr := s.db.QueryContext(ctx, s.sql.held, c.Lo, c.Hi)
	if qerr != nil {
		return err
	}
	defer rows.Close()
	var (
		holders []string
		first   int64 // µs
	)
	for rows.Next() {
		var who string
		var n, left int64
		if rows.Scan(&who, &n, &left) != nil {
			return err
		}
		if len(holders) == 0 {
			first = left
		}
		holders = append(holders, fmt.Sprintf("%s (%d)", who, n))
	}
	if rows.Err() != nil || len(holders) == 0 {
		return err
	}
	if len(holders) == 5 {
		holders[4] = "others"
	}
	return fmt.Errorf("%w: %s (the accounts they connected as, and how many IDs each; owners are random tokens); the first frees in at most %v, by the database's clock",
		err, strings.Join(holders, ", "), (time.Duration(first) * time.Microsecond).Round(time.Millisecond))
}

// Renew runs renew; no row changed means the token no longer owns id. Then
// read answers the mark and the clock.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	g := machineid.Grant{ID: id}
	mark := micros(c.Until)
	res, err := s.db.ExecContext(ctx, s.sql.renew, mark, mark, c.TTL.Microseconds(), id, c.Token)
	if err != nil {
		return g, s.dbErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return g, s.dbErr(err)
	}
	var inherited, until sql.NullInt64
	var clock int64
	if n > 0 {
		err = s.db.QueryRowContext(ctx, s.sql.read, id, c.Token).Scan(&inherited, &until, &clock)
	}
	switch {
	case n == 0 || errors.Is(err, sql.ErrNoRows):
		return g, fmt.Errorf("%w: machine ID %d in %s has another owner or no row", machineid.ErrLeaseLost, id, s.table)
	case err != nil:
		return g, s.dbErr(err)
	}
	g.Until, g.Clock = fromMicros(nullable(until)), s.reading(clock)
	return g, nil
}

// Release runs free, which frees every row of the range the token owns:
// id, or when id is -1, whatever a take whose answer was lost gave it. A
// token owns another row than id only if such a take committed after a
// later one had found another row; the generator never issued on that row,
// so lowering its mark to issued, never below what it inherited, is safe.
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	at := micros(issued) // NULL keeps the mark
	// free acts only for this token, so running it again is harmless; a
	// second try gets past a pooled connection that a server restart
	// closed, should the driver not have retried it itself.
	var err error
	for range 3 {
		if _, err = s.db.ExecContext(ctx, s.sql.free, at, at, at, at, at, c.Lo, c.Hi, c.Token); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return s.dbErr(err)
	}
	return nil
}

// reading is the database's clock, read as µs since the epoch.
func (s *store) reading(us int64) machineid.Reading {
	return machineid.Reading{Source: reference, Time: time.UnixMicro(us)}
}

// dbErr names the table in a statement's error, and says how to create it
// if it is missing.
func (s *store) dbErr(err error) error {
	if missingTable(err) {
		return fmt.Errorf("table %s does not exist; create it with TableSQL or CreateTable: %w", s.table, err)
	}
	return fmt.Errorf("table %s: %w", s.table, err)
}

// missingTable reports whether err is the server's ER_NO_SUCH_TABLE.
func missingTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

func nullable(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// identifier is one lowercase SQL identifier, which reads the same quoted
// or not, on any platform (lower_case_table_names).
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`)

// checkTable returns an error wrapping ringflake.ErrInvalidConfig unless
// name is an identifier, or two joined by a dot.
func checkTable(name string) error {
	db, table, qualified := strings.Cut(name, ".")
	if identifier.MatchString(name) || qualified && identifier.MatchString(db) && identifier.MatchString(table) {
		return nil
	}
	return invalid("table", fmt.Sprintf("%q", name), "a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit; at most 64 bytes), optionally database.table")
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}
