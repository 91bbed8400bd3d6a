// Package serve is the HTTP API of "ringflake serve": the handler of its
// routes, and a listener that words net/http's own error answers as JSON.
package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/idtext"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/ringflakeprom"
)

// The default of Config.MaxBatch, and its largest value.
const (
	DefaultMaxBatch = 4096    // one tick's sequence space in the default layout
	MaxBatchLimit   = 1 << 16 // 16 ticks; about 1.3 MB of JSON
)

// Service answers the ID service's HTTP API from one generator:
//
//	GET /                         a status page for people: the lease, the counts, the layout, and a form that decodes an ID (?id=)
//	GET /api/snowflake/get/{key}  an ID as plain decimal text, as Meituan Leaf answers; the key is ignored
//	GET /v1/id                    {"id":"..."}, or {"id":N} under a layout of at most 53 bits
//	GET /v1/ids?n=N               {"ids":["...",...]} or {"ids":[N,...]} likewise, N in 1..maxBatch, from one NextN call
//	GET /v1/decode/{id}           {"id":"...","time":"...","machine":M,"sequence":S}; decimal or Base32, ?format=base58
//	GET /metrics                  the generator's metrics, and the Go runtime's and the process's
//	GET /healthz                  200 while the process runs, from the moment it listens
//	GET /readyz                   200 while the generator can issue now, else 503 with the reason
//
// /v1/id and /v1/ids write IDs as JSON numbers when every ID of the layout
// is below 2^53, and so exact as a JavaScript Number (JSLayout), and as
// strings otherwise; ?format=string asks for strings under any layout, and
// ?format=number for numbers, which a wider layout refuses with a 400.
//
// HEAD answers as GET would, status and headers, without the body and
// without issuing: an ID endpoint answers 200 while the generator is ready
// (Generator.Ready), else the 503 a GET would get. Until the generator is
// ready (while its machine ID is acquired, or its inherited mark waited
// out), /readyz and the ID endpoints answer 503 with the reason. Every
// other path is a 404 and every other method a 405, each with a JSON body
// {"error":"..."}, as is bad input (400). An unclean path ("//v1/id",
// "/v1/./id") is served as its clean form. A failure to issue is a 503
// with the error's text and, when waiting helps, Retry-After. A Service is
// safe for concurrent use.
type Service struct {
	gen      atomic.Pointer[ringflake.Generator]   // nil until ready; stored once
	starting func() (string, int64, time.Duration) // why there is no generator yet, the machine ID, the wait; written once by New
	layout   ringflake.Layout                      // the generator's, written once by New
	numbers  bool                                  // IDs are JSON numbers unless asked otherwise; written once by New
	maxBatch int                                   // written once by New
	lease    func() machineid.Lease                // the lease's latest report before the generator is ready; written once by New
	mux      *http.ServeMux                        // written once by New
	reg      *prometheus.Registry                  // written by New, and by Ready once

	ids  sync.Pool // *[]ringflake.ID with room for maxBatch, for /v1/ids
	bufs sync.Pool // *[]byte, for /v1/ids's body
}

// Config configures a Service; the zero value is the default.
type Config struct {
	MaxBatch int              // the most IDs /v1/ids hands out at once; 0 means DefaultMaxBatch
	Layout   ringflake.Layout // the generator's layout, for /v1/decode before it is ready; zero means the default
	// Starting says why the service is not ready before its generator is,
	// the machine ID it is getting, or -1 if none yet, and how long until
	// it may be ready, or 0 if that is not known; nil means "starting",
	// for an unknown time.
	Starting func() (reason string, machine int64, wait time.Duration)
	// Lease is the lease's latest report before the generator is ready,
	// for the status page; nil means none (machine ID -1).
	Lease func() machineid.Lease
}

// New returns the HTTP API over g, which stays the caller's to Close. A
// nil g means the generator is still being made: the service answers
// /healthz at once, and the rest once Ready is called. c.MaxBatch must be
// 0 or in 1..MaxBatchLimit.
func New(g *ringflake.Generator, c Config) *Service {
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Layout == (ringflake.Layout{}) {
		c.Layout = ringflake.DefaultLayout()
	}
	if c.Starting == nil {
		c.Starting = func() (string, int64, time.Duration) { return "starting", -1, 0 }
	}
	if c.Lease == nil {
		c.Lease = func() machineid.Lease { return machineid.Lease{ID: -1} }
	}
	s := &Service{starting: c.Starting, lease: c.Lease, layout: c.Layout, maxBatch: c.MaxBatch, mux: http.NewServeMux()}
	// A generator issues only IDs of its layout, each below 2^bits; at 53
	// bits or fewer every one is at most 2^53-1, which a float64, and so a
	// JavaScript Number, holds exactly (ringflake.NumberID's bound).
	s.numbers = c.Layout.TimeBits+c.Layout.MachineBits+c.Layout.SequenceBits <= maxNumberBits
	s.ids.New = func() any { b := make([]ringflake.ID, s.maxBatch); return &b }
	s.bufs.New = func() any { b := make([]byte, 0, 64); return &b }

	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Each route is registered for every method, so that a wrong one gets
	// the JSON 405 of onlyGET rather than ServeMux's plain-text one.
	s.mux.Handle("/api/snowflake/get/{key}", onlyGET(s.issuing(s.leaf)))
	s.mux.Handle("/v1/id", onlyGET(s.issuing(s.id)))
	s.mux.Handle("/v1/ids", onlyGET(s.issuing(s.batch)))
	s.mux.Handle("/v1/decode/{id}", onlyGET(s.decode))
	s.mux.Handle("/metrics", onlyGET(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}).ServeHTTP))
	s.mux.Handle("/healthz", onlyGET(healthz))
	s.mux.Handle("/readyz", onlyGET(s.readyz))
	s.mux.Handle("/{$}", onlyGET(s.status))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		replyError(w, http.StatusNotFound, fmt.Sprintf("no such path %s; see ringflake serve -h", idtext.Quote(r.URL.Path)))
	})
	if g != nil {
		s.Ready(g)
	}
	return s
}

// Ready makes the service answer from g. Call it once.
func (s *Service) Ready(g *ringflake.Generator) {
	s.reg.MustRegister(ringflakeprom.NewCollector(g))
	s.gen.Store(g)
}

// ServeHTTP routes a request. An unclean path is routed as its clean form,
// where ServeMux would answer a redirect with an HTML body.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := cleanPath(r.URL.Path); p != r.URL.Path {
		r2 := *r
		u := *r.URL
		u.Path, u.RawPath = p, ""
		r2.URL = &u
		r = &r2
	}
	s.mux.ServeHTTP(w, r)
}

// cleanPath returns p with its "//", "." and ".." resolved, as ServeMux
// wants it, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// issuer is what the ID endpoints issue from: the generator for GET, and
// for HEAD a stand-in that issues nothing.
type issuer interface {
	NextID() (ringflake.ID, error)
	NextN(dst []ringflake.ID) (int, error)
}

// dryRun stands in for a generator on HEAD: it answers as the generator
// would now, by Generator.Ready, and issues nothing. Its IDs are zeros,
// which the handlers do not write for HEAD.
type dryRun struct{ g *ringflake.Generator }

func (r dryRun) NextID() (ringflake.ID, error) { return 0, r.g.Ready() }

func (r dryRun) NextN(dst []ringflake.ID) (int, error) {
	if err := r.g.Ready(); err != nil {
		return 0, err
	}
	return len(dst), nil
}

// issuing passes a request on to h, which issues IDs, once the service has
// a generator, and answers 503 with the reason until then: with a
// Retry-After of the wait Config.Starting gives, or 1. HEAD goes to h with
// a dryRun in place of the generator.
func (s *Service) issuing(h func(issuer, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g := s.gen.Load()
		switch {
		case g == nil:
			reason, _, wait := s.starting()
			w.Header().Set("Retry-After", seconds(wait))
			replyError(w, http.StatusServiceUnavailable, "not ready: "+OneLine(reason))
		case r.Method == http.MethodHead:
			h(dryRun{g}, w, r)
		default:
			h(g, w, r)
		}
	}
}

// Header values shared by every response; net/http only reads them.
var (
	textType = []string{"text/plain; charset=utf-8"}
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"} // every GET of an ID is a new ID: no cache may answer it
)

// onlyGET lets GET and HEAD requests through to h, and answers others
// with 405. net/http drops the body of an answer to HEAD.
func onlyGET(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			replyError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s; want GET or HEAD", idtext.Cut(r.Method)))
			return
		}
		h(w, r)
	})
}

// leaf answers as Meituan Leaf's Snowflake endpoint does: the ID in plain
// decimal text, without a newline. Leaf's Snowflake mode ignores the key
// (only its segment mode uses it), and so does this.
func (s *Service) leaf(g issuer, w http.ResponseWriter, r *http.Request) {
	id, err := g.NextID()
	if err != nil {
		issueError(w, err)
		return
	}
	var buf [20]byte
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = textType, noStore
	if r.Method != http.MethodHead {
		_, _ = w.Write(strconv.AppendInt(buf[:0], int64(id), 10))
	}
}

// id answers {"id":"..."}, or {"id":N} (Service's doc says when).
func (s *Service) id(g issuer, w http.ResponseWriter, r *http.Request) {
	quote, msg := s.idForm(r.URL.RawQuery)
	if msg != "" {
		replyError(w, http.StatusBadRequest, msg)
		return
	}
	id, err := g.NextID()
	if err != nil {
		issueError(w, err)
		return
	}
	var buf [32]byte
	b := appendID(append(buf[:0], `{"id":`...), id, quote)
	b = append(b, "}\n"...)
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonType, noStore
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// batch answers {"ids":["...",...]}, or {"ids":[N,...]}, with n IDs from one NextN call. A
// batch that fails part way is a 503: the IDs it did get are dropped,
// unused, rather than handed out short. HEAD gets the headers without
// Content-Length, which only the IDs would tell.
func (s *Service) batch(g issuer, w http.ResponseWriter, r *http.Request) {
	n, msg := batchSize(r.URL.RawQuery, s.maxBatch)
	quote, fmsg := s.idForm(r.URL.RawQuery)
	if msg == "" {
		msg = fmsg
	}
	if msg != "" {
		replyError(w, http.StatusBadRequest, msg)
		return
	}
	ids := s.ids.Get().(*[]ringflake.ID)
	defer s.ids.Put(ids)
	if _, err := g.NextN((*ids)[:n]); err != nil {
		issueError(w, err)
		return
	}
	if r.Method == http.MethodHead {
		h := w.Header()
		h["Content-Type"], h["Cache-Control"] = jsonType, noStore
		return
	}
	buf := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(buf)
	b := append((*buf)[:0], `{"ids":[`...)
	for i, id := range (*ids)[:n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendID(b, id, quote)
	}
	b = append(b, "]}\n"...)
	*buf = b
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = jsonType, noStore
	h["Content-Length"] = []string{strconv.Itoa(len(b))} // else net/http chunks a body this long
	_, _ = w.Write(b)
}

// maxNumberBits is the widest layout whose IDs /v1/id and /v1/ids write as
// JSON numbers: 2^53-1 is JavaScript's largest exact integer.
const maxNumberBits = 53

// idForm reads ?format= from a raw query, as batchSize reads n: it says
// whether the IDs are written as JSON strings, or else gives the reason
// for a 400. Without it, IDs are numbers if s.numbers.
func (s *Service) idForm(rawQuery string) (quote bool, msg string) {
	var v string
	seen := 0
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if k, val, _ := strings.Cut(pair, "="); k == "format" {
			v, seen = val, seen+1
		}
	}
	switch {
	case seen == 0:
		return !s.numbers, ""
	case seen > 1:
		return false, fmt.Sprintf("format is given %d times; give it once, string or number", seen)
	case v == "string":
		return true, ""
	case v == "number" && s.numbers:
		return false, ""
	case v == "number":
		bits := s.layout.TimeBits + s.layout.MachineBits + s.layout.SequenceBits
		return false, fmt.Sprintf("format = number, but this layout's IDs have %d bits, above the %d a JavaScript Number holds exactly; "+
			"want format=string (--layout js issues numbers)", bits, maxNumberBits)
	}
	return false, fmt.Sprintf("format = %s; want string or number", idtext.Quote(v))
}

// appendID appends id to b as a JSON string if quote, else as a number.
func appendID(b []byte, id ringflake.ID, quote bool) []byte {
	if quote {
		b = append(b, '"')
	}
	b = strconv.AppendInt(b, int64(id), 10)
	if quote {
		b = append(b, '"')
	}
	return b
}

// batchSize reads n from a raw query: a plain decimal in 1..maxBatch,
// given once. It returns the reason for a 400 if there is none such, with
// the input it repeats cut as idtext.Quote cuts it. The raw query is read rather
// than url.Values, which decodes "+3" to " 3" and drops "n=3;x" unseen.
func batchSize(rawQuery string, maxBatch int) (n int, msg string) {
	var vals []string
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if k, v, _ := strings.Cut(pair, "="); k == "n" {
			vals = append(vals, v)
		}
	}
	switch {
	case len(vals) == 0:
		return 0, fmt.Sprintf("n is missing; want /v1/ids?n=N with N in 1..%d", maxBatch)
	case len(vals) > 1:
		return 0, fmt.Sprintf("n is given %d times; give it once, a decimal in 1..%d", len(vals), maxBatch)
	}
	v := vals[0]
	if len(v) > 0 && len(v) <= 9 && strings.Trim(v, "0123456789") == "" {
		n, _ = strconv.Atoi(v) // 9 digits fit an int
	}
	if n < 1 || n > maxBatch {
		return 0, fmt.Sprintf("n = %s; want an integer in 1..%d", idtext.Quote(v), maxBatch)
	}
	return n, ""
}

// decoded is /v1/decode's answer. Datacenter and Worker are there when the
// layout splits the machine ID.
type decoded struct {
	ID         ringflake.ID `json:"id"` // a string in JSON
	Time       string       `json:"time"`
	Machine    int64        `json:"machine"`
	Datacenter *int64       `json:"datacenter,omitempty"`
	Worker     *int64       `json:"worker,omitempty"`
	Sequence   int64        `json:"sequence"`
	Hint       string       `json:"hint,omitempty"` // for a time no ringflake ID has, as of an ID of another layout
}

// decode answers the parts of an ID under the generator's layout, read as
// the decode command reads it: in the one form that reads it, or the form
// ?format= names (decimal, base32, base58, auto). An ID two forms read is
// a 400 that gives both readings.
func (s *Service) decode(w http.ResponseWriter, r *http.Request) {
	format := "auto"
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && q.Has("format") {
		format = q.Get("format")
	}
	if !idtext.Known(format) {
		replyError(w, http.StatusBadRequest, fmt.Sprintf("format = %s; want %s", idtext.Quote(format), idtext.Formats))
		return
	}
	reader := idtext.Reader{Layout: s.layout, Ask: "?format="}
	id, err := reader.Parse(r.PathValue("id"), format)
	if err != nil {
		replyError(w, http.StatusBadRequest, err.Error())
		return
	}
	replyJSON(w, http.StatusOK, s.decoded(id, reader))
}

// decoded returns the parts of id under the layout, with reader's hint.
func (s *Service) decoded(id ringflake.ID, reader idtext.Reader) decoded {
	p := s.layout.Decompose(id)
	d := decoded{ID: id, Time: p.Time.UTC().Format(time.RFC3339Nano), Machine: p.Machine, Sequence: p.Sequence,
		Hint: reader.Hint(id, "serve --layout ")}
	if s.layout.DatacenterBits > 0 {
		d.Datacenter, d.Worker = &p.Datacenter, &p.Worker
	}
	return d
}

// healthz answers 200 for as long as the process serves at all.
func healthz(w http.ResponseWriter, _ *http.Request) {
	replyJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is /readyz's answer. Machine is the machine ID the generator
// issues with, or the one it is getting, and is left out while there is
// none, as while the ID is acquired.
type readiness struct {
	Ready   bool   `json:"ready"`
	Machine *int64 `json:"machine,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// machineID returns id for readiness.Machine: nil for -1, none.
func machineID(id int64) *int64 {
	if id < 0 {
		return nil
	}
	return &id
}

// Readiness is whether the service can issue now, as /readyz answers it
// and the gRPC health service follows it.
type Readiness struct {
	Ready   bool
	Machine int64         // the machine ID held, or being acquired; -1 if none
	Reason  string        // why it is not ready; "" when it is
	Wait    time.Duration // how long waiting may take, when waiting helps; else 0
	Retry   bool          // whether waiting helps
}

// Readiness reports whether the service can issue now: not while there is
// no generator yet (Config.Starting says why), nor while the generator's
// Ready fails (its error is the reason). It is safe for concurrent use.
func (s *Service) Readiness() Readiness {
	g := s.gen.Load()
	if g == nil {
		reason, machine, wait := s.starting()
		return Readiness{Machine: machine, Reason: OneLine(reason), Wait: wait, Retry: true}
	}
	machine := g.Lease().ID
	if err := g.Ready(); err != nil {
		wait, retry := RetryDelay(err)
		return Readiness{Machine: machine, Reason: OneLine(err.Error()), Wait: wait, Retry: retry}
	}
	return Readiness{Ready: true, Machine: machine}
}

// Generator returns the generator the service answers from, or nil before
// Ready.
func (s *Service) Generator() *ringflake.Generator { return s.gen.Load() }

// Layout returns the layout the service decodes with.
func (s *Service) Layout() ringflake.Layout { return s.layout }

// MaxBatch returns the most IDs one request may ask for.
func (s *Service) MaxBatch() int { return s.maxBatch }

// readyz answers 200 while the generator can issue now, and 503 while it
// cannot, or while there is none yet: with the reason, the text of the
// error Generator.Ready gives, and a Retry-After when waiting helps.
func (s *Service) readyz(w http.ResponseWriter, _ *http.Request) {
	r := s.Readiness()
	if !r.Ready {
		if r.Retry {
			w.Header().Set("Retry-After", seconds(r.Wait))
		}
		replyJSON(w, http.StatusServiceUnavailable, readiness{Machine: machineID(r.Machine), Reason: r.Reason})
		return
	}
	replyJSON(w, http.StatusOK, readiness{Ready: true, Machine: machineID(r.Machine)})
}

// issueError answers a failure to issue: 503 with the error's text, and a
// Retry-After when waiting helps.
func issueError(w http.ResponseWriter, err error) {
	retryAfter(w, err)
	replyError(w, http.StatusServiceUnavailable, OneLine(err.Error()))
}

// OneLine returns msg on one line, for an error a caller shows as one: a
// store's error may span lines (a server's multi-line reply, say), and
// each line break, with the blanks around it, becomes "; ".
func OneLine(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	lines := strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' })
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "; ")
}

// retryAfter sets Retry-After for an error of NextID or Ready when waiting
// helps (RetryDelay).
func retryAfter(w http.ResponseWriter, err error) {
	if wait, ok := RetryDelay(err); ok {
		w.Header().Set("Retry-After", seconds(wait))
	}
}

// RetryDelay says whether waiting helps after an error of NextID or Ready,
// and for how long, 0 if not known: until a clock that is behind or before
// an inherited mark has caught up, or an unknown time for a lease being
// regained or a tick that was full. A clock outside the layout's range, or
// a closed generator, gets false.
func RetryDelay(err error) (time.Duration, bool) {
	var ce *ringflake.ClockError
	switch {
	case errors.Is(err, ringflake.ErrClockBehind), errors.Is(err, ringflake.ErrMarkAhead):
		var by time.Duration
		if errors.As(err, &ce) {
			by = ce.By
		}
		return by, true
	case errors.Is(err, ringflake.ErrLeaseLost), errors.Is(err, ringflake.ErrSequenceExhausted):
		return 0, true
	}
	return 0, false
}

// Seconds is a wait as Retry-After's whole seconds, rounded up, and at
// least 1: a wait of 0 is one not known.
func Seconds(wait time.Duration) time.Duration {
	return time.Duration(max(1, int(math.Ceil(wait.Seconds())))) * time.Second
}

// seconds writes a wait as Retry-After's value (Seconds).
func seconds(wait time.Duration) string {
	return strconv.Itoa(int(Seconds(wait) / time.Second))
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
