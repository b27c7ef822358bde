-- multi_tensor_spec.lua (GPU) — the multi-tensor optimizer ops on the device match the
-- CPU's on the same inputs: SGD and Adam/AdamW steps bit for bit (float32, float64,
-- float16, bfloat16), GradScaler's unscale (inv_scale read on the device, no host read),
-- clip_grad_norm_'s norm (float64 sums, a different order: close) and scale; lists longer
-- than one kernel table (more tensors than a table holds, a tensor cut between two
-- launches); parameters of two devices in one list; bad device mixes refused.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close, same = g.dev, g.close, g.same
local cuda_it = g.cuda_it(it, pending)
local optim = require("ember.optim")

local SHAPES = {{}, {0}, {1}, {3, 4}, {70001}, {2, 3, 5}, {129}}

local function make(dtype, seed, shapes)
  ember.manual_seed(seed)
  local r = {}
  for i, s in ipairs(shapes or SHAPES) do r[i] = ember.randn(s):to(dtype) end
  return r
end

local function on_dev(list)
  local r = {}
  for i, t in ipairs(list) do r[i] = dev(t) end
  return r
end

local function zeros_like_all(list)
  local r = {}
  for i, t in ipairs(list) do r[i] = ember.zeros_like(t) end
  return r
end

-- exact, through a copy on the CPU (tolist of big tensors is slow)
local function equal_lists(got, want, what)
  for i = 1, #want do
    local a = got[i]:to("cpu")
    assert(a.dtype == want[i].dtype, what .. " " .. i .. ": dtype")
    assert(ember.equal(a, want[i]), what .. " " .. i .. " differs from the CPU")
  end
end

describe("multi-tensor steps on the device", function()
  for _, dtype in ipairs({"float32", "float64", "float16", "bfloat16"}) do
    it("SGD with momentum, nesterov and weight decay matches the CPU bit for bit (" .. dtype .. ")", function()
      local ps, bufs = make(dtype, 1), nil
      local dps = on_dev(ps)
      bufs = zeros_like_all(ps)
      local dbufs = on_dev(bufs)
      for step = 1, 3 do
        local gs = make(dtype, 10 + step)
        local first = {}
        for i = 1, #ps do first[i] = step == 1 end
        ember._sgd_multi_step_(ps, gs, bufs, first, 0.05, 0.9, 0, 0.01, true, false)
        ember._sgd_multi_step_(dps, on_dev(gs), dbufs, first, 0.05, 0.9, 0, 0.01, true, false)
      end
      equal_lists(dps, ps, "parameter")
      equal_lists(dbufs, bufs, "momentum buffer")
    end)

    it("Adam and AdamW match the CPU bit for bit (" .. dtype .. ")", function()
      for _, decoupled in ipairs({false, true}) do
        local ps = make(dtype, 2)
        local ms, vs = zeros_like_all(ps), zeros_like_all(ps)
        local dps, dms, dvs = on_dev(ps), on_dev(ms), on_dev(vs)
        for step = 1, 3 do
          local gs = make(dtype, 20 + step)
          local steps = {}
          for i = 1, #ps do steps[i] = step + (i % 2) end
          ember._adam_multi_step_(ps, gs, ms, vs, steps, 1e-2, 0.9, 0.99, 1e-8, 0.05, decoupled, step == 2)
          ember._adam_multi_step_(dps, on_dev(gs), dms, dvs, steps, 1e-2, 0.9, 0.99, 1e-8, 0.05, decoupled,
                                  step == 2)
        end
        equal_lists(dps, ps, "parameter")
        equal_lists(dms, ms, "exp_avg")
        equal_lists(dvs, vs, "exp_avg_sq")
      end
    end)
  end

  it("the multi-tensor step equals the single-tensor kernel on the device (float32)", function()
    local ps = on_dev(make("float32", 3))
    local qs = {}
    for i, p in ipairs(ps) do qs[i] = p:clone() end
    local ms, vs, qms, qvs = zeros_like_all(ps), zeros_like_all(ps), zeros_like_all(ps), zeros_like_all(ps)
    local gs = on_dev(make("float32", 4))
    ember._adam_multi_step_(ps, gs, ms, vs, {1, 1, 1, 1, 1, 1, 1}, 1e-3, 0.9, 0.999, 1e-8, 0.01, true, false)
    for i = 1, #qs do ember._adam_step_(qs[i], gs[i], qms[i], qvs[i], 1e-3, 0.9, 0.999, 1e-8, 0.01, true, 1, false) end
    for i = 1, #ps do same(ps[i], qs[i]:to("cpu"), {any_device = true, what = "parameter " .. i}) end
  end)

  it("lists longer than one kernel table: many tensors, and one cut between launches", function()
    -- 150 tensors (more than a table's 36 to 110) and one of 330 chunks of 65536 elements
    -- (more than a launch's 320 blocks): every op must still cover every element once
    local shapes = {}
    for i = 1, 150 do shapes[i] = {(i * 37) % 300} end
    shapes[151] = {330 * 65536 + 5}
    local ps = make("float32", 5, shapes)
    local gs = make("float32", 6, shapes)
    local ms, vs = zeros_like_all(ps), zeros_like_all(ps)
    local dps, dgs, dms, dvs = on_dev(ps), on_dev(gs), on_dev(ms), on_dev(vs)
    local steps = {}
    for i = 1, #ps do steps[i] = 1 end
    ember._adam_multi_step_(ps, gs, ms, vs, steps, 1e-2, 0.9, 0.999, 1e-8, 0, false, false)
    ember._adam_multi_step_(dps, dgs, dms, dvs, steps, 1e-2, 0.9, 0.999, 1e-8, 0, false, false)
    equal_lists(dps, ps, "parameter")
    equal_lists(dvs, vs, "exp_avg_sq")
    local f, df = ember.zeros(1), dev(ember.zeros(1))
    local inv = ember.tensor({0.25}, {dtype = "float32"})
    ember._amp_unscale_multi_(gs, f, inv)
    ember._amp_unscale_multi_(dgs, df, dev(inv))
    equal_lists(dgs, gs, "unscaled gradient")
    same(df, f)
    for _, p in ipairs({1, 2, math.huge}) do
      close(ember._multi_norm(dgs, p), ember._multi_norm(gs, p), {rtol = 1e-6, what = "norm " .. tostring(p)})
    end
    local total = ember.tensor(123.0)
    ember._multi_scale_(gs, total, 1.0)
    ember._multi_scale_(dgs, dev(total), 1.0)
    equal_lists(dgs, gs, "scaled gradient")
  end)
end)

describe("multi-tensor unscale, norm and clipping on the device", function()
  it("unscale flags inf and NaN and scales as the CPU does, in every float dtype", function()
    local gs = {ember.tensor({2.0, math.huge}), ember.tensor({8.0, 0 / 0}, {dtype = "float64"}),
                ember.tensor({1.0, 3.0}):to("bfloat16"), ember.tensor({5.0}):to("float16"), ember.zeros(0)}
    local dgs = on_dev(gs)
    local f, df = ember.zeros(1), dev(ember.zeros(1))
    ember._amp_unscale_multi_(gs, f, ember.tensor({0.5}, {dtype = "float32"}))
    ember._amp_unscale_multi_(dgs, df, dev(ember.tensor({0.5}, {dtype = "float32"})))
    for i = 1, #gs do same(dgs[i], gs[i], {what = "gradient " .. i}) end
    same(df, f)
    g.synchronize()
    assert.are.equal(1, df:item())
  end)

  it("GradScaler on the device: unscale_ reads nothing back, step reads found_inf once", function()
    local p = dev(ember.ones(3)):requires_grad_()
    local opt = optim.SGD({p}, {lr = 1})
    local scaler = ember.amp.GradScaler({init_scale = 8.0})
    scaler:scale((p * 1):sum()):backward()
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
    same(p:detach(), ember.zeros(3))
  end)

  for _, norm_type in ipairs({1, 2, math.huge}) do
    it("clip_grad_norm_ (norm_type " .. tostring(norm_type) .. ") matches the CPU", function()
      local function run(to)
        local ps = {}
        for i, t in ipairs(make("float32", 7)) do
          ps[i] = to(ember.zeros(t.shape)):requires_grad_()
          ps[i].grad = to(t)
        end
        local total = optim.clip_grad_norm_(ps, 0.5, {norm_type = norm_type})
        return total, ps
      end
      local want, wps = run(function(t) return t:clone() end)
      local got, gps = run(dev)
      close(got, want, {rtol = 1e-6})
      for i = 1, #wps do close(gps[i].grad, wps[i].grad, {rtol = 1e-5, what = "gradient " .. i}) end
    end)
  end

  it("optimizers on the device: the default multi-tensor path equals foreach = false", function()
    for _, name in ipairs({"SGD", "Adam", "AdamW"}) do
      local function run(extra)
        local ps = on_dev(make("float32", 8))
        for _, p in ipairs(ps) do p:requires_grad_() end
        local opts = {lr = 1e-2, momentum = name == "SGD" and 0.9 or nil, foreach = extra}
        local opt = optim[name](ps, opts)
        for step = 1, 2 do
          local gs = on_dev(make("float32", 80 + step))
          for i, p in ipairs(ps) do p.grad = gs[i] end
          opt:step()
        end
        return ps
      end
      local a, b = run(nil), run(false)
      for i = 1, #a do same(a[i]:detach(), b[i]:detach():to("cpu"), {what = name .. " parameter " .. i}) end
    end
  end)
end)

describe("multi-tensor ops across devices", function()
  cuda_it("groups a list holding CPU and device parameters by device", function()
    local ps = make("float32", 9)
    local mixed = {}
    for i, p in ipairs(ps) do mixed[i] = i % 2 == 0 and dev(p) or p:clone() end
    local gs = make("float32", 10)
    local mgs = {}
    for i, t in ipairs(gs) do mgs[i] = i % 2 == 0 and dev(t) or t:clone() end
    ember._sgd_multi_step_(ps, gs, nil, nil, 0.1, 0, 0, 0, false, false)
    ember._sgd_multi_step_(mixed, mgs, nil, nil, 0.1, 0, 0, 0, false, false)
    for i = 1, #ps do same(mixed[i], ps[i], {any_device = true, what = "parameter " .. i}) end
    local total = ember._multi_norm(mgs, 2)
    assert.are.equal("cpu", total.device)           -- the first gradient's device
    close(total, ember._multi_norm(gs, 2), {any_device = true, rtol = 1e-6})
  end)

  cuda_it("refuses a gradient, state or flag on another device", function()
    local p, gr = dev(ember.ones(2)), ember.ones(2)
    local ok, e = pcall(ember._sgd_multi_step_, {p}, {gr}, nil, nil, 0.1, 0, 0, 0, false, false)
    assert(not ok and tostring(e):find("sgd_step: parameter 1", 1, true), tostring(e))
    ok, e = pcall(ember._adam_multi_step_, {p}, {dev(gr)}, {ember.zeros(2)}, {dev(ember.zeros(2))}, {1}, 0.1, 0.9,
                  0.999, 1e-8, 0, false, false)
    assert(not ok and tostring(e):find("adam_step: parameter 1", 1, true), tostring(e))
    ok, e = pcall(ember._amp_unscale_multi_, {p}, ember.zeros(1), dev(ember.tensor({1.0})))
    assert(not ok and tostring(e):find("amp_unscale_", 1, true), tostring(e))
  end)
end)
