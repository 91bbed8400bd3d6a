// Package idtext reads IDs in the text forms that the decode command and
// the service's /v1/decode share, and quotes input for their errors.
package idtext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ringflake/ringflake"
)

// parsers maps the --format and ?format= values to parsers.
var parsers = map[string]func(string) (ringflake.ID, error){
	"auto":    parseAny,
	"decimal": ringflake.ParseID,
	"base32":  ringflake.ParseBase32,
	"base58":  ringflake.ParseBase58,
}

// Parser returns the parser of format (auto, decimal, base32 or base58),
// and whether there is one.
func Parser(format string) (func(string) (ringflake.ID, error), bool) {
	p, ok := parsers[format]
	return p, ok
}

// parseAny reads an ID in the forms that cannot be mistaken: decimal if
// it is all digits, Base32 if it has 13 characters. Base58 needs --format
// base58: almost any short word is valid Base58, so in auto mode a typo
// would decode to some ID instead of failing.
func parseAny(s string) (ringflake.ID, error) {
	switch {
	case IsDecimal(s):
		return ringflake.ParseID(s)
	case len(s) == 13: // the width of every Base32 ID
		return ringflake.ParseBase32(s)
	}
	return 0, fmt.Errorf("%s is neither decimal nor 13-character base32; for a base58 ID give --format base58", Quote(s))
}

// IsDecimal reports whether s is digits, after an optional minus sign.
func IsDecimal(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// maxEcho bounds how much of a request's input an error repeats, as the
// library's parse errors do.
const maxEcho = 32

// Quote quotes s, cut after maxEcho bytes.
func Quote(s string) string {
	if len(s) > maxEcho {
		return strconv.Quote(s[:maxEcho]) + "..."
	}
	return strconv.Quote(s)
}

// Cut returns s cut after maxEcho bytes, for a token such as a method.
func Cut(s string) string {
	if len(s) > maxEcho {
		return s[:maxEcho] + "..."
	}
	return s
}
