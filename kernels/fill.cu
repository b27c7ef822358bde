/*
 * fill.cu — the fill and arange kernels (CUDA twins of engine/cpu/memory.c).
 *
 * fill converts the value once, on the host, with the CPU's store rules, and
 * then only copies bytes: a memset when every byte of the pattern is the
 * same (zeros, the common case), 16-byte stores over contiguous memory
 * otherwise, and the strided iterator for views.
 */
#include "elementwise.cuh"

/* ---- fill -------------------------------------------------------------------- */

template <typename U> struct fill_fn {
    U v;
    __host__ __device__ void operator()(char **p) const { *(U *)p[0] = v; }
};

/* o is element-aligned; elements before the first 16-byte boundary and after
 * the last one are written one by one. */
template <typename U>
__global__ void fill_flat_kernel(U *o, int64_t n, int64_t head, U v)
{
    const int V = 16 / sizeof(U);
    ew_vec<U, V> w;
#pragma unroll
    for (int k = 0; k < V; k++) w.v[k] = v;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nv = (n - head) / V;
    ew_vec<U, V> *ov = (ew_vec<U, V> *)(o + head);
    for (int64_t i = tid; i < head; i += step) o[i] = v;
    for (int64_t i = tid; i < nv; i += step) ov[i] = w;
    for (int64_t i = head + nv * V + tid; i < n; i += step) o[i] = v;
}

template <typename U>
static int fill_bytes(const kc_iter<1> &it, int dev, cudaStream_t s, uint64_t bits)
{
    U v;
    memcpy(&v, &bits, sizeof v);
    if (!it.contiguous) return ew_foreach("fill", it, dev, s, fill_fn<U>{v});
    U *o = (U *)it.data[0];
    int64_t n = it.numel;
    int64_t head = (int64_t)(((16 - (uintptr_t)o % 16) % 16) / sizeof(U));
    if (head > n) head = n;
    int64_t nv = (n - head) / (int64_t)(16 / sizeof(U));
    KC_LAUNCH(kc_grid(nv > 0 ? nv : n, dev), KC_THREADS, 0, s, fill_flat_kernel<U>)(o, n, head, v);
    return kc_launched("fill", dev);
}

/* The element's bytes, as cpu_store_f64 writes them. */
template <int D> static uint64_t fill_pattern(double value)
{
    typename ew_dt<D>::S v = ew_store_f64<D>(value);
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    return bits;
}

int kc_fill(em_tensor *out, double value)
{
    uint64_t bits;
    switch (out->dtype) {
    case EM_FLOAT32: bits = fill_pattern<EM_FLOAT32>(value); break;
    case EM_FLOAT64: bits = fill_pattern<EM_FLOAT64>(value); break;
    case EM_INT64: bits = fill_pattern<EM_INT64>(value); break;
    case EM_INT32: bits = fill_pattern<EM_INT32>(value); break;
    case EM_INT16: bits = fill_pattern<EM_INT16>(value); break;
    case EM_INT8: bits = fill_pattern<EM_INT8>(value); break;
    case EM_UINT8: bits = fill_pattern<EM_UINT8>(value); break;
    case EM_BOOL: bits = fill_pattern<EM_BOOL>(value); break;
    case EM_FLOAT16: bits = fill_pattern<EM_FLOAT16>(value); break;
    case EM_BFLOAT16: bits = fill_pattern<EM_BFLOAT16>(value); break;
    default: return kc_error("fill: no CUDA kernel for %s", kc_dtype_name(out->dtype));
    }
    const em_tensor *ts[1] = {out};
    kc_iter<1> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    size_t esz = em_dtype_size(out->dtype);
    bool same_bytes = true;
    for (size_t k = 1; k < esz; k++) same_bytes = same_bytes && ((bits >> (8 * k)) & 0xff) == (bits & 0xff);
    if (it.contiguous && same_bytes) {
        cudaError_t e = cudaMemsetAsync(it.data[0], (int)(bits & 0xff), (size_t)it.numel * esz, s);
        if (e != cudaSuccess) return kc_cuda_error("fill", e);
        return kc_launched("fill", dev);
    }
    switch (esz) {
    case 1: return fill_bytes<uint8_t>(it, dev, s, bits);
    case 2: return fill_bytes<uint16_t>(it, dev, s, bits);
    case 4: return fill_bytes<uint32_t>(it, dev, s, bits);
    default: return fill_bytes<uint64_t>(it, dev, s, bits);
    }
}

/* ---- arange ------------------------------------------------------------------ */

/* out[i] = start + i*step at row-major position i; computed in double with
 * the multiply and add rounded separately (no fused multiply-add), as the
 * CPU does, so both give the same bits. */
template <int D>
__global__ void arange_kernel(kc_iter<1> it, double start, double step)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += stride) {
        double v = ew_dadd(start, ew_dmul((double)i, step));
        char *p[1];
        kc_iter_ptrs(it, i, p);
        typename ew_dt<D>::S r;
        if constexpr (ew_is_float<D>()) r = ew_store_f64<D>(v);
        else r = ew_store_i64<D>(emf_f64_to_i64(v));
        ew_st<D>(p[0], r);
    }
}

template <int D> static int arange_run(em_tensor *out, double start, double step)
{
    const em_tensor *ts[1] = {out};
    kc_iter<1> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    KC_LAUNCH(kc_grid(it.numel, dev), KC_THREADS, 0, s, arange_kernel<D>)(it, start, step);
    return kc_launched("arange", dev);
}

int kc_arange(em_tensor *out, double start, double step)
{
    EW_DISPATCH_DTYPE(out->dtype, "arange", arange_run, out, start, step)
}
