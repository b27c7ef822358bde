-- Docs of ember.cuda and ember.backends. Format: ember/help.lua.
-- The examples run everywhere: GPU work is guarded by ember.cuda.is_available().
return {
  {
    name = "ember.cuda",
    sig = "ember.cuda",
    doc = [=[
The GPU: devices, synchronisation, the caching allocator's memory figures, and events
for timing (torch.cuda). Nothing CUDA is loaded until a function here or a tensor on
"cuda" needs it; without a usable device, calls raise "no CUDA device: <reason>" while
is_available() and device_count() answer false and 0.
  is_available, is_initialized, device_count, get_device_name, synchronize
  memory_allocated, memory_reserved, max_memory_allocated, max_memory_reserved,
  reset_peak_memory_stats, memory_stats, memory_summary, empty_cache
  Event (record, synchronize, elapsed_time)
  CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing (CUDA graphs)
Device arguments are an index (0-based, as in "cuda:0") or a string "cuda:N";
omitted, device 0. Tensors move with t:to("cuda") / t:cuda() / t:cpu().]=],
    example = [=[
local ok, why = ember.cuda.is_available()
print(ok and ember.cuda.get_device_name() or ("CPU only: " .. why))
if ok then
  local x = ember.randn(1024, 1024, {device = "cuda"})
  local y = x:matmul(x)
  ember.cuda.synchronize()
  print(ember.cuda.memory_allocated())
end]=],
  },
  {
    name = "ember.cuda.is_available",
    sig = "ember.cuda.is_available() -> true, or false and the reason",
    doc = [=[
Whether a CUDA device can be used. When not, the second value says why (no driver, no
device, the CUDA backend library missing, ...). Loads the CUDA backend on first call.]=],
    example = [=[
local ok, why = ember.cuda.is_available()
print(ok, why)
local device = ok and "cuda" or "cpu"
print(ember.zeros(2, {device = device}).device)]=],
  },
  {
    name = "ember.cuda.is_initialized",
    sig = "ember.cuda.is_initialized() -> boolean",
    doc = [=[
Whether the CUDA backend has been loaded in this process (by is_available, a tensor on
"cuda", ...). Asking never loads it, so it costs nothing on a CPU-only run.
Like torch.cuda.is_initialized.]=],
    example = [=[
local loaded = ember.cuda.is_initialized()
print(loaded)   -- false until something used CUDA]=],
  },
  {
    name = "ember.cuda.device_count",
    sig = "ember.cuda.device_count() -> integer",
    doc = "The number of usable CUDA devices; 0 when there are none (never an error).",
    example = [=[
print(ember.cuda.device_count())]=],
  },
  {
    name = "ember.cuda.get_device_name",
    sig = "ember.cuda.get_device_name([device = 0]) -> string",
    doc = "The name of a device, e.g. \"NVIDIA H100 80GB HBM3\". Errors without a device.",
    example = [=[
if ember.cuda.is_available() then print(ember.cuda.get_device_name(0)) end]=],
  },
  {
    name = "ember.cuda.synchronize",
    sig = "ember.cuda.synchronize([device = 0])",
    doc = [=[
Waits until all work queued on the device has finished. GPU ops are asynchronous: call
it before reading a clock when timing GPU code (t:item() and copies to the CPU also wait).]=],
    example = [=[
if ember.cuda.is_available() then
  local x = ember.randn(512, 512, {device = "cuda"})
  local t0 = ember.wall_time()
  local y = x:matmul(x)
  ember.cuda.synchronize()
  print(ember.wall_time() - t0)
end]=],
  },
  {
    name = "ember.cuda.memory_allocated",
    sig = "ember.cuda.memory_allocated([device = 0]) -> bytes",
    doc = [=[
The bytes of device memory held by live tensors right now (the caching allocator's
count). Tensors are freed when collected: collectgarbage() or `local t <close>` frees
sooner.]=],
    example = [=[
if ember.cuda.is_available() then
  local before = ember.cuda.memory_allocated()
  local x = ember.zeros(1024, 1024, {device = "cuda"})
  print(ember.cuda.memory_allocated() - before)   -- about 4 MiB
end]=],
  },
  {
    name = "ember.cuda.memory_reserved",
    sig = "ember.cuda.memory_reserved([device = 0]) -> bytes",
    doc = [=[
The bytes the caching allocator holds from the driver: allocated memory plus freed
blocks kept for reuse. empty_cache() gives the unused part back.]=],
    example = [=[
if ember.cuda.is_available() then print(ember.cuda.memory_reserved()) end]=],
  },
  {
    name = "ember.cuda.max_memory_allocated",
    sig = "ember.cuda.max_memory_allocated([device = 0]) -> bytes",
    doc = "The peak of memory_allocated since the start or the last reset_peak_memory_stats.",
    example = [=[
if ember.cuda.is_available() then
  ember.cuda.reset_peak_memory_stats()
  local y = ember.randn(256, 256, {device = "cuda"}):matmul(ember.randn(256, 256, {device = "cuda"}))
  print(ember.cuda.max_memory_allocated())
end]=],
  },
  {
    name = "ember.cuda.max_memory_reserved",
    sig = "ember.cuda.max_memory_reserved([device = 0]) -> bytes",
    doc = "The peak of memory_reserved since the start or the last reset_peak_memory_stats.",
    example = [=[
if ember.cuda.is_available() then print(ember.cuda.max_memory_reserved()) end]=],
  },
  {
    name = "ember.cuda.reset_peak_memory_stats",
    sig = "ember.cuda.reset_peak_memory_stats([device = 0])",
    doc = "Starts the peaks (max_memory_allocated, max_memory_reserved) again from the current\nfigures.",
    example = [=[
if ember.cuda.is_available() then
  ember.cuda.reset_peak_memory_stats()
  print(ember.cuda.max_memory_allocated() == ember.cuda.memory_allocated())   -- true
end]=],
  },
  {
    name = "ember.cuda.memory_stats",
    sig = "ember.cuda.memory_stats([device = 0]) -> table",
    doc = [=[
The allocator's counters as a table of integers: allocated_bytes, reserved_bytes,
peak_allocated_bytes, peak_reserved_bytes, alloc_calls, free_calls, device_mallocs,
device_frees, num_ooms. (PyTorch's has other, dotted keys.)]=],
    example = [=[
if ember.cuda.is_available() then
  local s = ember.cuda.memory_stats()
  print(s.allocated_bytes, s.device_mallocs, s.num_ooms)
end]=],
  },
  {
    name = "ember.cuda.memory_summary",
    sig = "ember.cuda.memory_summary([device = 0]) -> string",
    doc = [=[
A few lines for people: the device, allocated and reserved MiB with their peaks, and
the allocation, free, device malloc and out-of-memory counts.]=],
    example = [=[
if ember.cuda.is_available() then print(ember.cuda.memory_summary()) end]=],
  },
  {
    name = "ember.cuda.empty_cache",
    sig = "ember.cuda.empty_cache([device = 0])",
    doc = [=[
Runs a full garbage collection (so tensors only the collector still holds are freed)
and returns the allocator's unused cached blocks to the driver. Allocated memory is not
affected; memory_reserved drops.]=],
    example = [=[
if ember.cuda.is_available() then
  local x = ember.zeros(4096, 4096, {device = "cuda"})
  x = nil
  ember.cuda.empty_cache()
  print(ember.cuda.memory_reserved())
end]=],
  },
  {
    name = "ember.cuda.Event",
    sig = "ember.cuda.Event([{device = 0}]) -> event",
    doc = [=[
A CUDA event for timing work on the GPU without synchronising at every step: record
one before and one after, then start:elapsed_time(stop) gives the milliseconds between.
Timing is always enabled (PyTorch's enable_timing option is not needed). Methods:
record, synchronize, elapsed_time. Errors without a device.]=],
    example = [=[
if ember.cuda.is_available() then
  local start, stop = ember.cuda.Event(), ember.cuda.Event()
  local x = ember.randn(1024, 1024, {device = "cuda"})
  start:record()
  local y = x:matmul(x)
  stop:record()
  print(start:elapsed_time(stop), "ms")
end]=],
  },
  {
    name = "ember.cuda.Event:record",
    sig = "event:record() -> event",
    doc = "Records the event on the device's stream: it completes when the work queued before it\ndoes.",
    example = [=[
if ember.cuda.is_available() then
  local e = ember.cuda.Event():record()
  e:synchronize()
end]=],
  },
  {
    name = "ember.cuda.Event:synchronize",
    sig = "event:synchronize()",
    doc = "Waits until the event has completed (the work queued before its record).",
    example = [=[
if ember.cuda.is_available() then
  local x = ember.randn(256, 256, {device = "cuda"}):exp()
  local done = ember.cuda.Event():record()
  done:synchronize()
end]=],
  },
  {
    name = "ember.cuda.Event:elapsed_time",
    sig = "start:elapsed_time(stop) -> milliseconds",
    doc = [=[
The time between the records of start and stop in milliseconds (a float). Waits for
stop to complete first. Both events must have been recorded.]=],
    example = [=[
if ember.cuda.is_available() then
  local a, b = ember.cuda.Event(), ember.cuda.Event()
  a:record()
  ember.randn(1000, {device = "cuda"}):sum()
  b:record()
  print(a:elapsed_time(b))
end]=],
  },

  -- ---- ember.backends ----------------------------------------------------------------------
  {
    name = "ember.cuda.CUDAGraph",
    sig = "ember.cuda.CUDAGraph() -> graph",
    doc = [=[
A CUDA graph (torch.cuda.CUDAGraph): the GPU work of a step, recorded once and replayed
with one launch, which removes the per-op launch cost that dominates small models.
  g:capture_begin([pool | {pool =, device = 0}])   start recording the device's work
  g:capture_end()      stop and instantiate
  g:replay()           run the recorded work again
  g:reset()            drop the graph (its memory goes back to the cache once no graph
                       shares its pool)
  g:pool()             a handle to its memory pool
ember.cuda.graph(g, fn) wraps begin/end around fn. A capture records without running:
  - inputs and outputs are static: replays read and write the tensors the capture saw;
    copy new data in with x:copy_(batch) and read results after replay();
  - nothing may come back to the host during it: item(), tolist(), printing, :to("cpu"),
    ember.cuda.synchronize, empty_cache, events, nonzero / masked_select / boolean
    indexing, index checks and linalg's status raise "<op>: cannot ... while a CUDA
    graph is being captured", and the capture is ended and discarded (the session goes
    on);
  - random ops (rand, randn, dropout, attention dropout) draw new numbers at every replay,
    as PyTorch's: a captured random kernel reads the generator's seed and offset from
    device memory that each replay sets first, and a replay advances the generator as
    the eager step would, so replays draw what the same eager steps would have drawn
    (a backward of an attention whose dropout was captured must be captured with it);
  - allocations come from the graph's private pool: the addresses stay valid for replays;
    tensors made during the capture (gradients, the loss) are overwritten by each replay;
  - host numbers are baked in: the learning rate (recapture after changing it, or give
    Adam/AdamW with capturable = true a 0-d tensor lr on the device and lr:fill_(v) it
    before a replay), and the optimizers' step counts: Adam/AdamW need capturable = true
    (the count on the device); SGD with momentum refuses to capture its first step.
Warm-up: run the step eagerly a few times before capturing (1 is enough for ember, 3 is
safe): it creates the optimizer's state and the cuBLAS/cuDNN handles and plans, which a
capture must not create. ember has one stream per device, so no side stream is needed
(PyTorch warms up on a side stream). Start the captured step with opt:zero_grad() (to
nil) so the captured backward makes fresh gradients instead of adding to old ones.
Without a CUDA device every graph function raises "no CUDA device: <reason>".]=],
    example = [=[
if ember.cuda.is_available() then
  local w = ember.randn(8, 4, {device = "cuda"}):requires_grad_()
  local opt = ember.optim.SGD({w}, {lr = 0.1, momentum = 0.9})
  local x = ember.randn(16, 8, {device = "cuda"})
  local function step()
    opt:zero_grad()
    local loss = (x:matmul(w) ^ 2):mean()
    loss:backward()
    opt:step()
    return loss
  end
  for _ = 1, 3 do step() end          -- warm-up
  local g, loss = ember.cuda.CUDAGraph(), nil
  ember.cuda.graph(g, function() loss = step() end)
  for _ = 1, 10 do
    x:copy_(ember.randn(16, 8, {device = "cuda"}))
    g:replay()
  end
  print(loss:item())
end]=],
  },
  {
    name = "ember.cuda.CUDAGraph:capture_begin",
    sig = "g:capture_begin([pool | {pool = handle, device = 0}])",
    doc = [=[
Starts recording the work of the device (cuda:0 unless a pool or device says otherwise)
into g. Waits for the work already queued first (its errors are raised here). Until
capture_end, the device's allocations come from g's pool: a new private one, or `pool`
(from ember.cuda.graph_pool_handle() or another graph's :pool()) to share memory with
graphs replayed in the order they were captured, never at the same time. The capture
is thread-local: other threads are unaffected. Errors: g already holds a capture (reset
it first), a capture already under way on the device, a pool of another device.]=],
    example = [=[
if ember.cuda.is_available() then
  local g = ember.cuda.CUDAGraph()
  local x = ember.ones(4, {device = "cuda"})
  g:capture_begin()
  x:mul_(2)
  g:capture_end()
  g:replay(); g:replay()
  print(x)   -- 4s
end]=],
  },
  {
    name = "ember.cuda.CUDAGraph:capture_end",
    sig = "g:capture_end()",
    doc = [=[
Ends the capture and instantiates the graph. If the capture was discarded (an op that
needed the host ran during it) or CUDA refuses it, this raises the reason and resets g.]=],
    example = [=[
if ember.cuda.is_available() then
  local g = ember.cuda.CUDAGraph()
  g:capture_begin()
  g:capture_end()    -- an empty graph replays as a no-op
  g:replay()
end]=],
  },
  {
    name = "ember.cuda.CUDAGraph:replay",
    sig = "g:replay()",
    doc = [=[
Queues the recorded work on the device's stream with one launch (asynchronous, like any
GPU op: reading a result waits for it). A graph that draws random numbers first sets
its kernels' seed and offset to the generator's state, and the replay advances the
generator by what it draws. Errors: nothing captured, or called while a capture is
under way on the device.]=],
    example = [=[
if ember.cuda.is_available() then
  local g, x = ember.cuda.CUDAGraph(), ember.zeros(3, {device = "cuda"})
  ember.cuda.graph(g, function() x:add_(1) end)
  for _ = 1, 5 do g:replay() end
  print(x)   -- 5s
end]=],
  },
  {
    name = "ember.cuda.CUDAGraph:reset",
    sig = "g:reset()",
    doc = [=[
Drops the graph (a capture under way is discarded) so g can capture again. Its private
memory returns to the device's cache once no other graph or handle holds the pool; the
tensors made during the capture stay valid as ordinary tensors.]=],
    example = [=[
if ember.cuda.is_available() then
  local g = ember.cuda.CUDAGraph()
  ember.cuda.graph(g, function() end)
  g:reset()
  ember.cuda.graph(g, function() end)
end]=],
  },
  {
    name = "ember.cuda.CUDAGraph:pool",
    sig = "g:pool() -> pool handle",
    doc = "A handle to g's memory pool, for capture_begin's or ember.cuda.graph's pool\n(torch's g.pool()).",
    example = [=[
if ember.cuda.is_available() then
  local a, b = ember.cuda.CUDAGraph(), ember.cuda.CUDAGraph()
  ember.cuda.graph(a, function() end)
  ember.cuda.graph(b, function() end, {pool = a:pool()})
end]=],
  },
  {
    name = "ember.cuda.graph",
    sig = "ember.cuda.graph(g, fn [, {pool =, device =}]) | local _ <close> = ember.cuda.graph(g [, opts])",
    doc = [=[
Captures the work of fn() into the CUDAGraph g (torch.cuda.graph): a full collection,
capture_begin, fn, capture_end. If fn raises, the capture is discarded, g is reset and
the error propagates. Without fn it begins the capture and returns a guard: closing it
(leaving the block holding a `<close>` variable) ends the capture, or discards it when the
block is left by an error. See ember.cuda.CUDAGraph for what a capture may contain and
the warm-up it needs.]=],
    example = [=[
if ember.cuda.is_available() then
  local g, x = ember.cuda.CUDAGraph(), ember.ones(2, {device = "cuda"})
  do
    local _ <close> = ember.cuda.graph(g)
    x:mul_(3)
  end
  g:replay()
  print(x)   -- 9s (the capture itself ran nothing)
end]=],
  },
  {
    name = "ember.cuda.graph_pool_handle",
    sig = "ember.cuda.graph_pool_handle([device = 0]) -> pool handle",
    doc = [=[
A new private memory pool for graphs to share (torch.cuda.graph_pool_handle): pass it
as capture_begin's or ember.cuda.graph's pool. The pool lives while a graph or handle
holds it.]=],
    example = [=[
if ember.cuda.is_available() then
  local pool = ember.cuda.graph_pool_handle()
  local a, b = ember.cuda.CUDAGraph(), ember.cuda.CUDAGraph()
  ember.cuda.graph(a, function() end, {pool = pool})
  ember.cuda.graph(b, function() end, {pool = pool})
end]=],
  },
  {
    name = "ember.cuda.is_current_stream_capturing",
    sig = "ember.cuda.is_current_stream_capturing([device = 0]) -> boolean",
    doc = "Whether a CUDA graph capture is under way on the device's stream.",
    example = [=[
if ember.cuda.is_available() then
  print(ember.cuda.is_current_stream_capturing())   -- false
end]=],
  },
  {
    name = "ember.backends",
    also = {"ember.backends.cuda", "ember.backends.cpu"},
    sig = "ember.backends.cuda.matmul.allow_tf32, ember.backends.cpu.get_cpu_capability()",
    doc = [=[
Settings and facts of the backends (torch.backends):
ember.backends.cuda.matmul.allow_tf32, ember.backends.cpu.get_cpu_capability() and
ember.backends.cpu.blas_core() (see their entries).]=],
    example = [=[
print(ember.backends.cuda.matmul.allow_tf32)   -- false]=],
  },
  {
    name = "ember.backends.cpu.get_cpu_capability",
    sig = "ember.backends.cpu.get_cpu_capability() -> string",
    doc = [=[
The widest vector instructions the CPU kernels may use: "AVX512" (AVX-512 with VL, BW and
DQ, and FMA), "AVX2" (with FMA) or "DEFAULT", as PyTorch's function of the same name.]=],
    example = [=[
print(ember.backends.cpu.get_cpu_capability())   -- e.g. AVX512]=],
  },
  {
    name = "ember.backends.cpu.blas_core",
    sig = "ember.backends.cpu.blas_core() -> string",
    doc = [=[
The kernel set OpenBLAS runs (openblas_get_corename: "Cooperlake", "SkylakeX", "Haswell",
...), opening OpenBLAS if no matrix product has yet. ember chooses it from the CPU's
features on Intel CPUs; EMBER_BLAS_CORETYPE forces one, and OPENBLAS_CORETYPE (OpenBLAS's
own variable) wins over both. ember's own; PyTorch has no counterpart.]=],
    example = [=[
print(ember.backends.cpu.blas_core())   -- e.g. Cooperlake]=],
  },
  {
    name = "ember.backends.cuda.matmul.allow_tf32",
    sig = "ember.backends.cuda.matmul.allow_tf32 = true | false   (default false)",
    doc = [=[
Whether float32 matrix products on the GPU may use TF32 tensor cores: much faster on
Ampere and later GPUs, with about 10 bits of mantissa in the inputs. Read it or assign a
boolean; any other value, or another setting name, is an error. CPU results are not
affected. Like PyTorch's flag of the same name.]=],
    example = [=[
local matmul = ember.backends.cuda.matmul
local old = matmul.allow_tf32
matmul.allow_tf32 = true
print(matmul.allow_tf32)   -- true
matmul.allow_tf32 = old]=],
  },
  -- ---- GPU monitoring (NVML; lua/bind_monitor.c, engine/nvml.c) ----------------
  {
    name = "ember.cuda.utilization",
    sig = "ember.cuda.utilization([device = 0]) -> integer",
    doc = [=[
Percent of the last sample period (1/6 s to 1 s, by GPU) during which one or more
kernels ran on the device, read from NVML (libnvidia-ml.so.1, the library behind
nvidia-smi). The device is an index, "cuda:N" or nil (cuda:0). NVML is opened on the
first call, never at start-up; $EMBER_NVML_LIBRARY names another file to open. The CUDA
device is found among NVML's by its PCI bus id, so CUDA_VISIBLE_DEVICES and CUDA's
device order are honoured. Where ember's CUDA backend has no device (a CPU-only build,
a driver CUDA cannot use), the index is NVML's own, numbered as nvidia-smi does.
Without NVML: an error saying why. Like torch.cuda.utilization.]=],
    example = [=[
local ok, u = pcall(ember.cuda.utilization)
print(ok and (u .. "%") or u)   -- e.g. 12%, or why NVML is not there]=],
  },
  {
    name = "ember.cuda.memory_usage",
    sig = "ember.cuda.memory_usage([device = 0]) -> integer",
    doc = [=[
Percent of the last sample period during which device memory was read or written
(NVML's memory utilisation: bandwidth use, not bytes allocated; see
ember.cuda.mem_get_info and ember.cuda.memory_allocated for those). Device and NVML as
for ember.cuda.utilization. Like torch.cuda.memory_usage.]=],
    example = [=[
local ok, m = pcall(ember.cuda.memory_usage, 0)
print(ok and (m .. "%") or m)]=],
  },
  {
    name = "ember.cuda.temperature",
    sig = "ember.cuda.temperature([device = 0]) -> integer",
    doc = [=[
The GPU die's temperature in degrees Celsius, from NVML. Device and NVML as for
ember.cuda.utilization. Like torch.cuda.temperature.]=],
    example = [=[
local ok, t = pcall(ember.cuda.temperature, "cuda:0")
print(ok and (t .. " C") or t)]=],
  },
  {
    name = "ember.cuda.power_draw",
    sig = "ember.cuda.power_draw([device = 0]) -> integer",
    doc = [=[
The board's power draw in milliwatts, from NVML (as torch.cuda.power_draw). Device and
NVML as for ember.cuda.utilization; a board that does not measure power raises
"NVML cannot read its power draw: Not Supported".]=],
    example = [=[
local ok, p = pcall(ember.cuda.power_draw)
print(ok and string.format("%.1f W", p / 1000) or p)]=],
  },
  {
    name = "ember.cuda.mem_get_info",
    sig = "ember.cuda.mem_get_info([device = 0]) -> free, total",
    doc = [=[
Free and total device memory in bytes, as the CUDA driver reports them (cudaMemGetInfo,
not NVML): free counts every process's use, and memory ember's caching allocator holds
(ember.cuda.memory_reserved) is not free. Loads the CUDA backend; without a GPU, an
error "no CUDA device: ...". Like torch.cuda.mem_get_info.]=],
    example = [=[
if ember.cuda.is_available() then
  local free, total = ember.cuda.mem_get_info()
  print(string.format("%.1f of %.1f GiB free", free / 2^30, total / 2^30))
end]=],
  },
  {
    name = "ember.cuda.gpu_status",
    sig = "ember.cuda.gpu_status() -> table",
    doc = [=[
Every GPU NVML sees, in NVML's (nvidia-smi's) order: an array of tables with index
(NVML's, from 0), name, uuid, pci_bus_id, cuda (ember's CUDA index for it, present only
once CUDA is loaded in this session: asking never loads it), utilization, memory_usage
(percent), memory_used, memory_total (bytes, every process), temperature (C),
power_draw, power_limit (milliwatts); a figure the GPU does not report is absent. The
table's driver_version field is the driver's version. What the shell's :gpu prints.
Not in PyTorch (its nearest is torch.cuda.list_gpu_processes); without NVML, an error
saying why.]=],
    example = [=[
local ok, s = pcall(ember.cuda.gpu_status)
if ok then
  for _, gpu in ipairs(s) do print(gpu.index, gpu.name, gpu.utilization) end
else
  print(s)
end]=],
  },
}
