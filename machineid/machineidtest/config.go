package machineidtest

import (
	"errors"
	"testing"
	"time"

	"github.com/ringflake/ringflake"
)

// testConfig makes Leasers with bad configurations, which NewLeaser must
// refuse with an error wrapping ringflake.ErrInvalidConfig.
func testConfig(t *testing.T, h Harness) {
	for _, tt := range []struct {
		name   string
		lo, hi int64
		ttl    time.Duration
	}{
		{"lo above hi", 5, 4, h.TTL},
		{"negative lo", -1, 3, h.TTL},
		{"negative TTL", 0, 3, -h.TTL},
		{"TTL of a thousand hours", 0, 3, 1000 * time.Hour}, // a mark that far ahead would lock the ID out for weeks
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := h.NewLeaser(t, tt.lo, tt.hi, tt.ttl)
			if !errors.Is(err, ringflake.ErrInvalidConfig) {
				t.Errorf("NewLeaser(%d, %d, %v) = %v; want an error wrapping ringflake.ErrInvalidConfig", tt.lo, tt.hi, tt.ttl, err)
			}
			if err == nil && l != nil {
				_ = l.Release(time.Time{})
			}
		})
	}
}
