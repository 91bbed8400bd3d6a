package serve

import (
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// A real Node.js client (testdata/idclient.mjs) reads the IDs of /v1/id
// and /v1/ids with fetch and JSON.parse: under JSLayout they are JSON
// numbers that it holds exactly, digit for digit as the server wrote them;
// under the default layout, and with ?format=string, strings. A number
// above 2^53 would come back from JavaScript rounded, unlike its digits.
// scripts/test installs node (Debian's nodejs) as it installs the servers.
func TestServiceNodeClientReadsIDsExactly(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed: scripts/test installs it (Debian package nodejs)")

	const machine = 37
	tests := []struct {
		name   string
		layout ringflake.Layout
		paths  []string
		typ    string // typeof each ID in JavaScript
	}{
		{"JSLayout", ringflake.JSLayout(), []string{"/v1/id", "/v1/ids?n=100", "/v1/id?format=number"}, "number"},
		{"JSLayout as strings", ringflake.JSLayout(), []string{"/v1/id?format=string", "/v1/ids?n=100&format=string"}, "string"},
		{"DefaultLayout", ringflake.DefaultLayout(), []string{"/v1/id", "/v1/ids?n=100"}, "string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := ringflake.New(t.Context(), ringflake.WithMachineID(machine), ringflake.WithLayout(tt.layout))
			require.NoError(t, err)
			t.Cleanup(func() { _ = g.Close() })
			srv := httptest.NewServer(New(g, Config{Layout: tt.layout}))
			t.Cleanup(srv.Close)

			out, err := exec.CommandContext(t.Context(), node, append([]string{"testdata/idclient.mjs", srv.URL}, tt.paths...)...).CombinedOutput()
			require.NoError(t, err, "node: %s", out)
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			want := 0
			for _, p := range tt.paths {
				want++
				if strings.HasPrefix(p, "/v1/ids") {
					want += 99
				}
			}
			require.Len(t, lines, want, "one line per ID: %s", out)
			seen := make(map[ringflake.ID]bool)
			for _, line := range lines {
				f := strings.Fields(line)
				require.Len(t, f, 4, "PATH TYPE VALUE RAW: %q", line)
				assert.Equal(t, tt.typ, f[1], "typeof the ID in JavaScript: %q", line)
				assert.Equal(t, f[3], f[2], "JavaScript's value of the ID against the digits the server wrote: %q", line)
				id, err := ringflake.ParseID(f[3])
				require.NoError(t, err, "%q", line)
				assert.Equal(t, int64(machine), tt.layout.Decompose(id).Machine, "an ID of the generator: %q", line)
				assert.False(t, seen[id], "ID %d twice", id)
				seen[id] = true
			}
		})
	}
}
