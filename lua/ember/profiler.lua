-- ember.profiler — where the time of a piece of code goes, op by op and line by line
-- (PyTorch's torch.profiler, CPU side).
--
--   local prof = ember.profiler.profile({record_shapes =, profile_memory =}, fn, ...)
--   print(prof:key_averages():table({sort_by = "self_cpu_time_total", row_limit = 10}))
--   print(prof:lines():table({row_limit = 10}))      -- the same time by the Lua line that ran it
--   prof:export_chrome_trace("trace.json")          -- for Perfetto or chrome://tracing
--   ember.profiler.record_function("step", fn, ...)  -- a named range of your own
--
-- An op is a call from Lua into a C function that is not part of Lua's standard library:
-- ember's functions, tensor methods and operators. A Lua hook on calls and returns times
-- each one (its self time leaves out the ops it calls back into, as ember.no_grad's
-- function or a hook); a backward pass is split into its nodes (MulBackward, ...) by the
-- engine's node hook. Each op is charged to the line of the first calling frame outside
-- ember's Lua library, so an nn.Linear's matmul counts at the line that called the model.
-- Time outside ops (Lua code between them) is reported as such, so the rows sum to the
-- wall time. Coroutines created while profiling are hooked too.
--
-- Ops on a CUDA device are timed on the host (their launch) unless synchronize = true
-- makes each op wait for the device. With activities = {"cpu", "cuda"} each op also gets its
-- device time: a pair of CUDA events recorded on the device's stream around it, read when
-- the profile stops ("CUDA total" and "CUDA time avg"; in the Chrome trace, a track of the
-- stream).
-- Once the CUDA backend is loaded every op (and backward node) is also an NVTX range while
-- recording, so Nsight Systems (nsys profile ember ...) shows ember's ops on its timeline.
local ember = require "ember"
local errors = require "ember.errors"

local M = {}

local clock = ember.wall_time
local range_push, range_pop = ember._range_push, ember._range_pop
local getinfo, sethook, gethook = debug.getinfo, debug.sethook, debug.gethook

-- operators reach their C functions as metamethods
local metamethod_names = {
  __add = "add", __sub = "sub", __mul = "mul", __div = "div", __mod = "remainder", __pow = "pow",
  __unm = "neg", __idiv = "floor_divide", __band = "bitwise_and", __bor = "bitwise_or",
  __bxor = "bitwise_xor", __shl = "bitwise_left_shift", __shr = "bitwise_right_shift",
  __bnot = "bitwise_not", __eq = "eq", __lt = "lt", __le = "le", __index = "index",
  __newindex = "index_put_", __len = "len", __call = "call", __concat = "concat",
  __tostring = "tostring", __gc = "gc", __close = "close",
}

-- The ops: ember's C functions, named as in the tensor methods, the module, the tensor
-- metatable (operators) and the submodules already loaded (cuda.synchronize). Made when
-- a profile starts.
local function op_names()
  local names = {}
  local function add(tbl, prefix)
    local k, v = next(tbl)
    while k ~= nil do
      if type(k) == "string" and type(v) == "function" and names[v] == nil
         and getinfo(v, "S").what == "C" then
        names[v] = prefix .. (metamethod_names[k] or k)
      end
      k, v = next(tbl, k)
    end
  end
  add(ember.Tensor, "")
  add(ember, "")
  add(getmetatable(ember.zeros(0)), "")
  local k, v = next(ember)
  while k ~= nil do
    if type(k) == "string" and type(v) == "table" and k ~= "Tensor" then add(v, k .. ".") end
    k, v = next(ember, k)
  end
  names[clock] = nil
  names[ember._range_push], names[ember._range_pop] = nil, nil
  return names
end

-- the backward passes, which the engine's node hook splits into nodes
local passes = {backward = true, _autograd_grad = true, _autograd_backward = true}

-- the folder ember/*.lua is loaded from: frames there are the library's
local lib_prefix = getinfo(1, "S").source:match("^(@.*[/\\])ember[/\\]profiler%.lua$")

local function user_line(level)
  while true do
    local info = getinfo(level, "Sl")
    if not info then return "?" end
    if info.what ~= "C" and not (lib_prefix and info.source:sub(1, #lib_prefix) == lib_prefix) then
      return info.short_src .. ":" .. (info.currentline or 0)
    end
    level = level + 1
  end
end

local function shape_of(v)
  if ember.is_tensor(v) then return "[" .. table.concat(v.shape, ", ") .. "]" end
  return nil
end

-- the shapes of the tensors among a C function's arguments (level: the function)
local function arg_shapes(level)
  local parts = {}
  for i = 1, 8 do
    local name, v = debug.getlocal(level, i)
    if not name then break end
    parts[#parts + 1] = shape_of(v) or "-"
  end
  while parts[#parts] == "-" do parts[#parts] = nil end
  return "[" .. table.concat(parts, ", ") .. "]"
end

local function bytes_now()
  local cpu, cuda = ember._bytes_in_use()
  return cpu + cuda
end

---------------------------------------------------------------------------
-- A profile: the events of one run

local Profile = {__name = "ember.profiler.Profile"}
Profile.__index = Profile

local options = {record_shapes = "boolean", profile_memory = "boolean", with_stack = "boolean",
                 synchronize = "boolean", activities = "table"}

local function check_options(opts)
  for k, v in pairs(opts) do
    local want = options[k]
    if not want then
      errors.raisef("profiler.profile: unknown option '%s' (expected activities, record_shapes, "
                    .. "profile_memory, with_stack, synchronize)", tostring(k))
    end
    if type(v) ~= want then errors.raisef("profiler.profile: %s must be a %s, got %s", k, want, type(v)) end
  end
  local cuda = false
  for _, a in ipairs(opts.activities or {}) do
    if a == "cuda" then
      cuda = true
    elseif a ~= "cpu" then
      errors.raisef("profiler.profile: unknown activity %s (expected \"cpu\" or \"cuda\")", tostring(a))
    end
  end
  return cuda
end

-- the CUDA device whose stream the events go on, when the CUDA activity is asked for and a
-- device is there (as PyTorch, no error without one: there is nothing to time)
local function event_device()
  local cuda = ember.cuda
  if not (cuda and cuda.is_available()) then return nil end
  return "cuda"
end

local active          -- the profile being recorded, if any

function Profile:_hook(event)
  local t = clock()
  local func = getinfo(3, "f").func  -- 1: this method, 2: the hook, 3: the function called or returning
  local name = self._names[func]
  if not name then
    self._overhead = self._overhead + (clock() - t)
    return
  end
  local stacks = self._stacks
  local co = coroutine.running()
  local stack = stacks[co]
  if not stack then stack = {}; stacks[co] = stack end
  if event == "call" or event == "tail call" then
    local f = {func = func, name = name, child = 0, line = user_line(5)}
    if self.record_shapes then f.shapes = arg_shapes(4) end
    if self.profile_memory then f.mem0 = bytes_now() end
    if passes[name] then ember._profile_take() end
    if self._gpu then f.ev0 = self:_record() end
    range_push(name)
    stack[#stack + 1] = f
    -- what the hook spends is not the op's: its frame notes the total so far
    self._overhead = self._overhead + (clock() - t)
    f.over0 = self._overhead
    f.t0 = clock()
    return
  end
  -- a return: the frame of this function (frames above it ended by an error)
  local k = #stack
  while k > 0 and stack[k].func ~= func do k = k - 1 end
  if k == 0 then return end
  local f = stack[k]
  for i = #stack, k, -1 do stack[i] = nil end
  range_pop()
  local ev1 = f.ev0 and self:_record()
  if self.synchronize and self._cuda then
    self._cuda.synchronize()
    t = clock()
  end
  local t1 = t
  local dt = t1 - f.t0 - (self._overhead - f.over0)
  local parent = stack[k - 1]
  if parent then parent.child = parent.child + dt end
  local ev = {name = f.name, t0 = f.t0, t1 = t1, dur = dt, self = dt - f.child, line = f.line, shapes = f.shapes}
  if f.mem0 then ev.mem = bytes_now() - f.mem0 end
  if f.ev0 and ev1 then ev.ev0, ev.ev1 = f.ev0, ev1 end
  local events = self._events
  if passes[f.name] then
    -- the pass's nodes, each a child of it
    local names, begins, ends = ember._profile_take()
    local inside = 0
    for i = 1, #names do
      local d = ends[i] - begins[i]
      inside = inside + d
      events[#events + 1] = {name = names[i], t0 = begins[i], t1 = ends[i], dur = d, self = d, line = f.line,
                             node = true}
    end
    ev.self = ev.self - inside
  end
  events[#events + 1] = ev
  self._overhead = self._overhead + (clock() - t1)
end

-- a CUDA event recorded now on the profile's device (nil where it cannot be: during a
-- CUDA graph's capture)
function Profile:_record()
  local ev = self._cuda_mod.Event({enable_timing = true, device = self._gpu})
  if not pcall(ev.record, ev) then return nil end
  return ev
end

-- the ops' device times from their events, once the device has done them: ev.cuda (the
-- span between the events, seconds) and ev.cuda_t0 (its start from the profile's start)
function Profile:_read_events()
  if not self._base then return end
  local last = self:_record()
  if not last then return end
  last:synchronize()
  for _, e in ipairs(self._events) do
    if e.ev0 then
      e.cuda = e.ev0:elapsed_time(e.ev1) / 1e3
      e.cuda_t0 = self._base:elapsed_time(e.ev0) / 1e3
      e.ev0, e.ev1 = nil, nil
    end
  end
  self._base = nil
end

--- prof:start() starts recording (ember.profiler.profile(opts) makes the profile);
--- returns prof. Only one profile records at a time.
function Profile:start()
  if active then errors.raise("profiler: a profile is already recording (stop it first)") end
  if self._running then errors.raise("profiler: this profile is already recording") end
  active = self
  self._running = true
  self._events, self._stacks, self._names, self._overhead = {}, {}, op_names(), 0
  self._cuda = self.synchronize and ember.cuda and ember.cuda.is_available() and ember.cuda or nil
  self._gpu = self.cuda_activity and event_device() or nil
  if self._gpu then
    self._cuda_mod = ember.cuda
    self._base = self:_record()
    if not self._base then self._gpu = nil end
  end
  local hook = function(event) self:_hook(event) end
  self._hook_fn = hook
  self._saved_hook = table.pack(gethook())
  -- coroutines made while recording are hooked too
  self._create, self._wrap = coroutine.create, coroutine.wrap
  local create = self._create
  coroutine.create = function(fn)
    local co = create(fn)
    sethook(co, hook, "cr")
    return co
  end
  coroutine.wrap = function(fn)
    local co = coroutine.create(fn)
    return function(...)
      local r = table.pack(coroutine.resume(co, ...))
      if not r[1] then error(r[2], 0) end
      return table.unpack(r, 2, r.n)
    end
  end
  ember._profile_nodes(true)
  self._t0 = clock()
  sethook(hook, "cr")
  return self
end

--- prof:stop() ends the recording; returns prof.
function Profile:stop()
  if not self._running then return self end
  sethook()
  self._t1 = clock()
  ember._profile_nodes(false)
  coroutine.create, coroutine.wrap = self._create, self._wrap
  local saved = self._saved_hook
  if saved[1] then sethook(saved[1], saved[2], saved[3]) end
  self._running = false
  active = nil
  self:_read_events()
  -- events still open (the code raised an error inside an op) are dropped
  return self
end

Profile.__close = function(self) self:stop() end

--- prof:wall_time() -> seconds from start to stop
function Profile:wall_time()
  return (self._t1 or clock()) - (self._t0 or clock()) - (self._overhead or 0)
end

--- prof:overhead() -> seconds the profiler's hook itself took (left out of every figure)
function Profile:overhead() return self._overhead or 0 end

--- prof:events() -> the list of recorded ops and backward nodes, in the order they ended:
--- {name =, t0 =, t1 =, self =, line =, shapes =, mem =, node =}
function Profile:events() return self._events or {} end

---------------------------------------------------------------------------
-- Tables

local Table = {__name = "ember.profiler.Table"}
Table.__index = Table

local function fmt_time(s)
  if s < 1e-3 then return string.format("%.3fus", s * 1e6) end
  if s < 1 then return string.format("%.3fms", s * 1e3) end
  return string.format("%.3fs", s)
end

local function fmt_bytes(b)
  local a = math.abs(b)
  if a < 1024 then return string.format("%d b", b) end
  if a < 1024 * 1024 then return string.format("%.2f Kb", b / 1024) end
  if a < 1024 ^ 3 then return string.format("%.2f Mb", b / 1024 ^ 2) end
  return string.format("%.2f Gb", b / 1024 ^ 3)
end

local sort_keys = {
  self_cpu_time_total = "self", cpu_time_total = "total", count = "calls", calls = "calls",
  cpu_time = "avg", self_cpu_memory_usage = "mem", cpu_memory_usage = "mem",
  cuda_time_total = "cuda", self_cuda_time_total = "cuda", cuda_time = "cuda_avg",
}

local function sort_value(r, key)
  if key == "avg" then return r.total / r.calls end
  if key == "cuda_avg" then return r.cuda / r.calls end
  return r[key] or 0
end

-- rows: {key, name, calls, self, total, mem, shapes, cuda}
local function make_table(rows, title, wall, lua_time, has_mem, has_shapes)
  local has_cuda = false
  for _, r in ipairs(rows) do if r.cuda > 0 then has_cuda = true end end
  return setmetatable({rows = rows, title = title, wall = wall, lua_time = lua_time,
                       has_mem = has_mem, has_shapes = has_shapes, has_cuda = has_cuda}, Table)
end

--- tab:table([{sort_by = "self_cpu_time_total", row_limit = 100}]) -> the text of the table
function Table:table(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "sort_by" and k ~= "row_limit" then
      errors.raisef("table: unknown option '%s' (expected sort_by, row_limit)", tostring(k))
    end
  end
  local key = sort_keys[opts.sort_by or "self_cpu_time_total"]
  if not key then
    errors.raisef("table: cannot sort by '%s' (expected self_cpu_time_total, cpu_time_total, cpu_time, "
                  .. "count, self_cpu_memory_usage, cuda_time_total, cuda_time)", tostring(opts.sort_by))
  end
  local rows = {}
  for i, r in ipairs(self.rows) do rows[i] = r end
  table.sort(rows, function(a, b)
    local x, y = sort_value(a, key), sort_value(b, key)
    if x ~= y then return x > y end
    return a.name < b.name
  end)
  local limit = opts.row_limit or 100
  local self_total = 0
  for _, r in ipairs(self.rows) do self_total = self_total + r.self end
  local denom = self_total + (self.lua_time or 0)
  if denom <= 0 then denom = 1 end
  local headers = {self.title, "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"}
  if self.has_cuda then
    headers[#headers + 1] = "CUDA total"
    headers[#headers + 1] = "CUDA time avg"
  end
  if self.has_mem then headers[#headers + 1] = "CPU Mem" end
  if self.has_shapes then headers[#headers + 1] = "Input Shapes" end
  local out = {}
  for i = 1, math.min(limit, #rows) do
    local r = rows[i]
    local row = {r.name, string.format("%.2f%%", 100 * r.self / denom), fmt_time(r.self),
                 string.format("%.2f%%", 100 * r.total / denom), fmt_time(r.total),
                 fmt_time(r.total / r.calls), tostring(r.calls)}
    if self.has_cuda then
      row[#row + 1] = fmt_time(r.cuda)
      row[#row + 1] = fmt_time(r.cuda / r.calls)
    end
    if self.has_mem then row[#row + 1] = fmt_bytes(r.mem or 0) end
    if self.has_shapes then row[#row + 1] = r.shapes or "" end
    out[#out + 1] = row
  end
  local widths = {}
  for c, h in ipairs(headers) do
    widths[c] = #h
    for _, row in ipairs(out) do widths[c] = math.max(widths[c], #row[c]) end
  end
  local function line(cells)
    local parts = {}
    for c, v in ipairs(cells) do
      parts[c] = c == 1 and v .. string.rep(" ", widths[c] - #v) or string.rep(" ", widths[c] - #v) .. v
    end
    return table.concat(parts, "  ")
  end
  local rule = {}
  for c = 1, #headers do rule[c] = string.rep("-", widths[c]) end
  local text = {line(rule), line(headers), line(rule)}
  for _, row in ipairs(out) do text[#text + 1] = line(row) end
  text[#text + 1] = line(rule)
  text[#text + 1] = "Self CPU time total: " .. fmt_time(self_total)
  if self.has_cuda then
    local cuda_total = 0
    for _, r in ipairs(self.rows) do cuda_total = cuda_total + r.cuda end
    text[#text + 1] = "CUDA time total (the ops' spans between their events): " .. fmt_time(cuda_total)
  end
  if self.lua_time then
    text[#text + 1] = "Lua between ops: " .. fmt_time(self.lua_time) .. "; wall time: " .. fmt_time(self.wall)
  end
  return table.concat(text, "\n")
end

Table.__tostring = function(t) return t:table() end

--- tab:rows() -> the rows: {name =, calls =, self =, total =, mem =, shapes =} (seconds, bytes)
function Table:rows_list() return self.rows end

-- totals without double counting an op that calls itself (an event inside one of the
-- same key): its total counts the outer call only
local function aggregate(events, key_of)
  local rows, order = {}, {}
  local open = {}
  for _, e in ipairs(events) do
    local key = key_of(e)
    local r = rows[key]
    if not r then
      r = {key = key, name = e.key_name or key, calls = 0, self = 0, total = 0, mem = 0, shapes = e.shapes,
           cuda = 0}
      rows[key] = r
      order[#order + 1] = r
    end
    r.calls = r.calls + 1
    r.self = r.self + e.self
    r.mem = r.mem + (e.mem or 0)
    r.cuda = r.cuda + (e.cuda or 0)
    -- events end in order: an earlier-ended event of the same key inside this one is nested
    local inner = open[key]
    local nested = 0
    if inner then
      for i = #inner, 1, -1 do
        local x = inner[i]
        if x.t0 >= e.t0 and x.t1 <= e.t1 then
          nested = nested + x.dur
          table.remove(inner, i)
        end
      end
    else
      inner = {}
      open[key] = inner
    end
    inner[#inner + 1] = e
    r.total = r.total + e.dur - nested
  end
  return order
end

local function lua_time(self)
  local s = 0
  for _, e in ipairs(self:events()) do s = s + e.self end
  return math.max(0, self:wall_time() - s)
end

--- prof:key_averages([{group_by_input_shape = false}]) -> a table of the ops by name
function Profile:key_averages(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "group_by_input_shape" then
      errors.raisef("key_averages: unknown option '%s' (expected group_by_input_shape)", tostring(k))
    end
  end
  local by_shape = opts.group_by_input_shape
  if by_shape and not self.record_shapes then
    errors.raise("key_averages: group_by_input_shape needs a profile made with record_shapes = true")
  end
  local rows = aggregate(self:events(), function(e)
    if by_shape then
      e.key_name = e.name
      return e.name .. " " .. (e.shapes or "")
    end
    return e.name
  end)
  if by_shape then for _, r in ipairs(rows) do r.name = r.name end end
  return make_table(rows, "Name", self:wall_time(), lua_time(self), self.profile_memory, by_shape)
end

--- prof:lines() -> a table of the ops' time by the Lua line that ran them (the first
--- frame outside ember's library)
function Profile:lines()
  local rows = aggregate(self:events(), function(e) return e.line end)
  return make_table(rows, "Lua line", self:wall_time(), lua_time(self), self.profile_memory, false)
end

--- prof:export_chrome_trace(path): the events as Chrome's trace format (JSON), which
--- Perfetto (ui.perfetto.dev) and chrome://tracing open: ops and backward nodes as complete
--- events with their Lua line (and shapes), memory as a counter with profile_memory
function Profile:export_chrome_trace(path)
  if type(path) ~= "string" then
    errors.raise("export_chrome_trace: path must be a string, got " .. type(path))
  end
  errors.check_path("export_chrome_trace", "path", path)
  local json_string = require("ember.serialize")._json_string
  local t0 = self._t0 or 0
  local parts = {}
  local mem, any_cuda = 0, false
  for _, e in ipairs(self:events()) do
    local args = '"Lua line": ' .. json_string(e.line or "?")
    if e.shapes then args = args .. ', "Input Shapes": ' .. json_string(e.shapes) end
    parts[#parts + 1] = string.format('{"name": %s, "cat": %s, "ph": "X", "ts": %.3f, "dur": %.3f, '
                                      .. '"pid": 1, "tid": %d, "args": {%s}}',
                                      json_string(e.name), e.node and '"backward"' or '"cpu_op"',
                                      (e.t0 - t0) * 1e6, (e.t1 - e.t0) * 1e6, e.node and 2 or 1, args)
    if e.cuda then   -- on the stream's track, from the event recorded as the profile started
      any_cuda = true
      parts[#parts + 1] = string.format('{"name": %s, "cat": "cuda", "ph": "X", "ts": %.3f, "dur": %.3f, '
                                        .. '"pid": 1, "tid": 3, "args": {"Lua line": %s}}',
                                        json_string(e.name), e.cuda_t0 * 1e6, e.cuda * 1e6,
                                        json_string(e.line or "?"))
    end
    if e.mem and e.mem ~= 0 then
      mem = mem + e.mem
      parts[#parts + 1] = string.format('{"name": "memory allocated", "ph": "C", "ts": %.3f, "pid": 1, '
                                        .. '"args": {"bytes": %d}}', (e.t1 - t0) * 1e6, mem)
    end
  end
  parts[#parts + 1] = '{"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "ops"}}'
  parts[#parts + 1] = '{"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "backward nodes"}}'
  if any_cuda then
    parts[#parts + 1] = '{"name": "thread_name", "ph": "M", "pid": 1, "tid": 3, "args": {"name": "cuda stream"}}'
  end
  local f, err = io.open(path, "w")
  if not f then errors.raise("export_chrome_trace: cannot write " .. path .. ": " .. tostring(err)) end
  f:write('{"displayTimeUnit": "ms", "traceEvents": [\n', table.concat(parts, ",\n"), "\n]}\n")
  f:close()
end

---------------------------------------------------------------------------
-- Entry points

M.ProfilerActivity = {CPU = "cpu", CUDA = "cuda"}

--- profile([opts]) -> a profile to start (prof:start(), prof:stop(), or `local p <close> =
--- profile(opts):start()`); profile([opts,] fn, ...) -> the profile of fn(...), then fn's
--- results. opts: record_shapes, profile_memory, with_stack (lines are always kept),
--- synchronize (wait for the CUDA device after each op), activities ({"cpu"})
function M.profile(opts, fn, ...)
  local args = table.pack(...)
  if type(opts) == "function" then
    args = table.pack(fn, ...)
    opts, fn = {}, opts
  end
  opts = opts or {}
  if type(opts) ~= "table" then errors.raise("profiler.profile: expected an options table or a function, got " .. type(opts)) end
  local cuda_activity = check_options(opts)
  local p = setmetatable({record_shapes = opts.record_shapes, profile_memory = opts.profile_memory,
                          synchronize = opts.synchronize, cuda_activity = cuda_activity}, Profile)
  if fn == nil then return p end
  if type(fn) ~= "function" then errors.raise("profiler.profile: fn must be a function, got " .. type(fn)) end
  p:start()
  local r = table.pack(pcall(fn, table.unpack(args, 1, args.n)))
  p:stop()
  if not r[1] then error(r[2], 0) end
  return p, table.unpack(r, 2, r.n)
end

--- record_function(name, fn, ...) -> fn's results: a named range in the profile being
--- recorded (a row of its own, its ops inside it); just fn(...) when none records
function M.record_function(name, fn, ...)
  if type(name) ~= "string" then errors.raise("record_function: name must be a string, got " .. type(name)) end
  if type(fn) ~= "function" then errors.raise("record_function: fn must be a function, got " .. type(fn)) end
  local p = active
  if not p then return fn(...) end
  local co = coroutine.running()
  local stack = p._stacks[co] or {}
  p._stacks[co] = stack
  local f = {func = fn, name = name, child = 0, line = user_line(3), over0 = p._overhead}
  stack[#stack + 1] = f
  f.t0 = clock()
  local r = table.pack(pcall(fn, ...))
  local t1 = clock()
  for i = #stack, 1, -1 do
    if stack[i] == f then
      for j = #stack, i, -1 do stack[j] = nil end
      break
    end
  end
  local dt = t1 - f.t0 - (p._overhead - f.over0)
  local parent = stack[#stack]
  if parent then parent.child = parent.child + dt end
  p._events[#p._events + 1] = {name = name, t0 = f.t0, t1 = t1, dur = dt, self = dt - f.child, line = f.line}
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

--- _shell(fn): the shell's :profile — runs fn (the code, compiled) profiled and prints
--- the ops and the lines that took the most time
function M._shell(fn)
  local p = M.profile({}, fn)
  print(p:key_averages():table({row_limit = 15}))
  print()
  print(p:lines():table({row_limit = 10}))
  return p
end

return M
