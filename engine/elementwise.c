/* elementwise.c — unary, binary and ternary elementwise ops: dtype rules
 * (PyTorch's promotion, true division, bool restrictions), broadcasting and
 * in-place checks. Kernels come from the backend's unary / binary / ternary /
 * clamp families; inputs are cast to the compute dtype here, so a kernel only
 * ever sees operands of one dtype. float16 and bfloat16 compute in float32:
 * a backend with half loops (elementwise_half: the CPU's unary and binary)
 * takes them as they are and rounds once into the half output; otherwise
 * (CUDA's unary and binary, clamp on every backend) they are cast to
 * float32 here and the result is cast back. where only selects, so it
 * takes them as they are. */
#include "internal.h"
#include "autograd.h"

#include <math.h>
#include <string.h>

const char *em_unary_name(em_unary_op op) { return em_unary_info(op)->name; }
const char *em_binary_name(em_binary_op op) { return em_binary_info(op)->name; }

/* sizes for 0-d tensors (a non-NULL pointer: em_empty copies zero bytes from it) */
static const int64_t no_sizes[1] = {0};

static bool is_half(em_dtype d) { return d == EM_FLOAT16 || d == EM_BFLOAT16; }
static em_op_dtypes binary_dtype_class(em_binary_op op) { return em_binary_info(op)->dtypes; }
static bool is_cmp(em_binary_op op) { return binary_dtype_class(op) == EM_OPDT_TO_BOOL; }
static bool is_bitwise(em_binary_op op)
{
    return binary_dtype_class(op) == EM_OPDT_BITWISE || binary_dtype_class(op) == EM_OPDT_INTEGER;
}

/* PyTorch's canCast: no float into an integer or bool, no non-bool into bool */
static bool can_cast(em_dtype from, em_dtype to)
{
    if (em_dtype_is_float(from) && !em_dtype_is_float(to)) return false;
    if (from != EM_BOOL && to == EM_BOOL) return false;
    return true;
}

static int cast_error(const char *op, em_dtype result, em_dtype out)
{
    return em_set_error("%s: result type %s can't be cast to the desired output type %s", op,
                        em_dtype_name(result), em_dtype_name(out));
}

/* The floating dtype integer inputs of float ops promote to: the default
 * dtype (which may be a storage type: then compute in float32). */
static em_dtype float_default(void) { return em_default_dtype(); }

static bool same_sizes(const em_tensor *t, const int64_t *sizes, int ndim)
{
    if (t->ndim != ndim) return false;
    for (int i = 0; i < ndim; i++)
        if (t->sizes[i] != sizes[i]) return false;
    return true;
}

/* t cast to dtype d, then broadcast to sizes (cast first: it copies fewer
 * elements). New reference. */
static em_tensor *operand(const em_tensor *t, em_dtype d, const int64_t *sizes, int ndim)
{
    em_tensor *c = em_cast_to(t, d);
    if (!c || same_sizes(c, sizes, ndim)) return c;
    em_tensor *e = em_expand(c, sizes, ndim);
    em_release(c);
    return e;
}

/* A 0-d tensor on a CPU may take part in an op on another device, as a
 * number would. Returns a new reference to t on dev, or NULL with an error. */
static em_tensor *on_device(const char *op, const em_tensor *t, const em_tensor *other)
{
    if (em_device_eq(em_dev(t), em_dev(other))) return em_retain((em_tensor *)t);
    if (t->ndim == 0 && em_dev(t).type == EM_CPU) return em_to_device(t, em_dev(other));
    em_check_same_device(op, t, other);
    return NULL;
}

/* ---- unary --------------------------------------------------------------- */

/* The checks of an op's dtype class (elementwise_ops.h) on its input dtype
 * d, which becomes the result dtype: float ops promote integers to the
 * default float dtype. Comparisons' bool result is their callers' part. */
static int class_dtype(const char *name, em_op_dtypes cls, em_dtype *d)
{
    switch (cls) {
    case EM_OPDT_FLOAT:
        if (!em_dtype_is_float(*d)) *d = float_default();
        return 0;
    case EM_OPDT_NUMERIC:
        if (*d == EM_BOOL) return em_set_error("%s: not supported for bool tensors", name);
        return 0;
    case EM_OPDT_INTEGER:
    case EM_OPDT_BITWISE:
        if (em_dtype_is_float(*d))
            return em_set_error("%s: only integer and bool tensors are supported, got %s", name, em_dtype_name(*d));
        if (cls == EM_OPDT_INTEGER && *d == EM_BOOL)
            return em_set_error("%s: not supported for bool tensors (shift an integer tensor)", name);
        return 0;
    case EM_OPDT_ALL:
    case EM_OPDT_TO_BOOL:
    case EM_NOPDT:
        return 0;
    }
    return 0;
}

/* The compute dtype (what the kernel sees) and result dtype of op on d. */
static int unary_dtypes(em_unary_op op, em_dtype d, em_dtype *cd, em_dtype *od)
{
    if (op == EM_NEG && d == EM_BOOL) {
        em_set_error("neg: negation of a bool tensor is not supported; use logical_not() to invert a mask");
        return -1;
    }
    if (op == EM_SQUARE && d == EM_BOOL) { *cd = *od = EM_INT64; return 0; }   /* square is pow(x, 2) */
    const em_op_info *info = em_unary_info(op);
    if (class_dtype(info->name, info->dtypes, &d)) return -1;
    *od = info->dtypes == EM_OPDT_TO_BOOL ? EM_BOOL : d;
    *cd = is_half(d) ? EM_FLOAT32 : d;
    return 0;
}

em_tensor *ei_unary(em_unary_op op, const em_tensor *a)
{
    if ((unsigned)op >= EM_NUNARY) return em_set_error("unary: invalid op %d", (int)op), NULL;
    if (op == EM_BITWISE_NOT && a->dtype == EM_BOOL) op = EM_LOGICAL_NOT;
    if (em_ag_needed1(a)) return em_ag_unary(op, a);
    em_dtype cd, od;
    if (unary_dtypes(op, a->dtype, &cd, &od)) return NULL;
    /* a backend with half loops takes a half input as it is */
    if (is_half(a->dtype) && em_be(a)->elementwise_half && (od == a->dtype || od == EM_BOOL)) cd = a->dtype;
    em_dtype kod = od == EM_BOOL ? EM_BOOL : cd;
    em_tensor *x = em_cast_to(a, cd);
    if (!x) return NULL;
    em_tensor *out = em_empty(a->sizes, a->ndim, kod, em_dev(a));
    if (!out || em_be(a)->unary(op, out, x)) { em_release(x); em_release(out); return NULL; }
    em_release(x);
    if (kod == od) return out;
    em_tensor *r = em_cast_to(out, od);
    em_release(out);
    return r;
}

em_tensor *em_unary(em_unary_op op, const em_tensor *a)
{
    EM_AUTOCAST(em_unary_info(op)->autocast, ei_unary(op, EM_AC_ARG(0)), a);
    return ei_unary(op, a);
}

int em_unary_(em_unary_op op, em_tensor *a)
{
    if ((unsigned)op >= EM_NUNARY) return em_set_error("unary: invalid op %d", (int)op);
    const char *name = em_unary_info(op)->inplace ? em_unary_info(op)->inplace : em_unary_name(op);
    if (op == EM_BITWISE_NOT && a->dtype == EM_BOOL) op = EM_LOGICAL_NOT;
    if (em_ag_check_inplace(name, a, NULL)) return -1;
    em_dtype cd, od;
    if (unary_dtypes(op, a->dtype, &cd, &od)) return -1;
    if (!can_cast(od, a->dtype)) return cast_error(name, od, a->dtype);
    if (em_check_writable(name, a)) return -1;
    int rc;
    if (cd == a->dtype && od == a->dtype) {
        rc = em_be(a)->unary(op, a, a);
    } else {
        em_tensor *r = ei_unary(op, a);
        if (!r) return -1;
        rc = em_be(a)->cast(a, r);
        em_release(r);
    }
    if (rc == 0) em_bump_version(a);
    return rc;
}

/* ---- binary -------------------------------------------------------------- */

/* Compute and result dtypes of op for the promoted dtype rt. */
static int binary_dtypes(em_binary_op op, em_dtype rt, em_dtype *cd, em_dtype *od)
{
    if (op == EM_SUB && rt == EM_BOOL) {
        em_set_error("sub: subtraction of two bool tensors is not supported; use logical_xor() or ne() instead");
        return -1;
    }
    if (class_dtype(em_binary_name(op), binary_dtype_class(op), &rt)) return -1;
    *cd = is_half(rt) ? EM_FLOAT32 : rt;
    *od = is_cmp(op) ? EM_BOOL : rt;
    return 0;
}

/* The general path: promotion, broadcasting, casts. */
static em_tensor *binary_general(em_binary_op op, const em_tensor *a, const em_tensor *b)
{
    const char *name = em_binary_name(op);
    if ((unsigned)op >= EM_NBINARY) return em_set_error("binary: invalid op %d", (int)op), NULL;
    em_tensor *da = NULL, *db = NULL;
    if (!em_device_eq(em_dev(a), em_dev(b))) {
        /* a 0-d CPU tensor joins the other operand's device */
        if (a->ndim == 0 && em_dev(a).type == EM_CPU) {
            if (!(da = on_device(name, a, b))) return NULL;
            a = da;
        } else {
            if (!(db = on_device(name, b, a))) return NULL;
            b = db;
        }
    }
    em_tensor *out = NULL, *xa = NULL, *xb = NULL;
    em_dtype cd, od;
    int64_t shape[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(a->sizes, a->ndim, b->sizes, b->ndim, shape, name);
    em_dtype rt = em_result_type(a, b);
    if (nd < 0 || binary_dtypes(op, rt, &cd, &od)) goto done;
    /* a backend with half loops takes the half operands as they are (the
     * others, Lua numbers among them, in float32) and rounds once */
    em_dtype ca = cd, cb = cd;
    if (is_half(rt) && em_be(a)->elementwise_half) {
        cd = rt;
        ca = a->dtype == rt ? rt : EM_FLOAT32;
        cb = b->dtype == rt ? rt : EM_FLOAT32;
    }
    if (!(xa = operand(a, ca, shape, nd)) || !(xb = operand(b, cb, shape, nd))) goto done;
    em_dtype kod = od == EM_BOOL ? EM_BOOL : cd;
    if (!(out = em_empty(shape, nd, kod, em_dev(a)))) goto done;
    if (em_be(a)->binary(op, out, xa, xb)) { em_release(out); out = NULL; goto done; }
    if (kod != od) {
        em_tensor *r = em_cast_to(out, od);
        em_release(out);
        out = r;
    }
done:
    em_release(xa);
    em_release(xb);
    em_release(da);
    em_release(db);
    return out;
}

/* True when the op's result and compute dtypes are just d: the fast paths
 * then need no casts. */
static bool plain_dtype(em_binary_op op, em_dtype d)
{
    switch (binary_dtype_class(op)) {
    case EM_OPDT_BITWISE: return em_dtype_is_int(d) || d == EM_BOOL;
    case EM_OPDT_INTEGER: return em_dtype_is_int(d);
    case EM_OPDT_FLOAT: return d == EM_FLOAT32 || d == EM_FLOAT64;
    case EM_OPDT_NUMERIC: return !is_half(d) && d != EM_BOOL;
    default: return !is_half(d);
    }
}

em_tensor *ei_binary(em_binary_op op, const em_tensor *a, const em_tensor *b)
{
    if (em_ag_needed2(a, b)) return em_ag_binary(op, a, b);
    /* Fast path for the common small case (a + b, same shape and dtype):
     * it is what per-op overhead is measured on. */
    if (a->dtype == b->dtype && a->ndim == b->ndim && (unsigned)op < EM_NBINARY &&
        a->storage->backend == b->storage->backend && em_device_eq(em_dev(a), em_dev(b)) &&
        (plain_dtype(op, a->dtype) || (is_half(a->dtype) && !is_bitwise(op) && em_be(a)->elementwise_half)) &&
        memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim) == 0 &&
        em_is_contiguous(a) && em_is_contiguous(b)) {
        em_tensor *out = em_empty(a->sizes, a->ndim, is_cmp(op) ? EM_BOOL : a->dtype, em_dev(a));
        if (!out) return NULL;
        if (em_be(a)->binary(op, out, a, b)) { em_release(out); return NULL; }
        return out;
    }
    return binary_general(op, a, b);
}

em_tensor *em_binary(em_binary_op op, const em_tensor *a, const em_tensor *b)
{
    EM_AUTOCAST(em_binary_info(op)->autocast, ei_binary(op, EM_AC_ARG(0), EM_AC_ARG(1)), a, b);
    return ei_binary(op, a, b);
}

int em_binary_(em_binary_op op, em_tensor *a, const em_tensor *b)
{
    if ((unsigned)op >= EM_NBINARY) return em_set_error("binary: invalid op %d", (int)op);
    const char *name = em_binary_info(op)->inplace ? em_binary_info(op)->inplace : em_binary_name(op);
    if (em_ag_check_inplace(name, a, b)) return -1;
    em_tensor *db = NULL;
    if (!em_device_eq(em_dev(a), em_dev(b))) {
        if (!(db = on_device(name, b, a))) return -1;
        b = db;
    }
    int rc = -1;
    em_tensor *xb = NULL;
    em_dtype cd, od;
    int64_t shape[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(a->sizes, a->ndim, b->sizes, b->ndim, shape, name);
    if (nd < 0) goto done;
    if (!same_sizes(a, shape, nd)) {
        em_set_error("%s: output with shape %s doesn't match the broadcast shape %s", name, SHAPE(a),
                     em_sizes_tmp(shape, nd));
        goto done;
    }
    if (binary_dtypes(op, em_result_type(a, b), &cd, &od)) goto done;
    if (!can_cast(od, a->dtype)) { cast_error(name, od, a->dtype); goto done; }
    if (em_check_writable(name, a)) goto done;
    /* b overlapping a (a[2:] += a[:-1]) would read values already written */
    if (b->storage == a->storage && !(b->offset == a->offset && b->ndim == a->ndim &&
        memcmp(b->strides, a->strides, sizeof(int64_t) * (size_t)a->ndim) == 0)) {
        em_tensor *c = em_clone(b);
        if (!c) goto done;
        em_release(db);
        b = db = c;
    }
    if (cd == a->dtype && od == a->dtype) {
        if (!(xb = operand(b, cd, a->sizes, a->ndim))) goto done;
        rc = em_be(a)->binary(op, a, a, xb);
    } else {
        em_tensor *r = binary_general(op, a, b);
        if (!r) goto done;
        rc = em_be(a)->cast(a, r);
        em_release(r);
    }
    if (rc == 0) em_bump_version(a);
done:
    em_release(xb);
    em_release(db);
    return rc;
}

/* A 0-d "wrapped number" tensor for a C number: float64 for a float, int64
 * for an integer, so that em_result_type treats it as a weak scalar. */
static em_tensor *wrapped_number(double s, bool s_is_int, em_device dev)
{
    em_tensor *t = em_empty(no_sizes, 0, s_is_int ? EM_INT64 : EM_FLOAT64, dev);
    if (!t) return NULL;
    if (t->storage->backend->fill(t, s)) { em_release(t); return NULL; }
    t->wrapped_number = true;
    return t;
}

em_tensor *ei_binary_scalar(em_binary_op op, const em_tensor *a, double s, bool s_is_int,
                            bool scalar_first)
{
    if ((unsigned)op >= EM_NBINARY) return em_set_error("binary: invalid op %d", (int)op), NULL;
    if (em_ag_needed1(a)) return em_ag_binary_scalar(op, a, s, s_is_int, scalar_first);
    em_dtype d = a->dtype;
    /* Fast path: a contiguous float tensor on the CPU and a number. The
     * number takes a's dtype (it is a weak scalar); it sits in a stack
     * tensor that is expanded (stride 0) to a's shape and handed to the kernel,
     * which reads it and keeps nothing. */
    if ((d == EM_FLOAT32 || d == EM_FLOAT64) && !is_bitwise(op) && em_dev(a).type == EM_CPU && em_is_contiguous(a)) {
        union { float f; double g; } v;
        if (d == EM_FLOAT32) v.f = (float)s; else v.g = s;
        em_storage st = *a->storage;
        st.data = &v;
        st.nbytes = sizeof v;
        st.refcount = 1;
        em_tensor sc = *a;
        sc.storage = &st;
        sc.offset = 0;
        sc.wrapped_number = true;
        sc.autograd = NULL;
        sc.requires_grad = false;
        for (int i = 0; i < a->ndim; i++) sc.strides[i] = 0;
        em_tensor *out = em_empty(a->sizes, a->ndim, is_cmp(op) ? EM_BOOL : d, em_dev(a));
        if (!out) return NULL;
        int rc = scalar_first ? em_be(a)->binary(op, out, &sc, a) : em_be(a)->binary(op, out, a, &sc);
        if (rc) { em_release(out); return NULL; }
        return out;
    }
    if (op == EM_POW && !scalar_first && s_is_int && s < 0 && !em_dtype_is_float(d))
        return em_set_error("pow: integers to negative integer powers are not allowed (%s tensor ^ %g)",
                            em_dtype_name(d), s), NULL;
    em_tensor *w = wrapped_number(s, s_is_int, em_dev(a));
    if (!w) return NULL;
    /* The number is cast to the compute dtype, which is a's when the number
     * is weaker: check that an integer one fits, so int32 + 2^32 is refused instead of
     * wrapping. A comparison is computed in a wider dtype instead, so that
     * int32 == 2^40 is false everywhere (PyTorch's answer). */
    em_dtype cd, od;
    if (binary_dtypes(op, em_result_type(a, w), &cd, &od) == 0 && em_dtype_is_int(cd) && !em_value_fits(s, cd)) {
        em_release(w);
        if (!is_cmp(op)) return em_check_value_fits(em_binary_name(op), s, cd), NULL;
        em_tensor *wide = em_cast_to(a, em_value_fits(s, EM_INT64) && s_is_int ? EM_INT64 : EM_FLOAT64);
        em_tensor *r = wide ? ei_binary_scalar(op, wide, s, s_is_int, scalar_first) : NULL;
        em_release(wide);
        return r;
    }
    em_tensor *r = scalar_first ? ei_binary(op, w, a) : ei_binary(op, a, w);
    em_release(w);
    return r;
}

em_tensor *em_binary_scalar(em_binary_op op, const em_tensor *a, double s, bool s_is_int, bool scalar_first)
{
    EM_AUTOCAST(em_binary_info(op)->autocast, ei_binary_scalar(op, EM_AC_ARG(0), s, s_is_int, scalar_first), a);
    return ei_binary_scalar(op, a, s, s_is_int, scalar_first);
}

em_tensor *ei_pow_scalar(const em_tensor *a, double e)
{
    /* an integral exponent counts as an integer number, so int ^ 2 stays int */
    bool is_int = e == floor(e) && fabs(e) < 9.007199254740992e15;
    return ei_binary_scalar(EM_POW, a, e, is_int, false);
}

em_tensor *em_pow_scalar(const em_tensor *a, double e)
{
    EM_AUTOCAST(em_binary_info(EM_POW)->autocast, ei_pow_scalar(EM_AC_ARG(0), e), a);
    return ei_pow_scalar(a, e);
}

/* ---- clamp --------------------------------------------------------------- */

em_tensor *em_clamp(const em_tensor *a, const double *lo, const double *hi)
{
    if (!lo && !hi) return em_set_error("clamp: at least one of min and max must be given"), NULL;
    if (em_ag_needed1(a)) return em_ag_clamp(a, lo, hi);
    em_dtype rt = a->dtype;
    if (!em_dtype_is_float(rt)) {
        /* bounds are weak scalars: a fractional bound makes the result float */
        bool frac = (lo && (*lo != floor(*lo))) || (hi && (*hi != floor(*hi)));
        if (frac) rt = float_default();
        else if (rt == EM_BOOL) rt = EM_INT64;
    }
    em_dtype cd = is_half(rt) ? EM_FLOAT32 : rt;
    double l = lo ? *lo : 0, h = hi ? *hi : 0;
    if (em_dtype_is_int(cd)) {
        /* a bound beyond the dtype's range clamps nothing on that side: pull
         * it in to the range's end rather than let the cast wrap it */
        double tmin, tmax;
        em_int_range(cd, &tmin, &tmax);
        l = l < tmin ? tmin : l > tmax ? tmax : l;
        h = h < tmin ? tmin : h > tmax ? tmax : h;
    }
    em_tensor *x = em_cast_to(a, cd);
    if (!x) return NULL;
    em_tensor *out = em_empty(a->sizes, a->ndim, cd, em_dev(a));
    if (!out || em_be(a)->clamp(out, x, l, h, lo != NULL, hi != NULL)) {
        em_release(x);
        em_release(out);
        return NULL;
    }
    em_release(x);
    if (cd == rt) return out;
    em_tensor *r = em_cast_to(out, rt);
    em_release(out);
    return r;
}

/* clamp in place: a float32/float64 tensor runs the kernel on itself, in its
 * own layout (clamp_ on a transposed view read and wrote across pages when
 * it went through a contiguous result); other dtypes take em_clamp and the
 * in-place write's checks. */
int em_clamp_(em_tensor *t, const double *lo, const double *hi)
{
    if (t->dtype != EM_FLOAT32 && t->dtype != EM_FLOAT64) {
        em_tensor *r = em_clamp(t, lo, hi);
        if (!r) return -1;
        int rc = em_assign_result_("clamp_", t, r);
        em_release(r);
        return rc;
    }
    if (!lo && !hi) return em_set_error("clamp_: at least one of min and max must be given");
    if (em_ag_check_inplace("clamp_", t, NULL) || em_check_writable("clamp_", t)) return -1;
    int rc = em_be(t)->clamp(t, t, lo ? *lo : 0, hi ? *hi : 0, lo != NULL, hi != NULL);
    if (rc == 0) em_bump_version(t);
    return rc;
}

/* ---- where and masked_fill ----------------------------------------------- */

em_tensor *em_where(const em_tensor *cond, const em_tensor *a, const em_tensor *b)
{
    if (cond->dtype != EM_BOOL)
        return em_set_error("where: expected a bool condition, got a %s tensor %s", em_dtype_name(cond->dtype),
                            SHAPE(cond)), NULL;
    if (em_check_same_device("where", cond, a) || em_check_same_device("where", cond, b)) return NULL;
    if (em_ag_needed2(a, b)) return em_ag_where(cond, a, b);
    em_dtype rt;
    if (a->wrapped_number && b->wrapped_number) {
        /* two numbers: a float number gives the default dtype, not float64 */
        bool fa = em_dtype_is_float(a->dtype), fb = em_dtype_is_float(b->dtype);
        rt = fa || fb ? em_default_dtype() : EM_INT64;
    } else {
        rt = em_result_type(a, b);
    }
    int64_t s1[EM_MAX_DIMS], shape[EM_MAX_DIMS];
    int n1 = em_broadcast_shapes(a->sizes, a->ndim, b->sizes, b->ndim, s1, "where");
    if (n1 < 0) return NULL;
    int nd = em_broadcast_shapes(cond->sizes, cond->ndim, s1, n1, shape, "where");
    if (nd < 0) return NULL;
    em_tensor *xc = operand(cond, EM_BOOL, shape, nd);
    em_tensor *xa = xc ? operand(a, rt, shape, nd) : NULL;
    em_tensor *xb = xa ? operand(b, rt, shape, nd) : NULL;
    em_tensor *out = xb ? em_empty(shape, nd, rt, em_dev(cond)) : NULL;
    if (out && em_be(cond)->ternary(EM_WHERE, out, xc, xa, xb, 0)) { em_release(out); out = NULL; }
    em_release(xc);
    em_release(xa);
    em_release(xb);
    return out;
}

/* masked_fill_ under the name of the op the user called */
static int masked_fill_as(const char *op, em_tensor *t, const em_tensor *mask, double value)
{
    if (mask->dtype != EM_BOOL)
        return em_set_error("%s: expected a bool mask, got a %s tensor %s", op, em_dtype_name(mask->dtype),
                            SHAPE(mask));
    if (em_check_same_device(op, t, mask)) return -1;
    if (em_ag_check_inplace(op, t, NULL) || em_check_value_fits(op, value, t->dtype))
        return -1;
    int64_t shape[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, shape, op);
    if (nd < 0) return -1;
    if (!same_sizes(t, shape, nd))
        return em_set_error("%s: mask %s cannot be broadcast to the tensor's shape %s", op, SHAPE(mask),
                            SHAPE(t));
    if (em_check_writable(op, t)) return -1;
    em_tensor *v = em_empty(no_sizes, 0, t->dtype, em_dev(t));
    if (!v) return -1;
    int rc = -1;
    em_tensor *xm = NULL, *xv = NULL;
    if (em_be(t)->fill(v, value)) goto done;
    if (!(xm = operand(mask, EM_BOOL, t->sizes, t->ndim)) || !(xv = operand(v, t->dtype, t->sizes, t->ndim)))
        goto done;
    rc = em_be(t)->ternary(EM_WHERE, t, xm, xv, t, 0);
    if (rc == 0) em_bump_version(t);
done:
    em_release(v);
    em_release(xm);
    em_release(xv);
    return rc;
}

int em_masked_fill_(em_tensor *t, const em_tensor *mask, double value)
{
    return masked_fill_as("masked_fill_", t, mask, value);
}

em_tensor *em_masked_fill(const em_tensor *t, const em_tensor *mask, double value)
{
    if (mask->dtype != EM_BOOL)
        return em_set_error("masked_fill: expected a bool mask, got a %s tensor %s", em_dtype_name(mask->dtype),
                            SHAPE(mask)), NULL;
    if (em_check_same_device("masked_fill", t, mask)) return NULL;
    if (em_ag_needed1(t)) return em_ag_masked_fill(t, mask, value);
    int64_t shape[EM_MAX_DIMS];
    int nd = em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, shape, "masked_fill");
    if (nd < 0) return NULL;
    em_tensor *out = em_empty(shape, nd, t->dtype, em_dev(t));
    if (!out) return NULL;
    em_tensor *xt = operand(t, t->dtype, shape, nd);
    if (!xt || em_be(t)->cast(out, xt) || masked_fill_as("masked_fill", out, mask, value)) {
        em_release(xt);
        em_release(out);
        return NULL;
    }
    em_release(xt);
    return out;
}

/* ---- math composed from the ops above ---------------------------------------
 * Each is an exact composition of engine ops, so it runs on every backend
 * and its gradient comes from the parts. A chain of temporaries is kept in
 * an em_scope and released at the end. */

static em_tensor *scal(double v, em_dtype d, em_device dev) { return em_scalar(v, d, dev); }

em_tensor *em_round_decimals(const em_tensor *a, int64_t decimals)
{
    if (decimals == 0) return ei_unary(EM_ROUND, a);
    if (!em_dtype_is_float(a->dtype))
        return em_set_error("round: decimals is only supported for float tensors, got %s",
                            em_dtype_name(a->dtype)), NULL;
    if (decimals > 400 || decimals < -400)
        return em_set_error("round: decimals %lld is out of range [-400, 400]", (long long)decimals), NULL;
    /* PyTorch's formula: the power of ten in the tensor's dtype, then
     * round(x * p) / p, or round(x / p) * p for negative decimals */
    bool neg = decimals < 0;
    double p = pow(10.0, (double)(neg ? -decimals : decimals));
    em_scope k = {0};
    em_tensor *r = es_unary(&k, EM_ROUND, es_scalar(&k, neg ? EM_DIV : EM_MUL, a, p));
    return em_scope_finish(&k, es_scalar(&k, neg ? EM_MUL : EM_DIV, r, p));
}

em_tensor *em_frac(const em_tensor *a)
{
    if (!em_dtype_is_float(a->dtype))
        return em_set_error("frac: only float tensors are supported, got %s", em_dtype_name(a->dtype)), NULL;
    em_scope k = {0};
    return em_scope_finish(&k, es_sub(&k, a, es_unary(&k, EM_TRUNC, a)));
}

em_tensor *em_logit(const em_tensor *a, const double *eps)
{
    em_scope k = {0};
    em_tensor *x = (em_tensor *)a;
    if (!em_dtype_is_float(a->dtype) && !(x = es_to(&k, a, float_default()))) return NULL;
    /* a negative eps clamps nothing, as in PyTorch. The gradient passes on the
     * bounds (PyTorch's logit backward zeroes only x < eps and x > 1 - eps), so
     * the clamped values replace x only outside them, not through clamp's
     * gradient, which is 0 on a bound */
    if (eps && *eps >= 0) {
        double lo = *eps, hi = 1 - *eps;
        em_tensor *c = em_scope_keep(&k, WITHOUT_GRAD(em_clamp(x, &lo, &hi)));
        em_tensor *below = c ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary_scalar(EM_LT, x, lo, false, false))) : NULL;
        em_tensor *above = below ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary_scalar(EM_GT, x, hi, false, false))) : NULL;
        em_tensor *out = es_binary(&k, EM_LOGICAL_OR, below, above);
        if (!out || !(x = em_scope_keep(&k, em_where(out, c, x)))) return em_scope_finish(&k, NULL);
    }
    em_tensor *omx = es_scalar_ex(&k, EM_SUB, x, 1, true, true);
    return em_scope_finish(&k, es_unary(&k, EM_LOG, es_div(&k, x, omx)));
}

/* x log y with log(1) in place of log(y) where x == 0 and y is 0 or less or
 * +inf: the result there is 0 (not 0 * -inf or 0 * inf = NaN), and so is the
 * gradient for x. Where x == 0 and y is positive and finite the gradient for x
 * stays log(y), PyTorch 2.x's (its backward zeroes only x == 0 with y <= 0). A
 * NaN y gives NaN. */
em_tensor *em_xlogy(const em_tensor *a, const em_tensor *b)
{
    em_dtype rt = em_result_type(a, b);
    if (!em_dtype_is_float(rt)) rt = float_default();
    em_scope k = {0};
    em_tensor *x = es_to(&k, a, rt), *y = x ? es_to(&k, b, rt) : NULL;
    em_tensor *x0 = y ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary_scalar(EM_EQ, x, 0, true, false))) : NULL;
    em_tensor *yle0 = x0 ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary_scalar(EM_LE, y, 0, true, false))) : NULL;
    em_tensor *yinf = yle0 ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary_scalar(EM_EQ, y, INFINITY, false, false))) : NULL;
    em_tensor *m = es_binary(&k, EM_LOGICAL_AND, x0, es_binary(&k, EM_LOGICAL_OR, yle0, yinf));
    em_tensor *one = m ? em_scope_keep(&k, scal(1, rt, em_dev(y))) : NULL;
    em_tensor *ys = one ? em_scope_keep(&k, em_where(m, one, y)) : NULL;
    return em_scope_finish(&k, es_mul(&k, x, es_unary(&k, EM_LOG, ys)));
}

static double dtype_max(em_dtype d)
{
    switch (d) {
    case EM_FLOAT16: return 65504.0;
    case EM_BFLOAT16: return 3.3895313892515355e38;
    case EM_FLOAT32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
    }
}

em_tensor *em_nan_to_num(const em_tensor *a, const double *nan, const double *posinf, const double *neginf)
{
    if (!em_dtype_is_float(a->dtype)) return em_clone(a);
    double v[3] = {nan ? *nan : 0, posinf ? *posinf : dtype_max(a->dtype), neginf ? *neginf : -dtype_max(a->dtype)};
    em_float_class cls[3] = {EM_ISNAN, EM_ISPOSINF, EM_ISNEGINF};
    em_scope k = {0};
    em_tensor *r = (em_tensor *)a;
    for (int i = 0; i < 3; i++) {
        /* a replacement beyond the dtype's range becomes +-inf, as a cast would */
        if (!em_value_fits(v[i], a->dtype) && v[i] == v[i]) v[i] = v[i] > 0 ? INFINITY : -INFINITY;
        em_tensor *m = em_scope_keep(&k, em_float_class_test(cls[i], a));
        if (!m || !(r = em_scope_keep(&k, em_masked_fill(r, m, v[i])))) return em_scope_finish(&k, NULL);
    }
    return em_scope_finish(&k, r);
}

em_tensor *em_float_class_test(em_float_class c, const em_tensor *a)
{
    if (!em_dtype_is_float(a->dtype)) {
        /* integers are always finite */
        return em_full(a->sizes, a->ndim, c == EM_ISFINITE ? 1 : 0, EM_BOOL, em_dev(a));
    }
    bool was = em_set_grad_enabled(false);
    em_scope k = {0};
    em_tensor *r = NULL;
    switch (c) {
    case EM_ISNAN: r = es_binary(&k, EM_NE, a, a); break;
    case EM_ISPOSINF: r = es_scalar_ex(&k, EM_EQ, a, INFINITY, false, false); break;
    case EM_ISNEGINF: r = es_scalar_ex(&k, EM_EQ, a, -INFINITY, false, false); break;
    case EM_ISINF: case EM_ISFINITE: {
        r = es_scalar(&k, c == EM_ISINF ? EM_EQ : EM_LT, es_unary(&k, EM_ABS, a), INFINITY);
        break;
    }
    default: em_set_error("float class test: invalid test %d", (int)c); break;
    }
    r = em_scope_finish(&k, r);
    em_set_grad_enabled(was);
    return r;
}

static em_tensor *isclose_nograd(const em_tensor *a, const em_tensor *b, double rtol, double atol, bool equal_nan)
{
    if (a->dtype != b->dtype)
        return em_set_error("isclose: expected both inputs to have the same dtype, got %s and %s",
                            em_dtype_name(a->dtype), em_dtype_name(b->dtype)), NULL;
    if (!(rtol >= 0) || !(atol >= 0))
        return em_set_error("isclose: rtol and atol must be non-negative numbers, got rtol=%g, atol=%g", rtol,
                            atol), NULL;
    if (a->dtype == EM_BOOL) return ei_binary(EM_EQ, a, b);
    em_scope k = {0};
    if (!em_dtype_is_float(a->dtype)) {
        /* integers: the tolerance in float64, which holds them exactly up to 2^53 */
        a = em_scope_keep(&k, em_cast_to(a, EM_FLOAT64));
        b = a ? em_scope_keep(&k, em_cast_to(b, EM_FLOAT64)) : NULL;
        if (!b) return em_scope_finish(&k, NULL);
    }
    em_tensor *close = em_scope_keep(&k, ei_binary(EM_EQ, a, b));
    if (close && equal_nan) {
        em_tensor *na = es_binary(&k, EM_NE, a, a), *nb = es_binary(&k, EM_NE, b, b);
        close = es_binary(&k, EM_LOGICAL_OR, close, es_binary(&k, EM_LOGICAL_AND, na, nb));
    }
    /* PyTorch's: |a - b| <= atol + |rtol * b|, for a finite difference */
    em_tensor *rb = close ? es_scalar(&k, EM_MUL, b, rtol) : NULL;
    em_tensor *allowed = es_scalar(&k, EM_ADD, es_unary(&k, EM_ABS, rb), atol);
    em_tensor *ad = allowed ? es_unary(&k, EM_ABS, es_sub(&k, a, b)) : NULL;
    em_tensor *fin = es_scalar(&k, EM_LT, ad, INFINITY);
    em_tensor *le = fin ? es_binary(&k, EM_LE, ad, allowed) : NULL;
    em_tensor *ok = es_binary(&k, EM_LOGICAL_AND, fin, le);
    return em_scope_finish(&k, es_binary(&k, EM_LOGICAL_OR, close, ok));
}

em_tensor *em_isclose(const em_tensor *a, const em_tensor *b, double rtol, double atol, bool equal_nan)
{
    bool was = em_set_grad_enabled(false);
    em_tensor *r = isclose_nograd(a, b, rtol, atol, equal_nan);
    em_set_grad_enabled(was);
    return r;
}

/* whether every element of the bool tensor t is true */
static int all_true(const em_tensor *t, bool *out)
{
    em_tensor *all = em_all(t, NULL, 0, false);
    double v = 0;
    int rc = all ? em_item(all, &v) : -1;
    em_release(all);
    if (rc == 0) *out = v != 0;
    return rc;
}

int em_allclose(const em_tensor *a, const em_tensor *b, double rtol, double atol, bool equal_nan, bool *out)
{
    em_tensor *c = em_isclose(a, b, rtol, atol, equal_nan);
    if (!c) return -1;
    int rc = all_true(c, out);
    em_release(c);
    return rc;
}

int em_equal(const em_tensor *a, const em_tensor *b, bool *out)
{
    if (em_check_same_device("equal", a, b)) return -1;
    if (!same_sizes(a, b->sizes, b->ndim)) { *out = false; return 0; }
    bool was = em_set_grad_enabled(false);
    em_tensor *e = ei_binary(EM_EQ, a, b);
    em_set_grad_enabled(was);
    if (!e) return -1;
    int rc = all_true(e, out);
    em_release(e);
    return rc;
}

static int check_lerp(const em_tensor *a, const em_tensor *b, const em_tensor *w)
{
    if (!em_dtype_is_float(a->dtype))
        return em_set_error("lerp: only float tensors are supported, got %s", em_dtype_name(a->dtype));
    if (b->dtype != a->dtype || (w && w->dtype != a->dtype))
        return em_set_error("lerp: expected start, end%s of one dtype, got %s, %s%s%s", w ? " and weight" : "",
                            em_dtype_name(a->dtype), em_dtype_name(b->dtype), w ? ", " : "",
                            w ? em_dtype_name(w->dtype) : "");
    return 0;
}

/* PyTorch's two-sided formula: a + w (b - a) for w < 1/2, b - (b - a)(1 - w)
 * above, so that w = 1 gives b exactly */
em_tensor *em_lerp(const em_tensor *a, const em_tensor *b, const em_tensor *w)
{
    if (check_lerp(a, b, w)) return NULL;
    em_scope k = {0};
    em_tensor *d = es_sub(&k, b, a);
    em_tensor *lo = es_add(&k, a, es_mul(&k, w, d));
    em_tensor *omw = lo ? es_scalar_ex(&k, EM_SUB, w, 1, true, true) : NULL;   /* 1 - w */
    em_tensor *hi = es_sub(&k, b, es_mul(&k, d, omw));
    em_tensor *small = hi ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary_scalar(EM_LT, w, 0.5, false, false))) : NULL;
    return em_scope_finish(&k, small ? em_scope_keep(&k, em_where(small, lo, hi)) : NULL);
}

em_tensor *em_lerp_scalar(const em_tensor *a, const em_tensor *b, double w)
{
    if (check_lerp(a, b, NULL)) return NULL;
    em_scope k = {0};
    em_tensor *d = es_sub(&k, b, a);
    em_tensor *r = w < 0.5 ? es_add(&k, a, es_scalar(&k, EM_MUL, d, w)) : es_sub(&k, b, es_scalar(&k, EM_MUL, d, 1 - w));
    return em_scope_finish(&k, r);
}

static bool integral_number(double v) { return v == floor(v) && fabs(v) < 9.007199254740992e15; }

/* a + value * b (op) c, in PyTorch's order of evaluation */
static em_tensor *addc(em_binary_op op, const em_tensor *a, const em_tensor *b, const em_tensor *c, double value)
{
    em_scope k = {0};
    em_tensor *vb = es_scalar_ex(&k, EM_MUL, b, value, integral_number(value), true);
    return em_scope_finish(&k, es_add(&k, a, es_binary(&k, op, vb, c)));
}

em_tensor *ei_addcmul(const em_tensor *a, const em_tensor *b, const em_tensor *c, double value)
{
    return addc(EM_MUL, a, b, c, value);
}

em_tensor *em_addcmul(const em_tensor *a, const em_tensor *b, const em_tensor *c, double value)
{
    EM_AUTOCAST(EM_AC_PROMOTE, ei_addcmul(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), value), a, b, c);
    return ei_addcmul(a, b, c, value);
}

em_tensor *ei_addcdiv(const em_tensor *a, const em_tensor *b, const em_tensor *c, double value)
{
    if (!em_dtype_is_float(b->dtype) && !em_dtype_is_float(c->dtype))
        return em_set_error("addcdiv: integer division is not supported (tensor1 %s, tensor2 %s); use "
                            "float tensors", em_dtype_name(b->dtype), em_dtype_name(c->dtype)), NULL;
    return addc(EM_DIV, a, b, c, value);
}

em_tensor *em_addcdiv(const em_tensor *a, const em_tensor *b, const em_tensor *c, double value)
{
    EM_AUTOCAST(EM_AC_PROMOTE, ei_addcdiv(EM_AC_ARG(0), EM_AC_ARG(1), EM_AC_ARG(2), value), a, b, c);
    return ei_addcdiv(a, b, c, value);
}

/* Clamp to tensor bounds with where, so that the gradient is PyTorch's: x
 * gets it where lo <= x <= hi (bounds included), a bound where it binds.
 * A NaN bound gives NaN, as minimum / maximum would. */
em_tensor *em_clamp_tensor(const em_tensor *a, const em_tensor *lo, const em_tensor *hi)
{
    if (!lo && !hi) return em_set_error("clamp: at least one of min and max must be given"), NULL;
    if (em_ag_needed3(a, lo ? lo : a, hi)) return em_ag_clamp_tensor(a, lo, hi);
    em_dtype rt = lo ? em_result_type(a, lo) : a->dtype;
    if (hi) {
        /* three-way promotion: a and the bounds, the bounds as tensors */
        em_dtype r2 = em_result_type(a, hi);
        rt = em_promote(rt, r2);
    }
    if (rt == EM_BOOL) rt = EM_INT64;
    em_scope k = {0};
    em_tensor *x = es_to(&k, a, rt);
    if (!x) return em_scope_finish(&k, NULL);
    const em_tensor *bound[2] = {lo, hi};
    for (int i = 0; i < 2; i++) {
        if (!bound[i]) continue;
        em_tensor *bd = es_to(&k, bound[i], rt);
        em_tensor *out = bd ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary(i == 0 ? EM_LT : EM_GT, x, bd))) : NULL;
        em_tensor *bn = out ? em_scope_keep(&k, WITHOUT_GRAD(ei_binary(EM_NE, bd, bd))) : NULL;
        em_tensor *m = es_binary(&k, EM_LOGICAL_OR, out, bn);
        if (!m || !(x = em_scope_keep(&k, em_where(m, bd, x)))) return em_scope_finish(&k, NULL);
    }
    return em_scope_finish(&k, x);
}

/* not differentiable (PyTorch has no derivative either): computed without recording */
em_tensor *em_heaviside(const em_tensor *a, const em_tensor *values)
{
    if (a->dtype != values->dtype)
        return em_set_error("heaviside: expected input and values of one dtype, got %s and %s",
                            em_dtype_name(a->dtype), em_dtype_name(values->dtype)), NULL;
    bool was = em_set_grad_enabled(false);
    em_scope k = {0};
    em_tensor *z = es_scalar_ex(&k, EM_EQ, a, 0, true, false);
    em_tensor *p = z ? es_scalar_ex(&k, EM_GT, a, 0, true, false) : NULL;
    em_tensor *pd = p ? em_scope_keep(&k, em_cast_to(p, a->dtype)) : NULL;
    em_tensor *r = em_scope_finish(&k, pd ? em_scope_keep(&k, em_where(z, values, pd)) : NULL);
    em_set_grad_enabled(was);
    return r;
}

em_tensor *em_logical_xor(const em_tensor *a, const em_tensor *b)
{
    em_scope k = {0};
    em_tensor *na = es_scalar_ex(&k, EM_NE, a, 0, true, false);
    em_tensor *nb = na ? es_scalar_ex(&k, EM_NE, b, 0, true, false) : NULL;
    return em_scope_finish(&k, es_binary(&k, EM_NE, na, nb));
}

em_tensor *em_bitwise_not(const em_tensor *a) { return ei_unary(EM_BITWISE_NOT, a); }

int em_assign_result_(const char *op, em_tensor *t, const em_tensor *r)
{
    if (em_ag_check_inplace(op, t, NULL)) return -1;
    if (!same_sizes(t, r->sizes, r->ndim))
        return em_set_error("%s: output with shape %s doesn't match the broadcast shape %s", op, SHAPE(t),
                            SHAPE(r));
    if (!can_cast(r->dtype, t->dtype)) return cast_error(op, r->dtype, t->dtype);
    if (em_check_writable(op, t)) return -1;
    return em_copy_(t, r);
}
