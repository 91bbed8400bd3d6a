package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/cmd/ringflake/internal/idtext"
)

func runDecode(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	format := fs.String("format", "auto", "how the IDs are written: decimal, base32 (either case; I and L read as 1, O as 0), base58, or auto: "+
		"whichever one of them reads an ID (an ID two of them read, such as 13 digits, is refused, and so is a word only base58 reads to a time no ID has, such as abc)")
	var lf layoutFlags
	lf.register(fs, true)
	if err := parseFlags(fs, args, stderr); err != nil {
		// "decode -5" is a negative ID, not an unknown flag -5: say so as
		// reading it would.
		if _, num, ok := strings.Cut(err.Error(), "flag provided but not defined: "); ok && idtext.IsDecimal(num) {
			if _, perr := (idtext.Reader{Layout: ringflake.DefaultLayout()}).Parse(num, "auto"); perr != nil {
				return fmt.Errorf("%w: %w", errUsage, inContext("decode", perr))
			}
		}
		return err
	}
	layout, err := lf.layout("decode")
	if err != nil {
		return err
	}
	if !idtext.Known(*format) {
		return usageError("decode: --format = %q; want %s", *format, idtext.Formats)
	}
	if fs.NArg() == 0 {
		return usageError("decode: no ID given")
	}
	r := idtext.Reader{Layout: layout, Ask: "--format "}
	ids := make([]ringflake.ID, 0, fs.NArg())
	for _, a := range fs.Args() {
		id, err := r.Parse(a, *format)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, inContext("decode", err))
		}
		ids = append(ids, id)
	}
	w := bufio.NewWriter(stdout)
	for _, id := range ids {
		p := layout.Decompose(id)
		fmt.Fprintf(w, "%d\ttime=%s\tmachine=%d", id, p.Time.Format(time.RFC3339Nano), p.Machine)
		if layout.DatacenterBits > 0 {
			fmt.Fprintf(w, "\tdatacenter=%d\tworker=%d", p.Datacenter, p.Worker)
		}
		fmt.Fprintf(w, "\tsequence=%d\tticks=%d\n", p.Sequence, p.Ticks)
		if lf.peer() { // an old fleet's IDs: any time since its epoch is theirs, not a sign of another layout
			continue
		}
		if h := r.Hint(id, "--layout "); h != "" { // on stderr: the line above is still the reading asked for
			fmt.Fprintln(stderr, "ringflake: decode: hint: "+h)
		}
	}
	return w.Flush()
}
