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

/* Runs op on contiguous buffers of dtype dt, float32 or bfloat16 (out, a,
 * b as in backend.h's em_conv_op; bfloat16 sums in float32 and rounds
 * once), with bias [K] of dt when not NULL: forward adds it, backward
 * weight writes the bias's gradient into it. Returns 0 when done, 1 when declined (oneDNN missing or disabled,
 * another dtype, a case it does not take, no bfloat16 kernel but oneDNN's
 * reference loops, a oneDNN failure): the caller then takes the reference
 * path, which overwrites all of out. */
int cpu_dnnl_conv(em_conv_op op, const cpu_conv_geom *g, em_dtype dt, void *out, const void *a, const void *b,
                  void *bias);

/* A batch of products c[i] = alpha a[i] @ b[i] + beta c[i] (i < B) for
 * dnnl_matmul.c: a [M, K] and b [K, N] bfloat16, each row-major with leading
 * dimension lda (ldb) or column-major (ta, tb: element (r, c) at r + c * ld);
 * c [M, N] row-major, bfloat16, or float32 when c_f32. Batch strides in
 * elements, 0 for a matrix shared by the batch. */
typedef struct cpu_matmul {
    int64_t B, M, N, K;
    bool ab_f32;                    /* a and b float32 (else bfloat16) */
    bool ta, tb, c_f32;
    int64_t lda, ldb, ldc, sa, sb, sc;
    const void *a, *b;
    void *c;
    float alpha, beta;
} cpu_matmul;

/* Runs m with float32 sums, the result rounded once. Returns 0 when done, 1
 * when declined (oneDNN missing or disabled, or no fast kernel for it: for
 * float32 operands, none but brgemm or its jit GEMM; c is then to be
 * rewritten whole), -1 with the error set when it failed after adding into c
 * (beta != 0). */
int cpu_dnnl_matmul(const cpu_matmul *m);

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
