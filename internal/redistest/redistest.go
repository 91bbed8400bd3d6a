// Package redistest starts real redis-server processes on loopback for
// tests: standalone servers that can be stopped, restarted and paused, and
// three-node Clusters. Every server runs without persistence in a temporary
// directory and is killed when the test ends.
//
// If redis-server is not on PATH the test fails, never skips: run
// scripts/test, which installs it.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/clockshift"
)

// startTimeout bounds how long a server may take to answer, when it starts
// and to each command: a loaded machine can hold a reply back for seconds.
const startTimeout = 10 * time.Second

// Server is one redis-server process. Its methods are safe for concurrent
// use.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// Port is the server's port.
	Port int

	tb    testing.TB
	dir   string
	extra []string
	env   []string          // more environment for the process (StartClocked)
	clock *clockshift.Clock // the server's clock, for StartClocked's servers

	mu     sync.Mutex    // protects cmd and exited
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Start starts a standalone server on a free loopback port and registers
// its shutdown with tb.Cleanup. extra are more redis-server arguments.
func Start(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	return start(tb, nil, extra)
}

// start is Start, with env added to the process's environment.
func start(tb testing.TB, env, extra []string) *Server {
	tb.Helper()
	bin := binary(tb)
	var last error
	for range 5 { // another process may take the port between probe and bind
		port := freePort(tb, false)
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, tb: tb, dir: tb.TempDir(), extra: extra, env: env}
		if last = s.start(bin); last == nil {
			tb.Cleanup(s.Stop)
			return s
		}
	}
	tb.Fatalf("redistest: starting redis-server: %v", last)
	return nil
}

// binary returns redis-server's path or fails tb.
func binary(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redistest: redis-server is not on PATH (%v); these tests need a real server: run scripts/test, which installs it", err)
	}
	return bin
}

func (s *Server) start(bin string) error {
	args := append([]string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--protected-mode", "no", "--loglevel", "warning",
	}, s.extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.dir
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	cmd.SysProcAttr = sysProcAttr()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for {
		// Another test's server may hold the port: this one then fails to
		// bind and exits, but the other answers PING in the meantime. Only
		// a reply that names this process's ID means the server is ours.
		pid, err := processID(s.Addr)
		if err == nil && pid == cmd.Process.Pid {
			break
		}
		if err == nil {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("port %d is held by another redis-server (pid %d)", s.Port, pid)
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server on port %d exited: %s", s.Port, strings.TrimSpace(out.String()))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d did not answer within %v", s.Port, startTimeout)
		}
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// Stop kills the server and waits for it to exit. Its data is lost. Stop
// on a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill() // SIGKILL ends a SIGSTOPped process too
		<-exited
	}
}

// Restart starts a stopped server again on the same port, empty. It fails
// the test if the server does not come up.
func (s *Server) Restart() {
	s.tb.Helper()
	var err error
	for range 50 { // the old socket may linger briefly
		if err = s.start(binary(s.tb)); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.tb.Fatalf("redistest: restarting redis-server on port %d: %v", s.Port, err)
}

// Pause stops the server process with SIGSTOP: connections stay open but
// nothing answers, as with a hung server. Resume undoes it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Do sends one command and returns its reply: a simple string or integer
// without its type byte, a bulk string's body, or an array's header line.
// It is for setup steps that need no client library. It fails the test on a network error.
func (s *Server) Do(args ...string) string {
	s.tb.Helper()
	reply, err := do(s.Addr, args...)
	if err != nil {
		s.tb.Fatalf("redistest: %s on %s: %v", strings.Join(args, " "), s.Addr, err)
	}
	return reply
}

// freePort returns a loopback port that was free a moment ago; with bus,
// port+10000 (a Cluster node's bus port) was free too.
func freePort(tb testing.TB, bus bool) int {
	tb.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("redistest: finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !bus {
			return port
		}
		if port+10000 > 65535 {
			continue
		}
		if lb, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			_ = lb.Close()
			return port
		}
	}
	tb.Fatalf("redistest: no free port pair for a Cluster node")
	return 0
}

// WaitUptime blocks until the server has been up for d or longer by its
// own account: INFO's uptime_in_seconds, less the second that reading can
// run ahead. A lease taken from a server up for less than a TTL waits out
// a restart floor (see package machineid_redis); tests about other things
// wait here first. It fails the test if the server stops answering.
func (s *Server) WaitUptime(d time.Duration) {
	s.tb.Helper()
	for {
		reply := s.Do("INFO", "server")
		up := -1
		for line := range strings.SplitSeq(reply, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
				up, _ = strconv.Atoi(v)
			}
		}
		if up < 0 {
			s.tb.Fatalf("redistest: INFO server from %s has no uptime_in_seconds", s.Addr)
		}
		if time.Duration(up-1)*time.Second >= d {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processID returns the process ID of the redis-server answering at addr,
// from INFO server.
func processID(addr string) (int, error) {
	reply, err := do(addr, "INFO", "server")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(reply, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server from %s has no process_id", addr)
}

// do sends one command in RESP and reads the reply as Do describes.
func do(addr string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") {
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return "", err
		}
		return string(body[:n]), nil
	}
	switch {
	case strings.HasPrefix(line, "-"):
		return line, fmt.Errorf("%s", line[1:])
	case strings.HasPrefix(line, "+"), strings.HasPrefix(line, ":"):
		return line[1:], nil
	}
	return line, nil
}
