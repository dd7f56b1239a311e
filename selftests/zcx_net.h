/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_net.h - the selftests' network between two processes of this node:
 * a Soft-RoCE (or Soft-iWARP) device on a veth with an address, and
 * zcx_ib.ko listening there (zcx_net_up()); endpoints then connect with
 * ZCX_CONNECT_NET, so that their messages take the RDMA queue pairs
 * though both processes are here.  zcx_net_down() checks that nothing
 * holds zcx_ib any more, then either leaves the network up for the
 * program's next test (zcx_net_up() takes it as it is) or unloads zcx_ib
 * and removes the devices: setting them up runs a dozen programs and
 * costs seconds of rxe's work, which on the debug kernel were most of a
 * test's time.  A program with such tests ends with ZCX_NET_HARNESS_MAIN,
 * which takes the network down once its tests are done (and, before
 * them, what a killed program left).  Needs root,
 * iproute2's "ip" and "rdma", veth and rdma_rxe (modules or built in);
 * with ZCX_TEST_RDMA=siw the device is a Soft-iWARP one instead (siw
 * loaded).
 */
#ifndef ZCX_NET_H
#define ZCX_NET_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zcx_module.h"
#include "zcx_test.h"

/* The devices the tests add, on a veth pair of their own. */
#define VETH		"zcxibv0"
#define VETH_PEER	"zcxibv1"
#define RXE		"zcxib0"
#define RXE_RENAMED	"zcxib1"
#define NET_IP		"10.77.0.1"
#define NET_PORT	7471

/*
 * The kind of software RDMA device: rxe (Soft-RoCE), or siw (Soft-iWARP)
 * when ZCX_TEST_RDMA=siw.
 */
static inline const char *zcx_net_rdma_type(void)
{
	const char *type = getenv("ZCX_TEST_RDMA");

	return type && *type ? type : "rxe";
}

/* Run a shell command line quietly; its exit status. */
static inline int run(const char *fmt, ...)
{
	char line[480], cmd[512];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "{ %s; } >/dev/null 2>&1", line);
	ret = system(cmd);
	return WIFEXITED(ret) ? WEXITSTATUS(ret) : -1;
}

static inline bool rdma_device_exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	return access(path, F_OK) == 0;
}

static inline bool netdev_exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	return access(path, F_OK) == 0;
}

/* The backend's modules: ib_core and rdma_cm are modules on Debian's kernels. */
static inline int load_backend_with(const char *params)
{
	if (!zcx_module_loaded("ib_core"))
		run("modprobe ib_core");
	if (!zcx_module_loaded("rdma_cm"))
		run("modprobe rdma_cm");
	return zcx_module_load("zcx_ib", params);
}

/* What a test (or one killed by the harness's timeout) left behind. */
static inline void remove_test_devices(void)
{
	if (rdma_device_exists(RXE))
		run("rdma link delete " RXE);
	if (rdma_device_exists(RXE_RENAMED))
		run("rdma link delete " RXE_RENAMED);
	if (netdev_exists(VETH))
		run("ip link del " VETH);
}

/* zcx_ib's references: connections hold it until their teardown ran. */
static inline long long backend_refs(void)
{
	return zcx_test_read_number("/sys/module/zcx_ib/refcnt");
}

/* Whether they are back to @n (connections gone) within 30 s. */
static inline bool backend_refs_back_to(long long n)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (backend_refs() == n)
			return true;
		usleep(10000);
	}
	return false;
}

static inline bool backend_idle(void)
{
	return backend_refs_back_to(0);
}

/*
 * Whether the network can be set up here: root (modules, devices) and a
 * zcx_ib module file.  If not, @why says why.
 */
static inline bool zcx_net_possible(const char **why)
{
	char path[4096];

	*why = NULL;
	if (geteuid() != 0)
		*why = "needs root to load modules and add devices";
	else if (!zcx_module_path("zcx_ib", path, sizeof(path)))
		*why = "no zcx_ib module file (kernel without ib_core?)";
	return !*why;
}

/*
 * Whether the RDMA port is ACTIVE, looking @tries times 10 ms apart: rxe
 * adds the device at once, but a veth's carrier comes up asynchronously,
 * and a connection made on a port still DOWN fails its first messages.
 */
static inline bool rdma_port_active(int tries)
{
	char state[64];
	FILE *f;
	int i;

	for (i = 0; i < tries; i++) {
		f = fopen("/sys/class/infiniband/" RXE "/ports/1/state", "r");
		if (f) {
			if (!fgets(state, sizeof(state), f))
				state[0] = '\0';
			fclose(f);
			if (strstr(state, "ACTIVE"))
				return true;
		}
		if (i + 1 < tries)
			usleep(10000);
	}
	return false;
}

#define BACKEND_PARAM(name)	"/sys/module/zcx_ib/parameters/" name
/* zcx_ib's parameters when loaded (zcx_ib_test sets others). */
#define BACKEND_KEEPALIVE_MS	10000
#define BACKEND_MAX_ACCEPTED	1024
#define BACKEND_RX_BUFFERS	32

/* zcx_ib's reg_cache: 1 (Y), 0 (N), or -1 if unreadable. */
static inline int backend_reg_cache(void)
{
	FILE *f = fopen(BACKEND_PARAM("reg_cache"), "r");
	int c;

	if (!f)
		return -1;
	c = fgetc(f);
	fclose(f);
	return c == 'Y' ? 1 : c == 'N' ? 0 : -1;
}

/* Whether zcx_ib is loaded listening at NET_IP, as zcx_net_up() loads it. */
static inline bool backend_listens_for_tests(void)
{
	char addr[64] = "";
	FILE *f = fopen(BACKEND_PARAM("listen"), "r");

	if (!f)
		return false;
	if (!fgets(addr, sizeof(addr), f))
		addr[0] = '\0';
	fclose(f);
	return strcmp(addr, NET_IP "\n") == 0;
}

/* Whether any part of the tests' network is up (zcx_ib loaded otherwise is not). */
static inline bool zcx_net_present(void)
{
	return netdev_exists(VETH) || rdma_device_exists(RXE) ||
	       rdma_device_exists(RXE_RENAMED) || backend_listens_for_tests();
}

/*
 * Whether the network the program's previous test left up (see
 * zcx_net_down()) serves the next as it is: the devices there, the port
 * ACTIVE, zcx_ib loaded by zcx_net_up() (which waited first until nothing
 * held it).
 */
static inline bool zcx_net_reusable(void)
{
	return netdev_exists(VETH) && rdma_device_exists(RXE) && rdma_port_active(1) &&
	       backend_listens_for_tests() &&
	       zcx_test_read_number(BACKEND_PARAM("keepalive_ms")) == BACKEND_KEEPALIVE_MS &&
	       zcx_test_read_number(BACKEND_PARAM("max_accepted")) == BACKEND_MAX_ACCEPTED &&
	       zcx_test_read_number(BACKEND_PARAM("rx_buffers")) == BACKEND_RX_BUFFERS &&
	       backend_reg_cache() == 1;
}

/* The devices, the address and zcx_ib listening on it; NULL or what failed. */
static inline const char *zcx_net_up(void)
{
	/* After a test killed by its timeout its connections still go down. */
	if (zcx_module_loaded("zcx_ib") && !backend_idle())
		return "zcx_ib still held";
	if (zcx_net_reusable())
		return NULL;
	if (zcx_module_loaded("zcx_ib") && zcx_module_unload("zcx_ib"))
		return "unloading a zcx_ib left loaded";
	remove_test_devices();
	/* One command line: each program started costs time on a slow guest. */
	if (run("ip link add " VETH " type veth peer name " VETH_PEER " &&"
		" ip addr add " NET_IP "/24 dev " VETH " &&"
		" ip link set " VETH " up && ip link set " VETH_PEER " up"))
		return "adding the veth pair " VETH ", " NET_IP " on it, up";
	if (run("rdma link add " RXE " type %s netdev " VETH, zcx_net_rdma_type()))
		return "rdma link add";
	if (!rdma_port_active(1000))
		return "the RDMA device's port did not become ACTIVE in 10 s";
	if (load_backend_with("listen=" NET_IP))
		return "loading zcx_ib listen=" NET_IP;
	return NULL;
}

/*
 * A fixture's setup: NULL once the network is up, else why not, and
 * *@skip whether that is a reason to skip (not root, no zcx_ib) rather
 * than a failure.
 */
static inline const char *zcx_net_setup(bool *skip)
{
	const char *why;

	*skip = !zcx_net_possible(&why);
	return *skip ? why : zcx_net_up();
}

/*
 * Every connection torn down (nothing holds the backend); then, unless
 * @keep (for the program's next test), zcx_ib unloaded and the devices
 * removed.  NULL, or what was not so.
 */
static inline const char *zcx_net_down(bool keep)
{
	const char *bad = NULL;

	if (zcx_module_loaded("zcx_ib")) {
		if (!backend_idle())
			bad = "zcx_ib still held";
		else if (keep)
			return NULL;
		else if (zcx_module_unload("zcx_ib"))
			bad = "zcx_ib did not unload";
	}
	remove_test_devices();
	return bad;
}

/* The process running the tests (ZCX_NET_HARNESS_MAIN), 0 if none. */
static pid_t zcx_net_runner;

/* At its exit (not its children's), the network down: else it fails. */
static inline void zcx_net_exit(void)
{
	const char *bad;

	if (getpid() != zcx_net_runner || !zcx_net_present())
		return;
	bad = zcx_net_down(false);
	if (bad) {
		printf("# taking the network down after the tests: %s\n", bad);
		fflush(stdout);
		_exit(1);
	}
}

/*
 * Told to stop (run_tests.sh's timeout for the program): the test running
 * and its processes killed, as the harness's own timeout does, and the
 * network taken down at exit.  Not async-signal-safe: the program ends.
 */
static inline void zcx_net_terminated(int sig)
{
	if (getpid() != zcx_net_runner) {
		/* A test's process: as if never caught. */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	if (__active_test)
		kill(-__active_test->pid, SIGKILL);
	exit(1);
}

/*
 * Before the tests (none when only listing or helping): what a killed
 * program left taken down; ours at exit, or when told to stop.
 */
static inline void zcx_net_prepare(int argc, char **argv)
{
	const char *bad;
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-l") || !strcmp(argv[i], "-h"))
			return;
	if (geteuid() != 0)
		return;
	bad = zcx_net_present() ? zcx_net_down(false) : NULL;
	if (bad)
		fprintf(stderr, "# a network left up before the tests: %s\n", bad);
	zcx_net_runner = getpid();
	atexit(zcx_net_exit);
	signal(SIGTERM, zcx_net_terminated);
}

/* The main of a program with tests using the network (see the top). */
#define ZCX_NET_HARNESS_MAIN ZCX_TEST_HARNESS_MAIN_WITH(zcx_net_prepare(argc, argv))

/*
 * In a FIXTURE_SETUP whose test (or variant) runs between "nodes": the
 * network up, or the test skipped (not root, no zcx_ib) or failed.
 */
#define ZCX_NET_FIXTURE_UP() do {						\
	bool __skip;								\
	const char *__why = zcx_net_setup(&__skip);				\
										\
	if (__skip)								\
		SKIP(return, "%s", __why);					\
	ASSERT_EQ(NULL, __why) TH_LOG("setting up the network: %s", __why);	\
} while (0)

/*
 * In its FIXTURE_TEARDOWN: nothing left holding zcx_ib, and the network
 * kept for the program's next test.
 */
#define ZCX_NET_FIXTURE_DOWN() do {						\
	const char *__bad = geteuid() ? NULL : zcx_net_down(true);		\
										\
	EXPECT_EQ(NULL, __bad) TH_LOG("%s", __bad);				\
} while (0)

#endif /* ZCX_NET_H */
