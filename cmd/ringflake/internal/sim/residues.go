package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"

	"github.com/ringflake/ringflake"
)

// residues counts ids by id % n, for each n of mods.
func residues(ids []ringflake.ID, mods []int) [][]int {
	out := make([][]int, len(mods))
	for k, n := range mods {
		out[k] = make([]int, n)
		for _, id := range ids {
			out[k][int64(id)%int64(n)]++
		}
	}
	return out
}

// spreadOf sums up one lane's counts of id % n: Pearson's chi-square
// against an even spread (n-1 degrees of freedom; at p = 0.001 the bound
// is 37.7 for n = 16), how many residues hold an ID, and the most any one
// holds.
type spreadOf struct {
	chi2       float64
	used, most int
}

func spread(counts []int) spreadOf {
	total := 0
	for _, c := range counts {
		total += c
	}
	var s spreadOf
	if total == 0 {
		return s
	}
	want := float64(total) / float64(len(counts))
	for _, c := range counts {
		d := float64(c) - want
		s.chi2 += d * d / want
		if c > 0 {
			s.used++
		}
		s.most = max(s.most, c)
	}
	return s
}

// spreadReport prints, for each n of c.Mods, each lane's chi-square and
// residues used.
func spreadReport(w io.Writer, c Config, res []laneResult) {
	for k, n := range c.Mods {
		fmt.Fprintf(w, "\nid %% %d, of the IDs served:\n", n)
		fmt.Fprintf(w, "%-22s", "")
		for _, r := range res {
			fmt.Fprintf(w, "%12s", r.name)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-22s", fmt.Sprintf("chi-square (%d d.f.)", n-1))
		for _, r := range res {
			fmt.Fprintf(w, "%12.1f", spread(r.residues[k]).chi2)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-22s", "residues used")
		for _, r := range res {
			fmt.Fprintf(w, "%12s", fmt.Sprintf("%d/%d", spread(r.residues[k]).used, n))
		}
		fmt.Fprintln(w)
	}
}

// The residue chart's geometry: one row per lane, one column per modulus.
const (
	spreadTop    = 96  // y of the first row's title
	spreadRowH   = 280 // a row's height, its caption included
	spreadPanelH = 200
	spreadGap    = 40 // between columns
	maxBarMod    = 64 // larger moduli are drawn as a grid of cells
)

// spreadLabels say what each lane's sequence does, in simulate's order.
var spreadLabels = [...]string{
	"ringflake: each tick's sequence starts at a spread value",
	"strict Snowflake: each tick's sequence starts at 0, as ringflake's did before",
}

// writeSpread writes res as an SVG chart of id % n for each n of c.Mods:
// a row per lane, a panel per modulus, bars of the count of each residue
// up to 64 residues, and a grid of cells shaded by count above that. Each
// residue's count is in a data-count attribute (a cell's residue is left
// out when it holds no ID), and a bar's in a <title> too.
func writeSpread(w io.Writer, c Config, res []laneResult) error {
	bw := bufio.NewWriter(w)
	cols := len(c.Mods)
	width := chartWidth
	height := spreadTop + len(res)*spreadRowH
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" `+
		`font-family="Helvetica, Arial, sans-serif" font-size="12" fill="%s">`+"\n", width, height, width, height, colorInk)
	fmt.Fprintf(bw, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", width, height)
	ch := chart{c: c, res: res, w: bw}
	ch.text(chartLeft, 32, `font-size="19" font-weight="bold"`, "id % N at "+strconv.FormatFloat(c.Rate, 'f', -1, 64)+
		" requests/s: where a tick's sequence starts decides the low bits")
	ch.text(chartLeft, 54, `fill="`+colorMuted+`" font-size="13"`, fmt.Sprintf(
		"%s requests/s to each generator for %v, one clock (1ms ticks), machine ID 1 · IDs per residue; dashed: an even spread",
		strconv.FormatFloat(c.Rate, 'f', -1, 64), c.Duration))
	panelW := (float64(chartRight-chartLeft) - float64(cols-1)*spreadGap) / float64(cols)
	for i, r := range res {
		y0 := float64(spreadTop + i*spreadRowH)
		label := r.name
		if i < len(spreadLabels) {
			label = spreadLabels[i]
		}
		ch.text(chartLeft, y0, `font-size="14" font-weight="bold"`, label)
		for k, n := range c.Mods {
			x0 := chartLeft + float64(k)*(panelW+spreadGap)
			ch.residuePanel(i, r, k, n, x0, y0+22, panelW)
		}
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}

// residuePanel draws lane i's counts of id % n at (x0, y0), w wide.
func (ch chart) residuePanel(i int, r laneResult, k, n int, x0, y0, w float64) {
	counts := r.residues[k]
	s := spread(counts)
	color := laneColors[i%len(laneColors)]
	caption := fmt.Sprintf("id %% %d: %d of %d residues used, χ² %.1f (%d d.f.)", n, s.used, n, s.chi2, n-1)
	ch.text(x0, y0+spreadPanelH+18, `fill="`+colorMuted+`"`, caption)
	fmt.Fprintf(ch.w, "<g class=\"residues\" data-lane=\"%s\" data-mod=\"%d\" shape-rendering=\"crispEdges\">\n", html.EscapeString(r.name), n)
	total := 0
	for _, c := range counts {
		total += c
	}
	even := float64(total) / float64(n)
	if n <= maxBarMod {
		_, top := niceScale(float64(max(s.most, 1)), 1)
		scale := spreadPanelH / top
		base := y0 + spreadPanelH
		bar := w / float64(n)
		for v, c := range counts {
			h := float64(c) * scale
			fmt.Fprintf(ch.w, "<rect data-residue=\"%d\" data-count=\"%d\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>id %% %d = %d: %d IDs</title></rect>\n",
				v, c, x0+float64(v)*bar+1, base-h, bar-2, h, color, n, v, c)
		}
		fmt.Fprintln(ch.w, "</g>")
		fmt.Fprintf(ch.w, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"%s\"/>\n", x0, base, x0+w, colorInk)
		fmt.Fprintf(ch.w, "<path d=\"M%.1f %.1fH%.1f\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n", x0, base-even*scale, x0+w, colorMaxWait)
		ch.text(x0-4, y0+8, `text-anchor="end" fill="`+colorMuted+`"`, strconv.FormatFloat(top, 'f', -1, 64))
		ch.text(x0-4, base, `text-anchor="end" fill="`+colorMuted+`"`, "0")
		return
	}
	// A grid of cells, as square as the panel allows, each shaded by its
	// count against an even spread: twice the even share or more is full
	// colour; a residue without IDs has no cell, and shows white.
	side := int(math.Ceil(math.Sqrt(float64(n))))
	cell := math.Min(w, spreadPanelH) / float64(side)
	fmt.Fprintf(ch.w, "<g fill=\"%s\">\n", color)
	for v, c := range counts {
		if c == 0 {
			continue
		}
		x, y := x0+float64(v%side)*cell, y0+float64(v/side)*cell
		fmt.Fprintf(ch.w, "<rect data-residue=\"%d\" data-count=\"%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill-opacity=\"%.2f\"/>\n",
			v, c, x, y, cell, cell, math.Min(float64(c)/(2*even), 1))
	}
	fmt.Fprintln(ch.w, "</g></g>")
	fmt.Fprintf(ch.w, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"%s\"/>\n", x0, y0, float64(side)*cell, float64(side)*cell, colorMuted)
	gx := x0 + float64(side)*cell + 14
	ch.text(gx, y0+14, `fill="`+colorMuted+`"`, fmt.Sprintf("a cell per residue, %d a row:", side))
	ch.text(gx, y0+32, `fill="`+colorMuted+`"`, "white holds no ID,")
	ch.text(gx, y0+50, `fill="`+colorMuted+`"`, fmt.Sprintf("full colour %.0f or more", 2*even))
	ch.text(gx, y0+68, `fill="`+colorMuted+`"`, fmt.Sprintf("(an even spread: %.1f)", even))
}
