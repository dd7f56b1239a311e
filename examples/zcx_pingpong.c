// SPDX-License-Identifier: MIT
/*
 * zcx_pingpong - two processes exchange tagged messages through zcx and
 * check every byte.  Read this first if you are writing a runtime on zcx.
 *
 *   zcx_pingpong [-p]            fork: the parent and its child, addresses
 *                                passed through pipes
 *   zcx_pingpong [-p] -s FILE    launched separately: the first process
 *   zcx_pingpong [-p] -c FILE    the second one (any order, same user)
 *
 * -p uses ZCX_EP_POLL endpoints (a kernel thread takes submissions: no
 * system call per message while busy).
 *
 * The steps, as a runtime would do them:
 *  1. each process opens its own context (zcx_open) - never share one
 *     across fork(): a context belongs to the process that opened it;
 *  2. each creates an endpoint and gives its address (struct zcx_addr, a
 *     fixed-size blob) to the other out of band: here a pipe or a file, in
 *     a real job PMIx, a socket, a shared file system...;
 *  3. each connects to the other's address: connections are one-way, so
 *     both directions need one;
 *  4. messages: the initiator posts the receive of the answer first
 *     (zcx_irecv), then sends; the responder receives, checks and answers.
 *     Messages below the module's zcopy_threshold travel inline; larger
 *     ones are copied once, straight from the sender's pages into the
 *     receiver's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zcx.h"

#define TAG_PING	1
#define TAG_PONG	2
#define ROUNDS		50

static const size_t sizes[] = { 8, 4095, 4096, 65536, 1 << 20 };
#define NSIZES	(sizeof(sizes) / sizeof(sizes[0]))
#define MAX_LEN	(1 << 20)

static const char *me = "zcx_pingpong";

static int check(int ret, const char *what)
{
	if (ret < 0) {
		fprintf(stderr, "%s: %s: %s\n", me, what, zcx_strerror(ret));
		exit(1);
	}
	return ret;
}

/* Byte k of message @seq of @len bytes: different for every message. */
static unsigned char pattern(size_t k, size_t len, unsigned int seq)
{
	return (unsigned char)(k * 31 + len + seq * 7);
}

static void fill(unsigned char *buf, size_t len, unsigned int seq)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = pattern(k, len, seq);
}

static void verify(const unsigned char *buf, size_t len, unsigned int seq)
{
	for (size_t k = 0; k < len; k++) {
		if (buf[k] != pattern(k, len, seq)) {
			fprintf(stderr, "%s: message %u (%zu bytes): byte %zu is %u, expected %u\n",
				me, seq, len, k, buf[k], pattern(k, len, seq));
			exit(1);
		}
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* --- out-of-band address exchange -------------------------------------------- */

/* Write @addr to @path atomically: readers never see half an address. */
static void put_file(const char *path, const struct zcx_addr *addr)
{
	char tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);	/* the key is a secret */
	if (fd < 0 || write(fd, addr, sizeof(*addr)) != sizeof(*addr) || close(fd) ||
	    rename(tmp, path)) {
		perror(path);
		exit(1);
	}
}

/* Wait (up to a minute) until @path exists, then read the address in it. */
static void get_file(const char *path, struct zcx_addr *addr)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int fd, i;

	for (i = 0; (fd = open(path, O_RDONLY)) < 0; i++) {
		if (errno != ENOENT || i == 6000) {
			perror(path);
			exit(1);
		}
		nanosleep(&tick, NULL);
	}
	if (read(fd, addr, sizeof(*addr)) != sizeof(*addr)) {
		fprintf(stderr, "%s: %s: short address\n", me, path);
		exit(1);
	}
	close(fd);
}

/* --- the ping-pong ------------------------------------------------------------ */

static void initiator(struct zcx_ep *ep, uint32_t peer, unsigned char *tx, unsigned char *rx)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t len = sizes[i];
		double t0 = now_us();

		for (unsigned int r = 0; r < ROUNDS; r++) {
			/* Zeroed: req.mr == NULL lets the module find or pin the buffer. */
			struct zcx_req req = { 0 };

			fill(tx, len, 2 * r);
			/* Post the receive of the answer before sending. */
			check(zcx_irecv(ep, rx, len, TAG_PONG, ~0ULL, &req), "zcx_irecv");
			check(zcx_send(ep, peer, tx, len, TAG_PING), "zcx_send");
			check(zcx_wait(ep, &req), "zcx_wait");
			check(req.status, "receive");
			if (req.len != len || req.tag != TAG_PONG) {
				fprintf(stderr, "%s: got %zu bytes with tag %llu, expected %zu, %d\n",
					me, req.len, (unsigned long long)req.tag, len, TAG_PONG);
				exit(1);
			}
			verify(rx, len, 2 * r + 1);
		}
		printf("%8zu bytes: %d round trips, %8.1f us each, data verified\n",
		       len, ROUNDS, (now_us() - t0) / ROUNDS);
	}
}

static void responder(struct zcx_ep *ep, uint32_t peer, unsigned char *buf)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t len = sizes[i];

		for (unsigned int r = 0; r < ROUNDS; r++) {
			uint64_t tag;
			/* Blocking receive: returns the bytes received. */
			ssize_t n = check((int)zcx_recv(ep, buf, len, TAG_PING, ~0ULL, &tag),
					  "zcx_recv");

			if ((size_t)n != len || tag != TAG_PING) {
				fprintf(stderr, "%s: got %zd bytes, expected %zu\n", me, n, len);
				exit(1);
			}
			verify(buf, len, 2 * r);
			fill(buf, len, 2 * r + 1);
			check(zcx_send(ep, peer, buf, len, TAG_PONG), "zcx_send");
		}
	}
}

/*
 * How the two processes reach each other: through a pair of pipes (fork
 * mode) or through two files (launched separately).
 */
struct oob {
	int wfd, rfd;			/* pipes */
	const char *mine, *theirs;	/* files */
};

static void publish(struct oob *oob, const struct zcx_addr *addr)
{
	if (oob->mine)
		put_file(oob->mine, addr);
	else if (write(oob->wfd, addr, sizeof(*addr)) != sizeof(*addr))
		check(-EPIPE, "pipe");
}

static void learn(struct oob *oob, struct zcx_addr *addr)
{
	if (oob->theirs) {
		get_file(oob->theirs, addr);
		unlink(oob->theirs);	/* read once, then gone: the key is a secret */
	} else if (read(oob->rfd, addr, sizeof(*addr)) != sizeof(*addr)) {
		check(-EPIPE, "pipe (the other process died?)");
	}
}

/*
 * One side: open, create the endpoint, publish its address, learn the
 * peer's, connect, run, close.
 */
static int run(bool first, unsigned int flags, struct oob *oob)
{
	struct zcx_addr addr, peer_addr;
	unsigned char *tx, *rx;
	struct zcx_query q;
	struct zcx_ep *ep;
	struct zcx *zcx;
	uint32_t peer;

	me = first ? "zcx_pingpong[initiator]" : "zcx_pingpong[responder]";
	check(zcx_open(&zcx, 0), "zcx_open");
	check(zcx_query(zcx, &q), "zcx_query");
	if (!(q.features & ZCX_FEATURE_TRANSPORT)) {
		fprintf(stderr, "%s: this zcx module has no transport\n", me);
		return 1;
	}
	check(zcx_ep_create(zcx, flags, 0, &ep), "zcx_ep_create");

	zcx_ep_addr(ep, &addr);
	publish(oob, &addr);
	learn(oob, &peer_addr);
	check(zcx_ep_connect(ep, &peer_addr, &peer), "zcx_ep_connect");

	if (posix_memalign((void **)&tx, 4096, MAX_LEN) || posix_memalign((void **)&rx, 4096, MAX_LEN)) {
		fprintf(stderr, "%s: out of memory\n", me);
		return 1;
	}
	if (first) {
		printf("zero-copy from %u bytes; %s endpoints\n", q.zcopy_threshold,
		       flags & ZCX_EP_POLL ? "polling (ZCX_EP_POLL)" : "doorbell (ioctl)");
		initiator(ep, peer, tx, rx);
		printf("system calls on this endpoint: %llu\n",
		       (unsigned long long)zcx_ep_syscalls(ep));
	} else {
		responder(ep, peer, rx);
	}
	/*
	 * Every operation completed, so closing loses nothing.  (A peer that
	 * closes early makes our pending operations fail with ECONNRESET.)
	 */
	zcx_ep_destroy(ep);
	zcx_close(zcx);
	free(tx);
	free(rx);
	return 0;
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	unsigned int flags = 0;
	int opt, first = 1, status;
	struct oob oob;

	while ((opt = getopt(argc, argv, "ps:c:")) != -1) {
		switch (opt) {
		case 'p':
			flags |= ZCX_EP_POLL;
			break;
		case 's':
		case 'c':
			file = optarg;
			first = opt == 's';
			break;
		default:
			fprintf(stderr, "usage: zcx_pingpong [-p] [-s FILE | -c FILE]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (file) {
		/* FILE carries the first process's address, FILE.peer the second's. */
		static char peer_file[4096];

		snprintf(peer_file, sizeof(peer_file), "%s.peer", file);
		oob = (struct oob){ -1, -1, first ? file : peer_file, first ? peer_file : file };
		return run(first, flags, &oob);
	}

	/* Fork mode: two pipes, one each way; each process opens zcx itself. */
	int to_child[2], to_parent[2];
	pid_t pid;

	if (pipe(to_child) || pipe(to_parent)) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		oob = (struct oob){ to_parent[1], to_child[0], NULL, NULL };
		_exit(run(false, flags, &oob));
	}
	close(to_child[0]);
	close(to_parent[1]);
	oob = (struct oob){ to_child[1], to_parent[0], NULL, NULL };
	if (run(true, flags, &oob))
		return 1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "zcx_pingpong: the responder failed\n");
		return 1;
	}
	return 0;
}
