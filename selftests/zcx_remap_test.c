// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_remap_test - put and get into exposed memory whose owner remapped
 * it since, so that the transfer pins the new pages in the owner's
 * address space, here under a userfaultfd: the transfer must not wait for
 * the owner to provide them (the owner may be waiting for the transfer,
 * say to close its context, and a backend's worker cannot be
 * interrupted), so it fails with EAGAIN at once, without even reporting
 * the fault to the owner, and leaves nothing pinned; once the owner has
 * the pages in, the put lands.  Pages that only need reading in are
 * waited for: a get from a file mapped over the range, its pages dropped
 * from the page cache, moves the file's bytes (ext4 on a loop device,
 * which reads asynchronously: the fault would wait, so the pin tries
 * again).  On a node (the initiator's own system call pins) and between
 * nodes (the target node's worker pins; zcx_net.h).  The worker pins the
 * whole range for as long as the transfer lasts, so it is charged to the
 * owner's RLIMIT_MEMLOCK: a put or get that would take the owner past it
 * fails with ENOMEM, and lands once the owner has room again.  On a node,
 * where a page at a time is pinned during its copy, no charge applies.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "zcx_net.h"
#include "zcx_creds.h"
#include "zcx_test.h"
#include "zcx_xfer.h"

#define UF_LEN		(16 * 4096)
#define UF_SHORT	256		/* a put carried in the message, over the network */
#define UF_MISSING	1		/* initiator: the transfers failed */
#define UF_PRESENT	2		/* target: the pages are in */
#define UF_LANDED	3		/* initiator: the put succeeded */

FIXTURE(remap) {
	struct zcx_test_census before;
};

FIXTURE_VARIANT(remap) {
	unsigned int ep_flags;
	bool net;
};

FIXTURE_VARIANT_ADD(remap, node) {
	.ep_flags = 0,
};

FIXTURE_VARIANT_ADD(remap, net) {
	.ep_flags = ZCX_EP_NET,
	.net = true,
};

FIXTURE_SETUP(remap)
{
	self->before = zcx_test_census();
	if (variant->net) {
		ZCX_NET_FIXTURE_UP();
		xconnect_flags = ZCX_CONNECT_NET;
	}
}

FIXTURE_TEARDOWN(remap)
{
	const char *leaked = zcx_test_census_settle(&self->before, 5000);

	EXPECT_EQ(NULL, leaked) TH_LOG("%s not back where the test began", leaked);
	if (variant->net)
		ZCX_NET_FIXTURE_DOWN();
}

struct uf_exposed {
	uint64_t addr, rkey;
};

/*
 * The target: expose, then put new, missing pages under a userfaultfd at
 * the same address, and do nothing for them until the initiator saw its
 * transfers fail; then let them in and check the put that follows.
 */
static int uf_target(struct xside *s, void *arg)
{
	struct uffdio_zeropage zp = { 0 };
	char *map = zcx_test_anon(UF_LEN);
	struct uf_exposed ex;
	struct uffd_msg msg;
	int uffd;

	(void)arg;
	CK(map);
	memset(map, 1, UF_LEN);
	ex.addr = (uintptr_t)map;
	CK_EQ(0, zcx_expose(s->zcx, map, UF_LEN, ZCX_REMOTE_ALL, &ex.rkey));
	CK(mmap(map, UF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		-1, 0) == map);
	uffd = zcx_test_uffd(map, UF_LEN);
	CK(uffd >= 0);
	CK_EQ(0, xwrite(s->wr, &ex, sizeof(ex)));

	CK_EQ(0, xexpect_u64(s, UF_MISSING));
	/* No transfer waited on us: none even reported its fault. */
	CK(read(uffd, &msg, sizeof(msg)) < 0 && errno == EAGAIN);

	zp.range.start = (uintptr_t)map;
	zp.range.len = UF_LEN;
	CK_EQ(0, ioctl(uffd, UFFDIO_ZEROPAGE, &zp));
	CK_EQ(0, xsend_u64(s, UF_PRESENT));
	CK_EQ(0, xexpect_u64(s, UF_LANDED));
	CK_PAT(map, UF_LEN, 0xf00d);
	CK_EQ(0, zcx_unexpose(s->zcx, ex.rkey));
	close(uffd);
	munmap(map, UF_LEN);
	return 0;
}

/* Start a put (or get) of @len bytes and wait for it, boundedly. */
static int uf_transfer(struct xside *s, const struct uf_exposed *ex, void *buf, size_t len,
		       bool put)
{
	struct zcx_req req = xreq(NULL);
	int ret = put ? zcx_iput(s->ep, s->peer, buf, len, ex->addr, ex->rkey, &req) :
			zcx_iget(s->ep, s->peer, buf, len, ex->addr, ex->rkey, &req);

	if (ret)
		return ret;
	ret = zcx_ep_flush(s->ep);
	return ret ? ret : xwait_bounded(s->ep, &req, 60000);
}

static int uf_initiator(struct xside *s, void *arg)
{
	char *src = zcx_test_anon(UF_LEN);
	struct uf_exposed ex;

	(void)arg;
	CK(src);
	xpat_fill(src, UF_LEN, 0xf00d);
	CK_EQ(0, xread(s->rd, &ex, sizeof(ex)));
	/* Long and short puts, and a get: none waits for the owner. */
	CK_EQ(-EAGAIN, uf_transfer(s, &ex, src, UF_LEN, true));
	CK_EQ(-EAGAIN, uf_transfer(s, &ex, src, UF_SHORT, true));
	CK_EQ(-EAGAIN, uf_transfer(s, &ex, src, UF_LEN, false));
	CK_PAT(src, UF_LEN, 0xf00d);
	CK_EQ(0, xsend_u64(s, UF_MISSING));

	CK_EQ(0, xexpect_u64(s, UF_PRESENT));
	CK_EQ(0, uf_transfer(s, &ex, src, UF_LEN, true));
	CK_EQ(0, xsend_u64(s, UF_LANDED));
	munmap(src, UF_LEN);
	return 0;
}

TEST_F_TIMEOUT(remap, userfaultfd_pages_are_not_waited_for, 300)
{
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, uf_initiator, uf_target, NULL));
}

/*
 * A filesystem whose reads wait for a device: ext4 on a loop device over
 * a file in /tmp, mounted at @dir (PATH_MAX bytes).  0, or -1 (it needs
 * root, mkfs.ext4 and loop devices).
 */
static int slow_fs_mount(char *dir)
{
	snprintf(dir, PATH_MAX, "/tmp/zcx_remap.XXXXXX");
	if (geteuid() || !mkdtemp(dir))
		return -1;
	/* A loop module must be loaded for /dev/loop-control to exist. */
	run("modprobe loop");
	if (!run("truncate -s 8M %s.img && mkfs.ext4 -q -F %s.img && mount -o loop %s.img %s",
		 dir, dir, dir, dir))
		return 0;
	run("rm -f %s.img", dir);
	rmdir(dir);
	return -1;
}

static void slow_fs_umount(const char *dir)
{
	run("umount %s; rm -f %s.img", dir, dir);
	rmdir(dir);
}

/*
 * The target: expose, write a file on the filesystem @arg, map it over
 * the range and drop its pages from the page cache; then wait for the get.
 */
static int file_target(struct xside *s, void *arg)
{
	char *map = zcx_test_anon(UF_LEN), *data = zcx_test_anon(UF_LEN);
	char path[PATH_MAX + 8];
	struct uf_exposed ex;
	int fd;

	CK(map && data);
	snprintf(path, sizeof(path), "%s/data", (const char *)arg);
	ex.addr = (uintptr_t)map;
	CK_EQ(0, zcx_expose(s->zcx, map, UF_LEN, ZCX_REMOTE_READ, &ex.rkey));
	xpat_fill(data, UF_LEN, 0xf11e);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CK(fd >= 0);
	CK_EQ(UF_LEN, write(fd, data, UF_LEN));
	CK_EQ(0, fsync(fd));
	CK(mmap(map, UF_LEN, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == map);
	CK_EQ(0, posix_fadvise(fd, 0, UF_LEN, POSIX_FADV_DONTNEED));
	CK_EQ(0, xwrite(s->wr, &ex, sizeof(ex)));
	CK_EQ(0, xexpect_u64(s, UF_LANDED));
	CK_EQ(0, zcx_unexpose(s->zcx, ex.rkey));
	close(fd);
	unlink(path);
	munmap(map, UF_LEN);
	munmap(data, UF_LEN);
	return 0;
}

static int file_initiator(struct xside *s, void *arg)
{
	char *dst = zcx_test_anon(UF_LEN);
	struct uf_exposed ex;

	(void)arg;
	CK(dst);
	CK_EQ(0, xread(s->rd, &ex, sizeof(ex)));
	CK_EQ(0, uf_transfer(s, &ex, dst, UF_LEN, false));
	CK_PAT(dst, UF_LEN, 0xf11e);
	CK_EQ(0, xsend_u64(s, UF_LANDED));
	munmap(dst, UF_LEN);
	return 0;
}

TEST_F_TIMEOUT(remap, file_pages_not_in_memory_are_read_in, 300)
{
	char dir[PATH_MAX];

	if (slow_fs_mount(dir))
		SKIP(return, "needs root, mkfs.ext4 and loop devices");
	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, file_initiator, file_target, dir));
	slow_fs_umount(dir);
}

/*
 * RLIMIT_MEMLOCK for the pins of a put or get into a remapped range: the
 * owner, unprivileged with a 64 KiB limit, exposes 48 KiB and remaps it,
 * and keeps 32 KiB more exposed (pinned): 48 KiB more would take it past
 * its limit, and nothing of a refused put lands.  Then it unexposes the
 * 32 KiB, whose region stays cached but unused, and so goes first when
 * the put needs the room.  The second put's bytes differ from the
 * first's, so that on a node, where the first landed, the second is seen.
 */
#define ML_LIMIT	(64 * 1024)
#define ML_LEN		(48 * 1024)
#define ML_OTHER	(32 * 1024)
#define ML_FULL		1	/* initiator: the transfers were refused, or not */
#define ML_ROOM		2	/* target: the 32 KiB are unexposed */
#define ML_LANDED	3	/* initiator: the put succeeded */
#define ML_SEED_1	0xbeef	/* the first put's pattern ... */
#define ML_SEED_2	0xcafe	/* ... and the second's */

static int ml_target(struct xside *s, void *arg)
{
	struct rlimit lim = { .rlim_cur = ML_LIMIT, .rlim_max = ML_LIMIT };
	char *map = zcx_test_anon(ML_LEN), *other = zcx_test_anon(ML_OTHER);
	bool net = *(bool *)arg;
	struct uf_exposed ex;
	uint64_t other_key;

	CK(map && other);
	memset(map, 1, ML_LEN);
	memset(other, 2, ML_OTHER);
	CK_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));
	CK_EQ(0, zcx_test_drop_to_nobody());
	ex.addr = (uintptr_t)map;
	CK_EQ(0, zcx_expose(s->zcx, map, ML_LEN, ZCX_REMOTE_ALL, &ex.rkey));
	CK(mmap(map, ML_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		-1, 0) == map);
	memset(map, 3, ML_LEN);
	CK_EQ(0, zcx_test_vmpin_settle(0));
	CK_EQ(0, zcx_expose(s->zcx, other, ML_OTHER, ZCX_REMOTE_READ, &other_key));
	CK_EQ(ML_OTHER / 1024, zcx_test_vmpin_kib());
	CK_EQ(0, xwrite(s->wr, &ex, sizeof(ex)));

	CK_EQ(0, xexpect_u64(s, ML_FULL));
	/* Nothing of a refused transfer stays charged (nor of a page-wise one). */
	CK_EQ(ML_OTHER / 1024, zcx_test_vmpin_settle(ML_OTHER / 1024));
	if (net)
		CK(xall(map, ML_LEN, 3));
	else
		CK_PAT(map, ML_LEN, ML_SEED_1);
	CK_EQ(0, zcx_unexpose(s->zcx, other_key));
	/* Cached, unused: the put must evict it to find room. */
	CK_EQ(ML_OTHER / 1024, zcx_test_vmpin_kib());
	CK_EQ(0, xsend_u64(s, ML_ROOM));
	CK_EQ(0, xexpect_u64(s, ML_LANDED));
	CK_PAT(map, ML_LEN, ML_SEED_2);
	/* Nothing of the put stays pinned, once the 32 KiB are out of the cache. */
	CK_EQ(0, zcx_mr_flush(s->zcx));
	CK_EQ(0, zcx_test_vmpin_settle(0));
	CK_EQ(0, zcx_unexpose(s->zcx, ex.rkey));
	munmap(map, ML_LEN);
	munmap(other, ML_OTHER);
	return 0;
}

static int ml_initiator(struct xside *s, void *arg)
{
	/* Between nodes refused; on a node pinned a page at a time, uncharged. */
	int full = *(bool *)arg ? -ENOMEM : 0;
	char *src = zcx_test_anon(ML_LEN);
	struct uf_exposed ex;

	CK(src);
	xpat_fill(src, ML_LEN, ML_SEED_1);
	CK_EQ(0, xread(s->rd, &ex, sizeof(ex)));
	CK_EQ(full, uf_transfer(s, &ex, src, ML_LEN, true));
	CK_EQ(full, uf_transfer(s, &ex, src, ML_LEN, false));
	CK_PAT(src, ML_LEN, ML_SEED_1);
	CK_EQ(0, xsend_u64(s, ML_FULL));

	CK_EQ(0, xexpect_u64(s, ML_ROOM));
	xpat_fill(src, ML_LEN, ML_SEED_2);
	CK_EQ(0, uf_transfer(s, &ex, src, ML_LEN, true));
	CK_EQ(0, xsend_u64(s, ML_LANDED));
	munmap(src, ML_LEN);
	return 0;
}

TEST_F_TIMEOUT(remap, pins_count_against_memlock, 300)
{
	bool net = variant->net;

	if (geteuid())
		SKIP(return, "needs root, to become uid 65534");

	EXPECT_EQ(0, xrun_pair(variant->ep_flags, 0, ml_initiator, ml_target, &net));
}

ZCX_NET_HARNESS_MAIN
