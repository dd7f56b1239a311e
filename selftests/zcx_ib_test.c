// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_ib_test - the RDMA backend module, zcx_ib.ko: it loads beside zcx.ko
 * (which never needs ib_core), holds zcx.ko while loaded, lists the RDMA
 * devices with fast registration (ZCX_CMD_GET_DEVICES) and follows them as
 * Soft-RoCE devices are added, renamed and removed, with no hang and
 * nothing left behind.
 *
 * Needs root, iproute2's "ip" and "rdma", veth and rdma_rxe (modules or
 * built in); zcxctl's output is checked too when $ZCXCTL names it.  Every
 * test leaves zcx_ib unloaded, as it found it.
 */
#include <dirent.h>
#include <stdarg.h>

#include "kselftest_harness.h"
#include "zcx_module.h"
#include "zcx_nl.h"
#include "zcx_test.h"

/* The devices these tests add, on a veth pair of their own. */
#define VETH		"zcxibv0"
#define VETH_PEER	"zcxibv1"
#define RXE		"zcxib0"
#define RXE_RENAMED	"zcxib1"

struct devices {
	int count;
	struct zcx_nl_msg dev[16];
};

static void collect_device(const struct zcx_nl_msg *msg, void *arg)
{
	struct devices *d = arg;

	if (d->count < (int)(sizeof(d->dev) / sizeof(d->dev[0])))
		d->dev[d->count] = *msg;
	d->count++;
}

static int list_devices(struct devices *d)
{
	memset(d, 0, sizeof(*d));
	return zcx_nl_request(ZCX_CMD_GET_DEVICES, true, NULL, collect_device, d);
}

static const struct zcx_nl_msg *find_device(const struct devices *d, const char *name)
{
	int i;

	for (i = 0; i < d->count && i < 16; i++)
		if (!strcmp(d->dev[i].dev_name, name))
			return &d->dev[i];
	return NULL;
}

/* Run a shell command quietly; its exit status. */
static int run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	ret = system(cmd);
	return WIFEXITED(ret) ? WEXITSTATUS(ret) : -1;
}

static bool rdma_device_exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	return access(path, F_OK) == 0;
}

/*
 * Removing a device by deleting its netdev is asynchronous (rxe hears of
 * it through a netdev notifier and unregisters from a work item): wait for
 * it, boundedly.
 */
static bool rdma_device_gone(const char *name)
{
	int i;

	for (i = 0; i < 3000 && rdma_device_exists(name); i++)
		usleep(10000);
	return !rdma_device_exists(name);
}

/* The backend's modules: ib_core is a module on Debian's kernels. */
static int load_backend(void)
{
	if (!zcx_module_loaded("ib_core"))
		run("modprobe ib_core");
	return zcx_module_load("zcx_ib", "");
}

static bool netdev_exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	return access(path, F_OK) == 0;
}

/* What a test (or one killed by the harness's timeout) left behind. */
static void remove_test_devices(void)
{
	if (rdma_device_exists(RXE))
		run("rdma link delete " RXE);
	if (rdma_device_exists(RXE_RENAMED))
		run("rdma link delete " RXE_RENAMED);
	if (netdev_exists(VETH))
		run("ip link del " VETH);
}

FIXTURE(ib) {
	int unused;
};

FIXTURE_SETUP(ib)
{
	char path[4096];

	if (geteuid() != 0)
		SKIP(return, "needs root to load modules and add devices");
	if (!zcx_module_path("zcx_ib", path, sizeof(path)))
		SKIP(return, "no zcx_ib module file (kernel without ib_core?)");
	ASSERT_TRUE(zcx_module_loaded("zcx"));
	if (zcx_module_loaded("zcx_ib"))
		ASSERT_EQ(0, zcx_module_unload("zcx_ib"));
	remove_test_devices();
}

/* A test killed by its timeout skips this: the next setup cleans up. */
FIXTURE_TEARDOWN(ib)
{
	if (geteuid() != 0)
		return;
	if (zcx_module_loaded("zcx_ib"))
		EXPECT_EQ(0, zcx_module_unload("zcx_ib"));
	remove_test_devices();
}

TEST_F_TIMEOUT(ib, loads_beside_zcx_and_holds_it, 120)
{
	struct zcx_query q = { 0 };
	struct devices d;
	int fd;

	/* zcx.ko alone: no backend, no devices, no tie to ib_core. */
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(0, d.count);
	EXPECT_NE(0, access("/sys/module/ib_core/holders/zcx", F_OK));

	ASSERT_EQ(0, load_backend());
	EXPECT_EQ(0, access("/sys/module/zcx/holders/zcx_ib", F_OK));
	EXPECT_EQ(-EWOULDBLOCK, zcx_module_unload("zcx"));

	/* zcx works with the backend loaded, and after it is gone. */
	ASSERT_EQ(0, zcx_module_unload("zcx_ib"));
	EXPECT_FALSE(zcx_module_loaded("zcx_ib"));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(0, d.count);
	fd = zcx_test_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, zcx_test_ioctl(fd, ZCX_IOC_QUERY, &q));
	EXPECT_EQ(ZCX_ABI_VERSION, q.abi_version);
	close(fd);
}

/* Every RDMA device present at load time is listed (all have FRWR here). */
TEST_F_TIMEOUT(ib, lists_the_devices_present, 120)
{
	const struct zcx_nl_msg *m;
	struct dirent *e;
	struct devices d;
	int present = 0;
	DIR *dir;

	ASSERT_EQ(0, load_backend());
	ASSERT_EQ(0, list_devices(&d));
	dir = opendir("/sys/class/infiniband");
	if (!dir)
		SKIP(return, "no RDMA device (rdma_rxe missing?)");
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		present++;
		m = find_device(&d, e->d_name);
		EXPECT_NE(NULL, m) TH_LOG("%s not listed", e->d_name);
		if (!m)
			continue;
		EXPECT_STREQ("ib", m->dev_backend);
		EXPECT_LE(1, m->val[ZCX_ATTR_DEV_PORTS]);
		EXPECT_LE(1, m->val[ZCX_ATTR_DEV_MR_PAGES]);
		EXPECT_LE(1, m->val[ZCX_ATTR_DEV_ID]);
	}
	closedir(dir);
	if (!present)
		SKIP(return, "no RDMA device (rdma_rxe missing?)");
	EXPECT_EQ(present, d.count);
}

/* Several seconds a command on the debug kernel: room for it. */
TEST_F_TIMEOUT(ib, follows_devices_added_renamed_and_removed, 300)
{
	const struct zcx_nl_msg *m;
	struct devices d;
	uint64_t id;
	int before;

	ASSERT_EQ(0, load_backend());
	ASSERT_EQ(0, list_devices(&d));
	before = d.count;
	ASSERT_EQ(0, run("ip link add " VETH " type veth peer name " VETH_PEER));

	/* Added while loaded: listed once "rdma link add" returns. */
	ASSERT_EQ(0, run("rdma link add " RXE " type rxe netdev " VETH));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(before + 1, d.count);
	m = find_device(&d, RXE);
	ASSERT_NE(NULL, m);
	id = m->val[ZCX_ATTR_DEV_ID];

	/* Renamed: same device, same id, new name. */
	ASSERT_EQ(0, run("rdma dev set " RXE " name " RXE_RENAMED));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(NULL, find_device(&d, RXE));
	m = find_device(&d, RXE_RENAMED);
	ASSERT_NE(NULL, m);
	EXPECT_EQ(id, m->val[ZCX_ATTR_DEV_ID]);

	/* Removed by "rdma link delete": gone when the command returns. */
	ASSERT_EQ(0, run("rdma link delete " RXE_RENAMED));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(before, d.count);
	EXPECT_EQ(NULL, find_device(&d, RXE_RENAMED));

	/* Removed with its netdev; added again, it gets a new id. */
	ASSERT_EQ(0, run("rdma link add " RXE " type rxe netdev " VETH));
	ASSERT_EQ(0, list_devices(&d));
	m = find_device(&d, RXE);
	ASSERT_NE(NULL, m);
	EXPECT_LT(id, m->val[ZCX_ATTR_DEV_ID]);
	ASSERT_EQ(0, run("ip link del " VETH));
	ASSERT_TRUE(rdma_device_gone(RXE));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(before, d.count);
	EXPECT_EQ(NULL, find_device(&d, RXE));
}

/*
 * A device present when the backend loads is listed, zcxctl shows it, and
 * it is let go of cleanly when the backend unloads.
 */
TEST_F_TIMEOUT(ib, unloads_with_a_device_present, 300)
{
	const char *zcxctl = getenv("ZCXCTL");
	struct devices d;

	ASSERT_EQ(0, run("ip link add " VETH " type veth peer name " VETH_PEER));
	ASSERT_EQ(0, run("rdma link add " RXE " type rxe netdev " VETH));
	ASSERT_EQ(0, load_backend());
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_NE(NULL, find_device(&d, RXE));
	if (zcxctl && *zcxctl) {
		EXPECT_EQ(0, run("%s devices | grep -q '^[0-9]* *" RXE " *ib '", zcxctl));
		EXPECT_EQ(0, run("%s -j devices | grep -q '\"name\":\"" RXE "\"'", zcxctl));
	}
	ASSERT_EQ(0, zcx_module_unload("zcx_ib"));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(0, d.count);
	if (zcxctl && *zcxctl)
		EXPECT_EQ(0, run("%s devices | grep -q 'no RDMA devices'", zcxctl));
	/* And the device still works without it: delete it normally. */
	EXPECT_EQ(0, run("rdma link delete " RXE));
	EXPECT_FALSE(rdma_device_exists(RXE));
}

TEST_HARNESS_MAIN
