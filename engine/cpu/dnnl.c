/* dnnl.c — float32 and bfloat16 convolution through oneDNN (Debian's libdnnl 2.x, C API),
 * opened with dlopen on the first convolution: a session that never
 * convolves does not load it, and a machine without it takes conv.c's
 * reference path silently. EMBER_DNNL=0 forces the reference path. The
 * loading, the streams and the steps below serve dnnl_matmul.c's bfloat16
 * GEMM too (dnnl_shared.h).
 *
 * Threads. Debian's oneDNN runs its loops on OpenMP (libgomp), whose teams
 * end at barriers where threads spin; pool.c's header says why ember keeps
 * off that model. So oneDNN runs single-threaded here: every thread that
 * creates or executes a primitive first sets its own OpenMP thread count to
 * 1 (omp_set_num_threads is per thread, and oneDNN sizes its loops by it),
 * and the batch is split into about two sub-batches per pool thread, each
 * one single-threaded primitive run on ember's pool. The weight gradient is
 * a sum over the batch: each sub-batch writes a partial gradient, added in
 * order afterwards, so the result does not depend on the load. Nothing in
 * the environment is changed (OMP_NUM_THREADS would also set the pool's
 * size and reach child processes).
 *
 * Formats. oneDNN's fast kernels (jit:avx512_core, ...) want blocked layouts
 * (nChw16c); ember's tensors are plain NC... So each primitive is created
 * with format_tag_any and the arguments are reordered into what it chose
 * (weights once per call, activations per sub-batch, the weight gradient
 * back per sub-batch), unless the chosen layout is much larger than the
 * plain one: with 1 input channel blocking pads it 16-fold, and then the
 * plain-layout primitive (a GEMM-based kernel) is used instead.
 *
 * Which, when: the reference path (conv.c) below MIN_MACS multiply-adds,
 * and where channels per group are too few for oneDNN's blocked kernels
 * (blocks_well); oneDNN otherwise.
 *
 * Measured on the 2-core AVX-512 EPYC VM this was written on (shared, so a
 * few tens of per cent of noise), float32, 3x3, padding 1, N = 128; median
 * ms of 20 calls, the variants interleaved; PyTorch 1.13 with
 * torch.set_num_threads(2) in the same session:
 *                                     forward  bwd data  bwd weight
 *   idle  [128,1,28,28] -> 32
 *     reference (im2col + GEMM)          1.31      0.86      1.52   <- taken
 *     oneDNN, sub-batches on the pool    1.49      1.37      1.95
 *     oneDNN, whole batch on OpenMP(2)   0.80      0.70      1.02
 *     PyTorch                            9.33      4.75      0.58
 *   idle  [128,32,14,14] -> 64
 *     reference                         11.13     11.05     15.08
 *     oneDNN, pool                       5.28      6.21      5.50   <- taken
 *     oneDNN, OpenMP(2)                  4.71      4.97      4.86
 *     PyTorch                            4.86      5.88      4.78
 *   beside two busy loops  [128,1,28,28] -> 32
 *     reference                          1.49      1.11      1.95
 *     oneDNN, pool                       1.45      1.31      5.98
 *     oneDNN, OpenMP(2)                  8.25      8.77     24.30
 *     PyTorch                           17.16     39.97      0.96
 *   beside two busy loops  [128,32,14,14] -> 64
 *     reference                         23.05     20.00     20.59
 *     oneDNN, pool                       9.00     12.87     14.18
 *     oneDNN, OpenMP(2)                  8.52     27.99     31.99
 *     PyTorch                            8.90     32.01      9.17
 * So the pool split costs 0-25% against OpenMP on an idle machine and is 2-4x
 * faster beside busy processes. (OMP_WAIT_POLICY=PASSIVE narrowed that gap,
 * 8.9/8.9/14.2 ms loaded, but it must be in the environment before libgomp
 * loads.) Formats, one thread, whole batch, ms (fwd / bwd data / bwd weight):
 *   [128,1,28,28] -> 32:   plain 1.35 / 1.65 / 2.81   any + reorders 1.55 / 10.16 / 1.96
 *   [128,32,14,14] -> 64:  plain 12.37 / 14.46 / 12.78   any + reorders 8.66 / 8.67 / 9.65
 * (the 10.16: blocked gx pads 1 channel to 16, which MAX_BLOAT now refuses).
 * Below about 1e5 multiply-adds the reference path wins: a primitive call
 * costs some 10 us (e.g. [4,3,8,8] -> 8: forward 8.6 us against 11.3 us).
 * The first convolution pays about 10 ms for dlopen and the primitive.
 *
 * bfloat16. On a CPU with AVX512-BF16 oneDNN JITs kernels
 * (jit_bf16:avx512_core_bf16, jit_dw for depthwise, gemm:jit for plain
 * layouts) that multiply bfloat16 pairs into float32 sums and round once,
 * as the float32 copies the caller would otherwise make give (up to the
 * order of the sum). The weight gradient comes back in float32, so the
 * sub-batches' parts are added before its one rounding. Where oneDNN has
 * only its reference loops for a case (no bfloat16 instructions), the case
 * is refused (and remembered as such) and the caller widens. Measured
 * 2026-11-29 on a 2-core AVX512-BF16 EPYC VM, [128,32,14,14] -> 64, 3x3,
 * best of 10, ms (forward / forward + both backwards): through float32
 * copies 2.79 / 7.75, here 1.38 / 4.40, PyTorch 2.15 1.26 / 4.29; the
 * Fashion-MNIST CNN's bfloat16 epoch went from 13.2 s to 11.1 s.
 *
 * The bias. A forward call with a bias gives it to the primitive (added as
 * y is written), and a weight gradient's call with one asks for its
 * gradient (DIFF_BIAS, float32, summed over the sub-batches as the weight
 * gradient is): no pass of ember's own over y or gy. Measured 2026-11-30
 * on the bfloat16 VM above, [128,32,14,14] -> 64 float32, best of 20: the
 * broadcast add this replaces took 0.15 ms and the sum of gy 0.10 ms;
 * conv2d forward + backward with a bias went from 7.0-7.2 ms to 6.4-6.5 ms
 * (three runs each, alternating with the build before).
 *
 * Primitives are cached (least recently used of CACHE_SIZE) by op,
 * sub-batch size and geometry: creating one costs far more than running a
 * small one. Their scratchpads are ours to give (scratchpad_mode_user), so
 * several threads can run one primitive at once. */
#include "dnnl_shared.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#define CACHE_SIZE 32
/* Below this many multiply-adds the reference path is faster (see above). */
#define MIN_MACS 131072
/* blocked layouts bigger than this many times the plain one are refused */
#define MAX_BLOAT 1.5

/* ---- loading ----------------------------------------------------------------------- */

static const cpu_dl_symbol symbols[] = {
    {"dnnl_engine_create", offsetof(dnnl_api, engine_create)},
    {"dnnl_stream_create", offsetof(dnnl_api, stream_create)},
    {"dnnl_stream_wait", offsetof(dnnl_api, stream_wait)},
    {"dnnl_memory_desc_init_by_tag", offsetof(dnnl_api, memory_desc_init_by_tag)},
    {"dnnl_memory_desc_get_size", offsetof(dnnl_api, memory_desc_get_size)},
    {"dnnl_memory_desc_equal", offsetof(dnnl_api, memory_desc_equal)},
    {"dnnl_memory_create", offsetof(dnnl_api, memory_create)},
    {"dnnl_memory_destroy", offsetof(dnnl_api, memory_destroy)},
    {"dnnl_dilated_convolution_forward_desc_init", offsetof(dnnl_api, conv_forward_desc_init)},
    {"dnnl_dilated_convolution_backward_data_desc_init", offsetof(dnnl_api, conv_backward_data_desc_init)},
    {"dnnl_dilated_convolution_backward_weights_desc_init", offsetof(dnnl_api, conv_backward_weights_desc_init)},
    {"dnnl_reorder_primitive_desc_create", offsetof(dnnl_api, reorder_primitive_desc_create)},
    {"dnnl_primitive_attr_create", offsetof(dnnl_api, primitive_attr_create)},
    {"dnnl_primitive_attr_destroy", offsetof(dnnl_api, primitive_attr_destroy)},
    {"dnnl_primitive_attr_set_scratchpad_mode", offsetof(dnnl_api, primitive_attr_set_scratchpad_mode)},
    {"dnnl_primitive_desc_create", offsetof(dnnl_api, primitive_desc_create)},
    {"dnnl_primitive_desc_destroy", offsetof(dnnl_api, primitive_desc_destroy)},
    {"dnnl_primitive_desc_query_md", offsetof(dnnl_api, primitive_desc_query_md)},
    {"dnnl_primitive_create", offsetof(dnnl_api, primitive_create)},
    {"dnnl_primitive_destroy", offsetof(dnnl_api, primitive_destroy)},
    {"dnnl_primitive_execute", offsetof(dnnl_api, primitive_execute)},
    {"dnnl_memory_desc_init_by_strides", offsetof(dnnl_api, memory_desc_init_by_strides)},
    {"dnnl_matmul_desc_init", offsetof(dnnl_api, matmul_desc_init)},
    {"dnnl_primitive_attr_set_output_scales", offsetof(dnnl_api, primitive_attr_set_output_scales)},
    {"dnnl_primitive_attr_set_post_ops", offsetof(dnnl_api, primitive_attr_set_post_ops)},
    {"dnnl_post_ops_create", offsetof(dnnl_api, post_ops_create)},
    {"dnnl_post_ops_destroy", offsetof(dnnl_api, post_ops_destroy)},
    {"dnnl_post_ops_append_sum", offsetof(dnnl_api, post_ops_append_sum)},
    {"dnnl_primitive_desc_query", offsetof(dnnl_api, primitive_desc_query)},
    {"omp_set_num_threads", offsetof(dnnl_api, omp_set_num_threads)},
};

static dnnl_api D;
static dnnl_engine_t engine;
static int load_state;          /* 0: not tried, 1: loaded, -1: failed */
static int enabled = -1;        /* cpu_dnnl_enable; -1: from EMBER_DNNL */
static int omp_threads;         /* cpu_dnnl_omp_threads: > 1 lets OpenMP run whole batches */

static bool load(void)
{
    if (load_state) return load_state > 0;
    load_state = -1;
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    if (cpu_dl_bind(h, symbols, sizeof symbols / sizeof symbols[0], &D)) {
        dlclose(h);
        return false;
    }
    D.omp_set_num_threads(1);
    if (D.engine_create(&engine, dnnl_cpu, 0) != dnnl_success) {
        dlclose(h);
        return false;
    }
    load_state = 1;
    return true;
}

void cpu_dnnl_enable(int on) { enabled = on; }

void cpu_dnnl_omp_threads(int n) { omp_threads = n; }

bool cpu_dnnl_loaded(void) { return load_state > 0; }

static bool wanted(void)
{
    if (enabled < 0) {
        const char *env = getenv("EMBER_DNNL");
        enabled = !(env && env[0] == '0' && env[1] == 0);
    }
    return enabled > 0;
}

const dnnl_api *cpu_dnnl_open(dnnl_engine_t *eng)
{
    if (!wanted() || !load()) return NULL;
    *eng = engine;
    return &D;
}

/* The calling thread's stream, and its OpenMP count set to 1 (see above). */
static _Thread_local dnnl_stream_t thread_stream;

dnnl_stream_t cpu_dnnl_stream(void)
{
    if (!thread_stream) {
        D.omp_set_num_threads(1);
        if (D.stream_create(&thread_stream, engine, dnnl_stream_default_flags) != dnnl_success)
            thread_stream = NULL;
    }
    return thread_stream;
}

/* ---- primitives ----------------------------------------------------------------------- */

typedef struct conv_key {
    int op, nsp, nthr;
    int bf16;                       /* bfloat16 x, w and y (else float32) */
    int bias;                       /* forward: adds a bias; backward weight: sums its gradient too */
    int64_t n, c, k, g;
    int64_t in[3], ker[3], out[3], stride[3], dil[3], padl[3], padr[3];
} conv_key;

/* Argument slots: 0 and 1 are the op's inputs a and b, 2 its output. */
typedef struct conv_prim {
    conv_key key;
    uint64_t used;                  /* 0: an empty slot */
    bool refused;                   /* oneDNN has no fast kernel for it */
    step conv;
    int arg[3];
    dnnl_memory_desc_t user[3];     /* ember's plain layouts */
    dnnl_memory_desc_t want[3];     /* the primitive's */
    step reorder[3];                /* user -> want (inputs), want -> user (output); prim NULL: same */
    size_t want_bytes[3];
    dnnl_memory_desc_t bias;        /* key.bias: the bias (forward) or its gradient (backward weight) */
} conv_prim;

static conv_prim cache[CACHE_SIZE];
static uint64_t cache_clock;

void cpu_dnnl_destroy_step(step *s)
{
    if (s->prim) D.primitive_destroy(s->prim);
    s->prim = NULL;
}

static void destroy_prim(conv_prim *P)
{
    cpu_dnnl_destroy_step(&P->conv);
    for (int i = 0; i < 3; i++) cpu_dnnl_destroy_step(&P->reorder[i]);
    P->used = 0;
}

static dnnl_format_tag_t plain_tag(int ndims)
{
    static const dnnl_format_tag_t tags[] = {dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    return tags[ndims - 3];
}

/* Makes s from a primitive descriptor (which it destroys). */
int cpu_dnnl_make_step(step *s, dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *sp = D.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    s->scratch = sp ? D.memory_desc_get_size(sp) : 0;
    if (sp) s->scratch_md = *sp;
    int rc = D.primitive_create(&s->prim, pd) == dnnl_success ? 0 : -1;
    if (rc) s->prim = NULL;
    D.primitive_desc_destroy(pd);
    return rc;
}

/* The convolution's primitive descriptor, its arguments in plain layouts or
 * in those oneDNN picks (any). */
static dnnl_primitive_desc_t conv_pd(const conv_key *k, bool any, const dnnl_primitive_attr_t attr)
{
    int nsp = k->nsp, nd = nsp + 2, wnd = k->g > 1 ? nd + 1 : nd;
    dnnl_dims_t xd = {k->n, k->c}, yd = {k->n, k->k}, wd = {0}, st, dl, pl, pr;
    int w0 = 0;
    if (k->g > 1) wd[w0++] = k->g;
    wd[w0++] = k->k / k->g;
    wd[w0++] = k->c / k->g;
    for (int i = 0; i < nsp; i++) {
        int s = 3 - nsp + i;
        xd[2 + i] = k->in[s];
        yd[2 + i] = k->out[s];
        wd[w0 + i] = k->ker[s];
        st[i] = k->stride[s];
        dl[i] = k->dil[s] - 1;          /* oneDNN counts the gaps */
        pl[i] = k->padl[s];
        pr[i] = k->padr[s];
    }
    /* bfloat16: the weight gradient in float32, so that the sub-batches'
     * parts are added before the one rounding */
    dnnl_data_type_t dt = k->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_data_type_t gwt = k->op == EM_CONV_BACKWARD_WEIGHT ? dnnl_f32 : dt;
    dnnl_memory_desc_t xm, wm, ym, fwm, bm, gbm;
    dnnl_format_tag_t wt = any ? dnnl_format_tag_any : plain_tag(wnd), t = any ? dnnl_format_tag_any : plain_tag(nd);
    dnnl_dims_t bsz = {k->k};
    if (D.memory_desc_init_by_tag(&xm, nd, xd, dt, t) || D.memory_desc_init_by_tag(&wm, wnd, wd, gwt, wt)
        || D.memory_desc_init_by_tag(&fwm, wnd, wd, dt, wt) || D.memory_desc_init_by_tag(&ym, nd, yd, dt, t)
        || D.memory_desc_init_by_tag(&bm, 1, bsz, dt, dnnl_a) || D.memory_desc_init_by_tag(&gbm, 1, bsz, gwt, dnnl_a))
        return NULL;
    dnnl_convolution_desc_t fd, bd;
    dnnl_primitive_desc_t fpd = NULL, pd = NULL;
    bool fb = k->bias && k->op == EM_CONV_FORWARD, gb = k->bias && k->op == EM_CONV_BACKWARD_WEIGHT;
    if (D.conv_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &xm, &fwm, fb ? &bm : NULL, &ym,
                                 st, dl, pl, pr)
        || D.primitive_desc_create(&fpd, &fd, attr, engine, NULL))
        return NULL;
    if (k->op == EM_CONV_FORWARD) return fpd;
    dnnl_status_t s = k->op == EM_CONV_BACKWARD_DATA
                          ? D.conv_backward_data_desc_init(&bd, dnnl_convolution_direct, &xm, &wm, &ym, st, dl, pl, pr)
                          : D.conv_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xm, &wm,
                                                              gb ? &gbm : NULL, &ym, st, dl, pl, pr);
    if (s == dnnl_success && D.primitive_desc_create(&pd, &bd, attr, engine, fpd) != dnnl_success) pd = NULL;
    D.primitive_desc_destroy(fpd);
    return pd;
}

/* Which query and argument each slot is, per op. */
static const dnnl_query_t slot_query[EM_NCONV][3] = {
    {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md},
    {dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md},
    {dnnl_query_src_md, dnnl_query_diff_dst_md, dnnl_query_diff_weights_md},
};
static const int slot_arg[EM_NCONV][3] = {
    {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
    {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC},
    {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS},
};

/* Fills P's layouts from pd; false when a chosen layout is too bloated. */
static bool take_layouts(conv_prim *P, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *user)
{
    int op = P->key.op;
    for (int i = 0; i < 3; i++) {
        const dnnl_memory_desc_t *m = D.primitive_desc_query_md(pd, slot_query[op][i], 0);
        if (!m) return false;
        P->want[i] = *m;
        P->user[i] = user[i];
        P->arg[i] = slot_arg[op][i];
        P->want_bytes[i] = D.memory_desc_get_size(m);
        if ((double)P->want_bytes[i] > MAX_BLOAT * (double)D.memory_desc_get_size(&user[i])) return false;
    }
    return true;
}

static int make_prim(conv_prim *P, const conv_key *k)
{
    memset(P, 0, sizeof *P);
    P->key = *k;
    dnnl_primitive_attr_t attr;
    if (D.primitive_attr_create(&attr)) return -1;
    int rc = -1;
    if (D.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user)) goto done;
    /* the plain layouts: take them from a primitive made with them */
    dnnl_primitive_desc_t plain = conv_pd(k, false, attr);
    if (!plain) goto done;
    dnnl_memory_desc_t user[3];
    for (int i = 0; i < 3; i++) {
        const dnnl_memory_desc_t *m = D.primitive_desc_query_md(plain, slot_query[k->op][i], 0);
        if (!m) {
            D.primitive_desc_destroy(plain);
            goto done;
        }
        user[i] = *m;
    }
    dnnl_primitive_desc_t pd = conv_pd(k, true, attr);
    if (!pd || !take_layouts(P, pd, user)) {
        if (pd) D.primitive_desc_destroy(pd);
        pd = plain;
        take_layouts(P, pd, user);
    } else {
        D.primitive_desc_destroy(plain);
    }
    /* bfloat16 without bfloat16 instructions: oneDNN's reference loops, far
     * slower than the float32 copies the caller then makes */
    const char *impl = NULL;
    if (k->bf16 && (D.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) || !impl
                    || !strncmp(impl, "ref", 3))) {
        D.primitive_desc_destroy(pd);
        P->refused = true;
        rc = 0;
        goto done;
    }
    if (k->bias) {
        const dnnl_memory_desc_t *m = D.primitive_desc_query_md(
            pd, k->op == EM_CONV_FORWARD ? dnnl_query_weights_md : dnnl_query_diff_weights_md, 1);
        if (!m) {
            D.primitive_desc_destroy(pd);
            goto done;
        }
        P->bias = *m;
    }
    if (cpu_dnnl_make_step(&P->conv, pd)) goto done;
    for (int i = 0; i < 3; i++) {
        if (D.memory_desc_equal(&P->want[i], &P->user[i])) continue;
        const dnnl_memory_desc_t *from = i < 2 ? &P->user[i] : &P->want[i], *to = i < 2 ? &P->want[i] : &P->user[i];
        dnnl_primitive_desc_t rpd;
        if (D.reorder_primitive_desc_create(&rpd, from, engine, to, engine, attr)) goto done;
        if (cpu_dnnl_make_step(&P->reorder[i], rpd)) goto done;
    }
    rc = 0;
done:
    D.primitive_attr_destroy(attr);
    if (rc) destroy_prim(P);
    return rc;
}

/* The cached primitive for k, made if needed; NULL if oneDNN fails or
 * refuses it (a refusal is cached too: asking again costs as much). */
static conv_prim *get_prim(const conv_key *k)
{
    conv_prim *victim = &cache[0];
    for (int i = 0; i < CACHE_SIZE; i++) {
        conv_prim *P = &cache[i];
        if (P->used && memcmp(&P->key, k, sizeof *k) == 0) {
            P->used = ++cache_clock;
            return P->refused ? NULL : P;
        }
        if (P->used < victim->used) victim = P;
    }
    if (victim->used) destroy_prim(victim);
    if (make_prim(victim, k)) return NULL;
    victim->used = ++cache_clock;
    return victim->refused ? NULL : victim;
}

/* ---- execution -------------------------------------------------------------------------
 * Every buffer is taken on the calling thread from the backend's allocator
 * (cpu_alloc keeps large blocks for reuse, so the pages are not faulted in
 * again on each call; it is not thread-safe): each sub-batch gets a
 * workspace holding its reordered activations and its scratchpads. */

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Whether slot i of P is reordered per sub-batch (the weights of forward
 * and backward data are reordered once per call instead). */
static bool per_chunk(const conv_prim *P, int i)
{
    return P->reorder[i].prim && !(i == 1 && P->key.op != EM_CONV_BACKWARD_WEIGHT);
}

static size_t workspace_bytes(const conv_prim *P)
{
    size_t n = round64(P->conv.scratch), rs = 0;
    for (int i = 0; i < 3; i++) {
        if (per_chunk(P, i)) n += round64(P->want_bytes[i]);
        if (P->reorder[i].scratch > rs) rs = P->reorder[i].scratch;
    }
    return n + round64(rs);
}

/* Runs s with its scratchpad at `scratch`; args has room for one more. */
int cpu_dnnl_run_step(const step *s, dnnl_stream_t st, int nargs, dnnl_exec_arg_t *args, void *scratch)
{
    dnnl_memory_t sm = NULL;
    if (s->scratch) {
        if (D.memory_create(&sm, &s->scratch_md, engine, scratch)) return -1;
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
    }
    int rc = D.primitive_execute(s->prim, st, nargs, args) == dnnl_success && D.stream_wait(st) == dnnl_success
                 ? 0 : -1;
    if (sm) D.memory_destroy(sm);
    return rc;
}

void cpu_dnnl_destroy_memories(dnnl_memory_t *mem, int n)
{
    for (int i = 0; i < n; i++)
        if (mem[i]) D.memory_destroy(mem[i]);
}

/* cpu_dnnl_run_tasks's call, as the pool's ranges see it */
typedef struct task_run {
    cpu_dnnl_task task;
    void *call;
    _Atomic int failed;
} task_run;

static void run_range(int64_t lo, int64_t hi, void *ctx)
{
    task_run *R = ctx;
    dnnl_stream_t st = cpu_dnnl_stream();
    for (int64_t i = lo; i < hi; i++)
        if (!st || R->task(R->call, i, st)) atomic_store(&R->failed, 1);
}

int cpu_dnnl_run_tasks(int64_t n, double work, cpu_dnnl_task task, void *call)
{
    task_run R = {.task = task, .call = call};
#ifdef EMBER_SANITIZE
    /* LeakSanitizer crashes at exit scanning the dynamic TLS that libgomp
     * and libdnnl (opened late) hold in pool workers (google/sanitizers
     * #1322; ASAN_OPTIONS=intercept_tls_get_addr=0 avoids it), so the
     * sanitizer build runs the tasks on the calling thread */
    (void)work;
    run_range(0, n, &R);
#else
    cpu_parallel_for(n, work < 1e18 ? (int64_t)work : INT64_MAX, 1, run_range, &R);
#endif
    return atomic_load(&R.failed) ? -1 : 0;
}

/* dst (layout to) = src (layout from) through reorder r. */
static int reorder(const step *r, dnnl_stream_t st, const dnnl_memory_desc_t *from, const void *src,
                   const dnnl_memory_desc_t *to, void *dst, void *scratch)
{
    dnnl_memory_t a = NULL, b = NULL;
    int rc = -1;
    if (D.memory_create(&a, from, engine, (void *)src) || D.memory_create(&b, to, engine, dst)) goto done;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
    rc = cpu_dnnl_run_step(r, st, 2, args, scratch);
done:
    if (a) D.memory_destroy(a);
    if (b) D.memory_destroy(b);
    return rc;
}

/* One call: the batch in `chunks` sub-batches of nb (the last may be
 * shorter, with its own primitive). */
typedef struct dnnl_call {
    em_conv_op op;
    int64_t N, nb, chunks;
    conv_prim *P[2];                /* full sub-batches, the short last one */
    char *base[3];                  /* a, b, out */
    size_t per_sample[3];           /* bytes per sample of batched slots; 0: unbatched */
    void *fixed[2];                 /* per primitive: the weights in its layout */
    char *partial;                  /* backward weight: sub-batches 1.. (all for bfloat16) write here */
    size_t gw_bytes;                /* one part: float32, plain */
    char *bias;                     /* forward: the bias; backward weight: its gradient (NULL: none) */
    char *bias_partial;             /* backward weight: the bias gradient's parts, as partial's */
    size_t gb_bytes;                /* one of those: float32 */
    int64_t first_part;             /* the sub-batch writing partial's first part: 1, or 0 for bfloat16 */
    char *work;                     /* the workspaces, ws_bytes apart */
    size_t ws_bytes;
} dnnl_call;

static int run_chunk(void *call, int64_t j, dnnl_stream_t st)
{
    dnnl_call *C = call;
    int64_t n0 = j * C->nb, nb = C->N - n0 < C->nb ? C->N - n0 : C->nb;
    int which = nb == C->nb ? 0 : 1;
    const conv_prim *P = C->P[which];
    char *ws = C->work + (size_t)j * C->ws_bytes;
    char *scratch = ws;
    ws += round64(P->conv.scratch);
    void *user[3], *ptr[3];
    dnnl_memory_t mem[4] = {NULL, NULL, NULL, NULL};
    int rc = -1;
    for (int i = 0; i < 3; i++) user[i] = C->base[i] + (size_t)n0 * C->per_sample[i];
    if (C->op == EM_CONV_BACKWARD_WEIGHT && j >= C->first_part)
        user[2] = C->partial + (size_t)(j - C->first_part) * C->gw_bytes;
    for (int i = 0; i < 3; i++) {
        ptr[i] = user[i];
        if (P->reorder[i].prim && !per_chunk(P, i)) ptr[i] = C->fixed[which];
        if (!per_chunk(P, i)) continue;
        ptr[i] = ws;
        ws += round64(P->want_bytes[i]);
    }
    for (int i = 0; i < 2; i++)
        if (per_chunk(P, i) && reorder(&P->reorder[i], st, &P->user[i], user[i], &P->want[i], ptr[i], ws))
            goto done;
    for (int i = 0; i < 3; i++)
        if (D.memory_create(&mem[i], &P->want[i], engine, ptr[i])) goto done;
    dnnl_exec_arg_t args[5];
    for (int i = 0; i < 3; i++) args[i] = (dnnl_exec_arg_t){P->arg[i], mem[i]};
    int nargs = 3;
    if (P->key.bias) {
        bool fwd = C->op == EM_CONV_FORWARD;
        char *bp = !fwd && j >= C->first_part ? C->bias_partial + (size_t)(j - C->first_part) * C->gb_bytes : C->bias;
        if (D.memory_create(&mem[3], &P->bias, engine, bp)) goto done;
        args[nargs++] = (dnnl_exec_arg_t){fwd ? DNNL_ARG_BIAS : DNNL_ARG_DIFF_BIAS, mem[3]};
    }
    if (cpu_dnnl_run_step(&P->conv, st, nargs, args, scratch)) goto done;
    if (P->reorder[2].prim && reorder(&P->reorder[2], st, &P->want[2], ptr[2], &P->user[2], user[2], ws)) goto done;
    rc = 0;
done:
    cpu_dnnl_destroy_memories(mem, 4);
    return rc;
}

static void add_f32(float *dst, const float *src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] += src[i];
}

/* A sum over the sub-batches, into out (n values): float32, the first part
 * already in out and parts 1.. in `partial`; bfloat16, every part in
 * `partial` (float32), added there and rounded once into out. */
static void add_parts(void *out, char *partial, int64_t n, int64_t chunks, int64_t first_part, bool bf16)
{
    float *sum = bf16 ? (float *)partial : out;
    for (int64_t j = 1; j < chunks; j++) add_f32(sum, (const float *)(partial + (size_t)((j - first_part) * n) * 4), n);
    if (bf16) cpu_f32_to_half(out, 2, sum, n, EM_BFLOAT16);
}

static void key_for(conv_key *k, em_conv_op op, const cpu_conv_geom *g, bool bf16, bool bias, int64_t n,
                    const int64_t *padr)
{
    memset(k, 0, sizeof *k);
    k->op = (int)op;
    k->bf16 = bf16;
    k->bias = bias;
    k->nthr = omp_threads > 1 ? omp_threads : 1;
    k->nsp = g->nsp;
    k->n = n;
    k->c = g->C;
    k->k = g->K;
    k->g = g->G;
    for (int i = 0; i < 3; i++) {
        k->in[i] = g->in[i];
        k->ker[i] = g->ker[i];
        k->out[i] = g->out[i];
        k->stride[i] = g->stride[i];
        k->dil[i] = g->dil[i];
        k->padl[i] = g->pad[i];
        k->padr[i] = padr[i];
    }
}

/* oneDNN's right padding: the symmetric one where it fits the extents
 * (any value in a range of `stride` gives the same outputs); backward data
 * with a longer gx needs less. False when it would be negative. */
static bool right_padding(const cpu_conv_geom *g, int64_t *padr)
{
    for (int i = 0; i < 3; i++) {
        int64_t lo = (g->out[i] - 1) * g->stride[i] + (g->ker[i] - 1) * g->dil[i] + 1 - g->in[i] - g->pad[i];
        int64_t hi = lo + g->stride[i] - 1, p = g->pad[i];
        padr[i] = p < lo ? lo : p > hi ? hi : p;
        if (padr[i] < 0) return false;
    }
    return true;
}

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* oneDNN's fast kernels block channels by 16 (8 on AVX2); with fewer
 * channels per group they lost to the reference path in every op measured,
 * except depthwise convolutions of 16 channels or more. */
static bool blocks_well(const cpu_conv_geom *g)
{
    int64_t Cg = g->C / g->G, Kg = g->K / g->G;
    if (Cg == 1 && Kg == 1) return g->G >= 16;
    return Cg >= 8 && Kg >= 8;
}

static int conv_call(em_conv_op op, const cpu_conv_geom *g, bool bf16, void *out, const void *a, const void *b,
                     void *bias)
{
    int64_t padr[3];
    if (!right_padding(g, padr)) return 1;
    int64_t isz = prod3(g->in), osz = prod3(g->out), wsz = g->K * (g->C / g->G) * prod3(g->ker);
    double work = (double)g->N * (double)(g->K * osz) * (double)((g->C / g->G) * prod3(g->ker));
    if ((work < MIN_MACS || !blocks_well(g)) && enabled != 2) return 1;
    /* oneDNN's kernels index with int in places */
    if (g->C * isz > INT32_MAX / 2 || g->K * osz > INT32_MAX / 2 || wsz > INT32_MAX / 2) return 1;
    dnnl_stream_t st = cpu_dnnl_stream();
    if (!st) return 1;

    int T = cpu_threads();
    dnnl_call C = {.op = op, .N = g->N};
    C.chunks = T > 1 && omp_threads <= 1 ? 2 * (int64_t)T : 1;
    if (C.chunks > g->N) C.chunks = g->N;
    C.nb = (g->N + C.chunks - 1) / C.chunks;
    C.chunks = (g->N + C.nb - 1) / C.nb;
    int64_t last = g->N - (C.chunks - 1) * C.nb;
    conv_key k;
    key_for(&k, op, g, bf16, bias != NULL, C.nb, padr);
    if (!(C.P[0] = get_prim(&k))) return 1;
    C.P[1] = C.P[0];
    if (last != C.nb) {     /* P[0], just used, is not the one evicted */
        key_for(&k, op, g, bf16, bias != NULL, last, padr);
        if (!(C.P[1] = get_prim(&k))) return 1;
    }

    size_t es = bf16 ? 2 : 4, xs = (size_t)(g->C * isz) * es, ys = (size_t)(g->K * osz) * es;
    C.base[0] = (char *)a;
    C.base[1] = (char *)b;
    C.base[2] = (char *)out;
    C.per_sample[0] = op == EM_CONV_BACKWARD_DATA ? ys : xs;
    C.per_sample[1] = op == EM_CONV_BACKWARD_WEIGHT ? ys : 0;
    C.per_sample[2] = op == EM_CONV_FORWARD ? ys : op == EM_CONV_BACKWARD_DATA ? xs : 0;
    C.gw_bytes = (size_t)wsz * 4;
    C.first_part = bf16 ? 0 : 1;
    C.bias = bias;
    C.gb_bytes = (size_t)g->K * 4;

    C.ws_bytes = workspace_bytes(C.P[0]);
    if (workspace_bytes(C.P[1]) > C.ws_bytes) C.ws_bytes = workspace_bytes(C.P[1]);
    size_t fixed_bytes[2] = {0, 0}, work_bytes = (size_t)C.chunks * C.ws_bytes;
    size_t parts = op == EM_CONV_BACKWARD_WEIGHT ? (size_t)(C.chunks - C.first_part) : 0;
    size_t partial_bytes = parts * C.gw_bytes, bias_partial_bytes = bias ? parts * C.gb_bytes : 0;
    int rc = 1;
    if (work_bytes && !(C.work = cpu_alloc(work_bytes, 0))) goto done;
    if (partial_bytes && !(C.partial = cpu_alloc(partial_bytes, 0))) goto done;
    if (bias_partial_bytes && !(C.bias_partial = cpu_alloc(bias_partial_bytes, 0))) goto done;
    /* the weights in each primitive's layout, once for all sub-batches */
    for (int w = 0; w < 2 && op != EM_CONV_BACKWARD_WEIGHT; w++) {
        const conv_prim *P = C.P[w];
        if (!P->reorder[1].prim) continue;
        if (w == 1 && C.P[1] == C.P[0]) {
            C.fixed[1] = C.fixed[0];
            break;
        }
        fixed_bytes[w] = P->want_bytes[1];
        if (!(C.fixed[w] = cpu_alloc(fixed_bytes[w], 0))) goto done;
        if (reorder(&P->reorder[1], st, &P->user[1], b, &P->want[1], C.fixed[w], C.work)) goto done;
    }
    if (cpu_dnnl_run_tasks(C.chunks, work, run_chunk, &C)) goto done;
    if (op == EM_CONV_BACKWARD_WEIGHT) {
        add_parts(out, C.partial, wsz, C.chunks, C.first_part, bf16);
        if (bias) add_parts(bias, C.bias_partial, g->K, C.chunks, C.first_part, bf16);
    }
    rc = 0;
done:
    if (C.work) cpu_free(C.work, work_bytes, 0);
    if (C.partial) cpu_free(C.partial, partial_bytes, 0);
    if (C.bias_partial) cpu_free(C.bias_partial, bias_partial_bytes, 0);
    for (int w = 0; w < 2; w++)
        if (fixed_bytes[w] && C.fixed[w]) cpu_free(C.fixed[w], fixed_bytes[w], 0);
    return rc;
}

int cpu_dnnl_conv(em_conv_op op, const cpu_conv_geom *g, em_dtype dt, void *out, const void *a, const void *b,
                  void *bias)
{
    if ((dt != EM_FLOAT32 && dt != EM_BFLOAT16) || !wanted() || !load()) return 1;
    bool bf16 = dt == EM_BFLOAT16;
    if (omp_threads <= 1) return conv_call(op, g, bf16, out, a, b, bias);
    D.omp_set_num_threads(omp_threads);
    int rc = conv_call(op, g, bf16, out, a, b, bias);
    D.omp_set_num_threads(1);
    return rc;
}
