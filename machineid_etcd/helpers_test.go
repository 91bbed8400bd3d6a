package machineid_etcd_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
)

// ttl is the lease TTL of most tests: the shortest etcd grants as asked
// with etcdtest's election timeout.
const ttl = time.Second

// newClient returns a client of its own to endpoints, closed when the test
// ends. It does not wait to connect.
func newClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientConfig(endpoints))
	require.NoError(t, err, "clientv3.New(%v)", endpoints)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientConfig configures a client with clientv3's defaults, and no log.
func clientConfig(endpoints []string) clientv3.Config {
	return clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()}
}

// newHolder returns a Holder on c with the test's TTL and opts, released
// when the test ends.
func newHolder(t testing.TB, c *clientv3.Client, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	l, err := machineid_etcd.New(c, append([]machineid.Option{machineid.WithTTL(ttl)}, opts...)...)
	require.NoError(t, err, "New")
	t.Cleanup(func() { _ = l.Release(time.Time{}) })
	return l
}

// acquire calls MachineID with a 5s deadline and fails the test on error.
func acquire(t testing.TB, l *machineid.Holder) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := l.MachineID(ctx)
	require.NoError(t, err, "MachineID")
	return id
}

// takeWhenFree calls h's MachineID until it succeeds, while it fails with
// ErrExhausted and for at most 10 TTLs, time enough for another holder's
// abandoned lease to expire in etcd. It returns when the call that
// succeeded began.
func takeWhenFree(t testing.TB, h *machineid.Holder) time.Time {
	t.Helper()
	for first := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := h.MachineID(ctx)
		cancel()
		if err == nil {
			return start
		}
		require.ErrorIs(t, err, machineid.ErrExhausted, "MachineID while another holder's lease lives")
		require.Less(t, time.Since(first), 10*ttl, "the other holder's etcd lease did not expire")
	}
}

// report is one lease a watcher was given, and when.
type report struct {
	at time.Time
	machineid.Lease
}

// recorder keeps every lease a Holder reports to it. It is safe for
// concurrent use.
type recorder struct {
	mu      sync.Mutex
	seen    []report
	changed chan struct{} // closed and replaced on every report
}

// record watches l until the test ends.
func record(t testing.TB, l machineid.Leaser) *recorder {
	r := &recorder{changed: make(chan struct{})}
	stop := l.Watch(r.add)
	t.Cleanup(stop)
	return r
}

func (r *recorder) add(l machineid.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, report{time.Now(), l})
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor returns the first report at index from or later that ok accepts,
// with its index, waiting at most d; it fails the test after that. ok is
// called with r locked, so it must not call r's methods.
func (r *recorder) waitFor(t testing.TB, what string, from int, d time.Duration, ok func(machineid.Lease) bool) (report, int) {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		for i := from; i < len(r.seen); i++ {
			if ok(r.seen[i].Lease) {
				rep := r.seen[i]
				r.mu.Unlock()
				return rep, i
			}
		}
		from = max(from, len(r.seen))
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no report within %v: %s; reports: %v", d, what, r.all())
		}
	}
}

// all returns every report so far.
func (r *recorder) all() []report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]report(nil), r.seen...)
}

// last returns the latest report.
func (r *recorder) last() report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[len(r.seen)-1]
}

// markOf reads machine ID id's mark from etcd under the default prefix, or
// the zero Time if it has none.
func markOf(t testing.TB, c *clientv3.Client, id int64) time.Time {
	t.Helper()
	return readMark(t, c, "ringflake/machineid/", id)
}

func readMark(t testing.TB, c *clientv3.Client, prefix string, id int64) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix+"mark/"+strconv.FormatInt(id, 10))
	require.NoError(t, err, "reading the mark of %d", id)
	if len(resp.Kvs) == 0 {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	require.NoError(t, err, "mark of %d", id)
	return time.Unix(0, ns)
}

// owner returns the value of machine ID id's owner key under the default
// prefix, "" if it has none.
func owner(t testing.TB, c *clientv3.Client, id int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "ringflake/machineid/owner/"+strconv.FormatInt(id, 10))
	require.NoError(t, err, "reading the owner of %d", id)
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// blackhole returns the address of a listener that accepts connections and
// never answers, as a hung server would.
func blackhole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// proxy forwards TCP connections to a server, and can cut them off, as a
// network partition would, and heal again on the same address.
type proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex // protects cut and conns
	cut   bool
	conns []net.Conn
}

// newProxy returns a proxy to the server at url ("http://host:port"),
// closed when the test ends.
func newProxy(t testing.TB, url string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{target: strings.TrimPrefix(url, "http://"), ln: ln}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setCut(true)
	})
	return p
}

// url returns the proxy's address as an endpoint.
func (p *proxy) url() string { return "http://" + p.ln.Addr().String() }

// setCut cuts the proxy's connections and refuses new ones (cut), or lets
// them through again.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		p.mu.Lock()
		if err != nil || p.cut {
			p.mu.Unlock()
			_ = in.Close()
			if out != nil {
				_ = out.Close()
			}
			continue
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
		go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
	}
}
