package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/redistest"
)

// chromiumText loads url in headless Chromium (Debian's package chromium,
// which scripts/test installs) and returns the DOM it rendered, and its
// text as a person reads it: each tag a blank, each run of blanks one
// space ("Ready : issuing IDs" for <span>Ready</span>: issuing IDs).
func chromiumText(t *testing.T, url string) (dom, text string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	require.NoError(t, err, "chromium is needed: scripts/test installs it (Debian package chromium)")
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+home, "--dump-dom", url)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	dom = string(out)
	text = regexp.MustCompile(`(?s)<style>.*?</style>|<[^>]*>`).ReplaceAllString(dom, " ")
	text = strings.Join(strings.Fields(html.UnescapeString(text)), " ")
	return dom, text
}

// The status page of a server that leased its machine ID from Redis, as
// headless Chromium renders it: the machine ID, the lease held and until
// when, the clock's offset to Redis, the IDs issued; and the decode form,
// submitted as the browser submits it (a GET of /?id=…&format=…), shows
// the parts of an ID the server issued.
func TestStatusPageInChromium(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := startServer(t, "--lease", "redis://"+srv.Addr, "--machine-range", "5-5", "--lease-ttl", "3s")
	r := mustGet(t, s.addr, "/v1/id")
	require.Equal(t, 200, r.code, r.body)
	var one struct{ ID ringflake.ID }
	require.NoError(t, json.Unmarshal([]byte(r.body), &one), r.body)

	dom, text := chromiumText(t, "http://"+s.addr+"/")
	assert.Regexp(t, `Ready : issuing IDs Machine ID Machine ID 5 Lease held Held until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC \(in [0-9.]+m?s\) `+
		`Mark inherited (none|\d{4}-.*? UTC \(.*?\)) Clock offset to the store [0-9.]+[µm]?s (ahead of|behind) Redis's clock \(TIME\) \(±[0-9.]+[µm]?s\) `, text)
	assert.Regexp(t, `IDs Issued [1-9]\d* Failed calls 0 `, text)
	assert.Contains(t, text, "Layout Bits 63: time 41, machine 10, sequence 12 Epoch 2024-01-01 00:00:00 UTC Tick 1ms Ends 2093-09-06 15:47:35.552 UTC")
	// The form's submission, as Chromium would make it from these fields.
	assert.Contains(t, dom, `<form method="get" action="/">`)
	assert.Contains(t, dom, `name="id"`)
	assert.Contains(t, dom, `<select name="format">`)

	_, text = chromiumText(t, fmt.Sprintf("http://%s/?id=%d&format=decimal", s.addr, one.ID))
	p := ringflake.DefaultLayout().Decompose(one.ID)
	assert.Contains(t, text, fmt.Sprintf("Decode an ID ID format auto decimal base32 base58 Decode ID %d Time %s Machine 5 Sequence %d ",
		one.ID, p.Time.Format(time.RFC3339Nano), p.Sequence))
}
