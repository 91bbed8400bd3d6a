package machineid_mysql_test

import (
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid/machineidtest"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// TestConformance runs the public conformance suite against a real server,
// restarted by stopping and starting it, which keeps its data, with the
// package's TTL. Its clients have the driver put the arguments in the
// statements' text (interpolateParams), as the ringflake command's do; the
// other tests' send them apart, in prepared statements.
func TestConformance(t *testing.T) {
	srv, _ := startDB(t)
	var pools sync.Map // machineid.Leaser -> *sql.DB, for Abandon
	machineidtest.Run(t, machineidtest.Harness{
		NewLeaser: func(t *testing.T, lo, hi int64, ttl time.Duration) (machineid.Leaser, error) {
			db, err := sql.Open("mysql", srv.DSN()+"?interpolateParams=true") // connects on first use
			if err != nil {
				return nil, err
			}
			l, err := mm.New(db, machineid.WithRange(lo, hi), machineid.WithTTL(ttl))
			if err != nil {
				_ = db.Close()
				return nil, err
			}
			pools.Store(l, db)
			t.Cleanup(func() { _ = db.Close() })
			return l, nil
		},
		Abandon: func(l machineid.Leaser) {
			if db, ok := pools.Load(l); ok {
				_ = db.(*sql.DB).Close()
			}
		},
		Pause: func(*testing.T) func() { srv.Pause(); return srv.Resume },
		Restart: func(t *testing.T) {
			srv.Stop()
			srv.Start()
		},
		KeepsData: true,
		TTL:       ttl,
		Reference: "MySQL's clock",
	})
}
