/* autograd.c — the tape: per-tensor autograd data, nodes, grad mode, and the
 * backward pass (a dependency-counted walk of the graph in reverse creation
 * order). The gradient formulas live in grad_*.c, one file per op family. */
#include "autograd.h"
#include "ag_region.h"
#include "debug.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool em_grad_mode = true;

/* ---- anomaly mode (debug.h) ------------------------------------------------ */

bool em_anomaly_mode;
static bool anomaly_nan;
static char *failed_trace;          /* a copy of the failing node's text */

void em_set_anomaly(bool on, bool check_nan)
{
    em_anomaly_mode = on;
    anomaly_nan = on && check_nan;
}

bool em_anomaly_check_nan(void) { return anomaly_nan; }

em_node_hook_fn em_node_hook;

static const char *running_node;       /* the node whose apply runs now */

const char *em_ag_running_node(void) { return running_node; }

void em_set_node_hook(em_node_hook_fn hook) { em_node_hook = hook; }

const char *em_anomaly_trace(void) { return failed_trace; }

static em_node *grad_fn_of(const em_tensor *t)
{
    const em_ag_meta *m = t->autograd;
    return m ? m->grad_fn : NULL;
}

bool em_anomaly_wants_trace(const em_tensor *t)
{
    em_node *n = grad_fn_of(t);
    return n && !n->trace;
}

void em_anomaly_attach(const em_tensor *t, char *text)
{
    em_node *n = grad_fn_of(t);
    if (n && !n->trace) n->trace = text;
    else free(text);
}
static uint64_t next_seq;

/* A tensor hook (leaf: run before accumulation; non-leaf: run when its
 * gradient is computed) or a retain_grad slot. */
typedef struct em_hook {
    struct em_hook *next;
    em_hook_fn fn;
    em_post_hook_fn post_fn;            /* post-accumulate hooks use this one */
    void *ctx;
    void (*free_ctx)(void *ctx);
    struct em_grad_slot *slot;          /* retain_grad: where the gradient goes */
} em_hook;

/* Shared between a non-leaf tensor (t.grad reads it) and its grad_fn (which
 * writes it), so either may die first. */
typedef struct em_grad_slot {
    int refcount;
    em_tensor *grad;
} em_grad_slot;

bool em_grad_enabled(void) { return em_grad_mode; }

bool em_set_grad_enabled(bool on)
{
    bool was = em_grad_mode;
    em_grad_mode = on;
    return was;
}

/* ---- per-tensor data ------------------------------------------------------ */

static void slot_release(em_grad_slot *s)
{
    if (!s || --s->refcount > 0) return;
    em_release(s->grad);
    free(s);
}

static void hooks_free(em_hook *h)
{
    while (h) {
        em_hook *next = h->next;
        if (h->free_ctx) h->free_ctx(h->ctx);
        slot_release(h->slot);
        free(h);
        h = next;
    }
}

static void node_release(em_node *n);

void em_ag_free_meta(em_tensor *t)
{
    em_ag_meta *m = t->autograd;
    t->autograd = NULL;
    if (!m) return;
    node_release(m->grad_fn);
    em_release(m->grad);
    slot_release(m->retained);
    hooks_free(m->hooks);
    hooks_free(m->post_hooks);
    free(m);
}

static em_ag_meta *meta_of(em_tensor *t)
{
    if (t->autograd) return t->autograd;
    em_ag_meta *m = calloc(1, sizeof *m);
    if (!m) { em_set_error("out of memory (autograd data)"); return NULL; }
    t->autograd = m;
    return m;
}

/* ---- nodes ---------------------------------------------------------------- */

#define NODE_FREE_MAX 1024
static em_node *node_free_list[NODE_FREE_MAX];
static int node_free_count;

em_node *em_ag_node(const char *name, em_apply_fn apply, int nin)
{
    em_node *n = node_free_count ? node_free_list[--node_free_count] : malloc(sizeof *n);
    if (!n) { em_set_error("out of memory (autograd node)"); return NULL; }
    memset(n, 0, sizeof *n);
    n->refcount = 1;
    n->name = name;
    n->apply = apply;
    n->seq = next_seq++;
    n->nin = nin;
    n->next = n->next_small;
    if (nin > EM_NODE_SMALL_IN) {
        n->next = calloc((size_t)nin, sizeof(em_edge));
        if (!n->next) {
            n->next = n->next_small;
            node_release(n);
            em_set_error("out of memory (autograd node)");
            return NULL;
        }
    }
    return n;
}

/* slot i of n's saved tensors, or NULL past the ones it has */
static em_saved *saved_slot(em_node *n, int i)
{
    if (i < EM_NODE_SAVED) return &n->saved[i];
    return i - EM_NODE_SAVED < n->nmore_saved ? &n->more_saved[i - EM_NODE_SAVED] : NULL;
}

static void release_saved(em_node *n)
{
    em_saved *s;
    for (int i = 0; (s = saved_slot(n, i)) != NULL; i++) {
        em_release(s->t);
        s->t = NULL;
    }
}

/* Nodes form a DAG whose chains can be as long as a training loop's graph;
 * releasing recursively could overflow the C stack, so use a work list. */
static void node_release(em_node *n)
{
    em_node *stack_small[64], **stack = stack_small;
    int cap = 64, top = 0;
    if (n) stack[top++] = n;
    while (top > 0) {
        em_node *x = stack[--top];
        if (--x->refcount > 0) continue;
        for (int i = 0; i < x->nin; i++) {
            em_node *child = x->next[i].node;
            if (!child) continue;
            if (top == cap) {
                em_node **grown = malloc(sizeof *grown * (size_t)cap * 2);
                if (!grown) { node_release(child); continue; }   /* recursion as a last resort */
                memcpy(grown, stack, sizeof *grown * (size_t)top);
                if (stack != stack_small) free(stack);
                stack = grown;
                cap *= 2;
            }
            stack[top++] = child;
        }
        release_saved(x);
        em_release(x->buffer);
        if (x->leaf) {
            em_ag_meta *m = x->leaf->autograd;
            if (m && m->accumulator == x) m->accumulator = NULL;
            em_release(x->leaf);
        }
        hooks_free(x->pre_hooks);
        if (x->free_ctx) x->free_ctx(x->ctx);
        free(x->more_saved);
        if (x->next != x->next_small) free(x->next);
        free(x->extra);
        free(x->trace);
        if (node_free_count < NODE_FREE_MAX) node_free_list[node_free_count++] = x;
        else free(x);
    }
    if (stack != stack_small) free(stack);
}

em_tensor *em_ag_abandon(em_node *n, em_tensor *out)
{
    node_release(n);
    em_release(out);
    return NULL;
}

static int accumulate_apply(em_node *n, em_tensor *const *gout, em_tensor **gin);

/* The node a gradient for `t` flows into: its grad_fn, or for a leaf its
 * (shared) AccumulateGrad node. New reference; NULL if t needs no grad. */
static em_node *grad_edge(const em_tensor *t)
{
    if (!t->requires_grad) return NULL;
    em_ag_meta *m = meta_of((em_tensor *)t);
    if (!m) return NULL;
    if (m->grad_fn) { m->grad_fn->refcount++; return m->grad_fn; }
    if (m->accumulator) { m->accumulator->refcount++; return m->accumulator; }
    em_node *acc = em_ag_node("AccumulateGrad", accumulate_apply, 0);
    if (!acc) return NULL;
    acc->leaf = em_retain((em_tensor *)t);
    m->accumulator = acc;
    return acc;
}

void em_ag_input(em_node *n, int i, const em_tensor *input)
{
    n->next[i].node = input ? grad_edge(input) : NULL;
}

int em_ag_save(em_node *n, int slot, const em_tensor *t, bool is_output)
{
    if (slot >= EM_NODE_SAVED + n->nmore_saved) {
        int more = slot - EM_NODE_SAVED + 1;
        em_saved *grown = realloc(n->more_saved, sizeof *grown * (size_t)more);
        if (!grown) return em_set_error("out of memory (autograd node)");
        memset(grown + n->nmore_saved, 0, sizeof *grown * (size_t)(more - n->nmore_saved));
        n->more_saved = grown;
        n->nmore_saved = more;
    }
    em_saved *slot_p = saved_slot(n, slot);
    em_tensor *s;
    if (is_output) {
        /* an alias without autograd data, so the node does not own itself */
        s = em_alias(t);
        if (!s) return -1;
    } else {
        s = em_retain((em_tensor *)t);
    }
    em_release(slot_p->t);
    slot_p->t = s;
    slot_p->version = t->storage->version;
    slot_p->is_output = is_output;
    return 0;
}

em_tensor *em_ag_saved(em_node *n, int slot)
{
    em_saved *s = saved_slot(n, slot);
    if (n->released || !s || !s->t)
        return em_set_error("backward: %s: trying to backward through the graph a second time (its saved "
                            "tensors were freed); use retain_graph = true on the first backward", n->name), NULL;
    if (s->t->storage->version != s->version)
        return em_set_error("backward: %s: a tensor it saved was modified by an in-place operation "
                            "(version %llu when saved, now %llu); use an out-of-place op or clone() first",
                            n->name, (unsigned long long)s->version, (unsigned long long)s->t->storage->version),
               NULL;
    if (!s->is_output || !em_grad_mode) return s->t;
    /* A backward being recorded (create_graph) must see the saved output as
     * the function of the inputs it is, or gradients of gradients through
     * it would be silently wrong; the alias holds the node only while this
     * apply runs (unpacked_release), so no cycle outlives it. */
    if (!s->unpacked) {
        em_tensor *a = em_alias(s->t);
        em_ag_meta *m = a ? meta_of(a) : NULL;
        if (!m) { em_release(a); return NULL; }
        m->grad_fn = n;
        n->refcount++;
        a->requires_grad = true;
        s->unpacked = a;
    }
    return s->unpacked;
}

static void unpacked_release(em_node *n)
{
    em_saved *s;
    for (int i = 0; (s = saved_slot(n, i)) != NULL; i++)
        if (s->unpacked) {
            em_tensor *a = s->unpacked;
            s->unpacked = NULL;
            em_release(a);
        }
}

em_tensor *em_ag_output(em_node *n, em_tensor *out)
{
    if (!out) { node_release(n); return NULL; }
    em_ag_meta *m = meta_of(out);
    if (!m) { node_release(n); em_release(out); return NULL; }
    node_release(m->grad_fn);
    m->grad_fn = n;                     /* takes the caller's reference */
    out->requires_grad = true;
    return out;
}

/* ---- public tensor-level API -------------------------------------------- */

int em_requires_grad_(em_tensor *t, bool on)
{
    em_ag_meta *m = t->autograd;
    if (m && m->grad_fn) {
        if (on) return 0;
        return em_set_error("requires_grad_: only leaf tensors can stop requiring grad; use detach() "
                            "for a non-leaf (it was made by %s)", m->grad_fn->name);
    }
    if (on && !em_dtype_is_float(t->dtype))
        return em_set_error("requires_grad_: only floating point tensors can require gradients, got %s",
                            em_dtype_name(t->dtype));
    t->requires_grad = on;
    return 0;
}

bool em_is_leaf(const em_tensor *t)
{
    em_ag_meta *m = t->autograd;
    return !m || !m->grad_fn;
}

const char *em_grad_fn_name(const em_tensor *t)
{
    em_ag_meta *m = t->autograd;
    return m && m->grad_fn ? m->grad_fn->name : NULL;
}

em_tensor *em_get_grad(const em_tensor *t)
{
    em_ag_meta *m = t->autograd;
    if (!m) return NULL;
    if (m->grad) return em_retain(m->grad);
    if (m->retained && m->retained->grad) return em_retain(m->retained->grad);
    return NULL;
}

int em_set_grad(em_tensor *t, em_tensor *g)
{
    if (g == t) return em_set_error("grad: can't assign a tensor as its own grad");   /* a reference cycle */
    if (g) {
        if (em_numel(g) != em_numel(t) || g->ndim != t->ndim ||
            memcmp(g->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim) != 0)
            return em_set_error("grad: assigned gradient of size %s does not match the tensor's size %s",
                                SHAPE(g), SHAPE(t));
        if (g->dtype != t->dtype)
            return em_set_error("grad: assigned gradient has dtype %s, the tensor has %s", em_dtype_name(g->dtype),
                                em_dtype_name(t->dtype));
        if (!em_device_eq(em_dev(g), em_dev(t)))
            return em_check_same_device("grad", t, g);
    }
    em_ag_meta *m = meta_of(t);
    if (!m) return -1;
    em_tensor *old = m->grad;
    m->grad = g ? em_retain(g) : NULL;
    em_release(old);
    if (!g && m->retained) { em_release(m->retained->grad); m->retained->grad = NULL; }
    return 0;
}

em_tensor *em_detach(const em_tensor *t)
{
    return em_alias(t);   /* a new header: no autograd data, requires_grad false */
}

int em_detach_(em_tensor *t)
{
    if (em_ag_is_view(t))
        return em_set_error("detach_: can't detach views in-place (this one was made by %s); use detach() instead",
                            em_grad_fn_name(t));
    em_ag_meta *m = t->autograd;
    if (m) {   /* a leaf now: its graph and retain_grad go, .grad and hooks stay (as PyTorch's) */
        node_release(m->grad_fn);
        m->grad_fn = NULL;
        slot_release(m->retained);
        m->retained = NULL;
    }
    t->requires_grad = false;
    return 0;
}

/* Adds a hook record to a list (front); hooks then run newest last, so keep
 * the list in registration order by appending. */
static void hook_append(em_hook **list, em_hook *h)
{
    while (*list) list = &(*list)->next;
    *list = h;
}

int em_register_hook(em_tensor *t, em_hook_fn fn, void *ctx, void (*free_ctx)(void *))
{
    if (!t->requires_grad)
        return em_set_error("register_hook: cannot register a hook on a tensor that doesn't require gradient");
    em_hook *h = calloc(1, sizeof *h);
    if (!h) return em_set_error("out of memory (hook)");
    h->fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    em_ag_meta *m = meta_of(t);
    if (!m) { free(h); return -1; }
    hook_append(m->grad_fn ? &m->grad_fn->pre_hooks : &m->hooks, h);
    return 0;
}

int em_register_post_accumulate_hook(em_tensor *t, em_post_hook_fn fn, void *ctx, void (*free_ctx)(void *))
{
    if (!t->requires_grad)
        return em_set_error("register_post_accumulate_grad_hook: cannot register a hook on a tensor that doesn't "
                            "require gradient");
    if (!em_is_leaf(t))
        return em_set_error("register_post_accumulate_grad_hook: only leaf tensors (parameters) accumulate a "
                            "gradient; this tensor has grad_fn %s", em_grad_fn_name(t));
    em_ag_meta *m = meta_of(t);
    if (!m) return -1;
    em_hook *h = calloc(1, sizeof *h);
    if (!h) return em_set_error("out of memory (hook)");
    h->post_fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    hook_append(&m->post_hooks, h);
    return 0;
}

int em_retain_grad(em_tensor *t)
{
    if (!t->requires_grad)
        return em_set_error("retain_grad: can't retain_grad on a tensor that has requires_grad = false");
    em_ag_meta *m = meta_of(t);
    if (!m) return -1;
    if (!m->grad_fn || m->retained) return 0;   /* leaves keep their grad anyway */
    em_grad_slot *s = calloc(1, sizeof *s);
    em_hook *h = calloc(1, sizeof *h);
    if (!s || !h) { free(s); free(h); return em_set_error("out of memory (retain_grad)"); }
    s->refcount = 2;                    /* the tensor and the hook */
    h->slot = s;
    m->retained = s;
    hook_append(&m->grad_fn->pre_hooks, h);
    return 0;
}

/* ---- the backward pass ---------------------------------------------------- */

/* Runs hooks on *grad (replacing it when a hook returns a new one) and fills
 * retain_grad slots. */
static int run_hooks(em_hook *h, em_tensor **grad)
{
    for (; h; h = h->next) {
        if (h->slot) {
            em_tensor *copy = em_grad_mode ? em_retain(*grad) : em_detach(*grad);
            if (!copy) return -1;
            em_release(h->slot->grad);
            h->slot->grad = copy;
            continue;
        }
        em_tensor *replacement = NULL;
        if (h->fn(h->ctx, *grad, &replacement)) return -1;
        if (replacement) { em_release(*grad); *grad = replacement; }
    }
    return 0;
}

/* What the pass collects for autograd.grad: the gradient reaching a given
 * (node) instead of accumulating into leaves. */
typedef struct capture {
    em_node *node;
    em_tensor *grad;
} capture;

typedef struct callback {
    struct callback *next;
    em_callback_fn fn;
    void *ctx;
    void (*free_ctx)(void *ctx);
} callback;

typedef struct pass {
    uint64_t serial;                    /* numbers the passes (custom functions' stashes) */
    bool keep_graph;
    bool accumulate;                    /* false for autograd.grad: leaves are not touched */
    capture *captures;
    int ncaptures;
    callback *callbacks;                /* em_queue_callback's, in queueing order */
} pass;

static pass *current_pass;
static uint64_t pass_count;

static int accumulate(em_ag_meta *m, em_tensor *g);

static int accumulate_apply(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    (void)gin;
    em_tensor *leaf = n->leaf;
    if (!leaf || !current_pass || !current_pass->accumulate) return 0;
    em_ag_meta *m = meta_of(leaf);
    if (!m) return -1;
    em_tensor *g = em_retain(gout[0]);
    if (run_hooks(m->hooks, &g)) { em_release(g); return -1; }
    if (accumulate(m, g)) return -1;
    for (em_hook *h = m->post_hooks; h; h = h->next)
        if (h->post_fn(h->ctx, leaf)) return -1;
    return 0;
}

/* Adds g (taking the reference) into the leaf's .grad. */
static int accumulate(em_ag_meta *m, em_tensor *g)
{
    if (!m->grad) {
        /* Keep the gradient itself when nothing else can see it (our g and
         * the pass's reference are its only holders, and its memory is its
         * own); otherwise a copy, so a later in-place accumulation cannot
         * write into someone else's tensor. */
        bool sole = em_ag_sole(g, 2);
        m->grad = em_grad_mode || sole ? g : em_clone(g);
        if (!em_grad_mode && !sole) em_release(g);
        return m->grad ? 0 : -1;
    }
    if (em_grad_mode) {                 /* create_graph: keep the sum differentiable */
        em_tensor *sum = ei_binary(EM_ADD, m->grad, g);
        em_release(g);
        if (!sum) return -1;
        em_release(m->grad);
        m->grad = sum;
        return 0;
    }
    int rc = em_binary_(EM_ADD, m->grad, g);
    em_release(g);
    return rc;
}

bool em_ag_sole(const em_tensor *t, int holders)
{
    return t->refcount <= holders && t->storage->refcount == 1 && !t->requires_grad && em_is_contiguous(t);
}

em_tensor *em_ag_writable_buffer(const em_node *to, const int64_t *sizes, int ndim, em_dtype dtype,
                                 em_device dev)
{
    em_tensor *b = to ? to->buffer : NULL;
    if (!b || em_grad_mode || !em_ag_sole(b, 1) || b->dtype != dtype || b->ndim != ndim ||
        !em_device_eq(em_dev(b), dev))
        return NULL;
    return memcmp(b->sizes, sizes, sizeof(int64_t) * (size_t)ndim) == 0 ? b : NULL;
}

/* Adds g into the node's input buffer (taking the reference): in place when
 * the buffer is the pass's alone (a fresh tensor per gradient otherwise,
 * which a node reached by many paths, a residual stream's, pays each time). */
static int buffer_add(em_node *n, em_tensor *g)
{
    if (!n->buffer) { n->buffer = g; return 0; }
    if (!g->requires_grad && em_ag_writable_buffer(n, g->sizes, g->ndim, g->dtype, em_dev(g))) {
        int rc = em_binary_(EM_ADD, n->buffer, g);
        em_release(g);
        return rc;
    }
    em_tensor *sum = ei_binary(EM_ADD, n->buffer, g);
    em_release(g);
    if (!sum) return -1;
    em_release(n->buffer);
    n->buffer = sum;
    return 0;
}

/* Anomaly mode: a node that failed, or returned a gradient holding a NaN,
 * ends the pass with an error naming it; its forward call's traceback is
 * kept for em_anomaly_trace(). Returns rc, or -1 for a NaN. */
static int anomaly_check(const em_node *x, em_tensor *const *gin, int rc)
{
    bool failed = rc != 0;
    for (int i = 0; rc == 0 && anomaly_nan && i < x->nin; i++) {
        if (!gin[i] || !em_dtype_is_float(gin[i]->dtype)) continue;
        bool was = em_set_grad_enabled(false);
        em_tensor *isnan = em_float_class_test(EM_ISNAN, gin[i]);
        em_tensor *any = isnan ? em_any(isnan, NULL, 0, false) : NULL;
        double v = 0;
        rc = any ? em_item(any, &v) : -1;
        em_set_grad_enabled(was);
        em_release(isnan);
        em_release(any);
        if (rc == 0 && v != 0) {
            int k = i + 1;
            const char *th = k % 100 >= 11 && k % 100 <= 13 ? "th"
                           : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd" : k % 10 == 3 ? "rd" : "th";
            rc = em_set_error("Function '%s' returned nan values in its %d%s output (the gradient of its "
                              "input %d)", x->name, k, th, k);
        }
    }
    if (rc == 0) return 0;
    free(failed_trace);
    failed_trace = x->trace ? strdup(x->trace) : NULL;
    if (failed) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", em_error());
        em_set_error("Error detected in %s: %s", x->name, msg);
    }
    return rc;
}

/* A growable array of nodes. */
typedef struct node_list {
    em_node **items;
    int n, cap;
} node_list;

static int list_push(node_list *l, em_node *x)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        em_node **items = realloc(l->items, sizeof *items * (size_t)cap);
        if (!items) return em_set_error("out of memory (backward)");
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = x;
    return 0;
}

/* The ready set is a max-heap on seq: of the nodes whose gradients are
 * complete, the most recently created runs first. */
static void heap_push(node_list *h, em_node *x)
{
    int i = h->n - 1;
    h->items[i] = x;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->items[p]->seq >= h->items[i]->seq) break;
        em_node *t = h->items[p]; h->items[p] = h->items[i]; h->items[i] = t;
        i = p;
    }
}

static em_node *heap_pop(node_list *h)
{
    em_node *top = h->items[0];
    h->items[0] = h->items[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->items[l]->seq > h->items[m]->seq) m = l;
        if (r < h->n && h->items[r]->seq > h->items[m]->seq) m = r;
        if (m == i) break;
        em_node *t = h->items[m]; h->items[m] = h->items[i]; h->items[i] = t;
        i = m;
    }
    return top;
}

enum { NODE_UNSEEN = 0 };

/* A pass marks the nodes it reaches with its nesting depth (1 for a pass
 * started outside any backward). A pass started inside another one (a
 * custom function's backward calling autograd.grad, as a checkpoint's
 * recomputation does) can reach nodes the outer pass holds as well, the
 * leaves' AccumulateGrad nodes: it sets the outer pass's count, buffer and
 * mark of such a node aside and puts them back when it ends, so the two
 * passes never see each other's gradients. */
static int pass_depth;

typedef struct stashed {
    em_node *node;
    int state, deps;
    em_tensor *buffer;
} stashed;

typedef struct stash_list {
    stashed *items;
    int n, cap;
} stash_list;

/* Marks x as reached by the pass at `depth`, setting an outer pass's state
 * of it aside first; pushes it onto all. */
static int reach(em_node *x, int depth, node_list *all, stash_list *st)
{
    if (x->state != NODE_UNSEEN) {
        if (st->n == st->cap) {
            int cap = st->cap ? st->cap * 2 : 16;
            stashed *items = realloc(st->items, sizeof *items * (size_t)cap);
            if (!items) return em_set_error("out of memory (backward)");
            st->items = items;
            st->cap = cap;
        }
        if (list_push(all, x)) return -1;
        st->items[st->n++] = (stashed){x, x->state, x->deps, x->buffer};
        x->deps = 0;
        x->buffer = NULL;
        x->state = depth;
        return 0;
    }
    x->state = depth;
    return list_push(all, x);
}

int em_queue_callback(em_callback_fn fn, void *ctx, void (*free_ctx)(void *))
{
    if (!current_pass)
        return em_set_error("queue_callback: no backward pass is running (call it from a hook, during backward)");
    callback *c = calloc(1, sizeof *c);
    if (!c) return em_set_error("out of memory (queue_callback)");
    c->fn = fn;
    c->ctx = ctx;
    c->free_ctx = free_ctx;
    callback **end = &current_pass->callbacks;
    while (*end) end = &(*end)->next;
    *end = c;
    return 0;
}

/* Runs (when the pass succeeded) and frees the pass's queued callbacks;
 * the first failure skips the rest. */
static int run_callbacks(pass *ps, int rc)
{
    callback *c = ps->callbacks;
    ps->callbacks = NULL;
    while (c) {
        callback *next = c->next;
        if (rc == 0) rc = c->fn(c->ctx);
        if (c->free_ctx) c->free_ctx(c->ctx);
        free(c);
        c = next;
    }
    return rc;
}

static int run_pass(em_node *const *roots, em_tensor *const *root_grads, int nroots, pass *ps)
{
    node_list all = {0}, ready = {0};
    stash_list st = {0};
    int rc = 0;
    int depth = ++pass_depth;
    ps->serial = ++pass_count;
    free(failed_trace);
    failed_trace = NULL;
    /* a backward runs each op in the dtypes its forward used: never cast */
    em_autocast_suspend();
    em_autocast_backward_ran();
    /* 1. find every node reachable from the roots and count its incoming edges */
    for (int i = 0; i < nroots && rc == 0; i++)
        if (roots[i]->state != depth) rc = reach(roots[i], depth, &all, &st);
    for (int k = 0; k < all.n && rc == 0; k++) {
        em_node *x = all.items[k];
        for (int i = 0; i < x->nin && rc == 0; i++) {
            em_node *c = x->next[i].node;
            if (!c) continue;
            if (c->state != depth) rc = reach(c, depth, &all, &st);
            c->deps++;
        }
    }
    /* 2. seed the roots' gradients */
    for (int i = 0; i < nroots && rc == 0; i++) rc = buffer_add(roots[i], em_retain(root_grads[i]));
    for (int k = 0; k < all.n && rc == 0; k++)
        if (all.items[k]->deps == 0) {
            rc = list_push(&ready, all.items[k]);
            if (rc == 0) heap_push(&ready, all.items[k]);
        }
    /* 3. run nodes whose gradient is complete, newest first */
    pass *outer = current_pass;
    current_pass = ps;
    ps->callbacks = NULL;
    while (rc == 0 && ready.n > 0) {
        em_node *x = heap_pop(&ready);
        em_tensor *g = x->buffer;
        x->buffer = NULL;
        for (int c = 0; c < ps->ncaptures && g; c++)
            if (ps->captures[c].node == x) {
                if (ps->captures[c].grad) {
                    em_tensor *sum = ei_binary(EM_ADD, ps->captures[c].grad, g);
                    if (!sum) { rc = -1; break; }
                    em_release(ps->captures[c].grad);
                    ps->captures[c].grad = sum;
                } else {
                    ps->captures[c].grad = em_retain(g);
                }
            }
        /* nothing flowed here (every path into it was cut): it computes
         * nothing, but its inputs must still hear that it is done, or a
         * node reached also by another path would wait for ever */
        if (rc == 0 && g && x->pre_hooks) rc = run_hooks(x->pre_hooks, &g);
        em_tensor *small[EM_NODE_SMALL_IN] = {NULL}, **gin = small;
        if (rc == 0 && x->nin > EM_NODE_SMALL_IN) {
            gin = calloc((size_t)x->nin, sizeof *gin);
            if (!gin) { gin = small; rc = em_set_error("out of memory (backward)"); }
        }
        if (rc == 0 && g) {
            const char *outer_node = running_node;
            running_node = x->name;
            if (em_node_hook) em_node_hook(x->name, true);
            rc = x->apply(x, &g, gin);
            if (em_node_hook) em_node_hook(x->name, false);
            running_node = outer_node;
        }
        if (em_anomaly_mode && g) rc = anomaly_check(x, gin, rc);
        unpacked_release(x);
        em_release(g);
        if (g && !ps->keep_graph && x->leaf == NULL) { release_saved(x); x->released = true; }
        for (int i = 0; i < x->nin; i++) {
            em_node *c = x->next[i].node;
            if (rc == 0 && c && gin[i]) { rc = buffer_add(c, gin[i]); gin[i] = NULL; }
            em_release(gin[i]);
            gin[i] = NULL;
            if (c && --c->deps == 0 && rc == 0) {
                rc = list_push(&ready, c);
                if (rc == 0) heap_push(&ready, c);
            }
        }
        if (gin != small) free(gin);
    }
    current_pass = outer;
    /* 4. leave every node clean for the next pass */
    for (int k = 0; k < all.n; k++) {
        em_node *x = all.items[k];
        x->state = NODE_UNSEEN;
        x->deps = 0;
        em_release(x->buffer);
        x->buffer = NULL;
    }
    for (int k = st.n - 1; k >= 0; k--) {
        stashed *s = &st.items[k];
        s->node->state = s->state;
        s->node->deps = s->deps;
        s->node->buffer = s->buffer;
    }
    free(st.items);
    pass_depth--;
    free(all.items);
    free(ready.items);
    em_autocast_resume();
    return run_callbacks(ps, rc);
}

/* The root node of each output and its starting gradient (ones for a
 * scalar when none is given). Fills roots/grads with new references. */
static int prepare_roots(const char *op, em_tensor *const *outputs, em_tensor *const *grads, int n,
                         em_node **roots, em_tensor **root_grads)
{
    for (int i = 0; i < n; i++) {
        const em_tensor *t = outputs[i];
        roots[i] = NULL;
        root_grads[i] = NULL;
        if (!t->requires_grad)
            return em_set_error("%s: element %d of the outputs does not require grad and has no grad_fn", op, i + 1);
        roots[i] = grad_edge(t);
        if (!roots[i]) return -1;
        em_tensor *g = grads ? grads[i] : NULL;
        if (g) {
            if (g->ndim != t->ndim || memcmp(g->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim) != 0)
                return em_set_error("%s: gradient of size %s given for an output of size %s", op, SHAPE(g), SHAPE(t));
            root_grads[i] = g->dtype == t->dtype ? em_retain(g) : em_cast_to(g, t->dtype);
        } else {
            if (em_numel(t) != 1)
                return em_set_error("%s: grad can be implicitly created only for scalar outputs, got size %s; "
                                    "pass a gradient of the output's size", op, SHAPE(t));
            root_grads[i] = em_full(t->sizes, t->ndim, 1.0, t->dtype, em_dev(t));
        }
        if (!root_grads[i]) return -1;
    }
    return 0;
}

static void drop_roots(em_node **roots, em_tensor **grads, int n)
{
    for (int i = 0; i < n; i++) {
        node_release(roots[i]);
        em_release(grads[i]);
    }
}

int em_backward(em_tensor *const *outputs, em_tensor *const *grads, int n, bool retain_graph, bool create_graph)
{
    em_node **roots = calloc((size_t)(n ? n : 1), sizeof *roots);
    em_tensor **root_grads = calloc((size_t)(n ? n : 1), sizeof *root_grads);
    if (!roots || !root_grads) { free(roots); free(root_grads); return em_set_error("out of memory (backward)"); }
    int rc = prepare_roots("backward", outputs, grads, n, roots, root_grads);
    if (rc == 0) {
        pass ps = {.keep_graph = retain_graph || create_graph, .accumulate = true};
        bool was = em_set_grad_enabled(create_graph);
        rc = run_pass(roots, root_grads, n, &ps);
        em_set_grad_enabled(was);
    }
    drop_roots(roots, root_grads, n);
    free(roots);
    free(root_grads);
    return rc;
}

int em_autograd_grad(em_tensor *const *outputs, em_tensor *const *grad_outputs, int nout,
                     em_tensor *const *inputs, int nin, bool retain_graph, bool create_graph,
                     bool allow_unused, em_tensor **results)
{
    em_node **roots = calloc((size_t)(nout ? nout : 1), sizeof *roots);
    em_tensor **root_grads = calloc((size_t)(nout ? nout : 1), sizeof *root_grads);
    capture *caps = calloc((size_t)(nin ? nin : 1), sizeof *caps);
    int rc = (!roots || !root_grads || !caps) ? em_set_error("out of memory (autograd.grad)") : 0;
    /* every result is set before any check can stop the loop below: the
     * failure path releases them all */
    for (int i = 0; i < nin; i++) results[i] = NULL;
    for (int i = 0; i < nin && rc == 0; i++) {
        if (!inputs[i]->requires_grad)
            rc = em_set_error("autograd.grad: input %d does not require grad", i + 1);
        else if (!(caps[i].node = grad_edge(inputs[i])))
            rc = -1;
    }
    if (rc == 0) rc = prepare_roots("autograd.grad", outputs, grad_outputs, nout, roots, root_grads);
    if (rc == 0) {
        pass ps = {.keep_graph = retain_graph || create_graph, .accumulate = false, .captures = caps, .ncaptures = nin};
        bool was = em_set_grad_enabled(create_graph);
        rc = run_pass(roots, root_grads, nout, &ps);
        em_set_grad_enabled(was);
    }
    for (int i = 0; i < nin && caps; i++) {
        if (rc == 0 && !caps[i].grad && !allow_unused)
            rc = em_set_error("autograd.grad: input %d was not used in the graph of the outputs; "
                              "pass allow_unused = true to get nil for it", i + 1);
        if (rc == 0) results[i] = caps[i].grad;
        else em_release(caps[i].grad);
        caps[i].grad = NULL;
        node_release(caps[i].node);
    }
    if (rc) for (int i = 0; i < nin; i++) { em_release(results[i]); results[i] = NULL; }
    if (roots) drop_roots(roots, root_grads, nout);
    free(roots);
    free(root_grads);
    free(caps);
    return rc;
}

/* ---- gradient helpers ------------------------------------------------------ */

int em_ag_check_inplace(const char *op, const em_tensor *target, const em_tensor *src)
{
    if (!em_grad_mode) return 0;
    if (target->requires_grad)
        return em_set_error("%s: in-place operation on a tensor that requires grad (%s %s); use the "
                            "out-of-place form, or ember.no_grad for updates such as optimizer steps",
                            op, em_is_leaf(target) ? "a leaf" : "made by", em_is_leaf(target) ? "tensor" :
                            em_grad_fn_name(target));
    if (src && src->requires_grad)
        return em_set_error("%s: writing a tensor that requires grad in place is not supported by autograd "
                            "yet; use the out-of-place form", op);
    return 0;
}

em_tensor *em_sum_to(const em_tensor *grad, const int64_t *sizes, int ndim)
{
    if (grad->ndim == ndim && memcmp(grad->sizes, sizes, sizeof(int64_t) * (size_t)ndim) == 0)
        return em_retain((em_tensor *)grad);
    int dims[EM_MAX_DIMS], nd = 0, lead = grad->ndim - ndim;
    for (int i = 0; i < grad->ndim; i++) {
        int j = i - lead;
        if (j < 0 || (sizes[j] == 1 && grad->sizes[i] != 1)) dims[nd++] = i;
    }
    em_tensor *s = nd ? ei_sum(grad, dims, nd, true) : em_retain((em_tensor *)grad);
    if (!s) return NULL;
    em_tensor *r = em_reshape(s, sizes, ndim);
    em_release(s);
    return r;
}

/* ---- custom functions (ember.autograd.Function) ---------------------------
 * One node C runs the user's backward. With one differentiable output, that
 * output's grad_fn is C itself. With several, each output k gets a small node
 * O_k (grad_fn of output k, one edge to C): O_k stashes the gradient it
 * receives in C's data and passes C a 0-d dummy, so C runs once, after every
 * output's gradient is complete, and sees them all. */

typedef struct tensor_meta {
    int ndim;
    int64_t sizes[EM_MAX_DIMS];
    em_dtype dtype;
    em_device dev;
} tensor_meta;

typedef struct custom_fn {
    char *name;
    int nin, nout, ndiff, nsaved;
    bool materialize, saves_output;
    em_custom_backward_fn fn;
    void *ctx;
    void (*free_ctx)(void *ctx);
    tensor_meta *in, *out;
    bool *diff;                         /* per output: differentiable */
    em_tensor **stash;                  /* several outputs: the gradient each received ... */
    uint64_t *stash_pass;               /* ... in which pass */
} custom_fn;


static void custom_free(void *p)
{
    custom_fn *f = p;
    if (f->free_ctx) f->free_ctx(f->ctx);
    for (int k = 0; k < f->nout && f->stash; k++) em_release(f->stash[k]);
    free(f->stash);
    free(f->stash_pass);
    free(f->diff);
    free(f->in);
    free(f->out);
    free(f->name);
    free(f);
}

static void meta_set(tensor_meta *m, const em_tensor *t)
{
    m->ndim = t->ndim;
    memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    m->dtype = t->dtype;
    m->dev = em_dev(t);
}

/* whether a gradient of g's shape can be summed down to m's (m broadcasts to it) */
static bool expandable_to(const tensor_meta *m, const em_tensor *g)
{
    if (m->ndim > g->ndim) return false;
    for (int i = 1; i <= m->ndim; i++) {
        int64_t a = m->sizes[m->ndim - i], b = g->sizes[g->ndim - i];
        if (a != b && a != 1) return false;
    }
    return true;
}

/* Checks the gradient the user's backward returned for input i against the
 * input; returns it (shape summed, dtype cast) or NULL with an error. */
static em_tensor *custom_check_grad(const custom_fn *f, int i, em_tensor *g)
{
    const tensor_meta *m = &f->in[i];
    char want[256];
    if (!em_device_eq(em_dev(g), m->dev)) {
        char a[32], b[32];
        em_set_error("autograd.Function %s: backward returned a gradient on %s for input %d, which is on %s",
                     f->name, em_device_str(em_dev(g), a, sizeof a), i + 1, em_device_str(m->dev, b, sizeof b));
        return NULL;
    }
    bool same = g->ndim == m->ndim && memcmp(g->sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim) == 0;
    if (!same && !expandable_to(m, g)) {
        em_set_error("autograd.Function %s: backward returned an invalid gradient for input %d: got %s but "
                     "expected a shape compatible with %s", f->name, i + 1, SHAPE(g), em_sizes_str(m->sizes, m->ndim, want, sizeof want));
        return NULL;
    }
    em_tensor *r = same ? em_retain(g) : em_sum_to(g, m->sizes, m->ndim);
    if (r && r->dtype != m->dtype) {
        em_tensor *c = em_to_dtype(r, m->dtype);
        em_release(r);
        r = c;
    }
    return r;
}

/* O_k: keep the gradient of output k for C, hand C a dummy */
static int custom_output_apply(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    custom_fn *f = n->next[0].node->ctx;
    int k = n->dim;
    em_release(f->stash[k]);
    f->stash[k] = em_retain(gout[0]);
    f->stash_pass[k] = current_pass ? current_pass->serial : 0;
    gin[0] = em_zeros(NULL, 0, EM_FLOAT32, (em_device){EM_CPU, 0});
    return gin[0] ? 0 : -1;
}

static int custom_apply(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    custom_fn *f = n->ctx;
    int rc = 0;
    em_tensor **grads = calloc((size_t)(f->nout + f->nsaved + 1), sizeof *grads);
    em_tensor **saved = grads ? grads + f->nout : NULL;
    em_tensor **got = calloc((size_t)f->nin + 1, sizeof *got);
    if (!grads || !got) { free(grads); free(got); return em_set_error("out of memory (backward)"); }
    for (int k = 0; k < f->nout && rc == 0; k++) {
        em_tensor *g = NULL;
        if (f->diff[k] && f->ndiff == 1) g = em_retain(gout[0]);
        else if (f->stash && f->stash[k]) {
            if (current_pass && f->stash_pass[k] == current_pass->serial) g = f->stash[k];
            else em_release(f->stash[k]);
            f->stash[k] = NULL;
        }
        if (!g && f->materialize) {
            g = em_zeros(f->out[k].sizes, f->out[k].ndim, f->out[k].dtype, f->out[k].dev);
            if (!g) rc = -1;
        }
        grads[k] = g;
    }
    if (rc == 0 && em_grad_mode && f->saves_output && f->ndiff > 1)
        rc = em_set_error("autograd.Function %s: a double backward through a saved output of a function with "
                          "several outputs is not supported; save the inputs and recompute", f->name);
    for (int j = 0; j < f->nsaved && rc == 0; j++)
        if (!(saved[j] = em_ag_saved(n, j))) rc = -1;
    if (rc == 0) rc = f->fn(f->ctx, grads, f->nout, saved, f->nsaved, got, f->nin);
    for (int i = 0; i < f->nin; i++) {
        if (rc == 0 && got[i] && em_ag_wants(n, i)) {
            gin[i] = custom_check_grad(f, i, got[i]);
            if (!gin[i]) rc = -1;
        }
        em_release(got[i]);
    }
    if (rc) for (int i = 0; i < f->nin; i++) { em_release(gin[i]); gin[i] = NULL; }
    for (int k = 0; k < f->nout; k++) em_release(grads[k]);
    free(grads);
    free(got);
    return rc;
}

static custom_fn *custom_new(const char *name, int nin, int nout, int nsaved, bool materialize)
{
    custom_fn *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->nin = nin;
    f->nout = nout;
    f->nsaved = nsaved;
    f->materialize = materialize;
    f->name = strdup(name ? name : "Function");
    f->in = calloc((size_t)nin + 1, sizeof *f->in);
    f->out = calloc((size_t)nout + 1, sizeof *f->out);
    f->diff = calloc((size_t)nout + 1, sizeof *f->diff);
    if (!f->name || !f->in || !f->out || !f->diff) { custom_free(f); return NULL; }
    return f;
}

/* whether t is one of the n tensors in list */
static int index_in(em_tensor *const *list, int n, const em_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (list[i] && list[i] == t) return i;
    return -1;
}

/* The outputs' checks before anything is recorded. */
static int custom_check_outputs(const char *name, em_tensor *const *inputs, int nin, em_tensor *const *outputs,
                                const em_custom_output *kinds, int nout)
{
    for (int k = 0; k < nout; k++) {
        int i = index_in(inputs, nin, outputs[k]);
        if (kinds[k] == EM_CUSTOM_DIRTY && i < 0)
            return em_set_error("autograd.Function %s: output %d was marked dirty but is not one of the inputs "
                                "(mark_dirty takes the inputs the forward modified in place)", name, k + 1);
        if (kinds[k] == EM_CUSTOM_DIRTY && em_is_leaf(outputs[k]) && outputs[k]->requires_grad)
            return em_set_error("autograd.Function %s: a leaf tensor that requires grad (input %d) was modified in "
                                "place (mark_dirty); clone it first", name, i + 1);
        if (kinds[k] != EM_CUSTOM_NONDIFF && !em_dtype_is_float(outputs[k]->dtype))
            return em_set_error("autograd.Function %s: output %d has dtype %s and cannot require grad; mark it "
                                "with ctx:mark_non_differentiable", name, k + 1, em_dtype_name(outputs[k]->dtype));
    }
    return 0;
}

int em_custom_function(const char *name, em_tensor *const *inputs, int nin, em_tensor **outputs,
                       const em_custom_output *kinds, int nout, em_tensor *const *saved, int nsaved,
                       bool materialize, em_custom_backward_fn fn, void *ctx, void (*free_ctx)(void *ctx))
{
    custom_fn *f = NULL;
    em_node *c = NULL;
    if (custom_check_outputs(name, inputs, nin, outputs, kinds, nout) == 0) {
        f = custom_new(name, nin, nout, nsaved, materialize);
        c = f ? em_ag_node(f->name, custom_apply, nin) : NULL;
        if (!c) em_set_error("out of memory (autograd node)");
    }
    if (!c) {                           /* ctx is ours either way */
        if (f) custom_free(f);
        if (free_ctx) free_ctx(ctx);
        return -1;
    }
    c->ctx = f;
    c->free_ctx = custom_free;          /* from here on f dies with c */
    f->fn = fn;
    f->ctx = ctx;
    f->free_ctx = free_ctx;
    for (int i = 0; i < nin; i++)
        if (inputs[i]) {
            em_ag_input(c, i, inputs[i]);
            meta_set(&f->in[i], inputs[i]);
        }
    for (int k = 0; k < nout; k++) {
        f->diff[k] = kinds[k] != EM_CUSTOM_NONDIFF;
        f->ndiff += f->diff[k];
        meta_set(&f->out[k], outputs[k]);
    }
    /* an input returned as it is becomes a new tensor (an alias), so the
     * input keeps its own history */
    for (int k = 0; k < nout; k++)
        if (kinds[k] == EM_CUSTOM_OUT && index_in(inputs, nin, outputs[k]) >= 0) {
            em_tensor *a = em_alias(outputs[k]);
            if (!a) { node_release(c); return -1; }
            em_release(outputs[k]);
            outputs[k] = a;
        }
    int rc = 0;
    for (int j = 0; j < nsaved && rc == 0; j++) {
        bool is_out = index_in(outputs, nout, saved[j]) >= 0 && kinds[index_in(outputs, nout, saved[j])] != EM_CUSTOM_NONDIFF;
        f->saves_output |= is_out;
        rc = em_ag_save(c, j, saved[j], is_out);
    }
    if (rc == 0 && f->ndiff > 1) {
        f->stash = calloc((size_t)nout, sizeof *f->stash);
        f->stash_pass = calloc((size_t)nout, sizeof *f->stash_pass);
        if (!f->stash || !f->stash_pass) rc = em_set_error("out of memory (autograd node)");
    }
    if (rc) { node_release(c); return -1; }
    if (f->ndiff == 0) { node_release(c); return 0; }
    for (int k = 0; k < nout; k++) {
        if (!f->diff[k]) continue;
        em_node *owner = c;
        if (f->ndiff > 1) {
            owner = em_ag_node(f->name, custom_output_apply, 1);
            if (!owner) { node_release(c); return -1; }   /* outputs recorded so far hold their own */
            owner->dim = k;
            c->refcount++;
            owner->next[0].node = c;
        } else {
            c->refcount++;
        }
        em_ag_meta *m = meta_of(outputs[k]);
        if (!m) { node_release(owner); node_release(c); return -1; }
        node_release(m->grad_fn);       /* a dirty input's old history stays reachable through c's edge */
        m->grad_fn = owner;
        outputs[k]->requires_grad = true;
    }
    node_release(c);                    /* the creation reference: the outputs hold c now */
    return 0;
}

/* ---- regions (activation checkpointing, engine/ag_region.h) ------------------- */

uint64_t em_ag_clock(void) { return next_seq; }

/* a set of node pointers (open addressing; the walk's visited set) */
typedef struct node_set {
    const em_node **slots;
    size_t cap, n;
} node_set;

static size_t node_hash(const em_node *x, size_t cap) { return ((uintptr_t)x >> 4) * 0x9E3779B97F4A7C15u & (cap - 1); }

/* 1 when x was added, 0 when it was there, -1 out of memory */
static int set_add(node_set *s, const em_node *x)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        const em_node **slots = calloc(cap, sizeof *slots);
        if (!slots) return em_set_error("out of memory (checkpoint)"), -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i]) {
                size_t h = node_hash(s->slots[i], cap);
                while (slots[h]) h = (h + 1) & (cap - 1);
                slots[h] = s->slots[i];
            }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t h = node_hash(x, s->cap);
    while (s->slots[h]) {
        if (s->slots[h] == x) return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slots[h] = x;
    s->n++;
    return 1;
}

/* whether x is the node of one of the known tensors (grad_fn or AccumulateGrad) */
static bool known_node(const em_node *x, em_tensor *const *known, int nknown)
{
    for (int i = 0; i < nknown; i++) {
        const em_tensor *k = known[i];
        if (!k || !k->requires_grad) continue;
        const em_ag_meta *m = k->autograd;
        if (x->leaf == k || (m && (m->grad_fn == x || m->accumulator == x))) return true;
    }
    return false;
}

static int found_add(em_tensor ***found, int *n, int *cap, em_tensor *t)
{
    for (int i = 0; i < *n; i++)
        if ((*found)[i] == t) return 0;
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 16;
        em_tensor **g = realloc(*found, sizeof *g * (size_t)c);
        if (!g) return em_set_error("out of memory (checkpoint)");
        *found = g;
        *cap = c;
    }
    (*found)[(*n)++] = em_retain(t);
    return 0;
}

int em_ag_region_leaves(const char *op, em_tensor *const *outs, int nout, uint64_t since,
                        em_tensor *const *known, int nknown, em_tensor ***leaves, int *nleaves)
{
    node_set seen = {0};
    node_list todo = {0};
    em_tensor **found = NULL;
    int nfound = 0, capfound = 0, rc = 0;
    for (int i = 0; i < nout && rc == 0; i++) {
        if (!outs[i]->requires_grad) continue;
        em_ag_meta *m = outs[i]->autograd;
        em_node *x = m ? m->grad_fn : NULL;
        if (!x) {   /* a leaf returned as it is */
            bool is_known = false;
            for (int k = 0; k < nknown; k++) is_known = is_known || known[k] == outs[i];
            if (!is_known && !(m && m->accumulator && known_node(m->accumulator, known, nknown)))
                rc = found_add(&found, &nfound, &capfound, outs[i]);
            continue;
        }
        int added = set_add(&seen, x);
        if (added < 0) rc = -1;
        else if (added) rc = list_push(&todo, x);
    }
    for (int k = 0; k < todo.n && rc == 0; k++) {
        em_node *x = todo.items[k];
        if (x->leaf) {
            if (!known_node(x, known, nknown)) rc = found_add(&found, &nfound, &capfound, x->leaf);
            continue;
        }
        if (x->seq < since) {
            if (!known_node(x, known, nknown))
                rc = em_set_error("%s: the function uses a tensor that requires grad (made by %s) computed outside "
                                  "it and not passed to it as an argument; pass it as an argument, or detach it",
                                  op, x->name);
            continue;
        }
        for (int i = 0; i < x->nin && rc == 0; i++) {
            em_node *c = x->next[i].node;
            if (!c) continue;
            int added = set_add(&seen, c);
            if (added < 0) rc = -1;
            else if (added) rc = list_push(&todo, c);
        }
    }
    free(seen.slots);
    free(todo.items);
    if (rc) {
        for (int i = 0; i < nfound; i++) em_release(found[i]);
        free(found);
        *leaves = NULL;
        *nleaves = 0;
        return -1;
    }
    *leaves = found;
    *nleaves = nfound;
    return 0;
}
