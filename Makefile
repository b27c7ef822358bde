# ember — build, test, benchmark.
#   make            libember.a, ember.so and the ember executable (in build/)
#   make test       every test suite; ends with "N passed, N failed"
#   make asan       the same suites, built with AddressSanitizer + UBSan
#   make bench      the benchmark table (ember beside PyTorch)
#   make bench-instr  instruction counts against their budget (CI runs it)
#   make fixtures   every PyTorch fixture of tests/lua/fixtures, regenerated with PyTorch 2.x
#   make test-gpu   the GPU suites (fails without a GPU); make bench-gpu the GPU table
#   make cuda       only the CUDA backend (build/libember_cuda.so)
# Set BUILD=dir to build elsewhere; SAN=1 adds the sanitizers (used by asan).

BUILD   ?= build
CC      ?= cc
ARCH    ?= -march=native
OPT     ?= -O3
LUA_PC  := lua5.4
DEPS_CFLAGS := $(shell pkg-config --cflags $(LUA_PC) openblas libcjson zlib 2>/dev/null)
# OpenBLAS is opened with dlopen on first use (engine/cpu/blas.c), never
# linked into ember: only the emulated device's cuSOLVER links it
DEPS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CFLAGS  ?= $(OPT) $(ARCH) -g
# -fno-math-errno: sqrt and friends never set errno here, and with errno
# out of the way gcc vectorises loops that call them
CFLAGS  += -fno-math-errno -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -pthread $(DEPS_CFLAGS)
LDLIBS  := -lcjson -lz -lm -ldl -pthread
ifeq ($(SAN),1)
# EMBER_SANITIZE: exact-size allocations, no caches or free lists (the
# sanitizers then see small overruns and uses after free)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -DEMBER_SANITIZE
LDFLAGS += -fsanitize=address,undefined
endif

ENGINE_SRC := $(wildcard engine/*.c engine/cpu/*.c)
LUA_SRC    := $(wildcard lua/*.c)
# the Jupyter kernel's protocol side links ZeroMQ and OpenSSL: a library of
# its own, opened by `ember --kernel` only, so a normal start loads neither
KERNEL_SRC := shell/kernel.c shell/kernel_wire.c shell/kernel_capture.c
SHELL_SRC  := $(filter-out $(KERNEL_SRC),$(wildcard shell/*.c))
CTEST_SRC  := $(wildcard tests/c/*.c)

ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
LUA_OBJ    := $(LUA_SRC:%.c=$(BUILD)/%.o)
SHELL_OBJ  := $(SHELL_SRC:%.c=$(BUILD)/%.o)
KERNEL_OBJ := $(KERNEL_SRC:%.c=$(BUILD)/%.o)
HAVE_ZMQ   := $(shell pkg-config --exists libzmq libcrypto 2>/dev/null && echo 1)
KERNEL_LIB := $(BUILD)/libember_kernel.so
CTEST_BIN  := $(CTEST_SRC:tests/c/%.c=$(BUILD)/tests/%)

# The CUDA backend: built whenever the toolkit is present (CUDA_HOME), for
# sm_80 and sm_90 plus PTX for later GPUs; warnings are errors. Nothing else
# links it: the engine opens it with dlopen on first CUDA use.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
HAVE_CUDA := $(shell test -x $(NVCC) && echo 1)
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
NVFLAGS   ?= -O3 -std=c++17 $(CUDA_ARCH) -Werror all-warnings --expt-relaxed-constexpr \
             -Xcompiler -fPIC,-Wall,-Wextra,-Werror -I$(CUDA_HOME)/include
CUDA_SRC  := $(wildcard kernels/*.cu)
CUDA_OBJ  := $(CUDA_SRC:%.cu=$(BUILD)/%.o)
CUDA_LIB  := $(BUILD)/libember_cuda.so
# the sanitizer build leaves it out (nvcc objects are not instrumented)
WITH_CUDA ?= $(if $(filter 1,$(SAN)),0,$(HAVE_CUDA))

# The emulated device (kernels/emu/, below) needs only the toolkit's headers.
HAVE_CUDA_HEADERS := $(shell test -f $(CUDA_HOME)/include/cuda_runtime.h && echo 1)
WITH_EMU  ?= $(HAVE_CUDA_HEADERS)

# The MPI communication backend (comm/): built when OpenMPI's compiler
# wrapper is there; only this library links libmpi, and the engine opens it
# with dlopen on the first init_process_group.
MPICC    ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo 1)
MPI_CFLAGS := $(if $(HAVE_MPI),$(shell $(MPICC) --showme:compile))
MPI_LIBS   := $(if $(HAVE_MPI),$(shell $(MPICC) --showme:link))
MPI_LIB    := $(BUILD)/libember_mpi.so
WITH_MPI ?= $(HAVE_MPI)
# The NCCL backend (CUDA tensors): built with MPI (its bootstrap) when the
# toolkit has nccl.h; it links NCCL and the toolkit's shared cudart (rpath).
HAVE_NCCL := $(shell test -f $(CUDA_HOME)/include/nccl.h && echo 1)
NCCL_LIB  := $(BUILD)/libember_nccl.so
WITH_NCCL ?= $(if $(filter 1,$(WITH_CUDA)),$(if $(filter 1,$(WITH_MPI)),$(HAVE_NCCL)))

all: $(BUILD)/libember.a $(BUILD)/ember.so $(BUILD)/ember $(if $(HAVE_ZMQ),$(KERNEL_LIB)) \
     $(if $(filter 1,$(WITH_CUDA)),$(CUDA_LIB)) \
     $(if $(filter 1,$(WITH_MPI)),$(MPI_LIB) $(BUILD)/bench_allreduce) $(if $(filter 1,$(WITH_NCCL)),$(NCCL_LIB)) \
     $(if $(filter 1,$(WITH_EMU)),emu)

$(BUILD)/comm/%.o: comm/%.c engine/comm.h engine/ember.h engine/elementwise_ops.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(MPI_CFLAGS) -c $< -o $@

$(MPI_LIB): $(BUILD)/comm/mpi.o
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(MPI_LIBS)

$(BUILD)/comm/nccl.o: comm/nccl.c engine/comm.h engine/ember.h engine/elementwise_ops.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -c $< -o $@

$(NCCL_LIB): $(BUILD)/comm/nccl.o
	$(CC) -shared $(LDFLAGS) -o $@ $^ -L$(CUDA_HOME)/lib64 -lnccl -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64

# the plain MPI_Allreduce loop that scripts/bench/allreduce.lua measures against
$(BUILD)/bench_allreduce: scripts/bench/allreduce_mpi.c
	$(CC) $(CFLAGS) $(MPI_CFLAGS) -o $@ $< $(MPI_LIBS)

# ptxas reports each kernel's registers, spills, shared memory and stack
# (kept beside the object as .ptxas); the build fails when a kernel exceeds
# its line in kernels/ptxas_budget.txt, spills more than it allows, or has
# none (scripts/ptxas-budget.sh; its update mode rewrites the budget).
$(BUILD)/kernels/%.o: kernels/%.cu kernels/kc.h $(wildcard kernels/*.cuh) engine/backend.h engine/ember.h engine/elementwise_ops.h engine/philox.h engine/polygamma.h engine/formulas.h engine/unary_math.h kernels/ptxas_budget.txt
	@mkdir -p $(dir $@)
	@echo "$(NVCC) $(NVFLAGS) -Xptxas -v -c $< -o $@"
	@$(NVCC) $(NVFLAGS) -Xptxas -v -c $< -o $@ 2> $@.ptxas || { grep -v '^ptxas info\|^    [0-9]* bytes stack' $@.ptxas >&2; exit 1; }
	@grep -v '^ptxas info\|^    [0-9]* bytes stack' $@.ptxas >&2 || true
	@bash scripts/ptxas-budget.sh check kernels/ptxas_budget.txt $@.ptxas || { rm -f $@; exit 1; }

# cudart is linked statically, cuBLAS(Lt) and cuDNN from the toolkit's folder
# (rpath), so the library loads on a machine with only the driver, cuBLAS and
# cuDNN. Only this library links them: a CPU session never loads either.
$(BUILD)/libember_cuda.so: $(CUDA_OBJ)
	$(NVCC) -shared -o $@ $^ -cudart static -L$(CUDA_HOME)/lib64 -lcublas -lcublasLt -lcusolver -lcudnn -Xlinker -rpath,$(CUDA_HOME)/lib64

cuda: $(CUDA_LIB)

# The emulated device (kernels/emu/): the same kernels/*.cu compiled by g++
# for the host, with the emulator's stand-ins for CUDA's built-ins, runtime
# and libraries, into libember_cuda_emu.so; the engine opens it instead of
# libember_cuda.so under EMBER_CUDA=emu. It needs only the toolkit's headers.
# -ffp-contract=off: no fused multiply-adds the source did not ask for (the
# __fmul_rn/__fadd_rn intrinsics are plain operations here)
EMU_SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -DEMBER_SANITIZE
EMU_CXXFLAGS := -std=c++17 $(if $(filter 1,$(SAN)),-O1,-O2) -g -fPIC -pthread -Wall -Wextra -Werror -Wno-unknown-pragmas \
                -Wno-class-memaccess -ffp-contract=off -DEMBER_CUDA_EMU -Ikernels/emu/include -I$(CUDA_HOME)/include \
                $(if $(filter 1,$(SAN)),$(EMU_SANFLAGS))
EMU_SRC   := $(wildcard kernels/emu/*.cc)
EMU_OBJ   := $(CUDA_SRC:kernels/%.cu=$(BUILD)/emu/kernels/%.o) $(EMU_SRC:kernels/emu/%.cc=$(BUILD)/emu/%.o) \
             $(patsubst kernels/emu/%.S,$(BUILD)/emu/%.o,$(wildcard kernels/emu/*.S))
EMU_LIB   := $(BUILD)/libember_cuda_emu.so
EMU_TESTS := $(patsubst tests/emu/%.cc,$(BUILD)/tests/emu_%,$(wildcard tests/emu/*_test.cc))
EMU_HDRS  := $(wildcard kernels/emu/*.h kernels/emu/include/*.h)

# Kernel code gets GCC's thread-sanitizer instrumentation without its
# runtime: the emulator's hooks (fiber.cc) check each load and store for
# bounds and shared-memory races. The sanitizer build checks with ASan instead.
EMU_KERNEL_FLAGS := $(if $(filter 1,$(SAN)),,-fsanitize=thread --param=tsan-instrument-func-entry-exit=0)
$(BUILD)/emu/kernels/%.o: kernels/%.cu kernels/kc.h $(wildcard kernels/*.cuh) engine/backend.h engine/ember.h engine/elementwise_ops.h engine/philox.h engine/polygamma.h engine/formulas.h engine/unary_math.h $(EMU_HDRS)
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) $(EMU_KERNEL_FLAGS) -x c++ -c $< -o $@

$(BUILD)/emu/%.o: kernels/emu/%.cc $(EMU_HDRS)
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@

$(BUILD)/emu/%.o: kernels/emu/%.S
	@mkdir -p $(dir $@)
	$(CXX) -c $< -o $@

$(EMU_LIB): $(EMU_OBJ)
	$(CXX) -shared $(LDFLAGS) -Wl,-soname,libember_cuda_emu.so -Wl,-Bsymbolic -o $@ $^ $(DEPS_LIBS) -pthread

# the stand-ins' own tests, against naive loops (they link the library;
# compiled with the kernels' instrumentation, linked without ThreadSanitizer:
# the library's hooks take its calls)
$(BUILD)/tests/emu_%: tests/emu/%.cc $(EMU_LIB) tests/c/check.h
	@mkdir -p $(dir $@)
	$(CXX) $(EMU_CXXFLAGS) $(EMU_KERNEL_FLAGS) -c -o $@.o $<
	$(CXX) $(EMU_CXXFLAGS) $(LDFLAGS) -o $@ $@.o -L$(BUILD) -lember_cuda_emu -Wl,-rpath,'$$ORIGIN/..'
	rm -f $@.o

# comm/nccl.c again, linked with the emulated device's NCCL and runtime
# instead of the toolkit's (the engine opens it under EMBER_CUDA=emu)
NCCL_EMU_LIB := $(BUILD)/libember_nccl_emu.so
$(NCCL_EMU_LIB): $(BUILD)/comm/nccl.o $(EMU_LIB)
	$(CC) -shared $(LDFLAGS) -o $@ $(BUILD)/comm/nccl.o -L$(BUILD) -lember_cuda_emu -Wl,-rpath,'$$ORIGIN'

emu: $(EMU_LIB) $(EMU_TESTS) $(if $(filter 1,$(WITH_MPI)),$(if $(HAVE_NCCL),$(NCCL_EMU_LIB)))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# shell/*.lua are compiled into the executable (.incbin in the C file that
# runs them), which gcc's dependency files do not see
$(SHELL_OBJ): $(wildcard shell/*.lua)

$(BUILD)/libember.a: $(ENGINE_OBJ)
	rm -f $@ && ar rcs $@ $^

# The Lua module does not link liblua: the host interpreter provides it.
$(BUILD)/ember.so: $(LUA_OBJ) $(BUILD)/libember.a
	$(CC) -shared $(LDFLAGS) -o $@ $(LUA_OBJ) $(BUILD)/libember.a $(LDLIBS)

$(BUILD)/ember: $(SHELL_OBJ) $(LUA_OBJ) $(BUILD)/libember.a
	$(CC) $(LDFLAGS) -rdynamic -o $@ $(SHELL_OBJ) $(LUA_OBJ) $(BUILD)/libember.a \
	    $(shell pkg-config --libs $(LUA_PC)) $(LDLIBS)

# the Jupyter kernel (ZeroMQ, OpenSSL's HMAC): built when both are there; its
# calls into the shell and Lua resolve against the executable (-rdynamic)
$(KERNEL_LIB): $(KERNEL_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libzmq libcrypto)

$(BUILD)/tests/%: tests/c/%.c tests/c/check.h $(BUILD)/libember.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libember.a $(LDLIBS)

# a stand-in for NVML (tests/nvml/fake_nvml.c) that the monitoring tests
# load through EMBER_NVML_LIBRARY; outside tests/ of the build, whose
# executables tests/run.sh runs
FAKE_NVML := $(BUILD)/testlib/libfake_nvml.so
$(FAKE_NVML): tests/nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared $(LDFLAGS) -o $@ $<

test: all $(CTEST_BIN) $(FAKE_NVML)
	@BUILD=$(BUILD) bash tests/run.sh

asan:
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1 all $(CTEST_BIN:$(BUILD)/%=build-asan/%) build-asan/testlib/libfake_nvml.so
	@BUILD=build-asan SAN=1 bash tests/run.sh

bench: all
	@BUILD=$(BUILD) bash scripts/bench/run.sh

# Each generator under scripts/bench/torch-python, the PyTorch 2.x that
# `scripts/install-deps.sh --bench` installs (fixture_io refuses an older one);
# the files name the version that wrote them
FIXTURE_GEN := $(sort $(wildcard scripts/fixtures/make_*_fixtures.py))
fixtures:
	@set -e; for g in $(FIXTURE_GEN); do echo "fixtures: $$g" >&2; scripts/bench/torch-python $$g; done

# Instruction counts against scripts/bench/instr_budget.txt (scripts/bench/instr.sh):
# a build of its own for valgrind (x86-64-v3: valgrind cannot decode AVX-512)
INSTR_BUILD ?= build-instr
INSTR_MAKE = $(MAKE) BUILD=$(INSTR_BUILD) ARCH=-march=x86-64-v3 WITH_CUDA=0 WITH_EMU=0 WITH_MPI=0 $(INSTR_BUILD)/ember
bench-instr:
	@$(INSTR_MAKE)
	@BUILD=$(INSTR_BUILD) bash scripts/bench/instr.sh check

bench-instr-update:
	@$(INSTR_MAKE)
	@BUILD=$(INSTR_BUILD) bash scripts/bench/instr.sh update

# GPU suites and benchmarks: fail when no GPU is found
test-gpu:
	$(MAKE) WITH_CUDA=1 all
	@BUILD=$(BUILD) bash tests/gpu/run.sh

bench-gpu:
	$(MAKE) WITH_CUDA=1 all
	@BUILD=$(BUILD) bash scripts/bench/run-gpu.sh

clean:
	rm -rf build build-asan build-instr

.PHONY: all test asan bench fixtures bench-instr bench-instr-update clean cuda emu test-gpu bench-gpu
-include $(ENGINE_OBJ:.o=.d) $(LUA_OBJ:.o=.d) $(SHELL_OBJ:.o=.d) $(KERNEL_OBJ:.o=.d)
