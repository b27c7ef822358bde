/* tensor.c — the tensor userdata: life cycle, properties, indexing with
 * t[i] / t[{...}], operators, views, conversions and the creation functions
 * of the module (ember.tensor, zeros, ones, full, arange, ...). */
#include "binding.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const em_device CPU = {EM_CPU, 0};

/* The device of a factory call without a device option (torch.set_default_device):
 * a front-end setting, as the engine's functions all take their device. */
static em_device default_device = {EM_CPU, 0};

em_device emlua_default_device(void) { return default_device; }


/* ---- life cycle --------------------------------------------------------- */

static int tensor_gc(lua_State *L)
{
    em_tensor **ud = lua_touserdata(L, 1);
    if (ud && *ud) {
        em_release(*ud);
        *ud = NULL;
    }
    return 0;
}

/* The tensor a method was called on (emlua_check names the op, a tensor
 * closed by <close>, and x.size() written for x:size()). */
static em_tensor *self(lua_State *L, const char *op) { return emlua_check(L, 1, op); }

/* Refuses an argument from `first` on (x:t(1), x:size(1, 2)), which op does
 * not read, rather than dropping it; trailing nils and {} pass. Without one,
 * the cost is a lua_gettop and a comparison (x:size(d), x:dim() are in loops). */
static inline void no_more(lua_State *L, int first, const char *op)
{
    if (lua_gettop(L) >= first) emlua_keywords(L, first, op, NULL);
}

/* self of a method that takes nothing else (x:clone({memory_format = ...})
 * is refused too) */
static em_tensor *self_alone(lua_State *L, const char *op)
{
    em_tensor *t = self(L, op);
    no_more(L, 2, op);
    return t;
}

/* Pushes element 0 of a one-element tensor as a Lua value of its kind. */
static void push_scalar(lua_State *L, const em_tensor *t)
{
    if (t->dtype == EM_BOOL) lua_pushboolean(L, em_get_i(t, 0) != 0);
    else if (em_dtype_is_float(t->dtype)) lua_pushnumber(L, em_get_f(t, 0));
    else lua_pushinteger(L, em_get_i(t, 0));
}

/* ---- ember.Size ------------------------------------------------------------
 * t.shape and t:size() are an ember.Size, as in PyTorch: an array of
 * integers (s[1], #s, ipairs, table.unpack; the functions that take a size
 * table read it raw, so a Size goes wherever {2, 3} does) whose metatable,
 * ember.Size itself, adds ==, tostring and numel. A Size equals any table
 * holding the same integers in its array part: t.shape == {2, 3} is true.
 * The metatable is found through a registry key: t.shape is read in loops. */
static char size_mt_key;

static void push_size(lua_State *L, const int64_t *sizes, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushinteger(L, sizes[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &size_mt_key);
    lua_setmetatable(L, -2);
}

static void push_shape(lua_State *L, const em_tensor *t) { push_size(L, t->sizes, t->ndim); }

/* Both operands are tables (Lua calls __eq for no other pair). */
static int size_eq(lua_State *L)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    bool same = n == (lua_Integer)lua_rawlen(L, 2);
    for (lua_Integer i = 1; same && i <= n; i++) {
        lua_rawgeti(L, 1, i);
        lua_rawgeti(L, 2, i);
        same = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    lua_pushboolean(L, same);
    return 1;
}

/* What a Size does not hold itself: s[-1] counts from the end (as dims and
 * PyTorch's indices do), other numbers are nil as past the end of any
 * table, names are the methods (upvalue 1: ember.Size). */
static int size_index(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TNUMBER) {
        int ok;
        lua_Integer k = lua_tointegerx(L, 2, &ok), n = (lua_Integer)lua_rawlen(L, 1);
        if (ok && k < 0 && k >= -n) lua_rawgeti(L, 1, n + k + 1);
        else lua_pushnil(L);
        return 1;
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

/* The entries of the table at idx as integers; raises naming op for
 * anything else. */
static int size_entries(lua_State *L, int idx, const char *op, int64_t *sizes)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
    if (n > EM_MAX_DIMS) luaL_error(L, "%s: %I entries (at most %d)", op, (LUAI_UACINT)n, EM_MAX_DIMS);
    for (lua_Integer i = 1; i <= n; i++) {
        int ok = lua_rawgeti(L, idx, i) == LUA_TNUMBER;
        lua_Integer v = ok ? lua_tointegerx(L, -1, &ok) : 0;
        if (!ok)
            luaL_error(L, "%s: entry %I is not an integer (got %s)", op, (LUAI_UACINT)i,
                       lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
        sizes[i - 1] = (int64_t)v;
        lua_pop(L, 1);
    }
    return (int)n;
}

static const char *type_of(lua_State *L, int idx) { return emlua_test(L, idx) ? "tensor" : luaL_typename(L, idx); }

/* ember.Size's functions take nothing from argument `first` on (but nils):
 * raised here, as they count arguments their own way (a __call's class) */
static void size_no_more(lua_State *L, int first, const char *op)
{
    if (emlua_top(L, first - 1) >= first) luaL_error(L, "%s: one argument too many (a %s)", op, type_of(L, first));
}

/* ember.Size({2, 3}), ember.Size(t.shape), ember.Size() (0-d); argument 1
 * is ember.Size itself (this is its __call) */
static int size_new(lua_State *L)
{
    int64_t sizes[EM_MAX_DIMS];
    int n = 0;
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TTABLE || emlua_test(L, 2))
            return luaL_error(L, "ember.Size: expected a table of integers, got %s", type_of(L, 2));
        n = size_entries(L, 2, "ember.Size", sizes);
    }
    size_no_more(L, 3, "ember.Size");
    push_size(L, sizes, n);
    return 1;
}

static int size_tostring(lua_State *L)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "ember.Size({");
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1) luaL_addstring(&b, ", ");
        lua_rawgeti(L, 1, i);
        luaL_tolstring(L, -1, NULL);
        lua_remove(L, -2);
        luaL_addvalue(&b);
    }
    luaL_addstring(&b, "})");
    luaL_pushresult(&b);
    return 1;
}

/* s:numel(): the number of elements a tensor of this size holds */
static int size_numel(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TTABLE || emlua_test(L, 1))
        return luaL_error(L, "ember.Size:numel: expected a size as self, got %s: use s:numel() (a method call with ':')",
                          type_of(L, 1));
    int64_t sizes[EM_MAX_DIMS];
    int n = size_entries(L, 1, "ember.Size:numel", sizes);
    size_no_more(L, 2, "ember.Size:numel");
    lua_Unsigned count = 1;   /* unsigned: a product past 2^63 wraps, as Lua's integers do */
    for (int i = 0; i < n; i++) count *= (lua_Unsigned)sizes[i];
    lua_pushinteger(L, (lua_Integer)count);
    return 1;
}

/* Creates ember.Size (the metatable of every Size, also holding its
 * methods) and sets it in the module table at the top of the stack. */
static void open_size(lua_State *L)
{
    static const luaL_Reg size_methods[] = {
        {"__eq", size_eq}, {"__tostring", size_tostring}, {"numel", size_numel}, {NULL, NULL},
    };
    luaL_newlib(L, size_methods);
    lua_pushliteral(L, "ember.Size");
    lua_setfield(L, -2, "__name");
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, size_index, 1);
    lua_setfield(L, -2, "__index");
    lua_createtable(L, 0, 1);   /* calling the class makes a Size */
    lua_pushcfunction(L, size_new);
    lua_setfield(L, -2, "__call");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &size_mt_key);
    lua_setfield(L, -2, "Size");
}

/* ---- properties ----------------------------------------------------------- */

static void push_device(lua_State *L, const em_tensor *t)
{
    char buf[32];
    lua_pushstring(L, em_device_str(t->storage->device, buf, sizeof buf));
}

static const char *const property_names[] = {"shape", "dtype", "device", "ndim", "is_cuda",
                                             "requires_grad", "is_leaf", "grad_fn", "grad",
                                             "T", "mT", "H", "mH", "data", "is_cpu", "itemsize", "nbytes"};

/* t.T, t.mT, t.H, t.mH as views, with PyTorch 2.x's rules: T reverses every dim (past 2-D
 * PyTorch warns that this is deprecated), H only for 0-D and 2-D, mT and mH swap the last
 * two dims of 2-D and up; a 0-D tensor is returned as it is. ember has no complex dtypes,
 * so the conjugate transposes H and mH are the transposes. */
static void push_transposed(lua_State *L, const em_tensor *t, const char *key)
{
    bool batched = key[0] == 'm', conj = key[batched] == 'H';
    if (t->ndim != 0) {
        if (batched && t->ndim < 2)
            luaL_error(L, "tensor.%s is only supported on matrices or batches of matrices, got a %d-D tensor", key,
                       t->ndim);
        if (!batched && conj && t->ndim != 2)
            luaL_error(L, "tensor.H is only supported on matrices (2-D tensors), got a %d-D tensor%s", t->ndim,
                       t->ndim > 2 ? " (for batches of matrices: tensor.mH)" : "");
    }
    if (batched && t->ndim >= 2) {
        emlua_push(L, em_transpose(t, t->ndim - 2, t->ndim - 1));
        return;
    }
    int dims[EM_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) dims[i] = t->ndim - 1 - i;
    emlua_push(L, em_permute(t, dims, t->ndim));
}

/* t.shape, t.dtype, ...: returns 1 if `key` is a property */
static int push_property(lua_State *L, const em_tensor *t, const char *key)
{
    if (strcmp(key, "shape") == 0) push_shape(L, t);
    else if (strcmp(key, "dtype") == 0) lua_pushstring(L, em_dtype_name(t->dtype));
    else if (strcmp(key, "device") == 0) push_device(L, t);
    else if (strcmp(key, "ndim") == 0) lua_pushinteger(L, t->ndim);
    else if (strcmp(key, "is_cuda") == 0) lua_pushboolean(L, t->storage->device.type == EM_CUDA);
    else if (strcmp(key, "requires_grad") == 0) lua_pushboolean(L, t->requires_grad);
    else if (strcmp(key, "is_leaf") == 0) lua_pushboolean(L, em_is_leaf(t));
    else if (strcmp(key, "grad_fn") == 0) {
        const char *name = em_grad_fn_name(t);
        if (name) lua_pushstring(L, name);
        else lua_pushnil(L);
    } else if (strcmp(key, "grad") == 0) {
        em_tensor *g = em_get_grad(t);
        if (g) emlua_push(L, g);
        else lua_pushnil(L);
    } else if (strcmp(key, "T") == 0 || strcmp(key, "mT") == 0 || strcmp(key, "H") == 0 || strcmp(key, "mH") == 0) {
        push_transposed(L, t, key);
    } else if (strcmp(key, "data") == 0) {
        emlua_push(L, em_detach(t));   /* t's memory without autograd, as PyTorch's t.data */
    } else if (strcmp(key, "is_cpu") == 0) {
        lua_pushboolean(L, t->storage->device.type == EM_CPU);
    } else if (strcmp(key, "itemsize") == 0) {
        lua_pushinteger(L, (lua_Integer)em_dtype_size(t->dtype));
    } else if (strcmp(key, "nbytes") == 0) {
        lua_pushinteger(L, (lua_Integer)(em_numel(t) * (int64_t)em_dtype_size(t->dtype)));
    } else return 0;
    return 1;
}

/* ---- indexing ---------------------------------------------------------------
 * t[i]            select along dim 1 (a 0-d tensor when t is 1-D; :item() reads it)
 * t[{i, j, ...}]  one entry per leading dim: an integer selects, a table
 *                 {start, stop[, step]} keeps an inclusive 1-based range, {}
 *                 keeps the whole dim
 * t[mask], t[idx] a tensor key alone is t[{key}] (below): a bool mask over t's
 *                 leading dims, an int64/int32 index tensor into dim 1
 * Tensors may also be entries of the table (advanced indexing, as PyTorch's
 * x[a, :, b]): an int64/int32 tensor indexes one dim, a bool tensor of k
 * dims consumes k dims; integers select first (as PyTorch does, so they do
 * not count as advanced indices), then em_index_tensors / em_index_put_ take
 * the view with one entry per remaining leading dim (NULL: the whole dim).
 * A 0-d integer tensor counts as an integer, as in PyTorch.
 */

typedef struct adv_list {
    int n;                          /* entries, one per leading dim of the view */
    em_tensor *e[EM_MAX_DIMS];      /* NULL: keep the dim; borrowed from the key table */
    bool any;                       /* some entry is a tensor */
} adv_list;

static int64_t user_index(lua_State *L, lua_Integer i, int64_t n, int dim, const char *op)
{
    if (i == 0 || i > n || i < -n)
        luaL_error(L, "%s: index %I out of range for dimension %d of size %I", op, (lua_Integer)i, dim + 1,
                   (lua_Integer)n);
    return i > 0 ? i - 1 : i + n;
}

/* Applies the index at stack position k to t; returns a new view (0-d when
 * every dim was selected by an integer, as PyTorch) and fills adv with the
 * tensor entries still to apply. */
static em_tensor *index_view(lua_State *L, em_tensor *t, int k, adv_list *adv, const char *op)
{
    adv->n = 0;
    adv->any = false;
    if (lua_type(L, k) == LUA_TNUMBER) {
        int ok;
        lua_Integer i = lua_tointegerx(L, k, &ok);
        if (!ok) luaL_error(L, "%s: index must be an integer, got %s", op, lua_tostring(L, k));
        if (t->ndim == 0) luaL_error(L, "%s: cannot index a 0-d tensor with a number", op);
        em_tensor *v = em_select(t, 0, user_index(L, i, t->sizes[0], 0, op));
        if (!v) emlua_fail(L);
        return v;
    }
    if (lua_type(L, k) != LUA_TTABLE)
        luaL_error(L, "%s: expected an integer, a table of ranges or a tensor as index, got %s", op,
                   luaL_typename(L, k));
    int n = (int)lua_rawlen(L, k), consumed = 0;
    for (int e = 1; e <= n; e++) {   /* dims the entries use: a k-dim mask k, a 0-d bool none */
        lua_rawgeti(L, k, e);
        em_tensor *x = emlua_test(L, -1);
        consumed += x && x->dtype == EM_BOOL ? x->ndim : 1;
        lua_pop(L, 1);
    }
    if (consumed > t->ndim) luaL_error(L, "%s: %d indices for a tensor of %d dimensions (%s)", op, consumed,
                                       t->ndim, em_shape_str(t, (char[160]){0}, 160));
    em_tensor *v = em_retain(t);
    int dim = 0, covered = 0;
    for (int e = 1; e <= n; e++) {
        lua_rawgeti(L, k, e);
        em_tensor *next = NULL;
        em_tensor *x = emlua_test(L, -1);
        if (x && (x->ndim > 0 || x->dtype == EM_BOOL)) {
            if (x->dtype != EM_BOOL && x->dtype != EM_INT64 && x->dtype != EM_INT32) {
                em_release(v);
                luaL_error(L, "%s: index %d: tensors used as indices must be int64, int32 or bool, got %s", op,
                           e, em_dtype_name(x->dtype));
            }
            int uses = x->dtype == EM_BOOL ? x->ndim : 1;
            if (adv->n + (dim - covered) + 1 > EM_MAX_DIMS || (uses == 0 && v->ndim >= EM_MAX_DIMS)) {
                em_release(v);
                luaL_error(L, "%s: too many dimensions", op);
            }
            for (; covered < dim; covered++) adv->e[adv->n++] = NULL;
            adv->e[adv->n++] = x;          /* a mask's further dims are implied by its shape */
            covered += uses;
            adv->any = true;
            dim += uses;
            lua_pop(L, 1);
            continue;
        }
        if (x || lua_type(L, -1) == LUA_TNUMBER) {
            lua_Integer i;
            if (x) {                        /* a 0-d integer tensor selects, as in PyTorch */
                if (x->dtype != EM_INT64 && x->dtype != EM_INT32) {
                    em_release(v);
                    luaL_error(L, "%s: index %d: tensors used as indices must be int64, int32 or bool, got %s",
                               op, e, em_dtype_name(x->dtype));
                }
                i = (lua_Integer)em_get_i(x, 0);
            } else {
                int ok;
                i = lua_tointegerx(L, -1, &ok);
                if (!ok) { em_release(v); luaL_error(L, "%s: index %d must be an integer", op, e); }
            }
            int64_t size = v->sizes[dim];
            if (i == 0 || i > size || i < -size) {
                em_release(v);
                luaL_error(L, "%s: index %I out of range for dimension %d of size %I", op, (lua_Integer)i,
                           e, (lua_Integer)size);
            }
            next = em_select(v, dim, i > 0 ? i - 1 : i + size);
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            int m = (int)lua_rawlen(L, -1);
            int64_t size = v->sizes[dim], r[3] = {1, size, 1};
            if (m > 3) { em_release(v); luaL_error(L, "%s: range %d has %d entries (expected {start, stop[, step]})", op, e, m); }
            for (int j = 0; j < m; j++) {
                lua_rawgeti(L, -1, j + 1);
                int ok;
                r[j] = lua_tointegerx(L, -1, &ok);
                lua_pop(L, 1);
                if (!ok) { em_release(v); luaL_error(L, "%s: range %d entry %d must be an integer", op, e, j + 1); }
            }
            if (m == 1) r[1] = r[0];
            int64_t start = r[0] < 0 ? r[0] + size + 1 : r[0], stop = r[1] < 0 ? r[1] + size + 1 : r[1];
            if (start < 1 || start > size + 1 || stop > size || r[2] <= 0) {
                em_release(v);
                luaL_error(L, "%s: range {%I, %I, %I} out of bounds for dimension %d of size %I", op,
                           (lua_Integer)r[0], (lua_Integer)r[1], (lua_Integer)r[2], e, (lua_Integer)size);
            }
            next = em_slice(v, dim, start - 1, stop, r[2]);
            dim++;
        } else {
            em_release(v);
            luaL_error(L, "%s: index %d must be an integer or a range table, got %s", op, e, luaL_typename(L, -1));
        }
        lua_pop(L, 1);
        em_release(v);
        if (!next) emlua_fail(L);
        v = next;
    }
    return v;
}

static int tensor_index(lua_State *L)
{
    em_tensor *t = self(L, "index");
    if (lua_type(L, 2) == LUA_TSTRING) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
        if (push_property(L, t, lua_tostring(L, 2))) return 1;
        if (emlua_lazy_method(L, lua_tostring(L, 2))) return 1;
        /* a misspelt field is a mistake worth naming, not a silent nil (PyTorch: AttributeError) */
        return luaL_error(L, "index: tensor has no field or method '%s'", lua_tostring(L, 2));
    }
    em_tensor *key = emlua_test(L, 2);
    if (key) {
        if (key->dtype != EM_BOOL && key->dtype != EM_INT64 && key->dtype != EM_INT32)
            return luaL_error(L, "index: tensors used as indices must be int64, int32 or bool, got %s",
                              em_dtype_name(key->dtype));
        return emlua_push(L, em_index_tensors(t, &key, 1));
    }
    adv_list adv;
    em_tensor *v = index_view(L, t, 2, &adv, "index");
    if (adv.any) {
        em_tensor *r = em_index_tensors(v, adv.e, adv.n);
        em_release(v);
        return emlua_push(L, r);
    }
    return emlua_push(L, v);
}

/* An engine error of an index assignment, named after the assignment rather
 * than the op that carried it out ("masked_fill_: ...", "fill_: ..."). */
static int fail_assign(lua_State *L, const char *what)
{
    const char *msg = em_error();
    const char *rest = strstr(msg, ": ");
    luaL_where(L, 1);
    lua_pushfstring(L, "%s: %s", what, rest && !memchr(msg, ' ', (size_t)(rest - msg)) ? rest + 2 : msg);
    lua_concat(L, 2);
    return lua_error(L);
}

/* The value of an assignment through index tensors into t, as a tensor:
 * a number or boolean becomes a 0-d tensor of t's dtype. NULL with an error
 * otherwise (the caller may hold references it must drop before raising). */
static em_tensor *assigned_value(const em_tensor *t, lua_State *L, int idx)
{
    em_tensor *src = emlua_test(L, idx);
    if (src) return em_retain(src);
    if (lua_type(L, idx) != LUA_TNUMBER && lua_type(L, idx) != LUA_TBOOLEAN)
        return em_set_error("newindex: expected a number or a tensor as the value, got %s",
                            luaL_typename(L, idx)), NULL;
    double v = lua_type(L, idx) == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
    if (em_check_value_fits("newindex", v, t->dtype)) return NULL;
    if (lua_isinteger(L, idx) && t->dtype == EM_INT64) {   /* exact past 2^53 */
        int64_t i = (int64_t)lua_tointeger(L, idx);
        int64_t none[1] = {0};
        em_tensor *h = em_from_host(none, 0, EM_INT64, NULL, &i);
        em_tensor *r = h ? em_to_device(h, t->storage->device) : NULL;
        em_release(h);
        return r;
    }
    return em_scalar(v, t->dtype, t->storage->device);
}

static int index_put_value(lua_State *L, em_tensor *t, em_tensor *const *keys, int n, int idx)
{
    em_tensor *val = assigned_value(t, L, idx);
    if (!val || em_index_put_(t, keys, n, val, false)) {
        em_release(val);
        return fail_assign(L, "t[i] = v");
    }
    em_release(val);
    return 0;
}

static int tensor_newindex(lua_State *L)
{
    em_tensor *t = self(L, "newindex");
    em_tensor *key = emlua_test(L, 2);
    if (key) {
        bool number = lua_type(L, 3) == LUA_TNUMBER || lua_type(L, 3) == LUA_TBOOLEAN;
        bool same = key->dtype == EM_BOOL && key->ndim == t->ndim &&
                    memcmp(key->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim) == 0;
        if (same && number) {   /* the common t[mask] = v: one masked_fill_ */
            double v = lua_type(L, 3) == LUA_TBOOLEAN ? lua_toboolean(L, 3) : lua_tonumber(L, 3);
            if (em_masked_fill_(t, key, v)) return fail_assign(L, "t[mask] = v");
            return 0;
        }
        if (key->dtype != EM_BOOL && key->dtype != EM_INT64 && key->dtype != EM_INT32)
            return luaL_error(L, "newindex: tensors used as indices must be int64, int32 or bool, got %s",
                              em_dtype_name(key->dtype));
        return index_put_value(L, t, &key, 1, 3);
    }
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char *key = lua_tostring(L, 2);
        if (strcmp(key, "requires_grad") == 0) {
            if (lua_type(L, 3) != LUA_TBOOLEAN) return luaL_error(L, "requires_grad: expected a boolean, got %s", luaL_typename(L, 3));
            if (em_requires_grad_(t, lua_toboolean(L, 3))) return emlua_fail(L);
            return 0;
        }
        if (strcmp(key, "grad") == 0) {
            em_tensor *g = lua_isnil(L, 3) ? NULL : emlua_check(L, 3, "grad");
            if (em_set_grad(t, g)) return emlua_fail(L);
            return 0;
        }
        if (strcmp(key, "data") == 0) {
            if (em_set_data_(t, emlua_check(L, 3, "data"))) return emlua_fail(L);
            return 0;
        }
        return luaL_error(L, "newindex: cannot set field '%s' of a tensor", key);
    }
    adv_list adv;
    em_tensor *v = index_view(L, t, 2, &adv, "newindex");
    if (adv.any) {
        em_tensor *val = assigned_value(v, L, 3);
        int prc = val ? em_index_put_(v, adv.e, adv.n, val, false) : -1;
        em_release(val);
        em_release(v);
        if (prc) return fail_assign(L, "t[i] = v");
        em_bump_version(t);
        return 0;
    }
    int rc;
    em_tensor *src = emlua_test(L, 3);
    if (src) rc = em_copy_(v, src);
    else if (lua_type(L, 3) == LUA_TNUMBER) rc = em_fill_(v, lua_tonumber(L, 3));
    else if (lua_type(L, 3) == LUA_TBOOLEAN) rc = em_fill_(v, lua_toboolean(L, 3));
    else {
        em_release(v);
        return luaL_error(L, "newindex: expected a number or a tensor as the value, got %s", luaL_typename(L, 3));
    }
    if (rc == 0) em_bump_version(t);
    em_release(v);
    if (rc) return fail_assign(L, "t[i] = v");
    return 0;
}

static int tensor_len(lua_State *L)
{
    em_tensor *t = self(L, "len");
    if (t->ndim == 0) return luaL_error(L, "len: a 0-d tensor has no length");
    lua_pushinteger(L, t->sizes[0]);
    return 1;
}

/* ---- operators ---------------------------------------------------------- */

static int arith(lua_State *L, em_binary_op op, const char *name)
{
    em_tensor *a = emlua_test(L, 1), *b = emlua_test(L, 2);
    if (a && b) return emlua_push(L, em_binary(op, a, b));
    int num = a ? 2 : 1;
    em_tensor *t = a ? a : b;
    if (lua_type(L, num) != LUA_TNUMBER) {
        if (lua_type(L, num) == LUA_TBOOLEAN) {
            em_tensor *s = emlua_check_operand(L, num, name, t);
            em_tensor *r = a ? em_binary(op, a, s) : em_binary(op, s, b);
            em_release(s);
            return emlua_push(L, r);
        }
        return luaL_error(L, "%s: expected a tensor or a number, got %s", name, luaL_typename(L, num));
    }
    if (emlua_exact_integer_operand(L, t, num)) {
        /* an int64 tensor and an integer past 2^53: exactly, not through a double */
        em_tensor *w = emlua_check_operand(L, num, name, t);
        em_tensor *r = a ? em_binary(op, a, w) : em_binary(op, w, b);
        em_release(w);
        return emlua_push(L, r);
    }
    bool is_int = lua_isinteger(L, num);
    double s = is_int ? (double)lua_tointeger(L, num) : lua_tonumber(L, num);
    return emlua_push(L, em_binary_scalar(op, t, s, is_int, num == 1));
}

static int op_add(lua_State *L) { return arith(L, EM_ADD, "add"); }
static int op_sub(lua_State *L) { return arith(L, EM_SUB, "sub"); }
static int op_mul(lua_State *L) { return arith(L, EM_MUL, "mul"); }
static int op_div(lua_State *L) { return arith(L, EM_DIV, "div"); }
static int op_mod(lua_State *L) { return arith(L, EM_REMAINDER, "remainder"); }
/* a // b: Python's floor division, PyTorch's floor_divide */
static int op_idiv(lua_State *L) { return arith(L, EM_DIV_FLOOR, "floor_divide"); }
static int op_pow(lua_State *L)
{
    return arith(L, EM_POW, "pow");
}
static int op_unm(lua_State *L) { return emlua_push(L, em_unary(EM_NEG, self(L, "neg"))); }

/* ---- information -------------------------------------------------------- */

/* size(d) and stride(d) of a 0-d tensor: there is no dim to ask about (PyTorch
 * raises too; reductions, which accept dim 1 of a 0-d tensor, differ). */
static int no_dims(lua_State *L, int arg, const char *op)
{
    return emlua_argerror(L, arg, op, "dim %lld out of range: the tensor is 0-d (it has no dims)",
                          (long long)emlua_check_integer(L, arg, op));
}

static int t_size(lua_State *L)
{
    em_tensor *t = self(L, "size");
    no_more(L, 3, "size");
    if (lua_isnoneornil(L, 2)) {
        push_shape(L, t);
        return 1;
    }
    if (t->ndim == 0) no_dims(L, 2, "size");
    int d = emlua_check_dim(L, 2, t->ndim, "size");
    lua_pushinteger(L, t->sizes[d]);
    return 1;
}

static int t_stride(lua_State *L)
{
    em_tensor *t = self(L, "stride");
    no_more(L, 3, "stride");
    if (lua_isnoneornil(L, 2)) {
        lua_createtable(L, t->ndim, 0);
        for (int i = 0; i < t->ndim; i++) {
            lua_pushinteger(L, t->strides[i]);
            lua_rawseti(L, -2, i + 1);
        }
        return 1;
    }
    if (t->ndim == 0) no_dims(L, 2, "stride");
    int d = emlua_check_dim(L, 2, t->ndim, "stride");
    lua_pushinteger(L, t->strides[d]);
    return 1;
}

static int t_dim(lua_State *L) { lua_pushinteger(L, self_alone(L, "dim")->ndim); return 1; }
static int t_numel(lua_State *L) { lua_pushinteger(L, em_numel(self_alone(L, "numel"))); return 1; }
static int t_element_size(lua_State *L) { lua_pushinteger(L, (lua_Integer)em_dtype_size(self_alone(L, "element_size")->dtype)); return 1; }
static int t_storage_offset(lua_State *L) { lua_pushinteger(L, self_alone(L, "storage_offset")->offset); return 1; }
/* the address of the first element (a device address for a CUDA tensor), as an
 * integer: equal for two tensors that start at the same memory, as PyTorch's */
/* t:pin_memory(): a copy in page-locked memory, for fast copies to a GPU */
static int t_pin_memory(lua_State *L) { return emlua_push(L, em_pin_memory(self_alone(L, "pin_memory"))); }
static int t_is_pinned(lua_State *L)
{
    lua_pushboolean(L, em_is_pinned(self_alone(L, "is_pinned")));
    return 1;
}

static int t_data_ptr(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)(uintptr_t)em_data_ptr(self_alone(L, "data_ptr")));
    return 1;
}
static int t_is_contiguous(lua_State *L) { lua_pushboolean(L, em_is_contiguous(self_alone(L, "is_contiguous"))); return 1; }

static int t_is_floating_point(lua_State *L)
{
    lua_pushboolean(L, em_dtype_is_float(self_alone(L, "is_floating_point")->dtype));
    return 1;
}

/* Whether two tensors share a storage (used by tests and users to check views). */
static int t_is_view_of(lua_State *L)
{
    em_tensor *a = self(L, "is_view_of"), *b = emlua_check(L, 2, "is_view_of");
    no_more(L, 3, "is_view_of");
    lua_pushboolean(L, a->storage == b->storage);
    return 1;
}

/* PyTorch's is_set_to: the same memory seen the same way (storage, offset,
 * dtype, sizes and strides), as a view that aliases t exactly. */
static int t_is_set_to(lua_State *L)
{
    em_tensor *a = self(L, "is_set_to"), *b = emlua_check(L, 2, "is_set_to");
    no_more(L, 3, "is_set_to");
    bool same = a->storage == b->storage && a->offset == b->offset && a->dtype == b->dtype && a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->sizes[d] == b->sizes[d] && a->strides[d] == b->strides[d];
    lua_pushboolean(L, same);
    return 1;
}

static int t_item(lua_State *L)
{
    em_tensor *t = self_alone(L, "item");
    double v;
    if (em_item(t, &v)) return emlua_fail(L);
    if (emlua_nan_stop) emlua_nan_poll(L);
    push_scalar(L, t);
    return 1;
}

/* tolist: nested tables of Lua values, row-major. */
static void push_list(lua_State *L, const em_tensor *t, int dim, int64_t *pos, const double *f, const int64_t *iv)
{
    int64_t n = t->sizes[dim];
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        if (dim == t->ndim - 1) {
            if (f) lua_pushnumber(L, f[*pos]);
            else if (t->dtype == EM_BOOL) lua_pushboolean(L, iv[*pos] != 0);
            else lua_pushinteger(L, iv[*pos]);
            (*pos)++;
        } else {
            push_list(L, t, dim + 1, pos, f, iv);
        }
        lua_rawseti(L, -2, i + 1);
    }
}

static int t_tolist(lua_State *L)
{
    em_tensor *t = self_alone(L, "tolist");
    if (t->ndim == 0) {
        push_scalar(L, t);
        if (emlua_nan_stop) emlua_nan_poll(L);
        return 1;
    }
    int64_t n = em_numel(t), pos = 0;
    bool isf = em_dtype_is_float(t->dtype);
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    if (!buf) return luaL_error(L, "tolist: out of memory");
    int rc = isf ? em_to_host_f64(t, buf) : em_to_host_i64(t, buf);
    if (rc) { free(buf); return emlua_fail(L); }
    luaL_checkstack(L, t->ndim + 4, "tolist");
    push_list(L, t, 0, &pos, isf ? buf : NULL, isf ? NULL : buf);
    free(buf);
    if (emlua_nan_stop) emlua_nan_poll(L);
    return 1;
}

/* ---- views -------------------------------------------------------------- */

/* view, reshape and expand: fn(t, sizes) with the sizes given (sized) or
 * another tensor's (shaped_like, their _as forms) */
typedef em_tensor *(*sized_fn)(const em_tensor *t, const int64_t *sizes, int ndim);

static int sized(lua_State *L, const char *op, sized_fn fn)
{
    em_tensor *t = self(L, op);
    int64_t sizes[EM_MAX_DIMS];
    int n = emlua_check_sizes(L, 2, op, sizes);
    /* the sizes stop at a trailing table of keywords, of which these take none */
    emlua_check_option_names(L, emlua_options_index(L, 2), op, NULL);
    return emlua_push(L, fn(t, sizes, n));
}

static int shaped_like(lua_State *L, const char *op, sized_fn fn)
{
    em_tensor *t = self(L, op), *o = emlua_check(L, 2, op);
    no_more(L, 3, op);
    return emlua_push(L, fn(t, o->sizes, o->ndim));
}

static int t_view(lua_State *L)
{
    /* view(dtype) is not supported; view(other) is view_as */
    if (emlua_test(L, 2)) return shaped_like(L, "view", em_view);
    return sized(L, "view", em_view);
}

static int t_view_as(lua_State *L) { return shaped_like(L, "view_as", em_view); }
static int t_reshape(lua_State *L) { return sized(L, "reshape", em_reshape); }
static int t_reshape_as(lua_State *L) { return shaped_like(L, "reshape_as", em_reshape); }

static int t_t(lua_State *L) { return emlua_push(L, em_t(self_alone(L, "t"))); }

static int t_transpose(lua_State *L)
{
    em_tensor *t = self(L, "transpose");
    int d0 = emlua_check_dim(L, 2, t->ndim, "transpose"), d1 = emlua_check_dim(L, 3, t->ndim, "transpose");
    no_more(L, 4, "transpose");
    return emlua_push(L, em_transpose(t, d0, d1));
}

static int t_permute(lua_State *L)
{
    em_tensor *t = self(L, "permute");
    int dims[EM_MAX_DIMS], n;
    if (lua_type(L, 2) == LUA_TTABLE) {
        n = emlua_opt_dims(L, 2, t->ndim, "permute", dims);
        no_more(L, 3, "permute");
    } else {
        n = lua_gettop(L) - 1;
        if (n > EM_MAX_DIMS) return luaL_error(L, "permute: too many dimensions");
        for (int i = 0; i < n; i++) dims[i] = emlua_check_dim(L, i + 2, t->ndim, "permute");
    }
    return emlua_push(L, em_permute(t, dims, n));
}

static int t_narrow(lua_State *L)
{
    em_tensor *t = self(L, "narrow");
    if (t->ndim == 0) return luaL_error(L, "narrow: cannot narrow a 0-d tensor");
    int d = emlua_check_dim(L, 2, t->ndim, "narrow");
    lua_Integer start = emlua_check_integer(L, 3, "narrow"), len = emlua_check_integer(L, 4, "narrow");
    no_more(L, 5, "narrow");
    int64_t size = t->sizes[d];
    if (start == 0 || start > size + 1 || start < -size)
        return emlua_argerror(L, 3, "narrow", "start %lld out of range for dimension %d of size %lld",
                              (long long)start, d + 1, (long long)size);
    return emlua_push(L, em_narrow(t, d, start > 0 ? start - 1 : start + size, len));
}

static int t_select(lua_State *L)
{
    em_tensor *t = self(L, "select");
    if (t->ndim == 0) return luaL_error(L, "select: cannot select from a 0-d tensor");
    int d = emlua_check_dim(L, 2, t->ndim, "select");
    lua_Integer i = emlua_check_integer(L, 3, "select");
    no_more(L, 4, "select");
    return emlua_push(L, em_select(t, d, user_index(L, i, t->sizes[d], d, "select")));
}

/* slice(dim, start, stop, step): inclusive 1-based range, like string.sub */
static int t_slice(lua_State *L)
{
    em_tensor *t = self(L, "slice");
    if (t->ndim == 0) return luaL_error(L, "slice: cannot slice a 0-d tensor");
    int d = emlua_check_dim(L, 2, t->ndim, "slice");
    int64_t size = t->sizes[d];
    lua_Integer start = emlua_opt_integer(L, 3, "slice", 1), stop = emlua_opt_integer(L, 4, "slice", size);
    lua_Integer step = emlua_opt_integer(L, 5, "slice", 1);
    no_more(L, 6, "slice");
    if (step <= 0) return emlua_argerror(L, 5, "slice", "step must be positive, got %lld", (long long)step);
    if (start < 0) start += size + 1;
    if (stop < 0) stop += size + 1;
    if (start < 1) start = 1;
    return emlua_push(L, em_slice(t, d, start - 1, stop, step));
}

static int t_expand(lua_State *L) { return sized(L, "expand", em_expand); }
static int t_expand_as(lua_State *L) { return shaped_like(L, "expand_as", em_expand); }

static const char *const dim_name[] = {"dim", NULL};

/* t:squeeze([dim]) or t:squeeze({dim =}) */
static int t_squeeze(lua_State *L)
{
    em_tensor *t = self(L, "squeeze");
    emlua_args a;
    emlua_args_start(&a, L, "squeeze", 2, dim_name);
    int at = emlua_arg_at(&a, 0);
    if (!at) return emlua_push(L, em_squeeze(t));
    return emlua_push(L, em_squeeze_dim(t, emlua_check_dim(L, at, t->ndim, "squeeze")));
}

/* t:unsqueeze(dim) or t:unsqueeze({dim =}) */
static int t_unsqueeze(lua_State *L)
{
    em_tensor *t = self(L, "unsqueeze");
    emlua_args a;
    emlua_args_start(&a, L, "unsqueeze", 2, dim_name);
    int at = emlua_arg_at(&a, 0);
    return emlua_push(L, em_unsqueeze(t, emlua_check_dim(L, at ? at : 2, t->ndim + 1, "unsqueeze")));
}

/* t:t_(), t:transpose_(d0, d1) (and swapaxes_ / swapdims_), t:squeeze_([dim]),
 * t:unsqueeze_(dim): the view op's result becomes t itself, which is returned. */
static int become_view(lua_State *L, em_tensor *t, em_tensor *v, const char *base)
{
    if (em_become_view_(base, t, v)) return emlua_fail(L);
    lua_settop(L, 1);
    return 1;
}

static int t_t_(lua_State *L)
{
    em_tensor *t = self_alone(L, "t_");
    return become_view(L, t, em_t(t), "t");
}

static int t_transpose_(lua_State *L)
{
    em_tensor *t = self(L, "transpose_");
    int d0 = emlua_check_dim(L, 2, t->ndim, "transpose_"), d1 = emlua_check_dim(L, 3, t->ndim, "transpose_");
    no_more(L, 4, "transpose_");
    return become_view(L, t, em_transpose(t, d0, d1), "transpose");
}

static int t_squeeze_(lua_State *L)
{
    em_tensor *t = self(L, "squeeze_");
    no_more(L, 3, "squeeze_");
    em_tensor *v = lua_isnoneornil(L, 2) ? em_squeeze(t) : em_squeeze_dim(t, emlua_check_dim(L, 2, t->ndim, "squeeze_"));
    return become_view(L, t, v, "squeeze");
}

static int t_unsqueeze_(lua_State *L)
{
    em_tensor *t = self(L, "unsqueeze_");
    no_more(L, 3, "unsqueeze_");
    return become_view(L, t, em_unsqueeze(t, emlua_check_dim(L, 2, t->ndim + 1, "unsqueeze_")), "unsqueeze");
}

/* t:flatten([start_dim [, end_dim]]), also as {start_dim =, end_dim =} (torch.flatten(x, start_dim=1)) */
static int t_flatten(lua_State *L)
{
    static const char *const names[] = {"start_dim", "end_dim", NULL};
    em_tensor *t = self(L, "flatten");
    emlua_args a;
    emlua_args_start(&a, L, "flatten", 2, names);
    int s = emlua_arg_dim(&a, 0, t->ndim, 0), e = emlua_arg_dim(&a, 1, t->ndim, t->ndim ? t->ndim - 1 : 0);
    return emlua_push(L, em_flatten(t, s, e));
}

static int t_unfold(lua_State *L)
{
    em_tensor *t = self(L, "unfold");
    no_more(L, 5, "unfold");
    int d = emlua_check_dim(L, 2, t->ndim, "unfold");
    return emlua_push(L, em_unfold(t, d, emlua_check_integer(L, 3, "unfold"), emlua_check_integer(L, 4, "unfold")));
}

/* t:diagonal([offset]): offset > 0 above the main diagonal, < 0 below. An
 * offset is a narrow of the columns (rows) before the main diagonal, so it
 * stays a differentiable view made of two engine views. */
static int t_diagonal(lua_State *L)
{
    em_tensor *t = self(L, "diagonal");
    lua_Integer k = emlua_opt_integer(L, 2, "diagonal", 0);
    no_more(L, 3, "diagonal");
    if (k == 0 || t->ndim != 2) return emlua_push(L, em_diagonal(t));
    int dim = k > 0 ? 1 : 0;
    int64_t size = t->sizes[dim];
    /* |k| past the corner (math.mininteger included, whose negation
     * overflows) gives an empty diagonal, as in PyTorch */
    int64_t skip = k > size || k < -size ? size : k > 0 ? k : -k;
    em_tensor *part = em_narrow(t, dim, skip, size - skip);
    if (!part) return emlua_fail(L);
    em_tensor *d = em_diagonal(part);
    em_release(part);
    return emlua_push(L, d);
}
static int t_contiguous(lua_State *L) { return emlua_push(L, em_contiguous(self_alone(L, "contiguous"))); }
static int t_clone(lua_State *L) { return emlua_push(L, em_clone(self_alone(L, "clone"))); }

/* PyTorch's non_blocking (copy_, to, cuda): a boolean at position i or in the
 * options table at opts (0: none). ember's copies have completed when they
 * return, which is what a non-blocking copy looks like once synchronised, so
 * the value is checked and has nothing to change. */
static void check_non_blocking(lua_State *L, int i, int opts, const char *op)
{
    if (i && !lua_isnoneornil(L, i) && lua_type(L, i) != LUA_TBOOLEAN)
        emlua_typeerror(L, i, op, "a boolean (non_blocking)");
    if (opts && lua_getfield(L, opts, "non_blocking") != LUA_TNIL && lua_type(L, -1) != LUA_TBOOLEAN)
        emlua_argerror(L, opts, op, "non_blocking must be a boolean, got %s", luaL_typename(L, -1));
    if (opts) lua_pop(L, 1);
}

static const char *const non_blocking_only[] = {"non_blocking", NULL};

/* t:copy_(src [, non_blocking]) or t:copy_(src, {non_blocking =}) */
static int t_copy_(lua_State *L)
{
    em_tensor *t = self(L, "copy_"), *src = emlua_check(L, 2, "copy_");
    emlua_args a;
    emlua_args_start(&a, L, "copy_", 3, non_blocking_only);
    check_non_blocking(L, a.opts ? 0 : 3, a.opts, "copy_");
    return emlua_push_self(L, em_copy_(t, src));
}

static int t_fill_(lua_State *L)
{
    em_tensor *t = self(L, "fill_");
    double v = lua_type(L, 2) == LUA_TBOOLEAN ? lua_toboolean(L, 2) : emlua_check_number(L, 2, "fill_");
    no_more(L, 3, "fill_");
    if (emlua_exact_integer_operand(L, t, 2)) {     /* past 2^53: not through a double */
        em_tensor *s = emlua_check_operand(L, 2, "fill_", t);
        int rc = s ? em_copy_(t, s) : -1;
        em_release(s);
        return emlua_push_self(L, rc);
    }
    return emlua_push_self(L, em_fill_(t, v));
}

static int t_zero_(lua_State *L)
{
    return emlua_push_self(L, em_fill_(self_alone(L, "zero_"), 0));
}

/* ---- conversions --------------------------------------------------------- */

/* to(dtype) / to(device) / to(device, dtype) / to(other) / to{dtype=, device=}:
 * PyTorch's positional dtype and device (names, in either order), then its
 * non_blocking and copy (booleans, by position or as keywords), each given
 * once at most: a second dtype (to("float32", "float64"), or one in the table
 * too) would otherwise win without a word. copy = true returns a new tensor
 * even when nothing changes; non_blocking has nothing to change (see
 * check_non_blocking). memory_format is not read, so it is refused. */
static const char *const to_keywords[] = {"dtype", "device", "non_blocking", "copy", NULL};

/* raises when `what` (a dtype or a device, at argument i) was given before */
static void to_once(lua_State *L, int i, bool *given, const char *what)
{
    if (*given) emlua_argerror(L, i, "to", "a second %s (one is given already)", what);
    *given = true;
}

/* the booleans non_blocking then copy, by position (nb counts those seen) */
static void to_flag(lua_State *L, int i, int *nb, bool *copy)
{
    if (*nb == 2) emlua_argerror(L, i, "to", "a third boolean (non_blocking and copy are given already)");
    if (*nb == 1) *copy = lua_toboolean(L, i);
    (*nb)++;
}

static int t_to(lua_State *L)
{
    em_tensor *t = self(L, "to");
    em_dtype d = t->dtype;
    em_device dev = t->storage->device;
    em_tensor *o = emlua_test(L, 2);
    if (o) {
        d = o->dtype;
        dev = o->storage->device;
    }
    int top = lua_gettop(L), nb = 0;
    bool has_d = o != NULL, has_dev = o != NULL, copy = false;
    for (int i = o ? 3 : 2; i <= top; i++) {
        emlua_device_arg(L, i);
        if (lua_type(L, i) == LUA_TSTRING && nb == 0) {
            const char *s = lua_tostring(L, i);
            if (!em_dtype_from_name(s, &d)) to_once(L, i, &has_d, "dtype");
            else if (!em_device_parse(s, &dev)) to_once(L, i, &has_dev, "device");
            else return emlua_argerror(L, i, "to", "'%s' is neither a dtype nor a device", s);
        } else if (lua_type(L, i) == LUA_TBOOLEAN) {
            to_flag(L, i, &nb, &copy);
        } else if (lua_type(L, i) == LUA_TTABLE && !emlua_test(L, i)) {
            emlua_keywords(L, i, "to", to_keywords);   /* the keywords come last */
            if (lua_getfield(L, i, "dtype") != LUA_TNIL) to_once(L, i, &has_d, "dtype");
            if (lua_getfield(L, i, "device") != LUA_TNIL) to_once(L, i, &has_dev, "device");
            lua_pop(L, 2);
            d = emlua_opt_dtype(L, i, "to", d);
            dev = emlua_opt_device(L, i, "to", dev);
            check_non_blocking(L, 0, i, "to");
            if (lua_getfield(L, i, "copy") != LUA_TNIL) {
                if (lua_type(L, -1) != LUA_TBOOLEAN)
                    return emlua_argerror(L, i, "to", "copy must be a boolean, got %s", luaL_typename(L, -1));
                if (nb == 2) return emlua_argerror(L, i, "to", "copy given twice (by position and in the table)");
                copy = lua_toboolean(L, -1);
            }
            lua_pop(L, 1);
            break;
        } else if (!lua_isnil(L, i)) {
            if (o || nb) return emlua_argerror(L, i, "to", "one argument too many (a %s)", luaL_typename(L, i));
            return emlua_typeerror(L, i, "to", "a dtype, a device or an options table");
        }
    }
    em_tensor *r = em_to_device(t, dev);
    if (!r) return emlua_fail(L);
    em_tensor *c = em_to_dtype(r, d);
    em_release(r);
    if (c == t && copy) {   /* nothing changed, and a new tensor was asked for */
        em_release(c);
        c = em_clone(t);
    }
    return emlua_push(L, c);
}

static int convert(lua_State *L, em_dtype d, const char *op) { return emlua_push(L, em_to_dtype(self_alone(L, op), d)); }
static int t_float(lua_State *L) { return convert(L, EM_FLOAT32, "float"); }
static int t_double(lua_State *L) { return convert(L, EM_FLOAT64, "double"); }
static int t_long(lua_State *L) { return convert(L, EM_INT64, "long"); }
static int t_int(lua_State *L) { return convert(L, EM_INT32, "int"); }
static int t_bool(lua_State *L) { return convert(L, EM_BOOL, "bool"); }
static int t_short(lua_State *L) { return convert(L, EM_INT16, "short"); }
static int t_char(lua_State *L) { return convert(L, EM_INT8, "char"); }
static int t_byte(lua_State *L) { return convert(L, EM_UINT8, "byte"); }
static int t_half(lua_State *L) { return convert(L, EM_FLOAT16, "half"); }
static int t_bfloat16(lua_State *L) { return convert(L, EM_BFLOAT16, "bfloat16"); }

static int t_type(lua_State *L)
{
    em_tensor *t = self(L, "type");
    no_more(L, 3, "type");
    if (lua_isnoneornil(L, 2)) { lua_pushstring(L, em_dtype_name(t->dtype)); return 1; }
    return emlua_push(L, em_to_dtype(t, emlua_check_dtype(L, 2, "type")));
}

static int t_cpu(lua_State *L) { return emlua_push(L, em_to_device(self_alone(L, "cpu"), CPU)); }

/* t:cuda([device [, non_blocking]]) or with {device =, non_blocking =} */
static int t_cuda(lua_State *L)
{
    static const char *const names[] = {"device", "non_blocking", NULL};
    em_tensor *t = self(L, "cuda");
    emlua_args a;
    emlua_args_start(&a, L, "cuda", 2, names);
    int at = emlua_arg_at(&a, 0);
    /* t:cuda(1), t:cuda("cuda:1"), t:cuda(ember.device("cuda", 1)) */
    em_device dev = {EM_CUDA, at ? emlua_cuda_index(L, at, "cuda") : 0};
    check_non_blocking(L, a.opts ? 0 : 3, a.opts, "cuda");
    return emlua_push(L, em_to_device(t, dev));
}

/* ---- creation -------------------------------------------------------------- */

/* The keywords of the creation functions: ember.tensor and the *_like ones
 * take these, the factories (zeros, full, arange, ...) PyTorch's out= too.
 * PyTorch's layout, pin_memory and memory_format are not read, so refused. */
static const char *const created_keywords[] = {"dtype", "device", "requires_grad", NULL};
static const char *const factory_keywords[] = {"dtype", "device", "requires_grad", "out", NULL};

/* Walks a nested table to find its shape (following first elements). */
static int table_shape(lua_State *L, int idx, int64_t *sizes)
{
    int nd = 0;
    lua_pushvalue(L, idx);
    while (lua_type(L, -1) == LUA_TTABLE && !emlua_test(L, -1)) {
        if (nd >= EM_MAX_DIMS) luaL_error(L, "ember.tensor: argument 1: nested more than %d deep", EM_MAX_DIMS);
        int64_t n = (int64_t)lua_rawlen(L, -1);
        sizes[nd++] = n;
        if (n == 0) break;
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
    }
    lua_pop(L, 1);
    return nd;
}

typedef struct fill_state {
    double *f;
    int64_t *i;
    int64_t pos;
    bool any_float, any_bool, any_number;
} fill_state;

/* "[2][5]": the position of an element (pos[0..depth], 1-based), for the
 * error messages; formatted only when one is raised (not per element: that
 * cost more than the copy of a large table). */
static const char *element_path(lua_State *L, const int64_t *pos, int depth)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int d = 0; d <= depth; d++) {
        char item[32];
        snprintf(item, sizeof item, "[%lld]", (long long)pos[d]);
        luaL_addstring(&b, item);
    }
    luaL_pushresult(&b);
    return lua_tostring(L, -1);
}

static void table_values(lua_State *L, int idx, const int64_t *sizes, int nd, int depth, fill_state *st, int64_t *pos)
{
    int64_t n = (int64_t)lua_rawlen(L, idx);
    if (n != sizes[depth] || emlua_test(L, idx))
        luaL_error(L, "ember.tensor: argument 1: ragged nested table: expected %I elements at %s, got %I",
                   (lua_Integer)sizes[depth], depth ? element_path(L, pos, depth - 1) : "the top level",
                   (lua_Integer)n);
    for (int64_t k = 1; k <= n; k++) {
        int type = lua_rawgeti(L, idx, k);
        pos[depth] = k;
        if (depth + 1 < nd) {
            if (type != LUA_TTABLE)
                luaL_error(L, "ember.tensor: argument 1: ragged nested table: element %s is a %s, expected a table",
                           element_path(L, pos, depth), luaL_typename(L, -1));
            table_values(L, lua_gettop(L), sizes, nd, depth + 1, st, pos);
        } else if (type == LUA_TNUMBER) {
            st->any_number = true;
            if (lua_isinteger(L, -1)) {
                st->i[st->pos] = lua_tointeger(L, -1);
                st->f[st->pos] = (double)st->i[st->pos];
            } else {
                st->any_float = true;
                st->f[st->pos] = lua_tonumber(L, -1);
            }
            st->pos++;
        } else if (type == LUA_TBOOLEAN) {
            st->any_bool = true;
            st->i[st->pos] = lua_toboolean(L, -1);
            st->f[st->pos] = (double)st->i[st->pos];
            st->pos++;
        } else {
            luaL_error(L, "ember.tensor: argument 1: element %s is a %s, expected a number or a boolean",
                       element_path(L, pos, depth),
                       type == LUA_TTABLE ? "table (ragged nesting)" : luaL_typename(L, -1));
        }
        lua_pop(L, 1);
    }
}

/* A number outside an integer dtype's range is refused, as PyTorch refuses
 * it, rather than wrapped: ember.tensor({300}, {dtype = "uint8"}) is an error. */
static void check_values_fit(lua_State *L, em_dtype d, const fill_state *st, int64_t n, bool use_f)
{
    if (!em_dtype_is_int(d)) return;
    double lo, hi;
    em_int_range(d, &lo, &hi);
    for (int64_t k = 0; k < n; k++) {
        if (use_f ? em_value_fits(st->f[k], d)
                  : d == EM_INT64 || (st->i[k] >= (int64_t)lo && st->i[k] <= (int64_t)hi))
            continue;
        char v[32];
        if (use_f) snprintf(v, sizeof v, "%.17g", st->f[k] != st->f[k] ? NAN : st->f[k]);
        else snprintf(v, sizeof v, "%lld", (long long)st->i[k]);
        luaL_error(L, "ember.tensor: value %s (element %I) cannot be converted to %s without overflow", v,
                   (lua_Integer)(k + 1), em_dtype_name(d));
    }
}

static int m_tensor(lua_State *L)
{
    int opts = emlua_keywords(L, 2, "ember.tensor", created_keywords);
    em_tensor *src = emlua_test(L, 1);
    if (src) {
        /* a copy, detached from src's graph, as torch.tensor(t) */
        em_dtype d = emlua_opt_dtype(L, opts, "ember.tensor", src->dtype);
        em_device dev = emlua_opt_device(L, opts, "ember.tensor", src->storage->device);
        em_tensor *plain = em_detach(src);
        em_tensor *c = plain ? em_clone(plain) : NULL;
        if (plain) em_release(plain);
        if (!c) return emlua_fail(L);
        em_tensor *r = em_to_dtype(c, d);
        em_release(c);
        if (r && !em_device_eq(r->storage->device, dev)) { em_tensor *m = em_to_device(r, dev); em_release(r); r = m; }
        return emlua_push_created(L, r, opts, "ember.tensor");
    }
    em_device dev = emlua_opt_device(L, opts, "ember.tensor", default_device);
    int64_t sizes[EM_MAX_DIMS];
    int nd;
    fill_state st = {0};
    if (lua_type(L, 1) == LUA_TNUMBER || lua_type(L, 1) == LUA_TBOOLEAN) {
        nd = 0;
        double fv;
        int64_t iv;
        st.f = &fv; st.i = &iv;
        if (lua_type(L, 1) == LUA_TBOOLEAN) { st.any_bool = true; iv = lua_toboolean(L, 1); fv = (double)iv; }
        else if (lua_isinteger(L, 1)) { st.any_number = true; iv = lua_tointeger(L, 1); fv = (double)iv; }
        else { st.any_number = st.any_float = true; fv = lua_tonumber(L, 1); }
        em_dtype d = st.any_float ? em_default_dtype() : st.any_number ? EM_INT64 : EM_BOOL;
        d = emlua_opt_dtype(L, opts, "ember.tensor", d);
        check_values_fit(L, d, &st, 1, st.any_float);
        em_tensor *t = em_from_host(sizes, 0, d, st.any_float || em_dtype_is_float(d) ? &fv : NULL,
                                    st.any_float || em_dtype_is_float(d) ? NULL : &iv);
        if (t && dev.type != EM_CPU) { em_tensor *m = em_to_device(t, dev); em_release(t); t = m; }
        return emlua_push_created(L, t, opts, "ember.tensor");
    }
    if (lua_type(L, 1) != LUA_TTABLE) return emlua_typeerror(L, 1, "ember.tensor", "a table of numbers, a number or a tensor");
    nd = table_shape(L, 1, sizes);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sizes[i];
    /* the buffers live in userdata so a Lua error cannot leak them */
    st.f = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof(double), 0);
    st.i = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof(int64_t), 0);
    int64_t pos[EM_MAX_DIMS];
    table_values(L, 1, sizes, nd, 0, &st, pos);
    if (st.any_bool && st.any_number)
        return luaL_error(L, "ember.tensor: argument 1: mixes booleans and numbers");
    em_dtype d = st.any_float ? em_default_dtype() : st.any_bool ? EM_BOOL : n == 0 ? em_default_dtype() : EM_INT64;
    d = emlua_opt_dtype(L, opts, "ember.tensor", d);
    bool use_f = st.any_float || (em_dtype_is_float(d) && !st.any_bool);
    check_values_fit(L, d, &st, n, use_f);
    em_tensor *t = em_from_host(sizes, nd, d, use_f ? st.f : NULL, use_f ? NULL : st.i);
    if (t && dev.type != EM_CPU) { em_tensor *m = em_to_device(t, dev); em_release(t); t = m; }
    return emlua_push_created(L, t, opts, "ember.tensor");
}

/* PyTorch's out= of the factories (zeros, ones, empty, full, arange,
 * linspace, eye): whether the options table at opts (0: none) has one */
static bool has_out(lua_State *L, int opts)
{
    if (!opts) return false;
    bool has = lua_getfield(L, opts, "out") != LUA_TNIL;
    lua_pop(L, 1);
    return has;
}

/* A factory's dtype and device from the options table at opts (0: none):
 * given there, else out's (as in PyTorch, where out= makes the result in
 * out's dtype and on its device), else def and the default device. With out,
 * requires_grad = true is refused: out= records no gradient. */
typedef struct factory_opts {
    em_dtype dtype;
    em_device device;
    bool out;
} factory_opts;

static factory_opts factory_options(lua_State *L, int opts, const char *op, em_dtype def)
{
    factory_opts f = {def, default_device, has_out(L, opts)};
    if (f.out) {
        lua_getfield(L, opts, "out");
        em_tensor *out = emlua_test(L, -1);   /* anything else: emlua_push_out names it */
        if (out) {
            f.dtype = out->dtype;
            f.device = out->storage->device;
        }
        lua_pop(L, 1);
        if (emlua_opt_field_boolean(L, opts, "requires_grad", op, false))
            emlua_argerror(L, opts, op, "requires_grad = true does not go with out (out= records no gradient)");
    }
    f.dtype = emlua_opt_dtype(L, opts, op, f.dtype);
    f.device = emlua_opt_device(L, opts, op, f.device);
    return f;
}

/* Pushes a factory's result r: written into out (emlua_push_out) or, without
 * out, as a new tensor with its requires_grad option. */
static int push_factory(lua_State *L, em_tensor *r, int opts, const char *op, const factory_opts *f)
{
    return f->out ? emlua_push_out(L, r, opts, op) : emlua_push_created(L, r, opts, op);
}

/* The options table of a factory whose positional arguments, from first on,
 * are as many as the user gives (zeros' sizes, arange's bounds): the trailing
 * table (0: none), its keys checked */
static int factory_table(lua_State *L, int first, const char *op)
{
    int opts = emlua_options_index(L, first);
    emlua_check_option_names(L, opts, op, factory_keywords);
    return opts;
}

/* zeros, ones, empty: emlua_create_sized with out= (read here, not there:
 * delegating to it when there is no out cost 5% of a small zeros) */
static int create_sized(lua_State *L, const char *op, emlua_sized_fn fn)
{
    int64_t sizes[EM_MAX_DIMS];
    int n = emlua_check_sizes(L, 1, op, sizes);
    int opts = factory_table(L, 1, op);
    factory_opts f = factory_options(L, opts, op, em_default_dtype());
    return push_factory(L, fn(sizes, n, f.dtype, f.device), opts, op, &f);
}

static int m_zeros(lua_State *L) { return create_sized(L, "ember.zeros", em_zeros); }
static int m_ones(lua_State *L) { return create_sized(L, "ember.ones", em_ones); }
static em_tensor *empty_filled(const int64_t *sizes, int n, em_dtype d, em_device dev)
{
    return emlua_uninitialized(em_empty(sizes, n, d, dev));
}
static int m_empty(lua_State *L) { return create_sized(L, "ember.empty", empty_filled); }

static int m_full(lua_State *L)
{
    int64_t sizes[EM_MAX_DIMS];
    if (lua_type(L, 1) != LUA_TTABLE) return emlua_typeerror(L, 1, "ember.full", "a size table");
    int opts = emlua_keywords(L, 3, "ember.full", factory_keywords);
    lua_settop(L, 3);
    int n;
    { /* size table at 1, value at 2, options at 3 */
        lua_pushvalue(L, 1);
        int top = lua_gettop(L);
        n = (int)lua_rawlen(L, top);
        if (n > EM_MAX_DIMS) return emlua_argerror(L, 1, "ember.full", "too many dimensions");
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, top, i + 1);
            int ok;
            sizes[i] = lua_tointegerx(L, -1, &ok);
            if (!ok) return emlua_argerror(L, 1, "ember.full", "size entry %d is not an integer", i + 1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    double v;
    em_dtype def;
    if (lua_type(L, 2) == LUA_TBOOLEAN) { v = lua_toboolean(L, 2); def = EM_BOOL; }
    else {
        v = emlua_check_number(L, 2, "ember.full");
        def = lua_isinteger(L, 2) ? EM_INT64 : em_default_dtype();
    }
    factory_opts f = factory_options(L, opts, "ember.full", def);
    if (emlua_exact_integer_value(L, 2, f.dtype))   /* past 2^53: not through a double */
        return push_factory(L, emlua_fill_exact(L, em_empty(sizes, n, f.dtype, f.device), 2, "ember.full"), opts,
                            "ember.full", &f);
    return push_factory(L, em_full(sizes, n, v, f.dtype, f.device), opts, "ember.full", &f);
}

/* zeros_like(t [, opts]) and the others: the options from argument `first` on
 * (full_like's value comes before them) */
static int like(lua_State *L, const char *op, int first, double value, bool fill)
{
    em_tensor *t = emlua_check(L, 1, op);
    int opts = emlua_keywords(L, first, op, created_keywords);
    em_dtype d = emlua_opt_dtype(L, opts, op, t->dtype);
    em_device dev = emlua_opt_device(L, opts, op, t->storage->device);
    if (!fill) return emlua_push_created(L, emlua_uninitialized(em_empty(t->sizes, t->ndim, d, dev)), opts, op);
    if (first == 3 && emlua_exact_integer_value(L, 2, d))   /* full_like's value past 2^53 */
        return emlua_push_created(L, emlua_fill_exact(L, em_empty(t->sizes, t->ndim, d, dev), 2, op), opts, op);
    return emlua_push_created(L, em_full(t->sizes, t->ndim, value, d, dev), opts, op);
}

static int m_zeros_like(lua_State *L) { return like(L, "ember.zeros_like", 2, 0, true); }
static int m_ones_like(lua_State *L) { return like(L, "ember.ones_like", 2, 1, true); }
static int m_empty_like(lua_State *L) { return like(L, "ember.empty_like", 2, 0, false); }

static int m_full_like(lua_State *L)
{
    double v = lua_type(L, 2) == LUA_TBOOLEAN ? lua_toboolean(L, 2) : emlua_check_number(L, 2, "ember.full_like");
    return like(L, "ember.full_like", 3, v, true);
}

/* arange(end) / arange(start, end[, step]) [, options] */
static int m_arange(lua_State *L)
{
    int opts = factory_table(L, 1, "ember.arange");
    int nargs = opts ? opts - 1 : lua_gettop(L);
    while (nargs > 0 && lua_isnil(L, nargs)) nargs--;   /* arange(0, n, nil) */
    if (nargs < 1 || nargs > 3) return luaL_error(L, "ember.arange: expected (end), (start, end) or (start, end, step), got %d numbers", nargs);
    bool all_int = true;
    double v[3] = {0, 0, 1};
    for (int i = 1; i <= nargs; i++) {
        v[i - 1] = emlua_check_number(L, i, "ember.arange");
        if (!lua_isinteger(L, i)) all_int = false;
    }
    double start = nargs == 1 ? 0 : v[0], end = nargs == 1 ? v[0] : v[1], step = nargs == 3 ? v[2] : 1;
    factory_opts f = factory_options(L, opts, "ember.arange", all_int ? EM_INT64 : em_default_dtype());
    return push_factory(L, em_arange(start, end, step, f.dtype, f.device), opts, "ember.arange", &f);
}

static int m_linspace(lua_State *L)
{
    double a = emlua_check_number(L, 1, "ember.linspace"), b = emlua_check_number(L, 2, "ember.linspace");
    lua_Integer n = emlua_check_integer(L, 3, "ember.linspace");
    int opts = emlua_keywords(L, 4, "ember.linspace", factory_keywords);
    factory_opts f = factory_options(L, opts, "ember.linspace", em_default_dtype());
    return push_factory(L, em_linspace(a, b, n, f.dtype, f.device), opts, "ember.linspace", &f);
}

static int m_eye(lua_State *L)
{
    const char *op = "ember.eye";
    lua_Integer n = emlua_check_integer(L, 1, op), m = n;
    int opts;
    if (lua_type(L, 2) == LUA_TTABLE && !emlua_test(L, 2)) {   /* eye(n, opts) */
        opts = emlua_keywords(L, 2, op, factory_keywords);
    } else {
        if (!lua_isnoneornil(L, 2)) {
            if (lua_type(L, 2) != LUA_TNUMBER) return emlua_typeerror(L, 2, op, "an integer (the number of columns)");
            m = emlua_check_integer(L, 2, op);
        }
        opts = emlua_keywords(L, 3, op, factory_keywords);
    }
    factory_opts f = factory_options(L, opts, op, em_default_dtype());
    return push_factory(L, em_eye(n, m, f.dtype, f.device), opts, op, &f);
}

static int m_is_tensor(lua_State *L)
{
    no_more(L, 2, "ember.is_tensor");
    lua_pushboolean(L, emlua_test(L, 1) != NULL);
    return 1;
}

static int m_set_default_dtype(lua_State *L)
{
    em_dtype d = emlua_check_dtype(L, 1, "ember.set_default_dtype");
    no_more(L, 2, "ember.set_default_dtype");
    if (!em_dtype_is_float(d))
        return emlua_argerror(L, 1, "ember.set_default_dtype", "expected a floating point dtype, got %s", em_dtype_name(d));
    em_set_default_dtype(d);
    return 0;
}

static int m_get_default_dtype(lua_State *L)
{
    no_more(L, 1, "ember.get_default_dtype");
    lua_pushstring(L, em_dtype_name(em_default_dtype()));
    return 1;
}

/* ember.set_default_device(device | nil): nil is "cpu" */
static int m_set_default_device(lua_State *L)
{
    const char *op = "ember.set_default_device";
    em_device d = CPU;
    emlua_device_arg(L, 1);
    if (!lua_isnil(L, 1)) {
        if (lua_type(L, 1) != LUA_TSTRING) return emlua_typeerror(L, 1, op, "a device name (\"cpu\", \"cuda\", \"cuda:N\") or nil");
        if (em_device_parse(lua_tostring(L, 1), &d)) return emlua_argerror(L, 1, op, "%s", em_error());
    }
    no_more(L, 2, op);
    default_device = d;
    return 0;
}

static int m_get_default_device(lua_State *L)
{
    no_more(L, 1, "ember.get_default_device");
    char buf[32];
    lua_pushstring(L, em_device_str(default_device, buf, sizeof buf));
    return 1;
}

/* ember._printoptions(): the current options (precision, threshold,
 * edgeitems, linewidth, sci_mode: nil when chosen from the values);
 * ember._printoptions(precision, threshold, edgeitems, linewidth, sci_mode)
 * sets them all (ember.set_printoptions, lua/ember/composite/settings.lua,
 * reads PyTorch's arguments and profiles). */
static int m_printoptions(lua_State *L)
{
    static const char op[] = "ember.set_printoptions";
    no_more(L, 6, op);
    if (lua_gettop(L) == 0) {
        emlua_print_options o = emlua_get_print_options();
        lua_pushinteger(L, o.precision);
        lua_pushnumber(L, o.threshold);
        lua_pushinteger(L, o.edgeitems);
        lua_pushinteger(L, o.linewidth);
        if (o.sci_mode == EMLUA_SCI_AUTO) lua_pushnil(L);
        else lua_pushboolean(L, o.sci_mode == EMLUA_SCI_ON);
        return 5;
    }
    lua_Integer precision = emlua_check_integer(L, 1, op), edgeitems = emlua_check_integer(L, 3, op),
                linewidth = emlua_check_integer(L, 4, op);
    double threshold = emlua_check_number(L, 2, op);
    /* 30 digits after the point are more than float64 holds; format.c sizes
     * its element texts for that */
    if (precision < 0 || precision > 30)
        return emlua_argerror(L, 1, op, "precision must be 0 to 30, got %lld", (long long)precision);
    if (!(threshold >= 0))
        return emlua_argerror(L, 2, op, "threshold must be a number >= 0 (math.huge: never summarise), got %g",
                              threshold);
    if (edgeitems < 1 || edgeitems > INT_MAX)
        return emlua_argerror(L, 3, op, "edgeitems must be a positive integer, got %lld", (long long)edgeitems);
    if (linewidth < 1 || linewidth > INT_MAX)
        return emlua_argerror(L, 4, op, "linewidth must be a positive integer, got %lld", (long long)linewidth);
    if (!lua_isnoneornil(L, 5) && lua_type(L, 5) != LUA_TBOOLEAN)
        return emlua_typeerror(L, 5, op, "a boolean or nil (sci_mode)");
    emlua_sci_mode sci = lua_isnoneornil(L, 5) ? EMLUA_SCI_AUTO : lua_toboolean(L, 5) ? EMLUA_SCI_ON : EMLUA_SCI_OFF;
    emlua_set_print_options((emlua_print_options){(int)precision, threshold, (int)edgeitems, (int)linewidth, sci});
    return 0;
}

static int m_get_num_threads(lua_State *L)
{
    no_more(L, 1, "ember.get_num_threads");
    lua_pushinteger(L, em_num_threads());
    return 1;
}

static int m_set_num_threads(lua_State *L)
{
    lua_Integer n = emlua_check_integer(L, 1, "ember.set_num_threads");
    no_more(L, 2, "ember.set_num_threads");
    /* more threads than this is a typo (2^40), not a machine */
    if (n < 1 || n > 1024)
        return emlua_argerror(L, 1, "ember.set_num_threads", "expected a count in 1..1024, got %lld", (long long)n);
    em_set_num_threads((int)n);
    return 0;
}

static const luaL_Reg methods[] = {
    {"size", t_size}, {"stride", t_stride}, {"dim", t_dim}, {"numel", t_numel}, {"nelement", t_numel},
    {"element_size", t_element_size}, {"storage_offset", t_storage_offset}, {"data_ptr", t_data_ptr},
    {"pin_memory", t_pin_memory}, {"is_pinned", t_is_pinned},
    {"is_contiguous", t_is_contiguous}, {"is_set_to", t_is_set_to}, {"is_floating_point", t_is_floating_point},
    {"is_view_of", t_is_view_of}, {"item", t_item}, {"tolist", t_tolist},
    {"view", t_view}, {"view_as", t_view_as}, {"reshape", t_reshape}, {"reshape_as", t_reshape_as},
    {"t", t_t}, {"transpose", t_transpose}, {"permute", t_permute}, {"narrow", t_narrow},
    {"select", t_select}, {"slice", t_slice}, {"expand", t_expand}, {"expand_as", t_expand_as},
    {"squeeze", t_squeeze}, {"unsqueeze", t_unsqueeze}, {"flatten", t_flatten}, {"unfold", t_unfold},
    {"t_", t_t_}, {"transpose_", t_transpose_}, {"swapaxes_", t_transpose_}, {"swapdims_", t_transpose_},
    {"squeeze_", t_squeeze_}, {"unsqueeze_", t_unsqueeze_},
    {"diagonal", t_diagonal}, {"contiguous", t_contiguous}, {"clone", t_clone}, {"copy_", t_copy_},
    {"fill_", t_fill_}, {"zero_", t_zero_}, {"to", t_to}, {"type", t_type}, {"float", t_float},
    {"double", t_double}, {"long", t_long}, {"int", t_int}, {"bool", t_bool}, {"byte", t_byte},
    {"short", t_short}, {"char", t_char},
    {"half", t_half}, {"bfloat16", t_bfloat16}, {"cpu", t_cpu}, {"cuda", t_cuda},
    {NULL, NULL},
};

static const luaL_Reg functions[] = {
    {"tensor", m_tensor}, {"zeros", m_zeros}, {"ones", m_ones}, {"empty", m_empty}, {"full", m_full},
    {"zeros_like", m_zeros_like}, {"ones_like", m_ones_like}, {"empty_like", m_empty_like},
    {"full_like", m_full_like}, {"arange", m_arange}, {"linspace", m_linspace}, {"eye", m_eye},
    {"is_tensor", m_is_tensor}, {"set_default_dtype", m_set_default_dtype},
    {"set_default_device", m_set_default_device}, {"get_default_device", m_get_default_device},
    {"get_default_dtype", m_get_default_dtype}, {"_printoptions", m_printoptions}, {"get_num_threads", m_get_num_threads},
    {"set_num_threads", m_set_num_threads},
    /* view functions also callable as ember.f(t, ...) */
    {"reshape", t_reshape}, {"transpose", t_transpose}, {"permute", t_permute}, {"narrow", t_narrow},
    {"select", t_select}, {"squeeze", t_squeeze}, {"unsqueeze", t_unsqueeze}, {"flatten", t_flatten},
    {"t", t_t}, {"clone", t_clone}, {"numel", t_numel},
    {NULL, NULL},
};

static const luaL_Reg metamethods[] = {
    {"__gc", tensor_gc}, {"__close", tensor_gc}, {"__newindex", tensor_newindex}, {"__len", tensor_len},
    {"__tostring", emlua_tostring}, {"__add", op_add}, {"__sub", op_sub}, {"__mul", op_mul},
    {"__div", op_div}, {"__mod", op_mod}, {"__idiv", op_idiv}, {"__pow", op_pow}, {"__unm", op_unm},
    {NULL, NULL},
};

void emlua_open_tensor(lua_State *L)
{
    emlua_push_metatable(L);
    luaL_setfuncs(L, metamethods, 0);
    emlua_push_methods(L);
    lua_pushcclosure(L, tensor_index, 1);   /* upvalue: the method table */
    lua_setfield(L, -2, "__index");
    /* __dir: what a tensor has, as data, for the shell's completion (which
     * never calls __index): the properties, then the methods through the
     * table's own __index */
    lua_createtable(L, (int)(sizeof property_names / sizeof property_names[0]), 0);
    for (size_t i = 0; i < sizeof property_names / sizeof property_names[0]; i++) {
        lua_pushstring(L, property_names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_createtable(L, 0, 1);
    emlua_push_methods(L);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "__dir");
    lua_pop(L, 1);
    emlua_register(L, methods, functions);
    /* ember.Tensor: the method table, as torch.Tensor holds the methods */
    emlua_push_methods(L);
    lua_setfield(L, -2, "Tensor");
    open_size(L);

    /* module fields: the module table is at the top of the stack of luaopen_ember */
    static const char *const dtypes[] = {"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
                                         "float16", "bfloat16", "float", "double", "long", "int", "short", "half"};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        em_dtype d;
        em_dtype_from_name(dtypes[i], &d);
        lua_pushstring(L, em_dtype_name(d));
        lua_setfield(L, -2, dtypes[i]);
    }
    lua_pushstring(L, "0.1.0");
    lua_setfield(L, -2, "__version__");
}
