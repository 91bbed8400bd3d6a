package peerlayout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/peerlayout"
)

// Every named layout is valid, found by its name, and ends where its peer
// says it does: Baidu's DefaultUidGenerator documents "about 8.7 years
// until to 2024-11-20 21:24:16" (UTC+8) for its defaults; the 41 bits of
// milliseconds since Twitter's epoch run to 2080, sonyflake's 39 bits of
// 10 ms to 174 years after its start.
func TestPeers(t *testing.T) {
	t.Parallel()
	cst := time.FixedZone("UTC+8", 8*3600)
	ends := map[string]time.Time{
		"bwmarrin":     time.Date(2080, time.July, 10, 17, 30, 30, 209e6, time.UTC),
		"twitter":      time.Date(2080, time.July, 10, 17, 30, 30, 209e6, time.UTC),
		"leaf":         time.Date(2080, time.July, 10, 17, 30, 30, 209e6, time.UTC),
		"sonyflake-v1": time.Date(2014, time.September, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(1<<39) * 10 * time.Millisecond),
		"sonyflake-v2": time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(1<<39) * 10 * time.Millisecond),
		"baidu":        time.Date(2024, time.November, 20, 21, 24, 16, 0, cst),
	}
	peers := peerlayout.Peers()
	require.Len(t, peers, len(ends))
	for _, p := range peers {
		_, err := p.Layout.Compose(ringflake.Parts{})
		require.NoError(t, err, p.Name)
		assert.Equal(t, 63, p.Layout.TimeBits+p.Layout.MachineBits+p.Layout.SequenceBits, "%s: every peer uses the 63 bits below the sign", p.Name)
		assert.True(t, ends[p.Name].Equal(p.Layout.End()), "%s ends %v; want %v", p.Name, p.Layout.End(), ends[p.Name])
		l, ok := peerlayout.Named(p.Name)
		assert.True(t, ok)
		assert.Equal(t, p.Layout, l)
	}
	_, ok := peerlayout.Named("snowflake")
	assert.False(t, ok)
}
