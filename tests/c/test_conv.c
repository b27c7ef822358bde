/* test_conv.c — the CPU convolution kernels (engine/cpu/conv.c, dnnl.c)
 * against direct loops written here: the forward sum over taps, and its
 * two adjoints scattered from the same loop nest. Every configuration runs
 * in float32, float64 and bfloat16, through oneDNN and through the reference path
 * (im2col + GEMM), for 1-3 spatial dims, strides, padding, dilation, groups
 * (depthwise too), non-square shapes, a gx longer than the minimal one
 * (conv_transpose's output_padding) and batches that split unevenly over
 * the threads. The identity <conv(x, w), g> = <x, bwd_data(g, w)> =
 * <w, bwd_weight(x, g)> is checked on top. The bias fused into the calls
 * (em_conv_params.bias) is checked against the same loops' results: the
 * forward plus bias[k], and the weight gradient's call writing the sum of g
 * over the batch and positions. */
#include "../../engine/backend.h"
#include "../../engine/cpu/dnnl.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const em_device CPU = {EM_CPU, 0};

typedef struct cfg {
    int nsp;
    int64_t N, C, K, G;
    int64_t in[3], ker[3], stride[3], pad[3], dil[3];
    int64_t extra[3];           /* gx longer than minimal by this (backward data only) */
} cfg;

static int64_t out_extent(const cfg *c, int i)
{
    return (c->in[i] + 2 * c->pad[i] - c->dil[i] * (c->ker[i] - 1) - 1) / c->stride[i] + 1;
}

static em_conv_params params(const cfg *c)
{
    em_conv_params p = {.nspatial = c->nsp, .groups = c->G};
    for (int i = 0; i < c->nsp; i++) {
        p.stride[i] = c->stride[i];
        p.padding[i] = c->pad[i];
        p.dilation[i] = c->dil[i];
    }
    return p;
}

/* ---- tensors ----------------------------------------------------------------------- */

static uint64_t rng_state = 88172645463325252ull;

static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static em_tensor *fill(em_tensor *t, bool random)
{
    em_dtype dt = t->dtype;
    int64_t n = em_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = random ? uniform() : 7.0;       /* 7: garbage the kernel must overwrite */
        if (dt == EM_FLOAT32) ((float *)em_data_ptr(t))[i] = (float)v;
        else if (dt == EM_BFLOAT16) ((uint16_t *)em_data_ptr(t))[i] = em_float_to_bf16((float)v);
        else ((double *)em_data_ptr(t))[i] = v;
    }
    return t;
}

static em_tensor *tensor(int64_t a, int64_t b, const int64_t *sp, int nsp, em_dtype dt, bool random)
{
    int64_t sizes[5] = {a, b};
    for (int i = 0; i < nsp; i++) sizes[2 + i] = sp[i];
    return fill(em_empty(sizes, nsp + 2, dt, CPU), random);
}

/* a [n] vector (a bias), filled as tensor() fills */
static em_tensor *vector(int64_t n, em_dtype dt, bool random)
{
    return fill(em_empty(&n, 1, dt, CPU), random);
}

static double get(const em_tensor *t, int64_t i)
{
    if (t->dtype == EM_BFLOAT16) return em_bf16_to_float(((const uint16_t *)em_data_ptr(t))[i]);
    return t->dtype == EM_FLOAT32 ? ((const float *)em_data_ptr(t))[i] : ((const double *)em_data_ptr(t))[i];
}

/* ---- the direct loops ----------------------------------------------------------------------
 * One nest visits every (n, k, output position, channel of k's group, tap)
 * whose input position is inside x, with flat indices of x, w and y. The
 * forward accumulates x*w into y, backward data gy*w into gx, backward
 * weight gy*x into gw. */

typedef enum { FWD, BWD_DATA, BWD_WEIGHT } direction;

static void naive(direction dir, const cfg *c, const int64_t *xin, const double *x, const double *w,
                  const double *y, double *res)
{
    int nsp = c->nsp;
    int64_t O[3] = {1, 1, 1}, I[3] = {1, 1, 1}, k[3] = {1, 1, 1};
    int64_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
    for (int i = 0; i < nsp; i++) {
        O[i] = out_extent(c, i);
        I[i] = xin[i];
        k[i] = c->ker[i];
        s[i] = c->stride[i];
        p[i] = c->pad[i];
        d[i] = c->dil[i];
    }
    int64_t Cg = c->C / c->G, Kg = c->K / c->G;
    int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2], ksz = k[0] * k[1] * k[2];
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t kk = 0; kk < c->K; kk++)
            for (int64_t o0 = 0; o0 < O[0]; o0++)
                for (int64_t o1 = 0; o1 < O[1]; o1++)
                    for (int64_t o2 = 0; o2 < O[2]; o2++) {
                        int64_t yi = (n * c->K + kk) * osz + (o0 * O[1] + o1) * O[2] + o2;
                        for (int64_t cc = 0; cc < Cg; cc++)
                            for (int64_t t0 = 0; t0 < k[0]; t0++)
                                for (int64_t t1 = 0; t1 < k[1]; t1++)
                                    for (int64_t t2 = 0; t2 < k[2]; t2++) {
                                        int64_t i0 = o0 * s[0] - p[0] + t0 * d[0];
                                        int64_t i1 = o1 * s[1] - p[1] + t1 * d[1];
                                        int64_t i2 = o2 * s[2] - p[2] + t2 * d[2];
                                        if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || i2 < 0 || i2 >= I[2])
                                            continue;
                                        int64_t ch = kk / Kg * Cg + cc;
                                        int64_t xi = (n * c->C + ch) * isz + (i0 * I[1] + i1) * I[2] + i2;
                                        int64_t wi = (kk * Cg + cc) * ksz + (t0 * k[1] + t1) * k[2] + t2;
                                        if (dir == FWD) res[yi] += x[xi] * w[wi];
                                        else if (dir == BWD_DATA) res[xi] += y[yi] * w[wi];
                                        else res[wi] += y[yi] * x[xi];
                                    }
                    }
}

static double *as_doubles(const em_tensor *t)
{
    int64_t n = em_numel(t);
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    for (int64_t i = 0; i < n; i++) d[i] = get(t, i);
    return d;
}

/* max |got - want| <= tol * max(1, max |want|) */
static bool close(const em_tensor *got, const double *want, double tol)
{
    int64_t n = em_numel(got);
    double scale = 1, err = 0;
    for (int64_t i = 0; i < n; i++) {
        scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
        double e = fabs(get(got, i) - want[i]);
        err = e > err || e != e ? e : err;
    }
    if (!(err <= tol * scale)) printf("#     max error %g (scale %g)\n", err, scale);
    return err <= tol * scale;
}

static double dot(const em_tensor *a, const em_tensor *b, bool absolute)
{
    double s = 0;
    for (int64_t i = 0; i < em_numel(a); i++) s += absolute ? fabs(get(a, i) * get(b, i)) : get(a, i) * get(b, i);
    return s;
}

static const char *describe(const cfg *c, em_dtype dt)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%dd N%lld C%lld K%lld G%lld in %lldx%lldx%lld k %lldx%lldx%lld s %lld p %lld d %lld +%lld %s",
             c->nsp, (long long)c->N, (long long)c->C, (long long)c->K, (long long)c->G, (long long)c->in[0],
             (long long)c->in[1], (long long)c->in[2], (long long)c->ker[0], (long long)c->ker[1],
             (long long)c->ker[2], (long long)c->stride[0], (long long)c->pad[0], (long long)c->dil[0],
             (long long)c->extra[0], em_dtype_name(dt));
    return buf;
}

/* All three ops of c in dtype dt against the loops; true when all agree. */
static bool agrees(const cfg *c, em_dtype dt)
{
    /* bfloat16: the float32 sum rounded once, half an ulp (2^-9) relative */
    double tol = dt == EM_BFLOAT16 ? 4e-3 : dt == EM_FLOAT32 ? 1e-4 : 1e-11;
    int64_t O[3], kw[3], gxin[3];
    for (int i = 0; i < c->nsp; i++) {
        O[i] = out_extent(c, i);
        kw[i] = c->ker[i];
        gxin[i] = c->in[i] + c->extra[i];
    }
    em_conv_params p = params(c);
    em_tensor *x = tensor(c->N, c->C, c->in, c->nsp, dt, true);
    em_tensor *w = tensor(c->K, c->C / c->G, kw, c->nsp, dt, true);
    em_tensor *g = tensor(c->N, c->K, O, c->nsp, dt, true);
    em_tensor *y = tensor(c->N, c->K, O, c->nsp, dt, false);
    em_tensor *gx = tensor(c->N, c->C, c->in, c->nsp, dt, false);
    em_tensor *gxl = tensor(c->N, c->C, gxin, c->nsp, dt, false);
    em_tensor *gw = tensor(c->K, c->C / c->G, kw, c->nsp, dt, false);
    em_tensor *yb = tensor(c->N, c->K, O, c->nsp, dt, false), *gw2 = tensor(c->K, c->C / c->G, kw, c->nsp, dt, false);
    em_tensor *bias = vector(c->K, dt, true), *gb = vector(c->K, dt, false);
    double *xd = as_doubles(x), *wd = as_doubles(w), *gd = as_doubles(g), *bd = as_doubles(bias);
    double *want_y = calloc((size_t)em_numel(y) + 1, sizeof(double));
    double *want_gx = calloc((size_t)em_numel(gx) + 1, sizeof(double));
    double *want_gxl = calloc((size_t)em_numel(gxl) + 1, sizeof(double));
    double *want_gw = calloc((size_t)em_numel(gw) + 1, sizeof(double));
    naive(FWD, c, c->in, xd, wd, NULL, want_y);
    naive(BWD_DATA, c, c->in, NULL, wd, gd, want_gx);
    naive(BWD_DATA, c, gxin, NULL, wd, gd, want_gxl);
    naive(BWD_WEIGHT, c, c->in, xd, NULL, gd, want_gw);
    /* the bias: added per output channel; its gradient, g summed over the rest */
    int64_t osz = em_numel(g) / (c->N * c->K);
    double *want_yb = calloc((size_t)em_numel(y) + 1, sizeof(double)), *want_gb = calloc((size_t)c->K, sizeof(double));
    for (int64_t i = 0; i < em_numel(y); i++) {
        int64_t k = i / osz % c->K;
        want_yb[i] = want_y[i] + bd[k];
        want_gb[k] += gd[i];
    }

    bool ok = true;
    const char *what = describe(c, dt);
    if (em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) != 0 || !close(y, want_y, tol)) {
        printf("#   forward: %s %s\n", what, em_error());
        ok = false;
    }
    if (em_cpu_backend.conv(EM_CONV_BACKWARD_DATA, gx, g, w, &p) != 0 || !close(gx, want_gx, tol)) {
        printf("#   backward data: %s %s\n", what, em_error());
        ok = false;
    }
    if (em_cpu_backend.conv(EM_CONV_BACKWARD_DATA, gxl, g, w, &p) != 0 || !close(gxl, want_gxl, tol)) {
        printf("#   backward data into a longer gx: %s %s\n", what, em_error());
        ok = false;
    }
    if (em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, gw, x, g, &p) != 0 || !close(gw, want_gw, tol)) {
        printf("#   backward weight: %s %s\n", what, em_error());
        ok = false;
    }
    em_conv_params pb = p;
    pb.bias = bias;
    if (em_cpu_backend.conv(EM_CONV_FORWARD, yb, x, w, &pb) != 0 || !close(yb, want_yb, tol)) {
        printf("#   forward with a bias: %s %s\n", what, em_error());
        ok = false;
    }
    pb.bias = gb;
    if (em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, gw2, x, g, &pb) != 0 || !close(gw2, want_gw, tol)
        || !close(gb, want_gb, tol)) {
        printf("#   backward weight with the bias's gradient: %s %s\n", what, em_error());
        ok = false;
    }
    /* the adjoint identity, on the kernel's own outputs */
    double yg = dot(y, g, false), xgx = dot(x, gx, false), wgw = dot(w, gw, false);
    /* bfloat16's rounding errors do not cancel with the sum: bound them by
     * the sum of the terms' sizes */
    double mag = 1 + (dt == EM_BFLOAT16 ? dot(y, g, true) : fabs(yg));
    if (!(fabs(yg - xgx) <= 10 * tol * mag && fabs(yg - wgw) <= 10 * tol * mag)) {
        printf("#   adjoint: %s: <y,g> %.17g <x,gx> %.17g <w,gw> %.17g\n", what, yg, xgx, wgw);
        ok = false;
    }
    free(xd);
    free(wd);
    free(gd);
    free(want_y);
    free(want_gx);
    free(want_gxl);
    free(want_gw);
    free(want_yb);
    free(want_gb);
    free(bd);
    em_release(yb);
    em_release(gw2);
    em_release(bias);
    em_release(gb);
    em_release(x);
    em_release(w);
    em_release(g);
    em_release(y);
    em_release(gx);
    em_release(gxl);
    em_release(gw);
    return ok;
}

/* ---- configurations ----------------------------------------------------------------------- */

#define V1(a) {a, 0, 0}
#define V2(a, b) {a, b, 0}
#define V3(a, b, c) {a, b, c}

static const cfg configs[] = {
    /* 1-D */
    {1, 3, 4, 6, 2, V1(11), V1(3), V1(2), V1(1), V1(2), V1(1)},
    {1, 1, 3, 2, 1, V1(7), V1(1), V1(1), V1(0), V1(1), V1(0)},          /* pointwise */
    {1, 3, 3, 2, 1, V1(9), V1(1), V1(3), V1(0), V1(1), V1(2)},          /* 1x1, stride 3 */
    {1, 1, 2, 2, 2, V1(5), V1(5), V1(1), V1(2), V1(1), V1(0)},          /* kernel as long as the input */
    {1, 3, 2, 4, 1, V1(4), V1(2), V1(1), V1(0), V1(3), V1(2)},          /* dilation > stride */
    /* 2-D */
    {2, 3, 2, 4, 1, V2(9, 7), V2(3, 2), V2(1, 2), V2(1, 0), V2(1, 2), V2(0, 1)},
    {2, 3, 4, 4, 4, V2(8, 8), V2(3, 3), V2(2, 2), V2(2, 2), V2(1, 1), V2(1, 1)},   /* depthwise */
    {2, 1, 4, 8, 4, V2(6, 5), V2(3, 3), V2(1, 1), V2(1, 1), V2(1, 1), V2(0, 0)},   /* depthwise x2 */
    {2, 3, 4, 6, 2, V2(13, 10), V2(2, 3), V2(3, 2), V2(2, 1), V2(2, 2), V2(2, 1)},
    {2, 3, 5, 3, 1, V2(6, 4), V2(1, 1), V2(1, 1), V2(0, 0), V2(1, 1), V2(0, 0)},   /* pointwise */
    {2, 3, 1, 8, 1, V2(10, 10), V2(3, 3), V2(1, 1), V2(1, 1), V2(1, 1), V2(0, 0)}, /* the CNN's first layer */
    {2, 3, 16, 32, 1, V2(7, 7), V2(3, 3), V2(1, 1), V2(1, 1), V2(1, 1), V2(0, 0)}, /* blocked layouts */
    {2, 7, 16, 32, 1, V2(6, 5), V2(3, 3), V2(2, 1), V2(1, 1), V2(1, 1), V2(1, 0)}, /* uneven sub-batches */
    {2, 3, 32, 32, 2, V2(5, 6), V2(3, 3), V2(1, 1), V2(1, 1), V2(1, 2), V2(0, 0)}, /* grouped, blocked */
    {2, 1, 32, 32, 32, V2(9, 9), V2(3, 3), V2(2, 2), V2(1, 1), V2(1, 1), V2(1, 1)}, /* depthwise, blocked */
    {2, 3, 2, 3, 1, V2(5, 7), V2(2, 2), V2(2, 3), V2(0, 0), V2(1, 1), V2(1, 2)},   /* output_padding > padding */
    /* 3-D */
    {3, 1, 2, 3, 1, V3(5, 6, 4), V3(2, 3, 2), V3(1, 2, 1), V3(1, 0, 2), V3(2, 1, 1), V3(0, 1, 0)},
    {3, 3, 4, 2, 2, V3(4, 5, 6), V3(3, 1, 2), V3(2, 1, 3), V3(1, 0, 1), V3(1, 1, 2), V3(1, 0, 2)},
    {3, 2, 16, 16, 1, V3(4, 4, 4), V3(3, 3, 3), V3(1, 1, 1), V3(1, 1, 1), V3(1, 1, 1), V3(0, 0, 0)},
};

#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

static void run_all(em_dtype dt)
{
    int saved = cpu_threads();
    int threads[] = {1, 2, 3};
    for (int t = 0; t < 3; t++) {
        cpu_set_threads(threads[t]);
        for (int i = 0; i < NCONFIGS; i++) CHECK(agrees(&configs[i], dt));
    }
    cpu_set_threads(saved);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_reference_float64(void)
{
    cpu_dnnl_enable(0);
    run_all(EM_FLOAT64);
    cpu_dnnl_enable(-1);
}

static void test_reference_float32(void)
{
    cpu_dnnl_enable(0);
    run_all(EM_FLOAT32);
    /* disabled, a float32 convolution does not open the library */
    CHECK(!cpu_dnnl_loaded());
    cpu_dnnl_enable(-1);
}

static void test_dnnl_float32(void)
{
    cpu_dnnl_enable(2);
    run_all(EM_FLOAT32);
    cpu_dnnl_enable(-1);
}

/* bfloat16: oneDNN's kernels sum in float32 and round once (the weight
 * gradient's sub-batch parts are added in float32 first); without
 * bfloat16 instructions oneDNN has only its reference loops, which are
 * refused, and the float32 copies run instead: the same results either way */
static void test_dnnl_bfloat16(void)
{
    cpu_dnnl_enable(2);
    run_all(EM_BFLOAT16);
    cpu_dnnl_enable(-1);
}

static void test_reference_bfloat16(void)
{
    cpu_dnnl_enable(0);
    run_all(EM_BFLOAT16);
    cpu_dnnl_enable(-1);
}

static void test_dnnl_float64_takes_the_reference(void)
{
    cpu_dnnl_enable(2);
    run_all(EM_FLOAT64);
    cpu_dnnl_enable(-1);
}

/* more sub-batches than the cache has room for primitives: entries are
 * evicted and made again without harm */
static void test_many_shapes(void)
{
    cpu_dnnl_enable(2);
    for (int r = 0; r < 2; r++)
        for (int64_t n = 1; n <= 40; n += 1) {
            cfg c = {2, n, 3, 4, 1, V2(5, 4), V2(3, 3), V2(1, 1), V2(1, 1), V2(1, 1), V2(0, 0)};
            CHECK(agrees(&c, EM_FLOAT32));
        }
    cpu_dnnl_enable(-1);
}

/* the weight gradient sums partial sums in a fixed order: the same bits
 * on every call, whatever the pool's team did */
static void test_weight_gradient_repeatable(void)
{
    int64_t xs[2] = {12, 12}, k[2] = {3, 3};
    em_conv_params p = {.nspatial = 2, .stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
    for (int path = 0; path < 3; path += 2) {
        cpu_dnnl_enable(path);
        em_tensor *x = tensor(9, 16, xs, 2, EM_FLOAT32, true), *g = tensor(9, 16, xs, 2, EM_FLOAT32, true);
        em_tensor *a = tensor(16, 16, k, 2, EM_FLOAT32, false), *b = tensor(16, 16, k, 2, EM_FLOAT32, false);
        bool same = true;
        CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, a, x, g, &p) == 0);
        for (int r = 0; r < 20; r++) {
            CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, b, x, g, &p) == 0);
            same &= memcmp(em_data_ptr(a), em_data_ptr(b), (size_t)em_numel(a) * 4) == 0;
        }
        CHECK(same);
        em_release(x);
        em_release(g);
        em_release(a);
        em_release(b);
    }
    cpu_dnnl_enable(-1);
}

static void test_empty(void)
{
    for (int path = 0; path < 3; path += 2) {
        cpu_dnnl_enable(path);
        int64_t k[2] = {3, 3}, sp[2] = {5, 5};
        em_conv_params p = {.nspatial = 2, .stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
        /* no samples: y is empty, gw is zero */
        em_tensor *x = tensor(0, 2, sp, 2, EM_FLOAT32, true), *w = tensor(4, 2, k, 2, EM_FLOAT32, true);
        em_tensor *y = tensor(0, 4, sp, 2, EM_FLOAT32, false), *gw = tensor(4, 2, k, 2, EM_FLOAT32, false);
        CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == 0);
        CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, gw, x, y, &p) == 0);
        bool zero = true;
        for (int64_t i = 0; i < em_numel(gw); i++) zero &= get(gw, i) == 0;
        CHECK(zero);
        em_release(x);
        em_release(w);
        em_release(y);
        em_release(gw);
        /* no input channels: y is zero, and so is gx's... of no channels */
        x = tensor(2, 0, sp, 2, EM_FLOAT64, true);
        w = tensor(4, 0, k, 2, EM_FLOAT64, true);
        y = tensor(2, 4, sp, 2, EM_FLOAT64, false);
        CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == 0);
        zero = true;
        for (int64_t i = 0; i < em_numel(y); i++) zero &= get(y, i) == 0;
        CHECK(zero);
        em_release(x);
        em_release(w);
        em_release(y);
        /* no output channels: gx is zero */
        em_tensor *g = tensor(2, 0, sp, 2, EM_FLOAT32, true), *gx = tensor(2, 3, sp, 2, EM_FLOAT32, false);
        w = tensor(0, 3, k, 2, EM_FLOAT32, true);
        CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_DATA, gx, g, w, &p) == 0);
        zero = true;
        for (int64_t i = 0; i < em_numel(gx); i++) zero &= get(gx, i) == 0;
        CHECK(zero);
        em_release(g);
        em_release(gx);
        em_release(w);
    }
    cpu_dnnl_enable(-1);
}

static void test_bad_input(void)
{
    int64_t k[2] = {3, 3}, sp[2] = {5, 5}, small[2] = {4, 4}, big[2] = {6, 6}, one[1] = {5};
    em_conv_params p = {.nspatial = 2, .stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
    em_tensor *x = tensor(2, 2, sp, 2, EM_FLOAT32, true), *w = tensor(4, 2, k, 2, EM_FLOAT32, true);
    em_tensor *y = tensor(2, 4, sp, 2, EM_FLOAT32, false), *ys = tensor(2, 4, small, 2, EM_FLOAT32, false);
    em_tensor *yd = tensor(2, 4, sp, 2, EM_FLOAT64, false), *x1 = tensor(2, 2, one, 1, EM_FLOAT32, true);
    em_tensor *yb = tensor(2, 4, big, 2, EM_FLOAT32, false);
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, ys, x, w, &p) == -1);       /* wrong output size */
    CHECK(strstr(em_error(), "conv") && strstr(em_error(), "[2,4,4,4]"));
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, yd, x, w, &p) == -1);       /* mixed dtypes */
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x1, w, &p) == -1);       /* 1-D input, 2-D conv */
    CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, w, x, ys, &p) == -1);
    /* gx may be longer than the minimal input, never shorter */
    CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_DATA, x, ys, w, &p) == 0);
    CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_DATA, x, yb, w, &p) == -1);
    p.groups = 3;                                                          /* does not divide 2 */
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == -1);
    p.groups = 1;
    p.stride[0] = 0;
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == -1);
    p.stride[0] = 1;
    p.padding[1] = -1;
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == -1);
    p.padding[1] = 0;                                                      /* 5 - 3 + 1 = 3 columns, y has 5 */
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == -1);
    p.padding[1] = 1;
    p.nspatial = 4;
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == -1);
    p.nspatial = 2;
    /* the bias: [K] of the op's dtype, and none for backward data */
    em_tensor *b3 = vector(3, EM_FLOAT32, true), *b4 = vector(4, EM_FLOAT32, true), *b4d = vector(4, EM_FLOAT64, true);
    p.bias = b3;
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == -1);
    CHECK(strstr(em_error(), "the bias must be a contiguous [K] of the op's dtype") != NULL);
    p.bias = b4d;
    CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_WEIGHT, w, x, y, &p) == -1);
    CHECK(strstr(em_error(), "conv backward (weight)") && strstr(em_error(), "the bias must be"));
    p.bias = b4;
    CHECK(em_cpu_backend.conv(EM_CONV_BACKWARD_DATA, x, y, w, &p) == -1);
    CHECK(strstr(em_error(), "backward data takes no bias") != NULL);
    CHECK(em_cpu_backend.conv(EM_CONV_FORWARD, y, x, w, &p) == 0);
    p.bias = NULL;
    em_release(b3);
    em_release(b4);
    em_release(b4d);
    em_release(x);
    em_release(w);
    em_release(y);
    em_release(ys);
    em_release(yd);
    em_release(x1);
    em_release(yb);
}

int main(void)
{
    RUN(test_reference_float64);
    RUN(test_reference_float32);
    RUN(test_bad_input);
    RUN(test_empty);
    /* oneDNN is optional at run time: without it these run the reference */
    RUN(test_dnnl_float32);
    RUN(test_dnnl_bfloat16);
    RUN(test_reference_bfloat16);
    RUN(test_dnnl_float64_takes_the_reference);
    RUN(test_many_shapes);
    RUN(test_weight_gradient_repeatable);
    if (cpu_dnnl_loaded()) printf("# oneDNN was used\n");
    else printf("# oneDNN (libdnnl.so.2) not found: the oneDNN tests ran the reference path\n");
    CHECK_DONE();
}
