/* attention.c — fused scaled-dot-product attention, forward and backward
 * (the attention family of backend.h; formulas there).
 *
 * Flash-style: no Tq x Tk matrix ever exists. Queries and keys are cut into
 * tiles, scores are formed tile by tile, s = scale * <q, k> (+ mask, -inf
 * past the causal limit), and tiles a causal query tile cannot see are
 * skipped. The forward keeps, per query row, a running maximum m and sum l
 * of exp(s - m) (online softmax): when a later key tile raises the maximum,
 * the row's partial output is rescaled by exp(m_old - m_new). The backward
 * recomputes P = exp(s - lse) from the saved log-sum-exp.
 *
 * Forward: one work item is a query tile of FQ rows (the last tiles first:
 * causal ones have the most keys). Its queries are packed transposed once,
 * and the scores of each key tile of FK keys are kept transposed, St[key]
 * [query] = K_tile Qt, so the max, exp and sum of the online softmax run
 * down the columns with the queries in the vector lanes; O += P V then reads
 * St as a transposed operand.
 *
 * Backward: one sweep per item over (key tile of GK keys, outer; query tile
 * of GQ rows, inner), each score tile computed once: S = Q Kt and dP = dO Vt
 * (the key tile packed transposed once), dS = P (dP - D_i); dK and dV of the
 * key tile are summed in scratch, and dS K is added to dQ's rows. An item is
 * a part of one problem's key tiles: np = ceil(PARTS / B) parts of about
 * equal work (so one long sequence keeps every thread busy without computing
 * its score tiles twice). Part 0 sums its dQ in gq itself, parts 1.. each in
 * a partial dQ of the rows they reach (O(np Tq D) per problem, np <= PARTS),
 * added up afterwards in part order. The parts depend on the shapes only,
 * every item writes only its own rows and every sum runs in a fixed order,
 * so results do not depend on the thread count or the load (bit for bit).
 *
 * Arithmetic is in the input's dtype (float32 or float64), with l, lse's
 * logarithm and D_i in double. The tile products are small GEMMs on register
 * blocks (4 rows x 4 vectors of 16 floats with AVX-512) written with GCC's
 * vector extension and explicit fused multiply-adds, summing over k in order
 * from 0, so a score comes out the same bits in the forward (St) and in the
 * backward (S): the backward's P is formed from the very scores the forward's
 * lse came from. float32's exp is a vectorised polynomial (attn_exp_f32),
 * float64's libm's exp.
 *
 * Measured (this 2-core AVX-512 machine, causal self-attention of one
 * sequence, D = 64, float32, forward + backward, scripts/bench/attention.lua,
 * best of runs taken in turns with PyTorch 2.15's fused CPU kernel):
 *   T = 4096: 25.9 ms (before this design 86.5 ms), PyTorch 43.5 ms
 *   T = 8192: 101 ms (before 373 ms), PyTorch 170 ms
 *   float64, T = 4096: 101 ms (before 1.4 s)
 * Single-threaded the tile products run at about 190 GFLOP/s, near one
 * core's peak; they take about 80% of the time, the softmax terms the rest.
 *
 * The typed half of this file (kernels, forward, backward) is compiled twice,
 * for float and for double: the file includes itself with ATTN_T set. */
#ifndef ATTN_T

#include "cpu.h"
#include "../philox.h"

#include <stdatomic.h>
#include <stdlib.h>

#define FQ 64           /* forward: query rows per tile (one work item) */
#define FK 64           /* forward: keys per tile */
#define GQ 64           /* backward: query rows per tile */
#define GK 64           /* backward: keys per tile */
_Static_assert(FQ % 16 == 0 && GK % 16 == 0, "score tiles are whole vectors wide");
#define PARTS 8         /* backward: key parts over all problems (see setup_parts) */

typedef struct attn_job {
    const em_attn_params *p;
    bool f32;
    size_t es;                          /* element size */
    int64_t B, Tq, Tk, D, Dv;
    int64_t fqt, fkt;                   /* forward: query and key tiles per problem */
    int64_t gqt, gkt;                   /* backward: the same */
    const char *q, *k, *v, *o, *go;
    const char *mask;                   /* NULL: none */
    int64_t msb, msi, msj;              /* its strides in elements */
    char *out, *gq, *gk, *gv;
    void *lse;                          /* float32 or float64 */
    double *drow;                       /* backward: D_i = <dO_i, O_i>, [B * Tq] */
    int64_t np;                         /* backward: key parts per problem */
    int64_t *part_kt;                   /* [np + 1]: part p has key tiles part_kt[p] .. part_kt[p+1] */
    int64_t *part_row;                  /* [np]: its first query row (partial dQ from there) */
    int64_t *part_off;                  /* [np]: its partial dQ's offset in a problem's share (p >= 1) */
    int64_t part_stride;                /* one problem's share of dqbuf, in elements */
    char *dqbuf;                        /* partial dQ of parts 1.. (part 0 sums in gq) */
    uint32_t key[2];
    double keep_thr;                    /* keep when the lane's integer is below this */
    int mshift;                         /* 32 - mantissa bits of the uniform */
    double keep_scale;                  /* 1 / (1 - p) */
    bool dropout;
    _Atomic int failed;                 /* a thread could not get its scratch */
} attn_job;

/* keep[c] for the keys j0 .. j0+nk-1 of query row i of problem b: the
 * uniform of row-major position n = (b Tq + i) Tk + j (backend.h) */
static void keep_row(const attn_job *j, int64_t b, int64_t i, int64_t j0, int64_t nk, unsigned char *keep)
{
    uint64_t n = ((uint64_t)b * (uint64_t)j->Tq + (uint64_t)i) * (uint64_t)j->Tk + (uint64_t)j0;
    uint32_t x[4];
    uint64_t have = UINT64_MAX;
    for (int64_t c = 0; c < nk; c++, n++) {
        uint64_t k = n / 4;
        if (k != have) {
            uint64_t ctr = j->p->offset + k;
            x[0] = (uint32_t)ctr;
            x[1] = (uint32_t)(ctr >> 32);
            x[2] = ctr < j->p->offset ? 1u : 0u;
            x[3] = 0;
            em_philox_rounds(x, j->key[0], j->key[1]);
            have = k;
        }
        keep[c] = (double)(x[n % 4] >> j->mshift) < j->keep_thr;
    }
}

/* how many of the keys j0 .. j0+nk-1 query row i sees (causal: j <= i) */
static int64_t causal_valid(const attn_job *j, int64_t i, int64_t j0, int64_t nk)
{
    if (!j->p->causal) return nk;
    int64_t v = i - j0 + 1;
    return v < 0 ? 0 : v < nk ? v : nk;
}

/* the first mask element of problem b, query row i, key j */
static const char *mask_at(const attn_job *j, int64_t b, int64_t i, int64_t jj)
{
    return j->mask + (b * j->msb + i * j->msi + jj * j->msj) * (int64_t)j->es;
}

/* The tile products' vectors: as wide as the machine's registers, and
 * blocks of ATTN_NV of them per row (AVX-512: 4 rows x 4 vectors, 16 of the
 * 32 registers; 16-register machines: 4 x 2). Fused multiply-adds where the
 * machine has them (FP_FAST_FMA*), else a multiply and an add: the same
 * choice in every sum of a build. */
#if defined(__AVX512F__)
#define ATTN_VBYTES 64
#define ATTN_NV 4
#elif defined(__AVX__)
#define ATTN_VBYTES 32
#define ATTN_NV 2
#else
#define ATTN_VBYTES 16
#define ATTN_NV 2
#endif
#ifdef FP_FAST_FMAF
#define ATTN_FMAF(a, b, c) fmaf(a, b, c)
#else
#define ATTN_FMAF(a, b, c) ((a) * (b) + (c))
#endif
#ifdef FP_FAST_FMA
#define ATTN_FMAD(a, b, c) fma(a, b, c)
#else
#define ATTN_FMAD(a, b, c) ((a) * (b) + (c))
#endif

/* exp for the float32 softmax terms, whose arguments are s - max or s - lse:
 * at most about 0, or -inf, or NaN (never above 88, where this would be
 * wrong). cpu_exp_f32's reduction and Cephes polynomial (cpu.h) with fused
 * multiply-adds, n taken from the low bits of c log2(e) + 1.5 * 2^23 and
 * added to the exponent field of the result: half cpu_exp_f32's operations,
 * within 1.3 ulp (measured on [-87, 1]). Results below 2^-126 flush to 0;
 * NaN stays NaN. */
static inline float attn_exp_f32(float x)
{
    float c = x < -87.0f ? -87.0f : x;
    float t = ATTN_FMAF(c, 1.44269504088896341f, 12582912.0f);
    float n = t - 12582912.0f;
    float r = ATTN_FMAF(n, -0.693359375f, c);
    r = ATTN_FMAF(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = ATTN_FMAF(p, r, 1.3981999507e-3f);
    p = ATTN_FMAF(p, r, 8.3334519073e-3f);
    p = ATTN_FMAF(p, r, 4.1665795894e-2f);
    p = ATTN_FMAF(p, r, 1.6666665459e-1f);
    p = ATTN_FMAF(p, r, 5.0000001201e-1f);
    float y = ATTN_FMAF(ATTN_FMAF(p, r, 1.0f), r, 1.0f);
    uint32_t tb, yb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&yb, &y, sizeof yb);
    yb += tb << 23;                     /* t's bits are those of 1.5 * 2^23 plus n: n << 23 */
    memcpy(&y, &yb, sizeof y);
    return x < -87.0f ? 0.0f : y;
}

/* the first backward query tile that sees key tile kt */
static int64_t gfirst_qt(const attn_job *j, int64_t kt)
{
    if (!j->p->causal) return 0;
    int64_t f = kt * GK / GQ;
    return f < j->gqt ? f : j->gqt;
}

/* ---- the typed kernels: this file again, once per dtype ------------------------------- *
 * (a quoted #include looks in the including file's own folder first: this file) */

#define ATTN_CAT2(a, b) a##_##b
#define ATTN_CAT(a, b) ATTN_CAT2(a, b)
#define TN(name) ATTN_CAT(name, ATTN_SUF)

#define ATTN_T float
#define ATTN_SUF f32
#define ATTN_FMA ATTN_FMAF
#define ATTN_EXP attn_exp_f32
#include "attention.c"
#undef ATTN_T
#undef ATTN_SUF
#undef ATTN_FMA
#undef ATTN_EXP

#define ATTN_T double
#define ATTN_SUF f64
#define ATTN_FMA ATTN_FMAD
#define ATTN_EXP exp
#include "attention.c"
#undef ATTN_T
#undef ATTN_SUF
#undef ATTN_FMA
#undef ATTN_EXP

/* ---- entry points --------------------------------------------------------------------------- */

static int setup(attn_job *j, const char *op, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                 const em_tensor *mask, const em_attn_params *p)
{
    memset(j, 0, sizeof *j);
    if (q->dtype != EM_FLOAT32 && q->dtype != EM_FLOAT64)
        return em_set_error("%s: the CPU kernel takes float32, float64, float16 or bfloat16, got %s", op, em_dtype_name(q->dtype));
    j->p = p;
    j->f32 = q->dtype == EM_FLOAT32;
    j->es = em_dtype_size(q->dtype);
    j->B = q->sizes[0];
    j->Tq = q->sizes[1];
    j->D = q->sizes[2];
    j->Tk = k->sizes[1];
    j->Dv = v->sizes[2];
    j->fqt = (j->Tq + FQ - 1) / FQ;
    j->fkt = (j->Tk + FK - 1) / FK;
    j->gqt = (j->Tq + GQ - 1) / GQ;
    j->gkt = (j->Tk + GK - 1) / GK;
    j->q = em_data_ptr(q);
    j->k = em_data_ptr(k);
    j->v = em_data_ptr(v);
    if (mask) {
        j->mask = em_data_ptr(mask);
        j->msb = mask->strides[0];
        j->msi = mask->strides[1];
        j->msj = mask->strides[2];
    }
    j->key[0] = (uint32_t)p->seed;
    j->key[1] = (uint32_t)(p->seed >> 32);
    j->dropout = p->dropout_p > 0;
    if (j->dropout) {
        int mbits = j->f32 ? 24 : 32;
        j->mshift = 32 - mbits;
        j->keep_thr = (1 - p->dropout_p) * ldexp(1.0, mbits);
        j->keep_scale = 1 / (1 - p->dropout_p);
    }
    return 0;
}

int cpu_attention(em_tensor *out, em_tensor *lse, const em_tensor *q, const em_tensor *k, const em_tensor *v,
                  const em_tensor *mask, const em_attn_params *p)
{
    const em_tensor *ops[4] = {q, k, v, out};
    if (cpu_any_lowp(ops, 4)) {
        cpu_widened w = {0};
        em_tensor *o32 = (em_tensor *)cpu_widen(&w, out, true);
        const em_tensor *q32 = cpu_widen(&w, q, false), *k32 = cpu_widen(&w, k, false);
        const em_tensor *v32 = cpu_widen(&w, v, false), *m32 = cpu_widen(&w, mask, false);
        return cpu_narrow(&w, w.failed ? -1 : cpu_attention(o32, lse, q32, k32, v32, m32, p));
    }
    attn_job j;
    if (setup(&j, "scaled_dot_product_attention", q, k, v, mask, p)) return -1;
    j.out = em_data_ptr(out);
    j.lse = em_data_ptr(lse);
    cpu_parallel_for(j.B * j.fqt, j.B * j.Tq * j.Tk * (j.D + j.Dv), 1, j.f32 ? fwd_range_f32 : fwd_range_f64, &j);
    if (atomic_load(&j.failed)) return em_set_error("scaled_dot_product_attention: out of memory (scratch)");
    return 0;
}

/* The backward's split: each problem's key tiles cut into np parts of about
 * equal work (causal: a key tile's work is the query rows that see it),
 * np = ceil(PARTS / B) at most, so that there are about PARTS items. Only
 * the shapes decide it, never the thread count. Part p's dQ rows start at
 * part_row[p]; parts 1.. get a partial dQ each (part_off, part_stride). */
static int setup_parts(attn_job *j)
{
    int64_t np = (PARTS + j->B - 1) / j->B;
    if (np > j->gkt) np = j->gkt;
    if (np < 1) np = 1;
    if (!j->gq) np = 1;                 /* the parts only keep dQ's sums apart */
    j->np = np;
    j->part_kt = malloc(sizeof(int64_t) * (size_t)(3 * np + 1));
    if (!j->part_kt) return -1;
    j->part_row = j->part_kt + np + 1;
    j->part_off = j->part_row + np;
    int64_t total = 0;
    for (int64_t kt = 0; kt < j->gkt; kt++) total += j->gqt - gfirst_qt(j, kt);
    j->part_kt[0] = 0;
    int64_t kt = 0, sum = 0;
    for (int64_t p = 1; p < np; p++) {
        /* the first key tile at which the work before it reaches p/np of the total */
        while (kt < j->gkt && sum * np < total * p) sum += j->gqt - gfirst_qt(j, kt++);
        j->part_kt[p] = kt;
    }
    j->part_kt[np] = j->gkt;
    j->part_stride = 0;
    for (int64_t p = 0; p < np; p++) {
        int64_t kt0 = j->part_kt[p];
        int64_t row = kt0 < j->gkt ? gfirst_qt(j, kt0) * GQ : j->Tq;
        j->part_row[p] = p == 0 ? 0 : row < j->Tq ? row : j->Tq;
        j->part_off[p] = j->part_stride;
        if (p > 0) j->part_stride += (j->Tq - j->part_row[p]) * j->D;
    }
    return 0;
}

int cpu_attention_backward(em_tensor *gq, em_tensor *gk, em_tensor *gv, const em_tensor *gout, const em_tensor *q,
                           const em_tensor *k, const em_tensor *v, const em_tensor *out, const em_tensor *lse,
                           const em_tensor *mask, const em_attn_params *p)
{
    const em_tensor *ops[4] = {q, k, v, gout};
    if (cpu_any_lowp(ops, 4)) {
        cpu_widened w = {0};
        em_tensor *gq32 = (em_tensor *)cpu_widen(&w, gq, true), *gk32 = (em_tensor *)cpu_widen(&w, gk, true);
        em_tensor *gv32 = (em_tensor *)cpu_widen(&w, gv, true);
        const em_tensor *go32 = cpu_widen(&w, gout, false), *q32 = cpu_widen(&w, q, false);
        const em_tensor *k32 = cpu_widen(&w, k, false), *v32 = cpu_widen(&w, v, false);
        const em_tensor *o32 = cpu_widen(&w, out, false), *m32 = cpu_widen(&w, mask, false);
        return cpu_narrow(&w, w.failed ? -1 : cpu_attention_backward(gq32, gk32, gv32, go32, q32, k32, v32, o32, lse,
                                                                      m32, p));
    }
    attn_job j;
    if (setup(&j, "scaled_dot_product_attention_backward", q, k, v, mask, p)) return -1;
    j.o = em_data_ptr(out);
    j.go = em_data_ptr(gout);
    j.lse = em_data_ptr(lse);
    j.gq = gq ? em_data_ptr(gq) : NULL;
    j.gk = gk ? em_data_ptr(gk) : NULL;
    j.gv = gv ? em_data_ptr(gv) : NULL;
    int64_t rows = j.B * j.Tq;
    j.drow = malloc(sizeof(double) * (size_t)(rows ? rows : 1));
    if (!j.drow || setup_parts(&j)) {
        free(j.drow);
        free(j.part_kt);
        return em_set_error("scaled_dot_product_attention_backward: out of memory");
    }
    if (j.part_stride) {
        j.dqbuf = malloc(j.es * (size_t)(j.B * j.part_stride));
        if (!j.dqbuf) {
            free(j.drow);
            free(j.part_kt);
            return em_set_error("scaled_dot_product_attention_backward: out of memory");
        }
    }
    cpu_parallel_for(rows, rows * j.Dv, 64, j.f32 ? drow_range_f32 : drow_range_f64, &j);
    int64_t work = j.B * j.Tq * j.Tk * (j.D + j.Dv);
    cpu_parallel_for(j.B * j.np, work, 1, j.f32 ? bwd_range_f32 : bwd_range_f64, &j);
    if (j.gq && !atomic_load(&j.failed))
        cpu_parallel_for(rows, rows * j.D * j.np, 16, j.f32 ? dq_sum_range_f32 : dq_sum_range_f64, &j);
    free(j.drow);
    free(j.part_kt);
    free(j.dqbuf);
    if (atomic_load(&j.failed)) return em_set_error("scaled_dot_product_attention_backward: out of memory (scratch)");
    return 0;
}

#else /* ATTN_T: the kernels of one dtype ------------------------------------------------------ */

#define T ATTN_T
#define VL ((int)(ATTN_VBYTES / sizeof(T)))     /* lanes of a vector */

/* ---- the tile products ------------------------------------------------------------------
 * C[m x n] (+)= A[m x k] B[k x n]: A's element (r, c) at A[r sar + c sac] (so A
 * may be a transposed view), B row-major with rows ldb apart, C with rows ldc
 * apart. Blocks of MR rows by NV vectors (ATTN_VBYTES wide: GCC's vector
 * extension, so any machine runs it) keep their sums in registers; each step
 * is one fused multiply-add per vector (vfma). Every sum runs over k in order
 * from 0 and is then stored or added to C, the same in every block and at the
 * edges, so a score comes out the same whichever way round its tile is
 * computed. */
typedef T TN(vec) __attribute__((vector_size(ATTN_VBYTES)));

/* c + a b lane by lane (one vector instruction once inlined) */
static inline __attribute__((always_inline)) TN(vec) TN(vfma)(T a, TN(vec) b, TN(vec) c)
{
    TN(vec) r;
    _Pragma("GCC unroll 16") for (int l = 0; l < VL; l++) r[l] = ATTN_FMA(a, b[l], c[l]);
    return r;
}

#define UKR(MR, NV)                                                                                          \
    __attribute__((noinline)) static void TN(ukr##MR##x##NV)(T *restrict C, int64_t ldc, const T *restrict A,  \
                                                             int64_t sar, int64_t sac, const T *restrict B,   \
                                                             int64_t ldb, int64_t k, bool acc)                \
    {                                                                                                        \
        TN(vec) s[MR][NV];                                                                                   \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                                \
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) s[i][v] = (TN(vec)){0};                    \
        for (int64_t kk = 0; kk < k; kk++) {                                                                 \
            TN(vec) b[NV];                                                                                   \
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++)                                            \
                memcpy(&b[v], B + kk * ldb + v * VL, sizeof b[v]);                                           \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {                                          \
                T a = A[i * sar + kk * sac];                                                                 \
                _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) s[i][v] = TN(vfma)(a, b[v], s[i][v]);  \
            }                                                                                                \
        }                                                                                                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                                                \
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; v++) {                                          \
                T *o = C + i * ldc + v * VL;                                                                 \
                TN(vec) t = s[i][v];                                                                         \
                if (acc) {                                                                                   \
                    TN(vec) c;                                                                               \
                    memcpy(&c, o, sizeof c);                                                                 \
                    t = c + t;                                                                               \
                }                                                                                            \
                memcpy(o, &t, sizeof t);                                                                     \
            }                                                                                                \
    }
#if ATTN_NV == 4
UKR(4, 4)
UKR(1, 4)
#endif
UKR(4, 2)
UKR(1, 2)
UKR(8, 1)
UKR(4, 1)
UKR(1, 1)
#undef UKR

/* rows 0 .. m-1 of one column block of NV vectors: the kernels above, MR rows at a time */
static void TN(gemm_cols)(int nv, T *C, int64_t ldc, const T *A, int64_t sar, int64_t sac, const T *B, int64_t ldb,
                          int64_t m, int64_t k, bool acc)
{
    int64_t r = 0;
#if ATTN_NV == 4
    if (nv == 4) {
        for (; r + 4 <= m; r += 4) TN(ukr4x4)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
        for (; r < m; r++) TN(ukr1x4)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
        return;
    }
#endif
    if (nv == 2) {
        for (; r + 4 <= m; r += 4) TN(ukr4x2)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
        for (; r < m; r++) TN(ukr1x2)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
    } else {
        for (; r + 8 <= m; r += 8) TN(ukr8x1)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
        for (; r + 4 <= m; r += 4) TN(ukr4x1)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
        for (; r < m; r++) TN(ukr1x1)(C + r * ldc, ldc, A + r * sar, sar, sac, B, ldb, k, acc);
    }
}

/* The last ne < VL columns: B's columns copied into a zero-padded block
 * (k <= EDGE_K; beyond, plain loops) and one vector's kernels run on it into
 * a scratch C, so that these sums are formed as everywhere else. */
#define EDGE_K 256
static void TN(gemm_edge)(T *C, int64_t ldc, const T *A, int64_t sar, int64_t sac, const T *B, int64_t ldb, int64_t m,
                          int64_t ne, int64_t k, bool acc)
{
    if (k > EDGE_K) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t x = 0; x < ne; x++) {
                T s = 0;
                for (int64_t kk = 0; kk < k; kk++) s = ATTN_FMA(A[i * sar + kk * sac], B[kk * ldb + x], s);
                if (acc) C[i * ldc + x] += s;
                else C[i * ldc + x] = s;
            }
        return;
    }
    T be[EDGE_K * VL], ce[8 * VL];
    for (int64_t kk = 0; kk < k; kk++)
        for (int x = 0; x < VL; x++) be[kk * VL + x] = x < ne ? B[kk * ldb + x] : 0;
    for (int64_t r = 0; r < m;) {
        int64_t mr = m - r >= 8 ? 8 : m - r >= 4 ? 4 : 1;
        const T *a = A + r * sar;
        if (mr == 8) TN(ukr8x1)(ce, VL, a, sar, sac, be, VL, k, false);
        else if (mr == 4) TN(ukr4x1)(ce, VL, a, sar, sac, be, VL, k, false);
        else TN(ukr1x1)(ce, VL, a, sar, sac, be, VL, k, false);
        for (int64_t i = 0; i < mr; i++) {
            T *o = C + (r + i) * ldc;
            if (acc) for (int64_t x = 0; x < ne; x++) o[x] += ce[i * VL + x];
            else for (int64_t x = 0; x < ne; x++) o[x] = ce[i * VL + x];
        }
        r += mr;
    }
}

/* n need not be a multiple of VL (see gemm_edge); callers whose B and C have
 * room pass n rounded up instead (the extra columns are never read). */
static void TN(gemm)(T *C, int64_t ldc, const T *A, int64_t sar, int64_t sac, const T *B, int64_t ldb, int64_t m,
                    int64_t n, int64_t k, bool acc)
{
    int64_t x = 0;
    for (; x + ATTN_NV * VL <= n; x += ATTN_NV * VL) TN(gemm_cols)(ATTN_NV, C + x, ldc, A, sar, sac, B + x, ldb, m, k, acc);
    if (ATTN_NV > 2 && x + 2 * VL <= n) { TN(gemm_cols)(2, C + x, ldc, A, sar, sac, B + x, ldb, m, k, acc); x += 2 * VL; }
    if (x + VL <= n) { TN(gemm_cols)(1, C + x, ldc, A, sar, sac, B + x, ldb, m, k, acc); x += VL; }
    if (x < n) TN(gemm_edge)(C + x, ldc, A, sar, sac, B + x, ldb, m, n - x, k, acc);
}

/* n rounded up to whole vectors */
static int64_t TN(vround)(int64_t n) { return (n + VL - 1) / VL * VL; }

/* Xt[d][c] = X[c][d] for the nk rows of X (n columns), Xt's rows ld apart */
static void TN(pack_t)(T *Xt, int64_t ld, const T *X, int64_t nk, int64_t n)
{
    for (int64_t c = 0; c < nk; c++)
        for (int64_t d = 0; d < n; d++) Xt[d * ld + c] = X[c * n + d];
}

/* ---- forward ------------------------------------------------------------------------------
 * One item is a query tile of nq <= FQ rows. Its scores are kept transposed,
 * St [keys][queries] = K_tile Qt (Qt the tile's queries packed transposed,
 * once per item), so the online softmax runs down the columns with the
 * queries in the vector lanes; then O += P V reads St as a transposed view. */

typedef struct TN(fwd_scratch) {
    T *St, *O, *Qt;
    T *m, *mt, *mu, *cs, *alpha;
    double *l;
    unsigned char *keep;
} TN(fwd_scratch);

static void TN(fwd_tile)(const attn_job *j, TN(fwd_scratch) *w, int64_t b, int64_t i0, int64_t nq)
{
    int64_t D = j->D, Dv = j->Dv;
    const T *Q = (const T *)j->q + (b * j->Tq + i0) * D;
    const T *K = (const T *)j->k + b * j->Tk * D, *V = (const T *)j->v + b * j->Tk * Dv;
    T *St = w->St, *O = w->O, *m = w->m, *mt = w->mt, *mu = w->mu, *cs = w->cs, *alpha = w->alpha;
    double *l = w->l;
    T sc = (T)j->p->scale;
    TN(pack_t)(w->Qt, FQ, Q, nq, D);
    memset(O, 0, sizeof(T) * (size_t)(nq * Dv));
    for (int64_t i = 0; i < nq; i++) { m[i] = -INFINITY; l[i] = 0; }
    int64_t nkt = j->fkt;
    if (j->p->causal) {
        int64_t t = (i0 + nq - 1) / FK + 1;     /* the key tiles holding keys 0 .. i0+nq-1 */
        nkt = t < nkt ? t : nkt;
    }
    for (int64_t kt = 0; kt < nkt; kt++) {
        int64_t j0 = kt * FK, nk = j->Tk - j0 < FK ? j->Tk - j0 : FK;
        TN(gemm)(St, FQ, K + j0 * D, D, 1, w->Qt, FQ, nk, TN(vround)(nq), D, false);
        /* s = scale <q, k> + mask, -inf past the causal limit; the column maxima */
        for (int64_t i = 0; i < nq; i++) mt[i] = -INFINITY;
        for (int64_t c = 0; c < nk; c++) {
            T *x = St + c * FQ;
            int64_t lim = 0;                    /* queries below it do not see key j0 + c */
            if (j->p->causal) {
                lim = j0 + c - i0;
                lim = lim < 0 ? 0 : lim < nq ? lim : nq;
            }
            for (int64_t i = 0; i < nq; i++) x[i] *= sc;
            if (j->mask) {
                const T *mk = (const T *)mask_at(j, b, i0, j0 + c);
                for (int64_t i = lim; i < nq; i++) x[i] += mk[i * j->msi];
            }
            for (int64_t i = 0; i < lim; i++) x[i] = -INFINITY;
            for (int64_t i = 0; i < nq; i++) mt[i] = x[i] > mt[i] ? x[i] : mt[i];
        }
        /* the new maxima; rows that have seen nothing yet keep m = -inf and get no terms */
        for (int64_t i = 0; i < nq; i++) {
            T mn = mt[i] > m[i] ? mt[i] : m[i];
            mt[i] = mn;
            alpha[i] = 1;
            mu[i] = mn == -INFINITY ? 0 : mn;
            if (mn != m[i] && mn != -INFINITY) alpha[i] = (T)exp((double)m[i] - (double)mn);
        }
        for (int64_t i = 0; i < nq; i++) cs[i] = 0;
        for (int64_t c = 0; c < nk; c++) {
            T *x = St + c * FQ;
            for (int64_t i = 0; i < nq; i++) {
                T e = ATTN_EXP(x[i] - mu[i]);
                x[i] = e;
                cs[i] += e;
            }
        }
        for (int64_t i = 0; i < nq; i++) {
            if (mt[i] == -INFINITY) {           /* nothing seen yet: no terms */
                for (int64_t c = 0; c < nk; c++) St[c * FQ + i] = 0;
                continue;
            }
            l[i] = l[i] * alpha[i] + cs[i];
            m[i] = mt[i];
            if (alpha[i] != 1) {
                T *o = O + i * Dv, a = alpha[i];
                for (int64_t x = 0; x < Dv; x++) o[x] *= a;
            }
            if (j->dropout) {
                T ks = (T)j->keep_scale;
                keep_row(j, b, i0 + i, j0, nk, w->keep);
                for (int64_t c = 0; c < nk; c++) St[c * FQ + i] = w->keep[c] ? St[c * FQ + i] * ks : 0;
            }
        }
        TN(gemm)(O, Dv, St, 1, FQ, V + j0 * Dv, Dv, nq, Dv, nk, true);
    }
    T *out = (T *)j->out + (b * j->Tq + i0) * Dv, *lse = (T *)j->lse + b * j->Tq + i0;
    for (int64_t i = 0; i < nq; i++) {
        double li = l[i], inv = li > 0 ? 1 / li : NAN;
        for (int64_t x = 0; x < Dv; x++) out[i * Dv + x] = (T)(O[i * Dv + x] * inv);
        lse[i] = (T)(li > 0 ? m[i] + log(li) : (li == 0 ? -INFINITY : NAN));
    }
}

static void TN(fwd_range)(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    TN(fwd_scratch) w;
    size_t nt = (size_t)(FK * FQ + FQ * j->Dv + j->D * FQ + 5 * FQ);
    char *buf = calloc(1, sizeof(T) * nt + sizeof(double) * FQ + FK);   /* Qt's padding columns stay 0 */
    if (!buf) { atomic_store(&j->failed, 1); return; }
    w.St = (T *)buf;
    w.O = w.St + FK * FQ;
    w.Qt = w.O + FQ * j->Dv;
    w.m = w.Qt + j->D * FQ;
    w.mt = w.m + FQ;
    w.mu = w.mt + FQ;
    w.cs = w.mu + FQ;
    w.alpha = w.cs + FQ;
    w.l = (double *)(buf + sizeof(T) * nt);
    w.keep = (unsigned char *)(w.l + FQ);
    for (int64_t it = lo; it < hi; it++) {
        /* the last query tiles first: causal ones have the most keys */
        int64_t b = it / j->fqt, i0 = (j->fqt - 1 - it % j->fqt) * FQ;
        TN(fwd_tile)(j, &w, b, i0, j->Tq - i0 < FQ ? j->Tq - i0 : FQ);
    }
    free(buf);
}

/* ---- backward -------------------------------------------------------------------------------
 * One item is a part of one problem's key tiles (setup_parts). Per key tile
 * (outer) and query tile (inner) it recomputes S = Q Kt and dP = dO Vt (the
 * key tile packed transposed once), then P = exp(s - lse) and dS = P (dP - D),
 * sums dK and dV of the key tile in scratch, and adds dS K to the part's dQ
 * rows: gq itself for part 0, its partial for the others, added up in part
 * order afterwards (dq_sum_range). */

static void TN(drow_range)(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t Dv = j->Dv;
    for (int64_t r = lo; r < hi; r++) {
        const T *a = (const T *)j->go + r * Dv, *o = (const T *)j->o + r * Dv;
        double s = 0;
        for (int64_t c = 0; c < Dv; c++) s += (double)a[c] * o[c];
        j->drow[r] = s;
    }
}

static void TN(bwd_range)(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t D = j->D, Dv = j->Dv;
    size_t nt = (size_t)(3 * GQ * GK + D * GK + Dv * GK + GK * D + GK * Dv);
    T *buf = calloc(1, sizeof(T) * nt + GK);        /* Kt's and Vt's padding columns stay 0 */
    if (!buf) { atomic_store(&j->failed, 1); return; }
    T *P = buf, *dP = P + GQ * GK, *Pd = dP + GQ * GK, *Kt = Pd + GQ * GK, *Vt = Kt + D * GK;
    T *dK = Vt + Dv * GK, *dV = dK + GK * D;
    unsigned char *keep = (unsigned char *)(dV + GK * Dv);
    T sc = (T)j->p->scale;
    for (int64_t it = lo; it < hi; it++) {
        int64_t b = it / j->np, p = it % j->np;
        const T *Q = (const T *)j->q + b * j->Tq * D, *GO = (const T *)j->go + b * j->Tq * Dv;
        const T *K = (const T *)j->k + b * j->Tk * D, *V = (const T *)j->v + b * j->Tk * Dv;
        const T *lse = (const T *)j->lse + b * j->Tq;
        const double *drow = j->drow + b * j->Tq;
        /* this part's dQ: rows row0 .. Tq-1 (its query tiles start there), dq0 at row0 */
        int64_t row0 = j->part_row[p];
        T *dq0 = NULL;
        if (j->gq && row0 < j->Tq) {
            dq0 = p == 0 ? (T *)j->gq + b * j->Tq * D : (T *)j->dqbuf + b * j->part_stride + j->part_off[p];
            memset(dq0, 0, sizeof(T) * (size_t)((j->Tq - row0) * D));
        }
        for (int64_t kt = j->part_kt[p]; kt < j->part_kt[p + 1]; kt++) {
            int64_t j0 = kt * GK, nk = j->Tk - j0 < GK ? j->Tk - j0 : GK;
            TN(pack_t)(Kt, GK, K + j0 * D, nk, D);
            TN(pack_t)(Vt, GK, V + j0 * Dv, nk, Dv);
            memset(dK, 0, sizeof(T) * (size_t)(nk * D));
            memset(dV, 0, sizeof(T) * (size_t)(nk * Dv));
            for (int64_t qt = gfirst_qt(j, kt); qt < j->gqt; qt++) {
                int64_t i0 = qt * GQ, nq = j->Tq - i0 < GQ ? j->Tq - i0 : GQ;
                TN(gemm)(P, GK, Q + i0 * D, D, 1, Kt, GK, nq, TN(vround)(nk), D, false);
                TN(gemm)(dP, GK, GO + i0 * Dv, Dv, 1, Vt, GK, nq, TN(vround)(nk), Dv, false);
                for (int64_t i = 0; i < nq; i++) {
                    T *x = P + i * GK, *dp = dP + i * GK;
                    int64_t valid = causal_valid(j, i0 + i, j0, nk);
                    for (int64_t c = 0; c < nk; c++) x[c] *= sc;
                    if (j->mask) {
                        const T *mk = (const T *)mask_at(j, b, i0 + i, j0);
                        for (int64_t c = 0; c < valid; c++) x[c] += mk[c * j->msj];
                    }
                    for (int64_t c = valid; c < nk; c++) x[c] = -INFINITY;
                    T li = lse[i0 + i], di = (T)drow[i0 + i];
                    for (int64_t c = 0; c < nk; c++) x[c] = ATTN_EXP(x[c] - li);
                    if (j->dropout) {
                        T ks = (T)j->keep_scale;
                        T *pd = Pd + i * GK;
                        keep_row(j, b, i0 + i, j0, nk, keep);
                        for (int64_t c = 0; c < nk; c++) {
                            dp[c] = keep[c] ? dp[c] * ks : 0;
                            pd[c] = keep[c] ? x[c] * ks : 0;
                        }
                    }
                    for (int64_t c = 0; c < nk; c++) dp[c] = x[c] * (dp[c] - di);
                }
                /* dV += P_drop^T dO, dK += dS^T Q, dQ += dS K */
                if (j->gv) TN(gemm)(dV, Dv, j->dropout ? Pd : P, 1, GK, GO + i0 * Dv, Dv, nk, Dv, nq, true);
                if (j->gk) TN(gemm)(dK, D, dP, 1, GK, Q + i0 * D, D, nk, D, nq, true);
                if (dq0) TN(gemm)(dq0 + (i0 - row0) * D, D, dP, GK, 1, K + j0 * D, D, nq, D, nk, true);
            }
            if (j->gk) {
                T *g = (T *)j->gk + (b * j->Tk + j0) * D;
                for (int64_t x = 0; x < nk * D; x++) g[x] = (T)(dK[x] * j->p->scale);
            }
            if (j->gv) memcpy((T *)j->gv + (b * j->Tk + j0) * Dv, dV, sizeof(T) * (size_t)(nk * Dv));
        }
    }
    free(buf);
}

/* dQ = scale (gq + partial_1 + partial_2 + ...), in part order, row by row */
static void TN(dq_sum_range)(int64_t lo, int64_t hi, void *ctx)
{
    const attn_job *j = ctx;
    int64_t D = j->D;
    for (int64_t r = lo; r < hi; r++) {
        int64_t b = r / j->Tq, i = r % j->Tq;
        T *g = (T *)j->gq + r * D;
        for (int64_t p = 1; p < j->np; p++) {
            int64_t row0 = j->part_row[p];
            if (i < row0) continue;
            const T *s = (const T *)j->dqbuf + b * j->part_stride + j->part_off[p] + (i - row0) * D;
            for (int64_t x = 0; x < D; x++) g[x] += s[x];
        }
        for (int64_t x = 0; x < D; x++) g[x] = (T)(g[x] * j->p->scale);
    }
}

#undef VL
#undef T
#endif /* ATTN_T */
