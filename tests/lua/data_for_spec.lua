-- data_for_spec.lua — `for x, y in loader do` (PyTorch's `for x, y in loader:`) and
-- `for x, y in dataset do`: Lua's generic for calls the loader at every
-- step; each loop is one epoch, a fresh pass (reshuffled, as PyTorch's), a loop left by
-- break does not leak into the next one, loops nest, and loader:iter() / loader() still work.
local ember = require "ember"
local h = require "helpers"
local data = ember.data

-- the first column of every batch of one loop, concatenated
local function visit(loader)
  local seen, sizes = {}, {}
  for x, y in loader do
    sizes[#sizes + 1] = x.shape[1]
    for i, v in ipairs(x:tolist()) do
      seen[#seen + 1] = v
      assert.are.equal(v + 100, y:tolist()[i])   -- the fields of a sample stay together
    end
  end
  return seen, sizes
end

local function ds(n) return data.TensorDataset(ember.arange(1, n + 1), ember.arange(101, n + 101)) end

describe("for ... in loader do", function()
  it("visits every batch in order without shuffling", function()
    local seen, sizes = visit(data.DataLoader(ds(5), 2))
    assert.are.same({1, 2, 3, 4, 5}, seen)
    assert.are.same({2, 2, 1}, sizes)
    local _, dropped = visit(data.DataLoader(ds(5), {batch_size = 2, drop_last = true}))
    assert.are.same({2, 2}, dropped)
  end)

  it("makes each loop a fresh epoch, reshuffled, each a permutation", function()
    local loader = data.DataLoader(ds(20), {batch_size = 3, shuffle = true, seed = 7})
    local first = visit(loader)
    assert.are.equal(1, loader.epoch)
    local second = visit(loader)
    assert.are.equal(2, loader.epoch)
    -- the seeded order of epoch e is loader:order(e), a permutation of 1..20
    assert.are.same(loader:order(1):tolist(), first)
    assert.are.same(loader:order(2):tolist(), second)
    assert.are_not.same(first, second)
    local sorted = {table.unpack(second)}
    table.sort(sorted)
    for i = 1, 20 do assert.are.equal(i, sorted[i]) end
  end)

  it("starts afresh after a loop left by break, and loops nest", function()
    local loader = data.DataLoader(ds(5), 2)
    for x in loader do
      assert.are.same({1, 2}, x:tolist())
      break
    end
    local seen = visit(loader)
    assert.are.same({1, 2, 3, 4, 5}, seen)
    local pairs_seen = 0
    for a in loader do
      for b in loader do
        assert.is_true(ember.is_tensor(a) and ember.is_tensor(b))
        pairs_seen = pairs_seen + 1
      end
    end
    assert.are.equal(9, pairs_seen)
  end)

  it("keeps loader:iter() and loader() working", function()
    local loader = data.DataLoader(ds(3), 2)
    local n = 0
    for x in loader:iter() do n = n + x.shape[1] end
    for x in loader() do n = n + x.shape[1] end
    assert.are.equal(6, n)
  end)

  it("refuses a loop position it did not hand out", function()
    local loader = data.DataLoader(ds(3), 2)
    local e = h.err(function() return loader(nil, ember.ones(1)) end)
    h.has(e, "DataLoader: called with a loop position it did not return")
  end)
end)

describe("for ... in dataset do", function()
  it("visits the samples of a TensorDataset in order", function()
    local xs, ys = {}, {}
    for x, y in ds(4) do
      xs[#xs + 1], ys[#ys + 1] = x:item(), y:item()
    end
    assert.are.same({1, 2, 3, 4}, xs)
    assert.are.same({101, 102, 103, 104}, ys)
  end)

  it("visits the samples of a Dataset subclass, and breaks cleanly", function()
    local Squares = data.Dataset:extend("Squares")
    function Squares:init(n) self.n = n end
    function Squares:len() return self.n end
    function Squares:get(i) return i, i * i end
    local sq = Squares(4)
    local got = {}
    for i, v in sq do got[#got + 1] = v; if i == 2 then break end end
    for _, v in sq do got[#got + 1] = v end
    assert.are.same({1, 4, 1, 4, 9, 16}, got)
  end)
end)
