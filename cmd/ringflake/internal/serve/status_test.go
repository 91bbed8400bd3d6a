package serve

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// pageText returns the status page's answer to target, checked for what
// every answer has: HTML, not cached, no script and nothing fetched from
// elsewhere.
func pageText(t *testing.T, svc *Service, target string) string {
	t.Helper()
	w := request(svc, http.MethodGet, target)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	body := w.Body.String()
	assert.NotContains(t, body, "<script")
	assert.NotContains(t, body, "://", "no asset or link off the server")
	return body
}

// Before the generator is made the page says why it is not ready, and
// shows the lease's latest report on one line; the counts wait for the
// generator.
func TestStatusPageNotReady(t *testing.T) {
	t.Parallel()
	until := time.Now().Add(time.Hour)
	svc := New(nil, Config{
		Starting: func() (string, int64, time.Duration) { return "acquiring the machine ID from the lease redis", 7, 0 },
		Lease: func() machineid.Lease {
			return machineid.Lease{ID: 7, Until: until, Err: errors.New("ERR one\nERR two")}
		},
	})
	body := pageText(t, svc, "/")
	for _, want := range []string{
		"<title>ringflake serve: not ready</title>",
		`<span class="bad">Not ready</span>: acquiring the machine ID from the lease redis</p>`,
		`<td id="machine">7</td>`,
		`<td id="held">not held: ERR one; ERR two</td>`,
		`<td id="until">` + until.UTC().Format("2006-01-02 15:04:05.000 UTC") + " (in ",
		`<td id="after">none</td>`,
		`<td id="clock">no measurement</td>`,
		`<p id="counts">None issued yet`,
		`<td id="ends">2093-09-06 15:47:35.552 UTC (in `,
		`<form method="get" action="/">`,
		`<input type="text" name="id" value="" required>`,
	} {
		assert.Contains(t, body, want)
	}
}

// Once ready the page counts what the generator issued, and ?id= decodes
// an ID in the form's format; bad input is shown, escaped, as the reason.
func TestStatusPageDecodes(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	svc, g := newTestService(t, clock)
	var id ringflake.ID
	for range 5 {
		var err error
		id, err = g.NextID()
		require.NoError(t, err)
	}
	p := g.Layout().Decompose(id)
	body := pageText(t, svc, "/?id="+id.String())
	for _, want := range []string{
		`<span class="ok">Ready</span>`,
		`<td id="machine">3</td>`,
		`<td id="held">held</td>`,
		`<td id="until">no limit</td>`,
		`<td id="issued">5</td>`,
		`<td id="failed">0</td>`,
		`<td id="d-id">` + id.String() + `</td>`,
		`<td id="d-time">` + p.Time.Format(time.RFC3339Nano) + `</td>`,
		`<td id="d-machine">3</td>`,
		fmt.Sprintf(`<td id="d-sequence">%d</td>`, p.Sequence),
		`value="` + id.String() + `"`,
		"<option selected>auto</option>",
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "d-datacenter", "the default layout does not split the machine ID")

	b32 := pageText(t, svc, "/?format=base32&id="+id.Base32())
	assert.Contains(t, b32, `<td id="d-id">`+id.String()+`</td>`, "read as base32")
	assert.Contains(t, b32, "<option selected>base32</option>")

	bad := pageText(t, svc, "/?id=%3Cb%3Ex")
	assert.Contains(t, bad, `<p id="d-error" class="bad">&#34;&lt;b&gt;x&#34; is not an ID`)
	assert.NotContains(t, bad, "d-id")
	assert.Contains(t, pageText(t, svc, "/?id=1"), "give format decimal or format base58", "the form's own words for an ambiguous ID")
	assert.Contains(t, pageText(t, svc, "/?id=1&format=hex"), `format = &#34;hex&#34;; want auto, decimal, base32 or base58`)
	assert.Equal(t, uint64(5), g.Stats().Issued, "the page issues nothing")
}
