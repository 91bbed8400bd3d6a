package k8stest

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manifests is deploy/kubernetes, which users apply with kubectl.
const manifests = "../../deploy/kubernetes/"

// kubectl runs kubectl as user against s and returns what it printed. It
// fails the test if kubectl is not on PATH.
func kubectl(t *testing.T, s *Server, user string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on PATH (%v): run scripts/test, which installs it (Debian package kubernetes-client)", err)
	}
	// A cache of its own: another test's server may have had this port.
	args = append([]string{"--kubeconfig", s.Kubeconfig(user), "--cache-dir", t.TempDir()}, args...)
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// createNamespace creates a namespace whose pod-security warn label makes
// the apiserver warn of any pod template that the restricted profile
// would refuse.
func createNamespace(t *testing.T, s *Server, name string) {
	t.Helper()
	ns := map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]string{"pod-security.kubernetes.io/warn": "restricted"},
		},
	}
	code, body := s.Do(s.Token(Admin), http.MethodPost, "/api/v1/namespaces", ns)
	require.Equal(t, http.StatusCreated, code, "creating namespace %s: %s", name, body)
}

// TestManifestsDryRun has the apiserver validate deploy/kubernetes with
// kubectl apply --dry-run=server, admission included: every object would
// be created, with no warning (the pod template meets the restricted pod
// security profile), and none is stored.
func TestManifestsDryRun(t *testing.T) {
	t.Parallel()
	s := Start(t)
	createNamespace(t, s, "ringflake")
	stdout, stderr, err := kubectl(t, s, Admin, "apply", "--dry-run=server", "-n", "ringflake", "-f", manifests)
	require.NoError(t, err, "kubectl apply --dry-run=server: %s%s", stdout, stderr)
	for _, obj := range []string{
		"serviceaccount/ringflake",
		"role.rbac.authorization.k8s.io/ringflake-leases",
		"rolebinding.rbac.authorization.k8s.io/ringflake-leases",
		"deployment.apps/ringflake",
		"service/ringflake",
	} {
		assert.Contains(t, stdout, obj+" created (server dry run)")
	}
	assert.Empty(t, stderr, "kubectl's warnings")

	code, body := s.Do(s.Token(Admin), http.MethodGet, "/api/v1/namespaces/ringflake/serviceaccounts/ringflake", nil)
	assert.Equal(t, http.StatusNotFound, code, "a dry run stores nothing: %s", body)

	_, stderr, err = kubectl(t, s, Admin, "apply", "--dry-run=server", "-n", "missing", "-f", manifests)
	assert.Error(t, err, "a dry run into a namespace that does not exist")
	assert.Contains(t, stderr, `namespaces "missing" not found`)
}

// leaseCall is a request of one verb on the Lease "machine-1".
type leaseCall struct {
	verb         string
	method, path string
	body         any
}

// leaseCalls returns a request for each verb the Role grants, in an order
// that succeeds when every one is allowed; update carries resourceVersion.
func leaseCalls(namespace, resourceVersion string) []leaseCall {
	path := leasesPath(namespace)
	updated := newLease("machine-1", "pod-b")
	updated.Metadata.ResourceVersion = resourceVersion
	return []leaseCall{
		{"create", http.MethodPost, path, newLease("machine-1", "pod-a")},
		{"get", http.MethodGet, path + "/machine-1", nil},
		{"list", http.MethodGet, path, nil},
		{"update", http.MethodPut, path + "/machine-1", updated},
		{"delete", http.MethodDelete, path + "/machine-1", nil},
	}
}

// forbidden is the start of RBAC's refusal message for user, verb and the
// leases of namespace.
func forbidden(user, verb, namespace string) string {
	return fmt.Sprintf(`User %q cannot %s resource "leases" in API group "coordination.k8s.io" in the namespace %q`, user, verb, namespace)
}

// TestManifestsRBAC applies deploy/kubernetes for real and checks the Role
// with the ServiceAccount's own token, issued by the TokenRequest API as
// the kubelet would mount it: it may create, get, list, update and delete
// Leases in its namespace and nothing else, and a user without the binding
// is refused each of those verbs.
func TestManifestsRBAC(t *testing.T) {
	t.Parallel()
	s := Start(t)
	createNamespace(t, s, "ringflake")
	s.CreateNamespace("other")
	stdout, stderr, err := kubectl(t, s, Admin, "apply", "-n", "ringflake", "-f", manifests)
	require.NoError(t, err, "kubectl apply: %s%s", stdout, stderr)

	sa := s.ServiceAccountToken("ringflake", "ringflake")
	const saUser = "system:serviceaccount:ringflake:ringflake"

	t.Run("granted", func(t *testing.T) {
		code, body := s.Do(s.Token(Admin), http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/ringflake/leases", nil)
		require.Equal(t, http.StatusOK, code, "list as admin: %s", body)
		// The first call creates the Lease: its resourceVersion comes
		// from the reply, so the calls are made one by one.
		calls := leaseCalls("ringflake", "")
		code, body = s.Do(sa, calls[0].method, calls[0].path, calls[0].body)
		require.Equal(t, http.StatusCreated, code, "create as the ServiceAccount: %s", body)
		calls = leaseCalls("ringflake", decode[lease](t, body).Metadata.ResourceVersion)
		for _, c := range calls[1:] {
			code, body := s.Do(sa, c.method, c.path, c.body)
			assert.Equal(t, http.StatusOK, code, "%s as the ServiceAccount: %s", c.verb, body)
		}
	})

	t.Run("not granted", func(t *testing.T) {
		path := leasesPath("ringflake")
		for _, c := range []leaseCall{
			{"patch", http.MethodPatch, path + "/machine-1", map[string]any{"spec": map[string]any{"holderIdentity": "pod-c"}}},
			{"watch", http.MethodGet, path + "?watch=true&timeoutSeconds=1", nil},
			{"deletecollection", http.MethodDelete, path, nil},
		} {
			code, body := s.Do(sa, c.method, c.path, c.body)
			assert.Equal(t, http.StatusForbidden, code, "%s as the ServiceAccount: %s", c.verb, body)
			assert.Contains(t, decode[apiStatus](t, body).Message, forbidden(saUser, c.verb, "ringflake"))
		}
		code, body := s.Do(sa, http.MethodPost, leasesPath("other"), newLease("machine-1", "pod-a"))
		assert.Equal(t, http.StatusForbidden, code, "create in another namespace: %s", body)
		assert.Contains(t, decode[apiStatus](t, body).Message, forbidden(saUser, "create", "other"))
		code, body = s.Do(sa, http.MethodGet, "/api/v1/namespaces/ringflake/configmaps", nil)
		assert.Equal(t, http.StatusForbidden, code, "list configmaps: %s", body)
	})

	for _, user := range []string{Ringflake, Nobody} {
		t.Run("unbound "+user, func(t *testing.T) {
			for _, c := range leaseCalls("ringflake", "1") {
				code, body := s.Do(s.Token(user), c.method, c.path, c.body)
				assert.Equal(t, http.StatusForbidden, code, "%s as %s: %s", c.verb, user, body)
				msg := decode[apiStatus](t, body).Message
				assert.True(t, strings.Contains(msg, forbidden(user, c.verb, "ringflake")),
					"%s as %s: the refusal %q names the user, verb and resource", c.verb, user, msg)
			}
		})
	}
}
