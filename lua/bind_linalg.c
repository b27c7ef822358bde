/* bind_linalg.c — Lua binding of the matmul family (matmul, mm, bmm, addmm,
 * outer, dot) and of the random number generator (seeding, state, rand,
 * randn, randint, randperm, uniform_, normal_, the *_like forms and
 * multinomial).
 *
 * Each linalg function serves both t:op(u) and ember.op(t, u). The generator
 * state is the pair (seed, offset); get_rng_state returns it as a table
 * {seed = , offset = } that set_rng_state takes back. */
#include "binding.h"

#include <time.h>

static const em_device CPU = {EM_CPU, 0};

/* ---- matmul family -------------------------------------------------------- */

typedef em_tensor *(*binary_fn)(const em_tensor *, const em_tensor *);

static int pair(lua_State *L, const char *op, binary_fn fn)
{
    em_tensor *a = emlua_check(L, 1, op);
    em_tensor *b = emlua_check(L, 2, op);
    return emlua_push(L, fn(a, b));
}

static int l_matmul(lua_State *L) { return pair(L, "matmul", em_matmul); }
static int l_mm(lua_State *L) { return pair(L, "mm", em_mm); }
static int l_bmm(lua_State *L) { return pair(L, "bmm", em_bmm); }
static int l_outer(lua_State *L) { return pair(L, "outer", em_outer); }
static int l_dot(lua_State *L) { return pair(L, "dot", em_dot); }

/* addmm(c, a, b, {beta = 1, alpha = 1}) = beta * c + alpha * (a @ b) */
static int l_addmm(lua_State *L)
{
    const char *op = "addmm";
    em_tensor *c = emlua_check(L, 1, op);
    em_tensor *a = emlua_check(L, 2, op);
    em_tensor *b = emlua_check(L, 3, op);
    int opts = emlua_opt_table(L, 4, op, "an options table {beta=, alpha=}");
    double beta = emlua_opt_field_number(L, opts, "beta", op, 1.0);
    double alpha = emlua_opt_field_number(L, opts, "alpha", op, 1.0);
    return emlua_push(L, em_addmm(c, a, b, beta, alpha));
}

/* ---- generator state ------------------------------------------------------ */

static int l_manual_seed(lua_State *L)
{
    /* negative seeds wrap to uint64, as in PyTorch */
    em_manual_seed((uint64_t)emlua_check_integer(L, 1, "ember.manual_seed"));
    return 0;
}

/* ember.seed(): a seed from the clock, set and returned */
static int l_seed(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
    s &= ((uint64_t)1 << 53) - 1;   /* stays exact if the user keeps it as a float */
    em_manual_seed(s);
    lua_pushinteger(L, (lua_Integer)s);
    return 1;
}

static int l_initial_seed(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)em_initial_seed());
    return 1;
}

static int l_get_rng_state(lua_State *L)
{
    uint64_t seed, offset;
    em_rng_get_state(&seed, &offset);
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)seed);
    lua_setfield(L, -2, "seed");
    lua_pushinteger(L, (lua_Integer)offset);
    lua_setfield(L, -2, "offset");
    return 1;
}

static lua_Integer state_field(lua_State *L, const char *name)
{
    lua_getfield(L, 1, name);
    int ok;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    if (!ok) emlua_argerror(L, 1, "ember.set_rng_state", "field '%s' is not an integer", name);
    lua_pop(L, 1);
    return v;
}

/* set_rng_state(state_table) or set_rng_state(seed, offset) */
static int l_set_rng_state(lua_State *L)
{
    const char *op = "ember.set_rng_state";
    lua_Integer seed, offset;
    if (lua_type(L, 1) == LUA_TTABLE && !emlua_test(L, 1)) {
        seed = state_field(L, "seed");
        offset = state_field(L, "offset");
    } else {
        seed = emlua_check_integer(L, 1, op);
        offset = emlua_opt_integer(L, 2, op, 0);
    }
    em_rng_set_state((uint64_t)seed, (uint64_t)offset);
    return 0;
}

/* ---- random tensors -------------------------------------------------------- */

static int l_rand(lua_State *L) { return emlua_create_sized(L, "ember.rand", em_rand); }
static int l_randn(lua_State *L) { return emlua_create_sized(L, "ember.randn", em_randn); }

/* A size table at idx (only a table: randint's integers are its bounds). */
static int size_table(lua_State *L, int idx, const char *op, int64_t *sizes)
{
    if (lua_type(L, idx) != LUA_TTABLE || emlua_test(L, idx))
        emlua_typeerror(L, idx, op, "a size table");
    int n = (int)lua_rawlen(L, idx);
    if (n > EM_MAX_DIMS) emlua_argerror(L, idx, op, "%d dimensions (at most %d)", n, EM_MAX_DIMS);
    lua_Integer bad = emlua_table_integers(L, idx, n, sizes);
    if (bad) emlua_argerror(L, idx, op, "size entry %d is not an integer", (int)bad);
    return n;
}

/* randint's bounds from idx: (high) or (low, high), low 0 when not given.
 * Returns the index of the argument after them. */
static int randint_bounds(lua_State *L, int idx, const char *op, lua_Integer *low, lua_Integer *high)
{
    *low = 0;
    if (lua_type(L, idx + 1) == LUA_TNUMBER) *low = emlua_check_integer(L, idx++, op);
    *high = emlua_check_integer(L, idx, op);
    return idx + 1;
}

/* randint(high, sizes [, opts]) or randint(low, high, sizes [, opts]) */
static int l_randint(lua_State *L)
{
    const char *op = "ember.randint";
    lua_Integer low, high;
    int at = randint_bounds(L, 1, op, &low, &high);
    int64_t sizes[EM_MAX_DIMS];
    int n = size_table(L, at, op, sizes);
    int opts = emlua_opt_table(L, at + 1, op, "an options table");
    em_dtype d = emlua_opt_dtype(L, opts, op, EM_INT64);
    em_device dev = emlua_opt_device(L, opts, op, CPU);
    return emlua_push_created(L, em_randint(low, high, sizes, n, d, dev), opts, op);
}

static int l_randperm(lua_State *L)
{
    const char *op = "ember.randperm";
    lua_Integer n = emlua_check_integer(L, 1, op);
    int opts = emlua_opt_table(L, 2, op, "an options table");
    em_dtype d = emlua_opt_dtype(L, opts, op, EM_INT64);
    em_device dev = emlua_opt_device(L, opts, op, CPU);
    return emlua_push_created(L, em_randperm(n, d, dev), opts, op);
}

/* ---- in place and *_like ------------------------------------------------------ */

/* t:uniform_([from = 0 [, to = 1]]) and t:normal_([mean = 0 [, std = 1]]):
 * t filled in place by fn with the two parameters */
static int fill_random_(lua_State *L, const char *op, int (*fn)(em_tensor *t, double a, double b))
{
    em_tensor *t = emlua_check(L, 1, op);
    double a = emlua_opt_number(L, 2, op, 0.0), b = emlua_opt_number(L, 3, op, 1.0);
    return emlua_push_self(L, fn(t, a, b));
}

static int l_uniform_(lua_State *L) { return fill_random_(L, "uniform_", em_uniform_); }
static int l_normal_(lua_State *L) { return fill_random_(L, "normal_", em_normal_); }

/* rand_like(t [, opts]) and randn_like(t [, opts]) */
static int random_like(lua_State *L, const char *op, emlua_sized_fn fn)
{
    em_tensor *t = emlua_check(L, 1, op);
    int opts = emlua_opt_table(L, 2, op, "an options table");
    em_dtype d = emlua_opt_dtype(L, opts, op, t->dtype);
    em_device dev = emlua_opt_device(L, opts, op, t->storage->device);
    return emlua_push_created(L, fn(t->sizes, t->ndim, d, dev), opts, op);
}

static int l_rand_like(lua_State *L) { return random_like(L, "ember.rand_like", em_rand); }
static int l_randn_like(lua_State *L) { return random_like(L, "ember.randn_like", em_randn); }

/* randint_like(t, high [, opts]) or randint_like(t, low, high [, opts]) */
static int l_randint_like(lua_State *L)
{
    const char *op = "ember.randint_like";
    em_tensor *t = emlua_check(L, 1, op);
    lua_Integer low, high;
    int at = randint_bounds(L, 2, op, &low, &high);
    int opts = emlua_opt_table(L, at, op, "an options table");
    em_dtype d = emlua_opt_dtype(L, opts, op, t->dtype);
    em_device dev = emlua_opt_device(L, opts, op, t->storage->device);
    return emlua_push_created(L, em_randint(low, high, t->sizes, t->ndim, d, dev), opts, op);
}

/* multinomial(probs, num_samples [, replacement] [, {replacement =, generator =}]);
 * ember has one global generator, so a generator option is refused rather
 * than silently ignored. */
static int l_multinomial(lua_State *L)
{
    const char *op = "multinomial";
    em_tensor *p = emlua_check(L, 1, op);
    lua_Integer n = emlua_check_integer(L, 2, op);
    static const char *const names[] = {"replacement", "generator", NULL};
    emlua_args args;
    emlua_args_start(&args, L, op, 3, names);
    if ((args.opts ? args.opts - 1 : lua_gettop(L)) >= 4) emlua_argerror(L, 4, op, "unexpected argument");
    bool replacement = emlua_arg_bool(&args, 0, false);
    if (emlua_arg_at(&args, 1))
        emlua_argerror(L, args.opts ? args.opts : 4, op, "option 'generator': ember has one global generator "
                       "(seed it with ember.manual_seed)");
    return emlua_push(L, em_multinomial(p, (int64_t)n, replacement));
}

void emlua_open_linalg(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"matmul", l_matmul}, {"mm", l_mm}, {"bmm", l_bmm}, {"addmm", l_addmm},
        {"outer", l_outer}, {"dot", l_dot},
        {"uniform_", l_uniform_}, {"normal_", l_normal_}, {"multinomial", l_multinomial},
        {NULL, NULL},
    };
    static const luaL_Reg functions[] = {
        {"matmul", l_matmul}, {"mm", l_mm}, {"bmm", l_bmm}, {"addmm", l_addmm},
        {"outer", l_outer}, {"dot", l_dot},
        {"manual_seed", l_manual_seed}, {"seed", l_seed}, {"initial_seed", l_initial_seed},
        {"get_rng_state", l_get_rng_state}, {"set_rng_state", l_set_rng_state},
        {"rand", l_rand}, {"randn", l_randn}, {"randint", l_randint}, {"randperm", l_randperm},
        {"rand_like", l_rand_like}, {"randn_like", l_randn_like}, {"randint_like", l_randint_like},
        {"multinomial", l_multinomial},
        {NULL, NULL},
    };
    emlua_register(L, methods, functions);
}
