/* bind_debug.c — stop at the first op that makes a NaN or an infinity
 * (ember.debug.stop_on_nan, the shell's :nan on).
 *
 * While on, every floating-point tensor an op hands to Lua is checked; when
 * it holds a NaN or an infinity and none of the op's tensor arguments did,
 * the op is where it started: the debugger the shell registered
 * (registry["ember.debug_stop"], a function taking the reason) stops at the
 * Lua line that called the op, and `continue` goes on; without a debugger
 * (plain lua5.4) it is a Lua error at that line. Backward ops are checked by
 * anomaly mode, which stop_on_nan turns on (engine/debug.h): a NaN made by a
 * backward node is an error naming the node and the traceback of its
 * forward call. On a CUDA device each check waits for the op.
 *   ember._stop_on_nan(on) -> previous */
#include "binding.h"
#include "../engine/debug.h"

#include <string.h>

bool emlua_nan_stop;
static bool checking;       /* a check's own ops are not checked */

/* whether t (floating point) holds a NaN or an infinity; false on failure */
static bool nonfinite(const em_tensor *t)
{
    if (!em_dtype_is_float(t->dtype) || em_numel(t) == 0) return false;
    bool was = em_set_grad_enabled(false);
    em_tensor *fin = em_float_class_test(EM_ISFINITE, t);
    em_tensor *all = fin ? em_all(fin, NULL, 0, false) : NULL;
    double v = 1;
    if (!all || em_item(all, &v)) em_clear_error();
    em_set_grad_enabled(was);
    em_release(fin);
    em_release(all);
    return v == 0;
}

/* t is at the top of the stack, in the box that owns it: an error raised
 * here leaks nothing */
void emlua_nan_check(lua_State *L, const em_tensor *t)
{
    if (checking || !nonfinite(t)) return;
    checking = true;
    /* the op's tensor arguments: its stack below the result (at the top) */
    int top = lua_gettop(L) - 1, ninputs = 0;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_Debug ar;
    const char *name = lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name ? ar.name : "an op";
    char shape[128];
    lua_pushfstring(L, "%s made a NaN or an infinity (result %s); inputs: ", name, em_shape_str(t, shape, sizeof shape));
    luaL_addvalue(&b);
    bool inherited = false;
    for (int i = 1; i <= top; i++) {
        em_tensor *x = emlua_test(L, i);
        if (!x) continue;
        bool bad = nonfinite(x);
        inherited = inherited || bad;
        lua_pushfstring(L, "%s%s %s%s", ninputs ? ", " : "", em_shape_str(x, shape, sizeof shape),
                        em_dtype_name(x->dtype), bad ? " (held one already)" : "");
        luaL_addvalue(&b);
        ninputs++;
    }
    if (!ninputs) luaL_addstring(&b, "none");
    luaL_pushresult(&b);
    checking = false;
    if (inherited) {            /* not where it started: an earlier op stopped already */
        lua_pop(L, 1);
        return;
    }
    if (lua_getfield(L, LUA_REGISTRYINDEX, "ember.debug_stop") == LUA_TFUNCTION) {
        lua_pushvalue(L, -2);
        lua_call(L, 1, 0);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    luaL_where(L, 1);
    lua_insert(L, -2);
    lua_concat(L, 2);
    lua_error(L);
}

static int m_stop_on_nan(lua_State *L)
{
    bool was = emlua_nan_stop;
    emlua_nan_stop = lua_toboolean(L, 1);
    lua_pushboolean(L, was);
    return 1;
}

void emlua_open_debug(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_stop_on_nan", m_stop_on_nan},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}
