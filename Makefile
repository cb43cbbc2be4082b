# gtplan: plan, check, draw and run GTP layouts.
#
#   make            build build/gtplan (release)
#   make demo       install what is missing, then lint and plan examples/default.yaml
#   make test       install what is missing, build with sanitizers, run every suite
#   make bench      time `gtplan plan` and `gtplan sim` on 1k, 64k and
#                   1M-rank worlds (scripts/bench.sh)
#   make fuzz       libFuzzer (clang, ASan + UBSan) over the config loader
#                   and the whole lint path for FUZZ_SECONDS (default 600);
#                   make test runs the same for 60 s (tests/fuzz.sh)
#   make check-layers  no include or call against the layers' order
#                   (base, planner, sim, report, cli; runtime apart)
#   make build/gtplan-run   the MPI runtime (needs MPI, OpenBLAS: make deps-test)
#   make test-gpu   build the CUDA kernels' test and build/gpu/gtplan-run with
#                   nvcc, run the kernel test and, where a GPU is present, the
#                   runtime's GPU parity (tests/runtime_parity_gpu.sh; never
#                   part of make test)
#   make bench-kernels-gpu  TFLOP/s of the bf16 flash attention and the
#                   cuBLASLt GEMMs at Llama shapes (scripts/bench_kernels_gpu.sh;
#                   its `mem` argument: TB/s of the memory-bound kern ops)
#   make bench-train-gpu  gtplan-run training on one GPU in bf16 (Llama-3.2-1B
#                   and an 8B layer slice at sequence 4096): step time, MFU,
#                   device time per kernel class (scripts/bench_train_gpu.sh)
#   make bench-gpu  on 2+ GPUs: GTP all-gather/reduce-scatter bandwidth through
#                   the runtime's NCCL path vs plain NCCL (scripts/bench_gpu.sh)
#   make install    build/gtplan (and build/gtplan-run when built), the man
#                   page, bash/zsh/fish completions and the schemas under
#                   $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); make uninstall
#   make clean
#
# User CFLAGS/LDFLAGS are appended. Objects go to build/.

CC      ?= cc
PKGS    := yaml-0.1 jansson libgvc libcgraph
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
STD     := -std=c11 -D_POSIX_C_SOURCE=200809L
BASE_CFLAGS := $(STD) $(WARN) $(PKG_CFLAGS) -MMD -MP
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)

REL_CFLAGS  := $(BASE_CFLAGS) -O2 -g $(CFLAGS)
SAN         := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_CFLAGS := $(BASE_CFLAGS) -O1 -g $(SAN) $(CFLAGS)

# ---- gtplan's layers ----------------------------------------------------
# Bottom to top; each folder is one static library (build/<mode>/libX.a):
#   base     diagnostics, sources, JSON writer, Levenshtein, version
#   planner  config loading, schema, model shapes and catalog, sizes,
#            rules, the plan
#   sim      dispatch, collectives, matcher, checkpoint/refit, cost, traces
#   report   plan JSON, summary and simulation text, render (Graphviz)
#   cli      gtplan's commands, jobs and launcher (main.c: the binary)
# A layer's files see only their own folder's headers and those of the
# layers below (LAYER_INC), so an include of a higher layer fails to
# compile; each library is linked alone against the ones below it
# (build/rel/layer-X.ok), so a call upwards fails to link.
# scripts/check_layers.sh checks the same rule on the sources (make
# check-layers). runtime/ and kernels/ are apart: of gtplan's folders they
# see base/ only, where code that both sides compute the same way may live
# (it knows no config and no plan): header-only, or linked into gtplan-run
# too (RT_BASE_SRC).
LAYERS    := base planner sim report cli
base_INC    := -Ibase
planner_INC := $(base_INC) -Iplanner
sim_INC     := $(planner_INC) -Isim
report_INC  := $(sim_INC) -Ireport
cli_INC     := $(report_INC) -Icli
base_LOWER    :=
planner_LOWER := base
sim_LOWER     := planner base
report_LOWER  := sim planner base
cli_LOWER     := report sim planner base
$(foreach l,$(LAYERS),$(eval build/rel/$(l)/%.o build/asan/$(l)/%.o: LAYER_INC := $$($(l)_INC)))
build/asan/tests/%.o: LAYER_INC := $(cli_INC)
$(foreach d,runtime kernels,$(eval build/rel/$(d)/%.o build/asan/$(d)/%.o: LAYER_INC := -Ibase))
build/gpu/runtime/%.o build/gpu/kernels/%.o: GPU_CFLAGS += -Ibase

layer_src = $(filter-out cli/main.c,$(wildcard $(1)/*.c))
# The generated sources belong to the planner: the schema (schema.c), the
# model catalog (model_catalog.c) and the hardware profiles (hardware.c)
# read them.
GEN_SRC  := build/gen/embedded_schemas.c build/gen/embedded_models.c \
	    build/gen/embedded_hardware.c
layer_obj = $(patsubst %.c,build/$(1)/%.o,$(call layer_src,$(2))) \
	    $(if $(filter planner,$(2)),build/$(1)/gen/embedded_schemas.o \
				     build/$(1)/gen/embedded_models.o \
				     build/$(1)/gen/embedded_hardware.o)
# Archives, highest first, as the linker wants them.
LIBS_ORDER := cli report sim planner base
REL_LIBS  := $(LIBS_ORDER:%=build/rel/lib%.a)
ASAN_LIBS := $(LIBS_ORDER:%=build/asan/lib%.a)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=build/asan/tests/%)

.PHONY: all demo test check-suites check-layers e2e corpus bench deps deps-test clean \
	install uninstall
all: build/gtplan

deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

build/gen/embedded_schemas.c: schemas/config.schema.json scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh gtplan_config_schema schemas/config.schema.json > $@.tmp && mv $@.tmp $@
# The model catalog (data/models.yaml) travels inside the binary too.
build/gen/embedded_models.c: data/models.yaml scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh gtplan_models_yaml data/models.yaml > $@.tmp && mv $@.tmp $@
# So do the GPUs' measured speeds (data/hardware.yaml, planner/hardware.c).
build/gen/embedded_hardware.c: data/hardware.yaml scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh gtplan_hardware_yaml data/hardware.yaml > $@.tmp && mv $@.tmp $@

# V=1 shows the full commands.
Q = $(if $(V),,@)
build/rel/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(REL_CFLAGS) $(LAYER_INC) -c $< -o $@
build/rel/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(STD) -O2 -c $< -o $@
build/asan/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/san  $<")
	$(Q)$(CC) $(ASAN_CFLAGS) $(LAYER_INC) -c $< -o $@
build/asan/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(STD) -O1 -c $< -o $@

# One archive per layer and mode.
define layer_lib
build/$(1)/lib$(2).a: $$(call layer_obj,$(1),$(2))
	@$$(if $$(V),,echo "  AR      $$@")
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^
endef
$(foreach m,rel asan,$(foreach l,$(LAYERS),$(eval $(call layer_lib,$(m),$(l)))))

# The link check: every object of a layer, linked with the layers below
# only (and the system's libraries), must leave nothing undefined.
build/gen/layer_main.c:
	@mkdir -p $(@D)
	$(Q)printf 'int main(void);\nint main(void) { return 0; }\n' > $@
define layer_check
build/rel/layer-$(1).ok: build/rel/lib$(1).a $$($(1)_LOWER:%=build/rel/lib%.a) build/rel/gen/layer_main.o
	@$$(if $$(V),,echo "  LAYER   $(1)")
	$$(Q)$$(CC) $$(REL_CFLAGS) build/rel/gen/layer_main.o -Wl,--whole-archive \
		build/rel/lib$(1).a -Wl,--no-whole-archive \
		$$($(1)_LOWER:%=build/rel/lib%.a) $$(PKG_LIBS) -lm $$(LDFLAGS) \
		-o build/rel/layer-$(1).bin && rm -f build/rel/layer-$(1).bin && touch $$@
endef
$(foreach l,$(LAYERS),$(eval $(call layer_check,$(l))))

build/gtplan: build/rel/cli/main.o $(REL_LIBS) $(LAYERS:%=build/rel/layer-%.ok)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(REL_CFLAGS) build/rel/cli/main.o $(REL_LIBS) -o $@ $(PKG_LIBS) -lm $(LDFLAGS)
build/asan/gtplan: build/asan/cli/main.o $(ASAN_LIBS)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $(PKG_LIBS) -lm $(LDFLAGS)

build/asan/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/san  $<")
	$(Q)$(CC) $(ASAN_CFLAGS) $(LAYER_INC) $(CHECK_CFLAGS) -c $< -o $@
build/asan/tests/%: build/asan/tests/%.o $(ASAN_LIBS)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $(PKG_LIBS) $$(pkg-config --libs check) -lm $(LDFLAGS)

# Includes against the layers' order, anywhere in the sources; then the
# guards' own test (tests/layers.sh, part of make test): back-edges
# planted in copies must be caught by the script, the compiler and the
# link check.
check-layers: build/gtplan
	@scripts/check_layers.sh
	@tests/layers.sh

# ---- gtplan-run: the MPI runtime (runtime/, kernels/) --------------------
# Built apart from gtplan, which needs neither MPI nor BLAS: only the rules
# below see MPI's and OpenBLAS's flags. The kernels' Check suite links
# OpenBLAS but not MPI.
MPICC        ?= mpicc
MPI_CFLAGS   := $(patsubst -I%,-isystem %,$(shell $(MPICC) --showme:compile 2>/dev/null))
MPI_LIBS     := $(shell $(MPICC) --showme:link 2>/dev/null)
BLAS_CFLAGS  := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS    := $(shell pkg-config --libs openblas 2>/dev/null)
JANSSON_LIBS := $(shell pkg-config --libs jansson 2>/dev/null)
KERN_SRC := $(wildcard kernels/*.c)
RT_SRC   := $(wildcard runtime/*.c)
# base/'s sources the runtime links (the string buffer of rt_export.c)
RT_BASE_SRC := base/strbuf.c
RT_OBJ   := $(RT_SRC:%.c=build/rel/%.o) $(KERN_SRC:%.c=build/rel/%.o) \
            $(RT_BASE_SRC:%.c=build/rel/%.o)

build/rel/runtime/%.o: REL_CFLAGS += -Iruntime -Ikernels $(MPI_CFLAGS)
build/rel/kernels/%.o: REL_CFLAGS += -Ikernels $(BLAS_CFLAGS)
build/asan/kernels/%.o: ASAN_CFLAGS += -Ikernels $(BLAS_CFLAGS)
# The kernels' Check suites (tests/test_kernels*.c) link the kernels and
# OpenBLAS instead of the planner.
KERN_TESTS := $(patsubst tests/%.c,build/asan/tests/%,$(wildcard tests/test_kernels*.c))
$(KERN_TESTS:%=%.o): ASAN_CFLAGS += -Ikernels

# The runtime's Check suites (tests/test_rt.c: plan reading, options, data;
# tests/test_rt_ckpt.c: the checkpoint's proof of coverage; no MPI_Init)
# link the runtime's objects but gtplan-run's main, built with the
# sanitizers, and so MPI's, OpenBLAS's and Jansson's libraries.
RT_TESTS := build/asan/tests/test_rt build/asan/tests/test_rt_ckpt
RT_ASAN_OBJ := $(patsubst %.c,build/asan/%.o,$(filter-out runtime/rt_main.c,$(RT_SRC)) $(KERN_SRC) $(RT_BASE_SRC))
build/asan/runtime/%.o: ASAN_CFLAGS += -Iruntime -Ikernels $(MPI_CFLAGS)
$(RT_TESTS:%=%.o): ASAN_CFLAGS += -Iruntime -Ikernels
$(RT_TESTS): build/asan/tests/%: build/asan/tests/%.o $(RT_ASAN_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $$(pkg-config --libs check) $(MPI_LIBS) \
		$(BLAS_LIBS) $(JANSSON_LIBS) -lm $(LDFLAGS)

# The NCCL path's pending collectives (tests/test_coll_queue.c): the queue
# alone, driven by fake completions and a fake clock (no MPI, no CUDA),
# and under mpirun the watchdog's report over it (tests/coll_queue_mpi.c,
# the runtime's objects without sanitizers: MPI's own allocations are not
# the test's).
build/asan/tests/test_coll_queue.o: ASAN_CFLAGS += -Iruntime
build/asan/tests/test_coll_queue: build/asan/tests/test_coll_queue.o \
		build/asan/runtime/coll_queue.o build/asan/runtime/rt_err.o \
		| build/rel/tests/coll_queue_mpi
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $$(pkg-config --libs check) -lm $(LDFLAGS)
build/rel/tests/coll_queue_mpi.o: REL_CFLAGS += -Iruntime -Ikernels $(MPI_CFLAGS)
build/rel/tests/coll_queue_mpi: build/rel/tests/coll_queue_mpi.o \
		$(filter-out build/rel/runtime/rt_main.o,$(RT_OBJ))
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(REL_CFLAGS) $^ -o $@ $(MPI_LIBS) $(BLAS_LIBS) $(JANSSON_LIBS) -lm $(LDFLAGS)

build/gtplan-run: $(RT_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(REL_CFLAGS) $^ -o $@ $(MPI_LIBS) $(BLAS_LIBS) $(JANSSON_LIBS) -lm $(LDFLAGS)
$(KERN_TESTS): build/asan/tests/%: build/asan/tests/%.o $(KERN_SRC:%.c=build/asan/%.o)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $$(pkg-config --libs check) $(BLAS_LIBS) -lm $(LDFLAGS)

# ---- GPU: kernels/kern_cuda.cu and its test against the CPU twin --------
# Apart from everything above: only these rules need nvcc, and `make test`
# never names them. The binary carries cudart statically, cuBLAS statically
# when the toolkit has the static archives (else with an rpath to
# $(CUDA_HOME)/lib64), and OpenBLAS statically when libopenblas.a exists,
# so that it runs on a GPU machine without the build's libraries.
NVCC      ?= /usr/local/cuda/bin/nvcc
CUDA_HOME ?= /usr/local/cuda
GENCODE   ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O2
ifneq ($(wildcard $(CUDA_HOME)/lib64/libcublas_static.a),)
CUBLAS_LIBS := -lcublas_static -lcublasLt_static -lculibos
else
CUBLAS_LIBS := -lcublas -lcublasLt -Xlinker -rpath,$(CUDA_HOME)/lib64
endif
OPENBLAS_A := $(wildcard /usr/lib/x86_64-linux-gnu/libopenblas.a)
GPU_BLAS_LIBS := $(if $(OPENBLAS_A),$(OPENBLAS_A) -lpthread,$(BLAS_LIBS))
GPU_CFLAGS := $(STD) $(WARN) -O2 -g -Ikernels $(BLAS_CFLAGS) -DKERN_WITH_CUDA -MMD -MP $(CFLAGS)
CUDA_OBJ := $(patsubst %.cu,build/gpu/%.o,$(wildcard kernels/*.cu))
GPU_OBJ := $(KERN_SRC:%.c=build/gpu/%.o) $(CUDA_OBJ) \
           $(patsubst %.c,build/gpu/%.o,$(wildcard tests/gpu/test_kernels*.c))

.PHONY: test-gpu bench-gpu
build/gpu/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/gpu  $<")
	$(Q)$(CC) $(GPU_CFLAGS) -c $< -o $@
build/gpu/kernels/%.o: kernels/%.cu kernels/kern.h kernels/kern_cuda.h
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) $(GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
# the device helpers two of them share (nvcc writes no dependency files)
build/gpu/kernels/kern_cuda_qkv.o build/gpu/kernels/kern_cuda_qkv_rope.o: kernels/qkv_rope.cuh
build/gpu/kernels/kern_cuda_norm.o build/gpu/kernels/kern_cuda_norm_bwd.o: kernels/norm_rows.cuh
build/gpu/test_kernels_gpu: $(GPU_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(NVCC) $(GENCODE) -cudart static $^ -o $@ -L$(CUDA_HOME)/lib64 \
		$(CUBLAS_LIBS) $(GPU_BLAS_LIBS) -lm -ldl -lrt $(LDFLAGS)

# ---- GPU: bf16 flash attention and cuBLASLt GEMMs ----------------------
# kernels/kern_flash.cu (mma.sync tensor cores) and kernels/kern_gemm_lt.cu,
# their tests against float64 references (tests/gpu/test_*_gpu.c) and the
# benchmark (tests/gpu/bench_kernels_gpu.c, scripts/bench_kernels_gpu.sh).
FAST_NVCCFLAGS ?= -O3
FAST_OBJ := build/gpu/kernels/kern_flash.o build/gpu/kernels/kern_flash_bwd.o \
            build/gpu/kernels/kern_flash_wg.o build/gpu/kernels/kern_flash_wg_bwd.o \
            build/gpu/kernels/kern_flash_ws.o build/gpu/kernels/kern_flash_ws_probe.o \
            build/gpu/kernels/kern_flash_ws_bwd.o build/gpu/kernels/kern_flash_ws_bwd_probe.o \
            build/gpu/kernels/kern_gemm_lt.o
# The wgmma attention kernels (kern_flash_wg.cu, kern_flash_wg_bwd.cu, the
# warp-specialized kern_flash_ws.cu and kern_flash_ws_bwd.cu with their
# probes' files) exist for compute capability 9.0 only: wgmma, TMA and
# setmaxnreg need the architecture-specific sm_90a, so these alone are
# built for it, and kern_flash.cu / kern_flash_bwd.cu call them only on
# such a device. FLASH_WG_DEFAULT picks kern_flash_fwd's kernel there
# (kernels/kern_flash.h: 0 mma.sync, 1 wg, 2 wgp, 3 ws; rebuild
# kern_flash.o after changing it) and FLASH_WG_BWD_DEFAULT kern_flash_bwd's
# (the same numbers; rebuild kern_flash_bwd.o): both 3, measured on an
# H200 at f27a2a8 (docs/runtime-gpu.md, third pass; causal, 4 x 4096):
# forward 505.7 TFLOP/s at head dim 128 against wgp's 292.5 and
# mma.sync's 237.3, 353.1 against wgp's 184.7 at head dim 64; backward
# 352.9 against wg's 274.9 at 128, 321.8 against 198.0 at 64.
WG_GENCODE ?= -gencode arch=compute_90a,code=sm_90a
FLASH_WG_DEFAULT ?= 3
FLASH_WG_BWD_DEFAULT ?= 3
FAST_BIN := build/gpu/test_flash_gpu build/gpu/test_flash_ws_gpu build/gpu/test_gemm_lt_gpu \
	    build/gpu/bench_kernels_gpu
# kern_cuda.o binds every kernels/*.cu (kern_cuda_ops), so all of them
# link; $^ lists FAST_OBJ, which they include, once.
GPU_BASE_OBJ := $(KERN_SRC:%.c=build/gpu/%.o) $(CUDA_OBJ)
FLASH_HDR := kernels/kern_flash.h kernels/flash_common.cuh kernels/flash_mma.cuh \
	     kernels/flash_fwd.cuh kernels/flash_bwd.cuh kernels/kern.h kernels/kern_cuda.h
build/gpu/kernels/kern_flash.o: FAST_NVCCFLAGS += -DFLASH_WG_DEFAULT=$(FLASH_WG_DEFAULT)
build/gpu/kernels/kern_flash_bwd.o: FAST_NVCCFLAGS += -DFLASH_WG_BWD_DEFAULT=$(FLASH_WG_BWD_DEFAULT)
build/gpu/kernels/kern_flash.o build/gpu/kernels/kern_flash_bwd.o: build/gpu/%.o: %.cu \
		$(FLASH_HDR)
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(FAST_NVCCFLAGS) $(GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
build/gpu/kernels/kern_flash_wg.o build/gpu/kernels/kern_flash_wg_bwd.o \
build/gpu/kernels/kern_flash_ws.o build/gpu/kernels/kern_flash_ws_probe.o \
build/gpu/kernels/kern_flash_ws_bwd.o build/gpu/kernels/kern_flash_ws_bwd_probe.o: build/gpu/%.o: %.cu \
		kernels/flash_wgmma.cuh kernels/flash_tma.cuh kernels/flash_bwd_wgmma.cuh \
		kernels/flash_bwd_ws.cuh kernels/flash_bwd_ws_tiles.cuh $(FLASH_HDR)
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $< (sm_90a)")
	$(Q)$(NVCC) $(FAST_NVCCFLAGS) $(WG_GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
build/gpu/kernels/kern_gemm_lt.o: kernels/kern_gemm_lt.cu kernels/kern_gemm_lt.h kernels/kern.h \
		kernels/kern_cuda.h
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(FAST_NVCCFLAGS) $(GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
# bench_kernels_gpu's mem section is its own file
build/gpu/bench_kernels_gpu: build/gpu/tests/gpu/bench_mem_gpu.o
# and test_flash_gpu's checks of the kernels' parts alone
build/gpu/test_flash_gpu: build/gpu/tests/gpu/flash_probe_gpu.o
$(FAST_BIN): build/gpu/%: build/gpu/tests/gpu/%.o $(GPU_BASE_OBJ) $(FAST_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(NVCC) $(GENCODE) -cudart static $^ -o $@ -L$(CUDA_HOME)/lib64 \
		$(CUBLAS_LIBS) $(GPU_BLAS_LIBS) -lm -ldl -lrt $(LDFLAGS)

.PHONY: bench-kernels-gpu bench-train-gpu
bench-train-gpu: build/gpu/gtplan-run
	@if [ -x build/gtplan ]; then scripts/bench_train_gpu.sh --plans-only; fi
	@scripts/bench_train_gpu.sh
# TFLOP/s of the flash attention and the cuBLASLt GEMMs at Llama shapes.
bench-kernels-gpu: build/gpu/bench_kernels_gpu
	@scripts/bench_kernels_gpu.sh

# Exit 77 (and "no CUDA device") where there is no GPU.
test-gpu: build/gpu/test_kernels_gpu build/gpu/test_flash_ws_gpu build/gpu/test_flash_gpu \
		build/gpu/test_gemm_lt_gpu
	./build/gpu/test_kernels_gpu
	./build/gpu/test_flash_ws_gpu
	./build/gpu/test_flash_gpu
	./build/gpu/test_gemm_lt_gpu
	@if $(NVIDIA_SMI) -L >/dev/null 2>&1; then \
		tests/runtime_parity_gpu.sh; \
	else echo "SKIP: runtime GPU parity (no GPU)"; fi
test-gpu: build/gpu/gtplan-run

# gtplan-run --device cuda: kern_cuda.cu with nvcc, the rest with mpicc's
# flags; Jansson and OpenBLAS statically when their archives exist, so the
# binary needs only MPI and the NVIDIA driver on the GPU machine. nvcc links
# through mpicc (-ccbin), which adds MPI's libraries.
NVIDIA_SMI ?= nvidia-smi
JANSSON_A := $(wildcard /usr/lib/x86_64-linux-gnu/libjansson.a)
GPU_JANSSON_LIBS := $(if $(JANSSON_A),$(JANSSON_A),$(JANSSON_LIBS))
GPU_RT_OBJ := $(RT_SRC:%.c=build/gpu/%.o) $(KERN_SRC:%.c=build/gpu/%.o) \
              $(RT_BASE_SRC:%.c=build/gpu/%.o) $(CUDA_OBJ)
# OpenMP: the weights' start values are drawn by every core
# (runtime/rt_model.c init_shard), billions of them at the benchmark shapes
build/gpu/runtime/%.o: GPU_CFLAGS += -Iruntime $(MPI_CFLAGS) -isystem $(CUDA_HOME)/include -DGTPLAN_WITH_NCCL -fopenmp
# NCCL is linked dynamically (libnccl.so.2: the GPU machine's own, found by
# the loader, else the toolkit's through the rpath).
build/gpu/gtplan-run: $(GPU_RT_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(NVCC) -ccbin $(MPICC) $(GENCODE) -cudart static $^ -o $@ \
		-L$(CUDA_HOME)/lib64 $(CUBLAS_LIBS) $(GPU_BLAS_LIBS) \
		$(GPU_JANSSON_LIBS) -lnccl -Xlinker -rpath,$(CUDA_HOME)/lib64 \
		-Xcompiler -fopenmp -lstdc++ -lm -ldl -lrt $(LDFLAGS)

# ---- fuzzing: libFuzzer harnesses (tests/fuzz/) --------------------------
# Every layer's sources compiled by clang with ASan + UBSan and libFuzzer's
# coverage (build/fuzz/obj/), linked with one harness each; the dictionary
# names every schema key (scripts/fuzz_dict.py). The config corpus seeds
# the runs (tests/fuzz.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 600
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OBJ     := $(patsubst %.c,build/fuzz/obj/%.o,\
		$(foreach l,$(LAYERS),$(call layer_src,$(l)))) \
		$(patsubst build/gen/%.c,build/fuzz/obj/gen/%.o,$(GEN_SRC))
.PHONY: fuzz fuzz-build
.SECONDARY: $(FUZZ_OBJ)
build/fuzz/obj/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(STD) -O1 -c $< -o $@
build/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/fuzz $<")
	$(Q)$(FUZZ_CC) $(STD) -g -O1 -MMD -MP $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
		$(cli_INC) $(PKG_CFLAGS) -c $< -o $@
build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@$(if $(V),,echo "  FUZZ    $@")
	$(Q)$(FUZZ_CC) $(STD) -g -O1 $(FUZZ_SAN) -fsanitize=fuzzer $(cli_INC) \
		$(PKG_CFLAGS) $^ -o $@ $(PKG_LIBS) -lm
build/fuzz/config.dict: schemas/config.schema.json scripts/fuzz_dict.py
	@mkdir -p $(@D)
	$(Q)scripts/fuzz_dict.py $< > $@.tmp && mv $@.tmp $@
fuzz-build: build/fuzz/fuzz_lint build/fuzz/fuzz_load build/fuzz/config.dict
fuzz: deps-test
	@FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz.sh

demo: deps
	@$(MAKE) --no-print-directory build/gtplan
	./build/gtplan lint examples/default.yaml
	./build/gtplan plan examples/default.yaml --summary

# The whole suite: Check suites under ASan+UBSan, then the CLI end-to-end
# tests, the corpus test, the runtime parity and checkpoint tests
# (gtplan-run under mpirun on CPU), then one closing summary line.
test: deps-test
	@$(MAKE) --no-print-directory build/gtplan build/asan/gtplan build/gtplan-run $(TEST_BIN)
	@tests/run.sh $(TEST_BIN)

bench: deps
	@$(MAKE) --no-print-directory build/gtplan
	@scripts/bench.sh

# On a host with 2 GPUs or more: the GTP collectives' bandwidth through the
# runtime's NCCL path against plain NCCL (plans made where gtplan runs).
bench-gpu: build/gpu/gtplan-run
	@if [ -x build/gtplan ]; then tests/runtime_parity_gpu.sh --plans-only >/dev/null; fi
	@scripts/bench_gpu.sh

clean:
	rm -rf build

# ---- install ---------------------------------------------------------------
# gtplan needs libyaml, Jansson and Graphviz's libcgraph and libgvc at run
# time (ldd build/gtplan); gtplan-run needs MPI and OpenBLAS. The
# completions come from the binary itself (gtplan completion SHELL).
PREFIX  ?= /usr/local
BINDIR  := $(DESTDIR)$(PREFIX)/bin
MAN1DIR := $(DESTDIR)$(PREFIX)/share/man/man1
DATADIR := $(DESTDIR)$(PREFIX)/share/gtplan
BASHDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR  := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
INSTALLED := $(BINDIR)/gtplan $(BINDIR)/gtplan-run $(MAN1DIR)/gtplan.1 \
	$(BASHDIR)/gtplan $(ZSHDIR)/_gtplan $(FISHDIR)/gtplan.fish \
	$(patsubst schemas/%,$(DATADIR)/schemas/%,$(wildcard schemas/*.json))

install: build/gtplan
	install -d $(BINDIR) $(MAN1DIR) $(DATADIR)/schemas $(BASHDIR) $(ZSHDIR) $(FISHDIR)
	install -m 755 build/gtplan $(BINDIR)/gtplan
	if [ -x build/gtplan-run ]; then install -m 755 build/gtplan-run $(BINDIR)/gtplan-run; fi
	install -m 644 docs/gtplan.1 $(MAN1DIR)/gtplan.1
	install -m 644 schemas/*.json $(DATADIR)/schemas/
	build/gtplan completion bash > $(BASHDIR)/gtplan
	build/gtplan completion zsh > $(ZSHDIR)/_gtplan
	build/gtplan completion fish > $(FISHDIR)/gtplan.fish

uninstall:
	rm -f $(INSTALLED)
	-rmdir $(DATADIR)/schemas $(DATADIR) 2>/dev/null

-include $(shell find build -name '*.d' 2>/dev/null)
