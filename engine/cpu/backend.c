/* backend.c — the CPU backend's table of kernel families (see backend.h). */
#include "cpu.h"

/* lapack.c (linear algebra) */
int cpu_linalg(em_linalg_op op, em_tensor *a, em_tensor *b, em_tensor *c, em_tensor *d,
               const em_linalg_params *p, int *info);
/* linear.c (fused linear layers) */
int cpu_linear(em_linear_op op, em_tensor *out, em_tensor *aux, const em_tensor *a, const em_tensor *b,
               em_tensor *bias);

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
    .cross_entropy = cpu_cross_entropy,
    .cross_entropy_backward = cpu_cross_entropy_backward,
    .index = cpu_index,
    .nonzero = cpu_nonzero,
    .sort = cpu_sort,
    .gemm = cpu_gemm,
    .optim = cpu_optim,
    .optim_multi = cpu_optim_multi,
    .conv = cpu_conv,
    .pool = cpu_pool,
    .pool_backward = cpu_pool_backward,
    .norm = cpu_norm,
    .norm_backward = cpu_norm_backward,
    .attention = cpu_attention,
    .attention_backward = cpu_attention_backward,
    .linalg = cpu_linalg,
    .linear = cpu_linear,
    /* bfloat16 through oneDNN, float16 widened inside gemm.c (one rounding) */
    .gemm_half = true,
    .elementwise_half = true,
};
