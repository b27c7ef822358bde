/* optim.c — the CPU kernels of the fused optimizer updates (SGD, Adam/AdamW):
 * one pass over the parameter, its gradient and its state. The update rules
 * are in engine/optim.h, the hyper-parameters' struct in engine/backend.h.
 *
 * The engine hands over contiguous float32/float64 tensors of one shape, so
 * each update is a plain loop gcc vectorises. The loop bodies take their
 * switches (weight decay on, momentum, first step, nesterov) as constant
 * arguments of always-inlined functions, so every variant is compiled as its
 * own branch-free loop. float32 parameters are updated in float arithmetic
 * with coefficients computed in double and rounded once, as PyTorch does, and
 * in the same order of operations as torch.optim's single-tensor updates. */
#include "cpu.h"
#include "../optim.h"

#include <tgmath.h>
#include <stdlib.h>

/* ---- SGD ------------------------------------------------------------------- */

typedef struct sgd_args {
    char *p, *buf;
    const char *g;
    double lr, momentum, dampening, wd;
    bool nesterov, first, maximize;
} sgd_args;

/* ---- Adam / AdamW ---------------------------------------------------------- */

typedef struct adam_args {
    char *p, *m, *v;
    const char *g;
    double b1, b2, eps, l2, decay, neg_step_size, bc2_sqrt;
    bool maximize;
} adam_args;

/* ---- GradScaler's unscale ---------------------------------------------------- */

typedef struct unscale_args {
    char *g;
    float inv;          /* float32 as PyTorch's inv_scale tensor, used in the gradient's dtype */
    int any;            /* set (atomically) by a range that met inf or NaN */
} unscale_args;

/* ---- the loops, float32 and float64 (optim_float.inc) ------------------------ */

#define T float
#define SFX f32
#include "optim_float.inc"
#define T double
#define SFX f64
#include "optim_float.inc"

/* Adam's scalar coefficients, computed in double as PyTorch's CPU kernel does */
static void adam_coefficients(adam_args *a, const em_optim_hyper *h)
{
    a->b1 = h->beta1;
    a->b2 = h->beta2;
    a->eps = h->eps;
    a->l2 = h->decoupled ? 0 : h->weight_decay;
    a->decay = h->decoupled ? 1 - h->lr * h->weight_decay : 1;
    a->neg_step_size = -(h->lr / h->bc1);
    a->bc2_sqrt = sqrt(h->bc2);
    a->maximize = h->maximize;
}

static int cpu_unscale(em_tensor *g, em_tensor *flag, const em_optim_hyper *h)
{
    const char *name = "amp_unscale_";
    if ((g->dtype != EM_FLOAT32 && g->dtype != EM_FLOAT64) || !em_is_contiguous(g))
        return em_set_error("%s: CPU kernel needs a contiguous float32 or float64 gradient, got %s %s", name,
                            em_dtype_name(g->dtype), SHAPE(g));
    if (!flag || flag->dtype != EM_FLOAT32 || em_numel(flag) != 1)
        return em_set_error("%s: CPU kernel needs a one-element float32 flag", name);
    unscale_args a = {.g = em_data_ptr(g), .inv = (float)h->inv_scale, .any = 0};
    cpu_for_ranges(em_numel(g), g->dtype == EM_FLOAT32 ? unscale_range_f32 : unscale_range_f64, &a);
    if (a.any) *(float *)em_data_ptr(flag) = 1.0f;
    return 0;
}

/* ---- entry ----------------------------------------------------------------- */

static int check_operand(const char *op, const char *what, const em_tensor *p, const em_tensor *t)
{
    if (!t) return em_set_error("%s: CPU kernel called without the %s", op, what);
    if (t->dtype != p->dtype || em_numel(t) != em_numel(p) || !em_is_contiguous(t))
        return em_set_error("%s: CPU kernel needs a contiguous %s %s of the parameter's dtype %s "
                            "(got %s %s)", op, what, SHAPE(p), em_dtype_name(p->dtype),
                            em_dtype_name(t->dtype), SHAPE(t));
    return 0;
}

int cpu_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1, em_tensor *s2,
              const em_optim_hyper *h)
{
    if (op == EM_OPTIM_UNSCALE) return cpu_unscale(p, s1, h);
    const char *name = op == EM_OPTIM_SGD ? "sgd_step" : "adam_step";
    if (op != EM_OPTIM_SGD && op != EM_OPTIM_ADAM)
        return em_set_error("optim: invalid op %d", (int)op);
    if (p->dtype != EM_FLOAT32 && p->dtype != EM_FLOAT64)
        return em_set_error("%s: CPU kernel supports float32 and float64 parameters, got %s", name,
                            em_dtype_name(p->dtype));
    if (check_operand(name, "parameter", p, p) || check_operand(name, "gradient", p, g)) return -1;
    int64_t n = em_numel(p);
    bool f32 = p->dtype == EM_FLOAT32;
    if (op == EM_OPTIM_SGD) {
        if (s1 && check_operand(name, "momentum buffer", p, s1)) return -1;
        sgd_args a = {
            .p = em_data_ptr(p), .g = em_data_ptr(g), .buf = s1 ? em_data_ptr(s1) : NULL,
            .lr = h->lr, .momentum = h->momentum, .dampening = h->dampening, .wd = h->weight_decay,
            .nesterov = h->nesterov, .first = h->first_step, .maximize = h->maximize,
        };
        if (a.momentum == 0) a.buf = NULL;
        else if (!a.buf) return em_set_error("%s: momentum %g without a momentum buffer", name, a.momentum);
        cpu_for_ranges(n, f32 ? sgd_range_f32 : sgd_range_f64, &a);
        return 0;
    }
    if (check_operand(name, "exp_avg", p, s1) || check_operand(name, "exp_avg_sq", p, s2)) return -1;
    adam_args a = {.p = em_data_ptr(p), .g = em_data_ptr(g), .m = em_data_ptr(s1), .v = em_data_ptr(s2)};
    adam_coefficients(&a, h);
    cpu_for_ranges(n, f32 ? adam_range_f32 : adam_range_f64, &a);
    return 0;
}

/* ---- multi-tensor ops (em_multi_op) ---------------------------------------------
 * The work is cut into chunks of at most MULTI_CHUNK elements of one tensor,
 * numbered in tensor order, and the pool runs ranges of chunks. Each chunk
 * runs the single-tensor loops above on its slice, so float32/float64 results
 * equal the per-parameter kernel's bit for bit. float16/bfloat16 slices go
 * through float32 tiles: loaded, updated by the float32 loop, rounded back.
 * The norm keeps one float64 partial per chunk and sums them in chunk order
 * afterwards, so its result does not depend on the threads. */

#define MULTI_CHUNK 65536
#define MULTI_TILE 256

typedef struct multi_job {
    em_multi_op op;
    const em_tensor_lists *l;
    const int64_t *first_chunk;     /* [n + 1]: tensor i owns chunks [first_chunk[i], first_chunk[i+1]) */
    em_dtype dt;
    sgd_args sgd;                   /* the pointers are set per slice */
    adam_args adam;
    float inv;                      /* UNSCALE */
    int any;                        /* UNSCALE: a chunk met inf or NaN (set atomically) */
    int norm_kind;                  /* NORM: 1, 2, inf or any other p */
    double norm_p;
    double *partial;                /* NORM: [chunks] */
    double coef;                    /* SCALE, already rounded to the total's dtype */
} multi_job;

enum { NORM_L1, NORM_L2, NORM_INF, NORM_P };

static void tile_load(float *dst, const char *base, int64_t off, int64_t n, em_dtype d)
{
    const uint16_t *s = (const uint16_t *)base + off;
    if (d == EM_FLOAT16) for (int64_t i = 0; i < n; i++) dst[i] = em_half_to_float(s[i]);
    else for (int64_t i = 0; i < n; i++) dst[i] = em_bf16_to_float(s[i]);
}

static void tile_store(char *base, int64_t off, const float *src, int64_t n, em_dtype d)
{
    uint16_t *s = (uint16_t *)base + off;
    if (d == EM_FLOAT16) for (int64_t i = 0; i < n; i++) s[i] = em_float_to_half(src[i]);
    else for (int64_t i = 0; i < n; i++) s[i] = em_float_to_bf16(src[i]);
}

static char *list_data(const multi_job *j, int k, int64_t i)
{
    return j->l->t[k] ? em_data_ptr(j->l->t[k][i]) : NULL;
}

static void sgd_slice(const multi_job *j, int64_t i, int64_t lo, int64_t hi)
{
    sgd_args a = j->sgd;
    a.p = list_data(j, 0, i);
    a.g = list_data(j, 1, i);
    a.buf = a.momentum != 0 ? list_data(j, 2, i) : NULL;
    if (j->dt == EM_FLOAT32) { sgd_range_f32(lo, hi, &a); return; }
    if (j->dt == EM_FLOAT64) { sgd_range_f64(lo, hi, &a); return; }
    float p[MULTI_TILE], g[MULTI_TILE], b[MULTI_TILE];
    for (int64_t o = lo; o < hi; o += MULTI_TILE) {
        int64_t m = hi - o < MULTI_TILE ? hi - o : MULTI_TILE;
        tile_load(p, a.p, o, m, j->dt);
        tile_load(g, a.g, o, m, j->dt);
        if (a.buf) tile_load(b, a.buf, o, m, j->dt);
        sgd_f32(p, g, a.buf ? b : NULL, m, &a);
        tile_store(a.p, o, p, m, j->dt);
        if (a.buf) tile_store(a.buf, o, b, m, j->dt);
    }
}

static void adam_slice(const multi_job *j, int64_t i, int64_t lo, int64_t hi)
{
    adam_args a = j->adam;
    a.p = list_data(j, 0, i);
    a.g = list_data(j, 1, i);
    a.m = list_data(j, 2, i);
    a.v = list_data(j, 3, i);
    if (j->dt == EM_FLOAT32) { adam_range_f32(lo, hi, &a); return; }
    if (j->dt == EM_FLOAT64) { adam_range_f64(lo, hi, &a); return; }
    float p[MULTI_TILE], g[MULTI_TILE], m1[MULTI_TILE], v[MULTI_TILE];
    adam_args t = a;
    t.p = (char *)p;
    t.g = (const char *)g;
    t.m = (char *)m1;
    t.v = (char *)v;
    for (int64_t o = lo; o < hi; o += MULTI_TILE) {
        int64_t m = hi - o < MULTI_TILE ? hi - o : MULTI_TILE;
        tile_load(p, a.p, o, m, j->dt);
        tile_load(g, a.g, o, m, j->dt);
        tile_load(m1, a.m, o, m, j->dt);
        tile_load(v, a.v, o, m, j->dt);
        adam_range_f32(0, m, &t);
        tile_store(a.p, o, p, m, j->dt);
        tile_store(a.m, o, m1, m, j->dt);
        tile_store(a.v, o, v, m, j->dt);
    }
}

static void unscale_slice(multi_job *j, int64_t i, int64_t lo, int64_t hi)
{
    unscale_args a = {.g = list_data(j, 0, i), .inv = j->inv, .any = 0};
    if (j->dt == EM_FLOAT32) unscale_range_f32(lo, hi, &a);
    else if (j->dt == EM_FLOAT64) unscale_range_f64(lo, hi, &a);
    else {
        float g[MULTI_TILE];
        unscale_args t = {.g = (char *)g, .inv = j->inv, .any = 0};
        for (int64_t o = lo; o < hi; o += MULTI_TILE) {
            int64_t m = hi - o < MULTI_TILE ? hi - o : MULTI_TILE;
            tile_load(g, a.g, o, m, j->dt);
            unscale_range_f32(0, m, &t);
            tile_store(a.g, o, g, m, j->dt);
        }
        a.any = t.any;
    }
    if (a.any) __atomic_store_n(&j->any, 1, __ATOMIC_RELAXED);
}

/* the max keeps a NaN once met, as torch's inf-norm does */
static double norm_combine(int kind, double acc, double x)
{
    if (kind != NORM_INF) return acc + x;
    return x > acc || x != x ? x : acc;
}

static double norm_f32(const float *x, int64_t n, int kind, double p)
{
    double s = 0;
    if (kind == NORM_L2) for (int64_t i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
    else if (kind == NORM_L1) for (int64_t i = 0; i < n; i++) s += fabs((double)x[i]);
    else if (kind == NORM_INF) for (int64_t i = 0; i < n; i++) s = norm_combine(kind, s, fabs((double)x[i]));
    else for (int64_t i = 0; i < n; i++) s += pow(fabs((double)x[i]), p);
    return s;
}

static double norm_f64(const double *x, int64_t n, int kind, double p)
{
    double s = 0;
    if (kind == NORM_L2) for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    else if (kind == NORM_L1) for (int64_t i = 0; i < n; i++) s += fabs(x[i]);
    else if (kind == NORM_INF) for (int64_t i = 0; i < n; i++) s = norm_combine(kind, s, fabs(x[i]));
    else for (int64_t i = 0; i < n; i++) s += pow(fabs(x[i]), p);
    return s;
}

static double norm_slice(const multi_job *j, int64_t i, int64_t lo, int64_t hi)
{
    const char *x = list_data(j, 0, i);
    if (j->dt == EM_FLOAT32) return norm_f32((const float *)x + lo, hi - lo, j->norm_kind, j->norm_p);
    if (j->dt == EM_FLOAT64) return norm_f64((const double *)x + lo, hi - lo, j->norm_kind, j->norm_p);
    float t[MULTI_TILE];
    double s = 0;
    for (int64_t o = lo; o < hi; o += MULTI_TILE) {
        int64_t m = hi - o < MULTI_TILE ? hi - o : MULTI_TILE;
        tile_load(t, x, o, m, j->dt);
        s = norm_combine(j->norm_kind, s, norm_f32(t, m, j->norm_kind, j->norm_p));
    }
    return s;
}

static void scale_slice(const multi_job *j, int64_t i, int64_t lo, int64_t hi)
{
    char *x = list_data(j, 0, i);
    if (j->dt == EM_FLOAT64) {
        double *d = (double *)x, c = j->coef;
        for (int64_t k = lo; k < hi; k++) d[k] = d[k] * c;
        return;
    }
    float c = (float)j->coef;
    if (j->dt == EM_FLOAT32) {
        float *d = (float *)x;
        for (int64_t k = lo; k < hi; k++) d[k] = d[k] * c;
        return;
    }
    /* the coefficient in the tensor's dtype first, as coef:to(g) then mul_ */
    c = j->dt == EM_FLOAT16 ? em_half_to_float(em_float_to_half(c)) : em_bf16_to_float(em_float_to_bf16(c));
    float t[MULTI_TILE];
    for (int64_t o = lo; o < hi; o += MULTI_TILE) {
        int64_t m = hi - o < MULTI_TILE ? hi - o : MULTI_TILE;
        tile_load(t, x, o, m, j->dt);
        for (int64_t k = 0; k < m; k++) t[k] = t[k] * c;
        tile_store(x, o, t, m, j->dt);
    }
}

static void multi_chunks(int64_t lo, int64_t hi, void *ctx)
{
    multi_job *j = ctx;
    int64_t n = j->l->n, i = 0;
    /* the first tensor owning chunk lo (a binary search over first_chunk) */
    int64_t a = 0, b = n;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (j->first_chunk[mid + 1] <= lo) a = mid + 1;
        else b = mid;
    }
    i = a;
    for (int64_t c = lo; c < hi; c++) {
        while (j->first_chunk[i + 1] <= c) i++;
        int64_t numel = em_numel(j->l->t[0][i]);
        int64_t s = (c - j->first_chunk[i]) * MULTI_CHUNK;
        int64_t e = s + MULTI_CHUNK < numel ? s + MULTI_CHUNK : numel;
        switch (j->op) {
        case EM_MULTI_SGD: sgd_slice(j, i, s, e); break;
        case EM_MULTI_ADAM: adam_slice(j, i, s, e); break;
        case EM_MULTI_UNSCALE: unscale_slice(j, i, s, e); break;
        case EM_MULTI_NORM: j->partial[c] = norm_slice(j, i, s, e); break;
        default: scale_slice(j, i, s, e); break;
        }
    }
}

static const int multi_nlists[EM_NMULTI] = {3, 4, 1, 1, 1};
static const char *const multi_names[EM_NMULTI] = {"sgd_step", "adam_step", "amp_unscale_", "multi_norm",
                                                   "multi_scale_"};

static int check_lists(em_multi_op op, const em_tensor_lists *l)
{
    const char *name = multi_names[op];
    em_tensor *const *first = l->t[0];
    if (l->n < 0 || (l->n > 0 && !first)) return em_set_error("%s: CPU kernel called without tensors", name);
    for (int64_t i = 0; i < l->n; i++) {
        const em_tensor *p = first[i];
        if (!em_dtype_is_float(p->dtype))
            return em_set_error("%s: CPU kernel supports floating tensors, got %s", name, em_dtype_name(p->dtype));
        for (int k = 0; k < multi_nlists[op]; k++) {
            if (!l->t[k]) continue;
            const em_tensor *t = l->t[k][i];
            if (t->dtype != first[0]->dtype || em_numel(t) != em_numel(p) || !em_is_contiguous(t))
                return em_set_error("%s: CPU kernel needs contiguous tensors of one dtype (%s) and, per "
                                    "parameter, one numel: tensor %lld of list %d is %s %s", name,
                                    em_dtype_name(first[0]->dtype), (long long)i, k, em_dtype_name(t->dtype),
                                    SHAPE(t));
        }
    }
    return 0;
}

/* the op's settings in j from h, a and b; -1 on a bad call */
static int multi_setup(multi_job *j, em_tensor *a, em_tensor *b, const em_optim_hyper *h)
{
    const char *name = multi_names[j->op];
    switch (j->op) {
    case EM_MULTI_SGD:
        j->sgd = (sgd_args){.lr = h->lr, .momentum = h->momentum, .dampening = h->dampening, .wd = h->weight_decay,
                            .nesterov = h->nesterov, .first = h->first_step, .maximize = h->maximize};
        if (h->momentum != 0 && !j->l->t[2])
            return em_set_error("%s: momentum %g without momentum buffers", name, h->momentum);
        return 0;
    case EM_MULTI_ADAM:
        j->adam = (adam_args){0};
        adam_coefficients(&j->adam, h);
        if (!j->l->t[2] || !j->l->t[3]) return em_set_error("%s: CPU kernel called without the state", name);
        return 0;
    case EM_MULTI_UNSCALE:
        if (!a || !b || a->dtype != EM_FLOAT32 || b->dtype != EM_FLOAT32 || em_numel(a) != 1 || em_numel(b) != 1)
            return em_set_error("%s: CPU kernel needs one-element float32 inv_scale and found_inf", name);
        j->inv = *(const float *)em_data_ptr(a);
        return 0;
    case EM_MULTI_NORM:
        if (!a || a->dtype != EM_FLOAT64 || em_numel(a) != j->l->n + 1 || !em_is_contiguous(a))
            return em_set_error("%s: CPU kernel needs a contiguous float64 output of %lld elements", name,
                                (long long)(j->l->n + 1));
        j->norm_p = h->norm_type;
        j->norm_kind = h->norm_type == 1   ? NORM_L1
                       : h->norm_type == 2 ? NORM_L2
                       : isinf(h->norm_type) && h->norm_type > 0 ? NORM_INF
                                                                 : NORM_P;
        return 0;
    default:
        if (!a || em_numel(a) != 1 || (a->dtype != EM_FLOAT32 && a->dtype != EM_FLOAT64))
            return em_set_error("%s: CPU kernel needs a one-element float32 or float64 norm", name);
        if (a->dtype == EM_FLOAT32) {
            float t = *(const float *)em_data_ptr(a), c = (float)h->max_norm / (t + 1e-6f);
            j->coef = c > 1.0f ? 1.0f : c;
        } else {
            double t = *(const double *)em_data_ptr(a), c = h->max_norm / (t + 1e-6);
            j->coef = c > 1.0 ? 1.0 : c;
        }
        return 0;
    }
}

/* a[i] and a[n] from the chunk partials, in chunk order */
static void norm_finish(const multi_job *j, em_tensor *a)
{
    double *out = em_data_ptr(a), total = 0;
    for (int64_t i = 0; i < j->l->n; i++) {
        double s = 0;
        for (int64_t c = j->first_chunk[i]; c < j->first_chunk[i + 1]; c++)
            s = norm_combine(j->norm_kind, s, j->partial[c]);
        out[i] = s;
        total = norm_combine(j->norm_kind, total, s);
    }
    out[j->l->n] = total;
}

int cpu_optim_multi(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b, const em_optim_hyper *h)
{
    if ((int)op < 0 || op >= EM_NMULTI) return em_set_error("optim_multi: invalid op %d", (int)op);
    if (check_lists(op, l)) return -1;
    multi_job j = {.op = op, .l = l, .dt = l->n > 0 ? l->t[0][0]->dtype : EM_FLOAT32};
    if (multi_setup(&j, a, b, h)) return -1;
    int64_t *first = malloc(sizeof *first * (size_t)(l->n + 1));
    if (!first) return em_set_error("%s: out of memory", multi_names[op]);
    int64_t chunks = 0, work = 0;
    for (int64_t i = 0; i < l->n; i++) {
        int64_t numel = em_numel(l->t[0][i]);
        first[i] = chunks;
        chunks += (numel + MULTI_CHUNK - 1) / MULTI_CHUNK;
        work += numel;
    }
    first[l->n] = chunks;
    j.first_chunk = first;
    if (op == EM_MULTI_NORM) {
        j.partial = malloc(sizeof *j.partial * (size_t)(chunks ? chunks : 1));
        if (!j.partial) {
            free(first);
            return em_set_error("%s: out of memory", multi_names[op]);
        }
    }
    if (chunks > 0) cpu_parallel_for(chunks, work, 1, multi_chunks, &j);
    if (op == EM_MULTI_UNSCALE && j.any) *(float *)em_data_ptr(b) = 1.0f;
    if (op == EM_MULTI_NORM) norm_finish(&j, a);
    free(j.partial);
    free(first);
    return 0;
}
