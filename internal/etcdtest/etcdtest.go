// Package etcdtest starts real etcd servers on loopback for tests: a
// single member, or a cluster of three. Each member runs in a temporary
// data directory on free ports, can be stopped, killed and started again
// with its data, and is killed when the test ends.
//
// Members run with a 50ms heartbeat and a 500ms election timeout, so a
// failover takes about half a second and etcd's shortest lease TTL is one
// second (etcd raises shorter ones to 1.5 election timeouts, rounded up to
// a second).
//
// If etcd is not on PATH the test fails, never skips: run scripts/test,
// which installs it (Debian's etcd-server package).
package etcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/taillog"
)

// startTimeout bounds how long members may take to answer.
const startTimeout = 20 * time.Second

// Member is one etcd process. Its methods are safe for concurrent use.
type Member struct {
	// Name is the member's name in the cluster.
	Name string
	// ClientURL is the member's client endpoint, http://127.0.0.1:port.
	ClientURL string
	// PeerURL is the member's peer endpoint.
	PeerURL string

	tb      testing.TB
	dir     string       // the data directory, kept across Stop and Start
	initial string       // the --initial-cluster value
	out     *taillog.Log // the process's output, for failure messages

	mu     sync.Mutex    // protects cmd and exited
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Cluster is a set of members that form one etcd cluster.
type Cluster struct {
	Members []*Member
	tb      testing.TB
}

// Start starts a one-member cluster and registers its shutdown with
// tb.Cleanup. It fails tb if etcd is missing or does not come up.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	return start(tb, 1)
}

// StartCluster starts a three-member cluster and waits until it has a
// leader. It fails tb like [Start].
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	return start(tb, 3)
}

func start(tb testing.TB, n int) *Cluster {
	tb.Helper()
	bin := binary(tb)
	var last error
	for range 5 { // another process may take a port between probe and bind
		c := &Cluster{tb: tb}
		if last = c.launch(bin, n); last == nil {
			return c
		}
		for _, m := range c.Members {
			m.Kill()
		}
	}
	tb.Fatalf("etcdtest: starting %d etcd members: %v", n, last)
	return nil
}

// launch starts n fresh members and waits until the cluster is healthy.
func (c *Cluster) launch(bin string, n int) error {
	var peers []string
	for i := range n {
		client, peer := freePort(c.tb), freePort(c.tb)
		m := &Member{
			Name:      fmt.Sprintf("m%d-%d", i, client),
			ClientURL: "http://127.0.0.1:" + strconv.Itoa(client),
			PeerURL:   "http://127.0.0.1:" + strconv.Itoa(peer),
			tb:        c.tb,
			dir:       dataDir(c.tb),
			out:       &taillog.Log{},
		}
		c.tb.Cleanup(m.Kill)
		c.tb.Cleanup(func() {
			if c.tb.Failed() {
				c.tb.Logf("etcdtest: output of %s (%s):\n%s", m.Name, m.ClientURL, m.out.String())
			}
		})
		c.Members = append(c.Members, m)
		peers = append(peers, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.initial = strings.Join(peers, ",")
		m.spawn(bin)
	}
	for _, m := range c.Members {
		if err := m.waitListening(); err != nil {
			return err
		}
	}
	if err := c.waitHealthy(); err != nil {
		return err
	}
	// Another test's etcd may have held a port: this one then failed to
	// bind and exited, but the other answered meanwhile. Only a member list
	// naming every member with its peer URL means the cluster is ours.
	for _, m := range c.Members {
		if err := m.isSelf(); err != nil {
			return err
		}
	}
	return nil
}

// binary returns etcd's path or fails tb.
func binary(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		tb.Fatalf("etcdtest: etcd is not on PATH (%v); these tests need a real server: run scripts/test, which installs it (Debian package etcd-server)", err)
	}
	return bin
}

// dataDir makes an empty directory that etcd accepts without a warning
// (mode 0700) and that is removed when the test ends.
func dataDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir() + "/data"
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	return dir
}

// Endpoints returns every member's client URL, for clientv3.Config.
func (c *Cluster) Endpoints() []string {
	urls := make([]string, len(c.Members))
	for i, m := range c.Members {
		urls[i] = m.ClientURL
	}
	return urls
}

// Restart stops every member (SIGTERM), starts them again with their data
// and waits until the cluster is healthy.
func (c *Cluster) Restart() {
	c.tb.Helper()
	for _, m := range c.Members {
		m.Stop()
	}
	for _, m := range c.Members {
		m.Start()
	}
	c.WaitHealthy()
}

// WaitHealthy waits until every running member reports itself healthy,
// which needs a leader; it fails the test after 20s.
func (c *Cluster) WaitHealthy() {
	c.tb.Helper()
	if err := c.waitHealthy(); err != nil {
		c.tb.Fatalf("etcdtest: %v", err)
	}
}

func (c *Cluster) waitHealthy() error {
	deadline := time.Now().Add(startTimeout)
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		for {
			ok, err := m.healthy()
			if ok {
				break
			}
			if !m.Running() {
				return fmt.Errorf("%s exited: %s", m.Name, m.out.String())
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s (%s) not healthy within %v: %v", m.Name, m.ClientURL, startTimeout, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// Leader waits until the running members agree on a leader among them and
// returns it; it fails the test after 20s.
func (c *Cluster) Leader() *Member {
	c.tb.Helper()
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		var leader *Member
		if leader, last = c.leader(); last == nil {
			return leader
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.tb.Fatalf("etcdtest: no leader within %v: %v", startTimeout, last)
	return nil
}

// leader returns the member that every running member names as leader.
func (c *Cluster) leader() (*Member, error) {
	ids := map[string]*Member{}
	var named string
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		st, err := m.status()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		ids[st.Header.MemberID] = m
		switch {
		case st.Leader == "" || st.Leader == "0":
			return nil, fmt.Errorf("%s knows no leader", m.Name)
		case named == "":
			named = st.Leader
		case named != st.Leader:
			return nil, fmt.Errorf("members disagree on the leader (%s, %s)", named, st.Leader)
		}
	}
	if m := ids[named]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("leader %s is not a running member", named)
}

// Start starts a stopped member again on its ports and data directory and
// waits until it listens; it does not wait for a leader (see
// [Cluster.WaitHealthy]). It fails the test if the member does not come up.
func (m *Member) Start() {
	m.tb.Helper()
	var err error
	for range 50 { // the old sockets may linger briefly
		m.spawn(binary(m.tb))
		if err = m.waitListening(); err == nil {
			return
		}
		m.Kill()
		time.Sleep(50 * time.Millisecond)
	}
	m.tb.Fatalf("etcdtest: starting %s again: %v", m.Name, err)
}

// Stop ends the member with SIGTERM, as an operator would, and waits for
// it to exit. Stop on a stopped member does nothing.
func (m *Member) Stop() { m.end(syscall.SIGTERM) }

// Kill ends the member with SIGKILL, as a crash would, and waits for it to
// exit. Kill on a stopped member does nothing.
func (m *Member) Kill() { m.end(syscall.SIGKILL) }

// Pause stops the member's process with SIGSTOP, as a hung server that
// keeps its connections open, until Resume. Pause on a stopped member does
// nothing.
func (m *Member) Pause() { m.signal(syscall.SIGSTOP) }

// Resume lets a paused member run again with SIGCONT.
func (m *Member) Resume() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}

// Pause pauses every member at once and returns what resumes them all.
func (c *Cluster) Pause() (resume func()) {
	for _, m := range c.Members {
		m.Pause()
	}
	return func() {
		for _, m := range c.Members {
			m.Resume()
		}
	}
}

// Running reports whether the member's process is running.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

func (m *Member) end(sig syscall.Signal) {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// spawn starts the process; it does not wait for it.
func (m *Member) spawn(bin string) {
	cmd := exec.Command(bin,
		"--name", m.Name, "--data-dir", m.dir,
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", m.initial, "--initial-cluster-state", "new",
		"--initial-cluster-token", m.initial, // unique per cluster
		"--heartbeat-interval", "50", "--election-timeout", "500",
		"--logger", "zap", "--log-level", "warn",
	)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stdout, cmd.Stderr = m.out, m.out
	exited := make(chan struct{})
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(m.out, "etcdtest: starting %s: %v\n", bin, err)
		cmd = nil
		close(exited)
	} else {
		go func() { _ = cmd.Wait(); close(exited) }()
	}
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
}

// waitListening waits until the member's client port accepts connections.
// etcd binds its ports before it joins the cluster and serves clients only
// once it has, so this does not need a leader. It returns an error if the
// process exits first, as it does when a port is taken.
func (m *Member) waitListening() error {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	addr := strings.TrimPrefix(m.ClientURL, "http://")
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("etcd %s exited: %s", m.Name, m.out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd %s did not listen on %s within %v", m.Name, addr, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("etcdtest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
