/*
 * ember.h — the public C API of the ember tensor engine.
 *
 * Conventions (see ../shared/DESIGN.md):
 *  - Dimensions in this C API are 0-based and may be negative (-1 is the last);
 *    the Lua binding converts the user's 1-based dims before calling in.
 *  - Index *values* stored in tensors (what argmax/sort/topk/nonzero return,
 *    what index_select/gather/scatter take) are 1-based, as in Lua, so that
 *    index tensors cross the Lua boundary without a conversion pass.
 *  - Errors are values: a function returning a pointer returns NULL on error,
 *    one returning int returns non-zero; em_error() then holds a message that
 *    names the op, the shapes, the dtypes and what was expected.
 *  - Every em_tensor* returned is a new reference owned by the caller; drop
 *    it with em_release(). Arguments are borrowed.
 *  - The engine is single-threaded from the caller's point of view (the CPU
 *    kernels split their work over the engine's own worker threads,
 *    engine/cpu/pool.c, not OpenMP); call it from one thread.
 */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define EM_MAX_DIMS 16

typedef enum em_dtype {
    EM_FLOAT32 = 0,
    EM_FLOAT64,
    EM_INT64,
    EM_INT32,
    EM_UINT8,
    EM_BOOL,
    EM_FLOAT16,
    EM_BFLOAT16,
    EM_INT8,
    EM_INT16,
    EM_NDTYPES
} em_dtype;

typedef enum em_device_type { EM_CPU = 0, EM_CUDA = 1 } em_device_type;

typedef struct em_device {
    em_device_type type;
    int index;              /* CUDA ordinal; 0 for the CPU */
} em_device;

struct em_backend;

/* Reference-counted memory on one device. `version` counts in-place writes
 * (autograd uses it to detect tensors modified after being saved). */
typedef struct em_storage {
    void *data;
    size_t nbytes;
    int refcount;
    em_device device;
    const struct em_backend *backend;
    uint64_t version;
    int owns_data;          /* 0 when data lives inline after the struct */
    bool counted;           /* the binding counted its bytes toward its collector */
} em_storage;

/* A view: sizes/strides (in elements) and an offset on a storage. */
typedef struct em_tensor {
    em_storage *storage;
    int64_t offset;
    int ndim;
    em_dtype dtype;
    int refcount;
    /* A Lua number turned into a 0-d tensor: it takes part in type promotion
     * as a "weak" scalar, like a Python number in PyTorch. */
    bool wrapped_number;
    bool requires_grad;
    void *autograd;         /* autograd metadata, owned by the autograd layer */
    int64_t sizes[EM_MAX_DIMS];
    int64_t strides[EM_MAX_DIMS];
} em_tensor;

/* ---- errors -------------------------------------------------------------- */
const char *em_error(void);                       /* last message */
int em_set_error(const char *fmt, ...)            /* always returns -1 */
    __attribute__((format(printf, 1, 2)));
void em_clear_error(void);
/* The interrupt request (Ctrl-C in the shell): set from a signal handler,
 * polled by long waits (GPU synchronisation), which then fail with
 * "interrupted". */
void em_set_interrupt(bool on);
bool em_interrupt_requested(void);
/* Writes "[2,3]" into buf; returns buf. */
char *em_shape_str(const em_tensor *t, char *buf, size_t n);
char *em_sizes_str(const int64_t *sizes, int ndim, char *buf, size_t n);

/* ---- dtypes and devices -------------------------------------------------- */
/* Bytes per element, 0 for an invalid dtype. Inline: every op asks it
 * several times, and the CUDA library (which cannot call the engine) too. */
static inline size_t em_dtype_size(em_dtype d)
{
    switch (d) {
    case EM_FLOAT64: case EM_INT64: return 8;
    case EM_FLOAT32: case EM_INT32: return 4;
    case EM_FLOAT16: case EM_BFLOAT16: case EM_INT16: return 2;
    case EM_UINT8: case EM_INT8: case EM_BOOL: return 1;
    default: return 0;
    }
}
const char *em_dtype_name(em_dtype d);
int em_dtype_from_name(const char *name, em_dtype *out);   /* 0 on success */
bool em_dtype_is_float(em_dtype d);                /* f32/f64/f16/bf16 */
bool em_dtype_is_int(em_dtype d);                  /* int64/int32/int16/int8/uint8 */
/* The smallest and largest values of integer dtype d as doubles (int64's
 * largest is the largest double below 2^63, which converts back exactly). */
void em_int_range(em_dtype d, double *lo, double *hi);
em_dtype em_promote(em_dtype a, em_dtype b);       /* NumPy/PyTorch table */
/* The result dtype of a binary op, with PyTorch's categories: dimensioned
 * tensors win over 0-d tensors, which win over wrapped numbers, unless the
 * lower-priority operand is of a higher category (bool < int < float). */
em_dtype em_result_type(const em_tensor *a, const em_tensor *b);
/* Whether a number can be stored in dtype d without overflow (integers:
 * within range; floats: finite values up to the largest finite value), and
 * the error "<op>: value ... cannot be converted to <d> without overflow". */
bool em_value_fits(double v, em_dtype d);
int em_check_value_fits(const char *op, double v, em_dtype d);
em_dtype em_default_dtype(void);
void em_set_default_dtype(em_dtype d);
const char *em_device_str(em_device d, char *buf, size_t n);
int em_device_parse(const char *s, em_device *out);
bool em_device_eq(em_device a, em_device b);
float em_half_to_float(uint16_t h);
uint16_t em_float_to_half(float f);
float em_bf16_to_float(uint16_t h);
uint16_t em_float_to_bf16(float f);

/* ---- tensors: life cycle ------------------------------------------------- */
em_tensor *em_empty(const int64_t *sizes, int ndim, em_dtype dtype, em_device dev);
em_tensor *em_empty_like(const em_tensor *t);
em_tensor *em_retain(em_tensor *t);
void em_release(em_tensor *t);
int64_t em_numel(const em_tensor *t);
bool em_is_contiguous(const em_tensor *t);
/* The address of element 0 of the view (storage data + offset). */
static inline void *em_data_ptr(const em_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)em_dtype_size(t->dtype);
}
/* Total bytes held in storages (for telling Lua's collector). */
size_t em_bytes_in_use(em_device_type type);
/* Bytes the storage of t holds (0 if shared is to be ignored). */
size_t em_storage_bytes(const em_tensor *t);
/* Mark an in-place write (bumps the storage version). */
void em_bump_version(em_tensor *t);

/* ---- views (share storage) ----------------------------------------------- */
em_tensor *em_alias(const em_tensor *t);           /* same view, new header */
em_tensor *em_as_strided(const em_tensor *t, const int64_t *sizes,
                         const int64_t *strides, int ndim, int64_t offset);
/* view: sizes may contain one -1. Fails if the strides do not allow it. */
em_tensor *em_view(const em_tensor *t, const int64_t *sizes, int ndim);
/* reshape: a view where possible, otherwise a copy. */
em_tensor *em_reshape(const em_tensor *t, const int64_t *sizes, int ndim);
em_tensor *em_transpose(const em_tensor *t, int d0, int d1);
em_tensor *em_t(const em_tensor *t);                /* 2-D (or <2-D) transpose */
em_tensor *em_permute(const em_tensor *t, const int *dims, int ndims);
em_tensor *em_narrow(const em_tensor *t, int dim, int64_t start, int64_t length);
em_tensor *em_select(const em_tensor *t, int dim, int64_t index);   /* index 0-based */
/* slice along dim: elements start, start+step, ... < stop (0-based, step>0) */
em_tensor *em_slice(const em_tensor *t, int dim, int64_t start, int64_t stop, int64_t step);
em_tensor *em_expand(const em_tensor *t, const int64_t *sizes, int ndim);
em_tensor *em_squeeze(const em_tensor *t);
em_tensor *em_squeeze_dim(const em_tensor *t, int dim);
em_tensor *em_unsqueeze(const em_tensor *t, int dim);
/* The in-place view ops (t_, transpose_, squeeze_, unsqueeze_): t takes the
 * geometry of v, a view of t made by the out-of-place op `base`, which is
 * released. Refused as an in-place write is (t requires grad while grad mode
 * is on); bumps the storage version, so tensors autograd saved before are
 * seen as changed. 0, or -1 with the error set, named "<base>_" (also when v
 * is NULL: the out-of-place op's error, renamed). */
int em_become_view_(const char *base, em_tensor *t, em_tensor *v);
em_tensor *em_flatten(const em_tensor *t, int start_dim, int end_dim);
em_tensor *em_unfold(const em_tensor *t, int dim, int64_t size, int64_t step);
em_tensor *em_diagonal(const em_tensor *t);         /* main diagonal of a 2-D tensor */
em_tensor *em_contiguous(const em_tensor *t);       /* new ref; itself if contiguous */
em_tensor *em_clone(const em_tensor *t);
/* A contiguous copy of CPU tensor t in page-locked memory (the CUDA backend's
 * host_alloc), whose copies to and from a GPU need no staging; t itself when
 * it is pinned already. An error without a CUDA device, for a CUDA tensor, and
 * for one that records a gradient. */
em_tensor *em_pin_memory(const em_tensor *t);
bool em_is_pinned(const em_tensor *t);
int em_copy_(em_tensor *dst, const em_tensor *src); /* broadcast + cast */
em_tensor *em_to_dtype(const em_tensor *t, em_dtype d);  /* itself if same */
em_tensor *em_to_device(const em_tensor *t, em_device d);
/* Broadcast shapes of a and b into out (returns ndim, or -1 with error). */
int em_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb,
                        int64_t *out, const char *op);
int em_normalize_dim(int dim, int ndim, const char *op);  /* -1 on error */

/* ---- creation ------------------------------------------------------------ */
em_tensor *em_full(const int64_t *sizes, int ndim, double value, em_dtype d, em_device dev);
em_tensor *em_zeros(const int64_t *sizes, int ndim, em_dtype d, em_device dev);
em_tensor *em_ones(const int64_t *sizes, int ndim, em_dtype d, em_device dev);
em_tensor *em_scalar(double value, em_dtype d, em_device dev);   /* 0-d */
em_tensor *em_arange(double start, double end, double step, em_dtype d, em_device dev);
em_tensor *em_linspace(double start, double end, int64_t steps, em_dtype d, em_device dev);
em_tensor *em_eye(int64_t n, int64_t m, em_dtype d, em_device dev);
int em_fill_(em_tensor *t, double value);
/* Builds a tensor from host values given as doubles or int64s (one of the
 * two non-NULL), in row-major order. */
em_tensor *em_from_host(const int64_t *sizes, int ndim, em_dtype d,
                        const double *fvals, const int64_t *ivals);

/* ---- random (Philox 4x32-10, counter based) ------------------------------ */
void em_manual_seed(uint64_t seed);
uint64_t em_initial_seed(void);
/* The generator state is (seed, offset): every random op consumes a range of
 * counters, so a saved state replays exactly, on any device. */
void em_rng_get_state(uint64_t *seed, uint64_t *offset);
void em_rng_set_state(uint64_t seed, uint64_t offset);
em_tensor *em_rand(const int64_t *sizes, int ndim, em_dtype d, em_device dev);
em_tensor *em_randn(const int64_t *sizes, int ndim, em_dtype d, em_device dev);
em_tensor *em_randint(int64_t low, int64_t high, const int64_t *sizes, int ndim,
                      em_dtype d, em_device dev);
em_tensor *em_randperm(int64_t n, em_dtype d, em_device dev);   /* values 1..n */
int em_uniform_(em_tensor *t, double lo, double hi);
int em_normal_(em_tensor *t, double mean, double std);

/* ---- elementwise --------------------------------------------------------- */
/* The ops and their properties are listed once, in elementwise_ops.h. */
#include "elementwise_ops.h"

#define EM_OP_ENUM_(op, ...) op,
typedef enum em_unary_op { EM_UNARY_OPS(EM_OP_ENUM_) EM_NUNARY } em_unary_op;
typedef enum em_binary_op { EM_BINARY_OPS(EM_OP_ENUM_) EM_NBINARY } em_binary_op;
#undef EM_OP_ENUM_

/* One op's row of the table. The lookups serve every layer, kernels/ too
 * (which cannot call into the engine); an op out of range gets the last row,
 * named "unary" or "binary". */
typedef struct em_op_info {
    const char *name, *inplace, *backward;
    em_op_dtypes dtypes;
    em_autocast_policy autocast;
    em_op_binding binding;
} em_op_info;

#define EM_OP_INFO_(op, name, inplace, backward, dtypes, autocast, binding) \
    {name, inplace, backward, dtypes, autocast, binding},

static inline const em_op_info *em_unary_info(em_unary_op op)
{
    static const em_op_info info[] = {
        EM_UNARY_OPS(EM_OP_INFO_)
        {"unary", NULL, NULL, EM_OPDT_ALL, EM_AC_NONE, EM_OPB_INTERNAL},
    };
    return &info[(unsigned)op < EM_NUNARY ? (unsigned)op : (unsigned)EM_NUNARY];
}

static inline const em_op_info *em_binary_info(em_binary_op op)
{
    static const em_op_info info[] = {
        EM_BINARY_OPS(EM_OP_INFO_)
        {"binary", NULL, NULL, EM_OPDT_ALL, EM_AC_NONE, EM_OPB_INTERNAL},
    };
    return &info[(unsigned)op < EM_NBINARY ? (unsigned)op : (unsigned)EM_NBINARY];
}
#undef EM_OP_INFO_

const char *em_unary_name(em_unary_op op);
const char *em_binary_name(em_binary_op op);

em_tensor *em_unary(em_unary_op op, const em_tensor *a);
int em_unary_(em_unary_op op, em_tensor *a);                 /* in place */
em_tensor *em_binary(em_binary_op op, const em_tensor *a, const em_tensor *b);
int em_binary_(em_binary_op op, em_tensor *a, const em_tensor *b);  /* a op= b */
/* Binary op with a Lua/C number on one side (weak scalar). */
em_tensor *em_binary_scalar(em_binary_op op, const em_tensor *a, double s,
                            bool s_is_int, bool scalar_first);
em_tensor *em_clamp(const em_tensor *a, const double *lo, const double *hi);
int em_clamp_(em_tensor *t, const double *lo, const double *hi);   /* in place (either bound may be NULL) */
em_tensor *em_pow_scalar(const em_tensor *a, double e);
em_tensor *em_where(const em_tensor *cond, const em_tensor *a, const em_tensor *b);
em_tensor *em_masked_fill(const em_tensor *t, const em_tensor *mask, double value);
int em_masked_fill_(em_tensor *t, const em_tensor *mask, double value);

/* elementwise math composed from the ops above (differentiable
 * where PyTorch's are). */
em_tensor *em_round_decimals(const em_tensor *a, int64_t decimals);   /* half to even */
em_tensor *em_frac(const em_tensor *a);                               /* a - trunc(a) */
em_tensor *em_logit(const em_tensor *a, const double *eps);           /* eps: clamp to [eps, 1-eps] */
em_tensor *em_xlogy(const em_tensor *a, const em_tensor *b);          /* 0 where a == 0 (unless b is NaN) */
/* NULL: NaN -> 0, +inf -> the dtype's largest finite value, -inf -> its lowest */
em_tensor *em_nan_to_num(const em_tensor *a, const double *nan, const double *posinf, const double *neginf);
typedef enum em_float_class { EM_ISNAN, EM_ISINF, EM_ISFINITE, EM_ISPOSINF, EM_ISNEGINF } em_float_class;
em_tensor *em_float_class_test(em_float_class c, const em_tensor *a);   /* bool */
em_tensor *em_isclose(const em_tensor *a, const em_tensor *b, double rtol, double atol, bool equal_nan);
int em_allclose(const em_tensor *a, const em_tensor *b, double rtol, double atol, bool equal_nan, bool *out);
int em_equal(const em_tensor *a, const em_tensor *b, bool *out);     /* same shape and values */
em_tensor *em_lerp(const em_tensor *a, const em_tensor *b, const em_tensor *w);
em_tensor *em_lerp_scalar(const em_tensor *a, const em_tensor *b, double w);
em_tensor *em_addcmul(const em_tensor *a, const em_tensor *b, const em_tensor *c, double value);
em_tensor *em_addcdiv(const em_tensor *a, const em_tensor *b, const em_tensor *c, double value);
/* clamp with tensor bounds (either may be NULL), broadcast, promoted */
em_tensor *em_clamp_tensor(const em_tensor *a, const em_tensor *lo, const em_tensor *hi);
em_tensor *em_heaviside(const em_tensor *a, const em_tensor *values);
em_tensor *em_logical_xor(const em_tensor *a, const em_tensor *b);
em_tensor *em_bitwise_not(const em_tensor *a);
/* Writes r into t as an in-place op named op would (dtype check, autograd
 * check, version bump). */
int em_assign_result_(const char *op, em_tensor *t, const em_tensor *r);

/* ---- reductions (dims: 0-based list; ndims == 0 means all) -------------- */
typedef enum em_reduce_op {
    EM_RSUM, EM_RPROD, EM_RMAX, EM_RMIN, EM_RALL, EM_RANY, EM_NREDUCE
} em_reduce_op;

em_tensor *em_sum(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_sum_dtype(const em_tensor *t, const int *dims, int ndims, bool keepdim, em_dtype d);
em_tensor *em_mean(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_prod(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_amax(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_amin(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_all(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_any(const em_tensor *t, const int *dims, int ndims, bool keepdim);
/* max/min along one dim: values and 1-based int64 indices. */
int em_max_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);
int em_min_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);
/* argmax/argmin; dim < -EM_MAX_DIMS means over the flattened tensor. */
em_tensor *em_argmax(const em_tensor *t, int dim, bool keepdim, bool flat);
em_tensor *em_argmin(const em_tensor *t, int dim, bool keepdim, bool flat);
em_tensor *em_var(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim);
em_tensor *em_std(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim);
em_tensor *em_norm(const em_tensor *t, double p, const int *dims, int ndims, bool keepdim);
em_tensor *em_logsumexp(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_softmax(const em_tensor *t, int dim);
em_tensor *em_log_softmax(const em_tensor *t, int dim);
em_tensor *em_cumsum(const em_tensor *t, int dim);
/* Cross-entropy of logits (classes on dim 1, or dim 0 of a 1-D input) with
 * 1-based class-index targets, fused: log-softmax and the pick in one pass.
 * weight: per-class weights or NULL; rows whose target is ignore_index count
 * for nothing (the mean divides by the kept rows' weights); smoothing mixes
 * in the uniform distribution (label smoothing). */
typedef enum em_reduction { EM_REDUCTION_NONE, EM_REDUCTION_MEAN, EM_REDUCTION_SUM } em_reduction;
em_tensor *em_cross_entropy(const em_tensor *input, const em_tensor *target, const em_tensor *weight,
                            int64_t ignore_index, double smoothing, em_reduction reduction);
em_tensor *em_cumprod(const em_tensor *t, int dim);

/* ---- convolutional networks (conv.c, pooling.c, norm.c) ------------------
 * Inputs are [N, C, spatial...] with 1 to 3 spatial dims, or unbatched
 * [C, spatial...] (the result is then unbatched too). Sizes per spatial dim
 * are given in arrays of nspatial entries. */
typedef enum em_padding_mode { EM_PADDING_EXPLICIT, EM_PADDING_SAME, EM_PADDING_VALID } em_padding_mode;

typedef struct em_conv_args {
    int nspatial;                   /* 1, 2 or 3 */
    bool transposed;                /* conv_transpose: weight [C_in, C_out/groups, k...] */
    int64_t stride[3], padding[3], dilation[3], output_padding[3];
    int64_t groups;
    em_padding_mode padding_mode;   /* SAME / VALID override padding (not transposed) */
} em_conv_args;
/* conv{1,2,3}d / conv_transpose{1,2,3}d; bias [C_out] or NULL */
em_tensor *em_conv(const em_tensor *x, const em_tensor *w, const em_tensor *bias, const em_conv_args *a);

typedef struct em_pool_args {
    int nspatial;
    int64_t kernel[3], stride[3], padding[3], dilation[3];
    bool ceil_mode;
    bool count_include_pad;         /* avg */
    int64_t divisor_override;       /* avg; 0: none */
    bool adaptive;                  /* then output_size gives the output */
    int64_t output_size[3];
} em_pool_args;
/* max_pool / adaptive_max_pool; *indices (may be NULL) gets the 1-based
 * row-major positions of the maxima within each input plane */
em_tensor *em_max_pool(const em_tensor *x, const em_pool_args *a, em_tensor **indices);
em_tensor *em_avg_pool(const em_tensor *x, const em_pool_args *a);

/* batch_norm: x [N, C, ...]. training: batch statistics, and running_mean /
 * running_var (when given) updated in place with momentum and the unbiased
 * variance; otherwise the running statistics are used. weight, bias [C] or NULL. */
em_tensor *em_batch_norm(const em_tensor *x, em_tensor *running_mean, em_tensor *running_var,
                         const em_tensor *weight, const em_tensor *bias, bool training, double momentum,
                         double eps);
em_tensor *em_group_norm(const em_tensor *x, int64_t groups, const em_tensor *weight, const em_tensor *bias,
                         double eps);
/* over the last nnorm dims, whose sizes must be normalized_shape */
em_tensor *em_layer_norm(const em_tensor *x, const int64_t *normalized_shape, int nnorm,
                         const em_tensor *weight, const em_tensor *bias, double eps);

/* ---- attention (attention.c) ---------------------------------------------
 * scaled_dot_product_attention on [..., T, D] inputs: q [..., Tq, D],
 * k [..., Tk, D], v [..., Tk, Dv] with broadcast batch dims; mask NULL, bool
 * (true: take part) or float (added to the scores), broadcastable to
 * [..., Tq, Tk]; scale <= 0 or NaN: 1/sqrt(D). Fused (never a Tq x Tk matrix
 * for the no-mask and causal cases), with a backward that recomputes from
 * the saved log-sum-exp. */
em_tensor *em_scaled_dot_product_attention(const em_tensor *q, const em_tensor *k, const em_tensor *v,
                                           const em_tensor *mask, double dropout_p, bool is_causal,
                                           double scale);
/* the lower / upper triangle of the last two dims (diagonal: 0 the main
 * one, > 0 above it, < 0 below), the rest zero; differentiable */
em_tensor *em_tril(const em_tensor *t, int64_t diagonal);
em_tensor *em_triu(const em_tensor *t, int64_t diagonal);
/* num_samples 1-based category indices (int64) per row of probs [C] or
 * [N, C] (non-negative weights, not necessarily normalised) */
em_tensor *em_multinomial(const em_tensor *probs, int64_t num_samples, bool replacement);

/* ---- linear algebra ------------------------------------------------------ */
em_tensor *em_matmul(const em_tensor *a, const em_tensor *b);
em_tensor *em_mm(const em_tensor *a, const em_tensor *b);
em_tensor *em_bmm(const em_tensor *a, const em_tensor *b);
/* beta * c + alpha * (a @ b), c broadcast to [n, m] */
em_tensor *em_addmm(const em_tensor *c, const em_tensor *a, const em_tensor *b,
                    double beta, double alpha);
em_tensor *em_outer(const em_tensor *a, const em_tensor *b);
em_tensor *em_dot(const em_tensor *a, const em_tensor *b);

/* ---- indexing (index values 1-based, dims 0-based) ----------------------- */
em_tensor *em_index_select(const em_tensor *t, int dim, const em_tensor *index);
em_tensor *em_gather(const em_tensor *t, int dim, const em_tensor *index);
em_tensor *em_scatter(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src);
em_tensor *em_scatter_add(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src);
int em_scatter_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src);
int em_scatter_add_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src);
int em_scatter_value_(em_tensor *t, int dim, const em_tensor *index, double value);
/* t[..., index[i], ...] += alpha * src[..., i, ...] along dim */
int em_index_add_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src, double alpha);
em_tensor *em_index_add(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src, double alpha);
em_tensor *em_masked_select(const em_tensor *t, const em_tensor *mask);
em_tensor *em_nonzero(const em_tensor *t);           /* [n, ndim] int64, 1-based */
em_tensor *em_cat(em_tensor *const *ts, int n, int dim);
em_tensor *em_stack(em_tensor *const *ts, int n, int dim);
/* split into pieces of `size` along dim (last may be smaller); returns count,
 * fills out (caller provides room for `cap` tensors). */
int em_split(const em_tensor *t, int64_t size, int dim, em_tensor **out, int cap);
int em_split_sizes(const em_tensor *t, const int64_t *sizes, int n, int dim, em_tensor **out);
int em_chunk(const em_tensor *t, int chunks, int dim, em_tensor **out, int cap);
int em_sort(const em_tensor *t, int dim, bool descending, bool stable,
            em_tensor **values, em_tensor **indices);
int em_topk(const em_tensor *t, int64_t k, int dim, bool largest, bool sorted,
            em_tensor **values, em_tensor **indices);

/* ---- reductions by order and counting (median, quantile, unique, ...) ------------ */
/* reduce_order.c. Picked values (median, kthvalue, mode, cummax, ...) come
 * with 1-based int64 indices; median takes the lower middle and propagates
 * NaN (its index is then the first NaN's), nanmedian skips NaN. */
em_tensor *em_median(const em_tensor *t);                   /* all elements; 0-d */
em_tensor *em_nanmedian(const em_tensor *t);
int em_median_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);
int em_nanmedian_dim(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);
int em_kthvalue(const em_tensor *t, int64_t k, int dim, bool keepdim, em_tensor **values, em_tensor **indices);
/* the smallest of the most frequent values; its index is its last occurrence */
int em_mode(const em_tensor *t, int dim, bool keepdim, em_tensor **values, em_tensor **indices);
typedef enum em_quantile_interp {
    EM_QUANTILE_LINEAR, EM_QUANTILE_LOWER, EM_QUANTILE_HIGHER, EM_QUANTILE_MIDPOINT, EM_QUANTILE_NEAREST
} em_quantile_interp;
/* q: a 0-d or 1-D tensor of t's dtype (a 1-D q adds a first dim), or NULL
 * for the number qs; all_dims: over the flattened tensor (dim ignored) */
em_tensor *em_quantile(const em_tensor *t, const em_tensor *q, double qs, bool all_dims, int dim, bool keepdim,
                       em_quantile_interp interp, bool ignore_nan);
em_tensor *em_nansum(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_nanmean(const em_tensor *t, const int *dims, int ndims, bool keepdim);
em_tensor *em_count_nonzero(const em_tensor *t, const int *dims, int ndims);     /* int64 */
int em_aminmax(const em_tensor *t, const int *dims, int ndims, bool keepdim, em_tensor **min, em_tensor **max);
int em_var_mean(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim, em_tensor **var,
                em_tensor **mean);
int em_std_mean(const em_tensor *t, const int *dims, int ndims, double correction, bool keepdim, em_tensor **std,
                em_tensor **mean);
int em_cummax(const em_tensor *t, int dim, em_tensor **values, em_tensor **indices);
int em_cummin(const em_tensor *t, int dim, em_tensor **values, em_tensor **indices);
em_tensor *em_logcumsumexp(const em_tensor *t, int dim);
/* sorted unique values (or slices along dim when has_dim), the 1-based
 * index of each input element's (slice's) unique value, and counts; with
 * consecutive, only runs of equal neighbours are merged and nothing is sorted */
int em_unique(const em_tensor *t, bool consecutive, bool has_dim, int dim, em_tensor **values, em_tensor **inverse,
              em_tensor **counts);
em_tensor *em_bincount(const em_tensor *t, const em_tensor *weights, int64_t minlength);
em_tensor *em_histc(const em_tensor *t, int64_t bins, double min, double max);
/* 1-based insertion positions (PyTorch's + 1) of values in the last dim of
 * seq (sorted, or sorted by the 1-based sorter) */
em_tensor *em_searchsorted(const em_tensor *seq, const em_tensor *values, bool right, const em_tensor *sorter,
                           bool out_int32);
em_tensor *em_bucketize(const em_tensor *values, const em_tensor *boundaries, bool right, bool out_int32);

/* ---- shape and index ops (flip, roll, repeat, diag, index_fill, ...) ------------ */
/* shape_ops.c: copies unless said; dims 0-based, repeated dims refused */
em_tensor *em_flip(const em_tensor *t, const int *dims, int ndims);
em_tensor *em_fliplr(const em_tensor *t);
em_tensor *em_flipud(const em_tensor *t);
/* ndims == 0: the flattened tensor rolled by shifts[0], shape restored */
em_tensor *em_roll(const em_tensor *t, const int64_t *shifts, int nshifts, const int *dims, int ndims);
em_tensor *em_rot90(const em_tensor *t, int64_t k, int d0, int d1);
em_tensor *em_repeat(const em_tensor *t, const int64_t *repeats, int n);
em_tensor *em_tile(const em_tensor *t, const int64_t *reps, int n);
/* repeats_t (0-d/1-D int tensor) or, when NULL, the integer repeats; no dim:
 * over the flattened input; output_size < 0: not given */
em_tensor *em_repeat_interleave(const em_tensor *t, int64_t repeats, const em_tensor *repeats_t, int dim,
                                bool has_dim, int64_t output_size);
/* ember.repeat_interleave(repeats): 1-based positions, position i repeats[i] times */
em_tensor *em_repeat_interleave_index(const em_tensor *repeats, int64_t output_size);
em_tensor *em_movedim(const em_tensor *t, const int *src, const int *dst, int n);   /* view */
int em_unbind(const em_tensor *t, int dim, em_tensor **out, int cap);                /* views */
em_tensor *em_unflatten(const em_tensor *t, int dim, const int64_t *sizes, int n);  /* view if possible */
/* diagonal `offset` of dims dim1, dim2 as the last dim of a view */
em_tensor *em_diagonal_ex(const em_tensor *t, int64_t offset, int dim1, int dim2);
em_tensor *em_diag(const em_tensor *t, int64_t diagonal);
em_tensor *em_diag_embed(const em_tensor *t, int64_t offset, int dim1, int dim2);
em_tensor *em_diagflat(const em_tensor *t, int64_t offset);
em_tensor *em_trace(const em_tensor *t);
em_tensor *em_broadcast_to(const em_tensor *t, const int64_t *sizes, int ndim);     /* view */
int em_broadcast_tensors(em_tensor *const *ts, int n, em_tensor **out);             /* views */
em_tensor *em_atleast(const em_tensor *t, int n);                                    /* n: 1..3, view */
int em_meshgrid(em_tensor *const *ts, int n, bool xy, em_tensor **out);             /* views */
em_tensor *em_cartesian_prod(em_tensor *const *ts, int n);
em_tensor *em_block_diag(em_tensor *const *ts, int n);
/* shape_index.c */
em_tensor *em_take(const em_tensor *t, const em_tensor *index);
em_tensor *em_take_along_dim(const em_tensor *t, const em_tensor *index, int dim, bool has_dim);
em_tensor *em_index_fill(const em_tensor *t, int dim, const em_tensor *index, double value);
int em_index_fill_(em_tensor *t, int dim, const em_tensor *index, double value);
em_tensor *em_index_copy(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src);
int em_index_copy_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src);
em_tensor *em_masked_scatter(const em_tensor *t, const em_tensor *mask, const em_tensor *src);
int em_masked_scatter_(em_tensor *t, const em_tensor *mask, const em_tensor *src);
/* int64 class values 1..num_classes (-1: their maximum) -> int64 [..., C] */
em_tensor *em_one_hot(const em_tensor *t, int64_t num_classes);
typedef enum em_scatter_reduction {
    EM_SR_SUM, EM_SR_PROD, EM_SR_MEAN, EM_SR_AMAX, EM_SR_AMIN
} em_scatter_reduction;
em_tensor *em_scatter_reduce(const em_tensor *t, int dim, const em_tensor *index, const em_tensor *src,
                             em_scatter_reduction r, bool include_self);
int em_scatter_reduce_(em_tensor *t, int dim, const em_tensor *index, const em_tensor *src,
                       em_scatter_reduction r, bool include_self);
/* create.c */
em_tensor *em_logspace(double start, double end, int64_t steps, double base, em_dtype d, em_device dev);
em_tensor *em_tril_indices(int64_t rows, int64_t cols, int64_t offset, em_dtype d, em_device dev);
em_tensor *em_triu_indices(int64_t rows, int64_t cols, int64_t offset, em_dtype d, em_device dev);

/* ---- advanced indexing, einsum, tensordot, kron, cross, cdist -------------------- */
/* advindex.c: PyTorch's aten::index / index_put. indices[0..n-1] consume t's
 * leading dims (the rest are kept): NULL keeps one dim; an int64/int32 tensor
 * (1-based values, negative from the end) indexes one dim; a bool tensor of k
 * dims consumes k dims as its nonzero() (a 0-d one adds a dim of size 1 or
 * 0). Index tensors broadcast together; their result dims replace them where
 * they are adjacent, else they go first. Differentiable by composition. */
em_tensor *em_index_tensors(const em_tensor *t, em_tensor *const *indices, int n);
/* values broadcast to the shape t indexed by indices has; accumulate: sum
 * duplicates, else the last write wins (on the CPU; unspecified on CUDA) */
em_tensor *em_index_put(const em_tensor *t, em_tensor *const *indices, int n, const em_tensor *values,
                        bool accumulate);
int em_index_put_(em_tensor *t, em_tensor *const *indices, int n, const em_tensor *values, bool accumulate);
/* einsum.c: composed from permute/reshape/sum/bmm, so differentiable */
em_tensor *em_einsum(const char *equation, em_tensor *const *operands, int n);
/* contracts dims_a[i] of a with dims_b[i] of b (0-based) */
em_tensor *em_tensordot(const em_tensor *a, const em_tensor *b, const int *dims_a, const int *dims_b, int ndims);
em_tensor *em_kron(const em_tensor *a, const em_tensor *b);
/* x1 [..., P, M], x2 [..., R, M] -> [..., P, R] p-norm distances (p >= 0, inf) */
em_tensor *em_cdist(const em_tensor *x1, const em_tensor *x2, double p);

/* ---- linear algebra (ember.linalg: decompositions and solves) -------------------- */
/* linalg_decomp.c: as torch.linalg, batched over the leading dims, float32 and
 * float64, differentiable (gradients as PyTorch's). Errors name the op as
 * PyTorch does ("linalg.inv: ..."), singular / non-positive-definite inputs
 * included. Multi-output ops return 0 and new references, or -1. */
em_tensor *em_linalg_det(const em_tensor *A);
int em_linalg_slogdet(const em_tensor *A, em_tensor **sign, em_tensor **logabsdet);
em_tensor *em_linalg_inv(const em_tensor *A);
/* A X = B (left) or X A = B; B [..., n, k] or a vector [..., n] (B 1-D, or
 * A's batch shape plus n); batch dims broadcast */
em_tensor *em_linalg_solve(const em_tensor *A, const em_tensor *B);
em_tensor *em_linalg_solve_ex(const em_tensor *A, const em_tensor *B, bool left);
/* lower L (A = L L^T), or upper U = L^T */
em_tensor *em_linalg_cholesky(const em_tensor *A, bool upper);
/* mode "reduced" (NULL), "complete" or "r" (Q is then an empty tensor) */
int em_linalg_qr(const em_tensor *A, const char *mode, em_tensor **Q, em_tensor **R);
int em_linalg_svd(const em_tensor *A, bool full_matrices, em_tensor **U, em_tensor **S, em_tensor **Vh);
em_tensor *em_linalg_svdvals(const em_tensor *A);
/* uplo "L" (NULL) or "U": the triangle read; eigenvalues ascending */
int em_linalg_eigh(const em_tensor *A, const char *uplo, em_tensor **L, em_tensor **V);
em_tensor *em_linalg_eigvalsh(const em_tensor *A, const char *uplo);
/* singular values (|eigenvalues| when hermitian) at most max(atol, rtol *
 * largest) count as zero; atol, rtol < 0: unset (PyTorch's defaults) */
em_tensor *em_linalg_pinv(const em_tensor *A, double atol, double rtol, bool hermitian);
/* a x b along dim (size 3 there; batch dims broadcast); differentiable */
em_tensor *em_linalg_cross(const em_tensor *a, const em_tensor *b, int dim);
/* torch.cross: the same, but autocast promotes its inputs (linalg.cross is in
 * no autocast list) */
em_tensor *em_cross(const em_tensor *a, const em_tensor *b, int dim);

/* ---- host access --------------------------------------------------------- */
/* Reads element `linear` (row-major position in the view) as a double. */
double em_get_f(const em_tensor *t, int64_t linear);
int64_t em_get_i(const em_tensor *t, int64_t linear);
int em_item(const em_tensor *t, double *out);        /* numel must be 1 */
/* Copies the tensor's values (row-major) to host doubles. */
int em_to_host_f64(const em_tensor *t, double *out);
int em_to_host_i64(const em_tensor *t, int64_t *out);

/* ---- autocast (engine/autocast.c) ----------------------------------------
 * Per thread and per device type: enabled, the low-precision dtype
 * (bfloat16 or float16) and whether casts of weights are cached. Each public
 * op with a policy (em_autocast_policy, elementwise_ops.h) applies it at its
 * entry while autocast is active; engine compositions and backward passes
 * are never cast. enter/exit count nested regions (the cache is emptied when
 * the outermost exits); the backward pass suspends autocast while it runs. */
bool em_autocast_active(void);                     /* some device enabled, not suspended */
int em_autocast_get(em_device_type type, bool *enabled, em_dtype *dtype, bool *cache);
int em_autocast_set(em_device_type type, bool enabled, em_dtype dtype, bool cache);
int em_autocast_enter(void);                       /* returns the new depth */
int em_autocast_exit(void);
void em_autocast_clear_cache(void);
int em_autocast_suspend(void);                     /* returns the previous count */
void em_autocast_resume(void);
void em_autocast_backward_ran(void);               /* casts made before are spent */
/* floating, not float64, on a device type whose autocast is enabled */
bool em_autocast_eligible(const em_tensor *t);
em_dtype em_autocast_dtype(const em_tensor *t);    /* the dtype of t's device type */
/* t cast to d (differentiable), through the cache where it applies; new ref */
em_tensor *em_autocast_cast(const em_tensor *t, em_dtype d);
/* The casts of ts[0..n) (NULL entries allowed) under pol, for an op's
 * entry: out[i] is a new reference to ts[i]'s cast, NULL where ts[i] stays
 * as it is (pol PROMOTE: the widest eligible dtype among the n). Applies
 * the policy whether or not autocast is active; 0, or -1 with the error set
 * and nothing held. */
int em_autocast_apply(em_autocast_policy pol, const em_tensor *const *ts, em_tensor **out, int n);

/* ---- autograd ------------------------------------------------------------ */
/* Ops record a node on the tape when grad mode is on and an input requires
 * grad (see engine/autograd.h). In-place ops on tensors that require grad
 * are refused while grad mode is on. */
bool em_grad_enabled(void);
bool em_set_grad_enabled(bool on);                 /* returns the previous mode */
int em_requires_grad_(em_tensor *t, bool on);      /* leaves; float dtypes only */
bool em_is_leaf(const em_tensor *t);
const char *em_grad_fn_name(const em_tensor *t);   /* NULL for leaves */
em_tensor *em_get_grad(const em_tensor *t);        /* new ref or NULL */
int em_set_grad(em_tensor *t, em_tensor *g);       /* g may be NULL */
em_tensor *em_detach(const em_tensor *t);
/* t itself made a leaf that does not require grad (not a view: those keep their base's graph) */
int em_detach_(em_tensor *t);
/* t.data = src (PyTorch's .data assignment): t takes src's storage, dtype, shape and
 * strides and keeps itself (its identity, requires_grad, .grad): how a module is converted
 * or a lazy parameter materialised with every reference to t still valid. Refused for a
 * tensor autograd computed (it has a grad_fn) and, when t requires grad, for a src that
 * is not floating point. Not recorded by autograd. */
int em_set_data_(em_tensor *t, const em_tensor *src);
int em_retain_grad(em_tensor *t);
/* A hook gets the gradient flowing into a tensor; it may set *replacement
 * (a new reference) to change it. Returns non-zero with an error to abort. */
typedef int (*em_hook_fn)(void *ctx, em_tensor *grad, em_tensor **replacement);
int em_register_hook(em_tensor *t, em_hook_fn fn, void *ctx, void (*free_ctx)(void *ctx));
/* A post-accumulate hook runs once a leaf's .grad has been updated by a
 * backward pass (once per pass; PyTorch's register_post_accumulate_grad_hook):
 * what data-parallel training starts its communication from. It gets the leaf. */
typedef int (*em_post_hook_fn)(void *ctx, em_tensor *leaf);
int em_register_post_accumulate_hook(em_tensor *t, em_post_hook_fn fn, void *ctx, void (*free_ctx)(void *ctx));
/* Called during a backward pass (from a hook): fn runs when that pass has
 * accumulated every gradient, before em_backward returns; a non-zero return
 * fails the backward. Callbacks of a failed pass are dropped unrun. */
typedef int (*em_callback_fn)(void *ctx);
int em_queue_callback(em_callback_fn fn, void *ctx, void (*free_ctx)(void *ctx));
/* Accumulates d(outputs)/d(leaves) into the leaves' .grad; grads may be
 * NULL (then every output must have one element) or hold NULLs. */
int em_backward(em_tensor *const *outputs, em_tensor *const *grads, int n, bool retain_graph,
                bool create_graph);
/* d(outputs)/d(inputs) without touching .grad; results[i] gets a new
 * reference (NULL for an unused input when allow_unused). */
int em_autograd_grad(em_tensor *const *outputs, em_tensor *const *grad_outputs, int nout,
                     em_tensor *const *inputs, int nin, bool retain_graph, bool create_graph,
                     bool allow_unused, em_tensor **results);

/* Custom functions (ember.autograd.Function): after the user's forward has
 * run (with grad mode off), records one node for its tensor outputs, with
 * an edge per input (inputs[i] may be NULL: not a tensor). kinds[k] says
 * what outputs[k] is; an input returned as it is (EM_CUSTOM_OUT) is
 * replaced in outputs[k] by a new alias, a dirty one (modified in place by
 * the forward) gets the node as its new history. saved: tensors the
 * backward needs (checked for in-place changes, freed after a backward
 * without retain_graph). The backward callback receives one gradient per
 * output (NULL where none flowed, unless materialize: then zeros) and the
 * saved tensors, and writes a new reference or NULL per input; each is
 * checked against its input (a broadcast shape is summed down, the dtype
 * cast, another device refused). ctx is freed by free_ctx with the node,
 * or at once when this fails.
 * Call it only when grad mode is on and some input requires grad. */
typedef enum em_custom_output { EM_CUSTOM_NONDIFF, EM_CUSTOM_OUT, EM_CUSTOM_DIRTY } em_custom_output;
typedef int (*em_custom_backward_fn)(void *ctx, em_tensor *const *grad_outputs, int nout, em_tensor *const *saved,
                                     int nsaved, em_tensor **grad_inputs, int nin);
int em_custom_function(const char *name, em_tensor *const *inputs, int nin, em_tensor **outputs,
                       const em_custom_output *kinds, int nout, em_tensor *const *saved, int nsaved,
                       bool materialize, em_custom_backward_fn fn, void *ctx, void (*free_ctx)(void *ctx));

/* ---- backends ------------------------------------------------------------ */
const struct em_backend *em_backend_for(em_device dev);   /* NULL + error if unavailable */
int em_synchronize(em_device dev);

/* CUDA devices. Opening the backend happens on the first of these calls (or
 * the first CUDA tensor); without a driver or GPU they fail with the reason. */
int em_cuda_device_count(void);                     /* -1 + error if unavailable */
bool em_cuda_is_initialized(void);                  /* the CUDA backend is loaded (never loads it) */
int em_cuda_device_name(int index, char *buf, size_t n);
/* Checks a CUDA device index: -1 + error naming the count when out of range. */
int em_cuda_check_device(int index);

/* Backend-wide switches (set_flag). */
typedef enum em_backend_flag {
    EM_FLAG_ALLOW_TF32,     /* float32 GEMMs may use TF32 tensor cores (off by default) */
    EM_FLAG_SYNC_DEBUG,     /* synchronise and check for errors after every op */
    EM_FLAG_DETERMINISTIC,  /* the same bits every run: ops whose CUDA kernels add with atomics
                             * (scatter_add, index_add, scatter_reduce "prod") sum in index order,
                             * convolutions use cuDNN's deterministic algorithms */
    EM_FLAG_CUDNN_TF32,     /* float32 convolutions may use TF32 tensor cores (on by default) */
    EM_FLAG_CUDNN_DETERMINISTIC,  /* convolutions use cuDNN's deterministic algorithms only */
    EM_FLAG_CUDNN_BENCHMARK,      /* kept for ember.backends.cudnn.benchmark; the heuristics choose either way */
    EM_FLAG_FILL_UNINITIALIZED,   /* with DETERMINISTIC: empty() fills NaN / the integer maximum (on) */
    EM_NFLAGS
} em_backend_flag;

/* Allocator figures of one device, in bytes. */
typedef struct em_memory_stats {
    size_t allocated, reserved, peak_allocated, peak_reserved;
    uint64_t alloc_calls, free_calls, device_mallocs, device_frees, num_ooms;  /* num_ooms: failed device mallocs */
} em_memory_stats;

int em_get_memory_stats(em_device dev, em_memory_stats *out);
int em_reset_peak_memory_stats(em_device dev);
int em_empty_cache(em_device dev);
/* Backend switches (engine/backend.h em_backend_flag) for one device type. */
int em_set_backend_flag(em_device_type type, int flag, int value);
int em_get_backend_flag(em_device_type type, int flag);

/* Events on a device's stream, for timing GPU work. */
typedef struct em_event em_event;
em_event *em_event_create(em_device dev);
int em_event_record(em_event *e);
int em_event_synchronize(em_event *e);
int em_event_elapsed_ms(em_event *start, em_event *end, float *ms);
void em_event_destroy(em_event *e);

/* Called when a device allocation fails, before the engine empties the
 * backend's cache and retries once (the Lua binding runs a full collection
 * there, so tensors only the collector still holds are freed first). */
void em_set_oom_handler(void (*fn)(void *ctx), void *ctx);

/* CUDA graphs (engine/graph.c): capture a device's work into a graph and
 * replay it with one launch; allocations during a capture come from a
 * private pool (shared between graphs through a pool handle). Every entry
 * fails with "no CUDA device: ..." without one. */
typedef struct em_graph em_graph;
typedef struct em_graph_pool em_graph_pool;
em_graph_pool *em_graph_pool_new(int device, const em_graph_pool *share);   /* share: another handle to it */
void em_graph_pool_release(em_graph_pool *p);
int em_graph_pool_device(const em_graph_pool *p);
em_graph *em_graph_begin(int device, const em_graph_pool *pool);            /* pool NULL: a new one */
int em_graph_end(em_graph *g);
int em_graph_replay(em_graph *g);
em_graph_pool *em_graph_pool_of(const em_graph *g);                         /* a new handle */
int em_graph_device(const em_graph *g);
void em_graph_destroy(em_graph *g);                                         /* discards a capture under way */
/* Whether a capture is under way on CUDA device `index` (false when CUDA
 * was never loaded: never loads it). */
bool em_cuda_is_capturing(int index);
/* 0 unless a capture is under way on dev; then it is ended and discarded
 * and -1 returned with "op: cannot <what> while a CUDA graph is being
 * captured ...". For the paths that need the host to wait for the device. */
int em_check_not_capturing(em_device dev, const char *op, const char *what);
int em_num_threads(void);
void em_set_num_threads(int n);
/* The CPU (engine/cpu/blas.c). em_cpu_capability: "AVX512", "AVX2" or
 * "DEFAULT", the widest vector instructions this CPU and its OS offer, by
 * PyTorch's rule (torch.backends.cpu.get_cpu_capability). em_cpu_blas_core:
 * the kernel set OpenBLAS runs ("Cooperlake", "SkylakeX", "Haswell", ...),
 * opening OpenBLAS if it is not yet open (see blas.c for how the set is
 * chosen, and EMBER_BLAS_CORETYPE, EMBER_BLAS_LIBRARY); NULL with the error
 * "blas_core: OpenBLAS (<file>) could not be opened: ..." without it. */
const char *em_cpu_capability(void);
const char *em_cpu_blas_core(void);

/* ---- fused linear layers (engine/linear.c) ---------------------------------- */
/* F.linear: act(x @ w^T + b) for x [..., in], w [out, in], b [out] or NULL, as
 * one fused op (its backward: two or three). GELU_TANH is gelu with
 * approximate = "tanh" (the form cuBLASLt's epilogue computes). em_gelu_tanh is
 * that activation alone: em_unary(EM_GELU_TANH, x), the formula the CPU's and
 * the fallback CUDA epilogue use. */
typedef enum em_linear_act { EM_LINEAR_ACT_NONE, EM_LINEAR_ACT_GELU_TANH } em_linear_act;
em_tensor *em_linear(const em_tensor *x, const em_tensor *w, const em_tensor *b, em_linear_act act);
em_tensor *em_gelu_tanh(const em_tensor *x);

/* ---- GPU monitoring (engine/nvml.c; the two CUDA queries in engine/device.c) ---- */
/* Free and total bytes of CUDA device `index` (cudaMemGetInfo; loads the
 * CUDA backend), and its PCI bus id "0000:65:00.0". */
int em_cuda_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes);
int em_cuda_pci_bus_id(int index, char *buf, size_t n);
/* NVML (libnvidia-ml.so.1, or the file $EMBER_NVML_LIBRARY names), opened on
 * the first of these calls. Each fails with "op: NVML is not available
 * (why)" without it. `index` is NVML's own number (nvidia-smi's order). */
typedef enum em_gpu_metric {
    EM_GPU_UTILIZATION,         /* percent of the last sample period a kernel ran */
    EM_GPU_MEMORY_UTILIZATION,  /* percent of it device memory was read or written */
    EM_GPU_MEMORY_USED,         /* bytes, as the driver counts them (every process) */
    EM_GPU_MEMORY_TOTAL,        /* bytes */
    EM_GPU_TEMPERATURE,         /* degrees Celsius */
    EM_GPU_POWER_DRAW,          /* milliwatts */
    EM_GPU_POWER_LIMIT,         /* milliwatts (the enforced limit) */
    EM_GPU_NMETRICS
} em_gpu_metric;
typedef struct em_gpu_info {
    char name[96], uuid[96], bus_id[32];
} em_gpu_info;
bool em_nvml_is_loaded(void);                       /* never loads it */
int em_nvml_device_count(const char *op);
int em_nvml_driver_version(const char *op, char *buf, size_t n);
int em_nvml_device_info(const char *op, int index, em_gpu_info *out);
int em_nvml_read(const char *op, int index, em_gpu_metric m, int64_t *value);
/* NVML's number of CUDA device cuda_index, found by its PCI bus id (loads
 * the CUDA backend). Where that backend has no device, cuda_index is taken
 * as NVML's number: a CPU-only session still sees the machine's GPUs. */
int em_nvml_index_of_cuda(const char *op, int cuda_index);
/* The CUDA index of NVML's GPU `index`, -1 when none or when CUDA is not
 * loaded (never loads it). */
int em_nvml_cuda_index(int index);

#endif
