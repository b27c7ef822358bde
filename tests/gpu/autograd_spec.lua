-- autograd_spec.lua (GPU) — forward and backward on the device under test
-- against the CPU backend: elementwise ops, reductions, matmul, softmax,
-- cross-entropy (label smoothing, ignore_index, class weights), index ops,
-- views, layer norm, dropout; gradients across a device move, higher-order
-- gradients, accumulation and hooks; an MLP trained a few steps with AdamW
-- ends with the same parameters.
--
-- Each case runs in float64 (tight tolerances) and float32 (backward chains
-- several ops, so 1e-4 relative).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local dev, close = g.dev, g.close
local nn = require("ember.nn")
local F = nn.functional
local optim = require("ember.optim")

local TOL = {
  float64 = {rtol = 1e-10, atol = 1e-10},
  float32 = {rtol = 1e-4, atol = 1e-5},
}

-- Runs f on CPU leaves and on device leaves with the same values, compares
-- the outputs, backpropagates the same random upstream gradient through both
-- and compares the gradient of every float input. inputs: a function of the
-- dtype returning the input list (non-float tensors and other values pass
-- through without requiring grad).
local function grads_agree(f, make, dtypes)
  for _, d in ipairs(dtypes or g.float_dtypes) do
    ember.manual_seed(1234)
    local inputs = make(d)
    local cl, dl = {}, {}
    for i = 1, #inputs do
      local x = inputs[i]
      if ember.is_tensor(x) and x:is_floating_point() then
        cl[i] = x:detach():clone():requires_grad_()
        dl[i] = g.leaf(x)
      else
        cl[i], dl[i] = x, dev(x)
      end
    end
    local yc, yd = f(table.unpack(cl, 1, #inputs)), f(table.unpack(dl, 1, #inputs))
    local tol = TOL[d] or TOL.float32
    close(yd, yc, {rtol = tol.rtol, atol = tol.atol, what = d .. " forward"})
    local gy = ember.randn(yc.shape, {dtype = yc.dtype})
    yc:backward(gy)
    yd:backward(dev(gy))
    for i = 1, #inputs do
      if ember.is_tensor(cl[i]) and cl[i].requires_grad then
        if cl[i].grad == nil then
          assert(dl[i].grad == nil, d .. ": input " .. i .. " has a gradient on the device, none on the CPU")
        else
          assert(dl[i].grad, d .. ": input " .. i .. " has no gradient on the device")
          close(dl[i].grad, cl[i].grad, {rtol = tol.rtol, atol = tol.atol, what = d .. " gradient of input " .. i})
        end
      end
    end
  end
end

local function R(d, ...) local s = table.pack(...) s[s.n + 1] = {dtype = d} return ember.randn(table.unpack(s, 1, s.n + 1)) end
local function P(d, ...) return R(d, ...):abs() + 0.5 end

describe("elementwise", function()
  it("unary math", function()
    grads_agree(function(x)
      return x:exp() + x:sin() * x:cos() + x:tanh() + x:sigmoid() + x:relu() + x:gelu() + x:silu() + x:square() + x:abs() + x:expm1()
        + x:gelu({approximate = "tanh"}) - x:neg()
    end, function(d) return {R(d, 7, 9)} end)
    grads_agree(function(x) return x:log() + x:log1p() + x:sqrt() + x:rsqrt() + x:reciprocal() end,
      function(d) return {P(d, 6, 5)} end)
  end)

  it("binary ops with broadcasting, numbers on either side", function()
    grads_agree(function(a, b) return (a + b) * (a - b) / (b * b + 1) + a:maximum(b) - a:minimum(b) end,
      function(d) return {R(d, 4, 1, 6), R(d, 3, 1)} end)
    grads_agree(function(a, b) return a ^ b + 2 ^ b + a ^ 3 + 3 - a * 2 + 1 / a + a:pow(0.5) end,
      function(d) return {P(d, 5), R(d, 5)} end)
    grads_agree(function(a, b) return a % b + a:add(b, {alpha = 2}) + a:sub(b, {alpha = 0.5}) end,
      function(d) return {P(d, 8) * 3, P(d, 8)} end)
  end)

  it("clamp, where, masked_fill on strided operands", function()
    grads_agree(function(a, b, c)
      return a:clamp(-0.5, 0.5) + ember.where(c, a:t():t(), b) + a:masked_fill(c, 2) + a:t():clamp_min(0):t()
    end, function(d) return {R(d, 6, 6), R(d, 6), ember.rand(6, 6):gt(0.5)} end)
  end)
end)

describe("reductions", function()
  it("sum, mean, var, std, prod over dims", function()
    grads_agree(function(x)
      return x:sum() + x:sum(2):sum() + x:sum({1, 3}, true):sum() + x:mean() + x:mean(1):sum() + x:var(2):sum()
        + x:std({1, 2}):sum() + x:var({correction = 0})
    end, function(d) return {R(d, 3, 4, 5)} end)
    grads_agree(function(x) return x:prod(2) end, function(d) return {P(d, 4, 6)} end)
  end)

  it("amax, amin, max and min with indices, norm, logsumexp", function()
    grads_agree(function(x)
      local v = x:max(2)
      local w = x:min(1, true)
      return x:amax(1):sum() + x:amin(2):sum() + v:sum() + w:sum() + x:max() + x:norm() + x:norm(1, 1):sum()
        + x:norm(3, 2):sum() + x:norm(math.huge) + x:logsumexp(2):sum()
    end, function(d) return {R(d, 5, 7)} end)
  end)

  it("softmax and log_softmax along each dim; cumsum", function()
    for dim = 1, 3 do
      grads_agree(function(x) return x:softmax(dim) * 3 + x:log_softmax(dim) + x:cumsum(dim) end,
        function(d) return {R(d, 3, 4, 5)} end)
      grads_agree(function(x) return x:transpose(1, 3):softmax(dim) end, function(d) return {R(d, 3, 4, 5)} end)
    end
    grads_agree(function(x) return x:log_softmax(2) end, function(d) return {R(d, 4, 3000) * 5} end)
  end)
end)

describe("matmul", function()
  it("2-D, 1-D, batched with broadcasting, transposed operands, addmm, outer, dot", function()
    grads_agree(function(a, b) return a:matmul(b) end, function(d) return {R(d, 5, 7), R(d, 7, 3)} end)
    grads_agree(function(a, b) return a:t():matmul(b:t()) end, function(d) return {R(d, 7, 5), R(d, 3, 7)} end)
    grads_agree(function(a, b) return a:matmul(b) end, function(d) return {R(d, 2, 1, 4, 6), R(d, 3, 6, 5)} end)
    grads_agree(function(a, b) return ember.bmm(a, b) end, function(d) return {R(d, 3, 4, 6), R(d, 3, 6, 5)} end)
    grads_agree(function(a, b, v) return a:matmul(v) + b:t():matmul(v):sum() + v:matmul(b) + v:dot(v) end,
      function(d) return {R(d, 4, 6), R(d, 6, 4), R(d, 6)} end)
    grads_agree(function(c, a, b) return ember.addmm(c, a, b, {beta = 0.5, alpha = 2}) + ember.outer(a[1], b[1]):sum() end,
      function(d) return {R(d, 5), R(d, 3, 4), R(d, 4, 5)} end)
  end)
end)

describe("losses", function()
  it("cross_entropy with label smoothing, ignore_index, class weights and each reduction", function()
    local target = ember.tensor({1, 5, 3, -100, 2, 5, 4, -100, 1})
    for _, opts in ipairs({
      {}, {label_smoothing = 0.1}, {ignore_index = -100}, {reduction = "sum", label_smoothing = 0.2},
      {reduction = "none"}, {weight = true}, {weight = true, label_smoothing = 0.05, reduction = "sum"},
      {ignore_index = 3, weight = true},
    }) do
      grads_agree(function(x, t, w)
        local o = {}
        for k, v in pairs(opts) do o[k] = v end
        if o.weight then o.weight = w end
        if o.ignore_index and o.ignore_index ~= -100 then t = t:clamp_min(1) end
        return F.cross_entropy(x, t, o)
      end, function(d) return {R(d, 9, 5) * 2, target, ember.rand(5, {dtype = d}) + 0.5} end)
    end
  end)

  it("cross_entropy with probability targets and extra dims; nll, mse, bce", function()
    grads_agree(function(x, p) return F.cross_entropy(x, p, {label_smoothing = 0.1}) end,
      function(d) return {R(d, 6, 4), ember.rand(6, 4, {dtype = d}):softmax(2)} end)
    grads_agree(function(x, t) return F.cross_entropy(x, t) end,
      function(d) return {R(d, 3, 4, 5), ember.randint(1, 5, {3, 5})} end)
    grads_agree(function(x, t, y)
      return F.nll_loss(x:log_softmax(2), t) + F.mse_loss(x, y) + F.binary_cross_entropy_with_logits(x, y:sigmoid())
    end, function(d) return {R(d, 6, 4), ember.randint(1, 5, {6}), R(d, 6, 4)} end)
  end)
end)

describe("index ops and views", function()
  it("index_select, gather, masked_select, embedding", function()
    grads_agree(function(x, i, m)
      return x:index_select(1, i):sum(1) + x:gather(2, i:view(1, 6):expand(4, 6)):sum(1) + x:masked_select(m):sum()
        + F.embedding(i:view(2, 3), x):sum({1, 2})
    end, function(d) return {R(d, 4, 6), ember.tensor({1, 3, 3, 4, 2, 1}), ember.rand(4, 6):gt(0.5)} end)
  end)

  it("cat, stack, split, sort and topk values", function()
    grads_agree(function(a, b)
      local p, q = ember.cat({a, b, a}, 2):split(3, 2)
      local v = a:sort(2, true)
      local t = b:topk(2, 2)
      return ember.stack({p, q:narrow(2, 1, 3)}, 1):sum(1) + v:narrow(2, 1, 3) + t:sum(2, true)
    end, function(d) return {R(d, 4, 3), R(d, 4, 3)} end)
  end)

  it("transpose, permute, narrow, select, slice, expand, reshape, unfold, diagonal, indexing", function()
    grads_agree(function(x)
      local pieces = {
        x:transpose(1, 2):reshape(4, 15), x:permute(3, 1, 2):flatten(2), x:select(1, 2), x:narrow(3, 2, 3),
        x:slice(3, 1, 5, 2), x:narrow(1, 1, 1):expand(4, 4, 5), x:unfold(3, 2, 1), x[1]:diagonal(),
        x[{2, {1, 3}}], x:unsqueeze(2):squeeze(2), x:view(12, 5):t(), x[2][3], x:contiguous(),
      }
      for i, p in ipairs(pieces) do pieces[i] = p:reshape(-1) end
      return ember.cat(pieces)
    end, function(d) return {R(d, 3, 4, 5)} end)
  end)

  it("layer_norm, linear and dropout (the same mask from the same seed)", function()
    grads_agree(function(x, w, b, lw, lb)
      ember.manual_seed(99)
      local h = F.dropout(F.layer_norm(x, {6}, w, b), 0.3, true)
      return F.linear(h, lw, lb):tanh()
    end, function(d) return {R(d, 5, 6) * 2, R(d, 6), R(d, 6), R(d, 4, 6), R(d, 4)} end)
  end)
end)

describe("the tape across devices", function()
  it("a CPU leaf moved to the device gets its gradient back on the CPU", function()
    ember.manual_seed(5)
    local x = ember.randn(4, 5, {dtype = "float64", requires_grad = true})
    local y = (x:to(DEV):exp() * 2):sum(1):to("cpu")
    y:backward(ember.ones(5, {dtype = "float64"}))
    assert.are.equal("cpu", x.grad.device)
    close(x.grad, x:detach():exp() * 2, {any_device = true})
    -- and a device leaf used through the CPU
    local z = g.leaf(ember.randn(3, {dtype = "float64"}))
    local w = (z:cpu() * 3):sum()
    w:backward()
    assert.are.equal(g.devname, z.grad.device)
    close(z.grad, ember.full({3}, 3, {dtype = "float64"}))
  end)

  it("accumulation, retain_graph, hooks and higher-order gradients", function()
    ember.manual_seed(6)
    local xc = ember.randn(5, {dtype = "float64", requires_grad = true})
    local xd = g.leaf(xc:detach())
    local seen = {}
    for k, x in ipairs({xc, xd}) do
      x:register_hook(function(gr) seen[k] = gr:clone() return gr * 2 end)
      local y = (x ^ 3):sum()
      y:backward(nil, {retain_graph = true})
      y:backward()
    end
    close(seen[2], seen[1])
    close(xd.grad, xc.grad)
    local grads = {}
    for k, x in ipairs({xc:detach():requires_grad_(), xd:detach():requires_grad_()}) do
      local y = (x ^ 3):sum()
      local gx = ember.autograd.grad({y}, {x}, {create_graph = true})
      local ggx = ember.autograd.grad({gx:sum()}, {x})
      grads[k] = {gx:detach(), ggx}
    end
    close(grads[2][1], grads[1][1])
    close(grads[2][2], grads[1][2])
  end)
end)

describe("training", function()
  local function mlp(d)
    ember.manual_seed(77)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.GELU(), nn.Linear(16, 5)):to(d)
  end

  for _, d in ipairs(g.float_dtypes) do
    it("an MLP trained 5 steps with AdamW ends with the CPU's parameters, " .. d, function()
      ember.manual_seed(78)
      local X = ember.randn(64, 20, {dtype = d})
      local Y = ember.randint(1, 6, {64})
      local function train(device)
        local m = mlp(d):to(device)
        local opt = optim.AdamW(m:parameters(), {lr = 1e-2, weight_decay = 0.05})
        local x, y = X:to(device), Y:to(device)
        local losses = {}
        for step = 1, 5 do
          opt:zero_grad()
          local loss = F.cross_entropy(m(x), y, {label_smoothing = 0.1})
          loss:backward()
          nn.utils.clip_grad_norm_(m:parameters(), 1.0)
          opt:step()
          losses[step] = loss:item()
        end
        return m, losses
      end
      local mc, lc = train("cpu")
      local md, ld = train(DEV)
      local tol = d == "float64" and {rtol = 1e-9, atol = 1e-10} or {rtol = 1e-4, atol = 2e-5}
      for i = 1, 5 do
        assert(math.abs(ld[i] - lc[i]) <= tol.atol + tol.rtol * math.abs(lc[i]),
          ("loss at step %d: %.10g on the device, %.10g on the CPU"):format(i, ld[i], lc[i]))
      end
      local pd = md:parameters()
      for i, p in ipairs(mc:parameters()) do
        close(pd[i]:detach(), p:detach(), {rtol = tol.rtol, atol = tol.atol, what = d .. " parameter " .. i})
      end
    end)
  end
end)
