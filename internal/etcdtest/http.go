package etcdtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// httpClient asks members through etcd's HTTP endpoints: /health and the
// JSON gateway to the v3 API, so this package needs no etcd client.
var httpClient = &http.Client{Timeout: 2 * time.Second}

// healthy reports whether GET /health says the member is healthy, which
// it does only while the member has a leader.
func (m *Member) healthy() (bool, error) {
	resp, err := httpClient.Get(m.ClientURL + "/health")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return false, fmt.Errorf("/health: %w", err)
	}
	if h.Health != "true" {
		return false, fmt.Errorf("/health says %q %s", h.Health, h.Reason)
	}
	return true, nil
}

// status is the part of the maintenance Status reply this package reads.
// The gateway spells 64-bit IDs as decimal strings.
type status struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

func (m *Member) status() (status, error) {
	var st status
	err := m.post("/v3/maintenance/status", &st)
	return st, err
}

// isSelf returns an error unless the member list served at the member's
// client URL names the member with its peer URL.
func (m *Member) isSelf() error {
	var list struct {
		Members []struct {
			Name     string   `json:"name"`
			PeerURLs []string `json:"peerURLs"`
		} `json:"members"`
	}
	if err := m.post("/v3/cluster/member/list", &list); err != nil {
		return err
	}
	for _, x := range list.Members {
		if x.Name == m.Name && slices.Contains(x.PeerURLs, m.PeerURL) {
			return nil
		}
	}
	return fmt.Errorf("%s is served by another etcd cluster", m.ClientURL)
}

// post sends an empty JSON request to a gateway path and decodes the reply
// into v.
func (m *Member) post(path string, v any) error {
	resp, err := httpClient.Post(m.ClientURL+path, "application/json", bytes.NewReader([]byte("{}")))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}
