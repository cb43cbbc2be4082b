/*
 * kern_cpu: the CPU twin's members that live outside kern_cpu.c (which
 * binds them into kern_cpu_ops); each follows the kern.h wrapper of the
 * same name, arguments already checked by kern.c.
 *
 * Ownership: as kern.h: the caller owns every buffer; these functions
 * keep no pointer past the call.
 */
#ifndef GTPLAN_KERN_CPU_H
#define GTPLAN_KERN_CPU_H

#include "kern.h"

/* kernels/kern_cpu_attn.c: causal grouped-query attention. */
int kern_cpu_attn_fwd(struct kern_ctx *k, const struct kern_attn *a,
		      const float *q, const float *kk, const float *v,
		      const int32_t *qpos, const int32_t *kpos, float *o,
		      float *lse);
int kern_cpu_attn_merge(struct kern_ctx *k, const struct kern_attn *a,
			float *o, float *lse, const float *o2,
			const float *lse2);
int kern_cpu_attn_bwd(struct kern_ctx *k, const struct kern_attn *a,
		      const float *q, const float *kk, const float *v,
		      const float *o, const float *lse, const float *dout,
		      const int32_t *qpos, const int32_t *kpos, float *dq,
		      float *dk, float *dv);

#endif
