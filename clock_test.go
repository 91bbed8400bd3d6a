package ringflake

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWallClockTracksTimeNow(t *testing.T) {
	t.Parallel()
	c := newWallClock()
	for range 3 {
		before := time.Now().UnixNano()
		got := c.unixNano()
		after := time.Now().UnixNano()
		// The offset is refreshed every millisecond; between refreshes the
		// monotonic and wall clocks can only drift by NTP's slew.
		assert.GreaterOrEqual(t, got, before-int64(10*time.Millisecond))
		assert.LessOrEqual(t, got, after+int64(10*time.Millisecond))
		time.Sleep(2 * time.Millisecond)
	}
}

func TestWallClockResyncSeesAStep(t *testing.T) {
	t.Parallel()
	c := newWallClock()
	c.offset.Add(int64(time.Hour)) // as if the wall clock had been an hour ahead
	c.next.Store(0)                // due for a resync
	for i := 0; i < 100 && c.offset.Load() > int64(time.Hour)/2; i++ {
		c.unixNano() // a resync may be dropped if the thread was interrupted; the next call retries
	}
	got := c.unixNano()
	assert.InDelta(t, float64(time.Now().UnixNano()), float64(got), float64(10*time.Millisecond),
		"after a resync the reading follows the wall clock again, an hour back")
}

func TestSubSat(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b, want int64 }{
		{5, 3, 2},
		{-5, 3, -8},
		{math.MaxInt64, -1, math.MaxInt64},
		{math.MinInt64, 1, math.MinInt64},
		{1 << 62, -(1 << 62), math.MaxInt64},
		{0, math.MinInt64 + 1, math.MaxInt64},
	}
	for _, tt := range tests {
		assert.Equalf(t, time.Duration(tt.want), subSat(tt.a, tt.b), "subSat(%d, %d)", tt.a, tt.b)
	}
}
