/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * backend.h - what zcx.ko offers a remote-transport backend (zcx_ib.ko),
 * the only header such a backend includes from zcx.ko.
 *
 * A backend announces each device it can drive with zcx_backend_dev_add()
 * and withdraws it with zcx_backend_dev_del() before the device goes away;
 * zcx.ko lists them (ZCX_CMD_GET_DEVICES).  The backend owns the struct;
 * zcx.ko only links it into its list, under zcx_backend_mutex, a leaf lock
 * (nothing else is taken while it is held).
 */
#ifndef ZCX_BACKEND_H
#define ZCX_BACKEND_H

#include <linux/list.h>
#include <linux/types.h>

#define ZCX_BACKEND_NAME_MAX	64

/**
 * struct zcx_backend_dev - a device a backend drives.
 * @list:	in zcx.ko's list of devices; zcx.ko's own.
 * @id:		set by zcx_backend_dev_add(): node-wide, never reused.
 * @name:	the device's name (e.g. "rxe0"), kept current by the backend
 *		through zcx_backend_dev_rename().
 * @backend:	the backend's name (e.g. "ib").
 * @ports:	ports the device has.
 * @mr_pages:	pages one fast registration can map.
 */
struct zcx_backend_dev {
	struct list_head list;
	u64 id;
	char name[ZCX_BACKEND_NAME_MAX];
	const char *backend;
	u32 ports;
	u32 mr_pages;
};

void zcx_backend_dev_add(struct zcx_backend_dev *dev);
void zcx_backend_dev_del(struct zcx_backend_dev *dev);
void zcx_backend_dev_rename(struct zcx_backend_dev *dev, const char *name);

#endif /* ZCX_BACKEND_H */
