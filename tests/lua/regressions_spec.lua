-- regressions_spec.lua — wrong answers and unchecked input found by trying
-- ember hard: random API calls, a differential comparison with
-- PyTorch, hostile arguments. Each test failed before its fix. Expected
-- values are worked out by hand in the comments (or by finite differences),
-- never taken from ember; dims and indices are 1-based.
local ember = require "ember"
local h = require "helpers"
local check, err, has = h.check, h.err, h.has

local D = function(v) return ember.tensor(v, {dtype = "float64"}) end
local nn, F = ember.nn, ember.nn.functional

-- the gradient of f(x):sum() (or of f(x) when it is 0-d) at x
local function grad_of(f, v)
  local x = D(v):requires_grad_()
  local y = f(x)
  if y.ndim > 0 then y = y:sum() end
  y:backward()
  return x.grad
end

describe("softmax over a dim of size 1", function()
  -- a [1] view with stride 2: one row of one element, so softmax is 1 and log_softmax 0
  local function v(base) return base:select(2, 2):narrow(1, 2, 1) end

  it("is 1 (softmax) and 0 (log_softmax) for a strided size-1 dim", function()
    local b = ember.tensor({{1., 4.5}, {2., 3.}})
    check(v(b):softmax(1), {1})
    check(v(b):log_softmax(1), {0})
    check(v(D({{1., 4.5}, {2., 3.}})):softmax(1), {1})
  end)

  it("is right on expanded and 3-d inputs whose reduced dim has size 1", function()
    check(ember.tensor({3.}):expand(4, 1):softmax(2), {{1}, {1}, {1}, {1}})
    -- [2, 1, 3] made by narrowing a [2, 2, 3]: dim 2 has size 1 and stride 3
    local x = ember.arange(12):float():reshape(2, 2, 3):narrow(2, 2, 1)
    check(x:softmax(2), {{{1, 1, 1}}, {{1, 1, 1}}})
    check(x:log_softmax(2), {{{0, 0, 0}}, {{0, 0, 0}}})
  end)

  it("has the gradient 0 (softmax of one element is the constant 1)", function()
    check(grad_of(function(x) return v(x):softmax(1) * 5 end, {{1., 4.5}, {2., 3.}}), {{0, 0}, {0, 0}})
    -- d log_softmax = g - softmax * sum(g) = 5 - 1 * 5
    check(grad_of(function(x) return v(x):log_softmax(1) * 5 end, {{1., 4.5}, {2., 3.}}), {{0, 0}, {0, 0}})
  end)
end)

describe("masked_select on a transposed input", function()
  it("sends each gradient back to the element it selected", function()
    -- b:t() = {{1,4},{2,5},{3,6}}; the mask picks (1,1)=1, (2,2)=5, (3,1)=3, read row-major;
    -- weights 1, 2, 3 go to b[1][1], b[2][2], b[1][3]. (PyTorch 1.13 gives {{1,0,2},{0,3,0}}
    -- here, a bug of its own: its backward scattered into b's memory order.)
    local b = D({{1, 2, 3}, {4, 5, 6}}):requires_grad_()
    local mask = ember.tensor({{true, false}, {false, true}, {true, false}})
    local y = b:t():masked_select(mask)
    check(y, {1, 5, 3})
    local loss = (y * D({1, 2, 3})):sum()
    loss:backward()
    check(b.grad, {{1, 0, 3}, {0, 2, 0}})
  end)
end)

describe("index_add", function()
  it("scales the source by alpha", function()
    -- x[1] += 2 * 1, x[3] += 2 * 2
    check(ember.zeros(3):index_add(1, ember.tensor({1, 3}), ember.tensor({1., 2.}), {alpha = 2}), {2, 0, 4})
    local x = ember.ones(2, 2)
    x:index_add_(2, ember.tensor({2}), ember.tensor({{1.}, {2.}}), {alpha = -1})
    check(x, {{1, 0}, {1, -1}})
    assert.is_truthy(err(function() return ember.zeros(3, {dtype = "int64"}):index_add(1, {1}, ember.tensor({1}), {alpha = 0.5}) end)
      :find("alpha 0.5 must be an integer", 1, true))
    has(err(function() return ember.zeros(3):index_add(1, {1}, ember.ones(1), 2) end),
        "index_add: argument 4: expected an options table {alpha=}, got number")
  end)

  it("is differentiable out of place in self and source", function()
    local x = D({1, 2, 3}):requires_grad_()
    local s = D({10, 20}):requires_grad_()
    local y = x:index_add(1, ember.tensor({3, 3}), s, {alpha = 3})
    check(y, {1, 2, 3 + 30 + 60})
    local loss = (y * D({1, 2, 4})):sum()
    loss:backward()
    check(x.grad, {1, 2, 4})          -- the identity on self
    check(s.grad, {12, 12})           -- alpha * g[3] for both (repeated index)
  end)
end)

describe("linspace", function()
  it("with one point gives the start", function()
    check(ember.linspace(2, 5, 1), {2})
    check(ember.linspace(2, 5, 2), {2, 5})
  end)
end)

describe("empty tensors with two or more dims", function()
  it("work with in-place and reducing ops", function()
    h.check_shape(ember.zeros(2, 0):add_(1), {2, 0})
    h.check_shape(ember.zeros(4, 0):masked_fill(ember.zeros(4, 0):eq(0), 1), {4, 0})
    h.check_shape(ember.zeros(1, 5, 0):logsumexp(1), {5, 0})
    h.check_shape(ember.zeros(2, 0):index_add(1, ember.tensor({1}), ember.zeros(1, 0)), {2, 0})
    h.check_shape(ember.zeros(2, 0):scatter(1, ember.zeros(1, 0, {dtype = "int64"}), ember.zeros(1, 0)), {2, 0})
    h.check_shape(ember.zeros(3, 0):copy_(ember.ones(3, 0)), {3, 0})
  end)
end)

describe("in-place writes into views whose elements share memory", function()
  it("are refused for unfold and expand views", function()
    has(err(function() return ember.arange(6):float():unfold(1, 3, 1):add_(1) end),
        "add_: cannot write in place to [4,3] (strides [1,1])")
    has(err(function() return ember.zeros(3, 1):expand(3, 3):copy_(ember.ones(3, 3)) end),
        "copy_: cannot write in place to [3,3] (strides [1,0])")
    has(err(function() return ember.zeros(3, 1):expand(3, 3):uniform_() end), "uniform_: cannot write in place")
    has(err(function() return ember.zeros(4):unfold(1, 2, 1):index_add_(1, {1}, ember.ones(1, 2)) end),
        "index_add: cannot write in place")
  end)

  it("read a source that overlaps the destination as if it were cloned first", function()
    -- y[2..4] = y[1..3]: {1, 1, 2, 3}, not {1, 1, 1, 1} (the copy used an overlapping memcpy)
    local y = ember.tensor({1., 2, 3, 4})
    y:narrow(1, 2, 3):copy_(y:narrow(1, 1, 3))
    check(y, {1, 1, 2, 3})
    local z = ember.tensor({1., 2, 3, 4})
    z:narrow(1, 1, 3):copy_(z:narrow(1, 2, 3))
    check(z, {2, 3, 4, 4})
    local a = ember.tensor({{1., 2}, {3, 4}})
    a:add_(a:t())
    check(a, {{2, 5}, {5, 8}})
  end)

  it("are allowed where the elements are distinct", function()
    -- unfold with step = size tiles without overlap; a transposed or stepped view is fine too
    local t = ember.zeros(6)
    t:unfold(1, 2, 2):add_(1)
    check(t, {1, 1, 1, 1, 1, 1})
    local m = ember.zeros(2, 3)
    m:t():add_(ember.tensor({{1., 2.}, {3., 4.}, {5., 6.}}))
    check(m, {{1, 3, 5}, {2, 4, 6}})
    -- (interleaved layouts that share nothing are checked in tests/c/test_tensor.c)
  end)
end)

describe("gradients that are finite in PyTorch", function()
  it("prod at a zero: the product of the other elements", function()
    check(grad_of(function(x) return x:prod() end, {0, 2, 3}), {6, 0, 0})
    -- two zeros: every product of the others holds a zero
    check(grad_of(function(x) return x:prod() end, {0, 2, 0}), {0, 0, 0})
    -- along a dim: rows {0,2,3} -> {6,0,0}, {1,4,5} -> {20,5,4}
    check(grad_of(function(x) return x:prod(2) end, {{0, 2, 3}, {1, 4, 5}}), {{6, 0, 0}, {20, 5, 4}})
  end)

  it("prod's second derivative at zeros (sum over k != j of prod of the rest)", function()
    -- S = d/dx (x1 x2 x3) summed = x2x3 + x1x3 + x1x2; dS/dx = (x2+x3, x1+x3, x1+x2) at (1, 0, 0)
    local x = D({1, 0, 0}):requires_grad_()
    local g = ember.autograd.grad(x:prod(), {x}, {create_graph = true})
    g:sum():backward()
    check(x.grad, {0, 1, 1})
  end)

  it("norm at the origin is 0, std of constant data is 0, t^0 at 0 is 0", function()
    check(grad_of(function(x) return x:norm() end, {0, 0}), {0, 0})
    check(grad_of(function(x) return x:norm(3) end, {0, 0}), {0, 0})
    check(grad_of(function(x) return x:std() end, {1, 1, 1}), {0, 0, 0})
    check(grad_of(function(x) return x:var() end, {1, 1, 1}), {0, 0, 0})
    check(grad_of(function(x) return x ^ 0 end, {0, 1}), {0, 0})
    -- d/db a^b = a^b log a is 0 at a = 0 for b >= 0 (PyTorch), not 0 * -inf
    local b = D({2}):requires_grad_()
    ember.pow(D({0}), b):sum():backward()
    check(b.grad, {0})
  end)

  it("still gives the ordinary gradients away from those points", function()
    -- d|x| = x/|x| = (3/5, 4/5); d std: (x - mean) / ((n-1) std) with x = {1, 3}: std = sqrt(2)
    check(grad_of(function(x) return x:norm() end, {3, 4}), {0.6, 0.8}, 1e-12)
    check(grad_of(function(x) return x:std() end, {1, 3}), {-1 / math.sqrt(2), 1 / math.sqrt(2)}, 1e-12)
    check(grad_of(function(x) return x ^ 2 end, {3, -1}), {6, -2})
  end)
end)

describe("losses and modules", function()
  it("nll_loss takes weight", function()
    -- -(1 * -1 + 3 * -4) / (1 + 3) = 13/4; sum: 13; none: {1, 12}
    local logp, y, w = ember.tensor({{-1., -2.}, {-3., -4.}}), ember.tensor({1, 2}), ember.tensor({1., 3.})
    check(F.nll_loss(logp, y, {weight = w}), 3.25)
    check(F.nll_loss(logp, y, {weight = w, reduction = "sum"}), 13)
    check(F.nll_loss(logp, y, {weight = w, reduction = "none"}), {1, 12})
    check(nn.NLLLoss({weight = w})(logp, y), 3.25)
    -- an ignored target leaves the weights' sum too: -(3 * -4) / 3
    check(F.nll_loss(logp, y, {weight = w, ignore_index = 1}), 4)
    has(err(function() return F.nll_loss(logp, y, {weight = ember.ones(3)}) end),
        "nll_loss: weight must have one entry per class, shape [2], got [3]")
  end)

  it("Embedding's padding_idx row starts at zero and gets no gradient", function()
    local e = nn.Embedding(3, 2, {padding_idx = 2})
    check(e.weight[2], {0, 0})
    e(ember.tensor({1, 2, 2, 3})):sum():backward()
    check(e.weight.grad, {{1, 1}, {0, 0}, {1, 1}})
    local last = nn.Embedding(3, 2, {padding_idx = -1})
    assert.are.equal(3, last.padding_idx)
    has(err(function() return nn.Embedding(3, 2, {padding_idx = 4}) end), "padding_idx must be an integer in 1..3")
    -- the functional form, with a row that is not zero: the value stays, the gradient does not flow
    local w = D({{1, 2}, {3, 4}}):requires_grad_()
    local out = F.embedding(ember.tensor({2, 1}), w, {padding_idx = 2})
    check(out, {{3, 4}, {1, 2}})
    out:sum():backward()
    check(w.grad, {{1, 1}, {0, 0}})
    has(err(function() return F.embedding(ember.tensor({1}), ember.ones(3)) end),
        "embedding: weight must be a 2-D tensor [num, dim], got [3]")
    -- padding_idx by position, as PyTorch's F.embedding(input, weight, padding_idx)
    check(F.embedding(ember.tensor({2, 1}), w:detach(), 2), {{3, 4}, {1, 2}})
    has(err(function() return F.embedding(ember.tensor({1}), w, 2, {padding_idx = 2}) end),
        "embedding: got multiple values for argument 'padding_idx'")
  end)

  it("all and any keep uint8 for uint8 input, bool otherwise", function()
    local u = ember.tensor({1, 2}, {dtype = "uint8"})
    assert.are.equal("uint8", u:all().dtype)
    assert.are.equal(1, u:all():item())
    assert.are.equal("uint8", u:any(1).dtype)
    assert.are.equal(0, ember.tensor({0, 2}, {dtype = "uint8"}):all():item())
    assert.are.equal("bool", ember.tensor({1, 2}):all().dtype)
  end)
end)

describe("sizes that overflow", function()
  it("are refused with the op's name, not wrapped", function()
    has(err(function() return ember.ones(0, 2^61) end), "ones: size [0,2305843009213693952] is too large")
    has(err(function() return ember.zeros(1, 1):expand(1 << 40, 1 << 40) end), "expand: size")
    has(err(function() return ember.arange(5):narrow(1, 2, math.maxinteger) end), "narrow: start 2, length")
    has(err(function() return nn.Embedding(0, math.maxinteger) end), "too large")
    has(err(function() return ember.zeros(0):reshape(1 << 62, 4, 0) end), "reshape: shape")
  end)

  it("out of memory names the op that asked", function()
    -- 2^36 floats are 256 GiB: refused by the allocator, not by a size check
    has(err(function() return ember.zeros(1 << 36) end), "zeros: out of memory: a float32 tensor of size [68719476736]")
    local a = ember.zeros(1 << 18, 1)
    has(err(function() return a + ember.zeros(1, 1 << 18) end), "add: out of memory")
    has(err(function() return a:expand(1 << 18, 1 << 18):contiguous() end), "contiguous: out of memory")
  end)

  it("crashes and undefined behaviour the fuzzer found", function()
    -- autograd.grad released results it had not set when a later input was refused
    local x = ember.zeros(2)
    has(err(function() return ember.autograd.grad(x, {x, x}) end), "autograd.grad: input 1 does not require grad")
    local y = D({1, 2}):requires_grad_()
    has(err(function() return ember.autograd.grad(y:sum(), {y, x}) end), "autograd.grad: input 2 does not require grad")
    -- a huge slice step: one element (the length formula overflowed)
    check(ember.arange(3):slice(1, 1, 3, math.maxinteger), {0})
    check(ember.arange(5):slice(1, 2, 5, 2), {1, 3})
    -- diagonal offsets past the corner (negating math.mininteger overflowed): empty
    h.check_shape(ember.zeros(2, 2):diagonal(math.mininteger), {0})
    h.check_shape(ember.zeros(2, 3):diagonal(math.maxinteger), {0})
    check(ember.tensor({{1, 2}, {3, 4}}):diagonal(-1), {3})
    -- a tensor as its own grad would be a reference cycle (PyTorch refuses it too)
    has(err(function() x.grad = x end), "grad: can't assign a tensor as its own grad")
  end)

  it("extreme integers in the ops of issues 14 and 16 give errors, not overflow or a hang", function()
    -- found by calling every function with math.mininteger / maxinteger under UBSan
    has(err(function() local r = ember.diag_embed(ember.ones(2), math.mininteger); return r end),
        "diag_embed: offset -9223372036854775808 is too large")
    has(err(function() local r = ember.diag(ember.ones(2), math.maxinteger); return r end), "diag: offset")
    has(err(function() local r = ember.diagflat(ember.ones(2), math.mininteger); return r end), "diagflat: offset")
    has(err(function()
      local r = ember.repeat_interleave(ember.ones(3), math.maxinteger, {output_size = 3}); return r end),
      "output_size 3 does not match")
    has(err(function() local r = ember.avg_pool1d(ember.ones(1, 1, 4), math.maxinteger); return r end),
        "avg_pool1d: the window")
    -- a stride past the input: one window
    check(ember.max_pool1d(ember.ones(1, 1, 4), 2, math.maxinteger), {{{1}}})
    check(ember.max_pool1d(D({{{1, 3, 2}}}), 1, math.maxinteger), {{{1}}})
    has(err(function() local r = ember.nn.functional.interpolate(ember.ones(1, 1, 3), {size = {1 << 50}}); return r end),
        "interpolate: the output [1, 1, 1125899906842624] cannot be made")
    has(err(function() local r = ember.tile(ember.ones(2), {math.maxinteger}); return r end), "tile: size")
  end)

  it("integers past 2^53 meet int64 tensors exactly", function()
    -- through a double, 2^62 + 1 would become 2^62
    local big = (1 << 62) + 1
    local t = ember.tensor({0, 1})
    local r = (t + big):tolist()
    assert.are.equal(big, r[1])
    assert.are.equal(big + 1, r[2])
    assert.are.equal(big - 1, (big - t):tolist()[2])
    assert.are.same({true}, ember.tensor({big}):eq(big):tolist())
    assert.are.same({false}, ember.tensor({big - 1}):eq(big):tolist())
    local u = t:clone()
    u:add_(big)
    assert.are.equal(big, u:tolist()[1])
    -- where with such a number (a refused conversion used to leak the other operand)
    assert.are.equal(math.maxinteger, ember.where(t:gt(0), t, math.maxinteger):tolist()[1])
  end)

  it("split with a size beyond the dim gives the whole tensor", function()
    local parts = {ember.arange(5):split(math.maxinteger)}
    assert.are.equal(1, #parts)
    check(parts[1], {0, 1, 2, 3, 4})
    has(err(function() return ember.arange(5):split({math.maxinteger, math.maxinteger}) end), "split: split sizes sum to more")
  end)

  it("module sizes must be finite non-negative integers", function()
    has(err(function() return nn.Embedding(3, math.huge) end), "Embedding: embedding_dim must be a non-negative integer, got inf")
    has(err(function() return nn.Linear(3, math.huge) end), "Linear: out_features must be a non-negative integer, got inf")
    has(err(function() return nn.Linear(3, 0 / 0) end), "Linear: out_features must be a non-negative integer")
    has(err(function() return nn.Embedding("3", 2) end), 'Embedding: num_embeddings must be a non-negative integer, got "3" (a string)')
    has(err(function() return nn.Flatten(1.5) end), "Flatten: start_dim must be an integer dim, got 1.5")
  end)
end)

describe("error positions", function()
  it("nn and engine errors point at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(function() local m = nn.Linear(3, -1); return m end)
    assert.is_false(ok)
    has(e, "regressions_spec.lua:" .. line .. ": Linear: out_features")
    line = debug.getinfo(1, "l").currentline + 1
    ok, e = pcall(function() local r = ember.zeros(2, 3):matmul(ember.zeros(2, 3)); return r end)
    has(e, "regressions_spec.lua:" .. line .. ": matmul")
  end)

  it("schedulers refuse non-positive or non-finite factors", function()
    local opt = ember.optim.SGD(nn.Linear(2, 2):parameters(), {lr = 0.1})
    local S = ember.optim.lr_scheduler
    has(err(function() return S.StepLR(opt, {step_size = 1, gamma = -1}) end), "StepLR: invalid gamma = -1")
    has(err(function() return S.StepLR(opt, {step_size = 1, gamma = math.huge}) end), "StepLR: invalid gamma = inf")
    has(err(function() return S.CosineAnnealingLR(opt, {T_max = 2, eta_min = -1}) end), "invalid eta_min = -1")
    has(err(function() return S.CosineAnnealingLR(opt, {T_max = math.huge}) end), "invalid T_max = inf")
  end)

  it("arguments the bindings used to accept or misname", function()
    has(err(function() return ember.eye(3, print) end), "ember.eye: argument 2: expected an integer (the number of columns), got function")
    check(ember.eye(2, 3), {{1, 0, 0}, {0, 1, 0}})
    has(err(function() return ember.set_num_threads(2^40) end), "ember.set_num_threads: argument 1: expected a count in 1..1024")
    -- index assignments name themselves, not the op that carries them out
    local t = ember.zeros(3, {dtype = "int32"})
    has(err(function() t[1] = 1 << 40 end), "t[i] = v: value 1099511627776 cannot be converted to int32")
    has(err(function() t[t:eq(0)] = 1 << 40 end), "t[mask] = v: value 1099511627776")
    -- trailing nils are absent arguments, as for sum
    check(ember.tensor({1., 1.}):softmax(1, nil), {0.5, 0.5})
    check(ember.tensor({1., 2.}):sum(1, nil), 3)
    -- a method called with '.'
    local x = ember.zeros(2)
    has(err(function() return x.sum() end), "sum: argument 1: expected a tensor, got no value: use t:sum() (a method call with ':')")
  end)

  it("atleast_Nd and movedim keep the gradient when they have nothing to change", function()
    -- they returned a fresh header without autograd data: the input's gradient was lost silently
    for _, case in ipairs({{"atleast_1d", {3}}, {"atleast_2d", {2, 3}}, {"atleast_3d", {2, 1, 2}}}) do
      local x = ember.ones(case[2], {requires_grad = true})
      local y = ember[case[1]](x)
      assert.is_true(y.requires_grad, case[1])
      ;(y * 3):sum():backward()
      assert.is_true(x.grad:eq(3):all():item(), case[1])
    end
    local s = ember.tensor(2.0, {requires_grad = true})
    local m = ember.movedim(s, {}, {})
    assert.is_true(m.requires_grad)
    ;(m * m):backward()
    assert.are.equal(4, s.grad:item())
  end)

  it("searchsorted keeps its memory to the values, not values x boundaries", function()
    -- the count of boundaries before each value was a [values, n] comparison: 2^16 values
    -- against 2^16 boundaries made 4 GiB of bools; the binary search makes a few [values]
    local n = 1 << 16
    local seq = ember.arange(n, {dtype = "float64"})
    local vals = ember.arange(n, {dtype = "float64"}) + 0.5
    local r = ember.searchsorted(seq, vals)
    assert.are.equal(2, r[1]:item())          -- 0.5 goes after 0: position 2
    assert.are.equal(n + 1, r[n]:item())      -- past the last
    assert.are.equal(n * (n + 3) // 2, r:sum():item())   -- sum of 2..n+1
  end)

  it("layers name themselves in errors from their padding and their dtype option, once", function()
    local c = nn.Conv1d(2, 2, 3, {padding = 1, padding_mode = "reflect"})
    local line = debug.getinfo(1, "l").currentline + 1
    local e = err(function() local r = c(ember.zeros(2, 1)); return r end)   -- no tail call: keeps this line
    has(e, "regressions_spec.lua:" .. line .. ": Conv1d(")
    has(e, "): pad: reflect padding {1, 1} of dim 2 must be less than its size 1")
    -- the position was there twice: "...: Conv1d(...): <file>:<line>: pad: ..."
    assert.is_nil(e:find("regressions_spec.lua:%d+:.*regressions_spec.lua:%d+:"), e)
    -- InstanceNorm2d's sixth and seventh positional arguments are device and dtype, PyTorch's
    -- order (they were dtype and device, also for BatchNorm, GroupNorm and the convolutions)
    has(err(function() return nn.InstanceNorm2d(2, 1e-5, 0.1, true, true, nil, 6) end),
        "InstanceNorm2d: option 'dtype': expected a dtype name")
    assert.are.equal("float64", nn.BatchNorm2d(2, 1e-5, 0.1, true, true, "cpu", "float64").weight.dtype)
    assert.are.equal("float64", nn.GroupNorm(1, 2, 1e-5, true, "cpu", "float64").weight.dtype)
    assert.are.equal("float64", nn.Conv2d(1, 1, 1, 1, 0, 1, 1, true, "zeros", "cpu", "float64").weight.dtype)
    assert.are.equal("float64", nn.ConvTranspose2d(1, 1, 1, 1, 0, 0, 1, true, 1, "zeros", "cpu", "float64").weight.dtype)
    has(err(function() return nn.BatchNorm1d(3, {dtype = "int9"}) end), "BatchNorm1d: option 'dtype': unknown dtype 'int9'")
    assert.are.equal("float64", nn.BatchNorm1d(3, {dtype = "float64"}).running_mean.dtype)
  end)
end)
