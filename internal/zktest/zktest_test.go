package zktest

import "testing"

// A standalone server serves as such, and comes back with its data after a
// restart.
func TestStart(t *testing.T) {
	t.Parallel()
	e := Start(t)
	if mode, err := e.Servers[0].Mode(); mode != "standalone" {
		t.Fatalf("Mode() = %q, %v; want standalone", mode, err)
	}
	e.Restart()
	if mode, err := e.Servers[0].Mode(); mode != "standalone" {
		t.Fatalf("after Restart, Mode() = %q, %v; want standalone", mode, err)
	}
}

// An ensemble has one leader, and elects another when it is killed.
func TestEnsembleFailover(t *testing.T) {
	t.Parallel()
	e := StartEnsemble(t)
	old := e.Leader()
	old.Kill()
	if l := e.Leader(); l == old {
		t.Fatalf("Leader() = server %d, the one killed; want another", l.ID)
	}
	old.Start()
	e.WaitServing()
	if mode, err := old.Mode(); mode != "follower" {
		t.Fatalf("the old leader, started again: Mode() = %q, %v; want follower", mode, err)
	}
}
