package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/ringflakeprom"
)

// Bounds of a batch, and its default size limit.
const (
	defaultMaxBatch = 4096    // one tick's sequence space in the default layout
	maxMaxBatch     = 1 << 16 // 16 ticks; about 1.3 MB of JSON
)

// service answers the ID service's HTTP API from one generator:
//
//	GET /api/snowflake/get/{key}  an ID as plain decimal text, as Meituan Leaf answers; the key is ignored
//	GET /v1/id                    {"id":"..."}
//	GET /v1/ids?n=N               {"ids":["...",...]}, N in 1..maxBatch, from one NextN call
//	GET /v1/decode/{id}           {"id":"...","time":"...","machine":M,"sequence":S}
//	GET /metrics                  the generator's metrics, and the Go runtime's and the process's
//	GET /healthz                  200 while the process runs
//	GET /readyz                   200 while the generator can issue now, else 503 with the reason
//
// Every other path is a 404 and every other method a 405, each with a JSON
// body {"error":"..."}, as is bad input (400). A failure to issue is a 503
// with the error's text and, when waiting helps, Retry-After. A service is
// safe for concurrent use.
type service struct {
	g        *ringflake.Generator // written once by newService
	layout   ringflake.Layout     // g's, written once by newService
	clock    func() time.Time     // the generator's clock, for /readyz; written once by newService
	maxBatch int                  // written once by newService
	mux      *http.ServeMux       // written once by newService

	ids  sync.Pool // *[]ringflake.ID with room for maxBatch, for /v1/ids
	bufs sync.Pool // *[]byte, for /v1/ids's body
}

// serviceConfig configures a service; the zero value is the default.
type serviceConfig struct {
	maxBatch int              // the most IDs /v1/ids hands out at once; 0 means defaultMaxBatch
	clock    func() time.Time // the generator's clock (ringflake.WithClock); nil means time.Now
}

// newService returns the HTTP API over g, which stays the caller's to
// Close. c.maxBatch must be 0 or in 1..maxMaxBatch.
func newService(g *ringflake.Generator, c serviceConfig) *service {
	if c.maxBatch == 0 {
		c.maxBatch = defaultMaxBatch
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	s := &service{g: g, layout: g.Layout(), clock: c.clock, maxBatch: c.maxBatch, mux: http.NewServeMux()}
	s.ids.New = func() any { b := make([]ringflake.ID, s.maxBatch); return &b }
	s.bufs.New = func() any { b := make([]byte, 0, 64); return &b }

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		ringflakeprom.NewCollector(g, ringflakeprom.WithClock(c.clock)),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Each route is registered for every method, so that a wrong one gets
	// the JSON 405 of onlyGET rather than ServeMux's plain-text one.
	s.mux.Handle("/api/snowflake/get/{key}", onlyGET(s.leaf))
	s.mux.Handle("/v1/id", onlyGET(s.id))
	s.mux.Handle("/v1/ids", onlyGET(s.batch))
	s.mux.Handle("/v1/decode/{id}", onlyGET(s.decode))
	s.mux.Handle("/metrics", onlyGET(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP))
	s.mux.Handle("/healthz", onlyGET(healthz))
	s.mux.Handle("/readyz", onlyGET(s.readyz))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		replyError(w, http.StatusNotFound, fmt.Sprintf("no such path %q; see ringflake serve -h", r.URL.Path))
	})
	return s
}

// ServeHTTP routes a request.
func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Header values shared by every response; net/http only reads them.
var (
	textType = []string{"text/plain; charset=utf-8"}
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"} // every GET of an ID is a new ID: no cache may answer it
)

// onlyGET lets GET requests through to h, and answers others with 405.
func onlyGET(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			replyError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s; want GET", r.Method))
			return
		}
		h(w, r)
	})
}

// leaf answers as Meituan Leaf's Snowflake endpoint does: the ID in plain
// decimal text, without a newline. Leaf's Snowflake mode ignores the key
// (only its segment mode uses it), and so does this.
func (s *service) leaf(w http.ResponseWriter, _ *http.Request) {
	id, err := s.g.NextID()
	if err != nil {
		issueError(w, err)
		return
	}
	var buf [20]byte
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = textType, noStore
	_, _ = w.Write(strconv.AppendInt(buf[:0], int64(id), 10))
}

// id answers {"id":"..."}.
func (s *service) id(w http.ResponseWriter, _ *http.Request) {
	id, err := s.g.NextID()
	if err != nil {
		issueError(w, err)
		return
	}
	var buf [32]byte
	b := append(buf[:0], `{"id":"`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, "\"}\n"...)
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonType, noStore
	_, _ = w.Write(b)
}

// batch answers {"ids":["...",...]} with n IDs from one NextN call. A
// batch that fails part way is a 503: the IDs it did get are dropped,
// unused, rather than handed out short.
func (s *service) batch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("n") {
		replyError(w, http.StatusBadRequest, fmt.Sprintf("n is missing; want /v1/ids?n=N with N in 1..%d", s.maxBatch))
		return
	}
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n < 1 || n > s.maxBatch {
		replyError(w, http.StatusBadRequest, fmt.Sprintf("n = %q; want an integer in 1..%d", q.Get("n"), s.maxBatch))
		return
	}
	ids := s.ids.Get().(*[]ringflake.ID)
	defer s.ids.Put(ids)
	if _, err := s.g.NextN((*ids)[:n]); err != nil {
		issueError(w, err)
		return
	}
	buf := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(buf)
	b := append((*buf)[:0], `{"ids":[`...)
	for i, id := range (*ids)[:n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, '"')
	}
	b = append(b, "]}\n"...)
	*buf = b
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonType, noStore
	h["Content-Length"] = []string{strconv.Itoa(len(b))} // else net/http chunks a body this long
	_, _ = w.Write(b)
}

// decoded is /v1/decode's answer.
type decoded struct {
	ID       ringflake.ID `json:"id"` // a string in JSON
	Time     string       `json:"time"`
	Machine  int64        `json:"machine"`
	Sequence int64        `json:"sequence"`
}

// decode answers the parts of a decimal ID under the generator's layout.
func (s *service) decode(w http.ResponseWriter, r *http.Request) {
	id, err := ringflake.ParseID(r.PathValue("id"))
	if err != nil {
		replyError(w, http.StatusBadRequest, err.Error())
		return
	}
	p := s.layout.Decompose(id)
	replyJSON(w, http.StatusOK, decoded{ID: id, Time: p.Time.UTC().Format(time.RFC3339Nano), Machine: p.Machine, Sequence: p.Sequence})
}

// healthz answers 200 for as long as the process serves at all.
func healthz(w http.ResponseWriter, _ *http.Request) {
	replyJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is /readyz's answer.
type readiness struct {
	Ready   bool   `json:"ready"`
	Machine int64  `json:"machine"`
	Reason  string `json:"reason,omitempty"`
}

// readyz answers 200 while the generator can issue now, and 503 with the
// reason while it cannot.
func (s *service) readyz(w http.ResponseWriter, _ *http.Request) {
	l := s.g.Lease()
	reason := notReady(l.Held, l.Err, l.After, l.Until, s.clock())
	if reason != "" {
		replyJSON(w, http.StatusServiceUnavailable, readiness{Machine: l.ID, Reason: reason})
		return
	}
	replyJSON(w, http.StatusOK, readiness{Ready: true, Machine: l.ID})
}

// notReady returns why a generator whose lease is in the state given
// cannot issue at now, or "" if it can: it holds its machine ID, the clock
// has passed the mark the ID inherited, and it has not passed the mark the
// store confirmed.
func notReady(held bool, cause error, after, until, now time.Time) string {
	switch {
	case !held && cause != nil:
		return "machine ID lease is not held: " + cause.Error()
	case !held:
		return "machine ID lease is not held"
	case !after.IsZero() && !now.After(after):
		return fmt.Sprintf("waiting for the clock to pass the machine ID's inherited mark %s, %v ahead",
			after.UTC().Format(time.RFC3339Nano), after.Sub(now))
	case !until.IsZero() && now.After(until):
		return fmt.Sprintf("the clock is %v past the lease's confirmed mark %s; waiting for a renewal",
			now.Sub(until), until.UTC().Format(time.RFC3339Nano))
	}
	return ""
}

// issueError answers a failure to issue: 503 with the error's text, and a
// Retry-After when waiting helps: the seconds until a clock that is behind
// or before an inherited mark has caught up, or one for a lease being
// regained or a tick that was full. A clock outside the layout's range, or
// a closed generator, gets none.
func issueError(w http.ResponseWriter, err error) {
	var ce *ringflake.ClockError
	switch {
	case errors.Is(err, ringflake.ErrClockBehind), errors.Is(err, ringflake.ErrMarkAhead):
		by := time.Second
		if errors.As(err, &ce) {
			by = ce.By
		}
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(by.Seconds())))))
	case errors.Is(err, ringflake.ErrLeaseLost), errors.Is(err, ringflake.ErrSequenceExhausted):
		w.Header().Set("Retry-After", "1")
	}
	replyError(w, http.StatusServiceUnavailable, err.Error())
}

// replyError answers {"error":msg} with status code.
func replyError(w http.ResponseWriter, code int, msg string) {
	replyJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

// replyJSON answers v as JSON with status code. It is for answers off the
// issuing path, whose cost does not matter.
func replyJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only a programming error: every value here marshals
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonType, noStore
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
