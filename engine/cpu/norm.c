/* norm.c — PLACEHOLDER until the normalisation kernels land (helper B). */
#include "cpu.h"
int cpu_norm(em_norm_op op, em_tensor *y, em_tensor *mean, em_tensor *var, const em_tensor *x,
             const em_tensor *w, const em_tensor *b, const em_norm_params *p)
{
    (void)op; (void)y; (void)mean; (void)var; (void)x; (void)w; (void)b; (void)p;
    return em_set_error("norm: not implemented on the CPU yet");
}
int cpu_norm_backward(em_norm_op op, em_tensor *gx, em_tensor *gw, em_tensor *gb, const em_tensor *gy,
                      const em_tensor *x, const em_tensor *mean, const em_tensor *rstd, const em_tensor *w,
                      const em_norm_params *p)
{
    (void)op; (void)gx; (void)gw; (void)gb; (void)gy; (void)x; (void)mean; (void)rstd; (void)w; (void)p;
    return em_set_error("norm: not implemented on the CPU yet");
}
