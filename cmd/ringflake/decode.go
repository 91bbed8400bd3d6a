package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ringflake/ringflake"
)

func runDecode(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	format := fs.String("format", "auto", "how the IDs are written: decimal, base32, base58, or auto")
	var bits int
	registerDatacenterBits(fs, &bits)
	if err := parseFlags(fs, args, stderr); err != nil {
		// "decode -5" is a negative ID, not an unknown flag -5: say so as
		// ParseID does.
		if _, num, ok := strings.Cut(err.Error(), "flag provided but not defined: "); ok && isDecimal(num) {
			if _, perr := ringflake.ParseID(num); perr != nil {
				return fmt.Errorf("%w: %w", errUsage, inContext("decode", perr))
			}
		}
		return err
	}
	layout, err := layoutOf("decode", bits)
	if err != nil {
		return err
	}
	parse, ok := idParsers[*format]
	if !ok {
		return usageError("decode: --format = %q; want auto, decimal, base32 or base58", *format)
	}
	if fs.NArg() == 0 {
		return usageError("decode: no ID given")
	}
	ids := make([]ringflake.ID, 0, fs.NArg())
	for _, a := range fs.Args() {
		id, err := parse(a)
		if err != nil {
			return usageError("decode: %s", strings.TrimPrefix(err.Error(), "ringflake: "))
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
	}
	return w.Flush()
}

// idParsers maps decode's --format values to parsers.
var idParsers = map[string]func(string) (ringflake.ID, error){
	"auto":    parseAnyID,
	"decimal": ringflake.ParseID,
	"base32":  ringflake.ParseBase32,
	"base58":  ringflake.ParseBase58,
}

// parseAnyID reads an ID in the forms that cannot be mistaken: decimal if
// it is all digits, Base32 if it has 13 characters. Base58 needs --format
// base58: almost any short word is valid Base58, so in auto mode a typo
// would decode to some ID instead of failing.
func parseAnyID(s string) (ringflake.ID, error) {
	switch {
	case isDecimal(s):
		return ringflake.ParseID(s)
	case len(s) == 13: // the width of every Base32 ID
		return ringflake.ParseBase32(s)
	}
	return 0, fmt.Errorf("%s is neither decimal nor 13-character base32; for a base58 ID give --format base58", quoteCut(s))
}

func isDecimal(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}
