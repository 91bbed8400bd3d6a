package logs

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		longWaits bool
		msg       string
		attrs     []any
		kept      bool
	}{
		{"a mark wait of a third of a second", true, markWaitMsg, []any{"machine", 0, "wait", 333 * time.Millisecond}, false},
		{"a mark wait just under a second", false, markWaitMsg, []any{"wait", 999 * time.Millisecond}, false},
		{"a mark wait of a second", true, markWaitMsg, []any{"wait", time.Second}, true},
		{"a mark wait of 12s", false, markWaitMsg, []any{"wait", 12 * time.Second}, true},
		{"a mark wait without its figure", true, markWaitMsg, nil, true},
		{"a long wait, in serve", true, longWaitMsg, []any{"wait", 15 * time.Millisecond}, true},
		{"a long wait, in gen", false, longWaitMsg, []any{"wait", 15 * time.Millisecond}, false},
		{"a step back", false, "ringflake: clock stepped back", []any{"by", 750 * time.Millisecond}, true},
		{"a short wait in another record", false, "ringflake: waiting for a machine ID: every ID in the range is held", []any{"wait", time.Millisecond}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := slog.New(Filter(slog.NewTextHandler(&buf, nil), tt.longWaits))
			log.With("source", "x").Warn(tt.msg, tt.attrs...)
			assert.Equal(t, tt.kept, buf.Len() > 0, "logged: %q", buf.String())
		})
	}
}
