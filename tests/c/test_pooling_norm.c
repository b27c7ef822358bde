/* test_pooling_norm.c — the CPU backend's pooling and normalisation kernels
 * (engine/cpu/pooling.c, engine/cpu/norm.c) called through em_cpu_backend,
 * against naive loops written here: pooling by explicit enumeration of each
 * window's taps, statistics by two passes in double, and the normalisation
 * backward against central differences of the forward in float64. */
#include "../../engine/backend.h"
#include "../../engine/cpu/cpu.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static const em_device CPU = {EM_CPU, 0};

/* ---- tensors --------------------------------------------------------------------- */

static uint64_t rng = 88172645463325252ull;

static double uniform(void)            /* [0, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static em_tensor *tensor(em_dtype dt, int ndim, const int64_t *sizes)
{
    return em_empty(sizes, ndim, dt, CPU);
}

static double get(const em_tensor *t, int64_t i)
{
    return t->dtype == EM_FLOAT32 ? ((float *)em_data_ptr(t))[i]
         : t->dtype == EM_FLOAT64 ? ((double *)em_data_ptr(t))[i]
                                  : (double)((int64_t *)em_data_ptr(t))[i];
}

static void set(em_tensor *t, int64_t i, double v)
{
    if (t->dtype == EM_FLOAT32) ((float *)em_data_ptr(t))[i] = (float)v;
    else ((double *)em_data_ptr(t))[i] = v;
}

/* values in [lo, lo + span), or small integers (many ties) when ties */
static void fill(em_tensor *t, double lo, double span, bool ties)
{
    int64_t n = em_numel(t);
    for (int64_t i = 0; i < n; i++)
        set(t, i, ties ? (double)(int)(uniform() * 3) : lo + span * uniform());
}

/* ---- pooling reference --------------------------------------------------------------- */

typedef struct pool_case {
    int ns;
    int64_t N, C, I[3], O[3];
    em_pool_params p;
} pool_case;

static int64_t prod(const int64_t *v, int n)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++) r *= v[i];
    return r;
}

/* positions of window o along dim d: pos[j] for the taps inside [0, I),
 * *npad the taps inside [-pad, I + pad) */
static int taps(const pool_case *c, int d, int64_t o, int64_t *pos, int64_t *npad)
{
    const em_pool_params *p = &c->p;
    int n = 0;
    *npad = 0;
    if (p->adaptive) {
        /* floor(o I / O) and ceil((o + 1) I / O) by real division */
        int64_t lo = (int64_t)floor((double)(o * c->I[d]) / (double)c->O[d]);
        int64_t hi = (int64_t)ceil((double)((o + 1) * c->I[d]) / (double)c->O[d]);
        for (int64_t i = lo; i < hi; i++) pos[n++] = i;
        *npad = n;
        return n;
    }
    for (int64_t j = 0; j < p->kernel[d]; j++) {
        int64_t q = o * p->stride[d] - p->padding[d] + j * p->dilation[d];
        if (q >= 0 && q < c->I[d]) pos[n++] = q;
        if (q >= -p->padding[d] && q < c->I[d] + p->padding[d]) (*npad)++;
    }
    return n;
}

/* out (and idx) of one output position of plane pl, as doubles */
static void pool_ref_at(const pool_case *c, em_pool_op op, const em_tensor *in, int64_t pl,
                        const int64_t *o, double *val, int64_t *idx)
{
    int64_t pos[3][64], np[3] = {1, 1, 1}, npad[3] = {1, 1, 1}, I[3] = {1, 1, 1};
    for (int d = 0; d < 3; d++) pos[d][0] = 0;
    for (int d = 0; d < c->ns; d++) {
        np[d] = taps(c, d, o[d], pos[d], &npad[d]);
        I[d] = c->I[d];
    }
    int64_t plane = prod(c->I, c->ns);
    double best = 0, sum = 0;
    int64_t bi = -1;
    for (int64_t a = 0; a < np[0]; a++)
        for (int64_t b = 0; b < np[1]; b++)
            for (int64_t e = 0; e < np[2]; e++) {
                int64_t q = (pos[0][a] * I[1] + pos[1][b]) * I[2] + pos[2][e];
                if (c->ns == 2) q = pos[0][a] * I[1] + pos[1][b];
                if (c->ns == 1) q = pos[0][a];
                double v = get(in, pl * plane + q);
                sum += v;
                bool take = bi < 0 || (isnan(v) && !isnan(best)) || (!isnan(best) && v > best);
                if (take) best = v, bi = q;
            }
    if (op == EM_POOL_MAX) {
        *val = best;
        *idx = bi + 1;
        return;
    }
    int64_t div = c->p.divisor;
    if (div <= 0) {
        div = 1;
        for (int d = 0; d < c->ns; d++) div *= c->p.count_include_pad && !c->p.adaptive ? npad[d] : np[d];
    }
    *val = sum / (double)div;
    *idx = div;
}

/* the output's multi-index k (row-major over O) */
static void unflatten(const pool_case *c, int64_t k, int64_t *o)
{
    for (int d = c->ns - 1; d >= 0; d--) o[d] = k % c->O[d], k /= c->O[d];
}

static int64_t out_size(int64_t I, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode)
{
    int64_t span = I + 2 * p - d * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t O = (ceil_mode ? span + s - 1 : span) / s + 1;
    if (ceil_mode && (O - 1) * s >= I + p) O--;         /* PyTorch's rule */
    return O;
}

/* runs case c through the kernel and compares with the reference; also the
 * average pooling backward against the adjoint built by the reference */
static int check_pool_case(const pool_case *c, em_pool_op op, em_dtype dt, bool ties, double nan_frac)
{
    int64_t in_sz[5] = {c->N, c->C}, out_sz[5] = {c->N, c->C};
    for (int d = 0; d < c->ns; d++) in_sz[2 + d] = c->I[d], out_sz[2 + d] = c->O[d];
    em_tensor *in = tensor(dt, c->ns + 2, in_sz), *out = tensor(dt, c->ns + 2, out_sz);
    em_tensor *idx = em_empty(out_sz, c->ns + 2, EM_INT64, CPU);
    fill(in, -2, 4, ties);
    for (int64_t i = 0; i < em_numel(in); i++)
        if (uniform() < nan_frac) set(in, i, NAN);
    int ok = em_cpu_backend.pool(op, out, op == EM_POOL_MAX ? idx : NULL, in, &c->p) == 0;
    double tol = dt == EM_FLOAT32 ? 1e-6 : 1e-14;
    int64_t planes = c->N * c->C, per = prod(c->O, c->ns);
    for (int64_t pl = 0; ok && pl < planes; pl++)
        for (int64_t k = 0; ok && k < per; k++) {
            int64_t o[3], ri;
            double rv;
            unflatten(c, k, o);
            pool_ref_at(c, op, in, pl, o, &rv, &ri);
            double v = get(out, pl * per + k);
            if (op == EM_POOL_MAX) {
                ok = (isnan(rv) ? isnan(v) : v == rv) && get(idx, pl * per + k) == (double)ri;
            } else {
                ok = fabs(v - rv) <= tol * (1 + fabs(rv));
            }
            if (!ok)
                printf("#   ns %d k %lld s %lld p %lld d %lld adaptive %d pad %d div %lld: plane %lld out %lld: %g vs %g\n",
                       c->ns, (long long)c->p.kernel[0], (long long)c->p.stride[0], (long long)c->p.padding[0],
                       (long long)c->p.dilation[0], c->p.adaptive, c->p.count_include_pad,
                       (long long)c->p.divisor, (long long)pl, (long long)k, v, rv);
        }
    if (ok && op == EM_POOL_AVG) {
        /* gin[q] = sum over windows holding q of gout / divisor */
        em_tensor *gout = tensor(dt, c->ns + 2, out_sz), *gin = tensor(dt, c->ns + 2, in_sz);
        fill(gout, -1, 2, false);
        fill(gin, 5, 1, false);                     /* must be overwritten */
        ok = em_cpu_backend.pool_backward(EM_POOL_AVG, gin, gout, &c->p) == 0;
        int64_t plane = prod(c->I, c->ns);
        double *ref = calloc((size_t)(planes * plane), sizeof *ref);
        for (int64_t pl = 0; ok && pl < planes; pl++)
            for (int64_t k = 0; k < per; k++) {
                int64_t o[3], pos[3][64], np[3] = {1, 1, 1}, npad[3], div = c->p.divisor, I[3] = {1, 1, 1};
                unflatten(c, k, o);
                for (int d = 0; d < 3; d++) pos[d][0] = 0;
                for (int d = 0; d < c->ns; d++) np[d] = taps(c, d, o[d], pos[d], &npad[d]), I[d] = c->I[d];
                if (div <= 0) {
                    div = 1;
                    for (int d = 0; d < c->ns; d++) div *= c->p.count_include_pad && !c->p.adaptive ? npad[d] : np[d];
                }
                for (int64_t a = 0; a < np[0]; a++)
                    for (int64_t b = 0; b < np[1]; b++)
                        for (int64_t e = 0; e < np[2]; e++) {
                            int64_t q = c->ns == 1 ? pos[0][a] : c->ns == 2 ? pos[0][a] * I[1] + pos[1][b]
                                      : (pos[0][a] * I[1] + pos[1][b]) * I[2] + pos[2][e];
                            ref[pl * plane + q] += get(gout, pl * per + k) / (double)div;
                        }
            }
        for (int64_t i = 0; ok && i < planes * plane; i++) {
            ok = fabs(get(gin, i) - ref[i]) <= tol * 10 * (1 + fabs(ref[i]));
            if (!ok) printf("#   avg backward at %lld: %g vs %g\n", (long long)i, get(gin, i), ref[i]);
        }
        free(ref);
        em_release(gout);
        em_release(gin);
    }
    em_release(in);
    em_release(out);
    em_release(idx);
    return ok;
}

/* vary: a smaller kernel along the second dim */
static pool_case make_case(int ns, const int64_t *I, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode,
                           bool vary)
{
    pool_case c = {.ns = ns, .N = 2, .C = 3, .p = {.nspatial = ns}};
    for (int i = 0; i < ns; i++) {
        int64_t ki = vary && i == 1 && k > 1 ? k - 1 : k, pi = p <= ki / 2 ? p : ki / 2;
        c.I[i] = I[i];
        c.p.kernel[i] = ki, c.p.stride[i] = s, c.p.padding[i] = pi, c.p.dilation[i] = d;
        c.O[i] = out_size(I[i], ki, s, pi, d, ceil_mode);
    }
    return c;
}

static bool case_ok(const pool_case *c)
{
    for (int i = 0; i < c->ns; i++)
        if (c->O[i] < 1) return false;
    return true;
}

static void test_pool_hand_values(void)
{
    /* [1 2 3 4 5], kernel 3, stride 2, padding 1, ceil_mode: windows
     * {pad,1,2} {2,3,4} {4,5,pad}: include_pad 1 3 3, exclude 1.5 3 4.5 */
    int64_t in_sz[3] = {1, 1, 5}, out_sz[3] = {1, 1, 3};
    em_tensor *in = tensor(EM_FLOAT64, 3, in_sz), *out = tensor(EM_FLOAT64, 3, out_sz);
    em_tensor *idx = em_empty(out_sz, 3, EM_INT64, CPU);
    for (int i = 0; i < 5; i++) set(in, i, i + 1);
    em_pool_params p = {.nspatial = 1, .kernel = {3}, .stride = {2}, .padding = {1}, .dilation = {1},
                        .count_include_pad = true};
    CHECK(em_cpu_backend.pool(EM_POOL_AVG, out, NULL, in, &p) == 0);
    CHECK(get(out, 0) == 1 && get(out, 1) == 3 && get(out, 2) == 3);
    p.count_include_pad = false;
    CHECK(em_cpu_backend.pool(EM_POOL_AVG, out, NULL, in, &p) == 0);
    CHECK(get(out, 0) == 1.5 && get(out, 1) == 3 && get(out, 2) == 4.5);
    p.divisor = 2;
    CHECK(em_cpu_backend.pool(EM_POOL_AVG, out, NULL, in, &p) == 0);
    CHECK(get(out, 0) == 1.5 && get(out, 1) == 4.5 && get(out, 2) == 4.5);
    CHECK(em_cpu_backend.pool(EM_POOL_MAX, out, idx, in, &p) == 0);
    CHECK(get(out, 0) == 2 && get(out, 1) == 4 && get(out, 2) == 5);
    CHECK(get(idx, 0) == 2 && get(idx, 1) == 4 && get(idx, 2) == 5);
    /* ties: the first maximum; NaN: the first NaN */
    double v[5] = {3, 3, NAN, 1, NAN};
    for (int i = 0; i < 5; i++) set(in, i, v[i]);
    CHECK(em_cpu_backend.pool(EM_POOL_MAX, out, idx, in, &p) == 0);
    CHECK(get(out, 0) == 3 && get(idx, 0) == 1);
    CHECK(isnan(get(out, 1)) && get(idx, 1) == 3);
    CHECK(isnan(get(out, 2)) && get(idx, 2) == 5);
    em_release(in);
    em_release(out);
    em_release(idx);
}

static void test_pool_configs(void)
{
    static const int64_t sizes[3][3] = {{7, 0, 0}, {6, 5, 0}, {5, 4, 6}};
    int failed = 0, ran = 0;
    for (int ns = 1; ns <= 3; ns++)
        for (int64_t k = 1; k <= 3; k++)
            for (int64_t s = 1; s <= 3; s++)
                for (int64_t p = 0; p <= k / 2; p++)
                    for (int64_t d = 1; d <= 2; d++)
                        for (int cm = 0; cm <= 1; cm++) {
                            pool_case c = make_case(ns, sizes[ns - 1], k, s, p, d, cm, k % 2);
                            if (!case_ok(&c)) continue;
                            em_dtype dt = (k + s + d + cm) % 2 ? EM_FLOAT32 : EM_FLOAT64;
                            for (int v = 0; v < 4; v++) {
                                c.p.count_include_pad = v & 1;
                                c.p.divisor = v == 2 ? 5 : 0;
                                ran++;
                                failed += !check_pool_case(&c, EM_POOL_AVG, dt, false, 0);
                            }
                            ran += 3;
                            failed += !check_pool_case(&c, EM_POOL_MAX, dt, false, 0);
                            failed += !check_pool_case(&c, EM_POOL_MAX, dt, true, 0);
                            failed += !check_pool_case(&c, EM_POOL_MAX, dt, false, 0.15);
                        }
    printf("#   %d pooling cases\n", ran);
    CHECK(ran > 300);
    CHECK(failed == 0);
}

static void test_pool_adaptive(void)
{
    static const int64_t io[][2] = {{7, 3}, {5, 7}, {6, 4}, {10, 3}, {4, 4}, {1, 3}, {9, 1}};
    int failed = 0;
    for (int ns = 1; ns <= 3; ns++)
        for (int a = 0; a < 7; a++)
            for (int dt = 0; dt < 2; dt++) {
                pool_case c = {.ns = ns, .N = 2, .C = 2, .p = {.nspatial = ns, .adaptive = true}};
                for (int d = 0; d < ns; d++) {
                    const int64_t *e = io[(a + d) % 7];
                    c.I[d] = e[0], c.O[d] = e[1];
                }
                em_dtype t = dt ? EM_FLOAT64 : EM_FLOAT32;
                c.p.count_include_pad = a % 2;         /* ignored when adaptive */
                failed += !check_pool_case(&c, EM_POOL_AVG, t, false, 0);
                failed += !check_pool_case(&c, EM_POOL_MAX, t, a % 2, 0);
                failed += !check_pool_case(&c, EM_POOL_MAX, t, false, 0.2);
            }
    CHECK(failed == 0);
}

/* sizes large enough for the thread pool, and the 2x2 fast path with odd sizes */
static void test_pool_large(void)
{
    static const int64_t I1[] = {28, 28}, I2[] = {15, 13}, I3[] = {15, 14}, I4[] = {96, 96};
    int64_t threads[] = {1, 2, 3};
    int saved = cpu_threads();
    for (int t = 0; t < 3; t++) {
        cpu_set_threads((int)threads[t]);
        pool_case c = make_case(2, I1, 2, 2, 0, 1, false, false);
        c.N = 16, c.C = 8;
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, false, 0));
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, true, 0.01));
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, true, 0.3));     /* NaNs beside NaNs */
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT64, false, 0.01));
        CHECK(check_pool_case(&c, EM_POOL_AVG, EM_FLOAT32, false, 0));
        c = make_case(2, I3, 2, 2, 0, 1, false, false);       /* even rows, an odd last row left out */
        c.N = 4, c.C = 5;
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, true, 0.05));
        c = make_case(2, I4, 2, 2, 0, 1, false, false);       /* planes past the even loop's buffers */
        c.N = 2, c.C = 3;
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, true, 0.05));
        c = make_case(2, I2, 2, 2, 0, 1, true, false);                /* ceil_mode: a clipped last window */
        c.N = 16, c.C = 24;
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, true, 0.01));
        c = make_case(2, I2, 2, 2, 0, 1, false, false);       /* an odd last row and column left out */
        c.N = 16, c.C = 24;
        CHECK(check_pool_case(&c, EM_POOL_MAX, EM_FLOAT32, true, 0.01));
        CHECK(check_pool_case(&c, EM_POOL_AVG, EM_FLOAT32, false, 0));
        c.p.divisor = 3;
        CHECK(check_pool_case(&c, EM_POOL_AVG, EM_FLOAT32, false, 0));
    }
    cpu_set_threads(saved);
}

static void test_pool_errors(void)
{
    int64_t in_sz[4] = {1, 1, 4, 4}, out_sz[4] = {1, 1, 2, 2};
    em_tensor *in = tensor(EM_FLOAT32, 4, in_sz), *out = tensor(EM_FLOAT32, 4, out_sz);
    em_tensor *iin = em_empty(in_sz, 4, EM_INT64, CPU), *iout = em_empty(out_sz, 4, EM_INT64, CPU);
    em_pool_params p = {.nspatial = 2, .kernel = {2, 2}, .stride = {2, 2}, .dilation = {1, 1}};
    fill(in, 0, 1, false);
    CHECK(em_cpu_backend.pool(EM_POOL_MAX, out, NULL, in, &p) == -1);        /* max needs idx */
    CHECK(em_cpu_backend.pool(EM_POOL_MAX, iout, iout, iin, &p) == -1);      /* int64 data */
    CHECK(strstr(em_error(), "int64") != NULL);
    CHECK(em_cpu_backend.pool_backward(EM_POOL_MAX, in, out, &p) == -1);
    p.nspatial = 3;
    CHECK(em_cpu_backend.pool(EM_POOL_AVG, out, NULL, in, &p) == -1);        /* dims disagree */
    p.nspatial = 2, p.stride[0] = 0;
    CHECK(em_cpu_backend.pool(EM_POOL_AVG, out, NULL, in, &p) == -1);
    em_release(in);
    em_release(out);
    em_release(iin);
    em_release(iout);
}

/* ---- normalisation reference ----------------------------------------------------- */

typedef struct norm_case {
    em_norm_op op;
    em_norm_params p;
    em_dtype dt;
    bool affine;
    double lo, span;           /* x's range */
} norm_case;

static int64_t nsets(const norm_case *c) { return c->op == EM_NORM_BATCH ? c->p.C : c->p.N * c->p.G; }

/* the set of element (n, ch, s) */
static int64_t set_of(const norm_case *c, int64_t n, int64_t ch)
{
    return c->op == EM_NORM_BATCH ? ch : n * c->p.G + ch / (c->p.C / c->p.G);
}

/* mean and biased variance per set: two passes in long double (more
 * precise than the kernel's double, so that the comparison is fair) */
static void stats_ref(const norm_case *c, const em_tensor *x, double *mean, double *var)
{
    int64_t K = nsets(c), N = c->p.N, C = c->p.C, S = c->p.S;
    long double *m = calloc((size_t)K, sizeof *m), *v = calloc((size_t)K, sizeof *v);
    double *cnt = calloc((size_t)K, sizeof *cnt);
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t s = 0; s < S; s++) {
                int64_t u = set_of(c, n, ch);
                m[u] += get(x, (n * C + ch) * S + s), cnt[u]++;
            }
    for (int64_t u = 0; u < K; u++) m[u] /= cnt[u];
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t s = 0; s < S; s++) {
                int64_t u = set_of(c, n, ch);
                long double d = get(x, (n * C + ch) * S + s) - m[u];
                v[u] += d * d;
            }
    for (int64_t u = 0; u < K; u++) mean[u] = (double)m[u], var[u] = (double)(v[u] / cnt[u]);
    free(m), free(v), free(cnt);
}

typedef struct norm_tensors {
    em_tensor *x, *y, *w, *b, *mean, *var;
} norm_tensors;

static norm_tensors norm_make(const norm_case *c)
{
    int64_t xs[3] = {c->p.N, c->p.C, c->p.S}, cs = c->p.C, ks = nsets(c);
    norm_tensors t = {tensor(c->dt, 3, xs), tensor(c->dt, 3, xs), NULL, NULL,
                      tensor(c->dt, 1, &ks), tensor(c->dt, 1, &ks)};
    fill(t.x, c->lo, c->span, false);
    if (c->affine) {
        t.w = tensor(c->dt, 1, &cs), t.b = tensor(c->dt, 1, &cs);
        fill(t.w, 0.5, 1, false);
        fill(t.b, -1, 2, false);
    }
    return t;
}

static void norm_free(norm_tensors *t)
{
    em_release(t->x), em_release(t->y), em_release(t->mean), em_release(t->var);
    if (t->w) em_release(t->w), em_release(t->b);
}

static int check_norm_forward(const norm_case *c)
{
    norm_tensors t = norm_make(c);
    int ok = em_cpu_backend.norm(c->op, t.y, t.mean, t.var, t.x, t.w, t.b, &c->p) == 0;
    int64_t K = nsets(c), N = c->p.N, C = c->p.C, S = c->p.S;
    double *mean = malloc((size_t)K * sizeof *mean), *var = malloc((size_t)K * sizeof *var);
    stats_ref(c, t.x, mean, var);
    bool f32 = c->dt == EM_FLOAT32;
    for (int64_t u = 0; ok && u < K; u++) {
        ok = fabs(get(t.mean, u) - mean[u]) <= (f32 ? 1e-7 : 1e-14) * (fabs(mean[u]) + c->span) &&
             fabs(get(t.var, u) - var[u]) <= (f32 ? 1e-6 : 1e-9) * var[u];
        if (!ok) printf("#   set %lld: mean %.10g vs %.10g, var %.10g vs %.10g\n", (long long)u,
                        get(t.mean, u), mean[u], get(t.var, u), var[u]);
    }
    for (int64_t n = 0; ok && n < N; n++)
        for (int64_t ch = 0; ok && ch < C; ch++)
            for (int64_t s = 0; ok && s < S; s++) {
                int64_t i = (n * C + ch) * S + s, u = set_of(c, n, ch);
                double w = t.w ? get(t.w, ch) : 1, b = t.b ? get(t.b, ch) : 0;
                double r = 1 / sqrt(var[u] + c->p.eps), ref = (get(t.x, i) - mean[u]) * r * w + b;
                /* a mean of size |lo| is only known to a few ulps of double,
                 * which (x - mean) * rstd magnifies */
                double cond = 16 * 1.1e-16 * (fabs(c->lo) + c->span) * r * fabs(w);
                ok = fabs(get(t.y, i) - ref) <= (f32 ? 2e-6 : 1e-11) * (1 + fabs(ref)) + cond;
                if (!ok) printf("#   y at %lld: %.10g vs %.10g\n", (long long)i, get(t.y, i), ref);
            }
    free(mean);
    free(var);
    norm_free(&t);
    return ok;
}

static void test_norm_forward(void)
{
    int failed = 0, ran = 0;
    static const int64_t Ns[] = {1, 3}, Cs[] = {1, 4, 6}, Ss[] = {1, 7, 50};
    for (int op = 0; op < 2; op++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 3; b++)
                for (int s = 0; s < 3; s++)
                    for (int g = 0; g < 3; g++)
                        for (int v = 0; v < 4; v++) {
                            int64_t C = Cs[b], G = g == 0 ? 1 : g == 1 ? 2 : C;
                            if (C % G) continue;
                            if (op == EM_NORM_BATCH && g > 0) continue;
                            if (op == EM_NORM_BATCH && Ns[a] * Ss[s] == 1) continue;
                            norm_case c = {.op = op, .p = {Ns[a], C, Ss[s], G, 1e-5},
                                           .dt = v % 2 ? EM_FLOAT64 : EM_FLOAT32, .affine = v / 2,
                                           .lo = -1, .span = 2};
                            ran++;
                            failed += !check_norm_forward(&c);
                            /* the mean far from 0 beside the spread */
                            c.lo = c.dt == EM_FLOAT32 ? 1000 : 1e4;
                            c.span = c.dt == EM_FLOAT32 ? 0.05 : 1e-3;
                            ran++;
                            failed += !check_norm_forward(&c);
                        }
    printf("#   %d forward cases\n", ran);
    CHECK(failed == 0);
}

/* many elements per channel and few channels: the split reductions, under
 * several thread counts */
static void test_norm_forward_large(void)
{
    int saved = cpu_threads();
    int counts[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        cpu_set_threads(counts[k]);
        norm_case c = {.op = EM_NORM_BATCH, .p = {4, 2, 20000, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                       .lo = 1000, .span = 0.05};
        CHECK(check_norm_forward(&c));
        c.dt = EM_FLOAT64, c.lo = 1e4, c.span = 1e-3, c.p.C = 1;
        CHECK(check_norm_forward(&c));
        c = (norm_case){.op = EM_NORM_BATCH, .p = {16, 32, 196, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_forward(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {8, 32, 400, 4, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = 3, .span = 2};
        CHECK(check_norm_forward(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {300, 512, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = 3, .span = 2};
        CHECK(check_norm_forward(&c));
        /* layer norm rows: a length that is no multiple of 8, and rows
         * longer than one statistics chunk */
        c = (norm_case){.op = EM_NORM_GROUP, .p = {1001, 100, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = 1000, .span = 0.05};
        CHECK(check_norm_forward(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {8, 5000, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_forward(&c));
    }
    cpu_set_threads(saved);
}

/* ---- normalisation backward ------------------------------------------------------------ */

/* L = sum gy * y for the forward at x, w, b (all float64) */
static double loss(const norm_case *c, norm_tensors *t, const em_tensor *gy)
{
    if (em_cpu_backend.norm(c->op, t->y, t->mean, t->var, t->x, t->w, t->b, &c->p) != 0) return NAN;
    double s = 0;
    for (int64_t i = 0; i < em_numel(gy); i++) s += get(gy, i) * get(t->y, i);
    return s;
}

/* d loss / d v[i] by central differences with step h */
static double fd(const norm_case *c, norm_tensors *t, const em_tensor *gy, em_tensor *v, int64_t i, double h)
{
    double v0 = get(v, i);
    set(v, i, v0 + h);
    double lp = loss(c, t, gy);
    set(v, i, v0 - h);
    double lm = loss(c, t, gy);
    set(v, i, v0);
    return (lp - lm) / (2 * h);
}

/* runs the backward with the forward's statistics (rstd from var) */
static int backward(const norm_case *c, norm_tensors *t, const em_tensor *gy, em_tensor *gx,
                    em_tensor *gw, em_tensor *gb)
{
    if (em_cpu_backend.norm(c->op, t->y, t->mean, t->var, t->x, t->w, t->b, &c->p) != 0) return -1;
    int64_t K = nsets(c);
    em_tensor *rstd = tensor(c->dt, 1, &K);
    for (int64_t u = 0; u < K; u++) set(rstd, u, 1 / sqrt(get(t->var, u) + c->p.eps));
    int rc = em_cpu_backend.norm_backward(c->op, gx, gw, gb, gy, t->x, t->mean, rstd, t->w, &c->p);
    em_release(rstd);
    return rc;
}

static int check_norm_backward_fd(const norm_case *c)
{
    norm_tensors t = norm_make(c);
    int64_t xs[3] = {c->p.N, c->p.C, c->p.S}, cs = c->p.C;
    em_tensor *gy = tensor(EM_FLOAT64, 3, xs), *gx = tensor(EM_FLOAT64, 3, xs);
    em_tensor *gw = tensor(EM_FLOAT64, 1, &cs), *gb = tensor(EM_FLOAT64, 1, &cs);
    fill(gy, -1, 2, false);
    int ok = backward(c, &t, gy, gx, c->affine ? gw : NULL, c->affine ? gb : NULL) == 0;
    /* The step in x is set by the smallest set's spread (two close values
     * make a set with a tiny variance): truncation error ~ (h rstd)^2
     * relative. The forward's own rounding (x near |lo|, magnified by rstd)
     * is the noise the difference quotient divides by 2h. */
    double sd = INFINITY;
    for (int64_t u = 0; u < nsets(c); u++) sd = fmin(sd, sqrt(get(t.var, u) + c->p.eps));
    double hx = 1e-3 * fmin(sd, 1), n = (double)em_numel(t.x);
    double noise = 16 * n * 1.1e-16 * (fabs(c->lo) + c->span) / sd * 2 / (2 * hx);
    for (int64_t i = 0; ok && i < em_numel(t.x); i++) {
        double g = fd(c, &t, gy, t.x, i, hx);
        ok = fabs(get(gx, i) - g) <= 1e-5 * (1 + fabs(g)) + noise;
        if (!ok) printf("#   gx at %lld: %.10g vs finite difference %.10g\n", (long long)i, get(gx, i), g);
    }
    for (int64_t ch = 0; ok && c->affine && ch < c->p.C; ch++) {
        double g = fd(c, &t, gy, t.w, ch, 1e-5), h = fd(c, &t, gy, t.b, ch, 1e-5);
        ok = fabs(get(gw, ch) - g) <= 1e-6 * (1 + fabs(g)) && fabs(get(gb, ch) - h) <= 1e-6 * (1 + fabs(h));
        if (!ok) printf("#   gw, gb at %lld: %.10g %.10g vs %.10g %.10g\n", (long long)ch, get(gw, ch),
                        get(gb, ch), g, h);
    }
    em_release(gy), em_release(gx), em_release(gw), em_release(gb);
    norm_free(&t);
    return ok;
}

static void test_norm_backward_fd(void)
{
    int failed = 0, ran = 0;
    static const int64_t shapes[][4] = {  /* N, C, S, G */
        {3, 4, 5, 1}, {2, 6, 1, 2}, {4, 3, 1, 3}, {1, 4, 6, 4}, {2, 4, 3, 2}, {5, 1, 1, 1}, {2, 6, 4, 6},
    };
    for (int op = 0; op < 2; op++)
        for (int k = 0; k < 7; k++)
            for (int a = 0; a < 2; a++)
                for (int far = 0; far < 2; far++) {
                    const int64_t *s = shapes[k];
                    if (op == EM_NORM_GROUP && s[1] * s[2] == s[3]) continue;   /* one element per set */
                    norm_case c = {.op = op, .p = {s[0], s[1], s[2], s[3], 1e-5}, .dt = EM_FLOAT64,
                                   .affine = a, .lo = far ? 100 : -1, .span = far ? 0.5 : 2};
                    ran++;
                    failed += !check_norm_backward_fd(&c);
                }
    printf("#   %d backward cases\n", ran);
    CHECK(failed == 0);
}

/* the backend.h formula, naively in double, with the statistics the kernel
 * is given: the forward's mean and rstd = rsqrt(var + eps) in x's dtype (a
 * float32 mean of 1000 is off by up to 3e-5, which moves gw visibly) */
static void backward_ref(const norm_case *c, norm_tensors *t, const em_tensor *gy, double *gx,
                         double *gw, double *gb)
{
    int64_t K = nsets(c), N = c->p.N, C = c->p.C, S = c->p.S;
    if (em_cpu_backend.norm(c->op, t->y, t->mean, t->var, t->x, t->w, t->b, &c->p) != 0) return;
    double *mean = calloc((size_t)K, sizeof *mean), *rstd = calloc((size_t)K, sizeof *rstd);
    double *a = calloc((size_t)K, sizeof *a), *b = calloc((size_t)K, sizeof *b);
    for (int64_t u = 0; u < K; u++) {
        double r = 1 / sqrt(get(t->var, u) + c->p.eps);
        mean[u] = get(t->mean, u);
        rstd[u] = c->dt == EM_FLOAT32 ? (double)(float)r : r;
    }
    double M = (double)(N * C * S / K);
    for (int64_t ch = 0; ch < C; ch++) gw[ch] = gb[ch] = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (n * C + ch) * S + s, u = set_of(c, n, ch);
                double xhat = (get(t->x, i) - mean[u]) * rstd[u];
                double w = t->w ? get(t->w, ch) : 1, g = get(gy, i);
                gw[ch] += g * xhat, gb[ch] += g;
                a[u] += g * w / M, b[u] += g * w * xhat / M;
            }
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t s = 0; s < S; s++) {
                int64_t i = (n * C + ch) * S + s, u = set_of(c, n, ch);
                double xhat = (get(t->x, i) - mean[u]) * rstd[u];
                double w = t->w ? get(t->w, ch) : 1;
                gx[i] = rstd[u] * (get(gy, i) * w - a[u] - xhat * b[u]);
            }
    free(mean), free(rstd), free(a), free(b);
}

/* float32 and float64, large shapes (split reductions, threads), and every
 * combination of wanted gradients: against the naive formula */
static int check_norm_backward_ref(const norm_case *c)
{
    norm_tensors t = norm_make(c);
    int64_t xs[3] = {c->p.N, c->p.C, c->p.S}, cs = c->p.C, n = em_numel(t.x);
    em_tensor *gy = tensor(c->dt, 3, xs);
    fill(gy, -1, 2, false);
    double *rx = malloc((size_t)n * sizeof *rx), *rw = malloc((size_t)cs * sizeof *rw);
    double *rb = malloc((size_t)cs * sizeof *rb);
    backward_ref(c, &t, gy, rx, rw, rb);
    bool f32 = c->dt == EM_FLOAT32;
    double tol = (f32 ? 2e-5 : 1e-10) / (c->span / 2);
    int ok = 1;
    for (int want = 1; want < 8 && ok; want++) {
        em_tensor *gx = want & 1 ? tensor(c->dt, 3, xs) : NULL;
        em_tensor *gw = want & 2 ? tensor(c->dt, 1, &cs) : NULL, *gb = want & 4 ? tensor(c->dt, 1, &cs) : NULL;
        ok = backward(c, &t, gy, gx, gw, gb) == 0;
        double gscale = sqrt((double)(n / cs));       /* gw, gb are sums of n / C terms */
        for (int64_t i = 0; ok && gx && i < n; i++) {
            ok = fabs(get(gx, i) - rx[i]) <= tol * (1 + fabs(rx[i]));
            if (!ok) printf("#   gx at %lld: %.10g vs %.10g\n", (long long)i, get(gx, i), rx[i]);
        }
        for (int64_t ch = 0; ok && ch < cs; ch++) {
            if (gw) ok = fabs(get(gw, ch) - rw[ch]) <= (f32 ? 1e-4 : 1e-10) * (gscale + fabs(rw[ch]));
            if (ok && gb) ok = fabs(get(gb, ch) - rb[ch]) <= (f32 ? 1e-5 : 1e-11) * (gscale + fabs(rb[ch]));
            if (!ok) printf("#   gw, gb at %lld: %.10g %.10g vs %.10g %.10g\n", (long long)ch,
                            gw ? get(gw, ch) : 0, gb ? get(gb, ch) : 0, rw[ch], rb[ch]);
        }
        if (gx) em_release(gx);
        if (gw) em_release(gw);
        if (gb) em_release(gb);
    }
    free(rx), free(rw), free(rb);
    em_release(gy);
    norm_free(&t);
    return ok;
}

static void test_norm_backward_large(void)
{
    int saved = cpu_threads();
    int counts[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        cpu_set_threads(counts[k]);
        norm_case c = {.op = EM_NORM_BATCH, .p = {4, 2, 20000, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                       .lo = 1000, .span = 0.5};
        CHECK(check_norm_backward_ref(&c));
        c.dt = EM_FLOAT64, c.affine = false;
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_BATCH, .p = {16, 32, 196, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_BATCH, .p = {200, 64, 1, 1, 1e-5}, .dt = EM_FLOAT64, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {8, 32, 400, 4, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = 3, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {300, 512, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = 3, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c.dt = EM_FLOAT64, c.affine = false, c.p.G = 8;
        CHECK(check_norm_backward_ref(&c));
        /* layer norm rows whose count and length are no multiples of the
         * ranges or of 8; groups of S = 1; a few long rows (gw, gb then
         * summed over channels); a far mean */
        c = (norm_case){.op = EM_NORM_GROUP, .p = {1001, 100, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {333, 60, 1, 4, 1e-5}, .dt = EM_FLOAT64, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {8, 9000, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = -1, .span = 2};
        CHECK(check_norm_backward_ref(&c));
        c = (norm_case){.op = EM_NORM_GROUP, .p = {2000, 33, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                        .lo = 100, .span = 0.5};
        CHECK(check_norm_backward_ref(&c));
    }
    cpu_set_threads(saved);
}

/* gw and gb of layer norm rows are partial sums per range of rows, added in
 * range order: the same bits on every run at one thread count, and close
 * across thread counts */
static void test_norm_backward_rows_fixed(void)
{
    int saved = cpu_threads();
    norm_case c = {.op = EM_NORM_GROUP, .p = {4096, 128, 1, 1, 1e-5}, .dt = EM_FLOAT32, .affine = true,
                   .lo = -1, .span = 2};
    norm_tensors t = norm_make(&c);
    int64_t xs[3] = {c.p.N, c.p.C, c.p.S}, cs = c.p.C;
    em_tensor *gy = tensor(EM_FLOAT32, 3, xs), *gx = tensor(EM_FLOAT32, 3, xs);
    em_tensor *gw[3], *gb[3];
    fill(gy, -1, 2, false);
    int counts[] = {2, 2, 3};
    for (int k = 0; k < 3; k++) {
        cpu_set_threads(counts[k]);
        gw[k] = tensor(EM_FLOAT32, 1, &cs), gb[k] = tensor(EM_FLOAT32, 1, &cs);
        CHECK(backward(&c, &t, gy, gx, gw[k], gb[k]) == 0);
    }
    CHECK(memcmp(em_data_ptr(gw[0]), em_data_ptr(gw[1]), (size_t)cs * sizeof(float)) == 0);
    CHECK(memcmp(em_data_ptr(gb[0]), em_data_ptr(gb[1]), (size_t)cs * sizeof(float)) == 0);
    int close = 1;
    for (int64_t ch = 0; ch < cs; ch++)
        close &= fabs(get(gw[0], ch) - get(gw[2], ch)) <= 1e-5 * (1 + fabs(get(gw[0], ch))) &&
                 fabs(get(gb[0], ch) - get(gb[2], ch)) <= 1e-5 * (1 + fabs(get(gb[0], ch)));
    CHECK(close);
    /* nothing wanted: nothing to do */
    CHECK(backward(&c, &t, gy, NULL, NULL, NULL) == 0);
    for (int k = 0; k < 3; k++) em_release(gw[k]), em_release(gb[k]);
    em_release(gy), em_release(gx);
    norm_free(&t);
    cpu_set_threads(saved);
}

static void test_norm_errors(void)
{
    int64_t xs[3] = {2, 6, 3}, cs = 6, ks = 8, k4 = 4;
    em_tensor *x = tensor(EM_FLOAT32, 3, xs), *y = tensor(EM_FLOAT32, 3, xs);
    em_tensor *xi = em_empty(xs, 3, EM_INT64, CPU), *w = tensor(EM_FLOAT32, 1, &cs);
    em_tensor *m8 = tensor(EM_FLOAT32, 1, &ks), *v8 = tensor(EM_FLOAT32, 1, &ks);
    em_tensor *m4 = tensor(EM_FLOAT32, 1, &k4), *v4 = tensor(EM_FLOAT32, 1, &k4);
    fill(x, 0, 1, false);
    em_norm_params p = {2, 6, 3, 4, 1e-5};                                     /* 4 does not divide 6 */
    CHECK(em_cpu_backend.norm(EM_NORM_GROUP, y, m8, v8, x, w, NULL, &p) == -1);
    CHECK(strstr(em_error(), "groups") != NULL);
    p.G = 2;
    CHECK(em_cpu_backend.norm(EM_NORM_GROUP, y, m8, v8, x, w, NULL, &p) == -1);  /* stats are [4] */
    CHECK(em_cpu_backend.norm(EM_NORM_GROUP, y, m4, v4, x, w, NULL, &p) == 0);
    CHECK(em_cpu_backend.norm(EM_NORM_GROUP, xi, m4, v4, xi, NULL, NULL, &p) == -1);
    p.S = 4;                                                                   /* x is not [2, 6, 4] */
    CHECK(em_cpu_backend.norm(EM_NORM_GROUP, y, m4, v4, x, w, NULL, &p) == -1);
    p.S = 3;
    CHECK(em_cpu_backend.norm_backward(EM_NORM_GROUP, y, m4, NULL, x, x, m4, v4, w, &p) == -1);  /* gw [4] */
    em_release(x), em_release(y), em_release(xi), em_release(w);
    em_release(m8), em_release(v8), em_release(m4), em_release(v4);
}

int main(void)
{
    /* another data set: EMBER_TEST_SEED=n */
    const char *seed = getenv("EMBER_TEST_SEED");
    if (seed && strtoull(seed, NULL, 10)) rng = strtoull(seed, NULL, 10);
    RUN(test_pool_hand_values);
    RUN(test_pool_configs);
    RUN(test_pool_adaptive);
    RUN(test_pool_large);
    RUN(test_pool_errors);
    RUN(test_norm_forward);
    RUN(test_norm_forward_large);
    RUN(test_norm_backward_fd);
    RUN(test_norm_backward_large);
    RUN(test_norm_backward_rows_fixed);
    RUN(test_norm_errors);
    CHECK_DONE();
}
