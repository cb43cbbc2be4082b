/*
 * kern_flash: causal grouped-query attention in bf16 on NVIDIA tensor cores
 * (FlashAttention-2's tiling, Dao 2023, arXiv:2307.08691): the scores never
 * reach device memory, K and V are read once per query tile and never copied
 * per query head.
 *
 * The shape and the mask are kern.h's (struct kern_attn, kern_attn_fwd and
 * kern_attn_bwd): q and o are [batch, sq, nh, hd], k and v [batch, sk, nkv,
 * hd], lse [batch, nh, sq]; query row i attends key row s iff kpos[s] <=
 * qpos[i], so one call serves a sequence, a context-parallel chunk pair or
 * one key block of a ring. A NULL qpos or kpos means positions 0, 1, 2, ...
 * Only hd = 64 and hd = 128 are built.
 *
 * Precision: q, k, v, o and dout are bf16 (raw bits, uint16_t); q.k and the
 * softmax statistics are fp32, and so is every accumulation. P (forward) and
 * dS (backward) are rounded to bf16 before they enter the tensor cores, as
 * in FlashAttention-2. The gradients are fp32 and accumulate (+=), because
 * a ring adds one key block's share per call and dq collects every key
 * tile's share through fp32 atomics: bf16 sums over a ring would round once
 * per block. dq's summation order therefore varies from run to run (fp32
 * rounding only), and so do dk's and dv's where a launch splits each query
 * group's heads over several blocks to fill the GPU (few sequences: see
 * fl_bwd_split in kernels/kern_flash_bwd.cu); the forward is
 * bit-reproducible.
 *
 * Pointers are device pointers, 16-byte aligned; `stream` is a cudaStream_t
 * (NULL: the legacy default stream). Work is queued and not waited for.
 * Returns 0 or a negative KERN_E* code (kern.h) whose reason the caller
 * prints (kern_error_text); nothing is printed here.
 */
#ifndef GTPLAN_KERN_FLASH_H
#define GTPLAN_KERN_FLASH_H

#include <stdint.h>

#include "kern.h"

/* o = softmax(scale q k^T) v over the attended keys (bf16), lse = the
 * natural log of its denominator (fp32); a row that attends no key gets
 * o = 0 and lse = -INFINITY (kern_attn_fwd's contract). */
int kern_flash_fwd(void *stream, const struct kern_attn *a,
		   const uint16_t *q, const uint16_t *k, const uint16_t *v,
		   const int32_t *qpos, const int32_t *kpos, uint16_t *o,
		   float *lse);

/* kern_attn_bwd's contract for bf16 inputs: given the final o and lse,
 * accumulates dq += ..., dk += ..., dv += ... (fp32, same layouts as q, k,
 * v). `dsum` is scratch of batch * nh * sq floats (rowsum(dout * o)),
 * overwritten. */
int kern_flash_bwd(void *stream, const struct kern_attn *a,
		   const uint16_t *q, const uint16_t *k, const uint16_t *v,
		   const uint16_t *o, const float *lse, const uint16_t *dout,
		   const int32_t *qpos, const int32_t *kpos, float *dsum,
		   float *dq, float *dk, float *dv);

#endif
