/*
 * emu_device.h — device code on the emulated device: the built-in variables
 * (threadIdx, blockIdx, blockDim, gridDim), __syncthreads and the warp
 * operations, atomics, shared memory and the intrinsics kernels/ uses.
 *
 * A kernel's threads are fibers on one host thread (fiber.cc); the built-in
 * variables read the running fiber's record. Barriers and warp operations
 * switch fibers; everything else runs straight through, so between two
 * barriers a thread's code runs without interruption (atomics need no
 * locking). Warp operations complete when every lane their mask names has
 * arrived, with the 32 lanes exchanging values in step as on a GPU.
 */
#ifndef EMBER_EMU_DEVICE_H
#define EMBER_EMU_DEVICE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <tuple>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace emu {

/* The running emulated thread; fiber.cc keeps it current. */
struct thread_ctx {
    uint3 tid;                  /* threadIdx */
    uint3 bid;                  /* blockIdx */
    dim3 bdim, gdim;            /* blockDim, gridDim */
    int linear;                 /* x + y*bx + z*bx*by */
    int lane, warp;
};
extern thread_local thread_ctx *cur;

void syncthreads(const char *file, int line);
void syncwarp(const char *file, int line, unsigned mask = 0xffffffffu);
struct syncwarp_site {
    const char *file;
    int line;
    void operator()(unsigned mask = 0xffffffffu) const { syncwarp(file, line, mask); }
};

/* One warp operation: `bits` the lane's value, returns the value the lane
 * receives. Kinds: */
enum warp_kind { W_SHFL_IDX, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_SYNC };
uint64_t warp_op(warp_kind kind, unsigned mask, uint64_t bits, int param, int width, const char *file,
                 int line);

/* Shared memory of the running block: the static variable of declaration
 * `key` (the same address for every thread of the block), or the dynamic
 * area given at launch. */
void *block_shared(const void *key, size_t bytes, const char *name);
void *dynamic_shared();

/* Checks an atomic's target: device or shared memory of the block. */
void check_atomic(const void *p, size_t n, const char *op);

template <typename T> inline uint64_t to_bits(T v)
{
    static_assert(sizeof(T) <= 8, "warp operations on values of at most 8 bytes");
    uint64_t b = 0;
    memcpy(&b, (const void *)&v, sizeof v);
    return b;
}
template <typename T> inline T from_bits(uint64_t b)
{
    T v;
    memcpy((void *)&v, &b, sizeof v);
    return v;
}

} // namespace emu

#define threadIdx (emu::cur->tid)
#define blockIdx (emu::cur->bid)
#define blockDim (emu::cur->bdim)
#define gridDim (emu::cur->gdim)
constexpr int warpSize = 32;

#define __syncthreads() emu::syncthreads(__FILE__, __LINE__)
/* __syncwarp() or __syncwarp(mask): the call site, then the optional mask */
#define __syncwarp(...) emu::syncwarp_site{__FILE__, __LINE__}(__VA_ARGS__)

/* ---- warp shuffles and votes ------------------------------------------------ */
#define __shfl_sync(m, v, l, ...) emu_shfl(emu::W_SHFL_IDX, m, v, l, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_up_sync(m, v, d, ...) emu_shfl(emu::W_SHFL_UP, m, v, d, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_down_sync(m, v, d, ...) emu_shfl(emu::W_SHFL_DOWN, m, v, d, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_xor_sync(m, v, d, ...) emu_shfl(emu::W_SHFL_XOR, m, v, d, __FILE__, __LINE__, ##__VA_ARGS__)
#define __ballot_sync(m, p) ((unsigned)emu::warp_op(emu::W_BALLOT, m, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __any_sync(m, p) ((int)emu::warp_op(emu::W_ANY, m, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __all_sync(m, p) ((int)emu::warp_op(emu::W_ALL, m, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))

template <typename T>
inline T emu_shfl(emu::warp_kind k, unsigned mask, T v, int param, const char *file, int line, int width = 32)
{
    return emu::from_bits<T>(emu::warp_op(k, mask, emu::to_bits(v), param, width, file, line));
}

/* ---- shared memory ------------------------------------------------------------
 * kernels/ declares shared memory with KC_SHARED / KC_DYNAMIC_SHARED (kc.h):
 * here each declaration names a block-wide area the emulator hands out. */
#define EMU_SHARED(T, name, dims)                                                     \
    static const char name##_emu_key = 0;                                             \
    T(&name) dims = *(T(*) dims)emu::block_shared(&name##_emu_key, sizeof(T dims), #name)
#define EMU_DYNAMIC_SHARED(T, name) T *name = (T *)emu::dynamic_shared()

/* ---- atomics: fibers never interleave inside one, so plain read-modify-write
 * is atomic here; each checks its target first. EMU_ATOMIC keeps them out of
 * the load/store instrumentation (fiber.cc): atomics on one shared address
 * from many threads are not a race. ------------------------------------------ */
#define EMU_ATOMIC __attribute__((no_sanitize_thread, noinline))
/* Every atomic's read-modify-write: checks the target, stores update(old)
 * and returns old. */
template <typename T, typename F> EMU_ATOMIC T emu_atomic_update(T *p, const char *op, F update)
{
    emu::check_atomic(p, sizeof *p, op);
    T old = *p;
    *p = update(old);
    return old;
}

template <typename T> inline T emu_atomic_add(T *p, T v)
{
    return emu_atomic_update(p, "atomicAdd", [v](T old) { return (T)(old + v); });
}
inline int atomicAdd(int *p, int v) { return emu_atomic_add(p, v); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return emu_atomic_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { return emu_atomic_add(p, v); }
inline float atomicAdd(float *p, float v) { return emu_atomic_add(p, v); }
inline double atomicAdd(double *p, double v) { return emu_atomic_add(p, v); }
inline __half atomicAdd(__half *p, __half v)
{
    return emu_atomic_update(p, "atomicAdd", [v](__half old) {
        return __float2half_rn(__half2float(old) + __half2float(v));
    });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v)
{
    return emu_atomic_update(p, "atomicAdd", [v](__nv_bfloat16 old) {
        return __float2bfloat16_rn(__bfloat162float(old) + __bfloat162float(v));
    });
}

template <typename T> inline T emu_atomic_cas(T *p, T cmp, T v)
{
    return emu_atomic_update(p, "atomicCAS", [cmp, v](T old) { return old == cmp ? v : old; });
}
inline int atomicCAS(int *p, int c, int v) { return emu_atomic_cas(p, c, v); }
inline unsigned atomicCAS(unsigned *p, unsigned c, unsigned v) { return emu_atomic_cas(p, c, v); }
inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v)
{
    return emu_atomic_cas(p, c, v);
}

template <typename T> inline T emu_atomic_or(T *p, T v)
{
    return emu_atomic_update(p, "atomicOr", [v](T old) { return (T)(old | v); });
}
inline int atomicOr(int *p, int v) { return emu_atomic_or(p, v); }
inline unsigned atomicOr(unsigned *p, unsigned v) { return emu_atomic_or(p, v); }
inline unsigned long long atomicOr(unsigned long long *p, unsigned long long v) { return emu_atomic_or(p, v); }

template <typename T> inline T emu_atomic_max(T *p, T v)
{
    return emu_atomic_update(p, "atomicMax", [v](T old) { return v > old ? v : old; });
}
inline int atomicMax(int *p, int v) { return emu_atomic_max(p, v); }
inline unsigned atomicMax(unsigned *p, unsigned v) { return emu_atomic_max(p, v); }
inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) { return emu_atomic_max(p, v); }

inline int atomicExch(int *p, int v)
{
    return emu_atomic_update(p, "atomicExch", [v](int) { return v; });
}

/* ---- loads, fences --------------------------------------------------------- */
template <typename T> inline T __ldg(const T *p) { return *p; }
/* a kernel's threads share one host thread: ordering needs only the compiler's */
inline void __threadfence() { __asm__ volatile("" ::: "memory"); }
inline void __threadfence_block() { __asm__ volatile("" ::: "memory"); }
inline void __threadfence_system() { __asm__ volatile("" ::: "memory"); }

/* ---- intrinsics: IEEE round-to-nearest forms are the plain operations (the
 * emulator build has -ffp-contract=off, so none of them fuses) --------------- */
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline float __expf(float a) { return expf(a); }
inline float __logf(float a) { return logf(a); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }
inline double rsqrt(double a) { return 1.0 / sqrt(a); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((uint64_t)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __float_as_uint(float f) { return emu::from_bits<unsigned>(emu::to_bits(f)); }
inline float __uint_as_float(unsigned u) { return emu::from_bits<float>(emu::to_bits(u)); }
inline int __float_as_int(float f) { return emu::from_bits<int>(emu::to_bits(f)); }
inline float __int_as_float(int u) { return emu::from_bits<float>(emu::to_bits(u)); }
inline long long __double_as_longlong(double d) { return emu::from_bits<long long>(emu::to_bits(d)); }
inline double __longlong_as_double(long long v) { return emu::from_bits<double>(emu::to_bits(v)); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
inline int __clzll(long long v) { return v ? __builtin_clzll((unsigned long long)v) : 64; }
inline float __saturatef(float v) { return v < 0 ? 0.0f : (v > 1 ? 1.0f : v); }

/* CUDA's math library has these; libm does not */
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
double erfinv(double y);
inline float erfinvf(float y) { return (float)erfinv((double)y); }

/* device code calls min/max unqualified on numbers */
using std::max;
using std::min;
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline long long min(long long a, int b) { return a < b ? a : (long long)b; }
inline long long max(long long a, int b) { return a > b ? a : (long long)b; }

/* ---- launches (kc.h's KC_LAUNCH): the kernel's arguments are copied at the
 * launch, as CUDA copies a kernel's parameters ------------------------------ */
namespace emu {

struct launch_cfg {
    const char *name;
    const void *fn;             /* the kernel, for its attributes */
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
};

/* Checks the configuration (an error for cudaGetLastError, as the driver's)
 * and queues body(), which run_grid runs once per thread of the grid. */
void launch(const launch_cfg &c, std::function<void()> body);

template <typename... P> struct launcher {
    launch_cfg c;
    void (*k)(P...);
    /* the parameters' own types: arguments convert at the call, as for <<<>>> */
    void operator()(P... args) const
    {
        std::tuple<typename std::decay<P>::type...> params(args...);
        auto kk = k;
        launch(c, [kk, params]() { std::apply(kk, params); });
    }
};

template <typename... P>
launcher<P...> make_launcher(const char *name, dim3 g, dim3 b, size_t smem, cudaStream_t s, void (*k)(P...))
{
    return launcher<P...>{launch_cfg{name, (const void *)k, g, b, smem, s}, k};
}

} // namespace emu

#endif
