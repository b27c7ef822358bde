/* bind_reduce.c — reductions, softmax and scans for Lua.
 *
 * Signatures (dims are 1-based, negative from the end; a dim list is a number
 * or a table of numbers; a trailing options table may repeat any positional
 * parameter by name, e.g. t:sum{dim = 2, keepdim = true}):
 *   t:sum([dims [, keepdim]] [, {dtype=}])      also mean, prod (dtype casts
 *   t:amax / amin / all / any / logsumexp([dims [, keepdim]])   the input first
 *   t:max() / t:min()                 -> 0-d tensor                for mean/prod)
 *   t:max(dim [, keepdim])            -> values, indices (1-based, first of ties)
 *   t:max(other)                      -> elementwise maximum (torch.max(a, b))
 *   t:argmax([dim [, keepdim]])       -> int64 indices; no dim: into the flattened tensor
 *   t:var([dims [, keepdim]] [, {correction = 1}])      also std. PyTorch 2 style:
 *       the divisor is N - correction. For old code, {unbiased = false} means
 *       correction 0, and t:var(false) / t:var(true) (a lone boolean) is
 *       `unbiased` as in torch.var(input, unbiased).
 *   t:norm([p [, dims [, keepdim]]])  p: number (default 2), "fro" (= 2),
 *       math.huge / -math.huge (max / min of |x|)
 *   t:softmax(dim), t:log_softmax(dim)          dim required; {dtype=} casts first
 *   t:cumsum(dim), t:cumprod(dim)               dim required; {dtype=} casts first
 * Every function is also ember.<name>(t, ...). */
#include "binding.h"

#include <math.h>
#include <string.h>

/* Brings the arguments after self to a fixed layout: positional parameters
 * in slots 2..n+1 and the options table (or nil) in slot n+2. An option
 * named like a positional parameter fills that slot when it was not given.
 * Returns the options slot, or 0 when there is no options table. */
static int canon_args(lua_State *L, const char *op, int n, const char *const *names)
{
    int opts = emlua_options_index(L, 2);
    int top = opts ? opts - 1 : lua_gettop(L);
    while (top > n + 1 && lua_isnil(L, top)) top--;   /* t:softmax(1, nil), as t:sum(1, nil) */
    if (top > n + 1)
        emlua_argerror(L, n + 2, op, "unexpected extra argument (%s)", luaL_typename(L, n + 2));
    int o = n + 2;
    lua_settop(L, o);
    if (opts && opts != o) {
        lua_copy(L, opts, o);
        lua_pushnil(L);
        lua_replace(L, opts);
    }
    if (!opts) return 0;
    for (int i = 0; i < n; i++) {
        if (!names[i] || !lua_isnil(L, 2 + i)) continue;
        lua_getfield(L, o, names[i]);
        lua_replace(L, 2 + i);
    }
    return o;
}

/* The dtype option, if the options table has one. */
static bool opt_dtype(lua_State *L, int opts, const char *op, em_dtype *d)
{
    if (!opts) return false;
    lua_getfield(L, opts, "dtype");
    bool has = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (has) *d = emlua_opt_dtype(L, opts, op, EM_FLOAT32);
    return has;
}

static void reject_dtype(lua_State *L, int opts, const char *op)
{
    em_dtype d;
    if (opt_dtype(L, opts, op, &d)) emlua_argerror(L, opts, op, "option 'dtype' is not supported");
}

/* ---- dims + keepdim reductions ------------------------------------------- */

typedef em_tensor *(*reduce_fn)(const em_tensor *t, const int *dims, int ndims, bool keepdim);

static const char *const dim_keep[] = {"dim", "keepdim"};

static int reduce_with(lua_State *L, const char *op, reduce_fn fn, bool takes_dtype)
{
    em_tensor *t = emlua_check(L, 1, op);
    int o = canon_args(L, op, 2, dim_keep);
    int dims[EM_MAX_DIMS];
    int nd = emlua_opt_dims(L, 2, t->ndim, op, dims);
    bool keep = emlua_opt_boolean(L, 3, op, false);
    em_dtype d;
    if (!takes_dtype) {
        reject_dtype(L, o, op);
    } else if (opt_dtype(L, o, op, &d)) {
        if (fn == em_sum) return emlua_push(L, em_sum_dtype(t, dims, nd, keep, d));
        em_tensor *c = em_to_dtype(t, d);
        if (!c) return emlua_fail(L);
        em_tensor *r = fn(c, dims, nd, keep);
        em_release(c);
        return emlua_push(L, r);
    }
    return emlua_push(L, fn(t, dims, nd, keep));
}

static int l_sum(lua_State *L) { return reduce_with(L, "sum", em_sum, true); }
static int l_mean(lua_State *L) { return reduce_with(L, "mean", em_mean, true); }
static int l_prod(lua_State *L) { return reduce_with(L, "prod", em_prod, true); }
static int l_amax(lua_State *L) { return reduce_with(L, "amax", em_amax, false); }
static int l_amin(lua_State *L) { return reduce_with(L, "amin", em_amin, false); }
static int l_all(lua_State *L) { return reduce_with(L, "all", em_all, false); }
static int l_any(lua_State *L) { return reduce_with(L, "any", em_any, false); }
static int l_logsumexp(lua_State *L) { return reduce_with(L, "logsumexp", em_logsumexp, false); }

/* ---- max / min ----------------------------------------------------------- */

typedef int (*extreme_fn)(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);

static int extreme(lua_State *L, const char *op, em_binary_op elementwise, reduce_fn all, extreme_fn along)
{
    em_tensor *t = emlua_check(L, 1, op);
    em_tensor *other = emlua_test(L, 2);
    if (other) {
        if (lua_gettop(L) > 2) emlua_argerror(L, 3, op, "unexpected argument after the second tensor");
        return emlua_push(L, em_binary(elementwise, t, other));
    }
    canon_args(L, op, 2, dim_keep);
    if (lua_isnil(L, 2)) {
        if (!lua_isnil(L, 3)) emlua_argerror(L, 3, op, "keepdim needs a dim");
        if (em_numel(t) == 0)
            return luaL_error(L, "%s: cannot reduce the empty tensor %s without a dim", op,
                              em_sizes_str(t->sizes, t->ndim, (char[160]){0}, 160));
        return emlua_push(L, all(t, NULL, 0, false));
    }
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    bool keep = emlua_opt_boolean(L, 3, op, false);
    em_tensor *v, *i;
    if (along(t, dim, keep, &v, &i)) return emlua_fail(L);
    emlua_push(L, v);
    emlua_push(L, i);
    return 2;
}

static int l_max(lua_State *L) { return extreme(L, "max", EM_MAXIMUM, em_amax, em_max_dim); }
static int l_min(lua_State *L) { return extreme(L, "min", EM_MINIMUM, em_amin, em_min_dim); }

typedef em_tensor *(*arg_fn)(const em_tensor *t, int dim, bool keepdim, bool flat);

static int arg_extreme(lua_State *L, const char *op, arg_fn fn)
{
    em_tensor *t = emlua_check(L, 1, op);
    canon_args(L, op, 2, dim_keep);
    bool keep = emlua_opt_boolean(L, 3, op, false);
    if (lua_isnil(L, 2)) return emlua_push(L, fn(t, 0, keep, true));
    return emlua_push(L, fn(t, emlua_check_dim(L, 2, t->ndim, op), keep, false));
}

static int l_argmax(lua_State *L) { return arg_extreme(L, "argmax", em_argmax); }
static int l_argmin(lua_State *L) { return arg_extreme(L, "argmin", em_argmin); }

/* ---- var / std / norm ---------------------------------------------------- */

typedef em_tensor *(*var_fn)(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim);

static int variance(lua_State *L, const char *op, var_fn fn)
{
    em_tensor *t = emlua_check(L, 1, op);
    double correction = 1;
    if (lua_type(L, 2) == LUA_TBOOLEAN) {   /* torch.var(input, unbiased) */
        if (lua_gettop(L) > 2) emlua_argerror(L, 3, op, "unexpected argument after `unbiased`");
        correction = lua_toboolean(L, 2) ? 1 : 0;
        return emlua_push(L, fn(t, NULL, 0, correction, false));
    }
    int o = canon_args(L, op, 2, dim_keep);
    int dims[EM_MAX_DIMS];
    int nd = emlua_opt_dims(L, 2, t->ndim, op, dims);
    bool keep = emlua_opt_boolean(L, 3, op, false);
    if (o) {
        lua_getfield(L, o, "unbiased");
        bool has_unbiased = !lua_isnil(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, o, "correction");
        bool has_corr = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (has_unbiased && has_corr)
            emlua_argerror(L, o, op, "give either 'correction' or 'unbiased', not both");
        if (has_unbiased) correction = emlua_opt_field_boolean(L, o, "unbiased", op, true) ? 1 : 0;
        correction = emlua_opt_field_number(L, o, "correction", op, correction);
        reject_dtype(L, o, op);
    }
    return emlua_push(L, fn(t, dims, nd, correction, keep));
}

static int l_var(lua_State *L) { return variance(L, "var", em_var); }
static int l_std(lua_State *L) { return variance(L, "std", em_std); }

static int l_norm(lua_State *L)
{
    static const char *const names[] = {"p", "dim", "keepdim"};
    em_tensor *t = emlua_check(L, 1, "norm");
    canon_args(L, "norm", 3, names);
    double p = 2;
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *s = lua_tostring(L, 2);
        if (strcmp(s, "fro") != 0)
            emlua_argerror(L, 2, "norm", "unsupported norm '%s' (expected a number, \"fro\" or math.huge)", s);
    } else {
        p = emlua_opt_number(L, 2, "norm", 2);
    }
    int dims[EM_MAX_DIMS];
    int nd = emlua_opt_dims(L, 3, t->ndim, "norm", dims);
    bool keep = emlua_opt_boolean(L, 4, "norm", false);
    return emlua_push(L, em_norm(t, p, dims, nd, keep));
}

/* ---- along one dim: softmax family and scans ----------------------------- */

typedef em_tensor *(*dim_fn)(const em_tensor *t, int dim);

static int along_dim(lua_State *L, const char *op, dim_fn fn)
{
    static const char *const names[] = {"dim"};
    em_tensor *t = emlua_check(L, 1, op);
    int o = canon_args(L, op, 1, names);
    if (lua_isnil(L, 2))
        return emlua_argerror(L, 2, op, "missing dim (%s works along one dimension; give it, e.g. -1 for the last)", op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    em_dtype d;
    if (opt_dtype(L, o, op, &d)) {
        em_tensor *c = em_to_dtype(t, d);
        if (!c) return emlua_fail(L);
        em_tensor *r = fn(c, dim);
        em_release(c);
        return emlua_push(L, r);
    }
    return emlua_push(L, fn(t, dim));
}

static int l_softmax(lua_State *L) { return along_dim(L, "softmax", em_softmax); }
static int l_log_softmax(lua_State *L) { return along_dim(L, "log_softmax", em_log_softmax); }
static int l_cumsum(lua_State *L) { return along_dim(L, "cumsum", em_cumsum); }
static int l_cumprod(lua_State *L) { return along_dim(L, "cumprod", em_cumprod); }

/* ember._cross_entropy(logits, target, weight|nil, ignore_index, smoothing,
 * "none"|"mean"|"sum"): the fused op behind nn.functional.cross_entropy for
 * class-index targets, positional (the Lua side checks and documents). */
static int l_cross_entropy(lua_State *L)
{
    const char *op = "cross_entropy";
    em_tensor *x = emlua_check(L, 1, op), *t = emlua_check(L, 2, op);
    em_tensor *w = lua_isnil(L, 3) ? NULL : emlua_check(L, 3, op);
    lua_Integer ignore = emlua_check_integer(L, 4, op);
    double eps = emlua_check_number(L, 5, op);
    static const char *const names[] = {"none", "mean", "sum", NULL};
    int red = luaL_checkoption(L, 6, NULL, names);
    return emlua_push(L, em_cross_entropy(x, t, w, (int64_t)ignore, eps, (em_reduction)red));
}

static const luaL_Reg reduce_private[] = {
    {"_cross_entropy", l_cross_entropy},
    {NULL, NULL}
};

static const luaL_Reg reduce_funcs[] = {
    {"sum", l_sum}, {"mean", l_mean}, {"prod", l_prod},
    {"amax", l_amax}, {"amin", l_amin}, {"all", l_all}, {"any", l_any},
    {"max", l_max}, {"min", l_min}, {"argmax", l_argmax}, {"argmin", l_argmin},
    {"var", l_var}, {"std", l_std}, {"norm", l_norm}, {"logsumexp", l_logsumexp},
    {"softmax", l_softmax}, {"log_softmax", l_log_softmax},
    {"cumsum", l_cumsum}, {"cumprod", l_cumprod},
    {NULL, NULL}
};

void emlua_open_reduce(lua_State *L)
{
    emlua_register(L, reduce_funcs, reduce_funcs);
    emlua_register(L, NULL, reduce_private);
}
