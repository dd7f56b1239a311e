/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zcx_module.h - load and unload zcx's modules (zcx, zcx_ib) from the
 * selftests.  A module's file is the one next to $ZCX_KO (the zcx.ko the
 * runner loaded from the tree) or, without it, what "modinfo -n" names
 * (DKMS's).  Calls return 0 or -errno.
 */
#ifndef ZCX_MODULE_H
#define ZCX_MODULE_H

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The file of module @name in @path (PATH_MAX bytes); false if unknown. */
static inline bool zcx_module_path(const char *name, char *path, size_t size)
{
	const char *env = getenv("ZCX_KO");
	char cmd[128], dir[4096];
	FILE *p;

	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
		snprintf(path, size, "%s/%s.ko", dirname(dir), name);
		return access(path, R_OK) == 0;
	}
	snprintf(cmd, sizeof(cmd), "modinfo -n %s 2>/dev/null", name);
	p = popen(cmd, "r");
	if (!p)
		return false;
	if (!fgets(path, size, p))
		path[0] = '\0';
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	return path[0] != '\0';
}

/*
 * Load module @name with @params.  A compressed file (as DKMS installs for
 * 6.12) is decompressed here, like kmod does: the kernel's own decompressor
 * only takes what the kernel build produced.  The modules @name needs must
 * be loaded already.
 */
static inline int zcx_module_load(const char *name, const char *params)
{
	size_t len, size = 0, cap = 1 << 20;
	char path[4096], cmd[4200], *image;
	FILE *f;
	int ret;

	if (!zcx_module_path(name, path, sizeof(path)))
		return -ENOENT;
	len = strlen(path);
	if (len > 3 && !strcmp(path + len - 3, ".xz"))
		snprintf(cmd, sizeof(cmd), "xz -dc '%s'", path);
	else if (len > 4 && !strcmp(path + len - 4, ".zst"))
		snprintf(cmd, sizeof(cmd), "zstd -dc '%s'", path);
	else
		snprintf(cmd, sizeof(cmd), "cat '%s'", path);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	image = malloc(cap);
	while (image) {
		char *bigger;

		size += fread(image + size, 1, cap - size, f);
		if (size < cap)
			break;
		cap *= 2;
		bigger = realloc(image, cap);
		if (!bigger) {
			free(image);
			image = NULL;
		} else {
			image = bigger;
		}
	}
	if (pclose(f) != 0 || !image || !size) {
		free(image);
		return -EIO;
	}
	ret = syscall(SYS_init_module, image, size, params) ? -errno : 0;
	free(image);
	return ret;
}

static inline int zcx_module_unload(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

static inline bool zcx_module_loaded(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return stat(path, &st) == 0;
}

#endif /* ZCX_MODULE_H */
