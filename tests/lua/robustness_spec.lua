-- robustness_spec.lua — random calls with random (mostly wrong) arguments:
-- every method and module function, the operators, indexing and printing.
-- The process must survive (under `make asan` also without a memory error
-- or a leak), and every failure must be a Lua error whose message starts
-- with the op's name (or says which device or memory is missing).
local ember = require "ember"

-- the functions written in Lua over ember's ops (lua/ember/composite.lua and its parts)
-- are installed when one is first asked for: load them, so that they are called too
require "ember.composite"

local mt = debug.getregistry()["ember.Tensor"]
local _, methods = debug.getupvalue(mt.__index, 1)

local function sorted_keys(t, want)
  local out = {}
  for k, v in pairs(t) do if type(v) == want then out[#out + 1] = k end end
  table.sort(out)
  return out
end

local method_names = sorted_keys(methods, "function")
local function_names = sorted_keys(ember, "function")
-- save (and _savefile, _save_raw, plot's) writes files wherever its random path points
-- and the switches of modes that change what every later call does (anomaly mode, stopping
-- at NaN, memory recording, the profiler's node timing, autocast's suspension, how tensors
-- print and whether CUDA products may use TF32)
local excluded = {set_num_threads = true, set_default_dtype = true, seed = true, save = true, _savefile = true,
                  _save_raw = true, set_printoptions = true, _printoptions = true, set_float32_matmul_precision = true,
                  _set_anomaly = true, _stop_on_nan = true, _mem_record = true, _profile_nodes = true,
                  _autocast_lift = true, _autocast_resuspend = true}
local dtypes = {"float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16"}

local function random_tensor()
  local dt = dtypes[math.random(#dtypes)]
  local shapes = {
    function() return ember.tensor(math.random() * 10, {dtype = dt}) end,
    function() return ember.zeros(0, 3, {dtype = dt}) end,
    function() return ember.randn(3, 4):t():to(dt) end,
    function() return ember.randn(2, 3, 4):to(dt) end,
    function() return ember.arange(6):to(dt) end,
    function() return ember.randn(4, 1):expand(4, 3):to(dt) end,
    function() return ember.tensor{true, false} end,
    function() return ember.randn(5, 5)[{{1, 5, 2}, {2, 4}}] end,
    function() return ember.randint(-3, 3, {2, 3}) end,
  }
  return shapes[math.random(#shapes)]()
end

local function random_arg()
  local choices = {
    random_tensor, random_tensor, random_tensor,
    function() return math.random(-4, 4) end,
    function() return math.random() * 4 - 2 end,
    function() return "x" end,
    function() return {} end,
    function() return {math.random(-3, 3), math.random(-3, 3)} end,
    function() return nil end,
    function() return true end,
    function() return math.huge end,
    function() return {dtype = "int64"} end,
    function() return -1 end,
  }
  return choices[math.random(#choices)]()
end

local function try(what, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then return end
  -- errors raised from metamethods carry the caller's position first
  local msg = tostring(err):gsub("^[^:]+:%d+: ", "")
  local clear = msg:match("^[%w_%.]+: ") or msg:match("^t%[%w+%] = v: ") or msg:match("^no CUDA device")
    or msg:match("^out of memory")
    -- ember's private helpers (ember._*) are called by the library with checked arguments
    -- (its message then names the public op): for them any error string will do, but
    -- they must not crash either
    or what:match("^ember%._")
  assert(clear, what .. " raised an unclear error: " .. msg)
end

describe("random calls never crash and fail clearly", function()
  for seed = 1, 8 do
    it("seed " .. seed, function()
      math.randomseed(seed)
      ember.manual_seed(seed)
      for _ = 1, 1500 do
        local as_method = math.random(2) == 1
        local names = as_method and method_names or function_names
        local name = names[math.random(#names)]
        if not excluded[name] then
          local n = math.random(0, 4)
          local args = {}
          for i = 1, n do args[i] = random_arg() end
          if as_method then
            local self = random_tensor()
            try("t:" .. name, methods[name], self, table.unpack(args, 1, n))
          else
            try("ember." .. name, ember[name], table.unpack(args, 1, n))
          end
        end
        local a, b, c = random_tensor(), random_arg(), random_arg()
        try("+", function() return a + b end)
        try("^", function() return a ^ b end)
        try("%", function() return a % b end)
        try("index", function() return a[b] end)
        try("newindex", function() a[b] = c end)
        assert.is_string(tostring(a))
      end
      -- random calls of set_grad_enabled / no_grad() (an unclosed guard) may leave recording
      -- off; the spec files that run after this one in the same process must not see that
      ember.set_grad_enabled(true)
    end)
  end
end)
