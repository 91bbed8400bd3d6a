package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timelineRow matches a row of the timeline: a time, the behind mark and
// two bars.
var timelineRow = regexp.MustCompile(`^ +[0-9]+\.[0-9]{3}s [ <]  [#x.]{20}   [#x.]{20}$`)

// TestSimulateCommand runs the command end to end for a short while in
// real time. It asserts only what timing cannot change.
func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := invoke("simulate", "--rollback", "20ms", "--rate", "2000/s", "--duration", "60ms", "--ring", "64")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, "clock steps back 20ms at 20ms into a 60ms run; 2000/s requests to each generator (120 each); ring 64 slots (64ms)")
	var dups, rows int
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "duplicates") {
			dups++
			assert.Equal(t, []string{"duplicates", "0", "0"}, strings.Fields(line))
		}
		if timelineRow.MatchString(line) {
			rows++
		}
	}
	assert.Equal(t, 1, dups, "one duplicates row")
	assert.Equal(t, 24, rows, "timeline rows (sim's 24) in:\n%s", stdout)
}

// TestSimulateCommandSVG runs the command with --svg: the chart is written
// to the file it names, beside the table. internal/sim's TestRunSVG checks
// that the chart's figures are the table's.
func TestSimulateCommandSVG(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "step.svg")
	code, stdout, stderr := invoke("simulate", "--rollback", "20ms", "--rate", "2000/s", "--duration", "60ms",
		"--ring", "64", "--svg", path)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(svg), "<svg "), "the file is an SVG chart: %.60q", svg)
	assert.Contains(t, string(svg), "clock steps back 20ms", "the chart is of this run")
	assert.Contains(t, stdout, "\nIDs served "+strings.Repeat(" ", 11), "table printed too")
}

func TestSimulateSVGErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		want string // the start of the one line on stderr
	}{
		{"missing directory", filepath.Join(dir, "missing", "x.svg"), "ringflake: simulate: --svg: open " + filepath.Join(dir, "missing", "x.svg") + ": "},
		{"a directory", dir, "ringflake: simulate: --svg: open " + dir + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke("simulate", "--duration", "10ms", "--svg", tt.path)
			assert.Equal(t, 1, code, "exit status for a file that cannot be written")
			assert.Empty(t, stdout, "no table: the run does not start")
			assert.True(t, strings.HasPrefix(stderr, tt.want), "stderr %q; want it to start %q", stderr, tt.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line on stderr: %q", stderr)
		})
	}
}

// --mod counts id % N of the IDs each generator served, in the table, and
// with --svg draws those counts instead of the timeline.
func TestSimulateCommandMod(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spread.svg")
	code, stdout, stderr := invoke("simulate", "--rollback", "0", "--rate", "500/s", "--duration", "200ms", "--mod", "16,1024", "--svg", path)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stdout, "\nid % 16, of the IDs served:\n")
	assert.Contains(t, stdout, "\nid % 1024, of the IDs served:\n")
	assert.Regexp(t, `\nresidues used +\d+/16 +\d+/16\n`, stdout)
	svg, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(svg), `data-mod="16"`)
	assert.Contains(t, string(svg), `data-mod="1024"`)
	assert.NotContains(t, string(svg), `data-bucket=`, "the counts, not the timeline")
	for _, tt := range []struct{ mod, want string }{
		{"1", "ringflake: simulate: invalid value \"1\" for flag -mod: want N,... with each N in 2..65536"},
		{"16,x", "ringflake: simulate: invalid value \"16,x\" for flag -mod: want N,... with each N in 2..65536"},
		{"2,3,4,5", "ringflake: simulate: invalid value \"2,3,4,5\" for flag -mod: want at most 3 values of N"},
	} {
		code, _, stderr := invoke("simulate", "--mod", tt.mod)
		assert.Equal(t, 2, code, "--mod %s", tt.mod)
		assert.Equal(t, tt.want+"\n", stderr, "--mod %s", tt.mod)
	}
}
