/*
 * hardware: the measured speed of one GPU kind, as data (data/hardware.yaml,
 * embedded at build time), for the simulator's estimate of gtplan-run's
 * step time (sim/step_est.h).
 *
 * A profile gives, for the runtime's bf16 path (tensor-core GEMMs through
 * cuBLASLt, flash attention, fp32 elementwise kernels): the dense bf16 peak
 * and the GEMMs' achieved fraction of it plus a fixed device time per GEMM
 * call; attention's throughput per head dim, forward and backward; the HBM
 * bandwidth and, per class of memory-bound work (elementwise kernels,
 * copies, the optimizer), the achieved fraction of it plus a fixed device
 * time per kernel; the host's time to issue one kernel. Each figure was
 * calibrated from a measurement that the file names (the commit and the
 * benchmark).
 *
 * Ownership: a struct hw_profile is a value; its strings are its own
 * arrays.
 */
#ifndef GTPLAN_HARDWARE_H
#define GTPLAN_HARDWARE_H

#include <stddef.h>

/* Hostile-input limits of the parser (the data ships with the binary, a
 * test feeds it edited copies): the profiles of the file, the attention
 * rows of one profile. Text fields are held to their arrays' sizes. */
#define HW_MAX_PROFILES 64
#define HW_MAX_ATTN 8

/* The classes of memory-bound work with their own efficiency. */
enum hw_mem_class { HW_MEM_ELEMENTWISE, HW_MEM_COPY, HW_MEM_OPTIMIZER,
		    HW_MEM_CLASSES };

/* Attention's throughput at one head dim (causal FLOPs counted halved:
 * forward 4 b h s^2 d / 2, backward 2.5 times that). */
struct hw_attn {
	long long head_dim;
	double fwd_tflops, bwd_tflops;
};

struct hw_profile {
	char name[32];            /* "h200" */
	char description[128];
	char measured[256];       /* the commit and benchmark calibrated on */
	double bf16_tflops;       /* dense bf16 peak */
	double gemm_efficiency;   /* achieved / peak on large GEMMs */
	double gemm_call_us;      /* fixed device time per GEMM call */
	double hbm_gbps;          /* HBM bandwidth, GB/s */
	double mem_efficiency[HW_MEM_CLASSES];
	double mem_call_us[HW_MEM_CLASSES];
	double launch_us;         /* host time to issue one kernel */
	struct hw_attn attn[HW_MAX_ATTN];
	size_t n_attn;
};

/* Parses profile `name` (NULL: the first) out of text (data/hardware.yaml's
 * format, len bytes), checking every profile of it. Returns 0; -1 when the
 * text is malformed, a profile is incomplete or out of range, or the one
 * asked for is missing, with one sentence in err
 * ("data/hardware.yaml:LINE:COL: what" where there is a place). */
int hw_profile_parse(const char *text, size_t len, const char *name,
		     struct hw_profile *out, char *err, size_t errlen);
/* The same from the embedded data/hardware.yaml. */
int hw_profile_builtin(const char *name, struct hw_profile *out, char *err,
		       size_t errlen);
/* The built-in profile's name (the file's first). */
const char *hw_profile_default_name(void);

/* Attention's throughput at head dim hd: the row of that head dim, else
 * the nearest one (the row with the smaller head dim on a tie). The
 * profile must have a row (hw_profile_parse checks it). */
const struct hw_attn *hw_attn_at(const struct hw_profile *hw, long long hd);

#endif
