-- Docs of ember.profiler: ops and Lua lines by time, backward nodes, Chrome traces.
-- Format: ember/help.lua.
return {
  {
    name = "ember.profiler",
    sig = "local profiler = ember.profiler",
    doc = [=[
Where the time of a piece of code goes (PyTorch's torch.profiler):
  profiler.profile([opts,] fn, ...)     runs fn(...) recorded; returns the profile, then
                                        fn's results
  prof:key_averages():table({...})      the ops by name: self and total time, calls
  prof:lines():table({...})             the same time by the Lua line that ran it
  prof:export_chrome_trace(path)        a trace for Perfetto or chrome://tracing
  profiler.record_function(name, fn)    a named range of your own
In the shell, :profile <code> prints both tables. An op is a call from Lua into one of
ember's C functions (tensor methods, operators, ember.*); a backward pass is split into
its nodes (MulBackward, ...). Each op counts at the first calling line outside ember's
Lua library, so the ops of model(x) count at that line. Time between ops is shown as
"Lua between ops", so the rows add up to the wall time; the profiler's own cost (a hook
on every Lua call while recording) is measured and left out of every figure. Ops on a
CUDA device are timed on the host unless synchronize = true; activities = {"cpu", "cuda"}
adds each op's device time from a pair of CUDA events around it. With the CUDA backend
loaded each op and backward node is also an NVTX range, for Nsight Systems.]=],
    example = [=[
local a = ember.randn(256, 256)
local prof = ember.profiler.profile(function()
  for _ = 1, 10 do a = (a:matmul(a) / 256):tanh() end
end)
print(prof:key_averages():table({sort_by = "self_cpu_time_total", row_limit = 5}))]=],
  },
  {
    name = "ember.profiler.profile",
    sig = "profiler.profile([{record_shapes =, profile_memory =, synchronize =, activities =}], fn, ...)\n"
       .. "  -> prof, fn's results\n"
       .. "profiler.profile([opts]) -> prof   (then prof:start() ... prof:stop(), or a <close> guard)",
    doc = [=[
Records the ops fn runs (see ember.profiler). Options: record_shapes (each op's tensor
arguments' shapes, for key_averages({group_by_input_shape = true})), profile_memory (the
bytes held in storages after each op less before: "CPU Mem", and a counter in the
trace), synchronize (wait for the CUDA device after each op, so its time includes the
device's), activities ({"cpu"}, or {"cpu", "cuda"}: each op's device time, the span
between two CUDA events recorded on the stream around it and read when the profile
stops, as "CUDA total" columns and a stream track in the trace; a backward pass counts
as one; without a CUDA device nothing is added). The profile:
prof:key_averages([{group_by_input_shape =}]) and prof:lines() give tables, whose
:table({sort_by = "self_cpu_time_total" | "cpu_time_total" | "cpu_time" | "count" |
"self_cpu_memory_usage" | "cuda_time_total" | "cuda_time", row_limit = 100}) is the text
and :rows_list() the rows ({name, calls, self, total, mem, shapes, cuda}, seconds and
bytes); prof:events() the events
in the order they ended; prof:wall_time(); prof:overhead() (the hook's own time);
prof:export_chrome_trace(path). Only one profile records at a time. fn's errors pass
through, the recording stopped.]=],
    example = [=[
local prof = ember.profiler.profile({record_shapes = true}, function()
  return ember.ones(2, 3):matmul(ember.ones(3, 4))
end)
print(prof:key_averages({group_by_input_shape = true}):table())]=],
  },
  {
    name = "ember.profiler.record_function",
    sig = "profiler.record_function(name, fn, ...) -> fn's results",
    doc = [=[
Runs fn(...) as a named range of the profile being recorded: a row of its own (its self
time is the Lua code in it, its total includes the ops inside) and an event in the
trace. Without a recording profile, just fn(...).]=],
    example = [=[
local prof = ember.profiler.profile(function()
  ember.profiler.record_function("forward", function() return ember.ones(3) * 2 end)
end)
print(prof:key_averages():table())]=],
  },
}
