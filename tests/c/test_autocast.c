/* test_autocast.c — autocast from a C program: the engine's public ops apply
 * their policy at their entry (a C program gets what a Lua program gets), and
 * the engine's compositions do not cast their parts again. CPU region,
 * bfloat16 (PyTorch's CPU default); the expected dtypes are PyTorch's CPU
 * lists, the expected values hand-worked. */
#include "../../engine/ember.h"
#include "check.h"

#include <string.h>

static const em_device cpu = {EM_CPU, 0};

static void drop(em_tensor *const *ts, size_t n)
{
    for (size_t i = 0; i < n; i++) em_release(ts[i]);
}
#define DROP(...) drop((em_tensor *[]){__VA_ARGS__}, sizeof((em_tensor *[]){__VA_ARGS__}) / sizeof(em_tensor *))

static em_tensor *mk(int64_t r, int64_t c, em_dtype d, const double *v)
{
    int64_t sz[2] = {r, c};
    return em_from_host(sz, c ? 2 : 1, d, v, NULL);
}

static void region(bool on)
{
    em_autocast_set(EM_CPU, on, EM_BFLOAT16, true);
    if (on) em_autocast_enter();
    else em_autocast_exit();
}

/* matmul (LOWER): bfloat16 inside, float32 outside; prod (FP32): float32 from
 * bfloat16 on every device; sum and exp (FP32_CUDA): the CPU leaves them in
 * their dtype */
static void public_ops_apply_their_policy(void)
{
    double av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {1, 0, 0, 1, 1, 1};
    em_tensor *a = mk(2, 3, EM_FLOAT32, av), *b = mk(3, 2, EM_FLOAT32, bv);
    em_tensor *h = mk(2, 3, EM_BFLOAT16, av);
    region(true);
    em_tensor *m = em_matmul(a, b), *mm = em_mm(a, b), *p = em_prod(h, NULL, 0, false);
    em_tensor *s = em_sum(h, NULL, 0, false), *e = em_unary(EM_EXP, h);
    em_tensor *add = em_binary(EM_ADD, a, a);
    region(false);
    em_tensor *m2 = em_matmul(a, b);
    CHECK(m && m->dtype == EM_BFLOAT16);
    CHECK(mm && mm->dtype == EM_BFLOAT16);
    /* [1 2 3; 4 5 6] @ [1 0; 0 1; 1 1] = [4 5; 10 11] */
    if (m) CHECK(em_get_f(m, 0) == 4 && em_get_f(m, 1) == 5 && em_get_f(m, 2) == 10 && em_get_f(m, 3) == 11);
    CHECK(m2 && m2->dtype == EM_FLOAT32);
    CHECK(p && p->dtype == EM_FLOAT32 && em_get_f(p, 0) == 720);
    CHECK(s && s->dtype == EM_BFLOAT16 && em_get_f(s, 0) == 21);
    CHECK(e && e->dtype == EM_BFLOAT16);
    CHECK(add && add->dtype == EM_FLOAT32);   /* add: no policy */
    DROP(m, mm, p, s);
    DROP(e, add, m2);
    DROP(a, b, h);
}

/* promote ops take the widest eligible dtype; a list given to cat keeps its
 * own tensors; float64 and integer tensors are not eligible */
static void promote_and_lists(void)
{
    double v[2] = {1.5, -2};
    em_tensor *h = mk(2, 0, EM_BFLOAT16, v), *f = mk(2, 0, EM_FLOAT32, v), *d = mk(2, 0, EM_FLOAT64, v);
    em_tensor *list[2] = {h, f};
    region(true);
    em_tensor *ac = em_addcmul(h, f, f, 2.0);
    em_tensor *c = em_cat(list, 2, 0);
    em_tensor *dot = em_dot(h, f);
    em_tensor *dd = em_matmul(d, d);
    region(false);
    CHECK(list[0] == h && list[1] == f && h->dtype == EM_BFLOAT16);
    /* 1.5 + 2 * 1.5 * 1.5 = 6, -2 + 2 * -2 * -2 = 6 */
    CHECK(ac && ac->dtype == EM_FLOAT32 && em_get_f(ac, 0) == 6 && em_get_f(ac, 1) == 6);
    CHECK(c && c->dtype == EM_FLOAT32 && c->sizes[0] == 4 && em_get_f(c, 3) == -2);
    CHECK(dot && dot->dtype == EM_FLOAT32 && em_get_f(dot, 0) == 6.25);
    CHECK(dd && dd->dtype == EM_FLOAT64);
    DROP(ac, c, dot, dd);
    DROP(h, f, d);
}

/* cdist (FP32) is made of a matmul: its parts are not cast to bfloat16 inside
 * a region. x1 = (1 + 2^-8, 0), x2 = (1, 0): |x1|^2 + |x2|^2 - 2 x1.x2 =
 * 2^-16 exactly in float32, so the distance is 2^-8; a bfloat16 x1.x2 would
 * round 1 + 2^-8 to 1 and give sqrt(2^-7 + 2^-16). Same bits with and without
 * the region. */
static void compositions_do_not_cast_their_parts(void)
{
    double x1v[2] = {1.00390625, 0}, x2v[2] = {1, 0};
    em_tensor *x1 = mk(1, 2, EM_FLOAT32, x1v), *x2 = mk(1, 2, EM_FLOAT32, x2v);
    /* 30 rows: PyTorch's and ember's cdist take the matmul form past 25 */
    int64_t sz[2] = {30, 2};
    em_tensor *z = em_zeros(sz, 2, EM_FLOAT32, cpu);
    em_tensor *big1 = z ? em_binary(EM_ADD, z, x1) : NULL, *big2 = z ? em_binary(EM_ADD, z, x2) : NULL;
    em_tensor *out = big1 && big2 ? em_cdist(big1, big2, 2.0) : NULL;
    region(true);
    em_tensor *in = big1 && big2 ? em_cdist(big1, big2, 2.0) : NULL;
    em_tensor *v1 = em_reshape(x1, (int64_t[]){2}, 1), *v2 = em_reshape(x2, (int64_t[]){2}, 1);
    em_tensor *outer = v1 && v2 ? em_outer(v1, v2) : NULL;
    region(false);
    CHECK(out && in && in->dtype == EM_FLOAT32);
    if (out && in) {
        CHECK(em_get_f(out, 0) == 0.00390625);
        CHECK(em_get_f(in, 0) == em_get_f(out, 0) && em_get_f(in, 899) == em_get_f(out, 899));
    }
    CHECK(outer && outer->dtype == EM_FLOAT32);   /* outer is a mul: no policy */
    DROP(x1, x2, z, big1);
    DROP(big2, out, in, outer);
    DROP(v1, v2);
}

/* a bad call inside a region is the op's own error, after the casts */
static void errors_inside_a_region(void)
{
    double v[6] = {0};
    em_tensor *a = mk(2, 3, EM_FLOAT32, v);
    region(true);
    em_tensor *m = em_matmul(a, a);
    const char *msg = em_error();
    CHECK(m == NULL && strstr(msg, "matmul") != NULL && strstr(msg, "[2,3]") != NULL);
    int before = em_autocast_suspend();
    em_autocast_resume();
    CHECK(before == 0);   /* the failed op left nothing suspended */
    region(false);
    em_release(a);
}

/* em_autocast_suspend keeps a public op from casting */
static void suspended_regions_cast_nothing(void)
{
    double v[4] = {1, 2, 3, 4};
    em_tensor *a = mk(2, 2, EM_FLOAT32, v);
    region(true);
    em_autocast_suspend();
    em_tensor *m = em_matmul(a, a);
    em_autocast_resume();
    em_tensor *n = em_matmul(a, a);
    region(false);
    CHECK(m && m->dtype == EM_FLOAT32 && em_get_f(m, 0) == 7);
    CHECK(n && n->dtype == EM_BFLOAT16 && em_get_f(n, 0) == 7);
    DROP(a, m, n);
}

int main(void)
{
    RUN(public_ops_apply_their_policy);
    RUN(promote_and_lists);
    RUN(compositions_do_not_cast_their_parts);
    RUN(errors_inside_a_region);
    RUN(suspended_regions_cast_nothing);
    CHECK_DONE();
}
