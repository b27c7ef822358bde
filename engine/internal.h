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

/* Releases up to four tensors (NULL allowed). */
void em_release4(em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d);

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
/* A new reference to r (or NULL), every temporary released. */
em_tensor *em_scope_finish(em_scope *s, em_tensor *r);
/* Engine ops in a scope (scope.c): NULL operands pass through as NULL,
 * results are kept in s. es_scalar is `a op x`; es_mT transposes the last
 * two dims (PyTorch's .mT). */
em_tensor *es_binary(em_scope *s, em_binary_op op, const em_tensor *a, const em_tensor *b);
em_tensor *es_add(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_sub(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_mul(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_div(em_scope *s, const em_tensor *a, const em_tensor *b);
em_tensor *es_scalar(em_scope *s, em_binary_op op, const em_tensor *a, double x);
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
