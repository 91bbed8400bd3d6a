package serve

import (
	"io"
	"log/slog"
)

// LogHandler returns the slog handler of --log-format. JSON records give
// durations as text ("15ms"), as text records do, rather than as a number
// of nanoseconds.
func LogHandler(format string, w io.Writer) slog.Handler {
	if format == "json" {
		return slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationText})
	}
	return slog.NewTextHandler(w, nil)
}

// durationText writes a duration as its String.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
