package main

import (
	"errors"
	"flag"
	"io"
	"strings"
)

// parseFlags parses args with fs, turning flag errors into usage errors with
// a one-line reason instead of the flag package's multi-line output.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stderr)
		fs.Usage()
		return errHelp
	}
	if err != nil {
		return usageError("%s: %s", fs.Name(), strings.TrimSpace(err.Error()))
	}
	return nil
}
