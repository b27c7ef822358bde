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
