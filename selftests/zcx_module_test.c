// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_module_test - module life cycle: unloading is refused while a
 * context is open and works once all are closed; parameters given at load
 * time show up in the query; invalid parameters refuse the load.
 *
 * Needs root and the module file: $ZCX_KO, else "modinfo -n zcx".  Every
 * test leaves the module loaded with default parameters, as it found it.
 */
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_creds.h"
#include "zcx_module.h"
#include "zcx_test.h"

static bool have_module_file(void)
{
	char path[4096];

	return zcx_module_path("zcx", path, sizeof(path));
}

static int load_module(const char *params)
{
	return zcx_module_load("zcx", params);
}

static int unload_module(void)
{
	return zcx_module_unload("zcx");
}

static bool module_loaded(void)
{
	return zcx_module_loaded("zcx");
}

/* /dev/zcx appears through devtmpfs; wait for it boundedly. */
static int wait_for_device(void)
{
	struct stat st;
	int i;

	for (i = 0; i < 500; i++) {
		if (stat(ZCX_DEVICE_PATH, &st) == 0)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static bool defaults_loaded(void)
{
	return zcx_test_read_number(ZCX_MODULE_PARAM("cache_entries")) == 8192 &&
	       zcx_test_read_number(ZCX_MODULE_PARAM("ring_depth")) == 1024 &&
	       zcx_test_read_number(ZCX_MODULE_PARAM("zcopy_threshold")) == 4096 &&
	       zcx_test_read_number(ZCX_MODULE_PARAM("cache_bytes")) == 0;
}

FIXTURE(module) {
	int unused;
};

FIXTURE_SETUP(module)
{
	if (geteuid() != 0)
		SKIP(return, "needs root to load and unload modules");
	if (!have_module_file())
		SKIP(return, "module file unknown: set ZCX_KO");
	ASSERT_TRUE(module_loaded());
	/* The backend holds zcx; zcx_ib_test unloads it unless it was killed. */
	if (zcx_module_loaded("zcx_ib"))
		ASSERT_EQ(0, zcx_module_unload("zcx_ib"));
}

/* Put the module back as the runner loaded it, whatever the test did. */
FIXTURE_TEARDOWN(module)
{
	if (geteuid() != 0 || !have_module_file())
		return;
	if (module_loaded() && !defaults_loaded())
		EXPECT_EQ(0, unload_module());
	if (!module_loaded())
		EXPECT_EQ(0, load_module(""));
	EXPECT_EQ(0, wait_for_device());
}

TEST_F(module, unload_refused_while_open)
{
	struct zcx_query q = { 0 };
	int fd = zcx_test_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload_module());
	EXPECT_TRUE(module_loaded());
	EXPECT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(ZCX_ABI_VERSION, q.abi_version);
	close(fd);
}

TEST_F(module, unload_after_close)
{
	struct stat st;
	int i, status;
	pid_t child;

	/* Contexts opened and closed, also by a child, leave no reference. */
	for (i = 0; i < 100; i++) {
		int fd = zcx_test_open();

		ASSERT_LE(0, fd);
		close(fd);
	}
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		i = zcx_test_open();
		_exit(i < 0 ? 1 : close(i) ? 2 : 0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
	ASSERT_EQ(0, zcx_test_module_refs());
	ASSERT_EQ(0, unload_module());
	EXPECT_FALSE(module_loaded());
	EXPECT_NE(0, stat(ZCX_DEVICE_PATH, &st));
	EXPECT_GT(0, zcx_test_open());
	ASSERT_EQ(0, load_module(""));
	ASSERT_EQ(0, wait_for_device());
	i = zcx_test_open();
	ASSERT_LE(0, i);
	close(i);
}

TEST_F(module, parameters_reach_query)
{
	struct zcx_query q = { 0 };
	int fd;

	ASSERT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module("cache_entries=100 ring_depth=64 zcopy_threshold=8192 "
				 "cache_bytes=1048576 eager_credits=3"));
	ASSERT_EQ(0, wait_for_device());
	fd = zcx_test_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(100, q.cache_entries);
	EXPECT_EQ(64, q.ring_depth);
	EXPECT_EQ(8192, q.zcopy_threshold);
	EXPECT_EQ(1048576, q.cache_bytes);
	EXPECT_EQ(3, q.eager_credits);
	close(fd);
}

/* A context of its own in *@fd with a polled endpoint: 0 or its error. */
static int polled_endpoint(int *fd)
{
	struct zcx_ep_create c = { .flags = ZCX_EP_POLL, .sq_entries = 8 };

	*fd = zcx_test_open();
	if (*fd < 0)
		return -ENODEV;
	return zcx_test_ioctl(*fd, ZCX_IOC_EP_CREATE, &c);
}

/*
 * max_pollers_per_user: a user's polling threads stop at its share, and
 * another user still gets one; a context closed gives its thread back.
 */
TEST_F(module, pollers_per_user)
{
	int fd[3], nobody_fd, status, i;
	pid_t child;

	ASSERT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module("max_pollers_per_user=2"));
	ASSERT_EQ(0, wait_for_device());
	EXPECT_EQ(2, zcx_test_read_number(ZCX_MODULE_PARAM("max_pollers_per_user")));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, polled_endpoint(&fd[i])) TH_LOG("thread %d", i);
	EXPECT_EQ(-EAGAIN, polled_endpoint(&fd[2]));
	/* Another user's share is whole. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child)
		_exit(zcx_test_drop_to_nobody() ? 10 : polled_endpoint(&nobody_fd) ? 11 : 0);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
	/* A context closed, its thread goes: room for one more. */
	close(fd[0]);
	close(fd[2]);
	EXPECT_EQ(0, polled_endpoint(&fd[0]));
	close(fd[0]);
	close(fd[1]);
}

/* Several refused loads and a reload: slow on the debug kernel in TCG. */
TEST_F_TIMEOUT(module, invalid_parameters_refuse_load, 120)
{
	static const char * const bad[] = {
		"ring_depth=1000", "ring_depth=0", "ring_depth=1",
		"ring_depth=65536", "cache_entries=0", "eager_credits=40000",
		"poll_idle_us=2000000",
	};
	size_t i;

	ASSERT_EQ(0, unload_module());
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, load_module(bad[i])) TH_LOG("%s", bad[i]);
		EXPECT_FALSE(module_loaded());
	}
}

ZCX_TEST_HARNESS_MAIN
