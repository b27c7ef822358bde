/* autograd.c — the tape: per-tensor autograd data, nodes, grad mode, and the
 * backward pass (a dependency-counted walk of the graph in reverse creation
 * order). The gradient formulas live in grad_*.c, one file per op family. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

bool em_grad_mode = true;
static uint64_t next_seq;

/* A tensor hook (leaf: run before accumulation; non-leaf: run when its
 * gradient is computed) or a retain_grad slot. */
typedef struct em_hook {
    struct em_hook *next;
    em_hook_fn fn;
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

static void release_saved(em_node *n)
{
    for (int i = 0; i < EM_NODE_SAVED; i++) {
        em_release(n->saved[i].t);
        n->saved[i].t = NULL;
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
        if (x->next != x->next_small) free(x->next);
        free(x->extra);
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
    em_tensor *s;
    if (is_output) {
        /* an alias without autograd data, so the node does not own itself */
        s = em_alias(t);
        if (!s) return -1;
    } else {
        s = em_retain((em_tensor *)t);
    }
    n->saved[slot].t = s;
    n->saved[slot].version = t->storage->version;
    n->saved[slot].is_output = is_output;
    return 0;
}

em_tensor *em_ag_saved(em_node *n, int slot)
{
    em_saved *s = &n->saved[slot];
    if (n->released || !s->t)
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
    for (int i = 0; i < EM_NODE_SAVED; i++)
        if (n->saved[i].unpacked) {
            em_tensor *a = n->saved[i].unpacked;
            n->saved[i].unpacked = NULL;
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

typedef struct pass {
    bool keep_graph;
    bool accumulate;                    /* false for autograd.grad: leaves are not touched */
    capture *captures;
    int ncaptures;
} pass;

static pass *current_pass;

static int accumulate_apply(em_node *n, em_tensor *const *gout, em_tensor **gin)
{
    (void)gin;
    em_tensor *leaf = n->leaf;
    if (!leaf || !current_pass || !current_pass->accumulate) return 0;
    em_ag_meta *m = meta_of(leaf);
    if (!m) return -1;
    em_tensor *g = em_retain(gout[0]);
    if (run_hooks(m->hooks, &g)) { em_release(g); return -1; }
    if (!m->grad) {
        /* Keep the gradient itself when nothing else can see it (our g and
         * the pass's reference are its only holders, and its memory is its
         * own); otherwise a copy, so a later in-place accumulation cannot
         * write into someone else's tensor. */
        bool sole = g->refcount <= 2 && g->storage->refcount == 1 && em_is_contiguous(g);
        m->grad = em_grad_mode || sole ? g : em_clone(g);
        if (!em_grad_mode && !sole) em_release(g);
        return m->grad ? 0 : -1;
    }
    if (em_grad_mode) {                 /* create_graph: keep the sum differentiable */
        em_tensor *sum = em_binary(EM_ADD, m->grad, g);
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

/* Adds g into the node's input buffer (taking the reference). */
static int buffer_add(em_node *n, em_tensor *g)
{
    if (!n->buffer) { n->buffer = g; return 0; }
    em_tensor *sum = em_binary(EM_ADD, n->buffer, g);
    em_release(g);
    if (!sum) return -1;
    em_release(n->buffer);
    n->buffer = sum;
    return 0;
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

enum { NODE_UNSEEN = 0, NODE_SEEN = 1 };

static int run_pass(em_node *const *roots, em_tensor *const *root_grads, int nroots, pass *ps)
{
    node_list all = {0}, ready = {0};
    int rc = 0;
    /* 1. find every node reachable from the roots and count its incoming edges */
    for (int i = 0; i < nroots && rc == 0; i++)
        if (roots[i]->state != NODE_SEEN) { roots[i]->state = NODE_SEEN; rc = list_push(&all, roots[i]); }
    for (int k = 0; k < all.n && rc == 0; k++) {
        em_node *x = all.items[k];
        for (int i = 0; i < x->nin && rc == 0; i++) {
            em_node *c = x->next[i].node;
            if (!c) continue;
            c->deps++;
            if (c->state != NODE_SEEN) { c->state = NODE_SEEN; rc = list_push(&all, c); }
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
    while (rc == 0 && ready.n > 0) {
        em_node *x = heap_pop(&ready);
        em_tensor *g = x->buffer;
        x->buffer = NULL;
        if (!g) continue;               /* nothing flowed here */
        for (int c = 0; c < ps->ncaptures; c++)
            if (ps->captures[c].node == x) {
                if (ps->captures[c].grad) {
                    em_tensor *sum = em_binary(EM_ADD, ps->captures[c].grad, g);
                    if (!sum) { rc = -1; break; }
                    em_release(ps->captures[c].grad);
                    ps->captures[c].grad = sum;
                } else {
                    ps->captures[c].grad = em_retain(g);
                }
            }
        if (rc == 0 && x->pre_hooks) rc = run_hooks(x->pre_hooks, &g);
        em_tensor *small[EM_NODE_SMALL_IN] = {NULL}, **gin = small;
        if (rc == 0 && x->nin > EM_NODE_SMALL_IN) {
            gin = calloc((size_t)x->nin, sizeof *gin);
            if (!gin) { gin = small; rc = em_set_error("out of memory (backward)"); }
        }
        if (rc == 0) rc = x->apply(x, &g, gin);
        unpacked_release(x);
        em_release(g);
        if (!ps->keep_graph && x->leaf == NULL) { release_saved(x); x->released = true; }
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
    free(all.items);
    free(ready.items);
    return rc;
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
    em_tensor *s = nd ? em_sum(grad, dims, nd, true) : em_retain((em_tensor *)grad);
    if (!s) return NULL;
    em_tensor *r = em_reshape(s, sizes, ndim);
    em_release(s);
    return r;
}
