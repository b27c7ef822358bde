-- Docs of ember.debug: stop where a NaN or an infinity first appears. Format: ember/help.lua.
return {
  {
    name = "ember.debug",
    sig = "local debug_tools = ember.debug",
    doc = [=[
Finding where a NaN starts: ember.debug.stop_on_nan(true) (the shell's :nan on). See
also ember.autograd.detect_anomaly (backward ops), ember.profiler and ember.memory.]=],
    example = [=[
ember.debug.stop_on_nan(true)
print(ember.debug.is_stopping_on_nan())   -- true
ember.debug.stop_on_nan(false)]=],
  },
  {
    name = "ember.debug.stop_on_nan",
    sig = "ember.debug.stop_on_nan(on) -> whether it was on",
    doc = [=[
While on, every floating-point tensor an op returns to Lua is checked. At the first op
whose result holds a NaN or an infinity while none of its tensor arguments did, the
ember shell's debugger stops at the Lua line that called the op (the op has run; its
result is there), saying which op and the shapes of its result and inputs; `continue`
goes on, and later ops fed by that value do not stop again. Without the shell's
debugger (plain lua5.4) it is an error at that line. Anomaly mode
(ember.autograd.detect_anomaly) is turned on with it for the backward ops, and back off
after. Each check costs a reduction per op. On a CUDA device the reductions are queued
without waiting and read at the next synchronisation (item, tolist, printing,
cuda.synchronize, or after 256 ops without one); the stop comes there, naming the op
that made the NaN and the line that called it.]=],
    example = [=[
ember.debug.stop_on_nan(true)
local ok, err = pcall(function() return ember.tensor({-1.0}):sqrt() end)
print(err)   -- ...: sqrt made a NaN or an infinity (result [1]); inputs: [1] float32
ember.debug.stop_on_nan(false)]=],
  },
  {
    name = "ember.debug.is_stopping_on_nan",
    sig = "ember.debug.is_stopping_on_nan() -> boolean",
    doc = [=[
Whether ember.debug.stop_on_nan is on.]=],
    example = [=[
print(ember.debug.is_stopping_on_nan())]=],
  },
}
