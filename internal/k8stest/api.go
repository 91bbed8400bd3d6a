package k8stest

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Client returns an HTTP client that trusts the server's CA and sends no
// credentials of its own: set the Authorization header to "Bearer " and a
// token. The client is shared by the Server's callers.
func (s *Server) Client() *http.Client { return s.client }

// newClient returns a client that trusts the CA in caPEM.
func newClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		},
	}
}

// Do sends a request with token to the API path (such as
// "/apis/coordination.k8s.io/v1/namespaces/ns/leases"), with body as JSON
// unless it is nil (a PATCH's as a JSON merge patch), and returns the
// reply's status code and body. It fails the test if no reply arrives.
func (s *Server) Do(token, method, path string, body any) (int, []byte) {
	s.tb.Helper()
	code, reply, err := s.do(token, method, path, body)
	if err != nil {
		s.tb.Fatalf("k8stest: %s %s: %v", method, path, err)
	}
	return code, reply
}

func (s *Server) do(token, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	switch {
	case body != nil && method == http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	return resp.StatusCode, reply, err
}

// ready returns nil once GET /readyz answers 200 to the admin, which it
// does after every post-start hook, RBAC's default roles among them.
func (s *Server) ready() error {
	code, body, err := s.do(s.tokens[Admin], http.MethodGet, "/readyz", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("/readyz: %d %s", code, body)
	}
	return nil
}

// CreateNamespace creates the namespace name as the admin. It fails the
// test unless the apiserver creates it.
func (s *Server) CreateNamespace(name string) {
	s.tb.Helper()
	ns := map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": name},
	}
	if code, reply := s.Do(s.tokens[Admin], http.MethodPost, "/api/v1/namespaces", ns); code != http.StatusCreated {
		s.tb.Fatalf("k8stest: creating namespace %s: %d %s", name, code, reply)
	}
}

// ServiceAccountToken returns a token of an hour for the ServiceAccount
// name in namespace, which must exist, from the TokenRequest API, as the
// kubelet would mount one in a pod. It fails the test if the apiserver
// issues none.
func (s *Server) ServiceAccountToken(namespace, name string) string {
	s.tb.Helper()
	req := map[string]any{
		"apiVersion": "authentication.k8s.io/v1",
		"kind":       "TokenRequest",
		"spec":       map[string]any{"expirationSeconds": 3600},
	}
	path := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/serviceaccounts/" + url.PathEscape(name) + "/token"
	code, reply := s.Do(s.tokens[Admin], http.MethodPost, path, req)
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if code != http.StatusCreated || json.Unmarshal(reply, &tr) != nil || tr.Status.Token == "" {
		s.tb.Fatalf("k8stest: token for ServiceAccount %s/%s: %d %s", namespace, name, code, reply)
	}
	return tr.Status.Token
}

// randomToken returns 128 random bits in hex.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b)
}
