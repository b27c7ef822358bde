/* dnnl.h — what conv.c hands the oneDNN path (dnnl.c): a checked geometry
 * and the raw buffers. oneDNN itself is opened with dlopen on first use. */
#ifndef EMBER_CPU_DNNL_H
#define EMBER_CPU_DNNL_H

#include "cpu.h"

/* A convolution's sizes, spatial dims right-aligned in 3 slots (1-D and 2-D
 * convs get leading 1s: extent 1, kernel 1, stride 1, padding 0). `in` is
 * x's (or gx's, which may be larger than the minimal one) extent, `out` y's. */
typedef struct cpu_conv_geom {
    int nsp;
    int64_t N, C, K, G;
    int64_t in[3], ker[3], out[3], stride[3], pad[3], dil[3];
} cpu_conv_geom;

/* Runs op on contiguous float32 buffers (out, a, b as in backend.h's
 * em_conv_op). Returns 0 when done, 1 when declined (oneDNN missing or
 * disabled, a case it does not take, a oneDNN failure): the caller then
 * takes the reference path, which overwrites all of out. */
int cpu_dnnl_conv(em_conv_op op, const cpu_conv_geom *g, float *out, const float *a, const float *b);

/* Tests and benchmarks: on = 0 forces the reference path, 1 allows oneDNN
 * (for problems big enough to gain from it), 2 uses it for every size it
 * takes, -1 goes back to what EMBER_DNNL says (default: allowed). */
void cpu_dnnl_enable(int on);
/* Benchmarks: n > 1 runs each call as one primitive over the whole batch
 * on n OpenMP threads instead of sub-batches on the pool (the design
 * dnnl.c's header compares against); 0 goes back. */
void cpu_dnnl_omp_threads(int n);
/* True once libdnnl has been opened successfully. */
bool cpu_dnnl_loaded(void);

#endif
