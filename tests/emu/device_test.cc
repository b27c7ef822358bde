/*
 * device_test.cc — the emulated device itself (kernels/emu/): warp
 * operations against their documented results, barriers, shared memory,
 * launch limits, streams and events, capture rules, and the faults it
 * reports where a GPU would hang or corrupt memory silently. Each fault
 * test runs in a child process, because a fault leaves the context's error
 * sticky, as on a GPU.
 */
#include <cuda_runtime.h>

#include "../../kernels/emu/emu.h"
#include "../c/check.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>
#include <string>

#define LAUNCH(grid, block, smem, stream, ...) emu::make_launcher(#__VA_ARGS__, grid, block, smem, stream, __VA_ARGS__)

/* ---- kernels ------------------------------------------------------------------------- */

/* out[t] for every lane: the four shuffles and the votes */
__global__ void shuffles(int *out, int width)
{
    int lane = threadIdx.x % 32, base = threadIdx.x * 7;
    out[base + 0] = __shfl_sync(0xffffffffu, lane * 10, 3, width);
    out[base + 1] = __shfl_up_sync(0xffffffffu, lane * 10, 2, width);
    out[base + 2] = __shfl_down_sync(0xffffffffu, lane * 10, 2, width);
    out[base + 3] = __shfl_xor_sync(0xffffffffu, lane * 10, 1, width);
    out[base + 4] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
    out[base + 5] = __any_sync(0xffffffffu, lane == 17);
    out[base + 6] = __all_sync(0xffffffffu, lane < 31);
}

/* a block-wide sum through shared memory and barriers (tree reduction) */
__global__ void block_sum(const float *in, float *out)
{
    EMU_SHARED(float, buf, [256]);
    int t = threadIdx.x;
    buf[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) buf[t] += buf[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = buf[0];
}

/* the classic bug: threads past n leave before the barrier */
__global__ void early_exit_barrier(float *p, int n)
{
    if ((int)threadIdx.x >= n) return;
    p[threadIdx.x] = 1;
    __syncthreads();
}

/* a shuffle whose full mask names lanes that have exited */
__global__ void shuffle_after_exit(int *p)
{
    if (threadIdx.x >= 16) return;
    p[threadIdx.x] = __shfl_down_sync(0xffffffffu, (int)threadIdx.x, 1);
}

/* block_sum without the barrier inside the loop: thread t reads buf[t + s]
 * while thread t + s may still write it */
__global__ void racy_block_sum(const float *in, float *out)
{
    EMU_SHARED(float, buf, [256]);
    int t = threadIdx.x;
    buf[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1)
        if (t < s) buf[t] += buf[t + s];
    if (t == 0) out[blockIdx.x] = buf[0];
}

/* lanes exchange through shared memory, ordered by __syncwarp: no race */
__global__ void warp_exchange(int *out)
{
    EMU_SHARED(int, buf, [64]);
    int t = threadIdx.x;
    buf[t] = t * 3;
    __syncwarp();
    out[t] = buf[(t / 32) * 32 + (t + 1) % 32];
}

/* one element past the end of an exact allocation */
__global__ void read_past_end(const float *in, float *out, int n) { out[0] = in[n]; }

__global__ void atomic_count(int *c) { atomicAdd(c, 1); }

__global__ void atomic_past_end(int *c) { atomicAdd(c + 1, 1); }

__global__ void too_much_shared(int *p)
{
    EMU_SHARED(char, big, [40 << 10]);
    EMU_SHARED(char, more, [16 << 10]);
    big[0] = more[0] = 1;
    p[0] = big[0] + more[0];
}

__global__ void record_order(int *order, int *next)
{
    if (threadIdx.x == 0) order[(*next)++] = (int)blockIdx.x;
}

/* ---- helpers ----------------------------------------------------------------------- */

/* Runs fn in a child; its exit status (the low 8 bits of what it passed to
 * _exit) and what it printed on stderr. */
static int in_child(void (*fn)(), std::string *err)
{
    int fds[2];
    if (pipe(fds)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    err->clear();
    while ((n = read(fds[0], buf, sizeof buf)) > 0) err->append(buf, (size_t)n);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static int *dev_ints(int n)
{
    int *p = NULL;
    cudaMalloc((void **)&p, sizeof(int) * n);
    cudaMemset(p, 0, sizeof(int) * n);
    return p;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_shuffles_and_votes()
{
    for (int width : {32, 8}) {
        int *d = dev_ints(32 * 7), h[32 * 7];
        LAUNCH(1, 32, 0, 0, shuffles)(d, width);
        CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
        for (int l = 0; l < 32; l++) {
            int seg = l / width * width, r = l % width;
            /* CUDA's definitions, written out by hand */
            CHECK(h[l * 7 + 0] == (seg + 3) * 10);
            CHECK(h[l * 7 + 1] == (r >= 2 ? l - 2 : l) * 10);
            CHECK(h[l * 7 + 2] == (r + 2 < width ? l + 2 : l) * 10);
            CHECK(h[l * 7 + 3] == (l ^ 1) * 10);
            CHECK((unsigned)h[l * 7 + 4] == 0x49249249u);  /* lanes 0, 3, 6, ..., 30 */
            CHECK(h[l * 7 + 5] == 1);
            CHECK(h[l * 7 + 6] == 0);
        }
        cudaFree(d);
    }
}

static void test_block_sum_with_barriers()
{
    const int blocks = 5, n = blocks * 256;
    float h[n], s[blocks], *din, *dout;
    for (int i = 0; i < n; i++) h[i] = (float)(i % 17);
    cudaMalloc((void **)&din, sizeof h);
    cudaMalloc((void **)&dout, sizeof s);
    cudaMemcpy(din, h, sizeof h, cudaMemcpyHostToDevice);
    LAUNCH(blocks, 256, 0, 0, block_sum)(din, dout);
    CHECK(cudaMemcpy(s, dout, sizeof s, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int b = 0; b < blocks; b++) {
        double want = 0;
        for (int i = 0; i < 256; i++) want += (b * 256 + i) % 17;
        CHECK_NEAR(s[b], want, 0);
    }
    cudaFree(din);
    cudaFree(dout);
}

static void test_atomics_from_many_blocks()
{
    int *c = dev_ints(1), h = 0;
    LAUNCH(7, 96, 0, 0, atomic_count)(c);
    cudaMemcpy(&h, c, sizeof h, cudaMemcpyDeviceToHost);
    CHECK(h == 7 * 96);
    cudaFree(c);
}

static void test_launch_limits_fail_as_the_driver_does()
{
    int *c = dev_ints(1);
    cudaGetLastError();
    LAUNCH(1, 1025, 0, 0, atomic_count)(c);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    LAUNCH(dim3(1, 65536), 32, 0, 0, atomic_count)(c);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    LAUNCH(1, dim3(8, 8, 65), 0, 0, atomic_count)(c);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    LAUNCH(0, 32, 0, 0, atomic_count)(c);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    /* dynamic shared memory over 48 KB needs the kernel's opt-in first */
    LAUNCH(1, 32, 64 << 10, 0, atomic_count)(c);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute((const void *)atomic_count, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10) ==
          cudaSuccess);
    LAUNCH(1, 32, 64 << 10, 0, atomic_count)(c);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaFuncSetAttribute((const void *)atomic_count, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 << 10) ==
          cudaErrorInvalidValue);
    cudaGetLastError();
    /* the good launches ran and nothing is sticky */
    int h = 0;
    CHECK(cudaMemcpy(&h, c, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(h == 32);
    cudaFree(c);
}

static void properties_are_an_h100s()
{
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
    CHECK(p.major == 9 && p.minor == 0);
    CHECK(p.multiProcessorCount == 132);
    CHECK(p.warpSize == 32 && p.maxThreadsPerBlock == 1024);
    CHECK(p.sharedMemPerBlock == 48 << 10 && p.sharedMemPerBlockOptin == 227 << 10);
    int v = 0;
    CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess && v == 227 << 10);
    CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice);
    cudaGetLastError();
}

static void test_streams_run_in_order_and_events_wait_across_streams()
{
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    int *d = dev_ints(1), *pinned = NULL;
    cudaHostAlloc((void **)&pinned, sizeof(int), cudaHostAllocMapped);
    *pinned = -1;
    cudaEvent_t e;
    cudaEventCreate(&e);
    LAUNCH(1, 64, 0, a, atomic_count)(d);
    cudaEventRecord(e, a);
    cudaStreamWaitEvent(b, e, 0);
    cudaMemcpyAsync(pinned, d, sizeof(int), cudaMemcpyDeviceToHost, b);
    /* queued, not run: the host still sees the old bytes until it waits */
    CHECK(*pinned == -1);
    CHECK(cudaStreamSynchronize(b) == cudaSuccess);
    CHECK(*pinned == 64);
    CHECK(cudaEventQuery(e) == cudaSuccess);
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    cudaEventRecord(t0, a);
    cudaEventRecord(t1, a);
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, t0, t1) == cudaErrorNotReady);
    cudaEventSynchronize(t1);
    CHECK(cudaEventElapsedTime(&ms, t0, t1) == cudaSuccess && ms >= 0);
    cudaEvent_t nt;
    cudaEventCreateWithFlags(&nt, cudaEventDisableTiming);
    cudaEventRecord(nt, a);
    cudaEventSynchronize(nt);
    CHECK(cudaEventElapsedTime(&ms, t0, nt) == cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    cudaEventDestroy(e);
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    cudaEventDestroy(nt);
    cudaFreeHost(pinned);
    cudaFree(d);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
}

/* A pending command (an NCCL kernel waiting for a peer) holds its stream,
 * and a stream that waits on it: queries say NotReady, a synchronisation
 * waits with the API released, so another thread can query meanwhile and
 * let it go. (A mutex, not atomics: this file is built with the
 * emulator's instrumentation, which has no atomics.) */
struct pending_state {
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    bool stuck = true;
    int asked = 0, other_not_ready = 0;
    cudaEvent_t f;
};

static bool pending_ask(pending_state *p)
{
    pthread_mutex_lock(&p->lock);
    p->asked++;
    bool stuck = p->stuck;
    pthread_mutex_unlock(&p->lock);
    return stuck;
}

static void *pending_watcher(void *arg)
{
    pending_state *p = (pending_state *)arg;
    int n = 0;
    for (int i = 0; i < 3; i++)
        if (cudaEventQuery(p->f) == cudaErrorNotReady) n++;
    pthread_mutex_lock(&p->lock);
    p->other_not_ready = n;
    p->stuck = false;
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void test_pending_work_holds_streams_and_lets_other_threads_in()
{
    cudaStream_t a, b;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    pending_state p;
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&p.f, cudaEventDisableTiming);
    pending_state *pp = &p;
    CHECK(emu::submit_pending(a, "stuck", [pp]() { return pending_ask(pp); }) == cudaSuccess);
    cudaEventRecord(e, a);
    cudaStreamWaitEvent(b, e, 0);
    cudaEventRecord(p.f, b);
    CHECK(cudaEventQuery(e) == cudaErrorNotReady);
    CHECK(cudaEventQuery(p.f) == cudaErrorNotReady);
    CHECK(cudaStreamQuery(b) == cudaErrorNotReady);
    CHECK(p.asked > 0);
    /* another thread queries while this one waits, then lets the work go */
    pthread_t watcher;
    CHECK(pthread_create(&watcher, NULL, pending_watcher, &p) == 0);
    CHECK(cudaStreamSynchronize(b) == cudaSuccess);
    pthread_join(watcher, NULL);
    CHECK(p.other_not_ready == 3);
    CHECK(cudaEventQuery(e) == cudaSuccess && cudaEventQuery(p.f) == cudaSuccess);
    cudaEventDestroy(e);
    cudaEventDestroy(p.f);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
}

static void test_capture_records_and_replays_and_refuses_waits()
{
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int *c = dev_ints(1), h = 0;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    LAUNCH(1, 10, 0, s, atomic_count)(c);
    cudaGraph_t g = NULL;
    CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess && g);
    cudaStreamSynchronize(s);
    cudaMemcpy(&h, c, sizeof h, cudaMemcpyDeviceToHost);
    CHECK(h == 0);  /* captured, not run */
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0) == cudaSuccess);
    for (int i = 0; i < 3; i++) cudaGraphLaunch(x, s);
    cudaStreamSynchronize(s);
    cudaMemcpy(&h, c, sizeof h, cudaMemcpyDeviceToHost);
    CHECK(h == 30);
    /* a synchronisation inside a capture fails and invalidates it; cudaMalloc is refused unless relaxed */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    void *m = NULL;
    CHECK(cudaMalloc(&m, 64) == cudaErrorStreamCaptureUnsupported);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    CHECK(cudaMalloc(&m, 64) == cudaSuccess);
    cudaThreadExchangeStreamCaptureMode(&mode);
    CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
    cudaGraph_t g2 = NULL;
    CHECK(cudaStreamEndCapture(s, &g2) == cudaErrorStreamCaptureInvalidated && !g2);
    cudaGetLastError();
    cudaFree(m);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    cudaFree(c);
    cudaStreamDestroy(s);
}

static void test_memory_limit_and_info()
{
    size_t free_b = 0, total = 0;
    CHECK(cudaMemGetInfo(&free_b, &total) == cudaSuccess);
    CHECK(total == (size_t)64 << 20);     /* EMBER_CUDA_EMU_MEMORY=64M, set by main */
    void *p = NULL;
    CHECK(cudaMalloc(&p, (size_t)65 << 20) == cudaErrorMemoryAllocation);
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    CHECK(cudaGetLastError() == cudaSuccess);   /* not sticky */
    CHECK(cudaMalloc(&p, (size_t)32 << 20) == cudaSuccess);
    size_t free2 = 0;
    cudaMemGetInfo(&free2, &total);
    CHECK(free_b - free2 == (size_t)32 << 20);
    cudaFree(p);
}

static void test_block_order_follows_the_seed()
{
    int *order = dev_ints(64), *next = dev_ints(1), h[64];
    LAUNCH(64, 1, 0, 0, record_order)(order, next);
    cudaMemcpy(h, order, sizeof h, cudaMemcpyDeviceToHost);
    bool natural = true, seen[64] = {false};
    for (int i = 0; i < 64; i++) {
        natural = natural && h[i] == i;
        if (h[i] >= 0 && h[i] < 64) seen[h[i]] = true;
    }
    for (int i = 0; i < 64; i++) CHECK(seen[i]);
    CHECK(!natural);    /* main sets EMBER_CUDA_EMU_SEED=7: shuffled */
    cudaFree(order);
    cudaFree(next);
}

static void test_warp_synchronous_exchange_is_no_race()
{
    int *d = dev_ints(64), h[64];
    LAUNCH(1, 64, 0, 0, warp_exchange)(d);
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int t = 0; t < 64; t++) CHECK(h[t] == ((t / 32) * 32 + (t + 1) % 32) * 3);
    cudaFree(d);
}

#if defined(__SANITIZE_ADDRESS__)
const bool asan = true;
#else
const bool asan = false;
#endif

/* faults, each in a child */
static void child_race()
{
    float *in, *out;
    cudaMalloc((void **)&in, 256 * 4);
    cudaMalloc((void **)&out, 4);
    cudaMemset(in, 0, 256 * 4);
    LAUNCH(1, 256, 0, 0, racy_block_sum)(in, out);
    _exit(cudaDeviceSynchronize());
}
static void child_past_end()
{
    float *in, *out;
    cudaMalloc((void **)&in, 10 * 4);
    cudaMalloc((void **)&out, 4);
    cudaMemset(in, 0, 10 * 4);
    LAUNCH(1, 1, 0, 0, read_past_end)(in, out, 10);
    _exit(cudaDeviceSynchronize());
}
static void child_barrier() { float *p; cudaMalloc((void **)&p, 256 * 4); LAUNCH(1, 64, 0, 0, early_exit_barrier)(p, 40); _exit(cudaDeviceSynchronize()); }
static void child_shuffle() { int *p = dev_ints(32); LAUNCH(1, 32, 0, 0, shuffle_after_exit)(p); _exit(cudaDeviceSynchronize()); }
static void child_atomic() { int *p = dev_ints(1); LAUNCH(1, 1, 0, 0, atomic_past_end)(p); _exit(cudaDeviceSynchronize()); }
static void child_shared() { int *p = dev_ints(1); LAUNCH(1, 1, 0, 0, too_much_shared)(p); _exit(cudaDeviceSynchronize()); }
static void child_host_reads() { int *p = dev_ints(4); volatile int x = p[1]; (void)x; _exit(0); }
static void child_sticky()
{
    int *p = dev_ints(1);
    LAUNCH(1, 1, 0, 0, atomic_past_end)(p);
    cudaDeviceSynchronize();
    void *q;
    int bad = cudaMalloc(&q, 16) == cudaErrorIllegalAddress && cudaGetLastError() == cudaErrorIllegalAddress &&
              cudaGetLastError() == cudaErrorIllegalAddress;
    _exit(bad ? 42 : 1);
}

static void test_faults_are_reported_never_hangs()
{
    std::string err;
    int st = in_child(child_barrier, &err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == (cudaErrorLaunchFailure & 0xff));
    CHECK(err.find("early_exit_barrier") != std::string::npos);
    CHECK(err.find("__syncthreads") != std::string::npos && err.find("reached by 40 of the block's 64") != std::string::npos);

    st = in_child(child_shuffle, &err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == (cudaErrorLaunchFailure & 0xff));
    CHECK(err.find("shuffle_after_exit") != std::string::npos && err.find("exited") != std::string::npos);

    st = in_child(child_atomic, &err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == (cudaErrorIllegalAddress & 0xff));
    CHECK(err.find("atomicAdd in kernel atomic_past_end") != std::string::npos);

    st = in_child(child_shared, &err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == (cudaErrorLaunchFailure & 0xff));
    CHECK(err.find("'more'") != std::string::npos && err.find("over the limit of 49152") != std::string::npos);

    st = in_child(child_host_reads, &err);
    CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0));     /* ASan's handler exits instead */
    CHECK(err.find("host code accessed device memory") != std::string::npos);

    st = in_child(child_sticky, &err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);

    /* a load past the end: the emulator's check (make test) or ASan's (make asan) */
    st = in_child(child_past_end, &err);
    if (asan) {
        CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0));
        CHECK(err.find("AddressSanitizer") != std::string::npos && err.find("read_past_end") != std::string::npos);
    } else {
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == (cudaErrorIllegalAddress & 0xff));
        CHECK(err.find("kernel read_past_end") != std::string::npos && err.find("a load") != std::string::npos);
        CHECK(err.find("reach byte 40 of a 40-byte device allocation") != std::string::npos);
    }
}

static void test_shared_memory_races_are_reported()
{
    std::string err;
    int st = in_child(child_race, &err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == (cudaErrorLaunchFailure & 0xff));
    CHECK(err.find("kernel racy_block_sum: shared-memory race on 'buf'") != std::string::npos);
    CHECK(err.find("with no __syncthreads between") != std::string::npos);
}

int main()
{
    setenv("EMBER_CUDA_EMU_MEMORY", "64M", 1);
    setenv("EMBER_CUDA_EMU_SEED", "7", 1);
    RUN(properties_are_an_h100s);
    RUN(test_shuffles_and_votes);
    RUN(test_block_sum_with_barriers);
    RUN(test_atomics_from_many_blocks);
    RUN(test_launch_limits_fail_as_the_driver_does);
    RUN(test_streams_run_in_order_and_events_wait_across_streams);
    RUN(test_pending_work_holds_streams_and_lets_other_threads_in);
    RUN(test_capture_records_and_replays_and_refuses_waits);
    RUN(test_memory_limit_and_info);
    RUN(test_block_order_follows_the_seed);
    RUN(test_warp_synchronous_exchange_is_no_race);
    RUN(test_faults_are_reported_never_hangs);
    if (asan) SKIP(test_shared_memory_races_are_reported, "races are checked by make test's build (ASan replaces the instrumentation)");
    else RUN(test_shared_memory_races_are_reported);
    CHECK_DONE();
}
