// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_ib_test - the RDMA backend module, zcx_ib.ko: it loads beside zcx.ko
 * (which never needs ib_core), holds zcx.ko while loaded, lists the RDMA
 * devices with fast registration (ZCX_CMD_GET_DEVICES) and follows them as
 * Soft-RoCE devices are added, renamed and removed, with no hang and
 * nothing left behind.  The "net" tests connect two processes through it
 * (zcx_net.h: a Soft-RoCE device on a veth with an address, zcx_ib
 * listening there, ZCX_CONNECT_NET so that the queue pairs are used though
 * both processes are on this node): addresses, inline messages, credits,
 * refusals, a connection's end.  The transport's data tests (every size,
 * rendezvous, stale registrations, peers killed mid-transfer) run over it
 * as the "net" variants of zcx_xfer_test, zcx_fault_test and
 * zcx_remap_test; zcx_wire_test plays a peer that breaks the protocol.
 *
 * Needs root, iproute2's "ip" and "rdma", veth and rdma_rxe (modules or
 * built in); zcxctl's output is checked too when $ZCXCTL names it.  Every
 * "ib" test leaves zcx_ib unloaded, as it found it; the "net" tests leave
 * the network up for the next (zcx_net.h), and the program takes it down.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "zcx_creds.h"
#include "zcx_module.h"
#include "zcx_net.h"
#include "zcx_nl.h"
#include "zcx_test.h"
#include "zcx_xfer.h"

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

static int load_backend(void)
{
	return load_backend_with("");
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

/*
 * A listener that cannot be made (listen= is no address) fails the load,
 * which zcx.ko has seen register the backend by then; zcx.ko is left as
 * it was, with no backend, and the backend loads once the address is
 * right.  (zcx.ko takes no reference on a backend whose load is still
 * under way: the module would be freed under it when the load failed.)
 */
TEST_F_TIMEOUT(ib, a_listener_that_cannot_be_made_fails_the_load, 120)
{
	struct devices d;
	int ret;

	ret = load_backend_with("listen=192.0.2.256");
	EXPECT_EQ(-EINVAL, ret) TH_LOG("load: %s", strerror(-ret));
	EXPECT_FALSE(zcx_module_loaded("zcx_ib"));
	EXPECT_NE(0, access("/sys/module/zcx/holders/zcx_ib", F_OK));
	ASSERT_EQ(0, list_devices(&d));
	EXPECT_EQ(0, d.count);
	ASSERT_EQ(0, load_backend());
	EXPECT_EQ(0, access("/sys/module/zcx/holders/zcx_ib", F_OK));
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
	ASSERT_EQ(0, run("rdma link add " RXE " type %s netdev " VETH, zcx_net_rdma_type()));
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
	ASSERT_EQ(0, run("rdma link add " RXE " type %s netdev " VETH, zcx_net_rdma_type()));
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
	ASSERT_EQ(0, run("rdma link add " RXE " type %s netdev " VETH, zcx_net_rdma_type()));
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


/* --- between two processes through the backend ---------------------------- */

FIXTURE(net) {
	int unused;
};

FIXTURE_SETUP(net)
{
	ZCX_NET_FIXTURE_UP();
	xconnect_flags = ZCX_CONNECT_NET;
}

FIXTURE_TEARDOWN(net)
{
	ZCX_NET_FIXTURE_DOWN();
}

TEST_F_TIMEOUT(net, addresses_carry_the_listener, 300)
{
	struct zcx_addr addr, again;
	struct in_addr ip;
	struct zcx_ep *ep;
	struct zcx *zcx;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_NET, 0, &ep));
	zcx_ep_addr(ep, &addr);
	EXPECT_EQ(ZCX_NODE_INET, addr.node);
	EXPECT_EQ(AF_INET, addr.family);
	EXPECT_EQ(htons(NET_PORT), addr.port);
	ASSERT_EQ(1, inet_pton(AF_INET, NET_IP, &ip));
	EXPECT_EQ(0, memcmp(addr.ip, &ip, sizeof(ip)));
	EXPECT_NE(0, addr.node_id);
	EXPECT_EQ(0, addr.reserved1);
	EXPECT_EQ(0, addr.reserved2);
	zcx_ep_destroy(ep);
	/* Same node, same instance: another endpoint has the same node id. */
	ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_NET, 0, &ep));
	zcx_ep_addr(ep, &again);
	EXPECT_EQ(addr.node_id, again.node_id);
	zcx_ep_destroy(ep);
	zcx_close(zcx);
}

/*
 * Up to the inline limit: 8 KiB, with a 16-byte header on the wire.  The
 * receiver holds them all at once: fewer than the buffers it may hold
 * (24 of 32), or the sender would be told to send rendezvous messages,
 * which wait for their receive.
 */
#define INLINE_MAX	8192
static const size_t net_sizes[] = { 0, 1, 7, 4095, 4096, 4097, 8191, INLINE_MAX };
#define NET_ROUNDS	2
#define NET_MSGS	(NET_ROUNDS * (int)(sizeof(net_sizes) / sizeof(net_sizes[0])))

/* Sender: every size, NET_ROUNDS times, tag = its number, patterned. */
static int net_send_all(struct xside *s, void *arg)
{
	unsigned char buf[INLINE_MAX];
	int i, ret;

	(void)arg;
	for (i = 0; i < NET_MSGS; i++) {
		size_t len = net_sizes[i % (sizeof(net_sizes) / sizeof(net_sizes[0]))];

		xpat_fill(buf, len, 1000 + i);
		ret = zcx_send(s->ep, s->peer, buf, len, (uint64_t)i);
		if (ret) {
			fprintf(stderr, "# send %d (%zu bytes): %s\n", i, len, zcx_strerror(ret));
			return 1;
		}
	}
	return 0;
}

/*
 * Receiver: the messages in reverse order of tags (so most wait as
 * unexpected, holding receive buffers), every byte checked.
 */
static int net_recv_all(struct xside *s, void *arg)
{
	unsigned char buf[INLINE_MAX];
	int i;

	(void)arg;
	for (i = NET_MSGS - 1; i >= 0; i--) {
		size_t len = net_sizes[i % (sizeof(net_sizes) / sizeof(net_sizes[0]))];
		ssize_t got = zcx_recv(s->ep, buf, sizeof(buf), (uint64_t)i, UINT64_MAX, NULL);

		if (got != (ssize_t)len || xpat_check(buf, len, 1000 + i) >= 0) {
			fprintf(stderr, "# message %d: %zd bytes, want %zu, or wrong bytes\n", i,
				got, len);
			return 1;
		}
	}
	return 0;
}

/*
 * Packets the Soft-RoCE device sent: proof the messages took the network;
 * negative if the device counts none (Soft-iWARP).
 */
#define RXE_COUNTERS	"/sys/class/infiniband/" RXE "/ports/1/hw_counters/"

static long long rxe_sent_packets(void)
{
	return zcx_test_read_number(RXE_COUNTERS "sent_pkts");
}

#define NO_PACKET_COUNT	"the RDMA device counts no packets (not Soft-RoCE)"

TEST_F_TIMEOUT(net, messages_cross_the_network, 300)
{
	long long before = rxe_sent_packets();

	if (before < 0)
		SKIP(return, NO_PACKET_COUNT);
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_send_all, net_recv_all, NULL));
	EXPECT_LE(before + NET_MSGS, rxe_sent_packets());
}

/*
 * @len patterned bytes from @ep to @peer, received by @to into a buffer
 * of their size, posted first, within a minute, and checked: 0 or -errno.
 */
static int net_pass(struct zcx_ep *ep, uint32_t peer, struct zcx_ep *to, size_t len,
		    uint64_t tag)
{
	unsigned char *out = malloc(len + 1), *in = malloc(len + 1);
	struct zcx_req req = { 0 };
	int ret = out && in ? 0 : -ENOMEM;

	if (!ret) {
		xpat_fill(out, len, tag);
		ret = zcx_irecv(to, in, len, tag, UINT64_MAX, &req);
	}
	/* Posted now: a rendezvous send waits for it. */
	if (!ret)
		ret = zcx_ep_flush(to);
	if (!ret)
		ret = zcx_send(ep, peer, out, len, tag);
	if (!ret)
		ret = xwait_bounded(to, &req, 60000);
	if (!ret && (req.len != len || xpat_check(in, len, tag) >= 0))
		ret = -EBADMSG;
	free(out);
	free(in);
	return ret;
}

/*
 * An 8 KiB message goes inline, one SEND (16 bytes of header on top); a
 * byte more is a rendezvous (RTS, the READ and its answer, FIN): the
 * device sends at least one packet a message fewer for the first.
 */
#define PAGE_MSGS	20

TEST_F_TIMEOUT(net, messages_up_to_8KiB_go_inline, 300)
{
	long long before = rxe_sent_packets(), inline_pkts, rendezvous_pkts, lifespan;
	struct zcx_ep *ep, *to;
	char ms[24];
	struct zcx_addr addr;
	struct zcx *zcx;
	uint32_t peer;
	int i;

	if (before < 0)
		SKIP(return, NO_PACKET_COUNT);
	/*
	 * Counted afresh on every read: ib_core serves a value it read less
	 * than its lifespan (10 ms) ago, and on 6.1 20 messages take less.
	 */
	lifespan = zcx_test_read_number(RXE_COUNTERS "lifespan");
	ASSERT_LE(0, lifespan);
	ASSERT_EQ(0, zcx_test_write_file(RXE_COUNTERS "lifespan", "0"));
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &ep));
	ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_NET, 0, &to));
	zcx_ep_addr(to, &addr);
	ASSERT_EQ(0, zcx_ep_connect_flags(ep, &addr, ZCX_CONNECT_NET, &peer));
	before = rxe_sent_packets();
	for (i = 0; i < PAGE_MSGS; i++)
		ASSERT_EQ(0, net_pass(ep, peer, to, INLINE_MAX, i));
	inline_pkts = rxe_sent_packets() - before;
	before = rxe_sent_packets();
	for (i = 0; i < PAGE_MSGS; i++)
		ASSERT_EQ(0, net_pass(ep, peer, to, INLINE_MAX + 1, i));
	rendezvous_pkts = rxe_sent_packets() - before;
	TH_LOG("packets per message: %.1f of %d bytes, %.1f of %d",
	       (double)inline_pkts / PAGE_MSGS, INLINE_MAX, (double)rendezvous_pkts / PAGE_MSGS,
	       INLINE_MAX + 1);
	EXPECT_LE(inline_pkts + PAGE_MSGS, rendezvous_pkts);
	zcx_ep_destroy(to);
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	snprintf(ms, sizeof(ms), "%lld", lifespan);
	EXPECT_EQ(0, zcx_test_write_file(RXE_COUNTERS "lifespan", ms));
}

/*
 * Registrations kept (zcx_ib's reg_cache): KEPT_ROUNDS rendezvous messages
 * from one buffer into one buffer make one registration on each side, and
 * after the first message neither side asks its device for a registration
 * again; each message still carries the bytes the buffer holds when it is
 * sent.  Unmapping the send buffer lets go of its registration and of its
 * pages, and memory mapped at the same address in its place is registered
 * anew and its own bytes arrive.  With reg_cache=0 nothing is kept, the
 * sender registers its pages for every message, and the same messages
 * arrive as well.  On an iWARP device (siw) a receive's pages are
 * registered for the peer to write, so only the sender's are kept.
 * Netlink (zcxctl stats) tells the sender's numbers as its counters do.
 */
#define KEPT_LEN	((size_t)1 << 20)
#define KEPT_ROUNDS	10

struct kept_case {
	bool cached;		/* the sender's registrations are kept ... */
	bool recv_cached;	/* ... and the receiver's */
};

static int kept_stats(struct xside *s, struct zcx_counters *c)
{
	struct zcx_mr_stats st;
	int ret = zcx_mr_stats(s->zcx, &st);

	if (ret) {
		fprintf(stderr, "# zcx_mr_stats: %s\n", zcx_strerror(ret));
		return -1;
	}
	*c = st.kernel;
	return 0;
}

/* Whether @what made @made registrations since @before (none if not @cached). */
static bool kept_made(struct xside *s, bool cached, const struct zcx_counters *before,
		      uint64_t made, const char *what)
{
	struct zcx_counters now;
	uint64_t want = cached ? made : 0;

	if (kept_stats(s, &now))
		return false;
	if (now.dev_regs_total - before->dev_regs_total == want &&
	    now.dev_regs - before->dev_regs <= want)
		return true;
	fprintf(stderr, "# pid %d, %s: %llu registrations made, %llu kept, want %llu\n",
		getpid(), what, (unsigned long long)(now.dev_regs_total - before->dev_regs_total),
		(unsigned long long)(now.dev_regs - before->dev_regs),
		(unsigned long long)want);
	return false;
}

/*
 * Whether the context asked its device for @want registrations since
 * @before (@at_least: or more).
 */
static bool regs_posted(struct xside *s, const struct zcx_counters *before, uint64_t want,
			bool at_least, const char *what)
{
	struct zcx_counters now;
	uint64_t posted;

	if (kept_stats(s, &now))
		return false;
	posted = now.dev_regs_posted - before->dev_regs_posted;
	if (posted == want || (at_least && posted > want))
		return true;
	fprintf(stderr, "# pid %d, %s: %llu registrations asked of the device, want %s%llu\n",
		getpid(), what, (unsigned long long)posted, at_least ? "at least " : "",
		(unsigned long long)want);
	return false;
}

/* Whether netlink tells this process's device registrations as its counters do. */
static bool regs_in_netlink(struct xside *s)
{
	struct zcx_nl_msg m = { 0 };
	struct zcx_counters c;
	int ret;

	if (kept_stats(s, &c))
		return false;
	ret = zcx_nl_do_pid(ZCX_CMD_GET_STATS, getpid(), &m);
	if (!ret && m.val[ZCX_ATTR_DEV_REGS] == c.dev_regs &&
	    m.val[ZCX_ATTR_DEV_REGS_TOTAL] == c.dev_regs_total &&
	    m.val[ZCX_ATTR_DEV_REGS_POSTED] == c.dev_regs_posted)
		return true;
	fprintf(stderr, "# netlink (%d): %llu, %llu, %llu registrations; counters: %llu, %llu, %llu\n",
		ret, (unsigned long long)m.val[ZCX_ATTR_DEV_REGS],
		(unsigned long long)m.val[ZCX_ATTR_DEV_REGS_TOTAL],
		(unsigned long long)m.val[ZCX_ATTR_DEV_REGS_POSTED],
		(unsigned long long)c.dev_regs, (unsigned long long)c.dev_regs_total,
		(unsigned long long)c.dev_regs_posted);
	return false;
}

/*
 * Whether the context gets back to @before's kept registrations and
 * pinned pages, within 30 s: they go once the device is done with them.
 */
static bool kept_released(struct xside *s, const struct zcx_counters *before)
{
	struct zcx_counters now;
	int i;

	for (i = 0; i < 3000; i++) {
		if (kept_stats(s, &now))
			return false;
		if (now.dev_regs == before->dev_regs && now.pinned_pages == before->pinned_pages)
			return true;
		usleep(10000);
	}
	fprintf(stderr, "# after munmap: %llu registrations kept, %llu pages pinned, want %llu, %llu\n",
		(unsigned long long)now.dev_regs, (unsigned long long)now.pinned_pages,
		(unsigned long long)before->dev_regs, (unsigned long long)before->pinned_pages);
	return false;
}

static int kept_send(struct xside *s, void *arg)
{
	const struct kept_case *kc = arg;
	struct zcx_counters before, first;
	unsigned char *buf, *again;
	int i, ret;

	buf = mmap(NULL, KEPT_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || kept_stats(s, &before))
		return 1;
	for (i = 0; i <= KEPT_ROUNDS; i++) {
		if (i == KEPT_ROUNDS) {
			if (!kept_made(s, kc->cached, &before, 1, "sending from one buffer") ||
			    !regs_posted(s, &first, kc->cached ? 0 : KEPT_ROUNDS - 1, !kc->cached,
					 "sending from one buffer again"))
				return 1;
			munmap(buf, KEPT_LEN);
			if (!kept_released(s, &before))
				return 1;
			again = mmap(buf, KEPT_LEN, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			if (again != buf)
				return 1;
		}
		/* Odd offset and length: whole pages are kept, the message is not. */
		xpat_fill(buf + 3, KEPT_LEN - 5, 700 + i);
		ret = zcx_send(s->ep, s->peer, buf + 3, KEPT_LEN - 5, (uint64_t)i);
		if (ret) {
			fprintf(stderr, "# send %d: %s\n", i, zcx_strerror(ret));
			return 1;
		}
		/* The peer reads the pages: they are registered, for this message or kept. */
		if (i == 0 && (!regs_posted(s, &before, 1, true, "sending") ||
			       kept_stats(s, &first)))
			return 1;
	}
	ret = !kept_made(s, kc->cached, &before, 2, "sending from the buffer mapped again") ||
	      !regs_in_netlink(s);
	munmap(buf, KEPT_LEN);
	return ret;
}

static int kept_recv(struct xside *s, void *arg)
{
	const struct kept_case *kc = arg;
	struct zcx_counters before, first;
	unsigned char *buf;
	ssize_t got;
	int i;

	buf = mmap(NULL, KEPT_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || kept_stats(s, &before))
		return 1;
	for (i = 0; i <= KEPT_ROUNDS; i++) {
		memset(buf, 0, KEPT_LEN);
		got = zcx_recv(s->ep, buf + 1, KEPT_LEN - 1, (uint64_t)i, UINT64_MAX, NULL);
		if (got != (ssize_t)(KEPT_LEN - 5) || xpat_check(buf + 1, KEPT_LEN - 5, 700 + i) >= 0) {
			fprintf(stderr, "# message %d: %zd bytes, want %zu, or wrong bytes\n", i, got,
				KEPT_LEN - 5);
			return 1;
		}
		if (i == 0 && kept_stats(s, &first))
			return 1;
	}
	if (!kept_made(s, kc->recv_cached, &before, 1, "receiving into one buffer"))
		return 1;
	if (kc->recv_cached && !regs_posted(s, &first, 0, false, "receiving into one buffer again"))
		return 1;
	munmap(buf, KEPT_LEN);
	return kept_released(s, &before) ? 0 : 1;
}

/* Registrations kept, a receive's too but on an iWARP device. */
static struct kept_case kept_case_cached(void)
{
	return (struct kept_case) {
		.cached = true,
		.recv_cached = strcmp(zcx_net_rdma_type(), "siw") != 0,
	};
}

TEST_F_TIMEOUT(net, registrations_kept_until_their_region_goes, 300)
{
	struct kept_case kc = kept_case_cached();

	ASSERT_EQ(1, backend_reg_cache());
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, kept_send, kept_recv, &kc));
}

TEST_F_TIMEOUT(net, reg_cache_0_keeps_no_registration, 300)
{
	struct kept_case kc = { .cached = false };

	ASSERT_EQ(0, zcx_test_write_file(BACKEND_PARAM("reg_cache"), "0"));
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, kept_send, kept_recv, &kc));
	ASSERT_EQ(0, zcx_test_write_file(BACKEND_PARAM("reg_cache"), "1"));
}

/*
 * The pages of an exposed range that puts and gets from another node reach
 * are registered on the target's node once each way (a put's READs fill
 * them, a get's WRITEs read them), and the registrations kept for the
 * later ones: the target's context counts them, and asks its device for no
 * registration after the first put and get (on an iWARP device a put's
 * pages are registered for the peer to write, for every put, so only the
 * get's are kept).  Unmapping the range lets go of them and of its pages,
 * and memory mapped at the same address in its place (pinned for each
 * transfer then, not kept) gives a get its own bytes and takes a put.
 */
#define RMA_KEPT_LEN	((size_t)1 << 20)
#define RMA_KEPT_BYTES	(RMA_KEPT_LEN - 5)	/* from byte 3: whole pages are kept */
#define RMA_KEPT_ROUNDS	5
#define RMA_KEPT_DONE	0x524b4430ULL	/* "RKD0" */
#define RMA_KEPT_MAPPED	0x524b4431ULL	/* "RKD1" */
#define RMA_KEPT_FIRST	0x524b4432ULL	/* "RKD2": the first put and get are done */

struct rma_kept_range {
	uint64_t addr, rkey;
};

static int rma_kept_initiator(struct xside *s, void *arg)
{
	unsigned char *buf = zcx_test_anon(RMA_KEPT_LEN);
	struct rma_kept_range r;
	int i;

	(void)arg;
	CK(buf);
	CK_EQ(0, xread(s->rd, &r, sizeof(r)));
	for (i = 0; i < RMA_KEPT_ROUNDS; i++) {
		xpat_fill(buf, RMA_KEPT_BYTES, 800 + i);
		CK_EQ(0, zcx_put(s->ep, s->peer, buf, RMA_KEPT_BYTES, r.addr + 3, r.rkey));
		memset(buf, 0, RMA_KEPT_LEN);
		CK_EQ(0, zcx_get(s->ep, s->peer, buf, RMA_KEPT_BYTES, r.addr + 3, r.rkey));
		CK_PAT(buf, RMA_KEPT_BYTES, 800 + i);
		if (i == 0)
			CK_EQ(0, xside_meet(s, RMA_KEPT_FIRST));
	}
	CK_EQ(0, xsend_u64(s, RMA_KEPT_DONE));
	CK_EQ(0, xexpect_u64(s, RMA_KEPT_MAPPED));
	memset(buf, 0, RMA_KEPT_LEN);
	CK_EQ(0, zcx_get(s->ep, s->peer, buf, RMA_KEPT_BYTES, r.addr + 3, r.rkey));
	CK_PAT(buf, RMA_KEPT_BYTES, 900);
	xpat_fill(buf, RMA_KEPT_BYTES, 901);
	CK_EQ(0, zcx_put(s->ep, s->peer, buf, RMA_KEPT_BYTES, r.addr + 3, r.rkey));
	CK_EQ(0, xsend_u64(s, RMA_KEPT_DONE));
	munmap(buf, RMA_KEPT_LEN);
	return 0;
}

static int rma_kept_target(struct xside *s, void *arg)
{
	const struct kept_case *kc = arg;
	unsigned char *map = zcx_test_anon(RMA_KEPT_LEN);
	struct zcx_counters before, first;
	struct rma_kept_range r;
	uint64_t made = kc->recv_cached ? 2 : 1;

	CK(map);
	CK_EQ(0, kept_stats(s, &before));
	r.addr = (uintptr_t)map;
	CK_EQ(0, zcx_expose(s->zcx, map, RMA_KEPT_LEN, ZCX_REMOTE_ALL, &r.rkey));
	CK_EQ(0, xwrite(s->wr, &r, sizeof(r)));
	/* Counted before the initiator goes on. */
	CK_EQ(0, xexpect_u64(s, RMA_KEPT_FIRST));
	CK_EQ(0, kept_stats(s, &first));
	CK_EQ(0, xsend_u64(s, RMA_KEPT_FIRST));
	CK_EQ(0, xexpect_u64(s, RMA_KEPT_DONE));
	CK_PAT(map + 3, RMA_KEPT_BYTES, 800 + RMA_KEPT_ROUNDS - 1);
	/*
	 * None after the first (which made none if a READ or WRITE reached
	 * the pages with the local key: contiguous memory), but for each
	 * put on iWARP, where the peer writes.
	 */
	CK(regs_posted(s, &first, kc->recv_cached ? 0 : RMA_KEPT_ROUNDS - 1, !kc->recv_cached,
		       "serving puts and gets again"));
	/* Whole pages kept, only the bytes put written. */
	CK(!map[0] && !map[2] && !map[RMA_KEPT_LEN - 2] && !map[RMA_KEPT_LEN - 1]);
	CK(kept_made(s, kc->cached, &before, made, "serving puts and gets"));
	munmap(map, RMA_KEPT_LEN);
	CK(kept_released(s, &before));
	CK(mmap(map, RMA_KEPT_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		-1, 0) == map);
	xpat_fill(map + 3, RMA_KEPT_BYTES, 900);
	CK_EQ(0, xsend_u64(s, RMA_KEPT_MAPPED));
	CK_EQ(0, xexpect_u64(s, RMA_KEPT_DONE));
	CK_PAT(map + 3, RMA_KEPT_BYTES, 901);
	CK(kept_made(s, kc->cached, &before, made, "serving the range mapped again"));
	CK_EQ(0, zcx_unexpose(s->zcx, r.rkey));
	munmap(map, RMA_KEPT_LEN);
	return 0;
}

TEST_F_TIMEOUT(net, exposed_range_registrations_kept_until_it_goes, 300)
{
	struct kept_case kc = kept_case_cached();

	ASSERT_EQ(1, backend_reg_cache());
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, rma_kept_initiator, rma_kept_target, &kc));
}

/*
 * Kept registrations give way to RLIMIT_MEMLOCK: with 8 MiB, an
 * unprivileged sender sends from one 5 MiB buffer, then from another,
 * KEPT_ML_ROUNDS times in turn.  Each buffer's registration holds its
 * pages pinned after its message; pinning the other evicts it from the
 * region cache, and the pin waits for the connection to let go of it.
 */
#define KEPT_ML_LIMIT	((size_t)8 << 20)
#define KEPT_ML_LEN	((size_t)5 << 20)
#define KEPT_ML_ROUNDS	4

static int kept_ml_send(struct xside *s, void *arg)
{
	struct rlimit lim = { .rlim_cur = KEPT_ML_LIMIT, .rlim_max = KEPT_ML_LIMIT };
	unsigned char *buf[2] = { zcx_test_anon(KEPT_ML_LEN), zcx_test_anon(KEPT_ML_LEN) };
	int i, ret;

	(void)arg;
	CK(buf[0] && buf[1]);
	CK_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));
	CK_EQ(0, zcx_test_drop_to_nobody());
	for (i = 0; i < 2 * KEPT_ML_ROUNDS; i++) {
		xpat_fill(buf[i % 2], KEPT_ML_LEN, 900 + i);
		ret = zcx_send(s->ep, s->peer, buf[i % 2], KEPT_ML_LEN, (uint64_t)i);
		if (ret) {
			fprintf(stderr, "# send %d: %s\n", i, zcx_strerror(ret));
			return 1;
		}
	}
	munmap(buf[0], KEPT_ML_LEN);
	munmap(buf[1], KEPT_ML_LEN);
	return 0;
}

static int kept_ml_recv(struct xside *s, void *arg)
{
	unsigned char *buf = zcx_test_anon(KEPT_ML_LEN);
	int i;

	(void)arg;
	CK(buf);
	for (i = 0; i < 2 * KEPT_ML_ROUNDS; i++) {
		CK_EQ(KEPT_ML_LEN, zcx_recv(s->ep, buf, KEPT_ML_LEN, (uint64_t)i, UINT64_MAX, NULL));
		CK_PAT(buf, KEPT_ML_LEN, 900 + i);
	}
	munmap(buf, KEPT_ML_LEN);
	return 0;
}

TEST_F_TIMEOUT(net, kept_registrations_give_way_to_memlock, 300)
{
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, kept_ml_send, kept_ml_recv, NULL));
}

/*
 * keepalive_ms written at run time reaches the connections that are up:
 * connected with it at 0 (a message each way makes sure that both pairs
 * of connections are up), the idle connections send nothing; set to
 * 50 ms, they start checking their peers, with zero-byte WRITEs and
 * their acknowledgements.
 */
#define KEEPALIVE_MS	BACKEND_PARAM("keepalive_ms")
#define KEEPALIVE_PKTS	20

static int net_keepalive_start(struct xside *s, void *arg)
{
	long long before, now;
	unsigned int ms;
	uint64_t v = 1;

	(void)arg;
	if (zcx_send(s->ep, s->peer, &v, sizeof(v), 1) ||
	    zcx_recv(s->ep, &v, sizeof(v), 2, UINT64_MAX, NULL) != sizeof(v))
		return 1;
	before = rxe_sent_packets();
	now = before;
	if (before < 0 || zcx_test_write_file(KEEPALIVE_MS, "50"))
		return 1;
	for (ms = 0; ms < 20000 * zcx_test_slowdown() && now < before + KEEPALIVE_PKTS; ms += 10) {
		usleep(10000);
		now = rxe_sent_packets();
	}
	if (now < before + KEEPALIVE_PKTS)
		fprintf(stderr, "# %lld packets when keepalive_ms was set, %lld %u ms later\n",
			before, now, ms);
	return xsend_u64(s, 1) || now < before + KEEPALIVE_PKTS;
}

static int net_keepalive_echo(struct xside *s, void *arg)
{
	uint64_t v;

	(void)arg;
	if (zcx_recv(s->ep, &v, sizeof(v), 1, UINT64_MAX, NULL) != sizeof(v) ||
	    zcx_send(s->ep, s->peer, &v, sizeof(v), 2))
		return 1;
	return xexpect_u64(s, 1) ? 1 : 0;
}

TEST_F_TIMEOUT(net, keepalive_ms_reaches_live_connections, 300)
{
	if (rxe_sent_packets() < 0)
		SKIP(return, NO_PACKET_COUNT);
	EXPECT_EQ(BACKEND_KEEPALIVE_MS, zcx_test_read_number(KEEPALIVE_MS));
	ASSERT_EQ(0, zcx_test_write_file(KEEPALIVE_MS, "0"));
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_keepalive_start, net_keepalive_echo, NULL));
	EXPECT_EQ(50, zcx_test_read_number(KEEPALIVE_MS));
}

/*
 * keepalive_ms set to 0 cancels the checks already armed: connected with
 * it at 0, the connections are given ARMED ms (from the write, none can
 * fire sooner), then 0 at once.  From SETTLE ms after (the acknowledgement
 * of the last message may still be on its way: it has no completion to
 * wait for; both scaled on a slow guest) to past the ARMED ms, they send
 * nothing.
 */
#define KEEPALIVE_ARMED_MS	2000
#define KEEPALIVE_SETTLE_MS	500

static int net_keepalive_cancel(struct xside *s, void *arg)
{
	unsigned int armed_ms = KEEPALIVE_ARMED_MS * zcx_test_slowdown();
	unsigned int settle_ms = KEEPALIVE_SETTLE_MS * zcx_test_slowdown();
	long long before, now;
	char armed[16];
	uint64_t v = 1;

	(void)arg;
	snprintf(armed, sizeof(armed), "%u", armed_ms);
	if (zcx_send(s->ep, s->peer, &v, sizeof(v), 1) ||
	    zcx_recv(s->ep, &v, sizeof(v), 2, UINT64_MAX, NULL) != sizeof(v))
		return 1;
	if (zcx_test_write_file(KEEPALIVE_MS, armed) || zcx_test_write_file(KEEPALIVE_MS, "0"))
		return 1;
	usleep(settle_ms * 1000);
	before = rxe_sent_packets();
	/* The window in which an armed check would have sent: nothing may. */
	usleep((armed_ms + 1000 - settle_ms) * 1000);
	now = rxe_sent_packets();
	if (before < 0 || now != before)
		fprintf(stderr, "# %lld packets %u ms after keepalive_ms went 0, %lld %u ms later\n",
			before, settle_ms, now, armed_ms + 1000 - settle_ms);
	return xsend_u64(s, 1) || before < 0 || now != before;
}

TEST_F_TIMEOUT(net, keepalive_ms_0_cancels_armed_checks, 300)
{
	if (rxe_sent_packets() < 0)
		SKIP(return, NO_PACKET_COUNT);
	ASSERT_EQ(0, zcx_test_write_file(KEEPALIVE_MS, "0"));
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_keepalive_cancel, net_keepalive_echo, NULL));
	EXPECT_EQ(0, zcx_test_read_number(KEEPALIVE_MS));
}

/* A receive posted before the message comes: the message goes straight in. */
static int net_send_after_go(struct xside *s, void *arg)
{
	unsigned char buf[100];

	(void)arg;
	if (xexpect_u64(s, 1))
		return 1;
	xpat_fill(buf, sizeof(buf), 7);
	return zcx_send(s->ep, s->peer, buf, sizeof(buf), 42) ? 1 : 0;
}

static int net_post_then_go(struct xside *s, void *arg)
{
	struct zcx_req req = xreq(NULL);
	unsigned char buf[100];

	(void)arg;
	if (zcx_irecv(s->ep, buf, sizeof(buf), 42, UINT64_MAX, &req) || zcx_ep_flush(s->ep) ||
	    xsend_u64(s, 1))
		return 1;
	if (xwait_bounded(s->ep, &req, 60000) || req.len != sizeof(buf) || req.tag != 42 ||
	    xpat_check(buf, sizeof(buf), 7) >= 0)
		return 1;
	return 0;
}

TEST_F_TIMEOUT(net, posted_receive_takes_the_message, 300)
{
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_send_after_go, net_post_then_go, NULL));
}

/*
 * More messages than the receiver has buffers, before it receives any:
 * the sender waits or sends them as rendezvous messages; none is lost.
 * Short ones and ones up to the inline limit: the receiver copies both
 * out of their buffers, and the sender registers both from its kernel
 * copy once told to send rendezvous messages.
 */
#define FLOOD	(3 * 64 + 5)

static size_t flood_len(int i)
{
	return i % 2 ? 8 : INLINE_MAX - i % 5;
}

static int net_flood(struct xside *s, void *arg)
{
	struct zcx_req *reqs = calloc(FLOOD, sizeof(*reqs));
	unsigned char *out = malloc((size_t)FLOOD * INLINE_MAX);
	int i, ret = 0;

	(void)arg;
	if (!reqs || !out) {
		free(reqs);
		free(out);
		return 1;
	}
	for (i = 0; i < FLOOD; i++) {
		xpat_fill(out + (size_t)i * INLINE_MAX, flood_len(i), 5000 + i);
		if (zcx_isend(s->ep, s->peer, out + (size_t)i * INLINE_MAX, flood_len(i), 9,
			      &reqs[i]))
			ret = 1;
	}
	if (xsend_u64(s, 1))
		ret = 1;
	for (i = 0; i < FLOOD && !ret; i++)
		if (xwait_bounded(s->ep, &reqs[i], 60000))
			ret = 1;
	free(out);
	free(reqs);
	return ret;
}

static int net_drain_in_order(struct xside *s, void *arg)
{
	unsigned char buf[INLINE_MAX];
	ssize_t got;
	int i;

	(void)arg;
	if (xexpect_u64(s, 1))
		return 1;
	for (i = 0; i < FLOOD; i++) {
		got = zcx_recv(s->ep, buf, sizeof(buf), 9, UINT64_MAX, NULL);
		if (got != (ssize_t)flood_len(i) || xpat_check(buf, got, 5000 + i) >= 0) {
			fprintf(stderr, "# message %d: %zd bytes, want %zu, or wrong bytes\n", i,
				got, flood_len(i));
			return 1;
		}
	}
	return 0;
}

TEST_F_TIMEOUT(net, slow_receiver_loses_nothing, 300)
{
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_flood, net_drain_in_order, NULL));
}

#define RX_BUFFERS	BACKEND_PARAM("rx_buffers")

/*
 * The same with the fewest receive buffers a node may give a connection
 * (rx_buffers=8): fewer inline messages at once, none lost.  A load test
 * of the protocol at that depth: zcx_wire_test checks that the node
 * gives that many.  (zcx_net_reusable() reloads zcx_ib if this test left
 * it lowered.)
 */
TEST_F_TIMEOUT(net, slow_receiver_with_the_fewest_buffers_loses_nothing, 300)
{
	ASSERT_EQ(BACKEND_RX_BUFFERS, zcx_test_read_number(RX_BUFFERS));
	ASSERT_EQ(0, zcx_test_write_file(RX_BUFFERS, "8"));
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_flood, net_drain_in_order, NULL));
	EXPECT_EQ(0, zcx_test_write_file(RX_BUFFERS, "32"));
}

/*
 * More rendezvous messages than the receiver copies out of its buffers
 * (ZCX_IB_RTS_COPY_BYTES of them, some 3,600 of a segment each), before
 * it receives any: the rest keep their buffers and then wait at the
 * sender for credits; every one arrives, in order, with its bytes.  The
 * receiver's FINs then outrun what it may have out (ZCX_IB_FIN_MAX)
 * while its buffers are held: the sender's TAKEN must still get through,
 * on the credit other messages leave it.  As many on a slow guest too,
 * or the cap is not reached (4,000 took 31 s on the debug kernel).
 */
#define RTS_MANY	6000	/* the copies of 3,600 reach the cap */
#define RTS_LEN		(INLINE_MAX + 1)	/* over what goes inline */
#define RTS_SPAN	4000	/* message i starts at byte i * 13 % RTS_SPAN */

static size_t rts_start(int i)
{
	return (size_t)i * 13 % RTS_SPAN;
}

/* What the receiver says once it is ready for the flood. */
#define RTS_READY	0x52545352ULL	/* "RTSR" */
/* The tag of a short message sent after the flood. */
#define RTS_MARKER	10

/*
 * Sender: once the receiver is ready, *@arg rendezvous messages of
 * RTS_LEN bytes (tag 9), then a one-byte marker; all wait until taken.
 */
static int net_rts_flood(struct xside *s, void *arg)
{
	int i, n = *(const int *)arg, ret = 0, err;
	struct zcx_req *reqs = calloc(n + 1, sizeof(*reqs));
	unsigned char *buf = malloc(RTS_SPAN + RTS_LEN);

	if (!reqs || !buf || xexpect_u64(s, RTS_READY)) {
		ret = 1;
		goto out;
	}
	xpat_fill(buf, RTS_SPAN + RTS_LEN, 77);
	for (i = 0; i < n && !ret; i++)
		if (zcx_isend(s->ep, s->peer, buf + rts_start(i), RTS_LEN, 9, &reqs[i]))
			ret = 1;
	if (ret || zcx_isend(s->ep, s->peer, buf, 1, RTS_MARKER, &reqs[n]) ||
	    zcx_ep_flush(s->ep) || xsend_u64(s, 1))
		ret = 1;
	for (i = 0; i <= n && !ret; i++) {
		err = xwait_bounded(s->ep, &reqs[i], 120000);
		if (err) {
			fprintf(stderr, "# send %d: %s\n", i, zcx_strerror(err));
			ret = 1;
		}
	}
out:
	free(reqs);
	free(buf);
	return ret;
}

/* Receive the @n messages of net_rts_flood() in order, every byte checked: 0 or 1. */
static int rts_drain(struct xside *s, int n)
{
	unsigned char buf[RTS_LEN];
	long long bad;
	ssize_t got;
	int i;

	for (i = 0; i < n; i++) {
		got = zcx_recv(s->ep, buf, sizeof(buf), 9, UINT64_MAX, NULL);
		bad = got == RTS_LEN ? xpat_check_at(buf, RTS_LEN, 77, rts_start(i)) : 0;
		if (bad >= 0) {
			fprintf(stderr, "# message %d: %zd bytes, first wrong %lld\n", i, got, bad);
			return 1;
		}
	}
	return 0;
}

/* The marker that follows them, within 2 minutes: 0 or 1. */
static int rts_marker(struct xside *s)
{
	struct zcx_req req = { 0 };
	unsigned char byte = 0;
	int ret = zcx_irecv(s->ep, &byte, 1, RTS_MARKER, UINT64_MAX, &req);

	if (!ret)
		ret = xwait_bounded(s->ep, &req, 120000);
	if (!ret && req.len == 1 && xpat_check(&byte, 1, 77) < 0)
		return 0;
	fprintf(stderr, "# the marker: %s, %llu bytes\n", zcx_strerror(ret),
		(unsigned long long)req.len);
	return 1;
}

/* Receiver: the whole flood of *@arg messages sent before it takes any. */
static int net_rts_drain(struct xside *s, void *arg)
{
	if (xsend_u64(s, RTS_READY) || xexpect_u64(s, 1))
		return 1;
	return rts_drain(s, *(const int *)arg) || rts_marker(s);
}

TEST_F_TIMEOUT(net, unreceived_rendezvous_messages_lose_nothing, 600)
{
	int n = RTS_MANY;

	/* Rings deep enough for every send to be in flight at once. */
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 2 * (n + 1), net_rts_flood, net_rts_drain, &n));
}

/*
 * What a node allocates for messages its receiver has not taken yet (the
 * descriptors, the copies of rendezvous requests) is charged to the
 * receiver's memory cgroup, as a socket's buffers are, not to no one; and
 * it is given back as the messages are received.  The receiver joins a
 * cgroup of its own before it creates its endpoint; the sender stays out.
 */
#define CHARGED_MANY	3000	/* under the cap: every request is copied */
/*
 * Bytes charged per message held, at least: its descriptor in zcx.ko (a
 * struct zcx_op, 128 bytes of slab) and zcx_ib's copy of its request (a
 * struct zcx_ib_rx, 96, its 16-byte header, 16, and the 56-byte rest,
 * 64), 304 in all.
 */
#define CHARGED_MIN	256

/* A cgroup v2 hierarchy mounted for the test, and the receiver's cgroup in it. */
struct memcg_dir {
	char mnt[64];
	char dir[128];
	char control[96];	/* the root's cgroup.subtree_control ... */
	bool enabled;		/* ... to which we added the memory controller */
};

static int memcg_dir_remove(struct memcg_dir *m)
{
	int ret = rmdir(m->dir) && errno != ENOENT ? -errno : 0;

	if (m->enabled)
		zcx_test_write_file(m->control, "-memory");
	umount2(m->mnt, MNT_DETACH);
	rmdir(m->mnt);
	return ret;
}

/* Whether the file @path holds the word @word. */
static bool file_has_word(const char *path, const char *word)
{
	char seen[64];
	bool found = false;
	FILE *f = fopen(path, "r");

	while (f && !found && fscanf(f, "%63s", seen) == 1)
		found = !strcmp(seen, word);
	if (f)
		fclose(f);
	return found;
}

/* Mount cgroup2 and make a child with the memory controller: 0 or -errno. */
static int memcg_dir_make(struct memcg_dir *m)
{
	int ret;

	memset(m, 0, sizeof(*m));
	snprintf(m->mnt, sizeof(m->mnt), "/tmp/zcx-cgroup-XXXXXX");
	if (!mkdtemp(m->mnt))
		return -errno;
	snprintf(m->dir, sizeof(m->dir), "%s/zcx-receiver-%d", m->mnt, (int)getpid());
	snprintf(m->control, sizeof(m->control), "%s/cgroup.subtree_control", m->mnt);
	if (mount("cgroup2", m->mnt, "cgroup2", 0, NULL)) {
		ret = -errno;
		rmdir(m->mnt);
		return ret;
	}
	ret = 0;
	if (!file_has_word(m->control, "memory")) {
		ret = zcx_test_write_file(m->control, "+memory");
		m->enabled = !ret;
	}
	if (!ret && mkdir(m->dir, 0755))
		ret = -errno;
	if (ret)
		memcg_dir_remove(m);
	return ret;
}

/* The slab memory charged to the cgroup @dir, in bytes; -1 if unknown. */
static long long memcg_slab(const char *dir)
{
	long long value, found = -1;
	char path[160], name[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (found < 0 && fscanf(f, "%63s %lld", name, &value) == 2)
		if (!strcmp(name, "slab_unreclaimable"))
			found = value;
	fclose(f);
	return found;
}

/*
 * memcg_slab() once it is in [@min, @max], or the last value read after
 * 10 s: 6.12 refreshes memory.stat when read only after enough changes,
 * and otherwise every 2 s.
 */
static long long memcg_slab_within(const char *dir, long long min, long long max)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	long long value;
	int i;

	for (i = 0; i < 500; i++) {
		value = memcg_slab(dir);
		if (value < 0 || (value >= min && value <= max))
			break;
		nanosleep(&tick, NULL);
	}
	return value;
}

/* Receiver, in xchild_cgroup: what the flood costs it, then what is left. */
static int net_charged_drain(struct xside *s, void *arg)
{
	int n = *(const int *)arg;
	long long before, held, after;

	before = memcg_slab(xchild_cgroup);
	if (before < 0 || xsend_u64(s, RTS_READY) || xexpect_u64(s, 1))
		return 1;
	/* In order after every request: once it is here, they all are. */
	if (rts_marker(s))
		return 1;
	held = memcg_slab_within(xchild_cgroup, before + (long long)n * CHARGED_MIN, LLONG_MAX);
	if (rts_drain(s, n))
		return 1;
	after = memcg_slab_within(xchild_cgroup, 0, before + (held - before) / 2);
	fprintf(stderr, "# receiver's slab: %lld bytes, %lld with %d messages unreceived, %lld once received\n",
		before, held, n, after);
	if (held - before < (long long)n * CHARGED_MIN) {
		fprintf(stderr, "# the unreceived messages were not charged to the receiver\n");
		return 1;
	}
	if (after - before > (held - before) / 2) {
		fprintf(stderr, "# received messages are still charged\n");
		return 1;
	}
	return 0;
}

TEST_F_TIMEOUT(net, unreceived_messages_are_charged_to_the_receiver, 300)
{
	struct memcg_dir m;
	int n = CHARGED_MANY, ret;

	ret = memcg_dir_make(&m);
	/* No cgroup2, no memory controller, or it is cgroup v1's. */
	if (ret == -ENODEV || ret == -ENOENT || ret == -EBUSY)
		SKIP(return, "no memory cgroup for the receiver: %s", strerror(-ret));
	ASSERT_EQ(0, ret) TH_LOG("making a memory cgroup: %s", strerror(-ret));
	xchild_cgroup = m.dir;
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 2 * (n + 1), net_rts_flood, net_charged_drain, &n));
	EXPECT_EQ(0, memcg_dir_remove(&m));
}

TEST_F_TIMEOUT(net, refused_and_rejected, 300)
{
	unsigned char big[8] = { 0 };
	struct zcx_addr addr, bad, forged;
	struct zcx_ep *ep, *to, *ep2;
	struct zcx *zcx;
	uint32_t peer;

	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &ep));
	/* Without ZCX_EP_NET: a local address, and no way in by the network. */
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &to));
	zcx_ep_addr(to, &addr);
	EXPECT_EQ(ZCX_NODE_LOCAL, addr.node);
	EXPECT_EQ(-EINVAL, zcx_ep_connect_flags(ep, &addr, ZCX_CONNECT_NET, &peer));
	zcx_ep_destroy(to);
	ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_NET, 0, &to));
	zcx_ep_addr(to, &addr);
	/* An address forged to look remote, of an endpoint that is not ZCX_EP_NET. */
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &ep2));
	zcx_ep_addr(ep2, &forged);
	forged.node = ZCX_NODE_INET;
	memcpy(&forged.node_id, &addr.node_id, sizeof(addr) - offsetof(struct zcx_addr, node_id));
	EXPECT_EQ(-ECONNREFUSED, zcx_ep_connect_flags(ep, &forged, ZCX_CONNECT_NET, &peer));
	zcx_ep_destroy(ep2);

	bad = addr;
	bad.key ^= 1;
	EXPECT_EQ(-ECONNREFUSED, zcx_ep_connect_flags(ep, &bad, ZCX_CONNECT_NET, &peer));
	bad = addr;
	bad.id ^= 0x8000;
	EXPECT_EQ(-ECONNREFUSED, zcx_ep_connect_flags(ep, &bad, ZCX_CONNECT_NET, &peer));
	bad = addr;
	bad.port = htons(NET_PORT + 1);
	EXPECT_EQ(-ECONNREFUSED, zcx_ep_connect_flags(ep, &bad, ZCX_CONNECT_NET, &peer));
	bad = addr;
	bad.family = 7;
	EXPECT_EQ(-EINVAL, zcx_ep_connect_flags(ep, &bad, ZCX_CONNECT_NET, &peer));

	/* Put/get with a key the target's node does not know. */
	ASSERT_EQ(0, zcx_ep_connect_flags(ep, &addr, ZCX_CONNECT_NET, &peer));
	EXPECT_EQ(-EACCES, zcx_put(ep, peer, big, 8, 0, 1));
	EXPECT_EQ(-EACCES, zcx_get(ep, peer, big, 8, 0, 1));
	zcx_ep_destroy(to);
	zcx_ep_destroy(ep);
	zcx_close(zcx);
}

#define MAX_ACCEPTED	BACKEND_PARAM("max_accepted")

/*
 * max_accepted bounds the connections the node accepts at once.  None is
 * up when a test starts (zcx_net_up() waited until nothing held zcx_ib):
 * with it at 2, two endpoints let a connection in, however many requests
 * with a wrong key came just before, and a third is refused; with it
 * back, the third is let in.  (zcx_net_reusable() reloads zcx_ib if this
 * test left it lowered.)
 */
TEST_F_TIMEOUT(net, max_accepted_bounds_the_connections_accepted, 300)
{
	long long saved = zcx_test_read_number(MAX_ACCEPTED);
	struct zcx_ep *ep, *to[3];
	struct zcx_addr a[3], bad;
	uint32_t peer[3], p;
	struct zcx *zcx;
	char limit[24];
	int i;

	ASSERT_EQ(BACKEND_MAX_ACCEPTED, saved);
	ASSERT_EQ(0, zcx_open(&zcx, 0));
	ASSERT_EQ(0, zcx_ep_create(zcx, 0, 0, &ep));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, zcx_ep_create(zcx, ZCX_EP_NET, 0, &to[i]));
		zcx_ep_addr(to[i], &a[i]);
	}
	EXPECT_EQ(0, zcx_test_write_file(MAX_ACCEPTED, "2"));
	bad = a[0];
	bad.key ^= 1;
	for (i = 0; i < 4; i++)
		EXPECT_EQ(-ECONNREFUSED, zcx_ep_connect_flags(ep, &bad, ZCX_CONNECT_NET, &p));
	EXPECT_EQ(0, zcx_ep_connect_flags(ep, &a[0], ZCX_CONNECT_NET, &peer[0]));
	EXPECT_EQ(0, zcx_ep_connect_flags(ep, &a[1], ZCX_CONNECT_NET, &peer[1]));
	EXPECT_EQ(-ECONNREFUSED, zcx_ep_connect_flags(ep, &a[2], ZCX_CONNECT_NET, &peer[2]));
	snprintf(limit, sizeof(limit), "%lld", saved);
	EXPECT_EQ(0, zcx_test_write_file(MAX_ACCEPTED, limit));
	EXPECT_EQ(0, zcx_ep_connect_flags(ep, &a[2], ZCX_CONNECT_NET, &peer[2]));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, net_pass(ep, peer[i], to[i], 1, 5 + i));
	for (i = 0; i < 3; i++)
		zcx_ep_destroy(to[i]);
	zcx_ep_destroy(ep);
	zcx_close(zcx);
}

/* The receiver goes: the sender's connection fails, nothing hangs. */
static int net_send_until_error(struct xside *s, void *arg)
{
	uint64_t v = 1;
	int i, ret;

	(void)arg;
	/* Both connected: the child may go (not before we reached it). */
	if (xsend_u64(s, 1) || xexpect_u64(s, 1))
		return 1;
	/* The child exits now; sends fail once the teardown reached us. */
	for (i = 0; i < 100000; i++) {
		ret = zcx_send(s->ep, s->peer, &v, sizeof(v), 1);
		if (ret)
			return ret == -ECONNRESET ? 0 : 1;
	}
	fprintf(stderr, "# sends kept working after the receiver exited\n");
	return 1;
}

/* Exits at once, without meeting the parent at the end (xrun_pair()): the test. */
static int net_leave(struct xside *s, void *arg)
{
	(void)arg;
	if (xexpect_u64(s, 1) || xsend_u64(s, 1))
		return 1;
	_exit(0);
}

TEST_F_TIMEOUT(net, receiver_exit_fails_the_sender, 300)
{
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_send_until_error, net_leave, NULL));
}


/* The device goes while connected: sends fail, nothing hangs or leaks. */
static int net_send_after_removal(struct xside *s, void *arg)
{
	uint64_t v = 1;
	int ret;

	(void)arg;
	if (zcx_send(s->ep, s->peer, &v, sizeof(v), 1))
		return 1;
	/* Returns once zcx_ib let go of everything on it. */
	if (run("rdma link delete " RXE))
		return 1;
	ret = zcx_send(s->ep, s->peer, &v, sizeof(v), 1);
	if (xsend_u64(s, 1))
		return 1;
	return ret == -ECONNRESET ? 0 : 1;
}

static int net_wait_for_removal(struct xside *s, void *arg)
{
	uint64_t v;

	(void)arg;
	if (zcx_recv(s->ep, &v, sizeof(v), 1, UINT64_MAX, NULL) != sizeof(v))
		return 1;
	return xexpect_u64(s, 1) ? 1 : 0;
}

TEST_F_TIMEOUT(net, device_removal_fails_the_connection, 300)
{
	EXPECT_EQ(0, xrun_pair(ZCX_EP_NET, 0, net_send_after_removal, net_wait_for_removal, NULL));
	EXPECT_FALSE(rdma_device_exists(RXE));
}

ZCX_NET_HARNESS_MAIN
