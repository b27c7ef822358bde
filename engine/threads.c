/* threads.c — one knob for the CPU thread count: the CPU backend's pool
 * (cpu/pool.c). OpenBLAS stays single-threaded; cpu/gemm.c splits GEMMs
 * over the pool. */
#include "cpu/cpu.h"

int em_num_threads(void) { return cpu_threads(); }

void em_set_num_threads(int n) { cpu_set_threads(n); }
