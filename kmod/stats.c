// SPDX-License-Identifier: GPL-2.0-only
/*
 * stats.c - module-wide counters under /sys/class/misc/zcx/: what is alive
 * right now, so that tests (and administrators) can prove nothing leaked.
 */
#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/sysfs.h>

#include "zcx.h"

atomic64_t zcx_stat_contexts = ATOMIC64_INIT(0);
atomic64_t zcx_stat_regions = ATOMIC64_INIT(0);
atomic64_t zcx_stat_pinned_pages = ATOMIC64_INIT(0);

static ssize_t contexts_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&zcx_stat_contexts));
}
static DEVICE_ATTR_RO(contexts);

static ssize_t regions_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&zcx_stat_regions));
}
static DEVICE_ATTR_RO(regions);

static ssize_t pinned_pages_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", (long long)atomic64_read(&zcx_stat_pinned_pages));
}
static DEVICE_ATTR_RO(pinned_pages);

static struct attribute *zcx_attrs[] = {
	&dev_attr_contexts.attr,
	&dev_attr_regions.attr,
	&dev_attr_pinned_pages.attr,
	NULL,
};

static const struct attribute_group zcx_attr_group = {
	.attrs = zcx_attrs,
};

const struct attribute_group *zcx_attr_groups[] = {
	&zcx_attr_group,
	NULL,
};
