/* autocast.c — ember.autocast's op policy, applied where an op enters from Lua,
 * and the small C half of lua/ember/autocast.lua (state, nesting, the cache).
 *
 * A binding of an op with a policy calls emlua_autocast(L, policy, first, last)
 * before it reads its arguments: while autocast is active, the tensor
 * arguments in that stack range are replaced by their casts (the engine's
 * em_autocast_cast: differentiable, the weights' casts cached). Casting at the
 * binding keeps the engine's own compositions and every backward in their
 * inputs' dtypes, as PyTorch's autocast does by excluding itself below the op.
 * Ops composed in Lua (most losses) call ember._autocast(policy, ...) on their
 * arguments.
 *
 * The policies are PyTorch's (aten's autocast_mode lists), which differ by
 * device type; each tensor is cast by the lists of its own device:
 *  LOWER     (matmul, mm, bmm, addmm, baddbmm, linear, conv, attention,
 *            einsum): eligible tensors to the region's low-precision dtype;
 *  FP32      (prod, cdist, cross_entropy and the other losses bound in C or
 *            composed in Lua): bfloat16/float16 tensors to float32, on
 *            every device;
 *  FP32_CUDA (softmax, log_softmax, layer_norm, group_norm, sum, mean,
 *            cumsum, logsumexp, norms, pow, exp, log and the like, softplus):
 *            to float32 on CUDA devices; left in their dtype on the CPU,
 *            whose lists do not hold them (PyTorch 2.15 under
 *            torch.autocast("cpu"), both low-precision dtypes: softmax and
 *            layer_norm of bfloat16 give bfloat16, mse_loss and prod float32;
 *            tests/lua/autocast_spec.lua has the table);
 *  LOWER_CUDA (mv, addmv: ember.composite): the low-precision dtype on CUDA
 *            devices, their input's dtype on the CPU, whose lists hold
 *            neither;
 *  PROMOTE   (cat, stack, addcmul, addcdiv, atan2, cross, dot, index_put,
 *            scatter_add): eligible tensors to the widest of them;
 *  PROMOTE_CUDA_LOWER_CPU (tensordot): PROMOTE on CUDA devices (their list);
 *            LOWER on the CPU, where PyTorch's tensordot reaches autocast
 *            through the mm it is made of.
 * batch_norm is in no list, as in PyTorch. Eligible: floating and not
 * float64, on a device type whose autocast is on. */
#include "binding.h"

#include <string.h>

static em_dtype widest(em_dtype a, em_dtype b)
{
    if (a == b) return a;
    /* float16 with bfloat16 promotes to float32, as PyTorch's table */
    if (a == EM_FLOAT32 || b == EM_FLOAT32 || a != b) return EM_FLOAT32;
    return a;
}

/* the dtype an eligible tensor becomes under the policy (promote: `wide`) */
static em_dtype target(const em_tensor *t, emlua_ac_policy pol, em_dtype wide)
{
    switch (pol) {
    case EMLUA_AC_LOWER: return em_autocast_dtype(t);
    case EMLUA_AC_FP32: return EM_FLOAT32;
    case EMLUA_AC_FP32_CUDA: return t->storage->device.type == EM_CUDA ? EM_FLOAT32 : t->dtype;
    case EMLUA_AC_LOWER_CUDA: return t->storage->device.type == EM_CUDA ? em_autocast_dtype(t) : t->dtype;
    case EMLUA_AC_PROMOTE_CUDA_LOWER_CPU: return t->storage->device.type == EM_CUDA ? wide : em_autocast_dtype(t);
    default: return wide;
    }
}

/* Replaces the tensor at idx (and tensors in a list at idx) by its cast. */
static void cast_slot(lua_State *L, int idx, emlua_ac_policy pol, em_dtype wide)
{
    em_tensor *t = emlua_test(L, idx);
    if (t) {
        if (!em_autocast_eligible(t) || t->dtype == target(t, pol, wide)) return;
        emlua_push(L, em_autocast_cast(t, target(t, pol, wide)));
        lua_replace(L, idx);
        return;
    }
    if (lua_type(L, idx) != LUA_TTABLE || lua_getmetatable(L, idx)) {
        if (lua_type(L, idx) == LUA_TTABLE) lua_pop(L, 1);  /* a module or an object, not a list */
        return;
    }
    /* a list of tensors (cat, stack): a new list, the caller's stays as it was */
    lua_Integer n = luaL_len(L, idx);
    bool changed = false;
    for (lua_Integer i = 1; i <= n && !changed; i++) {
        lua_geti(L, idx, i);
        em_tensor *e = emlua_test(L, -1);
        changed = e && em_autocast_eligible(e) && e->dtype != target(e, pol, wide);
        lua_pop(L, 1);
    }
    if (!changed) return;
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, idx, i);
        em_tensor *e = emlua_test(L, -1);
        if (e && em_autocast_eligible(e) && e->dtype != target(e, pol, wide)) {
            lua_pop(L, 1);
            emlua_push(L, em_autocast_cast(e, target(e, pol, wide)));
        }
        lua_seti(L, -2, i);
    }
    lua_replace(L, idx);
}

/* the widest dtype among the eligible tensors at first..last (and in lists) */
static em_dtype widest_of(lua_State *L, int first, int last)
{
    em_dtype w = EM_NDTYPES;
    for (int i = first; i <= last; i++) {
        em_tensor *t = emlua_test(L, i);
        if (t && em_autocast_eligible(t)) w = w == EM_NDTYPES ? t->dtype : widest(w, t->dtype);
        if (t || lua_type(L, i) != LUA_TTABLE) continue;
        lua_Integer n = luaL_len(L, i);
        for (lua_Integer k = 1; k <= n; k++) {
            lua_geti(L, i, k);
            em_tensor *e = emlua_test(L, -1);
            if (e && em_autocast_eligible(e)) w = w == EM_NDTYPES ? e->dtype : widest(w, e->dtype);
            lua_pop(L, 1);
        }
    }
    return w;
}

void emlua_autocast_args(lua_State *L, emlua_ac_policy pol, int first, int last)
{
    int top = lua_gettop(L);
    if (last <= 0 || last > top) last = top;
    bool promotes = pol == EMLUA_AC_PROMOTE || pol == EMLUA_AC_PROMOTE_CUDA_LOWER_CPU;
    em_dtype wide = promotes ? widest_of(L, first, last) : EM_NDTYPES;
    if (promotes && wide == EM_NDTYPES) return;
    for (int i = first; i <= last; i++) cast_slot(L, i, pol, wide);
}

/* ---- the C half of ember.autocast ----------------------------------------- */

static em_device_type check_device_type(lua_State *L, int idx, const char *op)
{
    if (lua_type(L, idx) != LUA_TSTRING) emlua_typeerror(L, idx, op, "a device type (\"cpu\" or \"cuda\")");
    const char *s = lua_tostring(L, idx);
    em_device d;
    if (em_device_parse(s, &d) != 0)
        emlua_argerror(L, idx, op, "expected a device type (\"cpu\" or \"cuda\"), got '%s'", s);
    return d.type;
}

/* emlua_ac_policy's order (the ones Lua code uses; the rest are the C bindings') */
static const char *const policy_names[] = {"lower", "fp32", "promote", "fp32_cuda", "lower_cuda", NULL};

/* ember._autocast(policy, ...): the arguments, cast under the policy */
static int l_autocast_args(lua_State *L)
{
    const char *name = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : "";
    int pol = 0;
    while (policy_names[pol] && strcmp(policy_names[pol], name) != 0) pol++;
    if (!policy_names[pol])
        emlua_typeerror(L, 1, "_autocast",
                        "a policy (\"lower\", \"lower_cuda\", \"fp32\", \"fp32_cuda\" or \"promote\")");
    int n = lua_gettop(L) - 1;
    if (em_autocast_active()) emlua_autocast_args(L, (emlua_ac_policy)pol, 2, n + 1);
    return n;
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
