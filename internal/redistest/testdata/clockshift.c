// clockshift: an LD_PRELOAD library that shifts a process's wall clock
// (CLOCK_REALTIME, gettimeofday, time) by the milliseconds written in the
// file named by $RINGFLAKE_CLOCK_SHIFT, read again at most every 2 ms of
// monotonic time, so a test can step a running redis-server's clock back
// and forth. Monotonic clocks are left alone. (libfaketime aborts
// redis-server here: its jemalloc reads the clock while libfaketime sets
// itself up.)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_ms;
static long long read_at = -1;

static int raw(clockid_t id, struct timespec *ts) { return syscall(SYS_clock_gettime, id, ts); }

static void reread(void) {
	struct timespec m;
	raw(CLOCK_MONOTONIC, &m);
	long long now = (long long)m.tv_sec * 1000000000LL + m.tv_nsec;
	if (read_at >= 0 && now - read_at < 2000000LL) return;
	read_at = now;
	const char *name = getenv("RINGFLAKE_CLOCK_SHIFT");
	if (!name) return;
	int fd = open(name, O_RDONLY);
	if (fd < 0) return;
	char buf[32];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return;
	buf[n] = 0;
	shift_ms = atoll(buf);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = raw(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
		reread();
		long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ms * 1000000LL;
		ts->tv_sec = ns / 1000000000LL;
		ts->tv_nsec = ns % 1000000000LL;
	}
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	(void)tz;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t) *t = ts.tv_sec;
	return ts.tv_sec;
}
