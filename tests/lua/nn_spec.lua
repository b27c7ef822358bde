-- nn_spec.lua — ember.nn: the Module class system (registration, names, order,
-- train/eval, to, state_dict), layers against hand computations, PyTorch's
-- default initialisation, losses against PyTorch 1.13 numbers (generated with
-- torch.nn.functional on the literal inputs written here; class indices
-- shifted to 1-based), gradients (gradcheck and PyTorch literals), a small
-- training run, and the error messages.
local ember = require "ember"
local h = require "helpers"
local check, err, has = h.check, h.err, h.has
local nn = ember.nn
local F = nn.functional
local gradcheck = ember.autograd.gradcheck

local function T(v) return ember.tensor(v, {dtype = "float64"}) end
local function I(v) return ember.tensor(v, {dtype = "int64"}) end
local function close(a, b, tol) return math.abs(a - b) <= (tol or 1e-9) * math.max(1, math.abs(b)) end

local function names_of(m)
  local out = {}
  for name in m:named_parameters() do out[#out + 1] = name end
  return out
end

-- ---- the class system ---------------------------------------------------------

describe("nn.Module", function()
  local Net = nn.Module:extend("Net")
  function Net:init(d)
    Net.super.init(self)
    self.fc1 = nn.Linear(d, 4)
    self.scale = nn.Parameter(ember.ones(4))
    self.act = nn.Tanh()
    self.fc2 = nn.Linear(4, 2, {bias = false})
    self.note = "plain"
  end
  function Net:forward(x) return self.fc2(self.act(self.fc1(x)) * self.scale) end

  it("registers parameters and children in assignment order, with PyTorch's names", function()
    local n = Net(3)
    assert.same({"scale", "fc1.weight", "fc1.bias", "fc2.weight"}, names_of(n))
    local ps = n:parameters()
    assert.equal(4, #ps)
    assert.is_true(rawequal(ps[1], n.scale) and rawequal(ps[2], n.fc1.weight) and rawequal(ps[4], n.fc2.weight))
    local kids = {}
    for name, c in n:named_children() do kids[#kids + 1] = name .. "=" .. getmetatable(c).__name end
    assert.same({"fc1=Linear", "act=Tanh", "fc2=Linear"}, kids)
    assert.equal(3, #n:children())
    assert.equal(4, #n:modules())            -- itself + 3
    assert.equal("plain", n.note)
    assert.equal(3 * 4 + 4 + 4 + 4 * 2, n:num_parameters())
  end)

  it("calls forward through m(x)", function()
    local n = Net(3)
    local x = ember.randn(5, 3)
    local y = n(x)
    h.check_shape(y, {5, 2})
    local want = ((x:matmul(n.fc1.weight:t()) + n.fc1.bias):tanh() * n.scale):matmul(n.fc2.weight:t())
    check(y, want:tolist(), 1e-6)
  end)

  it("reassignment and nil keep the registries consistent", function()
    local n = Net(3)
    n.fc1 = nil
    assert.same({"scale", "fc2.weight"}, names_of(n))
    n.scale = nil
    n.extra = nn.Parameter(ember.zeros(2))
    n.fc1 = nn.Linear(3, 4)                  -- appended at the end now
    assert.same({"extra", "fc2.weight", "fc1.weight", "fc1.bias"}, names_of(n))
    has(err(function() n.extra = ember.zeros(2) end), "cannot assign a tensor that does not require grad to parameter 'extra'")
    has(err(function() n.fc2 = 3 end), "cannot assign a number to child module 'fc2'")
    n.tmp = n.fc2.weight * 2                 -- a computed tensor is a plain field
    assert.same({"extra", "fc2.weight", "fc1.weight", "fc1.bias"}, names_of(n))
  end)

  it("lists a shared parameter once in named_parameters, under each name in state_dict (PyTorch)", function()
    local a = nn.Linear(2, 2)
    local s = nn.Sequential(a, nn.ReLU(), a)
    assert.same({"0.weight", "0.bias"}, names_of(s))
    assert.equal(3, #s:modules())          -- Sequential, the Linear, ReLU
    local all = {}
    for n in s:named_parameters({remove_duplicate = false}) do all[#all + 1] = n end
    assert.same({"0.weight", "0.bias", "2.weight", "2.bias"}, all)
    all = {}
    for n in s:named_modules({remove_duplicate = false}) do all[#all + 1] = n end
    assert.same({"", "0", "1", "2"}, all)
    local keys = {}
    for k in pairs(s:state_dict()) do keys[#keys + 1] = k end
    assert.same({"0.weight", "0.bias", "2.weight", "2.bias"}, keys)
  end)

  it("default forward names the class", function()
    local Empty = nn.Module:extend("Empty")
    has(err(function() Empty()(1) end), "Empty: forward() is not implemented")
  end)

  it("train/eval set training recursively", function()
    local n = Net(3)
    assert.is_true(n.training and n.fc1.training)
    assert.equal(n, n:eval())
    assert.is_false(n.training or n.fc1.training or n.act.training)
    n:train()
    assert.is_true(n.fc2.training)
    n:train(false)
    assert.is_false(n.fc2.training)
  end)

  it("zero_grad sets grads to nil; requires_grad_ freezes", function()
    local n = Net(3)
    n(ember.randn(2, 3)):sum():backward()
    assert.is_not_nil(n.fc1.weight.grad)
    n:zero_grad()
    for _, p in ipairs(n:parameters()) do assert.is_nil(p.grad) end
    n:requires_grad_(false)
    assert.is_false(n.fc1.weight.requires_grad)
  end)

  it("to(dtype) replaces parameters by converted ones, keeping requires_grad, names and values", function()
    local n = Net(3)
    local before = n.fc1.weight:tolist()
    n(ember.randn(2, 3)):sum():backward()
    n:to("float64")
    for name, p in n:named_parameters() do
      assert.equal("float64", p.dtype, name)
      assert.is_true(p.requires_grad and p.is_leaf)
    end
    assert.equal("float64", n.fc1.weight.grad.dtype)
    check(n.fc1.weight, before, 1e-7)
    assert.equal("float64", n(ember.randn(2, 3, {dtype = "float64"})).dtype)
    n:float()
    assert.equal("float32", n.scale.dtype)
    has(err(function() n:to("int64") end), "floating-point dtypes only")
    -- a bad target's message names the module's method once, and no position inside ember
    local e = err(function() n:to("bogus") end)
    has(e, ":to: to: argument 1: 'bogus' is neither a dtype nor a device")
    assert.is_nil(e:find("module%.lua"), e)
  end)

  it("apply visits every module", function()
    local n = Net(3)
    local seen = 0
    n:apply(function(m) seen = seen + 1 if m.weight then nn.init.zeros_(m.weight) end end)
    assert.equal(4, seen)
    check(n.fc2.weight, {{0, 0, 0, 0}, {0, 0, 0, 0}})
  end)

  it("buffers go to state_dict and follow to()", function()
    local B = nn.Module:extend("B")
    function B:init() self:register_buffer("stats", ember.zeros(3)); self.w = nn.Parameter(ember.ones(2)) end
    local b = B()
    local sd = b:state_dict()
    assert.is_not_nil(sd.stats and sd.w)
    b.stats = ember.ones(3)                 -- assigning a tensor to a buffer name updates it
    check(b.stats, {1, 1, 1})
    b:double()
    assert.equal("float64", b.stats.dtype)
    local names = {}
    for n in b:named_buffers() do names[#names + 1] = n end
    assert.same({"stats"}, names)
  end)
end)

describe("nn.Buffer", function()
  -- expectations from PyTorch 2.15's nn.Buffer: shares memory and requires_grad; assigned to a
  -- module field it registers a buffer; persistent = false keeps it out of state_dict
  local Holder = nn.Module:extend("Holder")
  function Holder:init()
    self.scratch = nn.Buffer(ember.zeros(2), {persistent = false})
    self.stats = nn.Buffer(ember.ones(1))
    self.w = nn.Parameter(ember.ones(1))
  end

  it("registers a buffer when assigned, persistent or not", function()
    local m = Holder()
    local names = {}
    for n in pairs(m:state_dict()) do names[#names + 1] = n end
    table.sort(names)
    assert.same({"stats", "w"}, names)
    local buffers = {}
    for n, b in m:named_buffers() do buffers[#buffers + 1] = n .. "=" .. b:numel() end
    assert.same({"scratch=2", "stats=1"}, buffers)
    -- a plain tensor assigned later replaces the buffer's value, as in PyTorch
    m.stats = ember.zeros(3)
    assert.equals(3, m.stats:numel())
    assert.equals(1, #m:parameters())
    -- a Buffer assigned where a parameter was replaces the parameter
    m.w = nn.Buffer(ember.ones(4))
    assert.equals(0, #m:parameters())
    assert.equals(4, m.w:numel())
  end)

  it("shares t's memory and keeps requires_grad; no argument gives an empty tensor", function()
    local t = ember.ones(2)
    nn.Buffer(t):add_(1)
    h.check(t, {2, 2})
    assert.is_true(nn.Buffer(ember.ones(2, {requires_grad = true})).requires_grad)
    assert.equals(0, nn.Buffer():numel())
  end)

  it("refuses what is not a tensor or a boolean", function()
    has(err(function() local b = nn.Buffer(5); return b end), "nn_spec.lua:", "Buffer: expected a tensor, got number")
    has(err(nn.Buffer, ember.ones(1), {persistent = 1}), "Buffer: persistent must be a boolean, got number")
    has(err(nn.Buffer, ember.ones(1), {persist = true}), "Buffer: unknown option 'persist'")
  end)
end)

describe("state_dict / load_state_dict", function()
  local function mlp() return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)) end

  it("round-trips into a fresh model (same outputs)", function()
    ember.manual_seed(1)
    local a = mlp()
    ember.manual_seed(2)
    local b = mlp()
    local x = ember.randn(5, 4)
    local keys = {}
    for k, v in pairs(a:state_dict()) do keys[#keys + 1] = k; assert.is_false(v.requires_grad) end
    table.sort(keys)
    assert.same({"0.bias", "0.weight", "2.bias", "2.weight"}, keys)
    assert.is_false(h.same(a(x):tolist(), b(x):tolist(), 1e-6))
    local w = b[1].weight
    local r = b:load_state_dict(a:state_dict())
    assert.same({}, r.missing_keys)
    assert.is_true(rawequal(w, b[1].weight))   -- copied in place
    assert.is_true(w.requires_grad)
    check(b(x), a(x):tolist(), 1e-6)
  end)

  it("converts dtype when loading", function()
    local a = mlp():double()
    local b = mlp()
    b:load_state_dict(a:state_dict())
    assert.equal("float32", b[1].weight.dtype)
    check(b[3].bias, a[3].bias:tolist(), 1e-6)
  end)

  it("survives ember.save / ember.load", function()
    local a = mlp()
    local path = os.tmpname()
    ember.save(path, a:state_dict())
    local b = mlp()
    b:load_state_dict(ember.load(path))
    os.remove(path)
    local x = ember.randn(2, 4)
    check(b(x), a(x):tolist(), 1e-6)
  end)

  it("strict: names missing and unexpected keys and shape mismatches", function()
    local a = mlp()
    local sd = a:state_dict()
    sd["2.bias"] = nil
    sd["9.weight"] = ember.zeros(1)
    local e = err(function() mlp():load_state_dict(sd) end)
    has(e, "load_state_dict")
    has(e, "missing keys: 2.bias")
    has(e, "unexpected keys: 9.weight")
    local r = mlp():load_state_dict(sd, {strict = false})
    assert.same({"2.bias"}, r.missing_keys)
    assert.same({"9.weight"}, r.unexpected_keys)
    local sd2 = a:state_dict()
    sd2["0.weight"] = ember.zeros(4, 8)
    local target = mlp()
    local before = target[3].bias:tolist()
    e = err(function() target:load_state_dict(sd2, {strict = false}) end)
    has(e, "size mismatch for 0.weight: the state dict has shape [4, 8], the model [8, 4]")
    check(target[3].bias, before)        -- nothing was copied
    has(err(function() mlp():load_state_dict(5) end), "expected a table")
  end)
end)

describe("tostring", function()
  it("shows the tree, parameter counts and the total", function()
    local m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10, {bias = false}))
    local s = tostring(m)
    has(s, "Sequential(\n")
    has(s, "  (0): Linear(in_features=784, out_features=256, bias=true)  -- 200,960 params\n")
    has(s, "  (1): ReLU()\n")
    has(s, "  (2): Dropout(p=0.1)\n")
    has(s, "  (3): Linear(in_features=256, out_features=10, bias=false)  -- 2,560 params\n)")
    has(s, "\nTotal parameters: 203,520")
  end)

  it("nests, lists parameters of custom modules and marks frozen ones", function()
    local C = nn.Module:extend("Custom")
    function C:init() self.alpha = nn.Parameter(ember.zeros(2, 3)); self.body = nn.Sequential(nn.LayerNorm(3), nn.GELU({approximate = "tanh"})) end
    local c = C()
    c.body:requires_grad_(false)
    local s = tostring(c)
    has(s, "Custom(\n  (alpha): Parameter(shape=[2, 3], dtype=float32)\n  (body): Sequential(\n")
    has(s, "    (0): LayerNorm([3], eps=1e-05, elementwise_affine=true)  -- 6 params\n")
    has(s, "    (1): GELU(approximate=\"tanh\")\n  )  -- 6 params\n)")
    has(s, "Total parameters: 12 (6 trainable)")
  end)
end)

-- ---- layers ------------------------------------------------------------------------

describe("Linear", function()
  it("computes x W^T + b (checked by hand loops), for 1-D, 2-D and 3-D inputs", function()
    local fc = nn.Linear(3, 2)
    local W, b = fc.weight:tolist(), fc.bias:tolist()
    local x = ember.randn(2, 2, 3)
    local xs = x:tolist()
    local want = {}
    for i = 1, 2 do
      want[i] = {}
      for j = 1, 2 do
        want[i][j] = {}
        for o = 1, 2 do
          local s = b[o]
          for k = 1, 3 do s = s + xs[i][j][k] * W[o][k] end
          want[i][j][o] = s
        end
      end
    end
    check(fc(x), want, 1e-5)
    check(fc(x[1]), want[1], 1e-5)
    check(fc(x[1][2]), want[1][2], 1e-5)
    check(fc(x:transpose(1, 2):transpose(1, 2)), want, 1e-5)
    local nb = nn.Linear(3, 2, {bias = false, dtype = "float64"})
    assert.is_nil(nb.bias)
    assert.equal("float64", nb.weight.dtype)
    check(nb(T{{1, 0, 0}}), {{nb.weight:tolist()[1][1], nb.weight:tolist()[2][1]}}, 1e-12)
  end)

  it("initialises like PyTorch: U(-1/sqrt(in), 1/sqrt(in)), reproducible with manual_seed", function()
    ember.manual_seed(7)
    local fc = nn.Linear(400, 300)
    local bound = 1 / math.sqrt(400)
    local w = fc.weight
    assert.is_true(w:amax():item() <= bound and w:amin():item() >= -bound)
    assert.is_true(w:amax():item() > 0.99 * bound and w:amin():item() < -0.99 * bound)
    assert.is_true(math.abs(w:mean():item()) < 0.002)
    -- the variance of U(-b, b) is b^2 / 3
    assert.is_true(close(w:var():item(), bound * bound / 3, 0.02))
    assert.is_true(fc.bias:amax():item() <= bound and fc.bias:amin():item() >= -bound)
    ember.manual_seed(7)
    local again = nn.Linear(400, 300)
    check(again.weight[17], fc.weight[17]:tolist())
  end)

  it("names the layer and the shapes on a wrong input", function()
    local fc = nn.Linear(784, 256)
    local e = err(function() fc(ember.zeros(32, 100)) end)
    has(e, "Linear(in_features=784, out_features=256, bias=true): expected an input of shape [..., 784], got [32, 100]")
    has(err(function() fc(ember.tensor(1.0)) end), "got []")
    has(err(function() fc({1, 2}) end), "Linear: expected a tensor as input, got table")
    has(err(function() nn.Linear(-1, 2) end), "Linear: in_features must be a non-negative integer")
  end)
end)

describe("activations, Softmax, Flatten", function()
  local x = T{{-2, -0.5, 0, 1.5}}
  local xs = x:tolist()[1]
  local function map(f) local r = {} for i, v in ipairs(xs) do r[i] = f(v) end return {r} end

  it("match their formulas", function()
    check(nn.ReLU()(x), map(function(v) return math.max(v, 0) end))
    check(nn.Tanh()(x), map(function(v) return (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1) end), 1e-12)
    check(nn.Sigmoid()(x), map(function(v) return 1 / (1 + math.exp(-v)) end), 1e-12)
    check(nn.SiLU()(x), map(function(v) return v / (1 + math.exp(-v)) end), 1e-12)
    local c = math.sqrt(2 / math.pi)
    check(nn.GELU({approximate = "tanh"})(x), map(function(v)
      local u = c * (v + 0.044715 * v ^ 3)
      return 0.5 * v * (1 + (math.exp(2 * u) - 1) / (math.exp(2 * u) + 1))
    end), 1e-12)
    -- exact GELU at 0 and its known value at 1.5: 1.5 * Phi(1.5) = 1.5 * 0.9331927987311419
    local g = nn.GELU()(x):tolist()[1]
    assert.is_true(close(g[3], 0) and close(g[4], 1.5 * 0.9331927987311419, 1e-9))
    has(err(function() nn.GELU({approximate = "fast"}) end), "GELU: approximate must be")
  end)

  it("Softmax / LogSoftmax along the given dim", function()
    local s = 0
    for _, v in ipairs(xs) do s = s + math.exp(v) end
    check(nn.Softmax(2)(x), map(function(v) return math.exp(v) / s end), 1e-12)
    check(nn.LogSoftmax(-1)(x), map(function(v) return v - math.log(s) end), 1e-12)
    check(nn.Softmax(1)(x), {{1, 1, 1, 1}})
    has(err(function() nn.Softmax() end), "Softmax: dim must be an integer")
  end)

  it("Flatten merges start..end", function()
    h.check_shape(nn.Flatten()(ember.zeros(2, 1, 4, 3)), {2, 12})
    h.check_shape(nn.Flatten(1, 3)(ember.zeros(2, 1, 4, 3)), {8, 3})
    h.check_shape(nn.Flatten(2, 3)(ember.zeros(2, 5, 4, 3)), {2, 20, 3})
  end)
end)

describe("Sequential", function()
  it("applies children in order; add, indexing and #", function()
    local s = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    s:add(nn.Linear(3, 1))
    assert.equal(3, #s)
    assert.equal("Linear", getmetatable(s[3]).__name)
    assert.equal(s[3], s[-1])
    local x = ember.randn(4, 2)
    check(s(x), s[3](s[2](s[1](x))):tolist(), 1e-6)
    assert.same({"0.weight", "0.bias", "2.weight", "2.bias"}, names_of(s))   -- PyTorch's names
    assert.equal(s[1], s["0"])              -- s[i] is by position (1-based), s["0"] by name
    has(err(function() s:add(5) end), "Sequential: item 4 must be a module, got number")
    local l = nn.ModuleList({nn.Linear(1, 1), nn.Linear(1, 1)})
    assert.same({"0.weight", "0.bias", "1.weight", "1.bias"}, names_of(l))
  end)
end)

describe("Dropout", function()
  it("zeroes about p of the elements in training and scales the rest by 1/(1-p)", function()
    ember.manual_seed(3)
    local d = nn.Dropout(0.3)
    local x = ember.ones(200, 500)
    local y = d(x)
    local zeros = y:eq(0):sum():item() / x:numel()
    assert.is_true(math.abs(zeros - 0.3) < 0.01, "fraction zeroed " .. zeros)
    local kept = y:masked_select(y:ne(0))
    check(kept:amax(), 1 / 0.7, 1e-6)
    check(kept:amin(), 1 / 0.7, 1e-6)
    assert.is_true(math.abs(y:mean():item() - 1) < 0.02)   -- expectation preserved
  end)

  it("is the identity in eval mode and for p = 0; p = 1 gives zeros", function()
    local d = nn.Dropout(0.5)
    d:eval()
    local x = ember.randn(10)
    check(d(x), x:tolist())
    check(nn.Dropout(0)(x), x:tolist())
    check(nn.Dropout(1)(x), ember.zeros(10):tolist())
    has(err(function() nn.Dropout(1.5) end), "Dropout: p must be a probability in [0, 1]")
  end)

  it("follows the model's train/eval", function()
    local m = nn.Sequential(nn.Dropout(0.9))
    local x = ember.ones(100)
    m:eval()
    check(m(x), x:tolist())
    m:train()
    assert.is_true(m(x):eq(0):sum():item() > 50)
  end)

  it("passes gradients only through kept elements, scaled", function()
    ember.manual_seed(5)
    local x = ember.ones(1000):requires_grad_()
    local y = nn.Dropout(0.25)(x)
    y:sum():backward()
    check(x.grad, y:detach():tolist(), 1e-6)
  end)
end)

describe("Embedding", function()
  it("picks 1-based rows for indices of any shape", function()
    local e = nn.Embedding(10, 3, {dtype = "float64"})
    local W = e.weight:tolist()
    local y = e(I{{1, 10}, {4, 4}})
    check(y, {{W[1], W[10]}, {W[4], W[4]}})
    check(e(I{7}), {W[7]})
    check(e(I(2)), W[2])
    h.check_shape(e(ember.zeros({0, 5}, {dtype = "int64"})), {0, 5, 3})
    has(err(function() e(I{0}) end), "index out of range for 10 rows (indices are 1-based, 1..10)")
    has(err(function() e(I{11}) end), "Embedding(10, 3)")
    has(err(function() e(T{1}) end), "indices must be an integer tensor")
  end)

  it("draws N(0, 1) and accumulates gradients into repeated rows", function()
    ember.manual_seed(11)
    local e = nn.Embedding(200, 100)
    assert.is_true(math.abs(e.weight:mean():item()) < 0.02)
    assert.is_true(math.abs(e.weight:std():item() - 1) < 0.02)
    local small = nn.Embedding(3, 2)
    small(I{1, 3, 1}):sum():backward()
    check(small.weight.grad, {{2, 2}, {0, 0}, {1, 1}})
  end)
end)

describe("LayerNorm", function()
  it("matches PyTorch values and gradients with an affine transform", function()
    local ln = nn.LayerNorm(3, {dtype = "float64"})
    ember.no_grad(function()
      ln.weight:copy_(T{1.0, 0.5, -2.0})
      ln.bias:copy_(T{0.0, 1.0, 0.5})
    end)
    local x = T{{1.0, 2.0, 4.0}, {-1.0, 0.0, 3.0}}:requires_grad_()
    local y = ln(x)
    check(y, {{-1.069041531450298, 0.8663698085687127, -2.1726038286257436},
              {-0.9805789785364645, 0.8038842042927071, -2.2456211399021}}, 1e-9)
    local z = (y * T{{1.0, 2.0, 3.0}, {-1.0, 0.5, 0.0}}):sum()
    z:backward()
    check(x.grad, {{-0.8017639676735602, 1.2026760181101257, -0.4009120504365664},
                   {-0.27154553537742276, 0.3620596955465338, -0.09051416016911104}}, 1e-7)
  end)

  it("normalises over several trailing dims (mean 0, biased variance 1); no affine option", function()
    local ln = nn.LayerNorm({2, 3}, {elementwise_affine = false, eps = 0})
    assert.equal(0, #ln:parameters())
    local y = ln(ember.randn(4, 2, 3, {dtype = "float64"}))
    check(y:mean({2, 3}), {0, 0, 0, 0}, 1e-9)
    check(y:var({2, 3}, {correction = 0}), {1, 1, 1, 1}, 1e-9)
    local d = nn.LayerNorm(5)
    check(d.weight, {1, 1, 1, 1, 1})
    check(d.bias, {0, 0, 0, 0, 0})
  end)

  it("gradcheck through weight, bias and input", function()
    ember.manual_seed(2)
    local ok, report = gradcheck(function(x, w, b) return F.layer_norm(x, {4}, w, b) end,
                                 {ember.randn(3, 4), ember.randn(4), ember.randn(4)})
    assert(ok, report)
  end)

  it("names the layer and shapes on a wrong input", function()
    has(err(function() nn.LayerNorm(4)(ember.zeros(2, 3)) end),
        "LayerNorm([4], eps=1e-05, elementwise_affine=true): expected an input of shape [..., 4], got [2, 3]")
  end)
end)

describe("nn.init", function()
  it("fills in place under no_grad, with the documented ranges and statistics", function()
    ember.manual_seed(4)
    local w = ember.empty(300, 200):requires_grad_()
    nn.init.zeros_(w); check(w:abs():sum(), 0)
    nn.init.ones_(w); check(w:sum(), 60000)
    nn.init.constant_(w, 2.5); check(w:amax(), 2.5)
    nn.init.uniform_(w, -3, -1)
    assert.is_true(w:amin():item() >= -3 and w:amax():item() <= -1)
    assert.is_true(math.abs(w:mean():item() + 2) < 0.01)
    nn.init.normal_(w, 1, 2)
    assert.is_true(math.abs(w:mean():item() - 1) < 0.03 and math.abs(w:std():item() - 2) < 0.03)
    assert.is_true(w.requires_grad and w.is_leaf)
    -- kaiming_uniform: bound = gain * sqrt(3 / fan_in), gain = sqrt(2) for relu
    nn.init.kaiming_uniform_(w, {nonlinearity = "relu"})
    local b = math.sqrt(2) * math.sqrt(3 / 200)
    assert.is_true(w:amax():item() <= b and w:amax():item() > 0.99 * b)
    nn.init.kaiming_uniform_(w, {mode = "fan_out", nonlinearity = "relu"})
    b = math.sqrt(2) * math.sqrt(3 / 300)
    assert.is_true(w:amax():item() <= b and w:amax():item() > 0.99 * b)
    -- xavier_uniform: bound = gain * sqrt(6 / (fan_in + fan_out))
    nn.init.xavier_uniform_(w, 0.5)
    b = 0.5 * math.sqrt(6 / 500)
    assert.is_true(w:amax():item() <= b and w:amax():item() > 0.99 * b and w:amin():item() >= -b)
    nn.init.kaiming_normal_(w)
    assert.is_true(math.abs(w:std():item() - math.sqrt(2 / 200)) < 0.002)
    assert.is_true(close(nn.init.calculate_gain("leaky_relu", math.sqrt(5)), math.sqrt(1 / 3), 1e-12))
    assert.is_true(close(nn.init.calculate_gain("tanh"), 5 / 3))
  end)

  it("explains bad arguments", function()
    has(err(function() nn.init.xavier_uniform_(ember.zeros(5)) end), "at least 2 dimensions")
    has(err(function() nn.init.kaiming_uniform_(ember.zeros(2, 2), {mode = "both"}) end), "mode must be")
    has(err(function() nn.init.zeros_(3) end), "nn.init.zeros_: expected a tensor")
  end)
end)

-- ---- losses ----------------------------------------------------------------------------------

-- fixtures: torch.nn.functional on these literal inputs (torch 1.13, float64)
local logits_v = {{1.0, 2.0, 0.5, -1.0}, {0.1, -0.3, 2.2, 1.5}, {-2.0, 0.0, 1.0, 3.0}}

describe("CrossEntropyLoss", function()
  it("class indices with label smoothing and ignore_index, all reductions (PyTorch values)", function()
    local x = T(logits_v)
    local y = I{2, 4, -100}
    check(nn.CrossEntropyLoss({label_smoothing = 0.1})(x, y), 0.9632363561752983, 1e-12)
    check(nn.CrossEntropyLoss({label_smoothing = 0.1, reduction = "sum"})(x, y), 1.9264727123505967, 1e-12)
    check(nn.CrossEntropyLoss({label_smoothing = 0.1, reduction = "none"})(x, y),
          {0.6326818980858561, 1.2937908142647405, 0.0}, 1e-12)
    -- a custom ignore_index
    check(nn.CrossEntropyLoss({label_smoothing = 0.1, ignore_index = 3})(x, I{2, 4, 3}), 0.9632363561752983, 1e-12)
  end)

  it("gradients match PyTorch", function()
    local x = T(logits_v):requires_grad_()
    nn.CrossEntropyLoss({label_smoothing = 0.1})(x, I{2, 4, -100}):backward()
    check(x.grad, {{0.09960390902410057, -0.15776998120056146, 0.055494457896752766, 0.002671614279708112},
                   {0.023492741177159295, 0.011626655922822273, 0.28142284007175306, -0.3165422371717347},
                   {0, 0, 0, 0}}, 1e-10)
    local x2 = T(logits_v):requires_grad_()
    local l = nn.CrossEntropyLoss()(x2, I{2, 4, 1})
    check(l, 2.3006626916557704, 1e-12)
    l:backward()
    check(x2.grad, {{0.07473593934940037, -0.13017998746704096, 0.045329638597835176, 0.010114409519805408},
                    {0.023995160784772863, 0.016084437281881515, 0.19594856004783537, -0.23602815811448977},
                    {-0.33144889911259456, 0.013924190171783486, 0.037849873119967084, 0.27967483582084396}}, 1e-10)
  end)

  it("class probabilities, with and without smoothing (PyTorch values)", function()
    local probs = T{{0.7, 0.1, 0.1, 0.1}, {0.0, 0.0, 1.0, 0.0}, {0.25, 0.25, 0.25, 0.25}}
    local x = T(logits_v):requires_grad_()
    local l = nn.CrossEntropyLoss({label_smoothing = 0.2})(x, probs)
    check(l, 1.7206626916557701, 1e-12)
    l:backward()
    check(x.grad, {{-0.12859739398393294, 0.15982001253295902, 0.0019963052645018383, -0.03321892381352793},
                   {0.007328494118106196, -0.0005822293847851515, -0.08738477328549796, 0.08063850855217689},
                   {-0.08144889911259455, -0.06940914316154985, -0.045483460213366245, 0.19634150248751064}}, 1e-10)
    check(nn.CrossEntropyLoss({reduction = "none"})(T(logits_v), probs),
          {1.645181898085856, 0.5312908142647403, 2.6755153626167143}, 1e-12)
  end)

  it("class weights, with smoothing and ignore_index; gradients and second derivatives (PyTorch values)", function()
    local w = T{0.5, 2.0, 1.0, 3.0}
    local x = T(logits_v):requires_grad_()
    local l = nn.CrossEntropyLoss({weight = w, label_smoothing = 0.1})(x, I{2, 4, -100})
    check(l, 0.9722728861652624, 1e-12)
    l:backward()
    check(x.grad, {{0.08550156858391895, -0.13078693524244073, 0.048375649448950925, -0.0030902827904291308},
                   {0.038711688647847395, 0.017625021031631504, 0.3315416518821573, -0.38787836156163624},
                   {0, 0, 0, 0}}, 1e-10)
    check(F.cross_entropy(T(logits_v), I{2, 4, -100}, {weight = w, label_smoothing = 0.1, reduction = "sum"}),
          4.8613644308263115, 1e-12)
    check(F.cross_entropy(T(logits_v), I{2, 4, -100}, {weight = w, label_smoothing = 0.1, reduction = "none"}),
          {1.2467944749934925, 3.61456995583282, 0}, 1e-12)
    check(F.cross_entropy(T(logits_v), I{2, 4, 1}, {weight = w}), 1.3221807127771437, 1e-12)
    local probs = T{{0.7, 0.1, 0.1, 0.1}, {0.0, 0.0, 1.0, 0.0}, {0.25, 0.25, 0.25, 0.25}}
    check(F.cross_entropy(T(logits_v), probs, {weight = w, label_smoothing = 0.2}), 2.040895663241049, 1e-12)
    -- d/dx sum(grad * v) through create_graph
    local x2 = T(logits_v):requires_grad_()
    local l2 = F.cross_entropy(x2, I{2, 4, 1}, {weight = w, label_smoothing = 0.1})
    local g = ember.autograd.grad(l2, x2, {create_graph = true})
    local v = T{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}
    local gg = ember.autograd.grad((g * v):sum(), x2)
    check(gg, {{0.06206448082445395, -0.048757672089014, -0.010879307181686322, -0.0024275015537536314},
               {-0.0018078186036456266, 0.02390183843368154, -0.014762953888470981, -0.007331065941564931},
               {-0.0005282266240987074, -0.0039030961584141017, -0.01060971536214536, 0.015041038144658165}}, 1e-10)
    has(err(function() F.cross_entropy(T(logits_v), I{1, 2, 3}, {weight = T{1, 2}}) end),
        "cross_entropy: weight must have one entry per class, shape [4], got [2]")
  end)

  it("the fused op agrees with log_softmax + gather in float32 and float64, any layout", function()
    ember.manual_seed(21)
    for _, dt in ipairs({"float32", "float64"}) do
      for _, eps in ipairs({0, 0.15}) do
        local x = ember.randn(7, 37, {dtype = dt}) * 3
        local xt = ember.randn(37, 7, {dtype = dt}):t()          -- non-contiguous rows
        local y = ember.randint(1, 38, {7})
        y[3] = -100
        for _, input in ipairs({x, xt}) do
          local a = input:detach():requires_grad_()
          local b = input:detach():requires_grad_()
          local fused = F.cross_entropy(a, y, {label_smoothing = eps})
          -- the composed reference, written out here
          local logp = b:log_softmax(2)
          local keep = y:ne(-100)
          local safe = y:masked_fill(y:eq(-100), 1)
          local nll = -logp:gather(2, safe:unsqueeze(2)):squeeze(2)
          local smooth = -logp:mean(2)
          local rows = ((1 - eps) * nll + eps * smooth):masked_fill(keep:logical_not(), 0)
          local ref = rows:sum() / keep:sum():to(dt)
          fused:backward(); ref:backward()
          local tol = dt == "float32" and 1e-5 or 1e-12
          check(fused, ref:item(), tol)
          check(a.grad, b.grad:tolist(), tol)
        end
      end
    end
  end)

  it("float32 rows longer than the vector lanes: the max in any lane or the tail, -inf, NaN", function()
    -- 40 classes: two blocks of 16 lanes and a tail of 8; the expected
    -- losses are log(sum exp(x - m)) + m - x[t] in float64 here
    local C, rows = 40, {}
    for r = 1, 4 do
      local row = {}
      for j = 1, C do row[j] = math.sin(j * 0.7 + r) * 4 end
      rows[r] = row
    end
    rows[1][38] = 120                -- the max in the tail (exp(116) overflows a float)
    rows[2][7] = 110                 -- in the first block's lanes
    rows[3][5] = -math.huge          -- contributes nothing
    rows[4][20] = 0 / 0              -- NaN reaches the loss
    local x = ember.tensor(rows, {dtype = "float32"})
    local xs = x:tolist()           -- the float32 values, exactly
    local y = I{2, 38, 1, 3}
    local got = F.cross_entropy(x, y, {reduction = "none"}):tolist()
    for r = 1, 3 do
      local m = -math.huge
      for j = 1, C do m = math.max(m, xs[r][j]) end
      local s = 0
      for j = 1, C do s = s + math.exp(xs[r][j] - m) end
      local want = math.log(s) + m - xs[r][y[r]:item()]
      assert.is_true(math.abs(got[r] - want) <= 1e-6 * math.max(1, math.abs(want)),
        ("row %d: %.9g, expected %.9g"):format(r, got[r], want))
    end
    assert.is_true(got[4] ~= got[4], "a NaN logit gives a NaN loss")
  end)

  it("a single sample [C] and extra dims [N, C, d]", function()
    check(F.cross_entropy(T(logits_v[1]), I(3)), 1.995181898085856, 1e-12)
    h.check_shape(F.cross_entropy(T(logits_v[1]), I(3), {reduction = "none"}), {})
    local kd = T{{{0.5, -1.0}, {1.5, 0.2}, {0.0, 0.3}}, {{-0.4, 2.0}, {0.9, -0.7}, {1.1, 0.0}}}
    local kt = I{{3, 1}, {2, -100}}
    check(F.cross_entropy(kd, kt, {reduction = "none"}), {{1.964368784107945, 2.07811736413808}, {0.9138616044091668, 0.0}}, 1e-12)
    check(F.cross_entropy(kd, kt, {label_smoothing = 0.05}), 1.6332270286628416, 1e-12)
  end)

  it("is numerically stable for huge logits", function()
    local l = F.cross_entropy(T{{1000, 0, -1000}, {-1e4, 1e4, 0}}, I{1, 3}, {reduction = "none"})
    check(l, {0, 1e4}, 1e-12)
    local l32 = F.cross_entropy(ember.tensor{{100.0, -100.0}}, I{2})
    check(l32, 200, 1e-6)
  end)

  it("all targets ignored gives NaN with mean (as PyTorch), 0 with sum", function()
    assert.is_true(h.is_nan(F.cross_entropy(T(logits_v), I{-100, -100, -100}):item()))
    check(F.cross_entropy(T(logits_v), I{-100, -100, -100}, {reduction = "sum"}), 0)
  end)

  it("gradcheck: indices with smoothing and ignore, probabilities", function()
    ember.manual_seed(9)
    local ok, report = gradcheck(function(x) return F.cross_entropy(x, I{1, 3, -100, 2}, {label_smoothing = 0.3}) end,
                                 {ember.randn(4, 3)})
    assert(ok, report)
    ok, report = gradcheck(function(x, p) return F.cross_entropy(x, p:softmax(2), {reduction = "sum"}) end,
                           {ember.randn(2, 5), ember.randn(2, 5)})
    assert(ok, report)
  end)

  it("explains bad targets", function()
    local ce = nn.CrossEntropyLoss()
    local x = ember.randn(3, 4)
    has(err(function() ce(x, I{1, 2}) end), "cross_entropy: input [3, 4] needs class-index targets of shape [3], got [2]")
    has(err(function() ce(x, ember.tensor{{1.0, 0, 0, 0}}) end), "class-probability targets must have the input's shape [3, 4], got [1, 4]")
    has(err(function() ce(x, ember.tensor{true, false, true}) end), "class-index targets must be an integer tensor (int64), got bool")
    has(err(function() ce(x, I{1, 5, 2}) end), "cross_entropy: target 5 at position 2 is out of range for 4 classes (class indices are 1-based, 1..4")
    has(err(function() ce(x, I{0, 1, 2}) end), "out of range")
    has(err(function() ce(ember.tensor(1.0), I(1)) end), "input must have a class dimension")
    has(err(function() ce(ember.randn(2, 0), I{1, 2}) end), "cross_entropy: input [2,0] has no classes")
    has(err(function() nn.CrossEntropyLoss({reduction = "avg"}) end), "CrossEntropyLoss: reduction must be \"mean\", \"sum\" or \"none\", got avg")
    has(err(function() nn.CrossEntropyLoss({label_smothing = 0.1}) end), "CrossEntropyLoss: unknown option 'label_smothing'")
    has(err(function() ce(x, I{1, 2, 3}:reshape(3, 1)) end), "needs class-index targets of shape [3], got [3, 1]")
  end)
end)

describe("NLLLoss", function()
  local logp = {{-1.495181898085856, -0.49518189808585605, -1.995181898085856, -3.495181898085856},
                {-2.6312908142647404, -3.0312908142647403, -0.5312908142647403, -1.2312908142647405},
                {-5.175515362616714, -3.1755153626167143, -2.1755153626167143, -0.1755153626167145}}
  it("picks -logp at the 1-based targets; ignore_index left out of the mean (PyTorch values)", function()
    local x = T(logp):requires_grad_()
    local l = nn.NLLLoss({ignore_index = 2})(x, I{2, 2, 4})
    check(l, 0.1755153626167145, 1e-12)
    l:backward()
    check(x.grad, {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, -1}})
    check(nn.NLLLoss({reduction = "sum"})(T(logp), I{2, 2, 4}), 3.7019880749673106, 1e-12)
    check(nn.NLLLoss({reduction = "none"})(T(logp), I{1, 3, 4}), {-logp[1][1], -logp[2][3], -logp[3][4]}, 1e-12)
    check(nn.NLLLoss()(T(logp[2]), I(3)), -logp[2][3], 1e-12)
    local ok, report = gradcheck(function(x) return F.nll_loss(x, I{3, 1, 1}) end, {ember.randn(3, 3)})
    assert(ok, report)
  end)

  it("explains bad targets", function()
    has(err(function() nn.NLLLoss()(T(logp), T{1, 2, 3}) end), "nll_loss: class-index targets must be an integer tensor (int64), got float64")
    has(err(function() nn.NLLLoss()(T(logp), I{1, 2, 9}) end), "nll_loss: target class index out of range for 4 classes")
  end)
end)

describe("BCEWithLogitsLoss", function()
  local xv = {{-40.0, -2.0, 0.0}, {0.5, 3.0, 40.0}}
  local yv = {{1.0, 0.0, 0.5}, {0.0, 1.0, 1.0}}
  it("matches PyTorch, stable at |x| = 40, with and without pos_weight", function()
    local x = T(xv):requires_grad_()
    local l = nn.BCEWithLogitsLoss()(x, T(yv))
    check(l, 6.973789921226128, 1e-12)
    l:backward()
    check(x.grad, {{-0.16666666666666666, 0.019867153670352924, 0.0}, {0.10374322186697577, -0.007904312196261106, 0.0}}, 1e-10)
    local pw = T{2.0, 0.5, 3.0}
    check(nn.BCEWithLogitsLoss({pos_weight = pw, reduction = "none"})(T(xv), T(yv)),
          {{80.0, 0.1269280110429727, 1.3862943611198906}, {0.9740769841801067, 0.024293675786870982, 0.0}}, 1e-12)
    local x2 = T(xv):requires_grad_()
    l = nn.BCEWithLogitsLoss({pos_weight = pw})(x2, T(yv))
    check(l, 13.75193217202164, 1e-12)
    l:backward()
    check(x2.grad, {{-0.3333333333333333, 0.019867153670352924, -0.08333333333333333},
                    {0.10374322186697577, -0.003952156098130553, 0.0}}, 1e-10)
  end)

  it("pos_weight is a buffer; weight rescales; gradcheck", function()
    local loss = nn.BCEWithLogitsLoss({pos_weight = ember.tensor{2.0}})
    assert.is_not_nil(loss:state_dict().pos_weight)
    loss:double()
    assert.equal("float64", loss.pos_weight.dtype)
    check(F.binary_cross_entropy_with_logits(T{0}, T{1}, {weight = T{3}, reduction = "sum"}), 3 * math.log(2), 1e-12)
    local ok, report = gradcheck(function(x, y)
      return F.binary_cross_entropy_with_logits(x, y, {pos_weight = T{0.5, 2}})
    end, {ember.randn(3, 2) * 3, ember.rand(3, 2)})
    assert(ok, report)
    has(err(function() loss(ember.zeros(2), ember.zeros(3)) end), "target shape [3] must equal the input shape [2]")
  end)
end)

describe("MSELoss", function()
  it("matches PyTorch values and gradients; reductions; gradcheck", function()
    local a = T{{1.0, -2.0}, {0.5, 4.0}}:requires_grad_()
    local b = T{{0.0, 1.0}, {2.0, 2.5}}
    local l = nn.MSELoss()(a, b)
    check(l, 3.625, 1e-12)
    l:backward()
    check(a.grad, {{0.5, -1.5}, {-0.75, 0.75}}, 1e-12)
    check(nn.MSELoss({reduction = "sum"})(a, b), 14.5, 1e-12)
    check(nn.MSELoss({reduction = "none"})(a, b), {{1, 9}, {2.25, 2.25}}, 1e-12)
    local ok, report = gradcheck(function(x, y) return F.mse_loss(x, y) end, {ember.randn(3, 2), ember.randn(3, 2)})
    assert(ok, report)
    has(err(function() nn.MSELoss()(ember.zeros(4, 1), ember.zeros(4)) end), "mse_loss: input shape [4, 1] and target shape [4] differ")
  end)
end)

-- ---- training ----------------------------------------------------------------------------------

describe("training", function()
  it("a 2-layer MLP learns XOR with hand-written SGD (loss falls by a large factor)", function()
    ember.manual_seed(0)
    local model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    local x = ember.tensor({{0, 0}, {0, 1}, {1, 0}, {1, 1}}, {dtype = "float32"})
    local y = I{1, 2, 2, 1}
    local loss_fn = nn.CrossEntropyLoss()
    local first, last
    for step = 1, 300 do
      model:zero_grad()
      local loss = loss_fn(model(x), y)
      loss:backward()
      ember.no_grad(function()
        for _, p in ipairs(model:parameters()) do p:sub_(p.grad * 0.5) end
      end)
      if step == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(last < first / 20, string.format("loss %g -> %g", first, last))
    check(model(x):argmax(2), {1, 2, 2, 1})
  end)

  it("a regression with Linear + MSELoss recovers the weights", function()
    ember.manual_seed(1)
    local fc = nn.Linear(3, 1, {dtype = "float64"})
    local X = ember.randn(64, 3, {dtype = "float64"})
    local Y = X:matmul(T{{2}, {-1}, {0.5}}) + 0.3
    local first, last
    for step = 1, 200 do
      fc:zero_grad()
      local loss = nn.MSELoss()(fc(X), Y)
      loss:backward()
      local _ <close> = ember.no_grad()
      for _, p in ipairs(fc:parameters()) do p:sub_(p.grad * 0.1) end
      if step == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(last < first * 1e-4, string.format("loss %g -> %g", first, last))
    check(fc.weight, {{2, -1, 0.5}}, 1e-3)
    check(fc.bias, {0.3}, 1e-3)
  end)
end)

describe("F.linear on inputs with more than 2 dims", function()
  it("equals the row-by-row product, gradients included (one GEMM over all rows)", function()
    ember.manual_seed(5)
    local x = ember.randn(2, 3, 4, {dtype = "float64", requires_grad = true})
    local w = ember.randn(5, 4, {dtype = "float64", requires_grad = true})
    local b = ember.randn(5, {dtype = "float64", requires_grad = true})
    local y = F.linear(x, w, b)
    assert.same({2, 3, 5}, {y.shape[1], y.shape[2], y.shape[3]})
    -- row (i, j) by hand: sum_k x[i][j][k] w[o][k] + b[o]
    local want = {}
    for i = 1, 2 do
      want[i] = {}
      for j = 1, 3 do
        want[i][j] = {}
        for o = 1, 5 do
          local s = b[o]:item()
          for k = 1, 4 do s = s + x[i][j][k]:item() * w[o][k]:item() end
          want[i][j][o] = s
        end
      end
    end
    check(y, want, 1e-12)
    local ok, report = gradcheck(function(a, m, c) return F.linear(a:transpose(1, 2), m, c) end,
                                 {ember.randn(3, 2, 4, {dtype = "float64"}), w, b})
    assert(ok, report)
  end)
  it("names the shapes when the last dim does not match, at the caller's line", function()
    local msg = err(function() local y = F.linear(ember.ones(2, 3, 4), ember.ones(5, 3)); return y end)
    has(msg, "nn_spec.lua:")
    has(msg, "linear: input [2, 3, 4] and weight [5, 3]")
  end)
end)
