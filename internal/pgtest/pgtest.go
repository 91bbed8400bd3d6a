// Package pgtest starts real PostgreSQL servers on loopback for tests: each
// in a temporary directory of its own, with its own data directory, socket
// directory and free port, and killed when the test ends. A server can be
// stopped and started again on the same port with the same data, killed with
// SIGKILL as a crash would, and paused.
//
// It looks for Debian's server binaries under /usr/lib/postgresql/<version>/bin
// (the newest version), or for postgres on PATH. When they are missing the
// test fails, never skips: run scripts/test, which installs them. PostgreSQL
// refuses to run as root, so a test running as root runs the server as the
// postgres user that Debian's package creates.
//
// The servers run with fsync off: their data survives the server's crash, not
// the machine's, which is all a test needs.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to accept connections,
// crash recovery included.
const startTimeout = 30 * time.Second

// Server is one PostgreSQL server. Its methods are safe for concurrent use.
type Server struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	tb   testing.TB
	bin  string              // the directory holding postgres, initdb and pg_isready
	dir  string              // the temporary directory: the socket, data/ and log
	cred *syscall.Credential // the postgres user when the test runs as root, else nil

	mu     sync.Mutex    // protects cmd and exited
	cmd    *exec.Cmd     // the postmaster, nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Start initialises a data directory and starts a server on a free loopback
// port, and registers its removal with tb.Cleanup. It fails tb if the
// binaries are missing or the server does not come up.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := binDir()
	if err != nil {
		tb.Fatalf("pgtest: %v; these tests need a real PostgreSQL server: run scripts/test, which installs Debian's postgresql package", err)
	}
	cred, err := serverUser()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	s := &Server{tb: tb, bin: bin, dir: dir, cred: cred}
	tb.Cleanup(s.remove)
	if err := s.initdb(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	var last error
	for range 5 { // another process may take the port between probe and bind
		if s.Port, last = freePort(); last != nil {
			break
		}
		if last = s.start(); last == nil {
			return s
		}
	}
	tb.Fatalf("pgtest: starting postgres: %v", last)
	return nil
}

// DSN returns a connection string for the server's postgres database as
// its superuser, postgres, who needs no password.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

// Stop shuts the server down as an operator would (a fast shutdown: open
// transactions are rolled back, connections closed, a checkpoint written)
// and waits for it to exit; a paused server is resumed to do so. Stop on a
// stopped server does nothing.
func (s *Server) Stop() {
	s.tb.Helper()
	cmd, exited := s.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)      // SIGINT is the postmaster's fast shutdown
	signalAll(cmd.Process.Pid, syscall.SIGCONT) // a paused server acts on it only once continued
	select {
	case <-exited:
	case <-time.After(startTimeout):
		signalAll(cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		s.tb.Fatalf("pgtest: postgres on port %d did not shut down within %v; killed it", s.Port, startTimeout)
	}
}

// Kill kills the server and every one of its processes with SIGKILL, as a
// crash would, and waits for the postmaster to exit. Committed data
// survives; Start recovers it. Kill on a stopped server does nothing.
func (s *Server) Kill() {
	cmd, exited := s.take()
	if cmd == nil {
		return
	}
	signalAll(cmd.Process.Pid, syscall.SIGKILL)
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
		s.tb.Fatalf("pgtest: Start on port %d: the server is running; Stop or Kill it first", s.Port)
	}
	var err error
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		// A killed server's processes may take a moment to release its
		// shared memory and lock file; the port may linger too.
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("pgtest: starting postgres again on port %d: %v", s.Port, err)
}

// Pause stops every process of the server with SIGSTOP: connections stay
// open and nothing answers, as with a hung server. Resume undoes it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		signalAll(s.cmd.Process.Pid, sig)
	}
}

// signalAll sends sig to the postmaster pid, its process group, and each of
// its children, which lead sessions of their own. The children are listed
// before the postmaster is signalled, since a killed postmaster's children
// pass to init at once, and again after, since a stopped one may have
// started another in between.
func signalAll(pid int, sig syscall.Signal) {
	kids := children(pid)
	_ = syscall.Kill(-pid, sig)
	for _, child := range append(kids, children(pid)...) {
		_ = syscall.Kill(child, sig)
	}
}

// take returns the running postmaster, if any, and marks the server stopped.
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

// initdb creates the data directory, with a superuser postgres who
// connects without a password.
func (s *Server) initdb() error {
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return err
		}
	}
	cmd := s.command("initdb", "-D", filepath.Join(s.dir, "data"), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// start starts the postmaster on s.Port and waits until it accepts
// connections on its own socket, which only it can have made: a reply on
// the TCP port could come from another test's server that holds the port.
func (s *Server) start() error {
	logf, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := s.command("postgres", "-D", filepath.Join(s.dir, "data"),
		"-p", strconv.Itoa(s.Port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "shared_buffers=16MB",
		"-c", "max_connections=200", "-c", "dynamic_shared_memory_type=mmap")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Setpgid = true // its own group, which signalAll signals
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for {
		if s.ready() {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres on port %d exited: %s", s.Port, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			signalAll(cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return fmt.Errorf("postgres on port %d did not accept connections within %v: %s", s.Port, startTimeout, s.logTail())
		}
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// ready reports whether the server accepts connections on its socket.
func (s *Server) ready() bool {
	cmd := exec.Command(filepath.Join(s.bin, "pg_isready"), "-q", "-h", s.dir, "-p", strconv.Itoa(s.Port), "-t", "1")
	return cmd.Run() == nil
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

// command returns a command running the named server binary, as the
// postgres user when the test runs as root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// logTail returns the end of the server's log, for an error message.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return strings.TrimSpace(string(b))
}

// binDir returns the directory of the newest server binaries installed.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "postgres"))
		return err != nil
	})
	if len(dirs) > 0 {
		version := func(d string) int {
			v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			return v
		}
		slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
		return dirs[len(dirs)-1], nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin nor postgres on PATH")
}

// serverUser returns the credentials to run the server with: those of the
// postgres user when the test runs as root, whom the server refuses, else
// nil (the test's own user).
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("the test runs as root, which postgres refuses, and there is no postgres user to run it as (%v): run scripts/test, which installs Debian's postgresql package and with it the user", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user postgres has a non-numeric uid %q or gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// AddRole creates a login role that must give password, and returns a
// connection URL for it to the postgres database, password included. From
// then on TCP connections of every role but postgres authenticate with
// SCRAM-SHA-256, as on a production server, so that a test can give wrong
// credentials; postgres still needs none, and DSN still works. The role
// may create tables in the public schema. role is a plain identifier
// (a-z, 0-9, _). AddRole fails the test if the server is not running or
// the change does not take effect within startTimeout.
func (s *Server) AddRole(role, password string) string {
	s.tb.Helper()
	if strings.Trim(role, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || role == "" {
		s.tb.Fatalf("pgtest: AddRole(%q): want a plain identifier", role)
	}
	pw := strings.ReplaceAll(password, "'", "''")
	if out, err := s.psql("postgres", "",
		"CREATE ROLE "+role+" LOGIN PASSWORD '"+pw+"'",
		"GRANT CREATE ON SCHEMA public TO "+role); err != nil {
		s.tb.Fatalf("pgtest: AddRole: %v: %s", err, out)
	}
	hba := "local all all trust\n" +
		"host all postgres 127.0.0.1/32 trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(s.dir, "data", "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		s.tb.Fatalf("pgtest: AddRole: %v", err)
	}
	s.signal(syscall.SIGHUP) // the postmaster rereads pg_hba.conf
	// Before the reload a wrong password is let in (trust); after it, it
	// is refused.
	deadline := time.Now().Add(startTimeout)
	for {
		out, err := s.psql(role, password+"-wrong", "SELECT 1")
		if err != nil && strings.Contains(out, "password authentication failed") {
			break
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("pgtest: AddRole: the server still lets %s in with a wrong password after %v: %s", role, startTimeout, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/postgres?sslmode=disable", role, url.QueryEscape(password), s.Port)
}

// psql runs statements as role over TCP, with password if not empty, or
// over the server's socket without one, and returns psql's output.
func (s *Server) psql(role, password string, statements ...string) (string, error) {
	host := s.dir
	if password != "" {
		host = "127.0.0.1"
	}
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", strconv.Itoa(s.Port), "-U", role, "-d", "postgres"}
	for _, st := range statements {
		args = append(args, "-c", st)
	}
	cmd := s.command("psql", args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=5")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
