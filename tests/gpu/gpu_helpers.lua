-- gpu_helpers.lua — what the GPU suites (tests/gpu/*_spec.lua) share: the
-- device under test, the skip guard, and comparisons of a result computed on
-- that device with the CPU backend's result for the same inputs.
--
-- EMBER_GPU_TEST_DEVICE picks the device under test: "cuda" (the default),
-- "cuda:N", or "cpu", which runs every suite against the CPU backend itself.
-- The "cpu" mode checks the test code on a machine without a GPU; tests that
-- only mean something on a GPU (memory statistics, events, mixing devices)
-- are pending there.
--
-- Busted's globals (it, pending, assert.are) do not reach a required module,
-- so the helpers fail with error() and a spec file registers its own pending
-- tests:
--   local g = require "gpu_helpers"
--   local skip = g.skip_reason()
--   if skip then pending(skip) return end
local ember = require "ember"

local M = {}

local requested = os.getenv("EMBER_GPU_TEST_DEVICE")
if requested == "" then requested = nil end
M.DEV = requested or "cuda"
if M.DEV ~= "cpu" and M.DEV ~= "cuda" and not M.DEV:match("^cuda:%d+$") then
  error("EMBER_GPU_TEST_DEVICE: expected cpu, cuda or cuda:N, got '" .. M.DEV .. "'")
end
M.on_cpu = M.DEV == "cpu"
M.is_cuda = not M.on_cpu
-- what t.device reads for a tensor on the device under test
M.devname = M.on_cpu and "cpu" or (M.DEV == "cuda" and "cuda:0" or M.DEV)

-- nil when the suites can run; else the one line a skipped file reports
function M.skip_reason()
  if M.on_cpu then return nil end
  local ok, why = ember.cuda.is_available()
  if not ok then return "no GPU: " .. tostring(why) end
  local index = tonumber(M.DEV:match("^cuda:(%d+)$") or "0")
  if index >= ember.cuda.device_count() then
    return ("no GPU: EMBER_GPU_TEST_DEVICE=%s but this machine has %d CUDA device(s)")
      :format(M.DEV, ember.cuda.device_count())
  end
  return nil
end

-- it(name, fn) on a GPU; under EMBER_GPU_TEST_DEVICE=cpu one pending test
-- saying why. Usage: local cuda_it = g.cuda_it(it, pending)
function M.cuda_it(it, pending)
  return function(name, fn)
    if M.on_cpu then
      pending(name .. " (skipped: needs a CUDA device, EMBER_GPU_TEST_DEVICE=cpu)")
    else
      it(name, fn)
    end
  end
end

-- Whether the device under test is the emulated one (EMBER_CUDA=emu,
-- kernels/emu/): the CUDA backend's kernels run on the CPU, so readings of
-- real hardware (NVML's utilization and power, timings) mean nothing there.
M.emulated = M.is_cuda and os.getenv("EMBER_CUDA") == "emu"

-- it(name, fn) on a real GPU; pending on the CPU backend and on the emulated
-- device, saying why (the reason: what only hardware shows).
-- Usage: local gpu_it = g.real_gpu_it(it, pending, "why")
function M.real_gpu_it(it, pending, why)
  local cuda_it = M.cuda_it(it, pending)
  return function(name, fn)
    if M.emulated then
      pending(name .. " (skipped on the emulated device: " .. why .. ")")
    else
      cuda_it(name, fn)
    end
  end
end

-- waits for the device's queued work (nothing to wait for on the CPU)
function M.synchronize()
  if M.is_cuda then ember.cuda.synchronize(M.DEV) end
end

-- A copy of t on the device under test: always a new tensor, so that an
-- in-place op on the copy never touches the CPU reference (t:to("cpu") of a
-- CPU tensor would return t itself). Other values pass through unchanged.
function M.dev(t)
  if not ember.is_tensor(t) then return t end
  if M.on_cpu then return t:detach():clone() end
  return t:detach():to(M.DEV)
end

-- a fresh leaf on the device with t's values that requires grad
function M.leaf(t)
  return M.dev(t):requires_grad_()
end

-- ---- comparisons ------------------------------------------------------------

-- default tolerances (relative, absolute) per dtype; integer and bool exact
local TOL = {
  float32 = {1e-5, 1e-6},
  float64 = {1e-12, 1e-12},
  float16 = {2e-3, 1e-4},
  bfloat16 = {1e-2, 1e-3},
}
function M.tol(dtype) local t = TOL[dtype] return t and t[1] or 0, t and t[2] or 0 end

local function flatten(v, out)
  if type(v) ~= "table" then out[#out + 1] = v return out end
  for i = 1, #v do flatten(v[i], out) end
  return out
end
M.flatten = flatten

local function shape_str(s) return "[" .. table.concat(s, ", ") .. "]" end

local function fmt(v)
  if math.type(v) == "float" then return ("%.17g"):format(v) end
  return tostring(v)
end

-- Why got (a tensor on the device under test) does not match want (a CPU
-- tensor), or nil when it does: device, dtype, shape, and values within
--   |got - want| <= atol + rtol * |want|
-- NaN matches NaN, infinities and integers must be equal. opts:
--   rtol, atol   override the dtype's defaults
--   scale        atol becomes scale * max |want| (matmul, long sums)
--   any_device   skip the device check (results brought back to the CPU)
--   what         names the result in the message
local function mismatch(got, want, opts)
  opts = opts or {}
  if type(opts) ~= "table" or ember.is_tensor(opts) then
    -- a call that returns two values passed as want: (f(x)) keeps the first
    error(("the options of a comparison must be a table, got %s (a second result passed along? "
      .. "wrap the call in parentheses)"):format(ember.is_tensor(opts) and "a tensor" or type(opts)), 3)
  end
  local what = opts.what and (opts.what .. ": ") or ""
  if not ember.is_tensor(got) then return what .. "expected a tensor, got " .. type(got) end
  if not ember.is_tensor(want) then return what .. "expected a reference tensor, got " .. type(want) end
  if not opts.any_device and got.device ~= M.devname then
    return ("%sexpected the result on %s, got %s"):format(what, M.devname, got.device)
  end
  if got.dtype ~= want.dtype then return ("%sdtype %s, expected %s"):format(what, got.dtype, want.dtype) end
  if shape_str(got.shape) ~= shape_str(want.shape) then
    return ("%sshape %s, expected %s"):format(what, shape_str(got.shape), shape_str(want.shape))
  end
  if opts.no_values then return nil end
  local rtol, atol = M.tol(want.dtype)
  rtol = opts.rtol or rtol
  atol = opts.atol or atol
  local g, w = flatten(got:tolist(), {}), flatten(want:tolist(), {})
  if opts.scale then
    local m = 0
    for i = 1, #w do
      local a = type(w[i]) == "number" and math.abs(w[i]) or 0
      if a == a and a ~= math.huge and a > m then m = a end
    end
    atol = opts.scale * math.max(m, 1e-300)
  end
  local bad, first, worst = 0, nil, 0
  for i = 1, #w do
    local a, b = g[i], w[i]
    local ok
    if type(b) ~= "number" then ok = a == b
    elseif b ~= b then ok = a ~= a
    elseif b == math.huge or b == -math.huge or math.type(b) == "integer" then ok = a == b
    elseif type(a) ~= "number" or a ~= a then ok = false
    else
      local d = math.abs(a - b)
      ok = d <= atol + rtol * math.abs(b)
      if d > worst then worst = d end
    end
    if not ok then
      bad = bad + 1
      first = first or i
    end
  end
  if bad > 0 then
    return ("%s%d of %d elements differ (rtol %g, atol %g); first at flat position %d: got %s, expected %s; "
            .. "largest difference %g"):format(what, bad, #w, rtol, atol, first, fmt(g[first]), fmt(w[first]), worst)
  end
  return nil
end

-- got matches want (see mismatch); fails with the reason otherwise
function M.close(got, want, opts)
  local m = mismatch(got, want, opts)
  if m then error(m, 2) end
  return true
end

-- the same, exactly (any dtype)
function M.same(got, want, opts)
  opts = opts or {}
  local m = mismatch(got, want, {rtol = 0, atol = 0, any_device = opts.any_device, what = opts.what})
  if m then error(m, 2) end
  return true
end

-- Runs f on the CPU inputs and on device copies of them, and compares every
-- result f returns (tensors as M.close with opts; other values by equality).
-- Inputs that are not tensors are passed as they are. Returns the results
-- of both runs as two packed tables.
function M.agree(f, inputs, opts)
  local dinputs = {}
  for i = 1, #inputs do dinputs[i] = M.dev(inputs[i]) end
  local want = table.pack(f(table.unpack(inputs, 1, #inputs)))
  local got = table.pack(f(table.unpack(dinputs, 1, #inputs)))
  if got.n ~= want.n then error(("%d results on the device, %d on the CPU"):format(got.n, want.n), 2) end
  for i = 1, want.n do
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    o.what = ((opts and opts.what) and (opts.what .. ", ") or "") .. "result " .. i
    if ember.is_tensor(want[i]) then
      local m = mismatch(got[i], want[i], o)
      if m then error(m, 2) end
    elseif got[i] ~= want[i] then
      error(("%s: got %s, expected %s"):format(o.what, tostring(got[i]), tostring(want[i])), 2)
    end
  end
  return got, want
end

-- |got - want| <= bound elementwise, for results whose rounding error
-- grows with their inputs (long sums, scans): bound is a CPU tensor that
-- broadcasts to want, e.g. 1e-5 * x:abs():sum(dim). NaN matches NaN; the
-- arithmetic is float64 on the CPU. Checks device, dtype and shape first.
function M.within(got, want, bound, what)
  local m = mismatch(got, want, {no_values = true, what = what})
  if m then error(m, 2) end
  local gd, wd = got:cpu():to("float64"), want:to("float64")
  local nan_g, nan_w = gd:ne(gd), wd:ne(wd)
  local nan_bad = nan_g:ne(nan_w):sum():item()
  local d = (gd - wd):abs():masked_fill(nan_w, 0)
  local over = d:gt(bound:to("float64")):logical_and(nan_g:logical_not())
  local bad = over:sum():item() + nan_bad
  if bad > 0 then
    error(("%s%d of %d elements are outside the bound (%d NaN mismatches); largest difference %g")
      :format(what and (what .. ": ") or "", bad, want:numel(), nan_bad, d:numel() > 0 and d:max():item() or 0), 2)
  end
  return true
end

-- the error message of f(...), which must fail
function M.err(f, ...)
  local ok, e = pcall(f, ...)
  if ok then error("expected an error", 2) end
  return tostring(e)
end

-- msg contains every one of the plain strings that follow
function M.has(msg, ...)
  for _, text in ipairs({...}) do
    if not msg:find(text, 1, true) then
      error(("expected the message to contain '%s', got: %s"):format(text, msg), 2)
    end
  end
  return true
end

-- every float, integer and bool dtype of the engine
M.dtypes = {"float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool", "float16", "bfloat16"}
M.float_dtypes = {"float32", "float64"}

return M
