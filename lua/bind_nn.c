/* bind_nn.c — convolutions, pooling and normalisation for Lua (ember.*, and
 * the same functions as ember.nn.functional.*).
 *
 * Arguments follow PyTorch's order; those after the required ones may also
 * come as one trailing options table with PyTorch's keyword names:
 *   ember.conv2d(x, w, b, 1, 1)  ==  ember.conv2d(x, w, b, {padding = 1})
 * A size is a number (every spatial dim) or a table with one entry per dim.
 *   ember.conv{1,2,3}d(input, weight [, bias, stride, padding, dilation, groups])
 *       padding may also be "same" or "valid"
 *   ember.conv_transpose{1,2,3}d(input, weight [, bias, stride, padding, output_padding, groups, dilation])
 *   ember.max_pool{1,2,3}d(input, kernel_size [, stride, padding, dilation, ceil_mode, return_indices])
 *   ember.avg_pool{1,2,3}d(input, kernel_size [, stride, padding, ceil_mode, count_include_pad, divisor_override])
 *   ember.adaptive_avg_pool{1,2,3}d(input, output_size)
 *   ember.adaptive_max_pool{1,2,3}d(input, output_size [, return_indices])
 *   ember.batch_norm(input, running_mean, running_var [, weight, bias, training, momentum, eps])
 *   ember.group_norm(input, num_groups [, weight, bias, eps])
 *   ember.layer_norm(input, normalized_shape [, weight, bias, eps])
 */
#include "binding.h"

#include <string.h>

static int user_argno(emlua_args *a, int k) { return a->first + k; }

/* a spatial size: number or table of ns integers; nil gives def */
static void sizes_arg(emlua_args *a, int k, int ns, int64_t def, int64_t *out)
{
    lua_State *L = a->L;
    int i = emlua_arg_at(a, k);
    for (int d = 0; d < ns; d++) out[d] = def;
    if (!i) return;
    if (lua_type(L, i) == LUA_TNUMBER) {
        int64_t v = emlua_check_integer(L, i, a->op);
        for (int d = 0; d < ns; d++) out[d] = v;
        return;
    }
    if (lua_type(L, i) != LUA_TTABLE || emlua_test(L, i))
        emlua_argerror(L, user_argno(a, k), a->op, "%s must be a number or a table of %d numbers, got %s",
                       a->names[k], ns, luaL_typename(L, i));
    int n = (int)lua_rawlen(L, i);
    if (n != ns && n != 1)
        emlua_argerror(L, user_argno(a, k), a->op, "%s must have %d entries (one per spatial dim), got %d",
                       a->names[k], ns, n);
    for (int d = 0; d < ns; d++) {
        lua_rawgeti(L, i, n == 1 ? 1 : d + 1);
        int ok;
        lua_Integer v = lua_tointegerx(L, -1, &ok);
        if (!ok)
            emlua_argerror(L, user_argno(a, k), a->op, "%s entry %d must be an integer, got %s", a->names[k], d + 1,
                           luaL_typename(L, -1));
        out[d] = v;
        lua_pop(L, 1);
    }
}

/* ---- convolutions ---------------------------------------------------------------- */

static const char *const conv_names[] = {"bias", "stride", "padding", "dilation", "groups", NULL};
static const char *const convt_names[] = {"bias", "stride", "padding", "output_padding", "groups", "dilation", NULL};

static int conv(lua_State *L, int ns, bool transposed)
{
    char op[32];
    snprintf(op, sizeof op, "%s%dd", transposed ? "conv_transpose" : "conv", ns);
    em_tensor *x = emlua_check(L, 1, op), *w = emlua_check(L, 2, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 3, transposed ? convt_names : conv_names);
    em_conv_args c;
    memset(&c, 0, sizeof c);
    c.nspatial = ns;
    c.transposed = transposed;
    em_tensor *bias = emlua_arg_tensor(&a, 0);
    sizes_arg(&a, 1, ns, 1, c.stride);
    int pi = emlua_arg_at(&a, 2);
    if (pi && lua_type(L, pi) == LUA_TSTRING) {
        const char *mode = lua_tostring(L, pi);
        if (strcmp(mode, "same") == 0) c.padding_mode = EM_PADDING_SAME;
        else if (strcmp(mode, "valid") == 0) c.padding_mode = EM_PADDING_VALID;
        else emlua_argerror(L, user_argno(&a, 2), op, "padding must be a size, \"same\" or \"valid\", got \"%s\"", mode);
    } else {
        sizes_arg(&a, 2, ns, 0, c.padding);
    }
    if (transposed) {
        sizes_arg(&a, 3, ns, 0, c.output_padding);
        c.groups = emlua_arg_integer(&a, 4, 1);
        sizes_arg(&a, 5, ns, 1, c.dilation);
    } else {
        sizes_arg(&a, 3, ns, 1, c.dilation);
        c.groups = emlua_arg_integer(&a, 4, 1);
    }
    return emlua_push(L, em_conv(x, w, bias, &c));
}

static int l_conv1d(lua_State *L) { return conv(L, 1, false); }
static int l_conv2d(lua_State *L) { return conv(L, 2, false); }
static int l_conv3d(lua_State *L) { return conv(L, 3, false); }
static int l_conv_transpose1d(lua_State *L) { return conv(L, 1, true); }
static int l_conv_transpose2d(lua_State *L) { return conv(L, 2, true); }
static int l_conv_transpose3d(lua_State *L) { return conv(L, 3, true); }

/* ---- pooling ----------------------------------------------------------------------- */

static const char *const maxpool_names[] = {"stride", "padding", "dilation", "ceil_mode", "return_indices", NULL};
static const char *const avgpool_names[] = {"stride", "padding", "ceil_mode", "count_include_pad",
                                            "divisor_override", NULL};
static const char *const adaptive_names[] = {"return_indices", NULL};

static void kernel_sizes(lua_State *L, const char *op, int ns, int64_t *k)
{
    static const char *const names[] = {"kernel_size", NULL};
    emlua_args a;
    a.L = L; a.op = op; a.first = 2; a.opts = 0; a.names = names;
    if (lua_isnoneornil(L, 2)) emlua_argerror(L, 2, op, "kernel_size is required");
    sizes_arg(&a, 0, ns, 1, k);
}

static int push_with_indices(lua_State *L, em_tensor *y, em_tensor *idx, bool want)
{
    if (!y) return emlua_fail(L);
    emlua_push(L, y);
    if (!want) { em_release(idx); return 1; }
    emlua_push(L, idx);
    return 2;
}

/* what max_pool and avg_pool read alike: input, kernel_size, then stride
 * (default: the kernel) and padding as their first two optional arguments */
static em_tensor *pool_start(lua_State *L, const char *op, int ns, const char *const *names, em_pool_args *p,
                             emlua_args *a)
{
    em_tensor *x = emlua_check(L, 1, op);
    memset(p, 0, sizeof *p);
    p->nspatial = ns;
    kernel_sizes(L, op, ns, p->kernel);
    emlua_args_start(a, L, op, 3, names);
    if (emlua_arg_at(a, 0)) sizes_arg(a, 0, ns, 1, p->stride);
    else memcpy(p->stride, p->kernel, sizeof p->stride);
    sizes_arg(a, 1, ns, 0, p->padding);
    for (int i = 0; i < ns; i++) p->dilation[i] = 1;
    return x;
}

static int max_pool(lua_State *L, int ns)
{
    char op[32];
    snprintf(op, sizeof op, "max_pool%dd", ns);
    em_pool_args p;
    emlua_args a;
    em_tensor *x = pool_start(L, op, ns, maxpool_names, &p, &a);
    sizes_arg(&a, 2, ns, 1, p.dilation);
    p.ceil_mode = emlua_arg_bool(&a, 3, false);
    bool want = emlua_arg_bool(&a, 4, false);
    em_tensor *idx = NULL;
    em_tensor *y = em_max_pool(x, &p, &idx);
    return push_with_indices(L, y, idx, want);
}

static int avg_pool(lua_State *L, int ns)
{
    char op[32];
    snprintf(op, sizeof op, "avg_pool%dd", ns);
    em_pool_args p;
    emlua_args a;
    em_tensor *x = pool_start(L, op, ns, avgpool_names, &p, &a);
    p.ceil_mode = emlua_arg_bool(&a, 2, false);
    p.count_include_pad = emlua_arg_bool(&a, 3, true);
    int di = emlua_arg_at(&a, 4);
    if (di) {
        p.divisor_override = emlua_check_integer(L, di, op);
        if (p.divisor_override <= 0)
            emlua_argerror(L, user_argno(&a, 4), op, "divisor_override must be positive, got %lld",
                           (long long)p.divisor_override);
    }
    return emlua_push(L, em_avg_pool(x, &p));
}

/* output_size: a number, or a table whose entries may be nil (keep that
 * input size, as PyTorch's None) — so read by position up to ns */
static void output_sizes(lua_State *L, const char *op, const em_tensor *x, int ns, int64_t *o)
{
    int spatial0 = x->ndim - ns;
    if (lua_type(L, 2) == LUA_TNUMBER) {
        int64_t v = emlua_check_integer(L, 2, op);
        for (int d = 0; d < ns; d++) o[d] = v;
        return;
    }
    if (lua_type(L, 2) != LUA_TTABLE || emlua_test(L, 2))
        emlua_argerror(L, 2, op, "output_size must be a number or a table of %d entries, got %s", ns,
                       luaL_typename(L, 2));
    for (int d = 0; d < ns; d++) {
        lua_rawgeti(L, 2, d + 1);
        if (lua_isnil(L, -1)) {
            o[d] = spatial0 >= 0 && spatial0 + d < x->ndim ? x->sizes[spatial0 + d] : 1;
        } else {
            int ok;
            o[d] = lua_tointegerx(L, -1, &ok);
            if (!ok) emlua_argerror(L, 2, op, "output_size entry %d must be an integer or nil", d + 1);
        }
        lua_pop(L, 1);
    }
}

static int adaptive_pool(lua_State *L, int ns, bool max)
{
    char op[40];
    snprintf(op, sizeof op, "adaptive_%s_pool%dd", max ? "max" : "avg", ns);
    em_tensor *x = emlua_check(L, 1, op);
    em_pool_args p;
    memset(&p, 0, sizeof p);
    p.nspatial = ns;
    p.adaptive = true;
    if (lua_isnoneornil(L, 2)) emlua_argerror(L, 2, op, "output_size is required");
    output_sizes(L, op, x, ns, p.output_size);
    if (!max) {
        emlua_keywords(L, 3, op, NULL);   /* takes input and output_size only */
        return emlua_push(L, em_avg_pool(x, &p));
    }
    emlua_args a;
    emlua_args_start(&a, L, op, 3, adaptive_names);
    bool want = emlua_arg_bool(&a, 0, false);
    em_tensor *idx = NULL;
    em_tensor *y = em_max_pool(x, &p, &idx);
    return push_with_indices(L, y, idx, want);
}

static int l_max_pool1d(lua_State *L) { return max_pool(L, 1); }
static int l_max_pool2d(lua_State *L) { return max_pool(L, 2); }
static int l_max_pool3d(lua_State *L) { return max_pool(L, 3); }
static int l_avg_pool1d(lua_State *L) { return avg_pool(L, 1); }
static int l_avg_pool2d(lua_State *L) { return avg_pool(L, 2); }
static int l_avg_pool3d(lua_State *L) { return avg_pool(L, 3); }
static int l_adaptive_avg_pool1d(lua_State *L) { return adaptive_pool(L, 1, false); }
static int l_adaptive_avg_pool2d(lua_State *L) { return adaptive_pool(L, 2, false); }
static int l_adaptive_avg_pool3d(lua_State *L) { return adaptive_pool(L, 3, false); }
static int l_adaptive_max_pool1d(lua_State *L) { return adaptive_pool(L, 1, true); }
static int l_adaptive_max_pool2d(lua_State *L) { return adaptive_pool(L, 2, true); }
static int l_adaptive_max_pool3d(lua_State *L) { return adaptive_pool(L, 3, true); }

/* ---- normalisation ---------------------------------------------------------------- */

static const char *const bn_names[] = {"weight", "bias", "training", "momentum", "eps", NULL};
static const char *const gn_names[] = {"weight", "bias", "eps", NULL};

static em_tensor *opt_tensor_at(lua_State *L, int i, const char *op, const char *what)
{
    if (lua_isnoneornil(L, i)) return NULL;
    em_tensor *t = emlua_test(L, i);
    if (!t) emlua_argerror(L, i, op, "%s must be a tensor or nil, got %s", what, luaL_typename(L, i));
    return t;
}

static int l_batch_norm(lua_State *L)
{
    /* no autocast policy (PyTorch's lists leave batch_norm out on both
     * device types): a bfloat16 input from a convolution stays bfloat16, and
     * the float32 parameters take the engine's mixed-dtype path */
    const char *op = "batch_norm";
    em_tensor *x = emlua_check(L, 1, op);
    em_tensor *rm = opt_tensor_at(L, 2, op, "running_mean"), *rv = opt_tensor_at(L, 3, op, "running_var");
    emlua_args a;
    emlua_args_start(&a, L, op, 4, bn_names);
    em_tensor *w = emlua_arg_tensor(&a, 0), *b = emlua_arg_tensor(&a, 1);
    bool training = emlua_arg_bool(&a, 2, false);
    double momentum = emlua_arg_number(&a, 3, 0.1), eps = emlua_arg_number(&a, 4, 1e-5);
    return emlua_push(L, em_batch_norm(x, rm, rv, w, b, training, momentum, eps));
}

static int l_group_norm(lua_State *L)
{
    const char *op = "group_norm";
    em_tensor *x = emlua_check(L, 1, op);
    int64_t groups = emlua_check_integer(L, 2, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 3, gn_names);
    em_tensor *w = emlua_arg_tensor(&a, 0), *b = emlua_arg_tensor(&a, 1);
    double eps = emlua_arg_number(&a, 2, 1e-5);
    return emlua_push(L, em_group_norm(x, groups, w, b, eps));
}

static int l_layer_norm(lua_State *L)
{
    const char *op = "layer_norm";
    em_tensor *x = emlua_check(L, 1, op);
    int64_t shape[EM_MAX_DIMS];
    int n;
    if (lua_type(L, 2) == LUA_TNUMBER) {
        shape[0] = emlua_check_integer(L, 2, op);
        n = 1;
    } else if (lua_type(L, 2) == LUA_TTABLE && !emlua_test(L, 2)) {
        n = (int)lua_rawlen(L, 2);
        if (n < 1 || n > EM_MAX_DIMS) emlua_argerror(L, 2, op, "normalized_shape must have 1 to %d entries", EM_MAX_DIMS);
        lua_Integer bad = emlua_table_integers(L, 2, n, shape);
        if (bad) emlua_argerror(L, 2, op, "normalized_shape entry %d must be an integer", (int)bad);
    } else {
        return emlua_argerror(L, 2, op, "normalized_shape must be a number or a table of sizes, got %s",
                              luaL_typename(L, 2));
    }
    emlua_args a;
    emlua_args_start(&a, L, op, 3, gn_names);
    em_tensor *w = emlua_arg_tensor(&a, 0), *b = emlua_arg_tensor(&a, 1);
    double eps = emlua_arg_number(&a, 2, 1e-5);
    return emlua_push(L, em_layer_norm(x, shape, n, w, b, eps));
}

/* ---- the fused linear layer ------------------------------------------------------- */

/* ember._linear(x, weight, bias|nil, activation|nil): F.linear's C half (the
 * options are parsed in lua/ember/nn/functional.lua) */
static int l_linear(lua_State *L)
{
    const char *op = "linear";
    em_tensor *x = emlua_check(L, 1, op), *w = emlua_check(L, 2, op);
    emlua_keywords(L, 5, op, NULL);
    em_tensor *b = lua_isnoneornil(L, 3) ? NULL : emlua_check(L, 3, op);
    if (!lua_isnoneornil(L, 4) && lua_type(L, 4) != LUA_TSTRING) return emlua_typeerror(L, 4, op, "an activation name");
    const char *act = lua_isnoneornil(L, 4) ? "none" : lua_tostring(L, 4);
    em_linear_act a;
    if (strcmp(act, "none") == 0) a = EM_LINEAR_ACT_NONE;
    else if (strcmp(act, "gelu_tanh") == 0) a = EM_LINEAR_ACT_GELU_TANH;
    else return emlua_argerror(L, 4, op, "activation must be \"none\" or \"gelu_tanh\", got \"%s\"", act);
    return emlua_push(L, em_linear(x, w, b, a));
}

static const luaL_Reg nn_funcs[] = {
    {"conv1d", l_conv1d}, {"conv2d", l_conv2d}, {"conv3d", l_conv3d},
    {"conv_transpose1d", l_conv_transpose1d}, {"conv_transpose2d", l_conv_transpose2d},
    {"conv_transpose3d", l_conv_transpose3d},
    {"max_pool1d", l_max_pool1d}, {"max_pool2d", l_max_pool2d}, {"max_pool3d", l_max_pool3d},
    {"avg_pool1d", l_avg_pool1d}, {"avg_pool2d", l_avg_pool2d}, {"avg_pool3d", l_avg_pool3d},
    {"adaptive_avg_pool1d", l_adaptive_avg_pool1d}, {"adaptive_avg_pool2d", l_adaptive_avg_pool2d},
    {"adaptive_avg_pool3d", l_adaptive_avg_pool3d},
    {"adaptive_max_pool1d", l_adaptive_max_pool1d}, {"adaptive_max_pool2d", l_adaptive_max_pool2d},
    {"adaptive_max_pool3d", l_adaptive_max_pool3d},
    {"batch_norm", l_batch_norm}, {"group_norm", l_group_norm}, {"layer_norm", l_layer_norm},
    {"_linear", l_linear},
    {NULL, NULL}
};

void emlua_open_nn(lua_State *L)
{
    emlua_register(L, NULL, nn_funcs);
}
