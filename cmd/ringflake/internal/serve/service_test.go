package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/fakeclock"
	"github.com/ringflake/ringflake/machineid"
)

// start is the fake clocks' first reading.
var start = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// newTestService returns a service over a generator of machine ID 3 on
// clock, closed when the test ends.
func newTestService(t *testing.T, clock *fakeclock.Clock, opts ...ringflake.Option) (*Service, *ringflake.Generator) {
	t.Helper()
	g, err := ringflake.New(t.Context(), append([]ringflake.Option{ringflake.WithMachineID(3), ringflake.WithClock(clock.Now)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return New(g, Config{}), g
}

// request sends one request to h in process and returns the response.
func request(h http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// idsOf returns the IDs in a 200 answer of path, which is an ID endpoint.
func idsOf(t *testing.T, w *httptest.ResponseRecorder, path string) []ringflake.ID {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, "%s: status; body %s", path, w.Body)
	switch {
	case strings.HasPrefix(path, "/api/snowflake/get/"):
		id, err := ringflake.ParseID(w.Body.String())
		require.NoError(t, err, "%s: body %q", path, w.Body)
		return []ringflake.ID{id}
	case strings.HasPrefix(path, "/v1/ids"):
		var body struct{ IDs []ringflake.ID }
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), "%s: body %s", path, w.Body)
		return body.IDs
	}
	var body struct{ ID ringflake.ID }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), "%s: body %s", path, w.Body)
	return []ringflake.ID{body.ID}
}

// metric returns the value of the metric line named name in a /metrics
// answer.
func metric(t *testing.T, body, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	require.NotNil(t, m, "metric %s in:\n%s", name, body)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// The clock steps back 500ms while requests come in, one after another and
// from several goroutines: every request still gets IDs, all distinct,
// from the ticks the clock shows again, and /metrics reports the step.
func TestServiceStepBack(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	svc, _ := newTestService(t, clock)
	paths := []string{"/v1/id", "/api/snowflake/get/orders", "/v1/ids?n=100"}
	per := map[string]int{"/v1/id": 1, "/api/snowflake/get/orders": 1, "/v1/ids?n=100": 100}
	var (
		mu   sync.Mutex
		ids  []ringflake.ID
		want int // IDs asked for
	)
	// serve sends n requests from each of workers goroutines, the clock
	// moving 1ms after each.
	serve := func(workers, n int) {
		var eg errgroup.Group
		for w := range workers {
			eg.Go(func() error {
				for i := range n {
					path := paths[(w+i)%len(paths)]
					resp := request(svc, http.MethodGet, path)
					if resp.Code != http.StatusOK {
						return errors.New(path + ": " + strconv.Itoa(resp.Code) + " " + resp.Body.String())
					}
					got := idsOf(t, resp, path)
					mu.Lock()
					ids = append(ids, got...)
					want += per[path]
					mu.Unlock()
					clock.Add(time.Millisecond)
				}
				return nil
			})
		}
		require.NoError(t, eg.Wait())
	}
	serve(1, 300)
	serve(4, 75)
	clock.Add(-500 * time.Millisecond)
	ready := request(svc, http.MethodGet, "/readyz")
	assert.Equal(t, http.StatusOK, ready.Code, "a clock behind is no reason to be unready; body %s", ready.Body)
	serve(1, 150)
	serve(4, 40) // still behind: 600ms forward, then 500 back, then 310
	n := len(ids)
	assert.Equal(t, want, n, "IDs handed out")
	seen := make(map[ringflake.ID]bool, n)
	for _, id := range ids {
		require.False(t, seen[id], "ID %d handed out twice", id)
		seen[id] = true
		assert.Equal(t, int64(3), svc.layout.Decompose(id).Machine)
	}

	m := request(svc, http.MethodGet, "/metrics")
	require.Equal(t, http.StatusOK, m.Code)
	body := m.Body.String()
	assert.Equal(t, 1.0, metric(t, body, "ringflake_clock_step_backs_total"), "one step back")
	// The generator measures the step from the latest time it read, which
	// is up to one move per worker (4ms) before the clock stepped back.
	assert.InDelta(t, 0.5, metric(t, body, "ringflake_clock_largest_step_back_seconds"), 0.0041, "the step's size")
	assert.Positive(t, metric(t, body, "ringflake_spare_ids_issued_total"), "IDs issued from the spare sequence while behind")
	assert.Equal(t, float64(n), metric(t, body, "ringflake_ids_issued_total"), "IDs issued")
	assert.Zero(t, metric(t, body, `ringflake_failures_total{reason="clock_behind"}`))
	assert.Contains(t, body, "\ngo_goroutines ", "the Go collector's metrics")
	assert.Contains(t, body, "\nprocess_cpu_seconds_total ", "the process collector's metrics")
}

// Bad input gets a 4xx with a JSON error, and no ID is issued for it.
func TestServiceBadInput(t *testing.T) {
	t.Parallel()
	svc, g := newTestService(t, fakeclock.New(start))
	tests := []struct {
		method, target string
		code           int
		want           string // in the error
	}{
		{"GET", "/v1/ids", 400, "n is missing; want /v1/ids?n=N with N in 1..4096"},
		{"GET", "/v1/ids?n=", 400, `n = ""; want an integer in 1..4096`},
		{"GET", "/v1/ids?n=0", 400, `n = "0"; want an integer in 1..4096`},
		{"GET", "/v1/ids?n=-1", 400, `n = "-1"`},
		{"GET", "/v1/ids?n=4097", 400, `n = "4097"`},
		{"GET", "/v1/ids?n=99999999999999999999", 400, `n = "99999999999999999999"`},
		{"GET", "/v1/ids?n=1.5", 400, `n = "1.5"`},
		{"GET", "/v1/ids?n=ten", 400, `n = "ten"`},
		{"GET", "/v1/ids?n=%2010", 400, `n = "%2010"`},
		{"GET", "/v1/ids?n=+3", 400, `n = "+3"; want an integer in 1..4096`},
		{"GET", "/v1/ids?n=3;x", 400, `n = "3;x"; want an integer in 1..4096`},
		{"GET", "/v1/ids?n=2&n=3", 400, "n is given 2 times; give it once"},
		{"GET", "/v1/ids?n=" + strings.Repeat("9", 10000), 400, `n = "99999999999999999999999999999999"...; want`},
		{"GET", "/v1/id?format=number", 400, "format = number, but this layout's IDs have 63 bits, above the 53 a JavaScript Number holds exactly; want format=string"},
		{"GET", "/v1/ids?n=3&format=number", 400, "format = number, but this layout's IDs have 63 bits"},
		{"GET", "/v1/id?format=hex", 400, `format = "hex"; want string or number`},
		{"GET", "/v1/ids?n=3&format=", 400, `format = ""; want string or number`},
		{"GET", "/v1/id?format=string&format=string", 400, "format is given 2 times; give it once, string or number"},
		{"HEAD", "/v1/id?format=number", 400, ""},
		{"GET", "/v1/decode/abl", 400, `"abl" is not an ID in decimal, base32 or base58; as base58: ParseBase58 "abl": invalid ID syntax: character "l" at offset 2 is not in the Base58 alphabet`},
		{"GET", "/v1/decode/0123456789012", 400, `"0123456789012" is ambiguous: decimal 123456789012 (time 2024-01-01T00:00:29.434Z, machine 401, sequence 2580) or base32 38390726480134178 (time 2024-04-15T22:31:02.458Z, machine 72, sequence 34); give ?format=decimal or ?format=base32`},
		{"GET", "/v1/decode/1", 400, `"1" is ambiguous: decimal 1 (`},
		{"GET", "/v1/decode/abc?format=hex", 400, `format = "hex"; want auto, decimal, base32 or base58`},
		{"GET", "/v1/decode/" + strings.Repeat("7", 10000), 400, `ParseID "77777777777777777777777777777777"...: ID out of range`},
		{"GET", "/v1/decode/-5", 400, `ParseID "-5": ID out of range: negative`},
		{"GET", "/v1/decode/9223372036854775808", 400, "ID out of range: above 2^63-1"},
		{"GET", "/v1/decode/1%202", 400, `"1 2" is not an ID in decimal, base32 or base58`},
		{"GET", "/v1/decode/abc", 400, `"abc" is a word, not an ID: as base58 it is 113019 (time 2024-01-01T00:00:00Z, machine 27, sequence 2427), before any ringflake ID (2026-11 on); give ?format=base58 to decode it so`},
		{"GET", "/" + strings.Repeat("x", 10000), 404, `no such path "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"...`},
		{"GET", "/nope", 404, `no such path "/nope"`},
		{"POST", "/", 405, "method POST; want GET or HEAD"},
		{"GET", "/v1/id/", 404, `no such path "/v1/id/"`},
		{"GET", "/v1/ids/", 404, `no such path "/v1/ids/"`},
		{"GET", "/v1/decode/", 404, `no such path "/v1/decode/"`},
		{"GET", "/v1/decode/1/2", 404, `no such path "/v1/decode/1/2"`},
		{"GET", "/api/snowflake/get/", 404, `no such path "/api/snowflake/get/"`},
		{"POST", "/v1/id", 405, "method POST; want GET or HEAD"},
		{"PUT", "/v1/ids?n=3", 405, "method PUT; want GET or HEAD"},
		{"DELETE", "/v1/decode/1", 405, "method DELETE; want GET or HEAD"},
		{"POST", "/metrics", 405, "method POST; want GET or HEAD"},
		{"PATCH", "/readyz", 405, "method PATCH; want GET or HEAD"},
		{"OPTIONS", "/healthz", 405, "method OPTIONS; want GET or HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			w := request(svc, tt.method, tt.target)
			assert.Equal(t, tt.code, w.Code, "status; body %s", w.Body)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var body map[string]string
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), "body %q", w.Body)
			assert.Len(t, body, 1, "only the error in %v", body)
			assert.Contains(t, body["error"], tt.want)
			assert.Less(t, len(body["error"]), 300, "echoed input is cut (to 32 bytes; an ambiguous ID's two readings take 235)")
			if tt.code == 405 {
				assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
			}
		})
	}
	assert.Zero(t, g.Stats().Issued, "no ID issued for bad input")
}

// Each endpoint answers a good request with the shape it documents.
func TestServiceAnswers(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	svc, _ := newTestService(t, clock)

	w := request(svc, "GET", "/api/snowflake/get/any-key")
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Regexp(t, `^[0-9]+$`, w.Body.String(), "Leaf's answer: the decimal ID alone")
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	leaf, err := ringflake.ParseID(w.Body.String())
	require.NoError(t, err)
	second := strconv.FormatInt(svc.layout.Decompose(leaf).Sequence+1, 10) // the tick's first ID is at its start

	w = request(svc, "GET", "/v1/id")
	assert.Regexp(t, `^\{"id":"[0-9]+"\}\n$`, w.Body.String())
	id := idsOf(t, w, "/v1/id")[0]

	clock.Add(time.Millisecond) // a tick with all its sequence free
	w = request(svc, "GET", "/v1/ids?n=4096")
	batch := idsOf(t, w, "/v1/ids")
	assert.Len(t, batch, 4096)
	assert.Regexp(t, `^\{"ids":\["[0-9]+"(,"[0-9]+")*\]\}\n$`, w.Body.String())
	for i := 1; i < len(batch); i++ {
		require.Greater(t, batch[i], batch[i-1], "a batch is in increasing order")
	}
	clock.Add(time.Millisecond)
	assert.Len(t, idsOf(t, request(svc, "GET", "/v1/ids?n=1"), "/v1/ids"), 1)

	w = request(svc, "GET", "/v1/decode/"+id.String())
	require.Equal(t, http.StatusOK, w.Code, "body %s", w.Body)
	assert.JSONEq(t, `{"id":"`+id.String()+`","time":"2026-11-23T12:00:00Z","machine":3,"sequence":`+second+`}`, w.Body.String(),
		"the second ID of the first tick")

	w = request(svc, "GET", "/healthz")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"ok"}`, w.Body.String())
	w = request(svc, "GET", "/readyz")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"ready":true,"machine":3}`, w.Body.String())
}

// Under a layout of at most 53 bits, /v1/id and /v1/ids answer JSON
// numbers, and strings with ?format=string; the default layout's answers
// are the strings of TestServiceAnswers, and ?format=string changes nothing.
func TestServiceJSONNumbers(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	_, g := newTestService(t, clock, ringflake.WithLayout(ringflake.JSLayout()))
	js := New(g, Config{Layout: ringflake.JSLayout()})
	def, _ := newTestService(t, clock)
	tests := []struct {
		svc    *Service
		target string
		want   string // the body's shape
	}{
		{js, "/v1/id", `^\{"id":[0-9]+\}\n$`},
		{js, "/v1/id?format=number", `^\{"id":[0-9]+\}\n$`},
		{js, "/v1/id?format=string", `^\{"id":"[0-9]+"\}\n$`},
		{js, "/v1/ids?n=64", `^\{"ids":\[[0-9]+(,[0-9]+){63}\]\}\n$`},
		{js, "/v1/ids?format=string&n=3", `^\{"ids":\["[0-9]+"(,"[0-9]+"){2}\]\}\n$`},
		{def, "/v1/id?format=string", `^\{"id":"[0-9]+"\}\n$`},
		{def, "/v1/ids?n=2&format=string", `^\{"ids":\["[0-9]+","[0-9]+"\]\}\n$`},
	}
	for _, tt := range tests {
		clock.Add(time.Millisecond) // a tick with all its sequence free
		w := request(tt.svc, "GET", tt.target)
		assert.Regexp(t, tt.want, w.Body.String(), "GET %s", tt.target)
		for _, id := range idsOf(t, w, tt.target) {
			assert.Equal(t, int64(3), tt.svc.layout.Decompose(id).Machine, "GET %s: an ID of machine 3", tt.target)
		}
	}
}

// A failure to issue is a 503 with the error's text, and a Retry-After
// when waiting helps.
func TestServiceIssueErrors(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	// One slot remembers one tick: a step back of 2s then leaves the
	// current tick's unused sequence as the only spare.
	svc, g := newTestService(t, clock, ringflake.WithRingSize(1), ringflake.WithMaxWait(-1))
	request(svc, "GET", "/v1/id")
	clock.Add(-2 * time.Second)
	w := request(svc, "GET", "/v1/ids?n=4096")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, "a batch larger than the spare left; body %s", w.Body)
	for _, path := range []string{"/v1/id", "/v1/ids?n=1", "/api/snowflake/get/k"} {
		for range 4096 { // the spare left, if any, is used up
			if w = request(svc, "GET", path); w.Code != http.StatusOK {
				break
			}
		}
		require.Equal(t, http.StatusServiceUnavailable, w.Code, "%s: body %s", path, w.Body)
		assert.Equal(t, "2", w.Header().Get("Retry-After"), "%s: seconds until the clock is back", path)
		var body map[string]string
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		assert.Contains(t, body["error"], "ringflake: clock is behind and no spare sequence is left: clock 2026-11-23T11:59:58Z is 2s behind", path)
	}
	assert.Equal(t, http.StatusOK, request(svc, "GET", "/readyz").Code, "a clock behind is no reason to be unready")

	require.NoError(t, g.Close())
	w = request(svc, "GET", "/v1/id")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Empty(t, w.Header().Get("Retry-After"), "a closed generator never comes back")
	assert.Contains(t, w.Body.String(), "generator is closed")
	w = request(svc, "GET", "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.JSONEq(t, `{"ready":false,"reason":"ringflake: generator is closed"}`, w.Body.String(), "a closed generator has no machine ID")
	assert.Empty(t, w.Header().Get("Retry-After"), "a closed generator never comes back")
}

// testLeaser is a machineid.Leaser whose lease the test sets, standing in
// for a store.
type testLeaser struct {
	mu    sync.Mutex // protects lease and watch
	lease machineid.Lease
	watch func(machineid.Lease)
}

func (l *testLeaser) MachineID(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease.ID, nil
}

func (l *testLeaser) Watch(fn func(machineid.Lease)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watch = fn
	fn(l.lease)
	return func() {}
}

func (l *testLeaser) Release(time.Time) error { return nil }

// set reports lease to the watcher, as a store's renewal or loss would.
func (l *testLeaser) set(lease machineid.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lease = lease
	l.watch(lease)
}

// /readyz follows the lease: 503 with the reason while it is lost, while
// the clock has not passed the inherited mark, and once the clock is past
// the confirmed mark; issuing fails meanwhile with a 503 and Retry-After.
func TestServiceReadyFollowsTheLease(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	leaser := &testLeaser{lease: machineid.Lease{ID: 9, Held: true, Until: start.Add(10 * time.Second)}}
	g, err := ringflake.New(t.Context(), ringflake.WithMachineIDSource(leaser), ringflake.WithClock(clock.Now), ringflake.WithMaxWait(-1))
	require.NoError(t, err)
	defer g.Close()
	svc := New(g, Config{})
	steps := []struct {
		name   string
		lease  machineid.Lease
		reason string // "" for ready
		retry  string // Retry-After of /v1/id's 503
	}{
		{"held", machineid.Lease{ID: 9, Held: true, Until: start.Add(10 * time.Second)}, "", ""},
		{"lost", machineid.Lease{ID: 9, Err: errors.New("store: connection refused")},
			"machineid: lease lost: store: connection refused: clock 2026-11-23T12:00:00Z", "1"},
		{"regained with a mark ahead", machineid.Lease{ID: 9, Held: true, After: start.Add(1500 * time.Millisecond), Until: start.Add(10 * time.Second)},
			"ringflake: the mark the machine ID's lease inherited is ahead of the clock: clock 2026-11-23T12:00:00Z passes it in 1.501s (at 2026-11-23T12:00:01.501Z)", "2"},
		{"confirmed mark passed", machineid.Lease{ID: 9, Held: true, Until: start.Add(-time.Second)},
			"machineid: lease lost: clock 2026-11-23T12:00:00Z is 999ms past the lease's confirmed mark", "1"},
		{"renewed", machineid.Lease{ID: 9, Held: true, Until: start.Add(10 * time.Second)}, "", ""},
	}
	for _, s := range steps {
		leaser.set(s.lease)
		w := request(svc, "GET", "/readyz")
		id := request(svc, "GET", "/v1/id")
		if s.reason == "" {
			assert.Equal(t, http.StatusOK, w.Code, "%s: /readyz; body %s", s.name, w.Body)
			assert.Equal(t, http.StatusOK, id.Code, "%s: /v1/id; body %s", s.name, id.Body)
			continue
		}
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, "%s: /readyz", s.name)
		assert.JSONEq(t, `{"ready":false,"machine":9,"reason":`+strconv.Quote(s.reason)+`}`, w.Body.String(), s.name)
		assert.Equal(t, s.retry, w.Header().Get("Retry-After"), "%s: /readyz's Retry-After", s.name)
		assert.Equal(t, http.StatusServiceUnavailable, id.Code, "%s: /v1/id; body %s", s.name, id.Body)
		assert.Equal(t, s.retry, id.Header().Get("Retry-After"), "%s: /v1/id's Retry-After", s.name)
		head := request(svc, "HEAD", "/v1/ids?n=5")
		assert.Equal(t, http.StatusServiceUnavailable, head.Code, "%s: HEAD /v1/ids", s.name)
		assert.Equal(t, s.retry, head.Header().Get("Retry-After"), "%s: HEAD /v1/ids's Retry-After", s.name)
	}
	issued := g.Stats().Issued
	assert.Equal(t, http.StatusOK, request(svc, "HEAD", "/v1/ids?n=5").Code, "ready again")
	assert.Equal(t, issued, g.Stats().Issued, "HEAD issues nothing")
}

// Any request gets an answer of a status the API documents, never a
// panic, and every answer but a 200 is a JSON error.
func FuzzServiceRequest(f *testing.F) {
	for _, s := range []string{"/v1/id", "/v1/ids?n=7", "/v1/ids?n=-1", "/v1/decode/383078035417174017",
		"/v1/decode/x", "/api/snowflake/get/k", "/readyz", "/healthz", "/nope"} {
		f.Add("GET", s)
	}
	f.Add("POST", "/v1/id")
	f.Add("HEAD", "/v1/id")
	f.Add("GET", "/.")
	f.Add("GET", "//v1/./id")
	svc, _ := newFuzzService(f)
	f.Fuzz(func(t *testing.T, method, target string) {
		r, err := http.NewRequest(method, "http://localhost"+target, nil)
		if err != nil || r.URL.Path == "" || r.URL.Path[0] != '/' {
			return // not a request a server would hand to a handler
		}
		w := httptest.NewRecorder()
		svc.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK:
			return
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		default:
			t.Fatalf("%s %q: status %d; want 200, 400, 404 or 405 (an unclean path is served, not redirected)", method, target, w.Code)
		}
		var body map[string]string
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error"] == "" {
			t.Fatalf("%s %q: status %d with body %q; want a JSON error", method, target, w.Code, w.Body)
		}
	})
}

// newFuzzService returns a service over a generator on a clock that moves
// 1ms a reading, so that no request waits.
func newFuzzService(f *testing.F) (*Service, *ringflake.Generator) {
	clock := fakeclock.NewTicker(start, time.Millisecond)
	g, err := ringflake.New(f.Context(), ringflake.WithMachineID(3), ringflake.WithClock(clock.Now))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = g.Close() })
	return New(g, Config{}), g
}

// HEAD works wherever GET does: the same status and headers, no body, and
// on the ID endpoints no ID issued: a HEAD asks whether a GET would be
// answered, it does not take an ID and throw it away.
func TestServiceHEAD(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	svc, g := newTestService(t, clock)
	srv := httptest.NewServer(svc)
	defer srv.Close()
	paths := []string{"/healthz", "/readyz", "/metrics", "/v1/id", "/v1/ids?n=4096", "/v1/decode/0", "/api/snowflake/get/k", "/v1/ids?n=0", "/v1/decode/1", "/nope"}
	heads := map[string]*http.Response{}
	for _, path := range paths {
		head, err := srv.Client().Head(srv.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(head.Body)
		head.Body.Close()
		assert.Empty(t, body, "HEAD %s has no body", path)
		heads[path] = head
	}
	assert.Zero(t, g.Stats().Issued, "HEAD issues nothing")
	w := request(svc, "GET", "/metrics")
	assert.Contains(t, w.Body.String(), "\nringflake_ids_issued_total 0\n")
	for _, path := range paths {
		clock.Add(time.Millisecond) // a fresh tick for each GET: a batch of 4096 needs a whole one
		get, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		get.Body.Close()
		head := heads[path]
		assert.Equal(t, get.StatusCode, head.StatusCode, "HEAD %s", path)
		for _, h := range []string{"Content-Type", "Cache-Control", "Retry-After", "Allow"} {
			assert.Equal(t, get.Header.Get(h), head.Header.Get(h), "HEAD %s: %s", path, h)
		}
	}
	assert.Equal(t, http.StatusBadRequest, heads["/v1/ids?n=0"].StatusCode, "bad input is a 400 for HEAD as for GET")
	assert.Empty(t, heads["/v1/ids?n=4096"].Header.Get("Content-Length"), "only the IDs would tell a batch's length")
	assert.Equal(t, uint64(1+4096+1), g.Stats().Issued, "the GETs' IDs alone")
}

// An unclean path is served as its clean form, never redirected with an
// HTML body.
func TestServiceUncleanPaths(t *testing.T) {
	t.Parallel()
	svc, _ := newTestService(t, fakeclock.New(start))
	for _, target := range []string{"//v1/id", "/v1/./id", "/v1//id", "/x/../v1/id"} {
		w := request(svc, "GET", target)
		assert.Len(t, idsOf(t, w, "/v1/id"), 1, "GET %s is /v1/id", target)
	}
	w := request(svc, "GET", "/v1/./id/")
	assert.Equal(t, http.StatusNotFound, w.Code, "a trailing slash stays")
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
}

// Before its generator is made, the service answers /healthz, and /readyz
// and the ID endpoints with 503 and the reason; then it serves.
func TestServiceBeforeReady(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(start)
	var wait atomic.Int64 // the Starting wait, in nanoseconds
	svc := New(nil, Config{Starting: func() (string, int64, time.Duration) {
		return "acquiring the machine ID from the lease redis://x", -1, time.Duration(wait.Load())
	}})
	assert.Equal(t, http.StatusOK, request(svc, "GET", "/healthz").Code)
	w := request(svc, "GET", "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.JSONEq(t, `{"ready":false,"reason":"acquiring the machine ID from the lease redis://x"}`, w.Body.String(),
		"no machine ID yet: none is given")
	assert.Equal(t, "1", w.Header().Get("Retry-After"), "an unknown wait")
	for _, path := range []string{"/v1/id", "/v1/ids?n=3", "/api/snowflake/get/k"} {
		for _, method := range []string{"GET", "HEAD"} {
			w = request(svc, method, path)
			assert.Equal(t, http.StatusServiceUnavailable, w.Code, path)
			assert.Equal(t, "1", w.Header().Get("Retry-After"), "%s %s: an unknown wait", method, path)
			assert.JSONEq(t, `{"error":"not ready: acquiring the machine ID from the lease redis://x"}`, w.Body.String(), path)
		}
	}
	// Retry-After is the wait, in whole seconds rounded up.
	for wt, want := range map[time.Duration]string{9*time.Second + time.Millisecond: "10", 5 * time.Second: "5", 4500 * time.Millisecond: "5", time.Millisecond: "1"} {
		wait.Store(int64(wt))
		for _, path := range []string{"/v1/id", "/readyz"} {
			assert.Equal(t, want, request(svc, "GET", path).Header().Get("Retry-After"), "%s while %v are left", path, wt)
		}
	}
	assert.Equal(t, http.StatusOK, request(svc, "GET", "/v1/decode/0").Code, "decoding needs no generator")
	assert.Equal(t, http.StatusOK, request(svc, "GET", "/metrics").Code)

	g, err := ringflake.New(t.Context(), ringflake.WithMachineID(3), ringflake.WithClock(clock.Now))
	require.NoError(t, err)
	defer g.Close()
	svc.Ready(g)
	assert.Equal(t, http.StatusOK, request(svc, "GET", "/readyz").Code)
	assert.Len(t, idsOf(t, request(svc, "GET", "/v1/id"), "/v1/id"), 1)
	assert.Contains(t, request(svc, "GET", "/metrics").Body.String(), "\nringflake_ids_issued_total 1\n")
}

// /v1/decode reads every form decode reads, under the service's layout
// (0123456789012 is decimal alone under JSLayout: read as Base32 it is too
// wide for it), and shows the datacenter and worker of a split layout.
func TestServiceDecodeForms(t *testing.T) {
	t.Parallel()
	id := ringflake.ID(382862780006428673)
	split := ringflake.DefaultLayout()
	split.DatacenterBits = 5
	want := `{"id":"382862780006428673","time":"2026-11-22T12:00:00Z","machine":7,"sequence":1}`
	jsID, err := ringflake.JSLayout().Compose(ringflake.Parts{Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Machine: 5, Sequence: 7})
	require.NoError(t, err)
	tests := []struct {
		target string
		layout ringflake.Layout
		want   string
	}{
		{"/v1/decode/" + id.String(), ringflake.Layout{}, want},
		{"/v1/decode/" + id.Base32(), ringflake.Layout{}, want},
		{"/v1/decode/" + id.Base58() + "?format=base58", ringflake.Layout{}, want},
		{"/v1/decode/" + id.Base58(), ringflake.Layout{}, want},
		{"/v1/decode/0123456789012?format=base32", ringflake.Layout{}, `{"id":"38390726480134178","time":"2024-04-15T22:31:02.458Z","machine":72,"sequence":34,"hint":"38390726480134178: time 2024-04-15T22:31:02.458Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID?"}`},
		{"/v1/decode/9007199254740991", ringflake.JSLayout(), `{"id":"9007199254740991","time":"2093-09-06T15:47:35.551Z","machine":63,"sequence":63,"hint":"9007199254740991: time 2093-09-06T15:47:35.551Z is in the future: an ID of another layout, or not an ID?"}`},
		{"/v1/decode/0123456789012", ringflake.JSLayout(), `{"id":"123456789012","time":"2024-01-01T08:22:20.817Z","machine":40,"sequence":20,"hint":"123456789012: time 2024-01-01T08:22:20.817Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID?"}`},
		{"/v1/decode/" + id.Base32() + "?format=base32", ringflake.Layout{}, want},
		{"/v1/decode/" + strings.ToLower(id.Base32()), ringflake.Layout{}, want},
		{"/v1/decode/%20" + id.String() + "%20", ringflake.Layout{}, want},
		{"/v1/decode/" + jsID.String(), ringflake.Layout{}, `{"id":"376012800000327","time":"2024-01-02T00:54:08.437Z","machine":512,"sequence":327,` +
			`"hint":"376012800000327: time 2024-01-02T00:54:08.437Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID? With serve --layout js it reads time 2026-11-28T12:00:00Z, machine 5, sequence 7."}`},
		{"/v1/decode/" + id.String(), split, `{"id":"382862780006428673","time":"2026-11-22T12:00:00Z","machine":7,"datacenter":0,"worker":7,"sequence":1}`},
	}
	for _, tt := range tests {
		svc := New(nil, Config{Layout: tt.layout})
		w := request(svc, "GET", tt.target)
		assert.Equal(t, http.StatusOK, w.Code, "%s: body %s", tt.target, w.Body)
		assert.JSONEq(t, tt.want, w.Body.String(), tt.target)
	}
}

// /readyz before the generator is made gives the machine ID the service is
// getting, the one its reason names, or none while it has none.
func TestServiceReadyzMachineWhileStarting(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		reason  string
		machine int64
		want    string
	}{
		{"acquiring", "acquiring the machine ID from the lease redis://x", -1,
			`{"ready":false,"reason":"acquiring the machine ID from the lease redis://x"}`},
		{"acquiring one not held yet", "acquiring the machine ID from the lease redis://x: machine ID 4 is not held", 4,
			`{"ready":false,"machine":4,"reason":"acquiring the machine ID from the lease redis://x: machine ID 4 is not held"}`},
		{"starting with machine ID 0", "starting with machine ID 0 from the lease redis://x", 0,
			`{"ready":false,"machine":0,"reason":"starting with machine ID 0 from the lease redis://x"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := New(nil, Config{Starting: func() (string, int64, time.Duration) { return tt.reason, tt.machine, 0 }})
			w := request(svc, "GET", "/readyz")
			assert.Equal(t, http.StatusServiceUnavailable, w.Code)
			assert.JSONEq(t, tt.want, w.Body.String())
		})
	}
}
