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
