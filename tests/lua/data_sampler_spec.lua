-- ember.data.DistributedSampler: shards against torch's (tests/lua/fixtures/distributed_sampler.lua,
-- from scripts/fixtures/make_sampler_fixtures.py) and hand-computed lists; shuffling; DataLoader's sampler.
local ember = require "ember"
local data = ember.data

local function join(list) return table.concat(list, " ") end

describe("DistributedSampler", function()
  it("matches torch's shards without shuffling (padding and drop_last)", function()
    local cases = dofile("tests/lua/fixtures/distributed_sampler.lua")
    assert.is_true(#cases > 40)
    for _, c in ipairs(cases) do
      local ds = {}
      for i = 1, c.n do ds[i] = i end
      for rank = 0, c.num_replicas - 1 do
        local s = data.DistributedSampler(ds, {num_replicas = c.num_replicas, rank = rank, shuffle = false,
                                               drop_last = c.drop_last})
        local want = c.shards[rank + 1]
        assert.are.equal(join(want), join(s:indices()),
                         string.format("n=%d replicas=%d rank=%d drop_last=%s", c.n, c.num_replicas, rank,
                                       tostring(c.drop_last)))
        assert.are.equal(#want, #s)
      end
    end
  end)

  it("hand-computed shards: 10 samples on 4 ranks", function()
    local ds = data.TensorDataset(ember.arange(1, 11))
    -- padded to 12 with 1, 2: ranks take 1 5 9 | 2 6 10 | 3 7 1 | 4 8 2
    local want = {"1 5 9", "2 6 10", "3 7 1", "4 8 2"}
    for rank = 0, 3 do
      local s = data.DistributedSampler(ds, {num_replicas = 4, rank = rank, shuffle = false})
      assert.are.equal(want[rank + 1], join(s:indices()))
    end
    -- drop_last: 8 samples, 2 each
    local dl = {"1 5", "2 6", "3 7", "4 8"}
    for rank = 0, 3 do
      local s = data.DistributedSampler(ds, {num_replicas = 4, rank = rank, shuffle = false, drop_last = true})
      assert.are.equal(dl[rank + 1], join(s:indices()))
    end
    -- padding longer than the dataset repeats it: 2 samples on 5 ranks
    local got = {}
    for rank = 0, 4 do got[rank + 1] = join(data.DistributedSampler({1, 2}, {num_replicas = 5, rank = rank,
                                                                             shuffle = false}):indices()) end
    assert.are.equal("1 2 1 2 1", table.concat(got, " "))
  end)

  it("shuffles the same way on every rank: the shards partition one permutation, per epoch", function()
    local n, r = 23, 4
    local ds = {}
    for i = 1, n do ds[i] = i end
    local function shards(epoch, seed)
      local all = {}
      for rank = 0, r - 1 do
        local s = data.DistributedSampler(ds, {num_replicas = r, rank = rank, seed = seed})
        s:set_epoch(epoch)
        all[rank + 1] = s:indices()
      end
      return all
    end
    local e0 = shards(0, 0)
    -- interleaved back into one order: a permutation of 1..23 padded with its own first element
    local order = {}
    for i = 1, 24 do order[i] = e0[(i - 1) % r + 1][(i - 1) // r + 1] end
    local seen = {}
    for i = 1, n do seen[order[i]] = true end
    for i = 1, n do assert.is_true(seen[i], "index " .. i .. " missing") end
    assert.are.equal(order[1], order[24])
    assert.are_not.equal(join(order), join(ds))
    -- the same epoch and seed give the same shards; another epoch or seed another order
    assert.are.equal(join(e0[2]), join(shards(0, 0)[2]))
    assert.are_not.equal(join(e0[1]) .. join(e0[2]), join(shards(1, 0)[1]) .. join(shards(1, 0)[2]))
    assert.are_not.equal(join(e0[1]) .. join(e0[2]), join(shards(0, 5)[1]) .. join(shards(0, 5)[2]))
    -- drawing the order leaves the global generator alone
    ember.manual_seed(3)
    local a = ember.rand(3)
    ember.manual_seed(3)
    shards(2, 1)
    assert.is_true(ember.equal(a, ember.rand(3)))
  end)

  it("drives a DataLoader", function()
    local ds = data.TensorDataset(ember.arange(1, 8))
    local s = data.DistributedSampler(ds, {num_replicas = 2, rank = 1, shuffle = false})
    local loader = data.DataLoader(ds, {batch_size = 3, sampler = s})
    assert.are.equal(2, #loader)          -- 4 samples: 2 4 6 1
    local got = {}
    for x in loader:iter() do got[#got + 1] = join(x:tolist()) end
    assert.are.equal("2 4 6|1", table.concat(got, "|"))
    assert.has_error(function() local l = data.DataLoader(ds, {sampler = s, shuffle = true}); return l end,
                     "DataLoader: option 'sampler' is mutually exclusive with shuffle = true")
    assert.has_error(function() local l = data.DataLoader(ds, {sampler = 3}); return l end)
  end)

  it("refuses bad options", function()
    local ds = {1, 2, 3}
    assert.has_error(function() local s = data.DistributedSampler(ds, {num_replicas = 2, rank = 2}); return s end,
                     "DistributedSampler: invalid rank 2: ranks are 0-based, 0..1 for 2 replicas")
    assert.has_error(function() local s = data.DistributedSampler(ds, {num_replicas = 0, rank = 0}); return s end,
                     "DistributedSampler: option 'num_replicas': expected a positive integer, got 0")
    local ok, e = pcall(function() local s = data.DistributedSampler(ds, {num_replicas = 2, rank = 0, seeds = 1}); return s end)
    assert.is_false(ok)
    assert.matches("data_sampler_spec.lua:%d+: DistributedSampler: unknown option 'seeds'", e)
    assert.has_error(function() local s = data.DistributedSampler(ds, {num_replicas = 2, rank = 0, shuffle = 1}); return s end,
                     "DistributedSampler: option 'shuffle': expected a boolean, got number")
    local s = data.DistributedSampler(ds, {num_replicas = 2, rank = 0})
    assert.has_error(function() s:set_epoch(-1) end,
                     "DistributedSampler:set_epoch: expected a non-negative integer, got -1")
    assert.has_error(function() local x = data.DistributedSampler(ember.ones(3), {num_replicas = 1, rank = 0}); return x end)
  end)
end)
