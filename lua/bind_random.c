/* bind_random.c — Lua binding of the random number generator: ember.Generator
 * objects and the default one (manual_seed, seed, initial_seed, get_rng_state,
 * set_rng_state), and the random ops that draw from them (rand, randn, randint,
 * randperm, uniform_, normal_, the *_like forms, multinomial).
 *
 * A generator's state is the pair (seed, offset) of the engine's Philox stream
 * (engine/random.c); get_state returns it as a table {seed = , offset = } that
 * set_state takes back. The engine keeps one state, the default generator's. An
 * op given {generator = g} swaps g's state in for the engine call and back out
 * after it (nothing between can raise a Lua error), so g's numbers are those the
 * default generator would give from the same state, on any device. */
#include "binding.h"

#include <string.h>
#include <time.h>

static const em_device CPU = {EM_CPU, 0};

#define GENERATOR "ember.Generator"
#define DEFAULT_KEY "ember.default_generator"
/* PyTorch's default seed, which a new torch.Generator also starts from */
#define NEW_GENERATOR_SEED 67280421310721ULL

typedef struct generator {
    bool global;                /* the default generator: the engine's own state */
    uint64_t seed, offset;      /* the state of any other */
    em_device device;
} generator;

static void gen_get(const generator *g, uint64_t *seed, uint64_t *offset)
{
    if (g->global) em_rng_get_state(seed, offset);
    else { *seed = g->seed; *offset = g->offset; }
}

static void gen_set(generator *g, uint64_t seed, uint64_t offset)
{
    if (g->global) em_rng_set_state(seed, offset);
    else { g->seed = seed; g->offset = offset; }
}

static generator *push_generator(lua_State *L, bool global, em_device dev)
{
    generator *g = lua_newuserdatauv(L, sizeof *g, 0);
    *g = (generator){.global = global, .seed = NEW_GENERATOR_SEED, .device = dev};
    luaL_setmetatable(L, GENERATOR);
    return g;
}

static void push_default(lua_State *L) { lua_getfield(L, LUA_REGISTRYINDEX, DEFAULT_KEY); }

/* ember.Generator([device = "cpu"]) or ember.Generator({device = }) */
static int l_generator(lua_State *L)
{
    const char *op = "ember.Generator";
    emlua_keywords(L, 2, op, NULL);
    em_device dev = CPU;
    emlua_device_arg(L, 1);
    if (lua_type(L, 1) == LUA_TTABLE) {
        static const char *const names[] = {"device", NULL};
        emlua_check_option_names(L, 1, op, names);
        dev = emlua_opt_device(L, 1, op, CPU);
    } else if (!lua_isnoneornil(L, 1)) {
        if (lua_type(L, 1) != LUA_TSTRING) return emlua_typeerror(L, 1, op, "a device name or an options table");
        if (em_device_parse(lua_tostring(L, 1), &dev)) return emlua_argerror(L, 1, op, "%s", em_error());
    }
    push_generator(L, false, dev);
    return 1;
}

/* ---- the state: generator methods, and the ember.* forms on the default one ---- */

static int manual_seed(lua_State *L, generator *g, int arg, const char *op)
{
    /* negative seeds wrap to uint64, as in PyTorch */
    gen_set(g, (uint64_t)emlua_check_integer(L, arg, op), 0);
    return 1;   /* the generator, which the caller pushed */
}

/* a seed from the clock, set and returned */
static int seed(lua_State *L, generator *g)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
    s &= ((uint64_t)1 << 53) - 1;   /* stays exact if the user keeps it as a float */
    gen_set(g, s, 0);
    lua_pushinteger(L, (lua_Integer)s);
    return 1;
}

static int initial_seed(lua_State *L, generator *g)
{
    uint64_t s, o;
    gen_get(g, &s, &o);
    lua_pushinteger(L, (lua_Integer)s);
    return 1;
}

static int get_state(lua_State *L, generator *g)
{
    uint64_t seed, offset;
    gen_get(g, &seed, &offset);
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)seed);
    lua_setfield(L, -2, "seed");
    lua_pushinteger(L, (lua_Integer)offset);
    lua_setfield(L, -2, "offset");
    return 1;
}

static lua_Integer state_field(lua_State *L, int arg, const char *name, const char *op)
{
    lua_getfield(L, arg, name);
    int ok;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    if (!ok) emlua_argerror(L, arg, op, "field '%s' is not an integer", name);
    lua_pop(L, 1);
    return v;
}

/* set_state(state_table) or set_state(seed, offset), the arguments from arg
 * on (nothing may follow them) */
static void set_state(lua_State *L, generator *g, int arg, const char *op)
{
    lua_Integer seed, offset;
    if (lua_type(L, arg) == LUA_TTABLE && !emlua_test(L, arg)) {
        emlua_keywords(L, arg + 1, op, NULL);
        seed = state_field(L, arg, "seed", op);
        offset = state_field(L, arg, "offset", op);
    } else {
        emlua_keywords(L, arg + 2, op, NULL);
        seed = emlua_check_integer(L, arg, op);
        offset = emlua_opt_integer(L, arg + 1, op, 0);
    }
    gen_set(g, (uint64_t)seed, (uint64_t)offset);
}

static generator *check_generator(lua_State *L, const char *op)
{
    generator *g = luaL_testudata(L, 1, GENERATOR);
    if (!g) emlua_typeerror(L, 1, op, "an ember.Generator (call it as g:method(...))");
    return g;
}

/* a generator method that takes nothing after self */
static generator *check_generator_only(lua_State *L, const char *op)
{
    generator *g = check_generator(L, op);
    emlua_keywords(L, 2, op, NULL);
    return g;
}

static int g_manual_seed(lua_State *L)
{
    generator *g = check_generator(L, "Generator:manual_seed");
    emlua_keywords(L, 3, "Generator:manual_seed", NULL);
    manual_seed(L, g, 2, "Generator:manual_seed");
    lua_settop(L, 1);
    return 1;
}
static int g_seed(lua_State *L) { return seed(L, check_generator_only(L, "Generator:seed")); }
static int g_initial_seed(lua_State *L) { return initial_seed(L, check_generator_only(L, "Generator:initial_seed")); }
static int g_get_state(lua_State *L) { return get_state(L, check_generator_only(L, "Generator:get_state")); }
static int g_set_state(lua_State *L)
{
    set_state(L, check_generator(L, "Generator:set_state"), 2, "Generator:set_state");
    lua_settop(L, 1);
    return 1;
}

static int g_index(lua_State *L)
{
    generator *g = check_generator(L, "Generator");
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "device") == 0) {
        char name[32];
        lua_pushstring(L, em_device_str(g->device, name, sizeof name));
        return 1;
    }
    luaL_getmetafield(L, 1, "methods");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int g_tostring(lua_State *L)
{
    generator *g = check_generator(L, "Generator");
    char name[32];
    lua_pushfstring(L, "Generator(device=%s%s)", em_device_str(g->device, name, sizeof name),
                    g->global ? ", the default" : "");
    return 1;
}

/* ember.manual_seed(s) -> ember.default_generator, and the other ember.* forms */
static int l_manual_seed(lua_State *L)
{
    emlua_keywords(L, 2, "ember.manual_seed", NULL);
    push_default(L);
    manual_seed(L, luaL_checkudata(L, -1, GENERATOR), 1, "ember.manual_seed");
    return 1;
}

static generator *default_generator(lua_State *L)
{
    push_default(L);
    generator *g = luaL_checkudata(L, -1, GENERATOR);
    lua_pop(L, 1);   /* the registry keeps it */
    return g;
}

/* the default generator, for an ember.* form that takes no arguments */
static generator *default_generator_only(lua_State *L, const char *op)
{
    emlua_keywords(L, 1, op, NULL);
    return default_generator(L);
}

static int l_seed(lua_State *L) { return seed(L, default_generator_only(L, "ember.seed")); }
static int l_initial_seed(lua_State *L) { return initial_seed(L, default_generator_only(L, "ember.initial_seed")); }
static int l_get_rng_state(lua_State *L) { return get_state(L, default_generator_only(L, "ember.get_rng_state")); }
static int l_set_rng_state(lua_State *L)
{
    set_state(L, default_generator(L), 1, "ember.set_rng_state");
    return 0;
}

/* ---- drawing from a generator given as an option --------------------------------- */

typedef struct rng_swap {
    generator *g;               /* NULL: the default generator, nothing to swap */
    uint64_t seed, offset;      /* the default state while g's is in */
} rng_swap;

/* The generator option of the options table at opts (0: none); raises for a
 * value that is not a generator. */
static generator *opt_generator(lua_State *L, int opts, const char *op)
{
    if (!opts) return NULL;
    lua_getfield(L, opts, "generator");
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return NULL; }
    generator *g = luaL_testudata(L, -1, GENERATOR);
    if (!g) emlua_argerror(L, opts, op, "option 'generator': expected an ember.Generator, got %s", luaL_typename(L, -1));
    lua_pop(L, 1);   /* the options table keeps it alive */
    return g->global ? NULL : g;
}

static void swap_in(rng_swap *s, generator *g)
{
    s->g = g;
    if (!g) return;
    em_rng_get_state(&s->seed, &s->offset);
    em_rng_set_state(g->seed, g->offset);
}

static void swap_out(rng_swap *s)
{
    if (!s->g) return;
    em_rng_get_state(&s->g->seed, &s->g->offset);
    em_rng_set_state(s->seed, s->offset);
}

/* ember._with_generator(g, fn, ...) -> fn(...), drawing from g (nil: the default
 * generator): the same swap for the random functions written in Lua */
static int l_with_generator(lua_State *L)
{
    const char *op = "generator";
    generator *g = NULL;
    if (!lua_isnil(L, 1)) {
        g = luaL_testudata(L, 1, GENERATOR);
        if (!g) return emlua_argerror(L, 1, op, "expected an ember.Generator, got %s", luaL_typename(L, 1));
        if (g->global) g = NULL;
    }
    luaL_checktype(L, 2, LUA_TFUNCTION);
    int nargs = lua_gettop(L) - 2;
    rng_swap s;
    swap_in(&s, g);
    int rc = lua_pcall(L, nargs, LUA_MULTRET, 0);
    swap_out(&s);
    if (rc != LUA_OK) return lua_error(L);
    return lua_gettop(L) - 1;
}

static const char *const FACTORY_OPTIONS[] = {"dtype", "device", "requires_grad", "generator", "out", NULL};
/* the *_like forms: no generator (they do not read one), no out */
static const char *const LIKE_OPTIONS[] = {"dtype", "device", "requires_grad", NULL};

/* ---- random tensors -------------------------------------------------------- */

/* The options of a random factory, in the table at opts (0: none): dtype and
 * device (by default out's, else def and the default device), and whether
 * out= is given (with requires_grad, which then marks out, as in PyTorch). */
typedef struct factory_opts {
    em_dtype dtype;
    em_device device;
    bool out, requires_grad;
} factory_opts;

static factory_opts factory_options(lua_State *L, int opts, const char *op, em_dtype def)
{
    emlua_check_option_names(L, opts, op, FACTORY_OPTIONS);
    factory_opts f = {def, emlua_default_device(), false, false};
    if (opts && lua_getfield(L, opts, "out") != LUA_TNIL) {
        em_tensor *out = emlua_test(L, -1);   /* not a tensor: emlua_push_out refuses it */
        f.out = true;
        if (out) { f.dtype = out->dtype; f.device = out->storage->device; }
    }
    if (opts) lua_pop(L, 1);
    f.dtype = emlua_opt_dtype(L, opts, op, f.dtype);
    f.device = emlua_opt_device(L, opts, op, f.device);
    if (f.out) f.requires_grad = emlua_opt_field_boolean(L, opts, "requires_grad", op, false);
    return f;
}

/* pushes t, made by op with the options f read from the table at opts */
static int push_random(lua_State *L, em_tensor *t, int opts, const factory_opts *f, const char *op)
{
    if (!f->out) return emlua_push_created(L, t, opts, op);
    emlua_push_out(L, t, opts, op);
    if (f->requires_grad && em_requires_grad_(emlua_test(L, -1), true)) return emlua_fail(L);
    return 1;
}

/* rand(sizes... [, opts]) and randn */
static int create_random(lua_State *L, const char *op, emlua_sized_fn fn)
{
    int64_t sizes[EM_MAX_DIMS];
    int n = emlua_check_sizes(L, 1, op, sizes);
    int opts = emlua_options_index(L, 1);
    factory_opts f = factory_options(L, opts, op, em_default_dtype());
    rng_swap s;
    swap_in(&s, opt_generator(L, opts, op));
    em_tensor *t = fn(sizes, n, f.dtype, f.device);
    swap_out(&s);
    return push_random(L, t, opts, &f, op);
}

static int l_rand(lua_State *L) { return create_random(L, "ember.rand", em_rand); }
static int l_randn(lua_State *L) { return create_random(L, "ember.randn", em_randn); }
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
    emlua_keywords(L, at + 2, op, NULL);
    factory_opts f = factory_options(L, opts, op, EM_INT64);
    rng_swap s;
    swap_in(&s, opt_generator(L, opts, op));
    em_tensor *t = em_randint(low, high, sizes, n, f.dtype, f.device);
    swap_out(&s);
    return push_random(L, t, opts, &f, op);
}

static int l_randperm(lua_State *L)
{
    const char *op = "ember.randperm";
    lua_Integer n = emlua_check_integer(L, 1, op);
    int opts = emlua_opt_table(L, 2, op, "an options table");
    emlua_keywords(L, 3, op, NULL);
    factory_opts f = factory_options(L, opts, op, EM_INT64);
    rng_swap s;
    swap_in(&s, opt_generator(L, opts, op));
    em_tensor *t = em_randperm(n, f.dtype, f.device);
    swap_out(&s);
    return push_random(L, t, opts, &f, op);
}

/* ---- in place and *_like ------------------------------------------------------ */

/* t:uniform_([from = 0 [, to = 1]] [, {generator =}]) and
 * t:normal_([mean = 0 [, std = 1]] [, {generator =}]): t filled in place by fn with
 * the two parameters (also given as options by PyTorch's names a, b) */
static int fill_random_(lua_State *L, const char *op, const char *const *names,
                        int (*fn)(em_tensor *t, double a, double b))
{
    em_tensor *t = emlua_check(L, 1, op);
    emlua_args args;
    emlua_args_start_kw(&args, L, op, 2, names, 2);
    double a = emlua_arg_number(&args, 0, 0.0), b = emlua_arg_number(&args, 1, 1.0);
    rng_swap s;
    swap_in(&s, opt_generator(L, args.opts, op));
    int rc = fn(t, a, b);
    swap_out(&s);
    return emlua_push_self(L, rc);
}

static int l_uniform_(lua_State *L)
{
    static const char *const names[] = {"from", "to", "generator", NULL};
    return fill_random_(L, "uniform_", names, em_uniform_);
}

static int l_normal_(lua_State *L)
{
    static const char *const names[] = {"mean", "std", "generator", NULL};
    return fill_random_(L, "normal_", names, em_normal_);
}

/* rand_like(t [, opts]) and randn_like(t [, opts]) */
static int random_like(lua_State *L, const char *op, emlua_sized_fn fn)
{
    em_tensor *t = emlua_check(L, 1, op);
    int opts = emlua_keywords(L, 2, op, LIKE_OPTIONS);
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
    int opts = emlua_keywords(L, at, op, LIKE_OPTIONS);
    em_dtype d = emlua_opt_dtype(L, opts, op, t->dtype);
    em_device dev = emlua_opt_device(L, opts, op, t->storage->device);
    return emlua_push_created(L, em_randint(low, high, t->sizes, t->ndim, d, dev), opts, op);
}

/* multinomial(probs, num_samples [, replacement] [, {replacement =, generator =, out =}]) */
static int l_multinomial(lua_State *L)
{
    const char *op = "multinomial";
    em_tensor *p = emlua_check(L, 1, op);
    lua_Integer n = emlua_check_integer(L, 2, op);
    static const char *const names[] = {"replacement", "generator", "out", NULL};
    emlua_args args;
    emlua_args_start_kw(&args, L, op, 3, names, 1);
    bool replacement = emlua_arg_bool(&args, 0, false);
    rng_swap s;
    swap_in(&s, opt_generator(L, args.opts, op));
    em_tensor *r = em_multinomial(p, (int64_t)n, replacement);
    swap_out(&s);
    return emlua_push_out(L, r, args.opts, op);
}


void emlua_open_random(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"uniform_", l_uniform_}, {"normal_", l_normal_}, {"multinomial", l_multinomial},
        {NULL, NULL},
    };
    static const luaL_Reg functions[] = {
        {"Generator", l_generator}, {"_with_generator", l_with_generator},
        {"manual_seed", l_manual_seed}, {"seed", l_seed}, {"initial_seed", l_initial_seed},
        {"get_rng_state", l_get_rng_state}, {"set_rng_state", l_set_rng_state},
        {"rand", l_rand}, {"randn", l_randn}, {"randint", l_randint}, {"randperm", l_randperm},
        {"rand_like", l_rand_like}, {"randn_like", l_randn_like}, {"randint_like", l_randint_like},
        {"multinomial", l_multinomial},
        {NULL, NULL},
    };
    emlua_register(L, methods, functions);
    if (luaL_newmetatable(L, GENERATOR)) {
        static const luaL_Reg meta[] = {{"__index", g_index}, {"__tostring", g_tostring}, {NULL, NULL}};
        static const luaL_Reg gmethods[] = {
            {"manual_seed", g_manual_seed}, {"seed", g_seed}, {"initial_seed", g_initial_seed},
            {"get_state", g_get_state}, {"set_state", g_set_state}, {NULL, NULL},
        };
        luaL_setfuncs(L, meta, 0);
        luaL_newlib(L, gmethods);
        lua_setfield(L, -2, "methods");
        lua_pushstring(L, "Generator");
        lua_setfield(L, -2, "__name");
    }
    lua_pop(L, 1);
    push_generator(L, true, CPU);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, DEFAULT_KEY);
    emlua_set_module_field(L, "default_generator");
}
