/*
 * autograd.h — the tape, for engine files that record differentiable ops.
 *
 * The graph is made of nodes. A node stands for one recorded op: it knows
 * how to turn the gradients of the op's outputs into gradients of its
 * inputs (`apply`), and it has one edge per input, pointing at the node that
 * produced that input (its grad_fn) or, for a leaf that requires grad, at the
 * leaf's AccumulateGrad node. Tensors hold a strong reference to their
 * grad_fn; nodes hold strong references to the nodes their edges point at;
 * an AccumulateGrad node holds its leaf, and the leaf points back weakly.
 *
 * Recording an op (the pattern every differentiable op follows):
 *
 *     if (em_ag_needed2(a, b)) {
 *         em_node *n = em_ag_node("MulBackward", mul_backward, 2);
 *         if (!n) ...;
 *         em_ag_input(n, 0, a); em_ag_input(n, 1, b);
 *         em_ag_save(n, 0, a, false); em_ag_save(n, 1, b, false);
 *         em_ag_output(n, out);           // out now requires grad, grad_fn = n
 *     }
 *
 * `apply(n, gout, gin)` receives the gradient of the output (gout[0]; nodes
 * have one output) and writes new references into gin[i] for every input i
 * whose edge is set (em_ag_wants(n, i)); it leaves the others NULL. It is
 * written with engine ops, which record themselves when the backward pass
 * runs with create_graph, so higher-order gradients come for free.
 */
#ifndef EMBER_AUTOGRAD_H
#define EMBER_AUTOGRAD_H

#include "internal.h"

#define EM_NODE_SAVED 6   /* attention saves q, k, v, out, lse, mask */
#define EM_NODE_SMALL_IN 3

typedef struct em_node em_node;
typedef int (*em_apply_fn)(em_node *n, em_tensor *const *gout, em_tensor **gin);

typedef struct em_edge {
    em_node *node;      /* NULL: this input needs no gradient */
} em_edge;

typedef struct em_saved {
    em_tensor *t;       /* a reference; for the op's own output, a detached alias */
    uint64_t version;   /* the storage version when saved */
    bool is_output;
    em_tensor *unpacked; /* during a recorded backward: the output again, with the node as grad_fn */
} em_saved;

struct em_node {
    int refcount;
    const char *name;
    em_apply_fn apply;
    uint64_t seq;                       /* creation order: later nodes run first */
    int nin;
    em_edge *next;                      /* nin edges */
    em_edge next_small[EM_NODE_SMALL_IN];
    em_saved saved[EM_NODE_SAVED];
    em_saved *more_saved;               /* slots EM_NODE_SAVED.. (custom functions save any number) */
    int nmore_saved;
    bool released;                      /* saved tensors freed after a backward */

    /* op parameters, free for each apply function to use */
    int op;
    int dim;
    int ndims;
    int dims[EM_MAX_DIMS];
    int ndim;                           /* e.g. the input's shape */
    int64_t sizes[EM_MAX_DIMS];
    int64_t strides[EM_MAX_DIMS];
    int64_t offset;
    int ndim2;                          /* a second shape (binary ops: the second input's) */
    int64_t sizes2[EM_MAX_DIMS];
    em_dtype dtype2;
    em_dtype dtype;
    /* the op's own parameters, typed: an apply function reads the member its
     * recording function wrote */
    union {
        struct { bool keepdim; } reduce;        /* sum, amax, amin, prod; values picked along a dim */
        struct { bool keepdim; double correction; } var;    /* var, std */
        struct { double p; } root;              /* a norm's p-th root */
        struct { bool has_lo, has_hi; double lo, hi; } clamp;
        struct { double alpha; } scatter;       /* index_add's alpha */
        struct { bool scalar; double exponent; } pow;   /* pow(tensor, number): the number */
        struct { bool include_self; } scatter_reduce;
        struct { bool full; } packed;           /* linalg_svd's full_matrices */
        struct { bool has_bias; } linear;
        struct { bool has_weight; int64_t ignore_index; double label_smoothing; } xent;
        struct { bool has_weight; em_norm_params params; } norm;
        struct { bool has_mask; em_attn_params params; } attn;
        struct { bool shares_storage; } view;   /* a view, not a copy (reshape may copy) */
    } p;
    int64_t *extra;                     /* variable-length data (e.g. cat sizes), freed with the node */

    void *ctx;                          /* apply's own data (custom functions), freed with the node */
    void (*free_ctx)(void *ctx);
    em_tensor *leaf;                    /* AccumulateGrad: the leaf it feeds */
    struct em_hook *pre_hooks;          /* tensor hooks / retain_grad of the output */

    /* during a backward pass */
    em_tensor *buffer;                  /* the gradient flowing into this node */
    int deps;
    int state;
    char *trace;                        /* anomaly mode: the forward call's traceback */
};

/* Per-tensor autograd data (t->autograd). */
typedef struct em_ag_meta {
    em_node *grad_fn;                   /* strong; NULL for a leaf */
    em_node *accumulator;               /* weak: a leaf's AccumulateGrad node */
    em_tensor *grad;                    /* accumulated gradient (.grad) */
    struct em_grad_slot *retained;      /* retain_grad() of a non-leaf */
    struct em_hook *hooks;              /* hooks of a leaf */
    struct em_hook *post_hooks;         /* a leaf's post-accumulate hooks */
} em_ag_meta;

extern bool em_grad_mode;

/* Whether an op on these inputs must be recorded. */
static inline bool em_ag_needed1(const em_tensor *a) { return em_grad_mode && a->requires_grad; }
static inline bool em_ag_needed2(const em_tensor *a, const em_tensor *b)
{
    return em_grad_mode && (a->requires_grad || b->requires_grad);
}
static inline bool em_ag_needed3(const em_tensor *a, const em_tensor *b, const em_tensor *c)
{
    return em_grad_mode && (a->requires_grad || b->requires_grad || (c && c->requires_grad));
}

em_node *em_ag_node(const char *name, em_apply_fn apply, int nin);
void em_ag_input(em_node *n, int i, const em_tensor *input);
/* Whether t may be written in place by the backward pass: at most `holders`
 * references to it, its memory its own, dense, and recording nothing. */
bool em_ag_sole(const em_tensor *t, int holders);
/* The gradient buffer of the node an edge leads to, when a backward
 * without create_graph may add into it in place (it has the shape, dtype
 * and device of `like`'s input and nothing else sees it); else NULL. */
em_tensor *em_ag_writable_buffer(const em_node *to, const int64_t *sizes, int ndim, em_dtype dtype,
                                 em_device dev);
int em_ag_save(em_node *n, int slot, const em_tensor *t, bool is_output);
/* Makes n the grad_fn of out and drops the caller's reference to n. Returns
 * out, or NULL (releasing out) on failure. */
em_tensor *em_ag_output(em_node *n, em_tensor *out);
/* A saved tensor for use in apply (borrowed); NULL with an error when it was
 * modified in place since it was saved or the graph was already freed. */
em_tensor *em_ag_saved(em_node *n, int slot);
static inline bool em_ag_wants(const em_node *n, int i) { return n->next[i].node != NULL; }
/* Drops a node that failed to record together with the op's result;
 * returns NULL for the caller to return. */
em_tensor *em_ag_abandon(em_node *n, em_tensor *out);

/* The value of expr computed with recording off (a GNU statement
 * expression, so it works for any result type). */
#define WITHOUT_GRAD(expr)                                 \
    ({                                                     \
        bool was_ = em_set_grad_enabled(false);            \
        __typeof__(expr) r_ = (expr);                      \
        em_set_grad_enabled(was_);                         \
        r_;                                                \
    })

/* Gradient helpers used by apply functions. */
/* Sums grad down to `sizes` (undoing broadcasting). New reference. */
em_tensor *em_sum_to(const em_tensor *grad, const int64_t *sizes, int ndim);

/* In-place ops refuse (with an error naming op) to write into a tensor that
 * requires grad, or to write a value that requires grad, while grad mode is
 * on: the tape does not rebase history yet. */
int em_ag_check_inplace(const char *op, const em_tensor *target, const em_tensor *src);

/* What each op family calls (grad_*.c). The em_ag_<op> functions run the op
 * with recording off and record its node; ops call them at their top when
 * em_ag_needed*() says an input requires grad. em_ag_view records a view or
 * copy that was already made (out) of `in`. */
em_tensor *em_ag_unary(em_unary_op op, const em_tensor *a);
em_tensor *em_ag_binary(em_binary_op op, const em_tensor *a, const em_tensor *b);
em_tensor *em_ag_binary_scalar(em_binary_op op, const em_tensor *a, double s, bool s_is_int, bool scalar_first);
em_tensor *em_ag_clamp(const em_tensor *a, const double *lo, const double *hi);
em_tensor *em_ag_clamp_tensor(const em_tensor *a, const em_tensor *lo, const em_tensor *hi);
em_tensor *em_ag_where(const em_tensor *cond, const em_tensor *a, const em_tensor *b);
em_tensor *em_ag_masked_fill(const em_tensor *t, const em_tensor *mask, double value);
em_tensor *em_ag_cast(const em_tensor *a, em_dtype d);

typedef enum em_view_kind {
    EM_VK_RESHAPE, EM_VK_PERMUTE, EM_VK_EXPAND, EM_VK_NARROW, EM_VK_SELECT, EM_VK_SLICE,
    EM_VK_DIAGONAL, EM_VK_UNFOLD, EM_VK_CLONE, EM_VK_DEVICE
} em_view_kind;
/* p: PERMUTE the dims; NARROW dim, start, length; SELECT dim, index; SLICE
 * dim, start, stop, step; UNFOLD dim, size, step (all 0-based). */
em_tensor *em_ag_view(em_view_kind kind, const em_tensor *in, em_tensor *out, const int64_t *p, int np);
/* Whether t was made by a recorded view of another tensor's memory (detach_ refuses those). */
bool em_ag_is_view(const em_tensor *t);

em_tensor *em_ag_reduce(int kind, const em_tensor *in, const int *dims, int ndims, bool keepdim);
em_tensor *em_ag_dim_values(const em_tensor *in, int dim, bool keepdim, const em_tensor *indices,
                            em_tensor *values);
em_tensor *em_ag_softmax(int op, const em_tensor *in, int dim);
em_tensor *em_ag_cumsum(const em_tensor *in, int dim);
em_tensor *em_ag_matmul(const em_tensor *a, const em_tensor *b);
em_tensor *em_ag_index_select(const em_tensor *in, int dim, const em_tensor *idx);
em_tensor *em_ag_gather(const em_tensor *in, int dim, const em_tensor *idx);
em_tensor *em_ag_cat(em_tensor *const *ts, int n, int dim);
em_tensor *em_ag_cumprod(const em_tensor *in, int dim);
/* out-of-place scatter (add false) or scatter_add of self and src */
em_tensor *em_ag_scatter(bool add, const em_tensor *self, int dim, const em_tensor *idx, const em_tensor *src);
/* s^(1/p) (p = 2: sqrt) with a gradient of 0 where the result is 0, as
 * PyTorch's std and norm have; recorded when s requires grad */
em_tensor *em_root(const em_tensor *s, double p);
/* records out, var (or std when take_sqrt) of in computed with dof =
 * n - correction <= 0, with PyTorch's gradient for that case */
em_tensor *em_ag_variance(const em_tensor *in, em_tensor *out, const int *dims, int ndims, double dof, bool keepdim,
                          bool take_sqrt);
/* out-of-place index_add of self and alpha * src */
em_tensor *em_ag_index_add(const em_tensor *self, int dim, const em_tensor *idx, const em_tensor *src, double alpha);
/* Zeros of `sizes` with src added at the positions idx names along dim
 * (index_add when index_add, else scatter_add): how backwards that put a
 * gradient back where it was read end. Recorded when src requires grad, so
 * such backwards can be differentiated again. */
em_tensor *em_ag_add_into_zeros(bool index_add, const int64_t *sizes, int ndim, int dim, const em_tensor *idx,
                                const em_tensor *src);

#endif
