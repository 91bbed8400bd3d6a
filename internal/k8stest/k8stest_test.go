package k8stest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lease is the part of a coordination.k8s.io/v1 Lease these tests read and
// write.
type lease struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	} `json:"metadata"`
	Spec struct {
		HolderIdentity       string `json:"holderIdentity"`
		LeaseDurationSeconds int    `json:"leaseDurationSeconds"`
	} `json:"spec"`
}

func newLease(name, holder string) lease {
	l := lease{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	l.Metadata.Name = name
	l.Spec.HolderIdentity = holder
	l.Spec.LeaseDurationSeconds = 15
	return l
}

// apiStatus is the part of a metav1.Status error reply the tests read.
type apiStatus struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(body, &v), "reply %s", body)
	return v
}

func leasesPath(namespace string) string {
	return "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases"
}

// TestLeaseLifecycle writes a Lease as the admin, updates it with its
// resourceVersion, is refused a stale one with 409, and reads it back after
// a restart of the apiserver; a user without bindings is forbidden.
func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := Start(t)
	t.Logf("etcd and kube-apiserver ready at %s in %v", s.URL, time.Since(start))
	s.CreateNamespace("leases")
	admin, path := s.Token(Admin), leasesPath("leases")

	code, body := s.Do(admin, http.MethodPost, path, newLease("machine-7", "pod-a"))
	require.Equal(t, http.StatusCreated, code, "create: %s", body)
	created := decode[lease](t, body)
	require.NotEmpty(t, created.Metadata.ResourceVersion, "a created Lease has a resourceVersion")

	code, body = s.Do(admin, http.MethodGet, path+"/machine-7", nil)
	require.Equal(t, http.StatusOK, code, "get: %s", body)
	got := decode[lease](t, body)
	assert.Equal(t, "pod-a", got.Spec.HolderIdentity)
	assert.Equal(t, created.Metadata.ResourceVersion, got.Metadata.ResourceVersion)

	update := got
	update.Spec.HolderIdentity = "pod-b"
	code, body = s.Do(admin, http.MethodPut, path+"/machine-7", update)
	require.Equal(t, http.StatusOK, code, "update with the current resourceVersion: %s", body)
	updated := decode[lease](t, body)
	assert.NotEqual(t, got.Metadata.ResourceVersion, updated.Metadata.ResourceVersion, "an update makes a new resourceVersion")

	stale := got // still holds the first resourceVersion
	stale.Spec.HolderIdentity = "pod-c"
	code, body = s.Do(admin, http.MethodPut, path+"/machine-7", stale)
	assert.Equal(t, http.StatusConflict, code, "update with a stale resourceVersion: %s", body)
	assert.Equal(t, "Conflict", decode[apiStatus](t, body).Reason)

	code, body = s.Do(s.Token(Nobody), http.MethodGet, path+"/machine-7", nil)
	assert.Equal(t, http.StatusForbidden, code, "get as %s: %s", Nobody, body)
	assert.Contains(t, decode[apiStatus](t, body).Message,
		`User "nobody" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "leases"`)

	start = time.Now()
	s.Restart()
	t.Logf("kube-apiserver restarted in %v", time.Since(start))
	code, body = s.Do(admin, http.MethodGet, path+"/machine-7", nil)
	require.Equal(t, http.StatusOK, code, "get after Restart: %s", body)
	again := decode[lease](t, body)
	assert.Equal(t, "pod-b", again.Spec.HolderIdentity, "the update survives the restart")
	assert.Equal(t, updated.Metadata.ResourceVersion, again.Metadata.ResourceVersion)
}

// TestUsers checks who each token authenticates as, with the
// SelfSubjectReview API, for the built-in users and one passed to Start.
func TestUsers(t *testing.T) {
	t.Parallel()
	s := Start(t, User{Name: "ops", Groups: []string{"ops-team"}})
	for _, tc := range []struct {
		user  string
		group string // one group the user must be in
	}{
		{Admin, "system:masters"},
		{Ringflake, "system:authenticated"},
		{Nobody, "system:authenticated"},
		{"ops", "ops-team"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			review := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
			code, body := s.Do(s.Token(tc.user), http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
			require.Equal(t, http.StatusCreated, code, "SelfSubjectReview: %s", body)
			var r struct {
				Status struct {
					UserInfo struct {
						Username string   `json:"username"`
						Groups   []string `json:"groups"`
					} `json:"userInfo"`
				} `json:"status"`
			}
			require.NoError(t, json.Unmarshal(body, &r))
			assert.Equal(t, tc.user, r.Status.UserInfo.Username)
			assert.Contains(t, r.Status.UserInfo.Groups, tc.group)
		})
	}
	code, body := s.Do("not-a-token", http.MethodGet, "/api/v1/namespaces", nil)
	assert.Equal(t, http.StatusUnauthorized, code, "an unknown token: %s", body)
}

// TestStopStart checks that requests fail while the apiserver is stopped
// and succeed once it is started again on the same address.
func TestStopStart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.CreateNamespace("kept")
	url := s.URL
	start := time.Now()
	s.Stop()
	t.Logf("kube-apiserver stopped in %v", time.Since(start))
	_, _, err := s.do(s.Token(Admin), http.MethodGet, "/readyz", nil)
	assert.Error(t, err, "a request to a stopped apiserver")
	start = time.Now()
	s.Start()
	t.Logf("kube-apiserver started again in %v", time.Since(start))
	assert.Equal(t, url, s.URL)
	code, body := s.Do(s.Token(Admin), http.MethodGet, "/api/v1/namespaces/kept", nil)
	assert.Equal(t, http.StatusOK, code, "a namespace created before Stop, after Start: %s", body)
}
