/* linalg.c — matmul and its relatives, composed on the backend's batched
 * GEMM family.
 *
 * Every product is brought to the one form the backend knows: 3-D views
 * a [B,M,K] @ b [B,K,N] -> out [B,M,N]. Broadcast batch dims stay stride-0
 * views when they flatten into one batch stride; otherwise the operand is
 * materialised. When only `a` has batch dims (the common x @ W of a linear
 * layer), the batch is folded into M so the backend sees one large GEMM
 * instead of many small ones.
 *
 * float16/bfloat16 compute in float32 and are cast back (on a backend whose
 * GEMM takes them, they go as they are and accumulate in float32). Integer tensors
 * take a slower path built from elementwise multiply and sum (GEMM libraries
 * have no integer kernels). */
#include "internal.h"
#include "autograd.h"

#include <string.h>

/* The dtype the GEMM runs in for a result dtype: half dtypes go to the
 * backend as they are where it takes them (it accumulates in float32). */
static em_dtype gemm_dtype(em_dtype d, const em_tensor *on)
{
    if (em_be(on)->gemm_half) return d;
    return d == EM_FLOAT16 || d == EM_BFLOAT16 ? EM_FLOAT32 : d;
}

static int check_operands(const char *op, const em_tensor *a, const em_tensor *b, bool ints_ok)
{
    if (em_check_same_device(op, a, b)) return -1;
    bool fa = em_dtype_is_float(a->dtype), fb = em_dtype_is_float(b->dtype);
    bool ia = em_dtype_is_int(a->dtype), ib = em_dtype_is_int(b->dtype);
    if ((fa || (ints_ok && ia)) && (fb || (ints_ok && ib))) return 0;
    if (a->dtype == b->dtype)
        return em_set_error("%s: expected floating point tensors, got %s", op, em_dtype_name(a->dtype));
    return em_set_error("%s: expected floating point tensors, got %s and %s", op,
                        em_dtype_name(a->dtype), em_dtype_name(b->dtype));
}

/* Whether the batch dims of t ([batch..., R, C]) flatten into one stride
 * (written to *bstride). */
static bool flat_batch(const em_tensor *t, int64_t *bstride)
{
    int64_t expect = -1;
    *bstride = 0;
    for (int d = t->ndim - 3; d >= 0; d--) {
        if (t->sizes[d] == 1) continue;
        if (expect >= 0 && t->strides[d] != expect) return false;
        if (expect < 0) *bstride = t->strides[d];
        expect = t->strides[d] * t->sizes[d];
    }
    return true;
}

/* A [B, R, C] view of t ([batch..., R, C]) whose batch dims flatten into a
 * single stride; a contiguous copy when they do not. */
static em_tensor *as_3d(const em_tensor *t)
{
    int nbatch = t->ndim - 2;
    int64_t B = 1, bstride;
    for (int d = 0; d < nbatch; d++) B *= t->sizes[d];
    if (!flat_batch(t, &bstride)) {
        em_tensor *c = em_contiguous(t);
        if (!c) return NULL;
        em_tensor *v = as_3d(c);
        em_release(c);
        return v;
    }
    int64_t sizes[3] = {B, t->sizes[nbatch], t->sizes[nbatch + 1]};
    int64_t strides[3] = {bstride, t->strides[nbatch], t->strides[nbatch + 1]};
    return em_as_strided(t, sizes, strides, 3, t->offset);
}

/* out3 = a3 @ b3 for integer dtypes: sum over k of a[b,m,k] * b[b,k,n]. */
static int int_gemm(em_tensor *out3, const em_tensor *a3, const em_tensor *b3)
{
    em_scope s = {0};
    em_tensor *au = es_unsqueeze(&s, a3, 3);                                /* [B,M,K,1] */
    em_tensor *bu = au ? es_unsqueeze(&s, b3, 1) : NULL;                    /* [B,1,K,N] */
    em_tensor *prod = es_mul(&s, au, bu);
    int dim = 2;
    em_tensor *sum = prod ? em_scope_keep(&s, em_sum_dtype(prod, &dim, 1, false, out3->dtype)) : NULL;
    int rc = sum ? em_be(out3)->cast(out3, sum) : -1;
    em_scope_drop(&s);
    return rc;
}

/* out3 = alpha * a3 @ b3 + beta * out3 on 3-D views of one dtype. */
static int gemm3(em_tensor *out3, const em_tensor *a3, const em_tensor *b3, double alpha, double beta)
{
    if (em_numel(out3) == 0) return 0;
    if (!em_dtype_is_float(out3->dtype)) return int_gemm(out3, a3, b3);
    if (a3->sizes[2] == 0 && beta == 0) return em_be(out3)->fill(out3, 0.0);
    return em_be(out3)->gemm(out3, a3, b3, alpha, beta);
}

/* out = alpha * a @ b + beta * out for matrices a [n, K] and b [K, m] (out
 * contiguous, n * m elements): gemm3 on views as a batch of one. */
static int gemm2(em_tensor *out, const em_tensor *a, const em_tensor *b, double alpha, double beta)
{
    int64_t n = a->sizes[0], K = a->sizes[1], m = b->sizes[1];
    int64_t as[3] = {1, n, K}, ast[3] = {0, a->strides[0], a->strides[1]};
    int64_t bs[3] = {1, K, m}, bst[3] = {0, b->strides[0], b->strides[1]};
    int64_t os[3] = {1, n, m};
    em_scope s = {0};
    em_tensor *a3 = em_scope_keep(&s, em_as_strided(a, as, ast, 3, a->offset));
    em_tensor *b3 = a3 ? em_scope_keep(&s, em_as_strided(b, bs, bst, 3, b->offset)) : NULL;
    em_tensor *out3 = b3 ? em_scope_keep(&s, em_view(out, os, 3)) : NULL;
    int rc = out3 ? gemm3(out3, a3, b3, alpha, beta) : -1;
    em_scope_drop(&s);
    return rc;
}

/* The integer products can be large: [B,M,K,N] is materialised. */
static int check_int_size(const char *op, const em_tensor *a, const em_tensor *b,
                          int64_t B, int64_t M, int64_t K, int64_t N)
{
    double n = (double)B * (double)M * (double)K * (double)N;
    if (n > (double)((int64_t)1 << 28))
        return em_set_error("%s: %s @ %s: integer products this large are not supported; "
                            "convert to a floating point dtype", op, SHAPE(a), SHAPE(b));
    return 0;
}

/* Casts to the compute dtype and finishes: the result in dtype r. */
static em_tensor *finish(em_tensor *out, em_dtype r)
{
    if (!out || out->dtype == r) return out;
    em_tensor *c = em_cast_to(out, r);
    em_release(out);
    return c;
}

/* The shared body of matmul/mm/bmm/dot once the shapes are checked:
 * a2 [batch_a..., M, K] and b2 [batch_b..., K, N], with the 1-D operands
 * already unsqueezed; the result is viewed as `final` sizes. */
static em_tensor *matmul_core(const char *op, const em_tensor *a, const em_tensor *b,
                              const em_tensor *a2, const em_tensor *b2,
                              const int64_t *batch, int nbatch,
                              const int64_t *final, int nfinal)
{
    em_dtype r = em_promote(a->dtype, b->dtype);
    em_dtype cd = gemm_dtype(r, a);
    int64_t M = a2->sizes[a2->ndim - 2], K = a2->sizes[a2->ndim - 1], N = b2->sizes[b2->ndim - 1];
    int64_t B = 1;
    for (int i = 0; i < nbatch; i++) B *= batch[i];
    if (!em_dtype_is_float(cd) && check_int_size(op, a, b, B, M, K, N)) return NULL;

    em_scope s = {0};
    em_tensor *ac = em_scope_keep(&s, em_cast_to(a2, cd)), *bc = ac ? em_scope_keep(&s, em_cast_to(b2, cd)) : NULL;
    if (!bc) return em_scope_drop(&s), NULL;

    int64_t osz[EM_MAX_DIMS + 2];
    for (int i = 0; i < nbatch; i++) osz[i] = batch[i];   /* batch may be NULL */
    osz[nbatch] = M;
    osz[nbatch + 1] = N;
    em_tensor *out = em_scope_keep(&s, em_empty(osz, nbatch + 2, cd, em_dev(a)));
    if (!out) return em_scope_drop(&s), NULL;

    /* Only a has batch dims: fold them into its rows, one [P, K] @ [K, N].
     * That takes a view, or a copy when a's batch would be copied anyway;
     * otherwise (e.g. a transposed batch of matrices) loop over the batch. */
    em_tensor *af = NULL;
    int64_t bstride;
    if (b2->ndim == 2 && nbatch > 0 && em_dtype_is_float(cd)) {
        int64_t rows[2] = {B * M, K};
        af = em_scope_keep(&s, em_view(ac, rows, 2));
        if (!af && !flat_batch(ac, &bstride)) {
            af = em_scope_keep(&s, em_reshape(ac, rows, 2));
            if (!af) return em_scope_drop(&s), NULL;
        }
        em_clear_error();
    }
    int rc = -1;
    if (af) {
        rc = gemm2(out, af, bc, 1.0, 0.0);
    } else {
        /* expand both to the common batch, then flatten it */
        int64_t ea[EM_MAX_DIMS + 2], eb[EM_MAX_DIMS + 2];
        for (int i = 0; i < nbatch; i++) ea[i] = eb[i] = batch[i];
        ea[nbatch] = M; ea[nbatch + 1] = K;
        eb[nbatch] = K; eb[nbatch + 1] = N;
        em_tensor *ax = em_scope_keep(&s, em_expand(ac, ea, nbatch + 2));
        em_tensor *bx = ax ? em_scope_keep(&s, em_expand(bc, eb, nbatch + 2)) : NULL;
        em_tensor *a3 = bx ? em_scope_keep(&s, as_3d(ax)) : NULL;
        em_tensor *b3 = a3 ? em_scope_keep(&s, as_3d(bx)) : NULL;
        int64_t os[3] = {B, M, N};
        em_tensor *out3 = b3 ? em_scope_keep(&s, em_view(out, os, 3)) : NULL;
        if (out3) rc = gemm3(out3, a3, b3, 1.0, 0.0);
    }
    em_tensor *v = rc ? NULL : em_view(out, final, nfinal);
    em_scope_drop(&s);
    return finish(v, r);
}

/* The error for operands a @ b whose `what` (inner dimensions, batch sizes, ...) differ; NULL. */
static em_tensor *sizes_error(const char *op, const em_tensor *a, const em_tensor *b, const char *what, int64_t ka,
                              int64_t kb)
{
    return em_set_error("%s: %s @ %s: %s differ (%lld vs %lld)", op, SHAPE(a), SHAPE(b), what,
                        (long long)ka, (long long)kb), NULL;
}

static em_tensor *inner_error(const char *op, const em_tensor *a, const em_tensor *b, int64_t ka, int64_t kb)
{
    return sizes_error(op, a, b, "inner dimensions", ka, kb);
}

/* -1 (error set) unless a and b both have nd dims; `what` names them in the message ("tensors"). */
static int check_ndim(const char *op, const em_tensor *a, const em_tensor *b, int nd, const char *what)
{
    if (a->ndim == nd && b->ndim == nd) return 0;
    return em_set_error("%s: expected %d-D %s, got %s and %s", op, nd, what, SHAPE(a), SHAPE(b));
}

em_tensor *ei_matmul(const em_tensor *a, const em_tensor *b)
{
    if (em_ag_needed2(a, b)) return em_ag_matmul(a, b);
    const char *op = "matmul";
    if (a->ndim == 0 || b->ndim == 0)
        return em_set_error("matmul: both arguments need at least 1 dimension, got %s and %s",
                            SHAPE(a), SHAPE(b)), NULL;
    if (check_operands(op, a, b, true)) return NULL;
    int na = a->ndim, nb = b->ndim;
    int64_t K = a->sizes[na - 1], Kb = nb >= 2 ? b->sizes[nb - 2] : b->sizes[0];
    if (K != Kb) return inner_error(op, a, b, K, Kb);

    /* batch dims broadcast like elementwise shapes */
    int nba = na > 2 ? na - 2 : 0, nbb = nb > 2 ? nb - 2 : 0;
    int nbatch = nba > nbb ? nba : nbb;
    int64_t batch[EM_MAX_DIMS];
    for (int i = 0; i < nbatch; i++) {
        int ia = i - (nbatch - nba), ib = i - (nbatch - nbb);
        int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return em_set_error("matmul: %s @ %s: batch dimensions %s and %s cannot be broadcast",
                                SHAPE(a), SHAPE(b), em_sizes_tmp(a->sizes, nba),
                                em_sizes_tmp(b->sizes, nbb)), NULL;
        batch[i] = sa == 1 ? sb : sa;
    }

    /* 1-D operands become a row / a column, and that dim is dropped again */
    em_scope s = {0};
    em_tensor *a2 = em_scope_keep(&s, na == 1 ? em_unsqueeze(a, 0) : em_alias(a));
    em_tensor *b2 = !a2 ? NULL : em_scope_keep(&s, nb == 1 ? em_unsqueeze(b, 1) : em_alias(b));
    if (!b2) return em_scope_drop(&s), NULL;
    int64_t final[EM_MAX_DIMS];
    int nfinal = nbatch;
    memcpy(final, batch, sizeof(int64_t) * (size_t)nbatch);
    if (na >= 2) final[nfinal++] = a->sizes[na - 2];
    if (nb >= 2) final[nfinal++] = b->sizes[nb - 1];
    em_tensor *out = matmul_core(op, a, b, a2, b2, batch, nbatch, final, nfinal);
    em_scope_drop(&s);
    return out;
}

em_tensor *em_matmul(const em_tensor *a, const em_tensor *b)
{
    EM_AUTOCAST(EM_AC_LOWER, ei_matmul(EM_AC_ARG(0), EM_AC_ARG(1)), a, b);
    return ei_matmul(a, b);
}

em_tensor *ei_mm(const em_tensor *a, const em_tensor *b)
{
    if (check_ndim("mm", a, b, 2, "tensors") || check_operands("mm", a, b, true)) return NULL;
    if (a->sizes[1] != b->sizes[0]) return inner_error("mm", a, b, a->sizes[1], b->sizes[0]);
    int64_t final[2] = {a->sizes[0], b->sizes[1]};
    if (em_ag_needed2(a, b)) return em_ag_matmul(a, b);   /* mm is matmul of matrices */
    return matmul_core("mm", a, b, a, b, NULL, 0, final, 2);
}

em_tensor *em_mm(const em_tensor *a, const em_tensor *b)
{
    EM_AUTOCAST(EM_AC_LOWER, ei_mm(EM_AC_ARG(0), EM_AC_ARG(1)), a, b);
    return ei_mm(a, b);
}

em_tensor *ei_bmm(const em_tensor *a, const em_tensor *b)
{
    if (check_ndim("bmm", a, b, 3, "tensors") || check_operands("bmm", a, b, true)) return NULL;
    if (a->sizes[0] != b->sizes[0]) return sizes_error("bmm", a, b, "batch sizes", a->sizes[0], b->sizes[0]);
    if (a->sizes[2] != b->sizes[1]) return inner_error("bmm", a, b, a->sizes[2], b->sizes[1]);
    int64_t final[3] = {a->sizes[0], a->sizes[1], b->sizes[2]};
    if (em_ag_needed2(a, b)) return em_ag_matmul(a, b);
    return matmul_core("bmm", a, b, a, b, a->sizes, 1, final, 3);
}

em_tensor *em_bmm(const em_tensor *a, const em_tensor *b)
{
    EM_AUTOCAST(EM_AC_LOWER, ei_bmm(EM_AC_ARG(0), EM_AC_ARG(1)), a, b);
    return ei_bmm(a, b);
}

em_tensor *ei_dot(const em_tensor *a, const em_tensor *b)
{
    if (check_ndim("dot", a, b, 1, "tensors") || check_operands("dot", a, b, true)) return NULL;
    if (a->sizes[0] != b->sizes[0]) return sizes_error("dot", a, b, "sizes", a->sizes[0], b->sizes[0]);
    if (em_ag_needed2(a, b)) return em_ag_matmul(a, b);
    em_scope s = {0};
    em_tensor *a2 = es_unsqueeze(&s, a, 0), *b2 = a2 ? es_unsqueeze(&s, b, 1) : NULL;
    em_tensor *out = b2 ? matmul_core("dot", a, b, a2, b2, NULL, 0, NULL, 0) : NULL;
    em_scope_drop(&s);
    return out;
}

em_tensor *em_dot(const em_tensor *a, const em_tensor *b)
{
    EM_AUTOCAST(EM_AC_PROMOTE, ei_dot(EM_AC_ARG(0), EM_AC_ARG(1)), a, b);
    return ei_dot(a, b);
}

em_tensor *ei_addmm(const em_tensor *c, const em_tensor *a, const em_tensor *b, double beta, double alpha)
{
    if (check_ndim("addmm", a, b, 2, "matrices") || em_check_same_device("addmm", c, a) ||
        check_operands("addmm", a, b, false))
        return NULL;
    if (!em_dtype_is_float(c->dtype))
        return em_set_error("addmm: expected a floating point input, got %s", em_dtype_name(c->dtype)), NULL;
    if (a->sizes[1] != b->sizes[0]) return inner_error("addmm", a, b, a->sizes[1], b->sizes[0]);
    if (em_ag_needed3(c, a, b)) {     /* recorded as beta*c + alpha*(a@b) */
        em_scope s = {0};
        em_tensor *p = em_scope_keep(&s, ei_matmul(a, b));
        em_tensor *ps = p && alpha != 1 ? es_scalar(&s, EM_MUL, p, alpha) : p;
        const em_tensor *cs = beta == 0 ? NULL : beta != 1 ? es_scalar(&s, EM_MUL, c, beta) : c;
        em_tensor *r = !ps ? NULL : beta == 0 ? ps : es_add(&s, cs, ps);
        return em_scope_finish(&s, r);
    }
    int64_t n = a->sizes[0], m = b->sizes[1];
    int64_t osz[2] = {n, m};
    em_scope s = {0};
    em_tensor *cx = em_scope_keep(&s, em_expand(c, osz, 2));
    if (!cx)
        return em_set_error("addmm: input %s cannot be broadcast to the product's shape %s",
                            SHAPE(c), em_sizes_tmp(osz, 2)), NULL;
    em_dtype r = em_promote(c->dtype, em_promote(a->dtype, b->dtype));
    em_dtype cd = gemm_dtype(r, a);
    em_tensor *ac = em_scope_keep(&s, em_cast_to(a, cd)), *bc = ac ? em_scope_keep(&s, em_cast_to(b, cd)) : NULL;
    em_tensor *out = bc ? em_empty(osz, 2, cd, em_dev(a)) : NULL;
    int rc = -1;
    /* beta == 0 ignores c entirely (NaN in c does not leak), as in BLAS */
    if (out && (beta == 0 || em_be(out)->cast(out, cx) == 0)) rc = gemm2(out, ac, bc, alpha, beta);
    em_scope_drop(&s);
    if (rc) { em_release(out); return NULL; }
    return finish(out, r);
}

em_tensor *em_addmm(const em_tensor *c, const em_tensor *a, const em_tensor *b, double beta, double alpha)
{
    EM_AUTOCAST(EM_AC_LOWER, ei_addmm(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), beta, alpha), c, a, b);
    return ei_addmm(c, a, b, beta, alpha);
}

/* outer is elementwise: a[:, None] * b[None, :], any dtype */
em_tensor *em_outer(const em_tensor *a, const em_tensor *b)
{
    if (check_ndim("outer", a, b, 1, "tensors") || em_check_same_device("outer", a, b)) return NULL;
    em_scope s = {0};
    em_tensor *col = es_unsqueeze(&s, a, 1), *row = col ? es_unsqueeze(&s, b, 0) : NULL;
    return em_scope_finish(&s, es_mul(&s, col, row));
}
