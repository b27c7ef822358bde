/* backend.c — the CPU backend's table of kernel families (see backend.h). */
#include "cpu.h"

const em_backend em_cpu_backend = {
    .name = "cpu",
    .type = EM_CPU,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .empty_cache = cpu_empty_cache,
    .memcpy_h2d = cpu_memcpy,
    .memcpy_d2h = cpu_memcpy,
    .synchronize = cpu_synchronize,
    .fill = cpu_fill,
    .arange = cpu_arange,
    .random = cpu_random,
    .cast = cpu_cast,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .ternary = cpu_ternary,
    .clamp = cpu_clamp,
    .reduce = cpu_reduce,
    .scan = cpu_scan,
    .softmax = cpu_softmax,
    .index = cpu_index,
    .nonzero = cpu_nonzero,
    .sort = cpu_sort,
    .gemm = cpu_gemm,
    .optim = cpu_optim,
};
