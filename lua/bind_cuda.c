/* bind_cuda.c — ember.cuda, ember.backends.cuda / cudnn / mps / cpu:
 *   ember.cuda.is_available() -> bool [, reason]
 *   ember.cuda.device_count(), ember.cuda.get_device_name([i])
 *   ember.cuda.synchronize([i])
 *   ember.cuda.memory_allocated([i]), memory_reserved, max_memory_allocated,
 *   max_memory_reserved, reset_peak_memory_stats, empty_cache,
 *   memory_stats([i]) -> table, memory_summary([i]) -> string
 *   ember.cuda.Event([{enable_timing = true}]) with :record(), :synchronize(),
 *   :elapsed_time(other) (milliseconds)
 *   ember.backends.cuda.matmul.allow_tf32, ember.backends.cudnn.allow_tf32 /
 *   deterministic / benchmark / enabled (read and assign), cudnn.is_available(),
 *   ember.backends.mps.is_available() / is_built() (false); ember._deterministic
 *   (algorithms, fill_uninitialized_memory: settings.lua and ember.utils.deterministic)
 *   ember.cuda.CUDAGraph() with :capture_begin([pool | opts]), :capture_end(),
 *   :replay(), :reset(), :pool(); ember.cuda.graph(g, fn [, opts]) and its
 *   guard form `local _ <close> = ember.cuda.graph(g [, opts])`;
 *   ember.cuda.graph_pool_handle([i]), ember.cuda.is_current_stream_capturing([i])
 *   ember.backends.cpu.get_cpu_capability() -> "AVX512" | "AVX2" | "DEFAULT"
 *   (PyTorch's), ember.backends.cpu.blas_core() -> the kernel set OpenBLAS
 *   runs, "Cooperlake", "Haswell", ... (opens OpenBLAS if not yet open)
 * Device arguments are an index (0-based, as PyTorch's cuda:N) or a device
 * string "cuda:N". Nothing here loads the CUDA backend until it is called. */
#include "binding.h"

#include <stdio.h>
#include <string.h>

static const char EVENT_MT[] = "ember.cuda.Event";
static const char GRAPH_MT[] = "ember.cuda.CUDAGraph";
static const char POOL_MT[] = "ember.cuda.graph_pool_handle";
static const char GUARD_MT[] = "ember.cuda.graph_guard";

/* a device argument (emlua_cuda_index) that names a device present */
static int check_device(lua_State *L, int idx, const char *op)
{
    int index = emlua_cuda_index(L, idx, op);
    if (em_cuda_check_device(index)) return emlua_fail(L);
    return index;
}

/* ember.cuda.is_initialized(): whether CUDA has been loaded in this process
 * (torch.cuda.is_initialized); asking never loads it. */
static int is_initialized(lua_State *L)
{
    lua_pushboolean(L, em_cuda_is_initialized());
    return 1;
}

static int is_available(lua_State *L)
{
    int n = em_cuda_device_count();
    lua_pushboolean(L, n > 0);
    if (n > 0) return 1;
    lua_pushstring(L, em_error());
    return 2;
}

static int device_count(lua_State *L)
{
    int n = em_cuda_device_count();
    lua_pushinteger(L, n < 0 ? 0 : n);
    return 1;
}

static int get_device_name(lua_State *L)
{
    int i = check_device(L, 1, "ember.cuda.get_device_name");
    char buf[256];
    if (em_cuda_device_name(i, buf, sizeof buf)) return emlua_fail(L);
    lua_pushstring(L, buf);
    return 1;
}

static int synchronize(lua_State *L)
{
    int i = check_device(L, 1, "ember.cuda.synchronize");
    if (em_synchronize((em_device){EM_CUDA, i})) return emlua_fail(L);
    if (emlua_nan_stop) emlua_nan_poll(L);
    return 0;
}

static em_memory_stats stats_of(lua_State *L, const char *op)
{
    em_memory_stats s;
    int i = check_device(L, 1, op);
    if (em_get_memory_stats((em_device){EM_CUDA, i}, &s)) emlua_fail(L);
    return s;
}

/* ember.cuda.NAME([device]) -> one field of the device's memory statistics */
#define STAT_FUNCTION(NAME, FIELD)                                                  \
    static int NAME(lua_State *L)                                                   \
    {                                                                               \
        lua_pushinteger(L, (lua_Integer)stats_of(L, "ember.cuda." #NAME).FIELD);    \
        return 1;                                                                   \
    }
STAT_FUNCTION(memory_allocated, allocated)
STAT_FUNCTION(memory_reserved, reserved)
STAT_FUNCTION(max_memory_allocated, peak_allocated)
STAT_FUNCTION(max_memory_reserved, peak_reserved)

static int reset_peak_memory_stats(lua_State *L)
{
    int i = check_device(L, 1, "ember.cuda.reset_peak_memory_stats");
    if (em_reset_peak_memory_stats((em_device){EM_CUDA, i})) return emlua_fail(L);
    return 0;
}

static int empty_cache(lua_State *L)
{
    /* what only the collector still holds goes first, as on an out-of-memory */
    lua_gc(L, LUA_GCCOLLECT);
    int i = check_device(L, 1, "ember.cuda.empty_cache");
    if (em_empty_cache((em_device){EM_CUDA, i})) return emlua_fail(L);
    return 0;
}

static int memory_stats(lua_State *L)
{
    em_memory_stats s = stats_of(L, "ember.cuda.memory_stats");
    lua_createtable(L, 0, 9);
    const struct { const char *name; uint64_t v; } f[] = {
        {"allocated_bytes", s.allocated}, {"reserved_bytes", s.reserved},
        {"peak_allocated_bytes", s.peak_allocated}, {"peak_reserved_bytes", s.peak_reserved},
        {"alloc_calls", s.alloc_calls}, {"free_calls", s.free_calls},
        {"device_mallocs", s.device_mallocs}, {"device_frees", s.device_frees}, {"num_ooms", s.num_ooms},
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        lua_pushinteger(L, (lua_Integer)f[k].v);
        lua_setfield(L, -2, f[k].name);
    }
    return 1;
}

static int memory_summary(lua_State *L)
{
    int i = check_device(L, 1, "ember.cuda.memory_summary");
    em_memory_stats s;
    if (em_get_memory_stats((em_device){EM_CUDA, i}, &s)) return emlua_fail(L);
    char name[256] = "";
    em_cuda_device_name(i, name, sizeof name);
    double mib = 1048576.0;
    char buf[768];
    snprintf(buf, sizeof buf,
             "cuda:%d (%s)\n"
             "  allocated   %.2f MiB (peak %.2f MiB)\n"
             "  reserved    %.2f MiB (peak %.2f MiB)\n"
             "  allocations %llu, frees %llu; device mallocs %llu, frees %llu; out-of-memory %llu",
             i, name, s.allocated / mib, s.peak_allocated / mib, s.reserved / mib, s.peak_reserved / mib,
             (unsigned long long)s.alloc_calls, (unsigned long long)s.free_calls,
             (unsigned long long)s.device_mallocs, (unsigned long long)s.device_frees,
             (unsigned long long)s.num_ooms);
    lua_pushstring(L, buf);
    return 1;
}

/* ---- events ------------------------------------------------------------------ */

static em_event **check_event(lua_State *L, const char *op)
{
    em_event **e = luaL_testudata(L, 1, EVENT_MT);
    if (!e) emlua_typeerror(L, 1, op, "a cuda.Event");
    if (!*e) emlua_argerror(L, 1, op, "the event was destroyed");
    return e;
}

static int event_new(lua_State *L)
{
    int i = 0;
    if (lua_type(L, 1) == LUA_TTABLE) {
        lua_getfield(L, 1, "device");
        if (!lua_isnil(L, -1)) i = check_device(L, lua_gettop(L), "ember.cuda.Event");
        lua_pop(L, 1);
    } else if (!lua_isnoneornil(L, 1)) {
        return emlua_typeerror(L, 1, "ember.cuda.Event", "an options table");
    }
    em_event **e = lua_newuserdatauv(L, sizeof *e, 0);
    *e = NULL;
    luaL_setmetatable(L, EVENT_MT);
    *e = em_event_create((em_device){EM_CUDA, i});
    if (!*e) return emlua_fail(L);
    return 1;
}

static int event_record(lua_State *L)
{
    em_event **e = check_event(L, "Event:record");
    return emlua_push_self(L, em_event_record(*e));
}

static int event_synchronize(lua_State *L)
{
    em_event **e = check_event(L, "Event:synchronize");
    if (em_event_synchronize(*e)) return emlua_fail(L);
    return 0;
}

static int event_elapsed(lua_State *L)
{
    em_event **a = check_event(L, "Event:elapsed_time");
    em_event **b = luaL_testudata(L, 2, EVENT_MT);
    if (!b || !*b) return emlua_typeerror(L, 2, "Event:elapsed_time", "a cuda.Event");
    float ms = 0;
    if (em_event_synchronize(*b) || em_event_elapsed_ms(*a, *b, &ms)) return emlua_fail(L);
    lua_pushnumber(L, ms);
    return 1;
}

static int event_gc(lua_State *L)
{
    em_event_destroy(emlua_unbox(L, 1, EVENT_MT));
    return 0;
}

/* ---- CUDA graphs ---------------------------------------------------------------- */

typedef struct graph_ud {
    em_graph *g;        /* NULL: nothing captured (new or reset) */
} graph_ud;

static graph_ud *check_graph(lua_State *L, int idx, const char *op)
{
    graph_ud *g = luaL_testudata(L, idx, GRAPH_MT);
    if (!g) emlua_typeerror(L, idx, op, "a cuda.CUDAGraph");
    return g;
}

static em_graph_pool **test_pool(lua_State *L, int idx)
{
    em_graph_pool **p = luaL_testudata(L, idx, POOL_MT);
    return p && *p ? p : NULL;
}

static int graph_new(lua_State *L)
{
    if (em_cuda_check_device(0)) {
        char why[600];
        snprintf(why, sizeof why, "%s", em_error());
        return luaL_error(L, "ember.cuda.CUDAGraph: %s", why);
    }
    graph_ud *g = lua_newuserdatauv(L, sizeof *g, 0);
    g->g = NULL;
    luaL_setmetatable(L, GRAPH_MT);
    return 1;
}

/* The capture's device and pool from the argument at idx: nil, a pool
 * handle, or {pool = handle, device = i}. */
static const em_graph_pool *capture_args(lua_State *L, int idx, const char *op, int *device)
{
    const em_graph_pool *pool = NULL;
    *device = 0;
    if (lua_isnoneornil(L, idx)) return NULL;
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_getfield(L, idx, "pool");
        if (!lua_isnil(L, -1)) {
            em_graph_pool **p = test_pool(L, -1);
            if (!p) return emlua_argerror(L, idx, op, "pool: expected a handle from ember.cuda.graph_pool_handle() "
                                                        "or g:pool(), got %s", luaL_typename(L, -1)), NULL;
            pool = *p;
            *device = em_graph_pool_device(pool);
        }
        lua_getfield(L, idx, "device");
        if (!lua_isnil(L, -1)) {
            int d = check_device(L, lua_gettop(L), op);
            if (pool && d != *device)
                return emlua_argerror(L, idx, op, "the pool belongs to cuda:%d, not cuda:%d", *device, d), NULL;
            *device = d;
        }
        lua_pop(L, 2);
        return pool;
    }
    em_graph_pool **p = test_pool(L, idx);
    if (!p) return emlua_typeerror(L, idx, op, "a pool handle or an options table"), NULL;
    *device = em_graph_pool_device(*p);
    return *p;
}

static void begin_capture(lua_State *L, graph_ud *g, int optidx, const char *op)
{
    int device;
    const em_graph_pool *pool = capture_args(L, optidx, op, &device);
    if (g->g) luaL_error(L, "%s: the graph already holds a capture; reset() it first", op);
    g->g = em_graph_begin(device, pool);
    if (!g->g) emlua_fail(L);
}

/* Ends g's capture; on failure the graph is reset and the error raised. */
static void end_capture(lua_State *L, graph_ud *g, const char *op)
{
    if (!g->g) luaL_error(L, "%s: no capture under way (capture_begin starts one)", op);
    if (em_graph_end(g->g) == 0) return;
    char why[800];
    snprintf(why, sizeof why, "%s", em_error());
    em_graph_destroy(g->g);
    g->g = NULL;
    em_set_error("%s", why);
    emlua_fail(L);
}

static int graph_capture_begin(lua_State *L)
{
    begin_capture(L, check_graph(L, 1, "CUDAGraph:capture_begin"), 2, "CUDAGraph:capture_begin");
    return 0;
}

static int graph_capture_end(lua_State *L)
{
    end_capture(L, check_graph(L, 1, "CUDAGraph:capture_end"), "CUDAGraph:capture_end");
    return 0;
}

static int graph_replay(lua_State *L)
{
    graph_ud *g = check_graph(L, 1, "CUDAGraph:replay");
    if (!g->g) return luaL_error(L, "CUDAGraph:replay: nothing captured (capture a step with ember.cuda.graph first)");
    if (em_graph_replay(g->g)) return emlua_fail(L);
    return 0;
}

static int graph_reset(lua_State *L)
{
    graph_ud *g = check_graph(L, 1, "CUDAGraph:reset");
    em_graph_destroy(g->g);
    g->g = NULL;
    return 0;
}

static int push_pool(lua_State *L, em_graph_pool *p)
{
    if (!p) return emlua_fail(L);
    em_graph_pool **u = lua_newuserdatauv(L, sizeof *u, 0);
    *u = p;
    luaL_setmetatable(L, POOL_MT);
    return 1;
}

static int graph_pool(lua_State *L)
{
    graph_ud *g = check_graph(L, 1, "CUDAGraph:pool");
    if (!g->g) return luaL_error(L, "CUDAGraph:pool: nothing captured: the graph has no pool yet");
    return push_pool(L, em_graph_pool_of(g->g));
}

static int graph_gc(lua_State *L)
{
    graph_ud *g = luaL_checkudata(L, 1, GRAPH_MT);
    em_graph_destroy(g->g);
    g->g = NULL;
    return 0;
}

static int graph_tostring(lua_State *L)
{
    graph_ud *g = luaL_checkudata(L, 1, GRAPH_MT);
    if (g->g) lua_pushfstring(L, "cuda.CUDAGraph(cuda:%d)", em_graph_device(g->g));
    else lua_pushstring(L, "cuda.CUDAGraph(empty)");
    return 1;
}

static int pool_handle(lua_State *L)
{
    int i = check_device(L, 1, "ember.cuda.graph_pool_handle");
    return push_pool(L, em_graph_pool_new(i, NULL));
}

static int pool_gc(lua_State *L)
{
    em_graph_pool_release(emlua_unbox(L, 1, POOL_MT));
    return 0;
}

/* ember.cuda.graph(g, fn [, opts]) captures fn() into g; without fn it
 * begins the capture and returns a guard whose closing ends it (or, when
 * leaving by an error, discards it). */
static int graph_capture(lua_State *L)
{
    const char *op = "ember.cuda.graph";
    graph_ud *g = check_graph(L, 1, op);
    bool has_fn = lua_isfunction(L, 2);
    if (!has_fn && !lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TTABLE && !test_pool(L, 2))
        return emlua_typeerror(L, 2, op, "a function, an options table or a pool handle");
    /* what only the collector holds is freed before, not during, the capture
     * (a block freed during it stays held by the graph's pool) */
    lua_gc(L, LUA_GCCOLLECT);
    begin_capture(L, g, has_fn ? 3 : 2, op);
    if (!has_fn) {
        lua_newuserdatauv(L, 0, 1);
        lua_pushvalue(L, 1);
        lua_setiuservalue(L, -2, 1);
        luaL_setmetatable(L, GUARD_MT);
        return 1;
    }
    lua_pushvalue(L, 2);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        em_graph_destroy(g->g);
        g->g = NULL;
        return lua_error(L);
    }
    end_capture(L, g, op);
    return 0;
}

static int guard_close(lua_State *L)
{
    lua_getiuservalue(L, 1, 1);         /* stays on the stack: the graph lives while this runs */
    graph_ud *g = luaL_testudata(L, -1, GRAPH_MT);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, 1);         /* a second close does nothing */
    if (!g || !g->g) return 0;
    if (!lua_isnoneornil(L, 2)) {       /* leaving by an error: that error is the one to see */
        em_graph_destroy(g->g);
        g->g = NULL;
        return 0;
    }
    end_capture(L, g, "ember.cuda.graph");
    return 0;
}

static int is_capturing(lua_State *L)
{
    int i = check_device(L, 1, "ember.cuda.is_current_stream_capturing");
    lua_pushboolean(L, em_cuda_is_capturing(i));
    return 1;
}

/* ---- settings read and assigned as fields ------------------------------------------
 * PyTorch's torch.backends.* switches. Each field of a proxy is an engine flag
 * (em_backend_flag), set for both device types: the CPU side reads it too, and
 * a CUDA backend loaded later is handed it. A proxy's upvalues: its settings
 * and its name (for messages). */
typedef struct setting {
    const char *key;
    int flag;           /* em_backend_flag; ALWAYS_ON: reads true, assigning false is an error */
} setting;
#define ALWAYS_ON (-1)

static const setting matmul_settings[] = {{"allow_tf32", EM_FLAG_ALLOW_TF32}, {NULL, 0}};
static const setting cudnn_settings[] = {
    {"allow_tf32", EM_FLAG_CUDNN_TF32}, {"deterministic", EM_FLAG_CUDNN_DETERMINISTIC},
    {"benchmark", EM_FLAG_CUDNN_BENCHMARK}, {"enabled", ALWAYS_ON}, {NULL, 0},
};
/* use_deterministic_algorithms and ember.utils.deterministic read and set these */
static const setting deterministic_settings[] = {
    {"algorithms", EM_FLAG_DETERMINISTIC}, {"fill_uninitialized_memory", EM_FLAG_FILL_UNINITIALIZED}, {NULL, 0},
};

static const setting *find_setting(lua_State *L, const char *k)
{
    for (const setting *s = lua_touserdata(L, lua_upvalueindex(1)); s->key; s++)
        if (strcmp(s->key, k) == 0) return s;
    return NULL;
}

static int setting_index(lua_State *L)
{
    const setting *s = lua_type(L, 2) == LUA_TSTRING ? find_setting(L, lua_tostring(L, 2)) : NULL;
    if (!s) return 0;
    lua_pushboolean(L, s->flag == ALWAYS_ON || em_get_backend_flag(EM_CUDA, s->flag));
    return 1;
}

static int setting_newindex(lua_State *L)
{
    const char *proxy = lua_tostring(L, lua_upvalueindex(2));
    const char *k = luaL_checkstring(L, 2);
    const setting *s = find_setting(L, k);
    if (!s) {
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (const setting *t = lua_touserdata(L, lua_upvalueindex(1)); t->key; t++) {
            if (t != lua_touserdata(L, lua_upvalueindex(1))) luaL_addstring(&b, ", ");
            luaL_addstring(&b, t->key);
        }
        luaL_pushresult(&b);
        return luaL_error(L, "%s: no setting '%s' (there is %s)", proxy, k, lua_tostring(L, -1));
    }
    if (lua_type(L, 3) != LUA_TBOOLEAN)
        return luaL_error(L, "%s.%s: expected a boolean, got %s", proxy, k, luaL_typename(L, 3));
    bool on = lua_toboolean(L, 3);
    if (s->flag == ALWAYS_ON) {
        if (!on)
            return luaL_error(L, "%s.%s = false: ember's CUDA convolutions are cuDNN's, there is no other "
                                 "implementation to fall back on", proxy, k);
        return 0;
    }
    em_set_backend_flag(EM_CPU, s->flag, on);
    em_set_backend_flag(EM_CUDA, s->flag, on);
    return 0;
}

/* Pushes a proxy table for `settings`, with `fns` (may be NULL) as its own fields. */
static void push_settings(lua_State *L, const char *name, const setting *settings, const luaL_Reg *fns)
{
    lua_newtable(L);
    if (fns) luaL_setfuncs(L, fns, 0);
    lua_createtable(L, 0, 2);
    lua_pushlightuserdata(L, (void *)settings);
    lua_pushstring(L, name);
    lua_pushcclosure(L, setting_index, 2);
    lua_setfield(L, -2, "__index");
    lua_pushlightuserdata(L, (void *)settings);
    lua_pushstring(L, name);
    lua_pushcclosure(L, setting_newindex, 2);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
}

/* cuDNN comes with the CUDA backend library: it is there when the backend is */
static int cudnn_is_available(lua_State *L)
{
    lua_pushboolean(L, em_cuda_device_count() > 0);
    return 1;
}

/* ember.backends.mps: Apple's GPUs, never present in ember (a port's device choice asks) */
static int mps_never(lua_State *L)
{
    lua_pushboolean(L, false);
    return 1;
}

/* ---- ember.backends.cpu ---------------------------------------------------------- */

static int backends_cpu_capability(lua_State *L)
{
    lua_pushstring(L, em_cpu_capability());
    return 1;
}

static int backends_cpu_blas_core(lua_State *L)
{
    const char *core = em_cpu_blas_core();
    if (!core) return emlua_fail(L);
    lua_pushstring(L, core);
    return 1;
}

static const luaL_Reg backends_cpu_funcs[] = {
    {"get_cpu_capability", backends_cpu_capability}, {"blas_core", backends_cpu_blas_core},
    {NULL, NULL},
};

/* On a failed device allocation: a full collection frees the tensors only
 * the collector still holds (the engine then empties the cache and retries). */
static void collect_on_oom(void *ctx)
{
    lua_gc((lua_State *)ctx, LUA_GCCOLLECT);
}

static const luaL_Reg cuda_funcs[] = {
    {"is_available", is_available}, {"is_initialized", is_initialized}, {"device_count", device_count}, {"get_device_name", get_device_name},
    {"synchronize", synchronize}, {"memory_allocated", memory_allocated}, {"memory_reserved", memory_reserved},
    {"max_memory_allocated", max_memory_allocated}, {"max_memory_reserved", max_memory_reserved},
    {"reset_peak_memory_stats", reset_peak_memory_stats}, {"empty_cache", empty_cache},
    {"memory_stats", memory_stats}, {"memory_summary", memory_summary}, {"Event", event_new},
    {"CUDAGraph", graph_new}, {"graph", graph_capture}, {"graph_pool_handle", pool_handle},
    {"is_current_stream_capturing", is_capturing},
    {NULL, NULL},
};

static const luaL_Reg graph_methods[] = {
    {"capture_begin", graph_capture_begin}, {"capture_end", graph_capture_end}, {"replay", graph_replay},
    {"reset", graph_reset}, {"pool", graph_pool},
    {NULL, NULL},
};

static const luaL_Reg event_methods[] = {
    {"record", event_record}, {"synchronize", event_synchronize}, {"elapsed_time", event_elapsed},
    {NULL, NULL},
};

void emlua_open_cuda(lua_State *L)
{
    /* the module table is at the top of the stack */
    emlua_new_class(L, EVENT_MT, event_methods, event_gc, NULL, NULL);
    emlua_new_class(L, GRAPH_MT, graph_methods, graph_gc, NULL, graph_tostring);
    emlua_new_class(L, POOL_MT, NULL, pool_gc, NULL, NULL);
    emlua_new_class(L, GUARD_MT, NULL, NULL, guard_close, NULL);
    luaL_newlib(L, cuda_funcs);
    lua_setfield(L, -2, "cuda");

    lua_newtable(L);                    /* backends */
    lua_newtable(L);                    /* backends.cuda */
    push_settings(L, "ember.backends.cuda.matmul", matmul_settings, NULL);
    lua_setfield(L, -2, "matmul");
    lua_setfield(L, -2, "cuda");
    static const luaL_Reg cudnn_funcs[] = {{"is_available", cudnn_is_available}, {NULL, NULL}};
    push_settings(L, "ember.backends.cudnn", cudnn_settings, cudnn_funcs);
    lua_setfield(L, -2, "cudnn");
    static const luaL_Reg mps_funcs[] = {{"is_available", mps_never}, {"is_built", mps_never}, {NULL, NULL}};
    luaL_newlib(L, mps_funcs);
    lua_setfield(L, -2, "mps");
    luaL_newlib(L, backends_cpu_funcs);  /* backends.cpu */
    lua_setfield(L, -2, "cpu");
    lua_setfield(L, -2, "backends");
    push_settings(L, "ember.utils.deterministic", deterministic_settings, NULL);
    lua_setfield(L, -2, "_deterministic");

    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    em_set_oom_handler(collect_on_oom, lua_tothread(L, -1));
    lua_pop(L, 1);
}
