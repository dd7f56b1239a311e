// SPDX-License-Identifier: MIT
/*
 * xfer_bench - zcx transfers between processes on one node: ping-pong
 * latency, streaming bandwidth and barrier latency, each with endpoints in
 * "enter" mode (the library rings the doorbell with ZCX_IOC_ENTER) and in
 * "poll" mode (ZCX_EP_POLL: a kernel thread takes submissions).
 *
 * lat  two processes pinned to different CPUs; the initiator posts the
 *      receive of the answer, sends, and waits; the responder always has
 *      the receive of the next message posted before it answers.  Value:
 *      half the round trip.  The data of every size is checked once first.
 * bw   windows of BW_WINDOW non-blocking sends answered by an 8-byte
 *      acknowledgement; the receiver posts the window's receives first.
 * bar  N processes (forked; each opens its own context and endpoint, the
 *      first creates the barrier, the others join with its address) run
 *      zcx_barrier() until the first says stop; value: rank 0's mean.
 * Each repetition of lat and bw runs on a new pair (bench_pairs()).
 *
 * Structural rows: system calls per message from zcx_ep_syscalls() of
 * both sides over the timed runs; bytes copied per message from the
 * design: once at and above zcopy_threshold (pinned pages to pinned
 * pages) and once below it as well, because every receive here is posted
 * before its message arrives (an inline message that finds no receive is
 * copied twice: into the kernel, then out).  With -n, packets per message
 * too ("pkts", "bw_pkts"): what the node's RDMA devices sent over the
 * timed runs (hw_counters/sent_pkts; both sides share the node), the
 * protocol's own count whatever the emulation's speed; and registrations
 * per message ("regs", "bw_regs"): those both sides' transfers asked of
 * the device (the dev_regs_posted counters), none once kept.
 *
 * Usage: xfer_bench [-m enter|poll|both] [-T lat,bw,bar] [-r REPS] [-t MS]
 *                   [-N MAXPROCS] [-s BYTES] [-n]
 * -s: latency and bandwidth of that one message size only (for profiling).
 * -n: the pairs connect through the RDMA backend (ZCX_EP_NET endpoints,
 * ZCX_CONNECT_NET; zcx_ib.ko must listen), system "zcx-net-enter" or
 * "zcx-net-poll"; barriers are then not measured (they are per node).
 * Defaults: both modes, all tests, 3 repetitions, 200 ms per measurement,
 * barriers of 2, 4, 8 and 16 processes.  Prints the CSV rows described in
 * xfer_common.h, system "zcx-enter" or "zcx-poll".
 */
#define _GNU_SOURCE
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>

#include "zcx.h"
#include "xfer_common.h"

#define TAG_PING	1
#define TAG_PONG	2
#define TAG_DATA	3
#define TAG_ACK		4
#define ALL_BITS	(~0ULL)

#define MAX_PROCS	64
#define MAX_REPS	32

enum { CMD_QUIT, CMD_LAT, CMD_CHECK, CMD_BW };

/* What the initiator asks the responder to do, in a shared page. */
struct ctl {
	int cmd;
	size_t len;
	long iters;		/* round trips, or windows */
	uint64_t syscalls;	/* out: the responder's, during the command */
	uint64_t regs;		/* out: its registrations asked of the device */
};

static const char *sysname;
static unsigned int ep_flags;
/* -n: through the RDMA backend (zcx_ib.ko listening), not within the node. */
static unsigned int connect_flags;
static size_t only_size;	/* -s: measure this size only */

static void fail(const char *who, const char *what, int err)
{
	fprintf(stderr, "xfer_bench (%s): %s: %s\n", who, what, zcx_strerror(err));
	exit(1);
}

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n) {
		perror("xfer_bench: pipe write");
		exit(1);
	}
}

static void xread(int fd, void *p, size_t n)
{
	if (read(fd, p, n) != (ssize_t)n) {
		fprintf(stderr, "xfer_bench: the peer process went away\n");
		exit(1);
	}
}

/* Byte k of message @seq of @len bytes: easy to check, different each time. */
static inline unsigned char pattern(size_t k, size_t len, long seq)
{
	return (unsigned char)(k * 7 + len + (size_t)seq * 13);
}

static void fill(unsigned char *p, size_t len, long seq)
{
	size_t k;

	for (k = 0; k < len; k++)
		p[k] = pattern(k, len, seq);
}

static void check(const char *who, const unsigned char *p, size_t len, long seq)
{
	size_t k;

	for (k = 0; k < len; k++) {
		if (p[k] != pattern(k, len, seq)) {
			fprintf(stderr, "xfer_bench (%s): %zu-byte message %ld: byte %zu is %u, "
				"expected %u\n", who, len, seq, k, p[k], pattern(k, len, seq));
			exit(1);
		}
	}
}

static void wait_ok(struct zcx_ep *ep, struct zcx_req *req, size_t len, const char *who)
{
	int ret = zcx_wait(ep, req);

	if (ret)
		fail(who, "zcx_wait", ret);
	if (req->status)
		fail(who, "completion", req->status);
	if (req->len != len) {
		fprintf(stderr, "xfer_bench (%s): %zu bytes completed, expected %zu\n",
			who, req->len, len);
		exit(1);
	}
}

/* A context and an endpoint of the mode under test, opened in this process. */
/* Registrations @zcx's transfers asked of an RDMA device so far. */
static uint64_t dev_regs(struct zcx *zcx, const char *who)
{
	struct zcx_mr_stats st;
	int ret = zcx_mr_stats(zcx, &st);

	if (ret)
		fail(who, "zcx_mr_stats", ret);
	return st.kernel.dev_regs_posted;
}

static struct zcx_ep *open_ep(struct zcx **zcx, const char *who)
{
	struct zcx_ep *ep;
	int ret;

	ret = zcx_open(zcx, 0);
	if (ret)
		fail(who, "zcx_open", ret);
	ret = zcx_ep_create(*zcx, ep_flags, 0, &ep);
	if (ret)
		fail(who, "zcx_ep_create", ret);
	return ep;
}

/* --- two processes: latency and bandwidth ---------------------------------- */

static void responder(struct ctl *ctl, int go, int done, int addr_out, int addr_in)
{
	static struct zcx_req req[BW_WINDOW];
	unsigned char *buf = xfer_buf(MAX_MSG, 'b');
	struct zcx_addr mine, theirs;
	struct zcx_ep *ep;
	struct zcx *zcx;
	uint32_t peer;
	uint64_t ack = 0;
	char c;
	int ret;

	pin_cpu(1);
	ep = open_ep(&zcx, "responder");
	zcx_ep_addr(ep, &mine);
	xwrite(addr_out, &mine, sizeof(mine));
	xread(addr_in, &theirs, sizeof(theirs));
	ret = zcx_ep_connect_flags(ep, &theirs, connect_flags, &peer);
	if (ret)
		fail("responder", "zcx_ep_connect", ret);
	xwrite(done, "c", 1);

	for (;;) {
		uint64_t s0, r0;
		size_t len;
		long i, n;

		xread(go, &c, 1);
		len = ctl->len;
		n = ctl->iters;
		s0 = zcx_ep_syscalls(ep);
		r0 = dev_regs(zcx, "responder");
		switch (ctl->cmd) {
		case CMD_QUIT:
			zcx_ep_destroy(ep);
			zcx_close(zcx);
			_exit(0);
		case CMD_LAT:
		case CMD_CHECK:
			/*
			 * Message i lands in half i & 1 of the buffer and is
			 * answered from there; the receive of message i + 1
			 * (other half) is posted before the answer goes out.
			 */
			ret = zcx_irecv(ep, buf, len, TAG_PING, ALL_BITS, &req[0]);
			if (ret)
				fail("responder", "zcx_irecv", ret);
			for (i = 0; i < n; i++) {
				unsigned char *rx = buf + (i & 1) * (MAX_MSG / 2);

				wait_ok(ep, &req[i & 1], len, "responder");
				if (ctl->cmd == CMD_CHECK) {
					check("responder", rx, len, 2 * i);
					fill(rx, len, 2 * i + 1);
				}
				if (i + 1 < n) {
					ret = zcx_irecv(ep, buf + ((i + 1) & 1) * (MAX_MSG / 2), len,
							TAG_PING, ALL_BITS, &req[(i + 1) & 1]);
					if (ret)
						fail("responder", "zcx_irecv", ret);
				}
				ret = zcx_send(ep, peer, rx, len, TAG_PONG);
				if (ret)
					fail("responder", "zcx_send", ret);
			}
			break;
		case CMD_BW:
			for (i = 0; i < n; i++) {
				int k;

				for (k = 0; k < BW_WINDOW; k++) {
					ret = zcx_irecv(ep, buf, len, TAG_DATA, ALL_BITS, &req[k]);
					if (ret)
						fail("responder", "zcx_irecv", ret);
				}
				for (k = 0; k < BW_WINDOW; k++)
					wait_ok(ep, &req[k], len, "responder");
				ret = zcx_send(ep, peer, &ack, sizeof(ack), TAG_ACK);
				if (ret)
					fail("responder", "zcx_send", ret);
			}
			break;
		}
		ctl->syscalls = zcx_ep_syscalls(ep) - s0;
		ctl->regs = dev_regs(zcx, "responder") - r0;
		xwrite(done, "d", 1);
	}
}

struct pair {
	struct ctl *ctl;
	int go, done;
	pid_t pid;
	struct zcx *zcx;
	struct zcx_ep *ep;
	uint32_t peer;
	unsigned char *buf;
	uint64_t syscalls;	/* both sides, last command */
	uint64_t regs;		/* both sides' registrations, last command */
	cpu_set_t cpus;		/* the initiator's affinity before the pair */
};

static void pair_start(struct pair *p)
{
	int go[2], done[2], a2b[2], b2a[2], ret;
	struct zcx_addr mine, theirs;
	char c;

	if (pipe(go) || pipe(done) || pipe(a2b) || pipe(b2a)) {
		perror("pipe");
		exit(1);
	}
	p->ctl = xfer_shared(sizeof(*p->ctl));
	fflush(stdout);
	p->pid = fork();
	if (p->pid < 0) {
		perror("fork");
		exit(1);
	}
	if (p->pid == 0) {
		close(go[1]);
		close(done[0]);
		close(a2b[1]);
		close(b2a[0]);
		responder(p->ctl, go[0], done[1], b2a[1], a2b[0]);
	}
	close(go[0]);
	close(done[1]);
	close(a2b[0]);
	close(b2a[1]);
	p->go = go[1];
	p->done = done[0];
	/*
	 * The initiator runs on CPU 0 while the pair lives; pair_stop() gives
	 * it its CPUs back, or everything forked later (the barrier ranks)
	 * would share CPU 0.
	 */
	if (sched_getaffinity(0, sizeof(p->cpus), &p->cpus)) {
		perror("sched_getaffinity");
		exit(1);
	}
	pin_cpu(0);
	p->buf = xfer_buf(MAX_MSG, 'a');
	p->ep = open_ep(&p->zcx, "initiator");
	zcx_ep_addr(p->ep, &mine);
	xwrite(a2b[1], &mine, sizeof(mine));
	xread(b2a[0], &theirs, sizeof(theirs));
	ret = zcx_ep_connect_flags(p->ep, &theirs, connect_flags, &p->peer);
	if (ret)
		fail("initiator", "zcx_ep_connect", ret);
	xread(p->done, &c, 1);	/* the responder is connected too */
	close(a2b[1]);
	close(b2a[0]);
}

static void pair_stop(struct pair *p)
{
	p->ctl->cmd = CMD_QUIT;
	xwrite(p->go, "g", 1);
	waitpid(p->pid, NULL, 0);
	close(p->go);
	close(p->done);
	zcx_ep_destroy(p->ep);
	zcx_close(p->zcx);
	munmap(p->buf, MAX_MSG);
	munmap(p->ctl, sizeof(*p->ctl));
	if (sched_setaffinity(0, sizeof(p->cpus), &p->cpus)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

/* Run @cmd on both sides; returns the initiator's elapsed ns. */
static unsigned long long pair_run(struct pair *p, int cmd, size_t len, long n)
{
	static struct zcx_req req[BW_WINDOW];
	unsigned long long t0, t;
	uint64_t ack, s0, r0;
	long i;
	int k, ret;
	char c;

	p->ctl->cmd = cmd;
	p->ctl->len = len;
	p->ctl->iters = n;
	xwrite(p->go, "g", 1);
	s0 = zcx_ep_syscalls(p->ep);
	r0 = dev_regs(p->zcx, "initiator");
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		switch (cmd) {
		case CMD_LAT:
		case CMD_CHECK:
			if (cmd == CMD_CHECK)
				fill(p->buf, len, 2 * i);
			ret = zcx_irecv(p->ep, p->buf + MAX_MSG / 2,
					len, TAG_PONG, ALL_BITS, &req[0]);
			if (ret)
				fail("initiator", "zcx_irecv", ret);
			ret = zcx_send(p->ep, p->peer, p->buf, len, TAG_PING);
			if (ret)
				fail("initiator", "zcx_send", ret);
			wait_ok(p->ep, &req[0], len, "initiator");
			if (cmd == CMD_CHECK)
				check("initiator", p->buf + MAX_MSG / 2, len, 2 * i + 1);
			break;
		case CMD_BW:
			for (k = 0; k < BW_WINDOW; k++) {
				ret = zcx_isend(p->ep, p->peer, p->buf, len, TAG_DATA, &req[k]);
				if (ret)
					fail("initiator", "zcx_isend", ret);
			}
			for (k = 0; k < BW_WINDOW; k++)
				wait_ok(p->ep, &req[k], len, "initiator");
			ret = (int)zcx_recv(p->ep, &ack, sizeof(ack), TAG_ACK, ALL_BITS, NULL);
			if (ret != (int)sizeof(ack))
				fail("initiator", "zcx_recv (ack)", ret < 0 ? ret : -EPROTO);
			break;
		}
	}
	t = now_ns() - t0;
	s0 = zcx_ep_syscalls(p->ep) - s0;
	r0 = dev_regs(p->zcx, "initiator") - r0;
	xread(p->done, &c, 1);
	p->syscalls = s0 + p->ctl->syscalls;
	p->regs = r0 + p->ctl->regs;
	return t;
}

/* Packets the node's RDMA devices have sent (-n), 0 without -n. */
static uint64_t wire_pkts(void)
{
	uint64_t sum = 0, n;
	glob_t g;
	size_t i;

	if (!connect_flags ||
	    glob("/sys/class/infiniband/*/ports/*/hw_counters/sent_pkts", 0, NULL, &g))
		return 0;
	for (i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");

		if (f && fscanf(f, "%" SCNu64, &n) == 1)
			sum += n;
		if (f)
			fclose(f);
	}
	globfree(&g);
	return sum;
}

/* What a size's timed runs add up to over the repetitions. */
struct tally {
	uint64_t calls;		/* system calls, both sides */
	uint64_t pkts;		/* packets the node's RDMA devices sent */
	uint64_t regs;		/* registrations asked of them, both sides */
	long msgs;
};

/* Latency of every size, repetition @rep, on pair @p. */
static void bench_lat(struct pair *p, int rep, unsigned long long target, struct tally *tally)
{
	size_t i;

	for (i = 0; i < (only_size ? 1 : NLAT); i++) {
		size_t len = only_size ? only_size : lat_sizes[i];
		unsigned long long t;
		uint64_t pkts0;
		long n;

		pair_run(p, CMD_CHECK, len, 3);
		n = xfer_iters(pair_run(p, CMD_LAT, len, 20), 20, target, 20);
		pkts0 = wire_pkts();
		t = pair_run(p, CMD_LAT, len, n);
		tally[i].pkts += wire_pkts() - pkts0;
		xfer_row(sysname, "lat", len, rep, (double)t / (2.0 * n));
		tally[i].calls += p->syscalls;
		tally[i].regs += p->regs;
		tally[i].msgs += 2 * n;
	}
}

/* Bandwidth of every size, repetition @rep, on pair @p. */
static void bench_bw(struct pair *p, int rep, unsigned long long target, struct tally *tally)
{
	size_t i;

	for (i = 0; i < (only_size ? 1 : NBW); i++) {
		size_t len = only_size ? only_size : bw_sizes[i];
		unsigned long long t;
		uint64_t pkts0;
		long n;

		n = xfer_iters(pair_run(p, CMD_BW, len, 1), 1, target, 1);
		pkts0 = wire_pkts();
		t = pair_run(p, CMD_BW, len, n);
		tally[i].pkts += wire_pkts() - pkts0;
		xfer_row(sysname, "bw", len, rep, (double)len * BW_WINDOW * n / (t / 1e9) / 1e6);
		tally[i].calls += p->syscalls;
		tally[i].regs += p->regs;
		tally[i].msgs += BW_WINDOW * n;
	}
}

/*
 * The structural rows of a test's sizes: system calls (row @calls) and,
 * with -n, packets and registrations (rows @pkts, @regs) per message;
 * with @copies, copies per byte.
 */
static void tally_rows(const struct tally *tally, const size_t *sizes, size_t nsizes,
		       const char *calls, const char *pkts, const char *regs, bool copies)
{
	size_t i;

	for (i = 0; i < (only_size ? 1 : nsizes); i++) {
		size_t len = only_size ? only_size : sizes[i];
		const struct tally *t = &tally[i];

		xfer_row(sysname, calls, len, 0, (double)t->calls / t->msgs);
		if (connect_flags) {
			xfer_row(sysname, pkts, len, 0, (double)t->pkts / t->msgs);
			xfer_row(sysname, regs, len, 0, (double)t->regs / t->msgs);
		}
		/* Receives are always posted first: one copy, inline or not. */
		if (copies)
			xfer_row(sysname, "copies", len, 0, 1);
	}
}

/*
 * Latency and bandwidth, each repetition on a new pair of processes with
 * new buffers, then the structural rows.  Under QEMU/TCG a pair's figures
 * depend on where its pages landed: pages whose addresses share an entry
 * of QEMU's direct-mapped TLB (fresh buffers often do: their physical
 * pages start at the same offset from a 2 MiB boundary) make every copy
 * between them several times slower.  One pair would carry its luck into
 * every repetition; new pairs show the spread.
 */
static void bench_pairs(bool lat, bool bw, int reps, unsigned long long target)
{
	struct tally lat_tally[NLAT] = { 0 }, bw_tally[NBW] = { 0 };
	struct pair p;
	int r;

	for (r = 1; r <= reps; r++) {
		pair_start(&p);
		if (lat)
			bench_lat(&p, r, target, lat_tally);
		if (bw)
			bench_bw(&p, r, target, bw_tally);
		pair_stop(&p);
	}
	if (lat)
		tally_rows(lat_tally, lat_sizes, NLAT, "syscalls", "pkts", "regs", true);
	if (bw)
		tally_rows(bw_tally, bw_sizes, NBW, "bw_syscalls", "bw_pkts", "bw_regs", false);
}

/* --- N processes: barrier -------------------------------------------------- */

struct bar_shared {
	_Atomic long stop_at[MAX_REPS + 1];	/* phase p ends after barrier stop_at[p] */
	uint64_t syscalls[MAX_PROCS];
};

static void bar_fail(int rank, const char *what, int err)
{
	char who[32];

	snprintf(who, sizeof(who), "barrier rank %d", rank);
	fail(who, what, err);
}

/*
 * Run phases 0 (warm-up) to @reps.  Rank 0 decides when a phase ends: it
 * sets stop_at[p] two barriers ahead of its own count, which no rank has
 * passed yet (nobody completes barrier c + 1 before rank 0 arrives at it).
 */
static void bar_member(struct zcx_ep *ep, uint32_t bar, struct bar_shared *sh, int rank,
		       int reps, unsigned long long target, double *ns)
{
	long count = 0, begin = 0;
	uint64_t s0 = 0;
	int p, ret;

	for (p = 0; p <= reps; p++) {
		unsigned long long t0 = now_ns();

		if (p == 1)
			s0 = zcx_ep_syscalls(ep);
		for (;;) {
			ret = zcx_barrier(ep, bar);
			if (ret)
				bar_fail(rank, "zcx_barrier", ret);
			count++;
			if (rank == 0 && !atomic_load(&sh->stop_at[p]) &&
			    count - begin >= 10 && (p == 0 || now_ns() - t0 >= target))
				atomic_store(&sh->stop_at[p], count + 2);
			if (count == atomic_load(&sh->stop_at[p]))
				break;
		}
		if (rank == 0 && p > 0)
			ns[p] = (double)(now_ns() - t0) / (count - begin);
		begin = count;
	}
	sh->syscalls[rank] = zcx_ep_syscalls(ep) - s0;
}

static void bench_bar(int nprocs, int reps, unsigned long long target)
{
	struct bar_shared *sh = xfer_shared(sizeof(*sh));
	double ns[MAX_REPS + 1];
	struct zcx_addr addr;
	struct zcx_ep *ep;
	struct zcx *zcx;
	pid_t pids[MAX_PROCS];
	uint64_t calls = 0;
	int hold[2], rank, r, ret;
	uint32_t bar;

	if (pipe(hold)) {
		perror("pipe");
		exit(1);
	}
	ep = open_ep(&zcx, "barrier rank 0");
	ret = zcx_barrier_create(ep, nprocs, &addr, &bar);
	if (ret)
		bar_fail(0, "zcx_barrier_create", ret);
	fflush(stdout);
	for (rank = 1; rank < nprocs; rank++) {
		pids[rank] = fork();
		if (pids[rank] < 0) {
			perror("fork");
			exit(1);
		}
		if (pids[rank] == 0) {
			struct zcx *mine;
			struct zcx_ep *myep;
			uint32_t mybar;
			char c;

			close(hold[1]);
			myep = open_ep(&mine, "barrier member");
			ret = zcx_barrier_join(myep, &addr, &mybar);
			if (ret)
				bar_fail(rank, "zcx_barrier_join", ret);
			bar_member(myep, mybar, sh, rank, reps, target, ns);
			/* Stay until rank 0 is through: leaving breaks the barrier. */
			if (read(hold[0], &c, 1) < 0)
				_exit(1);
			zcx_ep_destroy(myep);
			zcx_close(mine);
			_exit(0);
		}
	}
	close(hold[0]);
	bar_member(ep, bar, sh, 0, reps, target, ns);
	close(hold[1]);
	for (rank = 1; rank < nprocs; rank++) {
		int status;

		if (waitpid(pids[rank], &status, 0) != pids[rank] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			fprintf(stderr, "xfer_bench: barrier rank %d failed\n", rank);
	}
	for (r = 1; r <= reps; r++)
		xfer_row(sysname, "bar", nprocs, r, ns[r]);
	for (rank = 0; rank < nprocs; rank++)
		calls += sh->syscalls[rank];
	xfer_row(sysname, "bar_syscalls", nprocs, 0, (double)calls / nprocs /
		 (atomic_load(&sh->stop_at[reps]) - atomic_load(&sh->stop_at[0])));
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	munmap(sh, sizeof(*sh));
}

/* --- main ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: xfer_bench [-m enter|poll|both] [-T lat,bw,bar] [-r REPS] "
		"[-t MS] [-N MAXPROCS] [-s BYTES] [-n]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long target = 200 * 1000000ULL;
	const char *modes = "both", *tests = "lat,bw,bar";
	int reps = 3, maxprocs = 16, opt, m, n, ret;
	struct zcx_query q;
	struct zcx *zcx;

	while ((opt = getopt(argc, argv, "m:T:r:t:N:s:nh")) != -1) {
		switch (opt) {
		case 'n':
			connect_flags = ZCX_CONNECT_NET;
			break;
		case 'm':
			modes = optarg;
			break;
		case 'T':
			tests = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 't':
			target = strtoull(optarg, NULL, 0) * 1000000ULL;
			break;
		case 'N':
			maxprocs = atoi(optarg);
			break;
		case 's':
			only_size = strtoull(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (reps < 1 || reps > MAX_REPS || maxprocs < 2 || maxprocs > MAX_PROCS ||
	    only_size > MAX_MSG / 2)
		usage();
	/* A responder that dies must not kill us through a pipe write. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	ret = zcx_open(&zcx, 0);
	if (ret)
		fail("main", "zcx_open", ret);
	ret = zcx_query(zcx, &q);
	if (ret)
		fail("main", "zcx_query", ret);
	zcx_close(zcx);
	if (!(q.features & ZCX_FEATURE_TRANSPORT))
		fail("main", "the module has no transport", -ENOTTY);

	printf("system,test,param,rep,value\n");
	printf("zcx,threshold,%u,0,%u\n", q.zcopy_threshold, q.zcopy_threshold);
	for (m = 0; m < 2; m++) {
		if (m == 0 && strcmp(modes, "enter") && strcmp(modes, "both"))
			continue;
		if (m == 1 && strcmp(modes, "poll") && strcmp(modes, "both"))
			continue;
		sysname = connect_flags ? (m ? "zcx-net-poll" : "zcx-net-enter") :
					  (m ? "zcx-poll" : "zcx-enter");
		ep_flags = (m ? ZCX_EP_POLL : 0) | (connect_flags ? ZCX_EP_NET : 0);
		if (strstr(tests, "lat") || strstr(tests, "bw"))
			bench_pairs(strstr(tests, "lat"), strstr(tests, "bw"), reps, target);
		if (strstr(tests, "bar") && !connect_flags)
			for (n = 2; n <= maxprocs; n *= 2)
				bench_bar(n, reps, target);
	}
	return 0;
}
