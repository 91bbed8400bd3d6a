// Command ringflake generates and decodes ringflake IDs, and serves them
// over HTTP.
//
// Usage:
//
//	ringflake gen -n N --machine-id M    print N new IDs, one per line
//	ringflake gen -n N --lease URL       the same, with a machine ID leased from a store
//	                                     (redis://, etcd://, postgres://, mysql:// or k8s://)
//	ringflake serve --lease URL          serve IDs over HTTP: /v1/id, /v1/ids?n=N,
//	                                     /v1/decode/{id}, Leaf's /api/snowflake/get/{key},
//	                                     /metrics, /healthz and /readyz
//	ringflake decode ID...               print the time, machine and sequence of each ID
//	ringflake bounds FROM [TO]           print the IDs lo and hi of the time range, for
//	                                     WHERE id >= lo AND id < hi
//	ringflake simulate [--rollback D]    replay a clock step-back against ringflake and a strict Snowflake
//	ringflake simulate --svg FILE        the same, and draw it as an SVG chart in FILE
//	ringflake simulate --mod 16,1024     count id % N of each one's IDs (--rate 500/s: low traffic)
//
// Exit status: 0 on success, and for serve after a SIGTERM or SIGINT that
// stopped it cleanly; 2 for bad input, with a one-line reason on stderr; 1
// for a failure (gen's machine ID not to be had, a failure while
// generating or writing the chart, a drain that timed out, a lease that
// could not be released, as when the store is down at exit) and for gen
// stopped by a signal; 141 for gen whose reader went away. serve does not
// exit for want of a machine ID: it asks again, unready, until a signal.
//
// A SIGTERM or SIGINT at any point, while the machine ID is acquired or
// its mark waited out included, stops gen within about a second and serve
// within --shutdown-timeout (the requests in flight), each then releasing
// its lease within 5 s; serve waiting to ask its store again stops at once.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors caused by bad input, which exit with status 2.
var errUsage = errors.New("usage")

const usage = `usage: ringflake <command> [flags]

commands:
  gen [-n N] [--machine-id M]   print N new IDs (default 1), one decimal per line;
                                with neither --machine-id nor --lease, machine ID 0
                                and a note on stderr
      [--lease URL]             lease the machine ID from a store instead:
                                  redis://[user:pass@]host:port[/db]  (rediss:// for TLS)
                                  redis://host:port?addr=host2:port2&addr=...  a Cluster
                                    with prefix=P (default {ringflake}:), mode=host[&host=NAME]
                                    (a host-IP mapping), and go-redis's own
                                    parameters (dial_timeout=, max_retries=, ...)
                                  etcd://host:port[,host:port...][?prefix=P]
                                    (default prefix ringflake/machineid/)
                                  postgres://user:pass@host:port/db[?table=NAME&...]
                                    (or postgresql://; default table ringflake_machine_ids,
                                    created if missing; pgx's own parameters: sslmode=, ...)
                                  mysql://user:pass@host[:port]/db[?table=NAME&...]
                                    (MySQL or MariaDB; table as for postgres; the Go MySQL
                                    driver's own parameters: tls=, timeout=, ...)
                                  k8s://NAMESPACE[?prefix=P&identity=NAME]  Lease objects, on
                                    the cluster of $KUBECONFIG (or ~/.kube/config), or in a pod
                                    its service account's (default prefix ringflake-machine-)
      [--machine-range MIN-MAX] [--lease-ttl D] [--safety-margin D] [--max-clock-offset D]
                                the IDs the lease may hand out and its safety settings;
                                a clock more than --max-clock-offset (2s) off the store's
                                is refused (bounds and defaults: "ringflake gen -h")
      [--acquire-timeout D]     wait at most D for the lease and its inherited mark
                                (0, the default: 30s)
      [--max-wait D]            wait at most D for each ID, as for a lease lapse
                                (0, the default: 100ms; negative: never wait)
      [--layout L]              how IDs are laid out: default (41 bits of milliseconds,
                                10 of machine ID, 12 of sequence), js (41, 6 and 6: 53
                                bits, exact as JavaScript Numbers), or bit widths T/M/S
                                summing to at most 63; decode and bounds take it too
      [--datacenter-bits B --datacenter N]
                                split the machine ID into B bits of datacenter (5 for
                                Twitter's) and the rest of worker: the datacenter is N,
                                --machine-id gives the worker, and a lease takes one of
                                the datacenter's machine IDs (--machine-range then
                                names workers)
      [--clock-offset D]        shift the clock (testing and demos)
      [--state-dir DIR]         guard a fixed machine ID (--machine-id, or 0) with a file in DIR
                                (default $RINGFLAKE_STATE_DIR, else $XDG_STATE_HOME/ringflake,
                                else ~/.local/state/ringflake; in a container, on a volume):
                                a second process on the ID is refused, and a restart with the
                                clock behind waits until it passes the ID's mark
      [--no-state-file]         do without the file, giving up both (said on stderr)
  serve [--addr HOST:PORT]      serve IDs over HTTP (default 127.0.0.1:8080: loopback only,
                                as the API has no authentication; :8080 for every interface),
                                with a machine ID from --machine-id or --lease as for gen:
        GET /api/snowflake/get/{key}  an ID as plain decimal text, as Meituan Leaf
                                      answers (the key is ignored, as Leaf's Snowflake
                                      mode ignores it)
        GET /v1/id                    {"id":"..."}; {"id":N} under --layout js
        GET /v1/ids?n=N               {"ids":["...",...]}, N in 1..--max-batch; numbers
                                      under --layout js. ?format=string or number
        GET /v1/decode/{id}           {"id":"...","time":"...","machine":M,"sequence":S}, with
                                      "datacenter" and "worker" under --datacenter-bits;
                                      read as decode reads it (?format= as --format)
        GET /metrics                  Prometheus metrics of the generator, Go and the process
        GET /healthz, /readyz         up, from the moment it listens; able to issue now
                                      (503 with the reason if not, as while the machine
                                      ID is acquired and the ID endpoints answer 503; a
                                      store that cannot be reached, or refuses the clock,
                                      is asked again until it answers, with no exit)
                                HEAD works wherever GET does. IDs are decimal strings in
                                JSON, numbers under a layout of at most 53 bits; bad input is a 4xx and a failure to issue a 503 (with
                                Retry-After when waiting helps), each with {"error":"..."}
      [--max-batch N]           the most IDs one /v1/ids may ask for, 1..65536 (4096)
      [--max-wait D] [--acquire-timeout D] [--clock-offset D], the state and the lease
                                flags, as for gen
      [--read-timeout D] [--write-timeout D] [--idle-timeout D]
                                per connection (5s, 10s, 60s)
      [--shutdown-timeout D]    on SIGTERM or SIGINT, wait at most D for the requests in
                                flight (10s), then release the lease (at most 5s) and exit
                                0, or 1 if the release failed
      [--log-format text|json]  log records on stderr: one at the start, one at the stop,
                                and the generator's own (step backs, lease changes)
  decode ID...                  print the time, machine and sequence of each ID, and
                                its datacenter and worker with --datacenter-bits B;
                                each in the one form that reads it, decimal, Base32 (in
                                either case, I and L as 1, O as 0) or Base58: an ID two
                                forms read (13 digits), or a word only Base58 reads (abc),
                                is refused with its readings, until --format
                                decimal|base32|base58 names one; a time no ringflake ID
                                has gets a hint on stderr (an ID of --layout js?)
  bounds FROM [TO]              print lo and hi, one per line, such that the IDs whose
                                time is in [FROM, TO) are WHERE id >= lo AND id < hi;
                                without TO, those of FROM's day for a date, else of its
                                millisecond. FROM and TO are dates (2026-11-24, midnight
                                UTC), RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds
  simulate [--rollback D] [--rate N/s] [--duration D] [--ring N]
      [--max-wait D] [--mod N,...] [--svg FILE]
                                step a clock back and compare ringflake with a
                                strict Snowflake under the same load, and draw
                                the run as an SVG chart in FILE; with --mod,
                                count and draw id % N of the IDs each served

Run "ringflake <command> -h" for a command's flags.`

// run executes one command and returns the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "ringflake: no command given; want gen, serve, decode, bounds or simulate")
		return 2
	}
	var err error
	switch args[0] {
	case "gen":
		err = runGen(args[1:], stdout, stderr)
	case "serve":
		err = runServe(args[1:], stderr)
	case "decode":
		err = runDecode(args[1:], stdout, stderr)
	case "bounds":
		err = runBounds(args[1:], stdout, stderr)
	case "simulate":
		err = runSimulate(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown command %q; want gen, serve, decode, bounds or simulate", errUsage, args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errClosedPipe):
		return 141
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, line(unwrapUsage(err)))
		return 2
	}
	fmt.Fprintln(stderr, line(err.Error()))
	return 1
}

// line turns an error message into the one line the command prints, with
// "ringflake: " in front, once.
func line(msg string) string {
	return "ringflake: " + oneLine(msg)
}

// inContext returns err with context in front ("gen: lease redis://...").
// The library names its package once, where an error starts, so one of
// its errors may begin with "ringflake: ", which the command's line begins
// with already: that one leading name is left out where context and error
// join. Nothing else is taken out of a message, and nothing inside one,
// where user data (a key prefix, a path, a table) may be.
func inContext(context string, err error) error {
	return &contextError{context: context, err: err}
}

// contextError is an error with the command's context in front.
type contextError struct {
	context string
	err     error
}

func (e *contextError) Error() string {
	return e.context + ": " + strings.TrimPrefix(e.err.Error(), "ringflake: ")
}

func (e *contextError) Unwrap() error { return e.err }

// oneLine joins the lines of a message that has several, as pgx's
// connection errors do (one line per address tried), dropping a line that
// repeats the one before it.
func oneLine(msg string) string {
	if !strings.Contains(msg, "\n") {
		return msg
	}
	var b strings.Builder
	prev := ""
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == prev {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(prev, ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
		prev = l
	}
	return b.String()
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
