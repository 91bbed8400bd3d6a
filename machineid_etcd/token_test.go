package machineid_etcd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/machineid"
)

// TestTokenTrace calls the store as a Holder does after a Take whose
// answer was lost: Take again with the same token finds the ID it took,
// with the same After, and Release with id -1 frees it.
func TestTokenTrace(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	s := &store{client: client, settings: settings{prefix: "trace/"}, held: map[string]*holding{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claim := func(token string) machineid.Claim {
		now := time.Now()
		return machineid.Claim{Token: token, Lo: 0, Hi: 1, TTL: time.Second, Now: now, Until: now.Add(time.Second)}
	}
	_, err = client.Put(ctx, s.markKey(0), "1000")
	require.NoError(t, err)

	first, err := s.Take(ctx, claim("a"))
	require.NoError(t, err, "Take")
	again, err := s.Take(ctx, claim("a"))
	require.NoError(t, err, "Take again with the same token")
	assert.Equal(t, first.ID, again.ID, "ID of the second Take; want the one the token holds")
	other, err := s.Take(ctx, claim("b"))
	require.NoError(t, err, "Take with another token")
	assert.NotEqual(t, first.ID, other.ID, "another token's ID")

	require.NoError(t, s.Release(ctx, claim("a"), -1, time.Time{}), "Release(-1)")
	resp, err := client.Get(ctx, s.ownerKey(first.ID))
	require.NoError(t, err)
	assert.Empty(t, resp.Kvs, "owner key of %d after Release(-1)", first.ID)
	assert.Empty(t, s.held["a"], "the store's state for a released token")
	got, err := s.Take(ctx, claim("c"))
	require.NoError(t, err, "Take after Release(-1)")
	assert.Equal(t, first.ID, got.ID, "a third token's ID; want the one freed")
	assert.False(t, got.After.Before(again.Until), "After = %v; want at or past the freed holding's Until %v", got.After, again.Until)
}

// TestTakeAfterTheLeaseRanOut has the token's etcd lease run out between
// its renewal and the claim, as it does when etcd answers slower than the
// TTL: Take grants another lease and claims on it, where it once failed
// with etcd's "requested lease not found" (TestProcessesKilled, under
// load).
func TestTakeAfterTheLeaseRanOut(t *testing.T) {
	t.Parallel()
	e := etcdtest.Start(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	s := &store{client: client, settings: settings{prefix: "ranout/"}, held: map[string]*holding{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()
	c := machineid.Claim{Token: "a", Lo: 0, Hi: 1, TTL: time.Second, Now: now, Until: now.Add(time.Second)}
	_, err = s.Take(ctx, c)
	require.NoError(t, err, "Take")
	ran := s.held["a"].lease
	client.Lease = runOut{client.Lease}
	g, err := s.Take(ctx, c)
	require.NoError(t, err, "Take again, the lease running out after its renewal")
	assert.NotEqual(t, ran, s.held["a"].lease, "the token's etcd lease; want a new one")
	resp, err := client.Get(ctx, s.ownerKey(g.ID))
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "owner key of %d", g.ID)
	assert.Equal(t, "a", string(resp.Kvs[0].Value))
	assert.Equal(t, int64(s.held["a"].lease), resp.Kvs[0].Lease, "the owner key is on the new lease")
}

// runOut is an etcd Lease whose leases run out as soon as they are renewed.
type runOut struct{ clientv3.Lease }

func (l runOut) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	resp, err := l.Lease.KeepAliveOnce(ctx, id)
	if err == nil {
		_, err = l.Lease.Revoke(ctx, id)
	}
	return resp, err
}
