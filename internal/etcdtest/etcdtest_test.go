package etcdtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/ringflake/ringflake/internal/taillog"
)

// TestSingleRestartKeepsData restarts a one-member cluster and checks that
// it answers again as the same member, its data directory kept.
func TestSingleRestartKeepsData(t *testing.T) {
	c := Start(t)
	m := c.Members[0]
	before, err := m.status()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	c.Restart()
	after, err := m.status()
	if err != nil {
		t.Fatalf("status after Restart: %v", err)
	}
	if after.Header.MemberID != before.Header.MemberID {
		t.Fatalf("member ID after Restart = %s; want %s (the same data)", after.Header.MemberID, before.Header.MemberID)
	}
}

// TestClusterLeaderKill kills the leader of a three-member cluster and
// checks that the other two elect a new one, and that the killed member
// rejoins when started again.
func TestClusterLeaderKill(t *testing.T) {
	c := StartCluster(t)
	old := c.Leader()
	old.Kill()
	if old.Running() {
		t.Fatalf("%s runs after Kill", old.Name)
	}
	start := time.Now()
	next := c.Leader()
	if next == old {
		t.Fatalf("Leader() = the killed member %s", old.Name)
	}
	t.Logf("new leader %s after %v", next.Name, time.Since(start))
	old.Start()
	c.WaitHealthy()
	if got := c.Leader(); got == old {
		t.Logf("the restarted member %s leads again", old.Name)
	}
}

// TestStartRefusesAnotherClustersPort starts a member on a client port that
// a running cluster already holds: it cannot bind and exits, and launch must
// not take the other cluster for its own.
func TestStartRefusesAnotherClustersPort(t *testing.T) {
	first := Start(t)
	c := &Cluster{tb: t}
	m := &Member{
		Name:      "intruder",
		ClientURL: first.Members[0].ClientURL,
		PeerURL:   "http://127.0.0.1:" + strconv.Itoa(freePort(t)),
		tb:        t,
		dir:       dataDir(t),
		out:       &taillog.Log{},
	}
	t.Cleanup(m.Kill)
	m.initial = m.Name + "=" + m.PeerURL
	c.Members = []*Member{m}
	m.spawn(binary(t))
	err := m.waitListening()
	if err == nil {
		err = c.waitHealthy()
	}
	if err == nil {
		err = m.isSelf()
	}
	if err == nil {
		t.Fatalf("a member on %s, held by another cluster, passed as started", m.ClientURL)
	}
	t.Logf("start on a held port: %v", err)
}
