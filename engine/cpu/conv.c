/* conv.c — PLACEHOLDER until the convolution kernels land (helper A). */
#include "cpu.h"
int cpu_conv(em_conv_op op, em_tensor *out, const em_tensor *a, const em_tensor *b, const em_conv_params *p)
{
    (void)op; (void)out; (void)a; (void)b; (void)p;
    return em_set_error("conv: not implemented on the CPU yet");
}
