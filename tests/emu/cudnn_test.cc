/* cudnn_test.cc — the emulated device's cuDNN stand-in (kernels/emu/cudnn.cc)
 * against naive convolutions written here: forward by its definition,
 * backward data and backward filter by theirs (gathering, where the
 * stand-in scatters), and all three against the adjoint identity
 * <conv(x, w), g> = <x, convT(g, w)> = <w, gradW(x, g)>. Both algorithms of
 * each direction, float and double, 1-D to 3-D, groups, padding, stride,
 * dilation, both modes; alpha/beta blending (beta = 0 over NaN), strided
 * and NHWC tensors, half and bfloat16 storage, the heuristics' lists, a
 * short workspace, and the statuses of bad descriptors. */
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../c/check.h"

/* ---- the problems ------------------------------------------------------------------- */

typedef struct spec {
    const char *name;
    int nsp;                    /* spatial dims, 1 to 3 */
    int n, c, k, groups;
    int in[3], ker[3], pad[3], stride[3], dil[3];
    cudnnConvolutionMode_t mode;
} spec;

static const spec cases[] = {
    {"2d plain", 2, 2, 3, 4, 1, {5, 6}, {3, 3}, {0, 0}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION},
    {"2d pad stride", 2, 2, 3, 2, 1, {7, 6}, {3, 2}, {1, 2}, {2, 3}, {1, 1}, CUDNN_CROSS_CORRELATION},
    {"2d dilation", 2, 1, 2, 3, 1, {9, 8}, {3, 3}, {2, 1}, {1, 2}, {2, 3}, CUDNN_CROSS_CORRELATION},
    {"2d groups", 2, 2, 6, 4, 2, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION},
    {"2d depthwise", 2, 1, 4, 8, 4, {6, 5}, {3, 3}, {1, 1}, {2, 1}, {1, 1}, CUDNN_CROSS_CORRELATION},
    {"2d height 1", 2, 2, 2, 3, 1, {1, 9}, {1, 3}, {0, 1}, {1, 2}, {1, 1}, CUDNN_CROSS_CORRELATION},
    {"2d 1x1 stride", 2, 2, 3, 2, 1, {5, 4}, {1, 1}, {0, 0}, {2, 2}, {1, 1}, CUDNN_CROSS_CORRELATION},
    {"1d", 1, 2, 3, 5, 1, {11}, {4}, {2}, {3}, {2}, CUDNN_CROSS_CORRELATION},
    {"1d groups", 1, 3, 4, 6, 2, {9}, {3}, {1}, {1}, {1}, CUDNN_CROSS_CORRELATION},
    {"3d", 3, 2, 2, 3, 1, {5, 4, 6}, {3, 2, 3}, {1, 0, 1}, {2, 1, 2}, {1, 2, 1}, CUDNN_CROSS_CORRELATION},
    {"3d groups dilation", 3, 1, 4, 2, 2, {6, 6, 5}, {2, 3, 2}, {0, 1, 1}, {1, 2, 1}, {2, 1, 2},
     CUDNN_CROSS_CORRELATION},
    {"2d convolution mode", 2, 2, 3, 2, 1, {7, 6}, {3, 2}, {1, 2}, {2, 1}, {1, 2}, CUDNN_CONVOLUTION},
    {"3d convolution mode", 3, 1, 2, 2, 2, {4, 5, 4}, {2, 3, 2}, {1, 1, 0}, {1, 2, 1}, {1, 1, 2}, CUDNN_CONVOLUTION},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

enum { FWD, BWD_DATA, BWD_FILTER };

static int out_size(const spec *s, int d)
{
    return (s->in[d] + 2 * s->pad[d] - s->dil[d] * (s->ker[d] - 1) - 1) / s->stride[d] + 1;
}

static int volume(const int *d, int n)
{
    int v = 1;
    for (int i = 0; i < n; i++) v *= d[i];
    return v;
}

static void out_dims(const spec *s, int *o)
{
    for (int d = 0; d < s->nsp; d++) o[d] = out_size(s, d);
}

static size_t x_count(const spec *s) { return (size_t)s->n * s->c * volume(s->in, s->nsp); }
static size_t w_count(const spec *s) { return (size_t)s->k * (s->c / s->groups) * volume(s->ker, s->nsp); }
static size_t y_count(const spec *s)
{
    int o[3];
    out_dims(s, o);
    return (size_t)s->n * s->k * volume(o, s->nsp);
}

/* row-major index <-> coordinates over nd dims */
static void unravel(int flat, const int *dims, int nd, int *idx)
{
    for (int d = nd - 1; d >= 0; d--) { idx[d] = flat % dims[d]; flat /= dims[d]; }
}

static int ravel(const int *idx, const int *dims, int nd)
{
    int f = 0;
    for (int d = 0; d < nd; d++) f = f * dims[d] + idx[d];
    return f;
}

/* The stored tap a logical tap t reads: CUDNN_CONVOLUTION mirrors the kernel. */
static void stored_tap(const spec *s, const int *t, int *te)
{
    for (int d = 0; d < s->nsp; d++) te[d] = s->mode == CUDNN_CONVOLUTION ? s->ker[d] - 1 - t[d] : t[d];
}

/* ---- naive references (double, contiguous NC...) ------------------------------------ */

static void naive_forward(const spec *s, const double *x, const double *w, double *y)
{
    int cg = s->c / s->groups, kg = s->k / s->groups, o[3];
    out_dims(s, o);
    int no = volume(o, s->nsp), nt = volume(s->ker, s->nsp), ni = volume(s->in, s->nsp);
    for (int n = 0; n < s->n; n++)
        for (int k = 0; k < s->k; k++)
            for (int oi = 0; oi < no; oi++) {
                int op[3], t[3], te[3], ip[3];
                unravel(oi, o, s->nsp, op);
                double sum = 0;
                for (int c = 0; c < cg; c++)
                    for (int ti = 0; ti < nt; ti++) {
                        unravel(ti, s->ker, s->nsp, t);
                        int inside = 1;
                        for (int d = 0; d < s->nsp; d++) {
                            ip[d] = op[d] * s->stride[d] - s->pad[d] + t[d] * s->dil[d];
                            if (ip[d] < 0 || ip[d] >= s->in[d]) inside = 0;
                        }
                        if (!inside) continue;
                        stored_tap(s, t, te);
                        int ci = (k / kg) * cg + c;
                        sum += x[((size_t)n * s->c + ci) * ni + ravel(ip, s->in, s->nsp)] *
                               w[((size_t)k * cg + c) * nt + ravel(te, s->ker, s->nsp)];
                    }
                y[((size_t)n * s->k + k) * no + oi] = sum;
            }
}

/* dx[n, ci, i] = sum over the output positions whose window put tap t on i */
static void naive_backward_data(const spec *s, const double *dy, const double *w, double *dx)
{
    int cg = s->c / s->groups, kg = s->k / s->groups, o[3];
    out_dims(s, o);
    int no = volume(o, s->nsp), nt = volume(s->ker, s->nsp), ni = volume(s->in, s->nsp);
    for (int n = 0; n < s->n; n++)
        for (int ci = 0; ci < s->c; ci++)
            for (int ii = 0; ii < ni; ii++) {
                int ip[3], t[3], te[3], op[3];
                unravel(ii, s->in, s->nsp, ip);
                int g = ci / cg, c = ci % cg;
                double sum = 0;
                for (int k = g * kg; k < (g + 1) * kg; k++)
                    for (int ti = 0; ti < nt; ti++) {
                        unravel(ti, s->ker, s->nsp, t);
                        int hit = 1;
                        for (int d = 0; d < s->nsp; d++) {
                            int num = ip[d] + s->pad[d] - t[d] * s->dil[d];
                            if (num < 0 || num % s->stride[d] != 0 || num / s->stride[d] >= o[d]) { hit = 0; break; }
                            op[d] = num / s->stride[d];
                        }
                        if (!hit) continue;
                        stored_tap(s, t, te);
                        sum += dy[((size_t)n * s->k + k) * no + ravel(op, o, s->nsp)] *
                               w[((size_t)k * cg + c) * nt + ravel(te, s->ker, s->nsp)];
                    }
                dx[((size_t)n * s->c + ci) * ni + ii] = sum;
            }
}

static void naive_backward_filter(const spec *s, const double *x, const double *dy, double *dw)
{
    int cg = s->c / s->groups, kg = s->k / s->groups, o[3];
    out_dims(s, o);
    int no = volume(o, s->nsp), nt = volume(s->ker, s->nsp), ni = volume(s->in, s->nsp);
    for (int k = 0; k < s->k; k++)
        for (int c = 0; c < cg; c++)
            for (int ti = 0; ti < nt; ti++) {
                int t[3], te[3], op[3], ip[3];
                unravel(ti, s->ker, s->nsp, t);
                double sum = 0;
                for (int n = 0; n < s->n; n++)
                    for (int oi = 0; oi < no; oi++) {
                        unravel(oi, o, s->nsp, op);
                        int inside = 1;
                        for (int d = 0; d < s->nsp; d++) {
                            ip[d] = op[d] * s->stride[d] - s->pad[d] + t[d] * s->dil[d];
                            if (ip[d] < 0 || ip[d] >= s->in[d]) inside = 0;
                        }
                        if (!inside) continue;
                        int ci = (k / kg) * cg + c;
                        sum += dy[((size_t)n * s->k + k) * no + oi] *
                               x[((size_t)n * s->c + ci) * ni + ravel(ip, s->in, s->nsp)];
                    }
                stored_tap(s, t, te);
                dw[((size_t)k * cg + c) * nt + ravel(te, s->ker, s->nsp)] = sum;
            }
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* ---- host data and device buffers --------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* uniform in [-1, 1), a multiple of 2^-20 so float holds it exactly */
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(int32_t)((rng_state >> 33) & 0x1fffff) / 1048576.0 - 1.0;
}

static double *random_array(size_t n)
{
    double *a = (double *)malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = uniform();
    return a;
}

static double *filled_array(size_t n, double v)
{
    double *a = (double *)malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = v;
    return a;
}

static size_t elem_size(cudnnDataType_t dt) { return dt == CUDNN_DATA_DOUBLE ? 8 : 4; }

/* device copy of h as float or double */
static void *upload(const double *h, size_t n, cudnnDataType_t dt)
{
    void *d = NULL;
    if (cudaMalloc(&d, n * elem_size(dt)) != cudaSuccess) return NULL;
    if (dt == CUDNN_DATA_DOUBLE) {
        cudaMemcpy(d, h, n * 8, cudaMemcpyHostToDevice);
    } else {
        float *f = (float *)malloc(n * 4);
        for (size_t i = 0; i < n; i++) f[i] = (float)h[i];
        cudaMemcpy(d, f, n * 4, cudaMemcpyHostToDevice);
        free(f);
    }
    return d;
}

static void download(const void *d, size_t n, cudnnDataType_t dt, double *h)
{
    if (dt == CUDNN_DATA_DOUBLE) {
        cudaMemcpy(h, d, n * 8, cudaMemcpyDeviceToHost);
    } else {
        float *f = (float *)malloc(n * 4);
        cudaMemcpy(f, d, n * 4, cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < n; i++) h[i] = f[i];
        free(f);
    }
}

/* ---- descriptors -------------------------------------------------------------------- */

typedef struct descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} descs;

static void packed(const int *dims, int nd, int *strides)
{
    int s = 1;
    for (int i = nd - 1; i >= 0; i--) { strides[i] = s; s *= dims[i]; }
}

/* Nd descriptors of s (ranks nsp + 2), packed NCHW; the statuses of the
 * set calls are all checked, so a later failure is the convolution's. */
static void make_descs(const spec *s, cudnnDataType_t dt, cudnnDataType_t compute, descs *d)
{
    int nd = s->nsp + 2, xd[5], wd[5], yd[5], xs[5], ys[5], o[3];
    out_dims(s, o);
    xd[0] = s->n; xd[1] = s->c;
    wd[0] = s->k; wd[1] = s->c / s->groups;
    yd[0] = s->n; yd[1] = s->k;
    for (int i = 0; i < s->nsp; i++) { xd[2 + i] = s->in[i]; wd[2 + i] = s->ker[i]; yd[2 + i] = o[i]; }
    packed(xd, nd, xs);
    packed(yd, nd, ys);
    CHECK(cudnnCreateTensorDescriptor(&d->x) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateTensorDescriptor(&d->y) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateFilterDescriptor(&d->w) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnCreateConvolutionDescriptor(&d->conv) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetTensorNdDescriptor(d->x, dt, nd, xd, xs) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetTensorNdDescriptor(d->y, dt, nd, yd, ys) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetFilterNdDescriptor(d->w, dt, CUDNN_TENSOR_NCHW, nd, wd) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetConvolutionNdDescriptor(d->conv, s->nsp, s->pad, s->stride, s->dil, s->mode, compute) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetConvolutionGroupCount(d->conv, s->groups) == CUDNN_STATUS_SUCCESS);
}

static void free_descs(descs *d)
{
    cudnnDestroyTensorDescriptor(d->x);
    cudnnDestroyTensorDescriptor(d->y);
    cudnnDestroyFilterDescriptor(d->w);
    cudnnDestroyConvolutionDescriptor(d->conv);
}

static cudnnHandle_t handle;

static cudnnStatus_t workspace_size(const descs *d, int op, int algo, size_t *ws)
{
    if (op == FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(handle, d->x, d->w, d->conv, d->y,
                                                       (cudnnConvolutionFwdAlgo_t)algo, ws);
    if (op == BWD_DATA)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d->w, d->y, d->conv, d->x,
                                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d->x, d->y, d->conv, d->w,
                                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws);
}

/* One call of op on device copies: a and b are the operands in the call's
 * order (forward x, w; backward data dy, w; backward filter x, dy), out
 * holds the output's old contents and receives the new ones. */
static cudnnStatus_t call_op(const descs *d, int op, int algo, const void *a, const void *b, void *out, void *ws,
                             size_t ws_bytes, const void *alpha, const void *beta)
{
    if (op == FWD)
        return cudnnConvolutionForward(handle, alpha, d->x, a, d->w, b, d->conv, (cudnnConvolutionFwdAlgo_t)algo, ws,
                                       ws_bytes, beta, d->y, out);
    if (op == BWD_DATA)
        return cudnnConvolutionBackwardData(handle, alpha, d->w, b, d->y, a, d->conv,
                                            (cudnnConvolutionBwdDataAlgo_t)algo, ws, ws_bytes, beta, d->x, out);
    return cudnnConvolutionBackwardFilter(handle, alpha, d->x, a, d->y, b, d->conv,
                                          (cudnnConvolutionBwdFilterAlgo_t)algo, ws, ws_bytes, beta, d->w, out);
}

static size_t op_a_count(const spec *s, int op) { return op == BWD_DATA ? y_count(s) : x_count(s); }
static size_t op_b_count(const spec *s, int op)
{
    return op == FWD ? w_count(s) : op == BWD_DATA ? w_count(s) : y_count(s);
}
static size_t op_out_count(const spec *s, int op)
{
    return op == FWD ? y_count(s) : op == BWD_DATA ? x_count(s) : w_count(s);
}

/* Runs op with the workspace its algorithm asks for; returns the status of
 * the call (or of the synchronisation) and the output in out. */
static cudnnStatus_t run_op(const spec *s, cudnnDataType_t dt, int op, int algo, const double *a, const double *b,
                            double *out, double alpha, double beta)
{
    descs d;
    make_descs(s, dt, dt, &d);
    size_t ws_bytes = 0;
    cudnnStatus_t st = workspace_size(&d, op, algo, &ws_bytes);
    if (st != CUDNN_STATUS_SUCCESS) { free_descs(&d); return st; }
    size_t na = op_a_count(s, op), nb = op_b_count(s, op), no = op_out_count(s, op);
    void *da = upload(a, na, dt), *db = upload(b, nb, dt), *dout = upload(out, no, dt), *ws = NULL;
    if (ws_bytes) cudaMalloc(&ws, ws_bytes);
    float a32 = (float)alpha, b32 = (float)beta;
    const void *pa = dt == CUDNN_DATA_DOUBLE ? (const void *)&alpha : (const void *)&a32;
    const void *pb = dt == CUDNN_DATA_DOUBLE ? (const void *)&beta : (const void *)&b32;
    st = call_op(&d, op, algo, da, db, dout, ws, ws_bytes, pa, pb);
    if (cudaDeviceSynchronize() != cudaSuccess && st == CUDNN_STATUS_SUCCESS) st = CUDNN_STATUS_EXECUTION_FAILED;
    if (st == CUDNN_STATUS_SUCCESS) download(dout, no, dt, out);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dout);
    cudaFree(ws);
    free_descs(&d);
    return st;
}

/* the two algorithms of each direction: [0] direct, [1] GEMM with workspace */
static int algo_of(int op, int which)
{
    if (op == FWD) return which ? CUDNN_CONVOLUTION_FWD_ALGO_GEMM : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    if (op == BWD_DATA) return which ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 : CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    return which ? CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 : CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
}

static double max_abs(const double *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

/* Each case, direction, algorithm and type against the naive loops. */
static void check_against_naive(int op)
{
    static const cudnnDataType_t types[2] = {CUDNN_DATA_DOUBLE, CUDNN_DATA_FLOAT};
    for (int ci = 0; ci < NCASES; ci++) {
        const spec *s = &cases[ci];
        size_t na = op_a_count(s, op), nb = op_b_count(s, op), no = op_out_count(s, op);
        double *a = random_array(na), *b = random_array(nb), *want = filled_array(no, 0);
        if (op == FWD) naive_forward(s, a, b, want);
        else if (op == BWD_DATA) naive_backward_data(s, a, b, want);
        else naive_backward_filter(s, a, b, want);
        double scale = max_abs(want, no) + 1;
        for (int ti = 0; ti < 2; ti++)
            for (int which = 0; which < 2; which++) {
                double *got = filled_array(no, NAN);   /* beta = 0 must not read it */
                cudnnStatus_t st = run_op(s, types[ti], op, algo_of(op, which), a, b, got, 1.0, 0.0);
                if (st != CUDNN_STATUS_SUCCESS) {
                    printf("#   %s, %s, algo %d: %s\n", s->name, ti ? "float" : "double", algo_of(op, which),
                           cudnnGetErrorString(st));
                    CHECK(st == CUDNN_STATUS_SUCCESS);
                    free(got);
                    continue;
                }
                double tol = (ti ? 1e-5 : 1e-13) * scale * 8;
                double worst = 0;
                size_t at = 0;
                for (size_t i = 0; i < no; i++) {
                    double e = fabs(got[i] - want[i]);
                    if (!(e <= worst)) { worst = e; at = i; }
                }
                if (!(worst <= tol))
                    printf("#   %s, %s, algo %d: element %zu is %.17g, expected %.17g\n", s->name,
                           ti ? "float" : "double", algo_of(op, which), at, got[at], want[at]);
                CHECK(worst <= tol);
                free(got);
            }
        free(a);
        free(b);
        free(want);
    }
}

static void test_forward_vs_naive(void) { check_against_naive(FWD); }
static void test_backward_data_vs_naive(void) { check_against_naive(BWD_DATA); }
static void test_backward_filter_vs_naive(void) { check_against_naive(BWD_FILTER); }

/* <conv(x, w), g> = <x, convT(g, w)> = <w, gradW(x, g)>, in double, with
 * each direction's GEMM algorithm against the other's direct one. */
static void test_adjoint_identity(void)
{
    for (int ci = 0; ci < NCASES; ci++) {
        const spec *s = &cases[ci];
        size_t nx = x_count(s), nw = w_count(s), ny = y_count(s);
        double *x = random_array(nx), *w = random_array(nw), *g = random_array(ny);
        for (int which = 0; which < 2; which++) {
            double *y = filled_array(ny, 0), *dx = filled_array(nx, 0), *dw = filled_array(nw, 0);
            CHECK(run_op(s, CUDNN_DATA_DOUBLE, FWD, algo_of(FWD, which), x, w, y, 1, 0) == CUDNN_STATUS_SUCCESS);
            CHECK(run_op(s, CUDNN_DATA_DOUBLE, BWD_DATA, algo_of(BWD_DATA, 1 - which), g, w, dx, 1, 0) ==
                  CUDNN_STATUS_SUCCESS);
            CHECK(run_op(s, CUDNN_DATA_DOUBLE, BWD_FILTER, algo_of(BWD_FILTER, which), x, g, dw, 1, 0) ==
                  CUDNN_STATUS_SUCCESS);
            double yg = dot(y, g, ny), xdx = dot(x, dx, nx), wdw = dot(w, dw, nw);
            double tol = 1e-12 * (1 + fabs(yg)) * (double)(nx + nw + ny);
            CHECK_NEAR(xdx, yg, tol);
            CHECK_NEAR(wdw, yg, tol);
            /* and the identity is not vacuous */
            CHECK(fabs(yg) > 1e-3);
            free(y);
            free(dx);
            free(dw);
        }
        free(x);
        free(w);
        free(g);
    }
}

/* out = alpha * conv + beta * out, for each direction and algorithm, with
 * beta = 0 over NaN (overwritten, never read) and beta != 0 over values. */
static void test_alpha_beta(void)
{
    const spec *s = &cases[3];  /* groups and padding */
    static const cudnnDataType_t types[2] = {CUDNN_DATA_DOUBLE, CUDNN_DATA_FLOAT};
    for (int op = FWD; op <= BWD_FILTER; op++)
        for (int ti = 0; ti < 2; ti++)
            for (int which = 0; which < 2; which++) {
                size_t na = op_a_count(s, op), nb = op_b_count(s, op), no = op_out_count(s, op);
                double *a = random_array(na), *b = random_array(nb), *want = filled_array(no, 0);
                if (op == FWD) naive_forward(s, a, b, want);
                else if (op == BWD_DATA) naive_backward_data(s, a, b, want);
                else naive_backward_filter(s, a, b, want);
                double tol = ti ? 1e-4 : 1e-12;
                int algo = algo_of(op, which);

                double *got = filled_array(no, NAN);
                CHECK(run_op(s, types[ti], op, algo, a, b, got, 2.5, 0.0) == CUDNN_STATUS_SUCCESS);
                for (size_t i = 0; i < no; i++) CHECK_NEAR(got[i], 2.5 * want[i], tol);

                double *old = random_array(no);
                memcpy(got, old, no * sizeof *got);
                CHECK(run_op(s, types[ti], op, algo, a, b, got, -0.5, 0.75) == CUDNN_STATUS_SUCCESS);
                for (size_t i = 0; i < no; i++) CHECK_NEAR(got[i], -0.5 * want[i] + 0.75 * old[i], tol);

                /* alpha = 0, beta = 1 leaves the output as it was */
                memcpy(got, old, no * sizeof *got);
                CHECK(run_op(s, types[ti], op, algo, a, b, got, 0.0, 1.0) == CUDNN_STATUS_SUCCESS);
                for (size_t i = 0; i < no; i++) CHECK_NEAR(got[i], old[i], tol);
                free(a);
                free(b);
                free(want);
                free(got);
                free(old);
            }
}

/* ---- descriptors and shapes --------------------------------------------------------- */

static void test_version_and_strings(void)
{
    CHECK(cudnnGetVersion() == CUDNN_VERSION);
    CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS") == 0);
    CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM") == 0);
    CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED") == 0);
    CHECK(strcmp(cudnnGetErrorString(CUDNN_STATUS_EXECUTION_FAILED), "CUDNN_STATUS_EXECUTION_FAILED") == 0);
    CHECK(cudnnGetErrorString((cudnnStatus_t)123456) != NULL);
}

static void test_handle_and_stream(void)
{
    cudnnHandle_t h = NULL;
    CHECK(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    CHECK(h != NULL);
    cudaStream_t s = (cudaStream_t)1;
    CHECK(cudnnGetStream(h, &s) == CUDNN_STATUS_SUCCESS);
    CHECK(s == NULL);
    CHECK(cudnnSetStream(h, NULL) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetStream(NULL, &s) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetStream(NULL, NULL) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnCreate(NULL) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnDestroy(h) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnDestroy(NULL) == CUDNN_STATUS_BAD_PARAM);
}

static void test_output_dims(void)
{
    for (int ci = 0; ci < NCASES; ci++) {
        const spec *s = &cases[ci];
        descs d;
        make_descs(s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, &d);
        int nd = s->nsp + 2, got[5];
        CHECK(cudnnGetConvolutionNdForwardOutputDim(d.conv, d.x, d.w, nd, got) == CUDNN_STATUS_SUCCESS);
        CHECK(got[0] == s->n && got[1] == s->k);
        for (int i = 0; i < s->nsp; i++) CHECK(got[2 + i] == out_size(s, i));
        if (nd == 4) {
            int n, c, h, w;
            CHECK(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w) == CUDNN_STATUS_SUCCESS);
            CHECK(n == s->n && c == s->k && h == out_size(s, 0) && w == out_size(s, 1));
        }
        free_descs(&d);
    }
    /* hand values: 7 wide, kernel 3 dilated 2 (span 5), pad 1, stride 2 -> 1 + (9 - 5) / 2 = 3 */
    cudnnTensorDescriptor_t x;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&c);
    CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 1, 7) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 4, 1, 3) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetConvolution2dDescriptor(c, 0, 1, 1, 2, 1, 2, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_SUCCESS);
    int n, ch, h, wd;
    CHECK(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd) == CUDNN_STATUS_SUCCESS);
    CHECK(n == 2 && ch == 6 && h == 1 && wd == 3);
    /* groups change the channels the filter must have */
    CHECK(cudnnSetConvolutionGroupCount(c, 2) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 2, 1, 3) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd) == CUDNN_STATUS_SUCCESS);
    /* a dilated kernel wider than the padded input */
    CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 6, 2, 1, 6) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd) == CUDNN_STATUS_BAD_PARAM);
    int dims[4];
    CHECK(cudnnGetConvolutionNdForwardOutputDim(c, x, w, 3, dims) == CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(c);
}

static void test_descriptor_setters(void)
{
    cudnnTensorDescriptor_t t;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t c;
    cudnnCreateTensorDescriptor(&t);
    cudnnCreateFilterDescriptor(&f);
    cudnnCreateConvolutionDescriptor(&c);
    int dims[5] = {2, 3, 4, 5, 6}, strides[5] = {360, 120, 30, 6, 1};
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 5, dims, strides) == CUDNN_STATUS_SUCCESS);
    cudnnDataType_t dt;
    int nd, gd[5], gs[5];
    CHECK(cudnnGetTensorNdDescriptor(t, 5, &dt, &nd, gd, gs) == CUDNN_STATUS_SUCCESS);
    CHECK(dt == CUDNN_DATA_FLOAT && nd == 5 && gd[4] == 6 && gs[0] == 360 && gs[3] == 6);
    int zero[5] = {2, 0, 4, 5, 6};
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 5, zero, strides) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetTensorNdDescriptor(t, (cudnnDataType_t)999, 5, dims, strides) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, CUDNN_DIM_MAX + 1, dims, strides) ==
          CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -2, 3, 3) == CUDNN_STATUS_BAD_PARAM);
    /* the 4-D setter's packed strides, both layouts */
    int n, ch, h, w, ns, cs, hs, ws;
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 2, 3, 4, 5) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetTensor4dDescriptor(t, &dt, &n, &ch, &h, &w, &ns, &cs, &hs, &ws) == CUDNN_STATUS_SUCCESS);
    CHECK(dt == CUDNN_DATA_DOUBLE && n == 2 && ch == 3 && h == 4 && w == 5);
    CHECK(ns == 60 && cs == 20 && hs == 5 && ws == 1);
    CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 3, 4, 5) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetTensor4dDescriptor(t, &dt, &n, &ch, &h, &w, &ns, &cs, &hs, &ws) == CUDNN_STATUS_SUCCESS);
    CHECK(ns == 60 && cs == 1 && hs == 15 && ws == 3);

    int fd[3] = {4, 2, 3};
    CHECK(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, fd) == CUDNN_STATUS_SUCCESS);
    cudnnTensorFormat_t fmt;
    int gf[3];
    CHECK(cudnnGetFilterNdDescriptor(f, 3, &dt, &fmt, &nd, gf) == CUDNN_STATUS_SUCCESS);
    CHECK(nd == 3 && fmt == CUDNN_TENSOR_NCHW && gf[0] == 4 && gf[2] == 3);
    CHECK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, 1, 1, 1) == CUDNN_STATUS_BAD_PARAM);

    int pad[2] = {1, 1}, stride[2] = {1, 1}, dil[2] = {1, 1}, neg[2] = {-1, 0}, none[2] = {0, 1};
    CHECK(cudnnSetConvolutionNdDescriptor(c, 2, pad, stride, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetConvolutionNdDescriptor(c, 2, neg, stride, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionNdDescriptor(c, 2, pad, none, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionNdDescriptor(c, 2, pad, stride, none, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionNdDescriptor(c, 2, pad, stride, dil, (cudnnConvolutionMode_t)7, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolution2dDescriptor(c, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionGroupCount(c, 0) == CUDNN_STATUS_BAD_PARAM);
    int groups = 0;
    CHECK(cudnnSetConvolutionGroupCount(c, 3) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetConvolutionGroupCount(c, &groups) == CUDNN_STATUS_SUCCESS && groups == 3);
    cudnnMathType_t m;
    CHECK(cudnnGetConvolutionMathType(c, &m) == CUDNN_STATUS_SUCCESS && m == CUDNN_DEFAULT_MATH);
    CHECK(cudnnSetConvolutionMathType(c, CUDNN_TENSOR_OP_MATH) == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetConvolutionMathType(c, &m) == CUDNN_STATUS_SUCCESS && m == CUDNN_TENSOR_OP_MATH);
    CHECK(cudnnSetConvolutionMathType(c, (cudnnMathType_t)42) == CUDNN_STATUS_BAD_PARAM);
    cudnnDestroyTensorDescriptor(t);
    cudnnDestroyFilterDescriptor(f);
    cudnnDestroyConvolutionDescriptor(c);
}

/* The heuristics' lists: every algorithm once, the two supported ones first
 * with SUCCESS, one of them needing the workspace Get*WorkspaceSize names. */
static void test_algorithm_lists(void)
{
    const spec *s = &cases[1];
    descs d;
    make_descs(s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, &d);
    CHECK(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS);
    int count = 0, got = 0;

    CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count) == CUDNN_STATUS_SUCCESS);
    CHECK(count == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    cudnnConvolutionFwdAlgoPerf_t fp[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, count, &got, fp) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(got == count);
    int ok = 0, with_ws = 0, seen = 0;
    for (int i = 0; i < got; i++) {
        seen |= 1 << fp[i].algo;
        if (fp[i].status != CUDNN_STATUS_SUCCESS) { CHECK(fp[i].status == CUDNN_STATUS_NOT_SUPPORTED); continue; }
        CHECK(i == ok);         /* the supported ones come first */
        ok++;
        size_t ws = 1;
        CHECK(workspace_size(&d, FWD, fp[i].algo, &ws) == CUDNN_STATUS_SUCCESS);
        CHECK(ws == fp[i].memory);
        with_ws += ws > 0;
        CHECK(fp[i].mathType == CUDNN_FMA_MATH);
        CHECK(fp[i].determinism == CUDNN_DETERMINISTIC);
    }
    CHECK(ok == 2 && with_ws == 1 && seen == (1 << count) - 1);
    /* fewer requested, fewer returned */
    CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, 1, &got, fp) == CUDNN_STATUS_SUCCESS);
    CHECK(got == 1 && fp[0].status == CUDNN_STATUS_SUCCESS);
    CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, 0, &got, fp) ==
          CUDNN_STATUS_BAD_PARAM);

    CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count) == CUDNN_STATUS_SUCCESS);
    cudnnConvolutionBwdDataAlgoPerf_t dp[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w, d.y, d.conv, d.x, count, &got, dp) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(got == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    ok = with_ws = 0;
    for (int i = 0; i < got; i++) {
        if (dp[i].status != CUDNN_STATUS_SUCCESS) continue;
        ok++;
        size_t ws = 1;
        CHECK(workspace_size(&d, BWD_DATA, dp[i].algo, &ws) == CUDNN_STATUS_SUCCESS && ws == dp[i].memory);
        with_ws += ws > 0;
        CHECK(dp[i].mathType == CUDNN_FMA_MATH);
    }
    CHECK(ok == 2 && with_ws == 1);

    CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count) == CUDNN_STATUS_SUCCESS);
    cudnnConvolutionBwdFilterAlgoPerf_t wp[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.x, d.y, d.conv, d.w, count, &got, wp) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(got == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    ok = with_ws = 0;
    for (int i = 0; i < got; i++) {
        if (wp[i].status != CUDNN_STATUS_SUCCESS) continue;
        ok++;
        size_t ws = 1;
        CHECK(workspace_size(&d, BWD_FILTER, wp[i].algo, &ws) == CUDNN_STATUS_SUCCESS && ws == wp[i].memory);
        with_ws += ws > 0;
    }
    CHECK(ok == 2 && with_ws == 1);

    /* an algorithm this device lacks: no workspace size, no call */
    size_t ws = 0;
    CHECK(workspace_size(&d, FWD, CUDNN_CONVOLUTION_FWD_ALGO_FFT, &ws) == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(workspace_size(&d, BWD_DATA, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, &ws) == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK(workspace_size(&d, BWD_FILTER, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, &ws) == CUDNN_STATUS_NOT_SUPPORTED);
    double *x = random_array(x_count(s)), *w = random_array(w_count(s)), *y = filled_array(y_count(s), 0);
    void *dx = upload(x, x_count(s), CUDNN_DATA_FLOAT), *dw = upload(w, w_count(s), CUDNN_DATA_FLOAT);
    void *dy = upload(y, y_count(s), CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    CHECK(call_op(&d, FWD, CUDNN_CONVOLUTION_FWD_ALGO_FFT, dx, dw, dy, NULL, 0, &one, &zero) ==
          CUDNN_STATUS_NOT_SUPPORTED);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(w);
    free(y);
    free_descs(&d);
}

/* A workspace smaller than the algorithm's size is refused at the call and
 * the output is left alone; an exact one works and is written. */
static void test_workspace(void)
{
    const spec *s = &cases[3];
    descs d;
    make_descs(s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, &d);
    for (int op = FWD; op <= BWD_FILTER; op++) {
        int algo = algo_of(op, 1);
        size_t need = 0;
        CHECK(workspace_size(&d, op, algo, &need) == CUDNN_STATUS_SUCCESS);
        CHECK(need > 0);
        size_t na = op_a_count(s, op), nb = op_b_count(s, op), no = op_out_count(s, op);
        double *a = random_array(na), *b = random_array(nb), *sentinel = filled_array(no, 7.0);
        void *da = upload(a, na, CUDNN_DATA_FLOAT), *db = upload(b, nb, CUDNN_DATA_FLOAT);
        void *dout = upload(sentinel, no, CUDNN_DATA_FLOAT), *ws = NULL;
        CHECK(cudaMalloc(&ws, need) == cudaSuccess);
        float one = 1, zero = 0;
        CHECK(call_op(&d, op, algo, da, db, dout, ws, need - 1, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
        CHECK(call_op(&d, op, algo, da, db, dout, NULL, 0, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
        CHECK(call_op(&d, op, algo, da, db, dout, NULL, need, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
        /* misaligned for the float column buffer */
        CHECK(CUDNN_STATUS_CATEGORY(call_op(&d, op, algo, da, db, dout, (char *)ws + 1, need, &one, &zero)) ==
              CUDNN_STATUS_BAD_PARAM);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        double *got = filled_array(no, 0);
        download(dout, no, CUDNN_DATA_FLOAT, got);
        int untouched = 1;
        for (size_t i = 0; i < no; i++) untouched &= got[i] == 7.0;
        CHECK(untouched);

        /* the exact size works, and the algorithm really writes its workspace */
        unsigned char *pattern = (unsigned char *)malloc(need);
        memset(pattern, 0xff, need);
        cudaMemcpy(ws, pattern, need, cudaMemcpyHostToDevice);
        CHECK(call_op(&d, op, algo, da, db, dout, ws, need, &one, &zero) == CUDNN_STATUS_SUCCESS);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        unsigned char *after = (unsigned char *)malloc(need);
        cudaMemcpy(after, ws, need, cudaMemcpyDeviceToHost);
        CHECK(memcmp(after, pattern, need) != 0);
        download(dout, no, CUDNN_DATA_FLOAT, got);
        CHECK(got[0] != 7.0);
        /* the direct algorithm needs none and takes a NULL workspace */
        CHECK(call_op(&d, op, algo_of(op, 0), da, db, dout, NULL, 0, &one, &zero) == CUDNN_STATUS_SUCCESS);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        free(pattern);
        free(after);
        free(got);
        free(a);
        free(b);
        free(sentinel);
        cudaFree(da);
        cudaFree(db);
        cudaFree(dout);
        cudaFree(ws);
    }
    free_descs(&d);
}

/* The statuses the documentation gives for descriptors that do not fit
 * together, checked for all three directions where they apply. */
static void test_bad_descriptors(void)
{
    const spec base = {"bad", 2, 2, 4, 6, 2, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION};
    descs d;
    make_descs(&base, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, &d);
    double *hx = filled_array(x_count(&base), 1), *hw = filled_array(w_count(&base), 1);
    double *hy = filled_array(y_count(&base), 1);
    void *x = upload(hx, x_count(&base), CUDNN_DATA_FLOAT), *w = upload(hw, w_count(&base), CUDNN_DATA_FLOAT);
    void *y = upload(hy, y_count(&base), CUDNN_DATA_FLOAT);
    float one = 1, zero = 0;
    int fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, bd = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
    int bf = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;

    /* the good problem first, so the failures below are the changes' */
    CHECK(call_op(&d, FWD, fwd, x, w, y, NULL, 0, &one, &zero) == CUDNN_STATUS_SUCCESS);
    CHECK(call_op(&d, BWD_DATA, bd, y, w, x, NULL, 0, &one, &zero) == CUDNN_STATUS_SUCCESS);
    CHECK(call_op(&d, BWD_FILTER, bf, x, y, w, NULL, 0, &one, &zero) == CUDNN_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);

    /* NULL pointers and scalars */
    CHECK(call_op(&d, FWD, fwd, NULL, w, y, NULL, 0, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
    CHECK(call_op(&d, FWD, fwd, x, w, y, NULL, 0, NULL, &zero) == CUDNN_STATUS_BAD_PARAM);
    CHECK(call_op(&d, BWD_DATA, bd, y, w, NULL, NULL, 0, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
    CHECK(call_op(&d, BWD_FILTER, bf, x, y, w, NULL, 0, &one, NULL) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnConvolutionForward(handle, &one, NULL, x, d.w, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                  NULL, 0, &zero, d.y, y) == CUDNN_STATUS_BAD_PARAM);

    /* input channels that are not filter channels x groups */
    CHECK(cudnnSetConvolutionGroupCount(d.conv, 1) == CUDNN_STATUS_SUCCESS);
    CHECK(call_op(&d, FWD, fwd, x, w, y, NULL, 0, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
    CHECK(call_op(&d, BWD_DATA, bd, y, w, x, NULL, 0, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
    CHECK(call_op(&d, BWD_FILTER, bf, x, y, w, NULL, 0, &one, &zero) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionGroupCount(d.conv, 2) == CUDNN_STATUS_SUCCESS);

    /* output channels not a multiple of the groups: K = 5 with y of 5 channels */
    {
        cudnnFilterDescriptor_t w5;
        cudnnTensorDescriptor_t y5;
        cudnnCreateFilterDescriptor(&w5);
        cudnnCreateTensorDescriptor(&y5);
        CHECK(cudnnSetFilter4dDescriptor(w5, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, 2, 3, 3) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnSetTensor4dDescriptor(y5, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 5, 6, 6) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionForward(handle, &one, d.x, x, w5, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, y5, y) == CUDNN_STATUS_BAD_PARAM);
        CHECK(cudnnConvolutionBackwardData(handle, &one, w5, w, y5, y, d.conv, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, NULL,
                                           0, &zero, d.x, x) == CUDNN_STATUS_NOT_SUPPORTED);
        CHECK(cudnnConvolutionBackwardFilter(handle, &one, d.x, x, y5, y, d.conv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                                             NULL, 0, &zero, w5, w) == CUDNN_STATUS_BAD_PARAM);
        cudnnDestroyFilterDescriptor(w5);
        cudnnDestroyTensorDescriptor(y5);
    }

    /* y of the wrong spatial size: NOT_SUPPORTED forward, BAD_PARAM backward
     * (the documented lists); y of the wrong batch or channels: BAD_PARAM */
    {
        cudnnTensorDescriptor_t yb;
        cudnnCreateTensorDescriptor(&yb);
        CHECK(cudnnSetTensor4dDescriptor(yb, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 6, 5, 6) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionForward(handle, &one, d.x, x, d.w, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, yb, y) == CUDNN_STATUS_NOT_SUPPORTED);
        CHECK(cudnnConvolutionBackwardData(handle, &one, d.w, w, yb, y, d.conv, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                                           NULL, 0, &zero, d.x, x) == CUDNN_STATUS_BAD_PARAM);
        CHECK(cudnnConvolutionBackwardFilter(handle, &one, d.x, x, yb, y, d.conv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                                             NULL, 0, &zero, d.w, w) == CUDNN_STATUS_BAD_PARAM);
        CHECK(cudnnSetTensor4dDescriptor(yb, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 6, 6, 6) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionForward(handle, &one, d.x, x, d.w, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, yb, y) == CUDNN_STATUS_BAD_PARAM);
        CHECK(cudnnSetTensor4dDescriptor(yb, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 6, 6) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionBackwardFilter(handle, &one, d.x, x, yb, y, d.conv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                                             NULL, 0, &zero, d.w, w) == CUDNN_STATUS_BAD_PARAM);
        /* ranks that differ, and a conv descriptor of the wrong rank */
        int d5[5] = {2, 6, 6, 6, 1}, s5[5] = {216, 36, 6, 1, 1};
        CHECK(cudnnSetTensorNdDescriptor(yb, CUDNN_DATA_FLOAT, 5, d5, s5) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionForward(handle, &one, d.x, x, d.w, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, yb, y) == CUDNN_STATUS_BAD_PARAM);
        /* a data type that differs from x's */
        CHECK(cudnnSetTensor4dDescriptor(yb, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 2, 6, 6, 6) ==
              CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionForward(handle, &one, d.x, x, d.w, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, yb, y) == CUDNN_STATUS_BAD_PARAM);
        /* a created but never set descriptor */
        cudnnTensorDescriptor_t unset;
        cudnnCreateTensorDescriptor(&unset);
        CHECK(cudnnConvolutionForward(handle, &one, unset, x, d.w, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, d.y, y) == CUDNN_STATUS_BAD_PARAM);
        cudnnDestroyTensorDescriptor(unset);
        cudnnDestroyTensorDescriptor(yb);
    }

    /* a kernel wider than the padded input */
    {
        cudnnConvolutionDescriptor_t c;
        cudnnCreateConvolutionDescriptor(&c);
        CHECK(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 4, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
              CUDNN_STATUS_SUCCESS);
        CHECK(cudnnSetConvolutionGroupCount(c, 2) == CUDNN_STATUS_SUCCESS);
        size_t ws;
        CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, c, d.y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                      &ws) == CUDNN_STATUS_BAD_PARAM);
        cudnnDestroyConvolutionDescriptor(c);
    }

    /* configurations this device does not have: an NHWC filter, int8,
     * half arithmetic on half tensors, float tensors with double arithmetic */
    {
        cudnnFilterDescriptor_t wn;
        cudnnCreateFilterDescriptor(&wn);
        CHECK(cudnnSetFilter4dDescriptor(wn, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 6, 2, 3, 3) == CUDNN_STATUS_SUCCESS);
        CHECK(cudnnConvolutionForward(handle, &one, d.x, x, wn, w, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                      NULL, 0, &zero, d.y, y) == CUDNN_STATUS_NOT_SUPPORTED);
        cudnnDestroyFilterDescriptor(wn);

        descs q;
        make_descs(&base, CUDNN_DATA_INT8, CUDNN_DATA_INT32, &q);
        CHECK(call_op(&q, FWD, fwd, x, w, y, NULL, 0, &one, &zero) == CUDNN_STATUS_NOT_SUPPORTED);
        free_descs(&q);
        make_descs(&base, CUDNN_DATA_HALF, CUDNN_DATA_HALF, &q);
        CHECK(call_op(&q, FWD, fwd, x, w, y, NULL, 0, &one, &zero) == CUDNN_STATUS_NOT_SUPPORTED);
        free_descs(&q);
        make_descs(&base, CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, &q);
        CHECK(call_op(&q, FWD, fwd, x, w, y, NULL, 0, &one, &zero) == CUDNN_STATUS_NOT_SUPPORTED);
        CHECK(call_op(&q, BWD_DATA, bd, y, w, x, NULL, 0, &one, &zero) == CUDNN_STATUS_NOT_SUPPORTED);
        CHECK(call_op(&q, BWD_FILTER, bf, x, y, w, NULL, 0, &one, &zero) == CUDNN_STATUS_NOT_SUPPORTED);
        free_descs(&q);
    }
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    free(hx);
    free(hw);
    free(hy);
    free_descs(&d);
}

/* ---- layouts and storage types ------------------------------------------------------ */

/* x in NHWC (Set4dDescriptor's own strides) and y with padded rows
 * (Set4dDescriptorEx): results as the packed problem's, the padding of y
 * left as it was. */
static void test_strided_tensors(void)
{
    const spec *s = &cases[3];  /* 2-D, groups 2, pad 1 */
    int H = s->in[0], W = s->in[1], OH = out_size(s, 0), OW = out_size(s, 1), RW = OW + 3;
    size_t nx = x_count(s), nw = w_count(s), ny = y_count(s);
    double *x = random_array(nx), *w = random_array(nw), *want = filled_array(ny, 0);
    naive_forward(s, x, w, want);
    /* NHWC copy of x */
    double *xh = filled_array(nx, 0);
    for (int n = 0; n < s->n; n++)
        for (int c = 0; c < s->c; c++)
            for (int h = 0; h < H; h++)
                for (int q = 0; q < W; q++)
                    xh[(((size_t)n * H + h) * W + q) * s->c + c] = x[(((size_t)n * s->c + c) * H + h) * W + q];
    size_t ny_padded = (size_t)s->n * s->k * OH * RW;
    double *yh = filled_array(ny_padded, 3.0);

    descs d;
    make_descs(s, CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, &d);
    CHECK(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_DOUBLE, s->n, s->c, H, W) ==
          CUDNN_STATUS_SUCCESS);
    CHECK(cudnnSetTensor4dDescriptorEx(d.y, CUDNN_DATA_DOUBLE, s->n, s->k, OH, OW, s->k * OH * RW, OH * RW, RW, 1) ==
          CUDNN_STATUS_SUCCESS);
    void *dx = upload(xh, nx, CUDNN_DATA_DOUBLE), *dw = upload(w, nw, CUDNN_DATA_DOUBLE);
    void *dy = upload(yh, ny_padded, CUDNN_DATA_DOUBLE);
    double one = 1, zero = 0;
    for (int which = 0; which < 2; which++) {
        size_t need = 0;
        CHECK(workspace_size(&d, FWD, algo_of(FWD, which), &need) == CUDNN_STATUS_SUCCESS);
        void *ws = NULL;
        if (need) cudaMalloc(&ws, need);
        CHECK(call_op(&d, FWD, algo_of(FWD, which), dx, dw, dy, ws, need, &one, &zero) == CUDNN_STATUS_SUCCESS);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        download(dy, ny_padded, CUDNN_DATA_DOUBLE, yh);
        int ok = 1;
        for (int n = 0; n < s->n; n++)
            for (int k = 0; k < s->k; k++)
                for (int h = 0; h < OH; h++)
                    for (int q = 0; q < RW; q++) {
                        double v = yh[(((size_t)n * s->k + k) * OH + h) * RW + q];
                        if (q >= OW) ok &= v == 3.0;
                        else ok &= fabs(v - want[(((size_t)n * s->k + k) * OH + h) * OW + q]) < 1e-12;
                    }
        CHECK(ok);
        /* the adjoint through the same strided descriptors: dx comes back NHWC */
        double *g = random_array(ny);
        double *gp = filled_array(ny_padded, 0);
        for (int n = 0; n < s->n; n++)
            for (int k = 0; k < s->k; k++)
                for (int h = 0; h < OH; h++)
                    for (int q = 0; q < OW; q++)
                        gp[(((size_t)n * s->k + k) * OH + h) * RW + q] = g[(((size_t)n * s->k + k) * OH + h) * OW + q];
        double *dxw = filled_array(nx, 0);
        naive_backward_data(s, g, w, dxw);
        void *dg = upload(gp, ny_padded, CUDNN_DATA_DOUBLE), *dgx = upload(xh, nx, CUDNN_DATA_DOUBLE);
        size_t need_bd = 0;
        CHECK(workspace_size(&d, BWD_DATA, algo_of(BWD_DATA, which), &need_bd) == CUDNN_STATUS_SUCCESS);
        void *ws2 = NULL;
        if (need_bd) cudaMalloc(&ws2, need_bd);
        CHECK(call_op(&d, BWD_DATA, algo_of(BWD_DATA, which), dg, dw, dgx, ws2, need_bd, &one, &zero) ==
              CUDNN_STATUS_SUCCESS);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        double *got = filled_array(nx, 0);
        download(dgx, nx, CUDNN_DATA_DOUBLE, got);
        ok = 1;
        for (int n = 0; n < s->n; n++)
            for (int c = 0; c < s->c; c++)
                for (int h = 0; h < H; h++)
                    for (int q = 0; q < W; q++)
                        ok &= fabs(got[(((size_t)n * H + h) * W + q) * s->c + c] -
                                   dxw[(((size_t)n * s->c + c) * H + h) * W + q]) < 1e-12;
        CHECK(ok);
        cudaFree(dg);
        cudaFree(dgx);
        cudaFree(ws);
        cudaFree(ws2);
        free(g);
        free(gp);
        free(dxw);
        free(got);
    }
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(w);
    free(want);
    free(xh);
    free(yh);
    free_descs(&d);
}

/* binary16 and bfloat16 bits of small integers and halves, which both
 * formats hold exactly (all this test stores) */
static uint16_t exact_half(double v)
{
    if (v == 0) return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    int e = 0;
    while (a >= 2) { a /= 2; e++; }
    while (a < 1) { a *= 2; e--; }
    return (uint16_t)(sign | ((e + 15) << 10) | (uint16_t)((a - 1) * 1024));
}

static uint16_t exact_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

/* PSEUDO_HALF and bfloat16: storage in 16 bits, float arithmetic; inputs
 * small integers so every sum is exact and the results can be compared
 * bit for bit. */
static void test_half_and_bfloat16(void)
{
    const spec *s = &cases[1];
    size_t nx = x_count(s), nw = w_count(s), ny = y_count(s);
    double *x = filled_array(nx, 0), *w = filled_array(nw, 0), *want = filled_array(ny, 0);
    for (size_t i = 0; i < nx; i++) x[i] = (double)((int)(i % 7) - 3);
    for (size_t i = 0; i < nw; i++) w[i] = (double)((int)(i % 3) - 1);
    naive_forward(s, x, w, want);
    static const cudnnDataType_t types[2] = {CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16};
    for (int ti = 0; ti < 2; ti++) {
        uint16_t *hx = (uint16_t *)malloc(nx * 2), *hw = (uint16_t *)malloc(nw * 2), *hy = (uint16_t *)malloc(ny * 2);
        for (size_t i = 0; i < nx; i++) hx[i] = ti ? exact_bf16(x[i]) : exact_half(x[i]);
        for (size_t i = 0; i < nw; i++) hw[i] = ti ? exact_bf16(w[i]) : exact_half(w[i]);
        for (size_t i = 0; i < ny; i++) hy[i] = 0x7fc0;     /* a NaN in both formats */
        void *dx, *dw, *dy;
        cudaMalloc(&dx, nx * 2);
        cudaMalloc(&dw, nw * 2);
        cudaMalloc(&dy, ny * 2);
        cudaMemcpy(dx, hx, nx * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(dw, hw, nw * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(dy, hy, ny * 2, cudaMemcpyHostToDevice);
        descs d;
        make_descs(s, types[ti], CUDNN_DATA_FLOAT, &d);
        float alpha = 0.5f, zero = 0;
        for (int which = 0; which < 2; which++) {
            size_t need = 0;
            CHECK(workspace_size(&d, FWD, algo_of(FWD, which), &need) == CUDNN_STATUS_SUCCESS);
            void *ws = NULL;
            if (need) cudaMalloc(&ws, need);
            CHECK(call_op(&d, FWD, algo_of(FWD, which), dx, dw, dy, ws, need, &alpha, &zero) == CUDNN_STATUS_SUCCESS);
            CHECK(cudaDeviceSynchronize() == cudaSuccess);
            cudaMemcpy(hy, dy, ny * 2, cudaMemcpyDeviceToHost);
            int ok = 1;
            for (size_t i = 0; i < ny; i++)
                ok &= hy[i] == (ti ? exact_bf16(0.5 * want[i]) : exact_half(0.5 * want[i]));
            CHECK(ok);
            cudaFree(ws);
        }
        free_descs(&d);
        cudaFree(dx);
        cudaFree(dw);
        cudaFree(dy);
        free(hx);
        free(hw);
        free(hy);
    }
    free(x);
    free(w);
    free(want);
}

/* The final rounding to 16 bits is round-to-nearest-even, ties, overflow
 * and subnormals included: a one-element 1x1 convolution of 1 by 1 stores
 * alpha. Expected bits from Python's struct 'e' format (round half even)
 * and the bfloat16 rounding rule. */
static void test_half_rounding(void)
{
    static const struct { float v; uint16_t half; } hs[] = {
        {1.00048828125f, 0x3c00},           /* 1 + 2^-11: a tie, to even */
        {1.00146484375f, 0x3c02},           /* 1 + 3 * 2^-11: a tie, to even */
        {1.0006103515625f, 0x3c01},         /* above the tie */
        {65519.0f, 0x7bff},                 /* below the overflow threshold */
        {65520.0f, 0x7c00},                 /* at it: infinity */
        {5.9604644775390625e-08f, 0x0001},  /* 2^-24, the least subnormal */
        {2.9802322387695312e-08f, 0x0000},  /* 2^-25: a tie, to even (zero) */
        {8.940696716308594e-08f, 0x0002},   /* 3 * 2^-25: a tie, to even */
        {-1.4901161193847656e-07f, 0x8002}, /* -2.5 * 2^-24 */
        {6.103515625e-05f, 0x0400},         /* 2^-14, the least normal */
    };
    static const struct { float v; uint16_t bf; } bs[] = {
        {1.00390625f, 0x3f80}, {1.01171875f, 0x3f82}, {1.0048828125f, 0x3f81}, {-2.0f, 0xc000}, {3.0e38f, 0x7f62},
    };
    const spec one = {"1x1", 2, 1, 1, 1, 1, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {1, 1}, CUDNN_CROSS_CORRELATION};
    for (int ti = 0; ti < 2; ti++) {
        cudnnDataType_t dt = ti ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
        uint16_t unit = ti ? 0x3f80 : 0x3c00, out = 0;
        void *dx, *dw, *dy;
        cudaMalloc(&dx, 2);
        cudaMalloc(&dw, 2);
        cudaMalloc(&dy, 2);
        cudaMemcpy(dx, &unit, 2, cudaMemcpyHostToDevice);
        cudaMemcpy(dw, &unit, 2, cudaMemcpyHostToDevice);
        descs d;
        make_descs(&one, dt, CUDNN_DATA_FLOAT, &d);
        int n = ti ? (int)(sizeof bs / sizeof bs[0]) : (int)(sizeof hs / sizeof hs[0]);
        for (int i = 0; i < n; i++) {
            float alpha = ti ? bs[i].v : hs[i].v, zero = 0;
            uint16_t want = ti ? bs[i].bf : hs[i].half;
            CHECK(call_op(&d, FWD, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, dx, dw, dy, NULL, 0, &alpha, &zero) ==
                  CUDNN_STATUS_SUCCESS);
            CHECK(cudaDeviceSynchronize() == cudaSuccess);
            cudaMemcpy(&out, dy, 2, cudaMemcpyDeviceToHost);
            if (out != want) printf("#   %s of %.9g: 0x%04x, expected 0x%04x\n", ti ? "bfloat16" : "half",
                                    (double)alpha, out, want);
            CHECK(out == want);
        }
        free_descs(&d);
        cudaFree(dx);
        cudaFree(dw);
        cudaFree(dy);
    }
}

/* ember's call sequence (kernels/conv.cu): heuristics, then the workspace
 * size after setting each algorithm's math type, then the call with that
 * size; here for a 1-D problem described in 4-D with a height of 1. */
static void test_heuristics_then_call(void)
{
    const spec *s = &cases[5];
    descs d;
    make_descs(s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, &d);
    CHECK(cudnnSetConvolutionMathType(d.conv, CUDNN_DEFAULT_MATH) == CUDNN_STATUS_SUCCESS);
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int n = 0;
    CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, 8, &n, perf) == CUDNN_STATUS_SUCCESS);
    size_t nx = x_count(s), nw = w_count(s), ny = y_count(s);
    double *x = random_array(nx), *w = random_array(nw), *want = filled_array(ny, 0), *got = filled_array(ny, 0);
    naive_forward(s, x, w, want);
    void *dx = upload(x, nx, CUDNN_DATA_FLOAT), *dw = upload(w, nw, CUDNN_DATA_FLOAT);
    void *dy = upload(got, ny, CUDNN_DATA_FLOAT);
    int ran = 0;
    for (int i = 0; i < n; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        CHECK(cudnnSetConvolutionMathType(d.conv, perf[i].mathType) == CUDNN_STATUS_SUCCESS);
        size_t ws_bytes = 0;
        CHECK(workspace_size(&d, FWD, perf[i].algo, &ws_bytes) == CUDNN_STATUS_SUCCESS);
        void *ws = NULL;
        if (ws_bytes) cudaMalloc(&ws, ws_bytes);
        float one = 1, zero = 0;
        CHECK(call_op(&d, FWD, perf[i].algo, dx, dw, dy, ws, ws_bytes, &one, &zero) == CUDNN_STATUS_SUCCESS);
        CHECK(cudaDeviceSynchronize() == cudaSuccess);
        download(dy, ny, CUDNN_DATA_FLOAT, got);
        for (size_t j = 0; j < ny; j++) CHECK_NEAR(got[j], want[j], 1e-5);
        cudaFree(ws);
        ran++;
    }
    CHECK(ran == 2);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(w);
    free(want);
    free(got);
    free_descs(&d);
}

int main(void)
{
    if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
        printf("Bail out! cudnnCreate failed\n");
        return 1;
    }
    RUN(test_version_and_strings);
    RUN(test_handle_and_stream);
    RUN(test_descriptor_setters);
    RUN(test_output_dims);
    RUN(test_forward_vs_naive);
    RUN(test_backward_data_vs_naive);
    RUN(test_backward_filter_vs_naive);
    RUN(test_adjoint_identity);
    RUN(test_alpha_beta);
    RUN(test_algorithm_lists);
    RUN(test_workspace);
    RUN(test_bad_descriptors);
    RUN(test_strided_tensors);
    RUN(test_half_and_bfloat16);
    RUN(test_half_rounding);
    RUN(test_heuristics_then_call);
    cudnnDestroy(handle);
    CHECK_DONE();
}
