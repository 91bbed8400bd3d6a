package mysqltest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestStopStartKill(t *testing.T) {
	s := Start(t)
	if !strings.Contains(s.DSN(), ":"+strconv.Itoa(s.Port)+")/") {
		t.Fatalf("DSN() = %q; want one with port %d", s.DSN(), s.Port)
	}
	if !s.ready() {
		t.Fatal("ready() = false after Start; want true")
	}
	s.Stop()
	if s.ready() {
		t.Fatal("ready() = true after Stop; want false")
	}
	s.Start()
	s.Kill()
	if s.ready() {
		t.Fatal("ready() = true after Kill; want false")
	}
	s.Start() // crash recovery
	if !s.ready() {
		t.Fatal("ready() = false after a Start that follows Kill; want true")
	}
	s.Pause()
	if s.ready() {
		t.Fatal("ready() = true while paused; want false")
	}
	s.Stop() // resumes it to shut down
	s.Start()
}

// Two servers at once, each from its own copy of the data directory.
func TestTwoServers(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Port == b.Port || !a.ready() || !b.ready() {
		t.Fatalf("two servers: ports %d and %d, ready %v and %v", a.Port, b.Port, a.ready(), b.ready())
	}
}

// Shared hands each caller a database of its own on one server.
func TestShared(t *testing.T) {
	a, b := Shared(t), Shared(t)
	if a == b || a[:strings.LastIndexByte(a, '/')] != b[:strings.LastIndexByte(b, '/')] {
		t.Fatalf("Shared: %q and %q; want two databases on one server", a, b)
	}
	out, err := shared.srv.Client("SHOW DATABASES")
	if err != nil || !strings.Contains(out, a[strings.LastIndexByte(a, '/')+1:]) {
		t.Fatalf("SHOW DATABASES: %v: %q", err, out)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}
