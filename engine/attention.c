/* attention.c — scaled_dot_product_attention on the backend's fused
 * attention family (backend.h).
 *
 * The op broadcasts the batch dims of q, k and v, flattens them into B
 * independent problems [B, T, D] (recorded views and copies, so their
 * gradients are summed back by the ops that made them) and records one node
 * whose inputs are those flattened tensors. A mask stays a view: a bool
 * mask becomes an additive 0 / -inf tensor of its own (un-broadcast) shape
 * and is then expanded with stride 0, so a [Tq, Tk] or [B, 1, 1, Tk] mask
 * is never materialised per head. The kernel takes one batch stride for the
 * mask; when the mask's batch dims cannot be merged into one (a padding
 * mask [N, 1, 1, Tk] over N x H problems), the kernel is called once per
 * index of the outer dims that do not merge.
 *
 * The node's first-order backward is the backend's fused kernel, which
 * recomputes the probabilities from the saved log-sum-exp. When the
 * backward is itself recorded (create_graph), the gradient is composed from
 * matmul and softmax instead, so gradients of gradients are exact (the
 * dropout mask regenerated from the same Philox counters).
 *
 * The node saves q, k, v, the output, the log-sum-exp and (when given) the
 * mask, in its slots SAVED_Q ... SAVED_MASK. */
#include "autograd.h"

#include <math.h>
#include <string.h>

static const char *OP = "scaled_dot_product_attention";

/* the dtype of the additive mask the kernels take (backend.h): q's, float32
 * for the low-precision dtypes */
static em_dtype mask_dtype(const em_tensor *q)
{
    return q->dtype == EM_FLOAT16 || q->dtype == EM_BFLOAT16 ? EM_FLOAT32 : q->dtype;
}

/* ---- calling the kernels, chunked where the mask's batch dims do not merge ------------- */

typedef struct chunking {
    int64_t B, Bi, P;                   /* problems; per chunk; chunks (B = Bi P) */
    int nouter;                         /* the outer (unmerged) batch dims of the mask */
    int64_t osizes[EM_MAX_DIMS], ostrides[EM_MAX_DIMS];
    int64_t isb, sq, sk;                /* the mask's strides in a chunk [Bi, Tq, Tk] */
    const em_tensor *mask;              /* [batch..., Tq, Tk], expanded; NULL: none */
} chunking;

/* Splits the batch dims of mask (nb of them, then Tq, Tk) into outer dims
 * and a run of inner dims that merge into one stride. */
static void plan_chunks(chunking *c, const em_tensor *mask, int64_t B)
{
    memset(c, 0, sizeof *c);
    c->B = B;
    c->Bi = B;
    c->P = 1;
    c->mask = mask;
    if (!mask) return;
    int nb = mask->ndim - 2;
    c->sq = mask->strides[nb];
    c->sk = mask->strides[nb + 1];
    int64_t bi = 1, isb = 0;
    int d = nb - 1;
    for (; d >= 0; d--) {
        int64_t n = mask->sizes[d], s = mask->strides[d];
        if (n == 1) continue;
        if (bi == 1) { bi = n; isb = s; continue; }
        if (s != isb * bi) break;
        bi *= n;
    }
    c->Bi = bi;
    c->isb = isb;
    c->nouter = d + 1;
    c->P = 1;
    for (int i = 0; i < c->nouter; i++) {
        c->osizes[i] = mask->sizes[i];
        c->ostrides[i] = mask->strides[i];
        c->P *= mask->sizes[i];
    }
}

/* the mask of chunk o as [Bi, Tq, Tk] (new reference) */
static em_tensor *chunk_mask(const chunking *c, int64_t o)
{
    const em_tensor *m = c->mask;
    int64_t off = m->offset;
    for (int d = c->nouter - 1; d >= 0; d--) {
        off += (o % c->osizes[d]) * c->ostrides[d];
        o /= c->osizes[d];
    }
    int nb = m->ndim - 2;
    int64_t sizes[3] = {c->Bi, m->sizes[nb], m->sizes[nb + 1]}, strides[3] = {c->isb, c->sq, c->sk};
    return em_as_strided(m, sizes, strides, 3, off);
}

static em_tensor *rows(const em_tensor *t, const chunking *c, int64_t o)
{
    return c->P == 1 ? em_retain((em_tensor *)t) : em_narrow(t, 0, o * c->Bi, c->Bi);
}

/* the kernel's dropout counters for chunk o (its positions start at o Bi Tq Tk, a multiple of 4) */
static em_attn_params chunk_params(const em_attn_params *p, const chunking *c, int64_t o, int64_t TqTk)
{
    em_attn_params q = *p;
    q.offset = p->offset + (uint64_t)(o * c->Bi * TqTk / 4);
    return q;
}

/* Chunk o's views of ts[0..n-1] (NULL stays NULL) into views, and of the
 * mask into *mask, kept in s; 0, or -1 when one could not be made. */
static int chunk_views(em_scope *s, const chunking *c, int64_t o, const em_tensor *const *ts, int n,
                       em_tensor **views, em_tensor **mask)
{
    *mask = c->mask ? em_scope_keep(s, chunk_mask(c, o)) : NULL;
    int rc = c->mask && !*mask ? -1 : 0;
    for (int i = 0; i < n; i++) {
        views[i] = ts[i] && rc == 0 ? em_scope_keep(s, rows(ts[i], c, o)) : NULL;
        if (ts[i] && !views[i]) rc = -1;
    }
    return rc;
}

static int run_forward(const chunking *c, em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k,
                       const em_tensor *v, const em_attn_params *p)
{
    const em_backend *be = em_be(q);
    int64_t TqTk = q->sizes[1] * k->sizes[1];
    const em_tensor *ts[5] = {out, lse, q, k, v};
    int rc = 0;
    for (int64_t o = 0; o < c->P && rc == 0; o++) {
        em_scope s = {0};
        em_tensor *x[5], *m;
        em_attn_params cp = chunk_params(p, c, o, TqTk);
        rc = chunk_views(&s, c, o, ts, 5, x, &m) ? -1 : be->attention(x[0], x[1], x[2], x[3], x[4], m, &cp);
        em_scope_drop(&s);
    }
    return rc;
}

static int run_backward(const chunking *c, em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *go,
                        const em_tensor *q, const em_tensor *k, const em_tensor *v, const em_tensor *out,
                        const em_tensor *lse, const em_attn_params *p)
{
    const em_backend *be = em_be(q);
    int64_t TqTk = q->sizes[1] * k->sizes[1];
    const em_tensor *ts[9] = {gq, gk, gv, go, q, k, v, out, lse};
    int rc = 0;
    for (int64_t o = 0; o < c->P && rc == 0; o++) {
        em_scope s = {0};
        em_tensor *x[9], *m;
        em_attn_params cp = chunk_params(p, c, o, TqTk);
        rc = chunk_views(&s, c, o, ts, 9, x, &m)
                 ? -1 : be->attention_backward(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], m, &cp);
        em_scope_drop(&s);
    }
    return rc;
}

/* ---- the composed gradient (create_graph) ------------------------------------------------- */

/* bool [Tq, Tk], true where key j is hidden from query i (j > i) */
static em_tensor *causal_hidden(int64_t Tq, int64_t Tk, em_device dev)
{
    int64_t col[2] = {Tq, 1};
    em_scope s = {0};
    em_tensor *i = em_scope_keep(&s, em_arange(0, (double)Tq, 1, EM_INT64, dev));
    em_tensor *j = em_scope_keep(&s, em_arange(0, (double)Tk, 1, EM_INT64, dev));
    em_tensor *ic = i ? em_scope_keep(&s, em_reshape(i, col, 2)) : NULL;
    return em_scope_finish(&s, es_binary(&s, EM_GT, j, ic));
}

/* keep / (1 - p) as [B, Tq, Tk] of dtype d, from the counters the forward used */
static em_tensor *dropout_scale(const em_attn_params *p, int64_t B, int64_t Tq, int64_t Tk, em_dtype d,
                                em_device dev)
{
    int64_t sz[3] = {B, Tq, Tk};
    em_scope s = {0};
    em_tensor *u = em_scope_keep(&s, em_empty(sz, 3, d, dev));
    if (u && B * Tq * Tk > 0 && em_be(u)->random(EM_RAND_UNIFORM, u, p->seed, p->offset, p->dev_state, 0.0, 1.0))
        u = NULL;
    em_tensor *kf = es_to(&s, es_scalar(&s, EM_LT, u, 1 - p->dropout_p), d);
    return em_scope_finish(&s, es_scalar(&s, EM_MUL, kf, 1 / (1 - p->dropout_p)));
}

static int composed_backward(em_node *n, const em_attn_params *p, const em_tensor *q, const em_tensor *k,
                             const em_tensor *v, const em_tensor *mask, const em_tensor *go, em_tensor **gin)
{
    int64_t B = q->sizes[0], Tq = q->sizes[1], Tk = k->sizes[1];
    int last = 2;
    em_scope s = {0};
    em_tensor *kt = em_scope_keep(&s, em_transpose(k, 1, 2));
    em_tensor *S = es_scalar(&s, EM_MUL, es_matmul(&s, q, kt), p->scale);
    em_tensor *sm = !S ? NULL : mask ? es_add(&s, S, mask) : S;
    em_tensor *hid = sm && p->causal ? em_scope_keep(&s, WITHOUT_GRAD(causal_hidden(Tq, Tk, em_dev(q)))) : NULL;
    em_tensor *sc = !sm ? NULL : p->causal ? (hid ? em_scope_keep(&s, em_masked_fill(sm, hid, -INFINITY)) : NULL) : sm;
    em_tensor *P = sc ? em_scope_keep(&s, ei_softmax(sc, last)) : NULL;
    em_tensor *keep = P && p->dropout_p > 0
                          ? em_scope_keep(&s, WITHOUT_GRAD(dropout_scale(p, B, Tq, Tk, q->dtype, em_dev(q)))) : NULL;
    bool ok = P && (p->dropout_p == 0 || keep);
    em_tensor *Pd = !ok ? NULL : keep ? es_mul(&s, P, keep) : P;
    em_tensor *vt = Pd ? em_scope_keep(&s, em_transpose(v, 1, 2)) : NULL;
    em_tensor *dPd = es_matmul(&s, go, vt);
    em_tensor *dP = !dPd ? NULL : keep ? es_mul(&s, dPd, keep) : dPd;
    em_tensor *rs = es_sum(&s, es_mul(&s, P, dP), &last, 1, true);
    em_tensor *dS = es_mul(&s, P, es_sub(&s, dP, rs));
    int rc = dS ? 0 : -1;
    if (rc == 0 && em_ag_wants(n, 0)) {
        em_tensor *a = es_matmul(&s, dS, k);
        gin[0] = a ? ei_binary_scalar(EM_MUL, a, p->scale, false, false) : NULL;
        if (!gin[0]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 1)) {
        em_tensor *dSt = em_scope_keep(&s, em_transpose(dS, 1, 2));
        em_tensor *a = es_matmul(&s, dSt, q);
        gin[1] = a ? ei_binary_scalar(EM_MUL, a, p->scale, false, false) : NULL;
        if (!gin[1]) rc = -1;
    }
    if (rc == 0 && em_ag_wants(n, 2)) {
        em_tensor *Pt = em_scope_keep(&s, em_transpose(Pd, 1, 2));
        gin[2] = Pt ? ei_matmul(Pt, go) : NULL;
        if (!gin[2]) rc = -1;
    }
    em_scope_drop(&s);
    return rc;
}

/* ---- the node ------------------------------------------------------------------------------ */

enum { IN_Q, IN_K, IN_V };
enum { SAVED_Q, SAVED_K, SAVED_V, SAVED_OUT, SAVED_LSE, SAVED_MASK };

static em_attn_params node_params(const em_node *n) { return n->p.attn.params; }

/* the saved mask, expanded again to [batch..., Tq, Tk] (its shape is in n->sizes) */
static em_tensor *saved_mask(em_node *n)
{
    if (!n->p.attn.has_mask) return NULL;
    em_tensor *m = em_ag_saved(n, SAVED_MASK);
    return m ? em_retain(m) : NULL;
}

static int attention_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_attn_params p = node_params(n);
    em_tensor *q = em_ag_saved(n, SAVED_Q), *k = em_ag_saved(n, SAVED_K), *v = em_ag_saved(n, SAVED_V);
    em_tensor *out = em_ag_saved(n, SAVED_OUT), *lse = em_ag_saved(n, SAVED_LSE);
    if (!q || !k || !v || !out || !lse) return -1;
    if (p.dev_state && !em_rng_captured(em_dev(q), p.dev_state))
        return em_set_error("scaled_dot_product_attention backward: the forward drew its dropout mask inside a "
                            "CUDA graph capture, where the mask is only known to that graph's replays; run the "
                            "backward in the same capture");
    em_scope s = {0};
    em_tensor *mask = em_scope_keep(&s, saved_mask(n));
    if (n->p.attn.has_mask && !mask) return -1;
    int rc = 0;
    if (em_grad_enabled()) {
        em_tensor *m3 = NULL;
        if (mask) {
            int64_t s3[3] = {q->sizes[0], q->sizes[1], k->sizes[1]};
            m3 = em_scope_keep(&s, em_reshape(mask, s3, 3));    /* only a higher-order gradient pays for a copy */
        }
        rc = mask && !m3 ? -1 : composed_backward(n, &p, q, k, v, m3, gout[0], gin);
        em_scope_drop(&s);
        return rc;
    }
    em_tensor *go = em_scope_keep(&s, em_contiguous(gout[0]));
    em_device dev = em_dev(q);
    em_tensor *gq = go && em_ag_wants(n, IN_Q) ? em_empty(q->sizes, 3, q->dtype, dev) : NULL;
    em_tensor *gk = go && em_ag_wants(n, IN_K) ? em_empty(k->sizes, 3, k->dtype, dev) : NULL;
    em_tensor *gv = go && em_ag_wants(n, IN_V) ? em_empty(v->sizes, 3, v->dtype, dev) : NULL;
    bool ok = go && (gq || !em_ag_wants(n, IN_Q)) && (gk || !em_ag_wants(n, IN_K)) && (gv || !em_ag_wants(n, IN_V));
    chunking c;
    plan_chunks(&c, mask, q->sizes[0]);
    if (ok && em_numel(q) + em_numel(k) > 0 && k->sizes[1] > 0) {
        ok = run_backward(&c, gq, gk, gv, go, q, k, v, out, lse, &p) == 0;
    } else if (ok) {                      /* nothing to attend to: no gradient */
        ok = (!gq || em_fill_(gq, 0) == 0) && (!gk || em_fill_(gk, 0) == 0) && (!gv || em_fill_(gv, 0) == 0);
    }
    em_scope_drop(&s);
    if (!ok) { em_release(gq); em_release(gk); em_release(gv); return -1; }
    gin[IN_Q] = gq;
    gin[IN_K] = gk;
    gin[IN_V] = gv;
    return 0;
}

/* records the node of out3 = attention(q3, k3, v3); returns out3 or NULL */
static em_tensor *record(em_tensor *out3, em_tensor *lse, const em_tensor *q3, const em_tensor *k3,
                         const em_tensor *v3, const em_tensor *mask, const em_attn_params *p)
{
    em_node *n = em_ag_node("ScaledDotProductAttentionBackward", attention_backward, 3);
    if (!n) return em_release(out3), NULL;
    n->p.attn.params = *p;              /* dev_state not owned (the graph's device words) */
    n->p.attn.has_mask = mask != NULL;
    em_ag_input(n, IN_Q, q3);
    em_ag_input(n, IN_K, k3);
    em_ag_input(n, IN_V, v3);
    if (em_ag_save(n, SAVED_Q, q3, false) || em_ag_save(n, SAVED_K, k3, false) ||
        em_ag_save(n, SAVED_V, v3, false) || em_ag_save(n, SAVED_OUT, out3, true) ||
        em_ag_save(n, SAVED_LSE, lse, false) || (mask && em_ag_save(n, SAVED_MASK, mask, false)))
        return em_ag_abandon(n, out3);
    return em_ag_output(n, out3);
}

/* ---- the op ---------------------------------------------------------------------------------- */

static int check_inputs(const em_tensor *q, const em_tensor *k, const em_tensor *v, const em_tensor *mask,
                        double dropout_p)
{
    if (!q || !k || !v) return em_set_error("%s: query, key and value must be tensors", OP);
    if (!em_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return em_set_error("%s: expected query, key and value of one floating point dtype, got %s, %s and %s", OP,
                            em_dtype_name(q->dtype), em_dtype_name(k->dtype), em_dtype_name(v->dtype));
    if (em_check_same_device(OP, q, k) || em_check_same_device(OP, q, v)) return -1;
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return em_set_error("%s: expected query, key and value with at least 2 dims ([..., T, D]), got %s, %s and %s",
                            OP, SHAPE(q), SHAPE(k), SHAPE(v));
    if (q->sizes[q->ndim - 1] != k->sizes[k->ndim - 1])
        return em_set_error("%s: query %s and key %s must have the same last dim (D), got %lld and %lld", OP,
                            SHAPE(q), SHAPE(k), (long long)q->sizes[q->ndim - 1], (long long)k->sizes[k->ndim - 1]);
    if (k->sizes[k->ndim - 2] != v->sizes[v->ndim - 2])
        return em_set_error("%s: key %s and value %s must have the same number of keys (dim -2), got %lld and %lld",
                            OP, SHAPE(k), SHAPE(v), (long long)k->sizes[k->ndim - 2],
                            (long long)v->sizes[v->ndim - 2]);
    if (mask) {
        if (em_check_same_device(OP, q, mask)) return -1;
        if (mask->dtype != EM_BOOL && mask->dtype != q->dtype && mask->dtype != mask_dtype(q))
            return em_set_error("%s: attn_mask must be bool or the query's dtype %s, got %s", OP,
                                em_dtype_name(q->dtype), em_dtype_name(mask->dtype));
        if (em_grad_enabled() && mask->requires_grad)
            return em_set_error("%s: attn_mask requires grad, but the fused kernel does not differentiate the mask; "
                                "detach() it, or add it to the scores of a composed attention", OP);
    }
    if (!(dropout_p >= 0 && dropout_p < 1))
        return em_set_error("%s: dropout_p must be in [0, 1), got %g", OP, dropout_p);
    return 0;
}

/* the broadcast batch dims of q, k, v into bs; returns their count or -1 */
static int batch_shape(const em_tensor *q, const em_tensor *k, const em_tensor *v, int64_t *bs)
{
    const em_tensor *ts[3] = {q, k, v};
    int nb = 0;
    for (int t = 0; t < 3; t++) nb = ts[t]->ndim - 2 > nb ? ts[t]->ndim - 2 : nb;
    for (int d = 0; d < nb; d++) {
        int64_t s = 1;
        for (int t = 0; t < 3; t++) {
            int e = d - (nb - (ts[t]->ndim - 2));
            if (e < 0) continue;
            int64_t n = ts[t]->sizes[e];
            if (n == 1 || n == s) continue;
            if (s != 1)
                return em_set_error("%s: the batch dims of query %s, key %s and value %s do not broadcast", OP,
                                    SHAPE(q), SHAPE(k), SHAPE(v));
            s = n;
        }
        bs[d] = s;
    }
    return nb;
}

/* t [..., T, X] broadcast to [bs..., T, X] and flattened to [B, T, X], contiguous (recorded) */
static em_tensor *flat3(const em_tensor *t, const int64_t *bs, int nb, int64_t B)
{
    int64_t full[EM_MAX_DIMS];
    memcpy(full, bs, sizeof(int64_t) * (size_t)nb);
    full[nb] = t->sizes[t->ndim - 2];
    full[nb + 1] = t->sizes[t->ndim - 1];
    int64_t s3[3] = {B, full[nb], full[nb + 1]};
    em_scope s = {0};
    em_tensor *e = em_scope_keep(&s, em_expand(t, full, nb + 2));
    em_tensor *r = e ? em_scope_keep(&s, em_reshape(e, s3, 3)) : NULL;
    return em_scope_finish(&s, r ? em_scope_keep(&s, em_contiguous(r)) : NULL);
}

/* the mask as an additive float view [bs..., Tq, Tk] (no copy of a float mask; new reference) */
static em_tensor *additive_mask(const em_tensor *mask, const em_tensor *q, const em_tensor *k, const int64_t *bs,
                                int nb, int64_t Tq, int64_t Tk)
{
    int64_t full[EM_MAX_DIMS];
    memcpy(full, bs, sizeof(int64_t) * (size_t)nb);
    full[nb] = Tq;
    full[nb + 1] = Tk;
    bool fits = mask->ndim <= nb + 2;
    for (int d = 0; fits && d < mask->ndim; d++) {
        int64_t n = mask->sizes[mask->ndim - 1 - d], want = full[nb + 1 - d];
        fits = n == want || n == 1;
    }
    if (!fits)
        return em_set_error("%s: attn_mask %s does not broadcast to the scores' shape %s (query %s, key %s)", OP,
                            SHAPE(mask), em_sizes_tmp(full, nb + 2), SHAPE(q), SHAPE(k)), NULL;
    em_scope s = {0};
    em_tensor *add;
    if (mask->dtype == EM_BOOL) {
        em_tensor *z = em_scope_keep(&s, em_zeros(mask->sizes, mask->ndim, mask_dtype(q), em_dev(q)));
        em_tensor *hidden = z ? es_unary(&s, EM_LOGICAL_NOT, mask) : NULL;
        add = hidden ? em_scope_keep(&s, em_masked_fill(z, hidden, -INFINITY)) : NULL;
    } else {
        add = em_scope_keep(&s, em_cast_to(mask, mask_dtype(q)));
    }
    return em_scope_finish(&s, add ? em_scope_keep(&s, em_expand(add, full, nb + 2)) : NULL);
}

em_tensor *ei_scaled_dot_product_attention(const em_tensor *q, const em_tensor *k, const em_tensor *v,
                                           const em_tensor *mask, double dropout_p, bool is_causal, double scale)
{
    if (check_inputs(q, k, v, mask, dropout_p)) return NULL;
    const em_backend *be = em_be(q);
    if (!be->attention || !be->attention_backward)
        return em_set_error("%s: not supported on the %s backend", OP, be->name), NULL;
    int64_t bs[EM_MAX_DIMS];
    int nb = batch_shape(q, k, v, bs);
    if (nb < 0) return NULL;
    if (nb + 2 > EM_MAX_DIMS) return em_set_error("%s: too many batch dims", OP), NULL;
    int64_t B = 1;
    for (int d = 0; d < nb; d++) B *= bs[d];
    int64_t Tq = q->sizes[q->ndim - 2], D = q->sizes[q->ndim - 1], Tk = k->sizes[k->ndim - 2];
    int64_t Dv = v->sizes[v->ndim - 1];
    em_attn_params p = {.scale = scale > 0 ? scale : 1 / sqrt((double)D), .causal = is_causal,
                        .dropout_p = dropout_p};
    em_scope s = {0};
    em_tensor *m = NULL;
    if (mask) {
        m = em_scope_keep(&s, WITHOUT_GRAD(additive_mask(mask, q, k, bs, nb, Tq, Tk)));
        if (!m) return NULL;
    }
    chunking c;
    plan_chunks(&c, m, B);
    if (dropout_p > 0 && c.P > 1 && (c.Bi * Tq * Tk) % 4 != 0) {
        /* chunks would start mid-counter: give the kernel one contiguous mask instead */
        m = em_scope_keep(&s, WITHOUT_GRAD(em_contiguous(m)));
        if (!m) return em_scope_drop(&s), NULL;
        plan_chunks(&c, m, B);
    }
    if (dropout_p > 0) em_rng_reserve(em_dev(q), B * Tq * Tk, &p.seed, &p.offset, &p.dev_state);
    em_tensor *q3 = em_scope_keep(&s, flat3(q, bs, nb, B)), *k3 = q3 ? em_scope_keep(&s, flat3(k, bs, nb, B)) : NULL;
    em_tensor *v3 = k3 ? em_scope_keep(&s, flat3(v, bs, nb, B)) : NULL;
    int64_t os[3] = {B, Tq, Dv}, ls[2] = {B, Tq};
    em_device dev = em_dev(q);
    em_dtype ld = q->dtype == EM_FLOAT64 ? EM_FLOAT64 : EM_FLOAT32;
    /* out3 stays out of the scope: record() takes it, and with one batch dim it is the result */
    em_tensor *out3 = v3 ? em_empty(os, 3, q->dtype, dev) : NULL;
    em_tensor *lse = out3 ? em_scope_keep(&s, em_empty(ls, 2, ld, dev)) : NULL;
    bool ok = lse != NULL;
    if (ok) {
        bool was = em_set_grad_enabled(false);
        if (Tk == 0) ok = em_fill_(out3, 0) == 0 && em_fill_(lse, -INFINITY) == 0;
        else if (B * Tq > 0) ok = run_forward(&c, out3, lse, q3, k3, v3, &p) == 0;
        em_set_grad_enabled(was);
    }
    if (ok && em_grad_mode && (q3->requires_grad || k3->requires_grad || v3->requires_grad)) {
        out3 = record(out3, lse, q3, k3, v3, m, &p);
        ok = out3 != NULL;
    }
    em_tensor *out = NULL;
    if (ok && nb == 1) {
        out = out3;                         /* already [B, Tq, Dv]: grad_fn stays the op's own node */
        out3 = NULL;
    } else if (ok) {
        int64_t full[EM_MAX_DIMS];
        memcpy(full, bs, sizeof(int64_t) * (size_t)nb);
        full[nb] = Tq;
        full[nb + 1] = Dv;
        out = em_reshape(out3, full, nb + 2);
    }
    em_release(out3);
    em_scope_drop(&s);
    return out;
}

em_tensor *em_scaled_dot_product_attention(const em_tensor *q, const em_tensor *k, const em_tensor *v,
                                           const em_tensor *mask, double dropout_p, bool is_causal, double scale)
{
    EM_AUTOCAST(EM_AC_LOWER,
                ei_scaled_dot_product_attention(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), EM_AC_ARG(3), dropout_p,
                                                is_causal, scale),
                q, k, v, mask);
    return ei_scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale);
}
