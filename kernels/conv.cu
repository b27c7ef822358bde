/* conv.cu — the convolution family (backend.h em_conv_op) through cuDNN's
 * legacy API (cudnn_cnn.h: deprecated in cuDNN 9 but shipped and covered by
 * its forward compatibility; the graph API would be ~400 lines for the same).
 *
 * Layout: contiguous NCHW / NCDHW tensors (the engine guarantees contiguity);
 * a 1-D conv is a 2-D one with a height of 1, since cuDNN wants 4-D at least.
 * float32 may use TF32 tensor cores (CUDNN_DEFAULT_MATH), as PyTorch's
 * default torch.backends.cudnn.allow_tf32 = True; set to false, FMA
 * arithmetic (CUDNN_FMA_MATH). float64 is exact-ish double arithmetic
 * (cuDNN's double algorithms use no tensor cores). Under
 * ember.backends.cudnn.deterministic or use_deterministic_algorithms only
 * the algorithms cuDNN reports deterministic are kept (the backward passes'
 * ALGO_0 add with atomics); none fitting is an error, as in PyTorch.
 *
 * The algorithm of each (op, device, dtype, shapes, params) is chosen once
 * with the heuristics (Get*Algorithm_v7, what PyTorch does without
 * cudnn.benchmark) and cached with its descriptors, so a training step after
 * the first costs one hash look-up per conv. If the chosen algorithm then
 * turns out unsupported, or its workspace cannot be had, the next one in the
 * heuristics' ranking is tried and remembered.
 *
 * cuDNN takes int sizes: a batch whose tensors exceed 2^31 - 1 elements is
 * run in chunks of samples (backward-weight chunks accumulate with beta = 1),
 * as PyTorch does.
 *
 * The bias fused into a call (em_conv_params.bias) is two small kernels of
 * this file run after cuDNN's: an add over y, and a sum of gy per channel
 * (one block each, in a fixed order: the same bits on every run). */
#include "elementwise.cuh"
#include "kc.h"

#include <cudnn.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <unordered_map>

#define MAX_DEVICES 64
#define MAX_ALGOS 8
#define CACHE_LIMIT 4096        /* entries; the whole cache is dropped past it */

static cudnnHandle_t handles[MAX_DEVICES];

static const char *op_word(em_conv_op op)
{
    return op == EM_CONV_FORWARD ? "forward" : op == EM_CONV_BACKWARD_DATA ? "backward (input)" : "backward (weight)";
}

static cudnnHandle_t handle_of(int device, cudaStream_t s, const char *name)
{
    if (device < 0 || device >= MAX_DEVICES) {
        kc_error("%s: cuda:%d: no such device", name, device);
        return NULL;
    }
    if (!handles[device]) {
        cudnnStatus_t st = cudnnCreate(&handles[device]);
        if (st != CUDNN_STATUS_SUCCESS) {
            kc_error("%s: cuDNN could not start: %s", name, cudnnGetErrorString(st));
            handles[device] = NULL;
            return NULL;
        }
    }
    cudnnStatus_t st = cudnnSetStream(handles[device], s);
    if (st != CUDNN_STATUS_SUCCESS) {
        kc_error("%s: cuDNN could not use ember's stream: %s", name, cudnnGetErrorString(st));
        return NULL;
    }
    return handles[device];
}

/* ---- the problem, as cuDNN sees it -------------------------------------------------
 * Everything is expressed with x [N, C, I...], w [K, C/g, k...], y [N, K, O...]
 * whichever op runs; nd is the number of cuDNN tensor dims (4 or 5). */
typedef struct conv_problem {
    int op, device, dtype, nd, groups;
    int policy;                 /* POLICY_* bits: the settings the plan was chosen under */
    int x[5], w[5], y[5];
    int pad[3], stride[3], dil[3];
} conv_problem;

struct conv_problem_hash {
    size_t operator()(const conv_problem &p) const
    {
        const unsigned char *b = (const unsigned char *)&p;
        uint64_t h = 1469598103934665603ull;        /* FNV-1a */
        for (size_t i = 0; i < sizeof p; i++) h = (h ^ b[i]) * 1099511628211ull;
        return (size_t)h;
    }
};
struct conv_problem_eq {
    bool operator()(const conv_problem &a, const conv_problem &b) const { return memcmp(&a, &b, sizeof a) == 0; }
};

/* ember.backends.cudnn.allow_tf32 (float32 only), deterministic algorithms
 * (cudnn.deterministic or use_deterministic_algorithms) */
#define POLICY_NO_TF32 1
#define POLICY_DETERMINISTIC 2

typedef struct algo_choice {
    int algo;                   /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
    cudnnMathType_t math;
    size_t workspace;
} algo_choice;

typedef struct conv_plan {
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    algo_choice algos[MAX_ALGOS];
    int nalgos, current;
} conv_plan;

static std::unordered_map<conv_problem, conv_plan *, conv_problem_hash, conv_problem_eq> *plans;

static void destroy_plan(conv_plan *p)
{
    if (p->xd) cudnnDestroyTensorDescriptor(p->xd);
    if (p->yd) cudnnDestroyTensorDescriptor(p->yd);
    if (p->wd) cudnnDestroyFilterDescriptor(p->wd);
    if (p->cd) cudnnDestroyConvolutionDescriptor(p->cd);
    delete p;
}

static void contiguous_strides(const int *dims, int nd, int *strides)
{
    int s = 1;
    for (int i = nd - 1; i >= 0; i--) { strides[i] = s; s *= dims[i]; }
}

/* The shapes as "[2,3,8,8]" for error messages (the engine's sizes). */
static void shape_str(const em_tensor *t, char *buf, size_t n)
{
    size_t k = 0;
    k += snprintf(buf + k, n - k, "[");
    for (int i = 0; i < t->ndim && k < n; i++)
        k += snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->sizes[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

typedef struct conv_call {
    em_conv_op op;
    const char *name;           /* conv1d, conv2d, conv3d */
    const em_tensor *out, *a, *b;
    const em_conv_params *p;
} conv_call;

static int cudnn_error(const conv_call *c, const char *what, cudnnStatus_t st)
{
    char so[96], sa[96], sb[96];
    shape_str(c->out, so, sizeof so);
    shape_str(c->a, sa, sizeof sa);
    shape_str(c->b, sb, sizeof sb);
    const em_conv_params *p = c->p;
    char params[160];
    size_t k = 0;
    const char *names[3] = {"stride", "padding", "dilation"};
    const int64_t *vals[3] = {p->stride, p->padding, p->dilation};
    for (int j = 0; j < 3; j++) {
        k += snprintf(params + k, sizeof params - k, "%s%s=(", j ? ", " : "", names[j]);
        for (int i = 0; i < p->nspatial && k < sizeof params; i++)
            k += snprintf(params + k, sizeof params - k, "%s%lld", i ? "," : "", (long long)vals[j][i]);
        if (k < sizeof params) k += snprintf(params + k, sizeof params - k, ")");
        if (k >= sizeof params) break;
    }
    const char *an = c->op == EM_CONV_FORWARD ? "input" : c->op == EM_CONV_BACKWARD_DATA ? "grad_output" : "input";
    const char *bn = c->op == EM_CONV_FORWARD ? "weight" : c->op == EM_CONV_BACKWARD_DATA ? "weight" : "grad_output";
    return kc_error("%s %s: cuDNN %s failed for %s %s, %s %s -> %s (%s, groups=%lld, %s): %s", c->name,
                    op_word(c->op), what, an, sa, bn, sb, so, params, (long long)p->groups,
                    kc_dtype_name(c->out->dtype), cudnnGetErrorString(st));
}

/* Appends to pl's list, in their order, the n heuristic results that cuDNN
 * supports (a perf struct of any of the three directions) and the policy
 * allows: deterministic ones only under POLICY_DETERMINISTIC (cuDNN marks
 * the algorithms that add with atomics), FMA arithmetic under POLICY_NO_TF32. */
template <typename Perf> static void keep_supported(const Perf *perf, int n, int policy, conv_plan *pl)
{
    for (int i = 0; i < n; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        if ((policy & POLICY_DETERMINISTIC) && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
        cudnnMathType_t math = (policy & POLICY_NO_TF32) ? CUDNN_FMA_MATH : perf[i].mathType;
        pl->algos[pl->nalgos++] = algo_choice{(int)perf[i].algo, math, perf[i].memory};
    }
}

/* Asks the heuristics for a ranked list of algorithms with their workspace. */
static cudnnStatus_t rank_algos(cudnnHandle_t h, em_conv_op op, int policy, conv_plan *pl)
{
    int n = 0;
    cudnnStatus_t st;
    pl->nalgos = 0;
    if (op == EM_CONV_FORWARD) {
        cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
        st = cudnnGetConvolutionForwardAlgorithm_v7(h, pl->xd, pl->wd, pl->cd, pl->yd, MAX_ALGOS, &n, perf);
        if (st != CUDNN_STATUS_SUCCESS) return st;
        keep_supported(perf, n, policy, pl);
    } else if (op == EM_CONV_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
        st = cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pl->wd, pl->yd, pl->cd, pl->xd, MAX_ALGOS, &n, perf);
        if (st != CUDNN_STATUS_SUCCESS) return st;
        keep_supported(perf, n, policy, pl);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
        st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, pl->xd, pl->yd, pl->cd, pl->wd, MAX_ALGOS, &n, perf);
        if (st != CUDNN_STATUS_SUCCESS) return st;
        keep_supported(perf, n, policy, pl);
    }
    /* the heuristics' memory figure is an estimate: ask for the exact size */
    for (int i = 0; i < pl->nalgos; i++) {
        size_t ws = 0;
        algo_choice *a = &pl->algos[i];
        cudnnSetConvolutionMathType(pl->cd, a->math);
        if (op == EM_CONV_FORWARD)
            st = cudnnGetConvolutionForwardWorkspaceSize(h, pl->xd, pl->wd, pl->cd, pl->yd,
                                                         (cudnnConvolutionFwdAlgo_t)a->algo, &ws);
        else if (op == EM_CONV_BACKWARD_DATA)
            st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, pl->wd, pl->yd, pl->cd, pl->xd,
                                                              (cudnnConvolutionBwdDataAlgo_t)a->algo, &ws);
        else
            st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, pl->xd, pl->yd, pl->cd, pl->wd,
                                                                (cudnnConvolutionBwdFilterAlgo_t)a->algo, &ws);
        if (st == CUDNN_STATUS_SUCCESS) a->workspace = ws;
    }
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t build_plan(cudnnHandle_t h, const conv_problem *pr, conv_plan *pl)
{
    /* float16 and bfloat16 tensors with float32 arithmetic (cuDNN's
     * "pseudo half" configuration): products accumulate in float32 and the
     * result is rounded to the storage type once */
    cudnnDataType_t dt = pr->dtype == EM_FLOAT64   ? CUDNN_DATA_DOUBLE
                         : pr->dtype == EM_FLOAT16  ? CUDNN_DATA_HALF
                         : pr->dtype == EM_BFLOAT16 ? CUDNN_DATA_BFLOAT16
                                                    : CUDNN_DATA_FLOAT;
    cudnnDataType_t compute = pr->dtype == EM_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int xs[5], ys[5];
    contiguous_strides(pr->x, pr->nd, xs);
    contiguous_strides(pr->y, pr->nd, ys);
    cudnnStatus_t st;
    if ((st = cudnnCreateTensorDescriptor(&pl->xd)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnCreateTensorDescriptor(&pl->yd)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnCreateFilterDescriptor(&pl->wd)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnCreateConvolutionDescriptor(&pl->cd)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnSetTensorNdDescriptor(pl->xd, dt, pr->nd, pr->x, xs)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnSetTensorNdDescriptor(pl->yd, dt, pr->nd, pr->y, ys)) != CUDNN_STATUS_SUCCESS) return st;
    if ((st = cudnnSetFilterNdDescriptor(pl->wd, dt, CUDNN_TENSOR_NCHW, pr->nd, pr->w)) != CUDNN_STATUS_SUCCESS)
        return st;
    if ((st = cudnnSetConvolutionNdDescriptor(pl->cd, pr->nd - 2, pr->pad, pr->stride, pr->dil,
                                              CUDNN_CROSS_CORRELATION, compute)) != CUDNN_STATUS_SUCCESS)
        return st;
    if ((st = cudnnSetConvolutionGroupCount(pl->cd, pr->groups)) != CUDNN_STATUS_SUCCESS) return st;
    /* float32 without TF32: FMA arithmetic, so the heuristics rank those */
    cudnnMathType_t math = (pr->policy & POLICY_NO_TF32) ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    if ((st = cudnnSetConvolutionMathType(pl->cd, math)) != CUDNN_STATUS_SUCCESS) return st;
    return rank_algos(h, (em_conv_op)pr->op, pr->policy, pl);
}

static conv_plan *plan_of(cudnnHandle_t h, const conv_problem *pr, const conv_call *c)
{
    if (!plans) plans = new std::unordered_map<conv_problem, conv_plan *, conv_problem_hash, conv_problem_eq>();
    auto it = plans->find(*pr);
    if (it != plans->end()) return it->second;
    if (plans->size() >= CACHE_LIMIT) {
        for (auto &kv : *plans) destroy_plan(kv.second);
        plans->clear();
    }
    conv_plan *pl = new conv_plan();
    memset(pl, 0, sizeof *pl);
    cudnnStatus_t st = build_plan(h, pr, pl);
    if (st != CUDNN_STATUS_SUCCESS) {
        destroy_plan(pl);
        cudnn_error(c, "set-up", st);
        return NULL;
    }
    if (pl->nalgos == 0) {
        destroy_plan(pl);
        cudnn_error(c, (pr->policy & POLICY_DETERMINISTIC) ? "deterministic algorithm choice (ember.backends.cudnn."
                                                             "deterministic or use_deterministic_algorithms)"
                                                           : "algorithm choice",
                    CUDNN_STATUS_NOT_SUPPORTED);
        return NULL;
    }
    (*plans)[*pr] = pl;
    return pl;
}

static cudnnStatus_t execute(cudnnHandle_t h, em_conv_op op, conv_plan *pl, const algo_choice *a, void *out,
                             const void *pa, const void *pb, void *ws, bool accumulate, bool f64)
{
    double one64 = 1, acc64 = accumulate ? 1 : 0;
    float one32 = 1, acc32 = accumulate ? 1 : 0;
    const void *alpha = f64 ? (const void *)&one64 : (const void *)&one32;
    const void *beta = f64 ? (const void *)&acc64 : (const void *)&acc32;
    cudnnStatus_t st = cudnnSetConvolutionMathType(pl->cd, a->math);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (op == EM_CONV_FORWARD)
        return cudnnConvolutionForward(h, alpha, pl->xd, pa, pl->wd, pb, pl->cd, (cudnnConvolutionFwdAlgo_t)a->algo,
                                       ws, a->workspace, beta, pl->yd, out);
    if (op == EM_CONV_BACKWARD_DATA)
        return cudnnConvolutionBackwardData(h, alpha, pl->wd, pb, pl->yd, pa, pl->cd,
                                            (cudnnConvolutionBwdDataAlgo_t)a->algo, ws, a->workspace, beta, pl->xd,
                                            out);
    return cudnnConvolutionBackwardFilter(h, alpha, pl->xd, pa, pl->yd, pb, pl->cd,
                                          (cudnnConvolutionBwdFilterAlgo_t)a->algo, ws, a->workspace, beta, pl->wd,
                                          out);
}

/* Runs one chunk with the plan's current algorithm, moving down the ranking
 * when an algorithm is refused or its workspace cannot be allocated. */
static int run_plan(cudnnHandle_t h, conv_plan *pl, const conv_call *c, int device, void *out, const void *pa,
                    const void *pb, bool accumulate)
{
    bool f64 = c->out->dtype == EM_FLOAT64;
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    bool oom = false;
    for (int i = pl->current; i < pl->nalgos; i++) {
        const algo_choice *a = &pl->algos[i];
        void *ws = NULL;
        if (a->workspace) {
            ws = kc_alloc(a->workspace, device);
            if (!ws) { oom = true; continue; }      /* a leaner algorithm may fit */
        }
        cudnnStatus_t st = execute(h, c->op, pl, a, out, pa, pb, ws, accumulate, f64);
        if (ws) kc_free(ws, a->workspace, device);  /* safe: later users queue behind this call */
        if (st == CUDNN_STATUS_SUCCESS) {
            pl->current = i;
            return 0;
        }
        last = st;
        if (st != CUDNN_STATUS_NOT_SUPPORTED && st != CUDNN_STATUS_BAD_PARAM) break;
    }
    if (oom && last == CUDNN_STATUS_NOT_SUPPORTED)
        return kc_error("%s %s: no cuDNN algorithm's workspace fits in the free GPU memory", c->name, op_word(c->op));
    return cudnn_error(c, "call", last);
}

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* ---- the bias -------------------------------------------------------------------------- */

namespace {

template <int D> __device__ inline double bias_load(typename ew_dt<D>::S v) { return ew_load_f64<D>(v); }

template <int D> __device__ inline typename ew_dt<D>::S bias_store(double v)
{
    if constexpr (D == EM_FLOAT16) return emf_float_to_half((float)v);
    else if constexpr (D == EM_BFLOAT16) return emf_float_to_bf16((float)v);
    else return (typename ew_dt<D>::S)v;
}

/* y[n, k, s] += b[k]: y holds n elements, planes of S */
template <int D> __global__ void bias_add_kernel(typename ew_dt<D>::S *y, const typename ew_dt<D>::S *b, int64_t K,
                                                 int64_t S, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        if constexpr (D == EM_FLOAT64) y[i] += b[i / S % K];
        else y[i] = bias_store<D>((float)bias_load<D>(y[i]) + (float)bias_load<D>(b[i / S % K]));
    }
}

/* gb[k] = the sum of gy[n, k, s] over n and s, block k: each thread sums a
 * strided share in double, then a tree in shared memory */
template <int D> __global__ void bias_grad_kernel(typename ew_dt<D>::S *gb, const typename ew_dt<D>::S *gy, int64_t N,
                                                  int64_t K, int64_t S)
{
    KC_SHARED(double, part, [KC_THREADS]);
    int64_t k = blockIdx.x;
    double acc = 0;
    for (int64_t i = threadIdx.x; i < N * S; i += blockDim.x) acc += bias_load<D>(gy[(i / S * K + k) * S + i % S]);
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int w = KC_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) gb[k] = bias_store<D>(part[0]);
}

struct conv_bias_run {
    template <int D> static void run(int dev, cudaStream_t s, em_conv_op op, const em_tensor *y, em_tensor *bias)
    {
        typedef typename ew_dt<D>::S T;
        int64_t N = y->sizes[0], K = y->sizes[1], n = emf_numel(y), S = n / (N * K);
        if (op == EM_CONV_FORWARD)
            KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, bias_add_kernel<D>)((T *)kc_ptr(y), (const T *)kc_ptr(bias),
                                                                          K, S, n);
        else
            KC_LAUNCH(dim3((unsigned)K), KC_THREADS, 0, s, bias_grad_kernel<D>)((T *)kc_ptr(bias),
                                                                             (const T *)kc_ptr(y), N, K, S);
    }
};

}  // namespace

/* Whether bias fits op on y (forward: y; backward weight: gy); the error set if not */
static bool bias_fits(em_conv_op op, const em_tensor *y, const em_tensor *bias, const char *name)
{
    if (op == EM_CONV_BACKWARD_DATA) return kc_error("%s backward (input): takes no bias", name), false;
    if (bias->dtype != y->dtype || bias->ndim != 1 || bias->sizes[0] != y->sizes[1] || !emf_is_contiguous(bias))
        return kc_error("%s %s: the bias must be a contiguous [%lld] of %s", name, op_word(op),
                        (long long)y->sizes[1], kc_dtype_name(y->dtype)), false;
    if (y->sizes[1] > INT_MAX) return kc_error("%s: over 2^31 - 1 channels", name), false;
    return true;
}

/* The bias part of op on y, after the convolution (bias_fits checked; no
 * empty operand reaches here: backend.h) */
static int conv_bias(int dev, cudaStream_t s, em_conv_op op, const em_tensor *y, em_tensor *bias, const char *name)
{
    switch (y->dtype) {
    case EM_FLOAT32: conv_bias_run::run<EM_FLOAT32>(dev, s, op, y, bias); break;
    case EM_FLOAT64: conv_bias_run::run<EM_FLOAT64>(dev, s, op, y, bias); break;
    case EM_FLOAT16: conv_bias_run::run<EM_FLOAT16>(dev, s, op, y, bias); break;
    case EM_BFLOAT16: conv_bias_run::run<EM_BFLOAT16>(dev, s, op, y, bias); break;
    default: return kc_error("%s: no bias kernel for %s", name, kc_dtype_name(y->dtype));
    }
    return 0;
}

int kc_conv(em_conv_op op, em_tensor *out, const em_tensor *a, const em_tensor *b, const em_conv_params *p)
{
    static const char *const names[4] = {"conv", "conv1d", "conv2d", "conv3d"};
    int ns = p->nspatial;
    const char *name = names[ns >= 1 && ns <= 3 ? ns : 0];
    if (ns < 1 || ns > 3) return kc_error("conv: %d spatial dims (1 to 3 supported)", ns);
    if (op < 0 || op >= EM_NCONV) return kc_error("conv: unknown op %d", (int)op);
    if (out->dtype != EM_FLOAT32 && out->dtype != EM_FLOAT64 && out->dtype != EM_FLOAT16 &&
        out->dtype != EM_BFLOAT16)
        return kc_error("%s: no CUDA kernel for %s (float32, float64, float16 and bfloat16)", name,
                        kc_dtype_name(out->dtype));
    if (a->dtype != out->dtype || b->dtype != out->dtype)
        return kc_error("%s: operands of dtypes %s and %s for a %s result (one dtype expected)", name,
                        kc_dtype_name(a->dtype), kc_dtype_name(b->dtype), kc_dtype_name(out->dtype));
    int dev = kc_device_of(out);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    conv_call c = {op, name, out, a, b, p};

    /* x, w, y in the engine's sizes, whichever op this is */
    const em_tensor *x = op == EM_CONV_FORWARD ? a : op == EM_CONV_BACKWARD_DATA ? out : a;
    const em_tensor *w = op == EM_CONV_FORWARD ? b : op == EM_CONV_BACKWARD_DATA ? b : out;
    const em_tensor *y = op == EM_CONV_FORWARD ? out : op == EM_CONV_BACKWARD_DATA ? a : b;
    if (x->ndim != ns + 2 || w->ndim != ns + 2 || y->ndim != ns + 2)
        return kc_error("%s %s: expected %d-D tensors", name, op_word(op), ns + 2);
    if (p->bias && !bias_fits(op, y, p->bias, name)) return -1;
    if (emf_numel(out) == 0) return 0;
    /* an empty sum (no samples, no channels, or an empty kernel) */
    if (emf_numel(a) == 0 || emf_numel(b) == 0) return kc_fill(out, 0);

    conv_problem pr;
    memset(&pr, 0, sizeof pr);
    pr.op = op;
    pr.device = dev;
    pr.dtype = out->dtype;
    pr.policy = (out->dtype == EM_FLOAT32 && !kc_cudnn_tf32 ? POLICY_NO_TF32 : 0) |
                (kc_cudnn_deterministic || kc_deterministic ? POLICY_DETERMINISTIC : 0);
    pr.nd = ns == 1 ? 4 : ns + 2;
    int lead = ns == 1 ? 1 : 0;                 /* the height of 1 of a 1-D conv */
    if (!fits_int(p->groups) || p->groups < 1) return kc_error("%s: bad groups %lld", name, (long long)p->groups);
    pr.groups = (int)p->groups;
    for (int i = 0; i < pr.nd - 2; i++) { pr.pad[i] = 0; pr.stride[i] = 1; pr.dil[i] = 1; }
    for (int i = 0; i < ns; i++) {
        if (!fits_int(p->padding[i]) || !fits_int(p->stride[i]) || !fits_int(p->dilation[i]))
            return kc_error("%s: stride, padding or dilation over 2^31", name);
        pr.pad[lead + i] = (int)p->padding[i];
        pr.stride[lead + i] = (int)p->stride[i];
        pr.dil[lead + i] = (int)p->dilation[i];
    }
    int64_t xs = 1, ys = 1;                     /* elements per sample */
    for (int d = 1; d < ns + 2; d++) { xs *= x->sizes[d]; ys *= y->sizes[d]; }
    if (!fits_int(emf_numel(w)) || !fits_int(xs) || !fits_int(ys))
        return kc_error("%s %s: one sample or the weight has over 2^31 - 1 elements (cuDNN's limit)", name,
                        op_word(op));
    for (int d = 0; d < ns + 2; d++)
        if (!fits_int(x->sizes[d]) || !fits_int(w->sizes[d]) || !fits_int(y->sizes[d]))
            return kc_error("%s: a size over 2^31", name);
    int64_t big = xs > ys ? xs : ys;
    int64_t N = x->sizes[0], chunk = INT_MAX / big;
    if (chunk > N) chunk = N;

    cudnnHandle_t h = handle_of(dev, s, name);
    if (!h) return -1;
    size_t es = em_dtype_size(out->dtype);
    char *xp = kc_ptr(x), *wp = kc_ptr(w), *yp = kc_ptr(y);
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
        int64_t n = N - n0 < chunk ? N - n0 : chunk;
        pr.x[0] = pr.y[0] = (int)n;
        pr.w[0] = (int)w->sizes[0];
        pr.x[1] = (int)x->sizes[1]; pr.w[1] = (int)w->sizes[1]; pr.y[1] = (int)y->sizes[1];
        if (lead) { pr.x[2] = pr.w[2] = pr.y[2] = 1; }
        for (int i = 0; i < ns; i++) {
            pr.x[2 + lead + i] = (int)x->sizes[2 + i];
            pr.w[2 + lead + i] = (int)w->sizes[2 + i];
            pr.y[2 + lead + i] = (int)y->sizes[2 + i];
        }
        conv_plan *pl = plan_of(h, &pr, &c);
        if (!pl) return -1;
        char *xc = xp + n0 * xs * (int64_t)es, *yc = yp + n0 * ys * (int64_t)es;
        int rc;
        if (op == EM_CONV_FORWARD) rc = run_plan(h, pl, &c, dev, yc, xc, wp, false);
        else if (op == EM_CONV_BACKWARD_DATA) rc = run_plan(h, pl, &c, dev, xc, yc, wp, false);
        else rc = run_plan(h, pl, &c, dev, wp, xc, yc, n0 > 0);
        if (rc) return -1;
    }
    if (p->bias && conv_bias(dev, s, op, y, p->bias, name)) return -1;
    return kc_launched(name, dev);
}
