-- embedding_bag_spec.lua — F.embedding_bag and nn.EmbeddingBag against PyTorch 2.15
-- (fixtures/embedding_bag.lua, written by scripts/fixtures/make_embedding_bag_fixtures.py):
-- every mode over 1-D input with offsets (empty bags, include_last_offset), 2-D input,
-- per_sample_weights, padding_idx and ties in max mode, with the gradients of the weight and
-- of per_sample_weights; the module; what bad input gets. Offsets, indices and padding_idx
-- are 1-based on ember's side: the spec adds one to the fixture's.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local F = nn.functional

local fx = h.fixture("embedding_bag.lua")
local function case(name)
  for _, c in ipairs(fx.cases) do if c.name == name then return c end end
  error("no fixture case " .. name)
end

local function plus_one(v)
  if type(v) == "table" then
    local r = {}
    for i, x in ipairs(v) do r[i] = plus_one(x) end
    return r
  end
  return v + 1
end

local function T(v, dtype) return ember.tensor(v, {dtype = dtype or "float64"}) end

local function close(got, want, tol)
  local w = T(want)
  assert.same(w.shape, got.shape)
  local d = (got:to("float64") - w):abs():max():item()
  assert(d <= (tol or 1e-12), string.format("max difference %g", d))
end

describe("F.embedding_bag against PyTorch", function()
  for _, c in ipairs(fx.cases) do
    it(c.name, function()
      local w = T(fx.weight):requires_grad_()
      local opts = {mode = c.mode, include_last_offset = c.include_last_offset}
      if c.offsets then opts.offsets = ember.tensor(plus_one(c.offsets), {dtype = "int64"}) end
      if c.padding_idx then opts.padding_idx = c.padding_idx + 1 end
      local psw
      if c.per_sample_weights then
        psw = T(c.per_sample_weights):requires_grad_()
        opts.per_sample_weights = psw
      end
      local out = F.embedding_bag(ember.tensor(plus_one(c.input), {dtype = "int64"}), w, opts)
      close(out, c.out)
      ;(out * T(c.g)):sum():backward()
      close(w.grad, c.grad_weight)
      if psw then close(psw.grad, c.grad_psw) end
    end)
  end

  it("positional arguments as PyTorch's, and float32 weights", function()
    local w = T(fx.weight, "float32")
    local c = case("sum")
    local out = F.embedding_bag(ember.tensor(plus_one(c.input), {dtype = "int64"}), w,
                                ember.tensor(plus_one(c.offsets), {dtype = "int64"}), nil, 2, false, "sum")
    assert.equal("float32", out.dtype)
    close(out, c.out, 1e-6)
  end)

  it("no bags, and bags with nothing in them, give zeros", function()
    local w = T(fx.weight)
    local out = F.embedding_bag(ember.tensor({}, {dtype = "int64"}), w, ember.tensor({}, {dtype = "int64"}), {mode = "sum"})
    assert.same({0, 3}, out.shape)
    out = F.embedding_bag(ember.tensor({}, {dtype = "int64"}), w, ember.tensor({1, 1}, {dtype = "int64"}), {mode = "max"})
    close(out, {{0, 0, 0}, {0, 0, 0}})
  end)
end)

describe("nn.EmbeddingBag", function()
  it("is F.embedding_bag with its weight; the mean by default; padding_idx's row starts at zero", function()
    local bag = nn.EmbeddingBag(7, 3, {padding_idx = 2})
    assert.equal("mean", bag.mode)
    assert.same({7, 3}, bag.weight.shape)
    assert.equal(0, bag.weight[2]:abs():sum():item())
    local c = case("mean")
    ember.no_grad(function() bag.weight:copy_(T(fx.weight, "float32")) end)
    local mod = nn.EmbeddingBag(7, 3, {mode = "mean"})
    ember.no_grad(function() mod.weight:copy_(T(fx.weight, "float32")) end)
    close(mod(ember.tensor(plus_one(c.input), {dtype = "int64"}), ember.tensor(plus_one(c.offsets), {dtype = "int64"})),
          c.out, 1e-6)
    assert.truthy(tostring(mod):find("EmbeddingBag(7, 3, mode='mean')", 1, true))
    local named = {}
    for k in pairs(mod:state_dict()) do named[#named + 1] = k end
    assert.same({"weight"}, named)
  end)

  it("takes a weight (_weight) and per_sample_weights in forward", function()
    local w = T(fx.weight)
    local mod = nn.EmbeddingBag(7, 3, {mode = "sum", _weight = w:clone()})
    local c = case("per_sample_weights")
    close(mod(ember.tensor(plus_one(c.input), {dtype = "int64"}), ember.tensor(plus_one(c.offsets), {dtype = "int64"}),
              T(c.per_sample_weights)), c.out)
  end)
end)

describe("embedding_bag errors", function()
  local w = T(fx.weight)
  local i1 = ember.tensor({1, 2, 3}, {dtype = "int64"})
  local off = ember.tensor({1, 2}, {dtype = "int64"})
  it("names what is wrong, at the caller's line", function()
    has(err(F.embedding_bag, i1, w), "embedding_bag: a 1-D input needs offsets")
    has(err(F.embedding_bag, i1, w, ember.tensor({2, 3}, {dtype = "int64"})), "offsets[1] must be 1")
    has(err(F.embedding_bag, i1, w, ember.tensor({1, 3, 2}, {dtype = "int64"})), "offsets must not decrease")
    has(err(F.embedding_bag, i1, w, ember.tensor({1, 5}, {dtype = "int64"})), "offsets must be in 1..4, got 5")
    has(err(F.embedding_bag, ember.tensor({{1, 2}}, {dtype = "int64"}), w, off), "offsets must be nil when input is 2-D")
    has(err(F.embedding_bag, i1, w, off, {mode = "median"}), 'mode must be "sum", "mean" or "max", got median')
    has(err(F.embedding_bag, i1, w, off, {mode = "mean", per_sample_weights = T({1, 1, 1})}),
        'per_sample_weights is only supported for mode "sum"')
    has(err(F.embedding_bag, i1, w, off, {mode = "sum", per_sample_weights = T({1, 1})}),
        "per_sample_weights [2] must have input's shape [3]")
    has(err(F.embedding_bag, T({1, 2}), w, off), "input must be an integer tensor, got float64")
    has(err(F.embedding_bag, i1, w, off, {max_norm = 1}), "max_norm is not supported")
    has(err(F.embedding_bag, i1, w, ember.tensor({1, 2, 3}, {dtype = "int64"}), {include_last_offset = true}),
        "with include_last_offset the last offset must be 4 (the number of entries plus one), got 3")
    has(err(F.embedding_bag, ember.tensor({1, 9}, {dtype = "int64"}), w, off), "embedding_bag")
    local e = err(function() F.embedding_bag(i1, w, off, {sparse = true}) end)
    has(e, "sparse gradients are not supported")
    has(e, "embedding_bag_spec.lua:")
    has(err(nn.EmbeddingBag, 7, 3, {mode = "avg"}), 'EmbeddingBag: mode must be "sum", "mean" or "max", got avg')
  end)
end)
