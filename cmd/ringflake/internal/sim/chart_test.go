package sim

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// svgNode is any element of a parsed chart.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls f on n and every element inside it, depth first.
func (n svgNode) walk(f func(svgNode)) {
	f(n)
	for _, c := range n.Nodes {
		c.walk(f)
	}
}

// parseChart parses an SVG chart, failing the test if it is not well-formed.
func parseChart(t *testing.T, svg []byte) svgNode {
	t.Helper()
	var root svgNode
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = true
	require.NoError(t, d.Decode(&root), "chart is well-formed XML")
	require.Equal(t, xml.Name{Space: "http://www.w3.org/2000/svg", Local: "svg"}, root.XMLName, "root element")
	return root
}

// chartBuckets reads each lane's buckets back from a chart's data-*
// attributes, in the order drawn.
func chartBuckets(t *testing.T, root svgNode) map[string][]rowCount {
	t.Helper()
	lanes := map[string][]rowCount{}
	num := func(n svgNode, name string) int64 {
		v, err := strconv.ParseInt(n.attr(name), 10, 64)
		require.NoError(t, err, "%s of bucket %s", name, n.attr("data-bucket"))
		return v
	}
	root.walk(func(lane svgNode) {
		name := lane.attr("data-lane")
		if lane.XMLName.Local != "g" || name == "" {
			return
		}
		for k, g := range lane.Nodes {
			require.Equal(t, strconv.Itoa(k), g.attr("data-bucket"), "%s: buckets in order", name)
			lanes[name] = append(lanes[name], rowCount{served: int(num(g, "data-served")), failed: int(num(g, "data-failed")),
				behind: int(num(g, "data-behind")), longest: time.Duration(num(g, "data-longest-ns"))})
		}
	})
	return lanes
}

// texts returns the text of every <text> element of a chart.
func texts(root svgNode) string {
	var b strings.Builder
	root.walk(func(n svgNode) {
		if n.XMLName.Local == "text" {
			b.WriteString(n.Text + "\n")
		}
	})
	return b.String()
}

// The chart draws the very buckets the simulation counted: every lane's
// served, failed, behind and longest call, bucket by bucket.
func TestWriteChartMatchesSimulation(t *testing.T) {
	t.Parallel()
	c := virtualSim(200*time.Millisecond, 100000, 1) // ringflake runs out of spare space: both lanes fail
	res, err := simulate(c)
	require.NoError(t, err)
	require.Positive(t, res[0].failed, "ringflake fails in this run")
	var out bytes.Buffer
	require.NoError(t, writeChart(&out, c, res))
	root := parseChart(t, out.Bytes())

	got := chartBuckets(t, root)
	require.Len(t, got, len(res), "one lane per generator")
	for _, r := range res {
		assert.Len(t, got[r.name], c.buckets(), "%s: buckets", r.name)
		assert.Equal(t, r.buckets, got[r.name], "%s: buckets drawn = buckets counted", r.name)
	}

	s := texts(root)
	for _, want := range []string{
		"The clock steps back 200ms at 333.333333ms: ringflake and a strict Snowflake",
		"100000 requests/s to each generator for 1s on the same clock · ring 1 slot (1ms) · max wait 0s · 8.333ms buckets",
		"clock steps back 200ms",
		"requests per 8.333ms",
		"ringflake served", "strict served", "failed",
	} {
		assert.Contains(t, s, want, "chart text")
	}
	for _, r := range res {
		assert.Contains(t, s, strconv.Itoa(r.served)+" served", "%s: total served in the chart", r.name)
		assert.Contains(t, s, strconv.Itoa(r.failed)+" failed", "%s: total failed in the chart", r.name)
	}
	var steps int
	root.walk(func(n svgNode) {
		if n.attr("class") == "step" {
			steps++
		}
	})
	assert.Equal(t, 1, steps, "one line marks the step")
}

// Bars are drawn to one scale: a bucket's served and failed bars are as
// tall as its counts say, in both lanes.
func TestWriteChartBarsToScale(t *testing.T) {
	t.Parallel()
	c := virtualSim(200*time.Millisecond, 100000, 1)
	res, err := simulate(c)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, writeChart(&out, c, res))
	var perRequest float64
	parseChart(t, out.Bytes()).walk(func(g svgNode) {
		if g.attr("data-bucket") == "" {
			return
		}
		var rects []float64
		for _, n := range g.Nodes {
			if n.XMLName.Local == "rect" {
				h, err := strconv.ParseFloat(n.attr("height"), 64)
				require.NoError(t, err)
				rects = append(rects, h)
			}
		}
		require.Len(t, rects, 2, "served and failed bars of bucket %s", g.attr("data-bucket"))
		for i, name := range []string{"data-served", "data-failed"} {
			n, _ := strconv.Atoi(g.attr(name))
			if perRequest == 0 && n > 0 {
				perRequest = rects[i] / float64(n)
			}
			assert.InDelta(t, float64(n)*perRequest, rects[i], 0.01, "%s bar of bucket %s", name, g.attr("data-bucket"))
		}
	})
	assert.Positive(t, perRequest, "some bar drawn")
}

// Without a step the chart has no step line and says so in its title.
func TestWriteChartNoStep(t *testing.T) {
	t.Parallel()
	c := virtualSim(0, 1000, 4096)
	res, err := simulate(c)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, writeChart(&out, c, res))
	root := parseChart(t, out.Bytes())
	assert.Contains(t, texts(root), "The clock never steps back")
	root.walk(func(n svgNode) {
		assert.NotEqual(t, "step", n.attr("class"), "no step line")
		assert.NotEqual(t, "behind", n.attr("class"), "no bucket behind")
	})
}

// Run writes the chart of the run its table reports, in real time.
func TestRunSVG(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "step.svg")
	var out strings.Builder
	require.NoError(t, Run(Config{Rollback: 20 * time.Millisecond, StepAt: 20 * time.Millisecond, Duration: 60 * time.Millisecond,
		Rate: 2000, Ring: 64, MaxWait: 100 * time.Millisecond, SVG: path}, &out))
	stdout := out.String()
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	lanes := chartBuckets(t, parseChart(t, svg))
	var served, failed []string
	for _, name := range []string{"ringflake", "strict"} {
		var sum rowCount
		for _, b := range lanes[name] {
			sum.add(b)
		}
		served = append(served, strconv.Itoa(sum.served))
		failed = append(failed, strconv.Itoa(sum.failed))
	}
	assert.Contains(t, stdout, "\nIDs served "+strings.Repeat(" ", 11), "table printed too")
	for _, line := range strings.Split(stdout, "\n") {
		switch f := strings.Fields(line); {
		case strings.HasPrefix(line, "IDs served"):
			assert.Equal(t, served, f[2:], "table's IDs served = chart's")
		case strings.HasPrefix(line, "errors"):
			assert.Equal(t, failed, f[1:], "table's errors = chart's failed")
		}
	}
}

// A chart that cannot be written in full is removed, not left half done.
func TestSaveChartRemovesAFailedChart(t *testing.T) {
	t.Parallel()
	c := virtualSim(0, 1000, 4096)
	res, err := simulate(c)
	require.NoError(t, err)
	f, err := os.Create(filepath.Join(t.TempDir(), "x.svg"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	err = saveChart(f, c, res) // every write fails: the file is closed
	assert.ErrorIs(t, err, os.ErrClosed)
	assert.ErrorContains(t, err, "simulate: writing the chart: ")
	assert.NoFileExists(t, f.Name())
	assert.NoError(t, saveChart(nil, c, res), "no --svg, nothing to save")
}

func TestNiceScale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v, least, step, top float64
	}{
		{250, 1, 50, 250},
		{251, 1, 50, 300},
		{1234, 1, 200, 1400},
		{1, 1, 1, 1},
		{3, 1, 1, 3},
		{0, 1, 1, 1},
		{float64(3 * time.Second), 1, float64(500 * time.Millisecond), float64(3 * time.Second)},
		{float64(60 * time.Millisecond), 1, float64(10 * time.Millisecond), float64(60 * time.Millisecond)},
		{float64(7 * time.Second), 1, float64(time.Second), float64(7 * time.Second)},
		{float64(10 * time.Minute), 1, float64(100 * time.Second), float64(10 * time.Minute)},
		{2, 1, 1, 2}, // 0.5 would be nicer, but counts are whole
	}
	for _, tt := range tests {
		step, top := niceScale(tt.v, tt.least)
		assert.Equal(t, [2]float64{tt.step, tt.top}, [2]float64{step, top}, "niceScale(%v, %v)", tt.v, tt.least)
	}
}
