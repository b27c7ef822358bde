/* autocast.c — the C half of lua/ember/autocast.lua (state, nesting, the
 * cache) and ember._autocast, the policy for ops composed in Lua.
 *
 * An op bound in C needs nothing here: the engine's public op applies its
 * own policy at its entry (engine/autocast.c, the policies in
 * engine/elementwise_ops.h). Ops composed in Lua (most losses, mv, addmv,
 * baddbmm, the matrix norms) call ember._autocast(policy, ...) on their
 * arguments, and ember._without_autocast where the parts they are made of
 * must not cast again. */
#include "binding.h"

#include <string.h>

/* ---- ember._autocast --------------------------------------------------------- */

/* the policies Lua code names */
static const struct { const char *name; em_autocast_policy pol; } policies[] = {
    {"lower", EM_AC_LOWER}, {"fp32", EM_AC_FP32}, {"promote", EM_AC_PROMOTE},
    {"fp32_cuda", EM_AC_FP32_CUDA}, {"lower_cuda", EM_AC_LOWER_CUDA},
};

/* ember._autocast(policy, ...): the arguments, the tensors among them cast
 * under the policy (promote: to the widest of them) */
static int l_autocast_args(lua_State *L)
{
    const char *name = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : "";
    size_t k = 0, npol = sizeof policies / sizeof *policies;
    while (k < npol && strcmp(policies[k].name, name) != 0) k++;
    if (k == npol)
        emlua_typeerror(L, 1, "_autocast",
                        "a policy (\"lower\", \"lower_cuda\", \"fp32\", \"fp32_cuda\" or \"promote\")");
    int top = lua_gettop(L);
    if (!em_autocast_active() || top < 2) return top - 1;
    int n = top - 1;
    const em_tensor **ts = lua_newuserdatauv(L, sizeof *ts * (size_t)n, 0);
    em_tensor **cast = lua_newuserdatauv(L, sizeof *cast * (size_t)n, 0);
    for (int i = 0; i < n; i++) ts[i] = emlua_test(L, i + 2);
    if (em_autocast_apply(policies[k].pol, ts, cast, n)) return emlua_fail(L);
    /* each cast pushed (the Lua value owns it), then put in its argument's place */
    luaL_checkstack(L, 1, "_autocast");
    for (int i = 0; i < n; i++) {
        if (!cast[i]) continue;
        emlua_push(L, cast[i]);
        lua_replace(L, i + 2);
    }
    lua_settop(L, top);
    return n;
}

/* ---- the C half of ember.autocast ----------------------------------------- */

static em_device_type check_device_type(lua_State *L, int idx, const char *op)
{
    emlua_device_arg(L, idx);
    if (lua_type(L, idx) != LUA_TSTRING) emlua_typeerror(L, idx, op, "a device type (\"cpu\" or \"cuda\")");
    const char *s = lua_tostring(L, idx);
    em_device d;
    if (em_device_parse(s, &d) != 0)
        emlua_argerror(L, idx, op, "expected a device type (\"cpu\" or \"cuda\"), got '%s'", s);
    return d.type;
}

/* ember._without_autocast(fn, ...) -> fn(...) with autocast suspended: a
 * composite op whose own policy differs from its parts' (mv is in no CPU
 * list, the matmul it is made of is) keeps its parts from casting again */
static int l_without_autocast(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    em_autocast_suspend();
    int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    em_autocast_resume();
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

/* ember._autocast_state(device) -> enabled, dtype name, cache */
static int l_autocast_state(lua_State *L)
{
    em_device_type type = check_device_type(L, 1, "autocast");
    bool enabled, cache;
    em_dtype dtype;
    if (em_autocast_get(type, &enabled, &dtype, &cache)) return emlua_fail(L);
    lua_pushboolean(L, enabled);
    lua_pushstring(L, em_dtype_name(dtype));
    lua_pushboolean(L, cache);
    return 3;
}

/* ember._autocast_set(device, enabled, dtype, cache) */
static int l_autocast_set(lua_State *L)
{
    em_device_type type = check_device_type(L, 1, "autocast");
    em_dtype dtype = emlua_check_dtype(L, 3, "autocast");
    if (em_autocast_set(type, lua_toboolean(L, 2), dtype, lua_toboolean(L, 4))) return emlua_fail(L);
    return 0;
}

/* ember._autocast_lift() -> n: lets autocast act again inside a backward pass,
 * which suspends it (n times); ember._autocast_resuspend(n) puts the suspension
 * back. A checkpoint's recomputation runs its forward again in backward, with the
 * autocast state that forward had. */
static int l_autocast_lift(lua_State *L)
{
    int n = em_autocast_suspend();
    for (int i = 0; i <= n; i++) em_autocast_resume();
    lua_pushinteger(L, n);
    return 1;
}

static int l_autocast_resuspend(lua_State *L)
{
    if (!lua_isinteger(L, 1) || lua_tointeger(L, 1) < 0 || lua_tointeger(L, 1) > 1000000)
        return luaL_error(L, "_autocast_resuspend: expected what _autocast_lift returned (a count), got %s",
                          luaL_typename(L, 1));
    lua_Integer n = lua_tointeger(L, 1);
    for (lua_Integer i = 0; i < n; i++) em_autocast_suspend();
    return 0;
}

static int l_autocast_enter(lua_State *L)
{
    lua_pushinteger(L, em_autocast_enter());
    return 1;
}

static int l_autocast_exit(lua_State *L)
{
    lua_pushinteger(L, em_autocast_exit());
    return 1;
}

/* ember.is_autocast_enabled([device = "cuda"]), as torch.is_autocast_enabled */
static int l_is_autocast_enabled(lua_State *L)
{
    em_device_type type = lua_isnoneornil(L, 1) ? EM_CUDA : check_device_type(L, 1, "is_autocast_enabled");
    bool enabled, cache;
    em_dtype dtype;
    if (em_autocast_get(type, &enabled, &dtype, &cache)) return emlua_fail(L);
    lua_pushboolean(L, enabled);
    return 1;
}

/* ember.get_autocast_dtype(device), as torch.get_autocast_dtype */
static int l_get_autocast_dtype(lua_State *L)
{
    em_device_type type = check_device_type(L, 1, "get_autocast_dtype");
    bool enabled, cache;
    em_dtype dtype;
    if (em_autocast_get(type, &enabled, &dtype, &cache)) return emlua_fail(L);
    lua_pushstring(L, em_dtype_name(dtype));
    return 1;
}

static int l_clear_autocast_cache(lua_State *L)
{
    (void)L;
    em_autocast_clear_cache();
    return 0;
}

void emlua_open_autocast(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_autocast", l_autocast_args},
        {"_autocast_state", l_autocast_state},
        {"_without_autocast", l_without_autocast},
        {"_autocast_lift", l_autocast_lift}, {"_autocast_resuspend", l_autocast_resuspend},
        {"_autocast_set", l_autocast_set},
        {"_autocast_enter", l_autocast_enter},
        {"_autocast_exit", l_autocast_exit},
        {"is_autocast_enabled", l_is_autocast_enabled},
        {"get_autocast_dtype", l_get_autocast_dtype},
        {"clear_autocast_cache", l_clear_autocast_cache},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}
