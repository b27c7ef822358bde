-- ember.memory — who holds the memory: live tensors by the Lua line that made them, and
-- the bytes held over time (PyTorch's torch.cuda.memory._record_memory_history and
-- memory snapshots, for the CPU and CUDA alike).
--
--   ember.memory.record_history(true [, {max_entries = 1000000}])   start recording
--   ember.memory.snapshot()      -> {groups = {{site =, node =, device =, count =, bytes =}, ...},
--                                    tracked = {cpu =, cuda =}, in_use = {cpu =, cuda =}, cuda = stats}
--   print(ember.memory.top(10))  -- the same as a table; :mem top in the shell
--   ember.memory.history()       -> {t = {...}, cpu = {...}, cuda = {...}, delta =, site =}
--   ember.memory.history_by_line([n])   -> the bytes each of the n largest lines held over time
--   ember.memory.plot_history([path] [, {by = "line", top = 8}])   drawn with ember.plot
--
-- Only storages made while recording are tracked (in_use counts every one). A storage
-- made by a backward pass counts at the line of the backward() call, with its node; one
-- never handed to Lua (an op's own temporary, freed inside it) counts as "(inside an op)".
-- An out-of-memory error names the lines holding the most while recording.
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

-- the folder ember/*.lua is loaded from: lines there are the library's
local lib_prefix = debug.getinfo(1, "S").source:match("^(@.*[/\\])ember[/\\]memory%.lua$")

local recording = false

--- record_history(enabled [, {max_entries = 1000000}]): start (clearing what was
--- recorded) or stop recording; max_entries bounds history()'s length
function M.record_history(enabled, opts)
  if type(enabled) ~= "boolean" then
    errors.raise("memory.record_history: enabled must be a boolean, got " .. type(enabled))
  end
  opts = opts or {}
  if type(opts) ~= "table" then errors.raise("memory.record_history: expected an options table, got " .. type(opts)) end
  for k, v in pairs(opts) do
    if k ~= "max_entries" then
      errors.raisef("memory.record_history: unknown option '%s' (expected max_entries)", tostring(k))
    end
    if math.type(v) ~= "integer" or v < 0 then
      errors.raise("memory.record_history: max_entries must be a non-negative integer, got " .. tostring(v))
    end
  end
  ember._mem_record(enabled, opts.max_entries or 1000000, lib_prefix)
  recording = enabled
end

--- is_recording() -> whether record_history is on
function M.is_recording() return recording end

local function cuda_stats()
  local cuda = ember.cuda
  if not (cuda and cuda.is_available() and cuda.is_initialized and cuda.is_initialized()) then return nil end
  return {allocated = cuda.memory_allocated(), reserved = cuda.memory_reserved(),
          max_allocated = cuda.max_memory_allocated()}
end

--- snapshot() -> the live tracked storages grouped by the line that made them (largest
--- first), the bytes tracked and held per device, and the CUDA allocator's figures
function M.snapshot()
  if not recording then
    errors.raise("memory.snapshot: nothing recorded (call ember.memory.record_history(true) first)")
  end
  collectgarbage()      -- tensors no longer referenced are freed, not counted
  local groups, cpu, cuda = ember._mem_snapshot()
  table.sort(groups, function(a, b)
    if a.bytes ~= b.bytes then return a.bytes > b.bytes end
    return a.site < b.site
  end)
  local in_cpu, in_cuda = ember._bytes_in_use()
  local s = {groups = groups, tracked = {cpu = cpu, cuda = cuda}, in_use = {cpu = in_cpu, cuda = in_cuda},
             cuda = cuda_stats()}
  if s.cuda and s.cuda.reserved > 0 then
    s.cuda.fragmentation = 1 - s.cuda.allocated / s.cuda.reserved
  end
  return s
end

local function mb(b) return string.format("%.2f MB", b / 1e6) end

--- top([n = 10]) -> text: the n lines holding the most memory, then the totals
function M.top(n)
  n = n or 10
  if math.type(n) ~= "integer" or n < 1 then errors.raise("memory.top: n must be a positive integer") end
  local s = M.snapshot()
  local rows = {{"line", "made by", "device", "tensors", "bytes"}}
  for i = 1, math.min(n, #s.groups) do
    local g = s.groups[i]
    rows[#rows + 1] = {g.site, g.node or "", g.device, tostring(g.count), mb(g.bytes)}
  end
  local w = {}
  for _, r in ipairs(rows) do
    for c, v in ipairs(r) do w[c] = math.max(w[c] or 0, #v) end
  end
  local out = {}
  for _, r in ipairs(rows) do
    local cells = {}
    for c, v in ipairs(r) do
      cells[c] = c >= 4 and string.rep(" ", w[c] - #v) .. v or v .. string.rep(" ", w[c] - #v)
    end
    out[#out + 1] = table.concat(cells, "  ")
  end
  out[#out + 1] = string.format("tracked: %s on the CPU, %s on CUDA; held in all: %s on the CPU, %s on CUDA",
                                mb(s.tracked.cpu), mb(s.tracked.cuda), mb(s.in_use.cpu), mb(s.in_use.cuda))
  if s.cuda then
    out[#out + 1] = string.format("CUDA allocator: %s allocated, %s reserved (%.0f %% not in use), peak %s",
                                  mb(s.cuda.allocated), mb(s.cuda.reserved), 100 * (s.cuda.fragmentation or 0),
                                  mb(s.cuda.max_allocated))
  end
  return table.concat(out, "\n")
end

--- history() -> {t = {seconds}, cpu = {bytes}, cuda = {bytes}, delta = {bytes}, site = {lines}}:
--- after each storage made or freed while recording (t from the first entry), the tracked
--- bytes per device, the change (made > 0, freed < 0) and the line of that storage
function M.history()
  local t, cpu, cuda, delta, site = ember._mem_history()
  local t0 = t[1] or 0
  for i = 1, #t do t[i] = t[i] - t0 end
  return {t = t, cpu = cpu, cuda = cuda, delta = delta, site = site}
end

local function check_top(op, n)
  if n ~= nil and (math.type(n) ~= "integer" or n < 1) then
    errors.raisef("%s: n must be a positive integer, got %s", op, tostring(n))
  end
  return n or 8
end

--- history_by_line([n = 8]) -> {{site =, peak =, t = {seconds}, bytes = {bytes}}, ...}: the
--- bytes held by storages of each line over time (a point at each change of that line), for
--- the n lines with the highest peak (highest first), then {site = "(other lines)", ...} for
--- the rest together when there are more
function M.history_by_line(n)
  n = check_top("memory.history_by_line", n)
  local h = M.history()
  local held, peak, order = {}, {}, {}
  for i = 1, #h.t do
    local s = h.site[i]
    if held[s] == nil then held[s], peak[s] = 0, 0; order[#order + 1] = s end
    held[s] = held[s] + h.delta[i]
    if held[s] > peak[s] then peak[s] = held[s] end
  end
  table.sort(order, function(a, b)
    if peak[a] ~= peak[b] then return peak[a] > peak[b] end
    return a < b
  end)
  local out, slot = {}, {}
  for k, s in ipairs(order) do
    if k <= n then
      out[k] = {site = s, peak = peak[s], t = {}, bytes = {}}
      slot[s] = out[k]
    end
  end
  local other = #order > n and {site = "(other lines)", peak = 0, t = {}, bytes = {}} or nil
  local now = {}
  for i = 1, #h.t do
    local s = h.site[i]
    local series = slot[s] or other
    local key = slot[s] and s or "(other lines)"
    now[key] = (now[key] or 0) + h.delta[i]
    series.t[#series.t + 1] = h.t[i]
    series.bytes[#series.bytes + 1] = now[key]
    if now[key] > series.peak then series.peak = now[key] end
  end
  out[#out + 1] = other
  return out
end

local function scaled(v)
  local r = {}
  for i = 1, #v do r[i] = v[i] / 1e6 end
  return r
end

--- plot_history([path] [, {by = "line", top = 8}]) -> the figure: the tracked MB over time,
--- a line for each of the top lines that held the most (by = "line", the default) or for
--- each device (by = "device"), drawn inline, or saved to path (.png, .svg, .pdf, .txt)
function M.plot_history(path, opts)
  if type(path) == "table" and opts == nil then path, opts = nil, path end
  if path ~= nil and type(path) ~= "string" then
    errors.raise("memory.plot_history: path must be a string, got " .. type(path))
  end
  opts = opts or {}
  if type(opts) ~= "table" then errors.raise("memory.plot_history: expected an options table, got " .. type(opts)) end
  for k in pairs(opts) do
    if k ~= "by" and k ~= "top" then
      errors.raisef("memory.plot_history: unknown option '%s' (expected by, top)", tostring(k))
    end
  end
  local by = opts.by or "line"
  if by ~= "line" and by ~= "device" then
    errors.raisef("memory.plot_history: by must be \"line\" or \"device\", got %s", tostring(by))
  end
  local top = check_top("memory.plot_history", opts.top)
  local h = M.history()
  if #h.t == 0 then errors.raise("memory.plot_history: nothing recorded") end
  local plot = ember.plot
  local fig = plot.figure({title = by == "line" and "memory held, by the line that made it" or "memory held",
                           xlabel = "seconds", ylabel = "MB"})
  local any_cuda = false
  for i = 1, #h.cuda do if h.cuda[i] ~= 0 then any_cuda = true break end end
  if by == "line" then
    for _, series in ipairs(M.history_by_line(top)) do
      fig:line(series.t, scaled(series.bytes), {label = series.site})
    end
    local total = {}
    for i = 1, #h.t do total[i] = h.cpu[i] + h.cuda[i] end
    fig:line(h.t, scaled(total), {label = "total"})
  else
    fig:line(h.t, scaled(h.cpu), {label = "cpu"})
    if any_cuda then fig:line(h.t, scaled(h.cuda), {label = "cuda"}) end
  end
  if path then fig:save(path) else fig:show() end
  return fig
end

--- _shell_top(): the shell's :mem top
function M._shell_top()
  if not recording then
    print("nothing recorded: ember.memory.record_history(true) starts recording which line makes each tensor")
    return
  end
  print(M.top(10))
end

return M
