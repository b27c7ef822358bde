/*
 * emu.h — the emulated CUDA device's internal interface (kernels/emu/).
 *
 * The emulator is one host process's picture of a GPU: device memory is host
 * memory the emulator hands out (and checks), streams are in-order queues of
 * host functions, and a kernel's threads are fibers run block by block on the
 * calling thread. The library stand-ins (cublas.cc, cublaslt.cc, cusolver.cc,
 * cudnn.cc, nccl.cc) use only what is declared here plus the real toolkit
 * headers, whose declarations they implement.
 *
 * Rules for a stand-in:
 *  - check the arguments at the call, as the real library does, and return
 *    its status for bad ones (never touch device memory at the call);
 *  - queue the computation with emu::submit on the handle's stream: it runs
 *    in order with the stream's other work (at the next synchronisation, or,
 *    while the stream is being captured, at each replay of the graph);
 *  - inside the queued function, check every device range it reads or writes
 *    with emu::device_range before touching it, and return at once when it
 *    says no (the context then holds a sticky cudaErrorIllegalAddress, as a
 *    faulting kernel leaves it on a GPU).
 */
#ifndef EMBER_EMU_H
#define EMBER_EMU_H

#include <cuda_runtime.h>

#include <functional>
#include <stddef.h>

namespace emu {

/* Queues fn on stream s (NULL: the legacy default stream). `what` names the
 * work in reports ("cublasGemmStridedBatchedEx"). Returns cudaSuccess, the
 * context's sticky error, or an error for a bad stream. */
cudaError_t submit(cudaStream_t s, const char *what, std::function<void()> fn);

/* Queues on stream s a command that is not done while pending() says so
 * (an NCCL kernel waiting for a peer): the stream stops there; a query
 * answers cudaErrorNotReady, a synchronisation waits, letting other host
 * threads call in meanwhile. pending runs with the API lock held, on any
 * thread that runs the stream: atomics only. */
cudaError_t submit_pending(cudaStream_t s, const char *what, std::function<bool()> pending);

/* Inside queued work: true when [p, p + n) lies inside one live device
 * allocation (exact bytes: the caching allocator's unused tails and freed
 * blocks do not count). Else reports "<what>: <reason>" on stderr, makes
 * the context's error cudaErrorIllegalAddress and returns false. */
bool device_range(const void *p, size_t n, const char *what);

/* Whether p points into the emulated device's memory (live or not). */
bool is_device_pointer(const void *p);

/* Makes the context's sticky error e after a fault found in queued work,
 * printing "ember (emulated CUDA): <message>" on stderr. */
void fault(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether the context has a sticky error (NCCL's asynchronous error check). */
bool sticky_error_for_nccl();

} // namespace emu

#endif
