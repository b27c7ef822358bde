/* bind_einsum.c — einsum, tensordot, kron, cdist, and index_put (the
 * function form of assignment through index tensors). */
#include "binding.h"

#include <math.h>
#include <string.h>

#define MAX_OPERANDS 64

/* ember.einsum(equation, a, b, ...) or ember.einsum(equation, {a, b, ...}) */
static int l_einsum(lua_State *L)
{
    const char *op = "einsum";
    if (lua_type(L, 1) != LUA_TSTRING) return emlua_typeerror(L, 1, op, "an equation string");
    const char *eq = lua_tostring(L, 1);
    em_tensor *ts[MAX_OPERANDS];
    int n = 0, top = emlua_top(L, 2);   /* trailing nils: no operands */
    if (lua_type(L, 2) == LUA_TTABLE && !emlua_test(L, 2)) {
        if (top > 2)
            return emlua_argerror(L, 3, op, "unexpected argument (a %s) after the table of operands",
                                  emlua_test(L, 3) ? "tensor" : luaL_typename(L, 3));
        n = (int)lua_rawlen(L, 2);
        if (n > MAX_OPERANDS) return emlua_argerror(L, 2, op, "at most %d operands, got %d", MAX_OPERANDS, n);
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, 2, i + 1);
            ts[i] = emlua_test(L, -1);
            if (!ts[i]) return emlua_argerror(L, 2, op, "operand %d must be a tensor, got %s", i + 1, luaL_typename(L, -1));
            lua_pop(L, 1);   /* the table keeps it alive */
        }
    } else {
        n = top - 1;
        if (n > MAX_OPERANDS) return emlua_argerror(L, 2, op, "at most %d operands, got %d", MAX_OPERANDS, n);
        for (int i = 0; i < n; i++) ts[i] = emlua_check(L, i + 2, op);
    }
    if (n == 0) return emlua_argerror(L, 2, op, "expected at least one operand tensor");
    return emlua_push(L, em_einsum(eq, ts, n));
}

/* A list of 1-based dims (a table of integers) for a tensor of ndim dims. */
static int dim_list(lua_State *L, int tbl, int ndim, const char *op, int *dims)
{
    int n = (int)lua_rawlen(L, tbl);
    if (n > EM_MAX_DIMS) return emlua_argerror(L, 3, op, "too many dims (%d)", n);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, tbl, i + 1);
        int ok;
        lua_Integer d = lua_tointegerx(L, -1, &ok);
        if (!ok || d == 0 || d > ndim || d < -ndim)
            return emlua_argerror(L, 3, op, "dim %s is not a dim of a tensor of %d dimensions (1..%d or -%d..-1)",
                                  luaL_tolstring(L, -1, NULL), ndim, ndim, ndim);
        dims[i] = (int)(d > 0 ? d - 1 : d + ndim);
        lua_pop(L, 1);
    }
    return n;
}

/* ember.tensordot(a, b, dims = 2, {out =}): an integer d contracts the last d
 * dims of a with the first d of b; {{dims of a}, {dims of b}} names them
 * (1-based). */
static int l_tensordot(lua_State *L)
{
    static const char *const names[] = {"dims", "out", NULL};
    const char *op = "tensordot";
    em_tensor *a = emlua_check(L, 1, op), *b = emlua_check(L, 2, op);
    emlua_args a3;
    /* a table of two lists is the dims argument itself, not options */
    int at, o;
    if (lua_type(L, 3) == LUA_TTABLE && lua_rawgeti(L, 3, 1) == LUA_TTABLE) {
        lua_pop(L, 1);
        at = 3;
        o = emlua_keywords(L, 4, op, emlua_out_only);
    } else {
        if (lua_type(L, 3) == LUA_TTABLE) lua_pop(L, 1);
        emlua_args_start_kw(&a3, L, op, 3, names, 1);   /* out: keyword-only */
        at = emlua_arg_at(&a3, 0);
        o = a3.opts;
    }
    int da[EM_MAX_DIMS], db[EM_MAX_DIMS], n;
    if (!at || lua_type(L, at) == LUA_TNUMBER) {
        lua_Integer d = at ? emlua_check_integer(L, at, op) : 2;
        if (d < 0 || d > a->ndim || d > b->ndim)
            return emlua_argerror(L, 3, op, "dims %d must be between 0 and the dimensions of both tensors (%d and %d)",
                                  (int)d, a->ndim, b->ndim);
        n = (int)d;
        for (int i = 0; i < n; i++) {
            da[i] = a->ndim - n + i;
            db[i] = i;
        }
    } else if (lua_type(L, at) == LUA_TTABLE) {
        lua_rawgeti(L, at, 1);
        lua_rawgeti(L, at, 2);
        if (lua_type(L, -2) != LUA_TTABLE || lua_type(L, -1) != LUA_TTABLE || lua_rawlen(L, at) != 2)
            return emlua_argerror(L, 3, op, "dims must be an integer or a pair of dim lists {{...}, {...}}");
        int top = lua_gettop(L);
        n = dim_list(L, top - 1, a->ndim, op, da);
        int m = dim_list(L, top, b->ndim, op, db);
        if (n != m) return emlua_argerror(L, 3, op, "the two dim lists differ in length (%d and %d)", n, m);
    } else {
        return emlua_typeerror(L, at, op, "an integer or a pair of dim lists");
    }
    return emlua_push_out(L, em_tensordot(a, b, da, db, n), o, op);
}

static int l_kron(lua_State *L)
{
    em_tensor *a = emlua_check(L, 1, "kron"), *b = emlua_check(L, 2, "kron");
    int o = emlua_keywords(L, 3, "kron", emlua_out_only);
    return emlua_push_out(L, em_kron(a, b), o, "kron");
}

/* ember.cdist(x1, x2, p = 2) */
static int l_cdist(lua_State *L)
{
    static const char *const names[] = {"p", NULL};
    const char *op = "cdist";
    em_tensor *a = emlua_check(L, 1, op), *b = emlua_check(L, 2, op);
    emlua_args args;
    emlua_args_start(&args, L, op, 3, names);
    double p = emlua_arg_number(&args, 0, 2.0);
    if (!(p >= 0)) return emlua_argerror(L, 3, op, "p must be a non-negative number (or math.huge), got %g", p);
    return emlua_push(L, em_cdist(a, b, p));
}

/* The indices table of index_put: tensors, with {} or false for a whole dim. */
static int index_list(lua_State *L, int idx, const char *op, em_tensor **out)
{
    if (lua_type(L, idx) != LUA_TTABLE || emlua_test(L, idx))
        return emlua_typeerror(L, idx, op, "a table of index tensors");
    int n = (int)lua_rawlen(L, idx);
    if (n > EM_MAX_DIMS) return emlua_argerror(L, idx, op, "too many indices (%d)", n);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, idx, i + 1);
        out[i] = emlua_test(L, -1);
        bool whole = lua_type(L, -1) == LUA_TBOOLEAN ? !lua_toboolean(L, -1)
                   : lua_type(L, -1) == LUA_TTABLE && !out[i] && lua_rawlen(L, -1) == 0;
        if (!out[i] && !whole)
            return emlua_argerror(L, idx, op, "index %d must be a tensor ({} or false: the whole dim), got %s", i + 1,
                                  luaL_typename(L, -1));
        lua_pop(L, 1);   /* the table keeps it alive */
    }
    return n;
}

/* values: a tensor, or a number as a 0-d tensor of t's dtype */
static em_tensor *values_arg(lua_State *L, int idx, const char *op, const em_tensor *t)
{
    em_tensor *v = emlua_test(L, idx);
    if (v) return em_retain(v);
    if (lua_type(L, idx) != LUA_TNUMBER && lua_type(L, idx) != LUA_TBOOLEAN)
        return emlua_typeerror(L, idx, op, "a tensor or a number as values"), NULL;
    double x = lua_type(L, idx) == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
    if (em_check_value_fits(op, x, t->dtype)) return emlua_fail(L), NULL;
    em_tensor *s = em_scalar(x, t->dtype, t->storage->device);
    if (!s) emlua_fail(L);
    return s;
}

static int index_put_common(lua_State *L, bool inplace)
{
    static const char *const names[] = {"accumulate", NULL};
    const char *op = inplace ? "index_put_" : "index_put";
    em_tensor *t = emlua_check(L, 1, op);
    em_tensor *ix[EM_MAX_DIMS];
    int n = index_list(L, 2, op, ix);
    if (lua_isnoneornil(L, 3)) return emlua_argerror(L, 3, op, "expected values (a tensor or a number)");
    emlua_args args;
    emlua_args_start(&args, L, op, 4, names);
    bool acc = emlua_arg_bool(&args, 0, false);
    em_tensor *v = values_arg(L, 3, op, t);
    if (inplace) {
        int rc = em_index_put_(t, ix, n, v, acc);
        em_release(v);
        return emlua_push_self(L, rc);
    }
    em_tensor *r = em_index_put(t, ix, n, v, acc);
    em_release(v);
    return emlua_push(L, r);
}

static int l_index_put(lua_State *L)
{
    return index_put_common(L, false);
}
static int l_index_put_(lua_State *L) { return index_put_common(L, true); }

void emlua_open_einsum(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"kron", l_kron},
        {"index_put", l_index_put},
        {"index_put_", l_index_put_},
        {NULL, NULL}};
    static const luaL_Reg functions[] = {
        {"einsum", l_einsum},
        {"tensordot", l_tensordot},
        {"kron", l_kron},
        {"cdist", l_cdist},
        {"index_put", l_index_put},
        {NULL, NULL}};
    emlua_register(L, methods, functions);
}
