-- settings_spec.lua — the process-wide switches of lua/ember/composite/settings.lua that
-- a ported script sets at its top: set/get_float32_matmul_precision, inference_mode,
-- compile (set_printoptions is in format_spec.lua, against PyTorch's printing). The
-- expected behaviour is PyTorch 2.x's, read from its documentation and checked there.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("set_float32_matmul_precision", function()
  local saved
  before_each(function() saved = ember.backends.cuda.matmul.allow_tf32 end)
  after_each(function() ember.backends.cuda.matmul.allow_tf32 = saved end)

  it("drives allow_tf32, and get reads it back as PyTorch does", function()
    ember.set_float32_matmul_precision("highest")
    assert.is_false(ember.backends.cuda.matmul.allow_tf32)
    assert.are.equal("highest", ember.get_float32_matmul_precision())
    ember.set_float32_matmul_precision("high")
    assert.is_true(ember.backends.cuda.matmul.allow_tf32)
    assert.are.equal("high", ember.get_float32_matmul_precision())
    ember.set_float32_matmul_precision("medium")
    assert.are.equal("medium", ember.get_float32_matmul_precision())
    -- get reads the flag: set directly, it answers for it (PyTorch 2.15 refuses to answer
    -- once the two ways are mixed)
    ember.backends.cuda.matmul.allow_tf32 = false
    assert.are.equal("highest", ember.get_float32_matmul_precision())
  end)

  it("refuses other names", function()
    for _, bad in ipairs({"low", "HIGH", 1, true}) do
      local e = err(ember.set_float32_matmul_precision, bad)
      has(e, "ember.set_float32_matmul_precision: expected \"highest\", \"high\" or \"medium\"")
    end
    has(err(ember.set_float32_matmul_precision), "got nil")
  end)
end)

describe("inference_mode", function()
  it("turns recording off around a function and gives back its results", function()
    local w = ember.ones(2, {requires_grad = true})
    local y, extra = ember.inference_mode(function(a) return w * a, "x" end, 3)
    assert.is_false(y.requires_grad)
    assert.are.equal("x", extra)
    h.check(y, {3, 3})
    assert.is_true(ember.is_grad_enabled())
  end)

  it("is a <close> guard without a function, and restores the mode after an error", function()
    do
      local _ <close> = ember.inference_mode()
      assert.is_false(ember.is_grad_enabled())
    end
    assert.is_true(ember.is_grad_enabled())
    local ok = pcall(ember.inference_mode, function() error("boom") end)
    assert.is_false(ok)
    assert.is_true(ember.is_grad_enabled())
  end)

  it("with mode false leaves grad mode as it is (PyTorch: inference_mode(False))", function()
    assert.is_true(ember.inference_mode(false, function() return ember.is_grad_enabled() end))
    ember.no_grad(function()
      assert.is_false(ember.inference_mode(false, function() return ember.is_grad_enabled() end))
    end)
    do
      local _ <close> = ember.inference_mode(false)
      assert.is_true(ember.is_grad_enabled())
    end
    assert.is_false(ember.inference_mode(true, function() return ember.is_grad_enabled() end))
  end)

  it("is_inference_mode_enabled answers for the innermost region, as torch's", function()
    assert.is_false(ember.is_inference_mode_enabled())
    assert.is_true(ember.inference_mode(function() return ember.is_inference_mode_enabled() end))
    assert.is_false(ember.inference_mode(function()
      return ember.inference_mode(false, function() return ember.is_inference_mode_enabled() end)
    end))
    do
      local _ <close> = ember.inference_mode()
      assert.is_true(ember.is_inference_mode_enabled())
      do
        local _ <close> = ember.inference_mode(false)
        assert.is_false(ember.is_inference_mode_enabled())
      end
      assert.is_true(ember.is_inference_mode_enabled())
    end
    assert.is_false(ember.is_inference_mode_enabled())
    pcall(ember.inference_mode, function() error("boom") end)
    assert.is_false(ember.is_inference_mode_enabled())
    -- no_grad alone is not inference mode
    assert.is_false(ember.no_grad(function() return ember.is_inference_mode_enabled() end))
  end)

  it("refuses what is not a function", function()
    local e = err(ember.inference_mode, 3)
    has(e, "ember.inference_mode: expected a function")
    e = err(ember.inference_mode, false, "x")
    has(e, "ember.inference_mode: expected a function")
  end)
end)

describe("compile", function()
  it("returns the module or function itself, with or without options", function()
    local m = ember.nn.Linear(3, 2)
    assert.are.equal(m, ember.compile(m))
    assert.are.equal(m, ember.compile(m, {mode = "reduce-overhead", fullgraph = true, dynamic = false}))
    local f = function(x) return x * 2 end
    assert.are.equal(f, ember.compile(f, {backend = "inductor"}))
    -- the compiled model still trains: a step changes the weights
    local opt = ember.optim.SGD(m:parameters(), 0.1)
    local before = m.weight:clone()
    local cm = ember.compile(m)
    cm(ember.ones(4, 3)):sum():backward()
    opt:step()
    assert.is_false(ember.equal(before, m.weight))
  end)

  it("without a model is a decorator", function()
    local m = ember.nn.ReLU()
    assert.are.equal(m, ember.compile()(m))
    assert.are.equal(m, ember.compile({mode = "max-autotune"})(m))
    has(err(ember.compile(), 5), "ember.compile: expected a module or a function")
  end)

  it("refuses what cannot be compiled and unknown options", function()
    has(err(ember.compile, 3), "ember.compile: expected a module or a function to compile, got number")
    has(err(ember.compile, ember.nn.ReLU(), {bogus = 1}), "ember.compile: unknown option 'bogus'")
  end)
end)

describe("use_deterministic_algorithms", function()
  after_each(function()
    ember.use_deterministic_algorithms(false)
    ember.utils.deterministic.fill_uninitialized_memory = true
  end)

  it("is off by default; the mode, warn_only and the debug-mode names read back as PyTorch's", function()
    assert.is_false(ember.are_deterministic_algorithms_enabled())
    assert.are.equal(0, ember.get_deterministic_debug_mode())
    ember.use_deterministic_algorithms(true)
    assert.is_true(ember.are_deterministic_algorithms_enabled())
    assert.is_false(ember.is_deterministic_algorithms_warn_only_enabled())
    assert.are.equal(2, ember.get_deterministic_debug_mode())
    ember.use_deterministic_algorithms(true, {warn_only = true})
    assert.is_true(ember.is_deterministic_algorithms_warn_only_enabled())
    assert.are.equal(1, ember.get_deterministic_debug_mode())
    ember.set_deterministic_debug_mode("default")
    assert.is_false(ember.are_deterministic_algorithms_enabled())
    assert.are.equal(0, ember.get_deterministic_debug_mode())
    ember.set_deterministic_debug_mode(2)
    assert.are.equal(2, ember.get_deterministic_debug_mode())
    ember.set_deterministic_debug_mode("warn")
    assert.is_true(ember.are_deterministic_algorithms_enabled())
    assert.is_true(ember.is_deterministic_algorithms_warn_only_enabled())
    -- separate from cudnn.deterministic, as in PyTorch
    assert.is_false(ember.backends.cudnn.deterministic)
  end)

  it("fills empty tensors with NaN or the integer maximum, unless fill_uninitialized_memory is off", function()
    ember.use_deterministic_algorithms(true)
    local function all_nan(t) return t:isnan():all():item() end
    assert.is_true(all_nan(ember.empty(3, 4)))
    assert.is_true(all_nan(ember.empty(2, {dtype = "float64"})))
    assert.is_true(all_nan(ember.empty(5, {dtype = "float16"})))
    assert.is_true(all_nan(ember.empty_like(ember.ones(2, 2, {dtype = "bfloat16"}))))
    assert.is_true(all_nan(ember.ones(1):new_empty({3})))
    assert.are.same({math.maxinteger, math.maxinteger}, ember.empty(2, {dtype = "int64"}):tolist())
    assert.are.same({2147483647, 2147483647}, ember.empty(2, {dtype = "int32"}):tolist())
    assert.are.same({255}, ember.empty(1, {dtype = "uint8"}):tolist())
    assert.are.same({true, true}, ember.empty(2, {dtype = "bool"}):tolist())
    assert.are.equal(0, ember.empty(0):numel())
    local r = ember.empty(2, {requires_grad = true})
    assert.is_true(r.requires_grad and all_nan(r:detach()))
    -- ones, zeros and full are what they say
    assert.are.same({1, 1}, ember.ones(2):tolist())
    ember.utils.deterministic.fill_uninitialized_memory = false
    assert.is_false(ember.utils.deterministic.fill_uninitialized_memory)
    ember.utils.deterministic.fill_uninitialized_memory = true
    assert.is_true(ember.utils.deterministic.fill_uninitialized_memory)
  end)

  it("refuses what is not a boolean, unknown keywords and settings, at the caller's line", function()
    local e = err(ember.use_deterministic_algorithms, 1)
    has(e, "ember.use_deterministic_algorithms: mode must be a boolean, got number")
    e = err(function() ember.use_deterministic_algorithms(true, {warn_only = "yes"}) end)
    has(e, "warn_only must be a boolean, got string")
    e = err(function() ember.use_deterministic_algorithms(true, {warn = true}) end)
    has(e, "warn")
    e = err(function() ember.set_deterministic_debug_mode("loud") end)
    has(e, 'expected "default", "warn" or "error" (or 0, 1, 2), got "loud"')
    has(err(function() ember.set_deterministic_debug_mode(3) end), "got 3")
    e = err(function() ember.utils.deterministic.fill = false end)
    has(e, "ember.utils.deterministic: no setting 'fill' (there is fill_uninitialized_memory)", "settings_spec.lua:")
    e = err(function() ember.utils.deterministic.fill_uninitialized_memory = 0 end)
    has(e, "ember.utils.deterministic.fill_uninitialized_memory: expected a boolean, got number")
    assert.is_false(ember.are_deterministic_algorithms_enabled())
  end)
end)

describe("ember.backends.cudnn and ember.backends.mps", function()
  local saved = {}
  before_each(function()
    for _, k in ipairs({"allow_tf32", "deterministic", "benchmark"}) do saved[k] = ember.backends.cudnn[k] end
  end)
  after_each(function()
    for k, v in pairs(saved) do ember.backends.cudnn[k] = v end
  end)

  it("reads and sets PyTorch's switches, with PyTorch's defaults", function()
    local c = ember.backends.cudnn
    assert.is_true(c.allow_tf32)
    assert.is_false(c.deterministic)
    assert.is_false(c.benchmark)
    assert.is_true(c.enabled)
    c.deterministic, c.benchmark, c.allow_tf32 = true, true, false
    assert.is_true(c.deterministic)
    assert.is_true(c.benchmark)
    assert.is_false(c.allow_tf32)
    c.enabled = true
    assert.are.equal("boolean", type(c.is_available()))
    assert.is_false(ember.backends.mps.is_available())
    assert.is_false(ember.backends.mps.is_built())
  end)

  it("refuses enabled = false, unknown settings and non-booleans, at the caller's line", function()
    local e = err(function() ember.backends.cudnn.enabled = false end)
    has(e, "ember.backends.cudnn.enabled = false: ember's CUDA convolutions are cuDNN's", "settings_spec.lua:")
    e = err(function() ember.backends.cudnn.benchmark_limit = 10 end)
    has(e, "ember.backends.cudnn: no setting 'benchmark_limit' (there is allow_tf32, deterministic, benchmark, enabled)")
    e = err(function() ember.backends.cudnn.allow_tf32 = "no" end)
    has(e, "ember.backends.cudnn.allow_tf32: expected a boolean, got string")
    assert.is_true(ember.backends.cudnn.allow_tf32)
  end)
end)

describe("set_default_tensor_type", function()
  it("sets the default dtype and device from PyTorch's type names", function()
    ember.set_default_tensor_type("torch.DoubleTensor")
    local d = ember.zeros(1).dtype
    ember.set_default_tensor_type("torch.HalfTensor")
    local half = ember.zeros(1).dtype
    ember.set_default_tensor_type("torch.FloatTensor")
    assert.are.equal("float64", d)
    assert.are.equal("float16", half)
    assert.are.equal("float32", ember.zeros(1).dtype)
    assert.are.equal("cpu", ember.zeros(1).device)
    has(err(function() ember.set_default_tensor_type("torch.LongTensor") end),
        "only floating-point types are supported as the default type, got torch.LongTensor", "settings_spec.lua:")
    has(err(function() ember.set_default_tensor_type("float64") end), "invalid type: 'float64'")
    has(err(function() ember.set_default_tensor_type(5) end), "expected a type name such as 'torch.DoubleTensor', got number")
    assert.are.equal("float32", ember.get_default_dtype())
  end)
end)
