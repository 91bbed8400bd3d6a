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

func TestAcceptOffset(t *testing.T) {
	t.Parallel()
	const old = int64(1_000_000_000)
	skew := int64(resyncSkew)
	for _, tt := range []struct {
		off  int64
		want bool
	}{
		{old, true},
		{old + 1, true},
		{old + int64(time.Hour), true},
		{old - 1, false},       // measurement noise
		{old - skew, false},    // at the bound: still noise
		{old - skew - 1, true}, // past it: a real step back
		{old - int64(time.Hour), true},
		{math.MinInt64, true},
		{math.MaxInt64, true},
	} {
		assert.Equal(t, tt.want, acceptOffset(old, tt.off), "acceptOffset(%d, %d)", old, tt.off)
	}
}

// TestWallClockReadingsNeverGoBackOnNoise raises the offset by less than
// resyncSkew, as a lucky measurement would, and forces resyncs: the next
// measurements come out lower by that much, which is noise, so one
// goroutine's readings must not go back.
func TestWallClockReadingsNeverGoBackOnNoise(t *testing.T) {
	t.Parallel()
	c := newWallClock()
	c.offset.Add(int64(resyncSkew) * 3 / 4)
	prev := c.unixNano()
	for range 200 {
		c.next.Store(0) // due for a resync
		got := c.unixNano()
		if got < prev {
			t.Fatalf("reading went back by %v after a resync", time.Duration(prev-got))
		}
		prev = got
	}
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
