-- cuda_cpu_spec.lua — ember.cuda on a machine without a GPU: every CUDA
-- entry point raises a clear "no CUDA device: <reason>" error instead of
-- crashing, the session keeps working, and the settings that need no device
-- (ember.backends.cuda.matmul.allow_tf32) still work. Where the build made
-- libember_cuda.so, it exports the entry point the engine looks for.
-- On a machine with a GPU this file is skipped (tests/gpu/ covers it).
local ember = require "ember"
local h = require "helpers"
local err = h.err

local available, reason = ember.cuda.is_available()
if available then
  pending("a CUDA device is present: these tests are for machines without one (see tests/gpu/)")
  return
end

local PREFIX = "no CUDA device:"
-- the reason proper: what follows the prefix in is_available's message
local why = tostring(reason):gsub("^" .. PREFIX .. "%s*", "")

-- the message without the caller's "file:line: " (errors point at the caller)
local function unplaced(msg) return (msg:gsub("^[^:]+:%d+: ", "")) end

-- msg starts with "no CUDA device:" (after the position) and says why
local function no_device(msg)
  msg = unplaced(msg)
  assert(msg:sub(1, #PREFIX) == PREFIX, "expected the message to start with '" .. PREFIX .. "', got: " .. msg)
  h.has(msg, why)
end

describe("ember.cuda without a GPU", function()
  it("is_available returns false and a reason; device_count is 0", function()
    assert.is_false(available)
    assert.are.equal("string", type(reason))
    no_device(reason)
    assert(why:match("%S"), "the reason after '" .. PREFIX .. "' is empty: '" .. reason .. "'")
    assert.are.equal(0, ember.cuda.device_count())
    assert.are.equal("integer", math.type(ember.cuda.device_count()))
  end)

  it("every CUDA entry point raises 'no CUDA device: <reason>'", function()
    local t = ember.ones(2, 3)
    local calls = {
      zeros = function() return ember.zeros(2, {device = "cuda"}) end,
      randn = function() return ember.randn(2, {device = "cuda:0"}) end,
      tensor = function() return ember.tensor({1, 2}, {device = "cuda"}) end,
      cuda = function() return t:cuda() end,
      to = function() return t:to("cuda") end,
      to_index = function() return t:to("cuda:0") end,
      to_options = function() return t:to({device = "cuda", dtype = "float64"}) end,
      synchronize = function() return ember.cuda.synchronize() end,
      memory_allocated = function() return ember.cuda.memory_allocated() end,
      memory_reserved = function() return ember.cuda.memory_reserved() end,
      max_memory_allocated = function() return ember.cuda.max_memory_allocated() end,
      memory_stats = function() return ember.cuda.memory_stats() end,
      memory_summary = function() return ember.cuda.memory_summary() end,
      reset_peak_memory_stats = function() return ember.cuda.reset_peak_memory_stats() end,
      empty_cache = function() return ember.cuda.empty_cache() end,
      get_device_name = function() return ember.cuda.get_device_name() end,
      Event = function() return ember.cuda.Event() end,
      Event_timing = function() return ember.cuda.Event({enable_timing = true}) end,
    }
    for name, f in pairs(calls) do
      local ok, e = pcall(f)
      assert(not ok, name .. ": expected an error")
      local msg = unplaced(tostring(e))
      assert(msg:sub(1, #PREFIX) == PREFIX, name .. ": expected '" .. PREFIX .. " ...', got: " .. msg)
      no_device(msg)
    end
  end)

  it("the session keeps working after those errors", function()
    for _ = 1, 3 do
      pcall(ember.zeros, 2, {device = "cuda"})
      pcall(ember.cuda.synchronize)
    end
    local x = ember.arange(1, 5):to("float64")
    assert.are.equal(10, x:sum():item())
    h.check(x:view(2, 2):matmul(x:view(2, 2)), {{7, 10}, {15, 22}})
    assert.are.equal("cpu", x.device)
    assert.are.equal("cpu", x:to("cpu").device)
    -- later CUDA calls fail the same way, not worse
    no_device(err(function() return x:cuda() end))
    assert.is_false(ember.cuda.is_available())
  end)

  it("bad device strings are rejected before any CUDA lookup", function()
    h.has(err(function() return ember.zeros(2, {device = "gpu"}) end), "gpu")
    h.has(err(function() return ember.ones(2):to("cuda:x") end), "cuda:x")
    h.has(err(ember.cuda.synchronize, "cpu"), "expected a CUDA device")
    h.has(err(ember.cuda.memory_summary, "cuda:x"), "expected a CUDA device")
    h.has(err(ember.cuda.Event, 3), "ember.cuda.Event: argument 1: expected an options table, got number")
  end)
end)

describe("ember.backends.cuda.matmul", function()
  local flags = ember.backends.cuda.matmul

  it("allow_tf32 defaults to false and can be set and read without a device", function()
    assert.is_false(flags.allow_tf32)
    flags.allow_tf32 = true
    assert.is_true(flags.allow_tf32)
    flags.allow_tf32 = false
    assert.is_false(flags.allow_tf32)
  end)

  it("unknown settings and non-boolean values are errors", function()
    h.has(err(function() flags.allow_fp16 = true end), "allow_fp16")
    h.has(err(function() flags.allow_tf32 = 1 end), "expected a boolean")
    assert.is_false(flags.allow_tf32)
    assert.is_nil(flags.allow_fp16)
  end)
end)

describe("the CUDA backend library", function()
  local build = os.getenv("EMBER_BUILD") or "build"
  local lib = build .. "/libember_cuda.so"
  local f = io.open(lib, "rb")
  if f then f:close() end

  if not f then
    pending(lib .. " was not built (make WITH_CUDA=1 builds it where the CUDA toolkit is)")
  else
    it("exports em_cuda_backend_init", function()
      local p = assert(io.popen("nm -D --defined-only '" .. lib .. "' 2>&1"))
      local out = p:read("a")
      p:close()
      assert(out:match("%s[Tt]%s+em_cuda_backend_init\n") or out:match("%s[Tt]%s+em_cuda_backend_init$"),
        "em_cuda_backend_init is not among the exported symbols of " .. lib)
    end)
  end

  -- "ok|why" of ember.cuda.is_available() in a child process with env set
  local function is_available_in_child(env)
    local cpath = package.cpath:gsub("'", "")
    local interp = os.getenv("EMBER") or "lua5.4"
    local cmd = env .. " LUA_CPATH='" .. cpath .. "' " .. interp .. " -e " ..
      "'local e = require \"ember\"; local ok, why = e.cuda.is_available(); io.write(tostring(ok), \"|\", why)' 2>&1"
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    return out
  end

  it("EMBER_CUDA_LIB pointing nowhere still gives 'no CUDA device' and a reason", function()
    local out = is_available_in_child("EMBER_CUDA_LIB=/nonexistent/libember_cuda.so")
    h.has(out, "false|" .. PREFIX)
    -- a library beside the engine is tried next, and its failure (no
    -- device) is then the reason; without one the reason names the path
    if not f then h.has(out, "/nonexistent/libember_cuda.so") end
  end)

  it("EMBER_CUDA set to anything but emu is refused, naming the value", function()
    local out = is_available_in_child("EMBER_CUDA=gpu")
    h.has(out, "false|" .. PREFIX .. " EMBER_CUDA=gpu: expected emu (the emulated device) or unset")
  end)
end)
