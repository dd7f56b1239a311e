// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_query_test - ZCX_IOC_QUERY values and the error rules every ioctl
 * follows: unknown command, bad size, non-zero flags or reserved fields,
 * bad pointers.  A failing call must leave the caller's buffer untouched.
 */
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

/* The query command with a different encoded size or direction. */
#define QUERY_CMD(dir, size)	_IOC(dir, ZCX_IOC_MAGIC, _IOC_NR(ZCX_IOC_QUERY), size)

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = zcx_test_open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", ZCX_DEVICE_PATH, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST_F(dev, values_match_module)
{
	struct zcx_query q = { 0 };

	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(ZCX_ABI_VERSION, q.abi_version);
	EXPECT_EQ(0, q.features & ~ZCX_FEATURES_KNOWN);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("cache_entries")), q.cache_entries);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("ring_depth")), q.ring_depth);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("zcopy_threshold")), q.zcopy_threshold);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("cache_bytes")), (long long)q.cache_bytes);
	EXPECT_EQ(zcx_test_read_number(ZCX_MODULE_PARAM("eager_credits")), q.eager_credits);
	EXPECT_EQ(ZCX_MAX_ENDPOINTS, q.max_endpoints);
	EXPECT_EQ(sysconf(_SC_PAGESIZE), q.page_size);
}

/* The runner loads the module without parameters: the documented defaults. */
TEST_F(dev, defaults)
{
	struct zcx_query q = { 0 };

	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(8192, q.cache_entries);
	EXPECT_EQ(1024, q.ring_depth);
	EXPECT_EQ(4096, q.zcopy_threshold);
	EXPECT_EQ(0, q.cache_bytes);
	EXPECT_EQ(64, q.eager_credits);
	EXPECT_EQ(2000, zcx_test_read_number(ZCX_MODULE_PARAM("poll_idle_us")));
}

/* Output is built from zeroed memory: no stale kernel bytes anywhere. */
TEST_F(dev, output_fully_written)
{
	struct zcx_query q;
	size_t i;

	memset(&q, 0, sizeof(q));
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
	for (i = 0; i < sizeof(q.reserved) / sizeof(q.reserved[0]); i++)
		EXPECT_EQ(0, q.reserved[i]);
}

TEST_F(dev, unknown_command)
{
	char buf[64] = { 0 };

	EXPECT_EQ(-ENOTTY, zcx_test_ioctl(self->fd, _IOWR(ZCX_IOC_MAGIC, 0x7f, buf), buf));
	EXPECT_EQ(-ENOTTY, zcx_test_ioctl(self->fd, _IOWR(ZCX_IOC_MAGIC + 1, 0x00, struct zcx_query), buf));
	EXPECT_EQ(-ENOTTY, zcx_test_ioctl(self->fd, 0, buf));
	/* A terminal ioctl on a non-terminal. */
	EXPECT_EQ(-ENOTTY, zcx_test_ioctl(self->fd, TCGETS, buf));
}

TEST_F(dev, bad_size)
{
	unsigned char buf[8192];
	unsigned char orig[sizeof(buf)];

	memset(buf, 0, sizeof(buf));
	memcpy(orig, buf, sizeof(buf));
	/* Shorter than the first published struct. */
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_READ | _IOC_WRITE, 8), buf));
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd,
		QUERY_CMD(_IOC_READ | _IOC_WRITE, sizeof(struct zcx_query) - 8), buf));
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_READ | _IOC_WRITE, 0), buf));
	/* Larger than any argument can be. */
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_READ | _IOC_WRITE, 8192), buf));
	EXPECT_EQ(0, memcmp(buf, orig, sizeof(buf)));
}

TEST_F(dev, wrong_direction)
{
	struct zcx_query q = { 0 };

	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_READ, sizeof(q)), &q));
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_WRITE, sizeof(q)), &q));
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_NONE, 0), &q));
	EXPECT_EQ(0, q.abi_version);
}

/* A newer caller's larger struct works while its extra bytes are zero. */
TEST_F(dev, larger_struct_zero_tail)
{
	struct {
		struct zcx_query q;
		__u64 future[3];
	} big;

	memset(&big, 0, sizeof(big));
	ASSERT_EQ(0, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_READ | _IOC_WRITE, sizeof(big)), &big));
	EXPECT_EQ(ZCX_ABI_VERSION, big.q.abi_version);
	/* Bytes this kernel does not know are left as the caller had them. */
	EXPECT_EQ(0, big.future[0]);

	memset(&big, 0, sizeof(big));
	big.future[2] = 1;
	EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, QUERY_CMD(_IOC_READ | _IOC_WRITE, sizeof(big)), &big));
	EXPECT_EQ(0, big.q.abi_version);
}

TEST_F(dev, nonzero_flags)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		struct zcx_query q = { .flags = 1u << bit };

		EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
		EXPECT_EQ(0, q.abi_version);
	}
}

TEST_F(dev, nonzero_reserved)
{
	size_t i, n = sizeof(((struct zcx_query *)0)->reserved) / sizeof(__u64);

	for (i = 0; i < n; i++) {
		struct zcx_query q = { 0 };

		q.reserved[i] = 1ULL << (i * 13);
		EXPECT_EQ(-EINVAL, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, &q));
		EXPECT_EQ(0, q.abi_version);
	}
}

TEST_F(dev, bad_pointer)
{
	void *ro;

	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, NULL));
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, (void *)1));
	/* A kernel address. */
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, (void *)0xffff888000000000ULL));
	/* Readable but not writable: the result cannot be delivered. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, ro));
	munmap(ro, 4096);
}

/* The struct straddles the end of a mapping: nothing is half-done. */
TEST_F(dev, pointer_across_hole)
{
	char *rw;

	rw = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rw);
	ASSERT_EQ(0, munmap(rw + 4096, 4096));
	memset(rw, 0, 4096);
	EXPECT_EQ(-EFAULT, zcx_test_ioctl(self->fd, ZCX_IOC_QUERY, rw + 4096 - 16));
	munmap(rw, 4096);
}

TEST_F(dev, no_seek)
{
	EXPECT_EQ(-1, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
}

ZCX_TEST_HARNESS_MAIN
