/*
 * rt_ckpt_int: what rt_ckpt.c, rt_ckpt_index.c, rt_ckpt_read.c and
 * rt_ckpt_cover.c share.
 */
#ifndef GTPLAN_RT_CKPT_INT_H
#define GTPLAN_RT_CKPT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "rt_ckpt_index.h"

/* Writes the reason into why (RT_CKPT_WHY bytes) and returns -1. */
int rt_ckpt_fail(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* FNV-1a 64's start: a piece's sum in the metadata begins here. */
#define RT_CKPT_FNV_OFFSET 0xcbf29ce484222325ULL

/* rt_ckpt.c's read of one piece at load, apart so that tests can give it
 * small parts: reads q's nr x nc floats from f's position in parts of
 * chunk floats into buf (chunk floats), continues the FNV-1a 64 in *sum
 * over them, and copies those inside t's region into dst (the region,
 * row-major, t->nc a row). 0, or -1 on a short read. */
int rt_ckpt_piece_copy(FILE *f, const struct rt_ckpt_piece *q,
		       const struct rt_ckpt_tensor *t, float *buf,
		       long long chunk, float *dst, uint64_t *sum);

#endif
