/* dnnl_shared.h — what dnnl.c (convolution) shares with dnnl_matmul.c
 * (bfloat16 GEMM): the oneDNN entry points found by dlopen, the per-thread
 * stream and the primitive steps. Only these two files include oneDNN's
 * header. */
#ifndef EMBER_CPU_DNNL_SHARED_H
#define EMBER_CPU_DNNL_SHARED_H

#include "dnnl.h"

#include <oneapi/dnnl/dnnl.h>

typedef struct dnnl_api {
    __typeof__(dnnl_engine_create) *engine_create;
    __typeof__(dnnl_stream_create) *stream_create;
    __typeof__(dnnl_stream_wait) *stream_wait;
    __typeof__(dnnl_memory_desc_init_by_tag) *memory_desc_init_by_tag;
    __typeof__(dnnl_memory_desc_get_size) *memory_desc_get_size;
    __typeof__(dnnl_memory_desc_equal) *memory_desc_equal;
    __typeof__(dnnl_memory_create) *memory_create;
    __typeof__(dnnl_memory_destroy) *memory_destroy;
    __typeof__(dnnl_dilated_convolution_forward_desc_init) *conv_forward_desc_init;
    __typeof__(dnnl_dilated_convolution_backward_data_desc_init) *conv_backward_data_desc_init;
    __typeof__(dnnl_dilated_convolution_backward_weights_desc_init) *conv_backward_weights_desc_init;
    __typeof__(dnnl_reorder_primitive_desc_create) *reorder_primitive_desc_create;
    __typeof__(dnnl_primitive_attr_create) *primitive_attr_create;
    __typeof__(dnnl_primitive_attr_destroy) *primitive_attr_destroy;
    __typeof__(dnnl_primitive_attr_set_scratchpad_mode) *primitive_attr_set_scratchpad_mode;
    __typeof__(dnnl_primitive_desc_create) *primitive_desc_create;
    __typeof__(dnnl_primitive_desc_destroy) *primitive_desc_destroy;
    __typeof__(dnnl_primitive_desc_query_md) *primitive_desc_query_md;
    __typeof__(dnnl_primitive_create) *primitive_create;
    __typeof__(dnnl_primitive_destroy) *primitive_destroy;
    __typeof__(dnnl_primitive_execute) *primitive_execute;
    __typeof__(dnnl_memory_desc_init_by_strides) *memory_desc_init_by_strides;
    __typeof__(dnnl_matmul_desc_init) *matmul_desc_init;
    __typeof__(dnnl_primitive_attr_set_output_scales) *primitive_attr_set_output_scales;
    __typeof__(dnnl_primitive_attr_set_post_ops) *primitive_attr_set_post_ops;
    __typeof__(dnnl_post_ops_create) *post_ops_create;
    __typeof__(dnnl_post_ops_destroy) *post_ops_destroy;
    __typeof__(dnnl_post_ops_append_sum) *post_ops_append_sum;
    __typeof__(dnnl_primitive_desc_query) *primitive_desc_query;
    void (*omp_set_num_threads)(int);       /* libgomp's, found through libdnnl's dependencies */
} dnnl_api;

/* A primitive and the scratchpad it needs. */
typedef struct step {
    dnnl_primitive_t prim;
    dnnl_memory_desc_t scratch_md;
    size_t scratch;
} step;

/* oneDNN's entry points and its engine (*eng), loading it on first use;
 * NULL when it is missing or disabled (EMBER_DNNL=0, cpu_dnnl_enable(0)). */
const dnnl_api *cpu_dnnl_open(dnnl_engine_t *eng);
/* The calling thread's stream, its OpenMP thread count set to 1 (dnnl.c's
 * header says why); NULL on failure. */
dnnl_stream_t cpu_dnnl_stream(void);
/* Makes s from pd (destroyed); -1 on failure (s->prim NULL). */
int cpu_dnnl_make_step(step *s, dnnl_primitive_desc_t pd);
void cpu_dnnl_destroy_step(step *s);
/* Runs s with its scratchpad at `scratch` and waits; args has room for one more. */
int cpu_dnnl_run_step(const step *s, dnnl_stream_t st, int nargs, dnnl_exec_arg_t *args, void *scratch);
/* Destroys the memories of mem[0..n-1] that were made (the others NULL). */
void cpu_dnnl_destroy_memories(dnnl_memory_t *mem, int n);

/* One task of a call cut into tasks: 0, or -1 on failure. */
typedef int (*cpu_dnnl_task)(void *call, int64_t i, dnnl_stream_t st);
/* Runs task(call, i, stream) for i in [0, n) over the pool (work: the
 * multiply-adds), each on its thread's stream; -1 when one failed or a
 * thread had no stream. The sanitizer build runs them on the calling thread. */
int cpu_dnnl_run_tasks(int64_t n, double work, cpu_dnnl_task task, void *call);

#endif
