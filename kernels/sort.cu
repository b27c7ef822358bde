/* sort.cu — the CUDA sort along a dim (values and 1-based int64 indices):
 * the twin of engine/cpu/sort.c.
 *
 * Every value is mapped to an unsigned key whose integer order is the CPU's
 * order: floats by their bits with the sign handled, -0.0 as +0.0, every NaN
 * the largest key (so NaN sorts last ascending, first descending); integers
 * with the sign bit flipped; descending order is the bitwise complement.
 * Keys are 32-bit for dtypes of up to 4 bytes (the same order as the CPU's
 * 64-bit keys) and 64-bit otherwise. Equal keys keep their input order in
 * every path, so the result is always the stable one, whatever `stable` says.
 * Values are copied from the input by position, bit-exact.
 *
 * Lines of up to SORT_SMALL_MAX elements are sorted in shared memory, several
 * lines per block: a bitonic network on (key, position) pairs, a total
 * order, so it gives the stable result. Longer lines go through cub's radix
 * sort (stable) over all lines at once: with 32-bit keys the line number is
 * put above the key in one 64-bit key; with 64-bit keys the elements are
 * sorted by key, then (stably) by line. */
#include "kc.h"

#include <cub/cub.cuh>

#define SORT_SMALL_MAX 4096     /* positions in shared memory are 16-bit */
#define SORT_TILE_LOG2 11       /* at least 2^11 elements per block in the shared-memory path */
#define SORT_SMALL_THREADS 512

/* ---- keys --------------------------------------------------------------------- */

__device__ __forceinline__ uint32_t sort_key_f32(float v)
{
    if (v != v) return 0xffffffffu;
    if (v == 0.0f) return 0x80000000u;          /* -0.0 sorts with +0.0 */
    uint32_t b = __float_as_uint(v);
    return b >> 31 ? ~b : b | 0x80000000u;
}

__device__ __forceinline__ uint64_t sort_key_f64(double v)
{
    if (v != v) return ~0ull;
    if (v == 0.0) return 1ull << 63;
    uint64_t b = (uint64_t)__double_as_longlong(v);
    return b >> 63 ? ~b : b | (1ull << 63);
}

/* K: the key type of T; R: a type of T's size for bit-exact copies */
template <typename T> struct sort_traits;
template <> struct sort_traits<float> {
    typedef uint32_t K; typedef uint32_t R;
    static __device__ K key(const char *p) { return sort_key_f32(*(const float *)p); }
};
template <> struct sort_traits<double> {
    typedef uint64_t K; typedef uint64_t R;
    static __device__ K key(const char *p) { return sort_key_f64(*(const double *)p); }
};
template <> struct sort_traits<__half> {
    typedef uint32_t K; typedef uint16_t R;
    static __device__ K key(const char *p) { return sort_key_f32(__half2float(*(const __half *)p)); }
};
template <> struct sort_traits<__nv_bfloat16> {
    typedef uint32_t K; typedef uint16_t R;
    static __device__ K key(const char *p) { return sort_key_f32(__bfloat162float(*(const __nv_bfloat16 *)p)); }
};
template <> struct sort_traits<int64_t> {
    typedef uint64_t K; typedef uint64_t R;
    static __device__ K key(const char *p) { return (uint64_t)*(const int64_t *)p ^ (1ull << 63); }
};
template <> struct sort_traits<int32_t> {
    typedef uint32_t K; typedef uint32_t R;
    static __device__ K key(const char *p) { return (uint32_t)*(const int32_t *)p ^ 0x80000000u; }
};
template <> struct sort_traits<int16_t> {
    typedef uint32_t K; typedef uint16_t R;
    static __device__ K key(const char *p) { return (uint32_t)(*(const int16_t *)p + 32768); }
};
template <> struct sort_traits<int8_t> {
    typedef uint32_t K; typedef uint8_t R;
    static __device__ K key(const char *p) { return (uint32_t)(*(const int8_t *)p + 128); }
};
template <> struct sort_traits<uint8_t> {
    typedef uint32_t K; typedef uint8_t R;
    static __device__ K key(const char *p) { return *(const uint8_t *)p; }
};
template <> struct sort_traits<bool> {
    typedef uint32_t K; typedef uint8_t R;
    static __device__ K key(const char *p) { return *(const uint8_t *)p != 0; }
};

/* ---- lines ---------------------------------------------------------------------
 * Line r runs along dim; r enumerates the other dims in row-major order (as on
 * the CPU). The other dims are merged where all three tensors allow. Offsets
 * and strides are in elements. */
struct sort_args {
    const char *in;
    char *val;
    int64_t *idx;
    int64_t ist, vst, xst;          /* strides along dim: input, values, indices */
    int64_t n, lines;
    int nl;
    int64_t lsize[EM_MAX_DIMS], lstride[3][EM_MAX_DIMS];
    uint64_t flip;                  /* all ones (of the key's width) for descending */
    int log2p, log2r;               /* shared path: padded line length, lines per block */
    bool colmajor;                  /* shared path: neighbouring threads take neighbouring lines */
};

__device__ __forceinline__ void sort_line(const sort_args &a, int64_t r, int64_t *o)
{
    o[0] = o[1] = o[2] = 0;
    if (a.nl == 1) {                /* r < lsize[0]: no division */
        for (int k = 0; k < 3; k++) o[k] = r * a.lstride[k][0];
        return;
    }
    for (int d = a.nl - 1; d >= 0; d--) {
        int64_t q = r / a.lsize[d], m = r - q * a.lsize[d];
        r = q;
        for (int k = 0; k < 3; k++) o[k] += m * a.lstride[k][d];
    }
}

/* ---- short lines: bitonic sort in shared memory ------------------------------- */

template <typename T>
__global__ void __launch_bounds__(SORT_SMALL_THREADS)
sort_small_kernel(const __grid_constant__ sort_args a)
{
    typedef typename sort_traits<T>::K K;
    typedef typename sort_traits<T>::R R;
    KC_DYNAMIC_SHARED(unsigned char, smem);
    const int P = 1 << a.log2p, nr = 1 << a.log2r, tile = P * nr;
    int64_t *s_off = (int64_t *)smem;                   /* 3 per line */
    K *s_key = (K *)(s_off + 3 * nr);
    uint16_t *s_pos = (uint16_t *)(s_key + tile);
    const int64_t row0 = (int64_t)blockIdx.x * nr;
    const int tid = threadIdx.x, nt = blockDim.x;

    for (int r = tid; r < nr; r += nt)
        if (row0 + r < a.lines) sort_line(a, row0 + r, s_off + 3 * r);
    __syncthreads();

    for (int q = tid; q < tile; q += nt) {
        int r = a.colmajor ? q & (nr - 1) : q >> a.log2p;
        int c = a.colmajor ? q >> a.log2r : q & (P - 1);
        int e = (r << a.log2p) + c;
        K key = ~(K)0;                  /* padding: after every real element (their positions are < n) */
        if (row0 + r < a.lines && c < a.n)
            key = sort_traits<T>::key(a.in + (s_off[3 * r] + c * a.ist) * (int64_t)sizeof(T)) ^ (K)a.flip;
        s_key[e] = key;
        s_pos[e] = (uint16_t)c;
    }
    __syncthreads();

    /* Each P-long segment is sorted ascending by (key, position): directions
     * come from the position within the segment, and a pair never straddles
     * two segments (partners differ by j < P). */
    for (int k = 2; k <= P; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = tid; t < tile / 2; t += nt) {
                int i = 2 * t - (t & (j - 1)), l = i + j;
                bool asc = ((i & (P - 1)) & k) == 0;
                K ki = s_key[i], kl = s_key[l];
                uint16_t pi = s_pos[i], pl = s_pos[l];
                bool greater = ki > kl || (ki == kl && pi > pl);
                if (greater == asc) {
                    s_key[i] = kl; s_key[l] = ki;
                    s_pos[i] = pl; s_pos[l] = pi;
                }
            }
            __syncthreads();
        }
    }

    for (int q = tid; q < tile; q += nt) {
        int r = a.colmajor ? q & (nr - 1) : q >> a.log2p;
        int c = a.colmajor ? q >> a.log2r : q & (P - 1);
        if (row0 + r >= a.lines || c >= a.n) continue;
        int64_t pos = s_pos[(r << a.log2p) + c];
        const int64_t *o = s_off + 3 * r;
        ((R *)a.val)[o[1] + c * a.vst] = ((const R *)a.in)[o[0] + pos * a.ist];
        a.idx[o[2] + c * a.xst] = pos + 1;
    }
}

/* ---- long lines: cub radix sort ----------------------------------------------- */

/* keys[f] and positions of flat element f = row * n + c. COMPOSITE puts the
 * row above a 32-bit key; FLAT stores f instead of c as the value. */
template <typename T, typename CK, typename V, bool COMPOSITE, bool FLAT>
__global__ void sort_keys_kernel(const __grid_constant__ sort_args a, CK *keys, V *vals)
{
    typedef typename sort_traits<T>::K K;
    int64_t total = a.lines * a.n, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t f = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f < total; f += step) {
        int64_t row = f / a.n, c = f - row * a.n, o[3];
        sort_line(a, row, o);
        K key = sort_traits<T>::key(a.in + (o[0] + c * a.ist) * (int64_t)sizeof(T)) ^ (K)a.flip;
        keys[f] = COMPOSITE ? (CK)(((uint64_t)row << 32) | (uint64_t)key) : (CK)key;
        vals[f] = FLAT ? (V)f : (V)c;
    }
}

/* second pass of the two-pass sort: the line of each (key-sorted) element */
__global__ void sort_rows_kernel(const uint64_t *flat, uint32_t *rows, int64_t total, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
        rows[i] = (uint32_t)(flat[i] / (uint64_t)n);
}

/* values[row][c] = in[row][pos], indices[row][c] = pos + 1, with pos the
 * sorted value at f = row * n + c (a flat index when FLAT). */
template <typename T, typename V, bool FLAT>
__global__ void sort_write_kernel(const __grid_constant__ sort_args a, const V *vals)
{
    typedef typename sort_traits<T>::R R;
    int64_t total = a.lines * a.n, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t f = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; f < total; f += step) {
        int64_t row = f / a.n, c = f - row * a.n, o[3];
        int64_t pos = FLAT ? (int64_t)vals[f] - row * a.n : (int64_t)vals[f];
        if (pos < 0 || pos >= a.n) continue;    /* cannot happen; never read outside the line */
        sort_line(a, row, o);
        ((R *)a.val)[o[1] + c * a.vst] = ((const R *)a.in)[o[0] + pos * a.ist];
        a.idx[o[2] + c * a.xst] = pos + 1;
    }
}

static int bit_length(uint64_t v)
{
    int b = 0;
    while (v) { b++; v >>= 1; }
    return b;
}

/* Scratch blocks from the caching allocator, all handed back at the end
 * (safe once the work using them is queued: one stream per device). */
struct sort_scratch {
    void *p[8];
    size_t n[8];
    int count, dev;
    void *get(size_t bytes)
    {
        if (!bytes) bytes = 1;
        void *q = kc_alloc(bytes, dev);
        if (q) { p[count] = q; n[count] = bytes; count++; }
        return q;
    }
    void release()
    {
        for (int i = 0; i < count; i++) kc_free(p[i], n[i], dev);
        count = 0;
    }
};

/* One stable radix sort of (keys, vals) pairs on bits [0, end_bit); *keys,
 * *vals are updated to the buffers that hold the result. */
template <typename CK, typename V>
static int sort_pairs(sort_scratch *sc, CK **keys, CK *keys_alt, V **vals, V *vals_alt, int64_t total,
                      int end_bit, cudaStream_t s)
{
    cub::DoubleBuffer<CK> dk(*keys, keys_alt);
    cub::DoubleBuffer<V> dv(*vals, vals_alt);
    size_t tbytes = 0;
    cudaError_t e;
    /* cub may throw where a runtime call fails; nothing may unwind into C */
    try {
        e = cub::DeviceRadixSort::SortPairs(NULL, tbytes, dk, dv, total, 0, end_bit, s);
    } catch (...) {
        e = cudaErrorUnknown;
    }
    if (e != cudaSuccess) return kc_cuda_error("sort", e);
    void *tmp = sc->get(tbytes);
    if (!tmp) return -1;
    try {
        e = cub::DeviceRadixSort::SortPairs(tmp, tbytes, dk, dv, total, 0, end_bit, s);
    } catch (...) {
        e = cudaErrorUnknown;
    }
    if (e != cudaSuccess) return kc_cuda_error("sort", e);
    *keys = dk.Current();
    *vals = dv.Current();
    return 0;
}

/* One sort on key (+ line above it when lines > 1, for 32-bit keys only);
 * V holds positions. */
template <typename T, typename CK, typename V>
static int sort_large_one(sort_scratch *sc, const sort_args &a, int dev, cudaStream_t s)
{
    typedef typename sort_traits<T>::K K;
    int64_t total = a.lines * a.n;
    bool composite = a.lines > 1;
    if (composite && (sizeof(K) != 4 || sizeof(CK) != 8 || (uint64_t)a.lines > UINT32_MAX))
        return kc_error("sort: internal error: no composite key for these lines");
    CK *k0 = (CK *)sc->get(sizeof(CK) * (size_t)total), *k1 = (CK *)sc->get(sizeof(CK) * (size_t)total);
    V *v0 = (V *)sc->get(sizeof(V) * (size_t)total), *v1 = (V *)sc->get(sizeof(V) * (size_t)total);
    if (!k0 || !k1 || !v0 || !v1) return -1;
    int grid = kc_grid(total, dev);
    if (composite) KC_LAUNCH(grid, KC_THREADS, 0, s, sort_keys_kernel<T, CK, V, true, false>)(a, k0, v0);
    else KC_LAUNCH(grid, KC_THREADS, 0, s, sort_keys_kernel<T, CK, V, false, false>)(a, k0, v0);
    if (kc_launched("sort", dev)) return -1;
    int end_bit = (int)(8 * sizeof(K)) + (composite ? bit_length((uint64_t)(a.lines - 1)) : 0);
    CK *kr = k0;
    V *vr = v0;
    if (sort_pairs(sc, &kr, k1, &vr, v1, total, end_bit, s)) return -1;
    KC_LAUNCH(grid, KC_THREADS, 0, s, sort_write_kernel<T, V, false>)(a, vr);
    return kc_launched("sort", dev);
}

/* 64-bit keys over several lines: sort by key, then stably by line. */
template <typename T>
static int sort_large_two(sort_scratch *sc, const sort_args &a, int dev, cudaStream_t s)
{
    int64_t total = a.lines * a.n;
    if ((uint64_t)a.lines > UINT32_MAX) return kc_error("sort: too many lines (%lld)", (long long)a.lines);
    uint64_t *k0 = (uint64_t *)sc->get(8 * (size_t)total), *k1 = (uint64_t *)sc->get(8 * (size_t)total);
    uint64_t *v0 = (uint64_t *)sc->get(8 * (size_t)total), *v1 = (uint64_t *)sc->get(8 * (size_t)total);
    if (!k0 || !k1 || !v0 || !v1) return -1;
    int grid = kc_grid(total, dev);
    KC_LAUNCH(grid, KC_THREADS, 0, s, sort_keys_kernel<T, uint64_t, uint64_t, false, true>)(a, k0, v0);
    if (kc_launched("sort", dev)) return -1;
    uint64_t *kr = k0, *vr = v0;
    if (sort_pairs(sc, &kr, k1, &vr, v1, total, 64, s)) return -1;
    /* the line numbers go into the key buffers, now free, seen as 32-bit */
    uint32_t *r0 = (uint32_t *)(kr == k0 ? k1 : k0), *r1 = (uint32_t *)kr;
    KC_LAUNCH(grid, KC_THREADS, 0, s, sort_rows_kernel)(vr, r0, total, a.n);
    if (kc_launched("sort", dev)) return -1;
    uint32_t *rr = r0;
    if (sort_pairs(sc, &rr, r1, &vr, vr == v0 ? v1 : v0, total, bit_length((uint64_t)(a.lines - 1)), s))
        return -1;
    KC_LAUNCH(grid, KC_THREADS, 0, s, sort_write_kernel<T, uint64_t, true>)(a, vr);
    return kc_launched("sort", dev);
}

template <typename T>
static int sort_typed(sort_args *a, int dev, cudaStream_t s)
{
    typedef typename sort_traits<T>::K K;
    if (a->flip) a->flip = sizeof(K) == 4 ? 0xffffffffull : ~0ull;
    if (a->n <= SORT_SMALL_MAX) {
        int log2p = 1;
        while (((int64_t)1 << log2p) < a->n) log2p++;
        int tile_log2 = log2p > SORT_TILE_LOG2 ? log2p : SORT_TILE_LOG2;
        a->log2p = log2p;
        a->log2r = tile_log2 - log2p;
        a->colmajor = a->ist != 1 && a->log2r > 0;
        size_t nr = (size_t)1 << a->log2r, tile = (size_t)1 << tile_log2;
        size_t shared = 3 * nr * sizeof(int64_t) + tile * (sizeof(K) + sizeof(uint16_t));
        int64_t blocks = (a->lines + (int64_t)nr - 1) / (int64_t)nr;
        if (blocks > INT32_MAX) return kc_error("sort: too many lines (%lld)", (long long)a->lines);
        KC_LAUNCH((unsigned)blocks, SORT_SMALL_THREADS, shared, s, sort_small_kernel<T>)(*a);
        return kc_launched("sort", dev);
    }
    sort_scratch sc;
    memset(&sc, 0, sizeof sc);
    sc.dev = dev;
    int rc;
    if (sizeof(K) == 4)
        rc = a->n > (int64_t)UINT32_MAX ? sort_large_one<T, uint64_t, uint64_t>(&sc, *a, dev, s)
           : a->lines > 1 ? sort_large_one<T, uint64_t, uint32_t>(&sc, *a, dev, s)
           : sort_large_one<T, uint32_t, uint32_t>(&sc, *a, dev, s);
    else
        rc = a->lines > 1 ? sort_large_two<T>(&sc, *a, dev, s)
           : sort_large_one<T, uint64_t, uint64_t>(&sc, *a, dev, s);
    sc.release();
    return rc;
}

extern "C" int kc_sort(em_tensor *values, em_tensor *indices, const em_tensor *in, int dim, bool descending,
                       bool stable)
{
    (void)stable;   /* always stable */
    if (in->ndim == 0 || dim < 0 || dim >= in->ndim || indices->dtype != EM_INT64 || values->dtype != in->dtype ||
        values->ndim != in->ndim || indices->ndim != in->ndim)
        return kc_error("sort: bad arguments to the CUDA kernel (dim %d)", dim + 1);
    int64_t numel = emf_numel(in), n = in->sizes[dim];
    if (numel == 0) return 0;
    int dev = kc_device_of(in);
    cudaStream_t s = kc_stream(dev);
    if (!s) return -1;
    sort_args a;
    memset(&a, 0, sizeof a);
    a.in = kc_ptr(in);
    a.val = kc_ptr(values);
    a.idx = (int64_t *)kc_ptr(indices);
    a.ist = in->strides[dim];
    a.vst = values->strides[dim];
    a.xst = indices->strides[dim];
    a.n = n;
    a.lines = numel / n;
    const em_tensor *ts[3] = {in, values, indices};
    for (int d = 0; d < in->ndim; d++) {
        if (d == dim || in->sizes[d] == 1) continue;
        if (a.nl > 0) {
            bool merge = true;
            for (int k = 0; k < 3 && merge; k++)
                merge = a.lstride[k][a.nl - 1] == ts[k]->strides[d] * in->sizes[d];
            if (merge) {
                a.lsize[a.nl - 1] *= in->sizes[d];
                for (int k = 0; k < 3; k++) a.lstride[k][a.nl - 1] = ts[k]->strides[d];
                continue;
            }
        }
        a.lsize[a.nl] = in->sizes[d];
        for (int k = 0; k < 3; k++) a.lstride[k][a.nl] = ts[k]->strides[d];
        a.nl++;
    }
    if (a.nl == 0) {        /* one line */
        a.nl = 1;
        a.lsize[0] = 1;
    }
    a.flip = descending;    /* widened to the key's width per dtype */
    KC_DISPATCH_ALL(in->dtype, "sort", sort_typed, &a, dev, s);
}
