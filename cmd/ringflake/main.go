// Command ringflake generates and decodes ringflake IDs.
//
// Usage:
//
//	ringflake gen -n N [--machine-id M]   print N new IDs, one per line
//	ringflake gen -n N --redis ADDR       the same, with a machine ID leased from Redis
//	ringflake decode ID...                print the time, machine and sequence of each ID
//	ringflake simulate [--rollback D]     replay a clock step-back against ringflake and a strict Snowflake
//	ringflake simulate --svg FILE         the same, and draw it as an SVG chart in FILE
//
// Bad input exits with status 2 and a one-line reason on stderr; a failure
// while generating, or writing the chart, exits with status 1.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors caused by bad input, which exit with status 2.
var errUsage = errors.New("usage")

const usage = `usage: ringflake <command> [flags]

commands:
  gen -n N [--machine-id M]   print N new IDs, one decimal per line
      [--redis ADDR [--redis-prefix P] [--redis-mode lease|host]
       [--machine-range MIN-MAX] [--lease-ttl D]]
                              take the machine ID from Redis instead
      [--clock-offset D]      shift the clock (testing and demos)
  decode ID...                print the time, machine and sequence of each ID
                              (decimal or Base32; Base58 with --format base58)
  simulate [--rollback D] [--rate N/s] [--duration D] [--ring N]
      [--max-wait D]          step a clock back and compare ringflake with a
                              strict Snowflake under the same load
      [--svg FILE]            also draw the run as an SVG chart in FILE

Run "ringflake <command> -h" for a command's flags.`

// run executes one command and returns the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "ringflake: no command given; want gen, decode or simulate")
		return 2
	}
	var err error
	switch args[0] {
	case "gen":
		err = runGen(args[1:], stdout, stderr)
	case "decode":
		err = runDecode(args[1:], stdout, stderr)
	case "simulate":
		err = runSimulate(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown command %q; want gen, decode or simulate", errUsage, args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errClosedPipe):
		return 141
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "ringflake: %v\n", unwrapUsage(err))
		return 2
	}
	fmt.Fprintf(stderr, "ringflake: %v\n", err)
	return 1
}

// errHelp reports that a command printed its help on request.
var errHelp = errors.New("help requested")

// usageError wraps err as bad input.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
}

// unwrapUsage drops the "usage: " prefix that errUsage adds to a message.
func unwrapUsage(err error) string {
	msg := err.Error()
	const p = "usage: "
	if len(msg) > len(p) && msg[:len(p)] == p {
		return msg[len(p):]
	}
	return msg
}
