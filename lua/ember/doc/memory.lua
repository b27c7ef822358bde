-- Docs of ember.memory: live tensors by the line that made them, bytes over time.
-- Format: ember/help.lua.
return {
  {
    name = "ember.memory",
    sig = "local memory = ember.memory",
    doc = [=[
Who holds the memory (PyTorch's memory snapshots and _record_memory_history, for the
CPU and CUDA alike):
  memory.record_history(true)   start recording which Lua line makes each storage
  memory.snapshot()             the live ones grouped by line, largest first
  print(memory.top(10))         the same as text (:mem top in the shell)
  memory.history()              the bytes held after each storage made or freed
  memory.history_by_line([n])   the bytes each of the n largest lines held over time
  memory.plot_history([path])   that history drawn with ember.plot, a line per Lua line
A storage counts at the first calling line outside ember's Lua library (a layer's
weights at the line that built the model); one made by a backward pass at the line of
the backward() call, with the node that made it; one never handed to Lua as
"(inside an op)". Only storages made while recording are tracked. While recording, an
out-of-memory error names the five lines holding the most; it always says how much the
host has available. Recording costs a hash insertion per storage and a stack walk per
new tensor handed to Lua.]=],
    example = [=[
ember.memory.record_history(true)
local w = ember.zeros(1000, 1000)
print(ember.memory.top(5))
ember.memory.record_history(false)]=],
  },
  {
    name = "ember.memory.record_history",
    sig = "memory.record_history(enabled [, {max_entries = 1000000}])",
    doc = [=[
Starts (clearing what was recorded) or stops recording. max_entries bounds the length
of memory.history(); the per-line tracking is not bounded.]=],
    example = [=[
ember.memory.record_history(true, {max_entries = 10000})
print(ember.memory.is_recording())   -- true
ember.memory.record_history(false)]=],
  },
  {
    name = "ember.memory.is_recording",
    sig = "memory.is_recording() -> boolean",
    doc = [=[
Whether memory.record_history is on.]=],
    example = [=[
print(ember.memory.is_recording())]=],
  },
  {
    name = "ember.memory.snapshot",
    sig = "memory.snapshot() -> {groups = {{site =, node =, device =, count =, bytes =}, ...},\n"
       .. "                      tracked = {cpu =, cuda =}, in_use = {cpu =, cuda =}, cuda =}",
    doc = [=[
Runs a full garbage collection, then groups the live tracked storages by the line that
made them (site "file:line"; node: the backward node, for a backward's) and device,
largest first. tracked: the bytes of tracked storages; in_use: of all storages; cuda:
the caching allocator's allocated, reserved, max_allocated and fragmentation (the share
of reserved not allocated), when CUDA is in use. An error when not recording.]=],
    example = [=[
ember.memory.record_history(true)
local a = ember.zeros(256, 256)
local g = ember.memory.snapshot().groups[1]
print(g.site, g.bytes)   -- ...:3  262144
ember.memory.record_history(false)]=],
  },
  {
    name = "ember.memory.top",
    sig = "memory.top([n = 10]) -> text",
    doc = [=[
The n lines holding the most memory (memory.snapshot as a table), then the totals and
the CUDA allocator's figures. The shell's :mem top prints it.]=],
    example = [=[
ember.memory.record_history(true)
local a = ember.zeros(256, 256)
print(ember.memory.top(3))
ember.memory.record_history(false)]=],
  },
  {
    name = "ember.memory.history",
    sig = "memory.history() -> {t = {seconds}, cpu = {bytes}, cuda = {bytes}, delta = {bytes},\n"
       .. "  site = {lines}}",
    doc = [=[
The tracked bytes on each device after every storage made or freed while recording, with
the time from the first entry; delta is that change (made > 0, freed < 0) and site the
line of its storage ("file:line", "file:line (backward)" for one a backward pass made at
that backward() call, "(inside an op)" for a temporary Lua never saw).]=],
    example = [=[
ember.memory.record_history(true)
local a = ember.zeros(1000)
print(#ember.memory.history().t)   -- 1
ember.memory.record_history(false)]=],
  },
  {
    name = "ember.memory.history_by_line",
    sig = "memory.history_by_line([n = 8]) -> {{site =, peak =, t = {seconds}, bytes = {bytes}}, ...}",
    doc = [=[
The bytes held by the storages of each line over time (a point at every change of that
line), for the n lines whose peak was highest, highest first; then the other lines
together as site "(other lines)" when there are more.]=],
    example = [=[
ember.memory.record_history(true)
local a = ember.zeros(1000)
local b = ember.zeros(2000)
local by = ember.memory.history_by_line()
print(by[1].site, by[1].peak)   -- ...:3  8000
ember.memory.record_history(false)]=],
  },
  {
    name = "ember.memory.plot_history",
    sig = "memory.plot_history([path] [, {by = \"line\", top = 8}]) -> figure",
    doc = [=[
Draws memory.history() with ember.plot, MB over seconds: a line for each of the top lines
that held the most and the total (by = "line"), or a line per device used (by = "device");
inline in the terminal, or saved to path (.png, .svg, .pdf, .txt). Needs gnuplot.]=],
    needs = "file",
    example = [=[
ember.memory.record_history(true)
for i = 1, 10 do local t = ember.zeros(i * 1000) end
ember.memory.plot_history("/tmp/memory.png")
ember.memory.record_history(false)]=],
  },
}
