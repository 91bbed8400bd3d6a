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
// restarted by stopping and starting it, which keeps its data. Its TTL is
// two seconds, as Kubernetes' is: with the test TTL of one, the call
// timeout of 333ms, which a write to a database a loaded machine holds
// back can overrun, made leases run out and releases fail while the store
// could be reached.
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
		TTL:       2 * ttl,
		Reference: "PostgreSQL's clock",
	})
}
