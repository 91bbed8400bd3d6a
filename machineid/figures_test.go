package machineid

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsFigures checks that the figures the README and docs derive from
// the lease defaults say what the code's defaults give (issue 39: one
// figure per fact, each from one formula). A figure named here must appear
// in each file listed, in the form given, and no other figure may stand
// where the formula's words do.
func TestDocsFigures(t *testing.T) {
	var c config
	require.NoError(t, c.validate(Limits{}))
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	paused := 2*c.ttl/3 - c.margin
	restarted := paused - max(c.ttl/10, c.callTimeout)
	floor := c.ttl + 2*c.maxOffset
	for _, f := range []struct {
		what, figure string
		files        []string
	}{
		{"the outage of a paused server ridden out, 2·TTL/3 − margin", secs(paused), []string{"docs/leases.md"}},
		{"the outage of a restarted server ridden out, 2·TTL/3 − margin − max(TTL/10, call timeout)", secs(restarted), []string{"docs/leases.md", "docs/machineid_etcd.md"}},
		{"the wait after a Redis restart, TTL + 2·bound", fmt.Sprintf("%d s", int(floor.Seconds())), []string{"README.md", "docs/leases.md"}},
		{"the default TTL", fmt.Sprintf("(%d s)", int(c.ttl.Seconds())), []string{"README.md"}},
		{"the default bound", fmt.Sprintf("%d s off", int(c.maxOffset.Seconds())), []string{"README.md"}},
	} {
		for _, name := range f.files {
			text := readDoc(t, name)
			assert.Contains(t, text, f.figure, "%s: %s should read %s", name, f.what, f.figure)
		}
	}
	// The figures that went stale before: none may come back.
	for _, stale := range []string{"2.67s", "4.67s", "0.9 s after the holder"} {
		for _, name := range []string{"README.md", "docs/leases.md", "docs/machineid_etcd.md", "docs/machineid_k8s.md"} {
			assert.NotContains(t, readDoc(t, name), stale, "%s: a figure that disagrees with the formula", name)
		}
	}
}

// readDoc returns the text of a file at the repository's root, name in
// slash form, with its lines joined so that a figure split by wrapping
// still reads whole.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(b)), " ")
}
