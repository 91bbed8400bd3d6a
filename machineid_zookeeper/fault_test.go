package machineid_zookeeper_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/zktest"
	"github.com/ringflake/ringflake/machineid"
)

// TestPartitionedHolder cuts a holder off from ZooKeeper, as a network
// partition does, while another waits for its only ID. The cut holder must
// report its loss before the other gets the ID, which it may only once
// ZooKeeper has expired the cut holder's session, and with an After at or
// past every Until the cut holder was given. When the partition heals, the
// cut holder's client finds its session expired and opens a new one
// (go-zookeeper does so by itself): the holder must not take that for its
// old lease, and must not hold the ID while the other does.
func TestPartitionedHolder(t *testing.T) {
	e := zktest.Start(t)
	p := newProxy(t, e.Addrs()[0])
	lg := newLedger()
	cut := newHolder(t, []string{p.addr()}, machineid.WithRange(0, 0))
	cutRec := record(t, cut)
	lg.issue(t, "cut", cut)
	_, i := cutRec.waitFor(t, "the holder holds ID 0", 0, 10*time.Second, held)

	p.partition()
	loss, _ := cutRec.waitFor(t, "the cut holder reports its loss", i, 2*ttl, lost)
	var lastUntil time.Time
	for _, r := range cutRec.all() {
		if r.Held && r.Until.After(lastUntil) {
			lastUntil = r.Until
		}
	}
	other := newHolder(t, e.Addrs(), machineid.WithRange(0, 0))
	_, err := other.MachineID(ctxFor(t, 4*ttl))
	require.NoError(t, err, "the other holder should take ID 0 once ZooKeeper expires the cut holder's session")
	took := time.Now()
	assert.True(t, loss.at.Before(took), "the cut holder reported its loss at %v, after the other took its ID at %v", loss.at, took)
	assert.False(t, other.Lease().After.Before(lastUntil), "the other's After %v is before the cut holder's last Until %v", other.Lease().After, lastUntil)
	lg.issue(t, "other", other)

	p.heal()
	// The cut holder's client reconnects, hears that its session expired,
	// and opens another: its Holder tries to take ID 0 again, and must find
	// it held.
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) && lg.issued("other") < 100 {
		time.Sleep(10 * time.Millisecond)
	}
	// Its renewal finds the node made anew, and its take the ID held.
	cutRec.waitFor(t, "the healed holder waits for its ID, held by the other", 0, 5*ttl, func(l machineid.Lease) bool {
		return errors.Is(l.Err, machineid.ErrExhausted)
	})
	for _, r := range cutRec.all() {
		if r.at.After(loss.at) {
			assert.False(t, r.Held, "the cut holder held ID %d again at %v, while the other held it", r.ID, r.at)
		}
	}
	assert.True(t, other.Lease().Held, "the other should still hold ID 0: %+v", other.Lease())
	assert.Empty(t, lg.duplicates())
}

// TestLeaderKilled runs three holders on an ensemble, issuing, and kills
// the leader; the other two servers elect another. ZooKeeper keeps the
// sessions across the election, so each holder keeps its ID, or loses it
// for the election and gets it back; and no ID is issued twice. The old
// leader then starts again and rejoins.
func TestLeaderKilled(t *testing.T) {
	e := zktest.StartEnsemble(t)
	lg := newLedger()
	names := []string{"a", "b", "c"}
	recs := make([]*recorder, len(names))
	holders := make([]*machineid.Holder, len(names))
	for i, name := range names {
		holders[i] = newHolder(t, e.Addrs(), machineid.WithRange(0, 3))
		recs[i] = record(t, holders[i])
		lg.issue(t, name, holders[i])
		recs[i].waitFor(t, name+" holds an ID", 0, 10*time.Second, held)
	}
	before := make([]int64, len(names))
	for i, h := range holders {
		before[i] = h.Lease().ID
	}
	leader := e.Leader()
	leader.Kill()
	t.Logf("killed the leader, server %d", leader.ID)
	next := e.Leader()
	require.NotEqual(t, leader, next)
	counts := make([]int, len(names))
	for i, name := range names {
		counts[i] = lg.issued(name)
	}
	leader.Start()
	e.WaitServing()
	for i, name := range names {
		deadline := time.Now().Add(3 * ttl)
		for time.Now().Before(deadline) && lg.issued(name) < counts[i]+100 {
			time.Sleep(10 * time.Millisecond)
		}
		assert.GreaterOrEqual(t, lg.issued(name), counts[i]+100, "%s should issue again after the failover", name)
		assert.Equal(t, before[i], holders[i].Lease().ID, "%s should keep its ID: ZooKeeper keeps its session", name)
	}
	assert.Empty(t, lg.duplicates())
}

// TestSessionExpiresUnderPause pauses a standalone server (SIGSTOP) for
// twice the TTL while two holders issue on it. Each must report its loss
// while the server is paused, by its own deadline; once the server runs
// again, it may expire their sessions, or hear from them first: either
// way each holds an ID again, and no ID is issued twice.
func TestSessionExpiresUnderPause(t *testing.T) {
	e := zktest.Start(t)
	lg := newLedger()
	names := []string{"a", "b"}
	recs := make([]*recorder, len(names))
	for i, name := range names {
		h := newHolder(t, e.Addrs(), machineid.WithRange(0, 1))
		recs[i] = record(t, h)
		lg.issue(t, name, h)
		recs[i].waitFor(t, name+" holds an ID", 0, 10*time.Second, held)
	}
	from := make([]int, len(names))
	for i := range names {
		from[i] = len(recs[i].all())
	}
	resume := e.Pause()
	paused := time.Now()
	for i, name := range names {
		r, _ := recs[i].waitFor(t, name+" reports its loss while the server is paused", from[i], 2*ttl, lost)
		assert.Less(t, r.at.Sub(paused), ttl, "%s should report its loss within a TTL of the pause", name)
	}
	time.Sleep(2*ttl - time.Since(paused))
	resume()
	for i, name := range names {
		recs[i].waitFor(t, name+" holds an ID again after the pause", from[i], 5*ttl, held)
	}
	assert.Empty(t, lg.duplicates())
}

// TestRefusals checks, on one server, a TTL longer than the servers'
// maxSessionTimeout (60s in zktest), which they would cut down to a
// session that could expire before the holder's deadline, so MachineID
// refuses it; and a full range, where a newcomer's error names the holder's
// host and process.
func TestRefusals(t *testing.T) {
	e := zktest.Start(t)
	t.Run("TTL past the servers' maximum", func(t *testing.T) {
		h := newHolder(t, e.Addrs(), machineid.WithTTL(2*time.Minute))
		_, err := h.MachineID(ctxFor(t, 10*time.Second))
		require.Error(t, err)
		assert.ErrorIs(t, err, ringflake.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "maxSessionTimeout")
		assert.Contains(t, err.Error(), "1m0s")
	})
	t.Run("full range", func(t *testing.T) {
		first := newHolder(t, e.Addrs(), machineid.WithRange(5, 5))
		_, err := first.MachineID(ctxFor(t, 10*time.Second))
		require.NoError(t, err)
		second := newHolder(t, e.Addrs(), machineid.WithRange(5, 5))
		_, err = second.MachineID(ctxFor(t, time.Second))
		require.True(t, errors.Is(err, machineid.ErrExhausted), "MachineID = %v; want machineid.ErrExhausted", err)
		assert.Contains(t, err.Error(), "machine IDs 5..5 held")
		assert.True(t, strings.Contains(err.Error(), "5 by ") && strings.Contains(err.Error(), " pid "), "the error %q should name the holder", err)
	})
}
