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
 * forward call.
 *
 * On a CUDA device the check does not wait for the op: it queues the
 * reductions (is every element of the result finite? of each tensor
 * argument?) on the device and keeps their 0-d answers with the op's name,
 * shapes and calling line. They are read at the next synchronisation, when
 * the device is done anyway (item, tolist, printing, cuda.synchronize), or
 * after PENDING_MAX ops without one; the stop (or error) then names the first
 * op whose result held a NaN or an infinity while its arguments did not, and
 * the line that called it, from the line that synchronised.
 *   ember._stop_on_nan(on) -> previous */
#include "binding.h"
#include "../engine/debug.h"

#include <stdlib.h>
#include <string.h>

bool emlua_nan_stop;
static bool checking;       /* a check's own ops are not checked */

/* device checks queued and not read yet, oldest first */
#define PENDING_MAX 256
#define PENDING_INPUTS 8
typedef struct pending_check {
    em_tensor *ok;                      /* 0-d bool on the device: every element finite */
    em_tensor *input_ok[PENDING_INPUTS];
    int ninputs;
    char *text;                         /* "sqrt made ... (result [..]) at file:line; inputs: ..." */
} pending_check;
static pending_check pending[PENDING_MAX];
static int npending;

/* a 0-d bool tensor on t's device, queued: whether every element of t is
 * finite (NULL for non-float tensors and on failure) */
static em_tensor *all_finite_async(const em_tensor *t)
{
    if (!em_dtype_is_float(t->dtype) || em_numel(t) == 0) return NULL;
    bool was = em_set_grad_enabled(false);
    em_tensor *fin = em_float_class_test(EM_ISFINITE, t);
    em_tensor *all = fin ? em_all(fin, NULL, 0, false) : NULL;
    if (!all) em_clear_error();
    em_set_grad_enabled(was);
    em_release(fin);
    return all;
}

static void drop_pending(int from)
{
    for (int i = from; i < npending; i++) {
        em_release(pending[i].ok);
        for (int k = 0; k < pending[i].ninputs; k++) em_release(pending[i].input_ok[k]);
        free(pending[i].text);
    }
    if (from < npending) npending = from;
}

/* true when the 0-d answer says "not all finite" (a failed read counts as finite) */
static bool answered_no(const em_tensor *ok)
{
    double v = 1;
    if (ok && em_item(ok, &v)) em_clear_error();
    return v == 0;
}

/* whether t (floating point) holds a NaN or an infinity, now; false on failure */
static bool nonfinite(const em_tensor *t)
{
    em_tensor *all = all_finite_async(t);
    bool no = all && answered_no(all);
    em_release(all);
    return no;
}

static void report(lua_State *L, int text_index);

/* Reads the queued device checks (the device has finished them, or this
 * waits): the first op that made a NaN or an infinity from finite
 * arguments stops the debugger or raises, at the caller's line. */
void emlua_nan_poll(lua_State *L)
{
    if (!npending || checking) return;
    checking = true;
    int found = -1;
    for (int i = 0; i < npending && found < 0; i++) {
        if (!answered_no(pending[i].ok)) continue;
        bool inherited = false;
        for (int k = 0; k < pending[i].ninputs && !inherited; k++) inherited = answered_no(pending[i].input_ok[k]);
        if (!inherited) found = i;
    }
    if (found >= 0) lua_pushstring(L, pending[found].text);
    drop_pending(0);
    checking = false;
    if (found >= 0) report(L, lua_gettop(L));
}

/* the op's argument summary into b: "[2, 3] float32, ..." */
static int add_inputs(lua_State *L, luaL_Buffer *b, int top, bool check_now, em_tensor **flags, bool *inherited)
{
    int ninputs = 0;
    char shape[128];
    for (int i = 1; i <= top; i++) {
        em_tensor *x = emlua_test(L, i);
        if (!x) continue;
        bool bad = check_now && nonfinite(x);
        if (inherited) *inherited = *inherited || bad;
        if (flags && ninputs < PENDING_INPUTS) flags[ninputs] = all_finite_async(x);
        lua_pushfstring(L, "%s%s %s%s", ninputs ? ", " : "", em_shape_str(x, shape, sizeof shape),
                        em_dtype_name(x->dtype), bad ? " (held one already)" : "");
        luaL_addvalue(b);
        ninputs++;
    }
    if (!ninputs) luaL_addstring(b, "none");
    return ninputs;
}

/* Starts the message about t, the result (at the top) of the op whose
 * arguments are the stack below it, in b: "sqrt made a NaN or an infinity
 * (result [3])", then with `later` where it was called and that it was found
 * later, then "; inputs: ". Returns the index of the op's last argument. */
static int message_head(lua_State *L, luaL_Buffer *b, const em_tensor *t, bool later)
{
    int top = lua_gettop(L) - 1;
    luaL_buffinit(L, b);
    lua_Debug ar;
    const char *name = lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name ? ar.name : "an op";
    char shape[128];
    lua_pushfstring(L, "%s made a NaN or an infinity (result %s)", name, em_shape_str(t, shape, sizeof shape));
    luaL_addvalue(b);
    if (later) {
        lua_Debug caller;
        if (lua_getstack(L, 1, &caller) && lua_getinfo(L, "Sl", &caller) && caller.currentline > 0)
            lua_pushfstring(L, " at %s:%d", caller.short_src, caller.currentline);
        else
            lua_pushliteral(L, " at ?");
        luaL_addvalue(b);
        luaL_addstring(b, ", found on the device at this synchronisation");
    }
    luaL_addstring(b, "; inputs: ");
    return top;
}

/* queues the device check of t, the result of the op whose arguments are
 * the stack below it */
static void queue_device_check(lua_State *L, const em_tensor *t)
{
    if (npending == PENDING_MAX) emlua_nan_poll(L);   /* reads (and waits for) what is queued */
    if (!em_dtype_is_float(t->dtype) || em_numel(t) == 0) return;
    checking = true;
    pending_check *p = &pending[npending];
    memset(p, 0, sizeof *p);
    p->ok = all_finite_async(t);
    if (!p->ok) { checking = false; return; }
    luaL_Buffer b;
    int top = message_head(L, &b, t, true);
    int n = add_inputs(L, &b, top, false, p->input_ok, NULL);
    p->ninputs = n < PENDING_INPUTS ? n : PENDING_INPUTS;
    luaL_pushresult(&b);
    p->text = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
    npending++;
    if (!p->text) drop_pending(npending - 1);
    checking = false;
}

/* t is at the top of the stack, in the box that owns it: an error raised
 * here leaks nothing */
void emlua_nan_check(lua_State *L, const em_tensor *t)
{
    if (checking) return;
    if (t->storage->device.type == EM_CUDA) {
        queue_device_check(L, t);
        return;
    }
    if (!nonfinite(t)) return;
    checking = true;
    luaL_Buffer b;
    int top = message_head(L, &b, t, false);
    bool inherited = false;
    add_inputs(L, &b, top, true, NULL, &inherited);
    luaL_pushresult(&b);
    checking = false;
    if (inherited) {            /* not where it started: an earlier op stopped already */
        lua_pop(L, 1);
        return;
    }
    report(L, lua_gettop(L));
}

/* the reason at text_index (the top): the shell's debugger stops at the
 * calling line with it; without one it is an error there */
static void report(lua_State *L, int text_index)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, "ember.debug_stop") == LUA_TFUNCTION) {
        lua_pushvalue(L, text_index);
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
    if (!emlua_nan_stop) drop_pending(0);
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
