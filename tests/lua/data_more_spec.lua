-- data_more_spec.lua — ember.data's Subset, ConcatDataset, random_split, the samplers
-- (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
-- BatchSampler) and DataLoader's generator and batch_sampler options.
-- Deterministic results against PyTorch 2.15 (tests/lua/fixtures/data_more.lua, written by
-- scripts/fixtures/make_data_more_fixtures.py; indices 1-based); random ones, whose numbers
-- come from ember's generator rather than PyTorch's, for their structure: permutations,
-- counts, disjoint covering splits, reproducible from a generator's seed, the global
-- generator untouched when a generator is given, weights respected within 6 standard errors.
local ember = require "ember"
local h = require "helpers"
local data = ember.data

local fx = dofile("tests/lua/fixtures/data_more.lua")

local function join(list) return table.concat(list, " ") end

-- batches (lists of lists) as text: "1 2|3"
local function join2(lists)
  local out = {}
  for k, l in ipairs(lists) do out[k] = join(l) end
  return table.concat(out, "|")
end

local function range(n)
  local out = {}
  for i = 1, n do out[i] = i end
  return out
end

local function sorted(list)
  local c = table.move(list, 1, #list, 1, {})
  table.sort(c)
  return c
end

-- list is a permutation of 1..n
local function is_perm(list, n)
  return #list == n and join(sorted(list)) == join(range(n))
end

-- f's error message, which must start at this file's line (ember.errors.raise)
local function err_here(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  e = tostring(e)
  assert(e:match("^tests/lua/data_more_spec%.lua:%d+: ") or e:match("data_more_spec%.lua:%d+: "),
         "the error does not point at the caller's line: " .. e)
  return e
end

-- the warnings ember.data gives while f runs
local function warnings_of(f)
  local saved, got = data._warn, {}
  data._warn = function(text) got[#got + 1] = text end
  local ok, e = pcall(f)
  data._warn = saved
  if not ok then error(e, 0) end
  return got
end

local function gen(seed) return ember.Generator():manual_seed(seed) end

describe("random_split", function()
  it("splits into PyTorch's lengths (counts, fractions, round-robin remainder) with its warnings", function()
    assert.is_true(#fx.random_split >= 35)
    local checked = 0
    for _, c in ipairs(fx.random_split) do
      local what = string.format("n=%d lengths={%s}", c.n, join(c.lengths))
      if not c.error then
        local parts
        local warned = warnings_of(function() parts = data.random_split(range(c.n), c.lengths, gen(c.n)) end)
        local lens, all = {}, {}
        for k, p in ipairs(parts) do
          lens[k] = #p
          for i = 1, #p do all[#all + 1] = p:get(i) end
        end
        assert.are.equal(join(c.want), join(lens), what)
        assert.is_true(is_perm(all, c.n), what .. ": the splits are not disjoint and covering")
        local want_warn = {}
        for k, i in ipairs(c.warned) do
          want_warn[k] = string.format("random_split: Length of split at index %d is 0. This might result in an "
                                       .. "empty dataset.", i)
        end
        assert.are.same(want_warn, warned, what)
        checked = checked + 1
      else
        local e = h.err(data.random_split, range(c.n), c.lengths)
        if c.error:find("Fraction at index", 1, true) then
          local i = tonumber(c.error:match("index (%d+)")) + 1
          h.has(e, string.format("random_split: fraction at index %d", i))
          h.has(e, "is not between 0 and 1")
        else
          assert(c.error:find("Sum of input lengths does not equal the length of the input dataset", 1, true))
          h.has(e, "random_split: sum of input lengths")
          h.has(e, string.format("does not equal the length of the input dataset (%d)", c.n))
        end
      end
    end
    assert.is_true(checked >= 25)
  end)

  it("gives Subsets of the dataset, reproducible from the generator's seed", function()
    local ds = data.TensorDataset(ember.arange(101, 131))
    local a = data.random_split(ds, {10, 15, 5}, gen(7))
    local b = data.random_split(ds, {10, 15, 5}, {generator = gen(7)})
    local c = data.random_split(ds, {10, 15, 5}, gen(8))
    assert.are.equal(3, #a)
    for k = 1, 3 do
      assert.are.equal(ds, a[k].dataset)
      assert.are.equal(join(a[k].indices), join(b[k].indices))
      -- the samples are the dataset's at the subset's indices
      for i = 1, #a[k] do assert.are.equal(100 + a[k].indices[i], a[k]:get(i):item()) end
    end
    assert.are_not.equal(join(a[1].indices) .. join(a[2].indices), join(c[1].indices) .. join(c[2].indices))
    -- not the identity order
    assert.are_not.equal(join(range(10)), join(a[1].indices))
    -- a 1-D tensor of lengths works as a list
    local t = data.random_split(ds, ember.tensor({20, 10}), gen(7))
    assert.are.equal(20, #t[1])
    assert.are.equal(10, #t[2])
  end)

  it("a generator leaves the global generator alone; without one the global generator draws", function()
    ember.manual_seed(5)
    local want = ember.rand(4):tolist()
    ember.manual_seed(5)
    local g = gen(1)
    local s0 = g:get_state().offset
    data.random_split(range(50), {0.5, 0.5}, g)
    assert.are.same(want, ember.rand(4):tolist())
    assert.is_true(g:get_state().offset > s0)   -- the draw advanced g
    ember.manual_seed(3)
    local x = data.random_split(range(20), {5, 15})
    ember.manual_seed(3)
    local y = data.random_split(range(20), {5, 15})
    assert.are.equal(join(x[1].indices), join(y[1].indices))
  end)

  it("refuses bad lengths, naming the function and the values", function()
    h.has(h.err(data.random_split, range(10), {-2, 12}), "random_split: lengths[1] = -2: a count cannot be negative")
    h.has(h.err(data.random_split, range(5), {2.5, 2.5}), "random_split: lengths[1] = 2.5: expected an integer count")
    h.has(h.err(data.random_split, range(5), {2, "3"}), "random_split: lengths[2]: expected a number, got string")
    h.has(h.err(data.random_split, range(5), 5), "random_split: argument 2 (lengths): expected a list")
    h.has(h.err(data.random_split, range(5), {3, 3}), "sum of input lengths (3 + 3 = 6) does not equal the length "
          .. "of the input dataset (5)")
    h.has(h.err(data.random_split, range(4), {0 / 0, 4}), "random_split: sum of input lengths (")
    h.has(h.err(data.random_split, range(5), {5}, {generator = 3}),
          "random_split: option 'generator': expected an ember.Generator, got number")
    h.has(h.err(data.random_split, range(5), {5}, {gen = gen(1)}), "random_split: unknown option 'gen'")
    h.has(h.err(data.random_split, ember.zeros(3), {3}), "random_split: argument 1: expected a dataset")
    h.has(err_here(function() return data.random_split(range(3), {1, 1}) end), "random_split: sum of input lengths")
    -- an empty list of lengths splits only an empty dataset
    assert.are.equal(0, #data.random_split({}, {}))
  end)
end)

describe("Subset", function()
  it("reads the dataset at the indices, as PyTorch's (nested too)", function()
    for _, c in ipairs(fx.subset) do
      local s = data.Subset(range(c.n), c.indices)
      assert.are.equal(c.len, #s)
      local got = {}
      for i = 1, #s do got[i] = s:get(i) end
      assert.are.equal(join(c.values), join(got))
      -- ds[i] is the table of fields, as for every Dataset
      if #s > 0 then assert.are.equal(c.values[1], s[1][1]) end
    end
    local n = fx.nested
    local outer = data.Subset(data.Subset(range(n.n), n.inner), n.outer)
    local got = {}
    for x in outer do got[#got + 1] = x end   -- for x in dataset do
    assert.are.equal(join(n.values), join(got))
    -- a tensor of indices
    local t = data.Subset(range(5), ember.tensor({5, 1}))
    assert.are.equal("5 1", join({t:get(1), t:get(2)}))
    assert.are.equal("Subset(2 samples)", tostring(t))
  end)

  it("batches through the dataset's get_batch, the same samples as one by one", function()
    local ds = data.TensorDataset(ember.arange(1, 21):reshape(10, 2), ember.arange(101, 111))
    local s = data.Subset(ds, {9, 2, 2, 7, 10})
    assert.is_function(s.get_batch)
    local x, y = s:get_batch(ember.tensor({3, 1, 5}))
    h.check(x, {{3, 4}, {17, 18}, {19, 20}})
    h.check(y, {102, 109, 110})
    local fast, slow = {}, {}
    for _, yb in data.DataLoader(s, 2) do
      for _, v in ipairs(yb:tolist()) do fast[#fast + 1] = v end
    end
    -- a collate_fn makes the loader read sample by sample
    local one_by_one = data.DataLoader(s, {batch_size = 2, collate_fn = function(samples)
      local ys = {}
      for k, smp in ipairs(samples) do ys[k] = smp[2]:item() end
      return ember.tensor(ys)
    end})
    assert.is_nil(one_by_one.batch_fn)
    for yb in one_by_one do
      for _, v in ipairs(yb:tolist()) do slow[#slow + 1] = v end
    end
    assert.are.equal("109 102 102 107 110", join(fast))
    assert.are.equal(join(fast), join(slow))
    -- a dataset without get_batch gives a Subset without it
    assert.is_nil(data.Subset(range(4), {1}).get_batch)
  end)

  it("refuses indices out of range and bad arguments", function()
    h.has(h.err(data.Subset, range(3), {1, 4}), "Subset: indices[2] = 4 is out of range (expected 1..3")
    h.has(h.err(data.Subset, range(3), {0}), "Subset: indices[1] = 0 is out of range")
    h.has(h.err(data.Subset, range(3), {1.5}), "Subset: indices[1] = 1.5 is not an integer index")
    h.has(h.err(data.Subset, range(3), ember.tensor({1.0})), "Subset: indices: expected a 1-D integer tensor")
    h.has(h.err(data.Subset, range(3), ember.tensor({{1}})), "Subset: indices: expected a 1-D integer tensor")
    h.has(h.err(data.Subset, range(3)), "Subset: argument 2 (indices): expected a list of indices, got nil")
    h.has(h.err(data.Subset, 7, {1}), "Subset: argument 1: expected a dataset")
    local s = data.Subset(range(5), {2, 3})
    h.has(h.err(function() return s:get(3) end), "Subset: index 3 out of range (expected 1..2)")
    h.has(h.err(function() return s:get(0) end), "Subset: index 0 out of range")
    h.has(h.err(function() return s:get(-1) end), "Subset: index -1 out of range")
    h.has(err_here(function() return data.Subset(range(2), {3}) end), "Subset: indices[1] = 3")
  end)
end)

describe("ConcatDataset", function()
  it("has PyTorch's cumulative sizes, length and part for every index (empty parts too)", function()
    for _, c in ipairs(fx.concat) do
      local parts = {}
      for k, n in ipairs(c.sizes) do
        parts[k] = {}
        for s = 1, n do parts[k][s] = 1000 * k + s end
      end
      local cat = data.ConcatDataset(parts)
      local what = "sizes {" .. join(c.sizes) .. "}"
      assert.are.equal(join(c.cumulative), join(cat.cumulative_sizes), what)
      assert.are.equal(c.len, #cat, what)
      for i, w in ipairs(c.where) do
        assert.are.equal(1000 * w[1] + w[2], cat:get(i), what .. " index " .. i)
      end
    end
  end)

  it("batches through the parts' get_batch in the batch's order; ds1 + ds2", function()
    local a = data.TensorDataset(ember.arange(1, 4), ember.arange(1, 4):mul(10))
    local b = data.TensorDataset(ember.arange(101, 106), ember.arange(101, 106):mul(10))
    local cat = a + b
    assert.are.equal(8, #cat)
    assert.are.equal("ConcatDataset(8 samples)", tostring(cat))
    assert.is_function(cat.get_batch)
    local x, y = cat:get_batch(ember.tensor({8, 1, 4, 3, 4}))
    h.check(x, {105, 1, 101, 3, 101})
    h.check(y, {1050, 10, 1010, 30, 1010})
    x = cat:get_batch(ember.tensor({2, 1}))   -- one part only
    h.check(x, {2, 1})
    x = cat:get_batch(ember.zeros(0, {dtype = "int64"}))
    assert.are.equal(0, x:numel())
    -- a shuffled loader gives every sample once, the fields aligned
    local seen = {}
    for xb, yb in data.DataLoader(cat, {batch_size = 3, shuffle = true, generator = gen(4)}) do
      h.check(yb, xb:mul(10):tolist())
      for _, v in ipairs(xb:tolist()) do seen[#seen + 1] = v end
    end
    assert.are.equal("1 2 3 101 102 103 104 105", join(sorted(seen)))
    -- a part without get_batch: no get_batch, the loader reads sample by sample
    local mixed = data.ConcatDataset({a, {{ember.tensor(7), ember.tensor(70)}}})
    assert.is_nil(mixed.get_batch)
    local all = {}
    for xb in data.DataLoader(mixed, 2) do for _, v in ipairs(xb:tolist()) do all[#all + 1] = v end end
    assert.are.equal("1 2 3 7", join(all))
  end)

  it("refuses empty lists, non-datasets and indices out of range", function()
    h.has(h.err(data.ConcatDataset, {}), "ConcatDataset: datasets should not be an empty list")
    h.has(h.err(data.ConcatDataset, range(3), 5), "ConcatDataset: datasets[1]: expected a dataset")
    h.has(h.err(data.ConcatDataset, {{1}, ember.zeros(2)}), "ConcatDataset: datasets[2]: expected a dataset")
    h.has(h.err(data.ConcatDataset, ember.zeros(2)), "ConcatDataset: argument 1: expected a list of datasets, got a tensor")
    h.has(h.err(data.ConcatDataset), "ConcatDataset: argument 1: expected a list of datasets, got nil")
    local cat = data.ConcatDataset({{1, 2}, {3}})
    h.has(h.err(function() return cat:get(4) end), "ConcatDataset: index 4 out of range (expected 1..3)")
    h.has(h.err(function() return cat:get(0) end), "ConcatDataset: index 0 out of range")
    -- negative indices are refused, as by every ember dataset (PyTorch counts them from the end)
    h.has(h.err(function() return cat:get(-1) end), "ConcatDataset: index -1 out of range")
    h.has(err_here(function() return data.ConcatDataset({}) end), "ConcatDataset: datasets should not be")
  end)
end)

describe("SequentialSampler and BatchSampler", function()
  it("SequentialSampler gives PyTorch's order", function()
    for _, c in ipairs(fx.sequential) do
      local s = data.SequentialSampler(range(c.n))
      assert.are.equal(join(c.want), join(s:indices()))
      assert.are.equal(c.n, #s)
      local looped = {}
      for i in s do looped[#looped + 1] = i end
      assert.are.equal(join(c.want), join(looped))
    end
    assert.are.equal("SequentialSampler(3)", tostring(data.SequentialSampler(data.TensorDataset(ember.zeros(3)))))
    h.has(h.err(data.SequentialSampler, 3), "SequentialSampler: argument 1: expected a dataset")
  end)

  it("BatchSampler gives PyTorch's batches and lengths, over samplers and lists", function()
    assert.is_true(#fx.batch >= 70)
    for _, c in ipairs(fx.batch) do
      local b = data.BatchSampler(data.SequentialSampler(range(c.n)), c.batch_size, c.drop_last)
      local what = string.format("n=%d batch_size=%d drop_last=%s", c.n, c.batch_size, tostring(c.drop_last))
      assert.are.equal(join2(c.want), join2(b:indices()), what)
      assert.are.equal(c.len, #b, what)
      local looped = {}
      for batch in b do looped[#looped + 1] = batch end
      assert.are.equal(join2(c.want), join2(looped), what)
    end
    for _, c in ipairs(fx.list_batch) do
      local b = data.BatchSampler(fx.list_batch_source, {batch_size = c.batch_size, drop_last = c.drop_last})
      assert.are.equal(join2(c.want), join2(b:indices()))
      assert.are.equal(c.len, #b)
    end
    -- over a random sampler: each epoch's batches cover a new permutation
    local b = data.BatchSampler(data.RandomSampler(range(10), {generator = gen(1)}), 4, false)
    local e1, e2 = b:indices(), b:indices()
    local flat = {}
    for _, batch in ipairs(e1) do for _, i in ipairs(batch) do flat[#flat + 1] = i end end
    assert.is_true(is_perm(flat, 10))
    assert.are.equal("4 4 2", join({#e1[1], #e1[2], #e1[3]}))
    assert.are_not.equal(join2(e1), join2(e2))
  end)

  it("BatchSampler refuses bad batch sizes, drop_last and samplers", function()
    local errs = fx.errors
    assert(errs.batch_size_0:find("batch_size should be a positive integer value, but got batch_size=0", 1, true))
    h.has(h.err(data.BatchSampler, range(3), 0, false),
          "BatchSampler: batch_size should be a positive integer value, but got batch_size=0")
    h.has(h.err(data.BatchSampler, range(3), -2, false), "but got batch_size=-2")
    h.has(h.err(data.BatchSampler, range(3), 1.5, false), "but got batch_size=1.5")
    h.has(h.err(data.BatchSampler, range(3), true, false), "but got batch_size=true")
    h.has(h.err(data.BatchSampler, range(3), nil, false), "but got batch_size=nil")
    assert(errs.batch_drop_last:find("drop_last should be a boolean value, but got drop_last=1", 1, true))
    h.has(h.err(data.BatchSampler, range(3), 2, 1),
          "BatchSampler: drop_last should be a boolean value, but got drop_last=1")
    h.has(h.err(data.BatchSampler, range(3), 2), "but got drop_last=nil")
    h.has(h.err(data.BatchSampler, 5, 2, false), "BatchSampler: argument 1 (sampler): expected a sampler")
    h.has(h.err(data.BatchSampler, {1, 0}, 2, false), "BatchSampler: sampler[2] = 0 is out of range")
    h.has(h.err(data.BatchSampler, range(3), 2, false, {drop_last = true}),
          "BatchSampler: got multiple values for argument 'drop_last'")
    h.has(err_here(function() return data.BatchSampler(range(3), 0, false) end), "BatchSampler: batch_size")
  end)
end)

describe("RandomSampler", function()
  local ds = data.TensorDataset(ember.zeros(12))

  it("gives a permutation each epoch, reproducible from its generator", function()
    local s = data.RandomSampler(ds, {generator = gen(3)})
    assert.are.equal(12, #s)
    local e1, e2 = s:indices(), s:indices()
    assert.is_true(is_perm(e1, 12))
    assert.is_true(is_perm(e2, 12))
    assert.are_not.equal(join(e1), join(e2))          -- the generator moved on
    assert.are_not.equal(join(range(12)), join(e1))
    local again = data.RandomSampler(ds, false, nil, gen(3))   -- positional, as PyTorch's
    assert.are.equal(join(e1), join(again:indices()))
    assert.are.equal(join(e2), join(again:indices()))
    assert.are_not.equal(join(e1), join(data.RandomSampler(ds, {generator = gen(4)}):indices()))
    local looped = {}
    for i in data.RandomSampler(ds, {generator = gen(3)}) do looped[#looped + 1] = i end
    assert.are.equal(join(e1), join(looped))
  end)

  it("num_samples: whole permutations then part of one; with replacement, independent draws", function()
    local s = data.RandomSampler(range(5), {num_samples = 13, generator = gen(1)})
    assert.are.equal(13, #s)
    local l = s:indices()
    assert.are.equal(13, #l)
    assert.is_true(is_perm(table.move(l, 1, 5, 1, {}), 5))
    assert.is_true(is_perm(table.move(l, 6, 10, 1, {}), 5))
    local tail = table.move(l, 11, 13, 1, {})
    local seen = {}
    for _, i in ipairs(tail) do
      assert.is_nil(seen[i])                            -- no repeat within the last part
      assert.is_true(i >= 1 and i <= 5)
      seen[i] = true
    end
    local short = data.RandomSampler(range(5), {num_samples = 3, generator = gen(1)}):indices()
    assert.are.equal(3, #short)
    -- with replacement: draws in 1..n, repeats happen, every value appears
    local r = data.RandomSampler(range(4), true, 400, gen(2))
    assert.are.equal(400, #r)
    local counts = {0, 0, 0, 0}
    for _, i in ipairs(r:indices()) do counts[i] = counts[i] + 1 end
    local total = 0
    for i = 1, 4 do
      -- binomial(400, 1/4): mean 100, sd sqrt(75); 6 sd
      assert.is_true(math.abs(counts[i] - 100) <= 6 * math.sqrt(75), "count " .. counts[i])
      total = total + counts[i]
    end
    assert.are.equal(400, total)
    -- replacement without num_samples: #data_source draws
    assert.are.equal(7, #data.RandomSampler(range(7), true):indices())
  end)

  it("a generator leaves the global generator alone; without one the global generator seeds each epoch", function()
    ember.manual_seed(9)
    local want = ember.rand(3):tolist()
    ember.manual_seed(9)
    local s = data.RandomSampler(ds, {generator = gen(1)})
    s:indices()
    data.RandomSampler(ds, true, 50, gen(1)):indices()
    assert.are.same(want, ember.rand(3):tolist())
    local plain = data.RandomSampler(ds)
    ember.manual_seed(2)
    local a = plain:indices()
    ember.manual_seed(2)
    local b = plain:indices()
    assert.are.equal(join(a), join(b))
    assert.are_not.equal(join(a), join(plain:indices()))
    -- the dataset's length is read each time, as PyTorch's num_samples property
    local grow = {1, 2, 3}
    local g = data.RandomSampler(grow)
    grow[4] = 4
    assert.are.equal(4, #g)
    assert.is_true(is_perm(g:indices(), 4))
  end)

  it("refuses bad num_samples, replacement and generators, as PyTorch words them", function()
    assert(fx.errors.random_sampler_num_samples_0:find("num_samples should be a positive integer value, but got "
                                                       .. "num_samples=0", 1, true))
    h.has(h.err(data.RandomSampler, ds, {num_samples = 0}),
          "RandomSampler: num_samples should be a positive integer value, but got num_samples=0")
    h.has(h.err(data.RandomSampler, ds, {num_samples = -3}), "but got num_samples=-3")
    h.has(h.err(data.RandomSampler, ds, {num_samples = 2.5}), "but got num_samples=2.5")
    assert(fx.errors.random_sampler_empty:find("num_samples=0", 1, true))
    h.has(h.err(data.RandomSampler, {}), "RandomSampler: num_samples should be a positive integer value, but got "
          .. "num_samples=0")
    assert(fx.errors.random_sampler_replacement:find("replacement should be a boolean value, but got "
                                                     .. "replacement=1", 1, true))
    h.has(h.err(data.RandomSampler, ds, 1), "RandomSampler: replacement should be a boolean value, but got replacement=1")
    h.has(h.err(data.RandomSampler, ds, {generator = 5}),
          "RandomSampler: option 'generator': expected an ember.Generator, got number")
    h.has(h.err(data.RandomSampler, ds, {seed = 5}), "RandomSampler: unknown option 'seed'")
    h.has(h.err(data.RandomSampler, ember.zeros(3)), "RandomSampler: argument 1: expected a dataset")
    -- num_samples given for a data source that is empty when drawn
    local empty = data.RandomSampler({}, true, 3)
    h.has(h.err(function() return empty:indices() end), "RandomSampler: the data source is empty")
    h.has(err_here(function() return data.RandomSampler(ds, {num_samples = 0}) end), "RandomSampler: num_samples")
  end)
end)

describe("SubsetRandomSampler", function()
  it("gives the indices in a new random order each epoch", function()
    local idx = {4, 9, 16, 25, 36, 49, 64}
    local s = data.SubsetRandomSampler(idx, gen(5))
    assert.are.equal(7, #s)
    local e1, e2 = s:indices(), s:indices()
    assert.are.equal(join(idx), join(sorted(e1)))
    assert.are.equal(join(idx), join(sorted(e2)))
    assert.are_not.equal(join(e1), join(e2))
    assert.are.equal(join(e1), join(data.SubsetRandomSampler(idx, {generator = gen(5)}):indices()))
    assert.are.equal(join(idx), join(s.indices_list))
    -- repeats are kept; a tensor of indices works
    assert.are.equal("2 2 7", join(sorted(data.SubsetRandomSampler(ember.tensor({2, 7, 2})):indices())))
    assert.are.equal(0, #data.SubsetRandomSampler({}):indices())
    -- a generator leaves the global one alone
    ember.manual_seed(4)
    local want = ember.rand(2):tolist()
    ember.manual_seed(4)
    data.SubsetRandomSampler(idx, gen(1)):indices()
    assert.are.same(want, ember.rand(2):tolist())
    -- with a DataLoader: a validation split of a dataset
    local ds = data.TensorDataset(ember.arange(1, 11))
    local seen = {}
    for x in data.DataLoader(ds, {batch_size = 2, sampler = data.SubsetRandomSampler({2, 4, 6}, gen(0))}) do
      for _, v in ipairs(x:tolist()) do seen[#seen + 1] = v end
    end
    assert.are.equal("2 4 6", join(sorted(seen)))
  end)

  it("refuses bad indices", function()
    h.has(h.err(data.SubsetRandomSampler, {1, 0}), "SubsetRandomSampler: indices[2] = 0 is out of range")
    h.has(h.err(data.SubsetRandomSampler, {1, "a"}), "SubsetRandomSampler: indices[2] = a is not an integer index")
    h.has(h.err(data.SubsetRandomSampler), "SubsetRandomSampler: argument 1 (indices): expected a list of indices")
    h.has(h.err(data.SubsetRandomSampler, {1}, 3), "SubsetRandomSampler: option 'generator': expected an "
          .. "ember.Generator, got number")
  end)
end)

describe("WeightedRandomSampler", function()
  it("draws with replacement in proportion to the weights (within 6 standard errors)", function()
    local w = {1, 2, 3, 4, 0}
    local n = 20000
    local s = data.WeightedRandomSampler(w, n, true, gen(11))
    assert.are.equal(n, #s)
    local l = s:indices()
    assert.are.equal(n, #l)
    local counts = {0, 0, 0, 0, 0}
    for _, i in ipairs(l) do counts[i] = counts[i] + 1 end
    assert.are.equal(0, counts[5])                    -- a zero weight is never drawn
    for i = 1, 4 do
      local p = w[i] / 10
      local mean, sd = n * p, math.sqrt(n * p * (1 - p))
      assert.is_true(math.abs(counts[i] - mean) <= 6 * sd, string.format("index %d: %d draws, expected %g", i,
                                                                          counts[i], mean))
    end
    -- replacement defaults to true; a float32 tensor of weights is kept as float64
    local t = data.WeightedRandomSampler(ember.tensor({0.0, 5.0}), 6)
    assert.is_true(t.replacement)
    assert.are.equal("float64", t.weights.dtype)
    assert.are.equal("2 2 2 2 2 2", join(t:indices()))
    assert.are.equal("2 2 2 2", join(data.WeightedRandomSampler({0, 3, 0, 0}, 4):indices()))
    -- for i in s do with repeated indices (the loop finds itself again by the index it gave)
    local looped = {}
    for i in data.WeightedRandomSampler({0, 3, 0, 0}, 4) do looped[#looped + 1] = i end
    assert.are.equal("2 2 2 2", join(looped))
    -- a large epoch: every draw a valid index
    local big = data.WeightedRandomSampler(ember.rand(50000), 50000, true, gen(1))
    local l2 = big:indices()
    assert.are.equal(50000, #l2)
    local lo, hi = math.huge, -math.huge
    for _, i in ipairs(l2) do lo, hi = math.min(lo, i), math.max(hi, i) end
    assert.is_true(lo >= 1 and hi <= 50000)
  end)

  it("draws without replacement: distinct indices, zero weights never", function()
    local w = {0.5, 0, 3, 0, 1, 2}
    for seed = 1, 5 do
      local l = data.WeightedRandomSampler(w, 3, false, gen(seed)):indices()
      assert.are.equal(3, #l)
      local seen = {}
      for _, i in ipairs(l) do
        assert.is_nil(seen[i])
        assert.is_true(w[i] > 0)
        seen[i] = true
      end
    end
    -- as many as there are non-zero weights: all of them
    assert.are.equal("1 3 5 6", join(sorted(data.WeightedRandomSampler(w, 4, false):indices())))
    -- the first draw follows the weights: index 3 first in about 3/6.5 of the epochs
    local first, trials = 0, 2000
    local s = data.WeightedRandomSampler(w, 2, false, gen(21))
    for _ = 1, trials do if s:indices()[1] == 3 then first = first + 1 end end
    local p = 3 / 6.5
    assert.is_true(math.abs(first - trials * p) <= 6 * math.sqrt(trials * p * (1 - p)), "first = " .. first)
  end)

  it("is reproducible from its generator and leaves the global generator alone", function()
    local w = ember.tensor({1.0, 1.0, 1.0, 1.0})
    local a = data.WeightedRandomSampler(w, 20, true, gen(6))
    local b = data.WeightedRandomSampler(w, 20, {generator = gen(6)})
    local a1 = a:indices()
    assert.are.equal(join(a1), join(b:indices()))
    assert.are_not.equal(join(a1), join(a:indices()))
    assert.are_not.equal(join(a1), join(data.WeightedRandomSampler(w, 20, true, gen(7)):indices()))
    ember.manual_seed(8)
    local want = ember.rand(2):tolist()
    ember.manual_seed(8)
    a:indices()
    assert.are.same(want, ember.rand(2):tolist())
  end)

  it("refuses bad weights and num_samples, naming the values", function()
    local op = "WeightedRandomSampler: "
    assert(fx.errors.weighted_num_samples_0:find("num_samples should be a positive integer value, but got "
                                                 .. "num_samples=0", 1, true))
    h.has(h.err(data.WeightedRandomSampler, {1, 2}, 0),
          op .. "num_samples should be a positive integer value, but got num_samples=0")
    h.has(h.err(data.WeightedRandomSampler, {1, 2}, -1), "but got num_samples=-1")
    h.has(h.err(data.WeightedRandomSampler, {1, 2}, 1.5), "but got num_samples=1.5")
    h.has(h.err(data.WeightedRandomSampler, {1, 2}, true), "but got num_samples=true")
    h.has(h.err(data.WeightedRandomSampler, {1, 2}), "but got num_samples=nil")
    h.has(h.err(data.WeightedRandomSampler, {1, 2}, 1, 1), op .. "replacement should be a boolean value, but got "
          .. "replacement=1")
    assert(fx.errors.weighted_2d:find("weights should be a 1d sequence but given weights have shape (1, 2)", 1, true))
    h.has(h.err(data.WeightedRandomSampler, {{1, 2}}, 1), op .. "weights should be a 1-D sequence but given weights "
          .. "have shape [1, 2]")
    h.has(h.err(data.WeightedRandomSampler, ember.tensor(1.0), 1), "have shape []")
    assert(fx.errors.weighted_negative:find("probability tensor contains either `inf`, `nan` or element < 0", 1, true))
    h.has(h.err(data.WeightedRandomSampler, {1, -2}, 1), op .. "weights must be finite and non-negative")
    h.has(h.err(data.WeightedRandomSampler, {1, 0 / 0}, 1), "probability tensor contains either `inf`, `nan`")
    h.has(h.err(data.WeightedRandomSampler, {1, math.huge}, 1), "probability tensor contains either `inf`, `nan`")
    assert(fx.errors.weighted_zero_sum:find("sum of probabilities <= 0", 1, true))
    h.has(h.err(data.WeightedRandomSampler, {0, 0}, 1), op .. "invalid multinomial distribution (sum of "
          .. "probabilities <= 0)")
    h.has(h.err(data.WeightedRandomSampler, {}, 1), op .. "weights is empty")
    assert(fx.errors.weighted_too_many:find("cannot sample n_sample > prob_dist.size(-1) samples without "
                                            .. "replacement", 1, true))
    h.has(h.err(data.WeightedRandomSampler, {1, 2}, 3, false), op .. "cannot sample n_sample > prob_dist.size(-1) "
          .. "samples without replacement (num_samples=3 > 2 weights)")
    -- PyTorch (on the CPU) fills in zero-weight indices here; ember refuses
    assert.is_nil(fx.errors.weighted_too_few_nonzero)
    h.has(h.err(data.WeightedRandomSampler, {1, 0, 0}, 2, false), op .. "without replacement, num_samples=2 is more "
          .. "than the 1 non-zero weights")
    h.has(h.err(data.WeightedRandomSampler, {1, "x"}, 1), op .. "weights: expected a list of numbers")
    h.has(h.err(data.WeightedRandomSampler, "w", 1), op .. "weights: expected a list of numbers or a 1-D tensor")
    h.has(h.err(data.WeightedRandomSampler, ember.tensor({true}), 1), op .. "weights: expected real numbers")
    h.has(h.err(data.WeightedRandomSampler, {1}, 1, true, 4), op .. "option 'generator': expected an ember.Generator")
    h.has(err_here(function() return data.WeightedRandomSampler({-1}, 1) end), op .. "weights must be finite")
  end)
end)

describe("Sampler", function()
  it("is a base class: extend it with len and indices", function()
    local Evens = data.Sampler:extend("Evens")
    function Evens:init(n) self.n = n end
    function Evens:len() return self.n // 2 end
    function Evens:indices()
      local out = {}
      for i = 2, self.n, 2 do out[#out + 1] = i end
      return out
    end
    local s = Evens(7)
    assert.are.equal(3, #s)
    assert.are.equal("Evens(3)", tostring(s))
    local got = {}
    for i in s do got[#got + 1] = i end
    assert.are.equal("2 4 6", join(got))
    -- nested loops over one sampler with :iter()
    local pairs_ = {}
    for i in s:iter() do for j in s:iter() do pairs_[#pairs_ + 1] = i * 10 + j end end
    assert.are.equal(9, #pairs_)
    -- it drives a DataLoader
    local xs = {}
    for x in data.DataLoader(data.TensorDataset(ember.arange(1, 8)), {batch_size = 2, sampler = s}) do
      xs[#xs + 1] = join(x:tolist())
    end
    assert.are.equal("2 4|6", table.concat(xs, "|"))
    local Empty = data.Sampler:extend("Empty")
    h.has(h.err(function() return #Empty() end), "Empty: len() is not implemented")
    h.has(h.err(function() return Empty():indices() end), "Empty: indices() is not implemented")
    -- a loop position a sampler did not hand out
    h.has(h.err(function() return s(nil, 99) end), "Evens: called with a loop position it did not return: "
          .. "iterate with `for i in sampler do`")
  end)

  it("DistributedSampler loops as the others", function()
    local s = data.DistributedSampler(range(7), {num_replicas = 2, rank = 1, shuffle = false})
    local got = {}
    for i in s do got[#got + 1] = i end
    assert.are.equal("2 4 6 1", join(got))
  end)
end)

describe("DataLoader's batch_sampler, sampler lists and generator", function()
  local ds = data.TensorDataset(ember.arange(10, 22))

  it("takes PyTorch's batches from a batch_sampler or a sampler list", function()
    for _, c in ipairs(fx.loader) do
      local opts
      if c.batch_sampler then
        opts = {batch_sampler = c.batch_sampler}
      elseif c.sequential then
        opts = {batch_sampler = data.BatchSampler(data.SequentialSampler(range(c.sequential)), c.batch_size,
                                                  c.drop_last)}
      else
        opts = {sampler = c.sampler, batch_size = c.batch_size, drop_last = c.drop_last}
      end
      local loader = data.DataLoader(ds, opts)
      assert.are.equal(c.len, #loader)
      local got = {}
      for x in loader do got[#got + 1] = x:tolist() end
      assert.are.equal(join2(c.want), join2(got))
      -- without get_batch (a plain list dataset) the same batches
      local plain = {}
      for i = 1, 12 do plain[i] = 9 + i end
      local got2 = {}
      for x in data.DataLoader(plain, opts) do got2[#got2 + 1] = x:tolist() end
      assert.are.equal(join2(c.want), join2(got2))
    end
  end)

  it("a batch sampler's loader has no batch_size, and redraws each epoch", function()
    local loader = data.DataLoader(ds, {batch_sampler = data.BatchSampler(data.RandomSampler(ds, {generator = gen(2)}),
                                                                          5, true)})
    assert.is_nil(loader.batch_size)
    assert.are.equal(2, #loader)
    assert.are.equal("DataLoader(2 batches from a batch sampler)", tostring(loader))
    local epochs = {}
    for e = 1, 2 do
      local seen = {}
      for x in loader do
        assert.are.equal(5, x:numel())
        for _, v in ipairs(x:tolist()) do seen[#seen + 1] = v end
      end
      epochs[e] = join(seen)
      local set = {}
      for _, v in ipairs(seen) do assert.is_nil(set[v]); set[v] = true end
    end
    assert.are_not.equal(epochs[1], epochs[2])
    -- the order of the loader is its batches one after another
    local fixed = data.DataLoader(ds, {batch_sampler = {{3, 1}, {2}}})
    h.check(fixed:order(), {3, 1, 2})
    -- PyTorch's defaults (batch_size 1, shuffle and drop_last false) may be given
    assert.are.equal(2, #data.DataLoader(ds, {batch_sampler = {{1}, {2}}, batch_size = 1, shuffle = false,
                                              drop_last = false}))
    -- by position, after sampler
    assert.are.equal(1, #data.DataLoader(ds, 1, false, nil, {{1, 2}}))
  end)

  it("refuses options batch_sampler excludes, as PyTorch words it", function()
    local msg = "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
    for _, k in ipairs({"loader_batch_sampler_batch_size", "loader_batch_sampler_shuffle",
                        "loader_batch_sampler_sampler", "loader_batch_sampler_drop_last"}) do
      assert(fx.errors[k]:find(msg:sub(#"DataLoader: " + 1), 1, true))
    end
    h.has(h.err(data.DataLoader, ds, {batch_sampler = {{1}}, batch_size = 2}), msg)
    h.has(h.err(data.DataLoader, ds, {batch_sampler = {{1}}, batch_size = 2}), "(got batch_size=2,")
    h.has(h.err(data.DataLoader, ds, {batch_sampler = {{1}}, shuffle = true}), msg)
    h.has(h.err(data.DataLoader, ds, {batch_sampler = {{1}}, sampler = {1}}), msg)
    h.has(h.err(data.DataLoader, ds, {batch_sampler = {{1}}, drop_last = true}), msg)
    h.has(h.err(data.DataLoader, ds, {batch_sampler = 4}), "DataLoader: option 'batch_sampler': expected a batch "
          .. "sampler (an object with indices() and a length, or a list of batches), got number")
    h.has(h.err(data.DataLoader, ds, {sampler = ember.tensor({1})}), "DataLoader: option 'sampler': expected a "
          .. "sampler (an object with indices() and a length, or a list of indices), got a tensor")
    assert(fx.errors.loader_sampler_shuffle:find("sampler option is mutually exclusive with shuffle", 1, true))
    h.has(h.err(data.DataLoader, ds, {sampler = {1}, shuffle = true}),
          "DataLoader: option 'sampler' is mutually exclusive with shuffle = true")
    local empty = data.DataLoader(ds, {batch_sampler = {{1}, {}}})
    h.has(h.err(function() for _ in empty do end end), "DataLoader: batch 2 of the batch sampler is empty")
    h.has(err_here(function() return data.DataLoader(ds, {batch_sampler = {{1}}, drop_last = true}) end), msg)
  end)

  it("shuffles from generator: permutations, reproducible, the global generator untouched", function()
    local function epoch(loader)
      local seen = {}
      for x in loader do for _, v in ipairs(x:tolist()) do seen[#seen + 1] = v - 9 end end
      return seen
    end
    ember.manual_seed(1)
    local want = ember.rand(3):tolist()
    ember.manual_seed(1)
    local g = gen(12)
    local loader = data.DataLoader(ds, {batch_size = 5, shuffle = true, generator = g})
    assert.are.equal(g, loader.generator)
    local e1, e2 = epoch(loader), epoch(loader)
    assert.are.same(want, ember.rand(3):tolist())
    assert.is_true(is_perm(e1, 12))
    assert.is_true(is_perm(e2, 12))
    assert.are_not.equal(join(e1), join(e2))
    local again = data.DataLoader(ds, 5, true, {generator = gen(12)})
    assert.are.equal(join(e1), join(epoch(again)))
    assert.are.equal(join(e2), join(epoch(again)))
    assert.are_not.equal(join(e1), join(epoch(data.DataLoader(ds, {batch_size = 5, shuffle = true,
                                                                  generator = gen(13)}))))
    -- without shuffle the generator is not used: the order stays 1..n
    assert.are.equal(join(range(12)), join(epoch(data.DataLoader(ds, {batch_size = 5, generator = gen(1)}))))
    -- the seed option still works, and excludes generator
    local seeded = data.DataLoader(ds, {batch_size = 5, shuffle = true, seed = 3})
    assert.is_true(is_perm(epoch(seeded), 12))
    h.has(h.err(data.DataLoader, ds, {shuffle = true, seed = 3, generator = gen(1)}),
          "DataLoader: options 'seed' and 'generator' are mutually exclusive")
    h.has(h.err(data.DataLoader, ds, {shuffle = true, generator = "g"}),
          "DataLoader: option 'generator': expected an ember.Generator, got string")
    h.has(h.err(data.DataLoader, ds, {num_workers = 2}), "supported: batch_size, shuffle, sampler, batch_sampler")
  end)

  it("accepts the worker and pinning options at PyTorch's defaults, which ask for in-process loading", function()
    local ds = data.TensorDataset(ember.arange(1, 6))
    local loader = data.DataLoader(ds, {batch_size = 2, num_workers = 0, pin_memory = false, timeout = 0,
                                        persistent_workers = false})
    local got = {}
    for x in loader do got[#got + 1] = table.concat(x:tolist(), ",") end
    assert.are.equal("1,2|3,4|5", table.concat(got, "|"))
    -- positionally too: DataLoader(ds, batch_size, shuffle, sampler, batch_sampler, num_workers)
    assert.are.equal(3, #data.DataLoader(ds, 2, false, nil, nil, 0))
    -- anything else would need workers: refused, naming the accepted value
    h.has(h.err(data.DataLoader, ds, {num_workers = 1}), "only num_workers = 0, PyTorch's default, is accepted")
    h.has(h.err(data.DataLoader, ds, {worker_init_fn = function() end}), "option 'worker_init_fn' is not supported")
    h.has(h.err(data.DataLoader, ds, {pin_memory = 1}), "option 'pin_memory'")
  end)

  it("pin_memory = true without a CUDA device: PyTorch's warning, then the usual batches", function()
    if ember.cuda.is_available() then pending("a CUDA device is there: tests/gpu's composite_parts_spec pins") return end
    local ds = data.TensorDataset(ember.arange(1, 6))
    local loader
    local w = warnings_of(function() loader = data.DataLoader(ds, 2, {pin_memory = true}) end)
    assert.are.same({"'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
                     .. "won't be used."}, w)
    local got = {}
    for x in loader do
      assert.is_false(x:is_pinned())
      got[#got + 1] = table.concat(x:tolist(), ",")
    end
    assert.are.equal("1,2|3,4|5", table.concat(got, "|"))
    -- and t:pin_memory() itself says why it cannot
    h.has(h.err(function() local _ = ember.ones(2):pin_memory() end), "pin_memory: page-locked memory needs a CUDA device")
  end)
end)

describe("odd arguments", function()
  it("give Lua errors naming the function, never a crash or an internal error", function()
    local args = {0, -1, 2, 1.5, "x", {}, {1, 2}, {{1}}, {0.5, 0.5}, true, ember.zeros(3), ember.tensor({1, 2}),
                  ember.zeros(2, 2), data.TensorDataset(ember.zeros(4)), ember.Generator(), {a = 1}, math.huge,
                  0 / 0, function() end, {"a"}, {-1}, {1.5}, -math.huge, 2 ^ 70}
    local names = {"Subset", "ConcatDataset", "random_split", "SequentialSampler", "RandomSampler",
                   "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader"}
    local saved = data._warn
    data._warn = function() end
    local bad = {}
    math.randomseed(7)
    for _, name in ipairs(names) do
      for _ = 1, 400 do
        local n = math.random(0, 4)
        local a = {}
        for k = 1, n do a[k] = args[math.random(1, #args + 1)] end   -- #args + 1: nil
        local ok, e = pcall(data[name], table.unpack(a, 1, n))
        if ok and type(e) == "table" then   -- made: use it
          ok, e = pcall(function()
            local _ = #e
            if name == "DataLoader" then for _ in e do end
            elseif name == "random_split" then for _, p in ipairs(e) do local _ = #p end
            elseif type(e.indices) == "function" then e:indices()
            else for i = 1, math.min(#e, 3) do e:get(i) end end
            return tostring(e)
          end)
        end
        if not ok then
          local msg = tostring(e):gsub("^[^:]*:%d+: ", "")
          if not (msg:find("^" .. name) or msg:find("^TensorDataset")) or msg:find("attempt to") then
            bad[#bad + 1] = name .. ": " .. msg
          end
        end
      end
    end
    data._warn = saved
    assert(#bad == 0, table.concat(bad, "\n"))
  end)
end)
