/* bind_optim.c — the fused optimizer steps for lua/ember/optim.lua:
 *   ember._sgd_step_(p, g, buf|nil, lr, momentum, dampening, weight_decay,
 *                    nesterov, first_step, maximize)
 *   ember._adam_step_(p, g, exp_avg, exp_avg_sq, lr, beta1, beta2, eps,
 *                     weight_decay, decoupled, step, maximize)
 *   ember._amp_unscale_(grad, found_inf, inv_scale)   (ember.amp.GradScaler)
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

void emlua_open_optim(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_sgd_step_", f_sgd_step},
        {"_adam_step_", f_adam_step},
        {"_amp_unscale_", f_amp_unscale},
        {NULL, NULL},
    };
    static const luaL_Reg methods[] = {{NULL, NULL}};
    emlua_register(L, methods, functions);
}
