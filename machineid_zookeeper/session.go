package machineid_zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A session is one ZooKeeper session, on a client of its own, for one
// holding: its ephemeral nodes live while ZooKeeper keeps the session.
//
// Uniqueness must not rest on what the client library does when it
// reconnects. go-zookeeper keeps the session across a reconnection while
// the server keeps it, and opens a new one, on the same Conn, once the
// server says it expired: so a write sent after that goes out on a session
// that owns none of the holding's nodes and keeps none of them alive. A
// Conn's session ID only moves forward (0 between sessions, and never an
// ID it had before), so a write whose answer came while SessionID() still
// reads the holding's session was sent on that session, and ZooKeeper
// received it while the session lived: it then expires the session no
// sooner than a session timeout after that. Renew checks exactly that.
type session struct {
	conn *zk.Conn
	log  *clientLog
}

// dial starts a client of servers asking for a session timeout of ttl. The
// client connects in the background; calls wait for it.
func dial(servers []string, ttl time.Duration, dialer zk.Dialer) (*session, error) {
	log := &clientLog{}
	if dialer == nil {
		dialer = net.DialTimeout // go-zookeeper's default
	}
	conn, _, err := zk.Connect(servers, ttl, zk.WithLogger(log), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("starting a ZooKeeper client of %v: %w", servers, err)
	}
	return &session{conn: conn, log: log}, nil
}

// clientLog reads what go-zookeeper tells only its logger: the session
// timeout the server negotiated, and why the last connection failed. It
// logs nothing: the Holder reports failures as errors.
type clientLog struct {
	timeout atomic.Int64 // ms, the latest session's negotiated timeout; 0 before the first

	mu      sync.Mutex // protects lastErr
	lastErr error      // why the latest connection attempt failed; nil once one succeeded
}

// Printf takes the figures from the client's log lines, by their formats
// (go-zookeeper v1.0.4's; a test checks that they are still read).
func (l *clientLog) Printf(format string, args ...any) {
	switch {
	case format == "authenticated: id=%d, timeout=%d" && len(args) == 2:
		if ms, ok := args[1].(int32); ok {
			l.timeout.Store(int64(ms))
		}
		l.setErr(nil)
	case format == "failed to connect to %s: %v" && len(args) == 2:
		err, _ := args[1].(error)
		l.setErr(err)
	case format == "authentication failed: %s" && len(args) == 1:
		err, _ := args[0].(error)
		l.setErr(err)
	}
}

func (l *clientLog) setErr(err error) {
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
}

func (l *clientLog) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// negotiated returns the session timeout the servers granted, or an error
// if it is below ttl: ZooKeeper could then expire the session, and free
// the ID, before the holder's deadline. A server bounds the timeout by its
// minSessionTimeout and maxSessionTimeout (2 and 20 ticks by default).
func (s *session) negotiated(ttl time.Duration) error {
	got := time.Duration(s.log.timeout.Load()) * time.Millisecond
	switch {
	case got == 0:
		return errors.New("the ZooKeeper client did not report the session timeout it was granted")
	case got < ttl:
		return invalid("TTL", ttl, fmt.Sprintf("at most the session timeout ZooKeeper grants, %v here (its maxSessionTimeout)", got))
	}
	return nil
}

// call runs f, which calls the client, and returns its result, or an error
// wrapping ctx's once ctx is done: go-zookeeper's calls take no context,
// and end only when the server answers or the connection fails. f then
// runs on, and its result is dropped; its write may still apply, which the
// store's calls find and carry on from.
func call[T any](ctx context.Context, s *session, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if errors.Is(r.err, zk.ErrNoServer) {
			r.err = s.unreachable(r.err)
		}
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, s.unreachable(ctx.Err())
	}
}

// unreachable adds to err why the client last failed to connect, if it has
// not connected since.
func (s *session) unreachable(err error) error {
	if last := s.log.err(); last != nil {
		return fmt.Errorf("%w; the ZooKeeper client's last connection attempt: %v", err, last)
	}
	return err
}

// multi runs ops in one transaction, and returns the error of the op that
// failed it, if one did.
func (s *session) multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.conn.Multi(ops...) })
	for _, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) {
			return res, r.Error
		}
	}
	if err == nil && len(res) != len(ops) {
		err = fmt.Errorf("ZooKeeper answered %d results to a transaction of %d", len(res), len(ops))
	}
	return res, err
}

// get reads a node.
func (s *session) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	type got struct {
		data []byte
		stat *zk.Stat
	}
	g, err := call(ctx, s, func() (got, error) {
		d, st, err := s.conn.Get(path)
		return got{d, st}, err
	})
	return g.data, g.stat, err
}

// children lists a node's children.
func (s *session) children(ctx context.Context, path string) ([]string, error) {
	return call(ctx, s, func() ([]string, error) {
		c, _, err := s.conn.Children(path)
		return c, err
	})
}

// create makes a persistent node with no data, if it does not exist.
func (s *session) create(ctx context.Context, path string) error {
	_, err := call(ctx, s, func() (string, error) { return s.conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)) })
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// close ends the session, which deletes its ephemeral nodes at once, and
// stops the client. go-zookeeper waits up to a second for the server to
// confirm; close waits no longer than ctx allows.
func (s *session) close(ctx context.Context) {
	_, _ = call(ctx, s, func() (struct{}, error) { s.conn.Close(); return struct{}{}, nil })
}
