/* linear.c — the fused linear family (backend.h em_linear_op) on the CPU.
 *
 * This is the reference: the steps the CUDA epilogues fuse, one after the
 * other. The GEMM runs through cpu_gemm in the compute dtype (float32 for
 * float16/bfloat16, as cuBLASLt's CUBLAS_COMPUTE_32F), the bias and the
 * activation follow in that dtype, and the result is rounded to the tensor's
 * dtype once, at the end (aux too), as the epilogue does. */
#include "cpu.h"

#define GELU_K 0.7978845608028654   /* sqrt(2/pi) */
#define GELU_C 0.044715

static double gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(GELU_K * (x + GELU_C * x * x * x)));
}

static double gelu_tanh_grad(double x)
{
    double t = tanh(GELU_K * (x + GELU_C * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_K * (1 + 3 * GELU_C * x * x);
}

static em_dtype compute_dtype(em_dtype d) { return d == EM_FLOAT64 ? EM_FLOAT64 : EM_FLOAT32; }

/* Values of a contiguous float32/float64 buffer, through double. */
static double ld(const em_tensor *t, int64_t i)
{
    const char *p = em_data_ptr(t);
    return t->dtype == EM_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Stores v rounded to the compute dtype, and returns that rounded value. */
static double st(em_tensor *t, int64_t i, double v)
{
    char *p = em_data_ptr(t);
    if (t->dtype == EM_FLOAT32) return ((float *)p)[i] = (float)v;
    return ((double *)p)[i] = v;
}

/* t in the compute dtype cd and contiguous (t itself when it already is). */
static em_tensor *in_compute(const em_tensor *t, em_dtype cd)
{
    if (t->dtype == cd) return em_contiguous(t);
    return em_cast_to(t, cd);
}

/* Copies the compute-dtype buffer src into dst (rounding to dst's dtype). */
static int store(em_tensor *dst, const em_tensor *src)
{
    return dst == src ? 0 : cpu_cast(dst, src);
}

/* acc [M, N] (contiguous, compute dtype) = a @ b */
static em_tensor *product(const em_tensor *a, const em_tensor *b, em_dtype cd)
{
    int64_t M = a->sizes[0], N = b->sizes[1];
    int64_t osz[3] = {1, M, N};
    em_tensor *ac = a->dtype == cd ? em_retain((em_tensor *)a) : em_cast_to(a, cd);
    em_tensor *bc = !ac ? NULL : b->dtype == cd ? em_retain((em_tensor *)b) : em_cast_to(b, cd);
    em_tensor *a3 = bc ? em_unsqueeze(ac, 0) : NULL;
    em_tensor *b3 = a3 ? em_unsqueeze(bc, 0) : NULL;
    em_tensor *acc = b3 ? em_empty(osz, 3, cd, em_dev(a)) : NULL;
    int rc = acc ? cpu_gemm(acc, a3, b3, 1.0, 0.0) : -1;
    em_release(ac); em_release(bc); em_release(a3); em_release(b3);
    if (rc) { em_release(acc); return NULL; }
    int64_t s2[2] = {M, N};
    em_tensor *v = em_view(acc, s2, 2);
    em_release(acc);
    return v;
}

/* out (and aux) = act(acc + bias), in place in acc's buffer and a second one */
static int epilogue(em_linear_op op, em_tensor *out, em_tensor *aux, em_tensor *acc, const em_tensor *bias)
{
    em_dtype cd = acc->dtype;
    int64_t M = acc->sizes[0], N = acc->sizes[1];
    em_tensor *bc = bias ? in_compute(bias, cd) : NULL;
    em_tensor *pre = NULL;
    if (bias && !bc) return -1;
    if (op == EM_LINEAR_GELU && aux) {
        pre = aux->dtype == cd ? em_retain(aux) : em_empty(acc->sizes, 2, cd, em_dev(acc));
        if (!pre) { em_release(bc); return -1; }
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int64_t i = m * N + n;
            double v = ld(acc, i);
            if (bc) v = st(acc, i, v + ld(bc, n));
            if (pre) st(pre, i, v);
            if (op == EM_LINEAR_GELU) st(acc, i, gelu_tanh(v));
        }
    int rc = store(out, acc);
    if (rc == 0 && pre) rc = store(aux, pre);
    em_release(bc);
    em_release(pre);
    return rc;
}

static int dgelu(em_tensor *out, const em_tensor *g, const em_tensor *aux)
{
    em_dtype cd = compute_dtype(out->dtype);
    em_tensor *gc = in_compute(g, cd), *xc = gc ? in_compute(aux, cd) : NULL;
    em_tensor *r = xc ? (out->dtype == cd && em_is_contiguous(out) ? em_retain(out) : em_empty_like(xc)) : NULL;
    int rc = r ? 0 : -1;
    for (int64_t i = 0, n = rc ? 0 : em_numel(r); i < n; i++)
        st(r, i, ld(gc, i) * gelu_tanh_grad(ld(xc, i)));
    if (rc == 0) rc = store(out, r);
    em_release(gc); em_release(xc); em_release(r);
    return rc;
}

/* bias[m] = sum_k a[m, k], summed in double */
static int row_sums(em_tensor *bias, const em_tensor *a, em_dtype cd)
{
    em_tensor *ac = in_compute(a, cd);
    em_tensor *s = ac ? em_empty(&a->sizes[0], 1, cd, em_dev(a)) : NULL;
    if (!s) { em_release(ac); return -1; }
    int64_t M = a->sizes[0], K = a->sizes[1];
    for (int64_t m = 0; m < M; m++) {
        double t = 0;
        for (int64_t k = 0; k < K; k++) t += ld(ac, m * K + k);
        st(s, m, t);
    }
    int rc = cpu_cast(bias, s);
    em_release(ac);
    em_release(s);
    return rc;
}

int cpu_linear(em_linear_op op, em_tensor *out, em_tensor *aux, const em_tensor *a, const em_tensor *b,
               em_tensor *bias)
{
    if (op < 0 || op >= EM_NLINEAR) return em_set_error("linear: unknown fused op %d", (int)op);
    em_dtype cd = compute_dtype(out->dtype);
    if (op == EM_LINEAR_DGELU) return dgelu(out, a, aux);
    em_tensor *acc = product(a, b, cd);
    if (!acc) return -1;
    int rc;
    if (op == EM_LINEAR_BGRAD) {
        rc = store(out, acc);
        if (rc == 0 && bias) rc = row_sums(bias, a, cd);
    } else {
        rc = epilogue(op, out, aux, acc, bias);
    }
    em_release(acc);
    return rc;
}
