package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
)

// twepoch is Twitter's Snowflake epoch in Unix milliseconds, which
// bwmarrin/snowflake and Leaf use too.
const twepoch = 1288834974657

// decode --layout NAME reads the IDs of the generators ringflake replaces,
// each built here by its source's own formula (the peers' own code builds
// them in benchmarks/movein, against the same layouts): the time, the
// machine ID and the sequence come out as they went in, and no hint calls
// an old fleet's time implausible.
func TestDecodePeerLayouts(t *testing.T) {
	t.Parallel()
	at := time.Date(2020, time.June, 15, 8, 30, 0, 123e6, time.UTC)
	ms := at.UnixMilli() - twepoch
	sony := at.UnixNano()/1e7 - time.Date(2014, time.September, 1, 0, 0, 0, 0, time.UTC).UnixNano()/1e7
	baidu := time.Date(2024, time.March, 1, 0, 0, 7, 0, time.UTC).Unix() - 1463673600
	tests := []struct {
		layout string
		id     int64
		want   string
	}{
		// bwmarrin's Generate: now<<timeShift | node<<nodeShift | step.
		{"bwmarrin", ms<<22 | 37<<12 | 1234, "time=2020-06-15T08:30:00.123Z\tmachine=37\tsequence=1234"},
		// Leaf's get: (timestamp - twepoch) << 22 | workerId << 12 | sequence.
		{"leaf", ms<<22 | 1023<<12 | 99, "time=2020-06-15T08:30:00.123Z\tmachine=1023\tsequence=99"},
		// Twitter's nextId: datacenterId << 17 | workerId << 12.
		{"twitter", ms<<22 | 3<<17 | 17<<12 | 4095, "time=2020-06-15T08:30:00.123Z\tmachine=113\tdatacenter=3\tworker=17\tsequence=4095"},
		// sonyflake's toID: elapsed<<24 | sequence<<16 | machine.
		{"sonyflake-v1", sony<<24 | 200<<16 | 0xbeef, "time=2020-06-15T08:30:00.12Z\tmachine=48879\tsequence=200"},
		// Baidu's allocate: deltaSeconds<<35 | workerId<<13 | sequence.
		{"baidu", baidu<<35 | 4000000<<13 | 8191, "time=2024-03-01T00:00:07Z\tmachine=4000000\tsequence=8191"},
		// bwmarrin with its Epoch set to 2020-01-01.
		{"bwmarrin@2020-01-01", 1000<<22 | 1<<12 | 2, "time=2020-01-01T00:00:01Z\tmachine=1\tsequence=2"},
	}
	for _, tt := range tests {
		t.Run(tt.layout, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke("decode", "--layout", tt.layout, fmt.Sprint(tt.id))
			require.Equal(t, 0, code, "stderr: %s", stderr)
			assert.True(t, strings.HasPrefix(stdout, fmt.Sprintf("%d\t%s\tticks=", tt.id, tt.want)), "got %q", stdout)
			assert.Empty(t, stderr, "no hint for an old fleet's time")
		})
	}
}

// bounds --layout NAME gives the bounds of an old fleet's IDs, and a
// peer's name takes --datacenter-bits only when given.
func TestBoundsAndFlagsOfPeerLayouts(t *testing.T) {
	t.Parallel()
	from, to := time.Date(2020, time.June, 15, 0, 0, 0, 0, time.UTC), time.Date(2020, time.June, 16, 0, 0, 0, 0, time.UTC)
	code, stdout, stderr := invoke("bounds", "--layout", "bwmarrin", "2020-06-15")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Equal(t, fmt.Sprintf("%d\n%d\n", (from.UnixMilli()-twepoch)<<22, (to.UnixMilli()-twepoch)<<22), stdout)

	id := (from.UnixMilli() - twepoch) << 22
	code, stdout, _ = invoke("decode", "--layout", "twitter", "--datacenter-bits", "0", fmt.Sprint(id))
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "datacenter=", "--datacenter-bits 0 takes the split away")

	code, _, stderr = invoke("gen", "--layout", "sonyflake-v1", "--machine-id", "1", "--no-state-file")
	assert.Equal(t, 2, code, "gen refuses to issue sonyflake's IDs")
	assert.Contains(t, stderr, "Layout.MachineLow is set")
	code, _, stderr = invoke("decode", "--layout", "bwmarrin@yesterday", "1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `ringflake: decode: --layout bwmarrin@yesterday: invalid configuration: @EPOCH: "yesterday" is not a date`)

	// gen with a peer's layout issues the peer's IDs: bwmarrin's, here.
	code, stdout, stderr = invoke("gen", "--layout", "bwmarrin", "--machine-id", "1023", "-n", "3", "--no-state-file")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	for _, s := range strings.Fields(stdout) {
		n, err := ringflake.ParseID(s)
		require.NoError(t, err)
		assert.Equal(t, int64(1023), int64(n)>>12&1023, "node bits where bwmarrin puts them")
		assert.WithinDuration(t, time.Now(), time.UnixMilli(int64(n)>>22+twepoch), time.Minute)
	}
}

// gen --above issues only IDs above the old fleet's newest: it waits for a
// newest 300 ms ahead of the clock, and gives up on one a minute ahead
// within --acquire-timeout, naming the floor and the wait.
func TestGenAbove(t *testing.T) {
	t.Parallel()
	newest := (time.Now().Add(300*time.Millisecond).UnixMilli()-twepoch)<<22 | 1023<<12 | 4095
	code, stdout, stderr := invoke("gen", "--layout", "bwmarrin", "--machine-id", "3", "--no-state-file", "--above", fmt.Sprint(newest), "-n", "100")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	ids := strings.Fields(stdout)
	require.Len(t, ids, 100)
	for _, s := range ids {
		id, err := ringflake.ParseID(s)
		require.NoError(t, err)
		require.Greater(t, int64(id), newest)
	}

	far := (time.Now().Add(time.Minute).UnixMilli() - twepoch) << 22
	code, _, stderr = invoke("gen", "--layout", "bwmarrin", "--machine-id", "3", "--no-state-file", "--above", fmt.Sprint(far), "--acquire-timeout", "100ms")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, fmt.Sprintf("the floor set by WithAbove(%d)", far))
	assert.Contains(t, stderr, "(here: --acquire-timeout)")
}
