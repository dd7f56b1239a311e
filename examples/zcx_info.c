// SPDX-License-Identifier: MIT
/*
 * zcx_info - open /dev/zcx through libzcx and print what the module
 * offers: ABI version, features and limits.  Also shows that a forked
 * child cannot use its parent's handle.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zcx.h"

int main(void)
{
	struct zcx_query q;
	struct zcx *zcx;
	int ret, status;
	pid_t pid;

	ret = zcx_open(&zcx, 0);
	if (ret) {
		fprintf(stderr, "zcx_open: %s\n", zcx_strerror(ret));
		return 1;
	}
	ret = zcx_query(zcx, &q);
	if (ret) {
		fprintf(stderr, "zcx_query: %s\n", zcx_strerror(ret));
		zcx_close(zcx);
		return 1;
	}
	printf("zcx ABI version  %u\n", q.abi_version);
	printf("features         0x%llx\n", (unsigned long long)q.features);
	printf("cache entries    %u per context\n", q.cache_entries);
	printf("cache bytes      %llu%s\n", (unsigned long long)q.cache_bytes,
	       q.cache_bytes ? "" : " (RLIMIT_MEMLOCK only)");
	printf("ring depth       %u\n", q.ring_depth);
	printf("zero-copy from   %u bytes\n", q.zcopy_threshold);
	printf("page size        %u\n", q.page_size);
	if (q.features & ZCX_FEATURE_TRANSPORT)
		printf("eager credits    %u per connection, %u endpoints per context\n",
		       q.eager_credits, q.max_endpoints);

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		ret = zcx_query(zcx, &q);
		printf("forked child     %s\n", zcx_strerror(ret));
		fflush(stdout);
		_exit(ret == -EIO ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "forked child could use its parent's context\n");
		zcx_close(zcx);
		return 1;
	}
	zcx_close(zcx);
	return 0;
}
