/* bind_shape.c — the shape and indexing ops (flip, roll, repeat,
 * diag, index_fill, scatter_reduce, meshgrid, ...).
 *
 * As everywhere in the binding, dims given by the user are 1-based (negative
 * from the end) and index values 1-based; a C function listed both as a
 * method and as a function serves t:op(...) and ember.op(t, ...). Keyword
 * arguments come positionally in PyTorch's order or in a trailing options
 * table. Ops that return a tuple in PyTorch return several values. */
#include "binding.h"

#include <string.h>

/* Pieces beyond this many would not fit on the Lua stack. */
#define MAX_PIECES 100000

/* the creation options' keyword names */
static const char *const created_keywords[] = {"dtype", "device", "requires_grad", NULL};

/* The integers at arg: one integer or a table of them. Returns the count. */
static int int_list(lua_State *L, int arg, const char *op, const char *what, int64_t *out, int cap)
{
    if (lua_type(L, arg) == LUA_TNUMBER) {
        out[0] = (int64_t)emlua_check_integer(L, arg, op);
        return 1;
    }
    if (lua_type(L, arg) != LUA_TTABLE || emlua_test(L, arg))
        return emlua_typeerror(L, arg, op, what);
    lua_Integer n = (lua_Integer)lua_rawlen(L, arg);
    /* {dims = ...}, {bogus = 1}: no list, and no option this op reads */
    if (n == 0) emlua_check_option_names(L, arg, op, NULL);
    if (n > cap) return emlua_argerror(L, arg, op, "%lld entries, at most %d", (long long)n, cap);
    lua_Integer bad = emlua_table_integers(L, arg, n, out);
    if (bad) emlua_argerror(L, arg, op, "entry %lld is not an integer", (long long)bad);
    return (int)n;
}

/* "unexpected argument (a number) after a table of <what>" at arg + 1 when
 * the argument at arg is a plain table and something other than nils
 * follows: the op takes its list either as that table or as arguments. */
static void nothing_after_list(lua_State *L, int arg, int top, const char *op, const char *what)
{
    if (top > arg && lua_type(L, arg) == LUA_TTABLE && !emlua_test(L, arg))
        emlua_argerror(L, arg + 1, op, "unexpected argument (a %s) after a table of %s",
                       emlua_test(L, arg + 1) ? "tensor" : luaL_typename(L, arg + 1), what);
}

/* Integers given either as one table at arg or as numbers from arg up to
 * the top of the stack (t:repeat(2, 3) or t:repeat({2, 3})). */
static int int_varargs(lua_State *L, int arg, const char *op, int64_t *out, int cap)
{
    int top = emlua_top(L, arg);
    nothing_after_list(L, arg, top, op, "integers");
    if (top == arg && lua_type(L, arg) == LUA_TTABLE && !emlua_test(L, arg))
        return int_list(L, arg, op, "integers", out, cap);
    if (top - arg + 1 > cap) return emlua_argerror(L, arg, op, "%d entries, at most %d", top - arg + 1, cap);
    for (int i = arg; i <= top; i++) out[i - arg] = (int64_t)emlua_check_integer(L, i, op);
    return top >= arg ? top - arg + 1 : 0;
}

/* dims at arg (a number or a table) as engine dims; returns the count */
static int dim_list(lua_State *L, int arg, const char *op, int *out)
{
    int64_t v[EM_MAX_DIMS + 1];
    int n = int_list(L, arg, op, "a dimension or a table of dimensions", v, EM_MAX_DIMS + 1);
    for (int i = 0; i < n; i++) out[i] = emlua_loose_dim(L, arg, v[i], op);
    return n;
}

/* The tensors given as one table at arg or as arguments from arg to the top
 * (trailing nils aside). With keywords (else NULL), a trailing options table
 * holding only those names may follow: its index goes to *opts (0: none). */
static em_tensor **tensor_args(lua_State *L, int arg, const char *op, const char *const *keywords, int *n, int *opts)
{
    int top = emlua_top(L, arg);
    *opts = 0;
    if (keywords && top >= arg && lua_type(L, top) == LUA_TTABLE && !emlua_test(L, top) &&
        !(top == arg && lua_rawlen(L, top) > 0)) {
        emlua_check_option_names(L, top, op, keywords);
        *opts = top--;
    }
    nothing_after_list(L, arg, top, op, "tensors");
    bool list = top == arg && lua_type(L, arg) == LUA_TTABLE && !emlua_test(L, arg);
    int count = list ? (int)lua_rawlen(L, arg) : top - arg + 1;
    if (count < 0) count = 0;
    if (count > MAX_PIECES) emlua_argerror(L, arg, op, "too many tensors (%d)", count);
    em_tensor **ts = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)(count ? count : 1), 0);
    for (int i = 0; i < count; i++) {
        if (list) {
            lua_rawgeti(L, arg, i + 1);
            ts[i] = emlua_test(L, -1);
            if (!ts[i]) emlua_argerror(L, arg, op, "entry %d is not a tensor (got %s)", i + 1, luaL_typename(L, -1));
            lua_pop(L, 1);
        } else {
            ts[i] = emlua_test(L, arg + i);
            if (!ts[i]) emlua_typeerror(L, arg + i, op, "a tensor");
        }
    }
    *n = count;
    return ts;
}

/* Pushes the n tensors of out (new references), as several values. */
static int push_all(lua_State *L, em_tensor **out, int n)
{
    luaL_checkstack(L, n + 2, "too many results");
    for (int i = 0; i < n; i++) emlua_push(L, out[i]);
    return n;
}

/* An index: a tensor, a table of integers or one integer (made int64). New
 * reference. */
static em_tensor *check_index(lua_State *L, int arg, const char *op)
{
    if (lua_type(L, arg) != LUA_TNUMBER) return emlua_check_index(L, arg, op);
    int64_t v = (int64_t)emlua_check_integer(L, arg, op);
    int64_t one = 1;
    em_tensor *t = em_from_host(&one, 1, EM_INT64, NULL, &v);
    if (!t) emlua_fail(L);
    return t;
}

/* An index that lives on t's device (tables are made on the CPU). */
static em_tensor *index_on(lua_State *L, int arg, const char *op, const em_tensor *t)
{
    return emlua_index_on(L, arg, check_index(L, arg, op), t);
}

/* ---- flip / roll / rot90 ------------------------------------------------------ */

static int l_flip(lua_State *L)
{
    const char *op = "flip";
    em_tensor *t = emlua_check(L, 1, op);
    int dims[EM_MAX_DIMS + 1], n;
    if (emlua_top(L, 2) == 2 && lua_type(L, 2) == LUA_TTABLE && !emlua_test(L, 2)) {
        n = dim_list(L, 2, op, dims);
    } else {
        int64_t v[EM_MAX_DIMS + 1];
        n = int_varargs(L, 2, op, v, EM_MAX_DIMS + 1);
        for (int i = 0; i < n; i++) dims[i] = emlua_loose_dim(L, 2 + i, v[i], op);
    }
    return emlua_push(L, em_flip(t, dims, n));
}

/* op(t) made by fn, nothing after t */
static int self_only(lua_State *L, const char *op, em_tensor *(*fn)(const em_tensor *))
{
    em_tensor *t = emlua_check(L, 1, op);
    emlua_keywords(L, 2, op, NULL);
    return emlua_push(L, fn(t));
}

static int l_fliplr(lua_State *L) { return self_only(L, "fliplr", em_fliplr); }
static int l_flipud(lua_State *L) { return self_only(L, "flipud", em_flipud); }

static int l_roll(lua_State *L)
{
    const char *op = "roll";
    static const char *const names[] = {"shifts", "dims", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int at = emlua_arg_at(&a, 0);
    if (!at) return emlua_argerror(L, 2, op, "shifts is required");
    int64_t shifts[EM_MAX_DIMS + 1];
    int ns = int_list(L, at, op, "an integer or a table of integers (shifts)", shifts, EM_MAX_DIMS + 1);
    int dims[EM_MAX_DIMS + 1], nd = 0;
    if ((at = emlua_arg_at(&a, 1))) nd = dim_list(L, at, op, dims);
    return emlua_push(L, em_roll(t, shifts, ns, dims, nd));
}

static int l_rot90(lua_State *L)
{
    const char *op = "rot90";
    static const char *const names[] = {"k", "dims", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int64_t k = emlua_arg_integer(&a, 0, 1);
    int dims[EM_MAX_DIMS + 1] = {0, 1};
    int at = emlua_arg_at(&a, 1);
    if (at && dim_list(L, at, op, dims) != 2)
        return emlua_argerror(L, at, op, "dims must hold exactly two dimensions");
    return emlua_push(L, em_rot90(t, k, dims[0], dims[1]));
}

/* ---- repeat / tile / repeat_interleave ------------------------------------------ */

/* t:repeat(...) and t:tile(...): fn(t, the counts given) */
static int repeat_common(lua_State *L, const char *op, em_tensor *(*fn)(const em_tensor *, const int64_t *, int))
{
    int64_t r[EM_MAX_DIMS + 1];
    em_tensor *t = emlua_check(L, 1, op);
    int n = int_varargs(L, 2, op, r, EM_MAX_DIMS + 1);
    return emlua_push(L, fn(t, r, n));
}

static int l_repeat(lua_State *L) { return repeat_common(L, "repeat", em_repeat); }
static int l_tile(lua_State *L) { return repeat_common(L, "tile", em_tile); }

/* t:repeat_interleave(repeats, [dim], {output_size =}) with repeats an
 * integer or a tensor; ember.repeat_interleave(repeats) alone gives the
 * 1-based positions, each repeated repeats[i] times. */
static int l_repeat_interleave(lua_State *L)
{
    const char *op = "repeat_interleave";
    static const char *const names[] = {"repeats", "dim", "output_size", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int64_t output_size = emlua_arg_integer(&a, 2, -1);
    int at = emlua_arg_at(&a, 0);
    if (!at) return emlua_push(L, em_repeat_interleave_index(t, output_size));
    em_tensor *rt = emlua_test(L, at);
    int64_t r = rt ? 0 : (int64_t)emlua_check_integer(L, at, op);
    int dat = emlua_arg_at(&a, 1);
    int dim = dat ? emlua_loose_dim(L, dat, emlua_check_integer(L, dat, op), op) : 0;
    return emlua_push(L, em_repeat_interleave(t, r, rt, dim, dat != 0, output_size));
}

/* ---- movedim / unbind / unflatten / swapaxes ------------------------------------ */

static int l_movedim(lua_State *L)
{
    const char *op = "movedim";
    em_tensor *t = emlua_check(L, 1, op);
    int src[EM_MAX_DIMS + 1], dst[EM_MAX_DIMS + 1];
    int ns = dim_list(L, 2, op, src), nd = dim_list(L, 3, op, dst);
    emlua_keywords(L, 4, op, NULL);
    if (ns != nd)
        return emlua_argerror(L, 3, op, "source and destination must have the same number of dims (%d vs %d)", ns, nd);
    return emlua_push(L, em_movedim(t, src, dst, ns));
}

static int l_unbind(lua_State *L)
{
    const char *op = "unbind";
    em_tensor *t = emlua_check(L, 1, op);
    static const char *const names[] = {"dim", NULL};
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    int at = emlua_arg_at(&a, 0);
    int dim = at ? emlua_loose_dim(L, at, emlua_check_integer(L, at, op), op) : 0;
    int64_t n = t->ndim > 0 ? t->sizes[dim < 0 ? (dim + t->ndim >= 0 ? dim + t->ndim : 0) : dim < t->ndim ? dim : 0] : 0;
    if (n > MAX_PIECES) return emlua_argerror(L, 1, op, "%lld pieces, at most %d", (long long)n, MAX_PIECES);
    em_tensor **out = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)(n ? n : 1), 0);
    int k = em_unbind(t, dim, out, (int)n);
    if (k < 0) return emlua_fail(L);
    return push_all(L, out, k);
}

static int l_unflatten(lua_State *L)
{
    const char *op = "unflatten";
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_loose_dim(L, 2, emlua_check_integer(L, 2, op), op);
    int64_t sizes[EM_MAX_DIMS + 1];
    int n = int_list(L, 3, op, "a table of sizes", sizes, EM_MAX_DIMS + 1);
    emlua_keywords(L, 4, op, NULL);
    return emlua_push(L, em_unflatten(t, dim, sizes, n));
}

static int l_swapaxes(lua_State *L)
{
    const char *op = "swapaxes";
    em_tensor *t = emlua_check(L, 1, op);
    int a = emlua_check_dim(L, 2, t->ndim, op), b = emlua_check_dim(L, 3, t->ndim, op);
    emlua_keywords(L, 4, op, NULL);
    return emlua_push(L, em_transpose(t, a, b));
}

/* ---- diagonal family -------------------------------------------------------------- */

/* diag(t, diagonal = 0, {out =}) */
static int l_diag(lua_State *L)
{
    static const char *const names[] = {"diagonal", "out", NULL};
    em_tensor *t = emlua_check(L, 1, "diag");
    emlua_args a;
    emlua_args_start_kw(&a, L, "diag", 2, names, 1);
    return emlua_push_out(L, em_diag(t, emlua_arg_integer(&a, 0, 0)), a.opts, "diag");
}

/* offset, dim1, dim2 of diagonal / diag_embed */
static void diag_args(lua_State *L, const char *op, int def1, int def2, int64_t *offset, int *d1, int *d2)
{
    static const char *const names[] = {"offset", "dim1", "dim2", NULL};
    emlua_args a;
    emlua_args_start(&a, L, op, 2, names);
    *offset = emlua_arg_integer(&a, 0, 0);
    int at1 = emlua_arg_at(&a, 1), at2 = emlua_arg_at(&a, 2);
    *d1 = at1 ? emlua_loose_dim(L, at1, emlua_arg_integer(&a, 1, 0), op) : def1;
    *d2 = at2 ? emlua_loose_dim(L, at2, emlua_arg_integer(&a, 2, 0), op) : def2;
}

static int l_diagonal(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "diagonal");
    int64_t offset;
    int d1, d2;
    diag_args(L, "diagonal", 0, 1, &offset, &d1, &d2);
    return emlua_push(L, em_diagonal_ex(t, offset, d1, d2));
}

static int l_diag_embed(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "diag_embed");
    int64_t offset;
    int d1, d2;
    diag_args(L, "diag_embed", -2, -1, &offset, &d1, &d2);
    return emlua_push(L, em_diag_embed(t, offset, d1, d2));
}

static int l_diagflat(lua_State *L)
{
    static const char *const names[] = {"offset", NULL};
    em_tensor *t = emlua_check(L, 1, "diagflat");
    emlua_args a;
    emlua_args_start(&a, L, "diagflat", 2, names);
    return emlua_push(L, em_diagflat(t, emlua_arg_integer(&a, 0, 0)));
}

static int l_trace(lua_State *L) { return self_only(L, "trace", em_trace); }

/* ---- take / index_fill / index_copy / masked_scatter --------------------------------- */

static int l_take(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "take");
    int o = emlua_keywords(L, 3, "take", emlua_out_only);
    em_tensor *ix = index_on(L, 2, "take", t);
    em_tensor *r = em_take(t, ix);
    em_release(ix);
    return emlua_push_out(L, r, o, "take");
}

static int l_take_along_dim(lua_State *L)
{
    const char *op = "take_along_dim";
    em_tensor *t = emlua_check(L, 1, op);
    em_tensor *ix = emlua_check(L, 2, op);
    static const char *const names[] = {"dim", "out", NULL};
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 3, names, 1);
    int at = emlua_arg_at(&a, 0);
    int dim = at ? emlua_loose_dim(L, at, emlua_arg_integer(&a, 0, 0), op) : 0;
    return emlua_push_out(L, em_take_along_dim(t, ix, dim, at != 0), a.opts, op);
}

/* a fill value: a number, a boolean or a 1-element tensor */
static double fill_value(lua_State *L, int arg, const char *op)
{
    if (lua_type(L, arg) == LUA_TBOOLEAN) return lua_toboolean(L, arg) ? 1 : 0;
    em_tensor *v = emlua_test(L, arg);
    if (!v) return emlua_check_number(L, arg, op);
    if (v->ndim != 0) emlua_argerror(L, arg, op, "the value must be a number or a 0-d tensor");
    double x;
    if (em_item(v, &x)) emlua_fail(L);
    return x;
}

/* index_fill (a value at argument 4) and index_copy (a source tensor there),
 * in place or not */
static int index_write_common(lua_State *L, const char *op, bool copy, bool in_place)
{
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    double value = copy ? 0 : fill_value(L, 4, op);
    em_tensor *src = copy ? emlua_check(L, 4, op) : NULL;
    /* index_copy takes PyTorch's out=; index_fill and the in-place forms nothing */
    int o = emlua_keywords(L, 5, op, copy && !in_place ? emlua_out_only : NULL);
    em_tensor *ix = index_on(L, 3, op, t);
    em_tensor *made = NULL;   /* index_fill of an int64 value past 2^53: index_copy of it, made exactly */
    if (!copy && emlua_exact_integer_operand(L, t, 4)) {
        int64_t sizes[EM_MAX_DIMS];
        memcpy(sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        sizes[dim] = em_numel(ix);
        made = emlua_fill_exact(L, em_empty(sizes, t->ndim, t->dtype, t->storage->device), 4, op);
        if (!made) {
            em_release(ix);
            return emlua_fail(L);
        }
        src = made;
        copy = true;
    }
    if (in_place) {
        int rc = copy ? em_index_copy_(t, dim, ix, src) : em_index_fill_(t, dim, ix, value);
        em_release(ix);
        em_release(made);
        return emlua_push_self(L, rc);
    }
    em_tensor *r = copy ? em_index_copy(t, dim, ix, src) : em_index_fill(t, dim, ix, value);
    em_release(ix);
    em_release(made);
    return emlua_push_out(L, r, o, op);
}

static int l_index_fill(lua_State *L) { return index_write_common(L, "index_fill", false, false); }
static int l_index_fill_(lua_State *L) { return index_write_common(L, "index_fill_", false, true); }
static int l_index_copy(lua_State *L) { return index_write_common(L, "index_copy", true, false); }
static int l_index_copy_(lua_State *L) { return index_write_common(L, "index_copy_", true, true); }

static int l_masked_scatter(lua_State *L)
{
    const char *op = "masked_scatter";
    em_tensor *t = emlua_check(L, 1, op), *m = emlua_check(L, 2, op), *s = emlua_check(L, 3, op);
    emlua_keywords(L, 4, op, NULL);
    return emlua_push(L, em_masked_scatter(t, m, s));
}

static int l_masked_scatter_(lua_State *L)
{
    const char *op = "masked_scatter_";
    em_tensor *t = emlua_check(L, 1, op), *m = emlua_check(L, 2, op), *s = emlua_check(L, 3, op);
    emlua_keywords(L, 4, op, NULL);
    return emlua_push_self(L, em_masked_scatter_(t, m, s));
}

/* ---- scatter_reduce / one_hot ------------------------------------------------------------ */

static em_scatter_reduction check_reduction(lua_State *L, int arg, const char *op)
{
    static const char *const names[] = {"sum", "prod", "mean", "amax", "amin", NULL};
    const char *s = lua_type(L, arg) == LUA_TSTRING ? lua_tostring(L, arg) : NULL;
    for (int i = 0; s && names[i]; i++)
        if (strcmp(s, names[i]) == 0) return (em_scatter_reduction)i;
    if (!s) emlua_typeerror(L, arg, op, "a reduction name (\"sum\", \"prod\", \"mean\", \"amax\" or \"amin\")");
    emlua_argerror(L, arg, op, "reduce must be \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\", got \"%s\"", s);
    return EM_SR_SUM;
}

/* scatter_reduce(t, dim, index, src, reduce, include_self = true, {out =}),
 * out= only out of place */
static int scatter_reduce_common(lua_State *L, const char *op, bool in_place)
{
    static const char *const names[] = {"reduce", "include_self", "out", NULL};
    static const char *const names_[] = {"reduce", "include_self", NULL};
    em_tensor *t = emlua_check(L, 1, op);
    int dim = emlua_check_dim(L, 2, t->ndim, op);
    em_tensor *ix = emlua_check(L, 3, op);
    em_tensor *src = emlua_check(L, 4, op);
    emlua_args a;
    emlua_args_start_kw(&a, L, op, 5, in_place ? names_ : names, 2);
    int at = emlua_arg_at(&a, 0);
    if (!at) return emlua_argerror(L, 5, op, "reduce is required (\"sum\", \"prod\", \"mean\", \"amax\" or \"amin\")");
    em_scatter_reduction r = check_reduction(L, at, op);
    bool include_self = emlua_arg_bool(&a, 1, true);
    if (in_place) {
        return emlua_push_self(L, em_scatter_reduce_(t, dim, ix, src, r, include_self));
    }
    return emlua_push_out(L, em_scatter_reduce(t, dim, ix, src, r, include_self), a.opts, op);
}

static int l_scatter_reduce(lua_State *L) { return scatter_reduce_common(L, "scatter_reduce", false); }
static int l_scatter_reduce_(lua_State *L) { return scatter_reduce_common(L, "scatter_reduce_", true); }

static int l_one_hot(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "one_hot");
    static const char *const names[] = {"num_classes", NULL};
    emlua_args a;
    emlua_args_start(&a, L, "one_hot", 2, names);
    return emlua_push(L, em_one_hot(t, emlua_arg_integer(&a, 0, -1)));
}

/* ---- grids, blocks, broadcasting --------------------------------------------------------- */

static int l_meshgrid(lua_State *L)
{
    const char *op = "meshgrid";
    static const char *const names[] = {"indexing", NULL};
    int n, opts;
    em_tensor **ts = tensor_args(L, 1, op, names, &n, &opts);
    bool xy = false;
    if (opts) {
        lua_getfield(L, opts, "indexing");
        if (!lua_isnil(L, -1)) {
            const char *s = lua_tostring(L, -1);
            if (!s || (strcmp(s, "ij") != 0 && strcmp(s, "xy") != 0))
                return emlua_argerror(L, opts, op, "indexing must be \"ij\" or \"xy\", got %s",
                                      s ? s : luaL_typename(L, -1));
            xy = strcmp(s, "xy") == 0;
        }
        lua_pop(L, 1);
    }
    if (n > EM_MAX_DIMS) return emlua_argerror(L, 1, op, "%d tensors, at most %d", n, EM_MAX_DIMS);
    em_tensor *out[EM_MAX_DIMS];
    if (em_meshgrid(ts, n, xy, out) < 0) return emlua_fail(L);
    return push_all(L, out, n);
}

static int l_cartesian_prod(lua_State *L)
{
    int n, opts;
    em_tensor **ts = tensor_args(L, 1, "cartesian_prod", NULL, &n, &opts);
    if (n > EM_MAX_DIMS) return emlua_argerror(L, 1, "cartesian_prod", "%d tensors, at most %d", n, EM_MAX_DIMS);
    return emlua_push(L, em_cartesian_prod(ts, n));
}

static int l_block_diag(lua_State *L)
{
    int n, opts;
    em_tensor **ts = tensor_args(L, 1, "block_diag", NULL, &n, &opts);
    if (n == 0) {   /* as torch.block_diag(): an empty [1, 0] ... PyTorch gives [0, 0] */
        int64_t z[2] = {0, 0};
        return emlua_push(L, em_empty(z, 2, em_default_dtype(), (em_device){EM_CPU, 0}));
    }
    return emlua_push(L, em_block_diag(ts, n));
}

static int l_broadcast_tensors(lua_State *L)
{
    int n, opts;
    em_tensor **ts = tensor_args(L, 1, "broadcast_tensors", NULL, &n, &opts);
    if (n > MAX_PIECES) return emlua_argerror(L, 1, "broadcast_tensors", "too many tensors");
    em_tensor **out = lua_newuserdatauv(L, sizeof(em_tensor *) * (size_t)(n ? n : 1), 0);
    if (em_broadcast_tensors(ts, n, out) < 0) return emlua_fail(L);
    return push_all(L, out, n);
}

static int l_broadcast_to(lua_State *L)
{
    int64_t sizes[EM_MAX_DIMS + 1];
    em_tensor *t = emlua_check(L, 1, "broadcast_to");
    int n = int_varargs(L, 2, "broadcast_to", sizes, EM_MAX_DIMS + 1);
    if (n > EM_MAX_DIMS) return emlua_argerror(L, 2, "broadcast_to", "at most %d dimensions", EM_MAX_DIMS);
    return emlua_push(L, em_broadcast_to(t, sizes, n));
}

static int atleast(lua_State *L, int k, const char *op)
{
    int n, opts;
    em_tensor **ts = tensor_args(L, 1, op, NULL, &n, &opts);
    if (n == 0) return emlua_argerror(L, 1, op, "expected at least one tensor");
    luaL_checkstack(L, n + 2, "too many results");
    for (int i = 0; i < n; i++) {
        em_tensor *r = em_atleast(ts[i], k);
        if (!r) return emlua_fail(L);
        emlua_push(L, r);
    }
    return n;
}

static int l_atleast_1d(lua_State *L) { return atleast(L, 1, "atleast_1d"); }
static int l_atleast_2d(lua_State *L) { return atleast(L, 2, "atleast_2d"); }
static int l_atleast_3d(lua_State *L) { return atleast(L, 3, "atleast_3d"); }

/* ---- new_* (methods): dtype and device of self unless the options say ---------------------- */

static int new_common(lua_State *L, const char *op, int kind)
{
    em_tensor *t = emlua_check(L, 1, op);
    int64_t sizes[EM_MAX_DIMS];
    int nd, opts;
    double value = 0;
    if (kind == 2) {   /* new_full(size, fill_value, [opts]) */
        nd = int_list(L, 2, op, "a table of sizes", sizes, EM_MAX_DIMS);
        if (lua_type(L, 3) == LUA_TBOOLEAN) value = lua_toboolean(L, 3);
        else value = emlua_check_number(L, 3, op);
        opts = emlua_keywords(L, 4, op, created_keywords);
    } else {
        int top = emlua_top(L, 2);
        lua_settop(L, top);   /* t:new_zeros({2}, nil): the size-reading helper takes no trailing nils */
        if (top < 2) return emlua_argerror(L, 2, op, "expected a size");
        opts = top > 2 && lua_type(L, top) == LUA_TTABLE && !emlua_test(L, top) ? top : 0;
        nd = emlua_check_sizes(L, 2, op, sizes);
        emlua_check_option_names(L, opts, op, created_keywords);
    }
    em_dtype d = emlua_opt_dtype(L, opts, op, t->dtype);
    em_device dev = emlua_opt_device(L, opts, op, t->storage->device);
    em_tensor *r = kind == 3 ? emlua_uninitialized(em_empty(sizes, nd, d, dev))
                   : kind == 2 && emlua_exact_integer_value(L, 3, d)   /* past 2^53: not through a double */
                       ? emlua_fill_exact(L, em_empty(sizes, nd, d, dev), 3, op)
                       : em_full(sizes, nd, kind == 1 ? 1 : value, d, dev);
    return emlua_push_created(L, r, opts, op);
}

static int l_new_zeros(lua_State *L) { return new_common(L, "new_zeros", 0); }
static int l_new_ones(lua_State *L) { return new_common(L, "new_ones", 1); }
static int l_new_full(lua_State *L) { return new_common(L, "new_full", 2); }
static int l_new_empty(lua_State *L) { return new_common(L, "new_empty", 3); }

/* t:new_tensor(data, [opts]): ember.tensor(data, opts) with self's dtype and
 * device as defaults */
static int l_new_tensor(lua_State *L)
{
    const char *op = "new_tensor";
    em_tensor *t = emlua_check(L, 1, op);
    if (lua_isnone(L, 2)) return emlua_argerror(L, 2, op, "expected data");
    int opts = emlua_keywords(L, 3, op, created_keywords);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "loaded");
    lua_getfield(L, -1, "ember");
    lua_getfield(L, -1, "tensor");
    if (!lua_isfunction(L, -1)) return luaL_error(L, "%s: ember.tensor is not available", op);
    lua_pushvalue(L, 2);
    lua_createtable(L, 0, 4);
    if (opts) {
        lua_pushnil(L);
        while (lua_next(L, opts)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_settable(L, -4);
        }
    }
    lua_getfield(L, -1, "dtype");
    if (lua_isnil(L, -1)) { lua_pushstring(L, em_dtype_name(t->dtype)); lua_setfield(L, -3, "dtype"); }
    lua_pop(L, 1);
    lua_getfield(L, -1, "device");
    if (lua_isnil(L, -1)) {
        char buf[32];
        lua_pushstring(L, em_device_str(t->storage->device, buf, sizeof buf));
        lua_setfield(L, -3, "device");
    }
    lua_pop(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

/* ---- creation ------------------------------------------------------------------------------ */

/* ember.logspace(start, end, steps, base = 10, {dtype =, device =,
 * requires_grad =, out =}); with out, its dtype and device are the defaults,
 * as PyTorch computes in out's dtype */
static int l_logspace(lua_State *L)
{
    const char *op = "ember.logspace";
    static const char *const names[] = {"base", "dtype", "device", "requires_grad", "out", NULL};
    double a = emlua_check_number(L, 1, op), b = emlua_check_number(L, 2, op);
    lua_Integer n = emlua_check_integer(L, 3, op);
    emlua_args args;
    emlua_args_start_kw(&args, L, op, 4, names, 1);
    double base = emlua_arg_number(&args, 0, 10);
    int opts = args.opts;
    bool has_out = opts && lua_getfield(L, opts, "out") != LUA_TNIL;
    em_tensor *out = has_out ? emlua_test(L, -1) : NULL;   /* not a tensor: emlua_push_out says so */
    if (opts) lua_pop(L, 1);   /* the options table keeps out alive */
    if (has_out && emlua_opt_field_boolean(L, opts, "requires_grad", op, false))
        return emlua_argerror(L, opts, op, "out= records no gradient: requires_grad = true cannot go with it");
    em_dtype d = emlua_opt_dtype(L, opts, op, out ? out->dtype : em_default_dtype());
    em_device dev = emlua_opt_device(L, opts, op, out ? out->storage->device : emlua_default_device());
    em_tensor *r = em_logspace(a, b, n, base, d, dev);
    return has_out ? emlua_push_out(L, r, opts, op) : emlua_push_created(L, r, opts, op);
}

/* ember.tril_indices(row, col, offset = 0, {dtype =, device =}) and triu_ */
static int triangle_indices(lua_State *L, const char *op, bool upper)
{
    static const char *const names[] = {"offset", "dtype", "device", NULL};
    lua_Integer r = emlua_check_integer(L, 1, op), c = emlua_check_integer(L, 2, op);
    emlua_args args;
    emlua_args_start_kw(&args, L, op, 3, names, 1);
    lua_Integer off = emlua_arg_integer(&args, 0, 0);
    int opts = args.opts;
    em_dtype d = emlua_opt_dtype(L, opts, op, EM_INT64);
    em_device dev = emlua_opt_device(L, opts, op, emlua_default_device());
    return emlua_push(L, upper ? em_triu_indices(r, c, off, d, dev) : em_tril_indices(r, c, off, d, dev));
}

static int l_tril_indices(lua_State *L) { return triangle_indices(L, "ember.tril_indices", false); }
static int l_triu_indices(lua_State *L) { return triangle_indices(L, "ember.triu_indices", true); }

/* ember._as_strided_view(t, sizes, strides, offset): the view em_as_strided makes (the
 * Lua side, composite/shape.lua's as_strided, checks the arguments and records autograd) */
static int l_as_strided_view(lua_State *L)
{
    const char *op = "as_strided";
    em_tensor *t = emlua_check(L, 1, op);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
    lua_Integer nd = luaL_len(L, 2);
    if (nd > EM_MAX_DIMS || luaL_len(L, 3) != nd) return luaL_error(L, "%s: bad sizes or strides", op);
    for (int i = 0; i < (int)nd; i++) {
        lua_rawgeti(L, 2, i + 1);
        lua_rawgeti(L, 3, i + 1);
        sizes[i] = (int64_t)luaL_checkinteger(L, -2);
        strides[i] = (int64_t)luaL_checkinteger(L, -1);
        lua_pop(L, 2);
    }
    return emlua_push(L, em_as_strided(t, sizes, strides, (int)nd, (int64_t)luaL_checkinteger(L, 4)));
}

/* ember._storage_numel(t): the elements of t's dtype that t's storage holds */
static int l_storage_numel(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "storage_numel");
    lua_pushinteger(L, (lua_Integer)(t->storage->nbytes / em_dtype_size(t->dtype)));
    return 1;
}

void emlua_open_shape(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"flip", l_flip}, {"fliplr", l_fliplr}, {"flipud", l_flipud}, {"roll", l_roll}, {"rot90", l_rot90},
        {"repeat", l_repeat}, {"tile", l_tile}, {"repeat_interleave", l_repeat_interleave},
        {"movedim", l_movedim}, {"moveaxis", l_movedim}, {"unbind", l_unbind}, {"unflatten", l_unflatten},
        {"swapaxes", l_swapaxes}, {"swapdims", l_swapaxes},
        {"diag", l_diag}, {"diagonal", l_diagonal}, {"diag_embed", l_diag_embed}, {"diagflat", l_diagflat},
        {"trace", l_trace}, {"take", l_take}, {"take_along_dim", l_take_along_dim},
        {"index_fill", l_index_fill}, {"index_fill_", l_index_fill_},
        {"index_copy", l_index_copy}, {"index_copy_", l_index_copy_},
        {"masked_scatter", l_masked_scatter}, {"masked_scatter_", l_masked_scatter_},
        {"scatter_reduce", l_scatter_reduce}, {"scatter_reduce_", l_scatter_reduce_},
        {"broadcast_to", l_broadcast_to},
        {"new_zeros", l_new_zeros}, {"new_ones", l_new_ones}, {"new_full", l_new_full},
        {"new_empty", l_new_empty}, {"new_tensor", l_new_tensor},
        {NULL, NULL}
    };
    static const luaL_Reg functions[] = {
        {"flip", l_flip}, {"fliplr", l_fliplr}, {"flipud", l_flipud}, {"roll", l_roll}, {"rot90", l_rot90},
        {"tile", l_tile}, {"repeat_interleave", l_repeat_interleave},
        {"movedim", l_movedim}, {"moveaxis", l_movedim}, {"unbind", l_unbind}, {"unflatten", l_unflatten},
        {"swapaxes", l_swapaxes}, {"swapdims", l_swapaxes},
        {"diag", l_diag}, {"diagonal", l_diagonal}, {"diag_embed", l_diag_embed}, {"diagflat", l_diagflat},
        {"trace", l_trace}, {"take", l_take}, {"take_along_dim", l_take_along_dim},
        {"index_fill", l_index_fill}, {"index_copy", l_index_copy}, {"masked_scatter", l_masked_scatter},
        {"scatter_reduce", l_scatter_reduce}, {"one_hot", l_one_hot},
        {"meshgrid", l_meshgrid}, {"cartesian_prod", l_cartesian_prod}, {"block_diag", l_block_diag},
        {"broadcast_tensors", l_broadcast_tensors}, {"broadcast_to", l_broadcast_to},
        {"atleast_1d", l_atleast_1d}, {"atleast_2d", l_atleast_2d}, {"atleast_3d", l_atleast_3d},
        {"logspace", l_logspace}, {"tril_indices", l_tril_indices}, {"triu_indices", l_triu_indices},
        {"_as_strided_view", l_as_strided_view}, {"_storage_numel", l_storage_numel},
        {NULL, NULL}
    };
    emlua_register(L, methods, functions);
}
