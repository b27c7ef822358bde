/* bind_index.c — Lua binding of the indexing ops: index_select, gather,
 * scatter, index_add, masked_select, nonzero, cat/stack, split/chunk,
 * sort/argsort/topk, tril/triu.
 *
 * Each C function serves both t:op(...) and ember.op(t, ...). Index values
 * are 1-based, like the dims; ops that return a tuple in PyTorch return
 * several values. Tensors the engine hands back are pushed at once, so that
 * a later Lua error cannot leak them. */
#include "binding.h"

#include <string.h>

/* the keywords after the positional arguments besides out (emlua_out_only):
 * index_add's alpha, scatter's reduce, each with out= out of place only */
static const char *const alpha_out[] = {"alpha", "out", NULL};
static const char *const alpha_only[] = {"alpha", NULL};
static const char *const reduce_out[] = {"reduce", "out", NULL};
static const char *const reduce_only[] = {"reduce", NULL};

/* A dim argument handed to the engine, which checks the range itself: used
 * where the number of dims is the engine's to work out (cat skips empty
 * tensors; stack adds a dim). */
static int loose_dim(lua_State *L, int arg, const char *op, int def)
{
    if (lua_isnoneornil(L, arg)) return def;
    return emlua_loose_dim(L, arg, emlua_check_integer(L, arg, op), op);
}

/* ---- index_select / gather / scatter / index_add ---------------------------- */

/* The index argument of index_select/index_add as a new reference: a tensor
 * as it is (the engine checks that it lives on t's device, as PyTorch does),
 * a table of integers made on t's device, as PyTorch makes the index of
 * t[[...]] on t's device. */
static em_tensor *index_on(lua_State *L, int arg, const char *op, const em_tensor *t)
{
    return emlua_index_on(L, arg, emlua_check_index(L, arg, op), t);
}

static int l_index_select(lua_State *L)
{
    const char *op = "index_select";
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    int o = emlua_keywords(L, 4, op, emlua_out_only);
    em_tensor *idx = index_on(L, 3, op, t);
    em_tensor *r = em_index_select(t, dim, idx);
    em_release(idx);
    return emlua_push_out(L, r, o, op);
}

static int l_gather(lua_State *L)
{
    const char *op = "gather";
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    em_tensor *idx = emlua_check(L, 3, op);
    int o = emlua_keywords(L, 4, op, emlua_out_only);
    return emlua_push_out(L, em_gather(t, dim, idx), o, op);
}

/* scatter's value at argument 4: a number, or a boolean as 1 or 0 (as
 * fill_ and masked_fill take one) */
static double scatter_value(lua_State *L)
{
    return lua_type(L, 4) == LUA_TBOOLEAN ? lua_toboolean(L, 4) : lua_tonumber(L, 4);
}

/* the value at argument 4 as a source of the index's shape (scatter_common
 * has checked that it fits t's dtype) */
static em_tensor *value_source(lua_State *L, const em_tensor *t, const em_tensor *idx)
{
    /* an int64 value past 2^53 made exactly, not through a double */
    em_tensor *v = emlua_exact_integer_operand(L, t, 4) ? emlua_check_operand(L, 4, "scatter", t)
                                                        : em_scalar(scatter_value(L), t->dtype, t->storage->device);
    em_tensor *val = v ? em_expand(v, idx->sizes, idx->ndim) : NULL;
    em_release(v);
    if (!val) emlua_fail(L);
    return val;
}

/* scatter's reduce at argument 5: a string there, or option reduce of the
 * options table there (its index in *o: out= goes there too, out of place);
 * NULL when none is given */
static const char *scatter_reduce_arg(lua_State *L, const char *op, bool in_place, int *o)
{
    const char *r = NULL;
    if (lua_type(L, 5) == LUA_TSTRING) {
        r = lua_tostring(L, 5);
        *o = emlua_keywords(L, 6, op, in_place ? NULL : emlua_out_only);
    } else {
        if (!lua_isnoneornil(L, 5) && (lua_type(L, 5) != LUA_TTABLE || emlua_test(L, 5)))
            emlua_typeerror(L, 5, op, "a reduce name (\"add\" or \"multiply\") or an options table {reduce=}");
        *o = emlua_keywords(L, 5, op, in_place ? reduce_only : reduce_out);
        if (*o) {
            lua_getfield(L, *o, "reduce");   /* left on the stack, which keeps the string */
            r = lua_tostring(L, -1);
            if (!r && !lua_isnil(L, -1)) emlua_argerror(L, 5, op, "option 'reduce' must be \"add\" or \"multiply\"");
        }
    }
    if (r && strcmp(r, "add") != 0 && strcmp(r, "multiply") != 0)
        emlua_argerror(L, 5, op, "reduce must be \"add\" or \"multiply\", got \"%s\"", r);
    return r;
}

/* t:scatter(dim, index, src, reduce) or (..., {reduce =}) with reduce r "add"
 * (scatter_add) or "multiply" (scatter_reduce "prod" including self); src
 * may be a number (NULL here), as for plain scatter. o: the options table. */
static int scatter_with_reduce(lua_State *L, const char *op, em_tensor *t, int dim, em_tensor *idx,
                               em_tensor *src, const char *r, int o, bool in_place)
{
    em_tensor *val = src ? NULL : value_source(L, t, idx);
    if (val) src = val;
    bool mul = strcmp(r, "multiply") == 0;
    int rc = 0;
    em_tensor *out = NULL;
    if (in_place) {
        rc = mul ? em_scatter_reduce_(t, dim, idx, src, EM_SR_PROD, true) : em_scatter_add_(t, dim, idx, src);
    } else {
        em_autocast_suspend();  /* scatter with a reduce is in no autocast list; scatter_add is */
        out = mul ? em_scatter_reduce(t, dim, idx, src, EM_SR_PROD, true) : em_scatter_add(t, dim, idx, src);
        em_autocast_resume();
    }
    em_release(val);
    return in_place ? emlua_push_self(L, rc) : emlua_push_out(L, out, o, op);
}

/* scatter family: (self, dim, index, src) where src may be a number for
 * scatter, then scatter's reduce, then out= out of place. in_place selects
 * t:scatter_ over t:scatter; the out-of-place form goes through
 * em_scatter(_add), which autograd records. */
static int scatter_common(lua_State *L, const char *op, bool add, bool in_place)
{
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    em_tensor *idx = emlua_check(L, 3, op);
    bool number = !add && (lua_type(L, 4) == LUA_TNUMBER || lua_type(L, 4) == LUA_TBOOLEAN);
    em_tensor *src = number ? NULL : emlua_test(L, 4);
    if (!number && !src) return emlua_typeerror(L, 4, op, add ? "a tensor" : "a tensor, a number or a boolean");
    /* checked here, so that the error names the op called rather than the
     * fill that makes the value's tensor */
    bool exact = number && emlua_exact_integer_operand(L, t, 4);
    if (number && !exact && em_check_value_fits(op, scatter_value(L), t->dtype)) return emlua_fail(L);
    int o = 0;
    const char *reduce = NULL;
    if (add) o = emlua_keywords(L, 5, op, in_place ? NULL : emlua_out_only);
    else reduce = scatter_reduce_arg(L, op, in_place, &o);
    if (reduce) return scatter_with_reduce(L, op, t, dim, idx, src, reduce, o, in_place);
    if (in_place && exact) {
        em_tensor *val = value_source(L, t, idx);
        int rc = em_scatter_(t, dim, idx, val);
        em_release(val);
        return emlua_push_self(L, rc);
    }
    if (in_place) {
        return emlua_push_self(L, number ? em_scatter_value_(t, dim, idx, scatter_value(L))
                                   : add ? em_scatter_add_(t, dim, idx, src) : em_scatter_(t, dim, idx, src));
    }
    em_tensor *val = number ? value_source(L, t, idx) : NULL;
    if (val) src = val;
    em_tensor *r = add ? em_scatter_add(t, dim, idx, src) : em_scatter(t, dim, idx, src);
    em_release(val);
    return emlua_push_out(L, r, o, op);
}

static int l_scatter(lua_State *L) { return scatter_common(L, "scatter", false, false); }
static int l_scatter_(lua_State *L) { return scatter_common(L, "scatter_", false, true); }
static int l_scatter_add(lua_State *L)
{
    return scatter_common(L, "scatter_add", true, false);
}
static int l_scatter_add_(lua_State *L) { return scatter_common(L, "scatter_add_", true, true); }

/* t:index_add(dim, index, source [, {alpha = a, out = (out of place)}]); the
 * out-of-place form goes through em_index_add, which autograd records. */
static int index_add_common(lua_State *L, const char *op, bool in_place)
{
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    em_tensor *src = emlua_check(L, 4, op);
    emlua_opt_table(L, 5, op, "an options table {alpha=}");   /* its message for a number there */
    int opts = emlua_keywords(L, 5, op, in_place ? alpha_only : alpha_out);
    double alpha = emlua_opt_field_number(L, opts, "alpha", op, 1.0);
    em_tensor *idx = index_on(L, 3, op, t);
    if (in_place) {
        int rc = em_index_add_(t, dim, idx, src, alpha);
        em_release(idx);
        return emlua_push_self(L, rc);
    }
    em_tensor *r = em_index_add(t, dim, idx, src, alpha);
    em_release(idx);
    return emlua_push_out(L, r, opts, op);
}

static int l_index_add_(lua_State *L) { return index_add_common(L, "index_add_", true); }
static int l_index_add(lua_State *L) { return index_add_common(L, "index_add", false); }

/* ---- masked_select / nonzero ---------------------------------------------------- */

static int l_masked_select(lua_State *L)
{
    const char *op = "masked_select";
    em_tensor *t = emlua_check(L, 1, op);
    em_tensor *mask = emlua_check(L, 2, op);
    int o = emlua_keywords(L, 3, op, emlua_out_only);
    return emlua_push_out(L, em_masked_select(t, mask), o, op);
}

static int l_nonzero(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "nonzero");
    int o = emlua_keywords(L, 2, "nonzero", emlua_out_only);
    return emlua_push_out(L, em_nonzero(t), o, "nonzero");
}

/* PyTorch's argwhere: nonzero's [count, ndim] of 1-based positions */
static int l_argwhere(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "argwhere");
    emlua_keywords(L, 2, "argwhere", NULL);
    return emlua_push(L, em_nonzero(t));
}

/* ---- cat / stack ------------------------------------------------------------------ */

/* The tensors of the list at arg 1, in a scratch array owned by Lua (the
 * list keeps them alive for the call). */
static em_tensor **check_list(lua_State *L, const char *op, int *n)
{
    if (lua_type(L, 1) != LUA_TTABLE || emlua_test(L, 1))
        emlua_typeerror(L, 1, op, "a table of tensors");
    lua_Integer len = (lua_Integer)lua_rawlen(L, 1);
    if (len < 1) emlua_argerror(L, 1, op, "expected a non-empty table of tensors");
    if (len > (1 << 20)) emlua_argerror(L, 1, op, "too many tensors (%lld)", (long long)len);
    em_tensor **ts = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)len, 0);
    for (lua_Integer i = 0; i < len; i++) {
        lua_rawgeti(L, 1, i + 1);
        ts[i] = emlua_test(L, -1);
        if (!ts[i]) emlua_argerror(L, 1, op, "entry %lld is not a tensor (got %s)", (long long)i + 1,
                                   luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    *n = (int)len;
    return ts;
}

/* dim, PyTorch's positional-or-keyword argument of cat, stack, split, chunk
 * and unbind ({dim = 2} as torch.cat(ts, dim=1) is written), and out where
 * the op takes it */
static const char *const dim_out[] = {"dim", "out", NULL};
static const char *const dim_only[] = {"dim", NULL};

/* the dim read by a (argument 0), as a loose dim (checked by the op), or 0 */
static int arg_loose_dim(emlua_args *a, const char *op)
{
    int at = emlua_arg_at(a, 0);
    return at ? loose_dim(a->L, at, op, 0) : 0;
}

/* cat and stack: op(tensors [, dim = 1] [, {dim =, out =}]) made by fn */
static int join_list(lua_State *L, const char *op, em_tensor *(*fn)(em_tensor *const *ts, int n, int dim))
{
    int n;
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 2, dim_out, 1);
    int dim = arg_loose_dim(&a, op);
    em_tensor **ts = check_list(L, op, &n);
    return emlua_push_out(L, fn(ts, n, dim), a.opts, op);
}

static int l_cat(lua_State *L) { return join_list(L, "cat", em_cat); }
static int l_stack(lua_State *L) { return join_list(L, "stack", em_stack); }

/* ---- split / chunk ------------------------------------------------------------------ */

/* Pieces beyond this many would not fit on the Lua stack. */
#define MAX_PIECES 100000

static int push_pieces(lua_State *L, em_tensor **out, int n)
{
    for (int i = 0; i < n; i++) emlua_push(L, out[i]);
    return n;
}

static int l_split(lua_State *L)
{
    const char *op = "split";
    em_tensor *t = emlua_check(L, 1, op);
    if (t->ndim == 0) return emlua_argerror(L, 1, op, "cannot split a 0-d tensor");
    emlua_args a;
    emlua_args_start(&a, L, op, 3, dim_only);
    int dim = emlua_arg_dim(&a, 0, t->ndim, 0);
    int n;
    if (lua_type(L, 2) == LUA_TTABLE && !emlua_test(L, 2)) {
        lua_Integer len = (lua_Integer)lua_rawlen(L, 2);
        if (len < 1 || len > MAX_PIECES)
            return emlua_argerror(L, 2, op, "expected 1..%d split sizes, got %lld", MAX_PIECES, (long long)len);
        int64_t *sizes = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)len, 0);
        lua_Integer bad = emlua_table_integers(L, 2, len, sizes);
        if (bad) emlua_argerror(L, 2, op, "entry %lld of the split sizes is not an integer", (long long)bad);
        luaL_checkstack(L, (int)len + 2, "split: too many pieces");
        em_tensor **out = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)len, 0);
        n = em_split_sizes(t, sizes, (int)len, dim, out);
        if (n < 0) return emlua_fail(L);
        return push_pieces(L, out, n);
    }
    lua_Integer size = emlua_check_integer(L, 2, op);
    int64_t len = t->sizes[dim];
    int64_t count = size > 0 && len > 0 ? (len - 1) / size + 1 : 1;   /* no overflow for huge sizes */
    if (count < 1) count = 1;
    if (count > MAX_PIECES)
        return emlua_argerror(L, 2, op, "split size %lld gives %lld pieces (at most %d)", (long long)size,
                              (long long)count, MAX_PIECES);
    luaL_checkstack(L, (int)count + 2, "split: too many pieces");
    em_tensor **out = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)count, 0);
    n = em_split(t, (int64_t)size, dim, out, (int)count);
    if (n < 0) return emlua_fail(L);
    return push_pieces(L, out, n);
}

static int l_chunk(lua_State *L)
{
    const char *op = "chunk";
    em_tensor *t = emlua_check(L, 1, op);
    if (t->ndim == 0) return emlua_argerror(L, 1, op, "cannot chunk a 0-d tensor");
    lua_Integer chunks = emlua_check_integer(L, 2, op);
    if (chunks < 1 || chunks > MAX_PIECES)
        return emlua_argerror(L, 2, op, "number of chunks must be in 1..%d, got %lld", MAX_PIECES, (long long)chunks);
    emlua_args a;
    emlua_args_start(&a, L, op, 3, dim_only);
    int dim = emlua_arg_dim(&a, 0, t->ndim, 0);
    luaL_checkstack(L, (int)chunks + 2, "chunk: too many pieces");
    em_tensor **out = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)chunks, 0);
    int n = em_chunk(t, (int)chunks, dim, out, (int)chunks);
    if (n < 0) return emlua_fail(L);
    return push_pieces(L, out, n);
}

/* ---- sort / argsort / topk ------------------------------------------------------------ */

typedef struct sort_args { int dim; bool descending, stable; } sort_args;

/* t:sort(dim, descending) or t:sort({dim=, descending=, stable=}) or a mix
 * (positional first, then a trailing options table). */
static const char *const sort_names[] = {"dim", "descending", "stable", NULL};

static sort_args check_sort_args(lua_State *L, const em_tensor *t, const char *op)
{
    emlua_args args;
    emlua_args_start(&args, L, op, 2, sort_names);
    sort_args a;
    a.dim = emlua_arg_dim(&args, 0, t->ndim, -1);
    a.descending = emlua_arg_bool(&args, 1, false);
    a.stable = emlua_arg_bool(&args, 2, false);
    return a;
}

static int l_sort(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "sort");
    sort_args a = check_sort_args(L, t, "sort");
    em_tensor *v, *i;
    if (em_sort(t, a.dim, a.descending, a.stable, &v, &i)) return emlua_fail(L);
    emlua_push(L, v);
    emlua_push(L, i);
    return 2;
}

static int l_argsort(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "argsort");
    sort_args a = check_sort_args(L, t, "argsort");
    em_tensor *v, *i;
    if (em_sort(t, a.dim, a.descending, a.stable, &v, &i)) return emlua_fail(L);
    em_release(v);
    return emlua_push(L, i);
}

/* t:topk(k, dim, largest, sorted) or t:topk(k, {dim=, largest=, sorted=}) */
static int l_topk(lua_State *L)
{
    const char *op = "topk";
    em_tensor *t = emlua_check(L, 1, op);
    lua_Integer k = emlua_check_integer(L, 2, op);
    static const char *const names[] = {"dim", "largest", "sorted", NULL};
    emlua_args args;
    emlua_args_start(&args, L, op, 3, names);
    int dim = emlua_arg_dim(&args, 0, t->ndim, -1);
    bool largest = emlua_arg_bool(&args, 1, true);
    bool sorted = emlua_arg_bool(&args, 2, true);
    em_tensor *v, *i;
    if (em_topk(t, (int64_t)k, dim, largest, sorted, &v, &i)) return emlua_fail(L);
    emlua_push(L, v);
    emlua_push(L, i);
    return 2;
}

/* ---- tril / triu ------------------------------------------------------------ */

static const char *const diagonal_out[] = {"diagonal", "out", NULL};
static const char *const diagonal_only[] = {"diagonal", NULL};

/* The diagonal argument of t:tril(diagonal) or t:tril({diagonal =}), default
 * 0, read with names (diagonal_out or diagonal_only) into args. */
static int64_t check_diagonal(lua_State *L, const char *op, emlua_args *args, const char *const *names)
{
    emlua_args_start_kw(args, L, op, 2, names, 1);
    return emlua_arg_integer(args, 0, 0);
}

/* tril(t, diagonal = 0, {out =}) and triu, made by fn */
static int triangle(lua_State *L, const char *op, em_tensor *(*fn)(const em_tensor *, int64_t))
{
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args args;
    int64_t d = check_diagonal(L, op, &args, diagonal_out);
    return emlua_push_out(L, fn(t, d), args.opts, op);
}

static int l_tril(lua_State *L) { return triangle(L, "tril", em_tril); }
static int l_triu(lua_State *L) { return triangle(L, "triu", em_triu); }

/* t:tril_(diagonal) / t:triu_(diagonal): the triangle's complement, taken
 * from em_tril of a ones mask, is zeroed with masked_fill_, which refuses
 * what an in-place op must (leaves that require grad, overlapping views). */
static int triangle_(lua_State *L, const char *op, bool upper)
{
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args args;
    int64_t d = check_diagonal(L, op, &args, diagonal_only);
    if (t->ndim < 2) {
        char buf[128];
        em_set_error("%s: expected a tensor with at least 2 dimensions, got %s", op, em_shape_str(t, buf, sizeof buf));
        return emlua_fail(L);
    }
    int64_t sizes[2] = {t->sizes[t->ndim - 2], t->sizes[t->ndim - 1]};
    em_tensor *ones = em_ones(sizes, 2, EM_BOOL, t->storage->device);
    em_tensor *keep = ones ? (upper ? em_triu(ones, d) : em_tril(ones, d)) : NULL;
    em_tensor *drop = keep ? em_unary(EM_LOGICAL_NOT, keep) : NULL;
    int rc = drop ? em_masked_fill_(t, drop, 0) : -1;
    em_release(ones);
    em_release(keep);
    em_release(drop);
    if (rc) {
        /* name the op the user called, not the one it is built on */
        const char *msg = em_error();
        if (strncmp(msg, "masked_fill_: ", 14) == 0) {
            lua_pushstring(L, msg + 14);
            em_set_error("%s: %s", op, lua_tostring(L, -1));
        }
    }
    return emlua_push_self(L, rc);
}

static int l_tril_(lua_State *L) { return triangle_(L, "tril_", false); }
static int l_triu_(lua_State *L) { return triangle_(L, "triu_", true); }

void emlua_open_index(lua_State *L)
{
    /* t:name(...) and ember.name(t, ...) */
    static const luaL_Reg both[] = {
        {"index_select", l_index_select},
        {"gather", l_gather},
        {"scatter", l_scatter},
        {"scatter_add", l_scatter_add},
        {"index_add", l_index_add},
        {"masked_select", l_masked_select},
        {"nonzero", l_nonzero}, {"argwhere", l_argwhere},
        {"split", l_split},
        {"chunk", l_chunk},
        {"sort", l_sort},
        {"argsort", l_argsort},
        {"topk", l_topk},
        {"tril", l_tril},
        {"triu", l_triu},
        {NULL, NULL}
    };
    static const luaL_Reg methods[] = {
        {"scatter_", l_scatter_},
        {"scatter_add_", l_scatter_add_},
        {"index_add_", l_index_add_},
        {"tril_", l_tril_},
        {"triu_", l_triu_},
        {NULL, NULL}
    };
    static const luaL_Reg functions[] = {
        {"cat", l_cat},
        {"concat", l_cat},
        {"stack", l_stack},
        {NULL, NULL}
    };
    emlua_register(L, both, both);
    emlua_register(L, methods, functions);
}
