-- nn_extra_spec.lua (GPU) — the families that are composed in Lua from
-- engine ops: every activation and loss of nn.functional, the recurrent layers, the
-- optimizers beyond SGD/Adam, and custom autograd.Functions. Each computes on the
-- device what it computes on the CPU, values and gradients (float64, so differences are
-- the kernels' rounding, not the composition's).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close = g.dev, g.close
local nn = require("ember.nn")
local F = nn.functional
local optim = require("ember.optim")

local TOL = {rtol = 1e-10, atol = 1e-12}

local function D(...) return ember.randn({...}, {dtype = "float64"}) end

-- f(inputs...) on the CPU and on device copies: its value and the gradient of
-- sum(f * w) with respect to every input agree
local function value_and_grads(f, inputs, what)
  local function run(xs)
    local leaves = {}
    for i, x in ipairs(xs) do
      leaves[i] = (ember.is_tensor(x) and x:is_floating_point()) and x:detach():clone():requires_grad_() or x
    end
    local y = f(table.unpack(leaves, 1, #xs))
    local w = ember.linspace(-1, 1, y:numel(), {dtype = y.dtype}):reshape(y.shape)
    if y.device ~= "cpu" then w = w:to(y.device) end
    local gs = {}
    local wanted = {}
    for i, l in ipairs(leaves) do
      if ember.is_tensor(l) and l.requires_grad then wanted[#wanted + 1] = l end
    end
    local got = {ember.autograd.grad((y * w):sum(), wanted, {allow_unused = true})}
    for i = 1, #wanted do gs[i] = got[i] end
    return y:detach(), gs
  end
  -- device copies of the inputs, the tensors of an options table included ({pos_weight =}):
  -- like PyTorch, a loss wants all its tensors on one device
  local dins = {}
  for i, x in ipairs(inputs) do
    if type(x) == "table" and not ember.is_tensor(x) then
      dins[i] = {}
      for k, v in pairs(x) do dins[i][k] = dev(v) end
    else
      dins[i] = dev(x)
    end
  end
  local y_cpu, g_cpu = run(inputs)
  local y_dev, g_dev = run(dins)
  close(y_dev, y_cpu, {rtol = TOL.rtol, atol = TOL.atol, what = what .. " value"})
  for i = 1, #g_cpu do
    if g_cpu[i] then close(g_dev[i], g_cpu[i], {rtol = TOL.rtol, atol = TOL.atol, what = what .. " gradient " .. i}) end
  end
end

describe("activations", function()
  local cases = {
    {"relu"}, {"relu6"}, {"hardtanh", -0.5, 0.7}, {"leaky_relu", 0.2}, {"elu", 1.3}, {"selu"}, {"celu", 0.8},
    {"gelu"}, {"gelu", {approximate = "tanh"}}, {"silu"}, {"mish"}, {"hardswish"}, {"hardsigmoid"},
    {"softplus", 2, 3}, {"softsign"}, {"tanhshrink"}, {"threshold", 0.1, -2}, {"logsigmoid"},
    {"softmax", 2}, {"log_softmax", 2}, {"softmin", 2}, {"hardshrink", 0.3}, {"softshrink", 0.3}, {"glu", 2},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " agrees with the CPU, values and gradients", function()
      ember.manual_seed(3)
      local x = D(6, 8) * 3
      value_and_grads(function(t) return F[c[1]](t, table.unpack(c, 2)) end, {x}, c[1])
    end)
  end
  it("prelu agrees, the weight's gradient included", function()
    value_and_grads(function(x, w) return F.prelu(x, w) end, {D(4, 3, 5), D(3) * 0.1}, "prelu")
  end)
  it("normalize, cosine_similarity and pairwise_distance agree", function()
    value_and_grads(function(x) return F.normalize(x) end, {D(5, 4)}, "normalize")
    value_and_grads(function(a, b) return F.cosine_similarity(a, b) end, {D(5, 4), D(5, 4)}, "cosine_similarity")
    value_and_grads(function(a, b) return F.pairwise_distance(a, b) end, {D(5, 4), D(5, 4)}, "pairwise_distance")
  end)
end)

describe("losses", function()
  local function prob(...) return ember.rand({...}, {dtype = "float64"}) * 0.9 + 0.05 end
  local function sign(n) return (ember.rand(n, {dtype = "float64"}) - 0.5):sign() end
  local cases = {
    {"l1_loss", function() return {D(4, 5), D(4, 5)} end},
    {"smooth_l1_loss", function() return {D(4, 5), D(4, 5)} end},
    {"huber_loss", function() return {D(4, 5), D(4, 5), {delta = 0.7}} end},
    {"binary_cross_entropy", function() return {prob(4, 5), prob(4, 5)} end},
    {"binary_cross_entropy_with_logits", function() return {D(4, 5), prob(4, 5), {pos_weight = prob(5) * 3}} end},
    {"kl_div", function() return {prob(4, 5):log(), prob(4, 5), {reduction = "batchmean"}} end},
    {"poisson_nll_loss", function() return {D(4, 5), prob(4, 5) * 4} end},
    {"gaussian_nll_loss", function() return {D(4, 5), D(4, 5), prob(4, 5)} end},
    {"cosine_embedding_loss", function() return {D(4, 5), D(4, 5), sign(4)} end},
    {"margin_ranking_loss", function() return {D(6), D(6), sign(6), {margin = 0.2}} end},
    {"hinge_embedding_loss", function() return {D(4, 5), sign(20):reshape(4, 5)} end},
    {"triplet_margin_loss", function() return {D(4, 5), D(4, 5), D(4, 5)} end},
    {"multilabel_soft_margin_loss", function() return {D(4, 5), (prob(4, 5) - 0.5):gt(0):to("float64")} end},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " agrees with the CPU, values and gradients", function()
      ember.manual_seed(7)
      local args = c[2]()
      value_and_grads(function(...) return F[c[1]](...) end, args, c[1])
    end)
  end
end)

describe("recurrent layers", function()
  local function module_agrees(make, x, state, what)
    ember.manual_seed(11)
    local m_cpu = make()
    ember.manual_seed(11)
    local m_dev = make():to(g.DEV)
    local function run(m, input, st)
      local out, s = m(input, st)
      local total = out:sum()
      local hs = type(s) == "table" and s or {s}
      for _, h in ipairs(hs) do total = total + (h * h):sum() end
      total:backward()
      return out:detach()
    end
    local dstate = state
    if type(state) == "table" then dstate = {dev(state[1]), dev(state[2])} elseif state then dstate = dev(state) end
    close(run(m_dev, dev(x), dstate), run(m_cpu, x, state), {rtol = TOL.rtol, atol = TOL.atol, what = what})
    local pd, pc = m_dev:parameters(), m_cpu:parameters()
    for i = 1, #pc do close(pd[i].grad, pc[i].grad, {rtol = 1e-9, atol = 1e-11, what = what .. " parameter " .. i}) end
  end
  it("RNN, LSTM (projections) and GRU, two layers, bidirectional, batch_first", function()
    local x = D(3, 5, 4)
    module_agrees(function() return nn.RNN(4, 6, {num_layers = 2, bidirectional = true, batch_first = true,
                                                  dtype = "float64"}) end, x, nil, "RNN")
    module_agrees(function() return nn.LSTM(4, 6, {num_layers = 2, bidirectional = true, batch_first = true,
                                                   proj_size = 3, dtype = "float64"}) end, x, nil, "LSTM")
    module_agrees(function() return nn.GRU(4, 6, {num_layers = 2, bidirectional = true, batch_first = true,
                                                  dtype = "float64"}) end, x, nil, "GRU")
  end)
  it("the cells", function()
    module_agrees(function() return nn.GRUCell(4, 6, {dtype = "float64"}) end, D(3, 4), D(3, 6), "GRUCell")
    module_agrees(function() return nn.RNNCell(4, 6, {dtype = "float64"}) end, D(3, 4), D(3, 6), "RNNCell")
  end)
end)

describe("optimizers", function()
  local cases = {
    {"RMSprop", {lr = 0.01, momentum = 0.9, centered = true, weight_decay = 0.1}},
    {"Adagrad", {lr = 0.1, lr_decay = 0.01, weight_decay = 0.1}},
    {"Adamax", {lr = 0.01, weight_decay = 0.1}},
    {"NAdam", {lr = 0.01}},
    {"RAdam", {lr = 0.01}},
    {"Adadelta", {lr = 1, weight_decay = 0.1}},
    {"Rprop", {lr = 0.01}},
    {"Adam", {lr = 0.01, amsgrad = true, maximize = true}},
    {"AdamW", {lr = 0.01, amsgrad = true}},
    {"SGD", {lr = 0.01, momentum = 0.9, nesterov = true}},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " takes the same steps on the device", function()
      ember.manual_seed(5)
      local p0, grads = D(4, 3), {D(4, 3), D(4, 3), D(4, 3), D(4, 3)}
      local function run(to)
        local p = to(p0):requires_grad_()
        local opt = optim[c[1]]({p}, c[2])
        for _, gr in ipairs(grads) do
          p.grad = to(gr)
          opt:step()
        end
        return p:detach()
      end
      close(run(dev), run(function(t) return t:clone() end), {rtol = 1e-10, atol = 1e-12, what = c[1]})
    end)
  end
  it("LBFGS with strong Wolfe on a quadratic", function()
    local A = D(4, 4)
    A = A:matmul(A:t()) + ember.eye(4, {dtype = "float64"}) * 4
    local b = D(4)
    local function run(to)
      local x = to(ember.zeros(4, {dtype = "float64"})):requires_grad_()
      local AA, bb = to(A), to(b)
      local opt = optim.LBFGS({x}, {lr = 1, line_search_fn = "strong_wolfe"})
      for _ = 1, 3 do
        opt:step(function()
          opt:zero_grad()
          local loss = 0.5 * x:matmul(AA:matmul(x)) - bb:matmul(x)
          loss:backward()
          return loss
        end)
      end
      return x:detach()
    end
    close(run(dev), run(function(t) return t:clone() end), {rtol = 1e-9, atol = 1e-11, what = "LBFGS"})
  end)
end)

describe("autograd.Function", function()
  it("runs a custom forward and backward on the device", function()
    local Cube = ember.autograd.Function:extend("GpuCube")
    function Cube.forward(ctx, x) ctx:save_for_backward(x); return x * x * x end
    function Cube.backward(ctx, gr) local x = ctx.saved_tensors[1]; return gr * 3 * x * x end
    value_and_grads(function(x) return Cube.apply(x) end, {D(3, 4)}, "Cube")
    local gd = ember.autograd.grad(Cube.apply(dev(D(3)):requires_grad_()):sum(),
                                   {dev(D(3)):requires_grad_()}, {allow_unused = true})
    assert.is_nil(gd)
  end)
end)

describe("amp.GradScaler", function()
  it("unscales, skips the poisoned step and updates the scale as on the CPU", function()
    local function run(to)
      local p = to(ember.tensor({1.0, -2.0, 3.0})):requires_grad_()
      local opt = optim.Adam({p}, {lr = 0.01})
      local s = ember.amp.GradScaler({growth_interval = 2})
      local scales = {}
      for i = 1, 5 do
        opt:zero_grad()
        s:scale((p * p):sum()):backward()
        if i == 3 then p.grad[2] = 0 / 0 end
        s:step(opt)
        s:update()
        scales[i] = s:get_scale()
      end
      return p:detach(), scales
    end
    local pd, sd = run(dev)
    local pc, sc = run(function(t) return t:clone() end)
    close(pd, pc, {what = "parameters"})
    assert.are.same(sc, sd)
    assert.are.same({65536, 131072, 65536, 65536, 131072}, sc)
  end)
end)
