// SPDX-License-Identifier: GPL-2.0-only
/*
 * trace.c - instantiates the tracepoints declared in zcx_trace.h.
 */
#define CREATE_TRACE_POINTS
#include "zcx_trace.h"
