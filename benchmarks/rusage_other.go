//go:build !unix

package main

import "time"

// cpuTime is not available here; CPU columns read 0.
func cpuTime() time.Duration { return 0 }
