package ringflakeclient

import (
	"errors"
	"strings"
)

// Errors of the client. An [*Error] wraps the failure of each server.
var (
	// ErrClosed is NextID's error after Close.
	ErrClosed = errors.New("ringflakeclient: closed")
	// ErrLayout reports a server whose layout is not the client's: its IDs
	// could be another server's.
	ErrLayout = errors.New("ringflakeclient: the server's layout is not the client's")
	// ErrNoAnswer reports a server that did not answer within the timeout.
	ErrNoAnswer = errors.New("ringflakeclient: no answer within the timeout")
)

// Error reports that no server can serve: NextID found the buffer empty
// and every server failing or refused, or (with WithFailFast) not ready.
type Error struct {
	Failures []Failure // one per server, in the order New was given them
}

// Failure is one server's last failure. A layout mismatch wraps ErrLayout
// and names both layouts.
type Failure struct {
	Target string
	Err    error
}

// Error names each server and its failure.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("ringflakeclient: every server failed: ")
	for i, f := range e.Failures {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Target + ": " + strings.TrimPrefix(f.Err.Error(), "ringflakeclient: "))
	}
	return b.String()
}

// Unwrap returns each server's failure, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		errs[i] = f.Err
	}
	return errs
}
