package pgtest

import (
	"strconv"
	"strings"
	"testing"
)

func TestStopStartKill(t *testing.T) {
	s := Start(t)
	if !strings.Contains(s.DSN(), ":"+strconv.Itoa(s.Port)+"/") {
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

func TestAddRole(t *testing.T) {
	s := Start(t)
	dsn := s.AddRole("app", "s3cret")
	if want := "postgres://app:s3cret@127.0.0.1:" + strconv.Itoa(s.Port) + "/postgres?sslmode=disable"; dsn != want {
		t.Fatalf("AddRole = %q; want %q", dsn, want)
	}
	if out, err := s.psql("app", "s3cret", "CREATE TABLE t (x int)"); err != nil {
		t.Fatalf("app with its password: %v: %s", err, out)
	}
	if out, err := s.psql("app", "wrong", "SELECT 1"); err == nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("app with a wrong password: err %v, output %q; want refused", err, out)
	}
	if out, err := s.psql("postgres", "", "SELECT 1"); err != nil {
		t.Fatalf("postgres over the socket: %v: %s", err, out)
	}
	if !s.ready() {
		t.Fatal("ready() = false after AddRole")
	}
}
