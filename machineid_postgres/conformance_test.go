package machineid_postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
	mp "github.com/ringflake/ringflake/machineid_postgres"
)

// TestConformance runs the public conformance suite against a real server,
// restarted by stopping and starting it, which keeps its data, with the
// package's TTL.
func TestConformance(t *testing.T) {
	srv, _ := startDB(t)
	var pools sync.Map // machineid.Leaser -> *pgxpool.Pool, for Abandon
	machineidtest.Run(t, machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			pool, err := pgxpool.New(context.Background(), srv.DSN()) // connects on first use
			if err != nil {
				return nil, err
			}
			l, err := mp.New(pool, machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
			if err != nil {
				pool.Close()
				return nil, err
			}
			pools.Store(l, pool)
			t.Cleanup(pool.Close)
			return l, nil
		},
		Abandon: func(l machineid.Leaser) {
			if pool, ok := pools.Load(l); ok {
				pool.(*pgxpool.Pool).Close()
			}
		},
		Pause: func(*testing.T) func() { srv.Pause(); return srv.Resume },
		Restart: func(t *testing.T) {
			srv.Stop()
			srv.Start()
		},
		KeepsData: true,
		TTL:       ttl,
		Reference: "PostgreSQL's clock",
	})
}
