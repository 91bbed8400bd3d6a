package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ringflake/ringflake/machineid"
	mm "github.com/ringflake/ringflake/machineid_mysql"
)

// mysqlCloseWait bounds how long a stop waits for the pool to close: it
// waits for statements still running on the server, which one cut short
// against a server that cannot be reached never finish telling.
const mysqlCloseWait = time.Second

// mysqlLease is the backend of mysql:// URLs, for MySQL and MariaDB:
// mysql://user:pass@host[:port]/db, with one query parameter of
// ringflake's, table=NAME (default ringflake_machine_ids), and the
// driver's own (github.com/go-sql-driver/mysql: tls=, timeout=, ...).
// interpolateParams defaults to true: one round trip per statement.
func mysqlLease(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	q := u.Query()
	opts := c.common()
	table := q.Get("table")
	if q.Has("table") {
		opts = append(opts, mm.WithTable(table))
		q.Del("table")
	}
	if !q.Has("interpolateParams") {
		q.Set("interpolateParams", "true")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, nil, fmt.Errorf("want the database as the URL's path, as in mysql://user:pass@host:3306/app; got %q", u.Path)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	// The user and password go in apart, so that no character of theirs
	// can change how the rest parses, nor show in an error.
	cfg, err := mysql.ParseDSN("tcp(" + addr + ")/" + db + "?" + q.Encode())
	if err != nil {
		return nil, nil, err
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	pool := sql.OpenDB(conn) // connects on first use
	h, err := mm.New(pool, opts...)
	if err != nil {
		_ = pool.Close()
		return nil, nil, err
	}
	closePool := func() {
		done := make(chan struct{})
		go func() { _ = pool.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(mysqlCloseWait):
		}
	}
	return &mysqlTables{h, pool, table}, closePool, nil
}

// mysqlTables is a Holder that creates its table when its first lease finds
// it missing, as tableMaker does on PostgreSQL.
type mysqlTables struct {
	*machineid.Holder
	db    mm.DB
	table string // "" for the default
}

func (l *mysqlTables) holder() *machineid.Holder { return l.Holder }

// MachineID is the Holder's, after creating the table if it is missing.
func (l *mysqlTables) MachineID(ctx context.Context) (int64, error) {
	id, err := l.Holder.MachineID(ctx)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1146 { // ER_NO_SUCH_TABLE
		return id, err
	}
	if err := mm.CreateTable(ctx, l.db, l.table); err != nil {
		return -1, err
	}
	return l.Holder.MachineID(ctx)
}
