/*
 * runtime.h — what the emulator's own parts share (runtime.cc, memory.cc,
 * fiber.cc); the library stand-ins see only emu.h.
 */
#ifndef EMBER_EMU_RUNTIME_H
#define EMBER_EMU_RUNTIME_H

#include "emu.h"

#include <stdint.h>

namespace emu {

/* Settings read once from the environment (runtime.cc):
 *   EMBER_CUDA_EMU_MEMORY  device memory in bytes (suffixes K, M, G; default 1G)
 *   EMBER_CUDA_EMU_SEED    order of blocks and threads: 0 natural, else shuffled by the seed (default 1)
 *   EMBER_CUDA_EMU_FAULT   the number of a kernel launch (1 the first) that faults when it runs, as
 *                          an illegal address would: for tests of what follows a fault */
struct settings {
    size_t memory;
    uint64_t seed;
    uint64_t fault_launch;      /* 0: none */
};
const settings &config();

/* A non-sticky error from an API call or a launch (cudaGetLastError reads it). */
cudaError_t set_error(cudaError_t e);
/* The context's sticky error (cudaSuccess while the context is healthy). */
cudaError_t sticky();

/* Device memory (memory.cc): the arena, its exact-byte shadow, and the
 * protection that keeps host code out of it while no device work runs. */
void *device_alloc(size_t n);           /* NULL when the device is full */
bool device_free(void *p);              /* false: not the start of a live allocation */
size_t device_in_use();
/* The caching allocator's view: bytes [p, p+n) in use by a tensor, or free. */
void mark_usable(const void *p, size_t n, bool usable);
/* Device work runs between these (nesting counted): the arena is readable
 * and writable inside, inaccessible to the host outside. */
void device_enter();
void device_leave();
/* Pinned host memory (cudaHostAlloc): host memory kernels may also use. */
void *pinned_alloc(size_t n);
bool pinned_free(void *p);
bool is_pinned(const void *p, size_t n);
/* Whether every byte of [p, p+n) (device memory) is in use: the fast check. */
bool usable(const void *p, size_t n);
/* Installs the handler that names host accesses of device memory. */
void install_fault_handler();

/* Kernels (fiber.cc). */
int max_dynamic_shared(const void *fn);         /* cudaFuncSetAttribute's value, else 48 KB */
cudaError_t set_max_dynamic_shared(const void *fn, int bytes);
bool in_kernel();
/* Inside a kernel: ends the launch after a fault (never returns). */
[[noreturn]] void abort_kernel();

/* Device properties of the emulated H100. */
const cudaDeviceProp &props();

} // namespace emu

#endif
