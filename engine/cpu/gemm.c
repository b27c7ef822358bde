/* gemm.c — batched matrix multiply on the CPU through OpenBLAS (opened on
 * the first call: blas.c).
 *
 * BLAS takes a matrix as a pointer, a leading dimension and a transpose
 * flag, so any operand whose last two dims are row-major or column-major
 * (with gaps allowed between rows/columns) is passed as it is; anything else
 * (a stride-0 row broadcast, a stepped slice along both dims) is first copied
 * to a contiguous buffer. The batch is a plain loop over the first dim; a
 * batch stride of 0 just reuses the same matrix.
 *
 * Threads: one pool only. OpenBLAS (Debian's pthread build) has its own
 * pool, and its idle workers spin in sched_yield for a long while after each
 * call; next to the engine's own workers that oversubscribes the cores and
 * a training loop that alternates GEMMs and elementwise ops ran 3-4x
 * slower. So OpenBLAS is kept single-threaded (blas.c loads it without a
 * pool of its own) and the GEMMs are split over the engine's pool (pool.c)
 * here: over the batch, and over blocks of rows (or columns) of the output,
 * each block one single-threaded BLAS call.
 *
 * bfloat16 runs natively through oneDNN (dnnl_matmul.c) once the operands
 * have a layout BLAS could read; float16, and bfloat16 where oneDNN declines,
 * are widened to float32 copies (a broadcast batch stays one matrix), run
 * through sgemm and rounded back once. */
#include "blas.h"
#include "cpu.h"
#include "dnnl.h"

#include <limits.h>
#include <string.h>

/* Below this many multiply-adds (some 15 us on one core) a GEMM runs on one
 * thread: splitting costs more than it saves in a real program, where GEMMs
 * alternate with other ops. Measured 2026-11-29 on the 2-core VM with
 * scripts/bench/char_rnn.lua 60 (GEMMs of 266k and 524k multiply-adds, the
 * best of 3): at 262144 the pool took them, 2.12-2.78 ms best idle and a
 * mean of 5.7-7.5 ms beside two busy processes; at this threshold they
 * run on the caller, 2.04-2.15 ms idle and 3.1-4.3 ms loaded, as with
 * EMBER_NUM_THREADS=1. A loop of nothing but one such GEMM does gain
 * (1.3-1.5x at 524k on two threads), but the worker's hand-off and its
 * spinning between jobs cost the other ops more. */
#define PARALLEL_GEMM_MIN (1 << 20)
/* float32 products of at least this many multiply-adds go to oneDNN's
 * brgemm first (dnnl_matmul.c); below, a primitive's set-up and call cost
 * more than its kernel saves */
#define DNNL_F32_MIN (1 << 20)

static int64_t max1(int64_t x) { return x > 1 ? x : 1; }

/* How BLAS can read the [R, C] matrices of t: row-major (NoTrans) with
 * leading dimension *ld, or column-major (Trans). False if neither. */
static bool blas_layout(const em_tensor *t, CBLAS_TRANSPOSE *tr, int64_t *ld)
{
    int64_t R = t->sizes[1], C = t->sizes[2], sr = t->strides[1], sc = t->strides[2];
    if ((sc == 1 || C == 1) && (R == 1 || sr >= max1(C))) {
        *tr = CblasNoTrans;
        *ld = R == 1 ? max1(C) : sr;
    } else if ((sr == 1 || R == 1) && (C == 1 || sc >= max1(R))) {
        *tr = CblasTrans;
        *ld = C == 1 ? max1(R) : sc;
    } else {
        return false;
    }
    return *ld <= INT_MAX;
}

typedef struct gemm_job {
    const cpu_blas_api *blas;
    em_dtype dtype;
    int M, N, K;
    CBLAS_TRANSPOSE ta, tb;
    int lda, ldb, ldc;
    const char *a, *b;
    char *c;
    int64_t sa, sb, sc;     /* batch strides in bytes */
    double alpha, beta;
} gemm_job;

/* Output block rows [m0, m1) x columns [n0, n1) of batch entry i. */
static void gemm_part(const gemm_job *g, int64_t i, int m0, int m1, int n0, int n1)
{
    if (m1 <= m0 || n1 <= n0) return;
    int64_t esz = g->dtype == EM_FLOAT32 ? 4 : 8;
    /* A is [M, K]: row m starts at m*lda (NoTrans) or at column m (Trans);
     * B is [K, N]: column n starts at n (NoTrans) or at row n*ldb (Trans) */
    const char *a = g->a + i * g->sa + (int64_t)m0 * (g->ta == CblasNoTrans ? g->lda : 1) * esz;
    const char *b = g->b + i * g->sb + (int64_t)n0 * (g->tb == CblasNoTrans ? 1 : g->ldb) * esz;
    char *c = g->c + i * g->sc + ((int64_t)m0 * g->ldc + n0) * esz;
    int M = m1 - m0, N = n1 - n0;
    if (g->dtype == EM_FLOAT32)
        g->blas->sgemm(CblasRowMajor, g->ta, g->tb, M, N, g->K, (float)g->alpha,
                       (const float *)a, g->lda, (const float *)b, g->ldb, (float)g->beta,
                       (float *)c, g->ldc);
    else
        g->blas->dgemm(CblasRowMajor, g->ta, g->tb, M, N, g->K, g->alpha,
                       (const double *)a, g->lda, (const double *)b, g->ldb, g->beta,
                       (double *)c, g->ldc);
}

typedef struct gemm_tasks {
    const gemm_job *g;
    int parts;
    bool rows;
    int64_t len, block;
} gemm_tasks;

static void gemm_task_range(int64_t lo, int64_t hi, void *ctx)
{
    const gemm_tasks *T = ctx;
    for (int64_t t = lo; t < hi; t++) {
        int64_t i = t / T->parts, p = t % T->parts;
        int s = (int)(p * T->block), e = (int)((p + 1) * T->block < T->len ? (p + 1) * T->block : T->len);
        if (T->rows) gemm_part(T->g, i, s, e, 0, T->g->N);
        else gemm_part(T->g, i, 0, T->g->M, s, e);
    }
}

/* Runs all B products, split into B * parts tasks over the thread pool: each
 * product is cut into `parts` blocks along its longer output dim. */
static void gemm_all(const gemm_job *g, int64_t B)
{
    int64_t work = (int64_t)g->M * g->N * (g->K ? g->K : 1);
    int nt = cpu_threads();
    if (nt <= 1 || B * work < PARALLEL_GEMM_MIN) {
        for (int64_t i = 0; i < B; i++) gemm_part(g, i, 0, g->M, 0, g->N);
        return;
    }
    gemm_tasks T = {.g = g, .rows = g->M >= g->N};
    /* about two blocks per thread, so that a late thread's share is taken
     * by the others; blocks aligned to 16 rows/columns keep BLAS on its
     * fast kernel widths */
    T.parts = B >= 2 * nt ? 1 : (int)((2 * nt + B - 1) / B);
    T.len = T.rows ? g->M : g->N;
    if (T.parts > T.len) T.parts = (int)T.len;
    T.block = ((T.len + T.parts - 1) / T.parts + 15) & ~(int64_t)15;
    T.parts = (int)((T.len + T.block - 1) / T.block);
    /* the work counts multiply-adds: always past the pool's threshold here */
    cpu_parallel_for(B * T.parts, CPU_PARALLEL_MIN, 1, gemm_task_range, &T);
}

static void scale_loop(char **p, const int64_t *s, int64_t n, void *ctx)
{
    const gemm_job *g = ctx;
    for (int64_t i = 0; i < n; i++) {
        char *q = p[0] + i * s[0];
        if (g->dtype == EM_FLOAT32) *(float *)q = g->beta == 0 ? 0.0f : (float)(g->beta * *(float *)q);
        else *(double *)q = g->beta == 0 ? 0.0 : g->beta * *(double *)q;
    }
}

/* Swaps dims 1 and 2 of a 3-D view header (no data moves). */
static em_tensor *swap_last(const em_tensor *t)
{
    return em_transpose(t, 1, 2);
}

/* A contiguous copy BLAS can read; a broadcast batch (stride 0) stays
 * broadcast, so only one matrix is copied. */
static em_tensor *blas_copy(const em_tensor *t)
{
    if (t->strides[0] != 0 || t->sizes[0] <= 1) return em_contiguous(t);
    em_tensor *one = em_narrow(t, 0, 0, 1);
    em_tensor *c = one ? em_contiguous(one) : NULL;
    em_tensor *e = c ? em_expand(c, t->sizes, 3) : NULL;
    em_release(one);
    em_release(c);
    return e;
}

/* out is row-major in its last two dims; a and b are copied where BLAS
 * cannot read them. bfloat16 a and b: returns 1 when oneDNN declines. */
static int gemm_rowmajor_out(em_tensor *out, const em_tensor *a, const em_tensor *b,
                             double alpha, double beta)
{
    int64_t B = out->sizes[0], M = out->sizes[1], N = out->sizes[2], K = a->sizes[2];
    int64_t lda = 0, ldb = 0;
    CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
    em_tensor *ac = NULL, *bc = NULL;
    if (!blas_layout(a, &ta, &lda)) {
        if (!(ac = blas_copy(a))) return -1;
        a = ac;
        if (!blas_layout(a, &ta, &lda)) { em_release(ac); return em_set_error("gemm: %s: no BLAS layout", SHAPE(a)); }
    }
    if (!blas_layout(b, &tb, &ldb)) {
        if (!(bc = blas_copy(b))) { em_release(ac); return -1; }
        b = bc;
        if (!blas_layout(b, &tb, &ldb)) {
            em_release(ac);
            em_release(bc);
            return em_set_error("gemm: %s: no BLAS layout", SHAPE(b));
        }
    }
    /* bfloat16 always, and large float32 products, through oneDNN
     * (dnnl_matmul.c says when it is faster); a float32 one it declines runs
     * on OpenBLAS below */
    bool f32_dnnl = a->dtype == EM_FLOAT32 && (double)B * (double)M * (double)N * (double)K >= DNNL_F32_MIN;
    if (a->dtype == EM_BFLOAT16 || f32_dnnl) {
        cpu_matmul m = {
            .B = B, .M = M, .N = N, .K = K, .ab_f32 = f32_dnnl, .ta = ta == CblasTrans, .tb = tb == CblasTrans,
            .c_f32 = out->dtype == EM_FLOAT32, .lda = lda, .ldb = ldb,
            .ldc = M == 1 ? max1(N) : out->strides[1],
            .sa = a->strides[0], .sb = b->strides[0], .sc = out->strides[0],
            .a = em_data_ptr(a), .b = em_data_ptr(b), .c = em_data_ptr(out),
            .alpha = (float)alpha, .beta = (float)beta,
        };
        int rc = cpu_dnnl_matmul(&m);
        if (rc != 1 || !f32_dnnl) {
            em_release(ac);
            em_release(bc);
            return rc;
        }
    }
    const cpu_blas_api *blas = cpu_blas_open("gemm");
    if (!blas) {
        em_release(ac);
        em_release(bc);
        return -1;
    }
    int64_t esz = (int64_t)em_dtype_size(out->dtype);
    gemm_job g = {
        .blas = blas, .dtype = out->dtype, .M = (int)M, .N = (int)N, .K = (int)K,
        .ta = ta, .tb = tb, .lda = (int)lda, .ldb = (int)ldb,
        .ldc = (int)(M == 1 ? max1(N) : out->strides[1]),
        .a = em_data_ptr(a), .b = em_data_ptr(b), .c = em_data_ptr(out),
        .sa = a->strides[0] * esz, .sb = b->strides[0] * esz, .sc = out->strides[0] * esz,
        .alpha = alpha, .beta = beta,
    };
    gemm_all(&g, B);
    em_release(ac);
    em_release(bc);
    return 0;
}

/* out = alpha a @ b + beta out, any strides; out and a, b share a dtype, or
 * out is float32 and a, b bfloat16. 1: declined (bfloat16 without oneDNN,
 * or an empty sum in a half dtype), out untouched. */
static int gemm_any(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta)
{
    int64_t M = out->sizes[1], N = out->sizes[2];
    if (a->sizes[2] == 0) {   /* an empty sum: out = beta * out */
        if (out->dtype != EM_FLOAT32 && out->dtype != EM_FLOAT64) return 1;
        gemm_job g = {.dtype = out->dtype, .beta = beta};
        const em_tensor *ts[1] = {out};
        cpu_foreach(1, ts, scale_loop, &g);
        return 0;
    }
    bool rowmajor = (out->strides[2] == 1 || N == 1) && (M == 1 || out->strides[1] >= max1(N))
                    && out->strides[1] <= INT_MAX;
    bool colmajor = (out->strides[1] == 1 || M == 1) && (N == 1 || out->strides[2] >= max1(M))
                    && out->strides[2] <= INT_MAX;
    if (out->sizes[0] > 1 && out->strides[0] == 0) rowmajor = colmajor = false;
    if (rowmajor) return gemm_rowmajor_out(out, a, b, alpha, beta);
    if (colmajor) {
        /* out^T = b^T @ a^T, with out^T row-major */
        em_tensor *ot = swap_last(out), *at = swap_last(a), *bt = swap_last(b);
        int rc = ot && at && bt ? gemm_rowmajor_out(ot, bt, at, alpha, beta) : -1;
        em_release(ot);
        em_release(at);
        em_release(bt);
        return rc;
    }
    /* an output BLAS cannot write: compute into a contiguous buffer */
    em_tensor *tmp = beta != 0 ? em_clone(out) : em_empty_like(out);
    if (!tmp) return -1;
    int rc = gemm_rowmajor_out(tmp, a, b, alpha, beta);
    if (rc == 0) rc = cpu_cast(out, tmp);
    em_release(tmp);
    return rc;
}

/* A float32 copy of the half operand t (t itself when float32); a
 * broadcast batch stays broadcast, one matrix copied. */
static em_tensor *widened(const em_tensor *t)
{
    if (t->dtype == EM_FLOAT32) return em_retain((em_tensor *)t);
    if (t->strides[0] != 0 || t->sizes[0] <= 1) return em_cast_to(t, EM_FLOAT32);
    em_tensor *one = em_narrow(t, 0, 0, 1);
    em_tensor *c = one ? em_cast_to(one, EM_FLOAT32) : NULL;
    em_tensor *e = c ? em_expand(c, t->sizes, 3) : NULL;
    em_release(one);
    em_release(c);
    return e;
}

/* The float32 path of a half GEMM: the operands widened, sgemm, and out
 * (when not float32 itself) rounded once from the float32 result. */
static int gemm_widened(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta)
{
    em_tensor *aw = widened(a), *bw = aw ? widened(b) : NULL, *ow = NULL;
    if (bw) ow = out->dtype == EM_FLOAT32 ? em_retain(out)
                 : beta != 0 ? em_cast_to(out, EM_FLOAT32)
                 : em_empty(out->sizes, 3, EM_FLOAT32, em_dev(out));
    int rc = ow ? gemm_any(ow, aw, bw, alpha, beta) : -1;
    if (rc == 0 && ow != out) rc = cpu_cast(out, ow);
    em_release(aw);
    em_release(bw);
    em_release(ow);
    return rc;
}

static int check_shapes(const em_tensor *out, const em_tensor *a, const em_tensor *b)
{
    if (out->ndim != 3 || a->ndim != 3 || b->ndim != 3)
        return em_set_error("gemm: expected 3-D tensors, got out %s, a %s, b %s", SHAPE(out), SHAPE(a), SHAPE(b));
    int64_t B = out->sizes[0], M = out->sizes[1], N = out->sizes[2], K = a->sizes[2];
    if (a->sizes[0] != B || b->sizes[0] != B || a->sizes[1] != M || b->sizes[1] != K || b->sizes[2] != N)
        return em_set_error("gemm: shapes do not agree: %s @ %s -> %s", SHAPE(a), SHAPE(b), SHAPE(out));
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return em_set_error("gemm: %s @ %s: matrix dimensions above %d are not supported by BLAS",
                            SHAPE(a), SHAPE(b), INT_MAX);
    return 0;
}

int cpu_gemm(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta)
{
    if (check_shapes(out, a, b)) return -1;
    if (!em_dtype_is_float(out->dtype) || a->dtype != out->dtype || b->dtype != out->dtype)
        return em_set_error("gemm: expected floating point tensors of one dtype, got %s, %s -> %s",
                            em_dtype_name(a->dtype), em_dtype_name(b->dtype), em_dtype_name(out->dtype));
    if (em_numel(out) == 0) return 0;
    int rc = out->dtype == EM_FLOAT16 ? 1 : gemm_any(out, a, b, alpha, beta);
    return rc == 1 ? gemm_widened(out, a, b, alpha, beta) : rc;
}

int cpu_gemm_acc32(em_tensor *acc, const em_tensor *a, const em_tensor *b)
{
    if (check_shapes(acc, a, b)) return -1;
    if (acc->dtype != EM_FLOAT32 || !cpu_is_lowp(a) || b->dtype != a->dtype)
        return em_set_error("gemm: expected float16 or bfloat16 operands of one dtype into float32, got %s, %s -> %s",
                            em_dtype_name(a->dtype), em_dtype_name(b->dtype), em_dtype_name(acc->dtype));
    if (em_numel(acc) == 0) return 0;
    int rc = a->dtype == EM_FLOAT16 ? 1 : gemm_any(acc, a, b, 1.0, 0.0);
    return rc == 1 ? gemm_widened(acc, a, b, 1.0, 0.0) : rc;
}
