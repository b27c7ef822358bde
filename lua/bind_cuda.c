/* bind_cuda.c — ember.cuda and ember.backends.cuda:
 *   ember.cuda.is_available() -> bool [, reason]
 *   ember.cuda.device_count(), ember.cuda.get_device_name([i])
 *   ember.cuda.synchronize([i])
 *   ember.cuda.memory_allocated([i]), memory_reserved, max_memory_allocated,
 *   max_memory_reserved, reset_peak_memory_stats, empty_cache,
 *   memory_stats([i]) -> table, memory_summary([i]) -> string
 *   ember.cuda.Event([{enable_timing = true}]) with :record(), :synchronize(),
 *   :elapsed_time(other) (milliseconds)
 *   ember.backends.cuda.matmul.allow_tf32 (read and assign)
 * Device arguments are an index (0-based, as PyTorch's cuda:N) or a device
 * string "cuda:N". Nothing here loads the CUDA backend until it is called. */
#include "binding.h"

#include <stdio.h>
#include <string.h>

static const char EVENT_MT[] = "ember.cuda.Event";

static int check_device(lua_State *L, int idx, const char *op)
{
    int index = 0;
    if (lua_type(L, idx) == LUA_TSTRING) {
        em_device d;
        if (em_device_parse(lua_tostring(L, idx), &d) || d.type != EM_CUDA)
            return emlua_argerror(L, idx, op, "expected a CUDA device (\"cuda\" or \"cuda:N\"), got '%s'",
                                  lua_tostring(L, idx));
        index = d.index;
    } else if (!lua_isnoneornil(L, idx)) {
        index = (int)emlua_check_integer(L, idx, op);
    }
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
    return 0;
}

static em_memory_stats stats_of(lua_State *L, const char *op)
{
    em_memory_stats s;
    int i = check_device(L, 1, op);
    if (em_get_memory_stats((em_device){EM_CUDA, i}, &s)) emlua_fail(L);
    return s;
}

static int memory_allocated(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)stats_of(L, "ember.cuda.memory_allocated").allocated);
    return 1;
}

static int memory_reserved(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)stats_of(L, "ember.cuda.memory_reserved").reserved);
    return 1;
}

static int max_memory_allocated(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)stats_of(L, "ember.cuda.max_memory_allocated").peak_allocated);
    return 1;
}

static int max_memory_reserved(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)stats_of(L, "ember.cuda.max_memory_reserved").peak_reserved);
    return 1;
}

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
    if (em_event_record(*e)) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
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
    em_event **e = luaL_checkudata(L, 1, EVENT_MT);
    em_event_destroy(*e);
    *e = NULL;
    return 0;
}

/* ---- ember.backends.cuda.matmul.allow_tf32 ----------------------------------- */

static int matmul_index(lua_State *L)
{
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "allow_tf32") == 0) {
        lua_pushboolean(L, em_get_backend_flag(EM_CUDA, EM_FLAG_ALLOW_TF32));
        return 1;
    }
    return 0;
}

static int matmul_newindex(lua_State *L)
{
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "allow_tf32") != 0)
        return luaL_error(L, "ember.backends.cuda.matmul: no setting '%s' (there is allow_tf32)", k);
    if (lua_type(L, 3) != LUA_TBOOLEAN)
        return luaL_error(L, "ember.backends.cuda.matmul.allow_tf32: expected a boolean, got %s", luaL_typename(L, 3));
    em_set_backend_flag(EM_CUDA, EM_FLAG_ALLOW_TF32, lua_toboolean(L, 3));
    return 0;
}

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
    {NULL, NULL},
};

static const luaL_Reg event_methods[] = {
    {"record", event_record}, {"synchronize", event_synchronize}, {"elapsed_time", event_elapsed},
    {NULL, NULL},
};

void emlua_open_cuda(lua_State *L)
{
    /* the module table is at the top of the stack */
    if (luaL_newmetatable(L, EVENT_MT)) {
        lua_pushcfunction(L, event_gc);
        lua_setfield(L, -2, "__gc");
        luaL_newlib(L, event_methods);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
    luaL_newlib(L, cuda_funcs);
    lua_setfield(L, -2, "cuda");

    lua_newtable(L);                    /* backends */
    lua_newtable(L);                    /* backends.cuda */
    lua_newtable(L);                    /* backends.cuda.matmul: a proxy */
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, matmul_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, matmul_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "matmul");
    lua_setfield(L, -2, "cuda");
    lua_setfield(L, -2, "backends");

    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    em_set_oom_handler(collect_on_oom, lua_tothread(L, -1));
    lua_pop(L, 1);
}
