package serve

import (
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/idtext"
	"github.com/ringflake/ringflake/machineid"
)

// statusPage is the data of GET /, the page for the people who run the
// service: every figure is read when the page is asked for.
type statusPage struct {
	Ready    bool
	Reason   string // why it is not ready
	Lease    leaseView
	Counts   *ringflake.Stats // nil before the generator is made
	Failed   uint64           // every failed call, by any cause
	Layout   ringflake.Layout
	Bits     int
	Ends     string // when the layout's last tick starts, and how far off
	Query    string // the ID asked to decode, as given
	Format   string // the form it is read in: auto, decimal, base32 or base58
	Formats  []string
	Decoded  *decoded
	DecodeEr string // why Query does not decode
}

// leaseView is a lease report worded for the page.
type leaseView struct {
	Machine string // "4", or "none yet"
	Held    bool
	Err     string // why it is not held
	Until   string // the mark the store confirmed, and how far ahead; or "no limit"
	After   string // the mark inherited; or "none"
	Clock   string // the clock's offset to the store and its uncertainty
}

// status answers GET / with the status page, and, given ?id=, the parts
// of that ID under the layout, read as /v1/decode reads it (any form).
func (s *Service) status(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	p := statusPage{Layout: s.layout, Ends: at(s.layout.End(), now), Format: "auto", Formats: []string{"auto", "decimal", "base32", "base58"}}
	p.Bits = s.layout.TimeBits + s.layout.MachineBits + s.layout.SequenceBits
	rd := s.Readiness()
	p.Ready, p.Reason = rd.Ready, rd.Reason
	var l machineid.Lease
	if g := s.gen.Load(); g != nil {
		l = g.Lease()
		st := g.Stats()
		p.Counts = &st
		f := st.Failed
		p.Failed = f.BeforeEpoch + f.TimeOverflow + f.ClockBehind + f.SequenceExhausted + f.MarkAhead + f.LeaseLost
	} else {
		l = s.lease()
	}
	p.Lease = viewLease(l, now)
	if q := r.URL.Query(); q.Has("id") {
		p.Query = q.Get("id")
		if f := q.Get("format"); f != "" {
			p.Format = f
		}
		reader := idtext.Reader{Layout: s.layout, Ask: "format "}
		if !idtext.Known(p.Format) {
			p.DecodeEr = fmt.Sprintf("format = %s; want %s", idtext.Quote(p.Format), idtext.Formats)
		} else if id, err := reader.Parse(p.Query, p.Format); err != nil {
			p.DecodeEr = err.Error()
		} else {
			d := s.decoded(id, reader)
			p.Decoded = &d
		}
	}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = htmlType, noStore
	_ = statusTemplate.Execute(w, p) // a failed write is the client's to see
}

var htmlType = []string{"text/html; charset=utf-8"}

// viewLease words l for the page, its times set against now.
func viewLease(l machineid.Lease, now time.Time) leaseView {
	v := leaseView{Machine: "none yet", Held: l.Held, Until: "no limit", After: "none", Clock: l.Clock.String()}
	if l.ID >= 0 {
		v.Machine = fmt.Sprint(l.ID)
	}
	if l.Err != nil {
		v.Err = OneLine(l.Err.Error())
	}
	if !l.Until.IsZero() {
		v.Until = at(l.Until, now)
	}
	if !l.After.IsZero() {
		v.After = at(l.After, now)
	}
	return v
}

// at words t as a UTC time to the millisecond, and how far from now.
func at(t, now time.Time) string {
	d := t.Sub(now)
	when := "in " + round(d)
	if d < 0 {
		when = round(-d) + " ago"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC") + " (" + when + ")"
}

// round shortens d for a person: to the microsecond under a second, to
// the millisecond under a minute, to the second under a day, else in days.
func round(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Microsecond).String()
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	case d < 24*time.Hour:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%.0f days", d.Hours()/24)
}

// statusTemplate is the page: plain HTML and a little CSS, no script, no
// asset from elsewhere. The decode form is a GET of this page.
var statusTemplate = template.Must(template.New("status").Funcs(template.FuncMap{"round": round}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ringflake serve{{if .Ready}}: ready{{else}}: not ready{{end}}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 46em; margin: 1.5em auto; padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; } th { text-align: left; font-weight: normal; color: #555; padding-right: 1.5em; vertical-align: top; }
td, th { padding-top: .2em; padding-bottom: .2em; } td { font-variant-numeric: tabular-nums; }
.ok { color: #136f2b; font-weight: bold; } .bad { color: #a11; font-weight: bold; }
input[type=text] { width: 22em; font: inherit; }
</style>
</head>
<body>
<h1>ringflake serve</h1>
<p id="state">{{if .Ready}}<span class="ok">Ready</span>: issuing IDs{{else}}<span class="bad">Not ready</span>: {{.Reason}}{{end}}</p>

<h2>Machine ID</h2>
<table id="lease">
<tr><th>Machine ID</th><td id="machine">{{.Lease.Machine}}</td></tr>
<tr><th>Lease</th><td id="held">{{if .Lease.Held}}held{{else}}not held{{with .Lease.Err}}: {{.}}{{end}}{{end}}</td></tr>
<tr><th>Held until</th><td id="until">{{.Lease.Until}}</td></tr>
<tr><th>Mark inherited</th><td id="after">{{.Lease.After}}</td></tr>
<tr><th>Clock offset to the store</th><td id="clock">{{.Lease.Clock}}</td></tr>
</table>

<h2>IDs</h2>
{{with .Counts}}<table id="counts">
<tr><th>Issued</th><td id="issued">{{.Issued}}</td></tr>
<tr><th>Failed calls</th><td id="failed">{{$.Failed}}{{if $.Failed}} (clock behind {{.Failed.ClockBehind}}, mark ahead {{.Failed.MarkAhead}}, lease lost {{.Failed.LeaseLost}}, sequence exhausted {{.Failed.SequenceExhausted}}, out of the layout's range {{.Failed.BeforeEpoch}} + {{.Failed.TimeOverflow}}){{end}}</td></tr>
<tr><th>Calls that waited</th><td>{{.Waits}}, the longest {{round .LongestWait}}</td></tr>
<tr><th>Clock steps back seen</th><td>{{.StepBacks}}, the largest {{round .LargestStepBack}}</td></tr>
<tr><th>Start took</th><td>{{round .StartWait}}</td></tr>
</table>{{else}}<p id="counts">None issued yet: the generator is not made.</p>{{end}}

<h2>Layout</h2>
<table id="layout">
<tr><th>Bits</th><td>{{.Bits}}: time {{.Layout.TimeBits}}, machine {{.Layout.MachineBits}}{{if .Layout.DatacenterBits}} (datacenter {{.Layout.DatacenterBits}}){{end}}, sequence {{.Layout.SequenceBits}}</td></tr>
<tr><th>Epoch</th><td>{{.Layout.Epoch.UTC.Format "2006-01-02 15:04:05 UTC"}}</td></tr>
<tr><th>Tick</th><td>{{.Layout.Tick}}</td></tr>
<tr><th>Ends</th><td id="ends">{{.Ends}}</td></tr>
</table>

<h2>Decode an ID</h2>
<form method="get" action="/">
<label>ID <input type="text" name="id" value="{{.Query}}" required></label>
<label>format <select name="format">{{range .Formats}}<option{{if eq . $.Format}} selected{{end}}>{{.}}</option>{{end}}</select></label>
<button type="submit">Decode</button>
</form>
{{with .Decoded}}<table id="decoded" style="margin-top: .8em">
<tr><th>ID</th><td id="d-id">{{.ID}}</td></tr>
<tr><th>Time</th><td id="d-time">{{.Time}}</td></tr>
<tr><th>Machine</th><td id="d-machine">{{.Machine}}</td></tr>
{{if .Datacenter}}<tr><th>Datacenter</th><td id="d-datacenter">{{.Datacenter}}</td></tr>
<tr><th>Worker</th><td id="d-worker">{{.Worker}}</td></tr>
{{end}}<tr><th>Sequence</th><td id="d-sequence">{{.Sequence}}</td></tr>
</table>{{with .Hint}}<p>{{.}}</p>{{end}}{{end}}
{{with .DecodeEr}}<p id="d-error" class="bad">{{.}}</p>{{end}}
<p><small>JSON: <a href="/readyz">/readyz</a>, <a href="/metrics">/metrics</a>; <code>ringflake serve -h</code> lists the API.</small></p>
</body>
</html>
`))
