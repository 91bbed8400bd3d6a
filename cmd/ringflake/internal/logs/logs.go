// Package logs makes the log handlers of gen and serve: the library's
// records, less those a command's reader has no use for.
package logs

import (
	"context"
	"log/slog"
	"time"
)

// The messages of the library's records that a Filter may drop
// (ringflake.WithLogger).
const (
	longWaitMsg = "ringflake: long wait"
	markWaitMsg = "ringflake: waiting for the clock to pass the mark the machine ID's lease inherited"
)

// noticeAfter is the library's threshold for noting New's wait for the mark
// without a logger: a second. A shorter wait, such as the third of a second
// after every restart on a crashed holder's lease, is no news to an
// operator; New logs it to a WithLogger logger all the same.
const noticeAfter = time.Second

// Filter returns h without New's records of a wait for the mark shorter
// than a second, and, unless longWaits, without the records of calls that
// waited 10 ms or more.
func Filter(h slog.Handler, longWaits bool) slog.Handler {
	return filter{Handler: h, longWaits: longWaits}
}

// filter is the handler Filter returns.
type filter struct {
	slog.Handler
	longWaits bool
}

func (f filter) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Message == longWaitMsg && !f.longWaits:
		return nil
	case r.Message == markWaitMsg && waitOf(r) < noticeAfter:
		return nil
	}
	return f.Handler.Handle(ctx, r)
}

func (f filter) WithAttrs(as []slog.Attr) slog.Handler {
	return filter{Handler: f.Handler.WithAttrs(as), longWaits: f.longWaits}
}

func (f filter) WithGroup(name string) slog.Handler {
	return filter{Handler: f.Handler.WithGroup(name), longWaits: f.longWaits}
}

// waitOf returns the record's "wait", or a second (kept) if it has none.
func waitOf(r slog.Record) time.Duration {
	wait := noticeAfter
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "wait" && a.Value.Kind() == slog.KindDuration {
			wait = a.Value.Duration()
			return false
		}
		return true
	})
	return wait
}
