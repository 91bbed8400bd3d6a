package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ringflake/ringflake"
)

// A keyKind is one primary-key type under test.
type keyKind struct {
	name    string
	sqlType string // the key column's type; "bigserial" has the database make the keys
	// keys returns writer w's key maker, which fills a batch's keys; nil
	// for bigserial. Each writer has its own, as each process of a fleet
	// would.
	keys func(w int) (func(n int) any, error)
}

var kinds = []keyKind{
	{name: "bigserial", sqlType: "bigserial"},
	{name: "ringflake", sqlType: "bigint", keys: func(w int) (func(int) any, error) {
		// Machine ID w: each writer is a process of the fleet.
		g, err := ringflake.New(context.Background(), ringflake.WithMachineID(int64(w)))
		if err != nil {
			return nil, err
		}
		return func(n int) any {
			ids := make([]ringflake.ID, n)
			if _, err := g.NextN(ids); err != nil {
				panic(fmt.Sprintf("pgkeys: ringflake NextN: %v", err)) // the default layout never fails at these rates
			}
			out := make([]int64, n)
			for i, id := range ids {
				out[i] = int64(id)
			}
			return out
		}, nil
	}},
	{name: "UUIDv7", sqlType: "uuid", keys: uuidKeys(uuid.NewV7)},
	{name: "UUIDv4", sqlType: "uuid", keys: uuidKeys(uuid.NewRandom)},
}

// uuidKeys makes a batch's keys with f, google/uuid's NewV7 or NewRandom.
func uuidKeys(f func() (uuid.UUID, error)) func(int) (func(int) any, error) {
	return func(int) (func(int) any, error) {
		return func(n int) any {
			out := make([]pgtype.UUID, n)
			for i := range out {
				u, err := f()
				if err != nil {
					panic(fmt.Sprintf("pgkeys: uuid: %v", err)) // crypto/rand does not fail on Linux
				}
				out[i] = pgtype.UUID{Bytes: u, Valid: true}
			}
			return out
		}, nil
	}
}

// schema returns the tables of kind k: a parent keyed by k with a secondary
// index on its time, and a child whose foreign key references the key.
func (k keyKind) schema() []string {
	ref := k.sqlType
	if ref == "bigserial" {
		ref = "bigint"
	}
	return []string{
		"DROP TABLE IF EXISTS child, parent",
		"CREATE TABLE parent (id " + k.sqlType + " PRIMARY KEY, created_at timestamptz NOT NULL, payload text NOT NULL)",
		"CREATE INDEX parent_created_at ON parent (created_at)",
		"CREATE TABLE child (id bigserial PRIMARY KEY, parent_id " + ref + " NOT NULL REFERENCES parent (id), created_at timestamptz NOT NULL)",
		"CREATE INDEX child_parent_id ON child (parent_id)",
	}
}

// insert is the statement of one batch: its parents and a child of each,
// in one statement and so one transaction.
func (k keyKind) insert() string {
	if k.keys == nil {
		return `WITH p AS (INSERT INTO parent (created_at, payload)
			SELECT * FROM unnest($1::timestamptz[], $2::text[]) RETURNING id, created_at)
			INSERT INTO child (parent_id, created_at) SELECT id, created_at FROM p`
	}
	return `WITH p AS (INSERT INTO parent (id, created_at, payload)
		SELECT * FROM unnest($3::` + k.sqlType + `[], $1::timestamptz[], $2::text[]) RETURNING id, created_at)
		INSERT INTO child (parent_id, created_at) SELECT id, created_at FROM p`
}

// A batchRecord is one committed batch.
type batchRecord struct {
	end  time.Duration // since the run began
	took time.Duration
	rows int
}

// load inserts rows rows in batches from writers connections, each with
// its own key maker, and returns every batch, in the order they ended.
func load(ctx context.Context, dsn string, k keyKind, rows, writers, batch int) ([]batchRecord, time.Duration, error) {
	var claimed atomic.Int64
	var mu sync.Mutex
	var recs []batchRecord
	errs := make(chan error, writers)
	began := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writer(ctx, dsn, k, w, rows, batch, &claimed, began, func(r batchRecord) {
				mu.Lock()
				recs = append(recs, r)
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return recs, elapsed, nil
}

// payload is every row's payload: 40 bytes, a short description's worth.
const payload = "order placed through the web shop, ok 40"

func writer(ctx context.Context, dsn string, k keyKind, w, rows, batch int, claimed *atomic.Int64, began time.Time, record func(batchRecord)) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var keys func(int) any
	if k.keys != nil {
		if keys, err = k.keys(w); err != nil {
			return err
		}
	}
	stmt := k.insert()
	times := make([]time.Time, batch)
	texts := make([]string, batch)
	for i := range texts {
		texts[i] = payload
	}
	for {
		start := claimed.Add(int64(batch)) - int64(batch)
		n := min(int64(batch), int64(rows)-start)
		if n <= 0 {
			return nil
		}
		for i := range n {
			times[i] = time.Now()
		}
		args := []any{times[:n], texts[:n]}
		if keys != nil {
			args = append(args, keys(int(n)))
		}
		t0 := time.Now()
		if _, err := conn.Exec(ctx, stmt, args...); err != nil {
			return fmt.Errorf("%s: writer %d: %w", k.name, w, err)
		}
		t1 := time.Now()
		record(batchRecord{end: t1.Sub(began), took: t1.Sub(t0), rows: int(n)})
	}
}
