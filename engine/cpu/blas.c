/* blas.c — OpenBLAS (GEMM, LAPACK), opened with dlopen on first use and
 * never linked: a session that never multiplies matrices does not load it
 * (loading it cost some 16,000 relocations and, in Debian's pthread build,
 * a thread pool at every start, `ember -e ''` included). The first GEMM
 * (gemm.c), reference-path convolution (conv.c) or linalg call (lapack.c)
 * opens it; callers go through the table of pointers in blas.h.
 * $EMBER_BLAS_LIBRARY names another file to open (default libopenblas.so.0,
 * found on the loader's path). Without the library, or without one of the
 * symbols, that call and every later one fails with "op: OpenBLAS (<file>)
 * could not be opened: <dlerror>": an engine error, never a crash.
 *
 * Which kernels. Debian's OpenBLAS (0.3.21, DYNAMIC_ARCH) carries kernels
 * for every x86 generation and picks one set when it loads, by the CPU's
 * vendor, family and model numbers. A VM may report a model OpenBLAS does
 * not know (this one: "Intel(R) Xeon(R) Processor", with AVX-512 and
 * AVX512-BF16), and then it takes the Prescott (SSE3) kernels: 4-7x slower.
 * So on Intel CPUs (cpuid's vendor GenuineIntel) ember chooses by the
 * instruction sets the CPU and the OS support (__builtin_cpu_supports
 * checks both):
 *   avx512bf16 (and the four below)           Cooperlake
 *   avx512f + avx512vl + avx512bw + avx512dq  SkylakeX
 *   avx2 + fma                                Haswell
 *   avx                                       Sandybridge
 *   none of these                             OpenBLAS's own choice
 * and hands the name to OpenBLAS as OPENBLAS_CORETYPE. Other vendors keep
 * OpenBLAS's detection, which knows AMD by family (a VM keeps the family).
 * EMBER_BLAS_CORETYPE=<name> forces a set (any name OpenBLAS knows, e.g.
 * Haswell; for an unknown one OpenBLAS prints "Core not found" and chooses
 * itself); the user's own OPENBLAS_CORETYPE wins over both.
 *
 * Threads. ember keeps OpenBLAS single-threaded and splits GEMMs and batches
 * over its own pool (gemm.c's header says why). Unless the user set it,
 * OPENBLAS_NUM_THREADS=1 is in the environment while OpenBLAS loads, and it
 * then creates no thread pool at all (Debian's build otherwise starts one
 * worker per CPU, spinning in sched_yield); openblas_set_num_threads(1)
 * covers a user's own setting.
 *
 * OpenBLAS reads both variables in its constructor, during the dlopen; they
 * are removed right after it, so child processes (gnuplot, mpirun, a user's
 * os.execute) and os.getenv see the environment they would have seen.
 * setenv is not safe against a getenv running at the same moment in another
 * thread; ember's other threads (the pool's) never call getenv. A library
 * already in the process (another module linked against libopenblas.so.0)
 * is the same one: it was initialised by its own environment, which
 * blas_core() then shows.
 *
 * Measured on the 2-core VM this was written on ("Intel(R) Xeon(R)
 * Processor", AVX-512 with AVX512-BF16; shared, so the best of 5 runs, each
 * the best of 20 calls, the cores interleaved): matmul 1024 x 1024 through
 * ember's pool of 2 threads, GFLOP/s (scripts/bench/ops.lua's matmul1024):
 *   core                      float32  float64
 *   Prescott (0.3.21's own)      70.7     38.0
 *   Sandybridge                 138.5     62.7
 *   Haswell                     194.1     92.7
 *   SkylakeX                    350.6    169.0
 *   Cooperlake                  352.5    167.8   <- taken
 * Cooperlake and SkylakeX measure the same for float32 and float64 (one
 * thread, EMBER_NUM_THREADS=1: 188.9 / 88.6 against 187.5 / 88.2), as
 * they should: OpenBLAS's kernel/x86_64/KERNEL.COOPERLAKE is SkylakeX's
 * list plus bfloat16 kernels, which ember does not call (bfloat16 goes to
 * oneDNN). Cooperlake is kept as the set OpenBLAS picks itself for the
 * AVX512-BF16 models it knows. Start-up, `perf stat -r 40 ember -e ''`:
 * 4.1 ms elapsed, 3.0 ms task-clock with OpenBLAS linked (its relocations,
 * its thread pool); 2.0 ms and 1.5 ms now. The first GEMM pays the dlopen:
 * some 5 ms. */
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define X86 1
#endif

static const cpu_dl_symbol symbols[] = {
    {"cblas_sgemm", offsetof(cpu_blas_api, sgemm)},
    {"cblas_dgemm", offsetof(cpu_blas_api, dgemm)},
    {"openblas_set_num_threads", offsetof(cpu_blas_api, set_num_threads)},
    {"openblas_get_corename", offsetof(cpu_blas_api, get_corename)},
    {"sgetrf_", offsetof(cpu_blas_api, sgetrf)},
    {"dgetrf_", offsetof(cpu_blas_api, dgetrf)},
    {"sgesv_", offsetof(cpu_blas_api, sgesv)},
    {"dgesv_", offsetof(cpu_blas_api, dgesv)},
    {"spotrf_", offsetof(cpu_blas_api, spotrf)},
    {"dpotrf_", offsetof(cpu_blas_api, dpotrf)},
    {"sgeqrf_", offsetof(cpu_blas_api, sgeqrf)},
    {"dgeqrf_", offsetof(cpu_blas_api, dgeqrf)},
    {"sorgqr_", offsetof(cpu_blas_api, sorgqr)},
    {"dorgqr_", offsetof(cpu_blas_api, dorgqr)},
    {"sgesdd_", offsetof(cpu_blas_api, sgesdd)},
    {"dgesdd_", offsetof(cpu_blas_api, dgesdd)},
    {"ssyevd_", offsetof(cpu_blas_api, ssyevd)},
    {"dsyevd_", offsetof(cpu_blas_api, dsyevd)},
};

const char *cpu_dl_bind(void *h, const cpu_dl_symbol *symbols, size_t n, void *api)
{
    for (size_t i = 0; i < n; i++) {
        dlerror();
        void *f = dlsym(h, symbols[i].name);
        if (!f) return symbols[i].name;
        memcpy((char *)api + symbols[i].offset, &f, sizeof f);
    }
    return NULL;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cpu_blas_api api;
static bool loaded;
static char load_error[640];    /* why it is unavailable, kept: the answer does not change */

/* ---- the CPU ------------------------------------------------------------------ */

#ifdef X86
static bool is_intel(void)
{
    unsigned a, b, c, d;
    /* the vendor string is ebx, edx, ecx: "Genu" "ineI" "ntel" */
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;
}

static bool has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

static bool has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

/* The kernel set to ask OpenBLAS for (see above); NULL: its own choice. */
static const char *core_for_cpu(void)
{
#ifdef X86
    if (!is_intel()) return NULL;
    if (has_avx512()) return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (has_avx2()) return "Haswell";
    if (__builtin_cpu_supports("avx")) return "Sandybridge";
#endif
    return NULL;
}

const char *em_cpu_capability(void)
{
#ifdef X86
    /* ATen's rule: AVX512 wants VL, BW and DQ besides F, and FMA */
    if (has_avx512() && __builtin_cpu_supports("fma")) return "AVX512";
    if (has_avx2()) return "AVX2";
#endif
    return "DEFAULT";
}

/* ---- loading ------------------------------------------------------------------ */

/* name=value for the dlopen, unless the user set name (or value is NULL);
 * true when set, to be removed after it. */
static bool set_for_load(const char *name, const char *value)
{
    if (!value || getenv(name)) return false;
    return setenv(name, value, 1) == 0;
}

static void load(void)
{
    /* a copy: the environment changes below */
    static char file[4096];
    const char *env = getenv("EMBER_BLAS_LIBRARY");
    snprintf(file, sizeof file, "%s", env && *env ? env : "libopenblas.so.0");
    const char *core = getenv("EMBER_BLAS_CORETYPE");
    if (!core || !*core) core = core_for_cpu();
    bool set_threads = set_for_load("OPENBLAS_NUM_THREADS", "1");
    bool set_core = set_for_load("OPENBLAS_CORETYPE", core);
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    const char *why = h ? NULL : dlerror();
    if (set_threads) unsetenv("OPENBLAS_NUM_THREADS");
    if (set_core) unsetenv("OPENBLAS_CORETYPE");
    if (!h) {
        snprintf(load_error, sizeof load_error, "OpenBLAS (%.200s) could not be opened: %.400s", file,
                 why ? why : "unknown error");
        return;
    }
    const char *missing = cpu_dl_bind(h, symbols, sizeof symbols / sizeof symbols[0], &api);
    if (missing) {
        why = dlerror();
        snprintf(load_error, sizeof load_error, "OpenBLAS (%.200s) could not be opened: it has no %s (%.300s)", file,
                 missing, why ? why : "a null symbol");
        dlclose(h);
        return;
    }
    api.set_num_threads(1);
    loaded = true;
}

const cpu_blas_api *cpu_blas_open(const char *op)
{
    pthread_once(&once, load);
    if (!loaded) {
        em_set_error("%s: %s", op, load_error);
        return NULL;
    }
    return &api;
}

const char *em_cpu_blas_core(void)
{
    const cpu_blas_api *b = cpu_blas_open("blas_core");
    if (!b) return NULL;
    const char *name = b->get_corename();
    return name ? name : "unknown";
}
