/* pooling.c — max and average pooling, plain and adaptive (NC + 1..3
 * spatial dims), on the backend's pool family.
 *
 * Max pooling's backward puts each gradient back at its argmax: a
 * scatter-add at the indices the forward found (em_ag_add_into_zeros,
 * itself differentiable, its gradient a gather at them). Average pooling's backward is the backend's
 * adjoint of the window sums; the two are recorded as each other's
 * gradient (both are linear), so average pooling can be differentiated to
 * any order too. */
#include "autograd.h"

#include <stdio.h>
#include <string.h>

static em_tensor *avg_prim(bool backward, const em_tensor *in, const int64_t *out_sizes, int ndim,
                           const em_pool_params *p);

static void pack_params(em_node *n, const em_pool_params *p)
{
    for (int i = 0; i < EM_MAX_SPATIAL; i++) {
        n->sizes2[i] = p->kernel[i];
        n->sizes2[3 + i] = p->stride[i];
        n->sizes2[6 + i] = p->padding[i];
        n->sizes2[9 + i] = p->dilation[i];
    }
    n->sizes2[12] = p->divisor;
    n->sizes2[13] = p->adaptive;
    n->sizes2[14] = p->count_include_pad;
    n->ndim2 = p->nspatial;
}

static em_pool_params unpack_params(const em_node *n)
{
    em_pool_params p = {.nspatial = n->ndim2, .divisor = n->sizes2[12], .adaptive = n->sizes2[13] != 0,
                        .count_include_pad = n->sizes2[14] != 0};
    for (int i = 0; i < EM_MAX_SPATIAL; i++) {
        p.kernel[i] = n->sizes2[i];
        p.stride[i] = n->sizes2[3 + i];
        p.padding[i] = n->sizes2[6 + i];
        p.dilation[i] = n->sizes2[9 + i];
    }
    return p;
}

/* the gradient of avg pooling is its adjoint and the other way round; the
 * node keeps the shape of its input in n->sizes */
static int avg_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_pool_params p = unpack_params(n);
    gin[0] = avg_prim(n->op == 0, gout[0], n->sizes, n->ndim, &p);
    return gin[0] ? 0 : -1;
}

static em_tensor *avg_prim(bool backward, const em_tensor *in, const int64_t *out_sizes, int ndim,
                           const em_pool_params *p)
{
    const em_backend *be = em_be(in);
    if (!be->pool || !be->pool_backward)
        return em_set_error("avg_pool: not supported on the %s backend", be->name), NULL;
    em_tensor *ic = WITHOUT_GRAD(em_contiguous(in));
    em_tensor *out = ic ? em_empty(out_sizes, ndim, in->dtype, em_dev(in)) : NULL;
    if (out && em_numel(out) > 0) {
        int rc = em_numel(ic) == 0 ? em_fill_(out, 0)
                 : backward        ? be->pool_backward(EM_POOL_AVG, out, ic, p)
                                   : be->pool(EM_POOL_AVG, out, NULL, ic, p);
        if (rc) { em_release(out); out = NULL; }
    }
    em_release(ic);
    if (!out || !em_ag_needed1(in)) return out;
    em_node *n = em_ag_node(backward ? "AvgPoolBackwardBackward" : "AvgPoolBackward", avg_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->op = backward ? 1 : 0;
    n->ndim = in->ndim;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
    pack_params(n, p);
    em_ag_input(n, 0, in);
    return em_ag_output(n, out);
}

/* ---- shapes and checks ------------------------------------------------------ */

static const char *op_name(bool max, const em_pool_args *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s_pool%dd", a->adaptive ? "adaptive_" : "", max ? "max" : "avg", a->nspatial);
    return buf;
}

/* PyTorch's pooling_output_shape: floor or ceil of the window count, and
 * with ceil_mode the last window must start inside the input or the left
 * padding */
static int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode)
{
    /* in 128 bits: kernel, padding, stride and dilation may be any int64 a user types */
    __int128 num = (__int128)in + 2 * (__int128)pad - (__int128)dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    __int128 o = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
    if (ceil_mode && (o - 1) * stride >= (__int128)in + pad) o--;
    return o > INT64_MAX ? INT64_MAX : o < INT64_MIN ? INT64_MIN : (int64_t)o;
}

static int check_pool(const char *op, bool max, const em_tensor *x, const em_pool_args *a, em_pool_params *p,
                      int64_t *out, int *ndim)
{
    int ns = a->nspatial;
    if (ns < 1 || ns > 3) return em_set_error("%s: 1 to 3 spatial dims, got %d", op, ns);
    if (!em_dtype_is_float(x->dtype))
        return em_set_error("%s: input must be floating point, got %s", op, em_dtype_name(x->dtype));
    if (x->ndim != ns + 1 && x->ndim != ns + 2)
        return em_set_error("%s: expected a %d-D (unbatched) or %d-D (batched) input, got %s", op, ns + 1, ns + 2,
                            SHAPE(x));
    bool batched = x->ndim == ns + 2;
    const int64_t *in = x->sizes + (batched ? 2 : 1);
    memset(p, 0, sizeof *p);
    p->nspatial = ns;
    p->adaptive = a->adaptive;
    p->count_include_pad = a->count_include_pad;
    p->divisor = a->divisor_override;
    *ndim = x->ndim;
    memcpy(out, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
    int64_t *o = out + (batched ? 2 : 1);
    if (!max && a->divisor_override < 0)
        return em_set_error("%s: divisor_override must be positive, got %lld", op, (long long)a->divisor_override);
    for (int i = 0; i < ns; i++) {
        if (a->adaptive) {
            if (a->output_size[i] < 0)
                return em_set_error("%s: output_size must be non-negative, got %s", op,
                                    em_sizes_tmp(a->output_size, ns));
            if (in[i] == 0 && a->output_size[i] > 0)
                return em_set_error("%s: input %s has an empty spatial dim %d", op, SHAPE(x), i + 1);
            o[i] = a->output_size[i];
            continue;
        }
        int64_t k = a->kernel[i], s = a->stride[i], pad = a->padding[i], d = max ? a->dilation[i] : 1;
        if (k < 1) return em_set_error("%s: kernel_size must be positive, got %s", op, em_sizes_tmp(a->kernel, ns));
        if (s < 1) return em_set_error("%s: stride must be positive, got %s", op, em_sizes_tmp(a->stride, ns));
        if (d < 1) return em_set_error("%s: dilation must be positive, got %s", op, em_sizes_tmp(a->dilation, ns));
        if (pad < 0) return em_set_error("%s: padding must be non-negative, got %s", op, em_sizes_tmp(a->padding, ns));
        if (pad > k / 2)
            return em_set_error("%s: padding %s must be at most half the kernel size %s", op,
                                em_sizes_tmp(a->padding, ns), em_sizes_tmp(a->kernel, ns));
        o[i] = pooled_size(in[i], k, pad, s, d, a->ceil_mode);
        if (o[i] < 1)
            return em_set_error("%s: the window (kernel %s, dilation %s) is larger than the padded input %s "
                                "(padding %s): output size %lld in spatial dim %d", op, em_sizes_tmp(a->kernel, ns),
                                em_sizes_tmp(max ? a->dilation : (const int64_t[3]){1, 1, 1}, ns), SHAPE(x),
                                em_sizes_tmp(a->padding, ns), (long long)o[i], i + 1);
        p->kernel[i] = k;
        p->stride[i] = s;
        p->padding[i] = pad;
        p->dilation[i] = d;
    }
    return em_check_shape(op, out, *ndim);
}

/* x as [N, C, I...] (a view adding N = 1 for an unbatched input) */
static em_tensor *batched(const em_tensor *x, int ns)
{
    return x->ndim == ns + 2 ? em_retain((em_tensor *)x) : em_unsqueeze(x, 0);
}

static void batched_sizes(const int64_t *sizes, int ndim, int ns, int64_t *b)
{
    if (ndim == ns + 2) { memcpy(b, sizes, sizeof(int64_t) * (size_t)ndim); return; }
    b[0] = 1;
    memcpy(b + 1, sizes, sizeof(int64_t) * (size_t)ndim);
}

/* max pooling's gradient: g added into zeros of x's shape at the argmax of
 * each window, over the flattened spatial dims (n->sizes2: x as [N, C, I...]);
 * em_ag_add_into_zeros records its own gradient, a gather at idx, so this
 * differentiates to any order */
static int max_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *idx = em_ag_saved(n, 0);
    if (!idx) return -1;
    int64_t flat_x[3] = {n->sizes2[0], n->sizes2[1], 1}, flat_y[3] = {n->sizes2[0], n->sizes2[1], -1};
    for (int i = 2; i < n->ndim2; i++) flat_x[2] *= n->sizes2[i];
    em_scope s = {0};
    em_tensor *iv = em_scope_keep(&s, em_reshape(idx, flat_y, 3));
    em_tensor *g = em_scope_keep(&s, em_reshape(gout[0], flat_y, 3));
    em_tensor *gx = iv && g ? em_scope_keep(&s, em_ag_add_into_zeros(false, flat_x, 3, 2, iv, g)) : NULL;
    gin[0] = em_scope_finish(&s, gx ? em_scope_keep(&s, em_reshape(gx, n->sizes, n->ndim)) : NULL);
    return gin[0] ? 0 : -1;
}

em_tensor *em_max_pool(const em_tensor *x, const em_pool_args *a, em_tensor **indices)
{
    char op[40];
    op_name(true, a, op, sizeof op);
    if (indices) *indices = NULL;
    em_pool_params p;
    int64_t out[EM_MAX_DIMS], bout[EM_MAX_DIMS], bin[EM_MAX_DIMS];
    int ndim, ns = a->nspatial;
    if (check_pool(op, true, x, a, &p, out, &ndim)) return NULL;
    const em_backend *be = em_be(x);
    if (!be->pool) return em_set_error("%s: not supported on the %s backend", op, be->name), NULL;
    batched_sizes(out, ndim, ns, bout);
    batched_sizes(x->sizes, x->ndim, ns, bin);
    em_tensor *xc = WITHOUT_GRAD(em_contiguous(x));
    em_tensor *y = xc ? em_empty(out, ndim, x->dtype, em_dev(x)) : NULL;
    em_tensor *idx = y ? em_empty(out, ndim, EM_INT64, em_dev(x)) : NULL;
    if (idx && em_numel(y) > 0) {
        em_tensor *yb = em_view(y, bout, ns + 2), *ib = em_view(idx, bout, ns + 2), *xb = em_view(xc, bin, ns + 2);
        int rc = yb && ib && xb ? be->pool(EM_POOL_MAX, yb, ib, xb, &p) : -1;
        em_release(yb); em_release(ib); em_release(xb);
        if (rc) { em_release(y); em_release(idx); y = idx = NULL; }
    }
    em_release(xc);
    if (!idx) { em_release(y); return NULL; }
    if (em_ag_needed1(x) && em_numel(y) > 0 && em_dtype_is_float(y->dtype)) {
        /* y is x.flatten(spatial).gather(idx): its node's backward is the
         * scatter-add at idx (max_backward) */
        em_node *n = em_ag_node("MaxPoolBackward", max_backward, 1);
        if (!n) { em_release(y); em_release(idx); return NULL; }
        n->ndim = x->ndim;
        memcpy(n->sizes, x->sizes, sizeof(int64_t) * (size_t)x->ndim);
        n->ndim2 = ns + 2;
        memcpy(n->sizes2, bin, sizeof(int64_t) * (size_t)(ns + 2));
        em_ag_input(n, 0, x);
        if (em_ag_save(n, 0, idx, false)) {
            y = em_ag_abandon(n, y);
            em_release(idx);
            return y;
        }
        y = em_ag_output(n, y);
        if (!y) { em_release(idx); return NULL; }
    }
    if (indices) *indices = idx;
    else em_release(idx);
    return y;
}

em_tensor *em_avg_pool(const em_tensor *x, const em_pool_args *a)
{
    char op[40];
    op_name(false, a, op, sizeof op);
    em_pool_params p;
    int64_t out[EM_MAX_DIMS], bout[EM_MAX_DIMS];
    int ndim, ns = a->nspatial;
    if (check_pool(op, false, x, a, &p, out, &ndim)) return NULL;
    batched_sizes(out, ndim, ns, bout);
    em_tensor *xb = batched(x, ns);
    em_tensor *y = xb ? avg_prim(false, xb, bout, ns + 2, &p) : NULL;
    em_release(xb);
    if (y && ndim != ns + 2) {
        em_tensor *s = em_squeeze_dim(y, 0);
        em_release(y);
        y = s;
    }
    return y;
}
