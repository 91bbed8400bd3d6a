package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ringflake/ringflake"
)

func runDecode(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("decode: no ID given")
	}
	layout := ringflake.DefaultLayout()
	ids := make([]ringflake.ID, 0, fs.NArg())
	for _, a := range fs.Args() {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil || v < 0 {
			return usageError("decode: %q is not an ID: want a decimal integer 0..%d", a, int64(1<<63-1))
		}
		ids = append(ids, ringflake.ID(v))
	}
	w := bufio.NewWriter(stdout)
	for _, id := range ids {
		p := layout.Decompose(id)
		fmt.Fprintf(w, "%d\ttime=%s\tmachine=%d\tsequence=%d\tticks=%d\n",
			id, p.Time.Format(time.RFC3339Nano), p.Machine, p.Sequence, p.Ticks)
	}
	return w.Flush()
}
