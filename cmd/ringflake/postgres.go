package main

import (
	"context"
	"errors"
	"net/url"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ringflake/ringflake/machineid"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// postgresLease is the backend of postgres:// and postgresql:// URLs: pgx's
// connection URL, with one query parameter of this command's, table=NAME
// (default ringflake_machine_ids), taken out before pgx reads the rest.
// The leases' expiry runs on the database's clock and their marks on the
// holders', which are never compared, so --max-clock-skew is refused.
func postgresLease(u *url.URL, c leaseConfig) (machineid.Leaser, func(), error) {
	if c.skew != 0 {
		return nil, nil, errNoSkew("PostgreSQL")
	}
	q := u.Query()
	opts := []mp.Option{mp.WithTTL(c.ttl), mp.WithSafetyMargin(c.margin), mp.WithClock(c.clock)}
	if q.Has("table") {
		opts = append(opts, mp.WithTable(q.Get("table")))
		q.Del("table")
	}
	if c.hi >= 0 {
		opts = append(opts, mp.WithRange(c.lo, c.hi))
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
	l, err := mp.New(pool, opts...)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return &tableMaker{l}, pool.Close, nil
}

// tableMaker is a Leaser that creates its table when its first lease finds
// it missing, so that gen and serve work on an empty database. A role that
// may not create tables gets the database's refusal; one whose table
// exists is never asked to.
type tableMaker struct {
	*mp.Leaser
}

// MachineID is the Leaser's, after creating the table if it is missing.
func (l *tableMaker) MachineID(ctx context.Context) (int64, error) {
	id, err := l.Leaser.MachineID(ctx)
	if !missingTable(err) {
		return id, err
	}
	// Two processes creating the table at once can fail on PostgreSQL's
	// catalog; the one that loses still finds the table made.
	cerr := l.CreateTable(ctx)
	id, err = l.Leaser.MachineID(ctx)
	if cerr != nil && missingTable(err) {
		return -1, cerr
	}
	return id, err
}

// missingTable reports whether err is PostgreSQL's undefined_table.
func missingTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
