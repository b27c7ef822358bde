/* internal.h — helpers shared by engine/ files; not part of the public API. */
#ifndef EMBER_INTERNAL_H
#define EMBER_INTERNAL_H

#include "ember.h"
#include "backend.h"

/* A new header on t's storage (same dtype, offset, ndim; sizes and strides
 * left for the caller to fill in). */
em_tensor *em_header_on(const em_tensor *t);

/* Checks that all given tensors are on one device; names op in the error. */
int em_check_same_device(const char *op, const em_tensor *a, const em_tensor *b);

static inline const em_backend *em_be(const em_tensor *t) { return t->storage->backend; }
static inline em_device em_dev(const em_tensor *t) { return t->storage->device; }

/* Shape string into a small rotating buffer, for error messages:
 * em_set_error("op: %s vs %s", SHAPE(a), SHAPE(b)). Up to 8 live at once. */
const char *em_shape_tmp(const em_tensor *t);
const char *em_sizes_tmp(const int64_t *sizes, int ndim);

/* 0, or -1 with an error naming op when a size is negative or the shape's
 * product (zeros counted as ones) exceeds 2^60 */
int em_check_shape(const char *op, const int64_t *sizes, int ndim);

/* 0, or -1 with an error naming op when an in-place write into t would
 * reach one memory location through two elements (expand, unfold, ...). */
int em_check_writable(const char *op, const em_tensor *t);

/* A cast of t to dtype d (new reference; t itself retained if same dtype). */
em_tensor *em_cast_to(const em_tensor *t, em_dtype d);

/* Reduction helper: fills mask[EM_MAX_DIMS] with the reduced dims of t and
 * returns how many there are (0 is valid: a 0-d tensor), or -1 with an
 * error naming op. ndims == 0 selects all dims. */
int em_dims_mask(const em_tensor *t, const int *dims, int ndims, const char *op, bool *mask);

/* ---- autocast at a public op's entry (autocast.c) ------------------------
 * A public op with an autocast policy begins
 *     EM_AUTOCAST(EM_AC_LOWER, ei_matmul(EM_AC_ARG(0), EM_AC_ARG(1)), a, b);
 *     return ei_matmul(a, b);
 * While autocast is active, the tensor arguments listed last (NULL allowed)
 * are cast under the policy, and the op returns the call made with
 * EM_AC_ARG(i), the i-th of them after the cast; the casts are released
 * after, and a failed cast returns NULL with the error set. The internal forms
 * (ei_) apply no policy: engine code calls them, so a composition or a
 * backward runs in the dtypes it is given. (The parameters are copied, not
 * taken by address, so the path without autocast stays a load, a test and a
 * tail call.) A list of tensors (cat, stack, einsum): EM_AUTOCAST_LIST, over
 * em_autocast_list, a new array of n references (casts where the policy
 * casts), released by em_autocast_list_done. */
int em_autocast_args(em_autocast_policy pol, const em_tensor **args, em_tensor **casts, int n);
em_tensor *em_autocast_done(em_tensor **casts, int n, em_tensor *r);
em_tensor **em_autocast_list(em_autocast_policy pol, em_tensor *const *ts, int n);
em_tensor *em_autocast_list_done(em_tensor **list, int n, em_tensor *r);
/* how many threads have autocast enabled on some device type: while none
 * has, a public op's entry is one load and a test */
extern int em_autocast_threads;
#define EM_AUTOCAST(pol, call, ...)                                                          \
    do {                                                                                     \
        if (__atomic_load_n(&em_autocast_threads, __ATOMIC_RELAXED) && (pol) != EM_AC_NONE &&  \
            em_autocast_active()) {                                                          \
            const em_tensor *ac_args_[] = {__VA_ARGS__};                                     \
            enum { ac_n_ = sizeof ac_args_ / sizeof *ac_args_ };                             \
            em_tensor *ac_casts_[ac_n_];                                                     \
            if (em_autocast_args((pol), ac_args_, ac_casts_, ac_n_)) return NULL;            \
            return em_autocast_done(ac_casts_, ac_n_, (call));                               \
        }                                                                                    \
    } while (0)
#define EM_AC_ARG(i) (ac_args_[i])
/* The same for a list of n tensors ts (cat, stack, einsum): the call sees
 * EM_AC_LIST, the list after the cast. */
#define EM_AUTOCAST_LIST(pol, call, ts, n)                                                    \
    do {                                                                                     \
        if ((n) > 0 && (ts) && em_autocast_active()) {                                       \
            em_tensor **ac_list_ = em_autocast_list((pol), (ts), (n));                       \
            return ac_list_ ? em_autocast_list_done(ac_list_, (n), (call)) : NULL;           \
        }                                                                                    \
    } while (0)
#define EM_AC_LIST (ac_list_)

/* The internal forms of the public ops with a policy (ember.h documents
 * each under its em_ name): ei_X has em_X's type, so the two cannot drift. */
#define EM_INTERNAL_FORM(name) __typeof__(em_##name) ei_##name
EM_INTERNAL_FORM(unary);
EM_INTERNAL_FORM(binary);
EM_INTERNAL_FORM(binary_scalar);
EM_INTERNAL_FORM(pow_scalar);
EM_INTERNAL_FORM(addcmul);
EM_INTERNAL_FORM(addcdiv);
EM_INTERNAL_FORM(sum);
EM_INTERNAL_FORM(prod);
EM_INTERNAL_FORM(norm);
EM_INTERNAL_FORM(logsumexp);
EM_INTERNAL_FORM(softmax);
EM_INTERNAL_FORM(log_softmax);
EM_INTERNAL_FORM(cumsum);
EM_INTERNAL_FORM(cumprod);
EM_INTERNAL_FORM(cross_entropy);
EM_INTERNAL_FORM(conv);
EM_INTERNAL_FORM(group_norm);
EM_INTERNAL_FORM(layer_norm);
EM_INTERNAL_FORM(scaled_dot_product_attention);
EM_INTERNAL_FORM(matmul);
EM_INTERNAL_FORM(mm);
EM_INTERNAL_FORM(bmm);
EM_INTERNAL_FORM(addmm);
EM_INTERNAL_FORM(dot);
EM_INTERNAL_FORM(linear);
EM_INTERNAL_FORM(scatter_add);
EM_INTERNAL_FORM(cat);
EM_INTERNAL_FORM(stack);
EM_INTERNAL_FORM(index_put);
EM_INTERNAL_FORM(einsum);
EM_INTERNAL_FORM(tensordot);
EM_INTERNAL_FORM(cdist);

/* Temporaries released together, so that a formula composed of engine ops
 * reads as one expression per line and fails once at the end: each helper
 * keeps its result in the scope and passes NULL through. */
#define EM_SCOPE_CAP 192
typedef struct em_scope {
    em_tensor *t[EM_SCOPE_CAP];
    int n;
} em_scope;
/* Keeps t (NULL passes through); a full scope releases t and fails. */
em_tensor *em_scope_keep(em_scope *s, em_tensor *t);
void em_scope_drop(em_scope *s);
/* Returns a new reference to r, which must be kept in s (or NULL), and
 * releases every temporary. A result made outside the scope is returned
 * after em_scope_drop instead: an op may hand back one of its operands
 * retained, so the same pointer can be both kept and a new reference. */
em_tensor *em_scope_finish(em_scope *s, em_tensor *r);
/* Engine ops in a scope (scope.c): NULL operands pass through as NULL,
 * results are kept in s. es_scalar is `a op x`; es_scalar_ex takes
 * ei_binary_scalar's flags (x an integer: integer tensors stay integer;
 * x first: `x op a`); es_mT transposes the last two dims (PyTorch's .mT). */
em_tensor *es_binary(em_scope *s, em_binary_op op, const em_tensor *a, const em_tensor *b);
em_tensor *es_add(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_sub(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_mul(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_div(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_scalar(em_scope *s, em_binary_op op, const em_tensor *a, double x);
em_tensor *es_scalar_ex(em_scope *s, em_binary_op op, const em_tensor *a, double x, bool x_is_int, bool x_first);
em_tensor *es_unary(em_scope *s, em_unary_op op, const em_tensor *a);
em_tensor *es_matmul(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_mT(em_scope *s, const em_tensor *a);
em_tensor *es_unsqueeze(em_scope *s, const em_tensor *a, int dim);
em_tensor *es_narrow(em_scope *s, const em_tensor *a, int dim, int64_t start, int64_t length);
em_tensor *es_to(em_scope *s, const em_tensor *a, em_dtype d);
em_tensor *es_sum(em_scope *s, const em_tensor *a, const int *dims, int ndims, bool keepdim);

/* Replaces `from` at the start of the current error message ("from: ...")
 * by `to`, so the user sees the op they called rather than the one it is
 * built on. */
void em_rename_error(const char *from, const char *to);

/* Random numbers: reserve the counters of `n` values from the global
 * generator for a kernel on `dev` and return what the kernel must use:
 * (seed, offset) and *dev_state NULL; or, while a CUDA graph is being
 * captured on dev, the capture's device state with the offset within the
 * graph (the backend's random family says how a kernel combines them). */
void em_rng_reserve(em_device dev, int64_t n, uint64_t *seed, uint64_t *offset, const uint64_t **dev_state);

/* CUDA graphs (graph.c) and the generator: from capture_begin on, counters
 * reserved for `device` are offsets within the graph whose device state is
 * `dev_state`; capture_end stops that (only if dev_state is still the
 * device's: a newer capture may have replaced a discarded one) and returns
 * how many counters the graph takes per replay; em_rng_captured tells
 * whether a capture on dev with that device state is under way. */
void em_rng_capture_begin(int device, const uint64_t *dev_state);
uint64_t em_rng_capture_end(int device, const uint64_t *dev_state);
bool em_rng_captured(em_device dev, const uint64_t *dev_state);
void em_rng_advance(uint64_t counters);

/* Frees a tensor's autograd data (autograd.c); tensor.c calls it when a
 * header with autograd data is freed. */
void em_ag_free_meta(em_tensor *t);

/* t padded with zeros at the end of every dim to `sizes` (each >= t's; a
 * 0-d t counts as all ones); recorded, so the gradient is the matching
 * narrow of the incoming one (grad_index.c) */
em_tensor *em_pad_end_zeros(const em_tensor *t, const int64_t *sizes, int ndim);

#define SHAPE(t) em_shape_tmp(t)

/* be->alloc, with the out-of-memory handler and one retry for devices */
void *em_device_alloc(const struct em_backend *be, size_t nbytes, int index);

/* buf <- the path of the library `name` in the folder of the binary that
 * holds the engine ("" if unknown): where dlopen'd backends are built. */
void em_lib_beside_engine(char *buf, size_t n, const char *name);
/* The CUDA backend's compute-stream function (backend.h's `stream`), for the
 * NCCL backend; NULL with the error set when there is no CUDA backend. */
typedef void *(*em_cuda_stream_fn)(int device);
em_cuda_stream_fn em_cuda_stream_getter(void);

#endif
