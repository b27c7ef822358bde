-- nn_optim_spec.lua (GPU) — nn.Module:to(device) moves parameters, their
-- gradients and buffers; layers compute on the device what they compute on
-- the CPU; SGD, Adam and AdamW steps (the fused optimizer kernels) match the
-- CPU's; optimizer state lives beside its parameter and follows it through
-- load_state_dict; a checkpoint of a device run resumes exactly.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local dev, close, same, agree = g.dev, g.close, g.same, g.agree
local nn = require("ember.nn")
local F = nn.functional
local optim = require("ember.optim")

local function all_on(list, device, what)
  for i, t in ipairs(list) do
    assert.are.equal(device, t.device, (what or "tensor") .. " " .. i)
  end
end

describe("Module:to", function()
  it("moves parameters, keeps requires_grad, moves gradients and buffers, returns the module", function()
    ember.manual_seed(1)
    local Net = nn.Module:extend("GpuNet")
    function Net:init()
      self.fc = nn.Linear(4, 3)
      self.norm = nn.LayerNorm(3)
      self:register_buffer("scale", ember.full({3}, 2.0))
      self:register_buffer("count", ember.tensor({7}))
    end
    function Net:forward(x) return self.norm(self.fc(x)) * self.scale end
    local m = Net()
    local before = {}
    for i, p in ipairs(m:parameters()) do before[i] = p:detach():clone() end
    local x = ember.randn(5, 4)
    local y_cpu = m(x)
    m(x):sum():backward()
    assert.are.equal(m, m:to(DEV))
    all_on(m:parameters(), g.devname, "parameter")
    for i, p in ipairs(m:parameters()) do
      assert.is_true(p.requires_grad)
      assert.is_true(p.is_leaf)
      assert.are.equal(g.devname, p.grad.device)
      same(p:detach(), before[i], {what = "parameter " .. i})
    end
    for _, b in ipairs({m.scale, m.count}) do assert.are.equal(g.devname, b.device) end
    assert.are.equal("int64", m.count.dtype)
    close(m(dev(x)), y_cpu:detach())
    -- and back
    m:cpu()
    all_on(m:parameters(), "cpu", "parameter")
    assert.are.equal("cpu", m.scale.device)
    m:to({device = DEV, dtype = "float64"})
    all_on(m:parameters(), g.devname, "parameter")
    assert.are.equal("float64", m.fc.weight.dtype)
    assert.are.equal("int64", m.count.dtype)
  end)

  it("layers give the CPU's outputs and gradients", function()
    ember.manual_seed(2)
    local layers = {
      function() return nn.Linear(6, 4) end,
      function() return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3), nn.Tanh()) end,
      function() return nn.Sequential(nn.LayerNorm(6), nn.GELU(), nn.SiLU(), nn.Sigmoid()) end,
      function() return nn.Sequential(nn.Flatten(), nn.Softmax(2)) end,
      function() return nn.LogSoftmax(2) end,
    }
    for k, make in ipairs(layers) do
      ember.manual_seed(10 + k)
      local mc = make()
      ember.manual_seed(10 + k)
      local md = make():to(DEV)
      local x = ember.randn(5, 6)
      local xc, xd = x:clone():requires_grad_(), g.leaf(x)
      local yc, yd = mc(xc), md(xd)
      close(yd, yc, {what = "layer " .. k})
      local gy = ember.randn(yc.shape)
      yc:backward(gy)
      yd:backward(dev(gy))
      close(xd.grad, xc.grad, {rtol = 1e-4, atol = 1e-5, what = "layer " .. k .. " input grad"})
      local pd = md:parameters()
      for i, p in ipairs(mc:parameters()) do close(pd[i].grad, p.grad, {rtol = 1e-4, atol = 1e-5, what = "layer " .. k .. " grad " .. i}) end
    end
    -- Embedding takes device indices
    ember.manual_seed(3)
    local ec = nn.Embedding(10, 4)
    ember.manual_seed(3)
    local ed = nn.Embedding(10, 4):to(DEV)
    local idx = ember.tensor({{1, 10, 3}, {3, 3, 7}})
    close(ed(dev(idx)), ec(idx))
  end)

  it("state_dict holds device tensors; load_state_dict copies a CPU state in place", function()
    ember.manual_seed(4)
    local src = nn.Linear(5, 3)
    local m = nn.Linear(5, 3):to(DEV)
    local w = m.weight
    for _, t in pairs(m:state_dict()) do assert.are.equal(g.devname, t.device) end
    m:load_state_dict(src:state_dict())
    assert.are.equal(w, m.weight)            -- the same tensor, updated in place
    assert.are.equal(g.devname, m.weight.device)
    same(m.weight:detach(), src.weight:detach())
    same(m.bias:detach(), src.bias:detach())
    -- and the other way round
    local back = nn.Linear(5, 3)
    local bw = back.weight
    back:load_state_dict(m:state_dict())
    assert.are.equal(bw, back.weight)        -- in place, so it stays on the CPU
    assert.are.equal("cpu", back.weight.device)
    same(back.weight:detach(), src.weight:detach(), {any_device = true})
  end)
end)

-- Steps an optimizer over params built by init() (a list of CPU tensors) on
-- device, feeding the gradients grads[step][i]; returns the final params and
-- the optimizer.
local function run(device, make_opt, init, grads, steps)
  local params = {}
  for i, p in ipairs(init) do
    params[i] = (device == "cpu" and p:clone() or dev(p)):requires_grad_()
  end
  local opt = make_opt(params)
  for s = 1, steps do
    for i, p in ipairs(params) do
      p.grad = device == "cpu" and grads[s][i]:clone() or dev(grads[s][i])
    end
    opt:step()
  end
  return params, opt
end

describe("optimizer steps match the CPU", function()
  local configs = {
    {"SGD", {lr = 0.1}},
    {"SGD", {lr = 0.05, momentum = 0.9}},
    {"SGD", {lr = 0.05, momentum = 0.9, dampening = 0.3, weight_decay = 0.01}},
    {"SGD", {lr = 0.05, momentum = 0.8, nesterov = true, weight_decay = 0.1}},
    {"SGD", {lr = 0.05, momentum = 0.5, maximize = true}},
    {"Adam", {lr = 1e-2}},
    {"Adam", {lr = 1e-2, betas = {0.8, 0.99}, eps = 1e-6, weight_decay = 0.1}},
    {"Adam", {lr = 1e-2, maximize = true}},
    {"AdamW", {lr = 1e-2}},
    {"AdamW", {lr = 3e-3, weight_decay = 0.5, betas = {0.5, 0.9}}},
  }
  for _, d in ipairs(g.float_dtypes) do
    for k, c in ipairs(configs) do
      local name, opts = c[1], c[2]
      it(("%s #%d, %s, 8 steps"):format(name, k, d), function()
        ember.manual_seed(20 + k)
        local init = {ember.randn(7, 5, {dtype = d}), ember.randn(5, {dtype = d}), ember.randn(1000, {dtype = d})}
        local grads = {}
        for s = 1, 8 do
          grads[s] = {}
          for i, p in ipairs(init) do grads[s][i] = ember.randn(p.shape, {dtype = d}) * (0.5 + s / 4) end
        end
        local make = function(params) return optim[name](params, opts) end
        local pc, oc = run("cpu", make, init, grads, 8)
        local pd, od = run(DEV, make, init, grads, 8)
        local tol = d == "float64" and {rtol = 1e-12, atol = 1e-12} or {rtol = 1e-5, atol = 1e-6}
        for i = 1, #init do
          close(pd[i]:detach(), pc[i]:detach(), {rtol = tol.rtol, atol = tol.atol, what = "parameter " .. i})
          for key, v in pairs(oc.state[pc[i]]) do
            local w = od.state[pd[i]][key]
            if ember.is_tensor(v) then
              assert.are.equal(g.devname, w.device, "state " .. key)
              close(w, v, {rtol = tol.rtol, atol = tol.atol, what = "state " .. key .. " of parameter " .. i})
            else
              assert.are.equal(v, w, "state " .. key)
            end
          end
        end
      end)
    end
  end
end)

describe("optimizer state follows its parameters", function()
  it("a CPU optimizer's state loads into a device optimizer and the runs continue alike", function()
    ember.manual_seed(40)
    for _, name in ipairs({"SGD", "Adam", "AdamW"}) do
      local opts = name == "SGD" and {lr = 0.1, momentum = 0.9} or {lr = 1e-2}
      local init = {ember.randn(6, 4), ember.randn(4)}
      local grads = {}
      for s = 1, 6 do grads[s] = {ember.randn(6, 4), ember.randn(4)} end
      -- three steps on the CPU, then three more on the CPU or on the device
      local pc, oc = run("cpu", function(p) return optim[name](p, opts) end, init, grads, 3)
      local pd = {}
      for i, p in ipairs(pc) do pd[i] = dev(p:detach()):requires_grad_() end
      local od = optim[name](pd, opts)
      od:load_state_dict(oc:state_dict())
      for i = 1, #pd do
        for key, v in pairs(od.state[pd[i]]) do
          if ember.is_tensor(v) then assert.are.equal(g.devname, v.device, name .. " state " .. key) end
        end
      end
      for s = 4, 6 do
        for i = 1, #pc do
          pc[i].grad = grads[s][i]:clone()
          pd[i].grad = dev(grads[s][i])
        end
        oc:step()
        od:step()
      end
      for i = 1, #pc do close(pd[i]:detach(), pc[i]:detach(), {what = name .. " parameter " .. i}) end
    end
  end)

  it("clip_grad_norm_ on device gradients", function()
    ember.manual_seed(41)
    local ps = {ember.randn(30, 20), ember.randn(20)}
    for _, norm_type in ipairs({2, 1, math.huge}) do
      local cs, ds = {}, {}
      for i, p in ipairs(ps) do
        cs[i] = p:clone():requires_grad_()
        cs[i].grad = p * 3
        ds[i] = dev(p):requires_grad_()
        ds[i].grad = dev(p * 3)
      end
      local nc = optim.clip_grad_norm_(cs, 1.0, {norm_type = norm_type})
      local nd = optim.clip_grad_norm_(ds, 1.0, {norm_type = norm_type})
      close(nd, nc, {rtol = 1e-5})
      for i = 1, #ps do close(ds[i].grad, cs[i].grad, {rtol = 1e-5}) end
    end
  end)

  it("a checkpoint of a device run resumes exactly, and loads onto the device", function()
    local path = os.tmpname()
    local function setup()
      ember.manual_seed(42)
      local m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)):to(DEV)
      return m, optim.AdamW(m:parameters(), {lr = 1e-2})
    end
    ember.manual_seed(43)
    local X, Y = dev(ember.randn(32, 8)), dev(ember.randint(1, 4, {32}))
    local function step(m, opt)
      opt:zero_grad()
      F.cross_entropy(F.dropout(m(X), 0.2, true), Y):backward()
      opt:step()
    end
    local m1, o1 = setup()
    for _ = 1, 3 do step(m1, o1) end
    ember.save_checkpoint(path, {model = m1, optimizer = o1, step = 3})
    for _ = 1, 3 do step(m1, o1) end
    local m2, o2 = setup()
    local info = ember.load_checkpoint(path, {model = m2, optimizer = o2})
    os.remove(path)
    assert.are.equal(3, info.step)
    all_on(m2:parameters(), g.devname, "parameter")
    for _ = 1, 3 do step(m2, o2) end
    local p1 = m1:parameters()
    for i, p in ipairs(m2:parameters()) do same(p:detach(), p1[i]:detach(), {what = "parameter " .. i}) end
    -- ember.load can place the tensors on the device
    local path2 = os.tmpname()
    ember.save(path2, m1:state_dict())
    local t = ember.load(path2, {device = DEV})
    os.remove(path2)
    for name, v in pairs(t) do
      assert.are.equal(g.devname, v.device, name)
      same(v, m1:state_dict()[name], {what = name})
    end
  end)
end)
