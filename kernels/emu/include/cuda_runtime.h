/*
 * cuda_runtime.h — the emulated device's stand-in, found first on the
 * include path of the emulator build (-Ikernels/emu/include). It lets the
 * toolkit's own cuda_runtime.h declare the runtime API (so every function
 * the emulator implements is checked against NVIDIA's prototype), then adds
 * what nvcc would have built in for device code: the execution-space
 * qualifiers as plain C++, the built-in variables, barriers and warp
 * operations (emu_device.h).
 */
#ifndef EMBER_EMU_CUDA_RUNTIME_H
#define EMBER_EMU_CUDA_RUNTIME_H

/* Defined before the toolkit's host_defines.h, which then keeps them: for
 * g++ every function is a host function, a kernel is a plain function run
 * once per emulated thread. */
#define __host__
#define __device__
#define __global__
#define __grid_constant__
#define __constant__ static
#define __managed__

#include_next <cuda_runtime.h>

#undef __launch_bounds__
#define __launch_bounds__(...)

#include "emu_device.h"

#endif
