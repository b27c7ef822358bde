/* advindex.c — indexing with tensors per dim (PyTorch's aten::index and
 * index_put), composed from engine ops so that it runs on every backend and
 * differentiates through the ops it is made of.
 *
 * The plan: the advanced (tensor-indexed) dims are permuted to the front and
 * merged into one dim of size N; the index tensors, normalised to 0-based
 * and broadcast, are combined into one flat 1-based index into that dim.
 * Reading is then one index_select, writing one scatter (last write wins,
 * and its gradient is PyTorch's: zeros where written for self, the gradient
 * read back at every index for the values) or one index_add (accumulate). */
#include "internal.h"
#include "autograd.h"

#include <string.h>

typedef struct plan {
    em_tensor *work;            /* t, with a size-1 dim added for each 0-d bool index */
    int nadv;                   /* advanced dims of work */
    int adv[EM_MAX_DIMS];       /* which, ascending */
    int nrest;
    int rest[EM_MAX_DIMS];      /* the others, ascending */
    bool adjacent;              /* advanced dims consecutive: results go where they were */
    int64_t bshape[EM_MAX_DIMS];/* the broadcast shape of the index tensors */
    int nb;
    int64_t n;                  /* product of the advanced dims' sizes */
    em_tensor *flat;            /* 1-based int64 [numel(bshape)] into the merged dim */
} plan;

static void plan_free(plan *p)
{
    em_release(p->work);
    em_release(p->flat);
}

/* ix as 0-based int64 for a dim of `size`, after checking every value. */
static em_tensor *zero_based(const char *op, const em_tensor *ix, int64_t size, int dim)
{
    em_scope s = {0};
    em_tensor *i64 = es_to(&s, ix, EM_INT64);
    if (!i64) return NULL;
    if (em_numel(i64) > 0) {
        double lo, hi;
        em_tensor *mn = em_scope_keep(&s, em_amin(i64, NULL, 0, false));
        em_tensor *mx = em_scope_keep(&s, em_amax(i64, NULL, 0, false));
        int rc = mn && mx ? em_item(mn, &lo) | em_item(mx, &hi) : -1;
        if (rc) return em_scope_drop(&s), NULL;
        double bad = hi > (double)size ? hi : lo < -(double)size ? lo : 0;
        bool out = bad != 0;
        if (!out) {
            em_tensor *z = es_scalar_ex(&s, EM_EQ, i64, 0, true, false);
            em_tensor *any = z ? em_scope_keep(&s, em_any(z, NULL, 0, false)) : NULL;
            double v = 0;
            rc = any ? em_item(any, &v) : -1;
            if (rc) return em_scope_drop(&s), NULL;
            out = v != 0;
        }
        if (out) {
            em_scope_drop(&s);
            return em_set_error("%s: index %lld is out of range for dimension %d of size %lld (indices are "
                                "1-based; -%lld..-1 count from the end)", op, (long long)bad, dim + 1,
                                (long long)size, (long long)size), NULL;
        }
    }
    /* i - 1 for i > 0, i + size for i < 0 */
    em_tensor *pos = es_scalar_ex(&s, EM_SUB, i64, 1, true, false);
    em_tensor *neg = es_scalar_ex(&s, EM_ADD, i64, (double)size, true, false);
    em_tensor *lt = es_scalar_ex(&s, EM_LT, i64, 0, true, false);
    em_tensor *r = pos && neg && lt ? em_where(lt, neg, pos) : NULL;
    em_scope_drop(&s);
    return r;
}

/* Appends the index tensor ix for dim d of p->work to the plan's list zs,
 * whose tensors the scope s keeps. */
static int add_index(const char *op, plan *p, em_scope *s, em_tensor **zs, int d, const em_tensor *ix)
{
    em_tensor *moved = em_to_device(ix, em_dev(p->work));
    if (!moved) return -1;
    em_tensor *z = em_scope_keep(s, zero_based(op, moved, p->work->sizes[d], d));
    em_release(moved);
    if (!z) return -1;
    zs[p->nadv] = z;
    p->adv[p->nadv++] = d;
    return 0;
}

/* A bool mask of k dims at dim d: k index tensors, the columns of its nonzero();
 * s keeps them and the temporaries. */
static int add_mask(const char *op, plan *p, em_scope *s, em_tensor **zs, int d, const em_tensor *mask, int entry)
{
    int k = mask->ndim;
    bool ok = d + k <= p->work->ndim;
    for (int i = 0; ok && i < k; i++) ok = mask->sizes[i] == p->work->sizes[d + i];
    if (!ok)
        return em_set_error("%s: the shape of the mask %s (index entry %d) does not match the shape of the "
                            "indexed tensor %s at dimension %d", op, SHAPE(mask), entry + 1,
                            SHAPE(p->work), d + 1);
    em_tensor *m = em_scope_keep(s, em_to_device(mask, em_dev(p->work)));
    em_tensor *nz = m ? em_scope_keep(s, em_nonzero(m)) : NULL;
    if (!nz) return -1;
    int rc = 0;
    for (int i = 0; i < k && rc == 0; i++) {
        em_tensor *col = em_scope_keep(s, em_select(nz, 1, i));
        rc = col ? add_index(op, p, s, zs, d + i, col) : -1;
    }
    return rc;
}

static int build_plan(const char *op, const em_tensor *t, em_tensor *const *indices, int n, plan *p)
{
    memset(p, 0, sizeof *p);
    p->work = em_retain((em_tensor *)t);
    /* the index tensors zs and every temporary: at most a few per dim of
     * work (EM_MAX_DIMS), well within the scope */
    em_scope s = {0};
    em_tensor *zs[EM_MAX_DIMS] = {0};
    int d = 0, rc = 0;
    for (int e = 0; e < n && rc == 0; e++) {
        const em_tensor *ix = indices[e];
        int need = !ix ? 1 : ix->dtype == EM_BOOL ? ix->ndim : 1;
        if (ix && ix->dtype == EM_BOOL && ix->ndim == 0) {
            /* x[true] adds a dim of size 1 and keeps it, x[false] keeps none of it */
            if (p->work->ndim >= EM_MAX_DIMS) { rc = em_set_error("%s: too many dimensions", op); break; }
            em_tensor *u = em_unsqueeze(p->work, d);
            if (!u) { rc = -1; break; }
            em_release(p->work);
            p->work = u;
            double v = 0;
            if (em_item(ix, &v)) { rc = -1; break; }
            int64_t len = v != 0;
            em_tensor *one = em_scope_keep(&s, em_ones(&len, 1, EM_INT64, em_dev(p->work)));
            rc = one ? add_index(op, p, &s, zs, d, one) : -1;
            d++;
            continue;
        }
        if (d + need > p->work->ndim) {
            rc = em_set_error("%s: too many indices for a tensor of shape %s (index entry %d needs dimension "
                              "%d)", op, SHAPE(t), e + 1, d + need);
            break;
        }
        if (!ix) { d++; continue; }
        if (ix->dtype == EM_BOOL) rc = add_mask(op, p, &s, zs, d, ix, e);
        else if (ix->dtype == EM_INT64 || ix->dtype == EM_INT32) rc = add_index(op, p, &s, zs, d, ix);
        else rc = em_set_error("%s: tensors used as indices must be int64, int32 or bool, got %s (index entry %d)",
                               op, em_dtype_name(ix->dtype), e + 1);
        d += need;
    }
    if (rc == 0 && p->nadv == 0) rc = em_set_error("%s: no index tensor among the indices", op);
    /* broadcast the index tensors together */
    for (int i = 0; rc == 0 && i < p->nadv; i++) {
        if (i == 0) {
            p->nb = zs[0]->ndim;
            memcpy(p->bshape, zs[0]->sizes, sizeof(int64_t) * (size_t)p->nb);
            continue;
        }
        int64_t out[EM_MAX_DIMS];
        int nb = em_broadcast_shapes(p->bshape, p->nb, zs[i]->sizes, zs[i]->ndim, out, op);
        if (nb < 0) {
            char list[512] = "";
            for (int j = 0; j < p->nadv; j++) {
                strncat(list, SHAPE(zs[j]), sizeof list - strlen(list) - 1);
                if (j + 1 < p->nadv) strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            rc = em_set_error("%s: shape mismatch: index tensors could not be broadcast together with shapes %s",
                              op, list);
            break;
        }
        p->nb = nb;
        memcpy(p->bshape, out, sizeof(int64_t) * (size_t)nb);
    }
    if (rc == 0) {
        p->adjacent = p->adv[p->nadv - 1] - p->adv[0] == p->nadv - 1;
        for (int i = 0, j = 0; i < p->work->ndim; i++) {
            if (j < p->nadv && p->adv[j] == i) j++;
            else p->rest[p->nrest++] = i;
        }
        /* flat = 1 + sum_j z_j * stride_j, row-major over the advanced dims */
        int64_t stride = 1;
        em_tensor *acc = NULL;
        for (int j = p->nadv - 1; j >= 0 && rc == 0; j--) {
            em_tensor *term = stride == 1 ? zs[j]
                            : es_scalar_ex(&s, EM_MUL, zs[j], (double)stride, true, false);
            acc = !term ? NULL : acc ? es_add(&s, acc, term) : term;
            if (!acc) rc = -1;
            stride *= p->work->sizes[p->adv[j]];
        }
        p->n = stride;
        if (rc == 0) {
            em_tensor *one = es_scalar_ex(&s, EM_ADD, acc, 1, true, false);
            em_tensor *b = one ? em_scope_keep(&s, em_expand(one, p->bshape, p->nb)) : NULL;
            int64_t all = -1;
            p->flat = b ? em_reshape(b, &all, 1) : NULL;
            if (!p->flat) rc = -1;
        }
    }
    em_scope_drop(&s);
    if (rc) plan_free(p);
    return rc;
}

/* work permuted to [advanced..., rest...] and its sizes after merging the
 * advanced dims into one of size n: [n, rest sizes...] */
static em_tensor *permuted(const plan *p, int64_t *merged, int *nmerged)
{
    int perm[EM_MAX_DIMS], k = 0;
    for (int i = 0; i < p->nadv; i++) perm[k++] = p->adv[i];
    for (int i = 0; i < p->nrest; i++) perm[k++] = p->rest[i];
    merged[0] = p->n;
    for (int i = 0; i < p->nrest; i++) merged[1 + i] = p->work->sizes[p->rest[i]];
    *nmerged = 1 + p->nrest;
    return em_permute(p->work, perm, k);
}

/* The result layout: [bshape..., rest...], with the bshape block moved to
 * the first advanced dim's place when the advanced dims were adjacent.
 * to_result: the permutation from [bshape, rest] to it, else its inverse. */
static void result_perm(const plan *p, int *perm, bool to_result)
{
    int nd = p->nb + p->nrest, at = p->adjacent ? p->adv[0] : 0, k = 0;
    int src[EM_MAX_DIMS];
    for (int i = 0; i < at; i++) src[k++] = p->nb + i;
    for (int i = 0; i < p->nb; i++) src[k++] = i;
    for (int i = at; i < p->nrest; i++) src[k++] = p->nb + i;
    for (int i = 0; i < nd; i++) {
        if (to_result) perm[i] = src[i];
        else perm[src[i]] = i;
    }
}

static bool identity(const int *perm, int n)
{
    for (int i = 0; i < n; i++)
        if (perm[i] != i) return false;
    return true;
}

static em_tensor *permute_maybe(em_tensor *x, const int *perm, int n)
{
    if (!x || identity(perm, n)) return x;
    em_tensor *r = em_permute(x, perm, n);
    em_release(x);
    return r;
}

/* x[mask] with a mask of x's own shape, the usual form: masked_select's one
 * pass of positions, not the mask's coordinates and a flat index built from
 * them (half of x[mask]'s time). */
static bool whole_mask(const em_tensor *t, em_tensor *const *indices, int n)
{
    const em_tensor *m = n == 1 ? indices[0] : NULL;
    if (!m || m->dtype != EM_BOOL || m->ndim == 0 || m->ndim != t->ndim) return false;
    for (int i = 0; i < m->ndim; i++)
        if (m->sizes[i] != t->sizes[i]) return false;
    return true;
}

em_tensor *em_index_tensors(const em_tensor *t, em_tensor *const *indices, int n)
{
    const char *op = "index";
    if (whole_mask(t, indices, n)) {
        em_tensor *m = em_to_device(indices[0], em_dev(t));
        em_tensor *r = m ? em_masked_select(t, m) : NULL;
        em_release(m);
        return r;
    }
    plan p;
    if (build_plan(op, t, indices, n, &p)) return NULL;
    int64_t merged[EM_MAX_DIMS], sz[EM_MAX_DIMS];
    int nm, nd = 0;
    em_scope s = {0};
    em_tensor *pt = em_scope_keep(&s, permuted(&p, merged, &nm));
    em_tensor *flat = pt ? em_scope_keep(&s, em_reshape(pt, merged, nm)) : NULL;
    em_tensor *sel = flat ? em_scope_keep(&s, em_index_select(flat, 0, p.flat)) : NULL;
    for (int i = 0; i < p.nb; i++) sz[nd++] = p.bshape[i];
    for (int i = 0; i < p.nrest; i++) sz[nd++] = merged[1 + i];
    em_tensor *r = sel ? em_reshape(sel, sz, nd) : NULL;
    em_scope_drop(&s);
    int perm[EM_MAX_DIMS];
    result_perm(&p, perm, true);
    r = permute_maybe(r, perm, nd);
    plan_free(&p);
    return r;
}

/* values broadcast to the indexing result, cast to t's dtype and laid out as
 * [numel(bshape), rest...] to match the merged view. */
static em_tensor *values_flat(const char *op, const plan *p, const em_tensor *t, const em_tensor *values,
                              const int64_t *merged, int nm)
{
    int64_t res[EM_MAX_DIMS], bl[EM_MAX_DIMS];
    int nd = p->nb + p->nrest, perm[EM_MAX_DIMS], k = 0;
    for (int i = 0; i < p->nb; i++) bl[k++] = p->bshape[i];
    for (int i = 0; i < p->nrest; i++) bl[k++] = merged[1 + i];
    result_perm(p, perm, true);
    for (int i = 0; i < nd; i++) res[i] = bl[perm[i]];
    bool fits = values->ndim <= nd;
    for (int i = 0; fits && i < values->ndim; i++) {
        int64_t v = values->sizes[values->ndim - 1 - i], r = res[nd - 1 - i];
        fits = v == r || v == 1;
    }
    if (!fits)
        return em_set_error("%s: shape mismatch: values of shape %s cannot be broadcast to the indexing result "
                            "of shape %s", op, SHAPE(values), em_sizes_tmp(res, nd)), NULL;
    em_scope s = {0};
    em_tensor *v = em_scope_keep(&s, em_to_device(values, em_dev(t)));
    em_tensor *c = es_to(&s, v, t->dtype);
    em_tensor *e = c ? em_expand(c, res, nd) : NULL;
    result_perm(p, perm, false);
    e = em_scope_keep(&s, permute_maybe(e, perm, nd));
    int64_t sz[EM_MAX_DIMS];
    sz[0] = em_numel(p->flat);
    memcpy(sz + 1, merged + 1, sizeof(int64_t) * (size_t)(nm - 1));
    em_tensor *r = e ? em_reshape(e, sz, nm) : NULL;
    em_scope_drop(&s);
    return r;
}

/* The flat index as [k, 1, ...] expanded to the shape of the values. */
static em_tensor *scatter_index(const plan *p, const em_tensor *vflat)
{
    int64_t sz[EM_MAX_DIMS];
    sz[0] = vflat->sizes[0];
    for (int i = 1; i < vflat->ndim; i++) sz[i] = 1;
    em_tensor *v = em_view(p->flat, sz, vflat->ndim);
    em_tensor *e = v ? em_expand(v, vflat->sizes, vflat->ndim) : NULL;
    em_release(v);
    return e;
}

/* Writes vflat into the merged view m (in place, or as a new tensor when
 * out_of_place) at the plan's flat index. */
static em_tensor *put(const plan *p, em_tensor *m, const em_tensor *vflat, bool accumulate, bool out_of_place)
{
    if (accumulate) {
        if (out_of_place) return em_index_add(m, 0, p->flat, vflat, 1.0);
        return em_index_add_(m, 0, p->flat, vflat, 1.0) ? NULL : em_retain(m);
    }
    em_tensor *ix = scatter_index(p, vflat);
    if (!ix) return NULL;
    em_tensor *r = out_of_place ? em_scatter(m, 0, ix, vflat) : em_scatter_(m, 0, ix, vflat) ? NULL : em_retain(m);
    em_release(ix);
    return r;
}

static em_tensor *index_put_copy(const char *op, const em_tensor *t, em_tensor *const *indices, int n,
                                 const em_tensor *values, bool accumulate)
{
    plan p;
    if (build_plan(op, t, indices, n, &p)) return NULL;
    int64_t merged[EM_MAX_DIMS];
    int nm;
    em_scope s = {0};
    em_tensor *pt = em_scope_keep(&s, permuted(&p, merged, &nm));
    em_tensor *flat = pt ? em_scope_keep(&s, em_reshape(pt, merged, nm)) : NULL;
    em_tensor *vf = flat ? em_scope_keep(&s, values_flat(op, &p, t, values, merged, nm)) : NULL;
    em_tensor *out = vf ? em_scope_keep(&s, put(&p, flat, vf, accumulate, true)) : NULL;
    em_tensor *back = out ? em_reshape(out, pt->sizes, pt->ndim) : NULL;
    /* undo the permutation, then drop the dims added for 0-d bool indices */
    int inv[EM_MAX_DIMS], k = 0;
    for (int i = 0; i < p.nadv; i++) inv[p.adv[i]] = k++;
    for (int i = 0; i < p.nrest; i++) inv[p.rest[i]] = k++;
    em_tensor *r = em_scope_keep(&s, permute_maybe(back, inv, k));
    em_tensor *c = r ? em_scope_keep(&s, em_contiguous(r)) : NULL;
    r = c && c->ndim != t->ndim ? em_scope_keep(&s, em_reshape(c, t->sizes, t->ndim)) : c;
    r = em_scope_finish(&s, r);
    plan_free(&p);
    return r;
}

em_tensor *ei_index_put(const em_tensor *t, em_tensor *const *indices, int n, const em_tensor *values,
                        bool accumulate)
{
    return index_put_copy("index_put", t, indices, n, values, accumulate);
}

em_tensor *em_index_put(const em_tensor *t, em_tensor *const *indices, int n, const em_tensor *values,
                        bool accumulate)
{
    EM_AUTOCAST(EM_AC_PROMOTE, ei_index_put(EM_AC_ARG(0), indices, n, EM_AC_ARG(1), accumulate), t, values);
    return ei_index_put(t, indices, n, values, accumulate);
}

int em_index_put_(em_tensor *t, em_tensor *const *indices, int n, const em_tensor *values, bool accumulate)
{
    const char *op = "index_put_";
    if (em_ag_check_inplace(op, t, values) || em_check_writable(op, t)) return -1;
    plan p;
    if (build_plan(op, t, indices, n, &p)) return -1;
    int64_t merged[EM_MAX_DIMS];
    int nm;
    em_scope s = {0};
    em_tensor *pt = em_scope_keep(&s, permuted(&p, merged, &nm));
    /* write through a view of t where the advanced dims merge into one */
    em_tensor *flat = pt ? em_scope_keep(&s, em_view(pt, merged, nm)) : NULL;
    int rc = -1;
    if (flat) {
        em_tensor *vf = em_scope_keep(&s, values_flat(op, &p, t, values, merged, nm));
        em_tensor *out = vf ? em_scope_keep(&s, put(&p, flat, vf, accumulate, false)) : NULL;
        rc = out ? 0 : -1;
    } else if (pt) {
        /* strides that do not merge: compute the result, copy it back */
        em_clear_error();
        em_tensor *r = em_scope_keep(&s, index_put_copy(op, t, indices, n, values, accumulate));
        rc = r ? em_copy_(t, r) : -1;
    }
    if (rc == 0) em_bump_version(t);
    em_scope_drop(&s);
    plan_free(&p);
    return rc;
}
