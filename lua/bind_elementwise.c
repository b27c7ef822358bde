/* bind_elementwise.c — Lua functions for the elementwise ops: unary math
 * (t:exp(), ember.exp(t)), binary arithmetic and comparisons with a tensor
 * or a number on either side, clamp, where and masked_fill, and the in-place
 * spellings with a trailing underscore (which return self). */
#include "binding.h"

#include <string.h>

/* A tensor argument that must still be open. */
static em_tensor *check_tensor(lua_State *L, int idx, const char *op)
{
    em_tensor *t = emlua_check(L, idx, op);
    if (!t) luaL_error(L, "%s: the tensor was closed", op);
    return t;
}

/* A value emlua_check_operand accepts; checked before anything is
 * allocated, so a type error cannot leak a tensor. */
static bool is_operand(lua_State *L, int idx)
{
    int ty = lua_type(L, idx);
    return ty == LUA_TNUMBER || ty == LUA_TBOOLEAN || emlua_test(L, idx) != NULL;
}

static void check_operand_type(lua_State *L, int idx, const char *op)
{
    if (!is_operand(L, idx)) emlua_typeerror(L, idx, op, "a tensor or a number");
}

/* ---- unary ---------------------------------------------------------------- */

/* An op's autocast class (elementwise_ops.h) as the binding's policy */

/* the keywords after the required arguments besides out (emlua_out_only):
 * add/sub's alpha, div's rounding_mode, with out= out of place */
static const char *const alpha_out[] = {"alpha", "out", NULL};
static const char *const alpha_only[] = {"alpha", NULL};
static const char *const rounding_out[] = {"rounding_mode", "out", NULL};
static const char *const rounding_only[] = {"rounding_mode", NULL};

/* op(t [, {out = o}]), called name (sgn is the table's sign) */
static int unary_named(lua_State *L, em_unary_op op, const char *name)
{
    em_tensor *t = check_tensor(L, 1, name);
    int o = emlua_keywords(L, 2, name, emlua_out_only);
    return emlua_push_out(L, em_unary(op, t), o, name);
}

static int unary_named_(lua_State *L, em_unary_op op, const char *name)
{
    em_tensor *t = check_tensor(L, 1, name);
    emlua_keywords(L, 2, name, NULL);
    return emlua_push_self(L, em_unary_(op, t));
}

static int unary(lua_State *L, em_unary_op op) { return unary_named(L, op, em_unary_name(op)); }

static int unary_(lua_State *L, em_unary_op op)
{
    const char *name = em_unary_info(op)->inplace;
    return unary_named_(L, op, name ? name : em_unary_name(op));
}

/* The functions of the table's unary ops, the op in upvalue 1: ember.exp(t),
 * t:exp() and t:exp_() (registration below) */
static em_unary_op upvalue_unary(lua_State *L) { return (em_unary_op)lua_tointeger(L, lua_upvalueindex(1)); }
static int t_unary(lua_State *L) { return unary(L, upvalue_unary(L)); }
static int t_unary_(lua_State *L) { return unary_(L, upvalue_unary(L)); }

/* Writes the result r of a composed op into self (argument 1) and returns
 * self: the in-place spelling of an op without a kernel of its own. */
static int assign_self(lua_State *L, em_tensor *r, const char *op)
{
    if (!r) return emlua_fail(L);
    int rc = em_assign_result_(op, emlua_test(L, 1), r);
    em_release(r);
    if (rc) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}

static const char *const round_names[] = {"decimals", NULL};
static const char *const round_out_names[] = {"decimals", "out", NULL};

/* round(t [, decimals] [, {decimals =, out =}]) */
static int t_round(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "round");
    emlua_args a;
    emlua_args_start_kw(&a, L, "round", 2, round_out_names, emlua_count_names(round_out_names) - 1);
    return emlua_push_out(L, em_round_decimals(t, emlua_arg_integer(&a, 0, 0)), a.opts, "round");
}

static int t_round_(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "round_");
    emlua_args a;
    emlua_args_start(&a, L, "round_", 2, round_names);
    int64_t d = emlua_arg_integer(&a, 0, 0);
    if (d == 0) return emlua_push_self(L, em_unary_(EM_ROUND, t));
    return assign_self(L, em_round_decimals(t, d), "round_");
}

/* gelu(t) is the exact erf form; {approximate = "tanh"} the tanh form (a
 * keyword, as in PyTorch; the only one) */
static const char *const gelu_names[] = {"approximate", NULL};

static bool gelu_tanh(lua_State *L, const char *op)
{
    int o = emlua_keywords(L, 2, op, gelu_names);
    if (!o) return false;
    lua_getfield(L, o, "approximate");
    const char *s = lua_tostring(L, -1);
    bool tanh_form = false;
    if (s && strcmp(s, "tanh") == 0) tanh_form = true;
    else if (!lua_isnil(L, -1) && !(s && strcmp(s, "none") == 0))
        emlua_argerror(L, o, op, "approximate must be \"none\" or \"tanh\"");
    lua_pop(L, 1);
    return tanh_form;
}

static int t_gelu(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "gelu");
    if (gelu_tanh(L, "gelu")) return emlua_push(L, em_gelu_tanh(t));
    return emlua_push(L, em_unary(EM_GELU, t));
}

static int t_gelu_(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "gelu_");
    if (gelu_tanh(L, "gelu_")) {
        em_tensor *r = em_gelu_tanh(t);
        if (!r) return emlua_fail(L);
        int rc = em_copy_(t, r);
        em_release(r);
        if (rc) return emlua_fail(L);
        lua_settop(L, 1);
        return 1;
    }
    return emlua_push_self(L, em_unary_(EM_GELU, t));
}

/* ---- binary --------------------------------------------------------------- */

/* op on the values at stack positions ia and ib: tensors, numbers or
 * booleans, at least one a tensor. NULL with the engine's error set. */
static em_tensor *binary_result(lua_State *L, em_binary_op op, int ia, int ib)
{
    const char *name = em_binary_name(op);
    em_tensor *a = emlua_test(L, ia), *b = emlua_test(L, ib);
    if (a && b) return em_binary(op, a, b);
    if (emlua_exact_integer_operand(L, a ? a : b, a ? ib : ia)) {
        /* an int64 tensor and an integer past 2^53: exactly, not through a double */
        em_tensor *s = emlua_check_operand(L, a ? ib : ia, name, a ? a : b);
        em_tensor *r = a ? em_binary(op, a, s) : em_binary(op, s, b);
        em_release(s);
        return r;
    }
    if (a && lua_type(L, ib) == LUA_TNUMBER) {
        bool is_int = lua_isinteger(L, ib);
        double s = is_int ? (double)lua_tointeger(L, ib) : lua_tonumber(L, ib);
        return em_binary_scalar(op, a, s, is_int, false);
    }
    if (b && lua_type(L, ia) == LUA_TNUMBER) {
        bool is_int = lua_isinteger(L, ia);
        double s = is_int ? (double)lua_tointeger(L, ia) : lua_tonumber(L, ia);
        return em_binary_scalar(op, b, s, is_int, true);
    }
    if (!a && !b) {
        emlua_typeerror(L, emlua_test(L, ia) || lua_type(L, ia) != LUA_TNUMBER ? ia : ib, name, "a tensor");
        return NULL;
    }
    int num = a ? ib : ia;
    check_operand_type(L, num, name);
    em_tensor *s = emlua_check_operand(L, num, name, a ? a : b);
    em_tensor *r = a ? em_binary(op, a, s) : em_binary(op, s, b);
    em_release(s);
    return r;
}

/* op(a, b [, {out = t}]) with a or b a tensor; o is the options table's index */
static int binary_out(lua_State *L, em_binary_op op, int ib, int o)
{
    return emlua_push_out(L, binary_result(L, op, 1, ib), o, em_binary_name(op));
}

/* in place: self op= (value at ib) */
static int binary_inplace_at(lua_State *L, em_binary_op op, const char *name, int ib)
{
    em_tensor *a = check_tensor(L, 1, name);
    check_operand_type(L, ib, name);
    /* an integer number written into an integer tensor must fit its dtype
     * (checked here, where the number is still a number) */
    if (lua_isinteger(L, ib) && em_dtype_is_int(a->dtype) &&
        em_check_value_fits(name, (double)lua_tointeger(L, ib), a->dtype))
        return emlua_fail(L);
    em_tensor *b = emlua_check_operand(L, ib, name, a);
    int rc = em_binary_(op, a, b);
    em_release(b);
    if (rc) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}

static int binary(lua_State *L, em_binary_op op)
{
    return binary_out(L, op, 2, emlua_keywords(L, 3, em_binary_name(op), emlua_out_only));
}

static int binary_(lua_State *L, em_binary_op op)
{
    const char *name = em_binary_info(op)->inplace;
    if (!name) name = em_binary_name(op);
    emlua_keywords(L, 3, name, NULL);
    return binary_inplace_at(L, op, name, 2);
}

/* The functions of the table's binary ops, the op in upvalue 1 */
static em_binary_op upvalue_binary(lua_State *L) { return (em_binary_op)lua_tointeger(L, lua_upvalueindex(1)); }

static int t_binary(lua_State *L)
{
    em_binary_op op = upvalue_binary(L);
    return binary(L, op);
}

static int t_binary_(lua_State *L) { return binary_(L, upvalue_binary(L)); }

/* add/sub take PyTorch's alpha: a + alpha * b, alpha in the options table at
 * o (0: none). The scaled b is pushed on the stack and its position returned
 * (2 when there is no alpha). */
static int scale_by_alpha(lua_State *L, const char *op, int o)
{
    if (!o) return 2;
    lua_getfield(L, o, "alpha");
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return 2; }
    if (lua_type(L, -1) != LUA_TNUMBER) return emlua_argerror(L, o, op, "alpha must be a number");
    bool alpha_int = lua_isinteger(L, -1);
    double alpha = lua_tonumber(L, -1);
    lua_pop(L, 1);
    /* PyTorch refuses a fractional alpha for integer operands */
    em_tensor *a = emlua_test(L, 1), *b = emlua_test(L, 2);
    bool any_float = (a && em_dtype_is_float(a->dtype)) || (b && em_dtype_is_float(b->dtype)) ||
                     (lua_type(L, 1) == LUA_TNUMBER && !lua_isinteger(L, 1)) ||
                     (lua_type(L, 2) == LUA_TNUMBER && !lua_isinteger(L, 2));
    if (!alpha_int && !any_float)
        return emlua_argerror(L, o, op, "for integer tensors, alpha must be an integer, got %g", alpha);
    if (b) {
        if (!emlua_push(L, em_binary_scalar(EM_MUL, b, alpha, alpha_int, false))) return 0;
    } else if (lua_type(L, 2) == LUA_TNUMBER) {
        if (lua_isinteger(L, 2) && alpha_int) lua_pushinteger(L, lua_tointeger(L, 2) * (lua_Integer)alpha);
        else lua_pushnumber(L, lua_tonumber(L, 2) * alpha);
    } else {
        emlua_typeerror(L, 2, op, "a tensor or a number");
    }
    return lua_gettop(L);
}

static int add_sub(lua_State *L, em_binary_op op, const char *name)
{
    int o = emlua_keywords(L, 3, name, alpha_out);
    return binary_out(L, op, scale_by_alpha(L, name, o), o);
}

static int add_sub_(lua_State *L, em_binary_op op, const char *name)
{
    return binary_inplace_at(L, op, name, scale_by_alpha(L, name, emlua_keywords(L, 3, name, alpha_only)));
}

static int t_add(lua_State *L) { return add_sub(L, EM_ADD, "add"); }
static int t_sub(lua_State *L) { return add_sub(L, EM_SUB, "sub"); }
static int t_add_(lua_State *L) { return add_sub_(L, EM_ADD, "add_"); }
static int t_sub_(lua_State *L) { return add_sub_(L, EM_SUB, "sub_"); }

/* div(a, b, {rounding_mode = nil | "trunc" | "floor"}), the options table at o (0: none) */
static em_binary_op div_mode(lua_State *L, const char *op, int o)
{
    if (!o) return EM_DIV;
    lua_getfield(L, o, "rounding_mode");
    em_binary_op r = EM_DIV;
    const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (m && strcmp(m, "trunc") == 0) r = EM_DIV_TRUNC;
    else if (m && strcmp(m, "floor") == 0) r = EM_DIV_FLOOR;
    else if (!lua_isnil(L, -1))
        emlua_argerror(L, o, op, "rounding_mode must be nil, \"trunc\" or \"floor\", got %s",
                       m ? m : luaL_typename(L, -1));
    lua_pop(L, 1);
    return r;
}

static int t_div(lua_State *L)
{
    int o = emlua_keywords(L, 3, "div", rounding_out);
    return binary_out(L, div_mode(L, "div", o), 2, o);
}

static int t_div_(lua_State *L)
{
    em_binary_op op = div_mode(L, "div_", emlua_keywords(L, 3, "div_", rounding_only));
    return binary_inplace_at(L, op, "div_", 2);
}

/* polygamma's order at stack position idx: a Lua integer >= 0 (PyTorch's n
 * is an int: a float, even 2.0, is refused as there) */
static double polygamma_order(lua_State *L, int idx, const char *op)
{
    if (!lua_isinteger(L, idx)) {
        if (lua_type(L, idx) == LUA_TNUMBER)
            return emlua_argerror(L, idx, op, "n must be a non-negative integer, got %s",
                                  lua_tostring(L, idx));
        return emlua_typeerror(L, idx, op, "an integer (the order n)");
    }
    lua_Integer n = lua_tointeger(L, idx);
    if (n < 0) return emlua_argerror(L, idx, op, "n must be a non-negative integer, got %lld", (long long)n);
    return (double)n;
}

/* ember.polygamma(n, x) and x:polygamma(n): one function (the table row's
 * binding promises ember.polygamma == Tensor.polygamma), told apart by which
 * argument is the tensor; the table's op is (x, n) */
static int t_polygamma(lua_State *L)
{
    bool method = emlua_test(L, 1) != NULL;
    int ix = method ? 1 : 2, in = method ? 2 : 1;
    if (!method && !emlua_test(L, 2)) {
        if (lua_type(L, 1) == LUA_TNUMBER) return emlua_typeerror(L, 2, "polygamma", "a tensor");
        return emlua_typeerror(L, 1, "polygamma", "an integer n, then a tensor: polygamma(n, x)");
    }
    em_tensor *x = check_tensor(L, ix, "polygamma");
    double n = polygamma_order(L, in, "polygamma");
    int o = emlua_keywords(L, 3, "polygamma", emlua_out_only);
    return emlua_push_out(L, em_binary_scalar(EM_POLYGAMMA, x, n, true, false), o, "polygamma");
}

/* x:polygamma_(n) */
static int t_polygamma_(lua_State *L)
{
    check_tensor(L, 1, "polygamma_");
    polygamma_order(L, 2, "polygamma_");
    emlua_keywords(L, 3, "polygamma_", NULL);
    return binary_inplace_at(L, EM_POLYGAMMA, "polygamma_", 2);
}

/* ---- clamp ---------------------------------------------------------------- */

/* clamp(t, min, max): min and max are numbers, tensors (broadcast) or nil. */
static em_tensor *clamp_at(lua_State *L, em_tensor *t, int ilo, int ihi, const char *op)
{
    int tlo = lua_type(L, ilo), thi = lua_type(L, ihi);
    em_tensor *lo_t = emlua_test(L, ilo), *hi_t = emlua_test(L, ihi);
    if (tlo > LUA_TNIL && tlo != LUA_TNUMBER && !lo_t) emlua_typeerror(L, ilo, op, "a number, a tensor or nil");
    if (thi > LUA_TNIL && thi != LUA_TNUMBER && !hi_t) emlua_typeerror(L, ihi, op, "a number, a tensor or nil");
    /* an int64 bound past 2^53 takes the tensor path, where a number is made exactly */
    bool exact = emlua_exact_integer_operand(L, t, ilo) || emlua_exact_integer_operand(L, t, ihi);
    if (!lo_t && !hi_t && !exact) {
        double lo = lua_tonumber(L, ilo), hi = lua_tonumber(L, ihi);
        return em_clamp(t, tlo == LUA_TNUMBER ? &lo : NULL, thi == LUA_TNUMBER ? &hi : NULL);
    }
    /* a tensor bound: a number on the other side becomes a wrapped number */
    em_tensor *lo = lo_t, *hi = hi_t;
    if (!lo && tlo == LUA_TNUMBER) { emlua_push(L, emlua_check_operand(L, ilo, op, t)); lo = emlua_test(L, -1); }
    if (!hi && thi == LUA_TNUMBER) { emlua_push(L, emlua_check_operand(L, ihi, op, t)); hi = emlua_test(L, -1); }
    return em_clamp_tensor(t, lo, hi);
}

/* clamp's bounds, PyTorch's positional-or-keyword min and max (x:clamp(0, 1),
 * x:clamp({min = 0}), x:clamp(nil, 1)), and out for the out-of-place form:
 * the stack slots of min and max (a nil pushed for one not given) into ilo
 * and ihi; returns the options table's index (0: none). */
static int clamp_bounds(lua_State *L, const char *op, bool takes_out, int *ilo, int *ihi)
{
    static const char *const names_out[] = {"min", "max", "out", NULL};
    static const char *const names[] = {"min", "max", NULL};
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 2, takes_out ? names_out : names, 2);
    *ilo = emlua_arg_at(&a, 0);
    *ihi = emlua_arg_at(&a, 1);
    lua_pushnil(L);
    if (!*ilo) *ilo = lua_gettop(L);
    if (!*ihi) *ihi = lua_gettop(L);
    return a.opts;
}

static int t_clamp(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "clamp");
    int ilo, ihi, o = clamp_bounds(L, "clamp", true, &ilo, &ihi);
    return emlua_push_out(L, clamp_at(L, t, ilo, ihi, "clamp"), o, "clamp");
}

/* clamp_min(t, min [, {out =}]) (max: false) and clamp_max(t, max [, {out =}]) */
static int clamp_one(lua_State *L, bool max, const char *op)
{
    em_tensor *t = check_tensor(L, 1, op);
    if (lua_isnoneornil(L, 2)) return emlua_typeerror(L, 2, op, "a number or a tensor");
    int o = emlua_keywords(L, 3, op, emlua_out_only);
    lua_pushnil(L);
    int none = lua_gettop(L);
    return emlua_push_out(L, clamp_at(L, t, max ? none : 2, max ? 2 : none, op), o, op);
}

static int t_clamp_min(lua_State *L) { return clamp_one(L, false, "clamp_min"); }
static int t_clamp_max(lua_State *L) { return clamp_one(L, true, "clamp_max"); }

/* in place: the result must fit t's dtype (clamp_ of an int tensor to 0.5
 * is refused, as in PyTorch) */
static int clamp_inplace(lua_State *L, int ilo, int ihi, const char *op)
{
    em_tensor *t = check_tensor(L, 1, op);
    int tlo = lua_type(L, ilo), thi = lua_type(L, ihi);
    if ((t->dtype == EM_FLOAT32 || t->dtype == EM_FLOAT64) && (tlo == LUA_TNUMBER || tlo == LUA_TNIL) &&
        (thi == LUA_TNUMBER || thi == LUA_TNIL)) {
        double lo = lua_tonumber(L, ilo), hi = lua_tonumber(L, ihi);
        return emlua_push_self(L, em_clamp_(t, tlo == LUA_TNUMBER ? &lo : NULL, thi == LUA_TNUMBER ? &hi : NULL));
    }
    em_tensor *r = clamp_at(L, t, ilo, ihi, op);
    if (!r) return emlua_fail(L);
    em_dtype rd = r->dtype;   /* read before r is released (the sanitizer build caught this) */
    if ((em_dtype_is_float(rd) && !em_dtype_is_float(t->dtype)) || (rd != t->dtype && t->dtype == EM_BOOL)) {
        em_release(r);
        return luaL_error(L, "%s: result type %s can't be cast to the desired output type %s", op,
                          em_dtype_name(rd), em_dtype_name(t->dtype));
    }
    int rc = em_copy_(t, r);
    em_release(r);
    if (rc) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}

static int t_clamp_(lua_State *L)
{
    int ilo, ihi;
    clamp_bounds(L, "clamp_", false, &ilo, &ihi);
    return clamp_inplace(L, ilo, ihi, "clamp_");
}

/* clamp_min_(min), clamp_max_(max): the other bound a nil pushed after them */
static int t_clamp_min_(lua_State *L)
{
    emlua_keywords(L, 3, "clamp_min_", NULL);
    lua_pushnil(L);
    return clamp_inplace(L, 2, lua_gettop(L), "clamp_min_");
}

static int t_clamp_max_(lua_State *L)
{
    emlua_keywords(L, 3, "clamp_max_", NULL);
    lua_pushnil(L);
    return clamp_inplace(L, lua_gettop(L), 2, "clamp_max_");
}

/* ---- where and masked_fill ------------------------------------------------ */

/* where(cond, a, b [, {out =}]), its arguments at those stack positions (1 to 3) */
static int where_at(lua_State *L, int icond, int ia, int ib)
{
    int o = emlua_keywords(L, 4, "where", emlua_out_only);
    em_tensor *cond = check_tensor(L, icond, "where");
    check_operand_type(L, ia, "where");
    check_operand_type(L, ib, "where");
    em_tensor *a = emlua_check_operand(L, ia, "where", cond);
    /* on the Lua stack, a is the collector's: an error turning b into a
     * tensor cannot leak it */
    emlua_push(L, a);
    a = emlua_test(L, -1);
    em_tensor *b = emlua_check_operand(L, ib, "where", cond);
    em_tensor *r = em_where(cond, a, b);
    em_release(b);
    return emlua_push_out(L, r, o, "where");
}

/* ember.where(cond, x, y) */
static int t_where(lua_State *L) { return where_at(L, 1, 2, 3); }
/* x:where(cond, y), as PyTorch's Tensor.where */
static int m_where(lua_State *L) { return where_at(L, 2, 1, 3); }

/* the fill value: a number, a boolean or a one-element tensor */
static double fill_value(lua_State *L, int idx, const char *op)
{
    em_tensor *v = emlua_test(L, idx);
    if (v) {
        double x;
        if (em_item(v, &x)) emlua_fail(L);
        return x;
    }
    if (lua_type(L, idx) == LUA_TBOOLEAN) return lua_toboolean(L, idx);
    if (lua_type(L, idx) != LUA_TNUMBER) emlua_typeerror(L, idx, op, "a number");
    return lua_tonumber(L, idx);
}

/* masked_fill of an int64 tensor with an integer past 2^53 (iinfo's max, say),
 * which a double would round: where(mask, value, t) with the value made exactly */
static em_tensor *masked_fill_exact(lua_State *L, em_tensor *t, em_tensor *mask, const char *op)
{
    int64_t shape[EM_MAX_DIMS];     /* the shapes' error under the caller's name, not where's */
    if (em_broadcast_shapes(t->sizes, t->ndim, mask->sizes, mask->ndim, shape, op) < 0) return NULL;
    em_tensor *s = emlua_check_operand(L, 3, op, t);
    em_tensor *r = s ? em_where(mask, s, t) : NULL;
    em_release(s);
    return r;
}

static int t_masked_fill(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "masked_fill"), *mask = check_tensor(L, 2, "masked_fill");
    emlua_keywords(L, 4, "masked_fill", NULL);
    if (mask->dtype == EM_BOOL && emlua_exact_integer_operand(L, t, 3))
        return emlua_push(L, masked_fill_exact(L, t, mask, "masked_fill"));
    return emlua_push(L, em_masked_fill(t, mask, fill_value(L, 3, "masked_fill")));
}

static int t_masked_fill_(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "masked_fill_"), *mask = check_tensor(L, 2, "masked_fill_");
    emlua_keywords(L, 4, "masked_fill_", NULL);
    if (mask->dtype == EM_BOOL && emlua_exact_integer_operand(L, t, 3)) {
        em_tensor *r = masked_fill_exact(L, t, mask, "masked_fill_");
        int rc = r ? em_copy_(t, r) : -1;
        em_release(r);
        if (rc) return emlua_fail(L);
    } else if (em_masked_fill_(t, mask, fill_value(L, 3, "masked_fill_"))) {
        return emlua_fail(L);
    }
    lua_settop(L, 1);
    return 1;
}

/* ---- elementwise math ----------------------------------------------------- */

/* f(t [, {out =}]), or in place (t:f_()) */
static int unary_fn(lua_State *L, em_tensor *(*f)(const em_tensor *), const char *op, bool in_place)
{
    em_tensor *t = check_tensor(L, 1, op);
    int o = emlua_keywords(L, 2, op, in_place ? NULL : emlua_out_only);
    return in_place ? assign_self(L, f(t), op) : emlua_push_out(L, f(t), o, op);
}

static int t_frac(lua_State *L) { return unary_fn(L, em_frac, "frac", false); }
static int t_frac_(lua_State *L) { return unary_fn(L, em_frac, "frac_", true); }

/* The arguments of an op with positional-or-keyword ones from 2 on: names,
 * or for the out-of-place form (out non-NULL) names_out, names and "out"
 * (keyword-only), whose options table's index goes to *out. */
static void start_args(emlua_args *a, lua_State *L, const char *op, const char *const *names,
                       const char *const *names_out, int first, int *out)
{
    if (out) {
        emlua_args_start_kw(a, L, op, first, names_out, emlua_count_names(names_out) - 1);
        *out = a->opts;
    } else {
        emlua_args_start(a, L, op, first, names);
    }
}

static const char *const logit_names[] = {"eps", NULL};
static const char *const logit_out_names[] = {"eps", "out", NULL};

/* logit(t [, eps]); out: NULL in place, else where the options table's index goes */
static em_tensor *logit_at(lua_State *L, const char *op, int *out)
{
    em_tensor *t = check_tensor(L, 1, op);
    emlua_args a;
    start_args(&a, L, op, logit_names, logit_out_names, 2, out);
    double eps = 0;
    bool has = emlua_arg_at(&a, 0) != 0;
    if (has) eps = emlua_arg_number(&a, 0, 0);
    return em_logit(t, has ? &eps : NULL);
}

static int t_logit(lua_State *L)
{
    int o;
    em_tensor *r = logit_at(L, "logit", &o);
    return emlua_push_out(L, r, o, "logit");
}
static int t_logit_(lua_State *L) { return assign_self(L, logit_at(L, "logit_", NULL), "logit_"); }

static const char *const nan_to_num_names[] = {"nan", "posinf", "neginf", NULL};
static const char *const nan_to_num_out_names[] = {"nan", "posinf", "neginf", "out", NULL};

static em_tensor *nan_to_num_at(lua_State *L, const char *op, int *out)
{
    em_tensor *t = check_tensor(L, 1, op);
    emlua_args a;
    start_args(&a, L, op, nan_to_num_names, nan_to_num_out_names, 2, out);
    double v[3];
    bool has[3];
    for (int k = 0; k < 3; k++) {
        has[k] = emlua_arg_at(&a, k) != 0;
        v[k] = emlua_arg_number(&a, k, 0);
    }
    return em_nan_to_num(t, has[0] ? &v[0] : NULL, has[1] ? &v[1] : NULL, has[2] ? &v[2] : NULL);
}

static int t_nan_to_num(lua_State *L)
{
    int o;
    em_tensor *r = nan_to_num_at(L, "nan_to_num", &o);
    return emlua_push_out(L, r, o, "nan_to_num");
}
static int t_nan_to_num_(lua_State *L)
{
    return assign_self(L, nan_to_num_at(L, "nan_to_num_", NULL), "nan_to_num_");
}

/* isnan(t) ...; kw: the keywords (PyTorch's isposinf and isneginf take out, the others nothing) */
static int float_class(lua_State *L, em_float_class c, const char *op, const char *const *kw)
{
    em_tensor *t = check_tensor(L, 1, op);
    int o = emlua_keywords(L, 2, op, kw);
    return emlua_push_out(L, em_float_class_test(c, t), o, op);
}

static int t_isnan(lua_State *L) { return float_class(L, EM_ISNAN, "isnan", NULL); }
static int t_isinf(lua_State *L) { return float_class(L, EM_ISINF, "isinf", NULL); }
static int t_isfinite(lua_State *L) { return float_class(L, EM_ISFINITE, "isfinite", NULL); }
static int t_isposinf(lua_State *L) { return float_class(L, EM_ISPOSINF, "isposinf", emlua_out_only); }
static int t_isneginf(lua_State *L) { return float_class(L, EM_ISNEGINF, "isneginf", emlua_out_only); }

/* sgn: sign for real tensors */
static int t_sgn(lua_State *L) { return unary_named(L, EM_SIGN, "sgn"); }
static int t_sgn_(lua_State *L) { return unary_named_(L, EM_SIGN, "sgn_"); }

/* floor_divide is div with rounding_mode "floor" (the table's div_floor) */
static int t_floor_divide(lua_State *L)
{
    int o = emlua_keywords(L, 3, "floor_divide", emlua_out_only);
    return emlua_push_out(L, binary_result(L, EM_DIV_FLOOR, 1, 2), o, "floor_divide");
}
static int t_floor_divide_(lua_State *L)
{
    emlua_keywords(L, 3, "floor_divide_", NULL);
    return binary_inplace_at(L, EM_DIV_FLOOR, "floor_divide_", 2);
}

/* Arguments 1 and 2 as tensors, a number on one side turned into a wrapped
 * number (replacing it on the stack, so the collector owns it). */
static void two_operands(lua_State *L, const char *op, em_tensor **a, em_tensor **b)
{
    em_tensor *ta = emlua_test(L, 1), *tb = emlua_test(L, 2);
    if (!ta && !tb) emlua_typeerror(L, lua_type(L, 1) == LUA_TNUMBER ? 2 : 1, op, "a tensor");
    check_operand_type(L, 1, op);
    check_operand_type(L, 2, op);
    if (!ta) {
        emlua_push(L, emlua_check_operand(L, 1, op, tb));
        lua_replace(L, 1);
        ta = emlua_test(L, 1);
    }
    if (!tb) {
        emlua_push(L, emlua_check_operand(L, 2, op, ta));
        lua_replace(L, 2);
        tb = emlua_test(L, 2);
    }
    *a = ta;
    *b = tb;
}

/* f(a, b) of two_operands(), pushed, or written into self (a tensor) when
 * in_place */
static int two_operand_op(lua_State *L, em_tensor *(*f)(const em_tensor *, const em_tensor *), const char *op,
                          bool in_place)
{
    em_tensor *a, *b;
    if (in_place) check_tensor(L, 1, op);
    int o = emlua_keywords(L, 3, op, in_place ? NULL : emlua_out_only);
    two_operands(L, op, &a, &b);
    return in_place ? assign_self(L, f(a, b), op) : emlua_push_out(L, f(a, b), o, op);
}

static int t_xlogy(lua_State *L) { return two_operand_op(L, em_xlogy, "xlogy", false); }
static int t_xlogy_(lua_State *L) { return two_operand_op(L, em_xlogy, "xlogy_", true); }
static int t_logical_xor(lua_State *L) { return two_operand_op(L, em_logical_xor, "logical_xor", false); }
static int t_logical_xor_(lua_State *L) { return two_operand_op(L, em_logical_xor, "logical_xor_", true); }

/* heaviside(t, values [, {out =}]), or in place */
static int heaviside_at(lua_State *L, const char *op, bool in_place)
{
    em_tensor *t = check_tensor(L, 1, op), *values = check_tensor(L, 2, op);
    int o = emlua_keywords(L, 3, op, in_place ? NULL : emlua_out_only);
    return in_place ? assign_self(L, em_heaviside(t, values), op) : emlua_push_out(L, em_heaviside(t, values), o, op);
}

static int t_heaviside(lua_State *L) { return heaviside_at(L, "heaviside", false); }
static int t_heaviside_(lua_State *L) { return heaviside_at(L, "heaviside_", true); }

/* lerp(start, end, weight [, {out =}]): weight a number or a tensor; the
 * options table's index goes to *o (in place: none taken) */
static em_tensor *lerp_at(lua_State *L, const char *op, int *out)
{
    int o = emlua_keywords(L, 4, op, out ? emlua_out_only : NULL);
    if (out) *out = o;
    em_tensor *a = check_tensor(L, 1, op), *b = check_tensor(L, 2, op);
    em_tensor *w = emlua_test(L, 3);
    if (w) return em_lerp(a, b, w);
    if (lua_type(L, 3) != LUA_TNUMBER) emlua_typeerror(L, 3, op, "a number or a tensor (weight)");
    return em_lerp_scalar(a, b, lua_tonumber(L, 3));
}

static int t_lerp(lua_State *L)
{
    int o;
    em_tensor *r = lerp_at(L, "lerp", &o);
    return emlua_push_out(L, r, o, "lerp");
}
static int t_lerp_(lua_State *L) { return assign_self(L, lerp_at(L, "lerp_", NULL), "lerp_"); }

static const char *const addc_names[] = {"value", NULL};
static const char *const addc_out_names[] = {"value", "out", NULL};

/* addcmul / addcdiv(input, tensor1, tensor2 [, value] [, {value = 1, out =}]);
 * out: NULL in place, else where the options table's index goes */
static em_tensor *addc_at(lua_State *L, bool div, const char *op, int *out)
{
    em_tensor *a = check_tensor(L, 1, op), *b = check_tensor(L, 2, op), *c = check_tensor(L, 3, op);
    emlua_args args;
    start_args(&args, L, op, addc_names, addc_out_names, 4, out);
    double v = emlua_arg_number(&args, 0, 1);
    return div ? em_addcdiv(a, b, c, v) : em_addcmul(a, b, c, v);
}

static int addc(lua_State *L, bool div, const char *op)
{
    int o;
    em_tensor *r = addc_at(L, div, op, &o);
    return emlua_push_out(L, r, o, op);
}

static int t_addcmul(lua_State *L) { return addc(L, false, "addcmul"); }
static int t_addcdiv(lua_State *L) { return addc(L, true, "addcdiv"); }
static int t_addcmul_(lua_State *L) { return assign_self(L, addc_at(L, false, "addcmul_", NULL), "addcmul_"); }
static int t_addcdiv_(lua_State *L) { return assign_self(L, addc_at(L, true, "addcdiv_", NULL), "addcdiv_"); }

static const char *const close_names[] = {"rtol", "atol", "equal_nan", NULL};

static em_tensor *isclose_args(lua_State *L, const char *op, double *rtol, double *atol, bool *equal_nan)
{
    em_tensor *a = check_tensor(L, 1, op);
    check_tensor(L, 2, op);
    emlua_args args;
    emlua_args_start(&args, L, op, 3, close_names);
    *rtol = emlua_arg_number(&args, 0, 1e-5);
    *atol = emlua_arg_number(&args, 1, 1e-8);
    *equal_nan = emlua_arg_bool(&args, 2, false);
    return a;
}

static int t_isclose(lua_State *L)
{
    double rtol, atol;
    bool en;
    em_tensor *a = isclose_args(L, "isclose", &rtol, &atol, &en);
    return emlua_push(L, em_isclose(a, emlua_test(L, 2), rtol, atol, en));
}

static int t_allclose(lua_State *L)
{
    double rtol, atol;
    bool en, r;
    em_tensor *a = isclose_args(L, "allclose", &rtol, &atol, &en);
    if (em_allclose(a, emlua_test(L, 2), rtol, atol, en, &r)) return emlua_fail(L);
    lua_pushboolean(L, r);
    return 1;
}

static int t_equal(lua_State *L)
{
    bool r;
    em_tensor *a = check_tensor(L, 1, "equal"), *b = check_tensor(L, 2, "equal");
    emlua_keywords(L, 3, "equal", NULL);
    if (em_equal(a, b, &r)) return emlua_fail(L);
    lua_pushboolean(L, r);
    return 1;
}

/* ---- registration --------------------------------------------------------- */

/* The functions with arguments of their own, and the ops outside the table
 * (elementwise_ops.h). Each function serves both t:name() and ember.name(t)
 * (self is argument 1). */
static const luaL_Reg both[] = {
    {"round", t_round}, {"round_", t_round_}, {"gelu", t_gelu}, {"gelu_", t_gelu_},
    {"add", t_add}, {"sub", t_sub}, {"div", t_div}, {"add_", t_add_}, {"sub_", t_sub_}, {"div_", t_div_},
    {"clamp", t_clamp}, {"clamp_min", t_clamp_min}, {"clamp_max", t_clamp_max}, {"masked_fill", t_masked_fill},
    {"clamp_", t_clamp_}, {"clamp_min_", t_clamp_min_}, {"clamp_max_", t_clamp_max_},
    {"masked_fill_", t_masked_fill_},
    /* elementwise math */
    {"frac", t_frac}, {"frac_", t_frac_}, {"logit", t_logit}, {"logit_", t_logit_},
    {"nan_to_num", t_nan_to_num}, {"nan_to_num_", t_nan_to_num_}, {"isnan", t_isnan}, {"isinf", t_isinf},
    {"isfinite", t_isfinite}, {"isposinf", t_isposinf}, {"isneginf", t_isneginf}, {"sgn", t_sgn},
    {"sgn_", t_sgn_}, {"floor_divide", t_floor_divide}, {"floor_divide_", t_floor_divide_},
    {"xlogy", t_xlogy}, {"xlogy_", t_xlogy_}, {"logical_xor", t_logical_xor},
    {"logical_xor_", t_logical_xor_}, {"heaviside", t_heaviside}, {"heaviside_", t_heaviside_},
    {"lerp", t_lerp}, {"lerp_", t_lerp_}, {"addcmul", t_addcmul}, {"addcmul_", t_addcmul_},
    {"addcdiv", t_addcdiv}, {"addcdiv_", t_addcdiv_}, {"isclose", t_isclose}, {"allclose", t_allclose},
    {"equal", t_equal}, {"polygamma", t_polygamma}, {"polygamma_", t_polygamma_},
    {NULL, NULL},
};

/* NumPy's and PyTorch's other names: {alias, name}, the same function */
static const char *const aliases[][2] = {
    {"negative", "neg"}, {"subtract", "sub"}, {"multiply", "mul"}, {"divide", "div"}, {"true_divide", "div"},
    {"clip", "clamp"}, {"clip_", "clamp_"}, {"fix", "trunc"}, {"fix_", "trunc_"}, {"arcsin", "asin"},
    {"arcsin_", "asin_"}, {"arccos", "acos"}, {"arccos_", "acos_"}, {"arctan", "atan"}, {"arctan_", "atan_"},
    {"arcsinh", "asinh"}, {"arcsinh_", "asinh_"}, {"arccosh", "acosh"}, {"arccosh_", "acosh_"},
    {"arctanh", "atanh"}, {"arctanh_", "atanh_"}, {"arctan2", "atan2"}, {"arctan2_", "atan2_"},
};

/* The names of elementwise_ops.h's classes, for ember._ops */
static const char *const dtypes_names[] = {"float", "numeric", "all", "integer", "bitwise", "to_bool"};
static const char *const autocast_names[] = {"none", "fp32_cuda", "promote", "lower", "fp32", "lower_cuda",
                                              "promote_cuda_lower_cpu"};
static const char *const binding_names[] = {"generic", "own", "internal"};
_Static_assert(sizeof dtypes_names / sizeof *dtypes_names == EM_NOPDT, "a name per em_op_dtypes");
_Static_assert(sizeof autocast_names / sizeof *autocast_names == EM_NAC, "a name per em_autocast_policy");
_Static_assert(sizeof binding_names / sizeof *binding_names == EM_NOPB, "a name per em_op_binding");

static void set_string(lua_State *L, const char *key, const char *value)
{
    if (!value) return;
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

/* The in-place name of a table row, or its name (k 0) */
static const char *fn_name(const em_op_info *info, int k) { return k == 0 ? info->name : info->inplace; }

/* Registers an op of the table whose binding is generic: fn (and fn_ under
 * the in-place name), the op in upvalue 1, in the method table at index
 * methods and the module table at index module. */
static void register_op(lua_State *L, int methods, int module, int op, const em_op_info *info, lua_CFunction fn,
                        lua_CFunction fn_)
{
    if (info->binding != EM_OPB_GENERIC) return;
    for (int k = 0; k < 2; k++) {
        if (!fn_name(info, k)) continue;
        lua_pushinteger(L, op);
        lua_pushcclosure(L, k == 0 ? fn : fn_, 1);
        lua_pushvalue(L, -1);
        lua_setfield(L, methods, fn_name(info, k));
        lua_setfield(L, module, fn_name(info, k));
    }
}

/* Sets row i of the list on the top of the stack to a table of the op's
 * columns and its generic functions fn and fn_ (whatever its binding). */
static void push_op_row(lua_State *L, int i, int op, int arity, const em_op_info *info, lua_CFunction fn,
                        lua_CFunction fn_)
{
    lua_createtable(L, 0, 10);
    set_string(L, "name", info->name);
    set_string(L, "inplace", info->inplace);
    set_string(L, "backward", info->backward);
    set_string(L, "dtypes", dtypes_names[info->dtypes]);
    set_string(L, "autocast", autocast_names[info->autocast]);
    set_string(L, "binding", binding_names[info->binding]);
    lua_pushinteger(L, arity);
    lua_setfield(L, -2, "arity");
    for (int k = 0; k < 2; k++) {
        if (!fn_name(info, k)) continue;
        lua_pushinteger(L, op);
        lua_pushcclosure(L, k == 0 ? fn : fn_, 1);
        lua_setfield(L, -2, k == 0 ? "fn" : "fn_");
    }
    lua_rawseti(L, -2, i);
}

/* ember._ops() (internal: tests/gpu/ops_table_spec.lua walks it): a new list
 * of every op of the table, unary then binary, with its columns and generic
 * functions. A function, not a table, so that start-up does not build it. */
static int t_ops(lua_State *L)
{
    lua_createtable(L, EM_NUNARY + EM_NBINARY, 0);
    for (int op = 0; op < EM_NUNARY; op++)
        push_op_row(L, op + 1, op, 1, em_unary_info((em_unary_op)op), t_unary, t_unary_);
    for (int op = 0; op < EM_NBINARY; op++)
        push_op_row(L, EM_NUNARY + op + 1, op, 2, em_binary_info((em_binary_op)op), t_binary, t_binary_);
    return 1;
}

/* where's argument order differs: ember.where(cond, x, y) but x:where(cond, y) */
static const luaL_Reg methods[] = {{"where", m_where}, {NULL, NULL}};
static const luaL_Reg functions[] = {{"where", t_where}, {"_ops", t_ops}, {NULL, NULL}};

void emlua_open_elementwise(lua_State *L)
{
    emlua_register(L, both, both);
    emlua_register(L, methods, functions);
    int module = lua_gettop(L);   /* luaopen_ember's module table */
    emlua_push_methods(L);
    int mt = lua_gettop(L);
    for (int op = 0; op < EM_NUNARY; op++)
        register_op(L, mt, module, op, em_unary_info((em_unary_op)op), t_unary, t_unary_);
    for (int op = 0; op < EM_NBINARY; op++)
        register_op(L, mt, module, op, em_binary_info((em_binary_op)op), t_binary, t_binary_);
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        lua_getfield(L, mt, aliases[i][1]);
        lua_pushvalue(L, -1);
        lua_setfield(L, mt, aliases[i][0]);
        lua_setfield(L, module, aliases[i][0]);
    }
    lua_pop(L, 1);
}
