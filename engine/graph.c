/* graph.c — CUDA graphs in the engine: thin handles over the backend's
 * graph_* entries (engine/backend.h, kernels/graph.cu), the generator's side
 * of captures (random.c: captured random ops read the graph's device state;
 * a replay writes the generator's state there and advances it by the
 * graph's counters), and the capture check of the engine paths that need a
 * value on the host. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

struct em_graph_pool {
    const em_backend *be;
    void *h;
    int device;
};

struct em_graph {
    const em_backend *be;
    void *h;
    int device;
    em_graph_pool *pool;
    const uint64_t *rng_state;      /* the backend's device words its random kernels read */
    uint64_t rng_counters;          /* how far each replay moves the generator */
};

/* The CUDA backend for device `index`, or NULL with "op: <why>" (no CUDA
 * device, no such index, a backend without graphs). */
static const em_backend *graph_backend(int index, const char *op)
{
    if (em_cuda_check_device(index)) {
        char why[600];
        snprintf(why, sizeof why, "%s", em_error());
        return em_set_error("%s: %s", op, why), NULL;
    }
    const em_backend *be = em_backend_for((em_device){EM_CUDA, index});
    if (be && !be->graph_begin) return em_set_error("%s: the %s backend has no CUDA graphs", op, be->name), NULL;
    return be;
}

em_graph_pool *em_graph_pool_new(int device, const em_graph_pool *share)
{
    if (share) device = share->device;
    const em_backend *be = graph_backend(device, "graph_pool_handle");
    if (!be) return NULL;
    em_graph_pool *p = malloc(sizeof *p);
    if (!p) return em_set_error("graph_pool_handle: out of memory"), NULL;
    p->be = be;
    p->device = device;
    p->h = be->graph_pool(device, share ? share->h : NULL);
    if (!p->h) { free(p); return NULL; }
    return p;
}

void em_graph_pool_release(em_graph_pool *p)
{
    if (!p) return;
    p->be->graph_pool_release(p->h);
    free(p);
}

int em_graph_pool_device(const em_graph_pool *p) { return p->device; }

em_graph *em_graph_begin(int device, const em_graph_pool *pool)
{
    if (pool && pool->device != device)
        return em_set_error("capture_begin: the pool belongs to cuda:%d, the capture is on cuda:%d",
                            pool->device, device), NULL;
    const em_backend *be = graph_backend(device, "capture_begin");
    if (!be) return NULL;
    em_graph *g = malloc(sizeof *g);
    if (!g) return em_set_error("capture_begin: out of memory"), NULL;
    g->be = be;
    g->device = device;
    g->pool = em_graph_pool_new(device, pool);
    g->h = g->pool ? be->graph_begin(device, g->pool->h) : NULL;
    if (!g->h) {
        em_graph_pool_release(g->pool);
        free(g);
        return NULL;
    }
    g->rng_state = be->graph_rng_state(g->h);
    g->rng_counters = 0;
    em_rng_capture_begin(device, g->rng_state);
    return g;
}

int em_graph_end(em_graph *g)
{
    uint64_t used = em_rng_capture_end(g->device, g->rng_state);
    if (used) g->rng_counters = used;       /* 0 also when it was ended before */
    return g->be->graph_end(g->h);
}

int em_graph_replay(em_graph *g)
{
    uint64_t state[2];
    em_rng_get_state(&state[0], &state[1]);
    if (g->be->graph_replay(g->h, g->rng_counters ? state : NULL)) return -1;
    em_rng_advance(g->rng_counters);
    return 0;
}

int em_graph_device(const em_graph *g) { return g->device; }
em_graph_pool *em_graph_pool_of(const em_graph *g) { return em_graph_pool_new(g->device, g->pool); }

void em_graph_destroy(em_graph *g)
{
    if (!g) return;
    em_rng_capture_end(g->device, g->rng_state);
    g->be->graph_destroy(g->h);
    em_graph_pool_release(g->pool);
    free(g);
}

bool em_cuda_is_capturing(int index)
{
    if (!em_cuda_is_initialized()) return false;
    const em_backend *be = em_backend_for((em_device){EM_CUDA, index});
    return be && be->graph_capturing && be->graph_capturing(index);
}

int em_check_not_capturing(em_device dev, const char *op, const char *what)
{
    if (dev.type != EM_CUDA || !em_cuda_is_capturing(dev.index)) return 0;
    char why[400];
    snprintf(why, sizeof why, "%s: cannot %s", op, what);
    return em_backend_for(dev)->graph_refuse(dev.index, why);
}
