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
 * Reductions by order and counting (engine/reduce_order.c):
 *   t:median() -> 0-d; t:median(dim [, keepdim]) -> values, indices   also nanmedian
 *   t:mode([dim=-1 [, keepdim]]), t:kthvalue(k [, dim=-1 [, keepdim]]) -> values, indices
 *   t:quantile(q [, dim [, keepdim]] [, {interpolation=}])             also nanquantile
 *   t:nansum / nanmean([dims [, keepdim]]), t:count_nonzero([dims])
 *   t:aminmax([dim [, keepdim]]) -> min, max; ember.var_mean / std_mean as var -> 2 results
 *   t:cummax(dim), t:cummin(dim) -> values, indices; t:logcumsumexp(dim)
 *   t:unique([sorted [, return_inverse [, return_counts [, dim]]]]) -> values [, inverse] [, counts]
 *   t:unique_consecutive([return_inverse [, return_counts [, dim]]])
 *   t:bincount([weights [, minlength]]), t:histc([bins [, min [, max]]])
 *   ember.searchsorted(seq, values, {right=, side=, sorter=, out_int32=}) -> 1-based positions
 *   ember.bucketize(values, boundaries, {right=, out_int32=})
 * Every function is also ember.<name>(t, ...). An options table holds only
 * the names the op reads (an unknown key is an error, as is a positional
 * argument past its own). Those returning one tensor whose PyTorch function
 * takes out= take {out = t}: the result is written into t, which is returned
 * (emlua_push_out); out is a keyword only. max and min take it in their
 * elementwise form (max(a, b)) only; those returning several tensors (max
 * with a dim, median, aminmax, var_mean, ...) refuse it. */
#include "binding.h"

#include <math.h>
#include <string.h>

/* Brings the arguments after self to a fixed layout: positional parameters
 * in slots 2..n+1 and the options table (or nil) in slot n+2. An option
 * named like a positional parameter fills that slot when it was not given;
 * keys (NULL-terminated: the n names, then the op's keywords) are all the
 * options table may hold. Returns the options slot, or 0 when there is no
 * options table. */
static int canon_args(lua_State *L, const char *op, int n, const char *const *names, const char *const *keys)
{
    int opts = emlua_options_index(L, 2);
    emlua_check_option_names(L, opts, op, keys);
    int top = opts ? opts - 1 : lua_gettop(L);
    while (top > n + 1 && lua_isnil(L, top)) top--;   /* t:softmax(1, nil), as t:sum(1, nil) */
    if (top > n + 1)
        emlua_argerror(L, n + 2, op, "unexpected extra argument (%s)", luaL_typename(L, n + 2));
    int o = n + 2;
    /* an options table after nil positional slots (t:sum(nil, {}, nil, {})) lies above o:
     * move it down before settop drops it */
    if (opts > o) lua_copy(L, opts, o);
    lua_settop(L, o);
    if (opts && opts < o) {
        lua_copy(L, opts, o);
        lua_pushnil(L);
        lua_replace(L, opts);
    }
    if (!opts) return 0;
    for (int i = 0; i < n; i++) {
        if (!names[i]) continue;
        lua_getfield(L, o, names[i]);
        if (lua_isnil(L, 2 + i)) {
            lua_replace(L, 2 + i);
        } else if (!lua_isnil(L, -1)) {
            emlua_argerror(L, 2 + i, op, "got multiple values for argument '%s' (by position and in the options table)",
                           names[i]);
        } else {
            lua_pop(L, 1);
        }
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
/* the keys of an options table, op by op: the positional parameters' names,
 * then the keywords. dtype stays in the lists of the ops that refuse it
 * (reject_dtype), for that message; out is PyTorch's out= (emlua_push_out). */
static const char *const reduce_keys[] = {"dim", "keepdim", "dtype", "out", NULL};
static const char *const extreme_keys[] = {"dim", "keepdim", NULL};
static const char *const arg_keys[] = {"dim", "keepdim", "out", NULL};
static const char *const variance_keys[] = {"dim", "keepdim", "correction", "unbiased", "dtype", "out", NULL};
static const char *const moments_keys[] = {"dim", "keepdim", "correction", "unbiased", "dtype", NULL};
static const char *const along_keys[] = {"dim", "dtype", "out", NULL};

static int reduce_with(lua_State *L, const char *op, reduce_fn fn, bool takes_dtype)
{
    em_tensor *t = emlua_check(L, 1, op);
    int o = canon_args(L, op, 2, dim_keep, reduce_keys);
    int dims[EM_MAX_DIMS];
    int nd = emlua_opt_dims(L, 2, t->ndim, op, dims);
    bool keep = emlua_opt_boolean(L, 3, op, false);
    em_dtype d;
    if (!takes_dtype) {
        reject_dtype(L, o, op);
    } else if (opt_dtype(L, o, op, &d)) {
        if (fn == em_sum) return emlua_push_out(L, em_sum_dtype(t, dims, nd, keep, d), o, op);
        em_tensor *c = em_to_dtype(t, d);
        if (!c) return emlua_fail(L);
        em_autocast_suspend();  /* an explicit dtype is run as given (PyTorch's fp32_set_opt_dtype) */
        em_tensor *r = fn(c, dims, nd, keep);
        em_autocast_resume();
        em_release(c);
        return emlua_push_out(L, r, o, op);
    }
    return emlua_push_out(L, fn(t, dims, nd, keep), o, op);
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
    if (other) {   /* torch.max(input, other, *, out) */
        int o = emlua_keywords(L, 3, op, emlua_out_only);
        return emlua_push_out(L, em_binary(elementwise, t, other), o, op);
    }
    canon_args(L, op, 2, dim_keep, extreme_keys);
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
    int o = canon_args(L, op, 2, dim_keep, arg_keys);
    bool keep = emlua_opt_boolean(L, 3, op, false);
    if (lua_isnil(L, 2)) return emlua_push_out(L, fn(t, 0, keep, true), o, op);
    return emlua_push_out(L, fn(t, emlua_check_dim(L, 2, t->ndim, op), keep, false), o, op);
}

static int l_argmax(lua_State *L) { return arg_extreme(L, "argmax", em_argmax); }
static int l_argmin(lua_State *L) { return arg_extreme(L, "argmin", em_argmin); }

/* ---- var / std / norm ---------------------------------------------------- */

typedef em_tensor *(*var_fn)(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim);

/* The dims, keepdim and correction of var / std / var_mean / std_mean, the
 * options table's keys in keys; returns the correction, the options table's
 * slot in *opts (0: none). */
static double variance_args(lua_State *L, const char *op, const em_tensor *t, int *dims, int *nd, bool *keep,
                            const char *const *keys, int *opts)
{
    double correction = 1;
    *nd = 0;
    *keep = false;
    *opts = 0;
    if (lua_type(L, 2) == LUA_TBOOLEAN) {   /* torch.var(input, unbiased) */
        if (lua_gettop(L) > 2) emlua_argerror(L, 3, op, "unexpected argument after `unbiased`");
        return lua_toboolean(L, 2) ? 1 : 0;
    }
    int o = canon_args(L, op, 2, dim_keep, keys);
    *opts = o;
    *nd = emlua_opt_dims(L, 2, t->ndim, op, dims);
    *keep = emlua_opt_boolean(L, 3, op, false);
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
    return correction;
}

static int variance(lua_State *L, const char *op, var_fn fn)
{
    em_tensor *t = emlua_check(L, 1, op);
    int dims[EM_MAX_DIMS], nd, o;
    bool keep;
    double correction = variance_args(L, op, t, dims, &nd, &keep, variance_keys, &o);
    return emlua_push_out(L, fn(t, dims, nd, correction, keep), o, op);
}

static int l_var(lua_State *L) { return variance(L, "var", em_var); }
static int l_std(lua_State *L) { return variance(L, "std", em_std); }

static int l_norm(lua_State *L)
{
    static const char *const names[] = {"p", "dim", "keepdim"};
    static const char *const keys[] = {"p", "dim", "keepdim", "out", NULL};
    em_tensor *t = emlua_check(L, 1, "norm");
    int o = canon_args(L, "norm", 3, names, keys);
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
    return emlua_push_out(L, em_norm(t, p, dims, nd, keep), o, "norm");
}

/* ---- along one dim: softmax family and scans ----------------------------- */

typedef em_tensor *(*dim_fn)(const em_tensor *t, int dim);

static int along_dim(lua_State *L, const char *op, dim_fn fn)
{
    static const char *const names[] = {"dim"};
    em_tensor *t = emlua_check(L, 1, op);
    int o = canon_args(L, op, 1, names, along_keys);
    if (lua_isnil(L, 2))
        return emlua_argerror(L, 2, op, "missing dim (%s works along one dimension; give it, e.g. -1 for the last)", op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    em_dtype d;
    if (opt_dtype(L, o, op, &d)) {
        em_tensor *c = em_to_dtype(t, d);
        if (!c) return emlua_fail(L);
        em_autocast_suspend();  /* as reduce_with's dtype */
        em_tensor *r = fn(c, dim);
        em_autocast_resume();
        em_release(c);
        return emlua_push_out(L, r, o, op);
    }
    return emlua_push_out(L, fn(t, dim), o, op);
}

static int l_softmax(lua_State *L) { return along_dim(L, "softmax", em_softmax); }
static int l_log_softmax(lua_State *L) { return along_dim(L, "log_softmax", em_log_softmax); }
static int l_cumsum(lua_State *L) { return along_dim(L, "cumsum", em_cumsum); }
static int l_cumprod(lua_State *L) { return along_dim(L, "cumprod", em_cumprod); }

/* ---- reductions by order and counting ------------------------------------------- */

/* called as `int rc = f(..., &a, &b); return push2(L, rc, a, b);`, never
 * with f in the argument list: C evaluates arguments in no set order */
static int push2(lua_State *L, int rc, em_tensor *a, em_tensor *b)
{
    if (rc) return emlua_fail(L);
    emlua_push(L, a);
    emlua_push(L, b);
    return 2;
}

static int l_count_nonzero(lua_State *L)
{
    static const char *const names[] = {"dim", NULL};
    const char *op = "count_nonzero";
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int dims[EM_MAX_DIMS], nd = 0, at = emlua_arg_at(&a, 0);
    if (at) nd = emlua_opt_dims(L, at, t->ndim, op, dims);
    return emlua_push(L, em_count_nonzero(t, dims, nd));
}

typedef int (*pick_fn)(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);

/* median / nanmedian: no dim gives the 0-d median of all elements */
static int median_like(lua_State *L, const char *op, em_tensor *(*all)(const em_tensor *), pick_fn along)
{
    static const char *const names[] = {"dim", "keepdim", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int at = emlua_arg_at(&a, 0);
    bool keep = emlua_arg_bool(&a, 1, false);
    if (!at) {
        if (emlua_arg_at(&a, 1)) emlua_argerror(L, 3, op, "keepdim needs a dim");
        return emlua_push(L, all(t));
    }
    int dim = emlua_check_dim(L, at, t->ndim, op);
    em_tensor *v = NULL, *i = NULL;
    int rc = along(t, dim, keep, &v, &i);
    return push2(L, rc, v, i);
}

static int l_median(lua_State *L) { return median_like(L, "median", em_median, em_median_dim); }
static int l_nanmedian(lua_State *L) { return median_like(L, "nanmedian", em_nanmedian, em_nanmedian_dim); }

static int l_mode(lua_State *L)
{
    static const char *const names[] = {"dim", "keepdim", NULL};
    em_tensor *t = emlua_check(L, 1, "mode");
    emlua_args a;
    emlua_args_start(&a, L, "mode", 2, names);
    int at = emlua_arg_at(&a, 0);
    int dim = at ? emlua_check_dim(L, at, t->ndim, "mode") : -1;
    em_tensor *v = NULL, *i = NULL;
    int rc = em_mode(t, dim, emlua_arg_bool(&a, 1, false), &v, &i);
    return push2(L, rc, v, i);
}

static int l_kthvalue(lua_State *L)
{
    static const char *const names[] = {"dim", "keepdim", NULL};
    em_tensor *t = emlua_check(L, 1, "kthvalue");
    lua_Integer k = emlua_check_integer(L, 2, "kthvalue");
    emlua_args a;
    emlua_args_start(&a, L, "kthvalue", 3, names);
    int at = emlua_arg_at(&a, 0);
    int dim = at ? emlua_check_dim(L, at, t->ndim, "kthvalue") : -1;
    em_tensor *v = NULL, *i = NULL;
    int rc = em_kthvalue(t, (int64_t)k, dim, emlua_arg_bool(&a, 1, false), &v, &i);
    return push2(L, rc, v, i);
}

static int quantile_like(lua_State *L, const char *op, bool ignore_nan)
{
    static const char *const names[] = {"dim", "keepdim", "interpolation", "out", NULL};
    static const char *const interps[] = {"linear", "lower", "higher", "midpoint", "nearest", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    em_tensor *q = emlua_test(L, 2);
    double qs = q ? 0 : emlua_check_number(L, 2, op);
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 3, names, emlua_count_names(names) - 1);
    int at = emlua_arg_at(&a, 0);
    int dim = at ? emlua_check_dim(L, at, t->ndim, op) : 0;
    bool keep = emlua_arg_bool(&a, 1, false);
    int ip = emlua_arg_at(&a, 2);
    int interp = 0;
    if (ip) {
        const char *s = lua_type(L, ip) == LUA_TSTRING ? lua_tostring(L, ip) : NULL;
        while (s && interps[interp] && strcmp(interps[interp], s) != 0) interp++;
        if (!s || !interps[interp])
            emlua_argerror(L, ip, op, "interpolation must be \"linear\", \"lower\", \"higher\", \"midpoint\" or "
                                      "\"nearest\", got %s", s ? s : luaL_typename(L, ip));
    }
    return emlua_push_out(L, em_quantile(t, q, qs, !at, dim, keep, (em_quantile_interp)interp, ignore_nan), a.opts, op);
}

static int l_quantile(lua_State *L) { return quantile_like(L, "quantile", false); }
static int l_nanquantile(lua_State *L) { return quantile_like(L, "nanquantile", true); }
static int l_nansum(lua_State *L) { return reduce_with(L, "nansum", em_nansum, true); }
static int l_nanmean(lua_State *L) { return reduce_with(L, "nanmean", em_nanmean, true); }

static int l_aminmax(lua_State *L)
{
    static const char *const names[] = {"dim", "keepdim", NULL};
    em_tensor *t = emlua_check(L, 1, "aminmax");
    emlua_args a;
    emlua_args_start(&a, L, "aminmax", 2, names);
    int dims[EM_MAX_DIMS], nd = 0, at = emlua_arg_at(&a, 0);
    if (at) dims[nd++] = emlua_check_dim(L, at, t->ndim, "aminmax");
    em_tensor *mn = NULL, *mx = NULL;
    int rc = em_aminmax(t, dims, nd, emlua_arg_bool(&a, 1, false), &mn, &mx);
    return push2(L, rc, mn, mx);
}

typedef int (*moments_fn)(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim,
                          em_tensor **spread, em_tensor **mean);

static int moments(lua_State *L, const char *op, moments_fn fn)
{
    em_tensor *t = emlua_check(L, 1, op);
    int dims[EM_MAX_DIMS], nd, o;
    bool keep;
    double correction = variance_args(L, op, t, dims, &nd, &keep, moments_keys, &o);
    em_tensor *s = NULL, *m = NULL;
    int rc = fn(t, dims, nd, correction, keep, &s, &m);
    return push2(L, rc, s, m);
}

static int l_var_mean(lua_State *L) { return moments(L, "var_mean", em_var_mean); }
static int l_std_mean(lua_State *L) { return moments(L, "std_mean", em_std_mean); }

static int cum_extreme(lua_State *L, const char *op, int (*fn)(const em_tensor *, int, em_tensor **, em_tensor **))
{
    static const char *const names[] = {"dim", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int at = emlua_arg_at(&a, 0);
    if (!at) return emlua_argerror(L, 2, op, "missing dim (%s works along one dimension)", op);
    int dim = emlua_check_dim(L, at, t->ndim, op);
    em_tensor *v = NULL, *i = NULL;
    int rc = fn(t, dim, &v, &i);
    return push2(L, rc, v, i);
}

static int l_cummax(lua_State *L) { return cum_extreme(L, "cummax", em_cummax); }
static int l_cummin(lua_State *L) { return cum_extreme(L, "cummin", em_cummin); }
static int l_logcumsumexp(lua_State *L) { return along_dim(L, "logcumsumexp", em_logcumsumexp); }

/* values, then inverse and counts when asked for (PyTorch's tuple order) */
static int unique_like(lua_State *L, const char *op, bool consecutive)
{
    static const char *const unames[] = {"sorted", "return_inverse", "return_counts", "dim", NULL};
    static const char *const cnames[] = {"return_inverse", "return_counts", "dim", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, consecutive ? cnames : unames);
    int k = consecutive ? 0 : 1;
    if (!consecutive) emlua_arg_bool(&a, 0, true);   /* always sorted; checked for its type */
    bool inv = emlua_arg_bool(&a, k, false), cnt = emlua_arg_bool(&a, k + 1, false);
    int at = emlua_arg_at(&a, k + 2);
    int dim = at ? emlua_check_dim(L, at, t->ndim, op) : 0;
    em_tensor *v = NULL, *i = NULL, *c = NULL;
    if (em_unique(t, consecutive, at != 0, dim, &v, &i, &c)) return emlua_fail(L);
    emlua_push(L, v);
    if (inv) emlua_push(L, i); else em_release(i);
    if (cnt) emlua_push(L, c); else em_release(c);
    return 1 + inv + cnt;
}

static int l_unique(lua_State *L) { return unique_like(L, "unique", false); }
static int l_unique_consecutive(lua_State *L) { return unique_like(L, "unique_consecutive", true); }

static int l_bincount(lua_State *L)
{
    static const char *const names[] = {"weights", "minlength", NULL};
    em_tensor *t = emlua_check(L, 1, "bincount");
    emlua_args a;
    emlua_args_start(&a, L, "bincount", 2, names);
    em_tensor *w = emlua_arg_tensor(&a, 0);
    int64_t minlength = emlua_arg_integer(&a, 1, 0);
    return emlua_push(L, em_bincount(t, w, minlength));
}

static int l_histc(lua_State *L)
{
    static const char *const names[] = {"bins", "min", "max", "out", NULL};
    em_tensor *t = emlua_check(L, 1, "histc");
    emlua_args a;
    emlua_args_start_kw(&a, L, "histc", 2, names, emlua_count_names(names) - 1);
    int64_t bins = emlua_arg_integer(&a, 0, 100);
    double lo = emlua_arg_number(&a, 1, 0), hi = emlua_arg_number(&a, 2, 0);
    return emlua_push_out(L, em_histc(t, bins, lo, hi), a.opts, "histc");
}

/* values given as a number become a 0-d tensor of like's dtype */
static em_tensor *tensor_or_number(lua_State *L, int idx, const char *op, const em_tensor *like, bool *owned)
{
    em_tensor *v = emlua_test(L, idx);
    *owned = false;
    if (v) return v;
    double x = emlua_check_number(L, idx, op);
    *owned = true;
    v = em_scalar(x, like->dtype, like->storage->device);
    if (!v) emlua_fail(L);
    return v;
}

static int l_searchsorted(lua_State *L)
{
    static const char *const names[] = {"out_int32", "right", "side", "sorter", "out", NULL};
    const char *op = "searchsorted";
    em_tensor *seq = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 3, names, emlua_count_names(names) - 1);
    bool out_int32 = emlua_arg_bool(&a, 0, false), right = emlua_arg_bool(&a, 1, false);
    int side = emlua_arg_at(&a, 2);
    if (side) {
        const char *s = lua_type(L, side) == LUA_TSTRING ? lua_tostring(L, side) : NULL;
        if (!s || (strcmp(s, "left") != 0 && strcmp(s, "right") != 0))
            emlua_argerror(L, side, op, "side must be \"left\" or \"right\", got %s", s ? s : luaL_typename(L, side));
        if (strcmp(s, "left") == 0 && right)
            emlua_argerror(L, side, op, "side \"left\" contradicts right = true");
        right = strcmp(s, "right") == 0;
    }
    em_tensor *sorter = emlua_arg_tensor(&a, 3);
    bool owned;
    em_tensor *v = tensor_or_number(L, 2, op, seq, &owned);
    em_tensor *r = em_searchsorted(seq, v, right, sorter, out_int32);
    if (owned) em_release(v);
    return emlua_push_out(L, r, a.opts, op);
}

static int l_bucketize(lua_State *L)
{
    static const char *const names[] = {"out_int32", "right", "out", NULL};
    const char *op = "bucketize";
    em_tensor *b = emlua_check(L, 2, op);
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 3, names, emlua_count_names(names) - 1);
    bool out_int32 = emlua_arg_bool(&a, 0, false), right = emlua_arg_bool(&a, 1, false);
    bool owned;
    em_tensor *v = tensor_or_number(L, 1, op, b, &owned);
    em_tensor *r = em_bucketize(v, b, right, out_int32);
    if (owned) em_release(v);
    return emlua_push_out(L, r, a.opts, op);
}

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

static const luaL_Reg order_methods[] = {
    {"count_nonzero", l_count_nonzero}, {"median", l_median}, {"nanmedian", l_nanmedian},
    {"mode", l_mode}, {"kthvalue", l_kthvalue}, {"quantile", l_quantile}, {"nanquantile", l_nanquantile},
    {"nansum", l_nansum}, {"nanmean", l_nanmean}, {"aminmax", l_aminmax},
    {"cummax", l_cummax}, {"cummin", l_cummin}, {"logcumsumexp", l_logcumsumexp},
    {"unique", l_unique}, {"unique_consecutive", l_unique_consecutive},
    {"bincount", l_bincount}, {"histc", l_histc},
    {NULL, NULL}
};

/* PyTorch has these as torch.* only */
static const luaL_Reg order_funcs[] = {
    {"var_mean", l_var_mean}, {"std_mean", l_std_mean},
    {"searchsorted", l_searchsorted}, {"bucketize", l_bucketize},
    {NULL, NULL}
};

void emlua_open_reduce(lua_State *L)
{
    emlua_register(L, reduce_funcs, reduce_funcs);
    emlua_register(L, order_methods, order_methods);
    emlua_register(L, NULL, order_funcs);
    emlua_register(L, NULL, reduce_private);
}
