/* autocast.c — the state behind ember.autocast and the casts it makes.
 *
 * Autocast is per thread and per device type, as PyTorch's: each device type
 * has an enabled flag, a low-precision dtype and a cache switch.
 *
 * Where the policy applies: a public op with a policy (em_matmul, em_sum,
 * em_unary of exp, ...) casts its tensor arguments on entry (EM_AUTOCAST,
 * internal.h) and runs its internal form (ei_matmul, ...), which applies
 * none. The engine's own compositions call the internal forms, so they and
 * every backward run in the dtypes their inputs have, as PyTorch's autocast
 * excludes itself below the op: a region's backward runs each op in the
 * dtype its forward used, and a C program gets the numerics a Lua program
 * gets. The backward pass also suspends autocast (em_autocast_suspend), so a
 * custom Function's Lua backward is not cast either.
 *
 * Which tensors are cast (PyTorch's is_eligible): floating tensors other than
 * float64, on a device type whose autocast is enabled.
 *
 * The cache: within a region, a leaf that requires grad (a weight) is cast
 * to the low-precision dtype once and reused, as PyTorch does. Unlike
 * PyTorch an entry is also dropped when its source was written in place (an
 * optimizer step inside the region) or a backward pass ran since the cast
 * (its graph is spent), so a long region never reads stale weights, and
 * nothing is cached under no_grad. The cache
 * is emptied when the outermost region exits. */
#include "internal.h"
#include "autograd.h"

#include <stdlib.h>

typedef struct ac_state {
    bool enabled;
    bool cache;
    em_dtype dtype;
} ac_state;

typedef struct ac_entry {
    em_tensor *src, *cast;      /* both retained */
    uint64_t version;           /* src's storage version when cast */
    uint64_t generation;        /* backward passes run before the cast */
} ac_entry;

static _Thread_local ac_state states[2] = {
    [EM_CPU] = {false, true, EM_BFLOAT16},
    [EM_CUDA] = {false, true, EM_FLOAT16},
};
static _Thread_local bool any_enabled;
int em_autocast_threads;    /* threads whose any_enabled is set (internal.h) */
static _Thread_local int suspended;
static _Thread_local int depth;
static _Thread_local uint64_t generation;
static _Thread_local ac_entry *cache;
static _Thread_local int ncache, cache_cap;

bool em_autocast_active(void) { return any_enabled && suspended == 0; }

static bool valid_type(em_device_type t) { return t == EM_CPU || t == EM_CUDA; }

int em_autocast_get(em_device_type type, bool *enabled, em_dtype *dtype, bool *cache_on)
{
    if (!valid_type(type)) return em_set_error("autocast: unknown device type %d", (int)type);
    *enabled = states[type].enabled;
    *dtype = states[type].dtype;
    *cache_on = states[type].cache;
    return 0;
}

int em_autocast_set(em_device_type type, bool enabled, em_dtype dtype, bool cache_on)
{
    if (!valid_type(type)) return em_set_error("autocast: unknown device type %d", (int)type);
    if (dtype != EM_BFLOAT16 && dtype != EM_FLOAT16)
        return em_set_error("autocast: dtype %s is not a low-precision dtype (expected bfloat16 or float16)",
                            em_dtype_name(dtype));
    states[type] = (ac_state){enabled, cache_on, dtype};
    bool was = any_enabled;
    any_enabled = states[EM_CPU].enabled || states[EM_CUDA].enabled;
    if (any_enabled != was) __atomic_add_fetch(&em_autocast_threads, any_enabled ? 1 : -1, __ATOMIC_RELAXED);
    return 0;
}

void em_autocast_clear_cache(void)
{
    for (int i = 0; i < ncache; i++) {
        em_release(cache[i].src);
        em_release(cache[i].cast);
    }
    ncache = 0;
}

int em_autocast_enter(void) { return ++depth; }

int em_autocast_exit(void)
{
    if (depth > 0) depth--;
    if (depth == 0) em_autocast_clear_cache();
    return depth;
}

int em_autocast_suspend(void) { return suspended++; }
void em_autocast_resume(void) { if (suspended > 0) suspended--; }
void em_autocast_backward_ran(void) { generation++; }

bool em_autocast_eligible(const em_tensor *t)
{
    em_device_type type = em_dev(t).type;
    return valid_type(type) && states[type].enabled &&
           (t->dtype == EM_FLOAT32 || t->dtype == EM_FLOAT16 || t->dtype == EM_BFLOAT16);
}

em_dtype em_autocast_dtype(const em_tensor *t) { return states[em_dev(t).type].dtype; }

static em_tensor *cache_lookup(const em_tensor *t, em_dtype d)
{
    for (int i = 0; i < ncache; i++) {
        ac_entry *e = &cache[i];
        if (e->src != t || e->cast->dtype != d) continue;
        if (e->version == t->storage->version && e->generation == generation) return em_retain(e->cast);
        /* stale: drop it (the last entry moves into its slot) */
        em_release(e->src);
        em_release(e->cast);
        cache[i] = cache[--ncache];
        return NULL;
    }
    return NULL;
}

static void cache_store(const em_tensor *t, em_tensor *c)
{
    if (ncache == cache_cap) {
        int cap = cache_cap ? cache_cap * 2 : 64;
        ac_entry *grown = realloc(cache, sizeof *grown * (size_t)cap);
        if (!grown) return;     /* no cache entry: the next use casts again */
        cache = grown;
        cache_cap = cap;
    }
    cache[ncache++] = (ac_entry){em_retain((em_tensor *)t), em_retain(c), t->storage->version, generation};
}

em_tensor *em_autocast_cast(const em_tensor *t, em_dtype d)
{
    if (t->dtype == d) return em_retain((em_tensor *)t);
    /* PyTorch caches only casts to the low-precision dtype of leaves that
     * require grad: the weights, reused by every step of a region. Not under
     * no_grad: such a cast has no graph, and reusing it once grad mode is back
     * would cut the weight's gradient. */
    bool cacheable = states[em_dev(t).type].cache && depth > 0 && d == states[em_dev(t).type].dtype &&
                     t->requires_grad && em_is_leaf(t) && em_grad_enabled();
    if (cacheable) {
        em_tensor *hit = cache_lookup(t, d);
        if (hit) return hit;
    }
    em_tensor *c = em_to_dtype(t, d);
    if (c && cacheable) cache_store(t, c);
    return c;
}

/* ---- the policies ------------------------------------------------------- */

/* float16 with bfloat16 promotes to float32, as PyTorch's table */
static em_dtype widest(em_dtype a, em_dtype b) { return a == b ? a : EM_FLOAT32; }

/* the dtype an eligible tensor becomes under pol (promote: `wide`) */
static em_dtype target(const em_tensor *t, em_autocast_policy pol, em_dtype wide)
{
    bool cuda = em_dev(t).type == EM_CUDA;
    switch (pol) {
    case EM_AC_LOWER: return em_autocast_dtype(t);
    case EM_AC_FP32: return EM_FLOAT32;
    case EM_AC_FP32_CUDA: return cuda ? EM_FLOAT32 : t->dtype;
    case EM_AC_LOWER_CUDA: return cuda ? em_autocast_dtype(t) : t->dtype;
    case EM_AC_PROMOTE_CUDA_LOWER_CPU: return cuda ? wide : em_autocast_dtype(t);
    case EM_AC_PROMOTE: return wide;
    case EM_AC_NONE: case EM_NAC: break;
    }
    return t->dtype;
}

int em_autocast_apply(em_autocast_policy pol, const em_tensor *const *ts, em_tensor **out, int n)
{
    em_dtype wide = EM_NDTYPES;
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
        if (ts[i] && em_autocast_eligible(ts[i])) wide = wide == EM_NDTYPES ? ts[i]->dtype : widest(wide, ts[i]->dtype);
    }
    if (pol == EM_AC_NONE || (unsigned)pol >= EM_NAC) return 0;
    for (int i = 0; i < n; i++) {
        const em_tensor *t = ts[i];
        if (!t || !em_autocast_eligible(t)) continue;
        em_dtype d = target(t, pol, wide);
        if (d == t->dtype) continue;
        if (!(out[i] = em_autocast_cast(t, d))) {
            for (int k = 0; k < i; k++) em_release(out[k]);
            return -1;
        }
    }
    return 0;
}

int em_autocast_args(em_autocast_policy pol, const em_tensor **args, em_tensor **casts, int n)
{
    if (em_autocast_apply(pol, args, casts, n)) return -1;
    for (int i = 0; i < n; i++)
        if (casts[i]) args[i] = casts[i];
    return 0;
}

em_tensor *em_autocast_done(em_tensor **casts, int n, em_tensor *r)
{
    for (int i = 0; i < n; i++) em_release(casts[i]);
    return r;
}

em_tensor **em_autocast_list(em_autocast_policy pol, em_tensor *const *ts, int n)
{
    em_tensor **c = malloc(sizeof *c * (size_t)n);
    if (!c) {
        em_set_error("autocast: out of memory for a list of %d tensors", n);
        return NULL;
    }
    if (em_autocast_apply(pol, (const em_tensor *const *)ts, c, n)) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!c[i] && ts[i]) c[i] = em_retain(ts[i]);
    return c;
}

em_tensor *em_autocast_list_done(em_tensor **list, int n, em_tensor *r)
{
    for (int i = 0; i < n; i++) em_release(list[i]);
    free(list);
    return r;
}
