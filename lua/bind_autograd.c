/* bind_autograd.c — autograd from Lua: t:backward(), t:detach(),
 * t:requires_grad_(), t:retain_grad(), t:register_hook(fn),
 * ember.no_grad(fn | nothing), ember.enable_grad, ember.set_grad_enabled,
 * ember.is_grad_enabled, and ember._autograd_grad (wrapped by
 * lua/ember/autograd.lua as ember.autograd.grad), ember._autograd_function
 * (the C half of ember.autograd.Function). */
#include "binding.h"
#include "../engine/ag_region.h"
#include "../engine/debug.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Hooks run Lua code in the middle of a backward pass, on the thread that
 * started the pass (a coroutine's own thread when called from one). */
static lua_State *pass_L;

/* A Lua function the engine calls. The engine holds it until the hook record
 * dies; a handle (t:register_hook's result) may hold it too, so whichever lets go
 * last frees it. handle:remove() drops the function (ref becomes LUA_NOREF) and the
 * engine's record then does nothing. */
typedef struct lua_hook {
    lua_State *owner;       /* the main state, to drop the reference */
    int ref;
    int holders;
} lua_hook;

static void drop_function(lua_hook *h)
{
    if (h->ref != LUA_NOREF) luaL_unref(h->owner, LUA_REGISTRYINDEX, h->ref);
    h->ref = LUA_NOREF;
}

static void release_lua_hook(lua_hook *h)
{
    if (--h->holders > 0) return;
    drop_function(h);
    free(h);
}

static int run_lua_hook(void *ctx, em_tensor *grad, em_tensor **replacement)
{
    lua_hook *h = ctx;
    lua_State *L = pass_L;
    if (h->ref == LUA_NOREF) return 0;   /* removed through its handle */
    if (!L) return em_set_error("register_hook: hook called outside a backward pass");
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
    emlua_push(L, em_retain(grad));
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        em_set_error("hook: %s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error in a tensor hook");
        lua_pop(L, 1);
        return -1;
    }
    em_tensor *r = emlua_test(L, -1);
    if (r) *replacement = em_retain(r);
    else if (!lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return em_set_error("hook: a hook must return nil or a tensor");
    }
    lua_pop(L, 1);
    return 0;
}

static void free_lua_hook(void *ctx) { release_lua_hook(ctx); }

/* ---- handles: PyTorch's RemovableHandle for tensor hooks -------------------------- */

#define HANDLE_NAME "ember.RemovableHandle"

static int handle_remove(lua_State *L)
{
    lua_hook **p = luaL_checkudata(L, 1, HANDLE_NAME);
    if (*p) drop_function(*p);
    return 0;
}

static int handle_gc(lua_State *L)
{
    lua_hook **p = luaL_checkudata(L, 1, HANDLE_NAME);
    if (*p) release_lua_hook(*p);
    *p = NULL;
    return 0;
}

static int handle_tostring(lua_State *L)
{
    lua_hook **p = luaL_checkudata(L, 1, HANDLE_NAME);
    lua_pushstring(L, *p && (*p)->ref != LUA_NOREF ? "RemovableHandle" : "RemovableHandle (removed)");
    return 1;
}

/* pushes a handle on h (which it then also holds) */
static void push_handle(lua_State *L, lua_hook *h)
{
    lua_hook **p = lua_newuserdatauv(L, sizeof *p, 0);
    *p = NULL;
    if (luaL_newmetatable(L, HANDLE_NAME)) {
        static const luaL_Reg meta[] = {{"__gc", handle_gc}, {"__tostring", handle_tostring}, {NULL, NULL}};
        static const luaL_Reg index[] = {{"remove", handle_remove}, {NULL, NULL}};
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, index);
        lua_setfield(L, -2, "__index");
        lua_pushstring(L, "RemovableHandle");
        lua_setfield(L, -2, "__name");
    }
    lua_setmetatable(L, -2);
    *p = h;
    h->holders++;
}

static lua_hook *new_lua_hook(lua_State *L, int idx);

/* the result of registering h: its handle, or the engine's error (rc != 0) */
static int registered(lua_State *L, lua_hook *h, int rc)
{
    if (rc) {
        free_lua_hook(h);
        return emlua_fail(L);
    }
    push_handle(L, h);
    return 1;
}

/* t:register_hook(fn) -> handle; fn(grad) runs when t's gradient is computed and may
 * return a replacement */
static int t_register_hook(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "register_hook");
    if (lua_type(L, 2) != LUA_TFUNCTION) return emlua_typeerror(L, 2, "register_hook", "a function");
    emlua_keywords(L, 3, "register_hook", NULL);
    lua_hook *h = new_lua_hook(L, 2);
    return registered(L, h, em_register_hook(t, run_lua_hook, h, free_lua_hook));
}

/* Calls the Lua function of h with the nargs values on top of the stack
 * (popped); a Lua error becomes the engine's error, prefixed by op if any. */
static int call_lua_function(lua_hook *h, lua_State *L, int nargs, const char *op)
{
    if (h->ref == LUA_NOREF) { lua_pop(L, nargs); return 0; }   /* removed through its handle */
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
    lua_insert(L, -1 - nargs);
    if (lua_pcall(L, nargs, 0, 0) != LUA_OK) {
        const char *msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error in a Lua function";
        if (op) em_set_error("%s: %s", op, msg);
        else em_set_error("%s", msg);
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

static int run_lua_post_hook(void *ctx, em_tensor *leaf)
{
    lua_State *L = pass_L;
    if (!L) return em_set_error("register_post_accumulate_grad_hook: hook called outside a backward pass");
    emlua_push(L, em_retain(leaf));
    return call_lua_function(ctx, L, 1, "post-accumulate hook");
}

static int run_lua_callback(void *ctx)
{
    lua_State *L = pass_L;
    if (!L) return em_set_error("queue_callback: callback run outside a backward pass");
    return call_lua_function(ctx, L, 0, NULL);   /* its own message: a check that fails at the end of backward */
}

/* a lua_hook holding the function at idx (a reference in the registry) */
static lua_hook *new_lua_hook(lua_State *L, int idx)
{
    lua_hook *h = malloc(sizeof *h);
    if (!h) { luaL_error(L, "out of memory (hook)"); return NULL; }
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    h->owner = lua_tothread(L, -1);
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
    h->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    h->holders = 1;
    return h;
}

/* t:register_post_accumulate_grad_hook(fn) -> handle: fn(t) after backward has updated t.grad */
static int t_register_post_accumulate_grad_hook(lua_State *L)
{
    const char *op = "register_post_accumulate_grad_hook";
    em_tensor *t = emlua_check(L, 1, op);
    if (lua_type(L, 2) != LUA_TFUNCTION) return emlua_typeerror(L, 2, op, "a function");
    emlua_keywords(L, 3, op, NULL);
    lua_hook *h = new_lua_hook(L, 2);
    return registered(L, h, em_register_post_accumulate_hook(t, run_lua_post_hook, h, free_lua_hook));
}

/* ember.autograd.queue_callback(fn): during backward, fn() once the pass has finished */
static int m_queue_callback(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TFUNCTION) return emlua_typeerror(L, 1, "queue_callback", "a function");
    emlua_keywords(L, 2, "queue_callback", NULL);
    lua_hook *h = new_lua_hook(L, 1);
    if (em_queue_callback(run_lua_callback, h, free_lua_hook)) {
        free_lua_hook(h);
        return emlua_fail(L);
    }
    return 0;
}

/* t:backward([gradient], [{retain_graph=, create_graph=}]) */
/* A failed backward pass's error; in anomaly mode with the traceback of
 * the forward call that made the failing node, as PyTorch prints it. */
static int backward_fail(lua_State *L)
{
    const char *trace = em_anomaly_trace();
    if (!trace) return emlua_fail(L);
    luaL_where(L, 1);
    lua_pushfstring(L, "%s\nTraceback of forward call that caused the error:\n%s", em_error(), trace);
    lua_concat(L, 2);
    return lua_error(L);
}

/* Runs a backward pass from outs (gos: their gradients, or NULL): into every
 * leaf's .grad, or, with inputs, d(outs)/d(inputs) added into those
 * tensors' .grad alone (PyTorch's inputs=). */
static int run_backward(lua_State *L, em_tensor **outs, em_tensor **gos, int nout, bool retain,
                        bool create, em_tensor **ins, int nin)
{
    lua_State *outer = pass_L;
    pass_L = L;
    if (emlua_mem_recording) emlua_mem_backward(L, true);
    int rc;
    if (!ins) {
        rc = em_backward(outs, gos, nout, retain, create);
    } else {
        em_tensor **res = lua_newuserdatauv(L, sizeof *res * (size_t)(nin ? nin : 1), 0);
        rc = em_autograd_grad(outs, gos, nout, ins, nin, retain, create, true, res);
        for (int i = 0; i < nin; i++) {
            em_tensor *g = res[i], *old = rc == 0 && g ? em_get_grad(ins[i]) : NULL;
            if (rc == 0 && g && !old) {
                rc = em_set_grad(ins[i], g);
            } else if (rc == 0 && g && create) {   /* the sum stays differentiable */
                em_tensor *sum = em_binary(EM_ADD, old, g);
                rc = sum ? em_set_grad(ins[i], sum) : -1;
                em_release(sum);
            } else if (rc == 0 && g) {
                bool was = em_set_grad_enabled(false);
                rc = em_binary_(EM_ADD, old, g);
                em_set_grad_enabled(was);
            }
            em_release(old);
            em_release(g);
        }
        lua_pop(L, 1);
    }
    pass_L = outer;
    if (emlua_mem_recording) emlua_mem_backward(L, false);
    return rc ? backward_fail(L) : 0;
}

static em_tensor **tensor_list(lua_State *L, int idx, const char *op, const char *what, int *n);

/* the inputs= option at the options table opts (0: none): a list of tensors
 * that require grad, or NULL */
static em_tensor **opt_inputs(lua_State *L, int opts, const char *op, int *nin)
{
    *nin = 0;
    if (!opts) return NULL;
    lua_getfield(L, opts, "inputs");
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return NULL; }
    em_tensor **ins = tensor_list(L, lua_gettop(L), op, "inputs", nin);
    if (*nin == 0) emlua_argerror(L, opts, op, "inputs must not be empty");
    for (int i = 0; i < *nin; i++)
        if (!ins[i]->requires_grad)
            emlua_argerror(L, opts, op, "entry %d of inputs does not require grad", i + 1);
    return ins;     /* the list and its userdata stay on the stack */
}

static const char *const backward_names[] = {"gradient", "retain_graph", "create_graph", "inputs", NULL};

/* t:backward([gradient [, retain_graph [, create_graph [, inputs]]]] [, {gradient=, retain_graph=,
 * create_graph=, inputs=}]): PyTorch's Tensor.backward, positional then keyword */
static int t_backward(lua_State *L)
{
    const char *op = "backward";
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, backward_names);   /* refuses a fifth positional argument (not a trailing nil) */
    em_tensor *g = emlua_arg_tensor(&a, 0);
    bool create = emlua_arg_bool(&a, 2, false);
    bool retain = emlua_arg_bool(&a, 1, create);
    int nin = 0, at = emlua_arg_at(&a, 3);
    em_tensor **ins = NULL;
    if (at) {
        lua_createtable(L, 0, 1);
        lua_pushvalue(L, at);
        lua_setfield(L, -2, "inputs");
        ins = opt_inputs(L, lua_gettop(L), op, &nin);
    }
    return run_backward(L, &t, g ? &g : NULL, 1, retain, create, ins, nin);
}

/* ember._autograd_backward(tensors, grad_tensors or nil, {retain_graph=, create_graph=, inputs=}):
 * the C half of ember.autograd.backward (lua/ember/autograd.lua reads the arguments) */
static int m_autograd_backward(lua_State *L)
{
    const char *op = "autograd.backward";
    static const char *const names[] = {"retain_graph", "create_graph", "inputs", NULL};
    int opts = emlua_keywords(L, 3, op, names);   /* before tensor_list pushes its arrays */
    int nout, ngo = 0, nin = 0;
    em_tensor **outs = tensor_list(L, 1, op, "tensors", &nout);
    em_tensor **gos = lua_isnil(L, 2) ? NULL : tensor_list(L, 2, op, "grad_tensors", &ngo);
    if (gos && ngo != nout) return luaL_error(L, "%s: %d grad_tensors given for %d tensors", op, ngo, nout);
    bool create = emlua_opt_field_boolean(L, opts, "create_graph", op, false);
    bool retain = emlua_opt_field_boolean(L, opts, "retain_graph", op, create);
    em_tensor **ins = opt_inputs(L, opts, op, &nin);
    return run_backward(L, outs, gos, nout, retain, create, ins, nin);
}

/* Reads a tensor or a list of tensors at idx into an array that lives in a
 * userdata pushed on the stack, so a Lua error raised later cannot leak it. */
static em_tensor **tensor_list(lua_State *L, int idx, const char *op, const char *what, int *n)
{
    em_tensor *one = emlua_test(L, idx);
    if (!one && lua_type(L, idx) != LUA_TTABLE)
        emlua_argerror(L, idx, op, "expected a tensor or a list of tensors as %s, got %s", what, luaL_typename(L, idx));
    int k = one ? 1 : (int)lua_rawlen(L, idx);
    em_tensor **a = lua_newuserdatauv(L, sizeof *a * (size_t)(k ? k : 1), 0);
    if (one) a[0] = one;
    for (int i = 0; !one && i < k; i++) {
        lua_rawgeti(L, idx, i + 1);
        a[i] = emlua_test(L, -1);
        lua_pop(L, 1);       /* the list keeps the tensor alive */
        if (!a[i]) emlua_argerror(L, idx, op, "entry %d of %s is not a tensor", i + 1, what);
    }
    *n = k;
    return a;
}

/* ember._autograd_grad(outputs, inputs, {grad_outputs=, retain_graph=,
 * create_graph=, allow_unused=}) -> one gradient (or nil) per input; it is
 * ember.autograd.grad, so the options are the user's (PyTorch's others, such
 * as materialize_grads, refused: ignored, they would change the answer) */
static int m_autograd_grad(lua_State *L)
{
    const char *op = "autograd.grad";
    static const char *const names[] = {"grad_outputs", "retain_graph", "create_graph", "allow_unused", NULL};
    int nout, nin, ngo = 0;
    int opts = emlua_keywords(L, 3, op, names);
    em_tensor **outs = tensor_list(L, 1, op, "outputs", &nout);
    em_tensor **ins = tensor_list(L, 2, op, "inputs", &nin);
    em_tensor **gos = NULL;
    if (opts) {
        lua_getfield(L, opts, "grad_outputs");
        if (!lua_isnil(L, -1)) {
            gos = tensor_list(L, lua_gettop(L), op, "grad_outputs", &ngo);
            if (ngo != nout) return luaL_error(L, "%s: %d grad_outputs given for %d outputs", op, ngo, nout);
        }
    }
    bool create = emlua_opt_field_boolean(L, opts, "create_graph", op, false);
    bool retain = emlua_opt_field_boolean(L, opts, "retain_graph", op, create);
    bool unused = emlua_opt_field_boolean(L, opts, "allow_unused", op, false);
    em_tensor **res = lua_newuserdatauv(L, sizeof *res * (size_t)(nin ? nin : 1), 0);
    lua_State *outer = pass_L;
    pass_L = L;
    int rc = em_autograd_grad(outs, gos, nout, ins, nin, retain, create, unused, res);
    pass_L = outer;
    if (rc) return backward_fail(L);
    luaL_checkstack(L, nin, op);
    for (int i = 0; i < nin; i++) {
        if (res[i]) emlua_push(L, res[i]);
        else lua_pushnil(L);
    }
    return nin;
}

/* ember._set_anomaly(on, check_nan) -> previous on, previous check_nan */
static int m_set_anomaly(lua_State *L)
{
    bool was = em_anomaly_mode, was_nan = em_anomaly_check_nan();
    em_set_anomaly(lua_toboolean(L, 1), lua_isnoneornil(L, 2) || lua_toboolean(L, 2));
    lua_pushboolean(L, was);
    lua_pushboolean(L, was_nan);
    return 2;
}

/* ---- custom functions ------------------------------------------------------
 * ember.autograd.Function (lua/ember/autograd.lua) runs the user's forward and
 * hands the result here; the engine records the node (em_custom_function)
 * and calls back into Lua for the backward. */

typedef struct lua_backward {
    lua_State *owner;       /* the main state, to drop the reference */
    int ref;                /* function(grads, saved) -> list of input gradients */
} lua_backward;

static void free_lua_backward(void *ctx)
{
    lua_backward *b = ctx;
    luaL_unref(b->owner, LUA_REGISTRYINDEX, b->ref);
    free(b);
}

static void push_tensor_list(lua_State *L, em_tensor *const *ts, int n)
{
    lua_createtable(L, n, 1);
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        emlua_push(L, em_retain(ts[i]));
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
}

static int run_lua_backward(void *ctx, em_tensor *const *gout, int nout, em_tensor *const *saved, int nsaved,
                            em_tensor **gin, int nin)
{
    lua_backward *b = ctx;
    lua_State *L = pass_L;
    if (!L) return em_set_error("autograd.Function: backward called outside a backward pass");
    if (!lua_checkstack(L, 4)) return em_set_error("autograd.Function: Lua stack overflow");
    lua_rawgeti(L, LUA_REGISTRYINDEX, b->ref);
    push_tensor_list(L, gout, nout);
    push_tensor_list(L, saved, nsaved);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
        em_set_error("%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error in an autograd.Function backward");
        lua_pop(L, 1);
        return -1;
    }
    /* the Lua half has checked the list: one tensor or nil per input */
    for (int i = 0; i < nin && lua_istable(L, -1); i++) {
        lua_rawgeti(L, -1, i + 1);
        em_tensor *g = emlua_test(L, -1);
        gin[i] = g ? em_retain(g) : NULL;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

/* the tensors of spec[field] (a list) in an array that lives on the stack */
static em_tensor **spec_tensors(lua_State *L, int spec, const char *field, int *n, bool holes)
{
    lua_getfield(L, spec, field);
    if (!lua_istable(L, -1)) luaL_error(L, "autograd.Function: internal: spec.%s is not a table", field);
    int list = lua_gettop(L);
    int k;
    if (holes) {
        lua_getfield(L, list, "n");
        lua_Integer n = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (n < 0 || n > INT_MAX / 16) luaL_error(L, "autograd.Function: internal: spec.%s.n is %I", field, n);
        k = (int)n;
    } else {
        k = (int)lua_rawlen(L, list);
    }
    em_tensor **a = lua_newuserdatauv(L, sizeof *a * (size_t)(k ? k : 1), 0);
    for (int i = 0; i < k; i++) {
        lua_rawgeti(L, list, i + 1);
        a[i] = emlua_test(L, -1);    /* the spec keeps it alive */
        lua_pop(L, 1);
        if (!a[i] && !holes) luaL_error(L, "autograd.Function: internal: spec.%s[%d] is not a tensor", field, i + 1);
    }
    *n = k;
    return a;
}

static bool in_list(em_tensor *const *list, int n, const em_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (list[i] == t) return true;
    return false;
}

/* ember._autograd_function(spec): spec = {name, inputs (with n; non-tensors
 * anywhere), outputs (the tensor outputs), dirty, nondiff, saved,
 * materialize, backward}. Records the node; replaces spec.outputs[k] where
 * the engine gave a new tensor (an input returned as it is). */
static int m_autograd_function(lua_State *L)
{
    if (!lua_istable(L, 1))
        return luaL_error(L, "autograd.Function: internal: _autograd_function takes the table "
                             "ember.autograd.Function builds, got %s", luaL_typename(L, 1));
    lua_getfield(L, 1, "name");
    const char *name = lua_tostring(L, -1);
    if (!name) name = "Function";
    int nin, nout, ndirty, nnondiff, nsaved;
    em_tensor **ins = spec_tensors(L, 1, "inputs", &nin, true);
    em_tensor **outs = spec_tensors(L, 1, "outputs", &nout, false);
    em_tensor **dirty = spec_tensors(L, 1, "dirty", &ndirty, false);
    em_tensor **nondiff = spec_tensors(L, 1, "nondiff", &nnondiff, false);
    em_tensor **saved = spec_tensors(L, 1, "saved", &nsaved, false);
    lua_getfield(L, 1, "materialize");
    bool materialize = lua_toboolean(L, -1);
    lua_getfield(L, 1, "backward");
    if (!lua_isfunction(L, -1)) return luaL_error(L, "autograd.Function: internal: spec.backward is not a function");
    em_custom_output *kinds = lua_newuserdatauv(L, sizeof *kinds * (size_t)(nout ? nout : 1), 0);
    em_tensor **res = lua_newuserdatauv(L, sizeof *res * (size_t)(nout ? nout : 1), 0);
    for (int k = 0; k < nout; k++) {
        kinds[k] = in_list(dirty, ndirty, outs[k]) ? EM_CUSTOM_DIRTY
                 : in_list(nondiff, nnondiff, outs[k]) ? EM_CUSTOM_NONDIFF : EM_CUSTOM_OUT;
        res[k] = em_retain(outs[k]);
    }
    for (int d = 0; d < ndirty; d++)
        if (!in_list(outs, nout, dirty[d])) {
            for (int k = 0; k < nout; k++) em_release(res[k]);
            return luaL_error(L, "autograd.Function %s: a tensor given to mark_dirty is not returned by forward "
                                 "(return the inputs you modified in place)", name);
        }
    lua_backward *b = malloc(sizeof *b);
    if (!b) {
        for (int k = 0; k < nout; k++) em_release(res[k]);
        return luaL_error(L, "autograd.Function: out of memory");
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    b->owner = lua_tothread(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 1, "backward");
    b->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    int rc = em_custom_function(name, ins, nin, res, kinds, nout, saved, nsaved, materialize, run_lua_backward, b,
                                free_lua_backward);
    if (rc) {                      /* the engine has freed b */
        for (int k = 0; k < nout; k++) em_release(res[k]);
        return emlua_fail(L);
    }
    lua_getfield(L, 1, "outputs");
    for (int k = 0; k < nout; k++) {
        if (res[k] == outs[k]) { em_release(res[k]); continue; }
        emlua_push(L, res[k]);
        lua_rawseti(L, -2, k + 1);
    }
    return 0;
}

/* ember._autograd_clock() -> the number the next autograd node gets (where a
 * checkpointed region begins) */
static int m_autograd_clock(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)em_ag_clock());
    return 1;
}

/* ember._autograd_region_leaves(op, outputs, since, known) -> the list of leaves that
 * require grad which the graph of outputs recorded since `since` reads, other
 * than the tensors of known (ember.utils.checkpoint's region arguments) */
static int m_autograd_region_leaves(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING)
        return luaL_error(L, "_autograd_region_leaves: expected the op's name (a string) as argument 1, got %s",
                          luaL_typename(L, 1));
    const char *op = lua_tostring(L, 1);
    int nout, nknown;
    em_tensor **outs = tensor_list(L, 2, op, "outputs", &nout);
    if (!lua_isinteger(L, 3))
        return luaL_error(L, "%s: expected the region's start (an integer) as argument 3, got %s", op,
                          luaL_typename(L, 3));
    lua_Integer since = lua_tointeger(L, 3);
    em_tensor **known = tensor_list(L, 4, op, "arguments", &nknown);
    em_tensor **leaves;
    int n;
    if (em_ag_region_leaves(op, outs, nout, (uint64_t)since, known, nknown, &leaves, &n)) return emlua_fail(L);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        emlua_push(L, leaves[i]);    /* takes the reference */
        lua_rawseti(L, -2, i + 1);
    }
    free(leaves);
    return 1;
}

/* the tensor argument 1 of op, which takes nothing after it */
static em_tensor *check_only(lua_State *L, const char *op)
{
    em_tensor *t = emlua_check(L, 1, op);
    emlua_keywords(L, 2, op, NULL);
    return t;
}

static int t_detach(lua_State *L) { return emlua_push(L, em_detach(check_only(L, "detach"))); }
static int t_detach_(lua_State *L) { return emlua_push_self(L, em_detach_(check_only(L, "detach_"))); }

static int t_requires_grad_(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "requires_grad_");
    bool on = emlua_opt_boolean(L, 2, "requires_grad_", true);
    emlua_keywords(L, 3, "requires_grad_", NULL);
    return emlua_push_self(L, em_requires_grad_(t, on));
}

static int t_retain_grad(lua_State *L)
{
    if (em_retain_grad(check_only(L, "retain_grad"))) return emlua_fail(L);
    return 0;
}

/* ---- grad mode ----------------------------------------------------------- */

/* The guard object of `local g <close> = ember.no_grad()`: restores the mode
 * that was on when it was made. */
static int guard_close(lua_State *L)
{
    bool *was = luaL_checkudata(L, 1, "ember.GradGuard");
    em_set_grad_enabled(*was);
    return 0;
}

static int push_guard(lua_State *L, bool was)
{
    bool *g = lua_newuserdatauv(L, sizeof(bool), 0);
    *g = was;
    emlua_new_class(L, "ember.GradGuard", NULL, NULL, guard_close, NULL);   /* made on first use */
    luaL_setmetatable(L, "ember.GradGuard");
    return 1;
}

static int mode_results(lua_State *L, int status, lua_KContext ctx)
{
    (void)status;
    (void)ctx;
    return lua_gettop(L);
}

/* ember.no_grad(fn, ...) runs fn with recording off and returns its
 * results; ember.no_grad() returns a <close> guard. The mode is restored
 * even when fn raises. Inside a coroutine fn may yield: ember/grad_mode.lua
 * runs it then, giving the mode back to the rest of the program while fn is
 * suspended (a protected call from C could not be yielded across). */
static int with_mode(lua_State *L, bool on, const char *op)
{
    if (!lua_isnoneornil(L, 1) && lua_type(L, 1) != LUA_TFUNCTION)
        return emlua_typeerror(L, 1, op, "a function (or nothing, for a <close> guard)");
    if (lua_isnoneornil(L, 1)) emlua_keywords(L, 2, op, NULL);   /* fn's arguments, without fn */
    if (!lua_isnoneornil(L, 1) && emlua_in_coroutine(L)) {
        lua_getglobal(L, "require");
        lua_pushliteral(L, "ember.grad_mode");
        lua_call(L, 1, 1);
        lua_insert(L, 1);
        lua_pushboolean(L, on);
        lua_insert(L, 2);
        lua_callk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, mode_results);
        return mode_results(L, LUA_OK, 0);
    }
    bool was = em_set_grad_enabled(on);
    if (lua_isnoneornil(L, 1)) return push_guard(L, was);
    int base = lua_gettop(L);
    int status = lua_pcall(L, base - 1, LUA_MULTRET, 0);
    em_set_grad_enabled(was);
    if (status != LUA_OK) return lua_error(L);
    return lua_gettop(L);
}

static int m_no_grad(lua_State *L) { return with_mode(L, false, "ember.no_grad"); }
static int m_enable_grad(lua_State *L) { return with_mode(L, true, "ember.enable_grad"); }

static int m_set_grad_enabled(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TBOOLEAN) return emlua_typeerror(L, 1, "ember.set_grad_enabled", "a boolean");
    emlua_keywords(L, 2, "ember.set_grad_enabled", NULL);
    lua_pushboolean(L, em_set_grad_enabled(lua_toboolean(L, 1)));
    return 1;
}

static int m_is_grad_enabled(lua_State *L)
{
    emlua_keywords(L, 1, "ember.is_grad_enabled", NULL);
    lua_pushboolean(L, em_grad_enabled());
    return 1;
}

static const luaL_Reg methods[] = {
    {"backward", t_backward}, {"detach", t_detach}, {"detach_", t_detach_}, {"requires_grad_", t_requires_grad_},
    {"retain_grad", t_retain_grad}, {"register_hook", t_register_hook},
    {"register_post_accumulate_grad_hook", t_register_post_accumulate_grad_hook},
    {NULL, NULL},
};

static const luaL_Reg functions[] = {
    {"no_grad", m_no_grad}, {"enable_grad", m_enable_grad}, {"set_grad_enabled", m_set_grad_enabled},
    {"is_grad_enabled", m_is_grad_enabled}, {"_autograd_grad", m_autograd_grad},
    {"_autograd_backward", m_autograd_backward},
    {"_set_anomaly", m_set_anomaly}, {"detach", t_detach},
    {"_autograd_function", m_autograd_function}, {"_autograd_clock", m_autograd_clock},
    {"_autograd_region_leaves", m_autograd_region_leaves}, {"_queue_callback", m_queue_callback},
    {NULL, NULL},
};

void emlua_open_autograd(lua_State *L) { emlua_register(L, methods, functions); }
