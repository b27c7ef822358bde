-- packed_rnn_spec.lua — ember.nn.utils.rnn (pad_sequence, pack_padded_sequence,
-- pad_packed_sequence, pack_sequence, unpack_sequence, unpad_sequence, PackedSequence) and
-- PackedSequence inputs to nn.RNN / LSTM / GRU. PyTorch 2.x's results, final states and
-- gradients of the padded input, the initial states and every parameter
-- (tests/lua/fixtures/packed_cases.*, written by scripts/fixtures/make_packed_fixtures.py);
-- the packed result against each sequence run alone; gradcheck; dropout between layers;
-- a bidirectional LSTM classifier trained as in PyTorch; the errors bad input gets, at the
-- caller's line.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local R = nn.utils.rnn

local function at_this_line(msg) has(msg, "packed_rnn_spec.lua:") end

local max_rel_err, close = h.max_rel_err_tensors, h.close_tensors

local fixture = h.fixture("packed_cases.lua")
local tensors = ember.load(h.FIXTURES .. "packed_cases.safetensors")
local function group(name, kind) return h.fixture_group(tensors, name, kind) end

local function D(...) return ember.randn({...}, {dtype = "float64"}) end

-- PyTorch's 0-based indices as ember's 1-based ones
local function one_based(t) return t + 1 end

-- the gradients of the fixture case name against the tensors they belong to (by name);
-- every tensor given must have one
local function check_grads(name, by_name)
  local seen, n = 0, 0
  for _ in pairs(by_name) do n = n + 1 end
  for k, g in pairs(group(name, "grad")) do
    local t = by_name[k]
    assert(t ~= nil, name .. ": no tensor for the gradient " .. k)
    close(name .. ": grad of " .. k, t.grad, g)
    seen = seen + 1
  end
  assert(seen == n, string.format("%s: compared %d gradients for %d tensors", name, seen, n))
end

-- ---- the layers over PyTorch's packed batches ----------------------------------------------------

describe("nn.RNN / LSTM / GRU over a PackedSequence: PyTorch's fixtures", function()
  for i, c in ipairs(fixture.layers) do
    it(c.name .. ": packing, output, h_n" .. (c.kind == "LSTM" and ", c_n" or "") .. " and gradients", function()
      local o = {dtype = "float64"}
      for k, v in pairs(c.opts) do o[k] = v end
      local m = nn[c.kind](fixture.input_size, fixture.hidden_size, o)
      m:load_state_dict(group(c.name, "param"))
      local x = {}
      for k, t in pairs(group(c.name, "input")) do x[k] = t:clone():requires_grad_() end
      -- lengths as a Lua list and as an int64 tensor, by turns
      local lengths = i % 2 == 1 and c.lengths or ember.tensor(c.lengths, {dtype = "int64"})
      local packed = R.pack_padded_sequence(x.input, lengths, {batch_first = o.batch_first == true,
                                                               enforce_sorted = c.enforce_sorted})
      local ints = group(c.name, "int")
      close("batch_sizes", packed.batch_sizes, ints.batch_sizes, 0)
      assert.equal("int64", packed.batch_sizes.dtype)
      if c.enforce_sorted then
        assert.is_nil(packed.sorted_indices)
        assert.is_nil(packed.unsorted_indices)
      else
        close("sorted_indices", packed.sorted_indices, one_based(ints.sorted_indices), 0)
        close("unsorted_indices", packed.unsorted_indices, one_based(ints.unsorted_indices), 0)
      end
      local out, state
      if c.kind == "LSTM" then
        out, state = m(packed, x.h0 and {x.h0, x.c0})
      else
        out, state = m(packed, x.h0)
      end
      assert(getmetatable(out) == R.PackedSequence, "the output is not a PackedSequence")
      assert.equal(packed.batch_sizes, out.batch_sizes)
      assert.equal(packed.sorted_indices, out.sorted_indices)
      local padded, lens = R.pad_packed_sequence(out, {batch_first = o.batch_first == true})
      close("lengths", lens, ints.lengths, 0)
      assert.same(c.lengths, lens:tolist())
      local got = {output_data = out.data, output_padded = padded}
      if c.kind == "LSTM" then got.h_n, got.c_n = state[1], state[2] else got.h_n = state end
      local loss = h.check_outputs(got, group(c.name, "out"), c.outputs)
      loss:backward()
      local by_name = {}
      for k, t in pairs(x) do by_name[k] = t end
      for n, p in m:named_parameters() do by_name[n] = p end
      check_grads(c.name, by_name)
    end)
  end

  it("cover LSTM, GRU and RNN bidirectional with 2 layers, sorted and unsorted, batch_first, no state", function()
    local seen = {}
    for _, c in ipairs(fixture.layers) do
      local tag = c.kind .. (c.opts.bidirectional and (c.opts.num_layers or 1) >= 2 and " bidir2" or "")
      seen[tag] = true
      seen[c.kind .. (c.enforce_sorted and " sorted" or " unsorted")] = true
      if c.opts.batch_first then seen["batch_first"] = true end
      if not c.inputs[2] then seen["no state"] = true end
      if c.opts.proj_size then seen["proj_size"] = true end
      if c.opts.nonlinearity == "relu" then seen["relu"] = true end
    end
    for _, k in ipairs{"LSTM bidir2", "GRU bidir2", "RNN bidir2", "LSTM sorted", "LSTM unsorted", "GRU sorted",
                       "GRU unsorted", "RNN unsorted", "batch_first", "no state", "proj_size", "relu"} do
      assert(seen[k], "no fixture case covers " .. k)
    end
  end)
end)

-- ---- the functions of nn.utils.rnn -----------------------------------------------------------------

describe("nn.utils.rnn: PyTorch's fixtures", function()
  local function seqs(a)
    local list = {}
    for i = 1, 9 do list[i] = a["seq" .. i] end
    return list
  end

  local function parts(prefix, list)
    local out = {}
    for i, t in ipairs(list) do out[prefix .. i] = t end
    return out
  end

  -- each case as the script calls it: float results, int results
  local calls = {
    pad_default = function(a) return {padded = R.pad_sequence(seqs(a))}, {} end,
    pad_bf_value = function(a)
      return {padded = R.pad_sequence(seqs(a), {batch_first = true, padding_value = -1.5})}, {}
    end,
    pad_left_bf_1d = function(a)
      return {padded = R.pad_sequence(seqs(a), {batch_first = true, padding_side = "left"})}, {}
    end,
    pad_left_value = function(a)
      return {padded = R.pad_sequence(seqs(a), false, 7.0, "left")}, {}   -- positionally
    end,
    pack_sorted_total_length = function(a, c)
      local p = R.pack_padded_sequence(a.x, c.lengths)
      local padded, lens = R.pad_packed_sequence(p, {padding_value = 9, total_length = 6})
      return {data = p.data, padded = padded}, {batch_sizes = p.batch_sizes, lengths = lens}
    end,
    pack_unsorted_bf = function(a, c)
      local p = R.pack_padded_sequence(a.x, ember.tensor(c.lengths, {dtype = "int64"}),
                                       {batch_first = true, enforce_sorted = false})
      local padded, lens = R.pad_packed_sequence(p, {batch_first = true})
      return {data = p.data, padded = padded}, {batch_sizes = p.batch_sizes, lengths = lens,
                                                sorted_indices = p.sorted_indices - 1,
                                                unsorted_indices = p.unsorted_indices - 1}
    end,
    pack_sequence_unsorted = function(a)
      local p = R.pack_sequence(seqs(a), {enforce_sorted = false})
      local outs = parts("unpacked", R.unpack_sequence(p))
      outs.data = p.data
      return outs, {batch_sizes = p.batch_sizes, sorted_indices = p.sorted_indices - 1,
                    unsorted_indices = p.unsorted_indices - 1}
    end,
    unpad_time_major = function(a, c)
      return parts("part", R.unpad_sequence(a.x, ember.tensor(c.lengths, {dtype = "int64"}))), {}
    end,
    unpad_bf = function(a, c) return parts("part", R.unpad_sequence(a.x, c.lengths, {batch_first = true})), {} end,
  }

  for _, c in ipairs(fixture.utils) do
    it(c.name .. ": results and gradients", function()
      local a = {}
      for k, t in pairs(group(c.name, "input")) do a[k] = t:clone():requires_grad_() end
      local before = {}
      for k, t in pairs(a) do before[k] = t:detach():clone() end
      local outs, ints = calls[c.name](a, c)
      local want_ints = group(c.name, "int")
      for _, k in ipairs(c.ints) do close(c.name .. " " .. k, ints[k], want_ints[k], 0) end
      for k in pairs(ints) do assert(want_ints[k], c.name .. ": no PyTorch value for " .. k) end
      for k in pairs(outs) do assert(group(c.name, "out")[k], c.name .. ": no PyTorch value for " .. k) end
      local loss = h.check_outputs(outs, group(c.name, "out"), c.outputs)
      loss:backward()
      check_grads(c.name, a)
      -- the inputs are left as they were (PyTorch's unpad_sequence transposes its argument)
      for k, t in pairs(a) do close(c.name .. ": input " .. k .. " afterwards", t, before[k], 0) end
    end)
  end

  it("every case has its call", function()
    for _, c in ipairs(fixture.utils) do assert(calls[c.name], "no call for " .. c.name) end
  end)
end)

-- ---- against each sequence alone -----------------------------------------------------------------

describe("a packed batch gives what each sequence gives alone", function()
  -- m over the packed batch x (padded [T, B, in]) with lengths, against m over each
  -- sequence alone (unbatched, its own slice of the initial states); tol relative
  local function check_alone(m, x, lengths, state, tol)
    local lstm = m.mode == "LSTM"
    local packed = R.pack_padded_sequence(x, lengths, {enforce_sorted = false})
    local out, st = m(packed, state)
    local padded = R.pad_packed_sequence(out)
    local h_n = lstm and st[1] or st
    for b, n in ipairs(lengths) do
      local xb = x:select(2, b):narrow(1, 1, n)
      local sb
      if lstm then
        sb = state and {state[1]:select(2, b), state[2]:select(2, b)}
      else
        sb = state and state:select(2, b)
      end
      local ob, hb = m(xb, sb)
      if lstm then
        assert(max_rel_err(hb[2], st[2]:select(2, b)) < tol, "c_n of sequence " .. b)
        hb = hb[1]
      end
      assert(max_rel_err(padded:select(2, b):narrow(1, 1, n), ob) < tol, "output of sequence " .. b)
      assert(max_rel_err(hb, h_n:select(2, b)) < tol, "h_n of sequence " .. b)
      if n < x.shape[1] then
        assert.equal(0, padded:select(2, b):narrow(1, n + 1, x.shape[1] - n):abs():max():item())
      end
    end
  end

  it("LSTM, GRU, RNN (relu) with 3 layers, bidirectional, in float32, with and without a state", function()
    ember.manual_seed(31)
    local lengths = {3, 7, 1, 7, 4, 2}
    local x = ember.randn(7, 6, 5)
    for _, kind in ipairs{"LSTM", "GRU", "RNN"} do
      local m = nn[kind](5, 6, {num_layers = 3, bidirectional = true, nonlinearity = kind == "RNN" and "relu" or nil})
      check_alone(m, x, lengths, nil, 1e-5)
      local h0 = ember.randn(6, 6, 6)
      check_alone(m, x, lengths, kind == "LSTM" and {h0, ember.randn(6, 6, 6)} or h0, 1e-5)
    end
  end)

  it("an LSTM with proj_size", function()
    ember.manual_seed(32)
    local m = nn.LSTM(3, 5, {proj_size = 2, bidirectional = true, num_layers = 2, dtype = "float64"})
    check_alone(m, D(4, 3, 3), {2, 4, 3}, {D(4, 3, 2), D(4, 3, 5)}, 1e-12)
  end)

  it("padding values change nothing, nor do they get gradients", function()
    ember.manual_seed(33)
    local m = nn.GRU(2, 3, {bidirectional = true, dtype = "float64"})
    local x = D(4, 3, 2)
    local mask = ember.tensor({{1, 1, 1}, {1, 1, 0}, {1, 0, 0}, {1, 0, 0}}, {dtype = "float64"}):unsqueeze(3)
    local y = x * mask + (1 - mask) * 1000
    local xg, yg = x:clone():requires_grad_(), y:clone():requires_grad_()
    local ox, hx = m(R.pack_padded_sequence(xg, {4, 2, 1}))
    local oy, hy = m(R.pack_padded_sequence(yg, {4, 2, 1}))
    assert.equal(0, max_rel_err(ox.data, oy.data))
    assert.equal(0, max_rel_err(hx, hy))
    ;(ox.data:sum() + hx:sum()):backward()
    assert.equal(0, (xg.grad * (1 - mask)):abs():max():item())
    assert(xg.grad:abs():sum():item() > 0)
  end)
end)

-- ---- gradients and training mode -----------------------------------------------------------------

describe("packed inputs: gradients and dropout", function()
  it("gradcheck (float64): a bidirectional 2-layer LSTM over an unsorted batch, input and states", function()
    ember.manual_seed(41)
    local m = nn.LSTM(2, 3, {num_layers = 2, bidirectional = true, dtype = "float64"})
    local function fn(x, h0, c0)
      local out, st = m(R.pack_padded_sequence(x, {2, 4, 1}, {batch_first = true, enforce_sorted = false}),
                        {h0, c0})
      return {R.pad_packed_sequence(out), st[1], st[2]}
    end
    h.gradcheck_ok(fn, {D(3, 4, 2), D(4, 3, 3), D(4, 3, 3)})
  end)

  it("gradcheck (float64): a GRU and an RNN over packed data and its parameters", function()
    ember.manual_seed(42)
    for _, kind in ipairs{"GRU", "RNN"} do
      local m = nn[kind](2, 3, {bidirectional = true, dtype = "float64"})
      local names = {}
      for n in m:named_parameters() do names[#names + 1] = n end
      local function fn(data, ...)
        local ps = {...}
        for i, n in ipairs(names) do m[n] = ps[i] end
        local out, hn = m(R.PackedSequence(data, {3, 2, 2, 1}))
        return {out.data, hn}
      end
      local inputs = {D(8, 2)}
      for _, n in ipairs(names) do inputs[#inputs + 1] = m[n] end
      h.gradcheck_ok(fn, inputs)
    end
  end)

  it("dropout applies between layers in training mode only", function()
    ember.manual_seed(43)
    local packed = R.pack_padded_sequence(ember.randn(5, 3, 4), {5, 2, 3}, {enforce_sorted = false})
    local m = nn.LSTM(4, 8, {num_layers = 2, dropout = 0.5})
    m.dropout = 0
    local want = m(packed).data           -- training mode, no dropout
    m.dropout = 0.5
    assert(max_rel_err(m(packed).data, want) > 1e-3, "training with dropout 0.5 should change the output")
    m:eval()
    assert.equal(0, max_rel_err(m(packed).data, want))
    -- p = 1: the second layer sees zeros, so the output is a one-layer GRU's over zeros
    local full = nn.GRU(4, 8, {num_layers = 2, dropout = 1})
    local second = nn.GRU(8, 8)
    second:load_state_dict({weight_ih_l0 = full.weight_ih_l1, weight_hh_l0 = full.weight_hh_l1,
                            bias_ih_l0 = full.bias_ih_l1, bias_hh_l0 = full.bias_hh_l1})
    local zeros = R.PackedSequence(ember.zeros(packed.data.shape[1], 8), packed.batch_sizes,
                                   packed.sorted_indices)
    local got, got_h = full(packed)
    local ref, ref_h = second(zeros)
    assert(max_rel_err(got.data, ref.data) < 1e-6)
    assert(max_rel_err(got_h[2], ref_h[1]) < 1e-6)
  end)
end)

-- ---- PackedSequence ------------------------------------------------------------------------------

describe("PackedSequence", function()
  it("holds data, batch_sizes, sorted_indices, unsorted_indices; to, double, float, cpu; prints", function()
    local x = ember.arange(1, 13, {dtype = "float32"}):reshape(4, 3, 1)
    local p = R.pack_padded_sequence(x, {1, 4, 2}, {enforce_sorted = false})
    h.check(p.data:reshape(-1), {2, 3, 1, 5, 6, 8, 11})
    h.check(p.batch_sizes, {3, 2, 1, 1})
    h.check(p.sorted_indices, {2, 3, 1})
    h.check(p.unsorted_indices, {3, 1, 2})
    assert.is_false(p.is_cuda)
    local d = p:to("float64")
    assert.equal("float64", d.data.dtype)
    assert.equal("int64", d.sorted_indices.dtype)
    assert.equal("cpu", d.batch_sizes.device)
    assert(getmetatable(d) == R.PackedSequence)
    assert.equal("float64", p:double().data.dtype)
    assert.equal("float32", d:float().data.dtype)
    assert.equal("float16", p:half().data.dtype)
    assert.equal("cpu", p:cpu().data.device)
    has(tostring(p), "PackedSequence(data=tensor(")
    has(tostring(p), "batch_sizes=tensor([3, 2, 1, 1])")
    has(tostring(p), "sorted_indices=tensor([2, 3, 1])")
    has(tostring(R.pack_padded_sequence(x, {4, 2, 1})), "sorted_indices=nil")
  end)

  it("can be made by hand; unsorted_indices is then the inverse of sorted_indices", function()
    local p = R.PackedSequence(ember.randn(6, 2), {3, 2, 1}, ember.tensor({3, 1, 2}, {dtype = "int64"}))
    h.check(p.unsorted_indices, {2, 3, 1})
    local lens = select(2, R.pad_packed_sequence(p))
    h.check(lens, {2, 1, 3})
    local e = err(function() local r = R.PackedSequence(ember.randn(5, 2), {3, 2, 1}); return r end)
    at_this_line(e); has(e, "PackedSequence: batch_sizes {3, 2, 1} add up to 6, but data has 5 rows")
    e = err(function() local r = R.PackedSequence(ember.randn(6, 2), {2, 3, 1}); return r end)
    has(e, "non-increasing, got {2, 3, 1}")
    e = err(function() local r = R.PackedSequence(ember.randn(6, 2), {3, 2, 1}, ember.tensor({1, 1, 2})); return r end)
    at_this_line(e); has(e, "sorted_indices must be a permutation of 1..3, got 1 at position 2")
    e = err(function()
      local r = R.PackedSequence(ember.randn(6, 2), {3, 2, 1}, ember.tensor({3, 1, 2}), ember.tensor({3, 1, 2}))
      return r
    end)
    has(e, "unsorted_indices {3, 1, 2} is not the inverse of sorted_indices {3, 1, 2}")
  end)

  it("a module that does not take one says so", function()
    local p = R.pack_sequence({ember.randn(2, 3), ember.randn(1, 3)})
    for _, m in ipairs{nn.Linear(3, 3), nn.LSTMCell(3, 3), nn.Dropout(0.1), nn.LayerNorm(3)} do
      local e = err(function() local r = m(p); return r end)
      at_this_line(e); has(e, "expected a tensor as input, got a PackedSequence")
      has(e, "only nn.RNN, nn.LSTM and nn.GRU take one")
    end
  end)
end)

-- ---- a user's port ---------------------------------------------------------------------------------

describe("porting a PyTorch model", function()
  it("a bidirectional LSTM classifier over variable-length sequences trains as in PyTorch", function()
    local c = fixture.classifier
    -- the model as a PyTorch user writes it in ember (token ids and classes are 1-based)
    local Classifier = nn.Module:extend("Classifier")
    function Classifier:init(vocab, emb, hid, classes)
      self.embedding = nn.Embedding(vocab, emb, {padding_idx = 1})
      self.lstm = nn.LSTM(emb, hid, {batch_first = true, bidirectional = true})
      self.fc = nn.Linear(2 * hid, classes)
    end
    function Classifier:forward(tokens, lengths)
      local x = self.embedding(tokens)
      local packed = R.pack_padded_sequence(x, lengths, {batch_first = true, enforce_sorted = false})
      local _, state = self.lstm(packed)
      local h_n = state[1]
      return self.fc(ember.cat({h_n[-2], h_n[-1]}, 2))
    end

    local model = Classifier(c.vocab, c.emb, c.hidden, c.classes)
    model:load_state_dict(group("classifier", "param"))
    local ints = group("classifier", "int")
    local tokens, labels = ints.tokens + 1, ints.labels + 1
    local lengths = ember.tensor(c.lengths, {dtype = "int64"})
    local opt = ember.optim.Adam(model:parameters(), {lr = c.lr})
    for step, want in ipairs(c.losses) do
      opt:zero_grad()
      local loss = nn.functional.cross_entropy(model(tokens, lengths), labels)
      loss:backward()
      opt:step()
      local got = loss:item()
      assert(math.abs(got - want) <= 1e-5 * math.abs(want),
             string.format("step %d: loss %.9g, PyTorch %.9g", step, got, want))
    end
    local sd = model:state_dict()
    for k, want in pairs(group("classifier", "out")) do close("trained " .. k, sd[k], want, 1e-4) end
  end)
end)

-- ---- bad input -----------------------------------------------------------------------------------

describe("errors", function()
  local x = ember.randn(5, 4, 3)

  it("pack_padded_sequence: lengths unsorted, 0, too long, miscounted, of the wrong type", function()
    local e = err(function() local r = R.pack_padded_sequence(x, {5, 3, 4, 1}); return r end)
    at_this_line(e); has(e, "pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
                            .. "`enforce_sorted` is true, got {5, 3, 4, 1}")
    has(e, "{enforce_sorted = false}")
    e = err(function() local r = R.pack_padded_sequence(x, {5, 3, 2, 0}, {enforce_sorted = false}); return r end)
    at_this_line(e); has(e, "Length of all samples has to be greater than 0"); has(e, "lengths[4] = 0")
    e = err(function() local r = R.pack_padded_sequence(x, {6, 3, 2, 1}); return r end)
    at_this_line(e); has(e, "lengths[1] = 6 is larger than the time dimension of the input (5)")
    e = err(function()
      local r = R.pack_padded_sequence(ember.randn(4, 3, 3), {3, 3, 4, 1}, {batch_first = true})
      return r
    end)
    has(e, "lengths[3] = 4 is larger than the time dimension of the input (3)")
    e = err(function() local r = R.pack_padded_sequence(x, {5, 3, 2}); return r end)
    at_this_line(e); has(e, "Expected `len(lengths)` to be equal to batch_size, but got 3 (batch_size=4)")
    e = err(function() local r = R.pack_padded_sequence(x, {5, 3, 2.5, 1}); return r end)
    has(e, "'lengths' must hold integers, got 2.5 at position 3")
    e = err(function() local r = R.pack_padded_sequence(x, ember.tensor({{5, 3}, {2, 1}})); return r end)
    has(e, "1-D CPU int64 tensor"); has(e, "[2, 2]")
    e = err(function() local r = R.pack_padded_sequence(x, 5); return r end)
    has(e, "'lengths' should be a Lua list or a 1-D CPU int64 tensor, got 5 (a number)")
    e = err(function() local r = R.pack_padded_sequence(ember.randn(5), {5}); return r end)
    at_this_line(e); has(e, "at least 2 dimensions"); has(e, "[5]")
    e = err(function() local r = R.pack_padded_sequence(x, {5, 3, 2, 1}, {batch_frist = true}); return r end)
    has(e, "unknown option 'batch_frist'")
    e = err(function() local r = R.pack_padded_sequence(x, {5, 3, 2, 1}, {enforce_sorted = "no"}); return r end)
    has(e, "enforce_sorted must be a boolean")
    e = err(function() local r = R.pack_padded_sequence(ember.randn(5, 0, 3), {}); return r end)
    has(e, "batch of at least one sequence")
  end)

  it("pad_sequence and pack_sequence: different trailing shapes, empty lists, bad options", function()
    local e = err(function() local r = R.pad_sequence({ember.zeros(2, 3), ember.zeros(3, 4)}); return r end)
    at_this_line(e)
    has(e, "pad_sequence: every sequence must have the trailing shape of sequence 1 ([2, 3]), but sequence 2 "
           .. "has shape [3, 4]")
    e = err(function() local r = R.pad_sequence({ember.zeros(2, 3), ember.zeros(3)}); return r end)
    has(e, "sequence 2 has shape [3]")
    e = err(function() local r = R.pack_sequence({ember.zeros(2, 3), ember.zeros(3, 1, 1)}); return r end)
    at_this_line(e); has(e, "pack_sequence: every sequence")
    e = err(function() local r = R.pad_sequence({}); return r end)
    at_this_line(e); has(e, "pad_sequence: received an empty list of sequences")
    e = err(function() local r = R.pad_sequence(ember.zeros(2, 3)); return r end)
    has(e, "expected a Lua list of tensors, got a tensor of shape [2, 3]")
    e = err(function() local r = R.pad_sequence({ember.zeros(2), 3}); return r end)
    has(e, "sequence 2 must be a tensor")
    e = err(function() local r = R.pad_sequence({ember.zeros(2), ember.zeros(2, {dtype = "float64"})}); return r end)
    has(e, "sequence 2 is float64 on cpu, sequence 1 float32 on cpu")
    e = err(function() local r = R.pad_sequence({ember.zeros(2)}, {padding_side = "middle"}); return r end)
    at_this_line(e); has(e, "padding_side must be \"right\" or \"left\", got \"middle\"")
    e = err(function() local r = R.pad_sequence({ember.zeros(2)}, {padding_value = "0"}); return r end)
    has(e, "padding_value must be a number")
    e = err(function()
      local r = R.pack_sequence({ember.zeros(2), ember.zeros(0)}, {enforce_sorted = false})
      return r
    end)
    at_this_line(e); has(e, "pack_sequence: Length of all samples has to be greater than 0")
    e = err(function() local r = R.pack_sequence({ember.zeros(1), ember.zeros(2)}); return r end)
    has(e, "pack_sequence: `lengths` array must be sorted in decreasing order")
  end)

  it("pad_packed_sequence, unpack_sequence and unpad_sequence", function()
    local p = R.pack_padded_sequence(x, {5, 3, 2, 1})
    local e = err(function() local r = R.pad_packed_sequence(p, {total_length = 4}); return r end)
    at_this_line(e)
    has(e, "pad_packed_sequence: Expected total_length to be at least the length of the longest sequence in "
           .. "input, but got total_length=4 and max sequence length being 5")
    e = err(function() local r = R.pad_packed_sequence(x); return r end)
    at_this_line(e); has(e, "pad_packed_sequence: expected a PackedSequence, got a tensor of shape [5, 4, 3]")
    e = err(function() local r = R.unpack_sequence({}); return r end)
    has(e, "unpack_sequence: expected a PackedSequence")
    e = err(function() local r = R.unpad_sequence(x, {5, 3, 2}); return r end)
    at_this_line(e); has(e, "unpad_sequence: expected 4 lengths (the batch), got 3")
    e = err(function() local r = R.unpad_sequence(x, {5, 3, 2, 6}); return r end)
    has(e, "lengths[4] = 6 is outside 0..5")
  end)

  it("the layers: states of the wrong batch, data of the wrong size or dtype", function()
    local p = R.pack_padded_sequence(x, {2, 5, 1, 3}, {enforce_sorted = false})
    local lstm = nn.LSTM(3, 4)
    local e = err(function() local r = lstm(p, {ember.zeros(1, 3, 4), ember.zeros(1, 4, 4)}); return r end)
    at_this_line(e); has(e, "LSTM(3, 4): expected h0 of shape [1, 4, 4]"); has(e, "got [1, 3, 4]")
    e = err(function() local r = nn.GRU(3, 4, {bidirectional = true})(p, ember.zeros(1, 4, 4)); return r end)
    at_this_line(e); has(e, "expected hx of shape [2, 4, 4]")
    e = err(function() local r = nn.GRU(2, 4)(p); return r end)
    at_this_line(e); has(e, "GRU(2, 4): expected a PackedSequence whose data is [sum(lengths), 2]")
    has(e, "got [11, 3]")
    e = err(function() local r = nn.RNN(3, 4, {dtype = "float64"})(p); return r end)
    has(e, "the input has dtype float32, the parameters float64")
    e = err(function() local r = nn.RNN(3, 4)("x"); return r end)
    has(e, "expected a tensor as input (or a PackedSequence), got string")
  end)
end)

-- ---- documentation ---------------------------------------------------------------------------------

describe("help", function()
  it("documents every function of nn.utils.rnn and every method of PackedSequence", function()
    local help = require "ember.help"
    local missing = {}
    local function check(name, v)
      local entry = help.lookup(v)
      if not (entry and entry.sig and entry.doc and entry.example) then missing[#missing + 1] = name end
    end
    for k, v in pairs(R) do
      if type(v) == "function" and k:sub(1, 1) ~= "_" then check(k, v) end
    end
    check("PackedSequence", R.PackedSequence)
    for k, v in pairs(R.PackedSequence) do
      if type(v) == "function" and k:sub(1, 1) ~= "_" then check("PackedSequence:" .. k, v) end
    end
    table.sort(missing)
    assert(#missing == 0, "undocumented: " .. table.concat(missing, ", "))
    assert(help.lookup("nn.utils.rnn.pack_padded_sequence"))
  end)
end)
