package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// invoke runs the CLI in-process and returns its status and output.
func invoke(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // the whole stderr line
	}{
		{"no command", nil, "ringflake: no command given; want gen, decode or simulate"},
		{"unknown command", []string{"frobnicate"}, `ringflake: unknown command "frobnicate"; want gen, decode or simulate`},
		{"decode nothing", []string{"decode"}, "ringflake: decode: no ID given"},
		{"decode letters", []string{"decode", "12-4"},
			`ringflake: decode: "12-4" is neither decimal nor 13-character base32; for a base58 ID give --format base58`},
		{"decode a word", []string{"decode", "garbage"},
			`ringflake: decode: "garbage" is neither decimal nor 13-character base32; for a base58 ID give --format base58`},
		{"decode bad base58", []string{"decode", "--format", "base58", "12-4"},
			`ringflake: decode: ParseBase58 "12-4": invalid ID syntax: character "-" at offset 2 is not in the Base58 alphabet`},
		{"gen empty redis", []string{"gen", "--redis", ""},
			`ringflake: gen: --redis = ""; want host:port, or several comma-separated for a Cluster`},
		{"gen empty redis item", []string{"gen", "--redis", "127.0.0.1:1,"},
			`ringflake: gen: --redis = "127.0.0.1:1,"; want host:port, or several comma-separated for a Cluster`},
		{"decode negative", []string{"decode", "--", "-5"}, `ringflake: decode: ParseID "-5": ID out of range: negative`},
		{"decode overflow", []string{"decode", "9223372036854775808"},
			`ringflake: decode: ParseID "9223372036854775808": ID out of range: above 2^63-1`},
		{"decode lowercase base32", []string{"decode", "0am7qe674q401"},
			`ringflake: decode: ParseBase32 "0am7qe674q401": invalid ID syntax: character "a" at offset 1 is not uppercase Crockford Base32`},
		{"decode forced format", []string{"decode", "--format", "base32", "383078035417174017"},
			`ringflake: decode: ParseBase32 "383078035417174017": invalid ID syntax: has 18 bytes; want 13 characters`},
		{"decode bad format", []string{"decode", "--format", "hex", "1"},
			`ringflake: decode: --format = "hex"; want auto, decimal, base32 or base58`},
		{"decode bad flag", []string{"decode", "--nope"}, "ringflake: decode: flag provided but not defined: -nope"},
		{"simulate argument", []string{"simulate", "now"}, `ringflake: simulate: unexpected argument "now"`},
		{"simulate negative rollback", []string{"simulate", "--rollback", "-1s"},
			"ringflake: simulate: --rollback = -1s; want 0 or more"},
		{"simulate zero duration", []string{"simulate", "--duration", "0s"},
			"ringflake: simulate: --duration = 0s; want more than 0 and at most 10m0s"},
		{"simulate ring", []string{"simulate", "--ring", "0"}, "ringflake: simulate: --ring = 0; want 1..4194304"},
		{"simulate rate word", []string{"simulate", "--rate", "fast"},
			`ringflake: simulate: invalid value "fast" for flag -rate: want requests per second as N/s with 0 < N <= 1e8`},
		{"simulate rate zero", []string{"simulate", "--rate", "0/s"},
			`ringflake: simulate: invalid value "0/s" for flag -rate: want requests per second as N/s with 0 < N <= 1e8`},
		{"simulate too many", []string{"simulate", "--rate", "1e8/s", "--duration", "1s"},
			"ringflake: simulate: --rate × --duration = 100000000 requests; want at most 20000000"},
		{"simulate under one request", []string{"simulate", "--rate", "0.5/s", "--duration", "1s"},
			"ringflake: simulate: --rate × --duration is less than one request"},
		{"simulate max wait", []string{"simulate", "--max-wait", "-1ms"}, "ringflake: simulate: --max-wait = -1ms; want 0 or more"},
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

func TestRunHelp(t *testing.T) {
	t.Parallel()
	code, stdout, _ := invoke("help")
	assert.Equal(t, 0, code)
	for _, cmd := range []string{"gen", "decode", "simulate"} {
		assert.Contains(t, stdout, "\n  "+cmd+" ", "usage lists %s", cmd)
	}
	code, _, stderr := invoke("simulate", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "--rollback")
	assert.Contains(t, stderr, "-rate")
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := invoke(append([]string{"decode"}, tt.args...)...)
			assert.Equal(t, 0, code, "stderr: %s", stderr)
			assert.Equal(t, want, stdout)
		})
	}
	// Digits are decimal unless --format says otherwise.
	code, stdout, _ := invoke("decode", "--format", "base58", "21")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "58\t"), "Base58 21 is 58; got %q", stdout)
	code, stdout, _ = invoke("decode", "21", "58")
	assert.Equal(t, 0, code)
	assert.Equal(t, 2, strings.Count(stdout, "\n"), "one line per ID")
	assert.True(t, strings.HasPrefix(stdout, "21\t"), "auto reads digits as decimal; got %q", stdout)
}
