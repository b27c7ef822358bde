/* optim.c — placeholder; its owner replaces it. */
#include "cpu.h"

int cpu_optim(em_optim_op op, em_tensor *p, const em_tensor *g, em_tensor *s1, em_tensor *s2, const double *h, int nh)
{
    (void)op; (void)p; (void)g; (void)s1; (void)s2; (void)h; (void)nh;
    return em_set_error("optim: not implemented");
}
