/*
 * rt_ckpt_int: what rt_ckpt_index.c, rt_ckpt_read.c and rt_ckpt_cover.c
 * share.
 */
#ifndef GTPLAN_RT_CKPT_INT_H
#define GTPLAN_RT_CKPT_INT_H

/* Writes the reason into why (RT_CKPT_WHY bytes) and returns -1. */
int rt_ckpt_fail(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
