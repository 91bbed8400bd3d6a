package sim

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At one request every 2ms, a tick holds one ID: ringflake's spread start
// shares id % 16 and id % 1024 out evenly (issue 23's target: chi-square
// under 37.7 at p = 0.001, at least 700 of 1024 residues), while a
// sequence from 0 puts nearly every ID in one residue.
func TestSpreadAtLowTraffic(t *testing.T) {
	t.Parallel()
	c := virtualSim(0, 500, 4096)
	c.Duration, c.Mods = 4*time.Second, []int{16, 1024}
	res, err := simulate(c)
	require.NoError(t, err)
	rf, st := res[0], res[1]
	for _, r := range res {
		for k := range c.Mods {
			total := 0
			for _, n := range r.residues[k] {
				total += n
			}
			assert.Equal(t, r.served, total, "%s: id %% %d counts every ID served", r.name, c.Mods[k])
		}
	}
	assert.Equal(t, 2000, rf.served)
	assert.Less(t, spread(rf.residues[0]).chi2, 37.7, "ringflake: id % 16 is even")
	assert.GreaterOrEqual(t, spread(rf.residues[1]).used, 700, "ringflake: id % 1024 uses most residues")
	assert.GreaterOrEqual(t, spread(st.residues[0]).most, 1990, "a sequence from 0: id % 16 is all one residue")
	assert.LessOrEqual(t, spread(st.residues[1]).used, 2, "a sequence from 0: id % 1024 too")

	var out strings.Builder
	spreadReport(&out, c, res)
	assert.Contains(t, out.String(), "id % 16, of the IDs served:")
	assert.Regexp(t, `chi-square \(1023 d\.f\.\) +[0-9.]+ +[0-9.]+\n`, out.String())
	assert.Contains(t, out.String(), strconv.Itoa(spread(rf.residues[1]).used)+"/1024")
}

// The chart draws the very counts the simulation made, residue by
// residue, for each lane and modulus: bars up to 64 residues, cells above.
func TestWriteSpreadMatchesSimulation(t *testing.T) {
	t.Parallel()
	c := virtualSim(0, 500, 4096)
	c.Mods = []int{16, 1024}
	res, err := simulate(c)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, writeSpread(&out, c, res))
	root := parseChart(t, out.Bytes())
	drawn := map[string][]int{}
	root.walk(func(g svgNode) {
		if g.attr("class") != "residues" {
			return
		}
		key := g.attr("data-lane") + " % " + g.attr("data-mod")
		mod, err := strconv.Atoi(g.attr("data-mod"))
		require.NoError(t, err)
		counts := make([]int, mod) // a residue without IDs may have no cell
		g.walk(func(r svgNode) {
			if r.attr("data-residue") == "" {
				return
			}
			v, err := strconv.Atoi(r.attr("data-residue"))
			require.NoError(t, err)
			n, err := strconv.Atoi(r.attr("data-count"))
			require.NoError(t, err)
			require.Zero(t, counts[v], "%s: residue %d drawn once", key, v)
			counts[v] = n
		})
		drawn[key] = counts
	})
	require.Len(t, drawn, 4, "a panel per lane and modulus")
	for _, r := range res {
		for k, n := range c.Mods {
			assert.Equal(t, r.residues[k], drawn[r.name+" % "+strconv.Itoa(n)], "%s: id %% %d drawn = counted", r.name, n)
		}
	}
	s := texts(root)
	assert.Contains(t, s, "id % N at 500 requests/s")
	assert.Contains(t, s, "ringflake: each tick's sequence starts at a spread value")
	assert.Contains(t, s, "strict Snowflake: each tick's sequence starts at 0")
	assert.Contains(t, s, "id % 16: 16 of 16 residues used")
}
