/* test_index.c — engine tests of the indexing family, with hand-computed
 * expectations (the Lua spec covers the binding and more cases). */
#include "../../engine/ember.h"
#include "check.h"

#include <string.h>

static const em_device CPU = {EM_CPU, 0};

static em_tensor *vec_f(const double *v, int64_t n) { return em_from_host(&n, 1, EM_FLOAT32, v, NULL); }
static em_tensor *vec_i(const int64_t *v, int64_t n) { return em_from_host(&n, 1, EM_INT64, NULL, v); }
static em_tensor *mat_f(const double *v, int64_t r, int64_t c)
{
    int64_t s[2] = {r, c};
    return em_from_host(s, 2, EM_FLOAT32, v, NULL);
}
static em_tensor *mat_i(const int64_t *v, int64_t r, int64_t c)
{
    int64_t s[2] = {r, c};
    return em_from_host(s, 2, EM_INT64, NULL, v);
}

/* true when t holds exactly the n values in want (row-major) */
static int same(const em_tensor *t, const double *want, int64_t n)
{
    if (!t || em_numel(t) != n) return 0;
    double got[64];
    if (n > 64 || em_to_host_f64(t, got)) return 0;
    for (int64_t i = 0; i < n; i++)
        if (!(got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]))) return 0;
    return 1;
}

static void test_index_select(void)
{
    double a[] = {1, 2, 3, 4, 5, 6};
    int64_t ix[] = {3, 1, -1};
    em_tensor *t = mat_f(a, 2, 3), *i = vec_i(ix, 3);
    em_tensor *r = em_index_select(t, 1, i);
    double want[] = {3, 1, 3, 6, 4, 6};
    CHECK(r && r->sizes[0] == 2 && r->sizes[1] == 3 && same(r, want, 6));
    em_release(r);
    int64_t ix0[] = {2};
    em_tensor *i0 = vec_i(ix0, 1);
    r = em_index_select(t, 0, i0);
    double want0[] = {4, 5, 6};
    CHECK(same(r, want0, 3));
    em_release(r);
    int64_t bad[] = {1, 4};
    em_tensor *ib = vec_i(bad, 2);
    CHECK(em_index_select(t, 1, ib) == NULL);
    CHECK(strstr(em_error(), "index_select: index 4 is out of bounds for dimension 2 with size 3") != NULL);
    em_tensor *fi = em_to_dtype(i, EM_FLOAT32);
    CHECK(em_index_select(t, 1, fi) == NULL);
    CHECK(strstr(em_error(), "index_select: expected an int64 index tensor, got float32") != NULL);
    em_release(fi); em_release(ib); em_release(i0); em_release(t); em_release(i);
}

static void test_gather_scatter(void)
{
    double a[] = {1, 2, 3, 4, 5, 6};
    int64_t g[] = {3, 3, 1, 2};
    em_tensor *t = mat_f(a, 2, 3), *i = mat_i(g, 2, 2);
    em_tensor *r = em_gather(t, 1, i);
    double want[] = {3, 3, 4, 5};
    CHECK(same(r, want, 4));
    em_release(r);
    int64_t g0[] = {2, 1, 2};
    em_tensor *i0 = mat_i(g0, 1, 3);
    r = em_gather(t, 0, i0);
    double want0[] = {4, 2, 6};
    CHECK(same(r, want0, 3));
    em_release(r);
    int64_t bad[] = {7, 1, 1, 1};
    em_tensor *ib = mat_i(bad, 2, 2);
    CHECK(em_gather(t, 1, ib) == NULL);
    CHECK(strstr(em_error(), "gather: index 7 is out of bounds for dimension 2 with size 3") != NULL);

    /* scatter_add with duplicate indices accumulates */
    int64_t zs[2] = {2, 3};
    em_tensor *z = em_zeros(zs, 2, EM_FLOAT32, CPU);
    double s[] = {10, 20, 30, 40};
    em_tensor *src = mat_f(s, 2, 2);
    CHECK(em_scatter_add_(z, 1, i, src) == 0);
    double want_sa[] = {0, 0, 30, 30, 40, 0};
    CHECK(same(z, want_sa, 6));
    em_release(z);
    em_release(ib); em_release(i0); em_release(src); em_release(t); em_release(i);
}

static void test_index_add(void)
{
    int64_t zs[2] = {3, 2};
    em_tensor *z = em_zeros(zs, 2, EM_FLOAT64, CPU);
    double s[] = {1, 2, 3, 4, 5, 6};
    em_tensor *src = mat_f(s, 3, 2);
    int64_t ix[] = {3, 1, 3};
    em_tensor *i = vec_i(ix, 3);
    CHECK(em_index_add_(z, 0, i, src, 1) == 0);
    double want[] = {3, 4, 0, 0, 6, 8};
    CHECK(same(z, want, 6));
    em_release(z); em_release(src); em_release(i);
}

static void test_nonzero_masked(void)
{
    double a[] = {0, 1, 0, 2, 0, 3};
    em_tensor *t = mat_f(a, 2, 3);
    em_tensor *nz = em_nonzero(t);
    double want[] = {1, 2, 2, 1, 2, 3};
    CHECK(nz && nz->sizes[0] == 3 && nz->sizes[1] == 2 && same(nz, want, 6));
    em_release(nz);
    int64_t n1 = 1;
    em_tensor *m = em_from_host(&n1, 1, EM_INT64, NULL, &n1);
    em_tensor *mask = em_to_dtype(m, EM_BOOL);
    em_tensor *all = em_masked_select(t, mask);
    CHECK(same(all, a, 6));
    em_release(all); em_release(mask); em_release(m); em_release(t);
}

static void test_sort_topk(void)
{
    double a[] = {3, NAN, 1, 3, 2};
    em_tensor *t = vec_f(a, 5), *v, *i;
    CHECK(em_sort(t, 0, false, true, &v, &i) == 0);
    double wv[] = {1, 2, 3, 3, NAN}, wi[] = {3, 5, 1, 4, 2};
    CHECK(same(v, wv, 5) && same(i, wi, 5));
    em_release(v); em_release(i);
    CHECK(em_sort(t, 0, true, true, &v, &i) == 0);
    double dv[] = {NAN, 3, 3, 2, 1}, di[] = {2, 1, 4, 5, 3};
    CHECK(same(v, dv, 5) && same(i, di, 5));
    em_release(v); em_release(i);
    CHECK(em_topk(t, 2, 0, false, true, &v, &i) == 0);
    double tv[] = {1, 2}, ti[] = {3, 5};
    CHECK(same(v, tv, 2) && same(i, ti, 2));
    em_release(v); em_release(i);
    CHECK(em_topk(t, 6, 0, true, true, &v, &i) != 0);
    CHECK(strstr(em_error(), "topk:") != NULL);
    em_release(t);
}

static void test_cat_split(void)
{
    int64_t ai[] = {1, 2};
    double bf[] = {0.5};
    em_tensor *a = vec_i(ai, 2), *b = vec_f(bf, 1);
    em_tensor *ts[2] = {a, b};
    em_tensor *c = em_cat(ts, 2, 0);
    double want[] = {1, 2, 0.5};
    CHECK(c && c->dtype == EM_FLOAT32 && same(c, want, 3));
    em_release(c);
    double m[] = {1, 2, 3, 4, 5, 6};
    em_tensor *x = mat_f(m, 2, 3), *y = mat_f(m, 3, 2);
    em_tensor *xy[2] = {x, y};
    CHECK(em_cat(xy, 2, 0) == NULL);
    CHECK(strstr(em_error(), "cat:") && strstr(em_error(), "[2,3]") && strstr(em_error(), "[3,2]"));
    em_tensor *pieces[4];
    int n = em_split(x, 2, 1, pieces, 4);
    CHECK(n == 2 && pieces[0]->sizes[1] == 2 && pieces[1]->sizes[1] == 1);
    CHECK(n == 2 && pieces[1]->storage == x->storage);
    for (int k = 0; k < n; k++) em_release(pieces[k]);
    n = em_chunk(x, 2, 1, pieces, 4);
    CHECK(n == 2 && pieces[0]->sizes[1] == 2);
    for (int k = 0; k < n; k++) em_release(pieces[k]);
    em_release(x); em_release(y); em_release(a); em_release(b);
}

/* Big enough for threads: scatter, scatter_add and scatter_reduce amax along
 * each dim of [40, 33, 60], many positions naming one slot, against a
 * serial loop written here (float32 sums in row-major order): the same bits
 * with 1, 2 and 3 threads. */
static void test_scatter_threads_same_bits(void)
{
    enum { A = 40, B = 33, C = 60, N = A * B * C };
    static float src[N], want[N];
    static int64_t idx[N];
    int64_t sz[3] = {A, B, C}, st[3] = {B * C, C, 1};
    uint64_t r = 12345;
    for (int64_t i = 0; i < N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        src[i] = (float)((double)(r >> 40) / (double)(1 << 24) - 0.5) * 1e3f;
    }
    em_tensor *s = em_empty(sz, 3, EM_FLOAT32, CPU);
    memcpy(em_data_ptr(s), src, sizeof src);
    int saved_threads[] = {1, 2, 3}, saved = em_num_threads();
    for (int dim = 0; dim < 3; dim++) {
        for (int64_t i = 0; i < N; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            idx[i] = 1 + (int64_t)((r >> 33) % 4);     /* 4 slots: many collisions */
        }
        em_tensor *ix = em_from_host(sz, 3, EM_INT64, NULL, idx);
        for (int kind = 0; kind < 3; kind++) {
            for (int64_t i = 0; i < N; i++) want[i] = 0;
            for (int64_t i = 0; i < N; i++) {
                int64_t c[3] = {i / (B * C), i / C % B, i % C};
                c[dim] = idx[i] - 1;
                float *o = &want[c[0] * st[0] + c[1] * st[1] + c[2]];
                if (kind == 0) *o = src[i];
                else if (kind == 1) *o += src[i];
                else *o = src[i] > *o ? src[i] : *o;
            }
            for (int t = 0; t < 3; t++) {
                em_set_num_threads(saved_threads[t]);
                em_tensor *z = em_zeros(sz, 3, EM_FLOAT32, CPU);
                int rc = kind == 0 ? em_scatter_(z, dim, ix, s)
                         : kind == 1 ? em_scatter_add_(z, dim, ix, s)
                                     : em_scatter_reduce_(z, dim, ix, s, EM_SR_AMAX, true);
                CHECK(rc == 0);
                bool same_bits = rc == 0 && memcmp(em_data_ptr(z), want, sizeof want) == 0;
                if (!same_bits) printf("#   scatter kind %d along dim %d, %d threads\n", kind, dim + 1, saved_threads[t]);
                CHECK(same_bits);
                em_release(z);
            }
        }
        em_release(ix);
    }
    em_set_num_threads(saved);
    em_release(s);
}

int main(void)
{
    RUN(test_index_select);
    RUN(test_gather_scatter);
    RUN(test_index_add);
    RUN(test_nonzero_masked);
    RUN(test_sort_topk);
    RUN(test_cat_split);
    RUN(test_scatter_threads_same_bits);
    CHECK_DONE();
}
