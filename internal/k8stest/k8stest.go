// Package k8stest starts a real kube-apiserver on loopback for tests, on a
// real etcd of its own (internal/etcdtest), with static-token
// authentication and RBAC authorization, as a cluster's control plane has
// them. There is no controller manager and no kubelet: objects are stored
// and served, pods never run.
//
// Each server runs on a free port with a CA, a serving certificate and a
// service-account signing key made for it, answers once /readyz does, can be
// stopped and started again on the same address with its data, and is killed
// with its etcd when the test ends.
//
// The binary is kube-apiserver [Version], which Debian does not ship:
// scripts/kube-apiserver builds it once from the Go module proxy into the
// user's cache directory, where this package looks for it. If it is missing
// the test fails, never skips: run scripts/test, which builds it.
package k8stest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/internal/taillog"
)

// Version is the kube-apiserver release the tests run, which
// scripts/kube-apiserver builds; the two must agree.
const Version = "v1.33.5"

// startTimeout bounds how long the apiserver may take to answer /readyz. It
// takes about 2s on an idle machine; CI shares its cores.
const startTimeout = 60 * time.Second

// The identities of the static token file. Every Server has them, each with
// a random token of its own (see [Server.Token]).
const (
	// Admin is in the group system:masters, which RBAC lets do anything.
	Admin = "admin"
	// Ringflake is the user a test binds to roles to stand for the ID
	// service; it has no bindings of its own.
	Ringflake = "ringflake-sa"
	// Nobody is a user no test should bind: every request of it that RBAC
	// judges is forbidden.
	Nobody = "nobody"
)

// User is a further identity for the static token file, which the
// apiserver reads only at start.
type User struct {
	Name   string
	Groups []string
}

// Server is one kube-apiserver process with its etcd. Its methods are safe
// for concurrent use, except that calls of Stop, Start and Restart must not
// overlap one another.
type Server struct {
	// URL is the apiserver's address, https://127.0.0.1:port. It stays the
	// same across Stop and Start.
	URL string
	// CA is the PEM certificate of the CA that signed the apiserver's
	// serving certificate, and CAFile a file that holds it.
	CA     []byte
	CAFile string
	// Etcd is the apiserver's storage; it runs until the test ends.
	Etcd *etcdtest.Cluster

	tb     testing.TB
	bin    string
	dir    string            // the temporary directory: keys, token file, kubeconfigs
	keys   *keys             // written once by Start
	client *http.Client      // trusts the CA; written once by Start
	tokens map[string]string // user name to token; written once by Start
	out    *taillog.Log      // the apiserver's output, for failure messages

	mu     sync.Mutex    // protects cmd and exited
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed when cmd has exited
}

// Start starts etcd and a kube-apiserver on free loopback ports, waits until
// the apiserver is ready, and registers both processes' end with
// tb.Cleanup. The token file holds [Admin], [Ringflake], [Nobody] and users.
// Start fails tb if the binary is missing or the server does not come up.
func Start(tb testing.TB, users ...User) *Server {
	tb.Helper()
	s := &Server{tb: tb, bin: binary(tb), dir: tb.TempDir(), out: &taillog.Log{}}
	var err error
	if s.keys, err = makeKeys(s.dir); err != nil {
		tb.Fatalf("k8stest: making keys: %v", err)
	}
	s.CA, s.CAFile = s.keys.caPEM, s.keys.caFile
	s.client = newClient(s.CA)
	all := append([]User{
		{Name: Admin, Groups: []string{"system:masters"}},
		{Name: Ringflake},
		{Name: Nobody},
	}, users...)
	if s.tokens, err = writeTokens(s.keys.tokenFile, all); err != nil {
		tb.Fatalf("k8stest: %v", err)
	}
	s.Etcd = etcdtest.Start(tb)
	tb.Cleanup(s.kill)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("k8stest: output of kube-apiserver (%s):\n%s", s.URL, s.out.String())
		}
	})
	for range 5 { // another process may take the port between probe and bind
		s.URL = "https://127.0.0.1:" + strconv.Itoa(freePort(tb))
		if err = s.launch(); err == nil {
			return s
		}
		s.kill()
	}
	tb.Fatalf("k8stest: starting kube-apiserver: %v", err)
	return nil
}

// binary returns kube-apiserver's path or fails tb. RINGFLAKE_KUBE_APISERVER
// overrides the place scripts/kube-apiserver builds it in.
func binary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("RINGFLAKE_KUBE_APISERVER")
	if bin == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			tb.Fatalf("k8stest: %v", err)
		}
		bin = filepath.Join(cache, "ringflake", "kube-apiserver-"+Version)
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("k8stest: kube-apiserver %s is missing (%v); these tests need a real server: run scripts/test, which builds it once with scripts/kube-apiserver", Version, err)
	}
	return bin
}

// writeTokens writes the static token file, one random token a user, and
// returns the tokens by user name.
func writeTokens(path string, users []User) (map[string]string, error) {
	tokens := make(map[string]string, len(users))
	var b strings.Builder
	for _, u := range users {
		if _, dup := tokens[u.Name]; dup || u.Name == "" || strings.ContainsAny(u.Name, ",\"\n") {
			return nil, fmt.Errorf("user name %q is empty, given twice, or has a comma, quote or newline", u.Name)
		}
		tokens[u.Name] = randomToken()
		// token,user,uid,"group1,group2"
		fmt.Fprintf(&b, "%s,%s,%s,%q\n", tokens[u.Name], u.Name, "uid-"+u.Name, strings.Join(u.Groups, ","))
	}
	return tokens, os.WriteFile(path, []byte(b.String()), 0o600)
}

// Token returns user's bearer token. It fails the test if the token file
// has no such user.
func (s *Server) Token(user string) string {
	s.tb.Helper()
	tok, ok := s.tokens[user]
	if !ok {
		s.tb.Fatalf("k8stest: no user %q in the token file; pass it to Start", user)
	}
	return tok
}

// Stop ends the apiserver with SIGTERM, as a rolling restart would, and
// waits for it to exit; etcd keeps running. Stop on a stopped server does
// nothing.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

// Start starts a stopped apiserver again on its address, with its keys and
// tokens, and waits until it is ready. It fails the test if the server does
// not come up.
func (s *Server) Start() {
	s.tb.Helper()
	var err error
	for range 20 { // the old listener may linger briefly
		if err = s.launch(); err == nil {
			return
		}
		s.kill()
		time.Sleep(100 * time.Millisecond)
	}
	s.tb.Fatalf("k8stest: starting kube-apiserver again on %s: %v", s.URL, err)
}

// Restart stops the apiserver and starts it again on the same address;
// what it stored is kept in etcd.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.Start()
}

// launch starts the process and waits until it is ready. It returns an
// error if the process exits first, as it does when the port is taken.
func (s *Server) launch() error {
	if err := s.spawn(); err != nil {
		return err
	}
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for {
		// Only our own process knows the admin token, so a 200 cannot come
		// from another test's server on the same port.
		err := s.ready()
		select {
		case <-exited:
			return fmt.Errorf("kube-apiserver exited: %s", s.out.String())
		default:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver on %s not ready within %v: %w", s.URL, startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// spawn starts the process; it does not wait for it.
func (s *Server) spawn() error {
	port := s.URL[strings.LastIndexByte(s.URL, ':')+1:]
	k := s.keys
	cmd := exec.Command(s.bin,
		"--etcd-servers="+strings.Join(s.Etcd.Endpoints(), ","),
		"--bind-address=127.0.0.1", "--secure-port="+port,
		// Without it the apiserver looks for a non-loopback interface to
		// advertise, which a sandbox may not have.
		"--advertise-address=127.0.0.1",
		"--tls-cert-file="+k.certFile, "--tls-private-key-file="+k.keyFile,
		"--token-auth-file="+k.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+k.saKeyFile,
		"--service-account-signing-key-file="+k.saKeyFile,
		"--service-cluster-ip-range=10.96.0.0/16",
		// The "kubernetes" Service's endpoints would name 127.0.0.1, which
		// Endpoints validation refuses; the tests have no use for them.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// Pause stops the API server's process with SIGSTOP, as a hung server
// that keeps its connections open, until Resume; etcd runs on.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused API server run again with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// kill ends the apiserver with SIGKILL, for the test's end.
func (s *Server) kill() { s.end(syscall.SIGKILL) }

func (s *Server) end(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("k8stest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
