/* bind_distributed.c — the C half of ember.distributed (lua/ember/distributed.lua):
 * ember._distributed() returns a table of functions over engine/distributed.h,
 * made once per state. The Lua half checks arguments and positions errors;
 * here ranks are 0-based, ops are names ("sum", ...), and an async call
 * returns a Work userdata (nil for a blocking one). */
#include "binding.h"
#include "../engine/distributed.h"

#define WORK_MT "ember.distributed.Work"

static em_work **check_work(lua_State *L)
{
    return luaL_checkudata(L, 1, WORK_MT);
}

static int work_wait(lua_State *L)
{
    em_work **w = check_work(L);
    if (*w && em_work_wait(*w)) return emlua_fail(L);
    lua_pushboolean(L, 1);
    return 1;
}

static int work_is_completed(lua_State *L)
{
    em_work **w = check_work(L);
    bool done = true;
    if (*w && em_work_test(*w, &done)) return emlua_fail(L);
    lua_pushboolean(L, done);
    return 1;
}

/* A work dropped while running is waited for: its buffers are in use. */
/* the sender's global rank of a completed recv/irecv (PyTorch's
 * Work._source_rank) */
static int work_source_rank(lua_State *L)
{
    em_work **w = check_work(L);
    int rank = -1;
    if (!*w) return luaL_error(L, "Work._source_rank: the Work was freed");
    if (em_work_source(*w, &rank)) return emlua_fail(L);
    lua_pushinteger(L, rank);
    return 1;
}

static int work_gc(lua_State *L)
{
    em_work **w = check_work(L);
    em_work_free(*w);
    *w = NULL;
    return 0;
}

static int work_tostring(lua_State *L)
{
    em_work **w = check_work(L);
    bool done = true;
    if (*w && em_work_test(*w, &done)) done = true;
    lua_pushfstring(L, "Work(%s)", done ? "completed" : "running");
    return 1;
}

/* After a collective: async pushes its Work (nil on a rank outside the
 * group: nothing ran), a blocking call nothing. (rc is a separate statement
 * at each caller: w is only set by the call.) */
static int finish(lua_State *L, int rc, em_work *w, bool async)
{
    if (rc) return emlua_fail(L);
    if (!async) return 0;
    if (!w) {
        lua_pushnil(L);
        return 1;
    }
    em_work **u = lua_newuserdatauv(L, sizeof *u, 0);
    *u = w;
    luaL_setmetatable(L, WORK_MT);
    return 1;
}

#define ASYNC(L, i) (lua_toboolean(L, i))
/* the group id (0: the default group) */
#define GROUP(L, i) ((int)luaL_optinteger(L, i, 0))

static em_comm_op check_op(lua_State *L, int i)
{
    em_comm_op op;
    if (em_comm_op_parse(luaL_checkstring(L, i), &op)) emlua_fail(L);
    return op;
}

static int d_init(lua_State *L)
{
    if (em_dist_init(luaL_checkstring(L, 1), lua_toboolean(L, 2), luaL_checknumber(L, 3))) return emlua_fail(L);
    lua_pushinteger(L, em_dist_rank());
    lua_pushinteger(L, em_dist_world_size());
    return 2;
}

static int d_is_initialized(lua_State *L)
{
    lua_pushboolean(L, em_dist_is_initialized());
    return 1;
}

static int d_rank(lua_State *L)
{
    lua_pushinteger(L, em_dist_rank());
    lua_pushinteger(L, em_dist_world_size());
    const char *b = em_dist_backend();
    if (b) lua_pushstring(L, b);
    else lua_pushnil(L);
    return 3;
}

static int d_destroy(lua_State *L)
{
    if (em_dist_destroy()) return emlua_fail(L);
    return 0;
}

static int d_abort(lua_State *L)
{
    em_dist_abort((int)luaL_optinteger(L, 1, 1));
    return 0;
}

static int d_all_reduce(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 3);
    int rc = em_dist_all_reduce(emlua_check(L, 1, "all_reduce"), check_op(L, 2), GROUP(L, 4), async ? &w : NULL);
    return finish(L, rc, w, async);
}

/* all_reduce(t) with no options, the call a training loop makes most, runs
 * here without a Lua frame in between: at small sizes the wrapper's frames
 * cost a fifth of the collective. Called straight from the user's code, so an
 * engine error already points at the user's line. Every other form goes to
 * the Lua function (upvalue 1), which checks the options. */
static int d_all_reduce_front(lua_State *L)
{
    em_tensor *t = lua_gettop(L) == 1 ? emlua_test(L, 1) : NULL;
    if (!t) {
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
        return lua_gettop(L);
    }
    if (em_dist_all_reduce(t, EM_COMM_SUM, 0, NULL)) return emlua_fail(L);
    return 0;
}

static int d_front(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_pushcclosure(L, d_all_reduce_front, 1);
    return 1;
}

static int d_reduce(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 4);
    int dst = (int)luaL_checkinteger(L, 2);
    int rc = em_dist_reduce(emlua_check(L, 1, "reduce"), dst, check_op(L, 3), GROUP(L, 5), async ? &w : NULL);
    return finish(L, rc, w, async);
}

static int d_broadcast(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 3);
    int src = (int)luaL_checkinteger(L, 2);
    int rc = em_dist_broadcast(emlua_check(L, 1, "broadcast"), src, GROUP(L, 4), async ? &w : NULL);
    return finish(L, rc, w, async);
}

/* The tensors of the list at idx, in a userdata array that lives on the
 * stack until the call returns; *n gets their count. */
static em_tensor **check_list(lua_State *L, int idx, const char *op, int *n)
{
    luaL_checktype(L, idx, LUA_TTABLE);
    *n = (int)luaL_len(L, idx);
    em_tensor **ts = lua_newuserdatauv(L, (size_t)(*n > 0 ? *n : 1) * sizeof *ts, 0);
    for (int i = 0; i < *n; i++) {
        lua_rawgeti(L, idx, i + 1);
        ts[i] = emlua_test(L, -1);
        if (!ts[i]) luaL_error(L, "%s: element %d of the tensor list is a %s, expected a tensor", op, i + 1,
                               luaL_typename(L, -1));
        lua_pop(L, 1);   /* the list keeps it alive */
    }
    return ts;
}

static int d_all_gather(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 3);
    int n;
    em_tensor **outs = check_list(L, 1, "all_gather", &n);
    int rc = em_dist_all_gather(outs, n, emlua_check(L, 2, "all_gather"), GROUP(L, 4), async ? &w : NULL);
    return finish(L, rc, w, async);
}

/* all_gather_into_tensor(out, t, async, group) and reduce_scatter_tensor(out,
 * input, op, async, group): one tensor into another */
static int tensor_to_tensor(lua_State *L, const char *op, bool reduction)
{
    em_work *w = NULL;
    int at = reduction ? 4 : 3;     /* the async flag; the group follows */
    bool async = ASYNC(L, at);
    em_tensor *out = emlua_check(L, 1, op), *in = emlua_check(L, 2, op);
    int rc = reduction ? em_dist_reduce_scatter_tensor(out, in, check_op(L, 3), GROUP(L, at + 1), async ? &w : NULL)
                       : em_dist_all_gather_into_tensor(out, in, GROUP(L, at + 1), async ? &w : NULL);
    return finish(L, rc, w, async);
}

static int d_all_gather_into_tensor(lua_State *L) { return tensor_to_tensor(L, "all_gather_into_tensor", false); }

static int d_reduce_scatter(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 4);
    int n;
    em_tensor **ins = check_list(L, 2, "reduce_scatter", &n);
    int rc = em_dist_reduce_scatter(emlua_check(L, 1, "reduce_scatter"), ins, n, check_op(L, 3), GROUP(L, 5),
                                    async ? &w : NULL);
    return finish(L, rc, w, async);
}

static int d_reduce_scatter_tensor(lua_State *L) { return tensor_to_tensor(L, "reduce_scatter_tensor", true); }

static int d_barrier(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 1);
    int rc = em_dist_barrier(GROUP(L, 2), async ? &w : NULL);
    return finish(L, rc, w, async);
}

static int d_send(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 4);
    int peer = (int)luaL_checkinteger(L, 2), tag = (int)luaL_checkinteger(L, 3);
    int rc = em_dist_send(emlua_check(L, 1, "send"), peer, tag, GROUP(L, 5), async ? &w : NULL);
    return finish(L, rc, w, async);
}

/* peer -1: any source. Blocking, returns the sender's global rank (-1 on a
 * rank outside the group); async, the Work. */
static int d_recv(lua_State *L)
{
    em_work *w = NULL;
    bool async = ASYNC(L, 4);
    int peer = (int)luaL_checkinteger(L, 2), tag = (int)luaL_checkinteger(L, 3), source = -1;
    int rc = em_dist_recv(emlua_check(L, 1, "recv"), peer, tag, GROUP(L, 5), &source, async ? &w : NULL);
    if (rc || async) return finish(L, rc, w, async);
    lua_pushinteger(L, source);
    return 1;
}

/* new_group(ranks, backend or nil) -> the group's id */
static int d_new_group(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_len(L, 1), id = 0;
    int *ranks = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *ranks, 0);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        ranks[i] = (int)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
    }
    if (em_dist_new_group(ranks, n, luaL_optstring(L, 2, NULL), &id)) return emlua_fail(L);
    lua_pushinteger(L, id);
    return 1;
}

static int d_destroy_group(lua_State *L)
{
    if (em_dist_destroy_group((int)luaL_checkinteger(L, 1))) return emlua_fail(L);
    return 0;
}

/* group_info(id) -> this rank's in it (-1: not a member), its size, its
 * global ranks (a list, 0-based values) */
static int d_group_info(lua_State *L)
{
    int rank, size;
    const int *ranks;
    if (em_dist_group_info((int)luaL_checkinteger(L, 1), &rank, &size, &ranks)) return emlua_fail(L);
    lua_pushinteger(L, rank);
    lua_pushinteger(L, size);
    lua_createtable(L, size, 0);
    for (int i = 0; i < size; i++) {
        lua_pushinteger(L, ranks ? ranks[i] : i);
        lua_rawseti(L, -2, i + 1);
    }
    return 3;
}

static int l_distributed(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"init", d_init},
        {"is_initialized", d_is_initialized},
        {"rank", d_rank},
        {"destroy", d_destroy},
        {"abort", d_abort},
        {"all_reduce", d_all_reduce},
        {"all_reduce_front", d_front},
        {"reduce", d_reduce},
        {"broadcast", d_broadcast},
        {"all_gather", d_all_gather},
        {"all_gather_into_tensor", d_all_gather_into_tensor},
        {"reduce_scatter", d_reduce_scatter},
        {"reduce_scatter_tensor", d_reduce_scatter_tensor},
        {"barrier", d_barrier},
        {"send", d_send},
        {"recv", d_recv},
        {"new_group", d_new_group},
        {"destroy_group", d_destroy_group},
        {"group_info", d_group_info},
        {NULL, NULL},
    };
    static const luaL_Reg work_methods[] = {
        {"wait", work_wait},
        {"is_completed", work_is_completed},
        {"_source_rank", work_source_rank},
        {NULL, NULL},
    };
    emlua_new_class(L, WORK_MT, work_methods, work_gc, NULL, work_tostring);
    luaL_getmetatable(L, WORK_MT);      /* named "Work" in error messages */
    lua_pushliteral(L, "Work");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);
    luaL_newlib(L, fns);
    return 1;
}

void emlua_open_distributed(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_distributed", l_distributed},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}
