/*
 * cub/cub.cuh — the emulated device's stand-in for the parts of CUB that
 * kernels/ uses, written from CUB's documented semantics: the two-phase call
 * (a NULL temp_storage asks for the bytes needed, the second call does the
 * work on the stream), DeviceScan::ExclusiveSum (in place allowed) and
 * DeviceRadixSort::SortPairs on a DoubleBuffer (stable, ascending by the
 * unsigned key's bits [begin_bit, end_bit), the result in the buffers the
 * selectors point at afterwards). Both really use their temporary storage,
 * so a short one is caught as an access outside the allocation.
 */
#ifndef EMBER_EMU_CUB_CUH
#define EMBER_EMU_CUB_CUH

#include "../../emu.h"

#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace cub {

template <typename T> struct DoubleBuffer {
    T *d_buffers[2];
    int selector;
    DoubleBuffer() : d_buffers{NULL, NULL}, selector(0) {}
    DoubleBuffer(T *current, T *alternate) : d_buffers{current, alternate}, selector(0) {}
    T *Current() { return d_buffers[selector]; }
    T *Alternate() { return d_buffers[selector ^ 1]; }
};

struct DeviceScan {
    /* out[i] = in[0] + ... + in[i-1], out[0] = 0. temp holds a copy of the input. */
    template <typename InputIt, typename OutputIt, typename NumItemsT>
    static cudaError_t ExclusiveSum(void *d_temp_storage, size_t &temp_storage_bytes, InputIt d_in, OutputIt d_out,
                                    NumItemsT num_items, cudaStream_t stream = 0)
    {
        typedef typename std::remove_cv<typename std::remove_pointer<InputIt>::type>::type T;
        size_t need = sizeof(T) * (size_t)(num_items > 0 ? num_items : 0) + 16;
        if (!d_temp_storage) {
            temp_storage_bytes = need;
            return cudaSuccess;
        }
        if (temp_storage_bytes < need) return cudaErrorInvalidValue;
        if (num_items <= 0) return cudaSuccess;
        size_t n = (size_t)num_items;
        return emu::submit(stream, "cub::DeviceScan::ExclusiveSum", [=]() {
            T *copy = (T *)d_temp_storage;
            if (!emu::device_range(copy, n * sizeof(T), "cub::DeviceScan::ExclusiveSum temp storage") ||
                !emu::device_range(d_in, n * sizeof(T), "cub::DeviceScan::ExclusiveSum input") ||
                !emu::device_range(d_out, n * sizeof(*d_out), "cub::DeviceScan::ExclusiveSum output"))
                return;
            memcpy(copy, d_in, n * sizeof(T));
            T acc = T();
            for (size_t i = 0; i < n; i++) {
                d_out[i] = acc;
                acc = acc + copy[i];
            }
        });
    }
};

struct DeviceRadixSort {
    /* LSD radix sort, 8 bits a pass, each pass from the current buffers into
     * the alternate ones (selectors flip); the digit counts live in temp. */
    template <typename K, typename V, typename NumItemsT>
    static cudaError_t SortPairs(void *d_temp_storage, size_t &temp_storage_bytes, DoubleBuffer<K> &d_keys,
                                 DoubleBuffer<V> &d_values, NumItemsT num_items, int begin_bit = 0,
                                 int end_bit = sizeof(K) * 8, cudaStream_t stream = 0)
    {
        static_assert(std::is_unsigned<K>::value, "the emulated CUB sorts unsigned keys only");
        size_t need = 257 * sizeof(size_t);
        if (!d_temp_storage) {
            temp_storage_bytes = need;
            return cudaSuccess;
        }
        if (temp_storage_bytes < need || begin_bit < 0 || end_bit > (int)sizeof(K) * 8 || begin_bit > end_bit)
            return cudaErrorInvalidValue;
        if (num_items <= 0 || begin_bit == end_bit) return cudaSuccess;
        size_t n = (size_t)num_items;
        int passes = (end_bit - begin_bit + 7) / 8;
        K *k[2] = {d_keys.Current(), d_keys.Alternate()};
        V *v[2] = {d_values.Current(), d_values.Alternate()};
        cudaError_t e = emu::submit(stream, "cub::DeviceRadixSort::SortPairs", [=]() {
            size_t *count = (size_t *)d_temp_storage;
            if (!emu::device_range(count, 257 * sizeof(size_t), "cub::DeviceRadixSort::SortPairs temp storage"))
                return;
            for (int b = 0; b < 2; b++)
                if (!emu::device_range(k[b], n * sizeof(K), "cub::DeviceRadixSort::SortPairs keys") ||
                    !emu::device_range(v[b], n * sizeof(V), "cub::DeviceRadixSort::SortPairs values"))
                    return;
            for (int p = 0; p < passes; p++) {
                int shift = begin_bit + 8 * p, bits = end_bit - shift < 8 ? end_bit - shift : 8;
                K digit_mask = (K)((1u << bits) - 1);
                const K *ks = k[p & 1];
                const V *vs = v[p & 1];
                K *kd = k[(p & 1) ^ 1];
                V *vd = v[(p & 1) ^ 1];
                memset(count, 0, 257 * sizeof(size_t));
                for (size_t i = 0; i < n; i++) count[((ks[i] >> shift) & digit_mask) + 1]++;
                for (int d = 0; d < 256; d++) count[d + 1] += count[d];
                for (size_t i = 0; i < n; i++) {
                    size_t at = count[(ks[i] >> shift) & digit_mask]++;
                    kd[at] = ks[i];
                    vd[at] = vs[i];
                }
            }
        });
        if (e != cudaSuccess) return e;
        if (passes & 1) {
            d_keys.selector ^= 1;
            d_values.selector ^= 1;
        }
        return cudaSuccess;
    }
};

} // namespace cub

#endif
