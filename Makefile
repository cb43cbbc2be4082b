# gtplan: plan, check, draw and run GTP layouts.
#
#   make            build build/gtplan (release)
#   make demo       install what is missing, then lint and plan examples/default.yaml
#   make test       install what is missing, build with sanitizers, run every suite
#   make bench      time `gtplan plan` on 1k, 64k and 1M-rank worlds
#   make build/gtplan-run   the MPI runtime (needs MPI, OpenBLAS: make deps-test)
#   make test-gpu   build the CUDA kernels' test and build/gpu/gtplan-run with
#                   nvcc, run the kernel test and, where a GPU is present, the
#                   runtime's GPU parity (tests/runtime_parity_gpu.sh; never
#                   part of make test)
#   make bench-kernels-gpu  TFLOP/s of the bf16 flash attention and the
#                   cuBLASLt GEMMs at Llama shapes (scripts/bench_kernels_gpu.sh)
#   make bench-gpu  on 2+ GPUs: GTP all-gather/reduce-scatter bandwidth through
#                   the runtime's NCCL path vs plain NCCL (scripts/bench_gpu.sh)
#   make clean
#
# User CFLAGS/LDFLAGS are appended. Objects go to build/; nothing is installed.

CC      ?= cc
PKGS    := yaml-0.1 jansson libgvc libcgraph
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
STD     := -std=c11 -D_POSIX_C_SOURCE=200809L
BASE_CFLAGS := $(STD) $(WARN) -Iplanner -Isim -Ibuild/gen $(PKG_CFLAGS) -MMD -MP
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)

REL_CFLAGS  := $(BASE_CFLAGS) -O2 -g $(CFLAGS)
SAN         := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_CFLAGS := $(BASE_CFLAGS) -O1 -g $(SAN) $(CFLAGS)

LIB_SRC  := $(filter-out planner/main.c,$(wildcard planner/*.c sim/*.c))
GEN_SRC  := build/gen/embedded_schemas.c build/gen/embedded_models.c
TEST_SRC := $(wildcard tests/test_*.c)

REL_OBJ  := $(LIB_SRC:%.c=build/rel/%.o) build/rel/gen/embedded_schemas.o \
            build/rel/gen/embedded_models.o
ASAN_OBJ := $(LIB_SRC:%.c=build/asan/%.o) build/asan/gen/embedded_schemas.o \
            build/asan/gen/embedded_models.o
TEST_BIN := $(TEST_SRC:tests/%.c=build/asan/tests/%)

.PHONY: all demo test check-suites e2e corpus bench deps deps-test clean
all: build/gtplan

deps:
	@scripts/deps.sh build
deps-test:
	@scripts/deps.sh test

build/gen/embedded_schemas.c: schemas/config.schema.json scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh gtplan_config_schema schemas/config.schema.json > $@.tmp && mv $@.tmp $@
# The model catalog (data/models.txt) travels inside the binary too.
build/gen/embedded_models.c: data/models.txt scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh gtplan_models_txt data/models.txt > $@.tmp && mv $@.tmp $@

# V=1 shows the full commands.
Q = $(if $(V),,@)
build/rel/%.o: %.c | build/gen/embedded_schemas.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(REL_CFLAGS) -c $< -o $@
build/rel/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(STD) -O2 -c $< -o $@
build/asan/%.o: %.c | build/gen/embedded_schemas.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/san  $<")
	$(Q)$(CC) $(ASAN_CFLAGS) -c $< -o $@
build/asan/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(STD) -O1 -c $< -o $@

build/gtplan: build/rel/planner/main.o $(REL_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(REL_CFLAGS) $^ -o $@ $(PKG_LIBS) -lm $(LDFLAGS)
build/asan/gtplan: build/asan/planner/main.o $(ASAN_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $(PKG_LIBS) -lm $(LDFLAGS)

build/asan/tests/%.o: tests/%.c | build/gen/embedded_schemas.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/san  $<")
	$(Q)$(CC) $(ASAN_CFLAGS) $(CHECK_CFLAGS) -c $< -o $@
build/asan/tests/%: build/asan/tests/%.o $(ASAN_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ASAN_CFLAGS) $^ -o $@ $(PKG_LIBS) $$(pkg-config --libs check) -lm $(LDFLAGS)

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
RT_OBJ   := $(RT_SRC:%.c=build/rel/%.o) $(KERN_SRC:%.c=build/rel/%.o)

build/rel/runtime/%.o: REL_CFLAGS += -Iruntime -Ikernels $(MPI_CFLAGS)
build/rel/kernels/%.o: REL_CFLAGS += -Ikernels $(BLAS_CFLAGS)
build/asan/kernels/%.o: ASAN_CFLAGS += -Ikernels $(BLAS_CFLAGS)
build/asan/tests/test_kernels.o: ASAN_CFLAGS += -Ikernels

build/gtplan-run: $(RT_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(REL_CFLAGS) $^ -o $@ $(MPI_LIBS) $(BLAS_LIBS) $(JANSSON_LIBS) -lm $(LDFLAGS)
build/asan/tests/test_kernels: build/asan/tests/test_kernels.o $(KERN_SRC:%.c=build/asan/%.o)
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
GPU_OBJ := $(KERN_SRC:%.c=build/gpu/%.o) build/gpu/kernels/kern_cuda.o \
           build/gpu/tests/gpu/test_kernels_gpu.o

.PHONY: test-gpu bench-gpu
build/gpu/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(V),,echo "  CC/gpu  $<")
	$(Q)$(CC) $(GPU_CFLAGS) -c $< -o $@
build/gpu/kernels/kern_cuda.o: kernels/kern_cuda.cu kernels/kern.h
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) $(GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
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
            build/gpu/kernels/kern_gemm_lt.o
FAST_BIN := build/gpu/test_flash_gpu build/gpu/test_gemm_lt_gpu build/gpu/bench_kernels_gpu
GPU_BASE_OBJ := $(KERN_SRC:%.c=build/gpu/%.o) build/gpu/kernels/kern_cuda.o
build/gpu/kernels/kern_flash.o build/gpu/kernels/kern_flash_bwd.o: build/gpu/%.o: %.cu \
		kernels/kern_flash.h kernels/flash_common.cuh kernels/flash_mma.cuh kernels/kern.h
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(FAST_NVCCFLAGS) $(GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
build/gpu/kernels/kern_gemm_lt.o: kernels/kern_gemm_lt.cu kernels/kern_gemm_lt.h kernels/kern.h
	@mkdir -p $(@D)
	@$(if $(V),,echo "  NVCC    $<")
	$(Q)$(NVCC) $(FAST_NVCCFLAGS) $(GENCODE) -Ikernels -Xcompiler -Wall,-Wextra -c $< -o $@
$(FAST_BIN): build/gpu/%: build/gpu/tests/gpu/%.o $(GPU_BASE_OBJ) $(FAST_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(NVCC) $(GENCODE) -cudart static $^ -o $@ -L$(CUDA_HOME)/lib64 \
		$(CUBLAS_LIBS) $(GPU_BLAS_LIBS) -lm -ldl -lrt $(LDFLAGS)

.PHONY: bench-kernels-gpu
# TFLOP/s of the flash attention and the cuBLASLt GEMMs at Llama shapes.
bench-kernels-gpu: build/gpu/bench_kernels_gpu
	@scripts/bench_kernels_gpu.sh

# Exit 77 (and "no CUDA device") where there is no GPU.
test-gpu: build/gpu/test_kernels_gpu build/gpu/test_flash_gpu build/gpu/test_gemm_lt_gpu
	./build/gpu/test_kernels_gpu
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
              build/gpu/kernels/kern_cuda.o
build/gpu/runtime/%.o: GPU_CFLAGS += -Iruntime $(MPI_CFLAGS) -isystem $(CUDA_HOME)/include -DGTPLAN_WITH_NCCL
# NCCL is linked dynamically (libnccl.so.2: the GPU machine's own, found by
# the loader, else the toolkit's through the rpath).
build/gpu/gtplan-run: $(GPU_RT_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(NVCC) -ccbin $(MPICC) $(GENCODE) -cudart static $^ -o $@ \
		-L$(CUDA_HOME)/lib64 $(CUBLAS_LIBS) $(GPU_BLAS_LIBS) \
		$(GPU_JANSSON_LIBS) -lnccl -Xlinker -rpath,$(CUDA_HOME)/lib64 \
		-lstdc++ -lm -ldl -lrt $(LDFLAGS)

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

-include $(shell find build -name '*.d' 2>/dev/null)
