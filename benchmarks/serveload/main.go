//go:build linux

// Command serveload sends GET requests for one URL at a fixed rate over
// kept-alive connections, and prints the latency percentiles, for
// benchmarks/serve/run.sh. wrk sends each connection's next request as soon
// as the last is answered, so it measures a server at saturation; this
// measures it at a given load, such as Meituan Leaf's published 50k
// requests per second.
//
// Requests fall due every 1/rate on one schedule and go out on whichever
// connection is free. A request's latency runs from the time it fell due
// to the end of its answer, so a server that stalls delays every request
// that falls due meanwhile, as it would delay callers that keep arriving,
// not only the ones in flight (what wrk2 calls correcting for coordinated
// omission).
//
// The loop never sleeps: Go's timers wake a goroutine on an idle thread
// only to the millisecond, which at 50k requests a second would send them
// in bursts of fifty and measure the client. One goroutine spins instead,
// reading the clock, sending what is due and asking epoll, without
// waiting, which connections have an answer to read; it keeps its CPU busy
// (run.sh gives it one of its own) and is late by a few microseconds at
// most.
//
//	go run ./benchmarks/serveload -url http://127.0.0.1:8080/v1/id -rate 50000 -duration 10s
//
// It prints one line, "result rps=... p50=... p99=... p999=... max=...
// requests=... non2xx=... errors=...", with latencies in microseconds.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"
	"time"
)

func main() {
	target := flag.String("url", "", "the `URL` to GET, http://host:port/path")
	rate := flag.Float64("rate", 50000, "requests per second, `R`")
	conns := flag.Int("conns", 16, "kept-alive connections, `N`: the most requests in flight at once")
	duration := flag.Duration("duration", 10*time.Second, "how long to measure, after the warm-up")
	warmup := flag.Duration("warmup", time.Second, "how long to send before measuring")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Scheme != "http" || u.Host == "" || *rate <= 0 || *conns < 1 {
		fmt.Fprintln(os.Stderr, "serveload: want -url http://host:port/path, -rate above 0 and -conns 1 or more")
		os.Exit(2)
	}
	l, err := newLoad(u, *conns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
	defer l.close()
	if err := l.run(*rate, *warmup, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
	fmt.Println(l.result(*duration))
}

// conn is one kept-alive connection, with at most one request in flight.
type conn struct {
	c   net.Conn
	f   *os.File // holds fd open: its finalizer would close it
	fd  int
	due time.Time // when its request in flight fell due; zero when free
	buf []byte    // the answer read so far
}

// load is the client's state. It is used by one goroutine.
type load struct {
	req    []byte
	conns  []*conn
	byFD   map[int]*conn
	epfd   int
	turn   int             // the connection free tries first
	lat    []time.Duration // answered with 2xx, from due to answered
	non2xx int
}

func newLoad(u *url.URL, n int) (*load, error) {
	epfd, err := syscall.EpollCreate1(0)
	if err != nil {
		return nil, err
	}
	l := &load{
		req:  []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\n\r\n"),
		byFD: map[int]*conn{},
		epfd: epfd,
	}
	for range n {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			l.close()
			return nil, err
		}
		// A file of its own, in blocking mode, that Go's poller does not
		// watch: epoll below says when it can be read without waiting.
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			l.close()
			return nil, err
		}
		cn := &conn{c: c, f: f, fd: int(f.Fd()), buf: make([]byte, 0, 64<<10)}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(cn.fd)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, cn.fd, &ev); err != nil {
			l.close()
			return nil, err
		}
		l.conns = append(l.conns, cn)
		l.byFD[cn.fd] = cn
	}
	return l, nil
}

func (l *load) close() {
	for _, c := range l.conns {
		_ = c.f.Close()
		_ = c.c.Close()
	}
	_ = syscall.Close(l.epfd)
}

// run sends a request every 1/rate for warmup+duration, and records the
// answers to those that fell due after the warm-up.
func (l *load) run(rate float64, warmup, duration time.Duration) error {
	// A collection would have to stop the spinning loop below, which the
	// runtime preempts only every 10ms or so: it would stall the client,
	// and the figures with it. The loop allocates nothing but the
	// latencies, preallocated here, so no collection is needed.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	measure, end := start.Add(warmup), start.Add(warmup+duration)
	l.lat = make([]time.Duration, 0, int(duration/interval)+1)
	events := make([]syscall.EpollEvent, len(l.conns))
	next := start
	for {
		now := time.Now()
		for next.Before(end) && !next.After(now) {
			c := l.free()
			if c == nil {
				break // every connection busy: the request waits, its latency counting
			}
			if _, err := syscall.Write(c.fd, l.req); err != nil {
				return fmt.Errorf("sending: %w", err)
			}
			c.due = next
			next = next.Add(interval)
		}
		if !next.Before(end) && l.busy() == 0 {
			return nil
		}
		n, err := syscall.EpollWait(l.epfd, events, 0)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return err
		}
		for _, ev := range events[:max(n, 0)] {
			if err := l.read(l.byFD[int(ev.Fd)], measure); err != nil {
				return err
			}
		}
	}
}

// free returns a connection with no request in flight, or nil. It takes
// them in turn, so that every connection carries its share: the server
// closes one that sends nothing for its read timeout.
func (l *load) free() *conn {
	for i := range l.conns {
		c := l.conns[(l.turn+i)%len(l.conns)]
		if c.due.IsZero() {
			l.turn = (l.turn + i + 1) % len(l.conns)
			return c
		}
	}
	return nil
}

// busy counts the requests in flight.
func (l *load) busy() int {
	n := 0
	for _, c := range l.conns {
		if !c.due.IsZero() {
			n++
		}
	}
	return n
}

// read reads what c has and, if its answer is complete, records it.
func (l *load) read(c *conn, measure time.Time) error {
	if len(c.buf) == cap(c.buf) {
		return errors.New("an answer longer than 64 KiB")
	}
	n, err := syscall.Read(c.fd, c.buf[len(c.buf):cap(c.buf)])
	switch {
	case err != nil:
		return fmt.Errorf("reading an answer: %w", err)
	case n == 0:
		return errors.New("the server closed a connection")
	}
	c.buf = c.buf[:len(c.buf)+n]
	code, size, err := answer(c.buf)
	switch {
	case err != nil:
		return err
	case size == 0:
		return nil // not all there yet
	case size != len(c.buf):
		return errors.New("more bytes than one answer")
	}
	done := time.Now()
	if !c.due.Before(measure) {
		if code/100 == 2 {
			l.lat = append(l.lat, done.Sub(c.due))
		} else {
			l.non2xx++
		}
	}
	c.due, c.buf = time.Time{}, c.buf[:0]
	return nil
}

// answer returns the status code and size of the HTTP/1.1 answer at the
// start of b, or size 0 if b does not hold all of it yet. The answer must
// have a Content-Length. It allocates nothing unless b is malformed.
func answer(b []byte) (code, size int, err error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return 0, 0, nil
	}
	head := b[:end]
	// "HTTP/1.1 200 OK": the code is the three digits after the first space.
	sp := bytes.IndexByte(head, ' ')
	if sp < 0 || len(head) < sp+4 {
		return 0, 0, fmt.Errorf("bad status line in %q", head)
	}
	for _, d := range head[sp+1 : sp+4] {
		code = code*10 + int(d-'0')
	}
	for rest := head; ; {
		i := bytes.Index(rest, []byte("\r\n"))
		if i < 0 {
			return 0, 0, errors.New("an answer without Content-Length")
		}
		rest = rest[i+2:]
		name, value, ok := bytes.Cut(rest, []byte(":"))
		if !ok || !bytes.EqualFold(name, []byte("Content-Length")) {
			continue
		}
		if j := bytes.Index(value, []byte("\r\n")); j >= 0 {
			value = value[:j]
		}
		n := 0
		for _, d := range bytes.TrimSpace(value) {
			if d < '0' || d > '9' {
				return 0, 0, fmt.Errorf("bad Content-Length %q", value)
			}
			n = n*10 + int(d-'0')
		}
		if total := end + 4 + n; len(b) >= total {
			return code, total, nil
		}
		return 0, 0, nil
	}
}

// result returns the line run.sh reads.
func (l *load) result(duration time.Duration) string {
	if len(l.lat) == 0 {
		return "result rps=0 p50=0 p99=0 p999=0 max=0 requests=0 non2xx=" + strconv.Itoa(l.non2xx) + " errors=0"
	}
	slices.Sort(l.lat)
	pct := func(p float64) int64 { return l.lat[min(int(p/100*float64(len(l.lat))), len(l.lat)-1)].Microseconds() }
	answered := len(l.lat) + l.non2xx
	// A failed connection ends the run with an error instead: errors=0.
	return fmt.Sprintf("result rps=%.0f p50=%d p99=%d p999=%d max=%d requests=%d non2xx=%d errors=0",
		float64(answered)/duration.Seconds(), pct(50), pct(99), pct(99.9), l.lat[len(l.lat)-1].Microseconds(),
		answered, l.non2xx)
}
