//go:build !go1.27

package main

import (
	"fmt"
	"runtime"
)

// newStdUUID says that the standard library's uuid package, new in Go
// 1.27, is absent from this build.
func newStdUUID() (*peer, error) {
	return nil, fmt.Errorf("uuid.NewV7 (std): absent: the uuid package is new in Go 1.27, and this is %s; run with GOTOOLCHAIN=go1.27.3", runtime.Version())
}
