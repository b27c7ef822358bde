/* pooling.c — PLACEHOLDER until the pooling kernels land (helper B). */
#include "cpu.h"
int cpu_pool(em_pool_op op, em_tensor *out, em_tensor *idx, const em_tensor *in, const em_pool_params *p)
{
    (void)op; (void)out; (void)idx; (void)in; (void)p;
    return em_set_error("pool: not implemented on the CPU yet");
}
int cpu_pool_backward(em_pool_op op, em_tensor *gin, const em_tensor *gout, const em_pool_params *p)
{
    (void)op; (void)gin; (void)gout; (void)p;
    return em_set_error("pool: not implemented on the CPU yet");
}
