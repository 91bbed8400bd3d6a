// Package sentinel holds what every module of ringflake shares about its
// errors: ErrInvalidConfig, which package ringflake exports and package
// machineid and the stores must wrap, though they cannot import ringflake
// (ringflake imports machineid); and the rule by which a message names
// its package once, where the error starts.
//
// The rule: a sentinel's text begins with its package's name, and an error
// of a sentinel's kind leads with it ("%w: figures"), so the sentinel names
// the package. An error that wraps none of ours is named by the first of
// our packages that returns it, with [Name]. Every other wrap adds context
// only.
package sentinel

import "errors"

// ErrInvalidConfig is ringflake.ErrInvalidConfig.
var ErrInvalidConfig = New("ringflake: invalid configuration")

// named is the mark of an error whose message names a package: a sentinel
// made by New, or an error given a name by Name.
type named interface{ namesPackage() }

// sentinelError is a sentinel: its text starts with its package's name.
type sentinelError struct{ text string }

func (e *sentinelError) Error() string { return e.text }
func (e *sentinelError) namesPackage() {}

// New returns a sentinel error whose text is text, which must begin with
// the name of the package that exports it, as "ringflake: ...".
func New(text string) error { return &sentinelError{text} }

// Named reports whether err's message names one of ringflake's packages:
// err wraps a sentinel made by New, or an error made by Name.
func Named(err error) bool {
	var n named
	return errors.As(err, &n)
}

// Name returns err with pkg's name in front, "pkg: ...", unless its message
// names a package already (see Named), in which case it returns err. It
// returns nil for a nil err. The result wraps err.
func Name(pkg string, err error) error {
	if err == nil || Named(err) {
		return err
	}
	return &namedError{pkg: pkg, err: err}
}

// namedError is an error given its package's name by Name.
type namedError struct {
	pkg string
	err error
}

func (e *namedError) Error() string { return e.pkg + ": " + e.err.Error() }
func (e *namedError) Unwrap() error { return e.err }
func (e *namedError) namesPackage() {}
