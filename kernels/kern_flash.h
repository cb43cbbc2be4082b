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

/* The flash kernels by name, numbered as GTPLAN_FLASH / GTPLAN_FLASH_BWD
 * and the build's FLASH_WG_DEFAULT / FLASH_WG_BWD_DEFAULT number them
 * (below); KERN_FLASH_AUTO: the one those pick. */
enum kern_flash_kind {
	KERN_FLASH_MMA,
	KERN_FLASH_WG,
	KERN_FLASH_WGP,
	KERN_FLASH_WS,
	KERN_FLASH_AUTO
};

/* o = softmax(scale q k^T) v over the attended keys (bf16), lse = the
 * natural log of its denominator (fp32); a row that attends no key gets
 * o = 0 and lse = -INFINITY (kern_attn_fwd's contract).
 *
 * Two kernels implement it: mma.sync (kern_flash.cu, any sm_80+ GPU) and
 * wgmma (kern_flash_wg.cu, compute capability 9.0 only: FlashAttention-3's
 * warpgroup MMA), the latter in two schedules: "wg" (per key tile S = Q
 * K^T, softmax, O += P V, each product waited for) and "wgp" (the softmax
 * of tile i overlaps P V of tile i - 1, FlashAttention-3's
 * intra-warpgroup pipelining), and a third wgmma forward, "ws"
 * (kern_flash_ws.cu: FlashAttention-3's warp specialization, a TMA
 * producer warpgroup and ping-ponged consumer warpgroups; it runs wgp
 * where its tensor maps cannot be made). The environment variable
 * GTPLAN_FLASH = mma, wg, wgp or ws picks the kernel of kern_flash_fwd;
 * unset (or any other value) it is the build's FLASH_WG_DEFAULT (make
 * FLASH_WG_DEFAULT=N; 0 mma, 1 wg, 2 wgp, 3 ws, the Makefile's default). Off
 * compute capability 9.0 mma.sync always runs. kern_flash_fwd_with runs
 * the kernel it names (KERN_FLASH_AUTO: kern_flash_fwd's choice), for
 * tests, benchmarks and kern.h's CUDA contexts; the wgmma ones return
 * KERN_ENODEV on another device. kern_flash_fwd reads GTPLAN_FLASH at
 * every call (kern_flash_fwd_pick); a context reads it once, when made
 * (kernels/kern_cuda_fast.cu kern_cuda_flash_init), and passes its kind. */
int kern_flash_fwd(void *stream, const struct kern_attn *a,
		   const uint16_t *q, const uint16_t *k, const uint16_t *v,
		   const int32_t *qpos, const int32_t *kpos, uint16_t *o,
		   float *lse);
int kern_flash_fwd_with(enum kern_flash_kind kind, void *stream,
			const struct kern_attn *a, const uint16_t *q,
			const uint16_t *k, const uint16_t *v,
			const int32_t *qpos, const int32_t *kpos, uint16_t *o,
			float *lse);
/* The kernel kern_flash_fwd would run now: GTPLAN_FLASH's, else
 * FLASH_WG_DEFAULT's; KERN_FLASH_MMA off compute capability 9.0. */
enum kern_flash_kind kern_flash_fwd_pick(void);

/* The warp-specialized forward's machinery alone (kern_flash_ws.cu), for
 * tests; KERN_ENODEV off compute capability 9.0. Both read x, a bf16
 * tensor [2][n][heads][hd] (hd 64 or 128) in device memory, and write
 * bf16 (raw bits) into `out`.
 *  - op 0, the TMA tile: rows [r0, r0 + rows) of head `head` of batch
 *    entry 1 (rows past n as zeros), loaded once by TMA with the 128-byte
 *    swizzle and once by kernels/flash_wgmma.cuh's wg_load_tile (cp.async,
 *    the layout the wgmma descriptors expect); out gets the two
 *    shared-memory images byte for byte, TMA's first, each rows * hd
 *    values. Built for (hd, rows) = (64, 128), (64, 192), (128, 128).
 *  - op 1, the mbarrier ring: a producer thread loads the n / 64 tiles of
 *    64 rows x 64 columns of head `head` of batch entry 1 (hd 64), one by
 *    one, by TMA through a ring of `rows` stages (2 or 4) with full and
 *    empty barriers, to two consumer warpgroups that copy each tile, read
 *    through the swizzle, to out[tile 64 + row][col] (some consumer warps
 *    stall on some tiles, so that either side runs ahead); r0 unused.
 * *status gets 0, or 1 where a barrier wait gave up (a ring that
 * deadlocks or a copy whose bytes never arrive). Synchronous only in
 * the stream's order. */
int kern_flash_ws_probe(void *stream, int op, int hd, int rows, int n,
			int heads, int head, int r0, const uint16_t *x,
			uint16_t *out, int *status);

/* The wgmma kernel's two products alone, one warpgroup, for tests: d [64 x
 * n] (fp32, row-major) = a [64 x k] b (bf16, row-major). op 0: b is given
 * as b^T, [n][k], and both operands go through swizzled shared memory
 * K-major (S = Q K^T's path); op 1: b is [k][n], a goes through registers
 * and b is MN-major (O += P V's path). Built for (op, n, k) = (0, 64, 16)
 * (one m64n64k16), (0, 128, 64), (0, 128, 128), (1, 64, 16), (1, 64, 128),
 * (1, 128, 128); KERN_ENODEV off compute capability 9.0. Synchronous
 * only in the stream's order, like the rest. */
int kern_flash_wg_probe(void *stream, int op, int n, int k,
			const uint16_t *a, const uint16_t *b, float *d);

/* kern_attn_bwd's contract for bf16 inputs: given the final o and lse,
 * accumulates dq += ..., dk += ..., dv += ... (fp32, same layouts as q, k,
 * v), or with a->overwrite writes them (kern.h): the dsum pass, which
 * every kernel below runs before its main kernel on the same stream,
 * then zeroes them with 16-byte stores before the main kernel adds (where
 * sq or sk is 0 and no pass runs, cudaMemsetAsync does). `dsum` is
 * scratch of batch * nh * sq floats (rowsum(dout * o)), overwritten.
 *
 * Two kernels implement it, with the same bf16 roundings: mma.sync
 * (kern_flash_bwd.cu, any sm_80+ GPU) and wgmma (compute capability 9.0
 * only), the latter in three schedules: "wg" and "wgp"
 * (kern_flash_wg_bwd.cu: every thread loads and computes; each product
 * waited for, or the products of an item overlapped with the softmax
 * steps between them) and "ws" (kern_flash_ws_bwd.cu: FlashAttention-3's
 * warp specialization, a producer warpgroup loading with the TMA into a
 * ring for two consumer warpgroups, dq added by bulk reductions, sent
 * while dK's product runs; it falls back to "wg" where that file's top
 * comment says). The environment variable GTPLAN_FLASH_BWD = mma, wg,
 * wgp or ws picks the kernel of kern_flash_bwd; unset (or any other
 * value) it is the build's FLASH_WG_BWD_DEFAULT (make
 * FLASH_WG_BWD_DEFAULT=N; 0 mma, 1 wg, 2 wgp, 3 ws, the Makefile's
 * default). Off compute capability 9.0 mma.sync always runs.
 * kern_flash_bwd_with runs the kernel it names, as kern_flash_fwd_with,
 * and kern_flash_bwd_pick is GTPLAN_FLASH_BWD's choice as
 * kern_flash_fwd_pick is GTPLAN_FLASH's (a context reads it once). */
int kern_flash_bwd(void *stream, const struct kern_attn *a,
		   const uint16_t *q, const uint16_t *k, const uint16_t *v,
		   const uint16_t *o, const float *lse, const uint16_t *dout,
		   const int32_t *qpos, const int32_t *kpos, float *dsum,
		   float *dq, float *dk, float *dv);
int kern_flash_bwd_with(enum kern_flash_kind kind, void *stream,
			const struct kern_attn *a, const uint16_t *q,
			const uint16_t *k, const uint16_t *v,
			const uint16_t *o, const float *lse,
			const uint16_t *dout, const int32_t *qpos,
			const int32_t *kpos, float *dsum, float *dq, float *dk,
			float *dv);
enum kern_flash_kind kern_flash_bwd_pick(void);
/* After kern_flash_bwd_with(KERN_FLASH_WS) (or kern_flash_bwd running
 * ws) queued on
 * stream: waits for the stream and returns KERN_EDEVICE if one of its
 * barrier waits gave up (a protocol mistake: its results are wrong),
 * else 0. The flag is cleared. */
int kern_flash_ws_bwd_check(void *stream);

/* The ws backward's machinery alone, for tests; each waits for its
 * kernel and returns KERN_EDEVICE if a barrier wait gave up; KERN_ENODEV
 * off compute capability 9.0.
 * _tma: src is a bf16 tensor [2][rows][nh][hd] (hd 64 or 128, rows > 2
 * BM, BM = the ws kernel's query tile: 128 at hd 64, 64 at hd 128); six
 * items n = 0 .. 5 load query rows BM (n / 2) .. BM (n / 2) + BM - 1 of
 * batch n % 2, head h, through the kernel's TMA tile loads into its
 * two-stage ring (as both the Q and the dO tile) and copy them out: out
 * [6][2][BM][hd] gets item n's Q tile in out[n][0] and its dO tile in
 * out[n][1], zeros for rows past `rows`.
 * _dq: dq is fp32 [sq][nh][hd]; two items (query rows 0 .. 63 and 64 ..
 * 127) of one consumer warpgroup's dQ leave through the kernel's bulk
 * reduction: dq[r][h][c0 + c] += scale v(r, c) for r < min(sq, 128), c <
 * 64, v(r, c) = (7 r + 13 c) % 29 - 14, c0 = 64 at hd 128 (the second
 * warpgroup's columns), 0 at hd 64; every other element unchanged. */
int kern_flash_ws_bwd_probe_tma(void *stream, int hd, int rows, int nh,
				int h, const uint16_t *src, uint16_t *out);
int kern_flash_ws_bwd_probe_dq(void *stream, int hd, int sq, int nh, int h,
			       float scale, float *dq);

/* The wgmma backward's product forms alone, as warpgroup 1 of a block
 * runs them (with the tile offsets of kern_flash_wg_bwd.cu), for tests:
 * d [64 x n] (fp32, row-major) = a [64 x k] b (bf16, row-major). op 0:
 * b given as b^T, [n][k], both operands K-major in shared memory (S^T =
 * K Q^T's path); op 1: b is [k][n], a through registers, b MN-major (dV
 * += P^T dO's path); ops 2 (hd 64) and 3 (hd 128): b is [k][n], a stored
 * transposed (a^T, k rows of 64) and read M-major, b MN-major, both in
 * shared memory (dQ = dS K's path). Built for (op, n, k) = (0, 64, 64),
 * (0, 64, 128), (1, 64, 64), (1, 128, 64), (2, 64, 64), (3, 64, 128);
 * KERN_ENODEV off compute capability 9.0. */
int kern_flash_wg_bwd_probe(void *stream, int op, int n, int k,
			    const uint16_t *a, const uint16_t *b, float *d);

#endif
