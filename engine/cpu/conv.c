/* conv.c — convolution on the CPU (backend.h's conv family): the checks, and
 * the reference path, which takes every case (float64, any geometry) and is
 * the fallback when oneDNN (dnnl.c: float32 and bfloat16) is missing or
 * declines; float16 and a declined bfloat16 run it on float32 copies.
 *
 * The reference path is im2col + GEMM: for one sample n and group g the
 * taps of the input are unrolled into col [C/G * k..., O...] (zeros where a
 * tap falls in the padding), and then
 *   forward          y[n,g]  = w[g] @ col                  [K/G, O...]
 *   backward data    col     = w[g]^T @ gy[n,g], then col is added back to
 *                    the taps it came from (col2im) in gx[n,g]
 *   backward weight  gw[g]  += gy[n,g] @ col^T
 * with single-threaded OpenBLAS calls (gemm.c says why; blas.c opens the
 * library on the first call, and when it cannot, that is this call's error,
 * returned before any work starts), the (n, g) pairs split into
 * 2 x cpu_threads() parts run on the pool, each with its own col buffer
 * (taken beforehand: cpu_alloc is not thread-safe). The weight
 * gradient is a sum over samples, so it is split into cpu_threads() fixed
 * parts over n, each summing into its own buffer, added in order afterwards:
 * the result does not depend on the load. float32 and bfloat16 go to oneDNN first
 * (dnnl.c), which takes the problems where it is faster.
 * A 1x1 convolution with stride 1 and no padding needs no unrolling: col is
 * the input itself.
 *
 * Spatial dims are right-aligned in three slots (leading extent-1 dims for
 * 1-D and 2-D), so one loop nest serves all three. */
#include "blas.h"
#include "dnnl.h"

#include <limits.h>
#include <stdlib.h>

/* ---- checks ------------------------------------------------------------------ */

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

static int conv_error(em_conv_op op, const em_tensor *out, const em_tensor *a, const em_tensor *b,
                      const char *why)
{
    static const char *names[EM_NCONV] = {"conv", "conv backward (data)", "conv backward (weight)"};
    static const char *roles[EM_NCONV][3] = {{"x", "w", "y"}, {"gy", "w", "gx"}, {"x", "gy", "gw"}};
    const char *name = (unsigned)op < EM_NCONV ? names[op] : "conv";
    int r = (unsigned)op < EM_NCONV ? (int)op : 0;
    return em_set_error("%s: %s %s, %s %s -> %s %s: %s", name, roles[r][0], SHAPE(a), roles[r][1], SHAPE(b),
                        roles[r][2], SHAPE(out), why);
}

/* Fills g from the tensors' shapes and p, checking that they agree; 0 or -1. */
static int conv_geometry(em_conv_op op, const em_tensor *out, const em_tensor *a, const em_tensor *b,
                         const em_conv_params *p, cpu_conv_geom *g)
{
    if ((unsigned)op >= EM_NCONV) return em_set_error("conv: unknown op %d", (int)op);
    if (!p || p->nspatial < 1 || p->nspatial > EM_MAX_SPATIAL)
        return conv_error(op, out, a, b, "expected 1 to 3 spatial dims");
    int nsp = p->nspatial, nd = nsp + 2;
    if (out->ndim != nd || a->ndim != nd || b->ndim != nd)
        return conv_error(op, out, a, b, "every tensor needs 2 + the spatial dims");
    if (!em_dtype_is_float(out->dtype) || a->dtype != out->dtype || b->dtype != out->dtype)
        return em_set_error("conv: expected float32, float64, float16 or bfloat16 tensors of one dtype, got %s, %s -> %s",
                            em_dtype_name(a->dtype), em_dtype_name(b->dtype), em_dtype_name(out->dtype));
    const em_tensor *x = op == EM_CONV_BACKWARD_DATA ? out : a;
    const em_tensor *w = op == EM_CONV_BACKWARD_WEIGHT ? out : b;
    const em_tensor *y = op == EM_CONV_FORWARD ? out : op == EM_CONV_BACKWARD_DATA ? a : b;
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    g->N = x->sizes[0];
    g->C = x->sizes[1];
    g->K = w->sizes[0];
    g->G = p->groups;
    if (g->G < 1 || g->C % g->G != 0 || g->K % g->G != 0)
        return conv_error(op, out, a, b, "groups must divide the input and output channels");
    if (w->sizes[1] != g->C / g->G) return conv_error(op, out, a, b, "w's dim 2 must be channels / groups");
    if (y->sizes[0] != g->N || y->sizes[1] != g->K)
        return conv_error(op, out, a, b, "batch or output channels differ");
    for (int i = 0; i < 3; i++) {
        g->in[i] = g->ker[i] = g->out[i] = g->stride[i] = g->dil[i] = 1;
        g->pad[i] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        int s = 3 - nsp + i;
        int64_t ext = x->sizes[2 + i], k = w->sizes[2 + i], nout = y->sizes[2 + i];
        int64_t st = p->stride[i], pd = p->padding[i], dl = p->dilation[i];
        if (st < 1 || dl < 1 || pd < 0 || k < 1)
            return conv_error(op, out, a, b, "stride, dilation and kernel sizes must be >= 1, padding >= 0");
        if (ext > INT64_MAX / 4 || pd > INT64_MAX / 4 || dl > INT64_MAX / 4 / k)
            return conv_error(op, out, a, b, "sizes too large");
        int64_t span = ext + 2 * pd - dl * (k - 1) - 1;
        int64_t most = span < 0 ? 0 : span / st + 1;
        /* backward data: gx may be longer than the minimal input
         * (output_padding); its last rows are then touched by no window */
        bool ok = op == EM_CONV_BACKWARD_DATA ? nout <= most : span >= 0 && nout == most;
        if (!ok) {
            char why[256];
            snprintf(why, sizeof why,
                     "spatial dim %d: extent %lld with kernel %lld, stride %lld, padding %lld, dilation %lld "
                     "gives %lld outputs, not %lld", i + 1, (long long)ext, (long long)k, (long long)st,
                     (long long)pd, (long long)dl, (long long)(span < 0 ? 0 : most), (long long)nout);
            return conv_error(op, out, a, b, why);
        }
        g->in[s] = ext;
        g->ker[s] = k;
        g->out[s] = nout;
        g->stride[s] = st;
        g->pad[s] = pd;
        g->dil[s] = dl;
    }
    return 0;
}

/* ---- im2col and col2im --------------------------------------------------------- */

/* The outputs o in [*lo, *hi) of nout whose tap o*s + off lands inside
 * [0, ext). */
static void taps(int64_t off, int64_t s, int64_t ext, int64_t nout, int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = ext - 1 - off < 0 ? 0 : (ext - 1 - off) / s + 1;
    *lo = a < nout ? a : nout;
    *hi = b < nout ? b : nout;
    if (*hi < *lo) *hi = *lo;
}

static void gather_f32(float *dst, const float *src, int64_t step, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[i * step];
}

static void gather_f64(double *dst, const double *src, int64_t step, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = src[i * step];
}

static void scatter_add_f32(float *dst, int64_t step, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i * step] += src[i];
}

static void scatter_add_f64(double *dst, int64_t step, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i * step] += src[i];
}

/* One row of col: the tap (kd, kh, kw) of channel plane `x` ([I...]) for
 * every output position. */
static void im2col_row(const cpu_conv_geom *g, size_t esz, const char *x, char *row, const int64_t *kk)
{
    int64_t lo[3], hi[3], off[3];
    for (int i = 0; i < 3; i++) {
        off[i] = kk[i] * g->dil[i] - g->pad[i];
        taps(off[i], g->stride[i], g->in[i], g->out[i], &lo[i], &hi[i]);
    }
    int64_t O1 = g->out[1], O2 = g->out[2];
    for (int64_t od = 0; od < g->out[0]; od++) {
        char *plane = row + (size_t)(od * O1 * O2) * esz;
        if (od < lo[0] || od >= hi[0]) {
            memset(plane, 0, (size_t)(O1 * O2) * esz);
            continue;
        }
        int64_t id = od * g->stride[0] + off[0];
        for (int64_t oh = 0; oh < O1; oh++) {
            char *dst = plane + (size_t)(oh * O2) * esz;
            if (oh < lo[1] || oh >= hi[1]) {
                memset(dst, 0, (size_t)O2 * esz);
                continue;
            }
            int64_t ih = oh * g->stride[1] + off[1];
            const char *src = x + (size_t)((id * g->in[1] + ih) * g->in[2] + lo[2] * g->stride[2] + off[2]) * esz;
            int64_t n = hi[2] - lo[2];
            memset(dst, 0, (size_t)lo[2] * esz);
            if (g->stride[2] == 1) memcpy(dst + lo[2] * esz, src, (size_t)n * esz);
            else if (esz == 4) gather_f32((float *)dst + lo[2], (const float *)src, g->stride[2], n);
            else gather_f64((double *)dst + lo[2], (const double *)src, g->stride[2], n);
            memset(dst + hi[2] * esz, 0, (size_t)(O2 - hi[2]) * esz);
        }
    }
}

/* The inverse: adds one row of col back into the taps of plane x. */
static void col2im_row(const cpu_conv_geom *g, size_t esz, char *x, const char *row, const int64_t *kk)
{
    int64_t lo[3], hi[3], off[3];
    for (int i = 0; i < 3; i++) {
        off[i] = kk[i] * g->dil[i] - g->pad[i];
        taps(off[i], g->stride[i], g->in[i], g->out[i], &lo[i], &hi[i]);
    }
    int64_t O1 = g->out[1], O2 = g->out[2], n = hi[2] - lo[2];
    for (int64_t od = lo[0]; od < hi[0]; od++) {
        int64_t id = od * g->stride[0] + off[0];
        for (int64_t oh = lo[1]; oh < hi[1]; oh++) {
            int64_t ih = oh * g->stride[1] + off[1];
            char *dst = x + (size_t)((id * g->in[1] + ih) * g->in[2] + lo[2] * g->stride[2] + off[2]) * esz;
            const char *src = row + (size_t)((od * O1 + oh) * O2 + lo[2]) * esz;
            if (esz == 4) scatter_add_f32((float *)dst, g->stride[2], (const float *)src, n);
            else scatter_add_f64((double *)dst, g->stride[2], (const double *)src, n);
        }
    }
}

/* col [C/G * k..., O...] from the C/G channel planes at x (im2col), or
 * added back into them (col2im, back = true): row r of col is the tap
 * (c, kd, kh, kw) in that order. */
static void walk_cols(const cpu_conv_geom *g, size_t esz, char *x, char *col, bool back)
{
    int64_t Cg = g->C / g->G, isz = prod3(g->in), osz = prod3(g->out), r = 0;
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kd = 0; kd < g->ker[0]; kd++)
            for (int64_t kh = 0; kh < g->ker[1]; kh++)
                for (int64_t kw = 0; kw < g->ker[2]; kw++, r++) {
                    int64_t kk[3] = {kd, kh, kw};
                    char *plane = x + (size_t)(c * isz) * esz, *row = col + (size_t)(r * osz) * esz;
                    if (back) col2im_row(g, esz, plane, row, kk);
                    else im2col_row(g, esz, plane, row, kk);
                }
}

static void im2col(const cpu_conv_geom *g, size_t esz, const char *x, char *col)
{
    walk_cols(g, esz, (char *)x, col, false);   /* x is only read */
}

static void col2im(const cpu_conv_geom *g, size_t esz, char *x, const char *col)
{
    walk_cols(g, esz, x, (char *)col, true);    /* col is only read */
}

/* ---- the reference path ---------------------------------------------------------- */

/* C [M, N] (row-major, ldc) = A' @ B' + beta C with A' = A or A^T, B' = B or B^T. */
static void gemm(const cpu_blas_api *blas, size_t esz, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc)
{
    CBLAS_TRANSPOSE a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
    if (esz == 4)
        blas->sgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B, (int)ldb, (float)beta,
                    C, (int)ldc);
    else
        blas->dgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B, (int)ldb, beta, C,
                    (int)ldc);
}

typedef struct ref_job {
    const cpu_blas_api *blas;
    em_conv_op op;
    const cpu_conv_geom *g;
    size_t esz;
    char *out;
    const char *a, *b;
    bool pointwise;             /* 1x1, stride 1, no padding, in == out: col is the input */
    int64_t parts;              /* the work is split into this many parts */
    char *cols;                 /* one col buffer per part, col_bytes apart */
    char *partial;              /* backward weight: parts - 1 buffers of gw's size (part 0 writes out) */
} ref_job;

static size_t col_bytes(const ref_job *J)
{
    const cpu_conv_geom *g = J->g;
    return J->pointwise ? 0 : (size_t)((g->C / g->G) * prod3(g->ker) * prod3(g->out)) * J->esz;
}

/* Forward and backward data for the (n, g) pairs in [lo, hi), unrolling into col. */
static void ref_pair_range(ref_job *J, char *col, int64_t lo, int64_t hi)
{
    const cpu_conv_geom *g = J->g;
    size_t esz = J->esz;
    int64_t Cg = g->C / g->G, Kg = g->K / g->G, R = Cg * prod3(g->ker), isz = prod3(g->in), osz = prod3(g->out);
    for (int64_t i = lo; i < hi; i++) {
        int64_t n = i / g->G, gi = i % g->G;
        const char *w = J->b + (size_t)(gi * Kg * R) * esz;
        if (J->op == EM_CONV_FORWARD) {
            const char *x = J->a + (size_t)((n * g->C + gi * Cg) * isz) * esz;
            char *y = J->out + (size_t)((n * g->K + gi * Kg) * osz) * esz;
            const char *c = x;
            if (!J->pointwise) {
                im2col(g, esz, x, col);
                c = col;
            }
            gemm(J->blas, esz, false, false, Kg, osz, R, w, R, c, osz, 0.0, y, osz);
        } else {
            const char *gy = J->a + (size_t)((n * g->K + gi * Kg) * osz) * esz;
            char *gx = J->out + (size_t)((n * g->C + gi * Cg) * isz) * esz;
            if (J->pointwise) {
                gemm(J->blas, esz, true, false, R, osz, Kg, w, R, gy, osz, 0.0, gx, osz);
            } else {
                gemm(J->blas, esz, true, false, R, osz, Kg, w, R, gy, osz, 0.0, col, osz);
                memset(gx, 0, (size_t)(Cg * isz) * esz);
                col2im(g, esz, gx, col);
            }
        }
    }
}

/* Forward and backward data: part q takes its share of the (n, g) pairs. */
static void ref_pairs(int64_t lo, int64_t hi, void *ctx)
{
    ref_job *J = ctx;
    int64_t pairs = J->g->N * J->g->G;
    for (int64_t q = lo; q < hi; q++)
        ref_pair_range(J, J->cols ? J->cols + (size_t)q * col_bytes(J) : NULL, pairs * q / J->parts,
                       pairs * (q + 1) / J->parts);
}

/* Backward weight: part q sums the samples of its share into its buffer. */
static void ref_weight_parts(int64_t lo, int64_t hi, void *ctx)
{
    ref_job *J = ctx;
    const cpu_conv_geom *g = J->g;
    size_t esz = J->esz;
    int64_t Cg = g->C / g->G, Kg = g->K / g->G, R = Cg * prod3(g->ker), isz = prod3(g->in), osz = prod3(g->out);
    int64_t wsz = g->K * R;
    for (int64_t q = lo; q < hi; q++) {
        char *col = J->cols ? J->cols + (size_t)q * col_bytes(J) : NULL;
        char *gw = q == 0 ? J->out : J->partial + (size_t)((q - 1) * wsz) * esz;
        int64_t n0 = g->N * q / J->parts, n1 = g->N * (q + 1) / J->parts;
        if (n0 == n1) memset(gw, 0, (size_t)wsz * esz);
        for (int64_t n = n0; n < n1; n++)
            for (int64_t gi = 0; gi < g->G; gi++) {
                const char *x = J->a + (size_t)((n * g->C + gi * Cg) * isz) * esz;
                const char *gy = J->b + (size_t)((n * g->K + gi * Kg) * osz) * esz;
                const char *c = x;
                if (!J->pointwise) {
                    im2col(g, esz, x, col);
                    c = col;
                }
                gemm(J->blas, esz, false, true, Kg, R, osz, gy, osz, c, osz, n == n0 ? 0.0 : 1.0,
                     gw + (size_t)(gi * Kg * R) * esz, R);
            }
    }
}

static void add_f32(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] += src[i];
}

static void add_f64(double *dst, const double *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] += src[i];
}

/* ---- the bias ---------------------------------------------------------------------- */

typedef struct bias_job {
    const cpu_conv_geom *g;
    bool f32;                       /* else float64 */
    char *y;                        /* forward: y, to add to; backward weight: gy */
    char *bias;
} bias_job;

/* y[n, k, ...] += bias[k] on the (n, k) planes lo..hi */
static void bias_add_planes(int64_t lo, int64_t hi, void *ctx)
{
    const bias_job *J = ctx;
    int64_t osz = prod3(J->g->out);
    for (int64_t q = lo; q < hi; q++) {
        int64_t k = q % J->g->K;
        if (J->f32) {
            float *y = (float *)J->y + q * osz, b = ((const float *)J->bias)[k];
            for (int64_t i = 0; i < osz; i++) y[i] += b;
        } else {
            double *y = (double *)J->y + q * osz, b = ((const double *)J->bias)[k];
            for (int64_t i = 0; i < osz; i++) y[i] += b;
        }
    }
}

/* bias[k] = gy[n, k, ...] summed over n (in order) and the positions, in
 * double, for the channels lo..hi */
static void bias_sum_channels(int64_t lo, int64_t hi, void *ctx)
{
    const bias_job *J = ctx;
    int64_t osz = prod3(J->g->out);
    for (int64_t k = lo; k < hi; k++) {
        double s = 0;
        for (int64_t n = 0; n < J->g->N; n++) {
            int64_t at = (n * J->g->K + k) * osz;
            if (J->f32)
                for (int64_t i = 0; i < osz; i++) s += ((const float *)J->y)[at + i];
            else
                for (int64_t i = 0; i < osz; i++) s += ((const double *)J->y)[at + i];
        }
        if (J->f32) ((float *)J->bias)[k] = (float)s;
        else ((double *)J->bias)[k] = s;
    }
}

/* The bias part of op, when it has a bias: forward adds it to out,
 * backward weight writes the sum of gy (b) into it. */
static void conv_bias(em_conv_op op, const cpu_conv_geom *g, bool f32, void *out, const void *b, void *bias)
{
    if (!bias) return;
    bool fwd = op == EM_CONV_FORWARD;
    bias_job J = {.g = g, .f32 = f32, .y = fwd ? out : (void *)b, .bias = bias};
    int64_t n = g->N * g->K * prod3(g->out);
    if (fwd) cpu_parallel_for(g->N * g->K, n, 1, bias_add_planes, &J);
    else cpu_parallel_for(g->K, n, 1, bias_sum_channels, &J);
}

static int conv_reference(em_conv_op op, const cpu_conv_geom *g, em_dtype dt, void *out, const void *a,
                          const void *b, void *bias)
{
    size_t esz = dt == EM_FLOAT32 ? 4 : 8;
    int64_t R = (g->C / g->G) * prod3(g->ker), osz = prod3(g->out);
    int64_t xn = g->N * g->C * prod3(g->in), wn = g->K * R, yn = g->N * g->K * osz;
    if (xn == 0 || wn == 0 || yn == 0) {    /* an empty operand: an empty sum */
        int64_t out_numel = op == EM_CONV_FORWARD ? yn : op == EM_CONV_BACKWARD_DATA ? xn : wn;
        if (out_numel) memset(out, 0, (size_t)out_numel * esz);
        conv_bias(op, g, esz == 4, out, b, bias);
        return 0;
    }
    if (R > INT_MAX || osz > INT_MAX || g->K > INT_MAX)
        return em_set_error("conv: a convolution this large (%lld x %lld unrolled taps) is not supported",
                            (long long)R, (long long)osz);
    static const char *names[EM_NCONV] = {"conv", "conv backward (data)", "conv backward (weight)"};
    const cpu_blas_api *blas = cpu_blas_open(names[op]);
    if (!blas) return -1;
    ref_job J = {.blas = blas, .op = op, .g = g, .esz = esz, .out = out, .a = a, .b = b, .parts = 1};
    J.pointwise = prod3(g->ker) == 1 && prod3(g->stride) == 1 && prod3(g->pad) == 0
                  && memcmp(g->in, g->out, sizeof g->in) == 0;
    double macs = (double)g->N * (double)(g->K * osz) * (double)R;
    int64_t work = macs < 1e18 ? (int64_t)macs : INT64_MAX;
    /* the split depends on cpu_threads(), never on the load: the weight
     * gradient's sums then come out the same on every run */
    int64_t most = op == EM_CONV_BACKWARD_WEIGHT ? g->N : g->N * g->G;
    int64_t T = cpu_parallel(work) ? cpu_threads() : 1;
    J.parts = op == EM_CONV_BACKWARD_WEIGHT ? T : 2 * T;
    if (J.parts > most) J.parts = most;
    int64_t wsz = g->K * R;
    size_t cols = (size_t)J.parts * col_bytes(&J), partial = (size_t)((J.parts - 1) * wsz) * esz;
    int rc = 0;
    if (cols && !(J.cols = cpu_alloc(cols, 0))) return -1;
    if (op == EM_CONV_BACKWARD_WEIGHT && partial && !(J.partial = cpu_alloc(partial, 0))) {
        rc = -1;
        goto done;
    }
    if (op != EM_CONV_BACKWARD_WEIGHT) {
        cpu_parallel_for(J.parts, work, 1, ref_pairs, &J);
    } else {
        cpu_parallel_for(J.parts, work, 1, ref_weight_parts, &J);
        for (int64_t q = 1; q < J.parts; q++) {
            const char *src = J.partial + (size_t)((q - 1) * wsz) * esz;
            if (esz == 4) add_f32(out, (const float *)src, wsz);
            else add_f64(out, (const double *)src, wsz);
        }
    }
    if (rc == 0) conv_bias(op, g, esz == 4, out, b, bias);
done:
    if (J.cols) cpu_free(J.cols, cols, 0);
    if (J.partial) cpu_free(J.partial, partial, 0);
    return rc;
}

/* ---- the entry point ------------------------------------------------------------------ */

int cpu_conv(em_conv_op op, em_tensor *out, const em_tensor *a, const em_tensor *b, const em_conv_params *p)
{
    cpu_conv_geom g;
    if (conv_geometry(op, out, a, b, p, &g) != 0) return -1;
    em_tensor *bias = p->bias;
    if (bias && (op == EM_CONV_BACKWARD_DATA || bias->dtype != out->dtype || bias->ndim != 1
                 || bias->sizes[0] != g.K || !em_is_contiguous(bias)))
        return conv_error(op, out, a, b, op == EM_CONV_BACKWARD_DATA ? "backward data takes no bias"
                                         : "the bias must be a contiguous [K] of the op's dtype");
    int rc = 1;
    if (em_numel(out) > 0 && em_numel(a) > 0 && em_numel(b) > 0)   /* declines other dtypes */
        rc = cpu_dnnl_conv(op, &g, out->dtype, em_data_ptr(out), em_data_ptr(a), em_data_ptr(b),
                           bias ? em_data_ptr(bias) : NULL);
    if (rc <= 0) return rc;
    if (cpu_is_lowp(out)) {     /* float32 working copies, rounded once at the end */
        cpu_widened w = {0};
        em_tensor *o32 = (em_tensor *)cpu_widen(&w, out, true);
        const em_tensor *a32 = cpu_widen(&w, a, false), *b32 = cpu_widen(&w, b, false);
        const em_tensor *c32 = bias ? cpu_widen(&w, bias, op == EM_CONV_BACKWARD_WEIGHT) : NULL;
        rc = w.failed ? -1 : conv_reference(op, &g, EM_FLOAT32, em_data_ptr(o32), em_data_ptr(a32), em_data_ptr(b32),
                                            c32 ? em_data_ptr(c32) : NULL);
        return cpu_narrow(&w, rc);
    }
    return conv_reference(op, &g, out->dtype, em_data_ptr(out), em_data_ptr(a), em_data_ptr(b),
                          bias ? em_data_ptr(bias) : NULL);
}
