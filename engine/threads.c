/* threads.c — one knob for the CPU thread count: OpenMP's. OpenBLAS stays
 * single-threaded; cpu/gemm.c splits GEMMs over the OpenMP threads. */
#include "ember.h"

#ifdef _OPENMP
#include <omp.h>
#endif

int em_num_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void em_set_num_threads(int n)
{
    if (n < 1) n = 1;
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}
