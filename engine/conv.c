/* conv.c — convolutions and transposed convolutions (NC + 1..3 spatial dims).
 *
 * Everything rests on one differentiable primitive with three modes, the
 * backend's conv family (backend.h):
 *   FORWARD          y  = conv(x, w)
 *   BACKWARD_DATA    gx = conv^T(gy, w)     (also conv_transpose's forward)
 *   BACKWARD_WEIGHT  gw = corr(x, gy)
 * Each is bilinear in its two operands, and the gradients of each are the
 * other two modes (see prim_backward), so a convolution's backward is
 * itself made of recorded primitives and conv can be differentiated to any
 * order. A convolution's bias rides in the forward call (em_conv_params.bias:
 * the backend adds it in the same pass), and its gradient, the sum of gy
 * over the batch and positions, in the weight gradient's call where nothing
 * records that call (else it is a recorded sum, differentiable again); a
 * transposed convolution's bias, and any bias of an empty convolution, is
 * a broadcast add. "same" padding with an odd total pads the input
 * explicitly (backends take symmetric padding only). */
#include "autograd.h"

#include <stdio.h>
#include <string.h>

typedef struct conv_shape {
    em_conv_params p;
    int64_t out[EM_MAX_DIMS];           /* the result's sizes */
    int ndim;
} conv_shape;

static em_tensor *conv_prim(em_conv_op mode, const em_tensor *a, const em_tensor *b, const em_tensor *bias,
                            const int64_t *out_sizes, int out_ndim, const em_conv_params *p);

/* node parameters: n->op the mode; n->sizes2 stride, padding, dilation
 * (3 each) and groups; n->ndim2 nspatial */
static void pack_params(em_node *n, const em_conv_params *p)
{
    for (int i = 0; i < EM_MAX_SPATIAL; i++) {
        n->sizes2[i] = p->stride[i];
        n->sizes2[3 + i] = p->padding[i];
        n->sizes2[6 + i] = p->dilation[i];
    }
    n->sizes2[9] = p->groups;
    n->ndim2 = p->nspatial;
}

static em_conv_params unpack_params(const em_node *n)
{
    em_conv_params p = {.nspatial = n->ndim2, .groups = n->sizes2[9]};
    for (int i = 0; i < EM_MAX_SPATIAL; i++) {
        p.stride[i] = n->sizes2[i];
        p.padding[i] = n->sizes2[3 + i];
        p.dilation[i] = n->sizes2[6 + i];
    }
    return p;
}

/* gy [N, K, O...] summed over all dims but 1: a bias's gradient */
static em_tensor *bias_grad(const em_tensor *G)
{
    int dims[EM_MAX_DIMS], nd = 0;
    for (int d = 0; d < G->ndim; d++)
        if (d != 1) dims[nd++] = d;
    return ei_sum(G, dims, nd, false);
}

/* gw, and the bias's gradient *gb with it when gb is not NULL and the
 * backend can add it up in the same pass: nothing records the call (a
 * fused sum has no graph) and no operand is empty. */
static em_tensor *weight_grad(const em_tensor *x, const em_tensor *G, const em_tensor *w, const em_conv_params *p,
                              em_tensor **gb)
{
    if (gb && !em_ag_needed2(x, G) && em_numel(x) > 0 && em_numel(G) > 0 && em_numel(w) > 0) {
        em_conv_params q = *p;
        q.bias = *gb = em_empty(&G->sizes[1], 1, G->dtype, em_dev(G));
        em_tensor *gw = q.bias ? conv_prim(EM_CONV_BACKWARD_WEIGHT, x, G, NULL, w->sizes, w->ndim, &q) : NULL;
        if (!gw) {
            em_release(*gb);
            *gb = NULL;
        }
        return gw;
    }
    return conv_prim(EM_CONV_BACKWARD_WEIGHT, x, G, NULL, w->sizes, w->ndim, p);
}

/* The gradients of each mode with respect to its operands a and b, G the
 * gradient of its result (and FORWARD's bias, operand 2 when it has one:
 * G summed over all dims but the channels):
 *   FORWARD (x, w):          gx = BACKWARD_DATA(G, w),   gw = BACKWARD_WEIGHT(x, G)
 *   BACKWARD_DATA (g, w):    gg = FORWARD(G, w),         gw = BACKWARD_WEIGHT(G, g)
 *   BACKWARD_WEIGHT (x, g):  gx = BACKWARD_DATA(g, G),   gg = FORWARD(x, G)
 * (each follows from writing the mode as a sum over (n, k, c, o, j) with
 * i = o*stride - pad + j*dil and reading off the coefficient). */
static int prim_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *a = em_ag_saved(n, 0), *b = em_ag_saved(n, 1);
    if (!a || !b) return -1;
    em_conv_params p = unpack_params(n);
    const em_tensor *G = gout[0];
    em_conv_op mode = (em_conv_op)n->op;
    bool wants_bias = n->nin > 2 && em_ag_wants(n, 2);
    if (em_ag_wants(n, 0)) {
        if (mode == EM_CONV_FORWARD)
            gin[0] = conv_prim(EM_CONV_BACKWARD_DATA, G, b, NULL, a->sizes, a->ndim, &p);
        else if (mode == EM_CONV_BACKWARD_DATA)
            gin[0] = conv_prim(EM_CONV_FORWARD, G, b, NULL, a->sizes, a->ndim, &p);
        else
            gin[0] = conv_prim(EM_CONV_BACKWARD_DATA, b, G, NULL, a->sizes, a->ndim, &p);
        if (!gin[0]) return -1;
    }
    if (em_ag_wants(n, 1)) {
        if (mode == EM_CONV_FORWARD)
            gin[1] = weight_grad(a, G, b, &p, wants_bias ? &gin[2] : NULL);
        else if (mode == EM_CONV_BACKWARD_DATA)
            gin[1] = weight_grad(G, a, b, &p, NULL);
        else
            gin[1] = conv_prim(EM_CONV_FORWARD, a, G, NULL, b->sizes, b->ndim, &p);
        if (!gin[1]) return -1;
    }
    if (wants_bias && !gin[2] && !(gin[2] = bias_grad(G))) return -1;
    return 0;
}

/* One mode on the backend (operands made contiguous, result allocated),
 * recorded when an operand requires grad; FORWARD's bias, when given, is
 * added in the same call (the caller passes one only when no operand is
 * empty). The caller has checked shapes. */
static em_tensor *conv_prim(em_conv_op mode, const em_tensor *a, const em_tensor *b, const em_tensor *bias,
                            const int64_t *out_sizes, int out_ndim, const em_conv_params *p)
{
    const em_backend *be = em_be(a);
    if (!be->conv) return em_set_error("conv: not supported on the %s backend", be->name), NULL;
    em_conv_params q = *p;
    em_tensor *ac = WITHOUT_GRAD(em_contiguous(a));
    em_tensor *bc = ac ? WITHOUT_GRAD(em_contiguous(b)) : NULL;
    em_tensor *cc = bc && bias ? WITHOUT_GRAD(em_contiguous(bias)) : NULL;
    em_tensor *out = bc && (!bias || cc) ? em_empty(out_sizes, out_ndim, a->dtype, em_dev(a)) : NULL;
    if (bias) q.bias = cc;
    if (out && em_numel(out) > 0) {
        /* an empty operand contributes nothing: a zero result */
        int rc = em_numel(ac) == 0 || em_numel(bc) == 0 ? em_fill_(out, 0) : be->conv(mode, out, ac, bc, &q);
        if (rc) { em_release(out); out = NULL; }
    }
    em_release(ac);
    em_release(bc);
    em_release(cc);
    if (!out || !em_ag_needed3(a, b, bias)) return out;
    static const char *names[] = {"ConvolutionBackward", "ConvolutionBackwardDataBackward",
                                  "ConvolutionBackwardWeightBackward"};
    em_node *n = em_ag_node(names[mode], prim_backward, bias ? 3 : 2);
    if (!n) { em_release(out); return NULL; }
    n->op = mode;
    pack_params(n, p);
    em_ag_input(n, 0, a);
    em_ag_input(n, 1, b);
    if (bias) em_ag_input(n, 2, bias);
    if (em_ag_save(n, 0, a, false) || em_ag_save(n, 1, b, false)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* ---- the user-level op: checks, shapes, bias, padding modes --------------- */

static const char *op_name(const em_conv_args *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s%dd", a->transposed ? "conv_transpose" : "conv", a->nspatial);
    return buf;
}

/* Checks the arguments and fills sh (params and the result's batched
 * shape); *extra gets the right-hand padding "same" needs beyond the
 * symmetric part (0 for most convs). */
static int check_conv(const char *op, const em_tensor *x, const em_tensor *w, const em_tensor *bias,
                      const em_conv_args *a, conv_shape *sh, int64_t *extra)
{
    int ns = a->nspatial;
    if (em_check_same_device(op, x, w) || (bias && em_check_same_device(op, x, bias))) return -1;
    if (!em_dtype_is_float(x->dtype))
        return em_set_error("%s: input must be floating point, got %s", op, em_dtype_name(x->dtype));
    if (w->dtype != x->dtype || (bias && bias->dtype != x->dtype))
        return em_set_error("%s: input (%s), weight (%s)%s%s must have the same dtype", op, em_dtype_name(x->dtype),
                            em_dtype_name(w->dtype), bias ? " and bias " : "",
                            bias ? em_dtype_name(bias->dtype) : "");
    if (x->ndim != ns + 1 && x->ndim != ns + 2)
        return em_set_error("%s: expected a %d-D (unbatched) or %d-D (batched) input, got %s", op, ns + 1, ns + 2,
                            SHAPE(x));
    if (w->ndim != ns + 2)
        return em_set_error("%s: expected a %d-D weight [%s, %s/groups, kernel...], got %s", op, ns + 2,
                            a->transposed ? "in_channels" : "out_channels",
                            a->transposed ? "out_channels" : "in_channels", SHAPE(w));
    if (a->groups < 1) return em_set_error("%s: groups must be positive, got %lld", op, (long long)a->groups);
    for (int i = 0; i < ns; i++) {
        if (a->stride[i] < 1)
            return em_set_error("%s: stride must be positive, got %s", op, em_sizes_tmp(a->stride, ns));
        if (a->dilation[i] < 1)
            return em_set_error("%s: dilation must be positive, got %s", op, em_sizes_tmp(a->dilation, ns));
        if (a->padding_mode == EM_PADDING_EXPLICIT && a->padding[i] < 0)
            return em_set_error("%s: padding must be non-negative, got %s", op, em_sizes_tmp(a->padding, ns));
        if (a->transposed && (a->output_padding[i] < 0 ||
                              (a->output_padding[i] >= a->stride[i] && a->output_padding[i] >= a->dilation[i])))
            return em_set_error("%s: output_padding %s must be non-negative and smaller than stride %s or dilation %s",
                                op, em_sizes_tmp(a->output_padding, ns), em_sizes_tmp(a->stride, ns),
                                em_sizes_tmp(a->dilation, ns));
    }
    bool batched = x->ndim == ns + 2;
    int64_t N = batched ? x->sizes[0] : 1, C = x->sizes[batched ? 1 : 0];
    const int64_t *in = x->sizes + (batched ? 2 : 1);
    int64_t K;
    if (!a->transposed) {
        if (w->sizes[1] * a->groups != C)
            return em_set_error("%s: input %s has %lld channels, expected weight.shape[2] * groups = %lld * %lld = %lld "
                                "(weight %s)", op, SHAPE(x), (long long)C, (long long)w->sizes[1],
                                (long long)a->groups, (long long)(w->sizes[1] * a->groups), SHAPE(w));
        if (w->sizes[0] % a->groups != 0)
            return em_set_error("%s: groups %lld must divide the output channels %lld (weight %s)", op,
                                (long long)a->groups, (long long)w->sizes[0], SHAPE(w));
        K = w->sizes[0];
    } else {
        if (w->sizes[0] != C)
            return em_set_error("%s: input %s has %lld channels, expected weight.shape[1] = %lld (weight %s)", op,
                                SHAPE(x), (long long)C, (long long)w->sizes[0], SHAPE(w));
        if (C % a->groups != 0)
            return em_set_error("%s: groups %lld must divide the input channels %lld (input %s)", op,
                                (long long)a->groups, (long long)C, SHAPE(x));
        K = w->sizes[1] * a->groups;
    }
    if (bias && (bias->ndim != 1 || bias->sizes[0] != K))
        return em_set_error("%s: expected a bias of shape [%lld] (the output channels), got %s", op, (long long)K,
                            SHAPE(bias));
    if (a->padding_mode == EM_PADDING_SAME) {
        if (a->transposed) return em_set_error("%s: padding \"same\" is not supported for transposed convolutions", op);
        for (int i = 0; i < ns; i++)
            if (a->stride[i] != 1)
                return em_set_error("%s: padding \"same\" needs stride 1, got stride %s", op, em_sizes_tmp(a->stride, ns));
    }
    memset(sh, 0, sizeof *sh);
    sh->p.nspatial = ns;
    sh->p.groups = a->groups;
    sh->ndim = ns + 2;
    sh->out[0] = N;
    sh->out[1] = K;
    for (int i = 0; i < ns; i++) {
        int64_t k = w->sizes[2 + i], d = a->dilation[i], s = a->stride[i], span = d * (k - 1) + 1;
        int64_t pad = a->padding[i];
        extra[i] = 0;
        if (a->padding_mode == EM_PADDING_VALID) pad = 0;
        if (a->padding_mode == EM_PADDING_SAME) {
            pad = (span - 1) / 2;
            extra[i] = (span - 1) - 2 * pad;
        }
        sh->p.stride[i] = s;
        sh->p.padding[i] = pad;
        sh->p.dilation[i] = d;
        if (k < 1) return em_set_error("%s: weight %s has an empty kernel", op, SHAPE(w));
        if (!a->transposed) {
            int64_t padded = in[i] + 2 * pad + extra[i];
            if (padded < span)
                return em_set_error("%s: the kernel (size %lld, dilation %lld: span %lld) is larger than the padded "
                                    "input (size %lld with padding %lld: %lld) in spatial dim %d (input %s, weight %s)",
                                    op, (long long)k, (long long)d, (long long)span, (long long)in[i],
                                    (long long)pad, (long long)padded, i + 1, SHAPE(x), SHAPE(w));
            sh->out[2 + i] = (padded - span) / s + 1;
        } else {
            int64_t o = (in[i] - 1) * s - 2 * pad + span + a->output_padding[i];
            if (o < 1)
                return em_set_error("%s: the output size %lld in spatial dim %d is not positive (input %s, weight %s, "
                                    "stride %lld, padding %lld)", op, (long long)o, i + 1, SHAPE(x), SHAPE(w),
                                    (long long)s, (long long)pad);
            sh->out[2 + i] = o;
        }
    }
    return em_check_shape(op, sh->out, sh->ndim);
}

em_tensor *ei_conv(const em_tensor *x, const em_tensor *w, const em_tensor *bias, const em_conv_args *a)
{
    char op[32];
    if (a->nspatial < 1 || a->nspatial > 3)
        return em_set_error("conv: 1 to 3 spatial dims, got %d", a->nspatial), NULL;
    op_name(a, op, sizeof op);
    conv_shape sh;
    int64_t extra[EM_MAX_SPATIAL] = {0};
    if (check_conv(op, x, w, bias, a, &sh, extra)) return NULL;
    int ns = a->nspatial;
    bool batched = x->ndim == ns + 2;
    em_tensor *xb = batched ? em_retain((em_tensor *)x) : em_unsqueeze(x, 0);
    int64_t padded[EM_MAX_DIMS];
    for (int i = 0; xb && i < xb->ndim; i++) padded[i] = xb->sizes[i] + (i >= 2 ? extra[i - 2] : 0);
    em_tensor *xp = xb ? em_pad_end_zeros(xb, padded, xb->ndim) : NULL;
    em_release(xb);
    if (!xp) return NULL;
    /* the bias in the forward call where the backend can add it */
    bool fused = bias && !a->transposed && em_numel(xp) > 0 && em_numel(w) > 0;
    for (int i = 0; fused && i < sh.ndim; i++) fused = sh.out[i] > 0;     /* sh.out[1] is the bias's length */
    em_tensor *y = a->transposed ? conv_prim(EM_CONV_BACKWARD_DATA, xp, w, NULL, sh.out, sh.ndim, &sh.p)
                                 : conv_prim(EM_CONV_FORWARD, xp, w, fused ? bias : NULL, sh.out, sh.ndim, &sh.p);
    em_release(xp);
    if (y && bias && !fused) {
        int64_t bs[EM_MAX_DIMS];
        bs[0] = 1;
        bs[1] = sh.out[1];
        for (int i = 0; i < ns; i++) bs[2 + i] = 1;
        em_tensor *bv = em_reshape(bias, bs, ns + 2);
        em_tensor *yb = bv ? ei_binary(EM_ADD, y, bv) : NULL;
        em_release(bv);
        em_release(y);
        y = yb;
    }
    if (y && !batched) {
        em_tensor *s = em_squeeze_dim(y, 0);
        em_release(y);
        y = s;
    }
    return y;
}

em_tensor *em_conv(const em_tensor *x, const em_tensor *w, const em_tensor *bias, const em_conv_args *a)
{
    EM_AUTOCAST(EM_AC_LOWER, ei_conv(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), a), x, w, bias);
    return ei_conv(x, w, bias, a);
}
