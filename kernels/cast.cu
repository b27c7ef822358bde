/*
 * cast.cu — the strided, converting copy (the CUDA twin of cpu_cast in
 * engine/cpu/copy.c): every pair of dtypes, with the CPU's rounding,
 * truncation and NaN rules. Same-dtype copies move raw bytes (a memcpy when
 * both sides are contiguous); contiguous conversions move 4 elements per
 * thread through vector loads and stores.
 */
#include "elementwise.cuh"

/* One element, as cpu_cast converts it: a few pairs have loops of their own
 * on the CPU whose rounding differs from the generic path (int64 to float32
 * rounds once, not through double; bool to float32 reads the raw byte); the
 * rest go through double from float dtypes and through int64 otherwise. */
template <int TO, int FROM>
__host__ __device__ inline typename ew_dt<TO>::S cast_one(typename ew_dt<FROM>::S x)
{
    if constexpr (TO == EM_FLOAT32 && (FROM == EM_INT64 || FROM == EM_BOOL)) return (float)x;
    else if constexpr (ew_is_float<FROM>()) return ew_store_f64<TO>(ew_load_f64<FROM>(x));
    else return ew_store_i64<TO>(ew_load_i64<FROM>(x));
}

template <int TO, int FROM> struct cast_fn {
    __host__ __device__ void operator()(char **p) const
    {
        ew_st<TO>(p[0], cast_one<TO, FROM>(ew_ld<FROM>(p[1])));
    }
};

template <int TO, int FROM>
__global__ void cast_vec_kernel(typename ew_dt<TO>::S *o, const typename ew_dt<FROM>::S *a, int64_t n)
{
    typedef ew_vec<typename ew_dt<TO>::S, 4> VO;
    typedef ew_vec<typename ew_dt<FROM>::S, 4> VA;
    int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nv = n / 4;
    for (int64_t i = tid; i < nv; i += step) {
        VA x = ((const VA *)a)[i];
        VO y;
#pragma unroll
        for (int k = 0; k < 4; k++) y.v[k] = cast_one<TO, FROM>(x.v[k]);
        ((VO *)o)[i] = y;
    }
    for (int64_t i = nv * 4 + tid; i < n; i += step) o[i] = cast_one<TO, FROM>(a[i]);
}

/* raw element bytes (same dtype; bool bytes are copied as they are) */
template <typename U> struct copy_fn {
    __host__ __device__ void operator()(char **p) const { *(U *)p[0] = *(const U *)p[1]; }
};

static int copy_same(const kc_iter<2> &it, size_t esz, int dev, cudaStream_t s)
{
    if (it.contiguous) {
        if (it.data[0] == it.data[1]) return 0;
        cudaError_t e = cudaMemcpyAsync(it.data[0], it.data[1], (size_t)it.numel * esz,
                                        cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) return kc_cuda_error("cast", e);
        return kc_launched("cast", dev);
    }
    switch (esz) {
    case 1: return ew_foreach("cast", it, dev, s, copy_fn<uint8_t>());
    case 2: return ew_foreach("cast", it, dev, s, copy_fn<uint16_t>());
    case 4: return ew_foreach("cast", it, dev, s, copy_fn<uint32_t>());
    default: return ew_foreach("cast", it, dev, s, copy_fn<uint64_t>());
    }
}

template <int TO, int FROM>
static int cast_run(const kc_iter<2> &it, int dev, cudaStream_t s)
{
    typedef typename ew_dt<TO>::S SO;
    typedef typename ew_dt<FROM>::S SA;
    if constexpr (TO == FROM) {
        return copy_same(it, sizeof(SO), dev, s);
    } else {
        if (it.contiguous && it.ndim == 1 && ew_aligned(it.data[0], 4 * sizeof(SO)) &&
            ew_aligned(it.data[1], 4 * sizeof(SA))) {
            int64_t nv = it.numel / 4;
            KC_LAUNCH(kc_grid(nv > 0 ? nv : it.numel, dev), KC_THREADS, 0, s, cast_vec_kernel<TO, FROM>)(
                (SO *)it.data[0], (const SA *)it.data[1], it.numel);
            return kc_launched("cast", dev);
        }
        return ew_foreach("cast", it, dev, s, cast_fn<TO, FROM>());
    }
}

template <int TO>
static int cast_from(em_dtype from, const kc_iter<2> &it, int dev, cudaStream_t s)
{
    EW_DISPATCH_DTYPE2(from, "cast", cast_run, TO, it, dev, s)
}

int kc_cast(em_tensor *dst, const em_tensor *src)
{
    const em_tensor *ts[2] = {dst, src};
    kc_iter<2> it;
    int dev;
    cudaStream_t s;
    if (int go = kc_prepare(ts, &it, &dev, &s); go <= 0) return go;
    EW_DISPATCH_DTYPE(dst->dtype, "cast", cast_from, src->dtype, it, dev, s)
}
