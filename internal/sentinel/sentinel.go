// Package sentinel holds the error values that package ringflake exports and
// package machineid must wrap, which cannot import ringflake: ringflake
// imports machineid. Each is exported once, by ringflake, as the same value.
package sentinel

import "errors"

// InvalidConfig is ringflake.ErrInvalidConfig.
var InvalidConfig = errors.New("ringflake: invalid configuration")
