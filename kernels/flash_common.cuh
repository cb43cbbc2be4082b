/*
 * flash_common.cuh: what kern_flash.cu (forward, the public entry points)
 * and kern_flash_bwd.cu (backward) share: the launch parameters, the mask
 * classification of a pair of tiles and the argument checks. A CUDA error
 * becomes a KERN_E* value through kernels/kern_cuda.h's CUDACHECK, its
 * message kept for the caller to print (kern_error_text, kernels/kern.h).
 */
#ifndef GTPLAN_FLASH_COMMON_CUH
#define GTPLAN_FLASH_COMMON_CUH

#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>
#include <string.h>

#include "flash_mma.cuh"
#include "kern_cuda.h"

extern "C" {
#include "kern_flash.h"
}

#define FL_LOG2E 1.4426950408889634f
#define FL_LN2 0.6931471805599453f

enum { FL_SKIP, FL_PART, FL_FULL };

struct fl_params {
	const fl_bf16 *q, *k, *v, *o, *dout;
	fl_bf16 *out;
	const float *lse_in;
	float *lse, *dsum, *dq, *dk, *dv;
	const int32_t *qpos, *kpos;
	int batch, sq, sk, nh, nkv;
	int zero; /* backward: the dsum pass clears dq, dk, dv first */
	float scale, scale_log2;
};

/* The block's place (x, y, z) in a grid (tiles along the sequence, heads,
 * batch), with x varying slowest in launch order: blocks start in linear
 * order (blockIdx.x fastest), so under this map every head's and sample's
 * tile 0 starts before any tile 1, and so on. A kernel that numbers its
 * tiles heaviest first (the most keys or queries under a causal mask) so
 * runs the longest blocks first over the whole grid, not per head, and
 * the last wave holds the short ones (longest processing time first). A
 * bijection of the grid: which block computes what changes, not what. */
static __device__ __forceinline__ void fl_block_lpt(int *x, int *y, int *z)
{
	unsigned yz = gridDim.y * gridDim.z;
	unsigned lin = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y *
						 blockIdx.z);
	unsigned r = lin % yz;

	*x = (int)(lin / yz);
	*y = (int)(r % gridDim.y);
	*z = (int)(r / gridDim.y);
}

static __device__ __forceinline__ int fl_pos(const int32_t *pos, int i)
{
	return pos ? pos[i] : i;
}

/* q side [qmin, qmax] (qall: no row cut), key side likewise. */
static __device__ __forceinline__ int fl_class(int qmin, int qmax, int qall,
					       int kmin, int kmax, int kall)
{
	if (kmin > qmax)
		return FL_SKIP;
	return qall && kall && kmax <= qmin ? FL_FULL : FL_PART;
}


/* The class of every tile of `tile` positions of pos[0 .. n) against the
 * other side's range [omin, omax] (oall: none of its rows cut), one thread
 * per tile, into cls[]; `keys`: pos are key positions and the other side is
 * a query tile (forward), else the reverse (backward). Done once per block
 * so that the tile loop reads its schedule from shared memory; the caller
 * synchronises. */
static __device__ void fl_classify(const int32_t *pos, int n, int tile,
				   int omin, int omax, int oall, int keys,
				   unsigned char *cls, int tid, int nt)
{
	for (int t = tid; t * tile < n; t += nt) {
		int end = min(n, (t + 1) * tile), lo = t * tile, hi = end - 1;
		int all = (t + 1) * tile <= n;

		if (pos) {
			lo = INT_MAX;
			hi = INT_MIN;
			for (int j = t * tile; j < end; j++) {
				lo = min(lo, pos[j]);
				hi = max(hi, pos[j]);
			}
		}
		cls[t] = (unsigned char)(keys ? fl_class(omin, omax, oall, lo, hi, all) :
						fl_class(lo, hi, all, omin, omax, oall));
	}
}

/* The first entry >= it of a schedule of n items (item i has the class of
 * tile i % period) that is not skipped; n when none is left. */
static __device__ __forceinline__ int fl_next(const unsigned char *cls, int it,
					      int n, int period, int *full)
{
	for (; it < n; it++) {
		int c = cls[it % period];

		if (c != FL_SKIP) {
			*full = c == FL_FULL;
			return it;
		}
	}
	return n;
}

/* Bytes of a block's schedule in shared memory (16-byte multiple). */
static inline size_t fl_cls_bytes(long long n, int tile)
{
	return (size_t)(((n + tile - 1) / tile + 15) / 16 * 16);
}

static inline int fl_check(const struct kern_attn *a, const char *who)
{
	const char *why = NULL;

	if (!a)
		why = "no shape";
	else if (a->batch < 1 || a->sq < 0 || a->sk < 0 || a->nh < 1 ||
		 a->nkv < 1 || a->nh % a->nkv)
		why = "batch, nh, nkv must be >= 1, sq, sk >= 0, nh a multiple of nkv";
	else if (a->hd != 64 && a->hd != 128)
		why = "hd must be 64 or 128";
	/* 2^22 rows: the tile schedules (one byte per tile) stay a few KiB of
	 * shared memory */
	else if (a->batch > 65535 || a->nh > 65535 || a->sq > (1LL << 22) ||
		 a->sk > (1LL << 22) ||
		 a->batch * a->sq * a->nh > LLONG_MAX / 256 ||
		 a->batch * a->sk * a->nkv > LLONG_MAX / 256)
		why = "shape too large";
	else if (!isfinite(a->scale))
		why = "scale must be finite";
	return why ? kern_set_error(KERN_EINVAL, "%s: %s", who, why) : 0;
}

/* The shared memory a block may opt into on the current device (bytes;
 * 0 where the query fails), asked once per device in a row. */
static inline size_t fl_smem_optin(void)
{
	static int last = -1, mx;
	int dev = 0;

	if (cudaGetDevice(&dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	if (dev != last) {
		if (cudaDeviceGetAttribute(&mx,
					   cudaDevAttrMaxSharedMemoryPerBlockOptin,
					   dev) != cudaSuccess) {
			(void)cudaGetLastError();
			return 0;
		}
		last = dev;
	}
	return (size_t)mx;
}

static inline fl_params fl_make(const struct kern_attn *a)
{
	fl_params p = {};

	p.batch = (int)a->batch;
	p.sq = (int)a->sq;
	p.sk = (int)a->sk;
	p.nh = (int)a->nh;
	p.nkv = (int)a->nkv;
	p.scale = a->scale;
	p.scale_log2 = a->scale * FL_LOG2E;
	return p;
}

/* kern_flash_wg_bwd.cu (sm_90a): dsum, then the wgmma backward for head
 * dim hd (pipe: the overlapped schedule, else the serial one). */
int fl_wg_bwd_run(const fl_params &p, int hd, int pipe, cudaStream_t st);

/* kern_flash_ws_bwd.cu (sm_90a): dsum, then the warp-specialized wgmma
 * backward for head dim hd; fl_wg_bwd_run's serial schedule where it does
 * not apply (that file's top comment). */
int fl_ws_bwd_run(const fl_params &p, int hd, cudaStream_t st);

/* kern_flash_wg.cu (sm_90a): the wgmma forward for head dim hd (pipe: the
 * pipelined schedule, else the serial one), and whether the current device
 * runs it (compute capability 9.0). */
int fl_wg_run(const fl_params &p, int hd, int pipe, cudaStream_t st);
int fl_wg_supported(void);

/* The kernel kern_flash_fwd or kern_flash_bwd runs (kernels/kern_flash.h):
 * env, GTPLAN_FLASH's or GTPLAN_FLASH_BWD's value (NULL: unset), names
 * one (mma, wg, wgp or ws); unset or another value, the build's default
 * dflt (FLASH_WG_DEFAULT, FLASH_WG_BWD_DEFAULT: enum kern_flash_kind's
 * numbers). The wgmma ones need compute capability 9.0; elsewhere mma. */
static inline enum kern_flash_kind fl_pick(const char *env, int dflt)
{
	static const char *const name[KERN_FLASH_AUTO] = { "mma", "wg", "wgp",
							   "ws" };
	int which = dflt >= 0 && dflt < KERN_FLASH_AUTO ? dflt :
		    KERN_FLASH_MMA;

	for (int i = 0; env && i < KERN_FLASH_AUTO; i++)
		if (!strcmp(env, name[i]))
			which = i;
	return which != KERN_FLASH_MMA && !fl_wg_supported() ?
		       KERN_FLASH_MMA : (enum kern_flash_kind)which;
}

/* The name of kern_flash_fwd's (bwd: kern_flash_bwd's) entry point for
 * kind, for errors. */
static inline const char *fl_who(enum kern_flash_kind kind, int bwd)
{
	static const char *const name[2][KERN_FLASH_AUTO + 1] = {
		{ "kern_flash_fwd_with(mma)", "kern_flash_fwd_with(wg)",
		  "kern_flash_fwd_with(wgp)", "kern_flash_fwd_with(ws)",
		  "kern_flash_fwd" },
		{ "kern_flash_bwd_with(mma)", "kern_flash_bwd_with(wg)",
		  "kern_flash_bwd_with(wgp)", "kern_flash_bwd_with(ws)",
		  "kern_flash_bwd" },
	};

	return name[bwd][kind >= 0 && kind <= KERN_FLASH_AUTO ? kind :
			 KERN_FLASH_AUTO];
}

/* kern_flash_ws.cu (sm_90a): the warp-specialized TMA forward for head
 * dim hd, or fl_wg_run's pipelined one where its tensor maps cannot be
 * made (kern_flash_ws.cu's top comment). */
int fl_ws_run(const fl_params &p, int hd, cudaStream_t st);

#endif
