package machineid_k8s

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/machineid"
)

// TestTokenTrace calls the store as a Holder does after a Take whose
// answer was lost: Take again with the same token finds the ID it took,
// with the same After, and Release with id -1 frees it, keeping its mark.
func TestTokenTrace(t *testing.T) {
	t.Parallel()
	srv := k8stest.Start(t)
	srv.CreateNamespace("trace")
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, BearerToken: srv.Token(k8stest.Admin), TLSClientConfig: rest.TLSClientConfig{CAData: srv.CA}})
	require.NoError(t, err)
	leases := client.CoordinationV1().Leases("trace")
	s := &store{leases: leases, settings: settings{namespace: "trace", prefix: "trace-", identity: "pod"},
		seen: map[string]sighting{}, held: map[string]*coordinationv1.Lease{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claim := func(token string) machineid.Claim {
		now := time.Now()
		return machineid.Claim{Token: token, Lo: 0, Hi: 1, TTL: time.Second, Margin: 200 * time.Millisecond, Now: now, Until: now.Add(time.Second)}
	}
	old := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "trace-0", Annotations: map[string]string{markKey: formatTime(old)}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	first, err := s.Take(ctx, claim("a"))
	require.NoError(t, err, "Take")
	assert.Equal(t, int64(0), first.ID, "the released ID 0, whose mark is long past")
	assert.True(t, first.After.Equal(old), "After = %v; want the mark found, %v", first.After, old)
	delete(s.held, "a") // the answer was lost
	again, err := s.Take(ctx, claim("a"))
	require.NoError(t, err, "Take again with the same token")
	assert.Equal(t, first.ID, again.ID, "ID of the second Take; want the one the token holds")
	assert.True(t, again.After.Equal(first.After), "After of the second Take = %v; want the first's, %v", again.After, first.After)
	other, err := s.Take(ctx, claim("b"))
	require.NoError(t, err, "Take with another token")
	assert.NotEqual(t, first.ID, other.ID, "another token's ID")

	require.NoError(t, s.Release(ctx, claim("a"), -1, time.Time{}), "Release(-1)")
	l, err := leases.Get(ctx, "trace-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, l.Spec.HolderIdentity, "holderIdentity after Release(-1)")
	assert.Equal(t, formatTime(again.Until), l.Annotations[markKey], "mark after Release(-1) with no issued time; want the last Until kept")
	assert.Empty(t, s.held["a"], "the store's state for a released token")
	got, err := s.Take(ctx, claim("c"))
	require.NoError(t, err, "Take after Release(-1)")
	assert.Equal(t, first.ID, got.ID, "a third token's ID; want the one freed")
	assert.False(t, got.After.Before(again.Until), "After = %v; want at or past the freed holding's Until %v", got.After, again.Until)
}

// TestDefaults reads the namespace from a service account mount, and
// falls back on "default" without one; the identity is $POD_NAME.
func TestDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "namespace")
	assert.Equal(t, "default", defaultNamespace(file), "no mount")
	require.NoError(t, os.WriteFile(file, []byte("ids\n"), 0o600))
	assert.Equal(t, "ids", defaultNamespace(file), "the mount's namespace")
	t.Setenv("POD_NAME", "ringflake-7d9f-abcde")
	assert.Equal(t, "ringflake-7d9f-abcde", defaultIdentity())
	t.Setenv("POD_NAME", "")
	host, _ := os.Hostname()
	assert.Equal(t, host, defaultIdentity(), "without $POD_NAME, the hostname")
}

// TestSeconds rounds TTLs up to whole Lease seconds.
func TestSeconds(t *testing.T) {
	for _, tt := range []struct {
		ttl  time.Duration
		want int32
	}{{time.Second, 1}, {1001 * time.Millisecond, 2}, {1500 * time.Millisecond, 2}, {10 * time.Second, 10}, {time.Hour, 3600}} {
		assert.Equal(t, tt.want, seconds(tt.ttl), "seconds(%v)", tt.ttl)
	}
}
