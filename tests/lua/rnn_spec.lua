-- rnn_spec.lua — the recurrent layers of ember.nn (nn/rnn.lua): RNN (tanh, relu), LSTM
-- (with proj_size), GRU, RNNCell, LSTMCell, GRUCell. PyTorch 1.13's state_dicts load and
-- give the same outputs, final states and gradients of the input, the initial states and
-- every parameter (tests/lua/fixtures/rnn_cases.*, written by
-- scripts/fixtures/make_rnn_fixtures.py); gradcheck in float64; dropout between layers by
-- its effect; parameter names, shapes and initialisation; the state round trip; the errors
-- bad input gets, at the caller's line.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn
local gradcheck = ember.autograd.gradcheck

local THIS_FILE = "rnn_spec.lua:"

local function D(...)
  return ember.randn({...}, {dtype = "float64"})
end

local max_rel_err, close = h.max_rel_err_tensors, h.close_tensors

local function at_this_line(msg) has(msg, THIS_FILE) end

-- ---- PyTorch's modules, state_dicts, outputs and gradients ------------------------------------

describe("PyTorch fixtures", function()
  local cases = h.fixture("rnn_cases.lua")
  local tensors = ember.load(h.FIXTURES .. "rnn_cases.safetensors")

  local function group(case, kind) return h.fixture_group(tensors, case.name, kind) end

  local function build(c)
    local o = {dtype = "float64"}
    for k, v in pairs(c.ctor.opts) do o[k] = v end
    return nn[c.kind](c.ctor.input_size, c.ctor.hidden_size, o)
  end

  -- the results by name, as the fixture names them
  local function run(m, c, x)
    if c.kind == "LSTM" then
      local out, state = m(x.input, x.h0 and {x.h0, x.c0} or nil)
      return {output = out, h_n = state[1], c_n = state[2]}
    elseif c.kind == "LSTMCell" then
      local h2, c2 = m(x.input, x.h and {x.h, x.c} or nil)
      return {h = h2, c = c2}
    elseif c.kind:match("Cell$") then
      return {h = m(x.input, x.h)}
    end
    local out, h_n = m(x.input, x.h0)
    return {output = out, h_n = h_n}
  end

  for _, c in ipairs(cases) do
    it(c.name .. " (" .. c.kind .. "): outputs, states and gradients", function()
      local m = build(c)
      m:load_state_dict(group(c, "param"))
      local x = {}
      for k, t in pairs(group(c, "input")) do x[k] = t:clone():requires_grad_() end
      local loss = h.check_outputs(run(m, c, x), group(c, "out"), c.outputs)
      loss:backward()
      local params = {}
      for n, p in m:named_parameters() do params[n] = p end
      local seen = 0
      for k, g in pairs(group(c, "grad")) do
        local t = x[k] or params[k]
        assert(t ~= nil, "no tensor for the gradient " .. k)
        close("grad of " .. k, t.grad, g)
        seen = seen + 1
      end
      local n = #m:parameters()
      for _ in pairs(x) do n = n + 1 end
      assert(seen == n, string.format("compared %d gradients for %d tensors", seen, n))
    end)
  end

  it("cover every class, both nonlinearities, 2 layers, bidirectional, batch_first, unbatched, proj_size", function()
    local seen = {}
    for _, c in ipairs(cases) do
      seen[c.kind] = true
      local o = c.ctor.opts
      if o.nonlinearity == "relu" then seen[c.kind .. " relu"] = true end
      if (o.num_layers or 1) >= 2 then seen[c.kind .. " layers"] = true end
      if o.bidirectional then seen[c.kind .. " bidirectional"] = true end
      if o.batch_first then seen[c.kind .. " batch_first"] = true end
      if o.proj_size then seen["proj_size"] = true end
      local x = tensors[c.name .. ".input.input"]
      if x.ndim == (c.kind:match("Cell$") and 1 or 2) then seen[c.kind .. " unbatched"] = true end
    end
    for _, k in ipairs{"RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "RNN relu", "RNNCell relu",
                       "RNN layers", "LSTM layers", "GRU layers", "RNN bidirectional", "LSTM bidirectional",
                       "GRU bidirectional", "RNN batch_first", "LSTM batch_first", "GRU batch_first",
                       "RNN unbatched", "LSTM unbatched", "GRU unbatched", "RNNCell unbatched",
                       "LSTMCell unbatched", "GRUCell unbatched", "proj_size"} do
      assert(seen[k], "no fixture case covers " .. k)
    end
  end)
end)

-- ---- gradcheck ------------------------------------------------------------------------------------

describe("gradcheck (float64)", function()
  -- fn(x, h0 [, c0], params...) running m with the given tensors as its parameters
  local function with_params(m, run)
    local names = {}
    for n in m:named_parameters() do names[#names + 1] = n end
    local function fn(x, h0, c0, ...)
      local ps = {...}
      for i, n in ipairs(names) do m[n] = ps[i] end
      return run(x, h0, c0)
    end
    return fn, names
  end

  local function inputs(m, names, ...)
    local list = {...}
    for _, n in ipairs(names) do list[#list + 1] = m[n] end
    return list
  end

  -- gradcheck of an LSTM(2, 3, opts) in float64 over x, h0, c0 (of the given shapes) and every parameter
  local function lstm_gradcheck(opts, x_shape, h0_shape, c0_shape)
    opts.dtype = "float64"
    local m = nn.LSTM(2, 3, opts)
    local fn, names = with_params(m, function(x, h0, c0)
      local out, state = m(x, {h0, c0})
      return {out, state[1], state[2]}
    end)
    local ok, report = gradcheck(fn, inputs(m, names, D(table.unpack(x_shape)), D(table.unpack(h0_shape)),
                                            D(table.unpack(c0_shape))))
    assert(ok, report)
  end

  it("a 2-layer bidirectional LSTM: input, h0, c0 and every parameter", function()
    ember.manual_seed(21)
    lstm_gradcheck({num_layers = 2, bidirectional = true}, {3, 2, 2}, {4, 2, 3}, {4, 2, 3})
  end)

  it("an LSTM with proj_size, batch_first", function()
    ember.manual_seed(22)
    lstm_gradcheck({proj_size = 2, batch_first = true}, {2, 3, 2}, {1, 2, 2}, {1, 2, 3})
  end)

  it("a 2-layer bidirectional GRU: input, h0 and every parameter", function()
    ember.manual_seed(23)
    local m = nn.GRU(2, 3, {num_layers = 2, bidirectional = true, dtype = "float64"})
    local fn, names = with_params(m, function(x, h0)
      local out, h_n = m(x, h0)
      return {out, h_n}
    end)
    local ok, report = gradcheck(fn, inputs(m, names, D(3, 2, 2), D(4, 2, 3), D(1)))
    assert(ok, report)
  end)

  it("the cells", function()
    ember.manual_seed(24)
    for _, kind in ipairs{"RNNCell", "LSTMCell", "GRUCell"} do
      local m = nn[kind](2, 3, {dtype = "float64"})
      local fn, names = with_params(m, function(x, hx, cx)
        if kind == "LSTMCell" then return {m(x, {hx, cx})} end
        return m(x, hx)
      end)
      local ok, report = gradcheck(fn, inputs(m, names, D(2, 2), D(2, 3), D(2, 3)))
      assert(ok, kind .. ": " .. tostring(report))
    end
  end)
end)

-- ---- behaviour --------------------------------------------------------------------------------------

describe("RNN, LSTM, GRU", function()
  it("name and shape their parameters as PyTorch, in PyTorch's order", function()
    local m = nn.LSTM(3, 5, {num_layers = 2, bidirectional = true, proj_size = 2})
    local got = {}
    for n, p in m:named_parameters() do got[#got + 1] = n .. " " .. h.show(p.shape) end
    local want = {}
    for l = 0, 1 do
      for _, sfx in ipairs{"", "_reverse"} do
        local in_size = l == 0 and 3 or 4
        want[#want + 1] = string.format("weight_ih_l%d%s {20, %d}", l, sfx, in_size)
        want[#want + 1] = string.format("weight_hh_l%d%s {20, 2}", l, sfx)
        want[#want + 1] = string.format("bias_ih_l%d%s {20}", l, sfx)
        want[#want + 1] = string.format("bias_hh_l%d%s {20}", l, sfx)
        want[#want + 1] = string.format("weight_hr_l%d%s {2, 5}", l, sfx)
      end
    end
    assert.same(want, got)
    local g = nn.GRU(3, 4, {bias = false})
    local names = {}
    for n, p in g:named_parameters() do names[#names + 1] = n .. " " .. h.show(p.shape) end
    assert.same({"weight_ih_l0 {12, 3}", "weight_hh_l0 {12, 4}"}, names)
    local r = nn.RNN(3, 4, 2)
    assert.equal(8, #r:parameters())
    h.check_shape(r.weight_ih_l1, {4, 4})
  end)

  it("draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))", function()
    ember.manual_seed(5)
    for _, m in ipairs{nn.LSTM(7, 16, 2), nn.GRU(7, 16), nn.RNN(7, 16), nn.LSTMCell(7, 16), nn.GRUCell(7, 16)} do
      for n, p in m:named_parameters() do
        local lo, hi = p:min():item(), p:max():item()
        assert(lo >= -0.25 and hi <= 0.25, n .. " outside [-0.25, 0.25]")
        if p:numel() >= 100 then assert(lo < -0.2 and hi > 0.2, n .. " does not spread over the range") end
      end
    end
    assert.equal("float32", nn.GRU(2, 3).weight_ih_l0.dtype)
    assert.equal("float64", nn.GRU(2, 3, {dtype = "float64"}).bias_hh_l0.dtype)
  end)

  it("take the optional arguments positionally in PyTorch's order", function()
    local r = nn.RNN(3, 4, 2, "relu", false, true, 0.25, true)
    assert.same({2, "relu", false, true, 0.25, true},
                {r.num_layers, r.nonlinearity, r.bias, r.batch_first, r.dropout, r.bidirectional})
    local l = nn.LSTM(3, 4, 1, true, true, 0, false, 2)
    assert.same({true, 2}, {l.batch_first, l.proj_size})
    local g = nn.GRU(3, 4, 3, false)
    assert.same({3, false}, {g.num_layers, g.bias})
    assert.equal("3, 4, num_layers=2, nonlinearity=\"relu\", bias=false, batch_first=true, dropout=0.25, "
                 .. "bidirectional=true", r:extra_repr())
    assert.equal("3, 4, proj_size=2, batch_first=true", l:extra_repr())
    has(tostring(g), "GRU(3, 4, num_layers=3, bias=false)")
  end)

  it("carry the state across calls: two halves give the whole sequence's result", function()
    ember.manual_seed(6)
    local x = ember.randn(6, 2, 3)
    local lstm = nn.LSTM(3, 4, {num_layers = 2})
    local whole, s = lstm(x)
    local a, s1 = lstm(x:narrow(1, 1, 2))
    local b, s2 = lstm(x:narrow(1, 3, 4), s1)
    assert(max_rel_err(ember.cat({a, b}, 1), whole) < 1e-6)
    assert(max_rel_err(s2[1], s[1]) < 1e-6 and max_rel_err(s2[2], s[2]) < 1e-6)
    local gru = nn.GRU(3, 4, {batch_first = true})
    local xb = x:transpose(1, 2)
    local gw, gh = gru(xb)
    local ga, gh1 = gru(xb:narrow(2, 1, 3))
    local gb, gh2 = gru(xb:narrow(2, 4, 3), gh1)
    assert(max_rel_err(ember.cat({ga, gb}, 2), gw) < 1e-6)
    assert(max_rel_err(gh2, gh) < 1e-6)
  end)

  it("the last output of each direction is its final hidden state", function()
    ember.manual_seed(7)
    local m = nn.GRU(3, 4, {bidirectional = true})
    local out, h_n = m(ember.randn(5, 2, 3))
    assert(max_rel_err(out[5]:narrow(2, 1, 4), h_n[1]) == 0)
    assert(max_rel_err(out[1]:narrow(2, 5, 4), h_n[2]) == 0)
  end)

  it("a cell applied step by step is the one-layer module with the same weights", function()
    ember.manual_seed(8)
    local x = ember.randn(4, 2, 3)
    for _, kind in ipairs{"RNN", "LSTM", "GRU"} do
      local m = nn[kind](3, 5)
      local cell = nn[kind .. "Cell"](3, 5)
      cell:load_state_dict({weight_ih = m.weight_ih_l0, weight_hh = m.weight_hh_l0,
                            bias_ih = m.bias_ih_l0, bias_hh = m.bias_hh_l0})
      local out = m(x)
      local hx, cx = nil, nil
      for t = 1, 4 do
        if kind == "LSTM" then hx, cx = cell(x[t], hx and {hx, cx}) else hx = cell(x[t], hx) end
        assert(max_rel_err(hx, out[t]) < 1e-6, kind .. " step " .. t)
      end
    end
  end)

  it("apply dropout between layers in training mode only", function()
    ember.manual_seed(9)
    local x = ember.randn(5, 3, 4)
    local m = nn.LSTM(4, 8, {num_layers = 2, dropout = 0.5})
    local plain = nn.LSTM(4, 8, {num_layers = 2})
    plain:load_state_dict(m:state_dict())
    local want = plain(x)
    local a, b = m(x), m(x)
    assert(max_rel_err(a, want) > 1e-3, "training with dropout 0.5 should change the output")
    assert(max_rel_err(a, b) > 1e-3, "two training passes should draw different masks")
    m:eval()
    assert.equal(0, max_rel_err(m(x), want))
    -- one layer: nothing between layers, so no dropout even in training (as in PyTorch)
    local one = nn.GRU(4, 8, {dropout = 0.5})
    local one_plain = nn.GRU(4, 8)
    one_plain:load_state_dict(one:state_dict())
    assert.equal(0, max_rel_err(one(x), one_plain(x)))
    -- p = 1 zeroes the second layer's input: its output no longer depends on x
    local full = nn.RNN(4, 8, {num_layers = 2, dropout = 1})
    local o1, o2 = full(x), full(x * 3)
    assert.equal(0, max_rel_err(o1, o2))
  end)

  it("run in float64 and after module:to", function()
    local m = nn.GRU(3, 4)
    m:to("float64")
    local out, hn = m(D(2, 1, 3))
    assert.equal("float64", out.dtype)
    assert.equal("float64", hn.dtype)
  end)

  it("flatten_parameters and reset_parameters", function()
    local m = nn.LSTM(3, 4)
    m:flatten_parameters()
    ember.no_grad(function() m.weight_ih_l0:fill_(7) end)
    m:reset_parameters()
    assert(m.weight_ih_l0:abs():max():item() <= 0.5)
  end)
end)

-- ---- bad input ------------------------------------------------------------------------------------

describe("errors", function()
  it("wrong input sizes, state shapes and ranks name the module, the shapes and what was expected", function()
    local gru = nn.GRU(3, 4, {num_layers = 2})
    local e = err(function() local y = gru(ember.randn(5, 2, 6)); return y end)
    at_this_line(e); has(e, "GRU(3, 4, num_layers=2)"); has(e, "[5, 2, 6]"); has(e, "3 features")
    e = err(function() local y = gru(ember.randn(5, 2, 3, 1)); return y end)
    at_this_line(e); has(e, "[5, 2, 3, 1]"); has(e, "[seq_len, batch, 3]")
    e = err(function() local y = gru(ember.randn(3)); return y end)
    has(e, "2-D (unbatched)")
    e = err(function() local y = gru(ember.randn(5, 2, 3), ember.zeros(1, 2, 4)); return y end)
    at_this_line(e); has(e, "hx of shape [2, 2, 4]"); has(e, "got [1, 2, 4]")
    e = err(function() local y = gru(ember.randn(5, 3), ember.zeros(2, 1, 4)); return y end)
    has(e, "[2, 4]"); has(e, "unbatched")
    e = err(function() local y = gru(ember.randn(0, 2, 3)); return y end)
    has(e, "at least one step")
    e = err(function() local y = gru(ember.randn(5, 2, 3, {dtype = "float64"})); return y end)
    at_this_line(e); has(e, "float64"); has(e, "float32")
    e = err(function() local y = gru(ember.randn(5, 2, 3), ember.zeros(2, 2, 4, {dtype = "float64"})); return y end)
    has(e, "hx has dtype float64")
    e = err(function() local y = gru({}); return y end)
    has(e, "expected a tensor as input")
    local bf = nn.LSTM(3, 4, {batch_first = true, bidirectional = true})
    e = err(function() local y = bf(ember.randn(3)); return y end)
    has(e, "[batch, seq_len, 3]"); has(e, "got [3]")
    e = err(function() local y = bf(ember.randn(2, 5, 3), ember.zeros(2, 2, 4)); return y end)
    at_this_line(e); has(e, "{h0, c0}"); has(e, "a tensor")
    e = err(function() local y = bf(ember.randn(2, 5, 3), {ember.zeros(2, 2, 4), ember.zeros(1, 2, 4)}); return y end)
    at_this_line(e); has(e, "c0 of shape [2, 2, 4]")
    -- h0 is [layers * directions, N, H] whatever batch_first says, as in PyTorch
    e = err(function() local y = bf(ember.randn(2, 5, 3), {ember.zeros(2, 5, 4), ember.zeros(2, 2, 4)}); return y end)
    has(e, "h0 of shape [2, 2, 4]")
    local proj = nn.LSTM(3, 4, {proj_size = 2})
    e = err(function() local y = proj(ember.randn(5, 2, 3), {ember.zeros(1, 2, 4), ember.zeros(1, 2, 4)}); return y end)
    has(e, "h0 of shape [1, 2, 2]")
  end)

  it("the cells check input, state and dtype", function()
    local cell = nn.LSTMCell(3, 4)
    local e = err(function() local y = cell(ember.randn(2, 5)); return y end)
    at_this_line(e); has(e, "LSTMCell(3, 4)"); has(e, "[batch, 3]"); has(e, "[2, 5]")
    e = err(function() local y = cell(ember.randn(2, 3, 1)); return y end)
    has(e, "[2, 3, 1]")
    e = err(function() local y = cell(ember.randn(2, 3), ember.zeros(2, 4)); return y end)
    at_this_line(e); has(e, "{h, c}")
    e = err(function() local y = cell(ember.randn(2, 3), {ember.zeros(2, 4), ember.zeros(3, 4)}); return y end)
    has(e, "c of shape [2, 4]"); has(e, "[3, 4]")
    local gru = nn.GRUCell(3, 4)
    e = err(function() local y = gru(ember.randn(3), ember.zeros(1, 4)); return y end)
    at_this_line(e); has(e, "hx of shape [4]")
    e = err(function() local y = nn.RNNCell(3, 4)(ember.randn(3, {dtype = "float64"})); return y end)
    has(e, "dtype float64")
  end)

  it("bad constructor arguments", function()
    local e = err(function() local m = nn.RNN(3, 4, {nonlinearity = "sigmoid"}); return m end)
    at_this_line(e); has(e, "nonlinearity"); has(e, "sigmoid")
    e = err(function() local m = nn.LSTM(3, 4, {proj_size = 4}); return m end)
    at_this_line(e); has(e, "proj_size (4) must be smaller than hidden_size (4)")
    e = err(function() local m = nn.GRU(3, 4, {proj_size = 2}); return m end)
    has(e, "unknown option 'proj_size'")
    e = err(function() local m = nn.GRU(3, 0); return m end)
    has(e, "hidden_size must be an integer >= 1")
    e = err(function() local m = nn.LSTM(3, 4, {num_layers = 0}); return m end)
    has(e, "num_layers")
    e = err(function() local m = nn.LSTM(3, 4, {dropout = 1.5}); return m end)
    has(e, "dropout must be a probability")
    e = err(function() local m = nn.RNN(3, 4, {bidirectional = 1}); return m end)
    has(e, "bidirectional must be a boolean")
    e = err(function() local m = nn.GRUCell(2.5, 4); return m end)
    at_this_line(e); has(e, "input_size")
    e = err(function() local m = nn.RNNCell(3, 4, true, "gelu"); return m end)
    has(e, "nonlinearity")
  end)

  it("a PyTorch state_dict of the wrong shape is refused by name", function()
    local m = nn.GRU(3, 4)
    local sd = m:state_dict()
    sd.weight_hh_l0 = ember.zeros(12, 5)
    local e = err(function() m:load_state_dict(sd) end)
    has(e, "weight_hh_l0")
  end)
end)
