-- multi_tensor_spec.lua — the multi-tensor optimizer ops (engine/optim.h's em_*_multi_*,
-- ember._sgd_multi_step_ and friends) and what uses them: optim.SGD / Adam / AdamW's
-- foreach/fused path, GradScaler:unscale_ and clip_grad_norm_. Expected values come from
-- hand calculation, the update rules written out in plain Lua, and the single-tensor
-- kernels (which the multi-tensor path must equal bit for bit in float32/float64).
local ember = require "ember"
local optim = require "ember.optim"
local H = require "helpers"

local F64 = {dtype = "float64"}

-- shapes that cover the corners: 0-d, empty, one element, rows, a tensor
-- bigger than one CPU chunk (65536 elements), a 3-d one
local SHAPES = {{}, {0}, {1}, {3, 4}, {70001}, {2, 3, 5}, {0, 4}, {7}}

local function randn_like_shapes(dtype, seed)
  ember.manual_seed(seed)
  local r = {}
  for i, s in ipairs(SHAPES) do r[i] = ember.randn(s, {dtype = dtype}) end
  return r
end

local function clones(list)
  local r = {}
  for i, t in ipairs(list) do r[i] = t:clone() end
  return r
end

local function assert_equal_lists(a, b, what)
  for i = 1, #a do
    assert(a[i].dtype == b[i].dtype, what .. " " .. i .. ": dtypes differ")
    assert(ember.equal(a[i], b[i]), what .. " " .. i .. " differs")
  end
end

-- float32 and float64 parameters mixed in one list
local function mixed_params(seed)
  local ps = randn_like_shapes("float64", seed)
  for i = 2, #ps, 2 do ps[i] = ps[i]:to("float32") end
  return ps
end

local function grads_for(ps, seed)
  ember.manual_seed(seed)
  local gs = {}
  for i, p in ipairs(ps) do gs[i] = ember.randn(p.shape, {dtype = p.dtype}) end
  return gs
end

describe("multi-tensor SGD", function()
  it("follows the update written out by hand", function()
    local p = ember.tensor({1.0, 2.0}, F64)
    local g = ember.tensor({0.5, -1.0}, F64)
    local buf = ember.zeros(2, F64)
    ember._sgd_multi_step_({p}, {g}, {buf}, {true}, 0.1, 0.9, 0, 0, false, false)
    H.check(buf, {0.5, -1.0})                       -- first step: buf = g
    H.check(p, {1 - 0.1 * 0.5, 2 + 0.1}, 1e-15)
    ember._sgd_multi_step_({p}, {g}, {buf}, {false}, 0.1, 0.9, 0, 0, false, false)
    H.check(buf, {0.9 * 0.5 + 0.5, 0.9 * -1 - 1}, 1e-15)
    H.check(p, {0.95 - 0.1 * 0.95, 2.1 + 0.1 * 1.9}, 1e-15)
  end)

  local VARIANTS = {
    {momentum = 0, dampening = 0, wd = 0, nesterov = false, maximize = false},
    {momentum = 0, dampening = 0, wd = 0.01, nesterov = false, maximize = true},
    {momentum = 0.9, dampening = 0, wd = 0, nesterov = false, maximize = false},
    {momentum = 0.9, dampening = 0.1, wd = 0.05, nesterov = false, maximize = true},
    {momentum = 0.8, dampening = 0, wd = 0.02, nesterov = true, maximize = false},
  }
  for vi, v in ipairs(VARIANTS) do
    it("equals the single-tensor step bit for bit, mixed shapes and dtypes (variant " .. vi .. ")", function()
      local ps = mixed_params(10 + vi)
      local qs = clones(ps)
      local bufs, qbufs
      if v.momentum ~= 0 then
        bufs, qbufs = {}, {}
        for i, p in ipairs(ps) do bufs[i] = ember.zeros_like(p); qbufs[i] = ember.zeros_like(p) end
      end
      for step = 1, 3 do
        local gs = grads_for(ps, 100 * vi + step)
        local first = {}
        for i = 1, #ps do first[i] = step == 1 end
        ember._sgd_multi_step_(ps, gs, bufs, bufs and first, 0.05, v.momentum, v.dampening, v.wd, v.nesterov,
                               v.maximize)
        for i = 1, #qs do
          ember._sgd_step_(qs[i], gs[i], qbufs and qbufs[i], 0.05, v.momentum, v.dampening, v.wd, v.nesterov,
                           step == 1, v.maximize)
        end
      end
      assert_equal_lists(ps, qs, "parameter")
      if bufs then assert_equal_lists(bufs, qbufs, "momentum buffer") end
    end)
  end

  it("takes first_step per parameter and casts gradients of another float dtype", function()
    local ps = {ember.tensor({1.0, 2.0}, F64), ember.tensor({3.0}, {dtype = "float32"})}
    local qs = clones(ps)
    local bufs = {ember.tensor({0.25, 0.5}, F64), ember.zeros(1)}
    local qbufs = clones(bufs)
    local gs = {ember.tensor({1, 1}, {dtype = "float32"}), ember.tensor({2.0}, F64)}
    ember._sgd_multi_step_(ps, gs, bufs, {false, true}, 0.1, 0.5, 0, 0, false, false)
    ember._sgd_step_(qs[1], gs[1], qbufs[1], 0.1, 0.5, 0, 0, false, false, false)
    ember._sgd_step_(qs[2], gs[2], qbufs[2], 0.1, 0.5, 0, 0, false, true, false)
    assert_equal_lists(ps, qs, "parameter")
    assert_equal_lists(bufs, qbufs, "buffer")
    H.check(bufs[1], {0.5 * 0.25 + 1, 0.5 * 0.5 + 1}, 1e-15)
  end)
end)

describe("multi-tensor Adam", function()
  it("follows the update written out by hand (Adam with L2, AdamW)", function()
    local lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    for _, decoupled in ipairs({false, true}) do
      local p = ember.tensor({1.0, -2.0, 0.5}, F64)
      local gv = {0.3, -0.7, 0.0}
      local m, v = ember.zeros(3, F64), ember.zeros(3, F64)
      local want, wm, wv = {1.0, -2.0, 0.5}, {0, 0, 0}, {0, 0, 0}
      for step = 1, 2 do
        ember._adam_multi_step_({p}, {ember.tensor(gv, F64)}, {m}, {v}, {step}, lr, b1, b2, eps, wd, decoupled,
                                false)
        local bc1, bc2 = 1 - b1 ^ step, 1 - b2 ^ step
        for i = 1, 3 do
          local g, x = gv[i], want[i]
          if decoupled then x = x * (1 - lr * wd) else g = g + wd * x end
          wm[i] = b1 * wm[i] + (1 - b1) * g
          wv[i] = b2 * wv[i] + (1 - b2) * g * g
          want[i] = x - (lr / bc1) * wm[i] / (math.sqrt(wv[i]) / math.sqrt(bc2) + eps)
        end
      end
      H.check(p, want, 1e-14)
      H.check(m, wm, 1e-14)
      H.check(v, wv, 1e-14)
    end
  end)

  for _, decoupled in ipairs({false, true}) do
    for _, maximize in ipairs({false, true}) do
      local name = (decoupled and "AdamW" or "Adam") .. (maximize and ", maximize" or "")
      it("equals the single-tensor step bit for bit, mixed shapes and dtypes (" .. name .. ")", function()
        local ps = mixed_params(decoupled and 21 or 22)
        local qs = clones(ps)
        local ms, vs, qms, qvs = {}, {}, {}, {}
        for i, p in ipairs(ps) do
          ms[i], vs[i] = ember.zeros_like(p), ember.zeros_like(p)
          qms[i], qvs[i] = ember.zeros_like(p), ember.zeros_like(p)
        end
        for step = 1, 3 do
          local gs = grads_for(ps, 300 + step)
          -- step counts per parameter: the last one started later
          local steps = {}
          for i = 1, #ps do steps[i] = i == #ps and step or step + 4 end
          ember._adam_multi_step_(ps, gs, ms, vs, steps, 1e-2, 0.9, 0.99, 1e-8, 0.05, decoupled, maximize)
          for i = 1, #qs do
            ember._adam_step_(qs[i], gs[i], qms[i], qvs[i], 1e-2, 0.9, 0.99, 1e-8, 0.05, decoupled, steps[i],
                              maximize)
          end
        end
        assert_equal_lists(ps, qs, "parameter")
        assert_equal_lists(ms, qms, "exp_avg")
        assert_equal_lists(vs, qvs, "exp_avg_sq")
      end)
    end
  end

  it("handles non-contiguous parameters and state through copies written back", function()
    local base = ember.randn({4, 6}, F64)
    local p = base:t()                               -- a transposed view
    local q = p:contiguous()
    local g = ember.randn({6, 4}, F64)
    local m, v = ember.zeros({4, 6}, F64):t(), ember.zeros({6, 4}, F64)
    local qm, qv = ember.zeros({6, 4}, F64), ember.zeros({6, 4}, F64)
    ember._adam_multi_step_({p}, {g}, {m}, {v}, {1}, 0.1, 0.9, 0.999, 1e-8, 0, false, false)
    ember._adam_step_(q, g, qm, qv, 0.1, 0.9, 0.999, 1e-8, 0, false, 1, false)
    assert(ember.equal(p, q) and ember.equal(m, qm) and ember.equal(v, qv))
    assert(ember.equal(base:t(), q), "the step wrote through the view")
  end)
end)

describe("multi-tensor steps on float16 and bfloat16 parameters", function()
  for _, dt in ipairs({"float16", "bfloat16"}) do
    it("compute in float32 and keep the state in " .. dt, function()
      ember.manual_seed(5)
      local p32 = ember.randn({257})
      local p = p32:to(dt)
      local ref = p:to("float32")                    -- the same starting values
      local m, v = ember.zeros_like(p), ember.zeros_like(p)
      local rm, rv = ember.zeros(257), ember.zeros(257)
      for step = 1, 3 do
        local g = ember.randn({257}):to(dt)
        ember._adam_multi_step_({p}, {g}, {m}, {v}, {step}, 1e-2, 0.9, 0.999, 1e-8, 0.01, true, false)
        ember._adam_step_(ref, g:to("float32"), rm, rv, 1e-2, 0.9, 0.999, 1e-8, 0.01, true, step, false)
        -- the half run rounds its state every step: compare with the rounded reference
        ref:copy_(ref:to(dt)); rm:copy_(rm:to(dt)); rv:copy_(rv:to(dt))
      end
      assert.are.equal(dt, p.dtype)
      assert.are.equal(dt, m.dtype)
      assert.are.equal(dt, v.dtype)
      local tol = dt == "float16" and 2e-3 or 1.6e-2
      local err = (p:to("float32") - ref):abs():max():item()
      assert(err <= tol * ref:abs():max():item(), dt .. " parameter off by " .. err)
    end)

    it("SGD with momentum on " .. dt .. " equals float32 arithmetic rounded once per step", function()
      local p = ember.tensor({1.0, -0.5, 0.25}):to(dt)
      local g = ember.tensor({0.5, 0.125, -1.0}):to(dt)
      local buf = ember.zeros(3, {dtype = dt})
      ember._sgd_multi_step_({p}, {g}, {buf}, {true}, 0.5, 0.9, 0, 0, false, false)
      -- these values are exact in both dtypes: 1 - 0.25, -0.5 - 0.0625, 0.25 + 0.5
      H.check(p:to("float64"), {0.75, -0.5625, 0.75})
      H.check(buf:to("float64"), {0.5, 0.125, -1.0})
    end)
  end

  it("optim.Adam updates half parameters, with foreach or without (the same kernels)", function()
    ember.manual_seed(6)
    local a = ember.randn({5, 3}):to("bfloat16"):requires_grad_()
    local b = a:detach():clone():requires_grad_()
    local oa = optim.Adam({a}, {lr = 0.01})
    local ob = optim.Adam({b}, {lr = 0.01, foreach = false})
    for _ = 1, 2 do
      local g = ember.randn({5, 3}):to("bfloat16")
      a.grad, b.grad = g:clone(), g:clone()
      oa:step(); ob:step()
    end
    assert(ember.equal(a, b))
    assert.are.equal("bfloat16", oa.state[a].exp_avg.dtype)
  end)
end)

describe("optimizers' foreach and fused options", function()
  local function run(cls, opts, dtype)
    ember.manual_seed(7)
    local ps = {}
    for i, s in ipairs({{4, 3}, {3}, {}, {0}, {70001}}) do
      ps[i] = ember.randn(s, {dtype = dtype}):requires_grad_()
    end
    local opt = cls(ps, opts)
    for step = 1, 3 do
      ember.manual_seed(50 + step)
      for i, p in ipairs(ps) do
        if not (i == 2 and step == 1) then p.grad = ember.randn(p.shape, {dtype = dtype}) end  -- 2 joins late
      end
      opt:step()
    end
    return ps, opt
  end

  for _, case in ipairs({
    {"SGD", {lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01}},
    {"SGD", {lr = 0.1}},
    {"Adam", {lr = 0.01, weight_decay = 0.1}},
    {"AdamW", {lr = 0.01, maximize = true}},
  }) do
    for _, dtype in ipairs({"float32", "float64"}) do
      it(case[1] .. " " .. dtype .. ": the default, foreach = true and fused = true equal foreach = false bit for bit",
         function()
        local cls = optim[case[1]]
        local function with(extra)
          local o = {}
          for k, v in pairs(case[2]) do o[k] = v end
          for k, v in pairs(extra) do o[k] = v end
          return o
        end
        local want, wopt = run(cls, with({foreach = false}), dtype)
        for _, extra in ipairs({{}, {foreach = true}, {fused = true}}) do
          local got, gopt = run(cls, with(extra), dtype)
          assert_equal_lists(got, want, "parameter")
          for i, p in ipairs(got) do
            local st, wst = gopt.state[p], wopt.state[want[i]]
            for k, v in pairs(wst) do
              if ember.is_tensor(v) then assert(ember.equal(st[k], v), "state " .. k)
              else assert.are.equal(v, st[k]) end
            end
          end
        end
      end)
    end
  end

  it("stores the options in the groups and the state dict, and checks them", function()
    local p = ember.zeros(2, {requires_grad = true})
    local opt = optim.AdamW({p}, {foreach = false})
    assert.are.equal(false, opt.param_groups[1].foreach)
    assert.is_nil(opt.param_groups[1].fused)
    assert.are.equal(false, opt:state_dict().param_groups[1].foreach)
    H.has(H.err(optim.SGD, {p}, {foreach = true, fused = true}), "`fused` and `foreach` cannot be `true` together")
    H.has(H.err(optim.Adam, {p}, {fused = 1}), "Adam (group 1): fused must be a boolean, got number")
  end)
end)

describe("multi-tensor unscale", function()
  it("multiplies by inv_scale read from a tensor and flags inf and NaN in any dtype", function()
    local gs = {ember.tensor({2.0, -4.0}), ember.tensor({8.0}, F64), ember.tensor({1.0, 3.0}):to("bfloat16"),
                ember.zeros(0), ember.tensor(6.0)}
    local found = ember.zeros(1)
    local inv = ember.tensor({0.5}, {dtype = "float32"})
    ember._amp_unscale_multi_(gs, found, inv)
    H.check(gs[1], {1.0, -2.0})
    H.check(gs[2], {4.0})
    H.check(gs[3]:to("float64"), {0.5, 1.5})
    H.check(gs[5], 3.0)
    H.check(found, {0})
    for _, bad in ipairs({math.huge, -math.huge, 0 / 0}) do
      local clean = ember.tensor({1.0, 2.0})
      local dirty = ember.tensor({1.0, bad, 3.0}, F64)
      local f = ember.zeros(1)
      ember._amp_unscale_multi_({clean, dirty}, f, inv)
      H.check(f, {1})
      H.check(clean, {0.5, 1.0})
      H.check(dirty:narrow(1, 1, 1), {0.5})
    end
    -- the flag is never cleared: one flag serves many calls
    local f = ember.ones(1)
    ember._amp_unscale_multi_({ember.ones(3)}, f, inv)
    H.check(f, {1})
  end)

  it("equals the single-tensor unscale over many gradients", function()
    local gs = randn_like_shapes("float32", 9)
    gs[4]:view(-1):narrow(1, 5, 1):fill_(0 / 0)
    local qs = clones(gs)
    local f, qf = ember.zeros(1), ember.zeros(1)
    ember._amp_unscale_multi_(gs, f, ember.tensor({1 / 1024}, {dtype = "float32"}))
    for _, q in ipairs(qs) do ember._amp_unscale_(q, qf, 1 / 1024) end
    for i = 1, #gs do assert(ember.equal(gs[i]:nan_to_num(), qs[i]:nan_to_num()), "gradient " .. i) end
    assert(ember.equal(f, qf))
  end)

  it("GradScaler:unscale_ reads nothing back to the host; step reads found_inf once", function()
    local p = ember.ones(3, {requires_grad = true})
    local opt = optim.SGD({p}, {lr = 1})
    local scaler = ember.amp.GradScaler({init_scale = 4.0})
    scaler:scale((p * 1):sum()):backward()
    -- count the calls of item and tolist (the host reads) with a call hook
    local item, tolist = p.item, p.tolist
    local reads = 0
    debug.sethook(function()
      local f = debug.getinfo(2, "f").func
      if f == item or f == tolist then reads = reads + 1 end
    end, "c")
    local ok, e = pcall(scaler.unscale_, scaler, opt)
    local after_unscale = reads
    if ok then ok, e = pcall(scaler.step, scaler, opt) end
    debug.sethook()
    assert(ok, tostring(e))
    assert.are.equal(0, after_unscale)
    assert.are.equal(1, reads)
    H.check(p, {0, 0, 0})
  end)

  it("GradScaler refuses float16 gradients as PyTorch does", function()
    local p = ember.ones(2, {dtype = "float16", requires_grad = true})
    local opt = optim.SGD({p}, {lr = 1})
    local scaler = ember.amp.GradScaler()
    p.grad = ember.ones(2, {dtype = "float16"})
    scaler:scale(ember.ones(1))
    H.has(H.err(scaler.unscale_, scaler, opt), "attempting to unscale float16 gradients")
  end)
end)

-- plain Lua over tolist values: the norms of the reference
local function flat_values(ts)
  local vals = {}
  local function walk(x)
    if type(x) == "table" then for _, y in ipairs(x) do walk(y) end else vals[#vals + 1] = x end
  end
  for _, t in ipairs(ts) do walk(t:to("float64"):tolist()) end
  return vals
end

local function lua_norm(vals, p)
  if p == math.huge then
    local m = 0
    for _, x in ipairs(vals) do m = math.max(m, math.abs(x)) end
    return m
  end
  local s = 0
  for _, x in ipairs(vals) do s = s + math.abs(x) ^ p end
  return s ^ (1 / p)
end

describe("multi-tensor norm and clip_grad_norm_", function()
  for _, p in ipairs({1, 2, 3, math.huge}) do
    it("the total norm of order " .. tostring(p) .. " matches plain Lua sums, mixed shapes and dtypes", function()
      local gs = mixed_params(31)
      local want = lua_norm(flat_values(gs), p)
      local total = ember._multi_norm(gs, p)
      assert.are.equal(0, total:dim())
      assert.are.equal(gs[1].dtype, total.dtype)
      assert(H.same(total:item(), want, 1e-12), "got " .. total:item() .. ", want " .. want)
    end)
  end

  it("clip_grad_norm_ clips every gradient by min(max_norm / (total + 1e-6), 1)", function()
    for _, p in ipairs({1, 2, math.huge}) do
      local params, before = {}, {}
      for i, t in ipairs(mixed_params(32)) do
        params[i] = t:clone():requires_grad_()
        params[i].grad = t:clone()
        before[i] = t:clone()
      end
      local total_want = lua_norm(flat_values(before), p)
      local total = optim.clip_grad_norm_(params, 2.5, {norm_type = p})
      assert(H.same(total:item(), total_want, 1e-12))
      local coef = math.min(2.5 / (total_want + 1e-6), 1)
      for i, q in ipairs(params) do
        local tol = q.dtype == "float32" and 1e-6 or 1e-14
        H.check(q.grad:to("float64"), (before[i]:to("float64") * coef):tolist(), tol)
      end
      -- within max_norm afterwards
      assert(lua_norm(flat_values((function()
        local r = {}
        for i, q in ipairs(params) do r[i] = q.grad end
        return r
      end)()), p) <= 2.5 * (1 + 1e-6))
    end
  end)

  it("leaves small gradients alone, returns the norm as a 0-d tensor and agrees with foreach = false", function()
    local a = ember.zeros(2, {requires_grad = true})
    local b = ember.zeros({}, {requires_grad = true})
    a.grad = ember.tensor({3.0, 4.0})
    b.grad = ember.tensor(0.0)
    local total = optim.clip_grad_norm_({a, b}, 10)
    assert.are.equal(0, total:dim())
    H.check(total, 5, 1e-7)
    H.check(a.grad, {3, 4})
    local c = ember.zeros(2, {requires_grad = true})
    c.grad = ember.tensor({3.0, 4.0})
    local t1 = optim.clip_grad_norm_({a}, 1.0)
    local t2 = optim.clip_grad_norm_({c}, 1.0, {foreach = false})
    assert(ember.equal(t1, t2))
    H.check(a.grad, c.grad:tolist(), 1e-7)
  end)

  it("propagates NaN and inf, and error_if_nonfinite reads the norm once to refuse it", function()
    local a = ember.zeros(3, {requires_grad = true})
    a.grad = ember.tensor({1.0, 0 / 0, 2.0})
    local total = optim.clip_grad_norm_({a}, 1.0)
    assert(total:item() ~= total:item())
    a.grad = ember.tensor({1.0, math.huge, 2.0})
    H.check(optim.clip_grad_norm_({a}, 1.0, {norm_type = math.huge}), math.huge)
    a.grad = ember.tensor({1.0, math.huge, 2.0})
    H.has(H.err(optim.clip_grad_norm_, {a}, 1.0, {error_if_nonfinite = true}), "is non-finite")
    H.check(a.grad, {1.0, math.huge, 2.0})             -- untouched when refused
  end)

  it("clips half gradients with the coefficient in float32", function()
    local a = ember.zeros(2, {dtype = "bfloat16", requires_grad = true})
    a.grad = ember.tensor({6.0, 8.0}):to("bfloat16")
    local total = optim.clip_grad_norm_({a}, 5.0)
    assert.are.equal("bfloat16", total.dtype)
    H.check(total:to("float64"), 10)
    H.check(a.grad:to("float64"), {3.0, 4.0}, 1e-2)
  end)

  it("ember._multi_scale_ takes the total norm from a tensor", function()
    local g = ember.tensor({1.0, 2.0}, F64)
    ember._multi_scale_({g}, ember.tensor(4.0, F64), 1.0)
    local c = 1.0 / (4.0 + 1e-6)
    H.check(g, {c, 2 * c}, 1e-15)
  end)
end)

describe("multi-tensor ops refuse bad input", function()
  local function f64(...) return ember.tensor({...}, F64) end

  it("with a clear error and nothing written", function()
    local p1, p2 = f64(1, 2), f64(3)
    local g1, g2 = f64(1, 1), f64(1)
    local function untouched()
      H.check(p1, {1, 2})
      H.check(p2, {3})
    end
    local function sgd(ps, gs, bufs, first)
      ember._sgd_multi_step_(ps, gs, bufs, first, 0.1, bufs and 0.9 or 0, 0, 0, false, false)
    end
    H.has(H.err(sgd, {p1, p2}, {g1, f64(1, 2)}), "sgd_step: parameter 2: gradient shape [2] does not match parameter shape [1]")
    untouched()
    H.has(H.err(sgd, {p1, p2}, {g1}), "the gradient list has 1 entries, the parameter list 2")
    H.has(H.err(sgd, {p1, 5}, {g1, g2}), "parameter 2 is not a tensor")
    H.has(H.err(sgd, {p1, ember.tensor({1, 2})}, {g1, g1}), "sgd_step: parameter 2: parameter [2] has dtype int64")
    H.has(H.err(sgd, {p1, p2}, {g1, ember.tensor({1})}), "sgd_step: parameter 2: gradient [1] has dtype int64")
    H.has(H.err(sgd, {p1, p2}, {g1, g2}, {ember.zeros(2, F64), ember.zeros(1)}, {true, true}),
          "sgd_step: parameter 2: momentum_buffer has dtype float32 but the parameter float64")
    H.has(H.err(sgd, {p1, p2}, {g1, g2}, {ember.zeros(2, F64)}, {true, true}),
          "the momentum_buffer list has 1 entries, the parameter list 2")
    H.has(H.err(sgd, {p1, p2}, {g1, g2}, {ember.zeros(2, F64), ember.zeros(1, F64)}, {true}),
          "expected a list of 2 booleans")
    -- aliasing: a buffer that is its parameter, two parameters on one memory
    H.has(H.err(sgd, {p1, p2}, {g1, g2}, {p1, ember.zeros(1, F64)}, {true, true}),
          "sgd_step: parameter 1: momentum_buffer shares memory with the parameter")
    local flat = ember.zeros(5, F64)
    H.has(H.err(sgd, {flat:narrow(1, 1, 3), flat:narrow(1, 3, 2)}, {f64(1, 1, 1), g1}),
          "sgd_step: parameter 1 and parameter 2 share memory")
    local m = ember.zeros(3, F64)
    H.has(H.err(ember._adam_multi_step_, {p1, p2}, {g1, g2}, {m:narrow(1, 1, 2), m:narrow(1, 2, 1)},
                {ember.zeros(2, F64), ember.zeros(1, F64)}, {1, 1}, 0.1, 0.9, 0.999, 1e-8, 0, false, false),
          "adam_step: exp_avg 1 and exp_avg 2 share memory")
    H.has(H.err(ember._adam_multi_step_, {p1}, {g1}, {m:narrow(1, 1, 2)}, {m:narrow(1, 2, 2)}, {1}, 0.1, 0.9,
                0.999, 1e-8, 0, false, false), "adam_step: exp_avg 1 and exp_avg_sq 1 share memory")
    H.has(H.err(ember._adam_multi_step_, {p1}, {g1}, {ember.zeros(2, F64)}, {ember.zeros(2, F64)}, {0}, 0.1, 0.9,
                0.999, 1e-8, 0, false, false), "adam_step: parameter 1: invalid step=0")
    H.has(H.err(ember._adam_multi_step_, {p1}, {g1}, {ember.zeros(2, F64)}, {ember.zeros(2, F64)}, {1}, 0.1, 1.5,
                0.999, 1e-8, 0, false, false), "adam_step: invalid beta1=1.5")
    untouched()
    -- non-overlapping views of one storage are fine (a flat parameter buffer)
    sgd({flat:narrow(1, 1, 2), flat:narrow(1, 3, 3)}, {f64(1, 1), f64(1, 1, 1)})
    H.check(flat, {-0.1, -0.1, -0.1, -0.1, -0.1}, 1e-15)
    -- a gradient that is another parameter is read before anything is written
    local a, b = f64(1, 2), f64(10, 20)
    sgd({a, b}, {b, a})
    H.check(a, {0, 0}, 1e-15)
    H.check(b, {9.9, 19.8}, 1e-15)
  end)

  it("unscale, norm and scale check their operands", function()
    local g = f64(1, 2)
    local inv = ember.tensor({0.5}, {dtype = "float32"})
    H.has(H.err(ember._amp_unscale_multi_, {g}, ember.zeros(2), inv), "found_inf must be a one-element float32 tensor")
    H.has(H.err(ember._amp_unscale_multi_, {g}, ember.zeros(1), ember.tensor({0.5}, F64)),
          "inv_scale must be a one-element float32 tensor")
    H.has(H.err(ember._amp_unscale_multi_, {ember.tensor({1, 2})}, ember.zeros(1), inv), "gradient 1 [2] has dtype int64")
    local both = ember.zeros(4)
    H.has(H.err(ember._amp_unscale_multi_, {both:narrow(1, 1, 3)}, both:narrow(1, 4, 1), inv),
          "shares memory with found_inf")
    H.has(H.err(ember._amp_unscale_multi_, {g, g}, ember.zeros(1), inv), "gradient 1 and gradient 2 share memory")
    H.has(H.err(ember._multi_norm, {}, 2), "multi_norm: needs at least one tensor")
    H.has(H.err(ember._multi_norm, {g}, 0), "multi_norm: norm_type must be > 0 or inf, got 0")
    H.has(H.err(ember._multi_norm, {g}, 0 / 0), "norm_type must be > 0 or inf")
    H.has(H.err(ember._multi_scale_, {g}, ember.zeros(2), 1.0), "the total norm must be a one-element floating tensor")
    H.has(H.err(ember._multi_scale_, {g}, g:narrow(1, 1, 1), 1.0), "tensor 1 shares memory with the total norm")
    H.check(g, {1, 2})
    -- clip_grad_norm_ with a norm the fused path has not: composed per-tensor ops
    local p = ember.zeros(2, {requires_grad = true})
    p.grad = ember.tensor({0.0, 5.0})
    H.check(optim.clip_grad_norm_({p}, 1.0, {norm_type = 0}), 1)
    H.has(H.err(optim.clip_grad_norm_, {p}, 1.0, {foreach = 1}), "clip_grad_norm_: foreach must be a boolean")
  end)
end)
