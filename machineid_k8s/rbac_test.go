package machineid_k8s_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/machineid"
)

// TestRBAC applies deploy/kubernetes with kubectl, as a user would, and
// leases with the ServiceAccount's own token, as a pod would: the Role
// allows everything the store does, through renewals and the release. An
// identity without the binding, or in another namespace, is refused with
// the API server's words (verb, resource, namespace) and a pointer to the
// Role.
func TestRBAC(t *testing.T) {
	t.Parallel()
	s := k8stest.Start(t)
	s.CreateNamespace("ringflake")
	s.CreateNamespace("other")
	kubectl, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl is not on PATH: run scripts/test, which installs it (Debian package kubernetes-client)")
	out, err := exec.Command(kubectl, "--kubeconfig", s.Kubeconfig(k8stest.Admin), "--cache-dir", t.TempDir(),
		"apply", "-n", "ringflake", "-f", "../deploy/kubernetes/").CombinedOutput()
	require.NoError(t, err, "kubectl apply: %s", out)
	sa := s.ServiceAccountToken("ringflake", "ringflake")

	t.Run("bound", func(t *testing.T) {
		// A long TTL: this is about what the Role allows, and the call
		// timeout (TTL/3) bounds each call, which an API server held back
		// by a loaded machine overran at the test TTL's 667ms.
		const long = 6 * time.Second
		l := newHolder(t, newClient(t, s, sa), "ringflake", machineid.WithTTL(long))
		id, err := machineID(l)
		require.NoError(t, err, "MachineID as the ServiceAccount")
		until := l.Lease().Until
		require.Eventually(t, func() bool { return l.Lease().Until.After(until) }, 3*long, 10*time.Millisecond, "Until not raised by a renewal")
		assert.True(t, l.Lease().Held, "lease after a renewal: %v", l.Lease().Err)
		require.NoError(t, l.Release(time.Time{}), "Release as the ServiceAccount")
		lease := getLease(t, newClient(t, s, s.Token(k8stest.Admin)), "ringflake", "ringflake-machine-"+itoa(id))
		assert.Nil(t, lease.Spec.HolderIdentity, "holderIdentity after Release")
	})

	for _, tt := range []struct {
		name, token, user, ns string
	}{
		{"unbound user", s.Token(k8stest.Ringflake), k8stest.Ringflake, "ringflake"},
		{"ServiceAccount in another namespace", sa, "system:serviceaccount:ringflake:ringflake", "other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newHolder(t, newClient(t, s, tt.token), tt.ns, machineid.WithRange(0, 3))
			_, err := machineID(l)
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), `leases.coordination.k8s.io is forbidden: User "`+tt.user+`" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "`+tt.ns+`"`)
			assert.Contains(t, err.Error(), "deploy/kubernetes (role.yaml, rolebinding.yaml)")
		})
	}
}
