/* ember.c — the Lua module's entry point (luaopen_ember) and the helpers
 * every binding file shares (argument checks, tensor userdata, errors). */
#include "binding.h"
#include "../engine/debug.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Registry keys (addresses are unique and rawgetp is the fastest lookup). */
static char tensor_mt_key, methods_key, module_key;

/* ---- errors -------------------------------------------------------------- */

/* The engine's error as a Lua error at the caller's line. Messages from
 * helpers that cannot know the user's op (an allocation's "empty: ...", a
 * composed op's broadcast "expand: ..." or "out of memory ...") get the
 * name of the function that was called. */
int emlua_fail(lua_State *L)
{
    const char *msg = em_error();
    luaL_where(L, 1);
    lua_Debug ar;
    size_t skip = strncmp(msg, "empty: ", 7) == 0 ? 7 : strncmp(msg, "expand: ", 8) == 0 ? 8 : 0;
    bool generic = skip || strncmp(msg, "out of memory", 13) == 0;
    if (generic && lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name)
        lua_pushfstring(L, "%s: %s", ar.name, msg + skip);
    else
        lua_pushstring(L, msg);
    lua_concat(L, 2);
    if (strstr(msg, "out of memory")) {
        /* what is left, and (with ember.memory.record_history) who holds the most */
        double host = emlua_host_free_bytes();
        char avail[64] = "";
        if (host >= 0) snprintf(avail, sizeof avail, "; the host has %.1f GB available", host / 1e9);
        lua_pushstring(L, avail);
        emlua_mem_top_lines(L, 5);
        if (lua_rawlen(L, -1) > 0) {
            lua_pushliteral(L, "; the lines holding the most memory: ");
            lua_insert(L, -2);
            lua_concat(L, 2);
        } else {
            lua_pop(L, 1);
            lua_pushliteral(L, " (ember.memory.record_history(true) names the lines holding it)");
        }
        lua_concat(L, 3);
    }
    return lua_error(L);
}

/* Argument number as the user counts it: in a method call (t:op(x)) self is
 * not counted, as luaL_argerror does. */
static int user_arg(lua_State *L, int arg)
{
    lua_Debug ar;
    if (lua_getstack(L, 0, &ar)) {
        lua_getinfo(L, "n", &ar);
        if (ar.namewhat && strcmp(ar.namewhat, "method") == 0) return arg - 1;
    }
    return arg;
}

int emlua_argerror(lua_State *L, int arg, const char *op, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int n = user_arg(L, arg);
    if (n <= 0) return luaL_error(L, "%s: self: %s", op, msg);
    return luaL_error(L, "%s: argument %d: %s", op, n, msg);
}

int emlua_typeerror(lua_State *L, int arg, const char *op, const char *what)
{
    const char *got = emlua_test(L, arg) ? "tensor" : luaL_typename(L, arg);
    if (lua_type(L, arg) == LUA_TNUMBER && lua_isinteger(L, arg) == 0 && strcmp(what, "an integer") == 0)
        got = "a non-integer number";
    return emlua_argerror(L, arg, op, "expected %s, got %s", what, got);
}

/* ---- file names ----------------------------------------------------------- */

/* A C file name ends at its first zero byte, so a Lua string "dir/a\0b"
 * given to open() names "dir/a": a path holding one is refused wherever
 * ember takes a path (through these two functions, from C and from Lua). */
static bool path_problem(lua_State *L, int idx)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    size_t at = strlen(s);
    if (at == len) return false;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "file name contains a zero byte (at byte %d; the system would take it as \"", (int)at + 1);
    luaL_addvalue(&b);
    luaL_addlstring(&b, s, at < 200 ? at : 200);
    luaL_addstring(&b, at < 200 ? "\")" : "...\")");
    luaL_pushresult(&b);
    return true;
}

const char *emlua_check_path(lua_State *L, int idx, const char *op)
{
    if (lua_type(L, idx) != LUA_TSTRING) return emlua_typeerror(L, idx, op, "a file path (string)"), NULL;
    if (lua_rawlen(L, idx) == 0) emlua_argerror(L, idx, op, "empty file name");
    if (path_problem(L, idx)) emlua_argerror(L, idx, op, "%s", lua_tostring(L, -1));
    return lua_tostring(L, idx);
}

void *emlua_unbox(lua_State *L, int idx, const char *mt)
{
    /* the box holds an em_X *: copied as bytes, not read through a void ** */
    char *box = luaL_checkudata(L, idx, mt);
    void *p, *none = NULL;
    memcpy(&p, box, sizeof p);
    memcpy(box, &none, sizeof none);
    return p;
}

char *emlua_string_copy(lua_State *L, int idx, size_t *len)
{
    const char *s = luaL_checklstring(L, idx, len);
    char *copy = lua_newuserdatauv(L, *len + 1, 0);
    memcpy(copy, s, *len + 1);
    return copy;
}

/* ember._path_problem(s): nil for a string fit to be a file name, else what
 * is wrong with it (for the Lua modules: ember.errors.check_path) */
static int l_path_problem(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING) return emlua_typeerror(L, 1, "_path_problem", "a string");
    if (!path_problem(L, 1)) lua_pushnil(L);
    return 1;
}

/* ---- tensors -------------------------------------------------------------- */

/* A tensor's userdata: the engine's tensor (NULL once closed by <close> or
 * collected), then a tag that tells it from any other userdata without
 * looking up its metatable (which took a third of a small op's binding
 * time). No pointer is odd, so the second word of another userdata (a list
 * of two tensors, say) is never the tag; only emlua_push makes these. */
typedef struct tensor_box {
    em_tensor *t;
    uint64_t tag;
} tensor_box;
#define TENSOR_TAG 0x656d6265725f7431ull   /* "ember_t1", odd */

em_tensor *emlua_test(lua_State *L, int idx)
{
    const tensor_box *b = lua_touserdata(L, idx);
    if (!b || lua_rawlen(L, idx) != sizeof *b || b->tag != TENSOR_TAG) return NULL;
    return b->t;
}

em_tensor *emlua_check(lua_State *L, int idx, const char *op)
{
    em_tensor *t = emlua_test(L, idx);
    if (t) return t;
    /* a tensor userdata whose reference was dropped by __close */
    if (luaL_testudata(L, idx, EMLUA_TENSOR)) emlua_argerror(L, idx, op, "the tensor was closed (by <close>)");
    /* x.sum() written for x:sum(): no tensor first in a call not made with ':' */
    if (idx == 1 && user_arg(L, 1) == 1 && !strchr(op, '.'))
        emlua_argerror(L, 1, op, "expected a tensor, got %s: use t:%s() (a method call with ':')",
                       emlua_test(L, 1) ? "tensor" : luaL_typename(L, 1), op);
    emlua_typeerror(L, idx, op, "a tensor");
    return NULL;
}

/* Tensors are small userdata holding large buffers, so Lua's collector does
 * not see the pressure they make, and dropped tensors would pile up until
 * the Lua heap itself grew. We count the bytes of large new storages and run
 * a full collection once they pass a threshold: at least 8 MiB, a quarter
 * of the tensor memory in use (so the cost stays proportional), and eight
 * times the Lua heap (so a big Lua heap is not walked too often). Freed
 * blocks then go back to the backend's cache and the next steps reuse them
 * while they are still in the caches: a loop making a [1024, 1024] float32
 * result per step cycled through 8 such blocks at 32 MiB (x:pow(3) 0.13-0.16
 * ms a step), 2-3 at 8 MiB (0.067-0.078 ms; PyTorch, which frees at once,
 * 0.055); the instruction counts of make bench-instr moved by under 1 %. */
#define GC_MIN_DEBT ((size_t)8 << 20)
static size_t gc_debt;

static void account_memory(lua_State *L, size_t nbytes)
{
    gc_debt += nbytes;
    if (gc_debt < GC_MIN_DEBT) return;
    size_t in_use = em_bytes_in_use(EM_CPU) + em_bytes_in_use(EM_CUDA);
    size_t lua_heap = (size_t)lua_gc(L, LUA_GCCOUNT) * 1024;
    if (gc_debt < in_use / 4 || gc_debt < lua_heap * 8) return;
    gc_debt = 0;
    lua_gc(L, LUA_GCCOLLECT);
}

/* Small tensors have the opposite problem: Lua sees a few dozen bytes of
 * userdata for each, so in a loop of small ops it collects rarely, and tens
 * of thousands of dead tensors (header, storage, autograd node: about half a
 * kilobyte each) wait for it, past the engine's free lists, so that every op
 * went to malloc and touched memory that was no longer in the caches. So
 * every SMALL_PUSHES new tensors the collector takes a step (in the
 * generational mode the shell runs it in, a young collection, whose cost is
 * in proportion to the young objects): dead tensors go back to the free
 * lists while they are still warm. Measured on `c = a * b` with autograd
 * (16 elements) under valgrind: 4021 instructions an op before, 3473 after;
 * (this and the tag and iterator changes together took its wall time from
 * 0.71 to 0.31 us on 2 cores: the memory stays in the caches). */
#define SMALL_PUSHES 256
static unsigned small_pushes;

/* anomaly mode: the Lua traceback of the call that made t, kept by its node */
static void anomaly_trace(lua_State *L, const em_tensor *t)
{
    luaL_traceback(L, L, NULL, 1);
    const char *s = lua_tostring(L, -1);
    char *copy = s ? strdup(s) : NULL;
    lua_pop(L, 1);
    if (copy) em_anomaly_attach(t, copy);
}

int emlua_push(lua_State *L, em_tensor *t)
{
    if (!t) return emlua_fail(L);
    if (++small_pushes >= SMALL_PUSHES) {
        small_pushes = 0;
        lua_gc(L, LUA_GCSTEP, 0);
    }
    tensor_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->t = t;
    b->tag = TENSOR_TAG;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);
    lua_setmetatable(L, -2);
    /* each storage of a size worth counting, once (autograd may hold a second
     * reference to a new result, so the refcount cannot tell new from old) */
    if (t->storage->nbytes >= 65536 && !t->storage->counted) {
        t->storage->counted = true;
        account_memory(L, t->storage->nbytes);
    }
    /* the debugging hooks, once the box owns t: the NaN check may raise */
    if (em_anomaly_mode && t->requires_grad && em_anomaly_wants_trace(t)) anomaly_trace(L, t);
    if (emlua_mem_recording) emlua_mem_seen(L, t);
    if (emlua_nan_stop) emlua_nan_check(L, t);
    return 1;
}

bool emlua_exact_integer_value(lua_State *L, int idx, em_dtype d)
{
    if (d != EM_INT64 || !lua_isinteger(L, idx)) return false;
    lua_Integer v = lua_tointeger(L, idx);
    return v > ((lua_Integer)1 << 53) || v < -((lua_Integer)1 << 53);
}

bool emlua_exact_integer_operand(lua_State *L, const em_tensor *t, int idx)
{
    return t && emlua_exact_integer_value(L, idx, t->dtype);
}

em_tensor *emlua_fill_exact(lua_State *L, em_tensor *t, int idx, const char *op)
{
    if (!t) return NULL;
    em_tensor *s = emlua_check_operand(L, idx, op, t);
    int rc = s ? em_copy_(t, s) : -1;
    em_release(s);
    if (rc) {
        em_release(t);
        return NULL;
    }
    return t;
}

em_tensor *emlua_check_operand(lua_State *L, int idx, const char *op, const em_tensor *like)
{
    em_tensor *t = emlua_test(L, idx);
    if (t) return em_retain(t);
    em_device dev = like ? like->storage->device : (em_device){EM_CPU, 0};
    em_tensor *s;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        if (lua_isinteger(L, idx)) {
            /* exactly: through a double, integers past 2^53 would change */
            int64_t v = (int64_t)lua_tointeger(L, idx), none = 0;
            /* on a device, an integer a double holds exactly is filled there
             * (a kernel, which a CUDA graph capture records); only one past
             * 2^53 is made on the host and copied (refused during a capture) */
            if (dev.type != EM_CPU && v <= ((int64_t)1 << 53) && v >= -((int64_t)1 << 53))
                s = em_scalar((double)v, EM_INT64, dev);
            else s = em_from_host(&none, 0, EM_INT64, NULL, &v);
            if (s && dev.type != EM_CPU && s->storage->device.type == EM_CPU) {
                em_tensor *moved = em_to_device(s, dev);
                em_release(s);
                s = moved;
            }
        } else {
            s = em_scalar(lua_tonumber(L, idx), EM_FLOAT64, dev);
        }
    } else if (lua_type(L, idx) == LUA_TBOOLEAN) {
        s = em_scalar(lua_toboolean(L, idx), EM_BOOL, dev);
    } else {
        emlua_typeerror(L, idx, op, "a tensor or a number");
        return NULL;
    }
    if (!s) emlua_fail(L);
    s->wrapped_number = true;
    return s;
}

em_tensor *emlua_check_index(lua_State *L, int idx, const char *op)
{
    em_tensor *t = emlua_test(L, idx);
    if (t) return em_retain(t);
    if (lua_type(L, idx) != LUA_TTABLE) {
        emlua_typeerror(L, idx, op, "an index tensor or a table of integers");
        return NULL;
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    int64_t *vals = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(n ? n : 1), 0);
    lua_Integer bad = emlua_table_integers(L, idx, n, vals);
    if (bad) emlua_argerror(L, idx, op, "entry %lld of the index table is not an integer", (long long)bad);
    int64_t size = (int64_t)n;
    t = em_from_host(&size, 1, EM_INT64, NULL, vals);
    lua_pop(L, 1);
    if (!t) emlua_fail(L);
    return t;
}

em_tensor *emlua_index_on(lua_State *L, int arg, em_tensor *ix, const em_tensor *t)
{
    if (emlua_test(L, arg) || t->storage->device.type == EM_CPU) return ix;
    em_tensor *moved = em_to_device(ix, t->storage->device);
    em_release(ix);
    if (!moved) emlua_fail(L);
    return moved;
}

lua_Integer emlua_table_integers(lua_State *L, int idx, lua_Integer n, int64_t *out)
{
    for (lua_Integer i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        int ok;
        out[i] = (int64_t)lua_tointegerx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok) return i + 1;
    }
    return 0;
}

/* ---- numbers ---------------------------------------------------------------- */

lua_Integer emlua_check_integer(lua_State *L, int idx, const char *op)
{
    int ok;
    lua_Integer v = lua_tointegerx(L, idx, &ok);
    if (!ok) emlua_typeerror(L, idx, op, "an integer");
    return v;
}

lua_Integer emlua_opt_integer(lua_State *L, int idx, const char *op, lua_Integer def)
{
    return lua_isnoneornil(L, idx) ? def : emlua_check_integer(L, idx, op);
}

double emlua_check_number(lua_State *L, int idx, const char *op)
{
    int ok;
    double v = lua_tonumberx(L, idx, &ok);
    if (!ok || lua_type(L, idx) != LUA_TNUMBER) emlua_typeerror(L, idx, op, "a number");
    return v;
}

double emlua_opt_number(lua_State *L, int idx, const char *op, double def)
{
    return lua_isnoneornil(L, idx) ? def : emlua_check_number(L, idx, op);
}

bool emlua_opt_boolean(lua_State *L, int idx, const char *op, bool def)
{
    if (lua_isnoneornil(L, idx)) return def;
    if (lua_type(L, idx) != LUA_TBOOLEAN) emlua_typeerror(L, idx, op, "a boolean");
    return lua_toboolean(L, idx);
}

/* ---- dims and sizes -------------------------------------------------------- */

static int dim_from_user(lua_State *L, int idx, lua_Integer d, int ndim, const char *op)
{
    int n = ndim > 0 ? ndim : 1;
    if (d == 0 || d < -n || d > n)
        emlua_argerror(L, idx, op, "dimension %lld out of range (expected 1..%d or -%d..-1 for a tensor of %d dimension%s)",
                       (long long)d, n, n, ndim, ndim == 1 ? "" : "s");
    return d > 0 ? (int)d - 1 : (int)d + n;
}

int emlua_check_dim(lua_State *L, int idx, int ndim, const char *op)
{
    return dim_from_user(L, idx, emlua_check_integer(L, idx, op), ndim, op);
}

int emlua_opt_dim(lua_State *L, int idx, int ndim, const char *op, int def)
{
    return lua_isnoneornil(L, idx) ? def : emlua_check_dim(L, idx, ndim, op);
}

int emlua_loose_dim(lua_State *L, int idx, lua_Integer d, const char *op)
{
    if (d == 0 || d > EM_MAX_DIMS + 1 || d < -(EM_MAX_DIMS + 1))
        emlua_argerror(L, idx, op, "dimension %lld out of range (dimensions count from 1, or from -1 at the end)",
                       (long long)d);
    return d > 0 ? (int)d - 1 : (int)d;
}

int emlua_opt_dims(lua_State *L, int idx, int ndim, const char *op, int *dims)
{
    if (lua_isnoneornil(L, idx)) return 0;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        dims[0] = emlua_check_dim(L, idx, ndim, op);
        return 1;
    }
    if (lua_type(L, idx) != LUA_TTABLE || emlua_test(L, idx))
        emlua_typeerror(L, idx, op, "a dimension or a table of dimensions");
    int n = (int)lua_rawlen(L, idx);
    if (n > EM_MAX_DIMS) emlua_argerror(L, idx, op, "too many dimensions (%d)", n);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        int ok;
        lua_Integer d = lua_tointegerx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok) emlua_argerror(L, idx, op, "entry %d of the dimension list is not an integer", i + 1);
        dims[i] = dim_from_user(L, idx, d, ndim, op);
    }
    return n;
}

int emlua_options_index(lua_State *L, int first)
{
    int top = emlua_top(L, first);   /* f(x, {k = v}, nil) */
    if (top >= first && lua_type(L, top) == LUA_TTABLE && !emlua_test(L, top)) {
        /* a size table {2, 3} is not an options table: options have string keys */
        if (lua_rawlen(L, top) == 0) return top;
    }
    return 0;
}

int emlua_opt_table(lua_State *L, int idx, const char *op, const char *what)
{
    if (lua_isnoneornil(L, idx)) return 0;
    if (lua_type(L, idx) != LUA_TTABLE || emlua_test(L, idx)) emlua_typeerror(L, idx, op, what);
    return idx;
}

/* A keyword this op does not know is a mistake worth naming. */
const char *const emlua_out_only[] = {"out", NULL};

void emlua_check_option_names(lua_State *L, int opts, const char *op, const char *const *names)
{
    static const char *const none[] = {NULL};
    if (!opts) return;
    if (!names) names = none;
    lua_pushnil(L);
    while (lua_next(L, opts)) {
        lua_pop(L, 1);
        bool known = false;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (int i = 0; names[i] && !known; i++) known = strcmp(lua_tostring(L, -1), names[i]) == 0;
        if (!known) {
            const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
            luaL_error(L, "%s: unknown option '%s'", op, key);
        }
    }
}

/* "a, b, c": the names of a NULL-terminated list, for messages */
static void join_names(const char *const *names, char *buf, size_t size)
{
    buf[0] = 0;
    for (int i = 0; names[i]; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? ", " : "", names[i]);
    }
}

/* An op whose arguments after `first` are keywords only (PyTorch's `*`): at
 * most one plain options table may follow, holding names only. A number
 * there (x:add(y, 2)) would otherwise be dropped without a word. */
int emlua_keywords(lua_State *L, int first, const char *op, const char *const *names)
{
    int top = emlua_top(L, first - 1);
    if (top < first) return 0;
    if (top == first && emlua_options_index(L, first) == first) {
        emlua_check_option_names(L, first, op, names);
        return first;
    }
    int bad = top == first || lua_type(L, first) != LUA_TTABLE ? first : first + 1;
    const char *what = emlua_test(L, bad) ? "tensor" : luaL_typename(L, bad);
    if (!names || !names[0]) return emlua_argerror(L, bad, op, "one argument too many (a %s)", what);
    char list[200];
    join_names(names, list, sizeof list);
    return emlua_argerror(L, bad, op, "one argument too many (a %s); the keyword arguments (%s) go in a "
                          "trailing options table, e.g. {%s = ...}", what, list, names[0]);
}

int emlua_push_out(lua_State *L, em_tensor *r, int opts, const char *op)
{
    if (!r) return emlua_fail(L);
    if (!opts || lua_getfield(L, opts, "out") == LUA_TNIL) {
        if (opts) lua_pop(L, 1);
        return emlua_push(L, r);
    }
    em_tensor *out = emlua_test(L, -1);
    char msg[200] = "";
    if (!out) {
        snprintf(msg, sizeof msg, "out must be a tensor, got %s", luaL_typename(L, -1));
    } else if (!em_device_eq(out->storage->device, r->storage->device)) {
        char rd[32], od[32];
        snprintf(msg, sizeof msg, "out is on %s but the result is on %s",
                 em_device_str(out->storage->device, od, sizeof od), em_device_str(r->storage->device, rd, sizeof rd));
    } else if (r->requires_grad) {
        snprintf(msg, sizeof msg, "out= records no gradient and an argument requires grad (PyTorch refuses "
                 "it too); call it without out, or under ember.no_grad()");
    }
    int rc = msg[0] ? -1 : em_assign_result_(op, out, r);
    em_release(r);
    if (msg[0]) return emlua_argerror(L, opts, op, "%s", msg);
    if (rc) return emlua_fail(L);
    return 1;   /* out, still on the top */
}

/* ---- positional-or-keyword arguments (binding.h) --------------------------------- */

void emlua_args_start_kw(emlua_args *a, lua_State *L, const char *op, int first, const char *const *names, int npos)
{
    emlua_args_start(a, L, op, first, names);
    if (!names[npos]) return;
    int last = a->opts ? a->opts - 1 : lua_gettop(L);
    for (int i = first + npos; i <= last; i++) {
        if (lua_isnil(L, i)) continue;
        char list[200];
        join_names(names + npos, list, sizeof list);
        emlua_argerror(L, i, op, "unexpected argument (a %s); the keyword arguments (%s) go in a trailing options "
                       "table, e.g. {%s = ...}", emlua_test(L, i) ? "tensor" : luaL_typename(L, i), list, names[npos]);
    }
}

int emlua_arg_at(emlua_args *a, int k)
{
    lua_State *L = a->L;
    int pos = a->first + k;
    if (!a->opts || pos < a->opts) return lua_isnoneornil(L, pos) ? 0 : pos;
    lua_getfield(L, a->opts, a->names[k]);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return 0; }
    return lua_gettop(L);
}

void emlua_args_start(emlua_args *a, lua_State *L, const char *op, int first, const char *const *names)
{
    a->L = L;
    a->op = op;
    a->first = first;
    a->names = names;
    a->opts = emlua_options_index(L, first);
    int n = emlua_count_names(names);
    int top = a->opts ? a->opts - 1 : lua_gettop(L);
    while (top >= first + n && lua_isnil(L, top)) top--;
    if (top >= first + n) {
        char list[200];
        join_names(names, list, sizeof list);
        emlua_argerror(L, first + n, op, "unexpected argument (a %s): too many positional arguments (at most %d after "
                       "the required ones%s%s)", emlua_test(L, first + n) ? "tensor" : luaL_typename(L, first + n),
                       n, n ? ": " : "", list);
    }
    if (!a->opts) return;
    emlua_check_option_names(L, a->opts, op, names);
    /* Python's "got multiple values for argument": given by position and as a keyword */
    for (int k = 0; names[k] && first + k < a->opts; k++) {
        if (lua_isnil(L, first + k)) continue;
        int ty = lua_getfield(L, a->opts, names[k]);
        lua_pop(L, 1);
        if (ty != LUA_TNIL)
            emlua_argerror(L, first + k, op, "got multiple values for argument '%s' (by position and in the options table)",
                           names[k]);
    }
}

bool emlua_arg_bool(emlua_args *a, int k, bool def)
{
    int i = emlua_arg_at(a, k);
    if (!i) return def;
    if (!lua_isboolean(a->L, i))
        emlua_argerror(a->L, a->first + k, a->op, "%s must be a boolean, got %s", a->names[k], luaL_typename(a->L, i));
    return lua_toboolean(a->L, i);
}

double emlua_arg_number(emlua_args *a, int k, double def)
{
    int i = emlua_arg_at(a, k);
    if (!i) return def;
    if (lua_type(a->L, i) != LUA_TNUMBER)
        emlua_argerror(a->L, a->first + k, a->op, "%s must be a number, got %s", a->names[k], luaL_typename(a->L, i));
    return lua_tonumber(a->L, i);
}

int emlua_arg_dim(emlua_args *a, int k, int ndim, int def)
{
    int i = emlua_arg_at(a, k);
    return i ? emlua_check_dim(a->L, i, ndim, a->op) : def;
}

int64_t emlua_arg_integer(emlua_args *a, int k, int64_t def)
{
    int i = emlua_arg_at(a, k);
    if (!i) return def;
    int ok;
    lua_Integer v = lua_tointegerx(a->L, i, &ok);
    if (!ok)
        emlua_argerror(a->L, a->first + k, a->op, "%s must be an integer, got %s", a->names[k],
                       lua_type(a->L, i) == LUA_TNUMBER ? lua_tostring(a->L, i) : luaL_typename(a->L, i));
    return v;
}

em_tensor *emlua_arg_tensor(emlua_args *a, int k)
{
    int i = emlua_arg_at(a, k);
    if (!i) return NULL;
    em_tensor *t = emlua_test(a->L, i);
    if (!t)
        emlua_argerror(a->L, a->first + k, a->op, "%s must be a tensor or nil, got %s", a->names[k],
                       luaL_typename(a->L, i));
    return t;
}

static int64_t size_entry(lua_State *L, int argidx, int valueidx, const char *op)
{
    int ok;
    lua_Integer v = lua_tointegerx(L, valueidx, &ok);
    if (!ok) {
        if (lua_type(L, valueidx) == LUA_TNUMBER)
            emlua_argerror(L, argidx, op, "expected an integer size, got %s", lua_tostring(L, valueidx));
        emlua_typeerror(L, argidx, op, "a number");
    }
    return (int64_t)v;
}

int emlua_check_sizes(lua_State *L, int idx, const char *op, int64_t *sizes)
{
    int top = lua_gettop(L), opts = emlua_options_index(L, idx);
    if (opts) top = opts - 1;
    if (top >= idx && lua_type(L, idx) == LUA_TTABLE && !emlua_test(L, idx)) {
        if (top > idx) emlua_argerror(L, idx + 1, op, "unexpected argument after a size table");
        int n = (int)lua_rawlen(L, idx);
        if (n > EM_MAX_DIMS) emlua_argerror(L, idx, op, "%d dimensions (at most %d)", n, EM_MAX_DIMS);
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, idx, i + 1);
            sizes[i] = size_entry(L, idx, -1, op);
            lua_pop(L, 1);
        }
        return n;
    }
    int n = 0;
    for (int i = idx; i <= top; i++) {
        if (n >= EM_MAX_DIMS) emlua_argerror(L, i, op, "too many dimensions (at most %d)", EM_MAX_DIMS);
        if (lua_type(L, i) != LUA_TNUMBER) emlua_typeerror(L, i, op, "a number");
        sizes[n++] = size_entry(L, i, i, op);
    }
    return n;
}

/* ---- options ---------------------------------------------------------------- */

em_dtype emlua_check_dtype(lua_State *L, int idx, const char *op)
{
    if (lua_type(L, idx) != LUA_TSTRING) emlua_typeerror(L, idx, op, "a dtype name");
    em_dtype d;
    if (em_dtype_from_name(lua_tostring(L, idx), &d)) emlua_argerror(L, idx, op, "%s", em_error());
    return d;
}

/* The name given as option `name` (dtype, device) of the options table at
 * idx, or NULL when there is no table or no such option; raises when it is
 * not a string. The table keeps the string alive. */
void emlua_device_arg(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TTABLE) return;
    idx = lua_absindex(L, idx);
    int t = luaL_getmetafield(L, idx, "__name");          /* pushes nothing when there is none */
    bool device = t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "ember.device") == 0;
    if (t != LUA_TNIL) lua_pop(L, 1);
    if (!device) return;
    luaL_tolstring(L, idx, NULL);
    lua_replace(L, idx);
}

int emlua_cuda_index(lua_State *L, int idx, const char *op)
{
    if (lua_isnoneornil(L, idx)) return 0;
    emlua_device_arg(L, idx);
    if (lua_type(L, idx) == LUA_TSTRING) {
        em_device d;
        if (em_device_parse(lua_tostring(L, idx), &d) || d.type != EM_CUDA)
            return emlua_argerror(L, idx, op, "expected a CUDA device (\"cuda\" or \"cuda:N\"), got '%s'",
                                  lua_tostring(L, idx));
        return d.index;
    }
    if (lua_type(L, idx) != LUA_TNUMBER) return emlua_typeerror(L, idx, op, "a CUDA device index or \"cuda:N\"");
    lua_Integer i = emlua_check_integer(L, idx, op);
    if (i < 0 || i > 1000000) return emlua_argerror(L, idx, op, "cuda:%lld: no such device", (long long)i);
    return (int)i;
}

static const char *opt_name(lua_State *L, int idx, const char *name, const char *op)
{
    if (idx == 0 || lua_type(L, idx) != LUA_TTABLE) return NULL;
    lua_getfield(L, idx, name);
    const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!s && !lua_isnil(L, -1)) emlua_argerror(L, idx, op, "option '%s': expected a %s name", name, name);
    lua_pop(L, 1);
    return s;
}

em_dtype emlua_opt_dtype(lua_State *L, int idx, const char *op, em_dtype def)
{
    const char *s = opt_name(L, idx, "dtype", op);
    em_dtype d = def;
    if (s && em_dtype_from_name(s, &d)) emlua_argerror(L, idx, op, "option 'dtype': %s", em_error());
    return d;
}

em_device emlua_opt_device(lua_State *L, int idx, const char *op, em_device def)
{
    if (idx == 0 || lua_type(L, idx) != LUA_TTABLE) return def;
    lua_getfield(L, idx, "device");
    emlua_device_arg(L, -1);        /* parsed while on the stack: an object's name is a new string */
    em_device d = def;
    if (lua_type(L, -1) == LUA_TSTRING) {
        if (em_device_parse(lua_tostring(L, -1), &d)) emlua_argerror(L, idx, op, "option 'device': %s", em_error());
    } else if (!lua_isnil(L, -1)) {
        emlua_argerror(L, idx, op, "option 'device': expected a device name");
    }
    lua_pop(L, 1);
    return d;
}

/* Pushes option `name` of the options table at idx and returns true when it
 * is set; raises unless it has Lua type `type`. Returns false (nothing
 * pushed) when there is no table or the option is nil. */
static bool push_option(lua_State *L, int idx, const char *name, int type, const char *op)
{
    if (idx == 0 || lua_type(L, idx) != LUA_TTABLE) return false;
    lua_getfield(L, idx, name);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return false;
    }
    if (lua_type(L, -1) != type)
        emlua_argerror(L, idx, op, "option '%s': expected a %s, got %s", name, lua_typename(L, type),
                       luaL_typename(L, -1));
    return true;
}

double emlua_opt_field_number(lua_State *L, int idx, const char *name, const char *op, double def)
{
    if (!push_option(L, idx, name, LUA_TNUMBER, op)) return def;
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

bool emlua_opt_field_boolean(lua_State *L, int idx, const char *name, const char *op, bool def)
{
    if (!push_option(L, idx, name, LUA_TBOOLEAN, op)) return def;
    bool v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

int emlua_create_sized(lua_State *L, const char *op, emlua_sized_fn fn)
{
    int64_t sizes[EM_MAX_DIMS];
    int n = emlua_check_sizes(L, 1, op, sizes);
    int opts = emlua_options_index(L, 1);
    static const char *const names[] = {"dtype", "device", "requires_grad", NULL};
    emlua_check_option_names(L, opts, op, names);
    em_dtype d = emlua_opt_dtype(L, opts, op, em_default_dtype());
    em_device dev = emlua_opt_device(L, opts, op, emlua_default_device());
    return emlua_push_created(L, fn(sizes, n, d, dev), opts, op);
}

em_tensor *emlua_uninitialized(em_tensor *t)
{
    if (!t || em_numel(t) == 0 || !em_get_backend_flag(EM_CPU, EM_FLAG_DETERMINISTIC) ||
        !em_get_backend_flag(EM_CPU, EM_FLAG_FILL_UNINITIALIZED))
        return t;
    int rc;
    if (em_dtype_is_float(t->dtype)) {
        rc = em_fill_(t, NAN);
    } else if (t->dtype == EM_INT64) {     /* 2^63 - 1 has no double: copied from an int64 scalar */
        int64_t max = INT64_MAX;
        em_tensor *v = em_from_host(NULL, 0, EM_INT64, NULL, &max);
        rc = v ? em_copy_(t, v) : -1;
        em_release(v);
    } else {
        double lo, hi = 1.0;     /* bool: true */
        if (em_dtype_is_int(t->dtype)) em_int_range(t->dtype, &lo, &hi);
        rc = em_fill_(t, hi);
    }
    if (rc) {
        em_release(t);
        return NULL;
    }
    return t;
}

int emlua_push_created(lua_State *L, em_tensor *t, int opts, const char *op)
{
    if (!t) return emlua_fail(L);
    bool rg = false;
    if (opts) {
        lua_getfield(L, opts, "requires_grad");
        int ty = lua_type(L, -1);
        rg = lua_toboolean(L, -1);
        lua_pop(L, 1);
        if (ty != LUA_TNIL && ty != LUA_TBOOLEAN) {
            em_release(t);
            return emlua_argerror(L, opts, op, "option 'requires_grad': expected a boolean");
        }
    }
    if (rg && em_requires_grad_(t, true)) {
        em_release(t);
        return luaL_error(L, "%s: %s", op, em_error());
    }
    return emlua_push(L, t);
}

/* ---- registration ---------------------------------------------------------- */

void emlua_register(lua_State *L, const luaL_Reg *methods, const luaL_Reg *functions)
{
    if (methods) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &methods_key);
        luaL_setfuncs(L, methods, 0);
        lua_pop(L, 1);
    }
    if (functions) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key);
        luaL_setfuncs(L, functions, 0);
        lua_pop(L, 1);
    }
}

void emlua_set_module_field(lua_State *L, const char *name)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key);
    lua_insert(L, -2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* fn as field `event` of the table at the top, unless fn is NULL */
static void set_metamethod(lua_State *L, const char *event, lua_CFunction fn)
{
    if (!fn) return;
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, event);
}

void emlua_new_class(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction gc,
                     lua_CFunction close, lua_CFunction tostring)
{
    if (luaL_newmetatable(L, name)) {
        if (methods) {
            int n = 0;
            while (methods[n].name) n++;
            lua_createtable(L, 0, n);       /* sized: no rehash while it fills (start-up) */
            luaL_setfuncs(L, methods, 0);
            lua_setfield(L, -2, "__index");
        }
        set_metamethod(L, "__gc", gc);
        set_metamethod(L, "__close", close);
        set_metamethod(L, "__tostring", tostring);
    }
    lua_pop(L, 1);
}

/* the shell's top-level threads: a table with weak keys in the registry */
static char top_threads_key;

void emlua_mark_top_thread(lua_State *L, lua_State *co)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &top_threads_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_newtable(L);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &top_threads_key);
    }
    lua_pushthread(co);
    lua_xmove(co, L, 1);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

bool emlua_in_coroutine(lua_State *L)
{
    if (!lua_isyieldable(L)) return false;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &top_threads_key) != LUA_TTABLE) {
        lua_pop(L, 1);
        return true;
    }
    lua_pushthread(L);
    bool top = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return !top;
}

/* The tensor metatable and method table, created once per Lua state; the
 * metamethods themselves are set by tensor.c. */
void emlua_push_methods(lua_State *L) { lua_rawgetp(L, LUA_REGISTRYINDEX, &methods_key); }
void emlua_push_metatable(lua_State *L) { lua_rawgetp(L, LUA_REGISTRYINDEX, &tensor_mt_key); }

/* ember.wall_time(): monotonic wall-clock seconds, for timing code (os.clock
 * counts the CPU time of every thread, which misleads for threaded kernels). */
double emlua_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int m_wall_time(lua_State *L)
{
    lua_pushnumber(L, emlua_now());
    return 1;
}

/* Lua unloads C modules (dlclose) when the state closes, but the CPU
 * pool's worker threads (engine/cpu/pool.c) and OpenBLAS's may still be
 * parked in this module's code; unloading it under them crashes at exit.
 * Pinning the module with RTLD_NODELETE keeps it (and them) mapped. */
static void pin_module(void)
{
    Dl_info info;
    if (dladdr((void *)pin_module, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* The Lua half of the library (the files in lua/ember/: ember.nn, ember.optim, ...)
 * lives in the source tree's lua/ folder, one level above the build folder
 * that holds this module (build/ember.so) or the executable (build/ember).
 * Append it to package.path so `require "ember.nn"` works from both without
 * setting LUA_PATH; paths the user set keep priority. */
static void add_lua_path(lua_State *L)
{
    Dl_info info;
    if (!dladdr((void *)add_lua_path, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    int dirlen = (int)(slash - info.dli_fname);
    if (lua_getglobal(L, "package") != LUA_TTABLE) { lua_pop(L, 1); return; }
    lua_getfield(L, -1, "path");
    const char *old = lua_tostring(L, -1);
    lua_pushlstring(L, info.dli_fname, (size_t)dirlen);
    const char *dir = lua_tostring(L, -1);
    lua_pushfstring(L, "%s;%s/../lua/?.lua;%s/../lua/?/init.lua", old ? old : "", dir, dir);
    lua_remove(L, -2);
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);
}

/* Functions of the module written in Lua, loaded with their file on first use. */
static const char *const lazy_functions[][2] = {
    {"save_checkpoint", "ember.checkpoint"},
    {"load_checkpoint", "ember.checkpoint"},
    {"autocast", "ember.autocast"},
    {"vmap", "ember.func"},
    {"cond", "ember.func"},
    {"while_loop", "ember.func"},
    {NULL, NULL},
};

/* PyTorch functions and tensor methods written in Lua over the engine's ops
 * (lua/ember/composite.lua and the files it loads) are found by falling back
 * to that module: a name that neither the C module nor its method table
 * defines loads it once (it installs every function it has in both tables),
 * and the name is looked up again. So a composite is added in its Lua file
 * alone, and start-up reads none of them. Returns whether the module is
 * loaded (false while it is loading: its own lookups of missing names must
 * not load it again). */
static bool load_composites(lua_State *L)
{
    static const char LOADING[] = "ember.composite loading";
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    int loaded = lua_getfield(L, -1, "ember.composite") != LUA_TNIL;
    lua_pop(L, 2);
    if (loaded) return true;
    if (lua_getfield(L, LUA_REGISTRYINDEX, LOADING) != LUA_TNIL) {
        lua_pop(L, 1);
        return false;
    }
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, LOADING);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "ember.composite");
    int status = lua_pcall(L, 1, 0, 0);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LOADING);
    if (status != LUA_OK) lua_error(L);
    return true;
}

int emlua_lazy_method(lua_State *L, const char *name)
{
    if (!load_composites(L)) return 0;
    emlua_push_methods(L);
    if (lua_getfield(L, -1, name) == LUA_TNIL) {
        lua_pop(L, 2);
        return 0;
    }
    lua_remove(L, -2);
    return 1;
}

/* ember.nn, ember.optim, ember.data, ember.hf, ember.lora, ember.special, ember.func, ...: Lua submodules loaded on first use. */
static const char *const submodules[] = {"nn", "optim", "data", "autograd", "help", "plot", "linalg", "amp",
                                         "distributed", "utils", "profiler", "memory", "debug", "hf", "lora", "special",
                                         "distributions", "testing", "func",
                                         NULL};

static int module_index(lua_State *L)
{
    const char *key = lua_tostring(L, 2);
    for (int i = 0; key && submodules[i]; i++) {
        if (strcmp(key, submodules[i]) != 0) continue;
        lua_getglobal(L, "require");
        lua_pushfstring(L, "ember.%s", key);
        lua_call(L, 1, 1);
        lua_pushvalue(L, 2);
        lua_pushvalue(L, -2);
        lua_rawset(L, 1);      /* cache it in the module table */
        return 1;
    }
    for (int i = 0; key && lazy_functions[i][0]; i++) {
        if (strcmp(key, lazy_functions[i][0]) != 0) continue;
        lua_getglobal(L, "require");
        lua_pushstring(L, lazy_functions[i][1]);
        lua_call(L, 1, 1);
        lua_getfield(L, -1, key);
        return 1;
    }
    if (key && load_composites(L)) {
        lua_pushvalue(L, 2);
        lua_rawget(L, 1);
        return 1;
    }
    return 0;
}

void emlua_set_interrupt(bool on) { em_set_interrupt(on); }

/* ember.isatty(fd): whether a file descriptor (1 = stdout) is a terminal,
 * for progress bars and colours that must stay out of pipes and files. */
static int m_isatty(lua_State *L)
{
    lua_pushboolean(L, isatty((int)emlua_opt_integer(L, 1, "ember.isatty", 1)) == 1);
    return 1;
}

int luaopen_ember(lua_State *L)
{
    luaL_checkversion(L);
    pin_module();
    add_lua_path(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &module_key);
    if (lua_istable(L, -1)) return 1;   /* already opened in this state */
    lua_pop(L, 1);

    /* the module and method tables made at the size they reach (some 430 and
     * 450 names): filled from empty, each would be rehashed at every power of
     * two on the way, a tenth of start-up's instructions */
    lua_createtable(L, 0, 512);         /* module */
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &module_key);
    lua_createtable(L, 0, 512);         /* methods */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &methods_key);
    luaL_newmetatable(L, EMLUA_TENSOR); /* also under its name, for luaL_testudata users */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &tensor_mt_key);

    lua_pushcfunction(L, m_wall_time);
    lua_setfield(L, -2, "wall_time");
    lua_pushcfunction(L, m_isatty);
    lua_setfield(L, -2, "isatty");
    lua_newtable(L);                    /* the module's metatable */
    lua_pushcfunction(L, module_index);
    lua_setfield(L, -2, "__index");
    /* what __index loads: __dir names it for the shell's completion and
     * __lazy says completion may load it (shell/complete.c) */
    lua_newtable(L);                    /* __dir */
    lua_newtable(L);                    /* __lazy */
    int n = 0;
    for (int i = 0; submodules[i]; i++) {
        lua_pushstring(L, submodules[i]);
        lua_rawseti(L, -3, ++n);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, submodules[i]);
    }
    for (int i = 0; lazy_functions[i][0]; i++) {
        lua_pushstring(L, lazy_functions[i][0]);
        lua_rawseti(L, -3, ++n);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, lazy_functions[i][0]);
    }
    lua_setfield(L, -3, "__lazy");
    lua_setfield(L, -2, "__dir");
    lua_setmetatable(L, -2);
    emlua_open_tensor(L);
    emlua_open_elementwise(L);
    emlua_open_reduce(L);
    emlua_open_index(L);
    emlua_open_linalg(L);
    emlua_open_random(L);
    emlua_open_io(L);
    emlua_open_data(L);
    emlua_open_autograd(L);
    emlua_open_optim(L);
    emlua_open_cuda(L);
    emlua_open_plot(L);
    emlua_open_nn(L);
    emlua_open_attention(L);
    emlua_open_shape(L);
    emlua_open_einsum(L);
    emlua_open_lapack(L);
    emlua_open_autocast(L);
    emlua_open_distributed(L);
    emlua_open_monitor(L);
    emlua_open_tensorboard(L);
    emlua_open_profile(L);
    emlua_open_memory(L);
    emlua_open_debug(L);
    emlua_open_tokenizer(L);
    lua_pushcfunction(L, l_path_problem);
    lua_setfield(L, -2, "_path_problem");
    return 1;
}
