/* bind_optim.c — the fused optimizer steps for lua/ember/optim.lua:
 *   ember._sgd_step_(p, g, buf|nil, lr, momentum, dampening, weight_decay,
 *                    nesterov, first_step, maximize)
 *   ember._adam_step_(p, g, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
 *                     weight_decay, decoupled, step, maximize)
 *   ember._amp_unscale_(grad, found_inf, inv_scale)   (ember.amp.GradScaler)
 * and their multi-tensor forms (engine/optim.h), over Lua lists of tensors:
 *   ember._sgd_multi_step_(params, grads, bufs|nil, first_steps|nil, lr, momentum,
 *                          dampening, weight_decay, nesterov, maximize)
 *   ember._adam_multi_step_(params, grads, exp_avgs, exp_avg_sqs, steps, lr, beta1,
 *                           beta2, eps, weight_decay, decoupled, maximize)
 *   ember._amp_unscale_multi_(grads, found_inf, inv_scale)   (inv_scale a tensor)
 *   ember._multi_norm(tensors, norm_type) -> 0-d total norm    (clip_grad_norm_)
 *   ember._multi_scale_(tensors, total_norm, max_norm)
 * Positional and unforgiving: they are the optimizers' building blocks, not
 * user API (the update rules are in engine/optim.h). Both update p and the
 * state tensors in place and return nothing. */
#include "binding.h"
#include "../engine/optim.h"

static bool check_bool(lua_State *L, int idx, const char *op)
{
    if (lua_type(L, idx) != LUA_TBOOLEAN) return emlua_typeerror(L, idx, op, "a boolean");
    return lua_toboolean(L, idx);
}

static int f_sgd_step(lua_State *L)
{
    const char *op = "_sgd_step_";
    em_tensor *p = emlua_check(L, 1, op), *g = emlua_check(L, 2, op);
    em_tensor *buf = lua_isnil(L, 3) ? NULL : emlua_check(L, 3, op);
    double lr = emlua_check_number(L, 4, op), momentum = emlua_check_number(L, 5, op);
    double dampening = emlua_check_number(L, 6, op), wd = emlua_check_number(L, 7, op);
    bool nesterov = check_bool(L, 8, op), first = check_bool(L, 9, op);
    bool maximize = check_bool(L, 10, op);
    if (em_sgd_step_(p, g, buf, lr, momentum, dampening, wd, nesterov, first, maximize))
        return emlua_fail(L);
    return 0;
}

static int f_adam_step(lua_State *L)
{
    const char *op = "_adam_step_";
    em_tensor *p = emlua_check(L, 1, op), *g = emlua_check(L, 2, op);
    em_tensor *m = emlua_check(L, 3, op), *v = emlua_check(L, 4, op);
    double lr = emlua_check_number(L, 5, op), b1 = emlua_check_number(L, 6, op);
    double b2 = emlua_check_number(L, 7, op), eps = emlua_check_number(L, 8, op);
    double wd = emlua_check_number(L, 9, op);
    bool decoupled = check_bool(L, 10, op);
    lua_Integer step = emlua_check_integer(L, 11, op);
    bool maximize = check_bool(L, 12, op);
    if (em_adam_step_(p, g, m, v, lr, b1, b2, eps, wd, decoupled, (int64_t)step, maximize))
        return emlua_fail(L);
    return 0;
}

static int f_amp_unscale(lua_State *L)
{
    const char *op = "_amp_unscale_";
    em_tensor *g = emlua_check(L, 1, op), *found = emlua_check(L, 2, op);
    if (em_amp_unscale_(g, found, emlua_check_number(L, 3, op))) return emlua_fail(L);
    return 0;
}

/* A Lua list of tensors (of length `want` unless want < 0) as a C array kept
 * alive on the stack until the call returns. */
static em_tensor **check_list(lua_State *L, int idx, const char *op, const char *what, int64_t want, int64_t *n)
{
    if (lua_type(L, idx) != LUA_TTABLE) {
        emlua_typeerror(L, idx, op, "a list of tensors");
        return NULL;
    }
    int64_t k = (int64_t)lua_rawlen(L, idx);
    if (want >= 0 && k != want)
        emlua_argerror(L, idx, op, "the %s list has %lld entries, the parameter list %lld", what, (long long)k,
                       (long long)want);
    em_tensor **a = lua_newuserdatauv(L, sizeof *a * (size_t)(k ? k : 1), 0);
    for (int64_t i = 0; i < k; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        a[i] = emlua_test(L, -1);
        if (!a[i]) emlua_argerror(L, idx, op, "%s %lld is not a tensor", what, (long long)i + 1);
        lua_pop(L, 1);
    }
    *n = k;
    return a;
}

/* a list of n booleans (first_step flags) or n integers (step counts) */
static void check_flags(lua_State *L, int idx, const char *op, int64_t n, bool *flags, int64_t *ints)
{
    if (lua_type(L, idx) != LUA_TTABLE || (int64_t)lua_rawlen(L, idx) != n) {
        emlua_argerror(L, idx, op, "expected a list of %lld %s", (long long)n, flags ? "booleans" : "integers");
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        if (flags) {
            if (lua_type(L, -1) != LUA_TBOOLEAN) emlua_argerror(L, idx, op, "entry %lld is not a boolean", (long long)i + 1);
            flags[i] = lua_toboolean(L, -1);
        } else {
            int ok = 0;
            ints[i] = (int64_t)lua_tointegerx(L, -1, &ok);
            if (!ok) emlua_argerror(L, idx, op, "entry %lld is not an integer", (long long)i + 1);
        }
        lua_pop(L, 1);
    }
}

static int f_sgd_multi_step(lua_State *L)
{
    const char *op = "_sgd_multi_step_";
    int64_t n, ng, nb;
    em_tensor **p = check_list(L, 1, op, "parameter", -1, &n);
    em_tensor **g = check_list(L, 2, op, "gradient", n, &ng);
    em_tensor **bufs = lua_isnil(L, 3) ? NULL : check_list(L, 3, op, "momentum_buffer", n, &nb);
    bool *first = NULL;
    if (!lua_isnil(L, 4)) {
        first = lua_newuserdatauv(L, sizeof *first * (size_t)(n ? n : 1), 0);
        check_flags(L, 4, op, n, first, NULL);
    }
    double lr = emlua_check_number(L, 5, op), momentum = emlua_check_number(L, 6, op);
    double dampening = emlua_check_number(L, 7, op), wd = emlua_check_number(L, 8, op);
    bool nesterov = check_bool(L, 9, op), maximize = check_bool(L, 10, op);
    if (em_sgd_multi_step_(n, p, g, bufs, first, lr, momentum, dampening, wd, nesterov, maximize))
        return emlua_fail(L);
    return 0;
}

static int f_adam_multi_step(lua_State *L)
{
    const char *op = "_adam_multi_step_";
    int64_t n, k;
    em_tensor **p = check_list(L, 1, op, "parameter", -1, &n);
    em_tensor **g = check_list(L, 2, op, "gradient", n, &k);
    em_tensor **m = check_list(L, 3, op, "exp_avg", n, &k);
    em_tensor **v = check_list(L, 4, op, "exp_avg_sq", n, &k);
    int64_t *steps = lua_newuserdatauv(L, sizeof *steps * (size_t)(n ? n : 1), 0);
    check_flags(L, 5, op, n, NULL, steps);
    double lr = emlua_check_number(L, 6, op), b1 = emlua_check_number(L, 7, op);
    double b2 = emlua_check_number(L, 8, op), eps = emlua_check_number(L, 9, op);
    double wd = emlua_check_number(L, 10, op);
    bool decoupled = check_bool(L, 11, op), maximize = check_bool(L, 12, op);
    if (em_adam_multi_step_(n, p, g, m, v, steps, lr, b1, b2, eps, wd, decoupled, maximize)) return emlua_fail(L);
    return 0;
}

static int f_amp_unscale_multi(lua_State *L)
{
    const char *op = "_amp_unscale_multi_";
    int64_t n;
    em_tensor **g = check_list(L, 1, op, "gradient", -1, &n);
    em_tensor *found = emlua_check(L, 2, op), *inv = emlua_check(L, 3, op);
    if (em_amp_unscale_multi_(n, g, found, inv)) return emlua_fail(L);
    return 0;
}

static int f_multi_norm(lua_State *L)
{
    const char *op = "_multi_norm";
    int64_t n;
    em_tensor **ts = check_list(L, 1, op, "tensor", -1, &n);
    em_tensor *r = em_multi_norm(n, ts, emlua_check_number(L, 2, op));
    return r ? emlua_push(L, r) : emlua_fail(L);
}

static int f_multi_scale(lua_State *L)
{
    const char *op = "_multi_scale_";
    int64_t n;
    em_tensor **ts = check_list(L, 1, op, "tensor", -1, &n);
    em_tensor *total = emlua_check(L, 2, op);
    if (em_multi_scale_(n, ts, total, emlua_check_number(L, 3, op))) return emlua_fail(L);
    return 0;
}

void emlua_open_optim(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_sgd_step_", f_sgd_step},
        {"_adam_step_", f_adam_step},
        {"_amp_unscale_", f_amp_unscale},
        {"_sgd_multi_step_", f_sgd_multi_step},
        {"_adam_multi_step_", f_adam_multi_step},
        {"_amp_unscale_multi_", f_amp_unscale_multi},
        {"_multi_norm", f_multi_norm},
        {"_multi_scale_", f_multi_scale},
        {NULL, NULL},
    };
    static const luaL_Reg methods[] = {{NULL, NULL}};
    emlua_register(L, methods, functions);
}
