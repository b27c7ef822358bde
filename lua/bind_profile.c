/* bind_profile.c — the C half of ember.profiler (lua/ember/profiler.lua):
 * the backward pass's nodes timed one by one, and the bytes held in
 * storages, which the Lua half reads around each op.
 *   ember._profile_nodes(on)    start (clearing) or stop timing backward nodes
 *   ember._profile_take()       -> names, begins, ends: the nodes timed since
 *                                  the last take (seconds on ember.wall_time's clock)
 *   ember._bytes_in_use()       -> bytes in CPU storages, bytes in CUDA storages
 *   ember._range_push(name), ember._range_pop()   an NVTX range around an op
 *                                  (nothing until the CUDA backend is loaded)
 * While nodes are timed each one is an NVTX range too, so Nsight Systems
 * shows the backward pass node by node. */
#include "binding.h"
#include "../engine/debug.h"

#include <stdlib.h>

typedef struct node_event {
    const char *name;       /* the node's static name */
    double begin, end;
} node_event;

static node_event *events;
static size_t nevents, cap;
static bool overflow;

/* Nodes do not nest within one pass, but a node's apply may run a pass of
 * its own (a custom function's backward calling ember.autograd.grad): an end
 * closes the latest event still open of that name. */
static void node_hook(const char *name, bool begin)
{
    double t = emlua_now();
    if (begin) em_range_push(name);
    else em_range_pop();
    if (!begin) {
        for (size_t i = nevents; i > 0; i--)
            if (events[i - 1].name == name && events[i - 1].end < 0) { events[i - 1].end = t; return; }
        return;
    }
    if (nevents == cap) {
        size_t ncap = cap ? cap * 2 : 1024;
        node_event *grown = ncap < ((size_t)1 << 24) ? realloc(events, ncap * sizeof *grown) : NULL;
        if (!grown) { overflow = true; return; }
        events = grown;
        cap = ncap;
    }
    events[nevents++] = (node_event){name, t, -1};
}

static int m_profile_nodes(lua_State *L)
{
    bool on = lua_toboolean(L, 1);
    nevents = 0;
    overflow = false;
    em_set_node_hook(on ? node_hook : NULL);
    if (!on) { free(events); events = NULL; cap = 0; }
    return 0;
}

static int m_profile_take(lua_State *L)
{
    lua_createtable(L, (int)nevents, 0);
    lua_createtable(L, (int)nevents, 0);
    lua_createtable(L, (int)nevents, 0);
    for (size_t i = 0; i < nevents; i++) {
        lua_pushstring(L, events[i].name);
        lua_rawseti(L, -4, (lua_Integer)i + 1);
        lua_pushnumber(L, events[i].begin);
        lua_rawseti(L, -3, (lua_Integer)i + 1);
        lua_pushnumber(L, events[i].end >= 0 ? events[i].end : events[i].begin);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    nevents = 0;
    lua_pushboolean(L, overflow);
    overflow = false;
    return 4;
}

static int m_range_push(lua_State *L)
{
    em_range_push(luaL_checkstring(L, 1));
    return 0;
}

static int m_range_pop(lua_State *L)
{
    (void)L;
    em_range_pop();
    return 0;
}

static int m_bytes_in_use(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)em_bytes_in_use(EM_CPU));
    lua_pushinteger(L, (lua_Integer)em_bytes_in_use(EM_CUDA));
    return 2;
}

void emlua_open_profile(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_profile_nodes", m_profile_nodes},
        {"_profile_take", m_profile_take},
        {"_bytes_in_use", m_bytes_in_use},
        {"_range_push", m_range_push},
        {"_range_pop", m_range_pop},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}
