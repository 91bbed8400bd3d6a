package k8stest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Kubeconfig writes a kubeconfig file in which user, of the token file, is
// the current context's user on this server, and returns its path, for
// kubectl's --kubeconfig or client-go's clientcmd. It fails the test if
// there is no such user or the file cannot be written.
func (s *Server) Kubeconfig(user string) string {
	s.tb.Helper()
	// JSON is YAML, so kubectl and clientcmd read it as they read YAML.
	cfg := map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{
			"name": "k8stest",
			"cluster": map[string]any{
				"server":                     s.URL,
				"certificate-authority-data": s.CA, // base64, as encoding/json spells []byte
			},
		}},
		"users": []any{map[string]any{
			"name": user,
			"user": map[string]any{"token": s.Token(user)},
		}},
		"contexts": []any{map[string]any{
			"name":    user,
			"context": map[string]any{"cluster": "k8stest", "user": user},
		}},
		"current-context": user,
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		s.tb.Fatalf("k8stest: kubeconfig: %v", err)
	}
	path := filepath.Join(s.dir, "kubeconfig-"+strings.ReplaceAll(user, "/", "_"))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		s.tb.Fatalf("k8stest: kubeconfig: %v", err)
	}
	return path
}
