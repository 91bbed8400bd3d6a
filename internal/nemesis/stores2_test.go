package nemesis

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver machineid_mysql's docs use

	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/internal/zktest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_mysql"
	"github.com/ringflake/ringflake/machineid_zookeeper"
)

func init() {
	stores["zookeeper"] = storeKind{startZK, zkLeaser, []time.Duration{2 * time.Second, 3 * time.Second}}
	stores["mysql"] = storeKind{startMySQL, mysqlLeaser, []time.Duration{2 * time.Second, 3 * time.Second}}
}

// zkServer is a standalone ZooKeeper. Its faults: a crash and a stop, each
// restarted on its data, and a pause. ZooKeeper keeps its data (its
// transaction log is fsynced); losing it, or restoring an older snapshot,
// is outside the promise. Its clock is not shifted: sessions expire on the
// server's monotonic clock (System.nanoTime), and the marks are the
// holders'.
type zkServer struct {
	s *zktest.Server
	u unit
}

func startZK(w *world) server {
	s := &zkServer{s: zktest.Start(w.t).Servers[0]}
	s.u = unit{name: "zookeeper", pause: s.s.Pause, resume: s.s.Resume}
	return s
}

func (s *zkServer) upstream() string          { return s.s.Addr }
func (s *zkServer) target(addr string) string { return addr }
func (s *zkServer) faults() []fault {
	return []fault{
		pauseFault(&s.u),
		restartFault(&s.u, "kill -9, restart", 1, func(*world) { s.s.Kill() }, func(*world) { s.s.Start() }),
		restartFault(&s.u, "SIGTERM, restart", 1, func(*world) { s.s.Stop() }, func(*world) { s.s.Start() }),
	}
}

func zkLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	l, err := machineid_zookeeper.New([]string{cfg.Target}, cfg.options()...)
	return l, func() {}, err
}

// mysqlServer is a MySQL (MariaDB) server. Its faults: a crash and a stop,
// each restarted on its data, a pause, and its clock stepping within the
// bound (M3: UTC_TIMESTAMP judges expiry).
type mysqlServer struct {
	s     *mysqltest.Server
	u     unit
	clock *storeClock
}

func startMySQL(w *world) server {
	s := &mysqlServer{clock: shiftedByEnv(w, "nemesis-mysql")}
	s.s = mysqltest.Start(w.t)
	s.u = unit{name: "mysqld", pause: s.s.Pause, resume: s.s.Resume}
	db, err := sql.Open("mysql", s.target(s.upstream()))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = machineid_mysql.CreateTable(ctx, db, "")
		cancel()
		db.Close()
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

func (s *mysqlServer) upstream() string { return fmt.Sprintf("127.0.0.1:%d", s.s.Port) }
func (s *mysqlServer) target(addr string) string {
	return fmt.Sprintf("root@tcp(%s)/test?interpolateParams=true&timeout=2s", addr)
}
func (s *mysqlServer) faults() []fault {
	return []fault{
		pauseFault(&s.u),
		restartFault(&s.u, "kill -9, restart", 1, func(*world) { s.s.Kill() }, func(*world) { s.s.Start() }),
		restartFault(&s.u, "SIGTERM, restart", 1, func(*world) { s.s.Stop() }, func(*world) { s.s.Start() }),
		clockStepFault("MySQL", s.clock),
	}
}

func mysqlLeaser(cfg holderConfig) (machineid.Leaser, func(), error) {
	db, err := sql.Open("mysql", cfg.Target)
	if err != nil {
		return nil, nil, err
	}
	l, err := machineid_mysql.New(db, cfg.options()...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return l, func() { db.Close() }, nil
}
