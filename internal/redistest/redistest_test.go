package redistest

import "testing"

// TestStartRefusesAnotherServersPort starts a second server on a port a
// first one already holds. The second cannot bind, but the first answers in
// the meantime; start must notice the reply is not from its own process.
func TestStartRefusesAnotherServersPort(t *testing.T) {
	first := Start(t)
	second := &Server{Addr: first.Addr, Port: first.Port, tb: t, dir: t.TempDir()}
	err := second.start(binary(t))
	if err == nil {
		second.Stop()
		t.Fatalf("start on port %d, held by another server, succeeded", first.Port)
	}
	t.Logf("start on a held port: %v", err)
	if pid, err := processID(first.Addr); err != nil || pid != first.cmd.Process.Pid {
		t.Fatalf("after the failed start, port %d answers as pid %d (%v); want the first server, pid %d", first.Port, pid, err, first.cmd.Process.Pid)
	}
}
