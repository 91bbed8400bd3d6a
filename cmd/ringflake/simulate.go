package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/sim"
)

func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	config := sim.Flags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: ringflake simulate [--rollback D] [--rate N/s] [--duration D] [--ring N] [--max-wait D] [--mod N,...] [--svg FILE]")
		fmt.Fprintln(fs.Output(), "Steps an injected clock back and compares ringflake with a strict Snowflake under the same load.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("simulate: unexpected argument %q", fs.Arg(0))
	}
	c, err := config()
	if err != nil {
		return usageError("simulate: %v", err)
	}
	err = sim.Run(c, stdout)
	if errors.Is(err, ringflake.ErrInvalidConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}
