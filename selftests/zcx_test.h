/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_test.h - helpers shared by the zcx selftests.
 */
#ifndef ZCX_TEST_H
#define ZCX_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "zcx_uapi.h"

#define ZCX_MODULE_REFCNT	"/sys/module/zcx/refcnt"
#define ZCX_MODULE_PARAM(name)	"/sys/module/zcx/parameters/" name

/* Open the device the raw way (no library), close-on-exec. */
static inline int zcx_test_open(void)
{
	return open(ZCX_DEVICE_PATH, O_RDWR | O_CLOEXEC);
}

/* ioctl() returning 0 or -errno, so tests compare errno values directly. */
static inline int zcx_test_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/*
 * ZCX_SLOW=1: the guest is slow (the debug kernel's KASAN and lockdep under
 * TCG); tests with long loops divide their round counts by this, checking
 * the same things on fewer rounds.
 */
static inline unsigned int zcx_test_slowdown(void)
{
	const char *env = getenv("ZCX_SLOW");

	return env && strcmp(env, "1") == 0 ? 10 : 1;
}

/*
 * How much longer than its own a test's timeout is on a slow guest: less
 * than selftests/run_tests.sh gives the whole program (five times), so
 * that a hung test fails alone and the program goes on.
 */
#define ZCX_SLOW_TEST_TIMEOUT	3

/*
 * The programs' main, in place of the harness's TEST_HARNESS_MAIN: on a
 * slow guest every test's timeout is ZCX_SLOW_TEST_TIMEOUT times its own,
 * and @prepare (an expression, which may use argc and argv) runs first,
 * in the process that runs the tests.
 */
#define ZCX_TEST_HARNESS_MAIN_WITH(prepare)					\
int main(int argc, char **argv)							\
{										\
	struct __fixture_metadata *f;						\
	struct __test_metadata *t;						\
										\
	if (zcx_test_slowdown() > 1)						\
		for (f = __fixture_list; f; f = f->next)			\
			for (t = f->tests; t; t = t->next)			\
				t->timeout *= ZCX_SLOW_TEST_TIMEOUT;		\
	prepare;								\
	return test_harness_run(argc, argv);					\
}
#define ZCX_TEST_HARNESS_MAIN ZCX_TEST_HARNESS_MAIN_WITH((void)0)

/*
 * Checks for code in forked processes, where the harness's ASSERT_*()
 * must not be used: print where and what, then make the calling function
 * return 1 (the process's exit status).  The messages are TAP comments.
 */
#define CK(cond) do {								\
	if (!(cond)) {								\
		fprintf(stderr, "# pid %d: %s:%d: check failed: %s\n",		\
			getpid(), __FILE__, __LINE__, #cond);			\
		return 1;							\
	}									\
} while (0)

#define CK_EQ(expected, seen) do {						\
	long long __e = (long long)(expected), __s = (long long)(seen);		\
	if (__e != __s) {							\
		fprintf(stderr, "# pid %d: %s:%d: %s == %s: %lld != %lld\n",	\
			getpid(), __FILE__, __LINE__, #expected, #seen,		\
			__e, __s);						\
		return 1;							\
	}									\
} while (0)

/* Read one unsigned number from a sysfs file; -1 if it cannot. */
static inline long long zcx_test_read_number(const char *path)
{
	long long value = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &value) != 1)
		value = -1;
	fclose(f);
	return value;
}

/* Write @text to the (sysfs, cgroup) file @path: 0 or -errno. */
static inline int zcx_test_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(text, f) < 0 ? -EIO : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/*
 * Every open file of /dev/zcx holds one reference on the module, so the
 * module's reference count is the number of live contexts (when no other
 * module depends on zcx): the tests' leak check for contexts.
 */
static inline long long zcx_test_module_refs(void)
{
	return zcx_test_read_number(ZCX_MODULE_REFCNT);
}

/* Module-wide counters of live objects (sysfs), for leak checks. */
static inline long long zcx_test_stat(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/misc/zcx/%s", name);
	return zcx_test_read_number(path);
}

/*
 * A context with its status area mapped: what the region-cache tests work
 * with.  zcx_test_ctx_open() returns 0 or -errno.
 */
struct zcx_test_ctx {
	int fd;
	const struct zcx_status *status;
	size_t status_size;
	const volatile __u64 *gens;
	const struct zcx_event *events;
};

static inline int zcx_test_ctx_open(struct zcx_test_ctx *t)
{
	const struct zcx_status *head;
	size_t size;

	memset(t, 0, sizeof(*t));
	t->fd = zcx_test_open();
	if (t->fd < 0)
		return -errno;
	head = mmap(NULL, 4096, PROT_READ, MAP_SHARED, t->fd, ZCX_MMAP_STATUS);
	if (head == MAP_FAILED)
		return -errno;
	size = head->size;
	munmap((void *)head, 4096);
	t->status = mmap(NULL, size, PROT_READ, MAP_SHARED, t->fd, ZCX_MMAP_STATUS);
	if (t->status == MAP_FAILED)
		return -errno;
	t->status_size = size;
	t->gens = (const void *)((const char *)t->status + t->status->gen_offset);
	t->events = (const void *)((const char *)t->status + t->status->event_offset);
	return 0;
}

static inline void zcx_test_ctx_close(struct zcx_test_ctx *t)
{
	if (t->status && t->status != MAP_FAILED)
		munmap((void *)t->status, t->status_size);
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->status = NULL;
}

/* Register; 0 or -errno, result in *out. */
static inline int zcx_test_reg(const struct zcx_test_ctx *t, const void *addr, size_t len,
			       unsigned int access, struct zcx_mr_reg *out)
{
	memset(out, 0, sizeof(*out));
	out->addr = (uintptr_t)addr;
	out->length = len;
	out->access = access;
	return zcx_test_ioctl(t->fd, ZCX_IOC_MR_REG, out);
}

static inline int zcx_test_dereg(const struct zcx_test_ctx *t, __u64 handle)
{
	struct zcx_mr_dereg d = { .handle = handle };

	return zcx_test_ioctl(t->fd, ZCX_IOC_MR_DEREG, &d);
}

/* Unused regions dropped, or -errno. */
static inline int zcx_test_flush(const struct zcx_test_ctx *t)
{
	struct zcx_mr_flush f = { 0 };
	int ret = zcx_test_ioctl(t->fd, ZCX_IOC_MR_FLUSH, &f);

	return ret ? ret : (int)f.flushed;
}

static inline int zcx_test_limits(const struct zcx_test_ctx *t, unsigned int flags,
				  unsigned int entries, __u64 bytes)
{
	struct zcx_limits l = { .flags = flags, .cache_entries = entries, .cache_bytes = bytes };

	return zcx_test_ioctl(t->fd, ZCX_IOC_LIMITS, &l);
}

/* The one-load validity check userspace caches rely on. */
static inline bool zcx_test_valid(const struct zcx_test_ctx *t, const struct zcx_mr_reg *r)
{
	return __atomic_load_n(&t->gens[r->slot], __ATOMIC_ACQUIRE) == r->gen;
}

#define zcx_test_counter(t, name) \
	__atomic_load_n(&(t)->status->counters.name, __ATOMIC_RELAXED)

/* Anonymous private read-write memory, or NULL. */
static inline void *zcx_test_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * A userfaultfd (non-blocking) watching [@map, @map + @len) for missing
 * pages, or -1: faults there wait until the test provides the pages.
 */
static inline int zcx_test_uffd(void *map, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd < 0)
		return -1;
	reg.range.start = (uintptr_t)map;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		close(uffd);
		return -1;
	}
	return uffd;
}

/* The scheduler's state of thread @tid, of any process ('S', 'D', ...), or 0. */
static inline char zcx_test_thread_state(pid_t tid)
{
	char path[64], buf[256], *state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	state = strrchr(buf, ')');
	return state && state[1] == ' ' ? state[2] : 0;
}

/*
 * Wait, at most @max_ms, until the thread whose id another thread stores
 * in *@tid (0 until then) is in @state: blocked in the kernel, asleep
 * ('S'), in an uninterruptible wait ('D') or an idle one ('I').  True if
 * it got there.
 */
static inline bool zcx_test_await_thread_state(const pid_t *tid, char state, int max_ms)
{
	pid_t t;
	int i;

	for (i = 0; i < max_ms; i++) {
		t = __atomic_load_n(tid, __ATOMIC_ACQUIRE);
		if (t && zcx_test_thread_state(t) == state)
			return true;
		usleep(1000);
	}
	return false;
}

/* The polling thread of this process's first polled context, or 0. */
static inline pid_t zcx_test_polling_thread(void)
{
	char want[32], comm[32], path[300];
	struct dirent *d;
	pid_t found = 0;
	DIR *dir;
	FILE *f;

	snprintf(want, sizeof(want), "zcx-poll/%d\n", getpid());
	dir = opendir("/proc");
	while (dir && !found && (d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, want))
			found = atoi(d->d_name);
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return found;
}

/* Module-wide objects alive now: what every test must return to. */
struct zcx_test_census {
	long long contexts, regions, pinned_pages;
};

static inline struct zcx_test_census zcx_test_census(void)
{
	struct zcx_test_census c = {
		.contexts = zcx_test_stat("contexts"),
		.regions = zcx_test_stat("regions"),
		.pinned_pages = zcx_test_stat("pinned_pages"),
	};

	return c;
}

/* Pass a descriptor over a unix socket (SCM_RIGHTS); 0 or -1. */
static inline int zcx_test_send_fd(int sock, int fd)
{
	char data = 'z';
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/* Receive one passed descriptor, or -1. */
static inline int zcx_test_recv_fd(int sock)
{
	char data;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control.buf, .msg_controllen = sizeof(control.buf),
	};
	struct cmsghdr *cmsg;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (!cmsg || cmsg->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	return fd;
}

/* What differs between two censuses, for a test's log; NULL if nothing. */
static inline const char *zcx_test_census_diff(const struct zcx_test_census *before)
{
	struct zcx_test_census now = zcx_test_census();

	if (now.contexts != before->contexts)
		return "contexts";
	if (now.regions != before->regions)
		return "regions";
	if (now.pinned_pages != before->pinned_pages)
		return "pinned_pages";
	return NULL;
}

#include <time.h>

/*
 * Wait until the census is back at @before, polling every 10 ms for at
 * most @ms milliseconds: unpinning after an invalidation, a close or a
 * process's exit is deferred to a workqueue.  NULL once everything is
 * back, else what still differs.
 */
static inline const char *zcx_test_census_settle(const struct zcx_test_census *before,
						 unsigned int ms)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	const char *diff;
	unsigned int waited;

	for (waited = 0;; waited += 10) {
		diff = zcx_test_census_diff(before);
		if (!diff || waited >= ms)
			return diff;
		nanosleep(&tick, NULL);
	}
}

#endif /* ZCX_TEST_H */
