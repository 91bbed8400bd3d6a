package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/machineid"
)

func TestMain(m *testing.M) {
	// gen and serve keep a fixed machine ID's state file in the default
	// state directory: the tests' own, not the user's.
	state, err := os.MkdirTemp("", "ringflake-state")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("RINGFLAKE_STATE_DIR", state)
	code := m.Run()
	mysqltest.Cleanup()
	if cli.dir != "" {
		_ = os.RemoveAll(cli.dir)
	}
	_ = os.RemoveAll(state)
	os.Exit(code)
}

// cli is the ringflake binary, built once for every test that runs it.
var cli struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
}

// buildCLI returns the path of the ringflake binary, building it the first
// time.
func buildCLI(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		if cli.dir, cli.err = os.MkdirTemp("", "ringflake-cli"); cli.err != nil {
			return
		}
		cli.bin = filepath.Join(cli.dir, "ringflake")
		if out, err := exec.Command("go", "build", "-o", cli.bin, ".").CombinedOutput(); err != nil {
			cli.err = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	require.NoError(t, cli.err)
	return cli.bin
}

// invoke runs the CLI in-process and returns its status and output.
func invoke(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// flagError is the flag package's error for args, with define's flags:
// its words are the standard library's, which may change between Go
// releases, so the tests take them from it rather than spell them out.
func flagError(t *testing.T, define func(*flag.FlagSet), args ...string) string {
	t.Helper()
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if define != nil {
		define(fs)
	}
	err := fs.Parse(args)
	require.Error(t, err, "flag.Parse(%q)", args)
	return err.Error()
}

// rateFlag defines --rate as simulate does, with the error its value gives.
func rateFlag(fs *flag.FlagSet) {
	fs.Func("rate", "", func(string) error { return errors.New("want requests per second as N/s with 0 < N <= 1e8") })
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // the whole stderr line
	}{
		{"no command", nil, "ringflake: no command given; want gen, serve, decode, bounds or simulate"},
		{"unknown command", []string{"frobnicate"}, `ringflake: unknown command "frobnicate"; want gen, serve, decode, bounds or simulate`},
		{"decode nothing", []string{"decode"}, "ringflake: decode: no ID given"},
		{"decode letters", []string{"decode", "12-4"},
			`ringflake: decode: "12-4" is not an ID in decimal, base32 or base58; as base58: ParseBase58 "12-4": invalid ID syntax: character "-" at offset 2 is not in the Base58 alphabet`},
		{"decode a word", []string{"decode", "invalid"},
			`ringflake: decode: "invalid" is not an ID in decimal, base32 or base58; as base58: ParseBase58 "invalid": invalid ID syntax: character "l" at offset 4 is not in the Base58 alphabet`},
		{"decode 13 digits", []string{"decode", "0123456789012"},
			`ringflake: decode: "0123456789012" is ambiguous: decimal 123456789012 (time 2024-01-01T00:00:29.434Z, machine 401, sequence 2580) or base32 38390726480134178 (time 2024-04-15T22:31:02.458Z, machine 72, sequence 34); give --format decimal or --format base32`},
		{"decode 13 digits among others", []string{"decode", "383078035417174017", "0123456789012"},
			`ringflake: decode: "0123456789012" is ambiguous: decimal 123456789012 (time 2024-01-01T00:00:29.434Z, machine 401, sequence 2580) or base32 38390726480134178 (time 2024-04-15T22:31:02.458Z, machine 72, sequence 34); give --format decimal or --format base32`},
		{"decode digits that are base58 too", []string{"decode", "21"},
			`ringflake: decode: "21" is ambiguous: decimal 21 (time 2024-01-01T00:00:00Z, machine 0, sequence 21) or base58 58 (time 2024-01-01T00:00:00Z, machine 0, sequence 58); give --format decimal or --format base58`},
		{"decode a default ID under --layout js", []string{"decode", "--layout", "js", "383078035417174017"},
			`ringflake: decode: 383078035417174017 is above 9007199254740991 (2^53-1), the largest ID of the layout: an ID of another layout?`},
		{"decode bad layout", []string{"decode", "--layout", "javascript", "1"},
			`ringflake: decode: --layout = "javascript"; want default, js, bwmarrin, sonyflake-v1, sonyflake-v2, leaf, twitter, baidu, or bit widths T/M/S such as 39/16/8, each with an optional @EPOCH`},
		{"decode layout too wide", []string{"decode", "--layout", "42/10/12", "1"},
			`ringflake: decode: --layout 42/10/12: invalid configuration: Layout bits 42+10+12 = 64; want a sum of at most 63`},
		{"decode layout without time", []string{"decode", "--layout", "0/10/12", "1"},
			`ringflake: decode: --layout 0/10/12: invalid configuration: Layout.TimeBits = 0; valid range 1..62`},
		{"bounds bad layout", []string{"bounds", "--layout", "41/10", "2026-11-22T12:00:00Z"},
			`ringflake: bounds: --layout = "41/10"; want default, js, bwmarrin, sonyflake-v1, sonyflake-v2, leaf, twitter, baidu, or bit widths T/M/S such as 39/16/8, each with an optional @EPOCH`},
		{"gen machine ID past js", []string{"gen", "--layout", "js", "--machine-id", "64"},
			"ringflake: gen: invalid configuration: machine ID = 64; valid range 0..63"},
		{"decode bad base58", []string{"decode", "--format", "base58", "12-4"},
			`ringflake: decode: ParseBase58 "12-4": invalid ID syntax: character "-" at offset 2 is not in the Base58 alphabet`},
		{"gen empty lease", []string{"gen", "--lease", ""},
			`ringflake: gen: --lease = ""; want a URL such as redis://host:port`},
		{"gen lease without a scheme", []string{"gen", "--lease", "127.0.0.1:6379"},
			"ringflake: gen: --lease wants a URL such as redis://host:port; supported schemes: etcd, k8s, mysql, postgres, postgresql, redis, rediss"},
		{"gen unsupported scheme", []string{"gen", "--lease", "memcached://127.0.0.1:11211"},
			`ringflake: gen: --lease: unsupported scheme "memcached"; supported: etcd, k8s, mysql, postgres, postgresql, redis, rediss`},
		{"gen etcd without endpoint", []string{"gen", "--lease", "etcd://"}, "ringflake: gen: lease etcd:: no endpoint; want etcd://host:port[,host:port...]"},
		{"gen etcd endpoint without port", []string{"gen", "--lease", "etcd://a,b:2379"}, `ringflake: gen: lease etcd://a,b:2379: endpoint "a"; want host:port`},
		{"gen etcd path", []string{"gen", "--lease", "etcd://127.0.0.1:1/x"},
			"ringflake: gen: lease etcd://127.0.0.1:1/x: etcd:// takes no path (/x); give a key prefix as ?prefix=P"},
		{"gen etcd unknown parameter", []string{"gen", "--lease", "etcd://127.0.0.1:1?table=t"},
			`ringflake: gen: lease etcd://127.0.0.1:1?table=t: unexpected query parameter "table"; etcd:// takes prefix=P`},
		{"gen etcd credentials", []string{"gen", "--lease", "etcd://u:secret@127.0.0.1:1"},
			"ringflake: gen: lease etcd://u:xxxxx@127.0.0.1:1: etcd:// takes no user or password"},
		{"gen k8s host and port", []string{"gen", "--lease", "k8s://127.0.0.1:6443"},
			"ringflake: gen: lease k8s://127.0.0.1:6443: k8s:// takes a namespace, not host:port (127.0.0.1:6443); the API server's address comes from the kubeconfig"},
		{"gen k8s path", []string{"gen", "--lease", "k8s://ids/x"}, "ringflake: gen: lease k8s://ids/x: k8s:// takes a namespace and no path (/x); want k8s://NAMESPACE"},
		{"gen k8s unknown parameter", []string{"gen", "--lease", "k8s://ids?table=t"},
			`ringflake: gen: lease k8s://ids?table=t: unexpected query parameter "table"; k8s:// takes prefix=P and identity=NAME`},
		{"gen etcd TTL not whole seconds", []string{"gen", "--lease", "etcd://127.0.0.1:1", "--lease-ttl", "1500ms"},
			"ringflake: gen: lease etcd://127.0.0.1:1: invalid configuration: TTL = 1.5s; valid: a whole number of 1s"},
		{"gen etcd margin", []string{"gen", "--lease", "etcd://127.0.0.1:1", "--lease-ttl", "2s", "--safety-margin", "1s"},
			"ringflake: gen: lease etcd://127.0.0.1:1: invalid configuration: safety margin = 1s; valid: 1ms up to, not including, TTL/2 = 1s"},
		{"gen postgres table", []string{"gen", "--lease", "postgres://u:secret@127.0.0.1:1/db?table=Leases"},
			`ringflake: gen: lease postgres://u:xxxxx@127.0.0.1:1/db?table=Leases: invalid configuration: table = "Leases"; valid: a lowercase SQL identifier (a-z, 0-9, _; not starting with a digit; at most 63 bytes), optionally schema.table`},
		{"gen postgres pgx parameter", []string{"gen", "--lease", "postgresql://u:secret@127.0.0.1:1/db?sslmode=maybe"},
			"ringflake: gen: lease postgresql://u:xxxxx@127.0.0.1:1/db?sslmode=maybe: cannot parse `postgresql://u:xxxxx@127.0.0.1:1/db?sslmode=maybe`: failed to configure TLS (sslmode is invalid)"},
		{"gen postgres TTL", []string{"gen", "--lease", "postgres://127.0.0.1:1/db", "--lease-ttl", "48h"},
			"ringflake: gen: lease postgres://127.0.0.1:1/db: invalid configuration: TTL = 48h0m0s; valid: 100ms..1h0m0s"},
		{"gen unparsable URL", []string{"gen", "--lease", "redis://u:p%zz@127.0.0.1:1"},
			`ringflake: gen: --lease is not a valid URL: invalid URL escape "%zz"`},
		{"gen bad database", []string{"gen", "--lease", "redis://127.0.0.1:1/db"},
			`ringflake: gen: lease redis://127.0.0.1:1/db: redis: invalid database number: "db"`},
		{"gen unknown query parameter", []string{"gen", "--lease", "redis://127.0.0.1:1?bogus=1"},
			"ringflake: gen: lease redis://127.0.0.1:1?bogus=1: redis: unexpected option: bogus"},
		{"gen bad mode", []string{"gen", "--lease", "redis://127.0.0.1:1?mode=ip"},
			"ringflake: gen: lease redis://127.0.0.1:1?mode=ip: mode=ip; want lease or host"},
		{"gen host without host mode", []string{"gen", "--lease", "redis://127.0.0.1:1?host=a"},
			"ringflake: gen: lease redis://127.0.0.1:1?host=a: host= needs mode=host"},
		{"gen database on a cluster", []string{"gen", "--lease", "redis://127.0.0.1:1/2?addr=127.0.0.1:2"},
			"ringflake: gen: lease redis://127.0.0.1:1/2?addr=127.0.0.1:2: a Redis Cluster has no databases; drop /2, or addr= for one server"},
		{"gen untagged prefix on a cluster", []string{"gen", "--lease", "redis://127.0.0.1:1?addr=127.0.0.1:2&prefix=x:"},
			`ringflake: gen: lease redis://127.0.0.1:1?addr=127.0.0.1:2&prefix=x:: invalid configuration: prefix = "x:"; valid: one with a hash tag, such as "{x}:": Lua scripts need every key in one Cluster slot`},
		{"gen password not repeated", []string{"gen", "--lease", "redis://user:secret@127.0.0.1:1?mode=ip"},
			"ringflake: gen: lease redis://user:xxxxx@127.0.0.1:1?mode=ip: mode=ip; want lease or host"},
		{"gen TTL out of bounds", []string{"gen", "--lease", "redis://127.0.0.1:1", "--lease-ttl", "100h"},
			"ringflake: gen: lease redis://127.0.0.1:1: invalid configuration: TTL = 100h0m0s; valid: 1s..5m0s"},
		{"gen clock offset out of bounds", []string{"gen", "--lease", "redis://127.0.0.1:1", "--max-clock-offset", "2h"},
			"ringflake: gen: lease redis://127.0.0.1:1: invalid configuration: max clock offset = 2h0m0s; valid: up to 1h0m0s; negative turns the check off"},
		{"gen lease flag without lease", []string{"gen", "--max-clock-offset", "1s"}, "ringflake: gen: --max-clock-offset needs --lease"},
		{"gen both machine sources", []string{"gen", "--lease", "redis://127.0.0.1:1", "--machine-id", "4"},
			"ringflake: gen: --machine-id and --lease both set the machine ID; choose one"},
		{"gen range past the layout", []string{"gen", "--lease", "redis://127.0.0.1:1", "--machine-range", "0-5000"},
			`ringflake: gen: --machine-range = "0-5000"; the layout's machine IDs are 0..1023`},
		{"gen bad range", []string{"gen", "--lease", "redis://127.0.0.1:1", "--machine-range", "7"},
			`ringflake: gen: --machine-range = "7"; want MIN-MAX with 0 <= MIN <= MAX`},
		{"gen machine ID out of range", []string{"gen", "--machine-id", "5000"},
			"ringflake: gen: invalid configuration: machine ID = 5000; valid range 0..1023"},
		{"gen negative acquire timeout", []string{"gen", "--machine-id", "1", "--acquire-timeout", "-1s"},
			"ringflake: gen: --acquire-timeout = -1s; want 0 (the default, 30s) or more"},
		{"serve argument", []string{"serve", "now"}, `ringflake: serve: unexpected argument "now"`},
		{"serve without a machine ID", []string{"serve", "--addr", "127.0.0.1:0"},
			"ringflake: serve: no machine ID: give --machine-id, or --lease to lease one; every service sharing an ID space needs its own"},
		{"serve max batch", []string{"serve", "--max-batch", "0"}, "ringflake: serve: --max-batch = 0; want 1..65536"},
		{"serve huge batch", []string{"serve", "--max-batch", "65537"}, "ringflake: serve: --max-batch = 65537; want 1..65536"},
		{"serve log format", []string{"serve", "--log-format", "xml"}, `ringflake: serve: --log-format = "xml"; want text or json`},
		{"serve zero timeout", []string{"serve", "--idle-timeout", "0s"},
			"ringflake: serve: --read-timeout, --idle-timeout and --shutdown-timeout must be above 0"},
		{"serve write timeout", []string{"serve", "--write-timeout", "100ms"},
			"ringflake: serve: --write-timeout = 100ms; want more than --max-wait (100ms), which a request may wait"},
		{"serve lease flag without lease", []string{"serve", "--lease-ttl", "2s"}, "ringflake: serve: --lease-ttl needs --lease"},
		{"serve both machine sources", []string{"serve", "--lease", "etcd://127.0.0.1:1", "--machine-id", "4"},
			"ringflake: serve: --machine-id and --lease both set the machine ID; choose one"},
		{"serve bad lease", []string{"serve", "--addr", "127.0.0.1:0", "--lease", "etcd://127.0.0.1:1", "--lease-ttl", "1500ms"},
			"ringflake: serve: lease etcd://127.0.0.1:1: invalid configuration: TTL = 1.5s; valid: a whole number of 1s"},
		{"serve machine ID out of range", []string{"serve", "--addr", "127.0.0.1:0", "--machine-id", "1024"},
			"ringflake: serve: invalid configuration: machine ID = 1024; valid range 0..1023"},
		{"decode negative", []string{"decode", "--", "-5"}, `ringflake: decode: "-5" is not an ID in decimal, base32 or base58; as decimal: ParseID "-5": ID out of range: negative`},
		{"decode negative, no --", []string{"decode", "-5"}, `ringflake: decode: "-5" is not an ID in decimal, base32 or base58; as decimal: ParseID "-5": ID out of range: negative`},
		{"decode negative after flags", []string{"decode", "--format", "decimal", "1", "-5"}, `ringflake: decode: ParseID "-5": ID out of range: negative`},
		{"decode negative after a flag's value", []string{"decode", "--datacenter-bits", "5", "-5"}, `ringflake: decode: "-5" is not an ID in decimal, base32 or base58; as decimal: ParseID "-5": ID out of range: negative`},
		{"decode overflow", []string{"decode", "9223372036854775808"},
			`ringflake: decode: "9223372036854775808" is not an ID in decimal, base32 or base58; as decimal: ParseID "9223372036854775808": ID out of range: above 2^63-1`},
		{"decode lowercase base32 with a U", []string{"decode", "0am7qe674q4u1"},
			`ringflake: decode: "0am7qe674q4u1" is not an ID in decimal, base32 or base58; as base32: ParseBase32 "0AM7QE674Q4U1": invalid ID syntax: character "U" at offset 11 is not uppercase Crockford Base32`},
		{"decode forced format", []string{"decode", "--format", "base32", "383078035417174017"},
			`ringflake: decode: ParseBase32 "383078035417174017": invalid ID syntax: has 18 bytes; want 13 characters`},
		{"decode bad format", []string{"decode", "--format", "hex", "1"},
			`ringflake: decode: --format = "hex"; want auto, decimal, base32 or base58`},
		{"decode bad flag", []string{"decode", "--nope"}, "ringflake: decode: " + flagError(t, nil, "--nope")},
		{"simulate argument", []string{"simulate", "now"}, `ringflake: simulate: unexpected argument "now"`},
		{"simulate negative rollback", []string{"simulate", "--rollback", "-1s"},
			"ringflake: simulate: --rollback = -1s; want 0 or more"},
		{"simulate zero duration", []string{"simulate", "--duration", "0s"},
			"ringflake: simulate: --duration = 0s; want more than 0 and at most 10m0s"},
		{"simulate ring", []string{"simulate", "--ring", "-1"}, "ringflake: simulate: --ring = -1; want 1..4194304"},
		{"simulate rate word", []string{"simulate", "--rate", "fast"},
			"ringflake: simulate: " + flagError(t, rateFlag, "--rate", "fast")},
		{"simulate rate zero", []string{"simulate", "--rate", "0/s"},
			"ringflake: simulate: " + flagError(t, rateFlag, "--rate", "0/s")},
		{"simulate too many", []string{"simulate", "--rate", "1e8/s", "--duration", "1s"},
			"ringflake: simulate: --rate × --duration = 100000000 requests; want at most 20000000"},
		{"simulate under one request", []string{"simulate", "--rate", "0.5/s", "--duration", "1s"},
			"ringflake: simulate: --rate × --duration is less than one request"},
		{"simulate empty svg", []string{"simulate", "--svg", ""}, `ringflake: simulate: --svg = ""; want a file name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke(tt.args...)
			assert.Equal(t, 2, code, "exit status for bad input")
			assert.Empty(t, stdout, "nothing on stdout")
			assert.Equal(t, tt.want+"\n", stderr, "one line on stderr")
		})
	}
}

// gen with no machine ID at all, as the README's first command runs it,
// prints its IDs and says on stderr which machine ID it used and why that
// may not be unique.
func TestGenWithoutAMachineIDSaysSo(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := invoke("gen", "-n", "3")
	assert.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Equal(t, 3, strings.Count(stdout, "\n"), "three IDs: %q", stdout)
	assert.Equal(t, noMachineIDNote+"\n", stderr, "one note on stderr")
	assert.Equal(t, "ringflake: no --machine-id or --lease given; using machine ID 0, which is unique only if no other generator uses it", noMachineIDNote)

	code, stdout, stderr = invoke("gen", "-n", "3", "--machine-id", "0")
	assert.Equal(t, 0, code)
	assert.Equal(t, 3, strings.Count(stdout, "\n"))
	assert.Empty(t, stderr, "an explicit machine ID needs no note")
}

// Every error line names the command once, whatever the library's errors
// it wraps start with.
func TestErrorLineHasOnePrefix(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"gen", "--machine-id", "5000"},
		{"gen", "--lease", "redis://127.0.0.1:1?addr=127.0.0.1:2&prefix=x:"},
		{"gen", "--lease", "redis://127.0.0.1:1", "--lease-ttl", "1ms"},
		{"decode", "--format", "base58", "12-4"},
	} {
		_, _, stderr := invoke(args...)
		assert.Equal(t, 1, strings.Count(stderr, "ringflake: "), "%v: one prefix in %q", args, stderr)
		assert.NotContains(t, stderr, "machineid_redis: ", "%v: %q", args, stderr)
	}
	// The library names its package once, where an error starts; the line
	// says "ringflake: " once, and rewrites nothing inside a message, such
	// as a key prefix or a path that holds a package's name.
	lost := inContext("gen: after 3 IDs", fmt.Errorf("renewing machine ID 2: %w: machine ID 2 was taken by another owner", machineid.ErrLeaseLost))
	assert.ErrorIs(t, lost, ringflake.ErrLeaseLost)
	assert.Equal(t, "ringflake: gen: after 3 IDs: renewing machine ID 2: machineid: lease lost: machine ID 2 was taken by another owner", line(lost.Error()))
	bad := inContext("gen", fmt.Errorf("%w: prefix = %q; valid: one with a hash tag", ringflake.ErrInvalidConfig, "ringflake: machineid_redis: "))
	assert.ErrorIs(t, bad, ringflake.ErrInvalidConfig)
	assert.Equal(t, `ringflake: gen: invalid configuration: prefix = "ringflake: machineid_redis: "; valid: one with a hash tag`, line(bad.Error()),
		"the library's leading name is left out where the two join, and the user's prefix stays as it is")
	assert.Equal(t, "ringflake: gen: lease postgres://h/db: machineid_postgres: failed to connect to `user=u database=db`: h:1 (::1): refused; h:1 (127.0.0.1): refused",
		line("gen: lease postgres://h/db: machineid_postgres: failed to connect to `user=u database=db`:\n\th:1 (::1): refused\n\th:1 (::1): refused\n\th:1 (127.0.0.1): refused"),
		"a message of several lines, as pgx's, becomes one, without repeated lines")
}

func TestRunHelp(t *testing.T) {
	t.Parallel()
	code, stdout, _ := invoke("help")
	assert.Equal(t, 0, code)
	for _, cmd := range []string{"gen", "serve", "decode", "simulate"} {
		assert.Contains(t, stdout, "\n  "+cmd+" ", "usage lists %s", cmd)
	}
	code, _, stderr := invoke("simulate", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "--rollback")
	assert.Contains(t, stderr, "-rate")
	for _, args := range [][]string{{"bounds", "-h"}, {"bounds", "--help"}} {
		code, stdout, stderr = invoke(args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Empty(t, stdout)
		assert.True(t, strings.HasPrefix(stderr, "usage: ringflake bounds [--layout L] FROM [TO]\n"), "%v names FROM and TO first: %q", args, stderr)
		assert.Contains(t, stderr, "FROM and TO are each a date (2026-11-24, midnight UTC), RFC 3339")
		assert.Contains(t, stderr, "-layout L", "and its flags")
	}
}

func TestDecodeForms(t *testing.T) {
	t.Parallel()
	const want = "383078035417174017\ttime=2026-11-23T02:15:20.889Z\tmachine=185\tsequence=1\tticks=91332920889\n"
	tests := []struct {
		name string
		args []string
	}{
		{"decimal", []string{"383078035417174017"}},
		{"zero-padded decimal", []string{"0383078035417174017"}},
		{"base32", []string{"0AM7QE674Q401"}},
		{"forced decimal", []string{"--format", "decimal", "383078035417174017"}},
		{"forced base32", []string{"--format", "base32", "0AM7QE674Q401"}},
		{"forced base58", []string{"--format=base58", "taKjQTiGEC"}},
		{"base58", []string{"taKjQTiGEC"}},
		{"the default layout named", []string{"--layout", "default", "383078035417174017"}},
		{"bit widths", []string{"--layout", "41/10/12", "383078035417174017"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke(append([]string{"decode"}, tt.args...)...)
			assert.Equal(t, 0, code, "stderr: %s", stderr)
			assert.Equal(t, want, stdout)
		})
	}
	// Digits that are Base58 too are read as the form --format names.
	code, stdout, _ := invoke("decode", "--format", "base58", "21")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "58\t"), "Base58 21 is 58; got %q", stdout)
	code, stdout, _ = invoke("decode", "--format", "decimal", "21", "58")
	assert.Equal(t, 0, code)
	assert.Equal(t, 2, strings.Count(stdout, "\n"), "one line per ID")
	assert.True(t, strings.HasPrefix(stdout, "21\t"), "--format decimal reads digits as decimal; got %q", stdout)
	code, stdout, _ = invoke("decode", "--format", "base32", "0123456789012")
	assert.Equal(t, 0, code)
	assert.Equal(t, "38390726480134178\ttime=2024-04-15T22:31:02.458Z\tmachine=72\tsequence=34\tticks=9153062458\n", stdout)
}

// decode reads IDs as people type them: Base32 in either case with
// Crockford's aliases, surrounding spaces dropped; it refuses a word only
// Base58 reads to a time no ID has, and hints, on stderr, at an ID whose
// time no ringflake ID has, such as one of the js layout read under the
// default.
func TestDecodeReadsWhatPeopleType(t *testing.T) {
	t.Parallel()
	const want = "383078035417174017\ttime=2026-11-23T02:15:20.889Z\tmachine=185\tsequence=1\tticks=91332920889\n"
	jsID, err := ringflake.JSLayout().Compose(ringflake.Parts{Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Machine: 5, Sequence: 7})
	require.NoError(t, err)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // "" for none
		stderr string // what stderr holds, "" for nothing
	}{
		{"base32 lowercase", []string{"0am7qe674q401"}, 0, want, ""},
		{"base32 with O and L", []string{"OAM7QE674Q4OL"}, 0, want, ""},
		{"base32 aliases, named", []string{"--format", "base32", "oam7qe674q4o1"}, 0, want, ""},
		{"a leading space", []string{" 383078035417174017"}, 0, want, ""},
		{"spaces around base58", []string{" taKjQTiGEC\t"}, 0, want, ""},
		{"abc", []string{"abc"}, 2, "",
			`ringflake: decode: "abc" is a word, not an ID: as base58 it is 113019 (time 2024-01-01T00:00:00Z, machine 27, sequence 2427), before any ringflake ID (2026-11 on); give --format base58 to decode it so` + "\n"},
		{"abc as base58, named", []string{"--format", "base58", "abc"}, 0, "113019\ttime=2024-01-01T00:00:00Z\tmachine=27\tsequence=2427\tticks=0\n",
			"ringflake: decode: hint: 113019: time 2024-01-01T00:00:00Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID?\n"},
		{"a js ID without --layout js", []string{jsID.String()}, 0, "376012800000327\ttime=2024-01-02T00:54:08.437Z\tmachine=512\tsequence=327\tticks=89648437\n",
			"ringflake: decode: hint: 376012800000327: time 2024-01-02T00:54:08.437Z is before any ringflake ID (2026-11 on): an ID of another layout, or not an ID? " +
				"With --layout js it reads time 2026-11-28T12:00:00Z, machine 5, sequence 7.\n"},
		{"a js ID with --layout js", []string{"--layout", "js", jsID.String()}, 0, "376012800000327\ttime=2026-11-28T12:00:00Z\tmachine=5\tsequence=7\tticks=91800000000\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke(append([]string{"decode"}, tt.args...)...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			if tt.stdout != "" {
				assert.Equal(t, tt.stdout, stdout)
			}
			assert.Equal(t, tt.stderr, stderr)
		})
	}
}

// bounds prints lo and hi for WHERE id >= lo AND id < hi, from RFC 3339
// or Unix milliseconds; without TO, those of FROM's millisecond.
func TestBoundsCommand(t *testing.T) {
	t.Parallel()
	l := ringflake.DefaultLayout()
	noon := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ids := func(from, to time.Time) string {
		lo, hi, err := l.Bounds(from, to)
		require.NoError(t, err)
		return fmt.Sprintf("%d\n%d\n", lo, hi)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"RFC 3339 range", []string{"2026-11-22T12:00:00Z", "2026-11-22T13:00:00+00:00"}, ids(noon, noon.Add(time.Hour))},
		{"Unix milliseconds", []string{strconv.FormatInt(noon.UnixMilli(), 10), strconv.FormatInt(noon.Add(time.Hour).UnixMilli(), 10)}, ids(noon, noon.Add(time.Hour))},
		{"one millisecond", []string{"2026-11-22T12:00:00.0005Z"}, ids(noon, noon.Add(time.Millisecond))},
		{"a date: its day", []string{"2026-11-22"}, ids(noon.Add(-12*time.Hour), noon.Add(12*time.Hour))},
		{"two dates", []string{"2026-11-22", "2026-11-24"}, ids(noon.Add(-12*time.Hour), noon.Add(36*time.Hour))},
		{"a date to RFC 3339", []string{"2026-11-22", "2026-11-22T12:00:00Z"}, ids(noon.Add(-12*time.Hour), noon)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke(append([]string{"bounds"}, tt.args...)...)
			assert.Equal(t, 0, code, "stderr %s", stderr)
			assert.Equal(t, tt.want, stdout)
		})
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "ringflake: bounds: want FROM [TO], each a date (2026-11-24, midnight UTC), RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds; got 0 arguments\n"},
		{[]string{"yesterday"}, `ringflake: bounds: FROM: "yesterday" is not a date (2026-11-24, midnight UTC), RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds` + "\n"},
		{[]string{"2026-11-22", "soon"}, `ringflake: bounds: TO: "soon" is not a date (2026-11-24, midnight UTC), RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds` + "\n"},
		{[]string{"2026-11-31"}, `ringflake: bounds: FROM: "2026-11-31" is not a date (2026-11-24, midnight UTC), RFC 3339 (2026-11-24T10:00:00Z) or Unix milliseconds` + "\n"},
		{[]string{"2026-11-22T13:00:00Z", "2026-11-22T12:00:00Z"}, "ringflake: bounds: TO 2026-11-22T12:00:00Z is 1h0m0s before FROM 2026-11-22T13:00:00Z; want FROM <= TO\n"},
		{[]string{"2026-11-23", "2026-11-22"}, "ringflake: bounds: TO 2026-11-22T00:00:00Z is 24h0m0s before FROM 2026-11-23T00:00:00Z; want FROM <= TO\n"},
		{[]string{"2020-01-01T00:00:00Z", "2026-11-22T12:00:00Z"}, "ringflake: bounds: FROM: 2020-01-01T00:00:00Z is before 2024-01-01T00:00:00Z, the layout's first tick\n"},
		{[]string{"2026-11-22", "2100-01-01"}, "ringflake: bounds: TO: 2100-01-01T00:00:00Z is after 2093-09-06T15:47:35.551Z, the start of the layout's last tick\n"},
		{[]string{"1764331200"}, "ringflake: bounds: FROM: 1970-01-21T10:05:31.2Z is before 2024-01-01T00:00:00Z, the layout's first tick; read as Unix seconds it is 2025-11-28T12:00:00Z: for that, give 1764331200000 (milliseconds)\n"},
		{[]string{"1764331200000", "1764417600"}, "ringflake: bounds: TO: 1970-01-21T10:06:57.6Z is before 2024-01-01T00:00:00Z, the layout's first tick; read as Unix seconds it is 2025-11-29T12:00:00Z: for that, give 1764417600000 (milliseconds)\n"},
		{[]string{"1000"}, "ringflake: bounds: FROM: 1970-01-01T00:00:01Z is before 2024-01-01T00:00:00Z, the layout's first tick\n"},
		{[]string{"2093-09-06"}, "ringflake: bounds: FROM 2093-09-06 is in the layout's last day or tick, whose end no ID marks; give TO, or use WHERE id >= lo alone\n"},
	} {
		code, stdout, stderr := invoke(append([]string{"bounds"}, tt.args...)...)
		assert.Equal(t, 2, code, "bounds %q", tt.args)
		assert.Empty(t, stdout)
		assert.Equal(t, tt.want, stderr, "bounds %q", tt.args)
	}
}

// With --datacenter-bits, decode shows the datacenter and the worker, and
// gen issues with its --datacenter and its worker.
func TestDatacenterFlags(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := invoke("gen", "-n", "2", "--datacenter-bits", "5", "--datacenter", "3", "--machine-id", "7")
	require.Equal(t, 0, code, "stderr %s", stderr)
	ids := strings.Fields(stdout)
	require.Len(t, ids, 2)
	code, stdout, stderr = invoke("decode", "--datacenter-bits", "5", ids[0])
	require.Equal(t, 0, code, "stderr %s", stderr)
	assert.Regexp(t, `^\d+\ttime=\S+\tmachine=103\tdatacenter=3\tworker=7\tsequence=\d+\tticks=\d+\n$`, stdout)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--datacenter", "3"}, "ringflake: gen: --datacenter needs --datacenter-bits (5 for Twitter's split)\n"},
		{[]string{"gen", "--datacenter-bits", "5", "--machine-id", "1"}, "ringflake: gen: --datacenter-bits 5 splits the machine ID; give --datacenter 0..31\n"},
		{[]string{"gen", "--datacenter-bits", "11", "--datacenter", "1"}, "ringflake: gen: --datacenter-bits = 11; want 0..10\n"},
		{[]string{"gen", "--datacenter-bits", "5", "--datacenter", "1", "--machine-id", "32"}, "ringflake: gen: --machine-id = 32; under --datacenter-bits 5 it is the worker within --datacenter 1, 0..31\n"},
		{[]string{"gen", "--datacenter-bits", "5", "--datacenter", "32"}, "ringflake: gen: --datacenter: invalid configuration: datacenter = 32; valid range 0..31 (Layout.DatacenterBits 5)\n"},
		{[]string{"serve", "--datacenter-bits", "5", "--datacenter", "1", "--lease", "redis://127.0.0.1:1", "--machine-range", "0-40"}, "ringflake: serve: --machine-range = \"0-40\"; the layout's workers in a datacenter are 0..31\n"},
		{[]string{"decode", "--datacenter-bits", "-1", "1"}, "ringflake: decode: --datacenter-bits = -1; want 0..10\n"},
	} {
		code, _, stderr := invoke(tt.args...)
		assert.Equal(t, 2, code, "%q", tt.args)
		assert.Equal(t, tt.want, stderr, "%q", tt.args)
	}
}

// --layout js makes gen issue IDs below 2^53, which decode and bounds read
// under the same flag, and the other layouts refuse or read otherwise.
func TestLayoutFlag(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := invoke("gen", "--layout", "js", "--machine-id", "63", "-n", "1000", "--no-state-file")
	require.Equal(t, 0, code, "stderr %s", stderr)
	ids := strings.Fields(stdout)
	require.Len(t, ids, 1000)
	js := ringflake.JSLayout()
	for _, s := range ids {
		id, err := ringflake.ParseID(s)
		require.NoError(t, err)
		require.Less(t, id, ringflake.ID(1<<53), "ID %d", id)
		require.Equal(t, int64(63), js.Decompose(id).Machine, "ID %d", id)
	}
	first, _ := ringflake.ParseID(ids[0])
	code, stdout, stderr = invoke("decode", "--layout", "js", ids[0])
	require.Equal(t, 0, code, "stderr %s", stderr)
	p := js.Decompose(first)
	assert.Equal(t, fmt.Sprintf("%s\ttime=%s\tmachine=63\tsequence=%d\tticks=%d\n", ids[0], p.Time.Format(time.RFC3339Nano), p.Sequence, p.Ticks), stdout)
	assert.WithinDuration(t, time.Now(), p.Time, time.Minute)

	code, stdout, stderr = invoke("bounds", "--layout", "js", p.Time.Format(time.RFC3339Nano))
	require.Equal(t, 0, code, "stderr %s", stderr)
	lo, hi, err := js.Bounds(p.Time, p.Time.Add(time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%d\n%d\n", lo, hi), stdout)
	assert.True(t, lo <= first && first < hi, "the ID is in its millisecond's bounds")

	code, stdout, _ = invoke("decode", "--layout", "39/16/8", ids[0])
	assert.Equal(t, 0, code, "bit widths read the same number otherwise")
	assert.NotContains(t, stdout, "machine=63\t")
}
