-- amp_spec.lua — ember.amp.GradScaler against hand values: scaling, unscaling, skipped
-- steps on injected inf/NaN, back-off, growth after growth_interval clean steps,
-- state_dict, and its errors.
local ember = require "ember"
local h = require "helpers"
local amp = ember.amp
local optim = ember.optim
local err, has, check = h.err, h.has, h.check

-- p = {1, 2}; loss = sum(p^2) has gradient 2p; SGD lr 0.1 takes p to 0.8 p
local function setup(opts, dtype)
  local p = ember.tensor({1.0, 2.0}, {dtype = dtype or "float64", requires_grad = true})
  local opt = optim.SGD({p}, {lr = 0.1})
  return p, opt, amp.GradScaler(opts)
end

local function backward(p, opt, scaler, poison)
  opt:zero_grad()
  scaler:scale((p * p):sum()):backward()
  if poison then p.grad[2] = poison end
end

describe("GradScaler", function()
  it("scales outputs by init_scale, tensors and nested lists alike", function()
    local s = amp.GradScaler()
    check(s:scale(ember.tensor({1.5}, {dtype = "float64"})), {1.5 * 65536})
    local r = s:scale({ember.ones(2), {ember.full({1}, 2.0)}})
    check(r[1], {65536, 65536})
    check(r[2][1], {131072})
    assert.are.equal(65536, s:get_scale())
    local s2 = amp.GradScaler({init_scale = 8})
    check(s2:scale(ember.ones(1)), {8})
    -- disabled: outputs pass through, the scale reads 1
    local off = amp.GradScaler({enabled = false})
    local x = ember.ones(2)
    assert.are.equal(x, off:scale(x))
    assert.are.equal(1.0, off:get_scale())
    assert.is_false(off:is_enabled())
  end)

  it("unscale_ divides the gradients by the scale exactly and step then steps", function()
    local p, opt, s = setup()
    backward(p, opt, s)
    check(p.grad, {2 * 65536, 4 * 65536})
    s:unscale_(opt)
    check(p.grad, {2, 4})                         -- powers of two: exact
    s:step(opt)                                   -- no second unscale
    check(p:detach(), {0.8, 1.6}, 1e-12)
    s:update()
    assert.are.equal(65536, s:get_scale())
  end)

  it("skips the step and backs off the scale on inf or NaN in any gradient", function()
    for _, poison in ipairs({math.huge, -math.huge, 0 / 0}) do
      local p, opt, s = setup()
      backward(p, opt, s, poison)
      local ret = s:step(opt)
      assert.is_nil(ret)
      check(p:detach(), {1, 2})                   -- unchanged
      s:update()
      assert.are.equal(32768, s:get_scale())
      assert.are.equal(0, s:state_dict()._growth_tracker)
      -- the next clean step goes through with the smaller scale
      backward(p, opt, s)
      s:step(opt)
      s:update()
      check(p:detach(), {0.8, 1.6}, 1e-12)
      assert.are.equal(32768, s:get_scale())
    end
  end)

  it("grows the scale after growth_interval clean steps in a row, and a bad step resets the count", function()
    local p, opt, s = setup({growth_interval = 3, growth_factor = 4, backoff_factor = 0.25})
    local function round(poison)
      backward(p, opt, s, poison)
      s:step(opt)
      s:update()
      return s:get_scale(), s:state_dict()._growth_tracker
    end
    assert.are.same({65536, 1}, {round()})
    assert.are.same({65536, 2}, {round()})
    assert.are.same({16384, 0}, {round(0 / 0)})   -- backoff 0.25, count reset
    assert.are.same({16384, 1}, {round()})
    assert.are.same({16384, 2}, {round()})
    assert.are.same({65536, 0}, {round()})        -- third clean step: * 4
  end)

  it("never grows the scale into infinity", function()
    local p, opt, s = setup({init_scale = 2 ^ 127, growth_interval = 1})
    backward(p, opt, s)
    s:step(opt)
    s:update()
    assert.are.equal(2 ^ 127, s:get_scale())      -- 2^128 is inf in float32
  end)

  it("works with float32 parameters, several groups and parameters without gradients", function()
    local a = ember.tensor({1.0}, {requires_grad = true})
    local b = ember.tensor({3.0}, {requires_grad = true})
    local unused = ember.tensor({5.0}, {requires_grad = true})
    local opt = optim.SGD({{params = {a}}, {params = {b, unused}, lr = 0.5}}, {lr = 0.1})
    local s = amp.GradScaler({init_scale = 1024})
    opt:zero_grad()
    s:scale(a * 2 + b * b):backward()
    s:step(opt)
    s:update()
    check(a:detach(), {1 - 0.1 * 2}, 1e-6)
    check(b:detach(), {3 - 0.5 * 6}, 1e-6)
    check(unused:detach(), {5})
  end)

  it("update(new_scale) sets the scale", function()
    local p, opt, s = setup()
    backward(p, opt, s)
    s:step(opt)
    s:update(128)
    assert.are.equal(128, s:get_scale())
    s:update(ember.tensor({4.0}))
    assert.are.equal(4, s:get_scale())
    has(err(function() s:update(-1) end), "new_scale must be a positive finite number, got -1")
    has(err(function() s:update(ember.ones(2)) end), "new_scale must be a number or a one-element tensor")
  end)

  it("state_dict round-trips and a new scaler resumes where the old one was", function()
    local p, opt, s = setup({growth_interval = 5})
    for i = 1, 3 do
      backward(p, opt, s, i == 1 and math.huge or nil)
      s:step(opt)
      s:update()
    end
    local sd = s:state_dict()
    assert.are.same({scale = 32768, growth_factor = 2, backoff_factor = 0.5, growth_interval = 5,
                     _growth_tracker = 2}, sd)
    local s2 = amp.GradScaler()
    s2:load_state_dict(sd)
    assert.are.same(sd, s2:state_dict())
    for _ = 1, 3 do
      backward(p, opt, s2)
      s2:step(opt)
      s2:update()
    end
    assert.are.equal(65536, s2:get_scale())     -- 2 + 3 clean steps reach the interval of 5
    has(err(function() s2:load_state_dict({}) end), "the state dict is empty")
    has(err(function() s2:load_state_dict({scale = "x"}) end), "entry 'scale' must be a number")
  end)

  it("refuses misuse with PyTorch's messages", function()
    local p, opt, s = setup()
    backward(p, opt, s)
    s:unscale_(opt)
    has(err(function() s:unscale_(opt) end), "unscale_() has already been called on this optimizer since the last update()")
    s:step(opt)
    has(err(function() s:step(opt) end), "step() has already been called since the last update()")
    has(err(function() s:unscale_(opt) end), "unscale_() is being called after step()")
    s:update()
    has(err(function() s:update() end), "no inf checks were recorded prior to update()")
    backward(p, opt, s)
    has(err(function() s:step(opt, function() return 1 end) end), "closure use is not supported")
    has(err(function() local x = amp.GradScaler({growth_factor = 1}); return x end), "growth_factor must be a finite number > 1")
    has(err(function() local x = amp.GradScaler({backoff_factor = 1}); return x end), "backoff_factor must be a number in (0, 1)")
    has(err(function() local x = amp.GradScaler({growth_interval = 1.5}); return x end), "growth_interval must be a positive integer")
    has(err(function() local x = amp.GradScaler({init_scale = 0}); return x end), "init_scale must be a positive finite number")
    has(err(function() local x = amp.GradScaler({scale = 2}); return x end), "unknown option 'scale'")
    has(err(function() s:step({}) end), "expected an optimizer")
    -- the errors point at the caller's line
    has(err(function() local x = amp.GradScaler({growth_factor = 0.5}); return x end), "amp_spec.lua:")
    local fresh = amp.GradScaler()
    has(err(function() fresh:unscale_(opt) end), "call scaler:scale(loss) before")
  end)

  it("the unscale kernel checks its operands", function()
    local g = ember.ones(3)
    has(err(function() ember._amp_unscale_(g, ember.zeros(2), 1) end), "found_inf must be a one-element float32 tensor")
    has(err(function() ember._amp_unscale_(ember.ones(3, {dtype = "int64"}), ember.zeros(1), 1) end),
        "expected float32 or float64")
    local both = ember.zeros(4)
    has(err(function() ember._amp_unscale_(both:narrow(1, 1, 3), both:narrow(1, 4, 1), 1) end),
        "found_inf shares memory with the gradient")
    -- one pass: the flag is set, and the finite values are still scaled
    local x = ember.tensor({2.0, 0 / 0, 4.0})
    local f = ember.zeros(1)
    ember._amp_unscale_(x, f, 0.5)
    check(f, {1})
    assert.are.equal(1.0, x[1]:item())
    assert.are.equal(2.0, x[3]:item())
    -- a non-contiguous gradient is written back
    local m = ember.ones(2, 3, {dtype = "float64"}):t()
    local f2 = ember.zeros(1)
    ember._amp_unscale_(m, f2, 0.25)
    check(m, {{0.25, 0.25}, {0.25, 0.25}, {0.25, 0.25}})
    check(f2, {0})
  end)
end)
