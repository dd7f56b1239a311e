// SPDX-License-Identifier: GPL-2.0-only
/*
 * zcx_context_test - one context per open(), bound to the opener's address
 * space: open/close cycles leak nothing, a forked child or a process that
 * received the descriptor gets EIO, threads of the owner share it, and two
 * processes each have their own.
 */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcx_test.h"

static int query(int fd)
{
	struct zcx_query q = { 0 };
	int ret = zcx_test_ioctl(fd, ZCX_IOC_QUERY, &q);

	if (!ret && q.abi_version != ZCX_ABI_VERSION)
		return -EPROTO;
	return ret;
}

/* Run fn(arg) in a child process; return its exit status or -1. */
static int in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST(open_close_cycles)
{
	long long refs = zcx_test_module_refs();
	int i;

	ASSERT_LE(0, refs);
	for (i = 0; i < (zcx_test_slowdown() > 1 ? 50 : 10000); i++) {
		int fd = zcx_test_open();

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, query(fd));
		ASSERT_EQ(0, close(fd));
	}
	EXPECT_EQ(refs, zcx_test_module_refs());
}

TEST(each_open_is_a_context)
{
	long long refs = zcx_test_module_refs();
	int fds[16], i;

	for (i = 0; i < 16; i++) {
		fds[i] = zcx_test_open();
		ASSERT_LE(0, fds[i]);
	}
	EXPECT_EQ(refs + 16, zcx_test_module_refs());
	for (i = 0; i < 16; i++) {
		EXPECT_EQ(0, query(fds[i]));
		close(fds[i]);
	}
	EXPECT_EQ(refs, zcx_test_module_refs());
}

TEST(dup_shares_context)
{
	int fd = zcx_test_open(), fd2;

	ASSERT_LE(0, fd);
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, query(fd2));
	close(fd);
	EXPECT_EQ(0, query(fd2));
	close(fd2);
}

TEST(close_on_exec)
{
	int fd = zcx_test_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

static int child_uses_inherited(void *arg)
{
	int fd = *(int *)arg, own, ret;

	if (query(fd) != -EIO)
		return 1;
	/* The child is not stuck: its own context works. */
	own = zcx_test_open();
	if (own < 0)
		return 2;
	ret = query(own);
	close(own);
	if (ret)
		return 3;
	/* Closing the inherited descriptor in the child is harmless. */
	close(fd);
	return 0;
}

TEST(fork_child_gets_eio)
{
	int fd = zcx_test_open();

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, in_child(child_uses_inherited, &fd));
	/* The parent keeps a working context. */
	EXPECT_EQ(0, query(fd));
	close(fd);
}

static int child_outlives_parent_fd(void *arg)
{
	int fd = *(int *)arg;
	int go;

	/* Wait until the parent has closed its copy. */
	if (read(((int *)arg)[1], &go, sizeof(go)) != sizeof(go))
		return 1;
	return query(fd) == -EIO ? 0 : 2;
}

/* The last reference in the wrong process still releases cleanly. */
TEST(child_holds_last_reference)
{
	long long refs = zcx_test_module_refs();
	int args[2], pipefd[2], status, go = 1;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	args[0] = zcx_test_open();
	args[1] = pipefd[0];
	ASSERT_LE(0, args[0]);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child_outlives_parent_fd(args));
	close(args[0]);
	ASSERT_EQ(sizeof(go), write(pipefd[1], &go, sizeof(go)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(refs, zcx_test_module_refs());
	close(pipefd[0]);
	close(pipefd[1]);
}

static int child_receives_fd(void *arg)
{
	int fd = zcx_test_recv_fd(*(int *)arg);

	if (fd < 0)
		return 1;
	return query(fd) == -EIO ? 0 : 2;
}

/* A descriptor passed over a socket does not carry the owner's memory. */
TEST(passed_fd_gets_eio)
{
	int sv[2], fd, status;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	/* The child exists before the fd is opened: nothing is inherited. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child_receives_fd(&sv[1]));
	fd = zcx_test_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcx_test_send_fd(sv[0], fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, query(fd));
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

static void *thread_queries(void *arg)
{
	int fd = *(int *)arg, i;

	for (i = 0; i < 1000; i++)
		if (query(fd))
			return (void *)1;
	return NULL;
}

TEST(threads_share_context)
{
	pthread_t threads[4];
	void *result;
	int fd = zcx_test_open(), i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, thread_queries, &fd));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], &result));
		EXPECT_EQ(NULL, result);
	}
	close(fd);
}

#define OWN_REGS	1000

/*
 * A child's own context: it registers one buffer OWN_REGS times (a miss,
 * then hits), tells the parent (@done), and once the parent says both
 * children did (@go), its context counts its own registrations only.
 */
static int child_own_context(int done, int go)
{
	char *buf = zcx_test_anon(4096), c = 0;
	const struct zcx_counters *n;
	struct zcx_test_ctx t;
	struct zcx_mr_reg r;
	int i, ret = 0;

	if (!buf || zcx_test_ctx_open(&t))
		ret = 1;
	for (i = 0; i < OWN_REGS && !ret; i++)
		if (zcx_test_reg(&t, buf, 4096, ZCX_ACCESS_ALL, &r) ||
		    zcx_test_dereg(&t, r.handle) || query(t.fd))
			ret = 2;
	/* Told even on a failure: the parent waits for both. */
	if (write(done, &c, 1) != 1 || ret || read(go, &c, 1) != 1)
		return ret ? ret : 3;
	n = &t.status->counters;
	if (n->misses != 1 || n->hits != OWN_REGS - 1 || n->regions != 1)
		return 4;
	zcx_test_ctx_close(&t);
	return 0;
}

TEST(two_processes_own_contexts)
{
	int status[2], done[2], go[2], i, fd = zcx_test_open();
	long long contexts = zcx_test_stat("contexts");
	pid_t pids[2];
	char c = 0;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(done));
	ASSERT_EQ(0, pipe(go));
	/* Two processes at once, each with a context of its own. */
	for (i = 0; i < 2; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(child_own_context(done[1], go[0]));
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(1, read(done[0], &c, 1));
	/* Both registered and hold their contexts: ours and theirs. */
	EXPECT_EQ(contexts + 2, zcx_test_stat("contexts"));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(1, write(go[1], &c, 1));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status[i], 0));
		EXPECT_TRUE(WIFEXITED(status[i]));
		EXPECT_EQ(0, WEXITSTATUS(status[i])) TH_LOG("child %d", i);
	}
	EXPECT_EQ(0, query(fd));
	close(fd);
}

ZCX_TEST_HARNESS_MAIN
