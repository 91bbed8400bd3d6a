package main

import "time"

// base anchors mono, the benchmark's own monotonic clock.
var base = time.Now()

// mono returns monotonic nanoseconds since the process started. It reads
// only the monotonic clock, about half the cost of time.Now.
func mono() int64 { return int64(time.Since(base)) }

// boundary returns the mono time of the first wall-clock multiple of unit
// at or after the mono time t.
func boundary(unit time.Duration, t int64) int64 {
	now := time.Now()
	wall := now.UnixNano() + t - int64(now.Sub(base))
	up := (int64(unit) - wall%int64(unit)) % int64(unit)
	return t + up
}

// alignedWait waits until the first wall-clock multiple of unit at or after
// notBefore and returns its mono time. Windows open and close on such
// boundaries so that each holds whole ticks of the peer.
func alignedWait(unit time.Duration, notBefore int64) int64 {
	at := alignedBoundary(unit, notBefore)
	spinUntil(at)
	return at
}

// alignedBoundary parks the goroutine (leaving its processor to the
// workers) until shortly before notBefore, then returns the first boundary
// of unit at or after both notBefore and now. The runtime's timers can wake
// a millisecond late; the boundary then moves on instead of arriving late.
func alignedBoundary(unit time.Duration, notBefore int64) int64 {
	const early = 1500 * time.Microsecond
	if d := time.Duration(notBefore-mono()) - early; d > 0 {
		time.Sleep(d)
	}
	return boundary(unit, max(notBefore, mono()))
}

// spinUntil returns once mono() >= t.
func spinUntil(t int64) {
	for mono() < t {
	}
}
