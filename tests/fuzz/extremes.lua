-- extremes.lua — calls every public function of ember, every tensor method, every
-- ember.linalg and nn.functional function with extreme integers and numbers
-- (math.mininteger, math.maxinteger, 2^62, 1e300, NaN, inf, -1, 0, ...) in its first
-- argument positions, on small tensors of several dtypes. Every call must return or raise
-- a Lua error: run it on the sanitizer build, where an overflow, a bad access or a leak
-- stops it with a report, and under `timeout`, where a hang shows:
--
--   make asan   # or just the build: make BUILD=build-asan SAN=1 OPT=-O1 all
--   ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:intercept_tls_get_addr=0 \
--   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 timeout 1800 build-asan/ember tests/fuzz/extremes.lua
--
-- It prints the number of calls made (about 610,000; a few seconds under ASan).
-- Functions that write files, change global settings or seeds are left out.
local ember = require "ember"

local SKIP = {set_num_threads = true, set_default_dtype = true, seed = true, save = true, manual_seed = true,
              set_rng_state = true, set_grad_enabled = true, no_grad = true, enable_grad = true, load = true,
              read_idx = true, save_checkpoint = true, load_checkpoint = true, isatty = true,
              set_ = true, register_hook = true, backward = true}
local EXTREMES = {math.mininteger, math.maxinteger, -1, 0, 1, 2, 1e300, -1e300, 0 / 0, math.huge, 2 ^ 62, -(2 ^ 62)}

local function tensors()
  return {ember.ones(3), ember.ones(2, 3), ember.arange(4):view(2, 2), ember.tensor({1, 2, 3}), ember.zeros(0),
          ember.ones(2, 2, {dtype = "float64"}), ember.tensor({true, false}), ember.ones(1, 2, 3)}
end

local function sorted_functions(t)
  local names = {}
  for k, v in pairs(t) do
    if type(v) == "function" and type(k) == "string" and not k:match("^_") and not SKIP[k] then
      names[#names + 1] = k
    end
  end
  table.sort(names)
  return names
end

local mt = debug.getregistry()["ember.Tensor"]
local _, methods = debug.getupvalue(mt.__index, 1)
local calls = 0
for _, tb in ipairs({ember, methods, ember.linalg, ember.nn.functional}) do
  for _, name in ipairs(sorted_functions(tb)) do
    local f = tb[name]
    for _, t in ipairs(tensors()) do
      for _, x in ipairs(EXTREMES) do
        pcall(f, t, x)
        pcall(f, t, x, x)
        pcall(f, t, 1, x)
        pcall(f, t, x, 1, x)
        pcall(f, t, t, x)
        pcall(f, t, {x})
        pcall(f, t, {x, x})
        pcall(f, x, x, t)
        calls = calls + 8
      end
    end
    ember.set_grad_enabled(true)
  end
end
print("calls", calls)
