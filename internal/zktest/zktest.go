// Package zktest starts real ZooKeeper servers on loopback for tests: a
// standalone server, or an ensemble of three. Each server runs in a
// temporary data directory on free ports, can be stopped, killed, paused
// and started again with its data, and is killed when the test ends.
//
// Servers tick every 200ms, so they grant session timeouts from 400ms
// (2 ticks) to 60s, and a follower that loses its leader finds a new one
// within about a second. They run Debian's ZooKeeper jars
// (/usr/share/java/zookeeper.jar, from package zookeeperd) with the java
// on PATH, directly: no init script, no service.
//
// If java or the jars are missing the test fails, never skips: run
// scripts/test, which installs them (Debian package zookeeperd).
package zktest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/taillog"
)

// startTimeout bounds how long servers may take to serve.
const startTimeout = 60 * time.Second

// jars are the classpath: the server, its wire format and its logging.
var jars = []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"}

// jarDir is where Debian's libzookeeper-java puts the jars.
const jarDir = "/usr/share/java"

// Server is one ZooKeeper process. Its methods are safe for concurrent use.
type Server struct {
	// ID is the server's myid in the ensemble, from 1.
	ID int
	// Addr is the server's client address, 127.0.0.1:port.
	Addr string

	tb   testing.TB
	dir  string       // the data directory and the config, kept across Stop and Start
	out  *taillog.Log // the process's output, for failure messages
	java string

	mu     sync.Mutex    // protects cmd and exited
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Ensemble is a set of servers that form one ZooKeeper service.
type Ensemble struct {
	Servers []*Server
	tb      testing.TB
}

// Start starts a standalone server and registers its shutdown with
// tb.Cleanup. It fails tb if ZooKeeper is missing or does not come up.
func Start(tb testing.TB) *Ensemble {
	tb.Helper()
	return start(tb, 1)
}

// StartEnsemble starts three servers and waits until they have a leader.
// It fails tb like [Start].
func StartEnsemble(tb testing.TB) *Ensemble {
	tb.Helper()
	return start(tb, 3)
}

func start(tb testing.TB, n int) *Ensemble {
	tb.Helper()
	java := binary(tb)
	var last error
	for range 5 { // another process may take a port between probe and bind
		e := &Ensemble{tb: tb}
		if last = e.launch(java, n); last == nil {
			return e
		}
		for _, s := range e.Servers {
			s.Kill()
		}
	}
	tb.Fatalf("zktest: starting %d ZooKeeper servers: %v", n, last)
	return nil
}

// launch starts n fresh servers and waits until they serve.
func (e *Ensemble) launch(java string, n int) error {
	var quorum []string
	for i := 1; i <= n; i++ {
		s := &Server{ID: i, Addr: "127.0.0.1:" + strconv.Itoa(freePort(e.tb)), tb: e.tb, dir: e.tb.TempDir(), out: &taillog.Log{}, java: java}
		e.tb.Cleanup(s.Kill)
		e.tb.Cleanup(func() {
			if e.tb.Failed() {
				e.tb.Logf("zktest: output of server %d (%s):\n%s", s.ID, s.Addr, s.out.String())
			}
		})
		e.Servers = append(e.Servers, s)
		if n > 1 {
			quorum = append(quorum, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i, freePort(e.tb), freePort(e.tb)))
		}
	}
	for _, s := range e.Servers {
		if err := s.configure(quorum); err != nil {
			return err
		}
		s.spawn()
	}
	return e.waitServing()
}

// configure writes the server's config and myid.
func (s *Server) configure(quorum []string) error {
	_, port, _ := net.SplitHostPort(s.Addr)
	cfg := []string{
		"tickTime=200", "initLimit=50", "syncLimit=10",
		"minSessionTimeout=400", "maxSessionTimeout=60000",
		"dataDir=" + filepath.Join(s.dir, "data"),
		"clientPortAddress=127.0.0.1", "clientPort=" + port,
		"admin.enableServer=false", "4lw.commands.whitelist=srvr",
		"autopurge.purgeInterval=0", "maxClientCnxns=0", // every client is on 127.0.0.1: no cap per address
	}
	cfg = append(cfg, quorum...)
	if err := os.MkdirAll(filepath.Join(s.dir, "data"), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "data", "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(strings.Join(cfg, "\n")+"\n"), 0o600)
}

// binary returns java's path or fails tb if it or the jars are missing.
func binary(tb testing.TB) string {
	tb.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		tb.Fatalf("zktest: java is not on PATH (%v); these tests need a real ZooKeeper: run scripts/test, which installs it (Debian package zookeeperd)", err)
	}
	for _, j := range jars {
		if _, err := os.Stat(filepath.Join(jarDir, j)); err != nil {
			tb.Fatalf("zktest: %v; these tests need a real ZooKeeper: run scripts/test, which installs it (Debian package zookeeperd)", err)
		}
	}
	return java
}

// Addrs returns every server's client address, for zk.Connect.
func (e *Ensemble) Addrs() []string {
	addrs := make([]string, len(e.Servers))
	for i, s := range e.Servers {
		addrs[i] = s.Addr
	}
	return addrs
}

// Restart stops every server (SIGTERM), starts them again with their data
// and waits until they serve.
func (e *Ensemble) Restart() {
	e.tb.Helper()
	for _, s := range e.Servers {
		s.Stop()
	}
	for _, s := range e.Servers {
		s.Start()
	}
	e.WaitServing()
}

// Pause pauses every server at once and returns what resumes them all.
func (e *Ensemble) Pause() (resume func()) {
	for _, s := range e.Servers {
		s.Pause()
	}
	return func() {
		for _, s := range e.Servers {
			s.Resume()
		}
	}
}

// WaitServing waits until every running server serves clients, which in an
// ensemble needs a leader; it fails the test after a minute.
func (e *Ensemble) WaitServing() {
	e.tb.Helper()
	if err := e.waitServing(); err != nil {
		e.tb.Fatalf("zktest: %v", err)
	}
}

func (e *Ensemble) waitServing() error {
	deadline := time.Now().Add(startTimeout)
	for _, s := range e.Servers {
		for s.Running() {
			mode, err := s.Mode()
			if err == nil && mode != "" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("server %d (%s) not serving within %v: %v", s.ID, s.Addr, startTimeout, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !s.Running() {
			return fmt.Errorf("server %d exited: %s", s.ID, s.out.String())
		}
	}
	return nil
}

// Leader waits until a running server says it leads, and returns it; it
// fails the test after a minute.
func (e *Ensemble) Leader() *Server {
	e.tb.Helper()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		for _, s := range e.Servers {
			if mode, _ := s.Mode(); mode == "leader" || mode == "standalone" {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.tb.Fatalf("zktest: no leader within %v", startTimeout)
	return nil
}

// Mode asks the server, with the srvr command, what it is: "leader",
// "follower" or "standalone"; "" while it serves no clients.
func (s *Server) Mode() (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return mode, nil
		}
	}
	return "", sc.Err()
}

// Start starts a stopped server again on its ports and data and waits
// until it listens; it does not wait for a leader (see
// [Ensemble.WaitServing]). It fails the test if it does not come up.
func (s *Server) Start() {
	s.tb.Helper()
	var err error
	for range 50 { // the old sockets may linger briefly
		s.spawn()
		if err = s.waitListening(); err == nil {
			return
		}
		s.Kill()
		time.Sleep(100 * time.Millisecond)
	}
	s.tb.Fatalf("zktest: starting server %d again: %v", s.ID, err)
}

// Stop ends the server with SIGTERM, as an operator would, and waits for
// it to exit. Stop on a stopped server does nothing.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit. Kill on a stopped server does nothing.
func (s *Server) Kill() { s.end(syscall.SIGKILL) }

// Pause stops the server's process with SIGSTOP, as a hung server that
// keeps its connections open, until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// Running reports whether the server's process is running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) end(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused JVM handles no SIGTERM
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// spawn starts the process; it does not wait for it. The JVM is kept small
// and quick to start: the tests' servers hold a few hundred nodes.
func (s *Server) spawn() {
	cp := make([]string, len(jars))
	for i, j := range jars {
		cp[i] = filepath.Join(jarDir, j)
	}
	cmd := exec.Command(s.java,
		"-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.forceSync=no", // a killed process's writes are in the page cache: no fsync needed
		// Few threads: on a loaded machine each hop between threads waits
		// for a CPU, and a request crosses fewer of them.
		"-Dzookeeper.nio.numSelectorThreads=1", "-Dzookeeper.nio.numWorkerThreads=0",
		"-Dzookeeper.commitProcessor.numWorkerThreads=0", "-XX:CICompilerCount=1",
		"-cp", strings.Join(cp, ":"),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(s.dir, "zoo.cfg"))
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stdout, cmd.Stderr = s.out, s.out
	exited := make(chan struct{})
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(s.out, "zktest: starting %s: %v\n", s.java, err)
		cmd = nil
		close(exited)
	} else {
		go func() { _ = cmd.Wait(); close(exited) }()
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
}

// waitListening waits until the server's client port accepts connections.
// It returns an error if the process exits first, as it does when a port
// is taken.
func (s *Server) waitListening() error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("server %d exited: %s", s.ID, s.out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %d did not listen on %s within %v", s.ID, s.Addr, startTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("zktest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
