package machineid

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ringflake/ringflake/internal/sentinel"
)

// provider is a Source built from a function and a range check.
type provider struct {
	source string // names the source in errors, e.g. `env RINGFLAKE_MACHINE_ID`
	max    int64
	get    func(ctx context.Context) (int64, error)
}

// MachineID returns the source's ID after checking it against 0..max.
func (p provider) MachineID(ctx context.Context) (int64, error) {
	id, err := p.get(ctx)
	switch {
	case errors.Is(err, ErrNotFound):
		return 0, err // already names the source
	case err != nil:
		return 0, sentinel.Name("machineid", fmt.Errorf("%s: %w", p.source, err))
	}
	return check(p.source, id, p.max)
}

var _ Source = provider{}

// Env returns a Source that reads the machine ID, a decimal integer with
// no plus sign, from the environment variable name each time MachineID is
// called; white space around it (a trailing newline from a file) is
// ignored. MachineID returns an error wrapping [ErrNotFound] if the
// variable is unset, empty or not such an integer, and one wrapping
// [ErrNotFound] if the value is outside 0..max. It is safe for
// concurrent use.
func Env(name string, max int64) Source {
	source := "env " + name
	return provider{source: source, max: max, get: func(context.Context) (int64, error) {
		s, ok := os.LookupEnv(name)
		s = strings.TrimSpace(s)
		if !ok || s == "" {
			return 0, fmt.Errorf("%w: %s is not set", ErrNotFound, name)
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || s[0] == '+' {
			return 0, fmt.Errorf("%w: %s = %q is not a decimal integer", ErrNotFound, name, s)
		}
		return id, nil
	}}
}

// FromFunc adapts fn into a Source whose IDs are checked against 0..max:
// MachineID returns fn's error, wrapped, or one wrapping [ErrNotFound];
// with a nil fn it returns one wrapping [ErrNotFound]. It is as safe for
// concurrent use as fn is.
func FromFunc(max int64, fn func(ctx context.Context) (int64, error)) Source {
	if fn == nil {
		fn = func(context.Context) (int64, error) {
			return 0, fmt.Errorf("%w: FromFunc was given a nil func", ErrNotFound)
		}
	}
	return provider{source: "func", max: max, get: fn}
}
