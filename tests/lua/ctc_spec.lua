-- ctc_spec.lua — F.ctc_loss and nn.CTCLoss (lua/ember/nn/ctc.lua): values and float64
-- gradients of the logits against PyTorch 2.15 (fixtures/ctc.lua, written by
-- scripts/fixtures/make_ctc_fixtures.py), the gradient with respect to log_probs itself
-- (by finite differences, and beside PyTorch's, which is the logits' gradient instead),
-- no NaN from -inf states, printing, and what bad input gets.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local THIS_FILE = "ctc_spec.lua:"
local FIX = h.fixture("ctc.lua")

local function T64(v) return ember.tensor(v, {dtype = "float64"}) end
local function I(v) return ember.tensor(v, {dtype = "int64"}) end

describe("ctc_loss against PyTorch (fixtures)", function()
  for _, c in ipairs(FIX.cases) do
    it(c.name .. ": " .. c.call, function() h.run_fixture_case(c) end)
  end
end)

describe("ctc_loss: the gradient with respect to log_probs", function()
  -- PyTorch's backward returns exp(log_probs) - posterior (the logits' gradient, right only
  -- after log_softmax's backward); ember's is the true one, -posterior: they differ by
  -- w_b exp(log_probs) at every frame t < input_lengths[b]
  for _, c in ipairs(FIX.direct) do
    it("differs from PyTorch's by exp(log_probs) on the input frames: " .. c.name, function()
      local lp = h.from_spec(c.lp):requires_grad_()
      local loss = F.ctc_loss(lp, h.from_spec(c.targets) + 1, c.il, c.tl, {reduction = "none"})
      h.compare("loss", loss, c.out, 1e-10)
      local w = h.from_spec(c.weights)
      local g = ember.autograd.grad({(loss * w):sum()}, {lp})
      local Tn, N = c.lp.shape[1], c.lp.shape[2]
      local frames = ember.arange(1, Tn + 1):reshape(Tn, 1, 1):le(I(c.il):reshape(1, N, 1)):to("float64")
      local torch_like = g + lp:detach():exp() * w:reshape(1, N, 1) * frames
      h.compare("ember's gradient + w exp(log_probs)", torch_like, c.grad, 1e-10)
    end)
  end

  it("matches finite differences (padded, mean, unreachable states, a short input)", function()
    ember.manual_seed(3)
    local lp = ember.randn(7, 3, 4, {dtype = "float64"}):log_softmax(3)
    local tg = I({{2, 3, 3}, {4, 1, 1}, {2, 1, 1}})
    h.gradcheck_ok(function(x) return F.ctc_loss(x, tg, {7, 5, 3}, {3, 1, 1}) end, {lp:requires_grad_()})
  end)

  it("matches finite differences (concatenated, none, blank 3, log_probs not normalised)", function()
    ember.manual_seed(4)
    local lp = ember.randn(6, 2, 4, {dtype = "float64"}) * 0.5 - 1
    local tg = I({1, 2, 4, 4})
    h.gradcheck_ok(function(x) return F.ctc_loss(x, tg, I({6, 6}), I({3, 1}), {blank = 3, reduction = "none"}) end,
                   {lp:requires_grad_()})
  end)

  it("matches finite differences (unbatched, sum, an empty target)", function()
    ember.manual_seed(5)
    local lp = ember.randn(5, 3, {dtype = "float64"}):log_softmax(2)
    h.gradcheck_ok(function(x) return F.ctc_loss(x, I({}), ember.tensor(5), ember.tensor(0), {reduction = "sum"}) end,
                   {lp:requires_grad_()})
  end)

  it("is 0 past each input's length and finite wherever the loss is", function()
    ember.manual_seed(6)
    local lp = ember.randn(40, 4, 6, {dtype = "float64"}):log_softmax(3):requires_grad_()
    local tg = ember.randint(2, 7, {4, 12})
    local loss = F.ctc_loss(lp, tg, {40, 30, 25, 12}, {12, 10, 3, 5}, {reduction = "sum"})
    loss:backward()
    assert.is_true(loss:isfinite():item())
    assert.is_true(lp.grad:isfinite():all():item())
    assert.equal(0, lp.grad:narrow(1, 31, 10):select(2, 2):abs():sum():item())
    assert.equal(0, lp.grad:narrow(1, 13, 28):select(2, 4):abs():sum():item())
  end)
end)

describe("ctc_loss: special cases", function()
  it("float32 log_probs give float32 losses and gradients", function()
    local lp = ember.randn(5, 2, 4):log_softmax(3):requires_grad_()
    local loss = F.ctc_loss(lp, I({{2, 3}, {4, 1}}), {5, 4}, {2, 1})
    assert.equal("float32", loss.dtype)
    loss:backward()
    assert.equal("float32", lp.grad.dtype)
  end)

  it("agrees with itself across padded and concatenated targets, tensors and lists", function()
    ember.manual_seed(8)
    local lp = ember.randn(8, 3, 5, {dtype = "float64"}):log_softmax(3)
    local a = F.ctc_loss(lp, I({{2, 3, 1, 1}, {5, 5, 1, 1}, {4, 1, 1, 1}}), I({8, 7, 6}), I({2, 2, 1}), {reduction = "none"})
    local b = F.ctc_loss(lp, I({2, 3, 5, 5, 4}), {8, 7, 6}, {2, 2, 1}, nil, "none")
    h.close_tensors("padded vs concatenated", a, b, 0)
  end)

  it("the loss of a single frame is -log_probs of the one label", function()
    local lp = T64({{{-0.5, -1.5, -2.5}}})
    h.close_tensors("one frame", F.ctc_loss(lp, I({{3}}), {1}, {1}, {reduction = "sum"}), T64(2.5), 1e-15)
    h.close_tensors("one frame, blank only", F.ctc_loss(lp, I({{3}}), {1}, {0}, {reduction = "sum"}), T64(0.5), 1e-15)
  end)

  it("input_lengths past the frames still read stop at each sample's own length", function()
    ember.manual_seed(9)
    local lp = ember.randn(6, 2, 4, {dtype = "float64"}):log_softmax(3)
    local full = F.ctc_loss(lp, I({{2, 3}, {4, 2}}), {6, 3}, {2, 2}, {reduction = "none"})
    local short = F.ctc_loss(lp:narrow(1, 1, 3):select(2, 2), I({4, 2}), {3}, {2}, {reduction = "none"})
    h.close_tensors("sample 2 alone", full[2], short, 1e-14)
  end)

  it("under no_grad: values only, impossible samples included", function()
    local lp = ember.randn(3, 2, 4, {dtype = "float64"}):log_softmax(3):requires_grad_()
    local loss = ember.no_grad(function() return F.ctc_loss(lp, I({{2, 2, 2}, {3, 1, 1}}), {3, 3}, {3, 1}, {reduction = "none"}) end)
    assert.equal(math.huge, loss[1]:item())
    assert.is_false(loss.requires_grad)
  end)

  it("one sample's lengths may be plain numbers (PyTorch takes tensors or lists)", function()
    local lp = ember.randn(7, 4, {dtype = "float64"}):log_softmax(2)
    h.close_tensors("numbers vs tensors", F.ctc_loss(lp, I({2, 4}), 7, 2.0),
                    F.ctc_loss(lp, I({2, 4}), ember.tensor(7), I({2})), 0)
  end)

  it("a module: nn.CTCLoss(...)(log_probs, targets, input_lengths, target_lengths) equals F.ctc_loss", function()
    ember.manual_seed(10)
    local lp = ember.randn(5, 2, 4, {dtype = "float64"}):log_softmax(3)
    local m = nn.CTCLoss({blank = 4, reduction = "sum"})
    h.close_tensors("module", m(lp, I({{1, 2}, {3, 3}}), {5, 5}, {2, 2}),
                    F.ctc_loss(lp, I({{1, 2}, {3, 3}}), {5, 5}, {2, 2}, {blank = 4, reduction = "sum"}), 0)
  end)
end)

describe("ctc_loss on a CUDA device (skipped without one; EMBER_CUDA=emu runs it on the CPU)", function()
  it("gives the CPU's values and gradients, impossible samples and concatenated targets included", function()
    if not ember.cuda.is_available() then return end
    ember.manual_seed(11)
    local x = ember.randn(6, 3, 5, {dtype = "float64"})
    local function run(dev)
      local xx = x:to(dev):detach():clone():requires_grad_()
      local lp = xx:log_softmax(3)
      local a = F.ctc_loss(lp, I({{2, 3, 3}, {4, 2, 2}, {5, 2, 1}}):to(dev), I({6, 2, 4}):to(dev), {3, 3, 2},
                           {reduction = "none"})
      local b = F.ctc_loss(lp, I({2, 3, 3, 4, 5, 2}), {6, 5, 4}, {3, 1, 2}, {zero_infinity = true, blank = 1})
      ;(a:nan_to_num(0, 0):sum() + b):backward()
      return a:to("cpu"), b:to("cpu"), xx.grad:to("cpu")
    end
    local a1, b1, g1 = run("cpu")
    local a2, b2, g2 = run("cuda")
    h.close_tensors("values", a2, a1, 1e-12)
    h.close_tensors("mean", b2, b1, 1e-12)
    assert.is_true(g1:isnan():equal(g2:isnan()))
    assert.is_true(g2:select(2, 2):narrow(1, 1, 2):isnan():all():item())   -- sample 2 is impossible
    h.close_tensors("gradients", g2:nan_to_num(0), g1:nan_to_num(0), 1e-12)
  end)
end)

describe("nn.CTCLoss: printing", function()
  it("shows the settings that are not the defaults", function()
    assert.equal("CTCLoss()", (tostring(nn.CTCLoss()):match("^[^\n]*")))
    assert.equal("CTCLoss(blank=3, reduction=\"sum\", zero_infinity=true)",
                 (tostring(nn.CTCLoss(3, "sum", true)):match("^[^\n]*")))
    assert.equal("CTCLoss(zero_infinity=true)", (tostring(nn.CTCLoss({zero_infinity = true})):match("^[^\n]*")))
  end)
end)

describe("ctc_loss: bad input", function()
  local lp = ember.randn(5, 2, 4):log_softmax(3)
  local tg = I({{2, 3}, {4, 1}})
  local function ctc(...) return (F.ctc_loss(...)) end   -- not a tail call: the error names this file

  local function fails(text, ...)
    local msg = err(ctc, ...)
    has(msg, "ctc_loss")
    has(msg, text)
    has(msg, THIS_FILE)
    return msg
  end

  it("log_probs of the wrong rank, dtype, or empty", function()
    fails("[T, N, C]", ember.randn(5), I({1}), {5}, {1})
    fails("[T, N, C]", ember.randn(5, 2, 4, 1), tg, {5, 5}, {2, 1})
    fails("got [5]", ember.randn(5), I({1}), {5}, {1})
    fails("float32 or float64", lp:to("int64"), tg, {5, 5}, {2, 1})
    fails("float32 or float64", lp:to("float16"), tg, {5, 5}, {2, 1})
    fails("float32 or float64", lp:to("bfloat16"), tg, {5, 5}, {2, 1})
    fails("must not be empty", ember.randn(0, 2, 4), tg, {0, 0}, {0, 0})
    fails("must not be empty", ember.randn(5, 0, 4), I({}), {}, {})
    fails("log_probs must be a tensor", "x", tg, {5, 5}, {2, 1})
  end)

  it("targets of the wrong rank, dtype, batch or length", function()
    fails("integer tensor", lp, tg:to("float32"), {5, 5}, {2, 1})
    fails("integer tensor", lp, tg:gt(0), {5, 5}, {2, 1})
    fails("[N, S] (padded) or [sum(target_lengths)]", lp, tg:reshape(2, 2, 1), {5, 5}, {2, 1})
    fails("[N, S] (padded) or [sum(target_lengths)]", lp, ember.tensor(1), {5, 5}, {2, 1})
    fails("one row per sample (batch size 2)", lp, I({{2, 3}}), {5, 5}, {2, 1})
    fails("shorter than the longest target length 3", lp, tg, {5, 5}, {3, 1})
    fails("sum(target_lengths) = 3", lp, I({2, 3}), {5, 5}, {2, 1})
    fails("sum(target_lengths) = 3", lp, I({2, 3, 4, 1}), {5, 5}, {2, 1})
    fails("targets must be a tensor", lp, {{2, 3}, {4, 1}}, {5, 5}, {2, 1})
  end)

  it("labels out of range or equal to blank (only those within the target lengths are read)", function()
    fails("target label 5 out of range for 4 classes", lp, I({{2, 5}, {4, 1}}), {5, 5}, {2, 1})
    fails("target label 0 out of range", lp, I({{2, 0}, {4, 1}}), {5, 5}, {2, 1})
    fails("target label -1 out of range", lp, I({2, 3, -1}), {5, 5}, {2, 1})
    fails("blank class 1", lp, I({{2, 1}, {4, 1}}), {5, 5}, {2, 1})
    fails("blank class 3", lp, tg, {5, 5}, {2, 1}, {blank = 3})
    -- padding past the lengths is never read: any value is fine
    assert.is_true(F.ctc_loss(lp, I({{2, -7}, {4, 99}}), {5, 5}, {1, 1}):isfinite():item())
  end)

  it("lengths: wrong count, out of range, negative, not integers", function()
    fails("input_lengths must have one entry per sample (batch size 2), got 3", lp, tg, {5, 5, 5}, {2, 1})
    fails("target_lengths must have one entry per sample (batch size 2), got 1", lp, tg, I({5, 5}), I({2}))
    fails("input_lengths[1] = 6 must be in 0..5", lp, tg, {6, 5}, {2, 1})
    fails("input_lengths[2] = -1 must be in 0..5", lp, tg, I({5, -1}), {2, 1})
    fails("target_lengths[1] = -1 must not be negative", lp, tg, {5, 5}, {-1, 1})
    fails("input_lengths must be an integer tensor", lp, tg, T64({5, 5}), {2, 1})
    fails("target_lengths must be an integer tensor", lp, tg, {5, 5}, I({2, 1}):gt(0))
    fails("input_lengths must hold integers, got 4.5", lp, tg, {4.5, 5}, {2, 1})
    fails("input_lengths must be an integer tensor or a list of integers, got string", lp, tg, "5", {2, 1})
    fails("target_lengths must be a list of integers", lp, tg, {5, 5}, {2, 1, x = 1})
    fails("input_lengths must hold integers, got 5 at position 1", lp, tg, {"5", 5}, {2, 1})
    fails("input_lengths must hold integers, got inf", lp, tg, {math.huge, 5}, {2, 1})
    fails("input_lengths must have one entry per sample (batch size 2), got 1", lp, tg, 5, {2, 1})
    fails("target_lengths must be an integer, got 1.5", lp:select(2, 1), I({2}), 5, 1.5)
  end)

  it("blank, reduction, zero_infinity and unknown options", function()
    fails("blank must be a class index in 1..4", lp, tg, {5, 5}, {2, 1}, {blank = 5})
    fails("blank must be a class index in 1..4", lp, tg, {5, 5}, {2, 1}, {blank = 0})
    fails("blank must be an integer", lp, tg, {5, 5}, {2, 1}, {blank = 1.5})
    fails("blank must be an integer", lp, tg, {5, 5}, {2, 1}, {blank = math.huge})
    fails("blank must be an integer", lp, tg, {5, 5}, {2, 1}, {blank = "2"})
    fails("reduction must be \"mean\", \"sum\" or \"none\", got avg", lp, tg, {5, 5}, {2, 1}, {reduction = "avg"})
    fails("zero_infinity must be a boolean", lp, tg, {5, 5}, {2, 1}, {zero_infinity = 1})
    fails("unknown option 'ignore_index'", lp, tg, {5, 5}, {2, 1}, {ignore_index = 1})
    fails("too many positional arguments", lp, tg, {5, 5}, {2, 1}, 1, "mean", false, 3)
    fails("got multiple values for argument 'blank'", lp, tg, {5, 5}, {2, 1}, 1, {blank = 1})
  end)

  it("nn.CTCLoss checks its settings and its arguments", function()
    local msg = err(function() return (nn.CTCLoss({reduction = "avg"})) end)
    has(msg, "CTCLoss: reduction must be"); has(msg, THIS_FILE)
    has(err(function() return nn.CTCLoss(0) end), "blank must be a class index >= 1")
    has(err(function() return nn.CTCLoss({zero_infinity = "yes"}) end), "zero_infinity must be a boolean")
    has(err(function() return nn.CTCLoss({weight = 1}) end), "unknown option 'weight'")
    msg = err(function() return (nn.CTCLoss()(lp, tg, {5, 5})) end)
    has(msg, "CTCLoss: expected 4 arguments"); has(msg, THIS_FILE)
    has(err(function() return nn.CTCLoss(7)(lp, tg, {5, 5}, {2, 1}) end), "blank must be a class index in 1..4")
  end)
end)

describe("ctc_loss: random (mostly wrong) arguments fail clearly", function()
  -- robustness_spec.lua calls ember.* and tensor methods only: the same for these two
  local function random_arg()
    local choices = {
      function() return ember.randn(5, 2, 4):log_softmax(3) end,
      function() return ember.randn(5, 4, {dtype = "float64"}) end,
      function() return ember.randint(-1, 6, {2, 3}) end,
      function() return ember.randint(0, 6, {4}):to("int32") end,
      function() return ember.tensor({5, 3}) end,
      function() return ember.tensor(4) end,
      function() return ember.zeros(0, 3) end,
      function() return ember.tensor({true, false}) end,
      function() return math.random(-2, 6) end,
      function() return math.random() * 4 end,
      function() return {math.random(-1, 6), math.random(-1, 6)} end,
      function() return {} end,
      function() return "x" end,
      function() return nil end,
      function() return math.huge end,
      function() return {reduction = "sum"} end,
      function() return {blank = math.random(-1, 6), zero_infinity = true} end,
    }
    return choices[math.random(#choices)]()
  end
  for seed = 1, 3 do
    it("seed " .. seed, function()
      math.randomseed(seed)
      for _ = 1, 400 do
        -- each of the four required arguments right (for log_probs [5, 2, 4]) half the time
        local right = {
          function() return ember.randn(5, 2, 4):log_softmax(3) end,
          function() return ember.randint(2, 5, {2, 3}) end,
          function() return ({{5, 4}, ember.tensor({5, 1}), {0, 5}})[math.random(3)] end,
          function() return ({{2, 1}, ember.tensor({3, 0}), {0, 0}})[math.random(3)] end,
        }
        local n = math.random(0, 6)
        local a = {}
        for i = 1, n do a[i] = (right[i] and math.random(2) == 1) and right[i]() or random_arg() end
        local ok, e = pcall(F.ctc_loss, table.unpack(a, 1, n))
        if not ok then
          local msg = tostring(e):gsub("^[^:]+:%d+: ", "")
          assert(msg:match("^ctc_loss: "), "F.ctc_loss raised an unclear error: " .. tostring(e))
        else
          assert(ember.is_tensor(e), "F.ctc_loss returned a " .. type(e))
        end
        local m
        ok, m = pcall(nn.CTCLoss, table.unpack(a, 5, math.max(n, 4)))
        if ok then
          ok, e = pcall(m, table.unpack(a, 1, math.min(n, 4)))
          if not ok then
            local msg = tostring(e):gsub("^[^:]+:%d+: ", "")
            assert(msg:match("^ctc_loss: ") or msg:match("^CTCLoss: "), "nn.CTCLoss raised an unclear error: " .. tostring(e))
          end
        else
          assert(tostring(m):gsub("^[^:]+:%d+: ", ""):match("^CTCLoss: "), "nn.CTCLoss raised an unclear error: " .. tostring(m))
        end
      end
    end)
  end
end)
