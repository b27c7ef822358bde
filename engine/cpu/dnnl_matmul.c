/* dnnl_matmul.c — bfloat16 and large float32 GEMMs through oneDNN's matmul
 * primitive.
 *
 * float32: oneDNN 2.6's brgemm kernels beat OpenBLAS 0.3.21's (Cooperlake /
 * SkylakeX) on the shapes of a transformer's layers. One thread, best of 10,
 * on this 2-core AVX-512 VM (ms, OpenBLAS / oneDNN brg:avx512_core):
 *   x[4096,128] @ W^T, W [384,128]   3.28 / 2.53     [4096,512] @ W^T [512,128]  4.53 / 3.55
 *   dY[4096,128] @ W [128,512]       4.40 / 3.34     dY^T [128,4096] @ x [4096,512]  4.92 / 3.77
 *   dY^T [512,4096] @ x [4096,128]   4.37 / 4.55 (the one shape where it is not faster)
 * (OpenBLAS also zeroes C before adding the product into it.) So gemm.c
 * sends float32 products of at least DNNL_F32_MIN multiply-adds here first.
 * Taken: brgemm, and oneDNN's jit GEMM, which it picks where brgemm does not
 * take the layout (a block of rows of a transposed operand, whose leading
 * dimension is wider than the block: the weight gradients' products when
 * split over threads); the character GPT's step measured 144-147 ms with
 * those on OpenBLAS and 134-145 ms with them on gemm:jit, taking turns.
 * Declined: the reference implementation (OpenBLAS then runs).
 *
 * bfloat16:
 *
 * On a CPU with AVX512-BF16 oneDNN JITs a kernel (brg:avx512_core_bf16)
 * that multiplies bfloat16 pairs into float32 sums and rounds the result
 * once; Debian's OpenBLAS 0.3.21 is built without sbgemm. Measured on the
 * 2-core AVX-512 EPYC VM (shared), one thread, [512,1024] @ [1024,1024],
 * best of 5: sgemm float32 9.9 ms, oneDNN bfloat16 4.9 ms (b transposed or
 * not), so bfloat16 runs here and not through float32 copies. Without a
 * fast kernel (oneDNN picks its "ref" implementation, e.g. on a CPU without
 * bfloat16 instructions), without libdnnl, or with EMBER_DNNL=0, the call is
 * declined and gemm.c widens to float32. oneDNN 2.6 has no float16 matmul
 * on this CPU (no AVX512-FP16): float16 always widens.
 *
 * Threads as in dnnl.c: single-threaded primitives run on ember's pool,
 * each task a sub-batch, or for a small batch a block of rows (columns) of
 * one product, cut as gemm.c cuts sgemm calls. Primitives bake in the
 * shapes, strides, alpha and beta, so they are cached (least recently used)
 * by those; a call needs at most two (the full task and a shorter last). */
#include "dnnl_shared.h"

/* a char-GPT training step uses 13 in bfloat16 (forward, both gradients,
 * full and shorter last blocks), about 30 in float32 (and evaluation adds
 * its own shapes) */
#define CACHE_SIZE 64
/* multiply-adds below which one task does it all (gemm.c's threshold) */
#define PARALLEL_MIN 262144

typedef struct mm_key {
    int64_t nb, m, n, k;            /* one task's batch and sizes */
    int64_t sa[3], sb[3], sc[3];    /* strides in elements, batch first */
    bool a_bcast, b_bcast, c_f32, ab_f32;
    float alpha, beta;
} mm_key;

typedef struct mm_prim {
    mm_key key;
    uint64_t used;                  /* 0: an empty slot */
    bool refused;                   /* oneDNN has no fast kernel for it */
    step mm;
    dnnl_memory_desc_t md[3];       /* a, b, c */
} mm_prim;

static mm_prim cache[CACHE_SIZE];
static uint64_t cache_clock;

/* Strides of a size-1 batch dim do not matter; oneDNN wants them non-zero. */
static void desc(const dnnl_api *D, dnnl_memory_desc_t *md, int64_t nb, int64_t r, int64_t c,
                 const int64_t *s, bool bcast, dnnl_data_type_t dt)
{
    dnnl_dims_t d = {bcast ? 1 : nb, r, c};
    /* one matrix (or a broadcast one): the batch stride its span, as a plain
     * layout has it (oneDNN 2.6 takes its brgemm kernels only for those) */
    dnnl_dims_t st = {bcast || nb == 1 ? (r - 1) * s[1] + (c - 1) * s[2] + 1 : s[0], s[1], s[2]};
    if (st[0] == 0) st[0] = 1;
    D->memory_desc_init_by_strides(md, 3, d, dt, st);
}

static int make_prim(const dnnl_api *D, dnnl_engine_t eng, mm_prim *P, const mm_key *k)
{
    memset(P, 0, sizeof *P);
    P->key = *k;
    dnnl_data_type_t ab = k->ab_f32 ? dnnl_f32 : dnnl_bf16;
    desc(D, &P->md[0], k->nb, k->m, k->k, k->sa, k->a_bcast, ab);
    desc(D, &P->md[1], k->nb, k->k, k->n, k->sb, k->b_bcast, ab);
    desc(D, &P->md[2], k->nb, k->m, k->n, k->sc, false, k->c_f32 ? dnnl_f32 : dnnl_bf16);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_matmul_desc_t md;
    int rc = -1;
    if (D->primitive_attr_create(&attr) || D->primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user))
        goto done;
    if (k->alpha != 1 && D->primitive_attr_set_output_scales(attr, 1, 0, &k->alpha)) goto done;
    if (k->beta != 0 && (D->post_ops_create(&po) || D->post_ops_append_sum(po, k->beta)
                         || D->primitive_attr_set_post_ops(attr, po)))
        goto done;
    if (D->matmul_desc_init(&md, &P->md[0], &P->md[1], NULL, &P->md[2])
        || D->primitive_desc_create(&pd, &md, attr, eng, NULL))
        goto done;
    const char *impl = NULL;
    if (D->primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) || !impl || !strncmp(impl, "ref", 3)
        || (k->ab_f32 && strncmp(impl, "brg", 3) != 0 && strncmp(impl, "gemm:jit", 8) != 0)) {
        D->primitive_desc_destroy(pd);
        P->refused = true;
        rc = 0;
        goto done;
    }
    rc = cpu_dnnl_make_step(&P->mm, pd);
done:
    if (po) D->post_ops_destroy(po);
    if (attr) D->primitive_attr_destroy(attr);
    return rc;
}

/* The cached primitive for k, made if needed; NULL when oneDNN fails or
 * refuses it. */
static const mm_prim *get_prim(const dnnl_api *D, dnnl_engine_t eng, const mm_key *k)
{
    mm_prim *victim = &cache[0];
    for (int i = 0; i < CACHE_SIZE; i++) {
        mm_prim *P = &cache[i];
        if (P->used && memcmp(&P->key, k, sizeof *k) == 0) {
            P->used = ++cache_clock;
            return P->refused ? NULL : P;
        }
        if (P->used < victim->used) victim = P;
    }
    if (victim->used) cpu_dnnl_destroy_step(&victim->mm);
    victim->used = 0;
    if (make_prim(D, eng, victim, k)) return NULL;
    victim->used = ++cache_clock;
    return victim->refused ? NULL : victim;
}

/* One call: tasks of `per` batch entries (by_batch) or of `per` rows
 * (columns, when !rows) of one product; P[1] takes the short last one. */
typedef struct mm_call {
    const dnnl_api *D;
    dnnl_engine_t eng;
    const cpu_matmul *m;
    bool by_batch, rows;
    int64_t per, len, parts;        /* len: B, M or N; parts: tasks per product */
    const mm_prim *P[2];
    char *scratch;
    size_t scratch_bytes;
} mm_call;

static int run_task(void *call, int64_t t, dnnl_stream_t st)
{
    mm_call *C = call;
    const cpu_matmul *m = C->m;
    int64_t i = C->by_batch ? t * C->per : t / C->parts;
    int64_t r0 = C->by_batch ? 0 : (t % C->parts) * C->per;
    int64_t start = C->by_batch ? i : r0, cnt = C->len - start < C->per ? C->len - start : C->per;
    const mm_prim *P = C->P[cnt == C->per ? 0 : 1];
    int64_t oa = i * m->sa, ob = i * m->sb, oc = i * m->sc;
    if (!C->by_batch && C->rows) {
        oa += r0 * (m->ta ? 1 : m->lda);
        oc += r0 * m->ldc;
    } else if (!C->by_batch) {
        ob += r0 * (m->tb ? m->ldb : 1);
        oc += r0;
    }
    int64_t csz = m->c_f32 ? 4 : 2, absz = m->ab_f32 ? 4 : 2;
    void *ptr[3] = {(char *)m->a + oa * absz, (char *)m->b + ob * absz, (char *)m->c + oc * csz};
    dnnl_memory_t mem[3] = {NULL, NULL, NULL};
    int rc = -1;
    for (int j = 0; j < 3; j++)
        if (C->D->memory_create(&mem[j], &P->md[j], C->eng, ptr[j])) goto done;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
    rc = cpu_dnnl_run_step(&P->mm, st, 3, args, C->scratch + (size_t)t * C->scratch_bytes);
done:
    cpu_dnnl_destroy_memories(mem, 3);
    return rc;
}

/* The key of a task of `cnt` batch entries, rows or columns. */
static void key_for(mm_key *k, const mm_call *C, int64_t cnt)
{
    const cpu_matmul *m = C->m;
    memset(k, 0, sizeof *k);
    k->nb = C->by_batch ? cnt : 1;
    k->m = !C->by_batch && C->rows ? cnt : m->M;
    k->n = !C->by_batch && !C->rows ? cnt : m->N;
    k->k = m->K;
    k->sa[0] = m->sa;
    k->sa[1] = m->ta ? 1 : m->lda;
    k->sa[2] = m->ta ? m->lda : 1;
    k->sb[0] = m->sb;
    k->sb[1] = m->tb ? 1 : m->ldb;
    k->sb[2] = m->tb ? m->ldb : 1;
    k->sc[0] = m->sc;
    k->sc[1] = m->ldc;
    k->sc[2] = 1;
    k->a_bcast = k->nb > 1 && m->sa == 0;
    k->b_bcast = k->nb > 1 && m->sb == 0;
    k->c_f32 = m->c_f32;
    k->ab_f32 = m->ab_f32;
    k->alpha = m->alpha;
    k->beta = m->beta;
}

int cpu_dnnl_matmul(const cpu_matmul *m)
{
    mm_call C = {.m = m};
    if (!(C.D = cpu_dnnl_open(&C.eng)) || !cpu_dnnl_stream()) return 1;
    int64_t B = m->B, nt = cpu_threads();
    double work = (double)B * (double)m->M * (double)m->N * (double)m->K;
    int64_t tasks;
    if (nt <= 1 || work < PARALLEL_MIN || B >= 2 * nt) {
        /* sub-batches: about two per thread, so a late thread's share is taken */
        C.by_batch = true;
        C.len = B;
        tasks = nt <= 1 || work < PARALLEL_MIN ? 1 : 2 * nt;
        C.per = (B + tasks - 1) / tasks;
        tasks = (B + C.per - 1) / C.per;
        C.parts = 1;
    } else {
        /* blocks along the longer output dim, 16-aligned for the kernel's widths */
        C.rows = m->M >= m->N;
        C.len = C.rows ? m->M : m->N;
        C.parts = (2 * nt + B - 1) / B;
        if (C.parts > C.len) C.parts = C.len;
        C.per = ((C.len + C.parts - 1) / C.parts + 15) & ~(int64_t)15;
        C.parts = (C.len + C.per - 1) / C.per;
        tasks = B * C.parts;
    }
    int64_t last = C.len - (C.by_batch ? (tasks - 1) * C.per : (C.parts - 1) * C.per);
    mm_key k;
    key_for(&k, &C, C.per);
    if (!(C.P[0] = get_prim(C.D, C.eng, &k))) return 1;
    C.P[1] = C.P[0];
    if (last != C.per) {    /* P[0], just used, is not the one evicted */
        key_for(&k, &C, last);
        if (!(C.P[1] = get_prim(C.D, C.eng, &k))) return 1;
    }
    C.scratch_bytes = (C.P[0]->mm.scratch > C.P[1]->mm.scratch ? C.P[0]->mm.scratch : C.P[1]->mm.scratch);
    C.scratch_bytes = (C.scratch_bytes + 63) & ~(size_t)63;
    size_t total = (size_t)tasks * C.scratch_bytes;
    if (total && !(C.scratch = cpu_alloc(total, 0))) return 1;
    int failed = cpu_dnnl_run_tasks(tasks, work, run_task, &C);
    if (C.scratch) cpu_free(C.scratch, total, 0);
    /* a failure part-way leaves c partly written: the caller's float32
     * path rewrites all of it, but beta != 0 would then add twice */
    if (failed)
        return m->beta != 0 ? em_set_error("matmul: oneDNN %s GEMM failed part-way", m->ab_f32 ? "float32" : "bfloat16")
                            : 1;
    return 0;
}
