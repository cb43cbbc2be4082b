/*
 * flash_probe_gpu.h: tests/gpu/flash_probe_gpu.c's checks of the flash
 * kernels' parts alone and the tally of tests/gpu/test_flash_gpu.c.
 */
#ifndef GTPLAN_FLASH_PROBE_GPU_H
#define GTPLAN_FLASH_PROBE_GPU_H

#include <stdint.h>

#include "kern.h"
#include "kern_flash.h"

/* Lines printed "ok" and "FAIL" so far. */
extern int tf_pass, tf_fail;

/* Prints one line: ok when err <= tol (NaN fails), and counts it. */
void tf_check(const char *what, const char *name, double err, double tol);

/* The wgmma products (forward and backward); 0 where the device has no
 * wgmma kernel (printed as a skip), else 1 (failures counted). */
int tf_probe_wg(struct kern_ctx *g);

/* The ws backward's ring and dQ reduction; 1 when every probe passed. */
int tf_probe_ws(struct kern_ctx *g);

/* kern_flash_bwd_with(kind, ...); where it ran the ws kernel (kind ws,
 * or the automatic choice under GTPLAN_FLASH_BWD=ws) followed by
 * kern_flash_ws_bwd_check: a barrier wait that gave up is printed and
 * counted as a failure and sets tf_ws_broken (the call still returns 0,
 * so that the test goes on). */
extern int tf_ws_broken;
int tf_bwd(enum kern_flash_kind kind, void *st, const struct kern_attn *a,
	   const uint16_t *q, const uint16_t *k, const uint16_t *v,
	   const uint16_t *o, const float *lse, const uint16_t *dout,
	   const int32_t *qpos, const int32_t *kpos, float *dsum, float *dq,
	   float *dk, float *dv);

#endif
