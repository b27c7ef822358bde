/* xent.c — fused cross-entropy with class-index targets (see backend.h for
 * the formulas). One pass computes each row's log-sum-exp and its loss; the
 * backward turns the saved log-sum-exp into softmax and subtracts the
 * smoothed one-hot target, so no [M, C] temporary exists in either
 * direction. Rows are independent and split over threads when large. */
#include "cpu.h"

typedef struct xent {
    const em_tensor *x, *t, *w, *g, *lse;
    em_tensor *loss, *lsev, *roww, *gx;
    int64_t ignore, C;
    double eps, wsum;       /* wsum: sum of the class weights (C without) */
    bool f32;               /* float32 rows with unit stride: the vector path */
} xent;

static double ld(const em_tensor *t, int64_t i)
{
    const char *p = (const char *)em_data_ptr(t);
    return cpu_load_f64(p + i * t->strides[0] * (int64_t)em_dtype_size(t->dtype), t->dtype);
}

static void st(em_tensor *t, int64_t i, double v)
{
    char *p = (char *)em_data_ptr(t);
    cpu_store_f64(p + i * t->strides[0] * (int64_t)em_dtype_size(t->dtype), t->dtype, v);
}

static int64_t target(const xent *a, int64_t i)
{
    return ((const int64_t *)em_data_ptr(a->t))[i * a->t->strides[0]];
}

static double xval(const xent *a, int64_t i, int64_t j)
{
    const char *p = (const char *)em_data_ptr(a->x);
    int64_t off = i * a->x->strides[0] + j * a->x->strides[1];
    return cpu_load_f64(p + off * (int64_t)em_dtype_size(a->x->dtype), a->x->dtype);
}

static double weight(const xent *a, int64_t j) { return a->w ? ld(a->w, j) : 1.0; }

/* A float32 row's log-sum-exp, max-shifted, in XL lanes that gcc
 * vectorises (a running max or sum in one variable is a reduction it must
 * keep in order, so it would stay scalar: a quarter of the forward's
 * time went to one exp at a time). The sums are in double, as the scalar
 * loop had them. A NaN is skipped by the max but reaches the sum. */
enum { XL = 16 };
static double row_lse_f32(const float *x, int64_t C)
{
    float mv[XL];
    for (int l = 0; l < XL; l++) mv[l] = -INFINITY;
    int64_t j = 0;
    for (; j + XL <= C; j += XL)
        for (int l = 0; l < XL; l++) mv[l] = x[j + l] > mv[l] ? x[j + l] : mv[l];
    float m = x[0];
    for (int l = 0; l < XL; l++) m = mv[l] > m ? mv[l] : m;
    for (; j < C; j++) m = x[j] > m ? x[j] : m;
    double sv[XL] = {0};
    for (j = 0; j + XL <= C; j += XL)
        for (int l = 0; l < XL; l++) sv[l] += cpu_exp_f32(x[j + l] - m);
    double s = 0;
    for (; j < C; j++) s += cpu_exp_f32(x[j] - m);
    for (int l = 0; l < XL; l++) s += sv[l];
    return m + log(s);
}

/* log sum exp of row i, max-shifted; sums in double */
static double row_lse(const xent *a, int64_t i)
{
    int64_t C = a->C;
    if (a->f32) return row_lse_f32((const float *)em_data_ptr(a->x) + i * a->x->strides[0], C);
    double m = xval(a, i, 0);
    for (int64_t j = 1; j < C; j++) { double v = xval(a, i, j); m = v > m ? v : m; }
    double s = 0;
    for (int64_t j = 0; j < C; j++) s += exp(xval(a, i, j) - m);
    return m + log(s);
}

static void forward_rows(int64_t lo, int64_t hi, void *ctx)
{
    const xent *a = ctx;
    for (int64_t i = lo; i < hi; i++) {
        double lse = row_lse(a, i);
        st(a->lsev, i, lse);
        int64_t t = target(a, i);
        if (t == a->ignore) { st(a->loss, i, 0); st(a->roww, i, 0); continue; }
        double wt = weight(a, t - 1);
        double loss = -(1 - a->eps) * wt * (xval(a, i, t - 1) - lse);
        if (a->eps > 0) {       /* sum_j w_j (x_ij - lse) */
            double sw = 0;
            for (int64_t j = 0; j < a->C; j++) sw += weight(a, j) * xval(a, i, j);
            loss -= a->eps / (double)a->C * (sw - lse * a->wsum);
        }
        st(a->loss, i, loss);
        st(a->roww, i, wt);
    }
}

static void backward_rows(int64_t lo, int64_t hi, void *ctx)
{
    const xent *a = ctx;
    int64_t C = a->C;
    double ec = a->eps / (double)C;
    for (int64_t i = lo; i < hi; i++) {
        int64_t t = target(a, i);
        bool ignored = t == a->ignore;
        double g = ignored ? 0 : ld(a->g, i), lse = ld(a->lse, i);
        double wt = ignored ? 0 : weight(a, t - 1);
        double Q = (1 - a->eps) * wt + ec * a->wsum;
        if (a->f32 && !a->w && a->gx->dtype == EM_FLOAT32) {
            const float *x = (const float *)em_data_ptr(a->x) + i * a->x->strides[0];
            float *o = (float *)em_data_ptr(a->gx) + i * C;
            float gq = (float)(g * Q), ge = (float)(g * ec), fl = (float)lse;
            for (int64_t j = 0; j < C; j++) o[j] = gq * cpu_exp_f32(x[j] - fl) - ge;
            if (!ignored) o[t - 1] -= (float)(g * (1 - a->eps) * wt);
            continue;
        }
        char *o = (char *)em_data_ptr(a->gx) + i * C * (int64_t)em_dtype_size(a->gx->dtype);
        size_t es = em_dtype_size(a->gx->dtype);
        for (int64_t j = 0; j < C; j++) {
            double v = g * (Q * exp(xval(a, i, j) - lse) - ec * weight(a, j));
            if (j == t - 1) v -= g * (1 - a->eps) * wt;
            cpu_store_f64(o + j * (int64_t)es, a->gx->dtype, v);
        }
    }
}

/* rows over the threads when the whole is large (each row's results are its own) */
static void over_rows(int64_t M, int64_t C, cpu_range_fn fn, xent *a)
{
    cpu_parallel_for(M, M * C, 1, fn, a);
}

static int check_targets(const xent *a, int64_t M)
{
    for (int64_t i = 0; i < M; i++) {
        int64_t t = target(a, i);
        if (t != a->ignore && (t < 1 || t > a->C))
            return em_set_error("cross_entropy: target %lld at position %lld is out of range for %lld classes "
                                "(class indices are 1-based, 1..%lld; ignore_index = %lld)",
                                (long long)t, (long long)(i + 1), (long long)a->C, (long long)a->C,
                                (long long)a->ignore);
    }
    return 0;
}

/* Fills the common fields and checks every target once, before any
 * thread starts. */
static int setup(xent *a, const em_tensor *x, const em_tensor *t, const em_tensor *w, int64_t ignore, double eps)
{
    a->x = x; a->t = t; a->w = w; a->ignore = ignore; a->eps = eps;
    a->C = x->sizes[1];
    a->f32 = x->dtype == EM_FLOAT32 && x->strides[1] == 1;
    a->wsum = 0;
    for (int64_t j = 0; j < a->C; j++) a->wsum += weight(a, j);
    if (a->C == 0) return em_set_error("cross_entropy: no classes (input %s)", SHAPE(x));
    return check_targets(a, x->sizes[0]);
}

int cpu_cross_entropy(em_tensor *loss, em_tensor *lse, em_tensor *roww, const em_tensor *x,
                      const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps)
{
    xent a = {.loss = loss, .lsev = lse, .roww = roww};
    if (setup(&a, x, t, w, ignore_index, eps)) return -1;
    over_rows(x->sizes[0], a.C, forward_rows, &a);
    return 0;
}

int cpu_cross_entropy_backward(em_tensor *gx, const em_tensor *g, const em_tensor *x, const em_tensor *lse,
                               const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps)
{
    xent a = {.g = g, .lse = lse, .gx = gx};
    if (setup(&a, x, t, w, ignore_index, eps)) return -1;
    over_rows(x->sizes[0], a.C, backward_rows, &a);
    return 0;
}
