//go:build !linux

package ringflake

import "time"

// preciseSleep is time.Sleep where no finer sleeper is wired up.
func preciseSleep(d time.Duration) { time.Sleep(d) }
