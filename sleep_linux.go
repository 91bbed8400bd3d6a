package ringflake

import (
	"syscall"
	"time"
)

// preciseSleep blocks the calling thread in nanosleep(2), which on Linux
// wakes within about 60-80 µs of d, where the runtime's timers (epoll with
// millisecond timeouts) wake about 1 ms late when the process is otherwise
// idle. The thread sleeps; it does not spin.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
