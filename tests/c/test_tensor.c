/* test_tensor.c — storage, reference counts, the free lists and view
 * arithmetic of the engine, checked from C without Lua. */
#include "../../engine/ember.h"
#include "../../engine/backend.h"
#include "../../engine/internal.h"
#include "check.h"

#include <stdint.h>
#include <string.h>

static const em_device CPU = {EM_CPU, 0};

static em_tensor *iota(const int64_t *sizes, int ndim)
{
    em_tensor *t = em_empty(sizes, ndim, EM_FLOAT32, CPU);
    float *p = em_data_ptr(t);
    for (int64_t i = 0; i < em_numel(t); i++) p[i] = (float)i;
    return t;
}

static void test_empty_is_contiguous(void)
{
    int64_t sz[3] = {2, 3, 4};
    em_tensor *t = em_empty(sz, 3, EM_FLOAT32, CPU);
    CHECK(t != NULL);
    CHECK(t->strides[0] == 12 && t->strides[1] == 4 && t->strides[2] == 1);
    CHECK(em_numel(t) == 24);
    CHECK(em_is_contiguous(t));
    CHECK(em_storage_bytes(t) == 96);
    em_release(t);
}

static void test_refcount_shares_storage(void)
{
    int64_t sz[2] = {4, 5};
    em_tensor *t = iota(sz, 2);
    em_tensor *v = em_transpose(t, 0, 1);
    CHECK(v->storage == t->storage);
    CHECK(t->storage->refcount == 2);
    em_release(t);                      /* the view keeps the storage alive */
    CHECK(v->storage->refcount == 1);
    CHECK(em_get_f(v, 1) == 5.0f);      /* v[0][1] = t[1][0] */
    em_release(v);
}

static void test_free_list_reuses_headers(void)
{
    int64_t sz[1] = {4};
    em_tensor *a = em_empty(sz, 1, EM_FLOAT32, CPU);
    em_storage *sa = a->storage;
    em_release(a);
    em_tensor *b = em_empty(sz, 1, EM_FLOAT32, CPU);
    /* the most recently freed header and small storage come back first */
    CHECK(b == a);
    CHECK(b->storage == sa);
    CHECK(b->refcount == 1 && b->storage->refcount == 1);
    em_release(b);
}

static void test_bytes_in_use(void)
{
    size_t before = em_bytes_in_use(EM_CPU);
    int64_t sz[1] = {1000};
    em_tensor *t = em_empty(sz, 1, EM_FLOAT64, CPU);
    CHECK(em_bytes_in_use(EM_CPU) == before + 8000);
    em_release(t);
    CHECK(em_bytes_in_use(EM_CPU) == before);
}

static void test_large_blocks_are_reused(void)
{
    int64_t sz[1] = {1 << 20};              /* 4 MiB: kept by the CPU block cache */
    em_tensor *a = em_empty(sz, 1, EM_FLOAT32, CPU);
    void *p = em_data_ptr(a);
    em_release(a);
    em_tensor *b = em_empty(sz, 1, EM_FLOAT32, CPU);
    CHECK(em_data_ptr(b) == p);             /* same size class: the same block again */
    int64_t other[1] = {3 << 20};
    em_tensor *c = em_empty(other, 1, EM_FLOAT32, CPU);
    CHECK(em_data_ptr(c) != p);
    em_release(c);
    em_release(b);
    em_cpu_backend.empty_cache(0);          /* hands the blocks back to the system */
}

/* A collection frees hundreds of blocks at once; all of them must be found
 * again by the next requests of their size, most recently freed first. */
static void test_many_freed_blocks_are_all_reused(void)
{
    enum { N = 300 };
    int64_t sz[1] = {32768};                /* 128 KiB each */
    em_tensor *t[N];
    void *p[N];
    for (int i = 0; i < N; i++) { t[i] = em_empty(sz, 1, EM_FLOAT32, CPU); p[i] = em_data_ptr(t[i]); }
    for (int i = 0; i < N; i++) em_release(t[i]);
    int found = 0;
    for (int i = 0; i < N; i++) {
        t[i] = em_empty(sz, 1, EM_FLOAT32, CPU);
        if (em_data_ptr(t[i]) == p[N - 1 - i]) found++;
    }
    CHECK(found == N);
    for (int i = 0; i < N; i++) em_release(t[i]);
    em_cpu_backend.empty_cache(0);
}

static void test_view_strides(void)
{
    int64_t sz[2] = {4, 6};
    em_tensor *t = iota(sz, 2);
    int64_t vs[3] = {2, 2, 6};
    em_tensor *v = em_view(t, vs, 3);
    CHECK(v && v->strides[0] == 12 && v->strides[1] == 6 && v->strides[2] == 1);
    int64_t bad[1] = {-1};
    em_tensor *tr = em_transpose(t, 0, 1);
    em_tensor *flat = em_view(tr, bad, 1);  /* transposed: no view possible */
    CHECK(flat == NULL && strstr(em_error(), "view") != NULL);
    em_tensor *r = em_reshape(tr, bad, 1);  /* reshape copies instead */
    CHECK(r && r->storage != t->storage && em_get_f(r, 1) == 6.0f);
    int64_t wrong[2] = {5, 5};
    CHECK(em_view(t, wrong, 2) == NULL && strstr(em_error(), "[5,5]") != NULL);
    em_release(r);
    em_release(tr);
    em_release(v);
    em_release(t);
}

static void test_narrow_select_slice(void)
{
    int64_t sz[2] = {4, 6};
    em_tensor *t = iota(sz, 2);
    em_tensor *n = em_narrow(t, 1, 2, 3);       /* columns 2..4 */
    CHECK(n->offset == 2 && n->sizes[1] == 3 && em_get_f(n, 3) == 8.0f);
    em_tensor *s = em_select(t, 0, -1);         /* last row */
    CHECK(s->ndim == 1 && s->offset == 18 && em_get_f(s, 5) == 23.0f);
    em_tensor *sl = em_slice(t, 1, 1, 6, 2);    /* columns 1, 3, 5 */
    CHECK(sl->sizes[1] == 3 && sl->strides[1] == 2 && em_get_f(sl, 2) == 5.0f);
    CHECK(em_select(t, 0, 4) == NULL && strstr(em_error(), "out of range") != NULL);
    CHECK(em_narrow(t, 1, 5, 2) == NULL);
    em_release(sl);
    em_release(s);
    em_release(n);
    em_release(t);
}

static void test_expand_and_unsqueeze(void)
{
    int64_t sz[1] = {3};
    em_tensor *t = iota(sz, 1);
    em_tensor *u = em_unsqueeze(t, 0);
    int64_t to[2] = {4, 3};
    em_tensor *e = em_expand(u, to, 2);
    CHECK(e->strides[0] == 0 && e->strides[1] == 1 && em_get_f(e, 10) == 1.0f);
    int64_t bad[2] = {4, 2};
    CHECK(em_expand(u, bad, 2) == NULL && strstr(em_error(), "expand") != NULL);
    em_tensor *sq = em_squeeze(u);
    CHECK(sq->ndim == 1 && sq->sizes[0] == 3);
    em_release(sq);
    em_release(e);
    em_release(u);
    em_release(t);
}

static void test_unfold(void)
{
    int64_t sz[1] = {7};
    em_tensor *t = iota(sz, 1);
    em_tensor *u = em_unfold(t, 0, 3, 2);       /* windows [0..2], [2..4], [4..6] */
    CHECK(u->ndim == 2 && u->sizes[0] == 3 && u->sizes[1] == 3);
    CHECK(em_get_f(u, 3) == 2.0f && em_get_f(u, 8) == 6.0f);
    em_release(u);
    em_release(t);
}

static void test_as_strided_bounds(void)
{
    int64_t sz[1] = {4};
    em_tensor *t = iota(sz, 1);
    int64_t vs[1] = {5}, st[1] = {1};
    CHECK(em_as_strided(t, vs, st, 1, 0) == NULL);   /* would read past the storage */
    em_release(t);
}

static void test_contiguous_copy(void)
{
    int64_t sz[2] = {3, 4};
    em_tensor *t = iota(sz, 2);
    em_tensor *tr = em_t(t);
    CHECK(!em_is_contiguous(tr));
    em_tensor *c = em_contiguous(tr);
    CHECK(em_is_contiguous(c) && c->storage != t->storage);
    float *p = em_data_ptr(c);
    CHECK(p[0] == 0 && p[1] == 4 && p[2] == 8 && p[3] == 1);
    em_tensor *same = em_contiguous(t);
    CHECK(same == t);                     /* already contiguous: no copy */
    em_release(same);
    em_release(c);
    em_release(tr);
    em_release(t);
}

static void test_cast_and_half(void)
{
    CHECK(em_half_to_float(em_float_to_half(1.5f)) == 1.5f);
    CHECK(em_half_to_float(em_float_to_half(65504.0f)) == 65504.0f);
    CHECK(em_half_to_float(0x3c00) == 1.0f);
    CHECK(em_bf16_to_float(em_float_to_bf16(3.0f)) == 3.0f);
    CHECK(em_float_to_half(1e6f) == 0x7c00);             /* overflow to inf */
    CHECK(em_half_to_float(0x0001) == 5.9604644775390625e-08f); /* smallest subnormal */
    int64_t sz[1] = {3};
    double vals[3] = {1.75, -2.5, 300.0};
    em_tensor *t = em_from_host(sz, 1, EM_FLOAT16, vals, NULL);
    CHECK(em_get_f(t, 0) == 1.75 && em_get_f(t, 1) == -2.5 && em_get_f(t, 2) == 300.0);
    em_tensor *i = em_to_dtype(t, EM_INT32);
    CHECK(em_get_i(i, 0) == 1 && em_get_i(i, 1) == -2);
    em_release(i);
    em_release(t);
}

static void test_promotion(void)
{
    CHECK(em_promote(EM_INT64, EM_FLOAT32) == EM_FLOAT32);
    CHECK(em_promote(EM_INT32, EM_INT64) == EM_INT64);
    CHECK(em_promote(EM_UINT8, EM_BOOL) == EM_UINT8);
    CHECK(em_promote(EM_FLOAT16, EM_BFLOAT16) == EM_FLOAT32);
    int64_t sz[1] = {2};
    em_tensor *i = em_zeros(sz, 1, EM_INT32, CPU);
    em_tensor *f = em_scalar(2.5, EM_FLOAT64, CPU);
    f->wrapped_number = true;
    CHECK(em_result_type(i, f) == EM_FLOAT32);       /* int tensor * 2.5 -> default float */
    f->wrapped_number = false;
    CHECK(em_result_type(i, f) == EM_FLOAT64);       /* 0-d float64 tensor of higher category */
    em_tensor *g = em_zeros(sz, 1, EM_FLOAT32, CPU);
    CHECK(em_result_type(g, f) == EM_FLOAT32);       /* same category: the dimensioned one wins */
    em_release(g);
    em_release(f);
    em_release(i);
}

static void test_errors_are_values(void)
{
    int64_t sz[2] = {-1, 3};
    CHECK(em_empty(sz, 2, EM_FLOAT32, CPU) == NULL);
    CHECK(strstr(em_error(), "negative") != NULL);
    em_device cuda = {EM_CUDA, 0};
    int64_t ok[1] = {3};
    CHECK(em_empty(ok, 1, EM_FLOAT32, cuda) == NULL);
    CHECK(strstr(em_error(), "no CUDA device") != NULL);
}

/* em_check_writable decides exactly whether two elements share memory */
static void test_overlap_check(void)
{
    int64_t n8 = 8, n6 = 6;
    em_tensor *base = em_empty(&n8, 1, EM_FLOAT32, CPU);
    /* sizes {3, 2}, strides {2, 3}: offsets 0,3,2,5,4,7 interleave but are
     * distinct; the sorted-stride test alone cannot tell */
    em_tensor *inter = em_as_strided(base, (int64_t[]){3, 2}, (int64_t[]){2, 3}, 2, 0);
    CHECK(inter && em_check_writable("t", inter) == 0);
    /* sizes {3, 2}, strides {1, 2}: offsets 0,2,1,3,2,4 share 2 */
    em_tensor *shared = em_as_strided(base, (int64_t[]){3, 2}, (int64_t[]){1, 2}, 2, 0);
    CHECK(shared && em_check_writable("t", shared) == -1);
    CHECK(strstr(em_error(), "t: cannot write in place to [3,2] (strides [1,2])") != NULL);
    /* unfold(size 3, step 1) overlaps, step 3 does not; expand overlaps; empty never does */
    em_tensor *six = em_empty(&n6, 1, EM_FLOAT32, CPU);
    em_tensor *u1 = em_unfold(six, 0, 3, 1), *u3 = em_unfold(six, 0, 3, 3);
    CHECK(em_check_writable("t", u1) == -1 && em_check_writable("t", u3) == 0);
    em_tensor *one = em_as_strided(base, (int64_t[]){4, 1}, (int64_t[]){0, 1}, 2, 0);
    CHECK(em_check_writable("t", one) == -1);
    em_tensor *empty = em_as_strided(base, (int64_t[]){5, 0}, (int64_t[]){0, 1}, 2, 0);
    CHECK(em_check_writable("t", empty) == 0);
    em_tensor *single = em_as_strided(base, (int64_t[]){1, 1}, (int64_t[]){0, 0}, 2, 0);
    CHECK(em_check_writable("t", single) == 0);
    /* as_strided spans that overflow int64 are refused, not wrapped into range */
    CHECK(em_as_strided(base, (int64_t[]){2}, (int64_t[]){INT64_MAX}, 1, 0) == NULL);
    CHECK(em_as_strided(base, (int64_t[]){(int64_t)1 << 40, (int64_t)1 << 40}, (int64_t[]){0, 0}, 2, 0) == NULL);
    CHECK(strstr(em_error(), "as_strided: size") != NULL);
    em_release(inter); em_release(shared); em_release(u1); em_release(u3);
    em_release(one); em_release(empty); em_release(single); em_release(six); em_release(base);
}

int main(void)
{
    RUN(test_empty_is_contiguous);
    RUN(test_refcount_shares_storage);
#ifdef EMBER_SANITIZE
    /* the sanitizer build recycles nothing, so that ASan sees every free */
    SKIP(test_free_list_reuses_headers, "no free lists in the sanitizer build");
    SKIP(test_large_blocks_are_reused, "no block cache in the sanitizer build");
    SKIP(test_many_freed_blocks_are_all_reused, "no block cache in the sanitizer build");
#else
    RUN(test_free_list_reuses_headers);
    RUN(test_large_blocks_are_reused);
    RUN(test_many_freed_blocks_are_all_reused);
#endif
    RUN(test_bytes_in_use);
    RUN(test_view_strides);
    RUN(test_narrow_select_slice);
    RUN(test_expand_and_unsqueeze);
    RUN(test_unfold);
    RUN(test_as_strided_bounds);
    RUN(test_contiguous_copy);
    RUN(test_cast_and_half);
    RUN(test_promotion);
    RUN(test_errors_are_values);
    RUN(test_overlap_check);
    CHECK_DONE();
}
