// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_wire_test - a peer on the network that does not keep to zcx_ib's
 * protocol.  Anyone who learns an endpoint's address can connect to its
 * node's listener and then post whatever it likes on the queue pair, so
 * this test does that, speaking the wire by hand over a queue pair of its
 * own (librdmacm, libibverbs) to an endpoint of this process on the
 * tests' network (zcx_net.h).
 *
 * First it shows that it speaks the protocol: inline and rendezvous
 * messages (read from its memory, into a shorter receive, of no bytes),
 * PUTs and a GET land where they should, and their FINs come back; the
 * node accepts with a welcome telling its receive buffers (rx_buffers).
 * Then
 * what it must not get: a hello that is short, of another version, with
 * a wrong key or endpoint, or a transport the node cannot use (no READ
 * at a time, retries for ever) is rejected; a connection refused though
 * its key was right fails no receive; a PUT or GET outside an exposed
 * range, with a wrong key or without the right, is answered with an
 * error and changes nothing; a message that is not the protocol (too
 * short or too long, a length that is not the message's, an unknown
 * type, a flag, an answer sent the wrong way, an RTS, PUT or GET whose
 * segments do not add up, a SEND that invalidates, a WRITE) costs the
 * peer its connection and nothing else: the endpoint receives none of
 * it and goes on receiving from its other peers.  An RTS whose segments
 * cannot be read fails the receive it matched, and a sender that
 * ignores its credits (Soft-RoCE only: iWARP has no retry for a
 * receiver without a buffer) holds up only its own connection and loses
 * nothing.  Last it plays a node (a listener of its own) that an
 * endpoint connects to: a node that speaks the protocol gets the hello,
 * inline messages, and RTSs whose sends wait for its FIN and take its
 * status; one that welcomes with few buffers gets no more messages at
 * once; one whose welcome is missing, of another version, or out of
 * bounds is refused; a node that answers what was never asked (a FIN for another
 * send, of a status that is no errno of user space's, of the wrong size;
 * credits it never had, none, or with a flag; an EAGER the wrong way; a
 * WRITE with immediate data, which takes a reply's buffer but is none)
 * loses the connection, and the send or GET waiting on it fails.  Each
 * test's teardown checks that no connection is left holding zcx_ib.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "zcx_net.h"
#include "zcx_test.h"
#include "zcx_xfer.h"

/*
 * zcx_ib's wire (kmod/ib/zcx_ib.h), written out again: a change there
 * that this test was not told of fails it.  Little-endian on the wire.
 */
#define WIRE_MAGIC	0x7a637831
#define WIRE_VERSION	10
#define WIRE_INLINE	8192
/* A welcome's credits: the passive side's receive buffers, 8 to 32. */
#define WIRE_RX_MIN	8
#define WIRE_RX_MAX	32
#define WIRE_EAGER_OFF	0x1	/* a CREDIT's flag */

enum wire_type { W_EAGER, W_RTS, W_FIN, W_CREDIT, W_PUT, W_GET, W_TAKEN };

struct wire_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved;
	uint64_t ep_id;
	uint64_t key;
};

/* What accepting a connection answers. */
struct wire_welcome {
	uint32_t magic;
	uint16_t version;
	uint16_t credits;
};

struct wire_hdr {
	uint64_t tag;
	uint32_t len;
	uint8_t type;
	uint8_t flags;
	uint16_t credits;
};

struct wire_seg {
	uint64_t addr;
	uint32_t len;
	uint32_t rkey;
};

struct wire_rts {
	uint64_t len;
	uint64_t cookie;
	uint64_t raddr;
	uint64_t rkey;
	uint32_t nseg;
	uint32_t reserved;
	struct wire_seg segs[];
};

struct wire_fin {
	uint64_t cookie;
	uint32_t status;
	uint32_t reserved;
};

/*
 * The raw peer's memory, one registration: receive slots (for the
 * node's replies, or, playing a node, zcx's messages), then send slots
 * (a message each, so that many may be in flight), then the data its
 * RTS and GET messages name.
 */
#define RAW_RECVS	64
#define RAW_RECV_SIZE	16384
#define RAW_SENDS	256
#define RAW_SEND_SIZE	16384	/* more than a message may be */
#define RAW_DATA_SIZE	(64 << 10)
#define RAW_SEND_OFF	(RAW_RECVS * RAW_RECV_SIZE)
#define RAW_DATA_OFF	(RAW_SEND_OFF + RAW_SENDS * RAW_SEND_SIZE)
#define RAW_MEM_SIZE	(RAW_DATA_OFF + RAW_DATA_SIZE)
#define RAW_WAIT_MS	60000	/* for anything the node does (a slow guest) */

struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *mem;
	bool connected;
	unsigned int next_send;	/* send slot */
	unsigned int sends_done;	/* READs included ... */
	unsigned int reads_done;	/* ... which are also counted here */
	unsigned int credits_back;
	unsigned int fins;
	struct wire_fin fin;	/* the last FIN */
	unsigned int msgs;	/* messages received ... */
	uint32_t got_len;	/* ... the last one's length ... */
	unsigned char got[RAW_RECV_SIZE];	/* ... and bytes */
	bool shared_ch;		/* @ch is a listener's */
	struct wire_welcome welcome;	/* connecting: what the node accepted with */
};

/* The next CM event within @ms: its type, or -1. */
static int raw_event(struct raw *r, int ms)
{
	struct pollfd pfd = { .fd = r->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int type;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(r->ch, &ev))
		return -1;
	type = ev->event;
	if (type == RDMA_CM_EVENT_ESTABLISHED &&
	    ev->param.conn.private_data_len >= sizeof(r->welcome))
		memcpy(&r->welcome, ev->param.conn.private_data, sizeof(r->welcome));
	rdma_ack_cm_event(ev);
	return type;
}

static void *raw_slot(struct raw *r, unsigned int slot)
{
	return r->mem + RAW_SEND_OFF + (size_t)slot * RAW_SEND_SIZE;
}

static int raw_post_recv(struct raw *r, unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->mem + slot * RAW_RECV_SIZE),
		.length = RAW_RECV_SIZE,
		.lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

/*
 * Take the completions there are: a reply is kept (FIN) or counted
 * (CREDIT) and its slot posted again.  0, or -1 on a completion in error
 * (the connection broke).
 */
static int raw_poll(struct raw *r)
{
	struct ibv_wc wc[16];
	struct wire_hdr hdr;
	int n, i, ret = 0;

	while ((n = ibv_poll_cq(r->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				ret = -1;
				continue;
			}
			if (wc[i].opcode != IBV_WC_RECV) {
				r->sends_done++;
				r->reads_done += wc[i].opcode == IBV_WC_RDMA_READ;
				continue;
			}
			r->got_len = wc[i].byte_len;
			memcpy(r->got, r->mem + wc[i].wr_id * RAW_RECV_SIZE, r->got_len);
			r->msgs++;
			memcpy(&hdr, r->got, sizeof(hdr));
			if (r->got_len >= sizeof(hdr) + sizeof(r->fin) && hdr.type == W_FIN) {
				memcpy(&r->fin, r->got + sizeof(hdr), sizeof(r->fin));
				r->fins++;
			} else if (hdr.type == W_CREDIT) {
				r->credits_back += le16toh(hdr.credits);
			}
			if (raw_post_recv(r, wc[i].wr_id))
				ret = -1;
		}
	}
	return n < 0 ? -1 : ret;
}

static void raw_close(struct raw *r)
{
	if (r->connected)
		rdma_disconnect(r->id);
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch && !r->shared_ch)
		rdma_destroy_event_channel(r->ch);
	if (r->mem)
		munmap(r->mem, RAW_MEM_SIZE);
	memset(r, 0, sizeof(*r));
}

/* Memory, registration and queue pair for @r->id, receives posted; 0 or -1. */
static int raw_setup(struct raw *r)
{
	struct ibv_qp_init_attr qpa = {
		.cap = {
			.max_send_wr = RAW_SENDS,
			.max_recv_wr = RAW_RECVS,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	unsigned int i;

	r->mem = mmap(NULL, RAW_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (r->mem == MAP_FAILED) {
		r->mem = NULL;
		return -1;
	}
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 2 * (RAW_SENDS + RAW_RECVS), NULL, NULL, 0)
		      : NULL;
	r->mr = r->cq ? ibv_reg_mr(r->pd, r->mem, RAW_MEM_SIZE, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!r->mr)
		return -1;
	qpa.send_cq = r->cq;
	qpa.recv_cq = r->cq;
	if (rdma_create_qp(r->id, r->pd, &qpa))
		return -1;
	for (i = 0; i < RAW_RECVS; i++)
		if (raw_post_recv(r, i))
			return -1;
	return 0;
}

/* An event channel that does not block, or NULL. */
static struct rdma_event_channel *raw_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (ch && fcntl(ch->fd, F_SETFL, O_NONBLOCK)) {
		rdma_destroy_event_channel(ch);
		ch = NULL;
	}
	return ch;
}

/* Resolve @to's node and set up a queue pair there; 0 or -1. */
static int raw_prepare(struct raw *r, const struct zcx_addr *to)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = to->port };

	memset(r, 0, sizeof(*r));
	memcpy(&sin.sin_addr, to->ip, 4);
	r->ch = raw_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&sin, RAW_WAIT_MS) ||
	    raw_event(r, RAW_WAIT_MS) != RDMA_CM_EVENT_ADDR_RESOLVED ||
	    rdma_resolve_route(r->id, RAW_WAIT_MS) ||
	    raw_event(r, RAW_WAIT_MS) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return -1;
	return raw_setup(r);
}

/* What we ask of the connection, sending the @len bytes of @hello. */
static struct rdma_conn_param raw_param(const void *hello, size_t len)
{
	return (struct rdma_conn_param) {
		.private_data = hello,
		.private_data_len = len,
		/* The node READs from us, and we never read. */
		.responder_resources = 16,
		.initiator_depth = 0,
		.retry_count = 6,
		.rnr_retry_count = 7,
		.flow_control = 1,
	};
}

/*
 * Connect to @to asking @param: the CM event that answers
 * (RDMA_CM_EVENT_ESTABLISHED, _REJECTED, ...), or -1.
 */
static int raw_connect_with(struct raw *r, const struct zcx_addr *to,
			    struct rdma_conn_param *param)
{
	int ev;

	if (raw_prepare(r, to) || rdma_connect(r->id, param))
		return -1;
	ev = raw_event(r, RAW_WAIT_MS);
	r->connected = ev == RDMA_CM_EVENT_ESTABLISHED;
	return ev;
}

static int raw_connect(struct raw *r, const struct zcx_addr *to, const void *hello, size_t len)
{
	struct rdma_conn_param param = raw_param(hello, len);

	return raw_connect_with(r, to, &param);
}

static struct wire_hello hello_for(const struct zcx_addr *to)
{
	return (struct wire_hello) {
		.magic = htole32(WIRE_MAGIC),
		.version = htole16(WIRE_VERSION),
		.ep_id = htole64(to->id),
		.key = htole64(to->key),
	};
}

/* Connected to @to as a zcx peer: 0, or -1. */
static int raw_open(struct raw *r, const struct zcx_addr *to)
{
	struct wire_hello hello = hello_for(to);

	if (raw_connect(r, to, &hello, sizeof(hello)) == RDMA_CM_EVENT_ESTABLISHED)
		return 0;
	raw_close(r);
	return -1;
}

/*
 * Post a message as @op (a SEND, or for the node's eyes only: a SEND
 * invalidating @rkey, a WRITE with immediate data, a WRITE to @rkey):
 * @type, @flags and @credits in its header, @tag, then @len bytes of
 * @body, whatever they say of themselves (@hdr_len: the bytes of the
 * header that go, or all of it if negative).  0 or -1.
 */
static int raw_post_as(struct raw *r, enum ibv_wr_opcode op, uint32_t rkey, uint8_t type,
		       uint8_t flags, uint16_t credits, uint64_t tag, const void *body, size_t len,
		       int hdr_len)
{
	unsigned char *slot = raw_slot(r, r->next_send);
	struct wire_hdr hdr = {
		.tag = htole64(tag),
		.len = htole32(len),
		.type = type,
		.flags = flags,
		.credits = htole16(credits),
	};
	size_t head = hdr_len < 0 ? sizeof(hdr) : (size_t)hdr_len;
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot,
		.length = head + len,
		.lkey = r->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
	}, *bad;

	if (head + len > RAW_SEND_SIZE)
		return -1;
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = rkey;
	else if (op != IBV_WR_SEND)
		wr.wr.rdma.rkey = rkey;
	memcpy(slot, &hdr, sizeof(hdr));
	memmove(slot + head, body, len);
	r->next_send = (r->next_send + 1) % RAW_SENDS;
	return ibv_post_send(r->id->qp, &wr, &bad) ? -1 : 0;
}

/* A message SENT, as zcx_ib's active side sends them. */
static int raw_post(struct raw *r, uint8_t type, uint8_t flags, uint16_t credits, uint64_t tag,
		    const void *body, size_t len, int hdr_len)
{
	return raw_post_as(r, IBV_WR_SEND, 0, type, flags, credits, tag, body, len, hdr_len);
}

/* Poll until @done(r) within RAW_WAIT_MS: 0, or -1 (broken, or late). */
static int raw_wait(struct raw *r, bool (*done)(const struct raw *r, unsigned int arg),
		    unsigned int arg)
{
	uint64_t end = xnow_ns() + RAW_WAIT_MS * 1000000ULL;
	struct timespec tick = { 0, 1000000 };

	while (!done(r, arg)) {
		if (raw_poll(r) || xnow_ns() > end)
			return -1;
		nanosleep(&tick, NULL);
	}
	return 0;
}

static bool sends_done(const struct raw *r, unsigned int n)
{
	return r->sends_done >= n;
}

static bool fins_came(const struct raw *r, unsigned int n)
{
	return r->fins >= n;
}

/* A message posted and acknowledged by the node: 0, or -1. */
static int raw_send(struct raw *r, uint8_t type, uint64_t tag, const void *body, size_t len)
{
	unsigned int want = r->sends_done + 1;

	if (raw_post(r, type, 0, 0, tag, body, len, -1))
		return -1;
	return raw_wait(r, sends_done, want);
}

/*
 * Whether the node drops the connection within RAW_WAIT_MS: the CM says
 * DISCONNECTED, or REJECTED if the node tore it down before it had our
 * "ready to use" (our first message may overtake that), whatever our
 * queue pair saw before.
 */
static bool raw_dropped(struct raw *r)
{
	uint64_t start = xnow_ns();
	int ev = raw_event(r, RAW_WAIT_MS);

	if (ev == RDMA_CM_EVENT_DISCONNECTED || ev == RDMA_CM_EVENT_REJECTED) {
		r->connected = false;
		return true;
	}
	printf("# CM event %d (%s) after %llu ms\n", ev, ev < 0 ? "none" : rdma_event_str(ev),
	       (unsigned long long)(xnow_ns() - start) / 1000000);
	return false;
}

/*
 * A request of @type (W_RTS, W_PUT, W_GET) for @len bytes at the peer's
 * @raddr in range @rkey: into @buf, its segments (@nseg of them) naming
 * @len bytes of our data area from @data_off, or (@nseg 0, a short PUT)
 * carrying @len bytes of it.  Its length in bytes.
 */
static size_t rts_build(struct raw *r, void *buf, uint64_t cookie, uint64_t len, uint32_t nseg,
			size_t data_off, uint64_t raddr, uint64_t rkey)
{
	struct wire_rts *rts = buf;
	uint32_t i;

	memset(rts, 0, sizeof(*rts));
	rts->len = htole64(len);
	rts->cookie = htole64(cookie);
	rts->raddr = htole64(raddr);
	rts->rkey = htole64(rkey);
	rts->nseg = htole32(nseg);
	if (!nseg) {
		memcpy(rts->segs, r->mem + RAW_DATA_OFF + data_off, len);
		return sizeof(*rts) + len;
	}
	for (i = 0; i < nseg; i++) {
		uint64_t seg_len = len / nseg + (i + 1 == nseg ? len % nseg : 0);

		rts->segs[i].addr = htole64((uintptr_t)(r->mem + RAW_DATA_OFF + data_off));
		rts->segs[i].len = htole32(seg_len);
		rts->segs[i].rkey = htole32(r->mr->rkey);
		data_off += seg_len;
	}
	return sizeof(*rts) + nseg * sizeof(struct wire_seg);
}

/*
 * A request sent and its FIN waited for (cookie checked): the FIN's
 * status, or 1 if none came.
 */
static int raw_request(struct raw *r, uint8_t type, const void *msg, size_t len)
{
	const struct wire_rts *rts = msg;
	unsigned int want = r->fins + 1;

	if (raw_send(r, type, 0, msg, len) || raw_wait(r, fins_came, want) ||
	    r->fin.cookie != rts->cookie)
		return 1;
	return (int)le32toh(r->fin.status);
}

/* The receiving side: a context, an endpoint on the network, its address. */
struct node {
	struct zcx *zcx;
	struct zcx_ep *ep;
	struct zcx_addr addr;
	/* A well-behaved peer, connected to it through the network. */
	struct zcx_ep *good;
	uint32_t good_peer;
};

static int node_open(struct node *n)
{
	memset(n, 0, sizeof(*n));
	if (zcx_open(&n->zcx, 0) || zcx_ep_create(n->zcx, ZCX_EP_NET, 0, &n->ep) ||
	    zcx_ep_create(n->zcx, ZCX_EP_NET, 0, &n->good))
		return -1;
	zcx_ep_addr(n->ep, &n->addr);
	return zcx_ep_connect_flags(n->good, &n->addr, ZCX_CONNECT_NET, &n->good_peer);
}

static void node_close(struct node *n)
{
	zcx_ep_destroy(n->good);
	zcx_ep_destroy(n->ep);
	zcx_close(n->zcx);
}

/*
 * Receive @len bytes tagged @tag on the node's endpoint within a minute,
 * into a buffer of @room bytes: 0 if they are the pattern @seed, else
 * -EBADMSG or the receive's error.
 */
static int node_recv(struct node *n, size_t room, uint64_t tag, size_t len, uint64_t seed)
{
	unsigned char *buf = calloc(1, room + 1);
	struct zcx_req req = { 0 };
	int ret = buf ? zcx_irecv(n->ep, buf, room, tag, UINT64_MAX, &req) : -ENOMEM;

	if (!ret)
		ret = xwait_bounded(n->ep, &req, RAW_WAIT_MS);
	if (!ret && (req.len != len || xpat_check(buf, len, seed) >= 0))
		ret = -EBADMSG;
	free(buf);
	return ret;
}

/*
 * The endpoint goes on: a message from the well-behaved peer, tagged
 * like whatever came before, is the one it receives.
 */
static int node_still_receives(struct node *n, uint64_t tag)
{
	unsigned char msg[300];

	xpat_fill(msg, sizeof(msg), 77);
	if (zcx_send(n->good, n->good_peer, msg, sizeof(msg), tag))
		return -EIO;
	return node_recv(n, sizeof(msg), tag, sizeof(msg), 77);
}

/*
 * Playing a node that an endpoint connects to: a listener of our own on
 * the tests' address, at a port of the system's choice (@port, network
 * order), and the connection it accepted.
 */

struct fake {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	uint16_t port;
	struct raw conn;
	struct wire_hello hello;	/* what the endpoint's node sent */
	struct wire_welcome welcome;	/* what we accept it with ... */
	size_t welcome_len;		/* ... so many bytes of it */
	pthread_t thread;
	int stop;			/* eventfd: the connect failed, stop waiting */
	int accepted;			/* 0 once established */
};

static int fake_listen(struct fake *f)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	memset(f, 0, sizeof(*f));
	f->welcome = (struct wire_welcome) {
		.magic = htole32(WIRE_MAGIC),
		.version = htole16(WIRE_VERSION),
		.credits = htole16(WIRE_RX_MAX),
	};
	f->welcome_len = sizeof(f->welcome);
	f->stop = eventfd(0, EFD_CLOEXEC);
	if (f->stop < 0 || inet_pton(AF_INET, NET_IP, &sin.sin_addr) != 1)
		return -1;
	f->ch = raw_channel();
	if (!f->ch || rdma_create_id(f->ch, &f->listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(f->listen, (struct sockaddr *)&sin) || rdma_listen(f->listen, 4))
		return -1;
	f->port = rdma_get_src_port(f->listen);
	return 0;
}

static void fake_close(struct fake *f)
{
	raw_close(&f->conn);
	if (f->listen)
		rdma_destroy_id(f->listen);
	if (f->ch)
		rdma_destroy_event_channel(f->ch);
	if (f->stop > 0)
		close(f->stop);
	memset(f, 0, sizeof(*f));
}

FIXTURE(wire) {
	struct node node;
	struct raw raw;
	struct fake fake;
};

FIXTURE_SETUP(wire)
{
	ZCX_NET_FIXTURE_UP();
	ASSERT_EQ(0, node_open(&self->node));
}

FIXTURE_TEARDOWN(wire)
{
	raw_close(&self->raw);
	fake_close(&self->fake);
	node_close(&self->node);
	ZCX_NET_FIXTURE_DOWN();
}

#define TAG	0x5eedULL

/* The positive control: what follows fails for what it sends, not for how. */
TEST_F_TIMEOUT(wire, speaks_the_protocol, 300)
{
	struct raw *r = &self->raw;
	unsigned char msg[WIRE_INLINE], *exposed;
	uint64_t rkey;
	size_t len;

	ASSERT_EQ(0, raw_open(r, &self->node.addr));
	/* Inline: the bytes in the message. */
	xpat_fill(msg, 1000, 1);
	ASSERT_EQ(0, raw_send(r, W_EAGER, TAG, msg, 1000));
	EXPECT_EQ(0, node_recv(&self->node, 4096, TAG, 1000, 1));
	/* Rendezvous: the node READs our bytes in three segments, then FINs. */
	xpat_fill(r->mem + RAW_DATA_OFF, 20000, 2);
	len = rts_build(r, msg, 42, 20000, 3, 0, 0, 0);
	{
		unsigned int want = r->fins + 1;
		unsigned char *in = calloc(1, 20000);
		struct zcx_req req = { 0 };

		ASSERT_NE(NULL, in);
		ASSERT_EQ(0, zcx_irecv(self->node.ep, in, 20000, TAG + 1, UINT64_MAX, &req));
		ASSERT_EQ(0, zcx_ep_flush(self->node.ep));
		ASSERT_EQ(0, raw_send(r, W_RTS, TAG + 1, msg, len));
		EXPECT_EQ(0, xwait_bounded(self->node.ep, &req, RAW_WAIT_MS));
		EXPECT_EQ(20000, req.len);
		EXPECT_GT(0, xpat_check(in, 20000, 2));
		free(in);
		ASSERT_EQ(0, raw_wait(r, fins_came, want));
		EXPECT_EQ(42, le64toh(r->fin.cookie));
		EXPECT_EQ(0, r->fin.status);
	}
	/*
	 * Into a shorter receive: it fills the buffer and says so, the
	 * sender's completes well; and an RTS of no bytes.
	 */
	{
		unsigned int want = r->fins + 1;
		unsigned char in[10000];
		struct zcx_req req = { 0 };

		ASSERT_EQ(0, zcx_irecv(self->node.ep, in, sizeof(in), TAG + 2, UINT64_MAX, &req));
		ASSERT_EQ(0, zcx_ep_flush(self->node.ep));
		len = rts_build(r, msg, 46, 20000, 2, 0, 0, 0);
		ASSERT_EQ(0, raw_send(r, W_RTS, TAG + 2, msg, len));
		EXPECT_EQ(-EMSGSIZE, xwait_bounded(self->node.ep, &req, RAW_WAIT_MS));
		EXPECT_EQ(sizeof(in), req.len);
		EXPECT_GT(0, xpat_check(in, sizeof(in), 2));
		ASSERT_EQ(0, raw_wait(r, fins_came, want));
		EXPECT_EQ(46, le64toh(r->fin.cookie));
		EXPECT_EQ(0, r->fin.status);
		memset(&req, 0, sizeof(req));
		ASSERT_EQ(0, zcx_irecv(self->node.ep, in, sizeof(in), 0, UINT64_MAX, &req));
		ASSERT_EQ(0, zcx_ep_flush(self->node.ep));
		len = rts_build(r, msg, 47, 0, 0, 0, 0, 0);
		EXPECT_EQ(0, raw_request(r, W_RTS, msg, len));
		EXPECT_EQ(0, xwait_bounded(self->node.ep, &req, RAW_WAIT_MS));
		EXPECT_EQ(0, req.len);
	}
	/* A short PUT lands, and only there; a long one is READ. */
	exposed = xmap_shared(8192);
	ASSERT_NE(NULL, exposed);
	memset(exposed, 0xee, 8192);
	ASSERT_EQ(0, zcx_expose(self->node.zcx, exposed, 8192, ZCX_REMOTE_ALL, &rkey));
	xpat_fill(r->mem + RAW_DATA_OFF, 8192, 3);
	len = rts_build(r, msg, 43, 100, 0, 0, (uintptr_t)exposed + 10, rkey);
	EXPECT_EQ(0, raw_request(r, W_PUT, msg, len));
	EXPECT_GT(0, xpat_check(exposed + 10, 100, 3));
	EXPECT_TRUE(xall(exposed, 10, 0xee));
	EXPECT_TRUE(xall(exposed + 110, 8192 - 110, 0xee));
	len = rts_build(r, msg, 44, 8192, 2, 0, (uintptr_t)exposed, rkey);
	EXPECT_EQ(0, raw_request(r, W_PUT, msg, len));
	EXPECT_GT(0, xpat_check(exposed, 8192, 3));
	/* A GET: the node WRITEs the range into our segment. */
	memset(r->mem + RAW_DATA_OFF, 0, 8192);
	len = rts_build(r, msg, 45, 8192, 1, 0, (uintptr_t)exposed, rkey);
	EXPECT_EQ(0, raw_request(r, W_GET, msg, len));
	EXPECT_GT(0, xpat_check(r->mem + RAW_DATA_OFF, 8192, 3));
	EXPECT_EQ(0, zcx_unexpose(self->node.zcx, rkey));
	munmap(exposed, 8192);
}

TEST_F_TIMEOUT(wire, hellos_not_ours_are_rejected, 300)
{
	const struct zcx_addr *to = &self->node.addr;
	struct wire_hello good = hello_for(to), bad;
	struct raw *r = &self->raw;
	size_t len = sizeof(good);

	/*
	 * Too short for a hello.  InfiniBand pads a request's private data
	 * with zeros, so there the node reads a short hello as one ending
	 * in zeros: short of its last byte that is not zero (of the random
	 * key; CI once had a key whose last byte was), it is a wrong one.
	 */
	while (len > 1 && !((const unsigned char *)&good)[len - 1])
		len--;
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect(r, to, &good, len - 1));
	raw_close(r);
	bad = good;
	bad.magic ^= 1;
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect(r, to, &bad, sizeof(bad)));
	raw_close(r);
	bad = good;
	bad.version = htole16(WIRE_VERSION - 1);
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect(r, to, &bad, sizeof(bad)));
	raw_close(r);
	bad = good;
	bad.key ^= htole64(1ULL << 40);
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect(r, to, &bad, sizeof(bad)));
	raw_close(r);
	bad = good;
	bad.ep_id = htole64(le64toh(bad.ep_id) + 1000);
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect(r, to, &bad, sizeof(bad)));
	raw_close(r);
	/*
	 * A transport the node cannot use: no READ of ours taken at a time
	 * (it must READ), or retrying for ever (Soft-RoCE reads 7 so, and
	 * the node's queue pair would take it).  The IB CM tells both;
	 * iWARP's need not.
	 */
	if (strcmp(zcx_net_rdma_type(), "siw")) {
		struct rdma_conn_param param = raw_param(&good, sizeof(good));

		param.responder_resources = 0;
		EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect_with(r, to, &param));
		raw_close(r);
		param = raw_param(&good, sizeof(good));
		param.retry_count = 7;
		EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect_with(r, to, &param));
		raw_close(r);
	}
	/* The right one, with bytes after it, which are ignored. */
	{
		unsigned char longer[sizeof(good) + 8] = { 0 };

		memcpy(longer, &good, sizeof(good));
		EXPECT_EQ(RDMA_CM_EVENT_ESTABLISHED, raw_connect(r, to, longer, sizeof(longer)));
	}
	EXPECT_EQ(0, node_still_receives(&self->node, TAG));
}

TEST_F_TIMEOUT(wire, puts_and_gets_outside_their_rights_change_nothing, 300)
{
	struct raw *r = &self->raw;
	unsigned char msg[WIRE_INLINE], *mem;
	uint64_t rkey_ro, rkey_wo, base;
	size_t len;

	mem = xmap_shared(3 * 4096);
	ASSERT_NE(NULL, mem);
	memset(mem, 0xee, 3 * 4096);
	base = (uintptr_t)mem;
	/* Page 0 may be read, page 1 written; page 2 is not exposed. */
	ASSERT_EQ(0, zcx_expose(self->node.zcx, mem, 4096, ZCX_REMOTE_READ, &rkey_ro));
	ASSERT_EQ(0, zcx_expose(self->node.zcx, mem + 4096, 4096, ZCX_REMOTE_WRITE, &rkey_wo));
	ASSERT_EQ(0, raw_open(r, &self->node.addr));
	xpat_fill(r->mem + RAW_DATA_OFF, 8192, 4);
	/* Short PUTs: without the right, past the end, with another key. */
	len = rts_build(r, msg, 1, 100, 0, 0, base, rkey_ro);
	EXPECT_GT(0, raw_request(r, W_PUT, msg, len));
	len = rts_build(r, msg, 2, 100, 0, 0, base + 2 * 4096 - 50, rkey_wo);
	EXPECT_GT(0, raw_request(r, W_PUT, msg, len));
	len = rts_build(r, msg, 3, 100, 0, 0, base + 4096, rkey_wo ^ rkey_ro ^ 1);
	EXPECT_GT(0, raw_request(r, W_PUT, msg, len));
	/* Read PUTs: starting before the range, and at an address that wraps. */
	len = rts_build(r, msg, 4, 8192, 2, 0, base, rkey_wo);
	EXPECT_GT(0, raw_request(r, W_PUT, msg, len));
	len = rts_build(r, msg, 5, 8192, 2, 0, UINT64_MAX - 100, rkey_wo);
	EXPECT_GT(0, raw_request(r, W_PUT, msg, len));
	/* GETs: without the right, past the end. */
	len = rts_build(r, msg, 6, 4096, 1, 0, base + 4096, rkey_wo);
	EXPECT_GT(0, raw_request(r, W_GET, msg, len));
	len = rts_build(r, msg, 7, 4096, 1, 0, base + 1, rkey_ro);
	EXPECT_GT(0, raw_request(r, W_GET, msg, len));
	/* Nothing was written here, nor read into our memory. */
	EXPECT_TRUE(xall(mem, 3 * 4096, 0xee));
	EXPECT_GT(0, xpat_check(r->mem + RAW_DATA_OFF, 8192, 4));
	/* The connection is as good as before: a PUT with the right lands. */
	len = rts_build(r, msg, 8, 100, 0, 0, base + 4096, rkey_wo);
	EXPECT_EQ(0, raw_request(r, W_PUT, msg, len));
	EXPECT_GT(0, xpat_check(mem + 4096, 100, 4));
	EXPECT_EQ(0, zcx_unexpose(self->node.zcx, rkey_ro));
	EXPECT_EQ(0, zcx_unexpose(self->node.zcx, rkey_wo));
	munmap(mem, 3 * 4096);
}

/*
 * Messages that are not the protocol, each on a connection of its own,
 * which the node drops; the endpoint receives none of them.  A request
 * (RTS, PUT, GET) is built well formed first, of 8 KiB in @nseg segments
 * of our memory (a short PUT: 100 bytes carried), then spoilt.
 */
enum broken_op { AS_SEND, AS_SEND_INV, AS_WRITE_IMM, AS_WRITE };

static const enum ibv_wr_opcode broken_ops[] = {
	[AS_SEND] = IBV_WR_SEND,
	[AS_SEND_INV] = IBV_WR_SEND_WITH_INV,
	[AS_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[AS_WRITE] = IBV_WR_RDMA_WRITE,
};

struct broken_msg {
	const char *what;
	enum broken_op op;	/* how it is posted: a SEND unless said */
	bool rxe_only;		/* an operation Soft-iWARP has not */
	uint8_t type;
	uint8_t flags;
	uint16_t credits;
	uint8_t hdr_cut;	/* bytes of the header not sent */
	uint16_t body_len;	/* not a request: bytes after the header */
	uint16_t len_field;	/* if non-zero, the header's length */
	/* Requests: */
	uint16_t nseg;
	bool empty_seg;		/* the first segment's bytes moved to the second */
	uint32_t seg_len0;	/* if non-zero, the first segment's length */
	uint64_t rts_len;	/* if non-zero, the request's length */
	uint32_t reserved;
	uint16_t trim;		/* bytes cut off its end */
};

static const struct broken_msg broken_msgs[] = {
	{ "no bytes at all", .hdr_cut = sizeof(struct wire_hdr) },
	{ "less than a header", .hdr_cut = 1 },
	{ "a length longer than the message", .type = W_EAGER, .body_len = 10, .len_field = 11 },
	{ "a length shorter than the message", .type = W_EAGER, .body_len = 10, .len_field = 9 },
	{ "an unknown type", .type = 99, .body_len = 10 },
	{ "a flag on an inline message", .type = W_EAGER, .flags = WIRE_EAGER_OFF, .body_len = 10 },
	{ "a flag on an RTS", .type = W_RTS, .flags = WIRE_EAGER_OFF, .nseg = 1 },
	{ "a message a byte longer than a buffer", .type = W_EAGER, .body_len = WIRE_INLINE + 1 },
	{ "a message that invalidates a key", .op = AS_SEND_INV, .type = W_EAGER,
	  .body_len = 10 },
	{ "a WRITE with immediate data", .op = AS_WRITE_IMM,
	  .hdr_cut = sizeof(struct wire_hdr), .rxe_only = true },
	{ "a WRITE with a key never given", .op = AS_WRITE, .body_len = 8 },
	{ "a FIN the wrong way", .type = W_FIN, .body_len = sizeof(struct wire_fin) },
	{ "a CREDIT the wrong way", .type = W_CREDIT, .credits = 1 },
	{ "TAKEN of FINs never sent", .type = W_TAKEN, .credits = 1 },
	{ "TAKEN of none", .type = W_TAKEN },
	{ "an RTS with no segment", .type = W_RTS, .nseg = 0, .rts_len = 8192 },
	{ "an RTS of segments longer than it", .type = W_RTS, .nseg = 2, .seg_len0 = 5000 },
	{ "an RTS with an empty segment", .type = W_RTS, .nseg = 2, .empty_seg = true },
	{ "an RTS with too many segments", .type = W_RTS, .nseg = 129 },
	{ "an RTS with a reserved field set", .type = W_RTS, .nseg = 1, .reserved = 1 },
	{ "an RTS shorter than its segments", .type = W_RTS, .nseg = 2, .trim = 2 },
	{ "a GET of segments shorter than it", .type = W_GET, .nseg = 1, .rts_len = 8193 },
	{ "a PUT of 256 MiB and a byte", .type = W_PUT, .nseg = 1,
	  .seg_len0 = (256U << 20) + 1, .rts_len = (256ULL << 20) + 1 },
	{ "a short PUT longer than its bytes", .type = W_PUT, .nseg = 0, .rts_len = 200 },
	{ "a short PUT to be read", .type = W_PUT, .nseg = 1, .seg_len0 = 100, .rts_len = 100 },
};

/* Send broken message @b on @r; 0 or -1 if it could not be posted. */
static int broken_post(struct raw *r, const struct broken_msg *b)
{
	unsigned char body[RAW_SEND_SIZE] = { 0 };
	struct wire_rts *rts = (void *)body;
	size_t len = b->body_len;
	struct wire_hdr hdr;

	if (b->type == W_RTS || b->type == W_PUT || b->type == W_GET) {
		if (b->nseg || b->type == W_PUT) {
			len = rts_build(r, body, 9, b->nseg ? 8192 : 100, b->nseg, 0, 0, 0);
		} else {
			len = sizeof(*rts);
			rts->cookie = htole64(9);
		}
		if (b->empty_seg) {
			rts->segs[1].len = htole32(le32toh(rts->segs[1].len) +
						   le32toh(rts->segs[0].len));
			rts->segs[0].len = 0;
		}
		if (b->seg_len0)
			rts->segs[0].len = htole32(b->seg_len0);
		if (b->rts_len)
			rts->len = htole64(b->rts_len);
		rts->reserved = htole32(b->reserved);
		len -= b->trim;
	}
	if (!b->len_field)
		return raw_post_as(r, broken_ops[b->op], 0x1234, b->type, b->flags, b->credits,
				   TAG, body, len, sizeof(struct wire_hdr) - b->hdr_cut);
	/* The header says another length: the whole message made here. */
	hdr = (struct wire_hdr) {
		.tag = htole64(TAG),
		.len = htole32(b->len_field),
		.type = b->type,
	};
	memmove(body + sizeof(hdr), body, len);
	memcpy(body, &hdr, sizeof(hdr));
	return raw_post(r, 0, 0, 0, 0, body, sizeof(hdr) + len, 0);
}

TEST_F_TIMEOUT(wire, messages_not_of_the_protocol_drop_the_connection, 600)
{
	struct raw *r = &self->raw;
	unsigned int i;

	for (i = 0; i < sizeof(broken_msgs) / sizeof(broken_msgs[0]); i++) {
		const struct broken_msg *b = &broken_msgs[i];

		if (b->rxe_only && !strcmp(zcx_net_rdma_type(), "siw"))
			continue;
		ASSERT_EQ(0, raw_open(r, &self->node.addr)) TH_LOG("connecting for %s", b->what);
		ASSERT_EQ(0, broken_post(r, b)) TH_LOG("posting %s", b->what);
		EXPECT_TRUE(raw_dropped(r)) TH_LOG("%s: the connection stayed", b->what);
		raw_close(r);
	}
	/* None of it was received; the endpoint's other peer goes on. */
	EXPECT_EQ(0, node_still_receives(&self->node, TAG));
}

/*
 * An RTS whose segment the node cannot read (a key that is not ours, or
 * bytes past our registration): the receive it matched fails, though
 * another peer is still connected, and the connection goes.
 */
TEST_F_TIMEOUT(wire, an_unreadable_rts_fails_the_receive_it_matched, 300)
{
	struct raw *r = &self->raw;
	unsigned char msg[WIRE_INLINE], *in;
	struct zcx_req req;
	struct wire_rts *rts = (void *)msg;
	int bad, ret;
	size_t len;

	in = calloc(1, 8192);
	ASSERT_NE(NULL, in);
	for (bad = 0; bad < 2; bad++) {
		ASSERT_EQ(0, raw_open(r, &self->node.addr));
		len = rts_build(r, msg, 60 + bad, 8192, 1, 0, 0, 0);
		if (bad)
			rts->segs[0].addr = htole64((uintptr_t)r->mem + RAW_MEM_SIZE - 4096);
		else
			rts->segs[0].rkey = htole32(r->mr->rkey ^ 0x100);
		memset(&req, 0, sizeof(req));
		ASSERT_EQ(0, zcx_irecv(self->node.ep, in, 8192, TAG, UINT64_MAX, &req));
		ASSERT_EQ(0, zcx_ep_flush(self->node.ep));
		/* (Not waited for: our queue pair breaks as soon as it is read.) */
		ASSERT_EQ(0, raw_post(r, W_RTS, 0, 0, TAG, msg, len, -1));
		ret = xwait_bounded(self->node.ep, &req, RAW_WAIT_MS);
		EXPECT_GT(0, ret) TH_LOG("%s: the receive got %d", bad ? "past the end" : "wrong key",
					 ret);
		EXPECT_NE(-ETIME, ret);
		EXPECT_TRUE(xall(in, 8192, 0));
		EXPECT_TRUE(raw_dropped(r));
		raw_close(r);
	}
	free(in);
	EXPECT_EQ(0, node_still_receives(&self->node, TAG));
}

/*
 * A connection the node refuses although its key is right (here, the
 * node has as many as max_accepted) carried nothing: a receive waiting
 * on the endpoint with no sender yet does not fail for its going.
 */
TEST_F_TIMEOUT(wire, a_refused_connection_fails_no_receive, 300)
{
	struct zcx_ep *lone, *sender;
	struct wire_hello hello;
	struct zcx_req req = { 0 };
	struct zcx_addr addr;
	unsigned char in[300], out[300];
	char limit[24];
	long long refs;
	uint32_t peer;

	ASSERT_EQ(0, zcx_ep_create(self->node.zcx, ZCX_EP_NET, 0, &lone));
	zcx_ep_addr(lone, &addr);
	hello = hello_for(&addr);
	ASSERT_EQ(0, zcx_irecv(lone, in, sizeof(in), TAG, UINT64_MAX, &req));
	ASSERT_EQ(0, zcx_ep_flush(lone));
	refs = backend_refs();
	snprintf(limit, sizeof(limit), "%lld", zcx_test_read_number(BACKEND_PARAM("max_accepted")));
	ASSERT_EQ(0, zcx_test_write_file(BACKEND_PARAM("max_accepted"), "0"));
	EXPECT_EQ(RDMA_CM_EVENT_REJECTED, raw_connect(&self->raw, &addr, &hello, sizeof(hello)));
	ASSERT_EQ(0, zcx_test_write_file(BACKEND_PARAM("max_accepted"), limit));
	raw_close(&self->raw);
	/* The refused connection is gone (torn down by its work item). */
	ASSERT_TRUE(backend_refs_back_to(refs));
	EXPECT_EQ(0, zcx_test(lone, &req)) TH_LOG("the receive completed: %d", req.status);
	/* It still takes the first message of a peer let in. */
	ASSERT_EQ(0, zcx_ep_create(self->node.zcx, ZCX_EP_NET, 0, &sender));
	ASSERT_EQ(0, zcx_ep_connect_flags(sender, &addr, ZCX_CONNECT_NET, &peer));
	xpat_fill(out, sizeof(out), 5);
	ASSERT_EQ(0, zcx_send(sender, peer, out, sizeof(out), TAG));
	EXPECT_EQ(0, xwait_bounded(lone, &req, RAW_WAIT_MS));
	EXPECT_EQ(sizeof(in), req.len);
	EXPECT_GT(0, xpat_check(in, sizeof(in), 5));
	zcx_ep_destroy(sender);
	zcx_ep_destroy(lone);
}

/*
 * A sender that posts @n inline messages at once, as if it had the
 * credits (the @credits its welcome gave, and more): the node takes what
 * it has buffers for (holding, then copying a bounded number) and then
 * lets the sender's retries wait; the endpoint's other peer is not held
 * up, and once the receiver takes them, every message comes, in order.
 */
static void flood_ignoring_credits(struct __test_metadata *_metadata, struct node *node,
				   struct raw *r, unsigned int credits, unsigned int n)
{
	unsigned char msg[WIRE_INLINE];
	unsigned int i;

	ASSERT_EQ(credits, le16toh(r->welcome.credits));
	for (i = 0; i < n; i++) {
		xpat_fill(msg, sizeof(msg), 1000 + i);
		ASSERT_EQ(0, raw_post(r, W_EAGER, 0, 0, 1000 + i, msg, sizeof(msg), -1));
	}
	/* Taken beyond the credits, before anything was received. */
	ASSERT_EQ(0, raw_wait(r, sends_done, credits + 1));
	EXPECT_EQ(0, node_still_receives(node, TAG));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, node_recv(node, sizeof(msg), 1000 + i, sizeof(msg), 1000 + i))
			TH_LOG("message %u", i);
		/* (Our receive slots posted again for the CREDITs.) */
		ASSERT_EQ(0, raw_poll(r));
	}
	EXPECT_EQ(0, raw_wait(r, sends_done, n));
}

TEST_F_TIMEOUT(wire, a_sender_ignoring_credits_holds_up_only_itself, 600)
{
	if (!strcmp(zcx_net_rdma_type(), "siw"))
		SKIP(return, "iWARP has no retry for a receiver without a buffer");
	ASSERT_EQ(0, raw_open(&self->raw, &self->node.addr));
	flood_ignoring_credits(_metadata, &self->node, &self->raw, WIRE_RX_MAX, 200);
}

#define RX_BUFFERS	BACKEND_PARAM("rx_buffers")

/*
 * Accepting tells the sender how many receive buffers the node posted:
 * rx_buffers (8 to 32; other values are refused) as it was when the
 * connection came.  With the fewest, a sender ignoring its credits meets
 * a node that holds and copies fewer messages, and loses none.
 * (zcx_net_reusable() reloads zcx_ib if this test left it lowered.)
 */
TEST_F_TIMEOUT(wire, the_node_welcomes_with_its_receive_buffers, 600)
{
	struct raw *r = &self->raw;

	ASSERT_EQ(WIRE_RX_MAX, zcx_test_read_number(RX_BUFFERS));
	EXPECT_EQ(-EINVAL, zcx_test_write_file(RX_BUFFERS, "7"));
	EXPECT_EQ(-EINVAL, zcx_test_write_file(RX_BUFFERS, "33"));
	EXPECT_EQ(WIRE_RX_MAX, zcx_test_read_number(RX_BUFFERS));
	ASSERT_EQ(0, raw_open(r, &self->node.addr));
	EXPECT_EQ(WIRE_MAGIC, le32toh(r->welcome.magic));
	EXPECT_EQ(WIRE_VERSION, le16toh(r->welcome.version));
	EXPECT_EQ(WIRE_RX_MAX, le16toh(r->welcome.credits));
	raw_close(r);
	ASSERT_EQ(0, zcx_test_write_file(RX_BUFFERS, "8"));
	ASSERT_EQ(0, raw_open(r, &self->node.addr));
	EXPECT_EQ(WIRE_RX_MIN, le16toh(r->welcome.credits));
	/* A connection keeps the buffers it was accepted with. */
	ASSERT_EQ(0, zcx_test_write_file(RX_BUFFERS, "32"));
	if (strcmp(zcx_net_rdma_type(), "siw"))
		flood_ignoring_credits(_metadata, &self->node, r, WIRE_RX_MIN, 60);
}

/* (A thread:) accept the next request, keeping its hello. */
static void *fake_accept(void *arg)
{
	struct rdma_conn_param param = {
		/* We READ from it; it never reads from us. */
		.responder_resources = 0,
		.initiator_depth = 1,
		.rnr_retry_count = 7,
		.flow_control = 1,
	};
	struct fake *f = arg;
	struct pollfd pfd[2] = {
		{ .fd = f->ch->fd, .events = POLLIN },
		{ .fd = f->stop, .events = POLLIN },
	};
	struct rdma_cm_event *ev;

	param.private_data = &f->welcome;
	param.private_data_len = f->welcome_len;
	f->accepted = -1;
	raw_close(&f->conn);
	/* (What the previous connection's id still had to say is passed over.) */
	while (!f->conn.id) {
		struct rdma_cm_id *not_ours = NULL;

		if (poll(pfd, 2, RAW_WAIT_MS) < 1 || pfd[1].revents ||
		    rdma_get_cm_event(f->ch, &ev))
			return NULL;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    ev->param.conn.private_data_len >= sizeof(f->hello)) {
			memcpy(&f->hello, ev->param.conn.private_data, sizeof(f->hello));
			f->conn.id = ev->id;
			f->conn.ch = f->ch;
			f->conn.shared_ch = true;
		} else if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			not_ours = ev->id;
		}
		rdma_ack_cm_event(ev);
		if (not_ours) {
			rdma_reject(not_ours, NULL, 0);
			rdma_destroy_id(not_ours);
		}
	}
	if (f->conn.id && !raw_setup(&f->conn) && !rdma_accept(f->conn.id, &param) &&
	    raw_event(&f->conn, RAW_WAIT_MS) == RDMA_CM_EVENT_ESTABLISHED) {
		f->conn.connected = true;
		f->accepted = 0;
	}
	return NULL;
}

#define FAKE_EP_ID	7
#define FAKE_KEY	0x1234567890abcdefULL

/*
 * @ep connected through the network to an endpoint of the fake node (the
 * tests' address, f->port): its connection number in *@peer, the fake's
 * side in f->conn; 0, connecting's -errno, or -1 if connecting succeeded
 * but the fake's side did not.
 */
static int fake_connect(struct fake *f, struct zcx_ep *ep, uint32_t *peer)
{
	struct zcx_addr to;
	int ret;

	zcx_ep_addr(ep, &to);
	to.port = f->port;
	to.id = FAKE_EP_ID;
	to.key = FAKE_KEY;
	if (pthread_create(&f->thread, NULL, fake_accept, f))
		return -1;
	ret = zcx_ep_connect_flags(ep, &to, ZCX_CONNECT_NET, peer);
	/* A connect that failed before asking leaves nothing to wait for. */
	if (ret)
		eventfd_write(f->stop, 1);
	pthread_join(f->thread, NULL);
	/* Taken back, for the next connect. */
	if (ret)
		eventfd_read(f->stop, &(eventfd_t){ 0 });
	return ret ? ret : f->accepted ? -1 : 0;
}

static bool msgs_came(const struct raw *r, unsigned int n)
{
	return r->msgs >= n;
}

/* The next message from the endpoint's node: its header, and 0 or -1. */
static int fake_next(struct fake *f, struct wire_hdr *hdr)
{
	if (raw_wait(&f->conn, msgs_came, f->conn.msgs + 1) || f->conn.got_len < sizeof(*hdr))
		return -1;
	memcpy(hdr, f->conn.got, sizeof(*hdr));
	return 0;
}

static bool reads_came(const struct raw *r, unsigned int n)
{
	return r->reads_done >= n;
}

/* READ the segments of the RTS just received into our data area: 0 or -1. */
static int fake_pull(struct fake *f)
{
	struct raw *r = &f->conn;
	const struct wire_rts *rts = (const void *)(r->got + sizeof(struct wire_hdr));
	unsigned int want = r->reads_done + le32toh(rts->nseg);
	size_t off = 0;
	uint32_t i;

	for (i = 0; i < le32toh(rts->nseg); i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(r->mem + RAW_DATA_OFF + off),
			.length = le32toh(rts->segs[i].len),
			.lkey = r->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.wr.rdma.remote_addr = le64toh(rts->segs[i].addr),
			.wr.rdma.rkey = le32toh(rts->segs[i].rkey),
		}, *bad;

		if (off + sge.length > RAW_DATA_SIZE || ibv_post_send(r->id->qp, &wr, &bad))
			return -1;
		off += sge.length;
	}
	return raw_wait(r, reads_came, want);
}

/* A FIN for cookie @cookie with @status (and @len bytes of body). */
static int fake_fin(struct fake *f, uint64_t cookie, uint32_t status, size_t len)
{
	struct wire_fin fin = { .cookie = cookie, .status = htole32(status) };
	unsigned char body[sizeof(fin) + 1] = { 0 };

	memcpy(body, &fin, sizeof(fin));
	return raw_post(&f->conn, W_FIN, 0, 0, 0, body, len, -1);
}

/*
 * The positive control for a node's side: the endpoint's hello, an
 * inline message, a rendezvous one read from its pages and completed by
 * our FIN (not before), and a FIN's error handed to the send.
 */
TEST_F_TIMEOUT(wire, a_node_that_speaks_the_protocol, 300)
{
	unsigned char out[WIRE_INLINE + 1];
	struct zcx_req req;
	struct wire_hdr hdr;
	struct fake *f = &self->fake;
	uint32_t peer;
	uint64_t cookie;

	ASSERT_EQ(0, fake_listen(f));
	ASSERT_EQ(0, fake_connect(f, self->node.good, &peer));
	EXPECT_EQ(WIRE_MAGIC, le32toh(f->hello.magic));
	EXPECT_EQ(WIRE_VERSION, le16toh(f->hello.version));
	EXPECT_EQ(FAKE_EP_ID, le64toh(f->hello.ep_id));
	EXPECT_EQ(FAKE_KEY, le64toh(f->hello.key));
	/* Inline. */
	xpat_fill(out, 100, 6);
	ASSERT_EQ(0, zcx_send(self->node.good, peer, out, 100, TAG));
	ASSERT_EQ(0, fake_next(f, &hdr));
	EXPECT_EQ(W_EAGER, hdr.type);
	EXPECT_EQ(TAG, le64toh(hdr.tag));
	ASSERT_EQ(100, le32toh(hdr.len));
	EXPECT_GT(0, xpat_check(f->conn.got + sizeof(hdr), 100, 6));
	/* Inline up to the limit. */
	xpat_fill(out, WIRE_INLINE, 8);
	ASSERT_EQ(0, zcx_send(self->node.good, peer, out, WIRE_INLINE, TAG));
	ASSERT_EQ(0, fake_next(f, &hdr));
	EXPECT_EQ(W_EAGER, hdr.type);
	ASSERT_EQ(WIRE_INLINE, le32toh(hdr.len));
	EXPECT_GT(0, xpat_check(f->conn.got + sizeof(hdr), WIRE_INLINE, 8));
	/* Rendezvous, a byte more: pending until our FIN. */
	xpat_fill(out, sizeof(out), 7);
	memset(&req, 0, sizeof(req));
	ASSERT_EQ(0, zcx_isend(self->node.good, peer, out, sizeof(out), TAG + 1, &req));
	ASSERT_EQ(0, zcx_ep_flush(self->node.good));
	ASSERT_EQ(0, fake_next(f, &hdr));
	ASSERT_EQ(W_RTS, hdr.type);
	EXPECT_EQ(TAG + 1, le64toh(hdr.tag));
	ASSERT_EQ(0, fake_pull(f));
	EXPECT_GT(0, xpat_check(f->conn.mem + RAW_DATA_OFF, sizeof(out), 7));
	EXPECT_EQ(0, zcx_test(self->node.good, &req));
	/* The credit the RTS took, given back (one more is not: below). */
	ASSERT_EQ(0, raw_post(&f->conn, W_CREDIT, 0, 1, 0, out, 0, -1));
	cookie = ((struct wire_rts *)(f->conn.got + sizeof(hdr)))->cookie;
	ASSERT_EQ(0, fake_fin(f, cookie, 0, sizeof(struct wire_fin)));
	EXPECT_EQ(0, xwait_bounded(self->node.good, &req, RAW_WAIT_MS));
	/* The receiver's error, as the FIN tells it. */
	memset(&req, 0, sizeof(req));
	ASSERT_EQ(0, zcx_isend(self->node.good, peer, out, sizeof(out), TAG + 2, &req));
	ASSERT_EQ(0, zcx_ep_flush(self->node.good));
	ASSERT_EQ(0, fake_next(f, &hdr));
	ASSERT_EQ(W_RTS, hdr.type);
	cookie = ((struct wire_rts *)(f->conn.got + sizeof(hdr)))->cookie;
	ASSERT_EQ(0, fake_fin(f, cookie, -EACCES, sizeof(struct wire_fin)));
	EXPECT_EQ(-EACCES, xwait_bounded(self->node.good, &req, RAW_WAIT_MS));
	fake_close(f);
}

/*
 * Answers that are not the protocol, each on a connection of its own
 * while a rendezvous send waits for its FIN: the send fails, and the
 * connection goes.
 */
struct broken_answer {
	const char *what;
	uint8_t type;
	uint8_t flags;
	uint16_t credits;
	bool other_cookie;
	uint32_t status;
	size_t len;
};

static const struct broken_answer broken_answers[] = {
	{ "a FIN for another send", .type = W_FIN, .other_cookie = true,
	  .len = sizeof(struct wire_fin) },
	{ "a FIN with a positive status", .type = W_FIN, .status = 1,
	  .len = sizeof(struct wire_fin) },
	{ "a FIN with the kernel's own errno", .type = W_FIN, .status = -512,
	  .len = sizeof(struct wire_fin) },
	{ "a FIN a byte short", .type = W_FIN, .len = sizeof(struct wire_fin) - 1 },
	{ "a FIN a byte long", .type = W_FIN, .len = sizeof(struct wire_fin) + 1 },
	{ "two credits back when one was owed", .type = W_CREDIT, .credits = 2 },
	{ "a CREDIT of none", .type = W_CREDIT },
	{ "a CREDIT with a flag unknown", .type = W_CREDIT, .credits = 1, .flags = 2 },
	{ "a message the wrong way", .type = W_EAGER, .len = 10 },
};

TEST_F_TIMEOUT(wire, a_node_breaking_the_protocol_fails_the_sends_to_it, 600)
{
	unsigned char out[WIRE_INLINE + 1] = { 0 };
	struct zcx_req req;
	struct wire_hdr hdr;
	struct fake *f = &self->fake;
	unsigned int i;
	uint32_t peer;
	uint64_t cookie;

	ASSERT_EQ(0, fake_listen(f));
	for (i = 0; i < sizeof(broken_answers) / sizeof(broken_answers[0]); i++) {
		const struct broken_answer *b = &broken_answers[i];

		ASSERT_EQ(0, fake_connect(f, self->node.good, &peer)) TH_LOG("%s", b->what);
		memset(&req, 0, sizeof(req));
		ASSERT_EQ(0, zcx_isend(self->node.good, peer, out, sizeof(out), TAG, &req));
		ASSERT_EQ(0, zcx_ep_flush(self->node.good));
		ASSERT_EQ(0, fake_next(f, &hdr));
		ASSERT_EQ(W_RTS, hdr.type);
		cookie = ((struct wire_rts *)(f->conn.got + sizeof(hdr)))->cookie;
		if (b->type == W_FIN) {
			ASSERT_EQ(0, fake_fin(f, b->other_cookie ? cookie + 1 : cookie,
					      b->status, b->len));
		} else {
			ASSERT_EQ(0, raw_post(&f->conn, b->type, b->flags, b->credits, 0, out,
					      b->len, -1));
		}
		EXPECT_EQ(-ECONNRESET, xwait_bounded(self->node.good, &req, RAW_WAIT_MS))
			TH_LOG("%s", b->what);
		EXPECT_TRUE(raw_dropped(&f->conn)) TH_LOG("%s: the connection stayed", b->what);
	}
	fake_close(f);
}


/*
 * Welcomes a node cannot take, each on a connection of its own: none, a
 * short one, another protocol's or version's, credits out of 8..32.  The
 * connect fails as a refused one does.
 */
struct bad_welcome {
	const char *what;
	size_t len;
	uint32_t magic_xor;
	uint16_t version;
	uint16_t credits;
};

static const struct bad_welcome bad_welcomes[] = {
	{ "none", .len = 0, .version = WIRE_VERSION, .credits = WIRE_RX_MAX },
	/* (InfiniBand pads what is short with zeros: credits 0.) */
	{ "without its credits", .len = sizeof(struct wire_welcome) - 2,
	  .version = WIRE_VERSION, .credits = WIRE_RX_MAX },
	{ "another magic", .len = sizeof(struct wire_welcome), .magic_xor = 1,
	  .version = WIRE_VERSION, .credits = WIRE_RX_MAX },
	{ "the version before", .len = sizeof(struct wire_welcome), .version = WIRE_VERSION - 1,
	  .credits = WIRE_RX_MAX },
	{ "too few credits", .len = sizeof(struct wire_welcome), .version = WIRE_VERSION,
	  .credits = WIRE_RX_MIN - 1 },
	{ "too many credits", .len = sizeof(struct wire_welcome), .version = WIRE_VERSION,
	  .credits = WIRE_RX_MAX + 1 },
};

TEST_F_TIMEOUT(wire, a_node_welcoming_wrongly_is_refused, 600)
{
	struct fake *f = &self->fake;
	unsigned int i;
	uint32_t peer;

	ASSERT_EQ(0, fake_listen(f));
	for (i = 0; i < sizeof(bad_welcomes) / sizeof(bad_welcomes[0]); i++) {
		const struct bad_welcome *b = &bad_welcomes[i];

		f->welcome.magic = htole32(WIRE_MAGIC ^ b->magic_xor);
		f->welcome.version = htole16(b->version);
		f->welcome.credits = htole16(b->credits);
		f->welcome_len = b->len;
		EXPECT_EQ(-ECONNREFUSED, fake_connect(f, self->node.good, &peer))
			TH_LOG("%s", b->what);
	}
	/* A good one after them. */
	f->welcome.magic = htole32(WIRE_MAGIC);
	f->welcome.version = htole16(WIRE_VERSION);
	f->welcome.credits = htole16(WIRE_RX_MAX);
	f->welcome_len = sizeof(f->welcome);
	ASSERT_EQ(0, fake_connect(f, self->node.good, &peer));
	EXPECT_EQ(0, zcx_send(self->node.good, peer, &i, sizeof(i), TAG));
	fake_close(f);
}

/*
 * A node that welcomes with its fewest buffers gets that many messages at
 * first, but the last (whose credit is kept for a TAKEN), then as many as
 * a CREDIT gives back: here the 4 inline messages the sender queues for
 * credits at 8 buffers; the next short one goes as a rendezvous message,
 * for the next credit.  One credit more than the welcome gave breaks the
 * protocol, and that send fails.  (A sender that took 32 credits would
 * send all the messages at once, inline: the fake would have them before
 * the first sends completed.)
 */
#define FEW_INLINE	(WIRE_RX_MIN - 1 + WIRE_RX_MIN / 2)

TEST_F_TIMEOUT(wire, a_node_welcoming_with_few_buffers_gets_few_messages, 300)
{
	const unsigned int first = WIRE_RX_MIN - 1;
	struct zcx_req reqs[FEW_INLINE + 1] = { 0 };
	struct fake *f = &self->fake;
	uint64_t v[FEW_INLINE + 1];
	unsigned char out[8] = { 0 };
	struct wire_hdr hdr;
	unsigned int i;
	uint32_t peer;

	ASSERT_EQ(0, fake_listen(f));
	f->welcome.credits = htole16(WIRE_RX_MIN);
	ASSERT_EQ(0, fake_connect(f, self->node.good, &peer));
	for (i = 0; i <= FEW_INLINE; i++) {
		v[i] = 4000 + i;
		ASSERT_EQ(0, zcx_isend(self->node.good, peer, &v[i], sizeof(v[i]), TAG + i,
				       &reqs[i]));
	}
	ASSERT_EQ(0, zcx_ep_flush(self->node.good));
	/* In order: the last one received tells which came. */
	ASSERT_EQ(0, raw_wait(&f->conn, msgs_came, first));
	for (i = 0; i < first; i++)
		EXPECT_EQ(0, xwait_bounded(self->node.good, &reqs[i], RAW_WAIT_MS));
	ASSERT_EQ(0, raw_poll(&f->conn));
	EXPECT_EQ(first, f->conn.msgs);
	memcpy(&hdr, f->conn.got, sizeof(hdr));
	EXPECT_EQ(TAG + first - 1, le64toh(hdr.tag));
	EXPECT_EQ(0, zcx_test(self->node.good, &reqs[first]));
	ASSERT_EQ(0, raw_post(&f->conn, W_CREDIT, 0, FEW_INLINE - first, 0, out, 0, -1));
	ASSERT_EQ(0, raw_wait(&f->conn, msgs_came, FEW_INLINE));
	for (i = first; i < FEW_INLINE; i++)
		EXPECT_EQ(0, xwait_bounded(self->node.good, &reqs[i], RAW_WAIT_MS));
	memcpy(&hdr, f->conn.got, sizeof(hdr));
	EXPECT_EQ(W_EAGER, hdr.type);
	EXPECT_EQ(TAG + FEW_INLINE - 1, le64toh(hdr.tag));
	/* One credit left, the TAKEN's: the rendezvous message waits for one more. */
	EXPECT_EQ(FEW_INLINE, f->conn.msgs);
	ASSERT_EQ(0, raw_post(&f->conn, W_CREDIT, 0, 1, 0, out, 0, -1));
	ASSERT_EQ(0, fake_next(f, &hdr));
	EXPECT_EQ(W_RTS, hdr.type);
	EXPECT_EQ(TAG + FEW_INLINE, le64toh(hdr.tag));
	/* One credit left again, and the node tells of 8 back. */
	ASSERT_EQ(0, raw_post(&f->conn, W_CREDIT, 0, WIRE_RX_MIN, 0, out, 0, -1));
	EXPECT_EQ(-ECONNRESET, xwait_bounded(self->node.good, &reqs[FEW_INLINE], RAW_WAIT_MS));
	EXPECT_TRUE(raw_dropped(&f->conn));
	fake_close(f);
}

/*
 * The active side's receive buffers, for FINs and CREDITs: as many as
 * FINs may be owed (128) and credits given back at once (zcx_ib.h's
 * ZCX_IB_REPLY_DEPTH).  They are used in turn.
 */
#define WIRE_REPLY_BUFFERS	(128 + WIRE_RX_MAX)

/*
 * A WRITE with immediate data through the key a GET gave takes one of the
 * node's reply buffers and leaves it as it was: here, after a round of
 * them, one that still holds a CREDIT the node would be owed now.  Only a
 * SEND is an answer: the connection goes, and the GET fails.
 */
TEST_F_TIMEOUT(wire, a_write_with_immediate_data_is_no_answer, 300)
{
	struct fake *f = &self->fake;
	unsigned char out[64] = { 0 }, in[64];
	const struct wire_rts *get;
	struct zcx_req req = { 0 };
	struct wire_hdr hdr;
	unsigned int i;
	uint32_t peer;

	if (!strcmp(zcx_net_rdma_type(), "siw"))
		SKIP(return, "iWARP has no WRITE with immediate data");
	ASSERT_EQ(0, fake_listen(f));
	ASSERT_EQ(0, fake_connect(f, self->node.good, &peer));
	/* Each buffer once, each message's credit given back by a CREDIT. */
	for (i = 0; i < WIRE_REPLY_BUFFERS; i++) {
		ASSERT_EQ(0, zcx_send(self->node.good, peer, out, sizeof(out), TAG));
		ASSERT_EQ(0, fake_next(f, &hdr));
		ASSERT_EQ(W_EAGER, hdr.type);
		ASSERT_EQ(0, raw_post(&f->conn, W_CREDIT, 0, 1, 0, out, 0, -1));
	}
	ASSERT_EQ(0, zcx_iget(self->node.good, peer, in, sizeof(in), 0x10000, 1, &req));
	ASSERT_EQ(0, zcx_ep_flush(self->node.good));
	ASSERT_EQ(0, fake_next(f, &hdr));
	ASSERT_EQ(W_GET, hdr.type);
	get = (const void *)(f->conn.got + sizeof(hdr));
	ASSERT_LT(0, le32toh(get->nseg));
	{
		struct ibv_sge sge = {
			.addr = (uintptr_t)(f->conn.mem + RAW_DATA_OFF),
			.length = sizeof(struct wire_hdr),	/* what the CREDIT was */
			.lkey = f->conn.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
			.wr.rdma.remote_addr = le64toh(get->segs[0].addr),
			.wr.rdma.rkey = le32toh(get->segs[0].rkey),
		}, *bad;

		ASSERT_EQ(0, ibv_post_send(f->conn.id->qp, &wr, &bad));
	}
	EXPECT_EQ(-ECONNRESET, xwait_bounded(self->node.good, &req, RAW_WAIT_MS));
	EXPECT_TRUE(raw_dropped(&f->conn));
}

ZCX_NET_HARNESS_MAIN
