package machineid_zookeeper_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	mz "github.com/ringflake/ringflake/machineid_zookeeper"
)

// ttl is the tests' lease TTL, and so their sessions' timeout.
const ttl = 2 * time.Second

// newHolder returns a Holder of servers with the tests' TTL and opts,
// released when the test ends.
func newHolder(t testing.TB, servers []string, opts ...machineid.Option) *machineid.Holder {
	t.Helper()
	h, err := mz.New(servers, append([]machineid.Option{machineid.WithTTL(ttl)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Release(time.Time{}) })
	return h
}

// ctxFor returns a context that ends after d or with the test.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// report is a lease a Holder reported, and when.
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
	t.Cleanup(l.Watch(r.add))
	return r
}

func (r *recorder) add(l machineid.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, report{time.Now(), l})
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor returns the first report at index from or later that ok
// accepts, with its index, waiting at most d; it fails the test after that.
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

// held is Lease.Held.
func held(l machineid.Lease) bool { return l.Held }

// lost is a Lease not held, with its cause.
func lost(l machineid.Lease) bool { return !l.Held && l.Err != nil }

// ledger collects the IDs that generators issue, and the IDs issued twice.
// It is safe for concurrent use.
type ledger struct {
	mu    sync.Mutex
	seen  map[ringflake.ID]string // by whom
	twice []string
	count map[string]int
}

func newLedger() *ledger {
	return &ledger{seen: map[ringflake.ID]string{}, count: map[string]int{}}
}

// issue runs a generator on h, named name, that issues an ID every
// millisecond into the ledger until the test ends; NextID's errors (a lost
// lease) are skipped.
func (lg *ledger) issue(t testing.TB, name string, h machineid.Leaser) {
	t.Helper()
	g, err := ringflake.New(ctxFor(t, 20*time.Second), ringflake.WithMachineIDSource(h))
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if id, err := g.NextID(); err == nil {
				lg.add(name, id)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; _ = g.Close() })
}

func (lg *ledger) add(name string, id ringflake.ID) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if by, ok := lg.seen[id]; ok {
		lg.twice = append(lg.twice, id.String()+" by "+by+" and "+name)
	}
	lg.seen[id] = name
	lg.count[name]++
}

// issued returns how many IDs name has issued.
func (lg *ledger) issued(name string) int {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return lg.count[name]
}

// duplicates returns the IDs issued twice, and by whom.
func (lg *ledger) duplicates() []string {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return append([]string(nil), lg.twice...)
}

// proxy forwards TCP connections to a server, and can be cut as a network
// partition cuts: bytes are dropped both ways and nothing is closed, so
// each side hears nothing until its own timeouts. heal closes what the cut
// held, as a partition long enough for TCP to give up does, and forwards
// again.
type proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex // protects cut and conns
	cut   bool
	conns []net.Conn
}

// newProxy returns a proxy to target (host:port), closed with the test.
func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{target: target, ln: ln}
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.heal() })
	return p
}

// addr is the proxy's address, for a client.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// partition starts dropping every byte.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
}

// heal closes the connections the partition held and forwards again.
func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

// pipe copies from src to dst, dropping what it reads while cut.
func (p *proxy) pipe(dst io.WriteCloser, src io.ReadCloser) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isCut() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
