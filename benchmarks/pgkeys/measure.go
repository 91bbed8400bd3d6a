package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// result is what one key type's run measured.
type result struct {
	kind                  string
	rows                  int
	elapsed               time.Duration
	rate, lastRate        float64 // rows/s over the run, and over its last quarter of rows
	p99                   time.Duration
	table, pk, ts, fk     int64 // bytes: the parent table, its primary key, its time index, the child's foreign-key index
	wal, fpi              int64 // WAL bytes written during the run (LSN difference), and full-page images among them
	checkpoints           int64 // during the run
	newestHit, newestRead int64 // buffers of the newest 100 parents, by time, with their children
	keyHit, keyRead       int64 // buffers of the last 100 parents by key (for UUIDv4, not the newest)
	curve                 []point
}

// A point of the chart: rows/s over a stretch of rows ending at rows.
type point struct {
	rows int
	rate float64
}

// curvePoints is how many stretches of rows the chart divides a run into.
const curvePoints = 40

func measure(ctx context.Context, dsn string, k keyKind, o options) (result, error) {
	r := result{kind: k.name, rows: o.rows}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	for _, q := range k.schema() {
		if _, err := conn.Exec(ctx, q); err != nil {
			return r, fmt.Errorf("%s: %s: %w", k.name, q, err)
		}
	}
	// Each run starts from a checkpoint, so that none inherits another's
	// dirty pages or WAL.
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return r, err
	}
	const counters = "SELECT wal_fpi, (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter) FROM pg_stat_wal"
	var lsn0 string
	var fpi0, cp0 int64
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn0); err != nil {
		return r, err
	}
	if err := conn.QueryRow(ctx, counters).Scan(&fpi0, &cp0); err != nil {
		return r, err
	}
	recs, elapsed, err := load(ctx, dsn, k, o.rows, o.writers, o.batch)
	if err != nil {
		return r, err
	}
	var fpi1, cp1 int64
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", lsn0).Scan(&r.wal); err != nil {
		return r, err
	}
	if err := conn.QueryRow(ctx, counters).Scan(&fpi1, &cp1); err != nil {
		return r, err
	}
	r.fpi, r.checkpoints = fpi1-fpi0, cp1-cp0
	r.elapsed = elapsed
	r.rate = float64(o.rows) / elapsed.Seconds()
	r.lastRate, r.p99, r.curve = summarize(recs, o.rows)
	err = conn.QueryRow(ctx, `SELECT pg_relation_size('parent'), pg_relation_size('parent_pkey'),
		pg_relation_size('parent_created_at'), pg_relation_size('child_parent_id')`).Scan(&r.table, &r.pk, &r.ts, &r.fk)
	if err != nil {
		return r, err
	}
	// The planner needs the tables' statistics, which autovacuum would
	// have gathered on a server that had run a while.
	if _, err := conn.Exec(ctx, "ANALYZE parent, child"); err != nil {
		return r, err
	}
	if r.newestHit, r.newestRead, err = buffers(ctx, conn, `SELECT p.id, p.payload, c.id FROM
		(SELECT id, payload FROM parent ORDER BY created_at DESC LIMIT 100) p JOIN child c ON c.parent_id = p.id`); err != nil {
		return r, err
	}
	if r.keyHit, r.keyRead, err = buffers(ctx, conn, `SELECT id, payload FROM parent ORDER BY id DESC LIMIT 100`); err != nil {
		return r, err
	}
	_, err = conn.Exec(ctx, "DROP TABLE child, parent")
	return r, err
}

// summarize returns the rate over the last quarter of rows, the 99th
// percentile of batch latency, and the chart's points.
func summarize(recs []batchRecord, rows int) (lastRate float64, p99 time.Duration, curve []point) {
	slices.SortFunc(recs, func(a, b batchRecord) int { return int(a.end - b.end) })
	took := make([]time.Duration, len(recs))
	for i, r := range recs {
		took[i] = r.took
	}
	slices.Sort(took)
	p99 = took[min(len(took)-1, len(took)*99/100)]
	done, last := 0, time.Duration(0)
	next := rows / curvePoints
	var quarterAt time.Duration
	quarterRows := 0
	for _, r := range recs {
		done += r.rows
		if quarterAt == 0 && done >= rows*3/4 {
			quarterAt, quarterRows = r.end, done
		}
		if done >= next || done == rows {
			if d := r.end - last; d > 0 {
				curve = append(curve, point{rows: done, rate: float64(done-prevRows(curve)) / d.Seconds()})
			}
			last = r.end
			next = done + rows/curvePoints
		}
	}
	if end := recs[len(recs)-1].end; end > quarterAt {
		lastRate = float64(rows-quarterRows) / (end - quarterAt).Seconds()
	}
	return lastRate, p99, curve
}

func prevRows(c []point) int {
	if len(c) == 0 {
		return 0
	}
	return c[len(c)-1].rows
}

// buffers runs EXPLAIN (ANALYZE, BUFFERS) of q, twice so that the second
// run finds what the first brought into the cache as a repeated page view
// would, and returns the second's shared buffers hit and read.
func buffers(ctx context.Context, conn *pgx.Conn, q string) (hit, read int64, err error) {
	for range 2 {
		var plan []struct {
			Plan struct {
				Hit  int64 `json:"Shared Hit Blocks"`
				Read int64 `json:"Shared Read Blocks"`
			}
		}
		var raw []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+q).Scan(&raw); err != nil {
			return 0, 0, err
		}
		if err := json.Unmarshal(raw, &plan); err != nil || len(plan) == 0 {
			return 0, 0, fmt.Errorf("EXPLAIN's JSON: %v: %s", err, raw)
		}
		hit, read = plan[0].Plan.Hit, plan[0].Plan.Read
	}
	return hit, read, nil
}

// printTable writes the results as a Markdown table.
func printTable(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| key\t| rows/s\t| last quarter\t| p99 batch\t| table\t| pk\t| created_at idx\t| child fk idx\t| WAL\t| full-page images\t| checkpoints\t| newest 100 + children: buffers (read)\t| last 100 by key: buffers (read)\t|")
	fmt.Fprintln(tw, "| ---\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t| ---:\t|")
	for _, r := range rs {
		fmt.Fprintf(tw, "| %s\t| %.0f k\t| %.0f k\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %d\t| %d\t| %d (%d)\t| %d (%d)\t|\n",
			r.kind, r.rate/1e3, r.lastRate/1e3, r.p99.Round(time.Millisecond), mb(r.table), mb(r.pk), mb(r.ts), mb(r.fk), mb(r.wal), r.fpi, r.checkpoints,
			r.newestHit+r.newestRead, r.newestRead, r.keyHit+r.keyRead, r.keyRead)
	}
	tw.Flush()
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
