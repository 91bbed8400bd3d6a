package main

import (
	"bytes"
	"fmt"
	"html"
)

// chart draws rows/s over rows inserted, one line per key type, as SVG.
func chart(rs []result, o options) []byte {
	const (
		w, h                     = 760, 380
		left, right, top, bottom = 70, 150, 40, 50
	)
	colors := map[string]string{"bigserial": "#888888", "ringflake": "#1f77b4", "UUIDv7": "#2ca02c", "UUIDv4": "#d62728"}
	maxRate := 0.0
	for _, r := range rs {
		for _, p := range r.curve {
			maxRate = max(maxRate, p.rate)
		}
	}
	yMax := niceCeil(maxRate)
	x := func(rows int) float64 { return left + float64(rows)/float64(o.rows)*(w-left-right) }
	y := func(rate float64) float64 { return h - bottom - rate/yMax*(h-top-bottom) }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="14">PostgreSQL inserts by primary-key type: rows/s as the tables grow (shared_buffers %s, %d writers)</text>`+"\n",
		left, html.EscapeString(o.sharedBuffers), o.writers)
	for i := 0; i <= 4; i++ {
		rate := yMax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, w-right, y(rate), y(rate))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(rate)+4, short(rate))
	}
	for i := 0; i <= 4; i++ {
		rows := o.rows * i / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(rows), h-bottom+18, short(float64(rows)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">rows inserted (and as many child rows)</text>`+"\n", (left+w-right)/2, h-12)
	fmt.Fprintf(&b, `<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">rows/s</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", left, w-right, h-bottom, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", left, left, top, h-bottom)
	for i, r := range rs {
		color := colors[r.kind]
		b.WriteString(`<polyline fill="none" stroke-width="2" stroke="` + color + `" points="`)
		for _, p := range r.curve {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(p.rows), y(p.rate))
		}
		b.WriteString("\"/>\n")
		ly := top + 20 + 22*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", w-right+12, w-right+32, ly, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", w-right+38, ly+4, html.EscapeString(r.kind))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short writes v as 250k or 1.5M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
