package machineid_postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/sentinel"
	"github.com/ringflake/ringflake/machineid"
)

// DB runs the statements. A *pgxpool.Pool satisfies it and is the one to
// pass: it reconnects after the server restarts or fails over, and lets
// the renewals run beside the application's queries. A *pgx.Conn satisfies
// it too, but dies with its connection, and must not be used by anyone else
// meanwhile. Each statement must run in a transaction of its own,
// committed when it returns: not a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const defaultTable = "ringflake_machine_ids"

// limits are PostgreSQL's bounds on the common options: one row per ID.
// Take and Renew read the database's clock.
var limits = machineid.Limits{Name: "machineid_postgres", MaxIDs: 1 << 16, Clock: true}

// reference names the database's clock, clock_timestamp(), which every
// statement that takes or renews reads.
const reference = "PostgreSQL's clock"

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
		return nil, invalid("db", "nil", "a *pgxpool.Pool or another DB")
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
// (a-z, 0-9 and _, not starting with a digit, at most 63 bytes), optionally
// qualified by a schema named the same way, as in "ids.machine_leases". "",
// the default, means ringflake_machine_ids. Holders that share a table share
// its machine IDs.
func WithTable(name string) machineid.Option {
	return machineid.StoreOption("machineid_postgres.WithTable", func(s *store) {
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
	if _, err := db.Exec(ctx, newStatements(table).create); err != nil {
		return sentinel.Name("machineid_postgres", fmt.Errorf("creating table %s: %w", table, err))
	}
	return nil
}

// Take runs take, and fill then take again while no row is free and fill
// finds an ID without one: the range's rows are added as they are needed.
// Each round adds a row (this call's fill or a concurrent one), so the
// rounds are at most the IDs of the range; a take that finds no free row
// and a fill that finds every ID with a row end it.
func (s *store) Take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	for {
		g, err := s.take(ctx, c)
		if !errors.Is(err, pgx.ErrNoRows) {
			if err != nil {
				return g, s.dbErr(err)
			}
			return g, nil
		}
		var id int64
		switch err := s.db.QueryRow(ctx, s.sql.fill, c.Lo, c.Hi).Scan(&id); {
		case errors.Is(err, pgx.ErrNoRows):
			return g, s.exhausted(ctx, c)
		case err != nil:
			return g, fmt.Errorf("adding a row to %d..%d: %w", c.Lo, c.Hi, s.dbErr(err))
		}
	}
}

func (s *store) take(ctx context.Context, c machineid.Claim) (machineid.Grant, error) {
	var (
		g               machineid.Grant
		inherited, mark *time.Time
		clock           time.Time
	)
	err := s.db.QueryRow(ctx, s.sql.take, c.Token, c.TTL.Microseconds(), proposed(c.Until), c.Lo, c.Hi).Scan(&g.ID, &inherited, &mark, &clock)
	if inherited != nil {
		g.After = *inherited
	}
	if mark != nil {
		g.Until = *mark
	}
	g.Clock = machineid.Reading{Source: reference, Time: clock}
	return g, err
}

// exhausted is Take's error when every row of c's range is held, saying
// when the first frees by the database's clock.
func (s *store) exhausted(ctx context.Context, c machineid.Claim) error {
	err := fmt.Errorf("%w: machine IDs %d..%d of %s held, each by an unexpired owner (holders are random tokens)", machineid.ErrExhausted, c.Lo, c.Hi, s.table)
	var left *float64 // seconds
	if s.db.QueryRow(ctx, s.sql.held, c.Lo, c.Hi).Scan(&left) != nil || left == nil {
		return err
	}
	return fmt.Errorf("%w; the first frees in at most %v, by the database's clock", err, time.Duration(*left*float64(time.Second)).Round(time.Millisecond))
}

// proposed is the mark a Claim proposes, as a statement's argument: NULL
// for the zero Time, which raises no mark (GREATEST ignores a NULL).
func proposed(until time.Time) any {
	if until.IsZero() {
		return nil
	}
	return until
}

// Renew runs renew; no row means the token no longer owns id.
func (s *store) Renew(ctx context.Context, c machineid.Claim, id int64) (machineid.Grant, error) {
	g := machineid.Grant{ID: id}
	var clock time.Time
	err := s.db.QueryRow(ctx, s.sql.renew, id, c.Token, c.TTL.Microseconds(), proposed(c.Until)).Scan(&g.Until, &clock)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return g, fmt.Errorf("%w: machine ID %d in %s has another owner or no row", machineid.ErrLeaseLost, id, s.table)
	case err != nil:
		return g, s.dbErr(err)
	}
	g.Clock = machineid.Reading{Source: reference, Time: clock}
	return g, nil
}

// Release runs free, which frees every row the token owns: id, or when id
// is -1, whatever a take whose answer was lost gave it. A token owns
// another row than id only if such a take committed after a later one had
// skipped its locked row; the generator never issued on that row, so
// lowering its mark to issued, never below what it inherited, is safe.
func (s *store) Release(ctx context.Context, c machineid.Claim, id int64, issued time.Time) error {
	var mark any // NULL keeps the mark
	if !issued.IsZero() {
		mark = ceilMicro(issued)
	}
	// free acts only for this token, so running it again is harmless; a
	// second try gets past a pooled connection that a server restart
	// closed, which fails only the first statement sent on it.
	var err error
	for range 3 {
		if _, err = s.db.Exec(ctx, s.sql.free, c.Token, mark); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return s.dbErr(err)
	}
	return nil
}

// dbErr names the table in a statement's error, and says how to create it
// if it is missing.
func (s *store) dbErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return fmt.Errorf("table %s does not exist; create it with TableSQL or CreateTable: %w", s.table, err)
	}
	return fmt.Errorf("table %s: %w", s.table, err)
}

// identifier is one lowercase SQL identifier, which reads the same quoted
// or not.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// checkTable returns an error wrapping ringflake.ErrInvalidConfig unless
// name is an identifier, or two joined by a dot.
func checkTable(name string) error {
	schema, table, qualified := strings.Cut(name, ".")
	if identifier.MatchString(name) || qualified && identifier.MatchString(schema) && identifier.MatchString(table) {
		return nil
	}
	return invalid("table", fmt.Sprintf("%q", name), "a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit; at most 63 bytes), optionally schema.table")
}

func invalid(name string, value any, valid string) error {
	return fmt.Errorf("%w: %s = %v; valid: %s", ringflake.ErrInvalidConfig, name, value, valid)
}
