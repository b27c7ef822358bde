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
static em_tensor *gelu_second_derivative(em_scope *s, const em_tensor *x)
{
    em_tensor *sq = es_unary(s, EM_SQUARE, x);
    em_tensor *pdf = es_scalar(s, EM_MUL, es_unary(s, EM_EXP, es_scalar(s, EM_MUL, sq, -0.5)), 0.39894228040143267794);
    return es_mul(s, pdf, es_scalar_ex(s, EM_SUB, sq, 2, false, true));
}

/* gelu_tanh''(x) = (1 - t^2) (u' - x t u'^2 + 3 k c x^2) with t = tanh(u),
 * u = k (x + c x^3), u' = k (1 + 3 c x^2), written as (t^2 - 1) (x t u'^2 -
 * u' - 3 k c x^2) (composed, so a third order is recorded too) */
static em_tensor *gelu_tanh_second_derivative(em_scope *s, const em_tensor *x)
{
    const double k = UM_GELU_K, c = UM_GELU_C;
    em_tensor *x2 = es_mul(s, x, x);
    em_tensor *u = es_scalar(s, EM_MUL, es_add(s, x, es_scalar(s, EM_MUL, es_mul(s, x2, x), c)), k);
    em_tensor *t = es_unary(s, EM_TANH, u);
    em_tensor *du = es_scalar(s, EM_MUL, es_scalar(s, EM_ADD, es_scalar(s, EM_MUL, x2, 3 * c), 1), k);
    em_tensor *xtdu2 = es_mul(s, es_mul(s, x, t), es_mul(s, du, du));
    em_tensor *inner = es_sub(s, es_sub(s, xtdu2, du), es_scalar(s, EM_MUL, x2, 3 * k * c));
    em_tensor *t2m1 = es_scalar(s, EM_SUB, es_mul(s, t, t), 1);
    return es_mul(s, t2m1, inner);
}

/* c + sc x^2 */
static em_tensor *c_plus_s_square(em_scope *s, const em_tensor *x, double c, double sc)
{
    em_tensor *ss = es_scalar_ex(s, EM_MUL, es_unary(s, EM_SQUARE, x), sc, true, false);
    return es_scalar_ex(s, EM_ADD, ss, c, true, false);
}

/* exp(sc x^2) */
static em_tensor *exp_of_square(em_scope *s, const em_tensor *x, double sc)
{
    return es_unary(s, EM_EXP, es_scalar_ex(s, EM_MUL, es_unary(s, EM_SQUARE, x), sc, true, false));
}

static int unary_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    const em_tensor *g = gout[0];
    em_tensor *x = em_ag_saved(n, 0), *y = em_ag_saved(n, 1);
    if (!x || !y) return -1;
    em_scope s = {0};
    em_tensor *r = NULL;
    switch ((em_unary_op)n->op) {
    case EM_NEG: r = es_unary(&s, EM_NEG, g); break;
    case EM_ABS: r = es_mul(&s, g, es_unary(&s, EM_SIGN, x)); break;
    case EM_SIGN: case EM_FLOOR: case EM_CEIL: case EM_ROUND: r = em_scope_keep(&s, zeros_like_t(x)); break;
    case EM_EXP: r = es_mul(&s, g, y); break;
    case EM_LOG: r = es_div(&s, g, x); break;
    case EM_LOG1P: r = es_div(&s, g, es_scalar(&s, EM_ADD, x, 1)); break;
    case EM_EXPM1: r = es_mul(&s, g, es_scalar(&s, EM_ADD, y, 1)); break;
    case EM_SQRT: r = es_div(&s, g, es_scalar(&s, EM_MUL, y, 2)); break;
    case EM_RSQRT: /* d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3 */
        r = es_mul(&s, es_scalar(&s, EM_MUL, g, -0.5), es_scalar_ex(&s, EM_POW, y, 3, true, false)); break;
    case EM_SIN: r = es_mul(&s, g, es_unary(&s, EM_COS, x)); break;
    case EM_COS: r = es_mul(&s, es_scalar(&s, EM_MUL, g, -1), es_unary(&s, EM_SIN, x)); break;
    case EM_TANH: /* 1 - y^2 */
        r = es_mul(&s, g, es_scalar_ex(&s, EM_SUB, es_unary(&s, EM_SQUARE, y), 1, false, true)); break;
    case EM_SIGMOID: /* g (y (1 - y)): the derivative in one pass, then the product (three passes before) */
        r = es_mul(&s, g, es_unary(&s, EM_SIGMOID_GRAD, y)); break;
    case EM_SIGMOID_GRAD: /* d/dy y (1 - y) = 1 - 2y, here x being sigmoid's output */
        r = es_mul(&s, g, es_scalar_ex(&s, EM_SUB, es_scalar(&s, EM_MUL, x, 2), 1, false, true)); break;
    case EM_RELU: { /* the gradient passes where the output is positive; the
                     * zero is 0-d and broadcast (a full tensor of zeros cost
                     * a third of the pass) */
        em_tensor *pos = es_scalar(&s, EM_GT, y, 0);
        em_tensor *z = em_scope_keep(&s, em_zeros(NULL, 0, g->dtype, em_dev(g)));
        r = pos && z ? em_scope_keep(&s, em_where(pos, g, z)) : NULL;
        break;
    }
    /* one fused pass for the derivative, then the product */
    case EM_GELU: r = es_mul(&s, g, es_unary(&s, EM_GELU_GRAD, x)); break;
    case EM_GELU_GRAD: r = es_mul(&s, g, gelu_second_derivative(&s, x)); break;
    case EM_GELU_TANH: r = es_mul(&s, g, es_unary(&s, EM_GELU_TANH_GRAD, x)); break;
    case EM_GELU_TANH_GRAD: r = es_mul(&s, g, gelu_tanh_second_derivative(&s, x)); break;
    /* s (1 + x (1 - s)), s = sigmoid(x), in one pass (composed of five ops it took 1.6x
     * PyTorch's time), then the product */
    case EM_SILU: r = es_mul(&s, g, es_unary(&s, EM_SILU_GRAD, x)); break;
    case EM_SILU_GRAD: { /* silu''(x) = s (1 - s) (2 + x (1 - 2 s)), composed to differentiate further */
        em_tensor *sg = es_unary(&s, EM_SIGMOID, x);
        em_tensor *ds = es_mul(&s, sg, es_scalar_ex(&s, EM_SUB, sg, 1, false, true));
        em_tensor *k = es_scalar(&s, EM_ADD, es_mul(&s, x, es_scalar_ex(&s, EM_SUB, es_scalar(&s, EM_MUL, sg, 2), 1,
                                                                      false, true)), 2);
        r = es_mul(&s, g, es_mul(&s, ds, k));
        break;
    }
    case EM_RECIPROCAL: r = es_mul(&s, es_scalar(&s, EM_MUL, g, -1), es_unary(&s, EM_SQUARE, y)); break;
    /* g (2 x): a gradient arriving expanded (after a sum or mean) meets a contiguous
     * 2x in the stride-0 loop; (2 g) x first made g full size by the slow path. The
     * same bits either way (doubling is exact). */
    case EM_SQUARE: r = es_mul(&s, g, es_scalar(&s, EM_MUL, x, 2)); break;
    case EM_TRUNC: r = em_scope_keep(&s, zeros_like_t(x)); break;
    case EM_EXP2: r = es_mul(&s, es_scalar(&s, EM_MUL, g, M_LN2), y); break;
    case EM_LOG2: r = es_div(&s, g, es_scalar(&s, EM_MUL, x, M_LN2)); break;
    case EM_LOG10: r = es_div(&s, g, es_scalar(&s, EM_MUL, x, M_LN10)); break;
    case EM_ERF: case EM_ERFC: /* +-2/sqrt(pi) exp(-x^2) */
        r = es_mul(&s, es_scalar(&s, EM_MUL, g, (n->op == EM_ERF ? 1 : -1) * M_2_SQRTPI), exp_of_square(&s, x, -1));
        break;
    case EM_ERFINV: /* sqrt(pi)/2 exp(y^2) */
        r = es_mul(&s, es_scalar(&s, EM_MUL, g, 0.88622692545275801365), exp_of_square(&s, y, 1)); break;
    case EM_TAN: r = es_mul(&s, g, c_plus_s_square(&s, y, 1, 1)); break;   /* 1 + y^2 */
    case EM_SINH: r = es_mul(&s, g, es_unary(&s, EM_COSH, x)); break;
    case EM_COSH: r = es_mul(&s, g, es_unary(&s, EM_SINH, x)); break;
    case EM_ASIN: r = es_mul(&s, g, es_unary(&s, EM_RSQRT, c_plus_s_square(&s, x, 1, -1))); break;
    case EM_ACOS:
        r = es_mul(&s, es_scalar(&s, EM_MUL, g, -1), es_unary(&s, EM_RSQRT, c_plus_s_square(&s, x, 1, -1))); break;
    case EM_ATAN: r = es_div(&s, g, c_plus_s_square(&s, x, 1, 1)); break;
    case EM_ASINH: r = es_mul(&s, g, es_unary(&s, EM_RSQRT, c_plus_s_square(&s, x, 1, 1))); break;
    case EM_ACOSH: r = es_mul(&s, g, es_unary(&s, EM_RSQRT, c_plus_s_square(&s, x, -1, 1))); break;
    case EM_ATANH: r = es_div(&s, g, c_plus_s_square(&s, x, 1, -1)); break;
    /* lgamma' = digamma, digamma' = polygamma(1, x): table ops, so they record in turn */
    case EM_LGAMMA: r = es_mul(&s, g, es_unary(&s, EM_DIGAMMA, x)); break;
    case EM_DIGAMMA: r = es_mul(&s, g, es_scalar_ex(&s, EM_POLYGAMMA, x, 1, true, false)); break;
    /* no backward in the table: never recorded. No default case: -Wswitch
     * fails the build while an op of the table has no case here. */
    case EM_LOGICAL_NOT: case EM_BITWISE_NOT: case EM_NUNARY:
        return em_set_error("backward: %s is not differentiable", n->name);
    }
    r = em_scope_finish(&s, r);
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
    em_scope s = {0};
    em_tensor *win = em_scope_keep(&s, ei_binary(n->op == EM_MAXIMUM ? EM_GT : EM_LT, a, b));
    em_tensor *tie = es_binary(&s, EM_EQ, a, b);
    em_tensor *half = es_scalar(&s, EM_MUL, g, 0.5);
    em_tensor *z = em_scope_keep(&s, em_zeros(g->sizes, g->ndim, g->dtype, em_dev(g)));
    int rc = win && tie && half && z ? 0 : -1;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!em_ag_wants(n, i)) continue;
        /* a gets g where it wins, b where it loses; both get g/2 on ties */
        em_tensor *mine = em_scope_keep(&s, i == 0 ? em_where(win, g, z) : em_where(win, z, g));
        em_tensor *untied = mine ? em_where(tie, half, mine) : NULL;
        gin[i] = fit(untied, i == 0 ? a : b);
        if (!gin[i]) rc = -1;
    }
    em_scope_drop(&s);
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
    case EM_POW: return 3u | (wb ? 4u : 0u);   /* the output only for the exponent's gradient */
    default: return 7u;                 /* maximum, minimum */
    }
}

/* e(x - y), e being exp or exp2 */
static em_tensor *exp_of_diff(em_scope *s, em_unary_op e, const em_tensor *x, const em_tensor *y)
{
    return es_unary(s, e, es_sub(s, x, y));
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
    em_scope s = {0};
    em_tensor *ga = NULL, *gb = NULL;
    switch ((em_binary_op)n->op) {
    case EM_ADD:
        if (wa) ga = (em_tensor *)g;
        if (wb) gb = (em_tensor *)g;
        break;
    case EM_SUB:
        if (wa) ga = (em_tensor *)g;
        if (wb) gb = es_unary(&s, EM_NEG, g);
        break;
    case EM_MUL:
        if (wa) ga = es_mul(&s, g, b);
        if (wb) gb = es_mul(&s, g, a);
        break;
    case EM_DIV: /* d/da = 1/b, d/db = -a/b^2 = -y/b */
        if (wa) ga = es_div(&s, g, b);
        if (wb) gb = es_mul(&s, es_unary(&s, EM_NEG, g), es_div(&s, y, b));
        break;
    case EM_POW: /* d/da = b a^(b-1), d/db = y log a */
        if (wa && n->p.pow.scalar) {
            /* a number as exponent e (no gradient of its own): PyTorch's g (e a^(e-1)),
             * 0 for e = 0, with no mask; e = 2 as g (2 a), the same bits in two passes */
            double e = n->p.pow.exponent;
            if (e == 0) ga = em_scope_keep(&s, zeros_like_t(g));
            else if (e == 2) ga = es_mul(&s, g, es_scalar(&s, EM_MUL, a, 2));
            else ga = es_mul(&s, g, es_scalar(&s, EM_MUL, es_scalar(&s, EM_POW, a, e - 1), e));
        } else if (wa) {
            /* 0 where b is 0 (not 0 * 0^-1 = NaN at a = 0), as PyTorch */
            em_tensor *d = es_mul(&s, es_mul(&s, g, b), es_binary(&s, EM_POW, a, es_scalar(&s, EM_SUB, b, 1)));
            em_tensor *b0 = es_scalar_ex(&s, EM_EQ, b, 0, true, false);
            ga = d && b0 ? em_scope_keep(&s, em_masked_fill(d, b0, 0)) : NULL;
        }
        if (wb) {
            /* 0 where a is 0 and b >= 0 (y log a = 0 * -inf there), as PyTorch */
            em_tensor *d = es_mul(&s, es_mul(&s, g, y), es_unary(&s, EM_LOG, a));
            em_tensor *m = es_binary(&s, EM_LOGICAL_AND, es_scalar_ex(&s, EM_EQ, a, 0, true, false),
                                     es_scalar_ex(&s, EM_GE, b, 0, true, false));
            gb = d && m ? em_scope_keep(&s, em_masked_fill(d, m, 0)) : NULL;
        }
        break;
    case EM_REMAINDER: /* a - b*floor(a/b): d/da = 1, d/db = -floor(a/b) */
    case EM_FMOD:      /* a - b*trunc(a/b): d/da = 1, d/db = -trunc(a/b) */
        if (wa) ga = (em_tensor *)g;
        if (wb) {
            em_tensor *rq = es_unary(&s, n->op == EM_REMAINDER ? EM_FLOOR : EM_TRUNC, es_div(&s, a, b));
            gb = es_mul(&s, es_unary(&s, EM_NEG, g), rq);
        }
        break;
    case EM_DIV_TRUNC: case EM_DIV_FLOOR: /* piecewise constant */
        if (wa) ga = em_scope_keep(&s, zeros_like_t(g));
        if (wb) gb = em_scope_keep(&s, zeros_like_t(g));
        break;
    case EM_ATAN2: { /* d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2) */
        em_tensor *den = es_add(&s, es_unary(&s, EM_SQUARE, a), es_unary(&s, EM_SQUARE, b));
        em_tensor *gd = es_div(&s, g, den);
        if (wa) ga = es_mul(&s, gd, b);
        if (wb) gb = es_mul(&s, es_unary(&s, EM_NEG, gd), a);
        break;
    }
    case EM_HYPOT: /* a / y, b / y */
        if (wa) ga = es_mul(&s, g, es_div(&s, a, y));
        if (wb) gb = es_mul(&s, g, es_div(&s, b, y));
        break;
    case EM_COPYSIGN: /* y / a where a != 0, else 0 (PyTorch); b gets none */
        if (wa) {
            em_tensor *q = es_div(&s, y, a);
            em_tensor *a0 = es_scalar_ex(&s, EM_EQ, a, 0, true, false);
            ga = es_mul(&s, g, q && a0 ? em_scope_keep(&s, em_masked_fill(q, a0, 0)) : NULL);
        }
        if (wb) gb = em_scope_keep(&s, zeros_like_t(g));
        break;
    case EM_LOGADDEXP: case EM_LOGADDEXP2: { /* base^(a - y) and base^(b - y) */
        em_unary_op e = n->op == EM_LOGADDEXP ? EM_EXP : EM_EXP2;
        if (wa) ga = es_mul(&s, g, exp_of_diff(&s, e, a, y));
        if (wb) gb = es_mul(&s, g, exp_of_diff(&s, e, b, y));
        break;
    }
    case EM_POLYGAMMA: /* (x, n): polygamma(n+1, x) for x; the order is an integer, with none */
        if (wb) return em_set_error("backward: polygamma is not differentiable with respect to n");
        if (wa) ga = es_mul(&s, g, es_binary(&s, EM_POLYGAMMA, a, es_scalar_ex(&s, EM_ADD, b, 1, true, false)));
        break;
    case EM_MAXIMUM: case EM_MINIMUM:
        return extreme_backward(n, g, a, b, gin);
    /* no backward in the table (bool or integer results): never recorded */
    case EM_EQ: case EM_NE: case EM_LT: case EM_LE: case EM_GT: case EM_GE: case EM_LOGICAL_AND:
    case EM_LOGICAL_OR: case EM_BITWISE_AND: case EM_BITWISE_OR: case EM_BITWISE_XOR: case EM_BITWISE_LSHIFT:
    case EM_BITWISE_RSHIFT: case EM_NBINARY:
        return em_set_error("backward: %s is not differentiable", n->name);
    }
    /* ga and gb outlive the scope: fit_to consumes them */
    if (ga) em_retain(ga);
    if (gb) em_retain(gb);
    em_scope_drop(&s);
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
    if (r && op == EM_POW && !scalar_first) {
        em_node *n = ((em_ag_meta *)r->autograd)->grad_fn;
        n->p.pow.scalar = true;
        n->p.pow.exponent = s;
    }
    return r;
}

/* ---- clamp, where, casts -------------------------------------------------- */

static int clamp_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    em_tensor *x = em_ag_saved(n, 0);
    if (!x) return -1;
    /* the gradient passes where x is strictly inside (lo, hi): 0 on a bound, as
     * PyTorch 2.x (1.13 passed it on the bounds too) */
    em_scope s = {0};
    em_tensor *keep = NULL;      /* em_clamp refuses a clamp without bounds: there is one */
    bool bounded = false;
    for (int i = 0; i < 2; i++) {
        if (!(i == 0 ? n->p.clamp.has_lo : n->p.clamp.has_hi)) continue;
        double bound = i == 0 ? n->p.clamp.lo : n->p.clamp.hi;
        em_tensor *inside = es_scalar(&s, i == 0 ? EM_GT : EM_LT, x, bound);
        keep = bounded ? es_binary(&s, EM_LOGICAL_AND, keep, inside) : inside;
        bounded = true;
    }
    /* a 0-d zero, broadcast as in ReLU's backward (a full one cost a pass) */
    em_tensor *z = keep ? em_scope_keep(&s, em_zeros(NULL, 0, gout[0]->dtype, em_dev(gout[0]))) : NULL;
    em_tensor *r = em_scope_finish(&s, z ? em_scope_keep(&s, em_where(keep, gout[0], z)) : NULL);
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
static em_tensor *k_w(em_scope *s, em_binary_op op, const em_tensor *a, const em_tensor *b, em_dtype dt)
{
    return es_to(s, es_binary(s, op, a, b), dt);
}

static int clamp_tensor_backward(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    bool has_lo = n->ndims & 1, has_hi = n->ndims & 2;
    em_tensor *x = em_ag_saved(n, 0), *lo = has_lo ? em_ag_saved(n, 1) : NULL, *hi = has_hi ? em_ag_saved(n, 2) : NULL;
    if (!x || (has_lo && !lo) || (has_hi && !hi)) return -1;
    em_dtype dt = gout[0]->dtype;
    em_scope s = {0};
    /* nan: x or a bound is NaN; inv: lo > hi; eq: lo == hi */
    em_tensor *nan = k_w(&s, EM_NE, x, x, dt);
    if (has_lo) nan = es_binary(&s, EM_MAXIMUM, nan, k_w(&s, EM_NE, lo, lo, dt));
    if (has_hi) nan = es_binary(&s, EM_MAXIMUM, nan, k_w(&s, EM_NE, hi, hi, dt));
    em_tensor *fin = es_scalar(&s, EM_SUB, es_scalar(&s, EM_MUL, nan, -1), -1);        /* 1 - nan */
    em_tensor *inv = has_lo && has_hi ? k_w(&s, EM_GT, lo, hi, dt) : NULL;
    em_tensor *neq = has_lo && has_hi ? k_w(&s, EM_NE, lo, hi, dt) : NULL;
    em_tensor *p = inv ? es_binary(&s, EM_MUL, fin, es_scalar(&s, EM_SUB, es_scalar(&s, EM_MUL, inv, -1), -1)) : fin;  /* fin (1 - inv) */
    /* the part of the gradient each bound takes where the range is proper */
    em_tensor *w_lo = NULL, *w_hi = NULL, *taken = NULL;
    for (int i = 0; i < 2; i++) {
        const em_tensor *b = i == 0 ? lo : hi;
        if (!b) continue;
        em_tensor *beyond = k_w(&s, i == 0 ? EM_LT : EM_GT, x, b, dt);
        em_tensor *tie = k_w(&s, EM_EQ, x, b, dt);
        if (neq) tie = es_binary(&s, EM_MUL, tie, neq);
        em_tensor *w = es_binary(&s, EM_MUL, p, es_binary(&s, EM_ADD, beyond, es_scalar(&s, EM_MUL, tie, 0.5)));
        taken = taken ? es_binary(&s, EM_ADD, taken, w) : w;
        if (i == 0) w_lo = w;
        else w_hi = inv ? es_binary(&s, EM_ADD, w, es_binary(&s, EM_MUL, fin, inv)) : w;
    }
    /* x: what the bounds do not take, and all of it where a NaN is involved */
    em_tensor *w_x = es_binary(&s, EM_ADD, nan, es_binary(&s, EM_SUB, p, taken));
    const em_tensor *in[3] = {x, lo, hi};
    em_tensor *w[3] = {w_x, w_lo, w_hi};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        if (!in[i] || !em_ag_wants(n, i)) continue;
        if (!w[i] || !(gin[i] = fit(ei_binary(EM_MUL, gout[0], w[i]), in[i]))) rc = -1;
    }
    em_scope_drop(&s);
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
