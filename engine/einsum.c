/* einsum.c — einsum, tensordot, kron and cdist, composed from views,
 * elementwise ops, sums and bmm: they run on every backend and their
 * gradients come from the ops they are made of.
 *
 * einsum contracts its operands left to right, two at a time, each pair as
 * one bmm ([batch, left, contracted] @ [batch, contracted, right]), after
 * summing away labels no later operand or the output needs; the full outer
 * product of all operands is never built. */
#include "internal.h"
#include "autograd.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

/* Labels: 'A'..'Z' are 0..25, 'a'..'z' 26..51 (so implicit output order puts
 * capitals first, as PyTorch does); the dims an ellipsis stands for are
 * 52.., right-aligned across operands. */
#define NLETTERS 52
#define NLABELS (NLETTERS + EM_MAX_DIMS)

typedef struct operand {
    em_tensor *t;               /* owned */
    int nl;
    int label[EM_MAX_DIMS];     /* label of each dim of t */
} operand;

static int letter(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : -1; }

static char label_char(int l) { return l < 26 ? (char)('A' + l) : l < NLETTERS ? (char)('a' + l - 26) : '.'; }

/* Parses one term (an operand's or the output's subscripts) of `len` chars.
 * Writes letters (-1 for the ellipsis) into out; returns the count or -1. */
static int parse_term(const char *s, size_t len, int *out, const char *what, int which)
{
    int n = 0;
    bool ell = false;
    for (size_t i = 0; i < len; i++) {
        if (isspace((unsigned char)s[i])) continue;
        if (s[i] == '.') {
            if (ell || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.')
                return em_set_error("einsum: %s %d: an ellipsis must be written '...' and appear at most once",
                                    what, which);
            ell = true;
            i += 2;
            if (n >= EM_MAX_DIMS) return em_set_error("einsum: %s %d has too many subscripts", what, which);
            out[n++] = -1;
            continue;
        }
        int l = letter(s[i]);
        if (l < 0)
            return em_set_error("einsum: invalid subscript '%c' in %s %d (subscripts are letters a-z, A-Z)", s[i],
                                what, which);
        if (n >= EM_MAX_DIMS) return em_set_error("einsum: %s %d has too many subscripts", what, which);
        out[n++] = l;
    }
    return n;
}

static void release_ops(operand *ops, int n)
{
    for (int i = 0; i < n; i++) em_release(ops[i].t);
}

/* Replaces t by its diagonal over dims a < b (the diagonal becomes the last
 * dim), keeping the labels in step. */
static int take_diagonal(operand *o, int a, int b)
{
    em_tensor *d = em_diagonal_ex(o->t, 0, a, b);
    if (!d) return -1;
    em_release(o->t);
    o->t = d;
    int l = o->label[a], k = 0;
    for (int i = 0; i < o->nl; i++)
        if (i != a && i != b) o->label[k++] = o->label[i];
    o->label[k++] = l;
    o->nl = k;
    return 0;
}

/* Sums the dims of o whose labels are set in drop. */
static int sum_labels(operand *o, const bool *drop)
{
    int dims[EM_MAX_DIMS], nd = 0, k = 0;
    for (int i = 0; i < o->nl; i++) {
        if (drop[o->label[i]]) dims[nd++] = i;
        else o->label[k++] = o->label[i];
    }
    if (nd == 0) return 0;
    em_tensor *s = ei_sum(o->t, dims, nd, false);
    if (!s) return -1;
    em_release(o->t);
    o->t = s;
    o->nl = k;
    return 0;
}

static int find(const operand *o, int l)
{
    for (int i = 0; i < o->nl; i++)
        if (o->label[i] == l) return i;
    return -1;
}

/* x permuted to the label order `order` (every label of x, in a new order),
 * with sizes from `size` (size-1 dims broadcast), reshaped to `shape`. */
static em_tensor *arrange(const operand *o, const int *order, int n, const int64_t *size, const int64_t *shape,
                          int nshape)
{
    int perm[EM_MAX_DIMS];
    int64_t full[EM_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        perm[i] = find(o, order[i]);
        full[i] = size[order[i]];
    }
    em_scope s = {0};
    em_tensor *p = em_scope_keep(&s, em_permute(o->t, perm, n));
    em_tensor *e = p ? em_scope_keep(&s, em_expand(p, full, n)) : NULL;
    em_tensor *r = e ? em_reshape(e, shape, nshape) : NULL;
    em_scope_drop(&s);
    return r;
}

/* a and b contracted over the labels in `sum` (labels of both); the labels
 * of a only, of b only and of both but not summed are kept. */
static int contract(operand *a, operand *b, const bool *sum, const int64_t *size, operand *out)
{
    int batch[EM_MAX_DIMS], left[EM_MAX_DIMS], right[EM_MAX_DIMS], red[EM_MAX_DIMS];
    int nb = 0, nl = 0, nr = 0, nk = 0;
    int64_t B = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < a->nl; i++) {
        int l = a->label[i];
        if (find(b, l) < 0) { left[nl++] = l; M *= size[l]; }
        else if (sum[l]) { red[nk++] = l; K *= size[l]; }
        else { batch[nb++] = l; B *= size[l]; }
    }
    for (int i = 0; i < b->nl; i++) {
        int l = b->label[i];
        if (find(a, l) < 0) { right[nr++] = l; N *= size[l]; }
    }
    int oa[EM_MAX_DIMS], ob[EM_MAX_DIMS], k = 0;
    for (int i = 0; i < nb; i++) oa[k++] = batch[i];
    for (int i = 0; i < nl; i++) oa[k++] = left[i];
    for (int i = 0; i < nk; i++) oa[k++] = red[i];
    k = 0;
    for (int i = 0; i < nb; i++) ob[k++] = batch[i];
    for (int i = 0; i < nk; i++) ob[k++] = red[i];
    for (int i = 0; i < nr; i++) ob[k++] = right[i];
    em_scope s = {0};
    em_tensor *x = em_scope_keep(&s, arrange(a, oa, a->nl, size, (int64_t[]){B, M, K}, 3));
    em_tensor *y = x ? em_scope_keep(&s, arrange(b, ob, b->nl, size, (int64_t[]){B, K, N}, 3)) : NULL;
    em_tensor *z = y ? em_scope_keep(&s, ei_bmm(x, y)) : NULL;
    if (!z) return em_scope_drop(&s), -1;
    int64_t shape[EM_MAX_DIMS];
    int n = 0;
    if (nb + nl + nr > EM_MAX_DIMS) {
        em_scope_drop(&s);
        return em_set_error("einsum: the intermediate result would have more than %d dimensions", EM_MAX_DIMS);
    }
    for (int i = 0; i < nb; i++) { out->label[n] = batch[i]; shape[n++] = size[batch[i]]; }
    for (int i = 0; i < nl; i++) { out->label[n] = left[i]; shape[n++] = size[left[i]]; }
    for (int i = 0; i < nr; i++) { out->label[n] = right[i]; shape[n++] = size[right[i]]; }
    out->nl = n;
    out->t = em_reshape(z, shape, n);
    em_scope_drop(&s);
    return out->t ? 0 : -1;
}

/* Parses the operands' terms, expands ellipses into labels and takes the
 * diagonals of repeated labels. Returns the ellipsis width or -1. */
static int setup_operands(const char *eq, const char *arrow, em_tensor *const *ts, int n, operand *ops,
                          int64_t *size, int *count)
{
    const char *p = eq;
    int width = 0;
    for (int i = 0; i < n; i++) {
        const char *end = p;
        while (*end && *end != ',' && end != arrow) end++;
        if (i < n - 1 && *end != ',')
            return em_set_error("einsum: the equation has %d operand terms but %d operands were given", i + 1, n);
        if (i == n - 1 && *end == ',')
            return em_set_error("einsum: the equation has more operand terms than the %d operands given", n);
        int raw[EM_MAX_DIMS];
        int nr = parse_term(p, (size_t)(end - p), raw, "operand", i + 1);
        if (nr < 0) return -1;
        const em_tensor *t = ts[i];
        bool has_ell = false;
        for (int j = 0; j < nr; j++) has_ell |= raw[j] < 0;
        int ew = t->ndim - (nr - has_ell);
        if ((!has_ell && ew != 0) || ew < 0)
            return em_set_error("einsum: operand %d has %d dimensions (%s) but its subscripts '%.*s' name %d",
                                i + 1, t->ndim, SHAPE(t), (int)(end - p), p, nr - has_ell);
        if (ew > width) width = ew;
        ops[i].t = em_retain((em_tensor *)t);
        ops[i].nl = 0;
        for (int j = 0; j < nr; j++) {
            if (raw[j] >= 0) { ops[i].label[ops[i].nl++] = raw[j]; continue; }
            /* ellipsis dims are right-aligned: the last one is label NLETTERS + EM_MAX_DIMS - 1 */
            for (int e = 0; e < ew; e++) ops[i].label[ops[i].nl++] = NLABELS - ew + e;
        }
        p = *end == ',' ? end + 1 : end;
    }
    /* occurrences in the equation (implicit output: the labels used once) */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < ops[i].nl; j++) count[ops[i].label[j]]++;
    /* repeated labels: the diagonal */
    for (int i = 0; i < n; i++) {
        for (int a = 0; a < ops[i].nl; a++) {
            for (int b = a + 1; b < ops[i].nl; b++) {
                if (ops[i].label[a] != ops[i].label[b]) continue;
                if (ops[i].t->sizes[a] != ops[i].t->sizes[b])
                    return em_set_error("einsum: subscript '%c' is repeated in operand %d for dimensions of "
                                        "sizes %lld and %lld", label_char(ops[i].label[a]), i + 1,
                                        (long long)ops[i].t->sizes[a], (long long)ops[i].t->sizes[b]);
                if (take_diagonal(&ops[i], a, b)) return -1;
                a = -1;   /* labels moved: scan again */
                break;
            }
        }
    }
    /* each label's size; 1 broadcasts */
    for (int l = 0; l < NLABELS; l++) size[l] = -1;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < ops[i].nl; j++) {
            int l = ops[i].label[j];
            int64_t s = ops[i].t->sizes[j];
            if (size[l] < 0 || size[l] == 1) size[l] = s;
            else if (s != 1 && s != size[l]) {
                if (l >= NLETTERS)
                    return em_set_error("einsum: the dimensions the ellipsis stands for do not broadcast: "
                                        "operand %d %s", i + 1, SHAPE(ops[i].t));
                return em_set_error("einsum: subscript '%c' has size %lld in operand %d but %lld elsewhere",
                                    label_char(l), (long long)s, i + 1, (long long)size[l]);
            }
        }
    }
    return width;
}

/* The output labels: explicit after "->", else the labels used once, in
 * order, after the ellipsis dims. */
static int output_labels(const char *arrow, const int *count, int width, const int64_t *size, int *out)
{
    int no = 0;
    if (arrow) {
        int raw[EM_MAX_DIMS];
        int nr = parse_term(arrow + 2, strlen(arrow + 2), raw, "output", 1);
        if (nr < 0) return -1;
        bool seen[NLABELS] = {false};
        for (int j = 0; j < nr; j++) {
            if (raw[j] < 0) {
                for (int e = 0; e < width; e++) out[no++] = NLABELS - width + e;
                continue;
            }
            if (seen[raw[j]]) return em_set_error("einsum: output subscript '%c' appears more than once", label_char(raw[j]));
            seen[raw[j]] = true;
            if (size[raw[j]] < 0)
                return em_set_error("einsum: output subscript '%c' does not appear in any operand", label_char(raw[j]));
            if (no >= EM_MAX_DIMS) return em_set_error("einsum: too many output dimensions");
            out[no++] = raw[j];
        }
        return no;
    }
    for (int e = 0; e < width; e++) out[no++] = NLABELS - width + e;
    for (int l = 0; l < NLETTERS; l++)
        if (count[l] == 1) out[no++] = l;
    return no;
}

em_tensor *ei_einsum(const char *equation, em_tensor *const *operands, int n)
{
    if (n < 1) return em_set_error("einsum: expected at least one operand"), NULL;
    for (int i = 1; i < n; i++) {
        if (operands[i]->dtype != operands[0]->dtype)
            return em_set_error("einsum: operands must have the same dtype, got %s (operand 1) and %s (operand %d)",
                                em_dtype_name(operands[0]->dtype), em_dtype_name(operands[i]->dtype), i + 1), NULL;
        if (em_check_same_device("einsum", operands[0], operands[i])) return NULL;
    }
    const char *arrow = strstr(equation, "->");
    operand ops[64];
    if (n > 64) return em_set_error("einsum: at most 64 operands, got %d", n), NULL;
    memset(ops, 0, sizeof(operand) * (size_t)n);
    int64_t size[NLABELS];
    int count[NLABELS] = {0};
    int width = setup_operands(equation, arrow, operands, n, ops, size, count);
    int out[EM_MAX_DIMS], no = width < 0 ? -1 : output_labels(arrow, count, width, size, out);
    if (no < 0) { release_ops(ops, n); return NULL; }
    bool in_out[NLABELS] = {false};
    for (int j = 0; j < no; j++) in_out[out[j]] = true;
    /* last[l]: the last operand that has label l */
    int last[NLABELS];
    for (int l = 0; l < NLABELS; l++) last[l] = -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < ops[i].nl; j++) last[ops[i].label[j]] = i;
    operand acc = ops[0];
    ops[0].t = NULL;
    int rc = 0;
    for (int i = 0; i <= n - 1 && rc == 0; i++) {
        /* labels needed neither by the output nor after operand i: summed now */
        bool drop[NLABELS] = {false};
        for (int l = 0; l < NLABELS; l++) drop[l] = !in_out[l] && last[l] <= i;
        if (i == 0) { rc = sum_labels(&acc, drop); continue; }
        /* labels only in the new operand that no one else needs: sum first */
        bool own[NLABELS] = {false};
        for (int j = 0; j < ops[i].nl; j++) own[ops[i].label[j]] = drop[ops[i].label[j]] && find(&acc, ops[i].label[j]) < 0;
        rc = sum_labels(&ops[i], own);
        if (rc) break;
        operand next = {0};
        rc = contract(&acc, &ops[i], drop, size, &next);
        em_release(acc.t);
        acc = next;
    }
    em_tensor *r = NULL;
    if (rc == 0) {
        /* the output order; label sizes broadcast where an operand had 1 */
        int perm[EM_MAX_DIMS];
        int64_t full[EM_MAX_DIMS];
        bool ok = acc.nl == no;
        for (int j = 0; ok && j < no; j++) {
            perm[j] = find(&acc, out[j]);
            full[j] = size[out[j]];
            ok = perm[j] >= 0;
        }
        if (!ok) {
            em_set_error("einsum: internal error: labels of the result do not match the output");
        } else {
            em_tensor *p = em_permute(acc.t, perm, no);
            r = p ? em_expand(p, full, no) : NULL;
            em_release(p);
            /* like PyTorch, a view of a lone operand where no sum was needed
             * ("ji", "ii->i"), but never the operand's own header ("ij->ij") */
            if (r && r == operands[0]) {
                em_tensor *c = em_clone(r);
                em_release(r);
                r = c;
            }
        }
    }
    em_release(acc.t);
    release_ops(ops, n);
    return r;
}

em_tensor *em_einsum(const char *equation, em_tensor *const *operands, int n)
{
    EM_AUTOCAST_LIST(EM_AC_LOWER, ei_einsum(equation, EM_AC_LIST, n), operands, n);
    return ei_einsum(equation, operands, n);
}

/* ---- tensordot ------------------------------------------------------------ */

em_tensor *ei_tensordot(const em_tensor *a, const em_tensor *b, const int *dims_a, const int *dims_b, int ndims)
{
    const char *op = "tensordot";
    if (a->dtype != b->dtype)
        return em_set_error("%s: operands must have the same dtype, got %s and %s", op, em_dtype_name(a->dtype),
                            em_dtype_name(b->dtype)), NULL;
    if (em_check_same_device(op, a, b)) return NULL;
    if (ndims > a->ndim || ndims > b->ndim)
        return em_set_error("%s: %d contracted dimensions for tensors %s and %s", op, ndims, SHAPE(a), SHAPE(b)), NULL;
    bool ca[EM_MAX_DIMS] = {false}, cb[EM_MAX_DIMS] = {false};
    int pa[EM_MAX_DIMS], pb[EM_MAX_DIMS], ka = 0, kb = 0;
    int64_t K = 1, M = 1, N = 1, shape[EM_MAX_DIMS];
    int ns = 0;
    for (int i = 0; i < ndims; i++) {
        int da = em_normalize_dim(dims_a[i], a->ndim, op), db = em_normalize_dim(dims_b[i], b->ndim, op);
        if (da < 0 || db < 0) return NULL;
        if (ca[da] || cb[db]) return em_set_error("%s: a dimension is contracted twice", op), NULL;
        if (a->sizes[da] != b->sizes[db])
            return em_set_error("%s: contracted dimensions %d of %s and %d of %s differ in size (%lld vs %lld)", op,
                                da + 1, SHAPE(a), db + 1, SHAPE(b), (long long)a->sizes[da],
                                (long long)b->sizes[db]), NULL;
        ca[da] = cb[db] = true;
        K *= a->sizes[da];
    }
    for (int i = 0; i < a->ndim; i++)
        if (!ca[i]) { pa[ka++] = i; M *= a->sizes[i]; shape[ns++] = a->sizes[i]; }
    for (int i = 0; i < ndims; i++) pa[ka++] = em_normalize_dim(dims_a[i], a->ndim, op);
    for (int i = 0; i < ndims; i++) pb[kb++] = em_normalize_dim(dims_b[i], b->ndim, op);
    for (int i = 0; i < b->ndim; i++)
        if (!cb[i]) { pb[kb++] = i; N *= b->sizes[i]; shape[ns++] = b->sizes[i]; }
    if (ns > EM_MAX_DIMS) return em_set_error("%s: the result would have more than %d dimensions", op, EM_MAX_DIMS), NULL;
    em_scope s = {0};
    em_tensor *x = em_scope_keep(&s, em_permute(a, pa, ka)), *y = em_scope_keep(&s, em_permute(b, pb, kb));
    em_tensor *x2 = x ? em_scope_keep(&s, em_reshape(x, (int64_t[]){M, K}, 2)) : NULL;
    em_tensor *y2 = y ? em_scope_keep(&s, em_reshape(y, (int64_t[]){K, N}, 2)) : NULL;
    em_tensor *z = x2 && y2 ? em_scope_keep(&s, ei_mm(x2, y2)) : NULL;
    em_tensor *r = z ? em_reshape(z, shape, ns) : NULL;
    em_scope_drop(&s);
    return r;
}

em_tensor *em_tensordot(const em_tensor *a, const em_tensor *b, const int *dims_a, const int *dims_b, int ndims)
{
    EM_AUTOCAST(EM_AC_PROMOTE_CUDA_LOWER_CPU, ei_tensordot(EM_AC_ARG(0), EM_AC_ARG(1), dims_a, dims_b, ndims), a, b);
    return ei_tensordot(a, b, dims_a, dims_b, ndims);
}

/* ---- kron ----------------------------------------------------------------- */

em_tensor *em_kron(const em_tensor *a, const em_tensor *b)
{
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (2 * nd > EM_MAX_DIMS)
        return em_set_error("kron: %s and %s have too many dimensions", SHAPE(a), SHAPE(b)), NULL;
    /* a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...]: [a0, b0, a1, b1, ...] */
    int64_t sa[EM_MAX_DIMS], sb[EM_MAX_DIMS], out[EM_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
        int64_t x = ia >= 0 ? a->sizes[ia] : 1, y = ib >= 0 ? b->sizes[ib] : 1;
        sa[2 * i] = x; sa[2 * i + 1] = 1;
        sb[2 * i] = 1; sb[2 * i + 1] = y;
        out[i] = x * y;
    }
    em_scope s = {0};
    em_tensor *x = em_scope_keep(&s, em_reshape(a, sa, 2 * nd)), *y = em_scope_keep(&s, em_reshape(b, sb, 2 * nd));
    em_tensor *z = es_mul(&s, x, y);
    em_tensor *r = z ? em_reshape(z, out, nd) : NULL;
    em_scope_drop(&s);
    return r;
}

/* ---- cdist ------------------------------------------------------------------ */

static em_tensor *sum_last(const em_tensor *t, bool keepdim)
{
    int d = t->ndim - 1;
    return ei_sum(t, &d, 1, keepdim);
}

/* ||x1_p - x2_r||^2 through x1 @ x2^T, as PyTorch does for p = 2 when P or
 * R exceeds 25 (clamped at 0 against rounding). */
static em_tensor *sq_dist_mm(const em_tensor *x1, const em_tensor *x2)
{
    em_scope s = {0};
    em_tensor *q1 = es_mul(&s, x1, x1), *q2 = es_mul(&s, x2, x2);
    em_tensor *a2 = q1 ? em_scope_keep(&s, sum_last(q1, true)) : NULL;
    em_tensor *b2 = q2 ? em_scope_keep(&s, sum_last(q2, true)) : NULL;
    em_tensor *b2t = es_mT(&s, b2);
    em_tensor *bt = es_mT(&s, x2);
    em_tensor *ab = es_matmul(&s, x1, bt);
    em_tensor *m2 = es_scalar(&s, EM_MUL, ab, -2);
    em_tensor *s1 = es_add(&s, m2, a2);
    em_tensor *s2 = es_add(&s, s1, b2t);
    double zero = 0;
    em_tensor *r = s2 ? em_clamp(s2, &zero, NULL) : NULL;
    em_scope_drop(&s);
    return r;
}

/* sum over the last dim of |d|^p, rooted; p = 0: the count of non-zeros;
 * p = inf: the largest |d| */
static em_tensor *norm_last(const em_tensor *d, double p)
{
    em_scope sc = {0};
    if (p == 0) {
        em_tensor *nz = es_scalar(&sc, EM_NE, d, 0);
        em_tensor *f = es_to(&sc, nz, d->dtype);
        em_tensor *r = f ? sum_last(f, false) : NULL;
        em_scope_drop(&sc);
        return r;
    }
    em_tensor *a = p == 2 ? NULL : es_unary(&sc, EM_ABS, d);
    if (p != 2 && !a) return NULL;
    if (isinf(p)) {
        int last = d->ndim - 1;
        em_tensor *r = em_amax(a, &last, 1, false);
        em_scope_drop(&sc);
        return r;
    }
    em_tensor *pw = p == 1 ? a : em_scope_keep(&sc, p == 2 ? ei_binary(EM_MUL, d, d) : ei_pow_scalar(a, p));
    em_tensor *s = pw ? em_scope_keep(&sc, sum_last(pw, false)) : NULL;
    em_tensor *r = !s || p == 1 ? s : em_scope_keep(&sc, em_root(s, p));
    return em_scope_finish(&sc, r);
}

em_tensor *ei_cdist(const em_tensor *x1, const em_tensor *x2, double p)
{
    const char *op = "cdist";
    if (x1->ndim < 2 || x2->ndim < 2)
        return em_set_error("%s: expected inputs of at least 2 dimensions [..., P, M] and [..., R, M], got %s and %s",
                            op, SHAPE(x1), SHAPE(x2)), NULL;
    if (x1->sizes[x1->ndim - 1] != x2->sizes[x2->ndim - 1])
        return em_set_error("%s: %s and %s must have the same size in the last dimension", op, SHAPE(x1),
                            SHAPE(x2)), NULL;
    if (!em_dtype_is_float(x1->dtype) || !em_dtype_is_float(x2->dtype))
        return em_set_error("%s: expected floating-point inputs, got %s and %s", op, em_dtype_name(x1->dtype),
                            em_dtype_name(x2->dtype)), NULL;
    if (!(p >= 0)) return em_set_error("%s: p must be non-negative, got %g", op, p), NULL;
    if (em_check_same_device(op, x1, x2)) return NULL;
    int64_t P = x1->sizes[x1->ndim - 2], R = x2->sizes[x2->ndim - 2];
    if (p == 2 && (P > 25 || R > 25)) {
        em_tensor *sq = sq_dist_mm(x1, x2);
        em_tensor *r = sq ? em_root(sq, 2) : NULL;
        em_release(sq);
        return r;
    }
    /* [..., P, 1, M] - [..., 1, R, M] */
    em_scope s = {0};
    em_tensor *a = es_unsqueeze(&s, x1, -2), *b = es_unsqueeze(&s, x2, -3);
    em_tensor *d = es_sub(&s, a, b);
    em_tensor *r = d ? norm_last(d, p) : NULL;
    em_scope_drop(&s);
    return r;
}

em_tensor *em_cdist(const em_tensor *x1, const em_tensor *x2, double p)
{
    EM_AUTOCAST(EM_AC_FP32, ei_cdist(EM_AC_ARG(0), EM_AC_ARG(1), p), x1, x2);
    return ei_cdist(x1, x2, p);
}
