// Package sentinel holds the error values that package ringflake exports and
// package machineid must wrap, which cannot import ringflake: ringflake
// imports machineid. Each is exported once, by ringflake, as the same value.
package sentinel

import "errors"

// ErrInvalidConfig is ringflake.ErrInvalidConfig.
var ErrInvalidConfig = errors.New("ringflake: invalid configuration")
