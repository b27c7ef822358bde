/* linalg_decomp.c — ember.linalg's factorisations and solves (det, slogdet,
 * inv, solve, cholesky, qr, svd, svdvals, eigh, eigvalsh, pinv) and their
 * gradients, on the backend's linalg family (backend.h).
 *
 * Forward: each op copies its input into a column-major batch (what LAPACK
 * and cuSOLVER take), runs one backend call, and returns views of the
 * column-major results, laid out as PyTorch's LAPACK results are (the last
 * two dims transposed in memory).
 *
 * Backward: the formulas of PyTorch's FunctionsManual.cpp, written with
 * engine ops (matmul, the ops of this file), so they run on every backend
 * and can be differentiated again. A node has one output, so the ops with
 * several differentiable outputs (qr, svd, eigh) record one packed tensor
 * [batch..., all outputs flattened] and hand out views of it: the gradients
 * flowing into the views add up to the packed gradient, zero where an output
 * was not used.
 *
 * Temporaries: formulas are written with scope.c's es_* ops (and the few
 * helpers below in the same style), which keep their results in an em_scope
 * released at the end and pass NULL through, so a formula reads as one
 * expression per line and fails once at the end. */
#include "internal.h"
#include "autograd.h"
#include "backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static em_tensor *tril(em_scope *s, const em_tensor *a, int64_t k) { return a ? em_scope_keep(s, em_tril(a, k)) : NULL; }
static em_tensor *triu(em_scope *s, const em_tensor *a, int64_t k) { return a ? em_scope_keep(s, em_triu(a, k)) : NULL; }
static em_tensor *eye_like(em_scope *s, int64_t n, const em_tensor *like)
{
    return like ? em_scope_keep(s, em_eye(n, n, like->dtype, like->storage->device)) : NULL;
}
/* [..., k] -> [..., k, k] with v on the diagonal */
static em_tensor *diag_embed(em_scope *s, const em_tensor *v)
{
    return v ? es_mul(s, es_unsqueeze(s, v, -1), eye_like(s, v->sizes[v->ndim - 1], v)) : NULL;
}
/* the diagonal of square [..., n, n] as [..., n] */
static em_tensor *diag_of(em_scope *s, const em_tensor *a)
{
    if (!a) return NULL;
    int d = -1;
    em_tensor *p = es_mul(s, a, eye_like(s, a->sizes[a->ndim - 1], a));
    return es_sum(s, p, &d, 1, false);
}

static int64_t batch_count(const em_tensor *t)
{
    int64_t b = 1;
    for (int d = 0; d < t->ndim - 2; d++) b *= t->sizes[d];
    return b;
}

/* em_scope_finish for two results (neither NULL): *a and *b take new
 * references to x and y, and s is dropped; 0. */
static int finish2(em_scope *s, em_tensor *x, em_tensor **a, em_tensor *y, em_tensor **b)
{
    *a = em_retain(x);
    *b = em_retain(y);
    em_scope_drop(s);
    return 0;
}

/* ---- checks ------------------------------------------------------------- */

static int check_input(const char *op, const em_tensor *a)
{
    if (a->ndim < 2)
        return em_set_error("%s: The input tensor A must have at least 2 dimensions, got %d", op, a->ndim);
    if (a->dtype != EM_FLOAT32 && a->dtype != EM_FLOAT64)
        return em_set_error("%s: Expected a float32 or float64 tensor as input, got %s", op,
                            em_dtype_name(a->dtype));
    return 0;
}

static int check_square(const char *op, const em_tensor *a)
{
    if (check_input(op, a)) return -1;
    int64_t r = a->sizes[a->ndim - 2], c = a->sizes[a->ndim - 1];
    if (r != c)
        return em_set_error("%s: A must be batches of square matrices, but they are %lld by %lld matrices", op,
                            (long long)r, (long long)c);
    return 0;
}

static void batch_prefix(char *buf, size_t n, const em_tensor *a, int64_t i)
{
    if (a->ndim > 2) snprintf(buf, n, "(Batch element %lld): ", (long long)i + 1);   /* 1-based, as every position */
    else buf[0] = 0;
}

/* ---- column-major batches ------------------------------------------------ */

/* A fresh [B, R, C] column-major batch (strides [R*C, 1, R]). */
static em_tensor *cm_empty(em_scope *s, int64_t B, int64_t R, int64_t C, em_dtype dt, em_device dev)
{
    int64_t sz[3] = {B, C, R};
    em_tensor *buf = em_scope_keep(s, em_empty(sz, 3, dt, dev));
    if (!buf) return NULL;
    int64_t vs[3] = {B, R, C}, st[3] = {R * C, 1, R > 0 ? R : 1};
    return em_scope_keep(s, em_as_strided(buf, vs, st, 3, 0));
}

/* The column-major batch cm [B, R, C] seen with `like`'s batch dims:
 * [batch..., R, C] (nb batch dims taken from sizes). */
static em_tensor *cm_view(em_scope *s, const em_tensor *cm, const int64_t *batch, int nb)
{
    if (!cm) return NULL;
    int64_t R = cm->sizes[1], C = cm->sizes[2], sz[EM_MAX_DIMS], st[EM_MAX_DIMS];
    int64_t stride = R * C;
    for (int d = nb - 1; d >= 0; d--) {
        sz[d] = batch[d];
        st[d] = stride;
        stride *= batch[d];
    }
    sz[nb] = R;
    sz[nb + 1] = C;
    st[nb] = 1;
    st[nb + 1] = R > 0 ? R : 1;
    return em_scope_keep(s, em_as_strided(cm, sz, st, nb + 2, cm->offset));
}

/* A column-major copy [B, R, C] of a [batch..., R, C]. */
static em_tensor *cm_copy(em_scope *s, const em_tensor *a)
{
    int nd = a->ndim;
    em_tensor *cm = cm_empty(s, batch_count(a), a->sizes[nd - 2], a->sizes[nd - 1], a->dtype, a->storage->device);
    em_tensor *v = cm_view(s, cm, a->sizes, nd - 2);
    if (!v || em_copy_(v, a)) return NULL;
    return cm;
}

/* One backend call; *info gets a malloc'ed array of B entries. */
static int run(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d,
               const em_linalg_params *p, const char *name, int **info)
{
    *info = NULL;
    if (!a) return -1;
    const em_backend *be = em_be(a);
    if (!be->linalg) return em_set_error("%s: the %s backend has no linear algebra kernels", name, be->name);
    int64_t B = a->sizes[0];
    *info = calloc((size_t)(B > 0 ? B : 1), sizeof(int));
    if (!*info) return em_set_error("%s: out of memory", name);
    em_linalg_params none = {0};
    if (be->linalg(op, a, b, c, d, p ? p : &none, *info)) {
        free(*info);
        *info = NULL;
        return -1;
    }
    return 0;
}

/* ---- LU: det, slogdet ------------------------------------------------------ */

/* The LU factors [batch..., n, n] and the permutation's sign [batch...]. */
static int lu_factor(em_scope *s, const em_tensor *A, em_tensor **lu, em_tensor **sign, const char *name)
{
    int nd = A->ndim;
    int64_t n = A->sizes[nd - 1], B = batch_count(A);
    em_tensor *cm = cm_copy(s, A);
    int64_t ps[2] = {B, n};
    em_tensor *piv = em_scope_keep(s, em_empty(ps, 2, EM_INT32, A->storage->device));
    int *info = NULL;
    if (!cm || !piv || run(EM_LINALG_LU, cm, piv, NULL, NULL, NULL, name, &info)) return -1;
    free(info);
    *lu = cm_view(s, cm, A->sizes, nd - 2);
    /* each pivot that is not its own row is one swap */
    em_tensor *rows = em_scope_keep(s, em_arange(1, (double)n + 1, 1, EM_INT32, A->storage->device));
    em_tensor *swaps = rows ? es_binary(s, EM_NE, piv, rows) : NULL;
    int d = -1;
    em_tensor *count = swaps ? em_scope_keep(s, em_sum_dtype(swaps, &d, 1, false, EM_INT64)) : NULL;
    em_tensor *odd = count ? em_scope_keep(s, ei_binary_scalar(EM_REMAINDER, count, 2, true, false)) : NULL;
    em_tensor *oddf = odd ? em_scope_keep(s, em_to_dtype(odd, A->dtype)) : NULL;
    em_tensor *sg = oddf ? em_scope_keep(s, ei_binary_scalar(EM_MUL, oddf, -2, false, false)) : NULL;
    sg = sg ? em_scope_keep(s, ei_binary_scalar(EM_ADD, sg, 1, false, false)) : NULL;
    *sign = sg ? em_scope_keep(s, em_reshape(sg, A->sizes, nd - 2)) : NULL;
    return *lu && *sign ? 0 : -1;
}

static em_tensor *det_forward(const em_tensor *A);

/* det(A) registered in the em_scope */
static em_tensor *det_forward_ref(em_scope *s, const em_tensor *A) { return A ? em_scope_keep(s, det_forward(A)) : NULL; }

static em_tensor *det_forward(const em_tensor *A)
{
    em_scope s = {0};
    em_tensor *lu, *sign;
    if (lu_factor(&s, A, &lu, &sign, "linalg.det")) return em_scope_finish(&s, NULL);
    int d = -1;
    em_tensor *dg = diag_of(&s, lu);
    em_tensor *p = dg ? em_scope_keep(&s, ei_prod(dg, &d, 1, false)) : NULL;
    return em_scope_finish(&s, es_mul(&s, p, sign));
}

/* The cofactor matrix of A (d det / dA, also where A is singular), from the
 * SVD A = U diag(s) Vh: det(U) det(Vh) U diag(p) Vh with p_i the product of
 * the s_j, j != i. Computed without recording. */
static em_tensor *cofactor(em_scope *s, const em_tensor *A)
{
    em_tensor *U, *S, *Vh;
    if (em_linalg_svd(A, false, &U, &S, &Vh)) return NULL;
    em_scope_keep(s, U), em_scope_keep(s, S), em_scope_keep(s, Vh);
    int64_t nn = A->sizes[A->ndim - 1];
    int d = -1;
    /* row i of `others` is s with s_i replaced by 1 */
    em_tensor *eye = eye_like(s, nn, A);
    em_tensor *diag = eye ? em_scope_keep(s, ei_binary_scalar(EM_NE, eye, 0, false, false)) : NULL;
    em_tensor *ones = eye ? em_scope_keep(s, em_full(NULL, 0, 1.0, A->dtype, A->storage->device)) : NULL;
    em_tensor *others = diag && ones ? em_scope_keep(s, em_where(diag, ones, es_unsqueeze(s, S, -2))) : NULL;
    em_tensor *p = others ? em_scope_keep(s, ei_prod(others, &d, 1, false)) : NULL;
    em_tensor *sign = es_mul(s, det_forward_ref(s, U), det_forward_ref(s, Vh));
    em_tensor *c = es_matmul(s, es_mul(s, U, es_unsqueeze(s, p, -2)), Vh);
    return es_mul(s, c, es_unsqueeze(s, es_unsqueeze(s, sign, -1), -1));
}

static int det_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *A = em_ag_saved(n, 0), *det = em_ag_saved(n, 1);
    if (!A || !det) return -1;
    em_scope s = {0};
    em_tensor *zero = es_scalar_ex(&s, EM_EQ, det, 0, false, false);
    em_tensor *any = zero ? em_scope_keep(&s, em_any(zero, NULL, 0, false)) : NULL;
    double singular = 0;
    if (!any || em_item(any, &singular)) return em_scope_drop(&s), -1;
    if (!singular) {
        /* d det / dA = det A^{-T} */
        em_tensor *inv = em_scope_keep(&s, em_linalg_inv(A));
        em_tensor *gd = es_unsqueeze(&s, es_unsqueeze(&s, es_mul(&s, gout[0], det), -1), -1);
        gin[0] = em_scope_finish(&s, es_mul(&s, gd, es_mT(&s, inv)));
        return gin[0] ? 0 : -1;
    }
    if (em_grad_enabled()) {
        em_scope_drop(&s);
        return em_set_error("linalg.det: the gradient of the gradient at a singular matrix is not supported "
                            "(the first gradient is: the cofactor matrix)");
    }
    em_tensor *g = es_unsqueeze(&s, es_unsqueeze(&s, gout[0], -1), -1);
    gin[0] = em_scope_finish(&s, es_mul(&s, g, cofactor(&s, A)));
    return gin[0] ? 0 : -1;
}

em_tensor *em_linalg_det(const em_tensor *A)
{
    if (check_square("linalg.det", A)) return NULL;
    em_tensor *out = WITHOUT_GRAD(det_forward(A));
    if (!out || !em_ag_needed1(A)) return out;
    em_node *n = em_ag_node("LinalgDetBackward", det_backward, 1);
    if (!n) return em_release(out), NULL;
    em_ag_input(n, 0, A);
    if (em_ag_save(n, 0, A, false) || em_ag_save(n, 1, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

static int slogdet_forward(const em_tensor *A, em_tensor **sign, em_tensor **logabs)
{
    em_scope s = {0};
    em_tensor *lu, *psign;
    if (lu_factor(&s, A, &lu, &psign, "linalg.slogdet")) return em_scope_drop(&s), -1;
    int d = -1;
    em_tensor *dg = diag_of(&s, lu);
    em_tensor *sg = dg ? em_scope_keep(&s, ei_unary(EM_SIGN, dg)) : NULL;
    em_tensor *ps = sg ? em_scope_keep(&s, ei_prod(sg, &d, 1, false)) : NULL;
    em_tensor *ab = dg ? em_scope_keep(&s, ei_unary(EM_ABS, dg)) : NULL;
    em_tensor *lg = ab ? em_scope_keep(&s, ei_unary(EM_LOG, ab)) : NULL;
    em_tensor *la = lg ? em_scope_keep(&s, ei_sum(lg, &d, 1, false)) : NULL;
    em_tensor *sign_all = es_mul(&s, ps, psign);
    if (!sign_all || !la) return em_scope_drop(&s), -1;
    return finish2(&s, sign_all, sign, la, logabs);
}

static int slogdet_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *A = em_ag_saved(n, 0);
    if (!A) return -1;
    em_scope s = {0};
    em_tensor *inv = em_scope_keep(&s, em_linalg_inv(A));
    em_tensor *g = es_unsqueeze(&s, es_unsqueeze(&s, gout[0], -1), -1);
    gin[0] = em_scope_finish(&s, es_mul(&s, g, es_mT(&s, inv)));
    return gin[0] ? 0 : -1;
}

int em_linalg_slogdet(const em_tensor *A, em_tensor **sign, em_tensor **logabsdet)
{
    *sign = *logabsdet = NULL;
    if (check_square("linalg.slogdet", A)) return -1;
    bool was = em_set_grad_enabled(false);
    int rc = slogdet_forward(A, sign, logabsdet);
    em_set_grad_enabled(was);
    if (rc || !em_ag_needed1(A)) return rc;
    em_node *n = em_ag_node("LinalgSlogdetBackward", slogdet_backward, 1);
    if (n) {
        em_ag_input(n, 0, A);
        if (em_ag_save(n, 0, A, false)) {
            *logabsdet = em_ag_abandon(n, *logabsdet);
        } else {
            *logabsdet = em_ag_output(n, *logabsdet);
        }
    } else {
        em_release(*logabsdet);
        *logabsdet = NULL;
    }
    if (!*logabsdet) {
        em_release(*sign);
        *sign = NULL;
        return -1;
    }
    return 0;
}

/* ---- solve and inv ---------------------------------------------------------- */

/* X with A X = B for A [batch..., n, n], B [batch..., n, k] (same batch). */
static em_tensor *solve_forward(const em_tensor *A, const em_tensor *B, const char *name, bool inv)
{
    em_scope s = {0};
    int nd = A->ndim;
    em_tensor *a = cm_copy(&s, A), *b = cm_copy(&s, B);
    int *info = NULL;
    if (!a || !b || run(EM_LINALG_SOLVE, a, b, NULL, NULL, NULL, name, &info)) return em_scope_finish(&s, NULL);
    for (int64_t i = 0; i < a->sizes[0]; i++) {
        if (info[i] <= 0) continue;
        char pre[64];
        batch_prefix(pre, sizeof pre, A, i);
        if (inv)
            em_set_error("%s: %sThe diagonal element %d is zero, the inversion could not be completed because the "
                         "input matrix is singular.", name, pre, info[i]);
        else
            em_set_error("%s: %sThe diagonal element %d is zero, the solve could not be completed because the "
                         "input matrix is singular.", name, pre, info[i]);
        free(info);
        return em_scope_finish(&s, NULL);
    }
    free(info);
    return em_scope_finish(&s, cm_view(&s, b, A->sizes, nd - 2));
}

static int solve_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *A = em_ag_saved(n, 0), *X = em_ag_saved(n, 1);
    if (!A || !X) return -1;
    em_scope s = {0};
    /* gB = A^{-T} G, gA = -gB X^T */
    em_tensor *gB = em_scope_keep(&s, em_linalg_solve(es_mT(&s, A), gout[0]));
    if (em_ag_wants(n, 1)) gin[1] = gB ? em_retain(gB) : NULL;
    if (em_ag_wants(n, 0)) gin[0] = em_scope_finish(&s, es_scalar(&s, EM_MUL, es_matmul(&s, gB, es_mT(&s, X)), -1));
    em_scope_drop(&s);
    return (em_ag_wants(n, 0) && !gin[0]) || (em_ag_wants(n, 1) && !gin[1]) ? -1 : 0;
}

/* A [batch..., n, n] and B [batch..., n, k] of one batch shape. */
static em_tensor *solve_same_batch(const em_tensor *A, const em_tensor *B, const char *name)
{
    em_tensor *out = WITHOUT_GRAD(solve_forward(A, B, name, false));
    if (!out || !em_ag_needed2(A, B)) return out;
    em_node *n = em_ag_node("LinalgSolveBackward", solve_backward, 2);
    if (!n) return em_release(out), NULL;
    em_ag_input(n, 0, A);
    em_ag_input(n, 1, B);
    if (em_ag_save(n, 0, A, false) || em_ag_save(n, 1, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

em_tensor *em_linalg_solve_ex(const em_tensor *A, const em_tensor *B, bool left)
{
    const char *name = "linalg.solve";
    if (check_square(name, A)) return NULL;
    if (em_check_same_device(name, A, B)) return NULL;
    if (B->dtype != A->dtype)
        return em_set_error("%s: Expected A and B to have the same dtype, but found A of type %s and B of type %s "
                            "instead", name, em_dtype_name(A->dtype), em_dtype_name(B->dtype)), NULL;
    em_scope s = {0};
    if (!left) {
        /* X A = B  <=>  A^T X^T = B^T */
        if (B->ndim < 2)
            return em_set_error("%s: with left=false, B must have at least 2 dimensions, got %d", name, B->ndim),
                   NULL;
        em_tensor *x = em_scope_keep(&s, em_linalg_solve_ex(es_mT(&s, A), es_mT(&s, B), true));
        return em_scope_finish(&s, es_mT(&s, x));
    }
    int n = A->ndim;
    /* B is a vector (or a batch of them) as PyTorch decides: 1-D, or one dim
     * fewer than A with A's batch shape */
    bool vec = B->ndim == 1 || (B->ndim == n - 1 && !memcmp(B->sizes, A->sizes, sizeof(int64_t) * (size_t)(n - 1)));
    em_tensor *Bm = vec ? es_unsqueeze(&s, B, -1) : em_scope_keep(&s, em_retain((em_tensor *)B));
    if (!Bm) return em_scope_finish(&s, NULL);
    char sa[128], sb[128];
    if (Bm->ndim < 2 || Bm->sizes[Bm->ndim - 2] != A->sizes[n - 1]) {
        em_set_error("%s: Incompatible shapes of A and B for the equation AX = B (%s and %s)", name,
                     em_shape_str(A, sa, sizeof sa), em_shape_str(B, sb, sizeof sb));
        return em_scope_finish(&s, NULL);
    }
    int64_t bs[EM_MAX_DIMS];
    int nb = em_broadcast_shapes(A->sizes, n - 2, Bm->sizes, Bm->ndim - 2, bs, name);
    if (nb < 0) return em_scope_finish(&s, NULL);
    int64_t ea[EM_MAX_DIMS], eb[EM_MAX_DIMS];
    memcpy(ea, bs, sizeof(int64_t) * (size_t)nb);
    memcpy(eb, bs, sizeof(int64_t) * (size_t)nb);
    ea[nb] = ea[nb + 1] = A->sizes[n - 1];
    eb[nb] = Bm->sizes[Bm->ndim - 2];
    eb[nb + 1] = Bm->sizes[Bm->ndim - 1];
    em_tensor *Ae = em_scope_keep(&s, em_expand(A, ea, nb + 2)), *Be = em_scope_keep(&s, em_expand(Bm, eb, nb + 2));
    em_tensor *X = Ae && Be ? em_scope_keep(&s, solve_same_batch(Ae, Be, name)) : NULL;
    if (X && vec) X = em_scope_keep(&s, em_squeeze_dim(X, -1));
    return em_scope_finish(&s, X);
}

em_tensor *em_linalg_solve(const em_tensor *A, const em_tensor *B) { return em_linalg_solve_ex(A, B, true); }

static int inv_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *Ai = em_ag_saved(n, 0);
    if (!Ai) return -1;
    em_scope s = {0};
    em_tensor *AiT = es_mT(&s, Ai);
    gin[0] = em_scope_finish(&s, es_scalar(&s, EM_MUL, es_matmul(&s, es_matmul(&s, AiT, gout[0]), AiT), -1));
    return gin[0] ? 0 : -1;
}

em_tensor *em_linalg_inv(const em_tensor *A)
{
    if (check_square("linalg.inv", A)) return NULL;
    em_scope s = {0};
    int64_t n = A->sizes[A->ndim - 1];
    em_tensor *I = em_scope_keep(&s, em_eye(n, n, A->dtype, A->storage->device));
    em_tensor *Ie = I ? em_scope_keep(&s, em_expand(I, A->sizes, A->ndim)) : NULL;
    em_tensor *out = Ie ? WITHOUT_GRAD(solve_forward(A, Ie, "linalg.inv", true)) : NULL;
    em_scope_drop(&s);
    if (!out || !em_ag_needed1(A)) return out;
    em_node *nd = em_ag_node("LinalgInvBackward", inv_backward, 1);
    if (!nd) return em_release(out), NULL;
    em_ag_input(nd, 0, A);
    if (em_ag_save(nd, 0, out, true)) return em_ag_abandon(nd, out);
    return em_ag_output(nd, out);
}

/* ---- cholesky -------------------------------------------------------------- */

static em_tensor *cholesky_forward(const em_tensor *A)
{
    em_scope s = {0};
    em_tensor *a = cm_copy(&s, A);
    int *info = NULL;
    if (!a || run(EM_LINALG_CHOLESKY, a, NULL, NULL, NULL, NULL, "linalg.cholesky", &info)) return em_scope_finish(&s, NULL);
    for (int64_t i = 0; i < a->sizes[0]; i++) {
        if (info[i] <= 0) continue;
        char pre[64];
        batch_prefix(pre, sizeof pre, A, i);
        em_set_error("linalg.cholesky: %sThe factorization could not be completed because the input is not "
                     "positive-definite (the leading minor of order %d is not positive-definite).", pre, info[i]);
        free(info);
        return em_scope_finish(&s, NULL);
    }
    free(info);
    return em_scope_finish(&s, tril(&s, cm_view(&s, a, A->sizes, A->ndim - 2), 0));
}

static int cholesky_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *L = em_ag_saved(n, 0);
    if (!L) return -1;
    em_scope s = {0};
    /* P = tril(L^T gL) with a halved diagonal, mirrored; gA = L^{-T} P L^{-1} */
    em_tensor *P = tril(&s, es_matmul(&s, es_mT(&s, L), gout[0]), 0);
    P = es_scalar(&s, EM_MUL, es_add(&s, P, es_mT(&s, tril(&s, P, -1))), 0.5);
    em_tensor *Li = em_scope_keep(&s, em_linalg_inv(L));
    gin[0] = em_scope_finish(&s, es_matmul(&s, es_matmul(&s, es_mT(&s, Li), P), Li));
    return gin[0] ? 0 : -1;
}

em_tensor *em_linalg_cholesky(const em_tensor *A, bool upper)
{
    if (check_square("linalg.cholesky", A)) return NULL;
    em_tensor *L = WITHOUT_GRAD(cholesky_forward(A));
    if (L && em_ag_needed1(A)) {
        em_node *n = em_ag_node("LinalgCholeskyBackward", cholesky_backward, 1);
        if (!n) return em_release(L), NULL;
        em_ag_input(n, 0, A);
        L = em_ag_save(n, 0, L, true) ? em_ag_abandon(n, L) : em_ag_output(n, L);
    }
    if (!L || !upper) return L;
    em_tensor *U = em_transpose(L, -1, -2);
    em_release(L);
    return U;
}

/* ---- packed outputs ------------------------------------------------------------ */

/* parts [batch..., ...] flattened after the nb batch dims and concatenated */
static em_tensor *pack(em_scope *s, em_tensor *const *parts, int np, int nb)
{
    em_tensor *flat[4];
    for (int i = 0; i < np; i++) {
        int64_t sz[EM_MAX_DIMS];
        memcpy(sz, parts[i]->sizes, sizeof(int64_t) * (size_t)nb);
        int64_t m = 1;
        for (int d = nb; d < parts[i]->ndim; d++) m *= parts[i]->sizes[d];
        sz[nb] = m;
        flat[i] = em_scope_keep(s, em_reshape(parts[i], sz, nb + 1));
        if (!flat[i]) return NULL;
    }
    return em_scope_keep(s, ei_cat(flat, np, nb));
}

/* the piece of packed at *off with trailing sizes tail[nt]; advances *off */
static em_tensor *piece(em_scope *s, const em_tensor *packed, int nb, int64_t *off, const int64_t *tail, int nt)
{
    if (!packed) return NULL;
    int64_t sz[EM_MAX_DIMS], m = 1;
    memcpy(sz, packed->sizes, sizeof(int64_t) * (size_t)nb);
    for (int i = 0; i < nt; i++) {
        sz[nb + i] = tail[i];
        m *= tail[i];
    }
    em_tensor *v = es_narrow(s, packed, nb, *off, m);
    *off += m;
    return v ? em_scope_keep(s, em_reshape(v, sz, nb + nt)) : NULL;
}

/* The parts (each [batch..., ...] of A's batch) packed and recorded as the
 * one output of a node `name` with input A, its sizes in the node and the
 * output saved for the backward: read the parts back with piece(). NULL
 * with the error set on failure. */
static em_tensor *record_packed(em_scope *s, const em_tensor *A, em_tensor *const *parts, int np, const char *name,
                                em_apply_fn backward, bool full)
{
    em_tensor *packed = pack(s, parts, np, A->ndim - 2);
    em_tensor *out = packed ? em_clone(packed) : NULL;
    em_node *n = out ? em_ag_node(name, backward, 1) : NULL;
    if (!n) return em_release(out), NULL;
    n->p.packed.full = full;
    n->ndim = A->ndim;
    memcpy(n->sizes, A->sizes, sizeof(int64_t) * (size_t)A->ndim);
    em_ag_input(n, 0, A);
    if (em_ag_save(n, 0, out, true)) return em_ag_abandon(n, out);
    return em_scope_keep(s, em_ag_output(n, out));
}

/* ---- qr ----------------------------------------------------------------------- */

typedef enum qr_mode { QR_REDUCED, QR_COMPLETE, QR_R } qr_mode;

static int qr_forward(em_scope *s, const em_tensor *A, qr_mode mode, em_tensor **Q, em_tensor **R)
{
    int nd = A->ndim;
    int64_t m = A->sizes[nd - 2], n = A->sizes[nd - 1], k = m < n ? m : n, kq = mode == QR_COMPLETE ? m : k;
    em_tensor *a = cm_copy(s, A);
    em_tensor *q = mode == QR_R ? NULL : cm_empty(s, a ? a->sizes[0] : 0, m, kq, A->dtype, A->storage->device);
    int *info = NULL;
    if (!a || (mode != QR_R && !q) || run(EM_LINALG_QR, a, q, NULL, NULL, NULL, "linalg.qr", &info)) return -1;
    free(info);
    *R = triu(s, es_narrow(s, cm_view(s, a, A->sizes, nd - 2), -2, 0, kq), 0);
    if (mode == QR_R) {
        int64_t zero = 0;
        *Q = em_scope_keep(s, em_empty(&zero, 1, A->dtype, A->storage->device));
    } else {
        *Q = cm_view(s, q, A->sizes, nd - 2);
    }
    return *Q && *R ? 0 : -1;
}

/* gA for A = QR, m >= n (reduced): (gQ + Q copyltu(M)) R^{-T},
 * M = triu(gR R^T - Q^T gQ) mirrored with its diagonal kept */
static em_tensor *qr_grad_tall(em_scope *s, const em_tensor *Q, const em_tensor *R, const em_tensor *gQ,
                               const em_tensor *gR)
{
    em_tensor *M = triu(s, es_sub(s, es_matmul(s, gR, es_mT(s, R)), es_matmul(s, es_mT(s, Q), gQ)), 0);
    M = es_add(s, M, es_mT(s, triu(s, M, 1)));
    em_tensor *X = es_add(s, es_matmul(s, Q, M), gQ);
    /* X R^{-T} = (R^{-1} X^T)^T */
    em_tensor *Y = X ? em_scope_keep(s, em_linalg_solve(R, es_mT(s, X))) : NULL;
    return es_mT(s, Y);
}

static int qr_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    if (n->op == QR_R)
        return em_set_error("linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when "
                            "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                            "through linalg.qr.");
    em_tensor *packed = em_ag_saved(n, 0), *A = em_ag_saved(n, 1);
    if (!packed || !A) return -1;
    int nb = A->ndim - 2;
    int64_t m = A->sizes[nb], nn = A->sizes[nb + 1], k = m < nn ? m : nn;
    if (n->op == QR_COMPLETE && m > nn)
        return em_set_error("linalg.qr: The QR decomposition is not differentiable when mode='complete' and "
                            "nrows > ncols.");
    em_scope s = {0};
    int64_t off = 0, qs[2] = {m, k}, rs[2] = {k, nn};
    em_tensor *Q = piece(&s, packed, nb, &off, qs, 2), *R = piece(&s, packed, nb, &off, rs, 2);
    off = 0;
    em_tensor *gQ = piece(&s, gout[0], nb, &off, qs, 2), *gR = piece(&s, gout[0], nb, &off, rs, 2);
    if (m >= nn) {
        gin[0] = em_scope_finish(&s, qr_grad_tall(&s, Q, R, gQ, gR));
    } else {
        /* A = [X | Y], R = [U | V]: X = Q U is a square QR, Y = Q V */
        em_tensor *Y = es_narrow(&s, A, -1, m, nn - m), *U = es_narrow(&s, R, -1, 0, m);
        em_tensor *gU = es_narrow(&s, gR, -1, 0, m), *gV = es_narrow(&s, gR, -1, m, nn - m);
        em_tensor *gQ2 = es_add(&s, gQ, es_matmul(&s, Y, es_mT(&s, gV)));
        em_tensor *gX = qr_grad_tall(&s, Q, U, gQ2, gU), *gY = es_matmul(&s, Q, gV);
        em_tensor *both[2] = {gX, gY};
        gin[0] = gX && gY ? em_scope_finish(&s, em_scope_keep(&s, ei_cat(both, 2, -1))) : em_scope_finish(&s, NULL);
    }
    return gin[0] ? 0 : -1;
}

int em_linalg_qr(const em_tensor *A, const char *mode, em_tensor **Q, em_tensor **R)
{
    *Q = *R = NULL;
    if (check_input("linalg.qr", A)) return -1;
    qr_mode md;
    if (!mode || !strcmp(mode, "reduced")) md = QR_REDUCED;
    else if (!strcmp(mode, "complete")) md = QR_COMPLETE;
    else if (!strcmp(mode, "r")) md = QR_R;
    else return em_set_error("linalg.qr: qr received unrecognized mode '%s' but expected one of 'reduced' "
                             "(default), 'r', or 'complete'", mode);
    em_scope s = {0};
    bool was = em_set_grad_enabled(false);
    em_tensor *q, *r;
    int rc = qr_forward(&s, A, md, &q, &r);
    em_set_grad_enabled(was);
    if (rc) return em_scope_drop(&s), -1;
    if (!em_ag_needed1(A)) return finish2(&s, q, Q, r, R);
    int nb = A->ndim - 2;
    int64_t m = A->sizes[nb], nn = A->sizes[nb + 1], k = m < nn ? m : nn;
    /* the node's output: Q and R packed (R alone for mode 'r', whose backward refuses) */
    em_tensor *parts[2] = {q, r};
    em_tensor *packed = md == QR_R ? pack(&s, &r, 1, nb) : pack(&s, parts, 2, nb);
    em_tensor *out = packed ? em_clone(packed) : NULL;
    em_node *n = out ? em_ag_node("LinalgQrBackward", qr_backward, 1) : NULL;
    if (!n) return em_release(out), em_scope_drop(&s), -1;
    n->op = md;
    em_ag_input(n, 0, A);
    if (em_ag_save(n, 0, out, true) || em_ag_save(n, 1, A, false)) {
        em_ag_abandon(n, out);
        return em_scope_drop(&s), -1;
    }
    out = em_scope_keep(&s, em_ag_output(n, out));
    if (!out) return em_scope_drop(&s), -1;
    int64_t off = 0, qs[2] = {m, md == QR_COMPLETE ? m : k}, rs[2] = {r->sizes[nb], nn};
    if (md == QR_R) {
        *Q = em_retain(q);
        *R = piece(&s, out, nb, &off, rs, 2);
        *R = *R ? em_retain(*R) : NULL;
    } else {
        em_tensor *qq = piece(&s, out, nb, &off, qs, 2), *rr = piece(&s, out, nb, &off, rs, 2);
        *Q = qq ? em_retain(qq) : NULL;
        *R = rr ? em_retain(rr) : NULL;
    }
    em_scope_drop(&s);
    if (!*Q || !*R) {
        em_release(*Q);
        em_release(*R);
        *Q = *R = NULL;
        return -1;
    }
    return 0;
}

/* ---- svd and svdvals --------------------------------------------------------- */

static int svd_forward(em_scope *s, const em_tensor *A, bool full, bool vectors, const char *name, em_tensor **U,
                       em_tensor **S, em_tensor **Vh)
{
    int nd = A->ndim;
    int64_t m = A->sizes[nd - 2], n = A->sizes[nd - 1], k = m < n ? m : n, B = batch_count(A);
    em_device dev = A->storage->device;
    em_tensor *a = cm_copy(s, A);
    int64_t ss[2] = {B, k};
    em_tensor *sv = em_scope_keep(s, em_empty(ss, 2, A->dtype, dev));
    em_tensor *u = vectors ? cm_empty(s, B, m, full ? m : k, A->dtype, dev) : NULL;
    em_tensor *vt = vectors ? cm_empty(s, B, full ? n : k, n, A->dtype, dev) : NULL;
    em_linalg_params p = {.full = full};
    int *info = NULL;
    if (!a || !sv || (vectors && (!u || !vt))) return -1;
    if (m == 0 || n == 0) {
        /* LAPACK is not called on empty matrices: U and Vh are identities */
        if (vectors && (em_fill_(u, 0) || em_fill_(vt, 0))) return -1;
        if (vectors && full) {
            em_tensor *iu = em_scope_keep(s, em_eye(m, m, A->dtype, dev)), *iv = em_scope_keep(s, em_eye(n, n, A->dtype, dev));
            if (!iu || !iv || em_copy_(u, iu) || em_copy_(vt, iv)) return -1;
        }
    } else if (run(EM_LINALG_SVD, a, sv, u, vt, &p, name, &info)) {
        return -1;
    }
    bool bad = false;
    for (int64_t i = 0; info && i < B; i++) bad |= info[i] > 0;
    free(info);
    if (bad) return em_set_error("%s: The algorithm failed to converge because the input matrix is "
                                 "ill-conditioned or has too many repeated singular values", name);
    {
        int64_t sz[EM_MAX_DIMS];
        memcpy(sz, A->sizes, sizeof(int64_t) * (size_t)(nd - 2));
        sz[nd - 2] = k;
        *S = em_scope_keep(s, em_reshape(sv, sz, nd - 1));
    }
    if (vectors) {
        *U = cm_view(s, u, A->sizes, nd - 2);
        *Vh = cm_view(s, vt, A->sizes, nd - 2);
    } else {
        *U = *Vh = NULL;
    }
    return *S && (!vectors || (*U && *Vh)) ? 0 : -1;
}

/* PyTorch's svd_backward for the reduced U [.., m, k], S, Vh [.., k, n] */
static em_tensor *svd_grad(em_scope *s, const em_tensor *U, const em_tensor *S, const em_tensor *Vh,
                           const em_tensor *gU, const em_tensor *gS, const em_tensor *gVh)
{
    int nd = U->ndim;
    int64_t m = U->sizes[nd - 2], n = Vh->sizes[nd - 1];
    em_tensor *UhgU = es_matmul(s, es_mT(s, U), gU), *VhgV = es_matmul(s, Vh, es_mT(s, gVh));
    UhgU = es_sub(s, UhgU, es_mT(s, UhgU));
    VhgV = es_sub(s, VhgV, es_mT(s, VhgV));
    em_tensor *S2 = es_mul(s, S, S);
    /* E_ij = S_j^2 - S_i^2, 1 on the diagonal (divides zeros there) */
    em_tensor *E = es_add(s, es_sub(s, es_unsqueeze(s, S2, -2), es_unsqueeze(s, S2, -1)), eye_like(s, S->sizes[S->ndim - 1], S));
    em_tensor *gA = es_div(s, es_add(s, es_mul(s, UhgU, es_unsqueeze(s, S, -2)), es_mul(s, es_unsqueeze(s, S, -1), VhgV)), E);
    gA = es_add(s, gA, diag_embed(s, gS));
    if (m > n) {
        em_tensor *gUSinv = es_div(s, gU, es_unsqueeze(s, S, -2));
        gA = es_matmul(s, U, gA);
        gA = es_sub(s, es_add(s, gA, gUSinv), es_matmul(s, U, es_matmul(s, es_mT(s, U), gUSinv)));
        return es_matmul(s, gA, Vh);
    }
    if (m < n) {
        em_tensor *SinvgVh = es_div(s, gVh, es_unsqueeze(s, S, -1));
        gA = es_matmul(s, gA, Vh);
        gA = es_sub(s, es_add(s, gA, SinvgVh), es_matmul(s, es_matmul(s, SinvgVh, es_mT(s, Vh)), Vh));
        return es_matmul(s, U, gA);
    }
    return es_matmul(s, U, es_matmul(s, gA, Vh));
}

static int svd_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *packed = em_ag_saved(n, 0);
    if (!packed) return -1;
    int nb = n->ndim - 2;
    int64_t m = n->sizes[nb], nn = n->sizes[nb + 1], k = m < nn ? m : nn;
    bool full = n->p.packed.full;
    em_scope s = {0};
    int64_t off = 0, us[2] = {m, full ? m : k}, ss[1] = {k}, vs[2] = {full ? nn : k, nn};
    em_tensor *U = piece(&s, packed, nb, &off, us, 2), *S = piece(&s, packed, nb, &off, ss, 1);
    em_tensor *Vh = piece(&s, packed, nb, &off, vs, 2);
    off = 0;
    em_tensor *gU = piece(&s, gout[0], nb, &off, us, 2), *gS = piece(&s, gout[0], nb, &off, ss, 1);
    em_tensor *gVh = piece(&s, gout[0], nb, &off, vs, 2);
    if (full) {
        /* only the first k singular vectors take part in A */
        U = es_narrow(&s, U, -1, 0, k);
        gU = es_narrow(&s, gU, -1, 0, k);
        Vh = es_narrow(&s, Vh, -2, 0, k);
        gVh = es_narrow(&s, gVh, -2, 0, k);
    }
    if (!U || !S || !Vh || !gU || !gS || !gVh) return em_scope_drop(&s), -1;
    gin[0] = em_scope_finish(&s, svd_grad(&s, U, S, Vh, gU, gS, gVh));
    return gin[0] ? 0 : -1;
}

int em_linalg_svd(const em_tensor *A, bool full_matrices, em_tensor **U, em_tensor **S, em_tensor **Vh)
{
    *U = *S = *Vh = NULL;
    if (check_input("linalg.svd", A)) return -1;
    em_scope s = {0};
    bool was = em_set_grad_enabled(false);
    em_tensor *u, *sv, *vh;
    int rc = svd_forward(&s, A, full_matrices, true, "linalg.svd", &u, &sv, &vh);
    em_set_grad_enabled(was);
    if (rc) return em_scope_drop(&s), -1;
    if (em_ag_needed1(A)) {
        int nb = A->ndim - 2;
        em_tensor *parts[3] = {u, sv, vh};
        em_tensor *out = record_packed(&s, A, parts, 3, "LinalgSvdBackward", svd_backward, full_matrices);
        int64_t off = 0, us[2] = {u->sizes[nb], u->sizes[nb + 1]}, ss[1] = {sv->sizes[nb]};
        int64_t vs[2] = {vh->sizes[nb], vh->sizes[nb + 1]};
        u = piece(&s, out, nb, &off, us, 2);
        sv = piece(&s, out, nb, &off, ss, 1);
        vh = piece(&s, out, nb, &off, vs, 2);
        if (!u || !sv || !vh) return em_scope_drop(&s), -1;
    }
    *U = em_retain(u);
    *S = em_retain(sv);
    *Vh = em_retain(vh);
    em_scope_drop(&s);
    return 0;
}

static int svdvals_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *U = em_ag_saved(n, 0), *Vh = em_ag_saved(n, 1);
    if (!U || !Vh) return -1;
    em_scope s = {0};
    gin[0] = em_scope_finish(&s, es_matmul(&s, es_mul(&s, U, es_unsqueeze(&s, gout[0], -2)), Vh));
    return gin[0] ? 0 : -1;
}

em_tensor *em_linalg_svdvals(const em_tensor *A)
{
    if (check_input("linalg.svdvals", A)) return NULL;
    em_scope s = {0};
    bool need = em_ag_needed1(A);
    bool was = em_set_grad_enabled(false);
    em_tensor *u, *sv, *vh;
    int rc = svd_forward(&s, A, false, need, "linalg.svdvals", &u, &sv, &vh);
    em_set_grad_enabled(was);
    if (rc) return em_scope_drop(&s), NULL;
    em_tensor *out = em_clone(sv);
    if (!out || !need) return em_scope_drop(&s), out;
    em_node *n = em_ag_node("LinalgSvdvalsBackward", svdvals_backward, 1);
    if (!n) return em_release(out), em_scope_drop(&s), NULL;
    em_ag_input(n, 0, A);
    if (em_ag_save(n, 0, u, false) || em_ag_save(n, 1, vh, false)) out = em_ag_abandon(n, out);
    else out = em_ag_output(n, out);
    em_scope_drop(&s);
    return out;
}

/* ---- eigh and eigvalsh ------------------------------------------------------------ */

static int eigh_forward(em_scope *s, const em_tensor *A, bool upper, bool vectors, const char *name, em_tensor **L,
                        em_tensor **V)
{
    int nd = A->ndim;
    int64_t n = A->sizes[nd - 1], B = batch_count(A);
    em_tensor *a = cm_copy(s, A);
    int64_t ws[2] = {B, n};
    em_tensor *w = em_scope_keep(s, em_empty(ws, 2, A->dtype, A->storage->device));
    em_linalg_params p = {.upper = upper, .vectors = vectors};
    int *info = NULL;
    if (!a || !w || run(EM_LINALG_EIGH, a, w, NULL, NULL, &p, name, &info)) return -1;
    bool bad = false;
    for (int64_t i = 0; i < B; i++) bad |= info[i] > 0;
    free(info);
    if (bad) return em_set_error("%s: The algorithm failed to converge because the input matrix is "
                                 "ill-conditioned or has too many repeated eigenvalues", name);
    *L = em_scope_keep(s, em_reshape(w, A->sizes, nd - 1));
    *V = vectors ? cm_view(s, a, A->sizes, nd - 2) : NULL;
    return *L && (!vectors || *V) ? 0 : -1;
}

static int eigh_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *packed = em_ag_saved(n, 0);
    if (!packed) return -1;
    int nb = n->ndim - 2;
    int64_t k = n->sizes[nb];
    em_scope s = {0};
    int64_t off = 0, ls[1] = {k}, vs[2] = {k, k};
    em_tensor *L = piece(&s, packed, nb, &off, ls, 1), *V = piece(&s, packed, nb, &off, vs, 2);
    off = 0;
    em_tensor *gL = piece(&s, gout[0], nb, &off, ls, 1), *gV = piece(&s, gout[0], nb, &off, vs, 2);
    /* gA = V (diag(gL) + skew(V^T gV) / 2 / E) V^T, E_ij = L_j - L_i */
    em_tensor *VtgV = es_matmul(&s, es_mT(&s, V), gV);
    em_tensor *skew = es_scalar(&s, EM_MUL, es_sub(&s, VtgV, es_mT(&s, VtgV)), 0.5);
    em_tensor *E = es_add(&s, es_sub(&s, es_unsqueeze(&s, L, -2), es_unsqueeze(&s, L, -1)), eye_like(&s, k, L));
    em_tensor *inner = es_add(&s, es_div(&s, skew, E), diag_embed(&s, gL));
    gin[0] = em_scope_finish(&s, es_matmul(&s, V, es_matmul(&s, inner, es_mT(&s, V))));
    return gin[0] ? 0 : -1;
}

static bool parse_uplo(const char *uplo, bool *upper, const char *name)
{
    if (!uplo || !strcmp(uplo, "L") || !strcmp(uplo, "l")) *upper = false;
    else if (!strcmp(uplo, "U") || !strcmp(uplo, "u")) *upper = true;
    else return em_set_error("%s: Expected UPLO argument to be 'L' or 'U', but got %s", name, uplo), false;
    return true;
}

int em_linalg_eigh(const em_tensor *A, const char *uplo, em_tensor **L, em_tensor **V)
{
    *L = *V = NULL;
    bool upper;
    if (check_square("linalg.eigh", A) || !parse_uplo(uplo, &upper, "linalg.eigh")) return -1;
    em_scope s = {0};
    bool was = em_set_grad_enabled(false);
    em_tensor *l, *v;
    int rc = eigh_forward(&s, A, upper, true, "linalg.eigh", &l, &v);
    em_set_grad_enabled(was);
    if (rc) return em_scope_drop(&s), -1;
    if (em_ag_needed1(A)) {
        int nb = A->ndim - 2;
        em_tensor *parts[2] = {l, v};
        em_tensor *out = record_packed(&s, A, parts, 2, "LinalgEighBackward", eigh_backward, false);
        int64_t off = 0, k = A->sizes[nb], ls[1] = {k}, vs[2] = {k, k};
        l = piece(&s, out, nb, &off, ls, 1);
        v = piece(&s, out, nb, &off, vs, 2);
        if (!l || !v) return em_scope_drop(&s), -1;
    }
    return finish2(&s, l, L, v, V);
}

static int eigvalsh_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *V = em_ag_saved(n, 0);
    if (!V) return -1;
    em_scope s = {0};
    gin[0] = em_scope_finish(&s, es_matmul(&s, es_mul(&s, V, es_unsqueeze(&s, gout[0], -2)), es_mT(&s, V)));
    return gin[0] ? 0 : -1;
}

em_tensor *em_linalg_eigvalsh(const em_tensor *A, const char *uplo)
{
    bool upper;
    if (check_square("linalg.eigvalsh", A) || !parse_uplo(uplo, &upper, "linalg.eigvalsh")) return NULL;
    em_scope s = {0};
    bool need = em_ag_needed1(A);
    bool was = em_set_grad_enabled(false);
    em_tensor *l, *v;
    int rc = eigh_forward(&s, A, upper, need, "linalg.eigvalsh", &l, &v);
    em_set_grad_enabled(was);
    if (rc) return em_scope_drop(&s), NULL;
    em_tensor *out = em_clone(l);
    if (!out || !need) return em_scope_drop(&s), out;
    em_node *n = em_ag_node("LinalgEigvalshBackward", eigvalsh_backward, 1);
    if (!n) return em_release(out), em_scope_drop(&s), NULL;
    em_ag_input(n, 0, A);
    out = em_ag_save(n, 0, v, false) ? em_ag_abandon(n, out) : em_ag_output(n, out);
    em_scope_drop(&s);
    return out;
}

/* ---- pinv ----------------------------------------------------------------------- */

/* 1/x where x > tol (tol [batch..., 1]), else 0 */
static em_tensor *masked_reciprocal(em_scope *s, const em_tensor *x, const em_tensor *mag, const em_tensor *tol)
{
    em_tensor *keepm = es_binary(s, EM_GT, mag, tol);
    em_tensor *zero = x ? em_scope_keep(s, em_zeros(NULL, 0, x->dtype, x->storage->device)) : NULL;
    em_tensor *one = x ? em_scope_keep(s, em_ones(NULL, 0, x->dtype, x->storage->device)) : NULL;
    em_tensor *safe = keepm ? em_scope_keep(s, em_where(keepm, x, one)) : NULL;
    em_tensor *r = safe ? em_scope_keep(s, ei_unary(EM_RECIPROCAL, safe)) : NULL;
    return r ? em_scope_keep(s, em_where(keepm, r, zero)) : NULL;
}

/* max(atol, rtol * largest) as [batch..., 1]; atol/rtol < 0: unset
 * (rtol then eps * max(m, n) when atol is unset too, else 0) */
static em_tensor *tolerance(em_scope *s, const em_tensor *largest, const em_tensor *A, double atol, double rtol)
{
    int nd = A->ndim;
    int64_t m = A->sizes[nd - 2], n = A->sizes[nd - 1];
    double eps = A->dtype == EM_FLOAT64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
    if (rtol < 0) rtol = atol < 0 ? eps * (double)(m > n ? m : n) : 0;
    if (atol < 0) atol = 0;
    em_tensor *rt = largest ? em_scope_keep(s, ei_binary_scalar(EM_MUL, largest, rtol, false, false)) : NULL;
    em_tensor *at = rt ? em_scope_keep(s, em_full(NULL, 0, atol, A->dtype, A->storage->device)) : NULL;
    return es_binary(s, EM_MAXIMUM, rt, at);
}

static em_tensor *pinv_forward(const em_tensor *A, bool hermitian, double atol, double rtol)
{
    em_scope s = {0};
    int last = -1;
    if (hermitian) {
        em_tensor *L, *V;
        if (eigh_forward(&s, A, false, true, "linalg.pinv", &L, &V)) return em_scope_finish(&s, NULL);
        em_tensor *mag = em_scope_keep(&s, ei_unary(EM_ABS, L));
        em_tensor *mx = mag ? em_scope_keep(&s, em_amax(mag, &last, 1, true)) : NULL;
        em_tensor *tol = tolerance(&s, mx, A, atol, rtol);
        em_tensor *inv = masked_reciprocal(&s, L, mag, tol);
        return em_scope_finish(&s, es_matmul(&s, es_mul(&s, V, es_unsqueeze(&s, inv, -2)), es_mT(&s, V)));
    }
    em_tensor *U, *S, *Vh;
    if (svd_forward(&s, A, false, true, "linalg.pinv", &U, &S, &Vh)) return em_scope_finish(&s, NULL);
    em_tensor *mx = S->sizes[S->ndim - 1] > 0 ? em_scope_keep(&s, em_amax(S, &last, 1, true)) : S;
    em_tensor *tol = tolerance(&s, mx, A, atol, rtol);
    em_tensor *inv = masked_reciprocal(&s, S, S, tol);
    /* V diag(1/S) U^T */
    return em_scope_finish(&s, es_matmul(&s, es_mul(&s, es_mT(&s, Vh), es_unsqueeze(&s, inv, -2)), es_mT(&s, U)));
}

/* PyTorch's pinv_backward (constant rank) */
static int pinv_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *A = em_ag_saved(n, 0), *P = em_ag_saved(n, 1);
    if (!A || !P) return -1;
    em_scope s = {0};
    int64_t m = A->sizes[A->ndim - 2], nn = A->sizes[A->ndim - 1];
    em_tensor *Pt = es_mT(&s, P), *gt = es_mT(&s, gout[0]), *r;
    if (m <= nn) {
        em_tensor *Km = es_matmul(&s, gt, P), *KPt = es_matmul(&s, Km, Pt);
        r = es_sub(&s, KPt, es_mT(&s, es_matmul(&s, P, Km)));
        r = es_sub(&s, r, es_matmul(&s, es_matmul(&s, A, P), KPt));
        r = es_add(&s, r, es_matmul(&s, es_matmul(&s, Pt, P), es_sub(&s, gt, es_matmul(&s, Km, A))));
    } else {
        em_tensor *Km = es_matmul(&s, P, gt), *PtK = es_matmul(&s, Pt, Km);
        r = es_scalar(&s, EM_MUL, es_mT(&s, es_matmul(&s, Km, P)), -1);
        r = es_add(&s, r, es_matmul(&s, es_matmul(&s, es_sub(&s, gt, es_matmul(&s, A, Km)), P), Pt));
        r = es_add(&s, r, PtK);
        r = es_sub(&s, r, es_matmul(&s, es_matmul(&s, PtK, P), A));
    }
    gin[0] = em_scope_finish(&s, r);
    return gin[0] ? 0 : -1;
}

em_tensor *em_linalg_pinv(const em_tensor *A, double atol, double rtol, bool hermitian)
{
    if (hermitian ? check_square("linalg.pinv", A) : check_input("linalg.pinv", A)) return NULL;
    em_tensor *out = WITHOUT_GRAD(pinv_forward(A, hermitian, atol, rtol));
    if (!out || !em_ag_needed1(A)) return out;
    em_node *n = em_ag_node("LinalgPinvBackward", pinv_backward, 1);
    if (!n) return em_release(out), NULL;
    em_ag_input(n, 0, A);
    if (em_ag_save(n, 0, A, false) || em_ag_save(n, 1, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* ---- cross --------------------------------------------------------------------- */

em_tensor *em_linalg_cross(const em_tensor *a, const em_tensor *b, int dim)
{
    const char *name = "linalg.cross";
    if (em_check_same_device(name, a, b)) return NULL;
    if (a->dtype == EM_BOOL || b->dtype == EM_BOOL)
        return em_set_error("%s: expected numeric tensors, got %s and %s", name, em_dtype_name(a->dtype),
                            em_dtype_name(b->dtype)), NULL;
    if (a->ndim != b->ndim)
        return em_set_error("%s: inputs must have the same number of dimensions, got %d and %d", name, a->ndim,
                            b->ndim), NULL;
    int64_t bs[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(a->sizes, a->ndim, b->sizes, b->ndim, bs, name);
    if (nd < 0) return NULL;
    int d = em_normalize_dim(dim, nd, name);
    if (d < 0) return NULL;
    if (a->sizes[d] != 3 || b->sizes[d] != 3)
        return em_set_error("%s: inputs dimension %d must have length 3. Got %lld and %lld", name, dim < 0 ? dim : dim + 1,
                            (long long)a->sizes[d], (long long)b->sizes[d]), NULL;
    em_scope s = {0};
    int64_t three = 3, next[3] = {2, 3, 1}, prev[3] = {3, 1, 2};
    em_tensor *in = em_scope_keep(&s, em_from_host(&three, 1, EM_INT64, NULL, next));
    em_tensor *ip = em_scope_keep(&s, em_from_host(&three, 1, EM_INT64, NULL, prev));
    if (in) in = em_scope_keep(&s, em_to_device(in, a->storage->device));
    if (ip) ip = em_scope_keep(&s, em_to_device(ip, a->storage->device));
    em_tensor *ae = em_scope_keep(&s, em_expand(a, bs, nd)), *be = em_scope_keep(&s, em_expand(b, bs, nd));
    if (!in || !ip || !ae || !be) return em_scope_finish(&s, NULL);
    /* (a x b)_i = a_{i+1} b_{i+2} - a_{i+2} b_{i+1} */
    em_tensor *an = em_scope_keep(&s, em_index_select(ae, d, in)), *ap = em_scope_keep(&s, em_index_select(ae, d, ip));
    em_tensor *bn = em_scope_keep(&s, em_index_select(be, d, in)), *bp = em_scope_keep(&s, em_index_select(be, d, ip));
    return em_scope_finish(&s, es_sub(&s, es_mul(&s, an, bp), es_mul(&s, ap, bn)));
}

em_tensor *em_cross(const em_tensor *a, const em_tensor *b, int dim)
{
    EM_AUTOCAST(EM_AC_PROMOTE, em_linalg_cross(EM_AC_ARG(0), EM_AC_ARG(1), dim), a, b);
    return em_linalg_cross(a, b, dim);
}
