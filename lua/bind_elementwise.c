/* bind_elementwise.c — Lua functions for the elementwise ops: unary math
 * (t:exp(), ember.exp(t)), binary arithmetic and comparisons with a tensor
 * or a number on either side, clamp, where and masked_fill, and the in-place
 * spellings with a trailing underscore (which return self). */
#include "binding.h"

#include <stdio.h>
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

static int unary(lua_State *L, em_unary_op op)
{
    return emlua_push(L, em_unary(op, check_tensor(L, 1, em_unary_name(op))));
}

static int unary_(lua_State *L, em_unary_op op)
{
    char name[32];
    snprintf(name, sizeof name, "%s_", em_unary_name(op));
    if (em_unary_(op, check_tensor(L, 1, name))) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}

static int t_neg(lua_State *L) { return unary(L, EM_NEG); }
static int t_abs(lua_State *L) { return unary(L, EM_ABS); }
static int t_sign(lua_State *L) { return unary(L, EM_SIGN); }
static int t_exp(lua_State *L) { return unary(L, EM_EXP); }
static int t_log(lua_State *L) { return unary(L, EM_LOG); }
static int t_log1p(lua_State *L) { return unary(L, EM_LOG1P); }
static int t_expm1(lua_State *L) { return unary(L, EM_EXPM1); }
static int t_sqrt(lua_State *L) { return unary(L, EM_SQRT); }
static int t_rsqrt(lua_State *L) { return unary(L, EM_RSQRT); }
static int t_sin(lua_State *L) { return unary(L, EM_SIN); }
static int t_cos(lua_State *L) { return unary(L, EM_COS); }
static int t_tanh(lua_State *L) { return unary(L, EM_TANH); }
static int t_sigmoid(lua_State *L) { return unary(L, EM_SIGMOID); }
static int t_relu(lua_State *L) { return unary(L, EM_RELU); }
static int t_silu(lua_State *L) { return unary(L, EM_SILU); }
static int t_floor(lua_State *L) { return unary(L, EM_FLOOR); }
static int t_ceil(lua_State *L) { return unary(L, EM_CEIL); }
static int t_reciprocal(lua_State *L) { return unary(L, EM_RECIPROCAL); }
static int t_square(lua_State *L) { return unary(L, EM_SQUARE); }
static int t_logical_not(lua_State *L) { return unary(L, EM_LOGICAL_NOT); }

static int t_neg_(lua_State *L) { return unary_(L, EM_NEG); }
static int t_abs_(lua_State *L) { return unary_(L, EM_ABS); }
static int t_sign_(lua_State *L) { return unary_(L, EM_SIGN); }
static int t_exp_(lua_State *L) { return unary_(L, EM_EXP); }
static int t_log_(lua_State *L) { return unary_(L, EM_LOG); }
static int t_log1p_(lua_State *L) { return unary_(L, EM_LOG1P); }
static int t_expm1_(lua_State *L) { return unary_(L, EM_EXPM1); }
static int t_sqrt_(lua_State *L) { return unary_(L, EM_SQRT); }
static int t_rsqrt_(lua_State *L) { return unary_(L, EM_RSQRT); }
static int t_sin_(lua_State *L) { return unary_(L, EM_SIN); }
static int t_cos_(lua_State *L) { return unary_(L, EM_COS); }
static int t_tanh_(lua_State *L) { return unary_(L, EM_TANH); }
static int t_sigmoid_(lua_State *L) { return unary_(L, EM_SIGMOID); }
static int t_relu_(lua_State *L) { return unary_(L, EM_RELU); }
static int t_silu_(lua_State *L) { return unary_(L, EM_SILU); }
static int t_floor_(lua_State *L) { return unary_(L, EM_FLOOR); }
static int t_ceil_(lua_State *L) { return unary_(L, EM_CEIL); }
static int t_reciprocal_(lua_State *L) { return unary_(L, EM_RECIPROCAL); }
static int t_square_(lua_State *L) { return unary_(L, EM_SQUARE); }
static int t_logical_not_(lua_State *L) { return unary_(L, EM_LOGICAL_NOT); }

/* round(t) only: PyTorch's decimals= is not supported */
static int check_round_args(lua_State *L, const char *op)
{
    int o = emlua_options_index(L, 2);
    if (o && (lua_getfield(L, o, "decimals"), !lua_isnil(L, -1)))
        return emlua_argerror(L, o, op, "decimals is not supported");
    return 0;
}

static int t_round(lua_State *L) { check_round_args(L, "round"); return unary(L, EM_ROUND); }
static int t_round_(lua_State *L) { check_round_args(L, "round_"); return unary_(L, EM_ROUND); }

/* gelu(t) is the exact erf form; {approximate = "tanh"} the tanh form. */
static bool gelu_tanh(lua_State *L, const char *op)
{
    int o = emlua_options_index(L, 2);
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

/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), composed from engine ops */
static em_tensor *gelu_tanh_form(const em_tensor *x)
{
    const double k = 0.7978845608028654;   /* sqrt(2/pi) */
    em_tensor *t[7] = {0}, *r = NULL;
    if ((t[0] = em_pow_scalar(x, 3)) &&
        (t[1] = em_binary_scalar(EM_MUL, t[0], 0.044715, false, false)) &&
        (t[2] = em_binary(EM_ADD, x, t[1])) &&
        (t[3] = em_binary_scalar(EM_MUL, t[2], k, false, false)) &&
        (t[4] = em_unary(EM_TANH, t[3])) &&
        (t[5] = em_binary_scalar(EM_ADD, t[4], 1, true, false)) &&
        (t[6] = em_binary(EM_MUL, x, t[5])))
        r = em_binary_scalar(EM_MUL, t[6], 0.5, false, false);
    for (int i = 0; i < 7; i++) em_release(t[i]);
    return r;
}

static int t_gelu(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "gelu");
    if (gelu_tanh(L, "gelu")) return emlua_push(L, gelu_tanh_form(t));
    return emlua_push(L, em_unary(EM_GELU, t));
}

static int t_gelu_(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "gelu_");
    if (gelu_tanh(L, "gelu_")) {
        em_tensor *r = gelu_tanh_form(t);
        if (!r) return emlua_fail(L);
        int rc = em_copy_(t, r);
        em_release(r);
        if (rc) return emlua_fail(L);
        lua_settop(L, 1);
        return 1;
    }
    return unary_(L, EM_GELU);
}

/* ---- binary --------------------------------------------------------------- */

/* op on the values at stack positions ia and ib: tensors, numbers or
 * booleans, at least one a tensor. */
static int binary_at(lua_State *L, em_binary_op op, int ia, int ib)
{
    const char *name = em_binary_name(op);
    em_tensor *a = emlua_test(L, ia), *b = emlua_test(L, ib);
    if (a && b) return emlua_push(L, em_binary(op, a, b));
    if (emlua_exact_integer_operand(L, a ? a : b, a ? ib : ia)) {
        /* an int64 tensor and an integer past 2^53: exactly, not through a double */
        em_tensor *s = emlua_check_operand(L, a ? ib : ia, name, a ? a : b);
        em_tensor *r = a ? em_binary(op, a, s) : em_binary(op, s, b);
        em_release(s);
        return emlua_push(L, r);
    }
    if (a && lua_type(L, ib) == LUA_TNUMBER) {
        bool is_int = lua_isinteger(L, ib);
        double s = is_int ? (double)lua_tointeger(L, ib) : lua_tonumber(L, ib);
        return emlua_push(L, em_binary_scalar(op, a, s, is_int, false));
    }
    if (b && lua_type(L, ia) == LUA_TNUMBER) {
        bool is_int = lua_isinteger(L, ia);
        double s = is_int ? (double)lua_tointeger(L, ia) : lua_tonumber(L, ia);
        return emlua_push(L, em_binary_scalar(op, b, s, is_int, true));
    }
    if (!a && !b) return emlua_typeerror(L, emlua_test(L, ia) || lua_type(L, ia) != LUA_TNUMBER ? ia : ib,
                                         name, "a tensor");
    int num = a ? ib : ia;
    check_operand_type(L, num, name);
    em_tensor *s = emlua_check_operand(L, num, name, a ? a : b);
    em_tensor *r = a ? em_binary(op, a, s) : em_binary(op, s, b);
    em_release(s);
    return emlua_push(L, r);
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

static int binary(lua_State *L, em_binary_op op) { return binary_at(L, op, 1, 2); }

static int binary_(lua_State *L, em_binary_op op)
{
    char name[32];
    snprintf(name, sizeof name, "%s_", em_binary_name(op));
    return binary_inplace_at(L, op, name, 2);
}

/* add/sub take PyTorch's alpha: a + alpha * b. The scaled b is pushed on
 * the stack and its position returned (2 when there is no alpha). */
static int scale_by_alpha(lua_State *L, const char *op)
{
    int o = emlua_options_index(L, 3);
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

static int t_add(lua_State *L) { return binary_at(L, EM_ADD, 1, scale_by_alpha(L, "add")); }
static int t_sub(lua_State *L) { return binary_at(L, EM_SUB, 1, scale_by_alpha(L, "sub")); }
static int t_add_(lua_State *L) { return binary_inplace_at(L, EM_ADD, "add_", scale_by_alpha(L, "add_")); }
static int t_sub_(lua_State *L) { return binary_inplace_at(L, EM_SUB, "sub_", scale_by_alpha(L, "sub_")); }

static int check_div_args(lua_State *L, const char *op)
{
    int o = emlua_options_index(L, 3);
    if (o && (lua_getfield(L, o, "rounding_mode"), !lua_isnil(L, -1)))
        return emlua_argerror(L, o, op, "rounding_mode is not supported (use floor(a / b))");
    return 0;
}

static int t_div(lua_State *L) { check_div_args(L, "div"); return binary(L, EM_DIV); }
static int t_div_(lua_State *L) { check_div_args(L, "div_"); return binary_(L, EM_DIV); }
static int t_mul(lua_State *L) { return binary(L, EM_MUL); }
static int t_remainder(lua_State *L) { return binary(L, EM_REMAINDER); }
static int t_pow(lua_State *L) { return binary(L, EM_POW); }
static int t_maximum(lua_State *L) { return binary(L, EM_MAXIMUM); }
static int t_minimum(lua_State *L) { return binary(L, EM_MINIMUM); }
static int t_eq(lua_State *L) { return binary(L, EM_EQ); }
static int t_ne(lua_State *L) { return binary(L, EM_NE); }
static int t_lt(lua_State *L) { return binary(L, EM_LT); }
static int t_le(lua_State *L) { return binary(L, EM_LE); }
static int t_gt(lua_State *L) { return binary(L, EM_GT); }
static int t_ge(lua_State *L) { return binary(L, EM_GE); }
static int t_logical_and(lua_State *L) { return binary(L, EM_LOGICAL_AND); }
static int t_logical_or(lua_State *L) { return binary(L, EM_LOGICAL_OR); }

static int t_mul_(lua_State *L) { return binary_(L, EM_MUL); }
static int t_remainder_(lua_State *L) { return binary_(L, EM_REMAINDER); }
static int t_pow_(lua_State *L) { return binary_(L, EM_POW); }
static int t_maximum_(lua_State *L) { return binary_(L, EM_MAXIMUM); }
static int t_minimum_(lua_State *L) { return binary_(L, EM_MINIMUM); }
static int t_eq_(lua_State *L) { return binary_(L, EM_EQ); }
static int t_ne_(lua_State *L) { return binary_(L, EM_NE); }
static int t_lt_(lua_State *L) { return binary_(L, EM_LT); }
static int t_le_(lua_State *L) { return binary_(L, EM_LE); }
static int t_gt_(lua_State *L) { return binary_(L, EM_GT); }
static int t_ge_(lua_State *L) { return binary_(L, EM_GE); }
static int t_logical_and_(lua_State *L) { return binary_(L, EM_LOGICAL_AND); }
static int t_logical_or_(lua_State *L) { return binary_(L, EM_LOGICAL_OR); }

/* ---- clamp ---------------------------------------------------------------- */

/* clamp(t, min, max): min and max are numbers, tensors (broadcast) or nil. */
static em_tensor *clamp_at(lua_State *L, em_tensor *t, int ilo, int ihi, const char *op)
{
    int tlo = lua_type(L, ilo), thi = lua_type(L, ihi);
    em_tensor *lo_t = emlua_test(L, ilo), *hi_t = emlua_test(L, ihi);
    if (tlo > LUA_TNIL && tlo != LUA_TNUMBER && !lo_t) emlua_typeerror(L, ilo, op, "a number, a tensor or nil");
    if (thi > LUA_TNIL && thi != LUA_TNUMBER && !hi_t) emlua_typeerror(L, ihi, op, "a number, a tensor or nil");
    if (!lo_t && !hi_t) {
        double lo = lua_tonumber(L, ilo), hi = lua_tonumber(L, ihi);
        return em_clamp(t, tlo == LUA_TNUMBER ? &lo : NULL, thi == LUA_TNUMBER ? &hi : NULL);
    }
    /* tensor bounds: minimum(maximum(t, lo), hi) */
    em_tensor *r = em_retain(t);
    if (tlo == LUA_TNUMBER || lo_t) {
        em_tensor *n = lo_t ? em_binary(EM_MAXIMUM, r, lo_t)
                            : em_binary_scalar(EM_MAXIMUM, r, lua_tonumber(L, ilo), lua_isinteger(L, ilo), false);
        em_release(r);
        if (!(r = n)) return NULL;
    }
    if (thi == LUA_TNUMBER || hi_t) {
        em_tensor *n = hi_t ? em_binary(EM_MINIMUM, r, hi_t)
                            : em_binary_scalar(EM_MINIMUM, r, lua_tonumber(L, ihi), lua_isinteger(L, ihi), false);
        em_release(r);
        r = n;
    }
    return r;
}

static int t_clamp(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "clamp");
    return emlua_push(L, clamp_at(L, t, 2, 3, "clamp"));
}

static int t_clamp_min(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "clamp_min");
    if (lua_isnoneornil(L, 2)) return emlua_typeerror(L, 2, "clamp_min", "a number or a tensor");
    lua_settop(L, 2);
    return emlua_push(L, clamp_at(L, t, 2, 3, "clamp_min"));
}

static int t_clamp_max(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "clamp_max");
    if (lua_isnoneornil(L, 2)) return emlua_typeerror(L, 2, "clamp_max", "a number or a tensor");
    lua_settop(L, 2);
    return emlua_push(L, clamp_at(L, t, 3, 2, "clamp_max"));
}

/* in place: the result must fit t's dtype (clamp_ of an int tensor to 0.5
 * is refused, as in PyTorch) */
static int clamp_inplace(lua_State *L, int ilo, int ihi, const char *op)
{
    em_tensor *t = check_tensor(L, 1, op);
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

static int t_clamp_(lua_State *L) { return clamp_inplace(L, 2, 3, "clamp_"); }

static int t_clamp_min_(lua_State *L)
{
    lua_settop(L, 2);
    return clamp_inplace(L, 2, 3, "clamp_min_");
}

static int t_clamp_max_(lua_State *L)
{
    lua_settop(L, 2);
    return clamp_inplace(L, 3, 2, "clamp_max_");
}

/* ---- where and masked_fill ------------------------------------------------ */

static int where_at(lua_State *L, int icond, int ia, int ib)
{
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
    return emlua_push(L, r);
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

static int t_masked_fill(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "masked_fill"), *mask = check_tensor(L, 2, "masked_fill");
    return emlua_push(L, em_masked_fill(t, mask, fill_value(L, 3, "masked_fill")));
}

static int t_masked_fill_(lua_State *L)
{
    em_tensor *t = check_tensor(L, 1, "masked_fill_"), *mask = check_tensor(L, 2, "masked_fill_");
    if (em_masked_fill_(t, mask, fill_value(L, 3, "masked_fill_"))) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}

/* ---- registration --------------------------------------------------------- */

/* Each function serves both t:name() and ember.name(t) (self is argument 1). */
static const luaL_Reg both[] = {
    {"neg", t_neg}, {"negative", t_neg}, {"abs", t_abs}, {"sign", t_sign}, {"exp", t_exp},
    {"log", t_log}, {"log1p", t_log1p}, {"expm1", t_expm1}, {"sqrt", t_sqrt},
    {"rsqrt", t_rsqrt}, {"sin", t_sin}, {"cos", t_cos}, {"tanh", t_tanh},
    {"sigmoid", t_sigmoid}, {"relu", t_relu}, {"gelu", t_gelu}, {"silu", t_silu},
    {"floor", t_floor}, {"ceil", t_ceil}, {"round", t_round}, {"reciprocal", t_reciprocal},
    {"square", t_square}, {"logical_not", t_logical_not},
    {"add", t_add}, {"sub", t_sub}, {"subtract", t_sub}, {"mul", t_mul},
    {"multiply", t_mul}, {"div", t_div}, {"divide", t_div}, {"true_divide", t_div},
    {"remainder", t_remainder}, {"pow", t_pow}, {"maximum", t_maximum},
    {"minimum", t_minimum}, {"eq", t_eq}, {"ne", t_ne}, {"lt", t_lt}, {"le", t_le},
    {"gt", t_gt}, {"ge", t_ge}, {"logical_and", t_logical_and}, {"logical_or", t_logical_or},
    {"clamp", t_clamp}, {"clip", t_clamp}, {"clamp_min", t_clamp_min},
    {"clamp_max", t_clamp_max}, {"masked_fill", t_masked_fill},
    {"neg_", t_neg_}, {"abs_", t_abs_}, {"sign_", t_sign_}, {"exp_", t_exp_},
    {"log_", t_log_}, {"log1p_", t_log1p_}, {"expm1_", t_expm1_}, {"sqrt_", t_sqrt_},
    {"rsqrt_", t_rsqrt_}, {"sin_", t_sin_}, {"cos_", t_cos_}, {"tanh_", t_tanh_},
    {"sigmoid_", t_sigmoid_}, {"relu_", t_relu_}, {"gelu_", t_gelu_}, {"silu_", t_silu_},
    {"floor_", t_floor_}, {"ceil_", t_ceil_}, {"round_", t_round_},
    {"reciprocal_", t_reciprocal_}, {"square_", t_square_}, {"logical_not_", t_logical_not_},
    {"add_", t_add_}, {"sub_", t_sub_}, {"mul_", t_mul_}, {"div_", t_div_},
    {"remainder_", t_remainder_}, {"pow_", t_pow_}, {"maximum_", t_maximum_},
    {"minimum_", t_minimum_}, {"eq_", t_eq_}, {"ne_", t_ne_}, {"lt_", t_lt_},
    {"le_", t_le_}, {"gt_", t_gt_}, {"ge_", t_ge_}, {"logical_and_", t_logical_and_},
    {"logical_or_", t_logical_or_}, {"clamp_", t_clamp_}, {"clip_", t_clamp_},
    {"clamp_min_", t_clamp_min_}, {"clamp_max_", t_clamp_max_},
    {"masked_fill_", t_masked_fill_},
    {NULL, NULL},
};

/* where's argument order differs: ember.where(cond, x, y) but x:where(cond, y) */
static const luaL_Reg methods[] = {{"where", m_where}, {NULL, NULL}};
static const luaL_Reg functions[] = {{"where", t_where}, {NULL, NULL}};

void emlua_open_elementwise(lua_State *L)
{
    emlua_register(L, both, both);
    emlua_register(L, methods, functions);
}
