package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The chart's geometry, in SVG user units: three panels over one time
// axis, ringflake's requests, the strict generator's, and both lanes'
// longest wait.
const (
	chartWidth   = 960
	chartHeight  = 700
	chartLeft    = 84  // x of the time axis's start
	chartRight   = 936 // x of its end
	barTop1      = 132 // ringflake's panel
	barTop2      = 322 // the strict generator's panel
	barHeight    = 150
	waitTop      = 524
	waitHeight   = 120
	colorBehind  = "#d9d9d9"
	colorFailed  = "#d55e00"
	colorGrid    = "#e6e6e6"
	colorInk     = "#222"
	colorMuted   = "#666"
	colorMaxWait = "#999"
)

// laneColors are the lanes' colours in simulate's order: ringflake, strict.
var laneColors = [...]string{"#0072b2", "#009e73"}

// chart draws one simulation's buckets as SVG.
type chart struct {
	c   Config
	res []laneResult
	w   *bufio.Writer
}

// writeChart writes res, the result of simulating c, to w as an SVG chart:
// requests served and failed per bucket by each generator, the longest
// wait per bucket, and the step back. Every bucket's figures are also in
// data-* attributes and a <title>, so the chart can be checked against the
// numbers it draws.
func writeChart(w io.Writer, c Config, res []laneResult) error {
	ch := chart{c: c, res: res, w: bufio.NewWriter(w)}
	ch.header()
	ch.behindBands()
	ch.timeAxis()
	top := max(1, ch.mostPerBucket())
	for i, r := range res {
		ch.barPanel(i, r, [...]float64{barTop1, barTop2}[i%2], top)
	}
	ch.waitPanel()
	ch.stepMark()
	fmt.Fprintln(ch.w, "</svg>")
	return ch.w.Flush()
}

// x returns the horizontal position of d into the run.
func (ch chart) x(d time.Duration) float64 {
	return chartLeft + float64(d)/float64(ch.c.Duration)*(chartRight-chartLeft)
}

// text writes s at (x, y), escaped, with extra attributes attrs.
func (ch chart) text(x, y float64, attrs, s string) {
	fmt.Fprintf(ch.w, "<text x=\"%.1f\" y=\"%.1f\" %s>%s</text>\n", x, y, attrs, html.EscapeString(s))
}

// header writes the root element, the title, the scenario and the legend.
func (ch chart) header() {
	c := ch.c
	fmt.Fprintf(ch.w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" `+
		`font-family="Helvetica, Arial, sans-serif" font-size="12" fill="%s">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight, colorInk)
	fmt.Fprintf(ch.w, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", chartWidth, chartHeight)
	title := "The clock never steps back: ringflake and a strict Snowflake"
	if c.Rollback > 0 {
		title = fmt.Sprintf("The clock steps back %v at %v: ringflake and a strict Snowflake", c.Rollback, c.StepAt)
	}
	ch.text(chartLeft, 32, `font-size="19" font-weight="bold"`, title)
	ch.text(chartLeft, 54, `fill="`+colorMuted+`" font-size="13"`, fmt.Sprintf(
		"%s requests/s to each generator for %v on the same clock · ring %d %s (%v) · max wait %v · %v buckets",
		strconv.FormatFloat(c.Rate, 'f', -1, 64), c.Duration, c.Ring, plural(c.Ring, "slot"), time.Duration(c.Ring)*time.Millisecond,
		c.MaxWait, roundDur(c.bucketWidth())))

	// The legend: a swatch and a label each, laid out left to right.
	x := float64(chartLeft)
	item := func(swatch, label string) {
		fmt.Fprintf(ch.w, swatch+"\n", x, 74.0)
		ch.text(x+18, 84, "", label)
		x += 18 + 6.6*float64(len([]rune(label))) + 22
	}
	square := func(fill string) string {
		return `<rect x="%.1f" y="%.1f" width="12" height="12" fill="` + fill + `"/>`
	}
	for i, r := range ch.res {
		item(square(laneColors[i%len(laneColors)]), r.name+" served")
	}
	item(square(colorFailed), "failed")
	item(square(colorBehind), "clock behind the latest time it showed")
	item(`<path transform="translate(%.1f %.1f)" d="M0 6H14" stroke="`+colorMaxWait+`" stroke-width="1.5" stroke-dasharray="4 3"/>`, "max wait")
}

// behindBands shades, across all panels, the buckets in which requests
// were due while the clock was behind: the rows the table marks with <.
func (ch chart) behindBands() {
	if len(ch.res) == 0 {
		return
	}
	bs := ch.res[0].buckets
	width := ch.c.bucketWidth()
	for i := 0; i < len(bs); {
		if bs[i].behind == 0 {
			i++
			continue
		}
		j := i
		for j < len(bs) && bs[j].behind > 0 {
			j++
		}
		x0, x1 := ch.x(time.Duration(i)*width), ch.x(time.Duration(j)*width)
		fmt.Fprintf(ch.w, "<rect class=\"behind\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.45\"/>\n",
			x0, barTop1, x1-x0, waitTop+waitHeight-barTop1, colorBehind)
		i = j
	}
}

// mostPerBucket returns the most requests due in one bucket of any lane.
func (ch chart) mostPerBucket() int {
	n := 0
	for _, r := range ch.res {
		for _, b := range r.buckets {
			n = max(n, b.served+b.failed)
		}
	}
	return n
}

// barPanel draws lane i's requests per bucket, served below failed, on a
// scale up to top requests.
func (ch chart) barPanel(i int, r laneResult, y0 float64, top int) {
	step, ymax := niceScale(float64(top), 1)
	scale := barHeight / ymax
	base := y0 + barHeight
	for k := 0.0; k*step <= ymax; k++ {
		v := k * step
		y := base - v*scale
		fmt.Fprintf(ch.w, "<path d=\"M%d %.1fH%d\" stroke=\"%s\"/>\n", chartLeft, y, chartRight, colorGrid)
		ch.text(chartLeft-6, y+4, `text-anchor="end" fill="`+colorMuted+`"`, strconv.FormatFloat(v, 'f', -1, 64))
	}
	ch.yTitle(y0+barHeight/2, "requests per "+roundDur(ch.c.bucketWidth()).String())
	ch.text(chartLeft, y0-10, `font-size="14" font-weight="bold"`, r.name)
	spare := ""
	if r.spare > 0 {
		spare = fmt.Sprintf(" (%d from spare space)", r.spare)
	}
	ch.text(chartRight, y0-10, `text-anchor="end" fill="`+colorMuted+`"`, fmt.Sprintf("%d served%s · %d failed · longest wait %v",
		r.served, spare, r.failed, r.longest.Round(time.Microsecond)))

	color := laneColors[i%len(laneColors)]
	width := ch.c.bucketWidth()
	bw := ch.x(width) - ch.x(0)
	gap := 0.0
	if bw > 12 {
		gap = 1
	}
	// Bars that touch are drawn with crisp edges, so no seam shows between them.
	fmt.Fprintf(ch.w, "<g class=\"lane\" data-lane=\"%s\"", html.EscapeString(r.name))
	if gap == 0 {
		fmt.Fprint(ch.w, ` shape-rendering="crispEdges"`)
	}
	fmt.Fprintln(ch.w, ">")
	for k, b := range r.buckets {
		from := time.Duration(k) * width
		fmt.Fprintf(ch.w, "<g data-bucket=\"%d\" data-served=\"%d\" data-failed=\"%d\" data-behind=\"%d\" data-longest-ns=\"%d\">",
			k, b.served, b.failed, b.behind, b.longest.Nanoseconds())
		fmt.Fprintf(ch.w, "<title>%s %v–%v: %d served, %d failed, longest wait %v</title>",
			html.EscapeString(r.name), roundDur(from), roundDur(from+width), b.served, b.failed, b.longest)
		x := ch.x(from) + gap/2
		hs, hf := float64(b.served)*scale, float64(b.failed)*scale
		fmt.Fprintf(ch.w, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x, base-hs, bw-gap, hs, color)
		fmt.Fprintf(ch.w, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x, base-hs-hf, bw-gap, hf, colorFailed)
		fmt.Fprintln(ch.w, "</g>")
	}
	fmt.Fprintln(ch.w, "</g>")
	fmt.Fprintf(ch.w, "<path d=\"M%d %.1fH%d\" stroke=\"%s\"/>\n", chartLeft, base, chartRight, colorInk)
}

// waitPanel draws each lane's longest call per bucket on a log scale, with
// the bound MaxWait puts on it.
func (ch chart) waitPanel() {
	decLo, decHi := ch.waitDecades()
	base := float64(waitTop + waitHeight)
	y := func(d time.Duration) float64 {
		e := math.Log10(float64(max(d, 1)))
		return base - (max(e, decLo)-decLo)/(decHi-decLo)*waitHeight
	}
	for e := decLo; e <= decHi; e++ {
		d := time.Duration(math.Pow(10, e))
		fmt.Fprintf(ch.w, "<path d=\"M%d %.1fH%d\" stroke=\"%s\"/>\n", chartLeft, y(d), chartRight, colorGrid)
		ch.text(chartLeft-6, y(d)+4, `text-anchor="end" fill="`+colorMuted+`"`, d.String())
	}
	ch.yTitle(float64(waitTop)+waitHeight/2, "longest wait")
	ch.text(chartLeft, waitTop-10, `font-size="14" font-weight="bold"`,
		"longest wait per "+roundDur(ch.c.bucketWidth()).String()+" (log scale)")
	if ch.c.MaxWait > 0 {
		fmt.Fprintf(ch.w, "<path d=\"M%d %.1fH%d\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n",
			chartLeft, y(ch.c.MaxWait), chartRight, colorMaxWait)
		ch.text(chartRight-4, y(ch.c.MaxWait)-5, `text-anchor="end" fill="`+colorMuted+`"`, "max wait "+ch.c.MaxWait.String())
	}
	// The strict lane first, so ringflake's line is on top where they meet.
	for i := len(ch.res) - 1; i >= 0; i-- {
		ch.waitLine(i, y)
	}
	fmt.Fprintf(ch.w, "<path d=\"M%d %.1fH%d\" stroke=\"%s\"/>\n", chartLeft, base, chartRight, colorInk)
}

// waitDecades returns the powers of ten between which the wait panel's
// scale runs: from the shortest longest call of a bucket to the longest,
// or MaxWait if that is longer.
func (ch chart) waitDecades() (lo, hi float64) {
	shortest, longest := time.Duration(math.MaxInt64), ch.c.MaxWait
	for _, r := range ch.res {
		for _, b := range r.buckets {
			if b.served+b.failed > 0 {
				shortest, longest = min(shortest, max(b.longest, 1)), max(longest, b.longest)
			}
		}
	}
	if shortest > longest {
		shortest, longest = 1, 1
	}
	lo, hi = math.Floor(math.Log10(float64(shortest))), math.Ceil(math.Log10(float64(longest)))
	return lo, max(hi, lo+1)
}

// waitLine draws lane i's longest call per bucket as steps, broken where a
// bucket had no requests.
func (ch chart) waitLine(i int, y func(time.Duration) float64) {
	width := ch.c.bucketWidth()
	var d strings.Builder
	open := false
	for k, b := range ch.res[i].buckets {
		if b.served+b.failed == 0 {
			open = false
			continue
		}
		x0, x1 := ch.x(time.Duration(k)*width), ch.x(time.Duration(k+1)*width)
		if open {
			fmt.Fprintf(&d, "V%.1fH%.1f", y(b.longest), x1)
		} else {
			fmt.Fprintf(&d, "M%.1f %.1fH%.1f", x0, y(b.longest), x1)
		}
		open = true
	}
	fmt.Fprintf(ch.w, "<path class=\"wait\" data-lane=\"%s\" d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
		html.EscapeString(ch.res[i].name), d.String(), laneColors[i%len(laneColors)])
}

// yTitle writes a vertical axis title centred on y.
func (ch chart) yTitle(y float64, s string) {
	ch.text(0, 0, fmt.Sprintf(`transform="translate(%d %.1f) rotate(-90)" text-anchor="middle" fill="%s"`,
		chartLeft-52, y, colorMuted), s)
}

// timeAxis draws the time ticks, with a faint line through every panel
// behind the bars.
func (ch chart) timeAxis() {
	step, _ := niceScale(float64(ch.c.Duration), 1)
	base := float64(waitTop + waitHeight)
	for d := time.Duration(0); d <= ch.c.Duration; d += time.Duration(step) {
		x := ch.x(d)
		fmt.Fprintf(ch.w, "<path d=\"M%.1f %dV%.1f\" stroke=\"%s\"/>\n", x, barTop1, base, colorGrid)
		fmt.Fprintf(ch.w, "<path d=\"M%.1f %.1fv5\" stroke=\"%s\"/>\n", x, base, colorInk)
		ch.text(x, base+18, `text-anchor="middle" fill="`+colorMuted+`"`, ch.timeLabel(d))
	}
	ch.text((chartLeft+chartRight)/2, base+42, `text-anchor="middle" fill="`+colorMuted+`"`,
		"time into the run (each request is counted in the bucket in which it was due)")
}

// timeLabel writes d in seconds for runs of a second or more, so that the
// labels of one axis share a unit.
func (ch chart) timeLabel(d time.Duration) string {
	if ch.c.Duration >= time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return d.String()
}

// stepMark draws the step back: a dashed line through every panel at the
// moment of the step, labelled with how far the clock went back.
func (ch chart) stepMark() {
	if ch.c.Rollback <= 0 {
		return
	}
	x := ch.x(ch.c.StepAt)
	fmt.Fprintf(ch.w, "<path class=\"step\" d=\"M%.1f %dV%d\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
		x, barTop1-26, waitTop+waitHeight, colorInk)
	ch.text(x+6, barTop1-28, `font-weight="bold"`, fmt.Sprintf("clock steps back %v", ch.c.Rollback))
}

// niceScale returns the step of 1, 2 or 5 times a power of ten nearest to
// a sixth of v, but at least least, and the first multiple of it at or
// above v.
func niceScale(v, least float64) (step, top float64) {
	if v <= 0 {
		return least, least
	}
	raw := v / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = mag
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(math.Log(m*mag/raw)) < math.Abs(math.Log(step/raw)) {
			step = m * mag
		}
	}
	step = max(step, least)
	return step, math.Ceil(v/step) * step
}

// roundDur rounds d to the microsecond from a millisecond up, so that a
// bucket of a third of a millisecond's multiple reads 83.333ms.
func roundDur(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d
}
