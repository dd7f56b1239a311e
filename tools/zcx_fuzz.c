// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_fuzz - a seeded, reproducible fuzzer for /dev/zcx.
 *
 * Usage: zcx_fuzz [-s SEED] [-n OPS] [-t SECONDS] [-p PROCS] [-T THREADS]
 *                 [-w SECONDS] [-u UID] [-v]
 *
 *   -s SEED     64-bit seed (default: from getrandom()); printed first
 *   -n OPS      operations per worker thread (default: unlimited)
 *   -t SECONDS  time budget (default 10 unless -n is given)
 *   -p PROCS    worker processes (default 2)
 *   -T THREADS  fuzzing threads per process (default 2)
 *   -w SECONDS  watchdog: an operation that takes longer is "stuck" (60)
 *   -u UID      odd-numbered workers drop to this uid/gid (root only),
 *               as unprivileged users are the threat model
 *   -v          print every operation as it completes
 *
 * Random ioctl/mmap/munmap/mremap/madvise/fork/close sequences with
 * random and edge-case arguments, several processes and threads at once
 * (tools/fuzz/ops.c and mem.c have the details).  Worker P.T draws its
 * operations from its own xoshiro256** stream seeded from (SEED, P, T),
 * and each operation's random arguments from a stream seeded from that
 * and the operation's number: for one seed, each worker runs the same
 * sequence of operations every run (compare -v output), whatever the
 * module answers.  What it answers, and so the handles, keys and
 * addresses learned along the way, depends on how threads and processes
 * interleave, which no seed fixes; a failure that depends on a race may
 * need a few runs of its seed (or fewer workers: -p 1 -T 1) to come back.
 *
 * Any errno is an acceptable answer.  Failures: a worker or fork child
 * killed by a signal we did not send; an operation stuck for -w seconds;
 * a call that the ABI says must fail succeeding (see ops.c); and, once
 * every process exited, the module's live-object counters (contexts,
 * regions, pinned pages in /sys/class/misc/zcx/) not back where they
 * were.  A failure prints "FAIL seed=S worker=P.T op#=N last=..." and the
 * worker's last operations, and exits 1.  Exit 4: no /dev/zcx (skip).
 */
#include "fuzz.h"

#include <getopt.h>
#include <inttypes.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <grp.h>
#include <sys/syscall.h>

static struct shared *sh;
static uint64_t opt_ops;
static int opt_procs = 2, opt_threads = 2, opt_watchdog = 60;
static long opt_uid = -1;
static int opt_verbose;

static void on_usr1(int sig)
{
	(void)sig;	/* interrupts a blocking call of a fuzzing thread */
}

static struct thr *thrs;
static int ticker_stop;

/*
 * Per worker process: interrupt (SIGUSR1, EINTR) any fuzzing thread that
 * has been blocked in one call for more than 250 ms, so that an ENTER
 * waiting for completions that will never come, a read() without events,
 * or a wait does not stall the run.  A call that cannot be interrupted
 * stays blocked, and the watchdog reports it.
 */
static void *ticker(void *arg)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	uint64_t since;
	int i;

	(void)arg;
	while (!__atomic_load_n(&ticker_stop, __ATOMIC_RELAXED)) {
		nanosleep(&tick, NULL);
		for (i = 0; i < opt_threads; i++) {
			since = __atomic_load_n(&thrs[i].block_since, __ATOMIC_RELAXED);
			if (since && now_ns() - since > 250000000ULL)
				pthread_kill(thrs[i].th, SIGUSR1);
		}
	}
	return NULL;
}

static void *fuzz_thread(void *arg)
{
	struct thr *t = arg;

	t->slot->tid = (int32_t)syscall(SYS_gettid);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED) && (!opt_ops || t->nops < opt_ops))
		run_one(t);
	if (t->child) {
		__atomic_store_n(&t->slot->started, now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(&t->slot->busy, 1, __ATOMIC_RELEASE);
		snprintf(t->slot->ring[t->slot->opno % RING_N], DESC_LEN, "end: kill fork child %d",
			 (int)t->child);
		t->slot->opno++;
		reap_child(t, 2);
		__atomic_store_n(&t->slot->busy, 0, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int drop_privileges(uid_t uid)
{
	return setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid);
}

static struct proc *self;

/* The lines of /proc/self/maps within 2 MiB of @a (from a signal handler). */
static void dump_maps_near(uintptr_t a)
{
	static char buf[1 << 16];
	char *line, *end;
	ssize_t n, len = 0;
	int fd = open("/proc/self/maps", O_RDONLY);

	if (fd < 0)
		return;
	while (len < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	for (line = buf; line < buf + len; line = end + 1) {
		unsigned long lo = strtoul(line, &end, 16), hi = strtoul(end + 1, NULL, 16);

		end = strchr(line, '\n');
		if (!end)
			break;
		if (hi + (2UL << 20) > a && lo < a + (2UL << 20) && write(2, line, end - line + 1) < 0)
			return;
	}
}

/*
 * A fault is reported, not survived: print where it hit (in which arena
 * slot or descriptor mapping, and what we believed was there), then die
 * of the signal with the default action back in place, which the driver
 * reports.
 */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[200];
	uintptr_t a = (uintptr_t)si->si_addr, base = (uintptr_t)self->arena;
	int n, i = a >= base && a < base + NBUF * SLOT_SIZE ? (int)((a - base) / SLOT_SIZE) : -1;

	(void)uc;
	n = snprintf(msg, sizeof(msg), "# worker %d: signal %d code %d at %#lx, arena slot %d "
		     "(len %#zx rw_ok %d backed %d)\n", self->idx, sig, si->si_code,
		     (unsigned long)a, i, i >= 0 ? self->bufs[i].len : 0,
		     i >= 0 ? self->bufs[i].rw_ok : 0, i >= 0 ? self->bufs[i].backed : 0);
	if (write(2, msg, n) < 0)
		return;
	for (i = 0; i < NMAPS; i++) {
		const struct fmap *m = &self->maps[i];

		if (m->kind != FM_FREE && a >= (uintptr_t)m->p && a < (uintptr_t)m->p + m->len) {
			n = snprintf(msg, sizeof(msg), "# in descriptor mapping %d: kind %d at %p len %#zx "
				     "safe %#zx ep %u\n", i, m->kind, (void *)m->p, m->len, m->safe, m->ep);
			if (write(2, msg, n) < 0)
				return;
		}
	}
	dump_maps_near(a);
	/* Die of it (the default action is back): sent by kill() too. */
	raise(sig);
}

static void worker(int p)
{
	struct proc pr;
	struct sigaction sa;
	struct wslot *s0 = &sh->slots[p * opt_threads];
	pthread_t tk;
	int q;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART */
	sigaction(SIGUSR1, &sa, NULL);
	proc_init(&pr, p);
	self = &pr;
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (opt_uid >= 0 && p % 2 && drop_privileges((uid_t)opt_uid)) {
		perror("zcx_fuzz: dropping privileges");
		_exit(2);
	}
	/* Two contexts to start with; the fuzzing opens and closes more. */
	for (q = 0; q < 2; q++)
		pr.fds[q] = open(ZCX_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	thrs = calloc(opt_threads, sizeof(*thrs));
	if (!thrs)
		_exit(2);
	for (q = 0; q < opt_threads; q++) {
		thrs[q].pr = &pr;
		thrs[q].sh = sh;
		thrs[q].slot = &sh->slots[p * opt_threads + q];
		thrs[q].p = p;
		thrs[q].t = q;
		rng_seed(&thrs[q], sh->seed, p, q);
	}
	for (q = 0; q < opt_threads; q++)
		if (pthread_create(&thrs[q].th, NULL, fuzz_thread, &thrs[q]))
			_exit(2);
	pthread_create(&tk, NULL, ticker, NULL);
	for (q = 0; q < opt_threads; q++)
		pthread_join(thrs[q].th, NULL);
	__atomic_store_n(&ticker_stop, 1, __ATOMIC_RELAXED);
	pthread_join(tk, NULL);
	/* Closing can block in the module too: the watchdog sees it as 0's op. */
	snprintf(s0->ring[s0->opno % RING_N], DESC_LEN, "end: close every descriptor");
	s0->tid = getpid();
	__atomic_store_n(&s0->started, now_ns(), __ATOMIC_RELAXED);
	s0->opno++;
	__atomic_store_n(&s0->busy, 1, __ATOMIC_RELEASE);
	proc_teardown(&pr);
	__atomic_store_n(&s0->busy, 0, __ATOMIC_RELEASE);
	_exit(pr.failed ? 1 : 0);
}

/* Where a stuck thread is, for the report (root only). */
static void dump_stack(int tid)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", tid);
	f = fopen(path, "r");
	if (!f)
		return;
	fprintf(stderr, "# kernel stack of %d:\n", tid);
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "#   %s", line);
	fclose(f);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: zcx_fuzz [-s SEED] [-n OPS] [-t SECONDS] [-p PROCS] [-T THREADS]\n"
		   "                [-w WATCHDOG_SECONDS] [-u UID] [-v]\n");
}

static void summary(void)
{
	uint64_t total = 0, n;
	int op, b, i;

	for (i = 0; i < opt_procs * opt_threads; i++)
		total += sh->slots[i].opno;
	printf("# %llu operations\n", (unsigned long long)total);
	for (op = 0; op < NOPS; op++) {
		char line[1024];
		int len = snprintf(line, sizeof(line), "#   %-13s ok %llu", op_names[op],
				   (unsigned long long)sh->stats[op][0]);

		for (b = 1; b < ERRB && len < (int)sizeof(line) - 40; b++) {
			n = sh->stats[op][b];
			if (n)
				len += snprintf(line + len, sizeof(line) - len, " %s %llu",
						b == ERRB - 1 ? "other" :
						strerrorname_np(b) ? strerrorname_np(b) : "?",
						(unsigned long long)n);
		}
		printf("%s\n", line);
	}
}

int main(int argc, char **argv)
{
	struct zcx_test_census before, after;
	uint64_t seed = 0, start, deadline = 0, now;
	int have_seed = 0, secs = -1, c, i, p, alive, failed = 0, st;
	pid_t *pids, r;
	const char *diff;
	size_t size;

	while ((c = getopt(argc, argv, "s:n:t:p:T:w:u:vh")) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); have_seed = 1; break;
		case 'n': opt_ops = strtoull(optarg, NULL, 0); break;
		case 't': secs = atoi(optarg); break;
		case 'p': opt_procs = atoi(optarg); break;
		case 'T': opt_threads = atoi(optarg); break;
		case 'w': opt_watchdog = atoi(optarg); break;
		case 'u': opt_uid = atol(optarg); break;
		case 'v': opt_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || opt_procs < 1 || opt_procs > 64 || opt_threads < 1 ||
	    opt_threads > 64 || opt_watchdog < 1) {
		usage(stderr);
		return 2;
	}
	if (!have_seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = now_ns() ^ ((uint64_t)getpid() << 32);
	if (secs < 0 && !opt_ops)
		secs = 10;
	printf("seed=%llu\n", (unsigned long long)seed);
	printf("# procs=%d threads=%d ops=%llu seconds=%d watchdog=%d uid=%ld\n", opt_procs,
	       opt_threads, (unsigned long long)opt_ops, secs, opt_watchdog, opt_uid);
	fflush(stdout);
	if (access(ZCX_DEVICE_PATH, R_OK | W_OK)) {
		printf("# no usable %s: %s\n", ZCX_DEVICE_PATH, strerror(errno));
		return 4;
	}
	if (opt_uid >= 0 && geteuid() != 0) {
		printf("# not root: -u ignored\n");
		opt_uid = -1;
	}
	before = zcx_test_census();

	size = sizeof(*sh) + sizeof(struct wslot) * opt_procs * opt_threads;
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(opt_procs, sizeof(*pids));
	if (sh == MAP_FAILED || !pids) {
		perror("zcx_fuzz");
		return 2;
	}
	sh->seed = seed;
	sh->verbose = opt_verbose;
	sh->nprocs = opt_procs;
	sh->nthreads = opt_threads;
	start = now_ns();
	if (secs >= 0)
		deadline = start + (uint64_t)secs * 1000000000ULL;
	for (p = 0; p < opt_procs; p++) {
		pids[p] = fork();
		if (pids[p] < 0) {
			perror("zcx_fuzz: fork");
			__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
			opt_procs = p;
			break;
		}
		if (pids[p] == 0)
			worker(p);
	}

	/* Collect the workers; stop them on time; watch for stuck threads. */
	for (alive = opt_procs; alive;) {
		struct timespec tick = { 0, 100 * 1000 * 1000 };

		nanosleep(&tick, NULL);
		now = now_ns();
		if (deadline && now > deadline)
			__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			for (p = 0; p < opt_procs && pids[p] != r; p++)
				;
			if (p == opt_procs)
				continue;
			pids[p] = 0;
			alive--;
			if (WIFSIGNALED(st)) {
				/* Which thread: the one whose operation started last. */
				int q, last = 0;

				for (q = 1; q < opt_threads; q++)
					if (sh->slots[p * opt_threads + q].started >
					    sh->slots[p * opt_threads + last].started)
						last = q;
				printf("FAIL seed=%llu worker=%d.%d op#=%llu last=%s: killed by signal %d (%s)\n",
				       (unsigned long long)seed, p, last,
				       (unsigned long long)sh->slots[p * opt_threads + last].opno,
				       sh->slots[p * opt_threads + last].ring[
					       (sh->slots[p * opt_threads + last].opno + RING_N - 1) % RING_N],
				       WTERMSIG(st), strsignal(WTERMSIG(st)));
				fflush(stdout);
				for (q = 0; q < opt_threads; q++)
					dump_ring(sh, p, q);
				failed = 1;
				__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
			} else if (WEXITSTATUS(st)) {
				failed = 1;	/* it printed why */
				__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
			}
		}
		for (i = 0; i < opt_procs * opt_threads; i++) {
			struct wslot *s = &sh->slots[i];
			int q;

			uint64_t started = __atomic_load_n(&s->started, __ATOMIC_RELAXED);

			/* (An operation may have started after "now" was read.) */
			if (!pids[i / opt_threads] || !__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE) ||
			    started > now || now - started < (uint64_t)opt_watchdog * 1000000000ULL)
				continue;
			printf("FAIL seed=%llu worker=%d.%d op#=%llu last=%s: stuck for %d s\n",
			       (unsigned long long)seed, i / opt_threads, i % opt_threads,
			       (unsigned long long)s->opno, s->ring[(s->opno + RING_N - 1) % RING_N],
			       opt_watchdog);
			fflush(stdout);
			dump_ring(sh, i / opt_threads, i % opt_threads);
			dump_stack(s->tid);
			for (q = 0; q < opt_procs; q++)
				if (pids[q])
					kill(pids[q], SIGKILL);
			summary();
			return 1;
		}
	}
	if (__atomic_load_n(&sh->failed, __ATOMIC_RELAXED))
		failed = 1;

	/* Everything closed and exited: the module must be back where it was. */
	diff = zcx_test_census_settle(&before, 30000);
	after = zcx_test_census();
	if (diff) {
		printf("FAIL seed=%llu worker=*.* op#=- last=(all exited): module counters not back: "
		       "contexts %lld -> %lld, regions %lld -> %lld, pinned_pages %lld -> %lld\n",
		       (unsigned long long)seed, before.contexts, after.contexts, before.regions,
		       after.regions, before.pinned_pages, after.pinned_pages);
		failed = 1;
	}
	summary();
	printf("%s seed=%llu (%.1f s)\n", failed ? "FAIL" : "PASS", (unsigned long long)seed,
	       (now_ns() - start) / 1e9);
	fflush(stdout);
	return failed;
}
