// SPDX-License-Identifier: GPL-2.0-only
/*
 * backend.c - the devices remote-transport backends (zcx_ib.ko) drive.
 *
 * zcx.ko itself never links against ib_core: a backend module registers
 * its devices here, so that zcx.ko can show them (netlink.c) and, without
 * any backend, loads on a node with no RDMA stack at all.
 */
#include <linux/export.h>
#include <linux/mutex.h>
#include <linux/string.h>

#include "zcx.h"

DEFINE_MUTEX(zcx_backend_mutex);
LIST_HEAD(zcx_backend_devs);
static u64 zcx_backend_last_id;

void zcx_backend_dev_add(struct zcx_backend_dev *dev)
{
	mutex_lock(&zcx_backend_mutex);
	dev->id = ++zcx_backend_last_id;
	/* In order of ids: a dump resumes after the last id it sent. */
	list_add_tail(&dev->list, &zcx_backend_devs);
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_dev_add);

void zcx_backend_dev_del(struct zcx_backend_dev *dev)
{
	mutex_lock(&zcx_backend_mutex);
	list_del(&dev->list);
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_dev_del);

void zcx_backend_dev_rename(struct zcx_backend_dev *dev, const char *name)
{
	mutex_lock(&zcx_backend_mutex);
	strscpy(dev->name, name, sizeof(dev->name));
	mutex_unlock(&zcx_backend_mutex);
}
EXPORT_SYMBOL_GPL(zcx_backend_dev_rename);
