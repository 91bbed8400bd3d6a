// clockshift: an LD_PRELOAD library that shifts a server's wall clock by the
// offset, in ns, in the 8 bytes of the file RINGFLAKE_CLOCK_FILE names (a
// native-endian int64), which the harness rewrites while the server runs.
// It stands in for Debian's libfaketime, which cannot run redis-server:
// Debian links redis-server with jemalloc, whose start-up calls
// clock_gettime before libfaketime can resolve the real one, and
// libfaketime then fails every call (libfaketime issue #130). This shim
// resolves nothing: it calls the kernel directly and reads a shared
// mapping, so it is safe from the first call. Only CLOCK_REALTIME (and its
// coarse form) moves: a wall clock step leaves the monotonic clock alone.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile const int64_t *shift;

__attribute__((constructor)) static void clockshift_init(void) {
	const char *path = getenv("RINGFLAKE_CLOCK_FILE");
	if (path == NULL) return;
	int fd = open(path, O_RDONLY);
	if (fd < 0) return;
	void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED) shift = p;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	long r = syscall(SYS_clock_gettime, id, ts);
	if (r != 0 || shift == NULL || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)) return (int)r;
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + *shift;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
	if (tv != NULL) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t != NULL) *t = ts.tv_sec;
	return ts.tv_sec;
}
