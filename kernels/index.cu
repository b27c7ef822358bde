/* index.cu — the CUDA index family (index_select, gather, scatter,
 * scatter_add, index_add) and nonzero: the twin of engine/cpu/index.c.
 *
 * As on the CPU, the five ops are two loops over an iteration shape S (the
 * output for index_select/gather, the index for scatter, the source for
 * index_add). The tensor addressed through the index is seen with stride 0
 * along dim, so each element finds the base of its line and adds
 * slot * stride. index_select and index_add whose dims after `dim` are dense
 * in both tensors (Embedding lookups and their backward, [N, D] row gathers)
 * take a row path instead: a group of lanes per row, one index load per row,
 * coalesced (for index_select, vectorised) accesses along the row.
 *
 * Index values are 1-based, -n..-1 count from the end. A bad value is never
 * used: its element (or row) is skipped and reported in the device's error
 * word, raised at the next synchronisation.
 *
 * Differences from the CPU that come from running in parallel:
 *  - scatter with a slot named more than once: one of the writes wins, which
 *    one is unspecified (the CPU, being serial, keeps the last);
 *  - scatter_add/index_add use atomics, so float sums into one slot are added
 *    in an unspecified order (rounding may differ from the CPU's serial sum);
 *  - uint8 and bool atomics work on the aligned 32-bit word holding the byte:
 *    the neighbouring bytes are read and written back unchanged, atomically,
 *    so this relies on allocations being at least 4-byte granular (device
 *    allocations are) and on nothing else running on the stream meanwhile. */
#include "kc.h"

#include <cub/cub.cuh>

/* ---- shared helpers --------------------------------------------------------- */

static int index_err_op(em_index_op op)
{
    switch (op) {
    case EM_INDEX_SELECT: return KC_ERR_INDEX_SELECT;
    case EM_GATHER: return KC_ERR_GATHER;
    case EM_SCATTER: return KC_ERR_SCATTER;
    case EM_SCATTER_ADD: return KC_ERR_SCATTER_ADD;
    case EM_SCATTER_MUL: case EM_SCATTER_AMAX: case EM_SCATTER_AMIN: return KC_ERR_SCATTER;
    default: return KC_ERR_INDEX_ADD;
    }
}

/* 1-based (or negative) index -> 0-based slot, or -1 when out of range. */
__device__ __forceinline__ int64_t index_slot(int64_t v, int64_t n)
{
    if (v >= 1 && v <= n) return v - 1;
    if (v < 0 && v >= -n) return v + n;
    return -1;
}

/* Operand pointers of row-major position i. I is uint32_t when the whole
 * iteration space fits, so the per-dim divisions are 32-bit (several times
 * cheaper than 64-bit ones). */
template <typename I, int N>
__device__ __forceinline__ void index_iter_ptrs(const kc_iter<N> &it, int64_t i, char **p)
{
    if (it.contiguous) {
        for (int k = 0; k < N; k++) p[k] = it.data[k] + i * it.esize[k];
        return;
    }
    int64_t off[N];
    for (int k = 0; k < N; k++) off[k] = 0;
    I r = (I)i;
    for (int d = it.ndim - 1; d >= 0; d--) {
        I s = (I)it.sizes[d], q = r / s, m = r - q * s;
        r = q;
        for (int k = 0; k < N; k++) off[k] += (int64_t)m * it.strides[k][d];
    }
    for (int k = 0; k < N; k++) p[k] = it.data[k] + off[k] * it.esize[k];
}

/* ---- atomic adds for every dtype scatter_add can see -------------------------- */

__device__ __forceinline__ void index_atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void index_atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void index_atomic_add(__half *p, __half v) { atomicAdd(p, v); }
__device__ __forceinline__ void index_atomic_add(__nv_bfloat16 *p, __nv_bfloat16 v) { atomicAdd(p, v); }
__device__ __forceinline__ void index_atomic_add(int32_t *p, int32_t v) { atomicAdd((int *)p, (int)v); }
/* two's complement wraps the same way as the CPU's uint64 sum */
__device__ __forceinline__ void index_atomic_add(int64_t *p, int64_t v)
{
    atomicAdd((unsigned long long *)p, (unsigned long long)v);
}
/* 1- and 2-byte integers: a compare-and-swap on the aligned 32-bit word
 * holding the element, the sum wrapping in the element's bits */
template <typename T> __device__ __forceinline__ void index_atomic_add_narrow(T *p, T v)
{
    const unsigned int bits = 8 * sizeof(T), mask = (1u << bits) - 1;
    unsigned int *w = (unsigned int *)((uintptr_t)p & ~(uintptr_t)3);
    unsigned int shift = (unsigned int)((uintptr_t)p & 3) * 8;
    unsigned int old = *(volatile unsigned int *)w, assumed;
    do {
        assumed = old;
        unsigned int b = ((assumed >> shift) + (unsigned int)v) & mask;
        old = atomicCAS(w, assumed, (assumed & ~(mask << shift)) | (b << shift));
    } while (old != assumed);
}
__device__ __forceinline__ void index_atomic_add(uint8_t *p, uint8_t v) { index_atomic_add_narrow(p, v); }
__device__ __forceinline__ void index_atomic_add(int8_t *p, int8_t v) { index_atomic_add_narrow(p, v); }
__device__ __forceinline__ void index_atomic_add(int16_t *p, int16_t v) { index_atomic_add_narrow(p, v); }
/* bool: out = out || src */
__device__ __forceinline__ void index_atomic_add(bool *p, bool v)
{
    if (!v) return;
    unsigned int *w = (unsigned int *)((uintptr_t)p & ~(uintptr_t)3);
    atomicOr(w, 1u << ((unsigned int)((uintptr_t)p & 3) * 8));
}

/* ---- scatter_reduce's multiply / amax / amin ------------------------------------
 * One step x (op) y: op 0 multiplies, 1 takes the max, 2 the min; a NaN wins
 * max and min, as on the CPU; integers multiply with two's complement wrap;
 * bool: and / or / and. Applied atomically by a compare-and-swap loop on the
 * word holding the element (the aligned 32-bit word for 1- and 2-byte types,
 * as the uint8 atomic add above). */
template <typename T> __device__ __forceinline__ T index_reduce_step(T x, T y, int op)
{
    double a = kc_to_f64(x), b = kc_to_f64(y), r;
    if (op == 0) r = a * b;
    else if (a != a || b != b) r = a != a ? a : b;
    else r = op == 1 ? (b > a ? b : a) : (b < a ? b : a);
    return kc_from_f64<T>(r);
}
template <typename I> __device__ __forceinline__ I index_reduce_int(I x, I y, int op)
{
    if (op == 0) return (I)((unsigned long long)(long long)x * (unsigned long long)(long long)y);
    return op == 1 ? (y > x ? y : x) : (y < x ? y : x);
}
template <> __device__ __forceinline__ int64_t index_reduce_step<int64_t>(int64_t x, int64_t y, int op) { return index_reduce_int(x, y, op); }
template <> __device__ __forceinline__ int32_t index_reduce_step<int32_t>(int32_t x, int32_t y, int op) { return index_reduce_int(x, y, op); }
template <> __device__ __forceinline__ int16_t index_reduce_step<int16_t>(int16_t x, int16_t y, int op) { return index_reduce_int(x, y, op); }
template <> __device__ __forceinline__ int8_t index_reduce_step<int8_t>(int8_t x, int8_t y, int op) { return index_reduce_int(x, y, op); }
template <> __device__ __forceinline__ uint8_t index_reduce_step<uint8_t>(uint8_t x, uint8_t y, int op) { return index_reduce_int(x, y, op); }
template <> __device__ __forceinline__ bool index_reduce_step<bool>(bool x, bool y, int op) { return op == 1 ? (x || y) : (x && y); }

template <typename T> __device__ void index_atomic_reduce(T *p, T v, int op)
{
    if (sizeof(T) == 8) {
        unsigned long long *w = (unsigned long long *)p, old = *(volatile unsigned long long *)w, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 8);
            next = index_reduce_step(cur, v, op);
            unsigned long long nw;
            memcpy(&nw, &next, 8);
            if (nw == assumed) return;
            old = atomicCAS(w, assumed, nw);
        } while (old != assumed);
    } else {
        unsigned int *w = (unsigned int *)((uintptr_t)p & ~(uintptr_t)3);
        unsigned int shift = sizeof(T) == 4 ? 0 : (unsigned int)((uintptr_t)p & 3) * 8;
        unsigned int mask = sizeof(T) == 4 ? 0xffffffffu : sizeof(T) == 2 ? 0xffffu : 0xffu;
        unsigned int old = *(volatile unsigned int *)w, assumed;
        do {
            assumed = old;
            unsigned int bits = (assumed >> shift) & mask, nbits = 0;
            T cur, next;
            memcpy(&cur, &bits, sizeof(T));
            next = index_reduce_step(cur, v, op);
            memcpy(&nbits, &next, sizeof(T));
            unsigned int nw = (assumed & ~(mask << shift)) | ((nbits & mask) << shift);
            if (nw == assumed) return;
            old = atomicCAS(w, assumed, nw);
        } while (old != assumed);
    }
}

/* ---- the generic element path ------------------------------------------------ */

/* Operand 0 and 1 of `it` are the two tensors (one of them the line base of
 * the addressed tensor), operand 2 the index. */
struct index_args {
    kc_iter<3> it;
    int64_t stride;                 /* bytes between slots of the addressed tensor */
    int64_t size;                   /* its size along dim */
    int64_t pos_inner, pos_size;    /* element i reads index position (i / inner) % size */
    kc_error_word *err;
    int err_op;
};

template <typename E> struct gather_copy {       /* p0: out, p1: line of in */
    __device__ void operator()(char *o, char *line, int64_t off) const
    {
        *(E *)o = *(const E *)(line + off);
    }
};

template <typename E> struct scatter_copy {      /* p0: line of out, p1: src */
    __device__ void operator()(char *line, char *src, int64_t off) const
    {
        *(E *)(line + off) = *(const E *)src;
    }
};

template <typename T> struct scatter_add_op {    /* p0: line of out, p1: src */
    __device__ void operator()(char *line, char *src, int64_t off) const
    {
        index_atomic_add((T *)(line + off), *(const T *)src);
    }
};

/* Element i's operand pointers and its slot along dim; false, reported, for
 * an index out of range. */
template <typename I>
__device__ __forceinline__ bool index_elem_at(const index_args &a, int64_t i, char **p, int64_t *k)
{
    index_iter_ptrs<I, 3>(a.it, i, p);
    int64_t v = *(const int64_t *)p[2];
    *k = index_slot(v, a.size);
    if (*k >= 0) return true;
    kc_report_bad_index(a.err, a.err_op, v, (i / a.pos_inner) % a.pos_size, a.size);
    return false;
}

template <typename I, typename F>
__global__ void index_elem_kernel(const __grid_constant__ index_args a, F f)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.it.numel; i += step) {
        char *p[3];
        int64_t k;
        if (index_elem_at<I>(a, i, p, &k)) f(p[0], p[1], k * a.stride);
    }
}

template <typename F>
static int launch_elem(const char *name, const index_args &a, F f, int dev, cudaStream_t s)
{
    if (a.it.numel <= (int64_t)UINT32_MAX)
        KC_LAUNCH(kc_grid(a.it.numel, dev), KC_THREADS, 0, s, index_elem_kernel<uint32_t, F>)(a, f);
    else
        KC_LAUNCH(kc_grid(a.it.numel, dev), KC_THREADS, 0, s, index_elem_kernel<uint64_t, F>)(a, f);
    return kc_launched(name, dev);
}

template <typename T>
static int launch_scatter_add(const char *name, const index_args *a, int dev, cudaStream_t s)
{
    return launch_elem(name, *a, scatter_add_op<T>(), dev, s);
}

template <typename T> struct scatter_reduce_op {    /* p0: line of out, p1: src */
    int op;
    __device__ void operator()(char *line, char *src, int64_t off) const
    {
        index_atomic_reduce((T *)(line + off), *(const T *)src, op);
    }
};

template <typename T>
static int launch_scatter_reduce(const char *name, const index_args *a, int op, int dev, cudaStream_t s)
{
    scatter_reduce_op<T> f;
    f.op = op;
    return launch_elem(name, *a, f, dev, s);
}

/* ---- index order, under use_deterministic_algorithms ---------------------------
 * The atomic adds (and scatter_reduce's multiplies) above reach an element in
 * whatever order the threads run, so a float result's rounding changes from
 * run to run. In deterministic mode each update's target element and its
 * position in the iteration go through a stable radix sort by target, and one
 * thread per target applies that target's updates in iteration order:
 * out = ((out + s1) + s2) + ..., the CPU's order and so its bits. Slower (a
 * sort of every update; a target hit k times is k steps of one thread), as
 * PyTorch's deterministic index_put. Integer sums wrap the same in any order
 * and max / min do not depend on it: they keep the atomic kernels. */

template <typename I>
__global__ void det_keys_kernel(const __grid_constant__ index_args a, const char *base, int64_t esz,
                                uint64_t sentinel, uint64_t *keys, int64_t *pos)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.it.numel; i += step) {
        char *p[3];
        int64_t k;
        keys[i] = index_elem_at<I>(a, i, p, &k) ? (uint64_t)((p[0] + k * a.stride - base) / esz) : sentinel;
        pos[i] = i;
    }
}

/* one step of a target's chain: float32 and float64 in their own arithmetic (the
 * CPU's); the half types through double, where a sum or product of two is exact,
 * so one rounding */
template <typename T> __device__ __forceinline__ T det_step(T acc, T v, bool mul)
{
    double a = kc_to_f64(acc), b = kc_to_f64(v);
    return kc_from_f64<T>(mul ? a * b : a + b);
}
template <> __device__ __forceinline__ float det_step<float>(float acc, float v, bool mul) { return mul ? acc * v : acc + v; }
template <> __device__ __forceinline__ double det_step<double>(double acc, double v, bool mul) { return mul ? acc * v : acc + v; }

template <typename T, typename I>
__global__ void det_apply_kernel(const __grid_constant__ index_args a, char *base, const uint64_t *keys,
                                 const int64_t *pos, uint64_t sentinel, bool mul)
{
    int64_t n = a.it.numel, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t q = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += step) {
        uint64_t key = keys[q];
        if (key == sentinel || (q > 0 && keys[q - 1] == key)) continue;   /* not the head of a run */
        T *o = (T *)base + key;
        T acc = *o;
        for (int64_t r = q; r < n && keys[r] == key; r++) {
            char *p[3];
            index_iter_ptrs<I, 3>(a.it, pos[r], p);
            acc = det_step<T>(acc, *(const T *)p[1], mul);
        }
        *o = acc;
    }
}

/* a's updates of out in index order; mul: scatter_reduce "prod", else adds */
template <typename T>
static int det_scatter(const char *name, const index_args *a, const em_tensor *out, bool mul, int dev,
                       cudaStream_t s)
{
    int64_t n = a->it.numel, esz = (int64_t)sizeof(T), span = 0;
    for (int d = 0; d < out->ndim; d++) span += (out->sizes[d] - 1) * out->strides[d];
    uint64_t sentinel = (uint64_t)span + 1;            /* bad indices sort after every target */
    int end_bit = 1;
    while (end_bit < 64 && (sentinel >> end_bit) != 0) end_bit++;
    size_t kb = sizeof(uint64_t) * (size_t)n, pb = sizeof(int64_t) * (size_t)n, tbytes = 0;
    uint64_t *k0 = (uint64_t *)kc_alloc(kb, dev), *k1 = k0 ? (uint64_t *)kc_alloc(kb, dev) : NULL;
    int64_t *p0 = k1 ? (int64_t *)kc_alloc(pb, dev) : NULL, *p1 = p0 ? (int64_t *)kc_alloc(pb, dev) : NULL;
    void *tmp = NULL;
    int rc = p1 ? 0 : -1;
    char *base = kc_ptr(out);
    bool small = n <= (int64_t)UINT32_MAX;
    if (!rc) {
        if (small) KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, det_keys_kernel<uint32_t>)(*a, base, esz, sentinel, k0, p0);
        else KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, det_keys_kernel<uint64_t>)(*a, base, esz, sentinel, k0, p0);
        rc = kc_launched(name, dev);
    }
    cub::DoubleBuffer<uint64_t> dk(k0, k1);
    cub::DoubleBuffer<int64_t> dp(p0, p1);
    /* the size of cub's scratch (tmp NULL), then the sort; cub may throw where
     * a runtime call fails, and nothing may unwind into C */
    auto sort = [&](void *t) {
        cudaError_t e;
        try {
            e = cub::DeviceRadixSort::SortPairs(t, tbytes, dk, dp, n, 0, end_bit, s);
        } catch (...) {
            e = cudaErrorUnknown;
        }
        return e == cudaSuccess ? 0 : kc_cuda_error(name, e);
    };
    if (!rc && !(rc = sort(NULL)) && !(tmp = kc_alloc(tbytes ? tbytes : 1, dev))) rc = -1;
    if (!rc) rc = sort(tmp);
    if (!rc) {
        const uint64_t *ks = dk.Current();
        const int64_t *ps = dp.Current();
        if (small) KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, det_apply_kernel<T, uint32_t>)(*a, base, ks, ps, sentinel, mul);
        else KC_LAUNCH(kc_grid(n, dev), KC_THREADS, 0, s, det_apply_kernel<T, uint64_t>)(*a, base, ks, ps, sentinel, mul);
        rc = kc_launched(name, dev);
    }
    /* stream-ordered: safe to hand back as soon as the work is queued */
    if (tmp) kc_free(tmp, tbytes ? tbytes : 1, dev);
    if (p1) kc_free(p1, pb, dev);
    if (p0) kc_free(p0, pb, dev);
    if (k1) kc_free(k1, kb, dev);
    if (k0) kc_free(k0, kb, dev);
    return rc;
}

/* ---- the row path -------------------------------------------------------------
 * Row r = (o, j): o runs over the dims before `dim`, j over the index. The
 * addressed tensor `a` (in for index_select, out for index_add) is read or
 * written at slot idx[j], the other tensor `b` (out, resp. src) at j. Each
 * row is `len` items of type V, contiguous in both tensors; `group` lanes
 * (a power of two up to 32) share a row. Offsets are in bytes. */
struct rows_args {
    int64_t rows, k, len, size;
    char *a, *b;
    const char *idx;
    int64_t idx_stride, dstride_a, dstride_b;
    int nouter;
    int64_t osize[EM_MAX_DIMS], ostride_a[EM_MAX_DIMS], ostride_b[EM_MAX_DIMS];
    int log2_group;
    kc_error_word *err;
    int err_op;
};

template <typename V> struct rows_copy {        /* index_select: b[e] = a[e] */
    __device__ void operator()(char *a, char *b, int64_t e) const
    {
        ((V *)b)[e] = ((const V *)a)[e];
    }
};

template <typename T> struct rows_add {         /* index_add: a[e] += b[e] */
    __device__ void operator()(char *a, char *b, int64_t e) const
    {
        index_atomic_add((T *)a + e, ((const T *)b)[e]);
    }
};

template <typename F>
__global__ void index_rows_kernel(const __grid_constant__ rows_args a, F f)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t g = (int64_t)1 << a.log2_group, lane = t & (g - 1);
    int64_t ngroups = ((int64_t)gridDim.x * blockDim.x) >> a.log2_group;
    for (int64_t r = t >> a.log2_group; r < a.rows; r += ngroups) {
        int64_t o = r / a.k, j = r - o * a.k;
        int64_t v = *(const int64_t *)(a.idx + j * a.idx_stride), s = index_slot(v, a.size);
        if (s < 0) {
            if (lane == 0) kc_report_bad_index(a.err, a.err_op, v, j, a.size);
            continue;
        }
        int64_t offa = s * a.dstride_a, offb = j * a.dstride_b;
        for (int d = a.nouter - 1; d >= 0; d--) {
            int64_t q = o / a.osize[d], m = o - q * a.osize[d];
            o = q;
            offa += m * a.ostride_a[d];
            offb += m * a.ostride_b[d];
        }
        char *pa = a.a + offa, *pb = a.b + offb;
        for (int64_t e = lane; e < a.len; e += g) f(pa, pb, e);
    }
}

template <typename F>
static int launch_rows(const char *name, rows_args *a, F f, int dev, cudaStream_t s)
{
    int lg = 0;
    while (lg < 5 && ((int64_t)1 << lg) < a->len) lg++;
    a->log2_group = lg;
    KC_LAUNCH(kc_grid(a->rows << lg, dev), KC_THREADS, 0, s, index_rows_kernel<F>)(*a, f);
    return kc_launched(name, dev);
}

template <typename T>
static int launch_rows_add(const char *name, rows_args *a, int dev, cudaStream_t s)
{
    return launch_rows(name, a, rows_add<T>(), dev, s);
}

/* True when the dims of t after `dim` form one dense row-major block. */
static bool dense_tail(const em_tensor *t, int dim)
{
    int64_t expect = 1;
    for (int d = t->ndim - 1; d > dim; d--) {
        if (t->sizes[d] == 1) continue;
        if (t->strides[d] != expect) return false;
        expect *= t->sizes[d];
    }
    return true;
}

/* The row path for index_select (addressed = in, other = out) and index_add
 * (addressed = out, other = src), when both tensors have dense tails. */
static int index_rows(em_index_op op, const char *name, const em_tensor *addr, const em_tensor *other,
                      int dim, const em_tensor *idx, int dev, cudaStream_t s)
{
    size_t esz = em_dtype_size(addr->dtype);
    rows_args a;
    memset(&a, 0, sizeof a);
    int64_t inner = 1, outer = 1;
    for (int d = dim + 1; d < other->ndim; d++) inner *= other->sizes[d];
    a.k = other->sizes[dim];
    a.size = addr->sizes[dim];
    a.a = kc_ptr(addr);
    a.b = kc_ptr(other);
    a.idx = kc_ptr(idx);
    a.idx_stride = idx->strides[0] * 8;
    a.dstride_a = addr->strides[dim] * (int64_t)esz;
    a.dstride_b = other->strides[dim] * (int64_t)esz;
    for (int d = 0; d < dim; d++) {
        outer *= other->sizes[d];
        if (other->sizes[d] == 1) continue;
        a.osize[a.nouter] = other->sizes[d];
        a.ostride_a[a.nouter] = addr->strides[d] * (int64_t)esz;
        a.ostride_b[a.nouter] = other->strides[d] * (int64_t)esz;
        a.nouter++;
    }
    a.rows = outer * a.k;
    a.err = kc_error_word_of(dev);
    a.err_op = index_err_op(op);
    if (a.rows == 0 || inner == 0) return 0;
    if (op == EM_INDEX_ADD) {
        a.len = inner;
        KC_DISPATCH_ALL(addr->dtype, name, launch_rows_add, name, &a, dev, s);
    }
    /* index_select copies bytes: the widest unit every address and stride allows */
    uint64_t bits = (uint64_t)(uintptr_t)a.a | (uint64_t)(uintptr_t)a.b | (uint64_t)(inner * (int64_t)esz) |
                    (uint64_t)a.dstride_a | (uint64_t)a.dstride_b;
    for (int d = 0; d < a.nouter; d++) bits |= (uint64_t)a.ostride_a[d] | (uint64_t)a.ostride_b[d];
    int64_t bytes = inner * (int64_t)esz;
    if (!(bits & 15)) { a.len = bytes / 16; return launch_rows(name, &a, rows_copy<uint4>(), dev, s); }
    if (!(bits & 7)) { a.len = bytes / 8; return launch_rows(name, &a, rows_copy<uint2>(), dev, s); }
    if (!(bits & 3)) { a.len = bytes / 4; return launch_rows(name, &a, rows_copy<uint32_t>(), dev, s); }
    if (!(bits & 1)) { a.len = bytes / 2; return launch_rows(name, &a, rows_copy<uint16_t>(), dev, s); }
    a.len = bytes;
    return launch_rows(name, &a, rows_copy<uint8_t>(), dev, s);
}

/* ---- entry -------------------------------------------------------------------- */

extern "C" int kc_index(em_index_op op, em_tensor *out, const em_tensor *in, int dim, const em_tensor *idx)
{
    const char *name = emf_index_op_name(op);
    if (op < 0 || op >= EM_NINDEX) return kc_error("index: unknown op %d", (int)op);
    if (idx->dtype != EM_INT64)
        return kc_error("%s: expected an int64 index tensor, got %s", name, kc_dtype_name(idx->dtype));
    if (out->ndim == 0 || dim < 0 || dim >= out->ndim || in->ndim != out->ndim || in->dtype != out->dtype ||
        ((op == EM_INDEX_SELECT || op == EM_INDEX_ADD) ? idx->ndim != 1 : idx->ndim != out->ndim))
        return kc_error("%s: bad arguments to the CUDA kernel (dim %d)", name, dim + 1);
    int dev = kc_device_of(out);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;

    /* float adds and products in index order (use_deterministic_algorithms): the element path */
    bool ordered = kc_deterministic && (op == EM_SCATTER_ADD || op == EM_INDEX_ADD || op == EM_SCATTER_MUL) &&
                   (out->dtype == EM_FLOAT32 || out->dtype == EM_FLOAT64 || out->dtype == EM_FLOAT16 ||
                    out->dtype == EM_BFLOAT16);
    bool rows_ok = (op == EM_INDEX_SELECT || (op == EM_INDEX_ADD && !ordered)) && dense_tail(out, dim) &&
                   dense_tail(in, dim);
    if (rows_ok)
        return op == EM_INDEX_SELECT ? index_rows(op, name, in, out, dim, idx, dev, s)
                                     : index_rows(op, name, out, in, dim, idx, dev, s);

    size_t esz = em_dtype_size(out->dtype);
    index_args a;
    memset(&a, 0, sizeof a);
    a.err = kc_error_word_of(dev);
    a.err_op = index_err_op(op);
    em_tensor va, vb, vx;
    const em_tensor *ts[3];
    const int64_t *sizes;
    if (op == EM_INDEX_SELECT || op == EM_GATHER) {
        sizes = out->sizes;
        a.stride = in->strides[dim] * (int64_t)esz;
        a.size = in->sizes[dim];
        va = emf_line_view(in, sizes, out->ndim, dim);
        vx = op == EM_GATHER ? *idx : emf_spread_index(idx, sizes, out->ndim, dim);
        ts[0] = out; ts[1] = &va; ts[2] = &vx;
    } else {
        sizes = op == EM_INDEX_ADD ? in->sizes : idx->sizes;
        a.stride = out->strides[dim] * (int64_t)esz;
        a.size = out->sizes[dim];
        va = emf_line_view(out, sizes, out->ndim, dim);
        vb = *in;
        for (int i = 0; i < out->ndim; i++) vb.sizes[i] = sizes[i];
        vx = op == EM_INDEX_ADD ? emf_spread_index(idx, sizes, out->ndim, dim) : *idx;
        ts[0] = &va; ts[1] = &vb; ts[2] = &vx;
    }
    kc_iter_init<3>(&a.it, ts);
    if (a.it.numel == 0) return 0;
    if (op == EM_INDEX_SELECT || op == EM_INDEX_ADD) {
        a.pos_inner = 1;
        for (int d = dim + 1; d < out->ndim; d++) a.pos_inner *= sizes[d];
        a.pos_size = sizes[dim];
    } else {
        a.pos_inner = 1;
        a.pos_size = a.it.numel;
    }

    if (ordered) {
        bool mul = op == EM_SCATTER_MUL;
        switch (out->dtype) {
        KC_CASES_FLOAT(det_scatter, name, &a, out, mul, dev, s)
        KC_CASES_HALF(det_scatter, name, &a, out, mul, dev, s)
        KC_NO_KERNEL(out->dtype, name)
        }
    }
    if (op == EM_SCATTER_ADD || op == EM_INDEX_ADD)
        KC_DISPATCH_ALL(out->dtype, name, launch_scatter_add, name, &a, dev, s);
    if (op == EM_SCATTER_MUL || op == EM_SCATTER_AMAX || op == EM_SCATTER_AMIN) {
        int rop = op == EM_SCATTER_MUL ? 0 : op == EM_SCATTER_AMAX ? 1 : 2;
        KC_DISPATCH_ALL(out->dtype, name, launch_scatter_reduce, name, &a, rop, dev, s);
    }
    bool gather = op == EM_INDEX_SELECT || op == EM_GATHER;
    switch (esz) {
    case 1: return gather ? launch_elem(name, a, gather_copy<uint8_t>(), dev, s)
                          : launch_elem(name, a, scatter_copy<uint8_t>(), dev, s);
    case 2: return gather ? launch_elem(name, a, gather_copy<uint16_t>(), dev, s)
                          : launch_elem(name, a, scatter_copy<uint16_t>(), dev, s);
    case 4: return gather ? launch_elem(name, a, gather_copy<uint32_t>(), dev, s)
                          : launch_elem(name, a, scatter_copy<uint32_t>(), dev, s);
    case 8: return gather ? launch_elem(name, a, gather_copy<uint64_t>(), dev, s)
                          : launch_elem(name, a, scatter_copy<uint64_t>(), dev, s);
    default: return kc_error("%s: no CUDA kernel for %s", name, kc_dtype_name(out->dtype));
    }
}

/* ---- nonzero --------------------------------------------------------------------
 * A flag per element (row-major), an exclusive prefix sum of the flags (cub)
 * giving each non-zero element its output row, then a pass that writes the
 * coordinates: a stable compaction, so rows come out in row-major order. */

struct nz_args {
    int ndim;
    bool contiguous;
    int64_t numel, rows;
    int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
    const char *in;
    int64_t *out;
    int64_t ostride0, ostride1;
};

/* NaN counts as non-zero, as on the CPU */
template <typename T> __device__ __forceinline__ bool nz_test(const char *p) { return *(const T *)p != T(0); }
template <> __device__ __forceinline__ bool nz_test<bool>(const char *p) { return *(const uint8_t *)p != 0; }
template <> __device__ __forceinline__ bool nz_test<__half>(const char *p)
{
    return __half2float(*(const __half *)p) != 0.0f;
}
template <> __device__ __forceinline__ bool nz_test<__nv_bfloat16>(const char *p)
{
    return __bfloat162float(*(const __nv_bfloat16 *)p) != 0.0f;
}

/* Element offset of row-major position i; with WANT, coord receives its
 * coordinates. */
template <typename I, bool WANT>
__device__ __forceinline__ int64_t nz_offset(const nz_args &a, int64_t i, int64_t *coord)
{
    int64_t off = 0;
    I r = (I)i;
    for (int d = a.ndim - 1; d >= 0; d--) {
        I s = (I)a.sizes[d], q = r / s, m = r - q * s;
        r = q;
        if (WANT) coord[d] = (int64_t)m;
        off += (int64_t)m * a.strides[d];
    }
    return off;
}

template <typename T, typename I>
__global__ void nz_flag_kernel(const __grid_constant__ nz_args a, I *flags)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        int64_t off = a.contiguous ? i : nz_offset<I, false>(a, i, NULL);
        flags[i] = nz_test<T>(a.in + off * (int64_t)sizeof(T)) ? 1 : 0;
    }
}

template <typename T, typename I>
__global__ void nz_write_kernel(const __grid_constant__ nz_args a, const I *rowof)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += step) {
        if (a.contiguous && !nz_test<T>(a.in + i * (int64_t)sizeof(T))) continue;
        int64_t coord[EM_MAX_DIMS];
        int64_t off = nz_offset<I, true>(a, i, coord);
        if (!a.contiguous && !nz_test<T>(a.in + off * (int64_t)sizeof(T))) continue;
        int64_t r = (int64_t)rowof[i];
        if (r >= a.rows) continue;      /* the engine's count was short: never write past out */
        int64_t *o = a.out + r * a.ostride0;
        for (int d = 0; d < a.ndim; d++) o[d * a.ostride1] = coord[d] + 1;
    }
}

template <typename T, typename I>
static int nonzero_run(const nz_args &a, int dev, cudaStream_t s)
{
    size_t fbytes = sizeof(I) * (size_t)a.numel, tbytes = 0;
    cudaError_t e;
    /* cub may throw where a runtime call fails; nothing may unwind into C */
    try {
        e = cub::DeviceScan::ExclusiveSum(NULL, tbytes, (I *)NULL, (I *)NULL, a.numel, s);
    } catch (...) {
        e = cudaErrorUnknown;
    }
    if (e != cudaSuccess) return kc_cuda_error("nonzero", e);
    I *flags = (I *)kc_alloc(fbytes, dev);
    if (!flags) return -1;
    void *tmp = kc_alloc(tbytes ? tbytes : 1, dev);
    if (!tmp) { kc_free(flags, fbytes, dev); return -1; }
    int grid = kc_grid(a.numel, dev);
    KC_LAUNCH(grid, KC_THREADS, 0, s, nz_flag_kernel<T, I>)(a, flags);
    int rc = kc_launched("nonzero", dev);
    if (!rc) {
        try {
            e = cub::DeviceScan::ExclusiveSum(tmp, tbytes, flags, flags, a.numel, s);
        } catch (...) {
            e = cudaErrorUnknown;
        }
        if (e != cudaSuccess) rc = kc_cuda_error("nonzero", e);
    }
    if (!rc) {
        KC_LAUNCH(grid, KC_THREADS, 0, s, nz_write_kernel<T, I>)(a, flags);
        rc = kc_launched("nonzero", dev);
    }
    /* stream-ordered: safe to hand back as soon as the work is queued */
    kc_free(tmp, tbytes ? tbytes : 1, dev);
    kc_free(flags, fbytes, dev);
    return rc;
}

template <typename T>
static int nonzero_typed(const nz_args *a, int dev, cudaStream_t s)
{
    /* flags are scanned into row numbers: 32-bit ones while they cannot overflow */
    if (a->numel < (int64_t)INT32_MAX) return nonzero_run<T, uint32_t>(*a, dev, s);
    return nonzero_run<T, uint64_t>(*a, dev, s);
}

extern "C" int kc_nonzero(em_tensor *out, const em_tensor *in)
{
    int nd = in->ndim;
    if (out->dtype != EM_INT64 || out->ndim != 2 || out->sizes[1] != nd)
        return kc_error("nonzero: output of dtype %s with %d dims does not fit an input with %d dims",
                        kc_dtype_name(out->dtype), out->ndim, nd);
    int64_t numel = emf_numel(in), rows = out->sizes[0];
    if (numel == 0 || rows == 0 || nd == 0) {
        if (numel == 0 && rows != 0)
            return kc_error("nonzero: expected 0 rows for an empty input, got %lld", (long long)rows);
        if (nd == 0 || rows == 0) return 0;     /* a 0-d input: rows of no coordinates */
    }
    int dev = kc_device_of(in);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    nz_args a;
    memset(&a, 0, sizeof a);
    a.ndim = nd;
    a.contiguous = emf_is_contiguous(in);
    a.numel = numel;
    a.rows = rows;
    for (int d = 0; d < nd; d++) { a.sizes[d] = in->sizes[d]; a.strides[d] = in->strides[d]; }
    a.in = kc_ptr(in);
    a.out = (int64_t *)kc_ptr(out);
    a.ostride0 = out->strides[0];
    a.ostride1 = out->strides[1];
    KC_DISPATCH_ALL(in->dtype, "nonzero", nonzero_typed, &a, dev, s);
}
