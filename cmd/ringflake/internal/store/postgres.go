package store

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// pgCloseWait bounds how long a stop waits for the pool to close. pgx
// closes a connection whose statement was cut short (a renewal or release
// that timed out) by first sending the server a cancel request, with a
// fixed deadline of 15s, and pgxpool.Close waits for it: against a database
// that cannot be reached, 15s more of a stop for nothing, since the
// process's exit closes its sockets anyway.
const pgCloseWait = time.Second

// postgresLease is the backend of postgres:// and postgresql:// URLs: pgx's
// connection URL, with one query parameter of ringflake's, table=NAME
// (default ringflake_machine_ids), taken out before pgx reads the rest.
func postgresLease(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	q := u.Query()
	opts := c.common()
	table := q.Get("table")
	if q.Has("table") {
		opts = append(opts, mp.WithTable(table))
		q.Del("table")
	}
	rest := *u
	rest.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(rest.String()) // its errors show the URL without the password
	if err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects on first use
	if err != nil {
		return nil, nil, err
	}
	h, err := mp.New(pool, opts...)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return &tableMaker{h, pool, table}, func() { closeWithin(pool, pgCloseWait) }, nil
}

// closeWithin closes pool, waiting for it at most d; the close goes on in
// the background.
func closeWithin(pool *pgxpool.Pool, d time.Duration) {
	done := make(chan struct{})
	go func() { pool.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// tableMaker is a Holder that creates its table when its first lease finds
// it missing, so that gen and serve work on an empty database. A role that
// may not create tables gets the database's refusal; one whose table
// exists is never asked to.
type tableMaker struct {
	*machineid.Holder
	db    mp.DB
	table string // "" for the default
}

func (l *tableMaker) holder() *machineid.Holder { return l.Holder }

// MachineID is the Holder's, after creating the table if it is missing.
func (l *tableMaker) MachineID(ctx context.Context) (int64, error) {
	id, err := l.Holder.MachineID(ctx)
	if !missingTable(err) {
		return id, err
	}
	if err := mp.CreateTable(ctx, l.db, l.table); err != nil {
		return -1, err
	}
	return l.Holder.MachineID(ctx)
}

// missingTable reports whether err is PostgreSQL's undefined_table.
func missingTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
