/* grad_elementwise.c — recording and gradients of the elementwise ops.
 *
 * Each em_ag_* function runs the op with recording off, then (when the
 * result is a float tensor) records one node whose apply turns the output's
 * gradient into the inputs' with engine ops. */
#include "autograd.h"
#include "unary_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

/* Ops on gradients. Each takes new references it consumes (x) or borrows (b). */
static em_tensor *mul(const em_tensor *a, const em_tensor *b) { return ei_binary(EM_MUL, a, b); }
static em_tensor *mul_s(const em_tensor *a, double s) { return ei_binary_scalar(EM_MUL, a, s, false, false); }

/* consumes x and y */
static em_tensor *mul_x(em_tensor *x, em_tensor *y)
{
    em_tensor *r = x && y ? ei_binary(EM_MUL, x, y) : NULL;
    em_release(x);
    em_release(y);
    return r;
}

static em_tensor *div_x(em_tensor *x, em_tensor *y)
{
    em_tensor *r = x && y ? ei_binary(EM_DIV, x, y) : NULL;
    em_release(x);
    em_release(y);
    return r;
}

/* Fits a gradient to an input of the given shape and dtype: sums out
 * broadcast dims and casts back. Consumes g. */
static em_tensor *fit_to(em_tensor *g, const int64_t *sizes, int ndim, em_dtype dtype)
{
    if (!g) return NULL;
    em_tensor *s = em_sum_to(g, sizes, ndim);
    em_release(g);
    if (!s || s->dtype == dtype) return s;
    em_tensor *c = em_to_dtype(s, dtype);
    em_release(s);
    return c;
}

static em_tensor *fit(em_tensor *g, const em_tensor *input)
{
    return fit_to(g, input->sizes, input->ndim, input->dtype);
}

static em_tensor *zeros_like_t(const em_tensor *t) { return em_zeros(t->sizes, t->ndim, t->dtype, em_dev(t)); }

/* ---- unary ---------------------------------------------------------------- */

/* d/dx (Phi(x) + x phi(x)) = phi(x) (2 - x^2), composed from engine ops so
 * that a recorded backward differentiates further. */
static em_tensor *gelu_second_derivative(const em_tensor *x)
{
    em_tensor *sq = ei_unary(EM_SQUARE, x);
    em_tensor *e = sq ? ei_binary_scalar(EM_MUL, sq, -0.5, false, false) : NULL;
    em_tensor *ex = e ? ei_unary(EM_EXP, e) : NULL;
    em_tensor *pdf = ex ? ei_binary_scalar(EM_MUL, ex, 0.39894228040143267794, false, false) : NULL;
    em_tensor *two_m = sq ? ei_binary_scalar(EM_SUB, sq, 2, false, true) : NULL;
    em_tensor *r = pdf && two_m ? ei_binary(EM_MUL, pdf, two_m) : NULL;
    em_release(sq); em_release(e); em_release(ex); em_release(pdf); em_release(two_m);
    return r;
}

/* gelu_tanh''(x) = (1 - t^2) (u' - x t u'^2 + 3 k c x^2) with t = tanh(u),
 * u = k (x + c x^3), u' = k (1 + 3 c x^2), written as (t^2 - 1) (x t u'^2 -
 * u' - 3 k c x^2) (composed, so a third order is recorded too) */
static em_tensor *gelu_tanh_second_derivative(const em_tensor *x)
{
    const double k = UM_GELU_K, c = UM_GELU_C;
    em_scope s = {0};
    em_tensor *x2 = es_mul(&s, x, x);
    em_tensor *u = es_scalar(&s, EM_MUL, es_add(&s, x, es_scalar(&s, EM_MUL, es_mul(&s, x2, x), c)), k);
    em_tensor *t = es_unary(&s, EM_TANH, u);
    em_tensor *du = es_scalar(&s, EM_MUL, es_scalar(&s, EM_ADD, es_scalar(&s, EM_MUL, x2, 3 * c), 1), k);
    em_tensor *xtdu2 = es_mul(&s, es_mul(&s, x, t), es_mul(&s, du, du));
    em_tensor *inner = es_sub(&s, es_sub(&s, xtdu2, du), es_scalar(&s, EM_MUL, x2, 3 * k * c));
    em_tensor *t2m1 = es_scalar(&s, EM_SUB, es_mul(&s, t, t), 1);
    return em_scope_finish(&s, es_mul(&s, t2m1, inner));
}

/* c + s x^2 */
static em_tensor *one_plus_s_square(const em_tensor *x, double c, double s)
{
    em_tensor *sq = ei_unary(EM_SQUARE, x);
    em_tensor *ss = sq ? ei_binary_scalar(EM_MUL, sq, s, true, false) : NULL;
    em_tensor *r = ss ? ei_binary_scalar(EM_ADD, ss, c, true, false) : NULL;
    em_release(sq);
    em_release(ss);
    return r;
}

/* exp(s x^2) */
static em_tensor *exp_of_square(const em_tensor *x, double s)
{
    em_tensor *sq = ei_unary(EM_SQUARE, x);
    em_tensor *ss = sq ? ei_binary_scalar(EM_MUL, sq, s, true, false) : NULL;
    em_tensor *r = ss ? ei_unary(EM_EXP, ss) : NULL;
    em_release(sq);
    em_release(ss);
    return r;
}

/* consumes x */
static em_tensor *rsqrt_x(em_tensor *x)
{
    em_tensor *r = x ? ei_unary(EM_RSQRT, x) : NULL;
    em_release(x);
    return r;
}

static int unary_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    const em_tensor *g = gout[0];
    em_tensor *x = em_ag_saved(n, 0), *y = em_ag_saved(n, 1);
    if (!x || !y) return -1;
    em_tensor *r = NULL;
    switch ((em_unary_op)n->op) {
    case EM_NEG: r = ei_unary(EM_NEG, g); break;
    case EM_ABS: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_SIGN, x)); break;
    case EM_SIGN: case EM_FLOOR: case EM_CEIL: case EM_ROUND: r = zeros_like_t(x); break;
    case EM_EXP: r = mul(g, y); break;
    case EM_LOG: r = ei_binary(EM_DIV, g, x); break;
    case EM_LOG1P: r = div_x(em_retain((em_tensor *)g), ei_binary_scalar(EM_ADD, x, 1, false, false)); break;
    case EM_EXPM1: r = mul_x(em_retain((em_tensor *)g), ei_binary_scalar(EM_ADD, y, 1, false, false)); break;
    case EM_SQRT: r = div_x(em_retain((em_tensor *)g), mul_s(y, 2)); break;
    case EM_RSQRT: /* d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3 */
        r = mul_x(mul_s(g, -0.5), ei_binary_scalar(EM_POW, y, 3, true, false)); break;
    case EM_SIN: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_COS, x)); break;
    case EM_COS: r = mul_x(mul_s(g, -1), ei_unary(EM_SIN, x)); break;
    case EM_TANH: { /* 1 - y^2 */
        em_tensor *y2 = ei_unary(EM_SQUARE, y);
        em_tensor *d = y2 ? ei_binary_scalar(EM_SUB, y2, 1, false, true) : NULL;
        em_release(y2);
        r = mul_x(em_retain((em_tensor *)g), d);
        break;
    }
    case EM_SIGMOID: { /* y (1 - y) */
        em_tensor *omy = ei_binary_scalar(EM_SUB, y, 1, false, true);
        r = mul_x(mul(g, y), omy);
        break;
    }
    case EM_RELU: { /* the gradient passes where the output is positive; the
                     * zero is 0-d and broadcast (a full tensor of zeros cost
                     * a third of the pass) */
        em_tensor *pos = ei_binary_scalar(EM_GT, y, 0, false, false);
        em_tensor *z = em_zeros(NULL, 0, g->dtype, em_dev(g));
        r = pos && z ? em_where(pos, g, z) : NULL;
        em_release(pos);
        em_release(z);
        break;
    }
    /* one fused pass for the derivative, then the product */
    case EM_GELU: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_GELU_GRAD, x)); break;
    case EM_GELU_GRAD: r = mul_x(em_retain((em_tensor *)g), gelu_second_derivative(x)); break;
    case EM_GELU_TANH: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_GELU_TANH_GRAD, x)); break;
    case EM_GELU_TANH_GRAD: r = mul_x(em_retain((em_tensor *)g), gelu_tanh_second_derivative(x)); break;
    case EM_SILU: { /* s + x s (1 - s), s = sigmoid(x) */
        em_tensor *s = ei_unary(EM_SIGMOID, x);
        em_tensor *oms = s ? ei_binary_scalar(EM_SUB, s, 1, false, true) : NULL;
        em_tensor *xs = s ? mul(x, s) : NULL;
        em_tensor *t = xs && oms ? mul(xs, oms) : NULL;
        em_tensor *d = t ? ei_binary(EM_ADD, s, t) : NULL;
        em_release(s); em_release(oms); em_release(xs); em_release(t);
        r = mul_x(em_retain((em_tensor *)g), d);
        break;
    }
    case EM_RECIPROCAL: r = mul_x(mul_s(g, -1), ei_unary(EM_SQUARE, y)); break;
    case EM_SQUARE: r = mul_x(mul_s(g, 2), em_retain(x)); break;
    case EM_TRUNC: r = zeros_like_t(x); break;
    case EM_EXP2: r = mul_x(mul_s(g, M_LN2), em_retain(y)); break;
    case EM_LOG2: r = div_x(em_retain((em_tensor *)g), mul_s(x, M_LN2)); break;
    case EM_LOG10: r = div_x(em_retain((em_tensor *)g), mul_s(x, M_LN10)); break;
    case EM_ERF: case EM_ERFC: /* +-2/sqrt(pi) exp(-x^2) */
        r = mul_x(mul_s(g, (n->op == EM_ERF ? 1 : -1) * M_2_SQRTPI), exp_of_square(x, -1)); break;
    case EM_ERFINV: /* sqrt(pi)/2 exp(y^2) */
        r = mul_x(mul_s(g, 0.88622692545275801365), exp_of_square(y, 1)); break;
    case EM_TAN: r = mul_x(em_retain((em_tensor *)g), one_plus_s_square(y, 1, 1)); break;   /* 1 + y^2 */
    case EM_SINH: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_COSH, x)); break;
    case EM_COSH: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_SINH, x)); break;
    case EM_ASIN: r = mul_x(em_retain((em_tensor *)g), rsqrt_x(one_plus_s_square(x, 1, -1))); break;
    case EM_ACOS: r = mul_x(mul_s(g, -1), rsqrt_x(one_plus_s_square(x, 1, -1))); break;
    case EM_ATAN: r = div_x(em_retain((em_tensor *)g), one_plus_s_square(x, 1, 1)); break;
    case EM_ASINH: r = mul_x(em_retain((em_tensor *)g), rsqrt_x(one_plus_s_square(x, 1, 1))); break;
    case EM_ACOSH: r = mul_x(em_retain((em_tensor *)g), rsqrt_x(one_plus_s_square(x, -1, 1))); break;
    case EM_ATANH: r = div_x(em_retain((em_tensor *)g), one_plus_s_square(x, 1, -1)); break;
    /* lgamma' = digamma, digamma' = polygamma(1, x): table ops, so they record in turn */
    case EM_LGAMMA: r = mul_x(em_retain((em_tensor *)g), ei_unary(EM_DIGAMMA, x)); break;
    case EM_DIGAMMA: r = mul_x(em_retain((em_tensor *)g), ei_binary_scalar(EM_POLYGAMMA, x, 1, true, false)); break;
    /* no backward in the table: never recorded. No default case: -Wswitch
     * fails the build while an op of the table has no case here. */
    case EM_LOGICAL_NOT: case EM_BITWISE_NOT: case EM_NUNARY:
        return em_set_error("backward: %s is not differentiable", n->name);
    }
    if (!r) return -1;
    gin[0] = fit(r, x);
    return gin[0] ? 0 : -1;
}

em_tensor *em_ag_unary(em_unary_op op, const em_tensor *a)
{
    em_tensor *out = WITHOUT_GRAD(ei_unary(op, a));
    const char *node = em_unary_info(op)->backward;
    if (!out || !em_dtype_is_float(out->dtype) || !node) return out;
    em_node *n = em_ag_node(node, unary_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->op = op;
    em_ag_input(n, 0, a);
    if (em_ag_save(n, 0, a, false) || em_ag_save(n, 1, out, true)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* ---- binary --------------------------------------------------------------- */

/* max/min: the gradient goes to the larger (smaller) input, split in half
 * where they are equal, as PyTorch does. */
static int extreme_backward(em_node *n, const em_tensor *g, const em_tensor *a, const em_tensor *b, em_tensor **gin)
{
    em_tensor *win = ei_binary(n->op == EM_MAXIMUM ? EM_GT : EM_LT, a, b);
    em_tensor *tie = ei_binary(EM_EQ, a, b);
    em_tensor *half = mul_s(g, 0.5);
    em_tensor *z = em_zeros(g->sizes, g->ndim, g->dtype, em_dev(g));
    int rc = win && tie && half && z ? 0 : -1;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!em_ag_wants(n, i)) continue;
        /* a gets g where it wins, b where it loses; both get g/2 on ties */
        em_tensor *mine = i == 0 ? em_where(win, g, z) : em_where(win, z, g);
        em_tensor *untied = mine ? em_where(tie, half, mine) : NULL;
        em_release(mine);
        gin[i] = fit(untied, i == 0 ? a : b);
        if (!gin[i]) rc = -1;
    }
    em_release(win); em_release(tie); em_release(half); em_release(z);
    return rc;
}

/* Which operands a binary node keeps for its backward (bit 0: a, bit 1: b,
 * bit 2: the output), given which inputs need a gradient. Add and sub keep
 * none: the shapes and dtypes in the node are enough, and holding tensors
 * the backward does not read would keep them alive until it runs. */
static unsigned binary_saves(em_binary_op op, bool wa, bool wb)
{
    switch (op) {
    case EM_ADD: case EM_SUB: return 0;
    case EM_MUL: return (wa ? 2u : 0u) | (wb ? 1u : 0u);
    case EM_DIV: return 2u | (wb ? 4u : 0u);
    case EM_REMAINDER: case EM_FMOD: return wb ? 3u : 0u;
    case EM_POLYGAMMA: return 3u;
    case EM_DIV_TRUNC: case EM_DIV_FLOOR: return 0;
    case EM_ATAN2: return 3u;
    case EM_COPYSIGN: return 5u;
    default: return 7u;                 /* pow, maximum, minimum */
    }
}

/* e(x - y), e being exp or exp2 */
static em_tensor *exp_of_diff(em_unary_op e, const em_tensor *x, const em_tensor *y)
{
    em_tensor *d = ei_binary(EM_SUB, x, y);
    em_tensor *r = d ? ei_unary(e, d) : NULL;
    em_release(d);
    return r;
}

static int binary_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    const em_tensor *g = gout[0];
    bool wa = em_ag_wants(n, 0), wb = em_ag_wants(n, 1);
    unsigned keep = binary_saves((em_binary_op)n->op, wa, wb);
    em_tensor *a = NULL, *b = NULL, *y = NULL;
    if (((keep & 1) && !(a = em_ag_saved(n, 0))) || ((keep & 2) && !(b = em_ag_saved(n, 1))) ||
        ((keep & 4) && !(y = em_ag_saved(n, 2))))
        return -1;
    em_tensor *ga = NULL, *gb = NULL;
    switch ((em_binary_op)n->op) {
    case EM_ADD:
        if (wa) ga = em_retain((em_tensor *)g);
        if (wb) gb = em_retain((em_tensor *)g);
        break;
    case EM_SUB:
        if (wa) ga = em_retain((em_tensor *)g);
        if (wb) gb = ei_unary(EM_NEG, g);
        break;
    case EM_MUL:
        if (wa) ga = mul(g, b);
        if (wb) gb = mul(g, a);
        break;
    case EM_DIV: /* d/da = 1/b, d/db = -a/b^2 = -y/b */
        if (wa) ga = ei_binary(EM_DIV, g, b);
        if (wb) gb = mul_x(ei_unary(EM_NEG, g), ei_binary(EM_DIV, y, b));
        break;
    case EM_POW: /* d/da = b a^(b-1), d/db = y log a */
        if (wa) {
            /* 0 where b is 0 (not 0 * 0^-1 = NaN at a = 0), as PyTorch */
            em_tensor *bm1 = ei_binary_scalar(EM_SUB, b, 1, false, false);
            em_tensor *d = mul_x(mul(g, b), bm1 ? ei_binary(EM_POW, a, bm1) : NULL);
            em_tensor *b0 = ei_binary_scalar(EM_EQ, b, 0, true, false);
            ga = d && b0 ? em_masked_fill(d, b0, 0) : NULL;
            em_release(bm1); em_release(d); em_release(b0);
        }
        if (wb) {
            /* 0 where a is 0 and b >= 0 (y log a = 0 * -inf there), as PyTorch */
            em_tensor *d = mul_x(mul(g, y), ei_unary(EM_LOG, a));
            em_tensor *a0 = ei_binary_scalar(EM_EQ, a, 0, true, false);
            em_tensor *bp = ei_binary_scalar(EM_GE, b, 0, true, false);
            em_tensor *m = a0 && bp ? ei_binary(EM_LOGICAL_AND, a0, bp) : NULL;
            gb = d && m ? em_masked_fill(d, m, 0) : NULL;
            em_release(d); em_release(a0); em_release(bp); em_release(m);
        }
        break;
    case EM_REMAINDER: /* a - b*floor(a/b): d/da = 1, d/db = -floor(a/b) */
    case EM_FMOD:      /* a - b*trunc(a/b): d/da = 1, d/db = -trunc(a/b) */
        if (wa) ga = em_retain((em_tensor *)g);
        if (wb) {
            em_tensor *q = ei_binary(EM_DIV, a, b);
            em_tensor *rq = q ? ei_unary(n->op == EM_REMAINDER ? EM_FLOOR : EM_TRUNC, q) : NULL;
            em_release(q);
            gb = mul_x(ei_unary(EM_NEG, g), rq);
        }
        break;
    case EM_DIV_TRUNC: case EM_DIV_FLOOR: /* piecewise constant */
        if (wa) ga = zeros_like_t(g);
        if (wb) gb = zeros_like_t(g);
        break;
    case EM_ATAN2: { /* d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2) */
        em_tensor *a2 = ei_unary(EM_SQUARE, a), *b2 = ei_unary(EM_SQUARE, b);
        em_tensor *den = a2 && b2 ? ei_binary(EM_ADD, a2, b2) : NULL;
        em_tensor *gd = den ? ei_binary(EM_DIV, g, den) : NULL;
        if (wa && gd) ga = mul(gd, b);
        if (wb && gd) gb = mul_x(ei_unary(EM_NEG, gd), em_retain(a));
        em_release(a2); em_release(b2); em_release(den); em_release(gd);
        break;
    }
    case EM_HYPOT: /* a / y, b / y */
        if (wa) ga = mul_x(em_retain((em_tensor *)g), ei_binary(EM_DIV, a, y));
        if (wb) gb = mul_x(em_retain((em_tensor *)g), ei_binary(EM_DIV, b, y));
        break;
    case EM_COPYSIGN: /* y / a where a != 0, else 0 (PyTorch); b gets none */
        if (wa) {
            em_tensor *q = ei_binary(EM_DIV, y, a);
            em_tensor *a0 = ei_binary_scalar(EM_EQ, a, 0, true, false);
            em_tensor *d = q && a0 ? em_masked_fill(q, a0, 0) : NULL;
            ga = mul_x(em_retain((em_tensor *)g), d);
            em_release(q); em_release(a0);
        }
        if (wb) gb = zeros_like_t(g);
        break;
    case EM_LOGADDEXP: case EM_LOGADDEXP2: { /* base^(a - y) and base^(b - y) */
        em_unary_op e = n->op == EM_LOGADDEXP ? EM_EXP : EM_EXP2;
        if (wa) ga = mul_x(em_retain((em_tensor *)g), exp_of_diff(e, a, y));
        if (wb) gb = mul_x(em_retain((em_tensor *)g), exp_of_diff(e, b, y));
        break;
    }
    case EM_POLYGAMMA: /* (x, n): polygamma(n+1, x) for x; the order is an integer, with none */
        if (wb) return em_set_error("backward: polygamma is not differentiable with respect to n");
        if (wa) {
            em_tensor *n1 = ei_binary_scalar(EM_ADD, b, 1, true, false);
            ga = mul_x(em_retain((em_tensor *)g), n1 ? ei_binary(EM_POLYGAMMA, a, n1) : NULL);
            em_release(n1);
        }
        break;
    case EM_MAXIMUM: case EM_MINIMUM:
        return extreme_backward(n, g, a, b, gin);
    /* no backward in the table (bool or integer results): never recorded */
    case EM_EQ: case EM_NE: case EM_LT: case EM_LE: case EM_GT: case EM_GE: case EM_LOGICAL_AND:
    case EM_LOGICAL_OR: case EM_BITWISE_AND: case EM_BITWISE_OR: case EM_BITWISE_XOR: case EM_BITWISE_LSHIFT:
    case EM_BITWISE_RSHIFT: case EM_NBINARY:
        return em_set_error("backward: %s is not differentiable", n->name);
    }
    if ((wa && !ga) || (wb && !gb)) { em_release(ga); em_release(gb); return -1; }
    if (wa && !(gin[0] = fit_to(ga, n->sizes, n->ndim, n->dtype))) { em_release(gb); return -1; }
    if (wb && !(gin[1] = fit_to(gb, n->sizes2, n->ndim2, n->dtype2))) return -1;
    return 0;
}

/* Records a binary node: the operands' shapes and dtypes, and the tensors
 * binary_saves asks for. */
static em_tensor *record_binary(em_binary_op op, const em_tensor *a, const em_tensor *b, em_tensor *out)
{
    em_node *n = em_ag_node(em_binary_info(op)->backward, binary_backward, 2);
    if (!n) { em_release(out); return NULL; }
    n->op = op;
    em_ag_input(n, 0, a);
    em_ag_input(n, 1, b);
    n->ndim = a->ndim;
    memcpy(n->sizes, a->sizes, sizeof(int64_t) * (size_t)a->ndim);
    n->dtype = a->dtype;
    n->ndim2 = b->ndim;
    memcpy(n->sizes2, b->sizes, sizeof(int64_t) * (size_t)b->ndim);
    n->dtype2 = b->dtype;
    unsigned keep = binary_saves(op, em_ag_wants(n, 0), em_ag_wants(n, 1));
    if (((keep & 1) && em_ag_save(n, 0, a, false)) || ((keep & 2) && em_ag_save(n, 1, b, false)) ||
        ((keep & 4) && em_ag_save(n, 2, out, true)))
        return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

static bool differentiable_binary(em_binary_op op) { return em_binary_info(op)->backward != NULL; }

em_tensor *em_ag_binary(em_binary_op op, const em_tensor *a, const em_tensor *b)
{
    em_tensor *out = WITHOUT_GRAD(ei_binary(op, a, b));
    if (!out || !em_dtype_is_float(out->dtype) || !differentiable_binary(op)) return out;
    return record_binary(op, a, b, out);
}

/* A binary op with a number: the number becomes a 0-d constant of the
 * result's dtype, saved in its operand slot with no edge, so the node is an
 * ordinary binary node and binary_backward serves it. */
em_tensor *em_ag_binary_scalar(em_binary_op op, const em_tensor *a, double s, bool s_is_int, bool scalar_first)
{
    em_tensor *out = WITHOUT_GRAD(ei_binary_scalar(op, a, s, s_is_int, scalar_first));
    if (!out || !em_dtype_is_float(out->dtype) || !differentiable_binary(op)) return out;
    em_tensor *c = em_scalar(s, out->dtype, em_dev(a));
    if (!c) { em_release(out); return NULL; }
    em_tensor *r = scalar_first ? record_binary(op, c, a, out) : record_binary(op, a, c, out);
    em_release(c);
    return r;
}

/* ---- clamp, where, casts -------------------------------------------------- */

static int clamp_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0);
    if (!x) return -1;
    /* the gradient passes where x is strictly inside (lo, hi): 0 on a bound, as
     * PyTorch 2.x (1.13 passed it on the bounds too) */
    em_tensor *keep = em_full(x->sizes, x->ndim, 1, EM_BOOL, em_dev(x));
    for (int i = 0; i < 2 && keep; i++) {
        if (!(i == 0 ? n->p.clamp.has_lo : n->p.clamp.has_hi)) continue;
        em_tensor *in = ei_binary_scalar(i == 0 ? EM_GT : EM_LT, x, i == 0 ? n->p.clamp.lo : n->p.clamp.hi, false, false);
        em_tensor *both = in ? ei_binary(EM_LOGICAL_AND, keep, in) : NULL;
        em_release(in);
        em_release(keep);
        keep = both;
    }
    em_tensor *z = keep ? zeros_like_t(gout[0]) : NULL;
    em_tensor *r = z ? em_where(keep, gout[0], z) : NULL;
    em_release(keep);
    em_release(z);
    gin[0] = fit(r, x);
    return gin[0] ? 0 : -1;
}

em_tensor *em_ag_clamp(const em_tensor *a, const double *lo, const double *hi)
{
    em_tensor *out = WITHOUT_GRAD(em_clamp(a, lo, hi));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node("ClampBackward", clamp_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->p.clamp.has_lo = lo != NULL;
    n->p.clamp.has_hi = hi != NULL;
    n->p.clamp.lo = lo ? *lo : 0;
    n->p.clamp.hi = hi ? *hi : 0;
    em_ag_input(n, 0, a);
    if (em_ag_save(n, 0, a, false)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* ---- clamp with tensor bounds ------------------------------------------------
 * PyTorch 2.x's gradient: x gets it where lo < x < hi; where x equals one
 * bound of a proper range (lo < hi), x and that bound get half each; where
 * lo == hi == x, x gets it all; where x or a bound is NaN, x gets it; a
 * bound gets it where it is the result (x beyond it, and hi wherever
 * lo > hi, as the result is hi there). The weights below are 0, 0.5 and 1
 * tensors built from comparisons (no gradient of their own); the gradient
 * of each input is gout times its weight, summed to the input's shape. */

/* a comparison's bool result as 0/1 in dtype dt */
static em_tensor *k_w(em_scope *k, em_binary_op op, const em_tensor *a, const em_tensor *b, em_dtype dt)
{
    return es_to(k, es_binary(k, op, a, b), dt);
}

static int clamp_tensor_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    bool has_lo = n->ndims & 1, has_hi = n->ndims & 2;
    em_tensor *x = em_ag_saved(n, 0), *lo = has_lo ? em_ag_saved(n, 1) : NULL, *hi = has_hi ? em_ag_saved(n, 2) : NULL;
    if (!x || (has_lo && !lo) || (has_hi && !hi)) return -1;
    em_dtype dt = gout[0]->dtype;
    em_scope k = {0};
    /* nan: x or a bound is NaN; inv: lo > hi; eq: lo == hi */
    em_tensor *nan = k_w(&k, EM_NE, x, x, dt);
    if (has_lo) nan = es_binary(&k, EM_MAXIMUM, nan, k_w(&k, EM_NE, lo, lo, dt));
    if (has_hi) nan = es_binary(&k, EM_MAXIMUM, nan, k_w(&k, EM_NE, hi, hi, dt));
    em_tensor *fin = es_scalar(&k, EM_SUB, es_scalar(&k, EM_MUL, nan, -1), -1);        /* 1 - nan */
    em_tensor *inv = has_lo && has_hi ? k_w(&k, EM_GT, lo, hi, dt) : NULL;
    em_tensor *neq = has_lo && has_hi ? k_w(&k, EM_NE, lo, hi, dt) : NULL;
    em_tensor *p = inv ? es_binary(&k, EM_MUL, fin, es_scalar(&k, EM_SUB, es_scalar(&k, EM_MUL, inv, -1), -1)) : fin;  /* fin (1 - inv) */
    /* the part of the gradient each bound takes where the range is proper */
    em_tensor *w_lo = NULL, *w_hi = NULL, *taken = NULL;
    for (int i = 0; i < 2; i++) {
        const em_tensor *b = i == 0 ? lo : hi;
        if (!b) continue;
        em_tensor *beyond = k_w(&k, i == 0 ? EM_LT : EM_GT, x, b, dt);
        em_tensor *tie = k_w(&k, EM_EQ, x, b, dt);
        if (neq) tie = es_binary(&k, EM_MUL, tie, neq);
        em_tensor *w = es_binary(&k, EM_MUL, p, es_binary(&k, EM_ADD, beyond, es_scalar(&k, EM_MUL, tie, 0.5)));
        taken = taken ? es_binary(&k, EM_ADD, taken, w) : w;
        if (i == 0) w_lo = w;
        else w_hi = inv ? es_binary(&k, EM_ADD, w, es_binary(&k, EM_MUL, fin, inv)) : w;
    }
    /* x: what the bounds do not take, and all of it where a NaN is involved */
    em_tensor *w_x = es_binary(&k, EM_ADD, nan, es_binary(&k, EM_SUB, p, taken));
    const em_tensor *in[3] = {x, lo, hi};
    em_tensor *w[3] = {w_x, w_lo, w_hi};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (!in[i] || !em_ag_wants(n, i)) continue;
        if (!w[i] || !(gin[i] = fit(mul(gout[0], w[i]), in[i]))) rc = -1;
    }
    em_scope_drop(&k);
    return rc;
}

em_tensor *em_ag_clamp_tensor(const em_tensor *a, const em_tensor *lo, const em_tensor *hi)
{
    em_tensor *out = WITHOUT_GRAD(em_clamp_tensor(a, lo, hi));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node("ClampBackward", clamp_tensor_backward, 3);
    if (!n) { em_release(out); return NULL; }
    n->ndims = (lo ? 1 : 0) | (hi ? 2 : 0);
    em_ag_input(n, 0, a);
    if (lo) em_ag_input(n, 1, lo);
    if (hi) em_ag_input(n, 2, hi);
    if (em_ag_save(n, 0, a, false) || (lo && em_ag_save(n, 1, lo, false)) || (hi && em_ag_save(n, 2, hi, false)))
        return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

static int where_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *cond = em_ag_saved(n, 0), *a = em_ag_saved(n, 1), *b = em_ag_saved(n, 2);
    if (!cond || !a || !b) return -1;
    em_tensor *z = zeros_like_t(gout[0]);
    if (!z) return -1;
    int rc = 0;
    if (em_ag_wants(n, 0) && !(gin[0] = fit(em_where(cond, gout[0], z), a))) rc = -1;
    if (rc == 0 && em_ag_wants(n, 1) && !(gin[1] = fit(em_where(cond, z, gout[0]), b))) rc = -1;
    em_release(z);
    return rc;
}

em_tensor *em_ag_where(const em_tensor *cond, const em_tensor *a, const em_tensor *b)
{
    em_tensor *out = WITHOUT_GRAD(em_where(cond, a, b));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node("WhereBackward", where_backward, 2);
    if (!n) { em_release(out); return NULL; }
    em_ag_input(n, 0, a);
    em_ag_input(n, 1, b);
    if (em_ag_save(n, 0, cond, false) || em_ag_save(n, 1, a, false) || em_ag_save(n, 2, b, false))
        return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

/* masked_fill: the filled positions get no gradient */
static int masked_fill_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *mask = em_ag_saved(n, 0), *x = em_ag_saved(n, 1);
    if (!mask || !x) return -1;
    gin[0] = fit(em_masked_fill(gout[0], mask, 0.0), x);
    return gin[0] ? 0 : -1;
}

em_tensor *em_ag_masked_fill(const em_tensor *t, const em_tensor *mask, double value)
{
    em_tensor *out = WITHOUT_GRAD(em_masked_fill(t, mask, value));
    if (!out || !em_dtype_is_float(out->dtype)) return out;
    em_node *n = em_ag_node("MaskedFillBackward", masked_fill_backward, 1);
    if (!n) { em_release(out); return NULL; }
    em_ag_input(n, 0, t);
    if (em_ag_save(n, 0, mask, false) || em_ag_save(n, 1, t, false)) return em_ag_abandon(n, out);
    return em_ag_output(n, out);
}

static int cast_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    gin[0] = em_to_dtype(gout[0], n->dtype);
    return gin[0] ? 0 : -1;
}

/* a dtype conversion between float dtypes (others cut the graph) */
em_tensor *em_ag_cast(const em_tensor *a, em_dtype d)
{
    em_tensor *out = WITHOUT_GRAD(em_cast_to(a, d));
    if (!out || out == a || !em_dtype_is_float(d)) return out;
    em_node *n = em_ag_node("ToCopyBackward", cast_backward, 1);
    if (!n) { em_release(out); return NULL; }
    n->dtype = a->dtype;
    em_ag_input(n, 0, a);
    return em_ag_output(n, out);
}
