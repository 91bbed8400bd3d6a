// Package mysqltest starts real MariaDB (or MySQL) servers on loopback for
// tests: each in a temporary directory of its own, with its own data
// directory, socket and free port, and killed when the test ends. A server
// can be stopped and started again on the same port with the same data,
// killed with SIGKILL as a crash would, and paused.
//
// It looks for mariadbd (or mysqld) on PATH and in /usr/sbin, and for
// mariadb-install-db to make the data directory. When they are missing the
// test fails, never skips: run scripts/test, which installs Debian's
// mariadb-server package. The server runs as the test's user; as root it
// is told so (--user=root), which it otherwise refuses.
//
// A data directory is made once per test binary and copied for each
// server, which is faster than making each. The servers run with small
// buffers and innodb_flush_log_at_trx_commit=2: committed data survives the
// server's crash (kill -9), not the machine's, which is all a test needs.
package mysqltest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to accept connections,
// crash recovery included.
const startTimeout = 60 * time.Second

// Server is one MariaDB server. Its methods are safe for concurrent use.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	tb  testing.TB
	bin string // mariadbd or mysqld
	dir string // the temporary directory: data/, the socket and the log

	mu     sync.Mutex    // protects cmd and exited
	cmd    *exec.Cmd     // the server, nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Start copies a fresh data directory and starts a server on a free
// loopback port, and registers its removal with tb.Cleanup. It fails tb if
// the binaries are missing or the server does not come up.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := newServer(tb)
	if s != nil {
		tb.Cleanup(s.remove)
	}
	if err != nil {
		tb.Fatalf("mysqltest: %v", err)
	}
	return s
}

// newServer starts a server whose Stop and Start report to tb (nil for
// the shared one, which nobody stops). On an error it returns the server
// too, if it made its directory, for the caller to remove.
func newServer(tb testing.TB) (*Server, error) {
	bin, template, err := prepared()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "mysqltest")
	if err != nil {
		return nil, err
	}
	s := &Server{tb: tb, bin: bin, dir: dir}
	if out, err := exec.Command("cp", "-a", template, s.path("data")).CombinedOutput(); err != nil {
		return s, fmt.Errorf("copying the data directory: %v: %s", err, out)
	}
	var last error
	for range 5 { // another process may take the port between probe and bind
		if s.Port, last = freePort(); last != nil {
			break
		}
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	return s, fmt.Errorf("starting %s: %w", filepath.Base(bin), last)
}

// shared is the server that Shared hands out databases on.
var shared struct {
	once sync.Once
	srv  *Server
	err  error
	dbs  atomic.Int64 // databases made
}

// Shared returns the DSN (as [Server.DSN]) of a new, empty database of tb's
// own on a server that the whole test binary shares, started by the first
// call, for tests that neither stop nor pause their server: one server
// instead of one per test. Call [Cleanup] from TestMain to remove it.
func Shared(tb testing.TB) string {
	tb.Helper()
	shared.once.Do(func() { shared.srv, shared.err = newServer(nil) })
	if shared.err != nil {
		tb.Fatalf("mysqltest: the shared server: %v", shared.err)
	}
	name := fmt.Sprintf("t%d", shared.dbs.Add(1))
	if out, err := shared.srv.Client("CREATE DATABASE " + name); err != nil {
		tb.Fatalf("mysqltest: creating database %s: %v: %s", name, err, out)
	}
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", shared.srv.Port, name)
}

// Cleanup removes the shared server, if one started, and the data
// directory that servers are copied from. TestMain calls it once the tests
// have run; without it, they stay in the temporary directory.
func Cleanup() {
	if shared.srv != nil {
		shared.srv.remove()
	}
	if template.dir != "" {
		_ = os.RemoveAll(filepath.Dir(template.dir))
	}
}

// Client runs statements with the mariadb (or mysql) client, as root over
// the server's socket, and returns the client's output.
func (s *Server) Client(statements ...string) (string, error) {
	client, err := lookPath("mariadb", "mysql")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(client, "--no-defaults", "-uroot", "--socket="+s.path("sock"), "--batch", "--skip-column-names",
		"-e", strings.Join(statements, ";\n")).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// DSN returns a data source name for github.com/go-sql-driver/mysql: the
// server's database test as root, who needs no password.
func (s *Server) DSN() string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/test", s.Port)
}

// URL returns the server's database test as a mysql:// URL, as root.
func (s *Server) URL() string {
	return fmt.Sprintf("mysql://root@127.0.0.1:%d/test", s.Port)
}

// Stop shuts the server down as an operator would (SIGTERM: connections
// closed, InnoDB's buffers flushed) and waits for it to exit; a paused
// server is resumed to do so. Stop on a stopped server does nothing.
func (s *Server) Stop() {
	s.tb.Helper()
	cmd, exited := s.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused server acts on it only once continued
	select {
	case <-exited:
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-exited
		s.tb.Fatalf("mysqltest: the server on port %d did not shut down within %v; killed it", s.Port, startTimeout)
	}
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it
// to exit. Committed data survives; Start recovers it. Kill on a stopped
// server does nothing.
func (s *Server) Kill() {
	cmd, exited := s.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Start starts a stopped or killed server again on the same port with the
// same data, and returns once it accepts connections. It fails the test if
// it does not, or if the server is running.
func (s *Server) Start() {
	s.tb.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		s.tb.Fatalf("mysqltest: Start on port %d: the server is running; Stop or Kill it first", s.Port)
	}
	var err error
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		// The port of a killed server may linger a moment.
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("mysqltest: starting the server again on port %d: %v", s.Port, err)
}

// Pause stops the server with SIGSTOP: connections stay open and nothing
// answers, as with a hung server. Resume undoes it.
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

// take returns the running server, if any, and marks it stopped.
func (s *Server) take() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	return cmd, exited
}

// remove kills the server and deletes its directory.
func (s *Server) remove() {
	s.Resume() // a stopped process cannot be killed until it is continued
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

// serverArgs are the settings every server runs with, beside its
// directory and port: small, fast, and on loopback only.
var serverArgs = []string{
	"--no-defaults",
	"--skip-name-resolve",
	"--innodb-buffer-pool-size=8M",
	"--innodb-log-file-size=4M",
	"--innodb-flush-log-at-trx-commit=2",
	"--skip-log-bin",
	"--max-connections=300",
	"--performance-schema=OFF",
}

// start starts the server on s.Port and waits until it accepts connections
// on its own socket, which only it can have made: a reply on the TCP port
// could come from another test's server that holds the port.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.path("log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	_ = os.Remove(s.path("sock")) // a killed server leaves it behind
	args := append(append([]string(nil), serverArgs...),
		"--datadir="+s.path("data"), "--socket="+s.path("sock"), "--pid-file="+s.path("pid"),
		"--bind-address=127.0.0.1", "--port="+strconv.Itoa(s.Port))
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for !s.ready() {
		select {
		case <-exited:
			return fmt.Errorf("the server on port %d exited: %s", s.Port, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("the server on port %d did not accept connections within %v: %s", s.Port, startTimeout, s.logTail())
		}
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// ready reports whether the server answers on its socket: the server sends
// its greeting (a protocol 10 handshake) as soon as it accepts a
// connection, and it listens only once it is ready.
func (s *Server) ready() bool {
	c, err := net.DialTimeout("unix", s.path("sock"), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	var b [5]byte // a 4-byte packet header, then the protocol version
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return false
	}
	return b[4] == 10
}

func (s *Server) path(name string) string { return filepath.Join(s.dir, name) }

// logTail returns the end of the server's log, for an error message.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.path("log"))
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return strings.TrimSpace(string(b))
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// template is the data directory made once per test binary, with a
// database test, and the server binary.
var template struct {
	once     sync.Once
	bin, dir string
	err      error
}

// prepared returns the server binary and a data directory to copy, made
// by the first call.
func prepared() (bin, dir string, err error) {
	template.once.Do(func() { template.bin, template.dir, template.err = initDataDir() })
	return template.bin, template.dir, template.err
}

// initDataDir finds the binaries and makes a data directory with
// mariadb-install-db, then a database test in it. The directory is left
// behind when the test binary exits: it is in the temporary directory,
// and small (about 20 MB).
func initDataDir() (bin, dir string, err error) {
	bin, err = lookPath("mariadbd", "mysqld")
	if err != nil {
		return "", "", err
	}
	install, err := lookPath("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return "", "", err
	}
	top, err := os.MkdirTemp("", "mysqltest-template")
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(top, "data")
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve", "--innodb-log-file-size=4M", "--innodb-buffer-pool-size=8M"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("%s: %v: %s", install, err, out)
	}
	// The database test, made as the server would: a directory.
	if err := os.Mkdir(filepath.Join(dir, "test"), 0o700); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "test", "db.opt"), []byte("default-character-set=utf8mb4\ndefault-collation=utf8mb4_general_ci\n"), 0o660); err != nil {
		return "", "", err
	}
	return bin, dir, nil
}

// lookPath returns the first of names found on PATH or in /usr/sbin, which
// is not on every user's PATH.
func lookPath(names ...string) (string, error) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		if p := filepath.Join("/usr/sbin", name); isExec(p) {
			return p, nil
		}
	}
	return "", errors.New("no " + strings.Join(names, " nor ") + " on PATH nor in /usr/sbin; these tests need a real MariaDB server: run scripts/test, which installs Debian's mariadb-server package")
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
