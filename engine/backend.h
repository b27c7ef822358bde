/*
 * backend.h — the interface every backend (CPU in engine/cpu/, CUDA in
 * kernels/) implements. Read it in one sitting: it is the whole contract.
 *
 * A backend provides a few kernel *families*, each parameterised by an op
 * code, not one entry point per user-level op. engine/ composes user-level
 * ops and every backward from these, so a new backend stays small.
 *
 * What the engine guarantees before it calls a kernel:
 *  - every tensor argument lives on this backend's device;
 *  - shapes already agree (broadcast inputs are expanded views with stride 0),
 *    outputs are allocated and may be strided (e.g. an in-place op on a view);
 *  - inputs of elementwise families share one dtype, the compute dtype
 *    (`cast` is the only kernel that converts between dtypes); outputs of
 *    comparisons and logical ops are EM_BOOL, others the compute dtype;
 *  - index values are int64 and 1-based; the engine validated their range
 *    only where noted (kernels must still never read or write out of bounds:
 *    they report a bad index through the return value).
 * Kernels return 0 on success, or call em_set_error() and return -1.
 */
#ifndef EMBER_BACKEND_H
#define EMBER_BACKEND_H

#include "ember.h"

typedef enum em_ternary_op {
    EM_WHERE,       /* out = a ? b : c          (a is bool) */
    EM_LERP,        /* out = a + w * (b - a)    (c is w)    */
    EM_ADDCMUL,     /* out = a + s * b * c                  */
    EM_ADDCDIV,     /* out = a + s * b / c                  */
    EM_NTERNARY
} em_ternary_op;

typedef enum em_random_op {
    EM_RAND_UNIFORM,    /* [a, b)                                  */
    EM_RAND_NORMAL,     /* mean a, std b                           */
    EM_RAND_INT,        /* integers in [a, b)                      */
    EM_NRANDOM
} em_random_op;

typedef enum em_index_op {
    EM_INDEX_SELECT,    /* out = in.index_select(dim, idx)          */
    EM_GATHER,          /* out[i][j] = in[i][idx[i][j]] (dim=1)     */
    EM_SCATTER,         /* out[i][idx[i][j]] = src[i][j]  (in place) */
    EM_SCATTER_ADD,     /* out[i][idx[i][j]] += src[i][j] (in place) */
    EM_INDEX_ADD,       /* out.index_select(dim, idx) += src (in place) */
    EM_SCATTER_MUL,     /* out[i][idx[i][j]] *= src[i][j] (in place; bool: and) */
    EM_SCATTER_AMAX,    /* out[..] = max(out[..], src[..]) (NaN wins; bool: or) */
    EM_SCATTER_AMIN,    /* out[..] = min(out[..], src[..]) (NaN wins; bool: and) */
    EM_NINDEX
} em_index_op;

typedef enum em_softmax_op { EM_SOFTMAX, EM_LOG_SOFTMAX } em_softmax_op;

/* Fused optimizer updates: one pass over a parameter and its state, with the
 * hyper-parameters in an em_optim_hyper (the rules: engine/optim.h). */
typedef enum em_optim_op {
    EM_OPTIM_SGD,       /* p, g, momentum buffer (may be NULL)            */
    EM_OPTIM_ADAM,      /* p, g, exp_avg, exp_avg_sq (AdamW: decoupled wd) */
    EM_OPTIM_UNSCALE,   /* p: a gradient, p *= inv_scale; s1: a 1-element float32 flag set to 1 when a value
                         * of p (before scaling) is not finite; g, s2 NULL (GradScaler.unscale_) */
    EM_NOPTIM
} em_optim_op;
/* The hyper-parameters of an optimizer op; an op reads its own members:
 *   SGD:     lr, momentum, dampening, weight_decay, nesterov, first_step (the
 *            momentum buffer is set to the step instead of updated), maximize
 *   ADAM:    lr, beta1, beta2, eps, weight_decay, decoupled (AdamW), bc1 =
 *            1 - beta1^step, bc2 = 1 - beta2^step, maximize
 *   UNSCALE: inv_scale;  NORM: norm_type;  SCALE: max_norm */
typedef struct em_optim_hyper {
    double lr, weight_decay;
    double momentum, dampening;
    double beta1, beta2, eps, bc1, bc2;
    double inv_scale, norm_type, max_norm;
    bool nesterov, first_step, decoupled, maximize;
} em_optim_hyper;
/* Multi-tensor optimizer ops (PyTorch's foreach / fused kernels): the op
 * over the n tensors of up to four lists in one pass (on CUDA one launch, a
 * second only when the table of tensors overflows). All tensors are
 * contiguous and share one device and one dtype (float32, float64, float16
 * or bfloat16; float16/bfloat16 compute in float32 and store in their own
 * dtype); l->t[k][i] is list k's i-th tensor (a list unused by the op is
 * NULL), and the tensors of one i have one numel. The hyper-parameters as
 * for optim (em_optim_hyper).
 *   SGD:     t[0] params, t[1] grads, t[2] momentum buffers (NULL when momentum == 0)
 *   ADAM:    t[0] params, t[1] grads, t[2] exp_avg, t[3] exp_avg_sq
 *   UNSCALE: t[0] grads *= *a; *b = 1 when a value (before scaling) is inf or
 *            NaN (a: inv_scale, b: found_inf, one-element float32 each)
 *   NORM:    t[0]; a: float64 [n + 1] written: a[i] = sum |t_i|^norm_type (max
 *            |t_i| when norm_type is inf), a[n] the same over every tensor
 *   SCALE:   t[0] *= c with c = min(max_norm / (*a + 1e-6), 1) computed in a's
 *            dtype (a: a one-element float32/float64 norm; NaN stays NaN) */
typedef enum em_multi_op {
    EM_MULTI_SGD, EM_MULTI_ADAM, EM_MULTI_UNSCALE, EM_MULTI_NORM, EM_MULTI_SCALE, EM_NMULTI
} em_multi_op;
typedef struct em_tensor_lists {
    int64_t n;
    em_tensor *const *t[4];
} em_tensor_lists;
/* CUMMAX / CUMMIN: running extreme (a NaN propagates); LOGCUMSUMEXP: running
 * log(sum(exp)), floating dtypes only */
typedef enum em_scan_op { EM_CUMSUM, EM_CUMPROD, EM_CUMMAX, EM_CUMMIN, EM_LOGCUMSUMEXP } em_scan_op;

/* ---- convolution, pooling, normalisation (NC + 1..3 spatial dims) --------
 * For these three families the engine passes contiguous tensors only, of
 * one float dtype (float32 or float64; float16/bfloat16 where a backend
 * has them), and outputs already sized; kernels overwrite their outputs. */

#define EM_MAX_SPATIAL 3

/* Cross-correlation as PyTorch's conv: x [N, C, I...], w [K, C/groups, k...],
 * y [N, K, O...] with O = (I + 2 pad - dil (k - 1) - 1) / stride + 1.
 * Padding is symmetric here: the engine pads explicitly for "same" with an
 * odd total, and for transposed convs the output shape (output_padding) is
 * given by gx's shape. groups divides C and K. */
typedef struct em_conv_params {
    int nspatial;                               /* 1, 2 or 3 */
    int64_t stride[EM_MAX_SPATIAL], padding[EM_MAX_SPATIAL], dilation[EM_MAX_SPATIAL];
    int64_t groups;
    /* The bias, fused into the call (NULL: none), a contiguous [K] of the
     * op's dtype. FORWARD adds it to every output position; BACKWARD_WEIGHT
     * writes into it gy summed over the batch and the positions (the bias's
     * gradient, from the same pass over gy); BACKWARD_DATA takes none. The
     * engine passes one only when no operand is empty. */
    em_tensor *bias;
} em_conv_params;

typedef enum em_conv_op {
    EM_CONV_FORWARD,            /* out = y  [N,K,O...]; a = x,  b = w  */
    EM_CONV_BACKWARD_DATA,      /* out = gx [N,C,I...]; a = gy, b = w  (the transposed conv) */
    EM_CONV_BACKWARD_WEIGHT,    /* out = gw [K,C/g,k...]; a = x, b = gy */
    EM_NCONV
} em_conv_op;

/* Pooling over the spatial dims of in [N, C, I...] into out [N, C, O...].
 * Window o along a dim: positions o*stride - pad + j*dil, j < kernel, those
 * inside [0, I) taking part; out's shape (ceil_mode) is decided by the
 * engine, and a window starting past I - 1 + pad never occurs. Adaptive:
 * window o covers [floor(o I / O), ceil((o+1) I / O)) and kernel, stride,
 * padding and dilation are ignored.
 * MAX: idx (int64, out's shape) gets the 1-based row-major position within
 * the plane I... of the first maximum; NaN wins (as PyTorch). Its backward
 * is composed by the engine (a scatter-add at idx).
 * AVG: the sum over the window divided by `divisor` if > 0, else by the
 * number of positions inside the padded input [-pad, I + pad) clipped to
 * I + pad (count_include_pad) or inside [0, I) (exclude; adaptive always). */
typedef enum em_pool_op { EM_POOL_MAX, EM_POOL_AVG, EM_NPOOL } em_pool_op;

typedef struct em_pool_params {
    int nspatial;
    int64_t kernel[EM_MAX_SPATIAL], stride[EM_MAX_SPATIAL], padding[EM_MAX_SPATIAL],
            dilation[EM_MAX_SPATIAL];
    bool adaptive;
    bool count_include_pad;
    int64_t divisor;                            /* divisor_override; 0: none */
} em_pool_params;

/* Normalisation: statistics (mean and biased variance) over a set of
 * elements, then y = (x - mean) * rsqrt(var + eps) * w + b.
 * x is [N, C, S] (S: the spatial dims flattened, 1 for none);
 *  BATCH: one set per channel c (over N and S): mean/var [C];
 *  GROUP: one set per (n, g), the C/G channels of group g: mean/var [N*G]
 *         (layer norm is GROUP with G = 1, S = 1 and C the normalised size;
 *         instance norm is GROUP with G = C).
 * w and b are [C] (NULL: 1 and 0). forward writes y, mean and var (biased). */
typedef enum em_norm_op { EM_NORM_BATCH, EM_NORM_GROUP, EM_NNORM } em_norm_op;

typedef struct em_norm_params {
    int64_t N, C, S, G;                         /* G: BATCH ignores it */
    double eps;
} em_norm_params;

/* ---- attention ------------------------------------------------------------
 * Fused scaled-dot-product attention over B independent problems (batch and
 * heads flattened by the engine): q [B, Tq, D], k [B, Tk, D], v [B, Tk, Dv],
 * out [B, Tq, Dv], lse [B, Tq]; q, k, v contiguous, one dtype (float32,
 * float64; bfloat16/float16 where a backend has them, accumulating in
 * float32); lse is float64 for float64 inputs, else float32.
 *   s_ij = scale <q_i, k_j> + mask_ij,  with s_ij = -inf where causal and j > i
 *   lse_i = log sum_j exp s_ij,  P_ij = exp(s_ij - lse_i)
 *   out_i = sum_j P_ij keep_ij / (1 - dropout_p) v_j
 * mask: NULL or an additive float mask of q's dtype (float32 for low
 * precision) viewed as [B, Tq, Tk], any strides (0 where broadcast; the
 * engine turns boolean masks into 0 / -inf). A row whose scores are all
 * -inf gives NaN outputs and lse -inf, as softmax does.
 * Dropout: keep_ij is u < 1 - dropout_p, u the uniform number of row-major
 * position n = (b Tq + i) Tk + j drawn as backend.h's random family draws
 * element n (Philox counter offset + n/4, lane n%4, key seed).
 * Kernels must never hold a Tq x Tk matrix: memory O((Tq + Tk) D) per
 * problem beyond the inputs and outputs (tiles of keys, online softmax).
 * The backward recomputes P from lse:
 *   dV = P_drop^T dO,  dP = (dO V^T) keep/(1-p),  D_i = <dO_i, out_i>,
 *   dS = P (dP - D),  dQ = scale dS K,  dK = scale dS^T Q
 * (P_drop = P keep/(1-p)); gq, gk, gv may each be NULL (not wanted). */
typedef struct em_attn_params {
    double scale;
    bool causal;
    double dropout_p;                           /* 0: no dropout */
    uint64_t seed, offset;                      /* the dropout mask's Philox counter */
    const uint64_t *dev_state;                  /* NULL, or as the random family's */
} em_attn_params;

/* ---- linear algebra: factorisations and solves (LAPACK / cuSOLVER) --------
 * On a batch of matrices stored column-major, as LAPACK and cuSOLVER take
 * them: a tensor [B, R, C] with strides [R*C, 1, R] (the engine makes such
 * copies: the transpose of a contiguous [B, C, R]). All float tensors share
 * one dtype (float32 or float64). a (and b for SOLVE) are overwritten.
 * info[B] (host memory) gets LAPACK's info per matrix (0: success); the
 * engine turns it into the user's error. Kernels fail (-1) only for their own
 * trouble (workspace, library), never for a singular or indefinite input.
 *  LU:       a [B,n,n] -> L\U of P A = L U; b: pivots int32 [B,n] (LAPACK's
 *            1-based ipiv); info > 0: U(info, info) is zero.
 *  SOLVE:    a [B,n,n] -> L\U; b [B,n,k] -> X with A X = B; info as LU.
 *  CHOLESKY: a [B,n,n] -> L in its lower triangle (A = L L^T, from A's lower
 *            triangle; the strict upper triangle is left undefined); info > 0:
 *            the leading minor of that order is not positive definite.
 *  QR:       a [B,m,n] -> R in its upper triangle (reflectors below);
 *            b [B,m,kq] (kq = min(m,n), or m when p->full) -> Q; b NULL: R only.
 *  SVD:      a [B,m,n] (destroyed); b: S [B,k] descending, k = min(m,n);
 *            c: U [B,m,k] (p->full: [B,m,m]), d: Vh [B,k,n] (p->full: [B,n,n]);
 *            c and d NULL: values only. info > 0: no convergence.
 *  EIGH:     a [B,n,n] symmetric, only the triangle p->upper names is read ->
 *            the eigenvectors in its columns (p->vectors; else destroyed);
 *            b: eigenvalues [B,n] ascending. info > 0: no convergence. */
typedef enum em_linalg_op {
    EM_LINALG_LU, EM_LINALG_SOLVE, EM_LINALG_CHOLESKY, EM_LINALG_QR, EM_LINALG_SVD,
    EM_LINALG_EIGH, EM_NLINALG
} em_linalg_op;

typedef struct em_linalg_params {
    bool full;          /* QR: complete Q; SVD: full_matrices */
    bool upper;         /* EIGH: read the upper triangle */
    bool vectors;       /* EIGH: compute eigenvectors */
} em_linalg_params;

/* ---- fused linear layers (cuBLASLt's epilogues) -------------------------------
 * out [M, N] = epilogue(a [M, K] @ b [K, N]) on 2-D operands of one float dtype
 * (float32, float64; float16/bfloat16 accumulate in float32 and are rounded
 * once, at the end). a and b may be any views with a unit stride in one dim
 * (b is typically w^T, the transposed view of a row-major weight [N, K]);
 * out, aux and bias are contiguous and of that dtype.
 *  PLAIN: out = a @ b (+ bias[n] on every row when bias is not NULL)
 *  GELU:  pre = a @ b (+ bias[n]); out = gelu_tanh(pre); aux [M, N] = pre
 *         when aux is not NULL (the backward's input, rounded to the dtype)
 *  DGELU: elementwise, b NULL: out = a * gelu_tanh'(aux), a and aux [M, N]
 *         (GELU's backward: the gradient of the pre-activation)
 *  BGRAD: out = a @ b; bias [M] is an output: bias[m] = sum_k a[m, k]
 *         (cuBLASLt's BGRADB: the bias gradient of a linear layer comes out
 *         of its weight-gradient GEMM gW = dY^T @ X, a = dY^T)
 * gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the form
 * cuBLASLt's GELU epilogue computes. M, N, K < 2^31; K may be 0. */
typedef enum em_linear_op { EM_LINEAR_PLAIN, EM_LINEAR_GELU, EM_LINEAR_DGELU, EM_LINEAR_BGRAD, EM_NLINEAR } em_linear_op;

typedef struct em_backend {
    const char *name;
    em_device_type type;

    /* memory */
    /* alloc: NULL + error on failure. free gets back the size given to alloc,
     * so a backend may keep freed blocks in size bins for reuse (the CPU
     * backend does for large blocks; empty_cache returns them to the system). */
    void *(*alloc)(size_t nbytes, int device_index);
    void (*free)(void *ptr, size_t nbytes, int device_index);
    void (*empty_cache)(int device_index);
    /* bytes between host and this device (either direction) */
    int (*memcpy_h2d)(void *dst, const void *src, size_t n, int device_index);
    int (*memcpy_d2h)(void *dst, const void *src, size_t n, int device_index);
    int (*synchronize)(int device_index);
    /* page-locked host memory (the CUDA backend's; NULL on the CPU): a CPU
     * tensor's storage there goes to and from the device by DMA, without the
     * driver's staging copy (em_pin_memory). host_alloc: NULL + error. */
    void *(*host_alloc)(size_t nbytes);
    void (*host_free)(void *ptr, size_t nbytes);

    /* fill and random: out[i] = value / random numbers. For random ops the
     * element at row-major position i draws from Philox counter
     * (offset + i/4, lane i%4) with key `seed`, on every backend.
     * dev_state (only during a CUDA graph capture; NULL otherwise, and the
     * CPU backend never gets one): device words {seed, base} read when the
     * kernel runs, which then uses key dev_state[0] and offset
     * dev_state[1] + offset, so that each replay draws new numbers (the
     * replay writes the generator's state there, see graph_replay). */
    int (*fill)(em_tensor *out, double value);
    int (*arange)(em_tensor *out, double start, double step);     /* out[i] = start + i*step */
    int (*random)(em_random_op op, em_tensor *out, uint64_t seed, uint64_t offset,
                  const uint64_t *dev_state, double a, double b);

    /* strided copy with dtype conversion: dst = (dst.dtype) src */
    int (*cast)(em_tensor *dst, const em_tensor *src);

    /* elementwise */
    int (*unary)(em_unary_op op, em_tensor *out, const em_tensor *a);
    int (*binary)(em_binary_op op, em_tensor *out, const em_tensor *a, const em_tensor *b);
    /* s is a scalar parameter (addcmul/addcdiv). For WHERE, a is bool and
     * b, c, out share the compute dtype. */
    int (*ternary)(em_ternary_op op, em_tensor *out, const em_tensor *a,
                   const em_tensor *b, const em_tensor *c, double s);
    /* out = clamp(a, lo, hi); has_lo/has_hi say which bounds apply */
    int (*clamp)(em_tensor *out, const em_tensor *a, double lo, double hi,
                 bool has_lo, bool has_hi);

    /* Reductions. `in` has been permuted so the reduced dims are its last
     * `nreduce` dims; `out` has in->ndim - nreduce dims equal to the leading
     * dims of `in`. For EM_RMAX/EM_RMIN `idx` may be non-NULL (int64, same
     * shape as out): it receives the 1-based position within the reduced
     * (flattened) dims of the first extreme value. NaN propagates in max/min.
     * out's dtype is the result dtype and may differ from in's: int64 (or a
     * requested dtype) for sums/products of integer and bool inputs, bool for
     * all/any, in's dtype for max/min; kernels convert while loading.
     * Float sums accumulate in double (the CPU uses 8 accumulators per block
     * of 1024 elements). */
    int (*reduce)(em_reduce_op op, em_tensor *out, em_tensor *idx,
                  const em_tensor *in, int nreduce);
    /* inclusive scan along dim (0-based); out has in's shape and dtype */
    int (*scan)(em_scan_op op, em_tensor *out, const em_tensor *in, int dim);
    /* softmax family along dim; out has in's shape and dtype (float) */
    int (*softmax)(em_softmax_op op, em_tensor *out, const em_tensor *in, int dim);

    /* Fused cross-entropy over the rows of x [M, C] (float32 or float64, any
     * strides) with 1-based class targets t [M] (int64), optional class
     * weights w [C] (x's dtype, NULL: all 1), and label smoothing eps:
     *   loss[i] = -sum_j q_ij (x_ij - lse_i),
     *   q_ij = (1-eps) w[t_i] [j == t_i] + eps/C w_j,   lse_i = log sum_j exp x_ij,
     * rows whose target is ignore_index give loss 0 and roww 0, others roww
     * w[t_i] (the weight the mean divides by). loss, lse and roww are [M] in
     * x's dtype. A target outside 1..C (and not ignore_index): -1 with an error
     * naming it. The backward writes gx [M, C] (contiguous) =
     *   g_i (Q_i softmax(x)_ij - q_ij),   Q_i = sum_j q_ij,
     * from the forward's lse, for rows not ignored (0 for the others). */
    int (*cross_entropy)(em_tensor *loss, em_tensor *lse, em_tensor *roww, const em_tensor *x,
                         const em_tensor *t, const em_tensor *w, int64_t ignore_index, double eps);
    int (*cross_entropy_backward)(em_tensor *gx, const em_tensor *g, const em_tensor *x,
                                  const em_tensor *lse, const em_tensor *t, const em_tensor *w,
                                  int64_t ignore_index, double eps);

    /* index family along dim (0-based). Shapes follow PyTorch:
     *  INDEX_SELECT: idx 1-D, out = in with size[dim] = idx numel.
     *  GATHER: idx same ndim as in, out shape = idx shape.
     *  SCATTER / SCATTER_ADD / SCATTER_MUL / SCATTER_AMAX / SCATTER_AMIN: out
     *  updated in place at idx positions with src (the reductions of scatter_reduce).
     *  INDEX_ADD: out updated in place along dim at the idx (1-D) slots with src.
     * Out-of-range indices: return -1 with an error naming the index. */
    int (*index)(em_index_op op, em_tensor *out, const em_tensor *in, int dim,
                 const em_tensor *idx);
    /* writes the 1-based coordinates of non-zero elements of in, row-major,
     * into out [count, in->ndim] (count computed by the engine) */
    int (*nonzero)(em_tensor *out, const em_tensor *in);
    /* sort along dim; values same dtype as in, indices int64 1-based */
    int (*sort)(em_tensor *values, em_tensor *indices, const em_tensor *in,
                int dim, bool descending, bool stable);

    /* Batched GEMM: out[b] = alpha * a[b] @ b[b] + beta * out[b] for 3-D
     * tensors a [B,M,K], b [B,K,N], out [B,M,N] of one float dtype, any strides
     * (stride 0 on the batch dim for broadcast operands). */
    int (*gemm)(em_tensor *out, const em_tensor *a, const em_tensor *b,
                double alpha, double beta);

    /* convolution family: see em_conv_params above */
    int (*conv)(em_conv_op op, em_tensor *out, const em_tensor *a, const em_tensor *b,
                const em_conv_params *p);
    /* pooling: out [N,C,O...] (and idx for MAX, may be NULL for AVG) from in;
     * pool_backward (AVG only) writes gin [N,C,I...] from gout [N,C,O...] */
    int (*pool)(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in,
                const em_pool_params *p);
    int (*pool_backward)(em_pool_op op, em_tensor *gin, const em_tensor *gout,
                         const em_pool_params *p);
    /* normalisation: norm writes y [N,C,S], mean and var (biased) of x;
     * norm_backward writes gx (and gw, gb [C] where non-NULL) from gy, x, the
     * forward's mean and rstd = rsqrt(var + eps), and w (NULL: 1):
     *   xhat = (x - mean) rstd,  gw = sum gy xhat,  gb = sum gy (over N, S),
     *   gx = rstd (gy w - mean_set(gy w) - xhat mean_set(gy w xhat)). */
    int (*norm)(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x,
                const em_tensor *w, const em_tensor *b, const em_norm_params *p);
    int (*norm_backward)(em_norm_op op, em_tensor *gx, em_tensor *gw, em_tensor *gb,
                         const em_tensor *gy, const em_tensor *x, const em_tensor *mean,
                         const em_tensor *rstd, const em_tensor *w, const em_norm_params *p);

    /* attention: see em_attn_params above */
    int (*attention)(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k,
                     const em_tensor *v, const em_tensor *mask, const em_attn_params *p);
    int (*attention_backward)(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout,
                              const em_tensor *q, const em_tensor *k, const em_tensor *v,
                              const em_tensor *out, const em_tensor *lse, const em_tensor *mask,
                              const em_attn_params *p);

    /* Fused optimizer step, in place on p and the state tensors (s1, s2 may
     * be NULL where the op has none). All tensors share p's shape and dtype
     * (float32 or float64) and are contiguous. */
    int (*optim)(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1,
                 em_tensor *s2, const em_optim_hyper *h);
    /* the multi-tensor ops: see em_multi_op above (a, b NULL where unused) */
    int (*optim_multi)(em_multi_op op, const em_tensor_lists *l, em_tensor *a, em_tensor *b,
                       const em_optim_hyper *h);

    /* linear algebra: see em_linalg_op above (b, c, d per op, else NULL) */
    int (*linalg)(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d,
                  const em_linalg_params *p, int *info);

    /* fused linear layer: see em_linear_op above. gemm_half: gemm also takes
     * float16/bfloat16 operands (float32 accumulation); otherwise the engine
     * runs half GEMMs in float32 and casts back. */
    int (*linear)(em_linear_op op, em_tensor *out, em_tensor *aux, const em_tensor *a, const em_tensor *b,
                  em_tensor *bias);
    bool gemm_half;
    /* elementwise_half: `unary` and `binary` take float16/bfloat16
     * operands of one half dtype (computed in float32, rounded once into the
     * half output; a binary operand may instead be float32, a Lua number's);
     * otherwise the engine casts them to float32 and the result back. */
    bool elementwise_half;

    /* Devices, statistics and timing: optional (NULL on the CPU backend). */
    int (*device_count)(void);
    int (*device_name)(int device_index, char *buf, size_t n);
    int (*memory_stats)(int device_index, em_memory_stats *out);
    int (*reset_peak_stats)(int device_index);
    /* free and total bytes of the device (ember.cuda.mem_get_info), and its
     * PCI bus id, by which engine/nvml.c finds it among NVML's devices */
    int (*mem_get_info)(int device_index, size_t *free_bytes, size_t *total_bytes);
    int (*pci_bus_id)(int device_index, char *buf, size_t n);
    /* the device's compute stream (a cudaStream_t, set up on first use),
     * which the NCCL backend orders its own stream after; NULL + error */
    void *(*stream)(int device_index);
    void (*set_flag)(em_backend_flag flag, int value);
    /* events on the device's stream; elapsed milliseconds between two */
    void *(*event_create)(int device_index);
    int (*event_record)(void *ev);
    int (*event_synchronize)(void *ev);
    int (*event_elapsed_ms)(void *start, void *end, float *ms);
    void (*event_destroy)(void *ev);
    /* NVTX ranges around ops while ember.profiler records, so Nsight Systems
     * shows them on the host's timeline; nothing happens unless a tool
     * (nsys, ncu) injected itself through NVTX_INJECTION64_PATH. Optional. */
    void (*range_push)(const char *name);
    void (*range_pop)(void);
    /* CUDA graphs (optional; NULL on the CPU backend). A capture records the
     * device stream's work (thread-local capture mode) into a graph that
     * replays with one launch. While it runs, the device's allocations come
     * from a private pool, and blocks freed then stay owned by that pool
     * (replays write them) until every graph holding the pool is destroyed;
     * its memory then returns to the device's cache. Pools are reference
     * counted: graph_pool gives a new reference (to `share` when non-NULL,
     * else to a new pool); graph_begin takes its own. graph_end instantiates;
     * on failure the capture is discarded (-1 + error). graph_refuse ends and
     * discards the device's capture and sets the error `why` (+ a note):
     * the engine calls it where an op would synchronise during a capture.
     * graph_rng_state: the graph's device words {seed, base} that its random
     * kernels read (their dev_state); graph_replay writes rng_state[0..1]
     * (host values) there on the stream before the launch, or nothing when
     * rng_state is NULL (a graph that draws no random numbers). */
    void *(*graph_pool)(int device_index, void *share);
    void (*graph_pool_release)(void *pool);
    void *(*graph_begin)(int device_index, void *pool);
    int (*graph_end)(void *graph);
    int (*graph_replay)(void *graph, const uint64_t *rng_state);
    const uint64_t *(*graph_rng_state)(void *graph);
    void (*graph_destroy)(void *graph);
    bool (*graph_capturing)(int device_index);
    int (*graph_refuse)(int device_index, const char *why);
} em_backend;

extern const em_backend em_cpu_backend;

/* What the engine hands a backend it loads at run time: the shared object
 * cannot see the engine's symbols (a Lua module is opened RTLD_LOCAL), so
 * the few engine services a backend needs come through this table. */
typedef struct em_host_api {
    int (*set_error)(const char *fmt, ...);     /* em_set_error: returns -1 */
    bool (*interrupted)(void);                  /* em_interrupt_requested: Ctrl-C */
    void (*hold_if_ending)(void);               /* em_hold_if_ending: after each wait for the GPU */
} em_host_api;

/* libember_cuda.so exports `em_cuda_backend_init` of this type. It returns
 * the backend, or NULL with the reason (no driver, no device, ...) in why. */
typedef const em_backend *(*em_backend_init_fn)(const em_host_api *host, char *why, size_t nwhy);

#endif
