/*
 * dispatch_int: internal, not part of the public API. What dispatch.c
 * (the grid and the rule) lends dispatch_check.c (the placement check).
 */
#ifndef GTPLAN_DISPATCH_INT_H
#define GTPLAN_DISPATCH_INT_H

#include "dispatch.h"

/* The first pair of dense axes of size > 1 that Megatron's order puts the
 * other way round from the driver; 0 when there is none. */
int drv_order_clash(const struct plan *p, enum lay_axis *early,
		    enum lay_axis *late);

#endif
