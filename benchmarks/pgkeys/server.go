package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a PostgreSQL server of the benchmark's own, started as
// internal/pgtest starts the tests' (which needs a testing.TB): Debian's
// newest binaries, a fresh data directory in a temporary directory, a free
// loopback port, and the postgres user when run as root. Unlike the tests'
// server it keeps fsync and full-page writes on, as production does, since
// their cost is part of what is measured.
type server struct {
	port int
	bin  string
	dir  string
	cred *syscall.Credential
	cmd  *exec.Cmd
}

// startServer starts a server with the given settings (-c name=value).
func startServer(settings map[string]string) (*server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, which postgres refuses, and there is no postgres user: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if s.dir, err = os.MkdirTemp("", "pgkeys"); err != nil {
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return nil, err
		}
	}
	if out, err := s.command("initdb", "-D", filepath.Join(s.dir, "data"), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		s.remove()
		return nil, fmt.Errorf("initdb: %v: %s", err, strings.TrimSpace(string(out)))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.remove()
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1"}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	logf, err := os.Create(filepath.Join(s.dir, "log"))
	if err != nil {
		s.remove()
		return nil, err
	}
	defer logf.Close()
	s.cmd = s.command("postgres", args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr.Setpgid = true
	if err := s.cmd.Start(); err != nil {
		s.remove()
		return nil, err
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if exec.Command(filepath.Join(s.bin, "pg_isready"), "-q", "-h", s.dir, "-p", strconv.Itoa(s.port), "-t", "1").Run() == nil {
			return s, nil
		}
	}
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	s.remove()
	return nil, fmt.Errorf("postgres did not accept connections within 60s: %s", b)
}

// dsn is a connection string for the postgres database as its superuser.
func (s *server) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// version is the server binaries' major version.
func (s *server) version() string { return filepath.Base(filepath.Dir(s.bin)) }

// remove stops the server, if it runs, and deletes its directory.
func (s *server) remove() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT) // a fast shutdown
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	_ = os.RemoveAll(s.dir)
}

func (s *server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// binDir returns the directory of the newest PostgreSQL server binaries.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL server under /usr/lib/postgresql/*/bin: install Debian's postgresql package (scripts/test does)")
	}
	major := func(p string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p)))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return major(a) - major(b) })
	return filepath.Dir(dirs[len(dirs)-1]), nil
}
