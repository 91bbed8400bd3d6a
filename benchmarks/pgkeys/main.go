// Command pgkeys measures what the primary key's type costs a real
// PostgreSQL under inserts: ringflake IDs as bigint (several writers, each
// its own generator and machine ID, as a fleet), UUIDv7 and UUIDv4 as uuid
// (made in Go, with google/uuid), and bigserial as the floor. Each key type
// gets a parent table (the key, a timestamp with its own index, a 40-byte
// payload) and a child table whose foreign key references the key, one child
// per parent, and rows inserted in batches until table and indexes outgrow
// shared_buffers several times. It prints, per key type, rows/s over the run
// and over its last quarter, p99 batch latency, the sizes of the table and
// its indexes, the WAL written and its full-page images, and the buffers a
// page of the newest rows reads; with -svg, a chart of rows/s over rows
// inserted.
//
// From the repository root (about 4 minutes at the defaults on 2 cores):
//
//	go run ./benchmarks/pgkeys -svg docs/pgkeys.svg
//	go run ./benchmarks/pgkeys -rows 5000000 -writers 8
//
// It starts its own PostgreSQL (Debian's newest under /usr/lib/postgresql),
// as the tests do, on a free loopback port, and removes it at the end. It is
// a benchmark: nothing in it passes or fails on timing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
)

type options struct {
	rows, writers, batch int
	sharedBuffers        string
	kinds                []keyKind
	svg                  string
}

func parseFlags() (options, error) {
	var o options
	flag.IntVar(&o.rows, "rows", 2_000_000, "parent rows per key type (and as many child rows)")
	flag.IntVar(&o.writers, "writers", 4, "concurrent writers, each its own connection (and for ringflake its own generator and machine ID)")
	flag.IntVar(&o.batch, "batch", 1000, "rows per insert statement")
	flag.StringVar(&o.sharedBuffers, "shared-buffers", "16MB", "the server's shared_buffers")
	keys := flag.String("keys", "bigserial,ringflake,UUIDv7,UUIDv4", "key types, comma-separated, in the order they run")
	flag.StringVar(&o.svg, "svg", "", "write a chart of rows/s over rows inserted to this file")
	flag.Parse()
	if o.rows < 1 || o.writers < 1 || o.writers > 1024 || o.batch < 1 {
		return o, fmt.Errorf("want -rows and -batch of at least 1, and -writers in 1..1024 (ringflake's machine IDs)")
	}
	for _, name := range strings.Split(*keys, ",") {
		i := slices.IndexFunc(kinds, func(k keyKind) bool { return strings.EqualFold(k.name, strings.TrimSpace(name)) })
		if i < 0 {
			return o, fmt.Errorf("unknown key type %q; want bigserial, ringflake, UUIDv7 or UUIDv4", name)
		}
		o.kinds = append(o.kinds, kinds[i])
	}
	return o, nil
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgkeys:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "pgkeys:", err)
		os.Exit(1)
	}
}

// settings are the server's: small shared_buffers, so that the data
// outgrows them early, and checkpoints driven by max_wal_size=128MB (one
// every 65 to 70 MB of WAL), so that each run sees several and pays the full-page images of the pages it touches
// after each, as a long-running server would; checkpoints that follow the
// WAL, not the clock, come as often for a fast key type as for a slow one.
func (o options) settings() map[string]string {
	return map[string]string{
		"shared_buffers":     o.sharedBuffers,
		"checkpoint_timeout": "1h",
		"max_wal_size":       "128MB",
		"min_wal_size":       "32MB",
		"max_connections":    "1100",
	}
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv, err := startServer(o.settings())
	if err != nil {
		return err
	}
	defer srv.remove()
	fmt.Printf("machine: %s, %d cores, %s %s/%s; PostgreSQL %s; shared_buffers=%s, max_wal_size=128MB, fsync and full_page_writes on\n",
		cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, srv.version(), o.sharedBuffers)
	fmt.Printf("rows %d per key type (and a child each), %d writers, batches of %d\n\n", o.rows, o.writers, o.batch)
	var results []result
	for _, k := range o.kinds {
		fmt.Fprintf(os.Stderr, "pgkeys: %s: inserting %d rows ...\n", k.name, o.rows)
		r, err := measure(ctx, srv.dsn(), k, o)
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "pgkeys: %s: %.0f rows/s, %.0f in the last quarter\n", k.name, r.rate, r.lastRate)
	}
	printTable(os.Stdout, results)
	if o.svg != "" {
		if err := os.WriteFile(o.svg, chart(results, o), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cpuModel is the CPU's model name, from /proc/cpuinfo where there is one.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
