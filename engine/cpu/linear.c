/* linear.c — the fused linear family (backend.h em_linear_op) on the CPU.
 *
 * The steps the CUDA epilogues fuse, one after the other: the GEMM in the
 * compute dtype (float32 sums for float16/bfloat16, as cuBLASLt's
 * CUBLAS_COMPUTE_32F; bfloat16 products through oneDNN, see gemm.c), then
 * the bias and the activation in that dtype on the thread pool, and the
 * result rounded to the tensor's dtype once, at the end (aux too), as the
 * epilogue does. When out has the compute dtype the GEMM writes into it and
 * the epilogue works in place (aux the same), so nothing is copied.
 *
 * GELU is the tanh form of the op table's EM_GELU_TANH (engine/unary_math.h,
 * one formula for this epilogue, F.gelu(x, {approximate = "tanh"}) and the
 * CUDA kernels' fallback epilogue). */
#include "cpu.h"
#include "../unary_math.h"

static inline float gelu_f32(float x) { return em_un_f32(EM_GELU_TANH, x); }
static inline double gelu_f64(double x) { return em_un_f64(EM_GELU_TANH, x); }
static inline float gelu_grad_f32(float x) { return em_un_f32(EM_GELU_TANH_GRAD, x); }
static inline double gelu_grad_f64(double x) { return em_un_f64(EM_GELU_TANH_GRAD, x); }

static em_dtype compute_dtype(em_dtype d) { return d == EM_FLOAT64 ? EM_FLOAT64 : EM_FLOAT32; }

/* t itself when it has the compute dtype and is contiguous, else a
 * contiguous copy in it; with `copy` false the copy is left uninitialised
 * (an output's working buffer). */
static em_tensor *in_compute(const em_tensor *t, em_dtype cd, bool copy)
{
    if (t->dtype == cd && em_is_contiguous(t)) return em_retain((em_tensor *)t);
    if (!copy) return em_empty(t->sizes, t->ndim, cd, em_dev(t));
    return em_cast_to(t, cd);
}

/* Rounds the compute-dtype buffer src into dst (nothing when they are one). */
static int store(em_tensor *dst, const em_tensor *src)
{
    return dst == src ? 0 : cpu_cast(dst, src);
}

/* acc [M, N] (contiguous, compute dtype) = a @ b */
static int product(em_tensor *acc, const em_tensor *a, const em_tensor *b)
{
    em_tensor *a3 = em_unsqueeze(a, 0), *b3 = a3 ? em_unsqueeze(b, 0) : NULL;
    em_tensor *c3 = b3 ? em_unsqueeze(acc, 0) : NULL;
    int rc = -1;
    if (c3 && a->dtype != acc->dtype) rc = cpu_gemm_acc32(c3, a3, b3);
    else if (c3) rc = cpu_gemm(c3, a3, b3, 1.0, 0.0);
    em_release(a3); em_release(b3); em_release(c3);
    return rc;
}

/* ---- the epilogue: rows [lo, hi) of acc, in place; pre (the GELU's input) too */

typedef struct epi {
    em_linear_op op;
    int64_t N;
    char *acc, *pre;
    const char *bias;
} epi;

/* epi_f32 and epi_f64: one body, GELU the type's tanh-form GELU */
#define DEFINE_EPI(SFX, T, GELU)                                                                   \
    static void epi_##SFX(int64_t lo, int64_t hi, void *ctx)                                       \
    {                                                                                              \
        const epi *E = ctx;                                                                        \
        const T *bias = (const T *)E->bias;                                                        \
        for (int64_t m = lo; m < hi; m++) {                                                        \
            T *v = (T *)E->acc + m * E->N, *p = E->pre ? (T *)E->pre + m * E->N : NULL;            \
            if (bias)                                                                              \
                for (int64_t n = 0; n < E->N; n++) v[n] += bias[n];                                \
            if (p) memcpy(p, v, sizeof(T) * (size_t)E->N);                                         \
            if (E->op == EM_LINEAR_GELU)                                                           \
                for (int64_t n = 0; n < E->N; n++) v[n] = GELU(v[n]);                              \
        }                                                                                          \
    }
DEFINE_EPI(f32, float, gelu_f32)
DEFINE_EPI(f64, double, gelu_f64)

/* out (and aux) = act(acc + bias) */
static int epilogue(em_linear_op op, em_tensor *out, em_tensor *aux, em_tensor *acc, const em_tensor *bias)
{
    em_dtype cd = acc->dtype;
    int64_t M = acc->sizes[0], N = acc->sizes[1];
    em_tensor *bc = bias ? in_compute(bias, cd, true) : NULL;
    em_tensor *pre = op == EM_LINEAR_GELU && aux ? in_compute(aux, cd, false) : NULL;
    int rc = (bias && !bc) || (op == EM_LINEAR_GELU && aux && !pre) ? -1 : 0;
    if (rc == 0 && (bc || op == EM_LINEAR_GELU)) {
        epi E = {.op = op, .N = N, .acc = em_data_ptr(acc), .pre = pre ? em_data_ptr(pre) : NULL,
                 .bias = bc ? em_data_ptr(bc) : NULL};
        cpu_parallel_for(M, M * N, 1, cd == EM_FLOAT32 ? epi_f32 : epi_f64, &E);
    }
    if (rc == 0) rc = store(out, acc);
    if (rc == 0 && pre) rc = store(aux, pre);
    em_release(bc);
    em_release(pre);
    return rc;
}

/* ---- DGELU: out = g * gelu'(x), elementwise ---------------------------------------- */

typedef struct dgelu_job {
    char *out;
    const char *g, *x;
} dgelu_job;

/* dgelu_f32 and dgelu_f64: one body, GRAD the type's derivative */
#define DEFINE_DGELU(SFX, T, GRAD)                                                                 \
    static void dgelu_##SFX(int64_t lo, int64_t hi, void *ctx)                                     \
    {                                                                                              \
        const dgelu_job *J = ctx;                                                                  \
        T *o = (T *)J->out;                                                                        \
        const T *g = (const T *)J->g, *x = (const T *)J->x;                                        \
        for (int64_t i = lo; i < hi; i++) o[i] = g[i] * GRAD(x[i]);                                \
    }
DEFINE_DGELU(f32, float, gelu_grad_f32)
DEFINE_DGELU(f64, double, gelu_grad_f64)

static int dgelu(em_tensor *out, const em_tensor *g, const em_tensor *aux)
{
    em_dtype cd = compute_dtype(out->dtype);
    em_tensor *gc = in_compute(g, cd, true), *xc = gc ? in_compute(aux, cd, true) : NULL;
    em_tensor *r = xc ? in_compute(out, cd, false) : NULL;
    if (!r) {
        em_release(gc); em_release(xc);
        return -1;
    }
    dgelu_job J = {.out = em_data_ptr(r), .g = em_data_ptr(gc), .x = em_data_ptr(xc)};
    int64_t n = em_numel(r);
    cpu_parallel_for(n, n, 64, cd == EM_FLOAT32 ? dgelu_f32 : dgelu_f64, &J);
    int rc = store(out, r);
    em_release(gc); em_release(xc); em_release(r);
    return rc;
}

/* ---- BGRAD's bias: bias[m] = sum_k a[m, k], each summed in order in double */

typedef struct sums_job {
    const em_tensor *a;
    double *s;
} sums_job;

static inline double elem(const char *p, em_dtype d)
{
    if (d == EM_FLOAT32) return *(const float *)p;
    if (d == EM_FLOAT64) return *(const double *)p;
    return cpu_load_f64(p, d);
}

static void sums_range(int64_t lo, int64_t hi, void *ctx)
{
    const sums_job *J = ctx;
    const em_tensor *a = J->a;
    em_dtype d = a->dtype;
    int64_t K = a->sizes[1], s0 = a->strides[0], s1 = a->strides[1], esz = (int64_t)em_dtype_size(d);
    const char *base = em_data_ptr(a);
    for (int64_t m = lo; m < hi; m++) J->s[m] = 0;
    /* a = dY^T, a transposed view: along a row of dY, m runs unit-stride */
    if (s0 == 1 && d == EM_FLOAT32) {
        for (int64_t k = 0; k < K; k++) {
            const float *row = (const float *)base + k * s1;
            for (int64_t m = lo; m < hi; m++) J->s[m] += row[m];
        }
        return;
    }
    if (s0 == 1 && d == EM_BFLOAT16) {
        for (int64_t k = 0; k < K; k++) {
            const uint16_t *row = (const uint16_t *)base + k * s1;
            for (int64_t m = lo; m < hi; m++) {
                uint32_t bits = (uint32_t)row[m] << 16;
                float v;
                memcpy(&v, &bits, sizeof v);
                J->s[m] += v;
            }
        }
        return;
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t m = lo; m < hi; m++) J->s[m] += elem(base + (m * s0 + k * s1) * esz, d);
}

static int row_sums(em_tensor *bias, const em_tensor *a)
{
    int64_t M = a->sizes[0];
    em_tensor *s = em_empty(&M, 1, EM_FLOAT64, em_dev(a));
    if (!s) return -1;
    sums_job J = {.a = a, .s = em_data_ptr(s)};
    cpu_parallel_for(M, M * a->sizes[1], 16, sums_range, &J);
    int rc = cpu_cast(bias, s);
    em_release(s);
    return rc;
}

int cpu_linear(em_linear_op op, em_tensor *out, em_tensor *aux, const em_tensor *a, const em_tensor *b,
               em_tensor *bias)
{
    if (op < 0 || op >= EM_NLINEAR) return em_set_error("linear: unknown fused op %d", (int)op);
    em_dtype cd = compute_dtype(out->dtype);
    if (op == EM_LINEAR_DGELU) return dgelu(out, a, aux);
    em_tensor *acc = in_compute(out, cd, false);
    if (!acc) return -1;
    int rc = product(acc, a, b);
    if (rc == 0 && op == EM_LINEAR_BGRAD) {
        rc = store(out, acc);
        if (rc == 0 && bias) rc = row_sums(bias, a);
    } else if (rc == 0) {
        rc = epilogue(op, out, aux, acc, bias);
    }
    em_release(acc);
    return rc;
}
