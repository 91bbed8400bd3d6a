package nemesis

import (
	"io"
	"net"
	"sync"
)

// A proxy stands between one holder and its store on loopback, so that the
// harness can cut the holder off: both ways, or one way (only what the
// holder sends, or only what the store answers). A cut direction is not
// read from while it lasts, so its bytes wait in the kernel's buffers, as
// packets a router drops wait in TCP's retransmissions; a heal delivers
// them, or, as a connection that timed out, resets every connection (the
// seed draws which). Bytes are never dropped from a live stream, which TCP
// cannot do.
type proxy struct {
	ln net.Listener

	mu       sync.Mutex
	cond     *sync.Cond
	upstream string  // where new connections go: retarget moves it
	cut      [2]bool // [toStore, toHolder]: that direction is held back
	conns    map[net.Conn]struct{}
	done     bool
}

// Directions of a proxy.
const (
	toStore  = 0
	toHolder = 1
)

// newProxy listens on a free loopback port and forwards to upstream.
func newProxy(upstream string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	return p, nil
}

// addr is where the holder connects.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

// serve forwards one connection both ways until either side closes.
func (p *proxy) serve(holder net.Conn) {
	p.mu.Lock()
	upstream := p.upstream
	p.mu.Unlock()
	store, err := net.Dial("tcp", upstream)
	if err != nil {
		holder.Close()
		return
	}
	if !p.track(holder, store, upstream) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.copy(store, holder, toStore) }()
	go func() { defer wg.Done(); p.copy(holder, store, toHolder) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, holder)
	delete(p.conns, store)
	p.mu.Unlock()
}

// track records a connection's two ends, or closes them if the proxy is
// done or was retargeted away from upstream while it dialed.
func (p *proxy) track(a, b net.Conn, upstream string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || upstream != p.upstream {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// copy moves bytes from src to dst, holding each read back while its
// direction is cut; it closes both when either fails.
func (p *proxy) copy(dst, src net.Conn, dir int) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		if !p.wait(dir, src) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(dir, src) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
	}
}

// wait blocks while dir is cut; false once the proxy is done or c reset.
func (p *proxy) wait(dir int, c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.cut[dir] && !p.done {
		if _, live := p.conns[c]; !live {
			return false
		}
		p.cond.Wait()
	}
	_, live := p.conns[c]
	return !p.done && live
}

// partition holds back the directions given.
func (p *proxy) partition(toStoreCut, toHolderCut bool) {
	p.mu.Lock()
	p.cut = [2]bool{toStoreCut, toHolderCut}
	p.mu.Unlock()
}

// heal lets every direction through again; with reset, it first resets
// every connection (an RST to both ends), as one that timed out.
func (p *proxy) heal(reset bool) {
	p.mu.Lock()
	if reset {
		p.resetLocked()
	}
	p.cut = [2]bool{}
	p.cond.Broadcast()
	p.mu.Unlock()
}

// retarget sends new connections to upstream and resets every one open, as
// a switch of DNS or of a service's endpoints does to a client's pool;
// a cut stays as it is.
func (p *proxy) retarget(upstream string) {
	p.mu.Lock()
	p.upstream = upstream
	p.resetLocked()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// resetLocked resets every connection (an RST to both ends). The caller
// holds mu.
func (p *proxy) resetLocked() {
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		delete(p.conns, c)
	}
}

// close stops listening and closes every connection.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}
