-- transformer_spec.lua — the transformer modules of ember.nn (nn/transformer.lua):
-- MultiheadAttention, TransformerEncoderLayer / TransformerEncoder,
-- TransformerDecoderLayer / TransformerDecoder, Transformer, Identity, ModuleDict.
-- PyTorch 1.13's state_dicts load and give the same outputs and gradients
-- (tests/lua/fixtures/transformer_cases.*, written by
-- scripts/fixtures/make_transformer_fixtures.py); gradcheck in float64; parameter names,
-- shapes and default initialisation; masks; deep copies; weight tying; the errors bad
-- input gets, at the caller's line.
local ember = require "ember"
local h = require "helpers"
local check, err, has = h.check, h.err, h.has
local nn = ember.nn
local F = nn.functional
local gradcheck = ember.autograd.gradcheck

local THIS_FILE = "transformer_spec.lua:"

local function D(...)
  local shape = {...}
  return ember.randn(shape, {dtype = "float64"})
end

local max_rel_err, close = h.max_rel_err_tensors, h.close_tensors

local function at_this_line(msg) has(msg, THIS_FILE) end

-- ---- PyTorch's modules, state_dicts, outputs and gradients ------------------------------------

describe("PyTorch fixtures", function()
  local cases = h.fixture("transformer_cases.lua")
  local tensors = ember.load(h.FIXTURES .. "transformer_cases.safetensors")


  local function group(case, kind) return h.fixture_group(tensors, case.name, kind) end

  local function build(c)
    local a = c.ctor
    local o = {}
    for k, v in pairs(a.opts) do o[k] = v end
    o.dtype = "float64"
    if c.kind == "MultiheadAttention" then return nn.MultiheadAttention(a.embed_dim, a.num_heads, o) end
    if c.kind == "TransformerEncoderLayer" then return nn.TransformerEncoderLayer(a.d_model, a.nhead, o) end
    if c.kind == "TransformerDecoderLayer" then return nn.TransformerDecoderLayer(a.d_model, a.nhead, o) end
    if c.kind == "TransformerEncoder" then
      return nn.TransformerEncoder(nn.TransformerEncoderLayer(a.d_model, a.nhead, o), a.num_layers,
                                   nn.LayerNorm(a.d_model, {dtype = "float64"}))
    end
    error("unknown kind " .. c.kind)
  end

  local function run(m, c, x)
    if c.kind == "MultiheadAttention" then
      local o = {key_padding_mask = x.key_padding_mask, attn_mask = x.attn_mask}
      for k, v in pairs(c.forward) do o[k] = v end
      local out, w = m(x.query, x.key, x.value, o)
      return {attn_output = out, attn_weights = w}
    elseif c.kind == "TransformerDecoderLayer" then
      return {output = m(x.tgt, x.memory, {tgt_mask = x.tgt_mask, memory_mask = x.memory_mask,
                                           tgt_key_padding_mask = x.tgt_key_padding_mask,
                                           memory_key_padding_mask = x.memory_key_padding_mask})}
    elseif c.kind == "TransformerEncoder" then
      return {output = m(x.src, {mask = x.mask})}
    end
    return {output = m(x.src, {src_mask = x.src_mask, src_key_padding_mask = x.src_key_padding_mask})}
  end

  for _, c in ipairs(cases) do
    it(c.name .. " (" .. c.kind .. "): outputs and gradients", function()
      local m = build(c)
      m:load_state_dict(group(c, "param"))   -- PyTorch's names as they are (layers.0, ...)
      m:eval()
      local x = {}
      for k, t in pairs(group(c, "input")) do
        x[k] = t:is_floating_point() and t:clone():requires_grad_() or t
      end
      local outs = run(m, c, x)
      local loss = h.check_outputs(outs, group(c, "out"), c.outputs)
      if c.forward.need_weights == false then assert.is_nil(outs.attn_weights) end
      loss:backward()
      local grads, seen = group(c, "grad"), 0
      for k, g in pairs(grads) do
        local t = x[k]
        if t == nil then
          for n, p in m:named_parameters() do if n == k then t = p end end
        end
        assert(t ~= nil, "no tensor for the gradient " .. k)
        close("grad of " .. k, t.grad, g)
        seen = seen + 1
      end
      local nparams = #m:parameters()
      assert(seen >= nparams, string.format("compared %d gradients for %d parameters", seen, nparams))
    end)
  end

  it("cover both masks, both layouts, need_weights both ways and both layer orders", function()
    local seen = {}
    for _, c in ipairs(cases) do
      seen[c.kind] = true
      for _, n in ipairs(c.inputs) do seen[n] = true end
      if c.forward.need_weights == false then seen.no_weights = true end
      if c.ctor.opts.norm_first then seen.pre = true elseif c.ctor.opts.norm_first == false then seen.post = true end
      if c.ctor.opts.batch_first then seen.bf = true end
    end
    for _, k in ipairs{"MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "attn_mask",
                       "key_padding_mask", "no_weights", "pre", "post", "bf", "src_key_padding_mask", "tgt_mask"} do
      assert(seen[k], "no fixture case with " .. k)
    end
  end)
end)

-- ---- gradcheck ------------------------------------------------------------------------------------

describe("MultiheadAttention gradcheck (float64)", function()
  local function mha_fn(mha, opts)
    return function(q, k, v, w, b, ow, ob)
      mha.in_proj_weight, mha.in_proj_bias = w, b
      mha.out_proj.weight, mha.out_proj.bias = ow, ob
      local out, weights = mha(q, k, v, opts)
      return weights and {out, weights} or {out}
    end
  end

  local function inputs(mha, N, Lq, S, E)
    return {D(N, Lq, E), D(N, S, E), D(N, S, E), mha.in_proj_weight, D(3 * E), mha.out_proj.weight, D(E)}
  end

  it("with weights, both masks, per-head weights", function()
    ember.manual_seed(11)
    local mha = nn.MultiheadAttention(4, 2, {batch_first = true, dtype = "float64"})
    local kpm = ember.tensor({{false, false, true}, {false, false, false}})
    local am = D(2, 3)
    local ok, report = gradcheck(mha_fn(mha, {key_padding_mask = kpm, attn_mask = am, average_attn_weights = false}),
                                 inputs(mha, 2, 2, 3, 4))
    assert(ok, report)
  end)

  it("without weights (the fused path), causal", function()
    ember.manual_seed(12)
    local mha = nn.MultiheadAttention(4, 2, {batch_first = true, dtype = "float64"})
    local ok, report = gradcheck(mha_fn(mha, {need_weights = false, is_causal = true}), inputs(mha, 2, 3, 3, 4))
    assert(ok, report)
  end)

  it("of the attention mask and of bias_k / bias_v", function()
    ember.manual_seed(13)
    local mha = nn.MultiheadAttention(4, 2, {add_bias_kv = true, add_zero_attn = true, dtype = "float64"})
    local q, k = D(2, 1, 4), D(3, 1, 4)
    local ok, report = gradcheck(function(am, bk, bv)
      mha.bias_k, mha.bias_v = bk, bv
      local out, w = mha(q, k, k, {attn_mask = am})
      return {out, w}
    end, {D(2, 3), D(1, 1, 4), D(1, 1, 4)})
    assert(ok, report)
  end)
end)

-- ---- MultiheadAttention: parameters, shapes, semantics -------------------------------------------

describe("MultiheadAttention", function()
  it("has PyTorch's parameter names, shapes and initialisation", function()
    ember.manual_seed(1)
    local E = 16
    local mha = nn.MultiheadAttention(E, 4)
    local names, shapes = {}, {}
    for n, p in mha:named_parameters() do names[#names + 1] = n; shapes[n] = p.shape end
    assert.same({"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}, names)
    assert.same({3 * E, E}, {shapes.in_proj_weight[1], shapes.in_proj_weight[2]})
    local xavier = math.sqrt(6 / (E + 3 * E))
    local wmax = mha.in_proj_weight:abs():max():item()
    assert(wmax <= xavier and wmax > 0.8 * xavier, "in_proj_weight bound " .. wmax)
    local omax = mha.out_proj.weight:abs():max():item()
    assert(omax <= 1 / math.sqrt(E) and omax > 0.8 / math.sqrt(E), "out_proj.weight bound " .. omax)
    assert.equal(0, mha.in_proj_bias:abs():sum():item())
    assert.equal(0, mha.out_proj.bias:abs():sum():item())
    assert.equal("Linear", getmetatable(mha.out_proj).__name)
    assert.equal(4, mha.head_dim)
  end)

  it("has separate projections when kdim or vdim differ, and bias_k / bias_v on request", function()
    local mha = nn.MultiheadAttention(8, 2, {kdim = 3, vdim = 5, bias = false, add_bias_kv = true})
    local names = {}
    for n, p in mha:named_parameters() do names[#names + 1] = n .. h.show(p.shape) end
    assert.same({"q_proj_weight{8, 8}", "k_proj_weight{8, 3}", "v_proj_weight{8, 5}", "bias_k{1, 1, 8}",
                 "bias_v{1, 1, 8}", "out_proj.weight{8, 8}"}, names)
    assert.is_nil(mha.in_proj_weight)
    assert.equal("embed_dim=8, num_heads=2, bias=false, add_bias_kv=true, kdim=3, vdim=5", mha:extra_repr())
    local out, w = mha(ember.randn(2, 1, 8), ember.randn(4, 1, 3), ember.randn(4, 1, 5))
    assert.same({2, 1, 8}, out.shape)
    assert.same({1, 2, 5}, w.shape)   -- one more key: bias_k
  end)

  it("takes the options positionally in PyTorch's order", function()
    local mha = nn.MultiheadAttention(8, 2, 0.25, false, false, true, nil, nil, true)
    assert.equal("embed_dim=8, num_heads=2, dropout=0.25, bias=false, add_zero_attn=true, batch_first=true",
                 mha:extra_repr())
    local x = ember.randn(3, 4, 8)
    mha:eval()
    local a = mha(x, x, x, nil, false)
    local b = mha(x, x, x, {need_weights = false})
    close("positional forward", a, b, 0)
  end)

  it("gives shapes for batch_first, sequence first and unbatched input", function()
    local E, L, S, N = 8, 3, 5, 2
    local mha = nn.MultiheadAttention(E, 2)
    local out, w = mha(ember.randn(L, N, E), ember.randn(S, N, E), ember.randn(S, N, E))
    assert.same({L, N, E}, out.shape); assert.same({N, L, S}, w.shape)
    out, w = mha(ember.randn(L, E), ember.randn(S, E), ember.randn(S, E), {average_attn_weights = false})
    assert.same({L, E}, out.shape); assert.same({2, L, S}, w.shape)
    local bf = nn.MultiheadAttention(E, 2, {batch_first = true})
    out, w = bf(ember.randn(N, L, E), ember.randn(N, S, E), ember.randn(N, S, E), {average_attn_weights = false})
    assert.same({N, L, E}, out.shape); assert.same({N, 2, L, S}, w.shape)
  end)

  it("batch_first is the same computation on transposed input", function()
    local a = nn.MultiheadAttention(8, 2, {dtype = "float64"})
    local b = nn.MultiheadAttention(8, 2, {batch_first = true, dtype = "float64"})
    b:load_state_dict(a:state_dict())
    local q, k = D(3, 2, 8), D(4, 2, 8)
    local oa, wa = a(q, k, k)
    local ob, wb = b(q:transpose(1, 2), k:transpose(1, 2), k:transpose(1, 2))
    close("output", ob:transpose(1, 2), oa, 1e-12)
    close("weights", wb, wa, 1e-12)
  end)

  it("averages the per-head weights, which are softmax rows", function()
    local mha = nn.MultiheadAttention(8, 4, {dtype = "float64"})
    local q, k = D(3, 2, 8), D(5, 2, 8)
    local _, per_head = mha(q, k, k, {average_attn_weights = false})
    local _, avg = mha(q, k, k)
    close("average", avg, per_head:mean(2), 1e-14)
    close("rows sum to 1", per_head:sum(-1), ember.ones(2, 4, 3, {dtype = "float64"}), 1e-12)
  end)

  it("gives the same output with and without weights (composed and fused paths)", function()
    local mha = nn.MultiheadAttention(8, 2, {dtype = "float64"})
    local q, k = D(3, 2, 8), D(4, 2, 8)
    local kpm = ember.tensor({{false, true, false, false}, {false, false, false, true}})
    local am = D(3, 4)
    local a = mha(q, k, k, {key_padding_mask = kpm, attn_mask = am})
    local b, w = mha(q, k, k, {key_padding_mask = kpm, attn_mask = am, need_weights = false})
    assert.is_nil(w)
    close("need_weights false", b, a, 1e-12)
  end)

  it("bool masks forbid where true, float masks add, and the two agree", function()
    local mha = nn.MultiheadAttention(8, 2, {dtype = "float64"})
    local q = D(3, 2, 8)
    local bool = ember.tensor({{false, true, true}, {false, false, true}, {false, false, false}})
    local float = nn.Transformer.generate_square_subsequent_mask(3, {dtype = "float64"})
    local ob, wb = mha(q, q, q, {attn_mask = bool})
    local of, wf = mha(q, q, q, {attn_mask = float})
    close("output", ob, of, 0)
    close("weights", wb, wf, 0)
    assert.equal(0, wb[1][1][2]:item())     -- batch 1, query 1 never sees key 2
    local oc, wc = mha(q, q, q, {is_causal = true})
    close("is_causal", oc, of, 1e-14)
    close("is_causal weights", wc, wf, 1e-14)
    local on = mha(q, q, q, {is_causal = true, need_weights = false})
    close("is_causal fused", on, of, 1e-12)
  end)

  it("key_padding_mask ignores the padded keys", function()
    local mha = nn.MultiheadAttention(4, 1, {batch_first = true, dtype = "float64"})
    local q, k = D(1, 2, 4), D(1, 3, 4)
    local kpm = ember.tensor({{false, false, true}})
    local a, w = mha(q, k, k, {key_padding_mask = kpm})
    local b = mha(q, k:narrow(2, 1, 2), k:narrow(2, 1, 2))
    close("padded", a, b, 1e-12)
    check(w:select(3, 3), {{0, 0}})
    -- a float padding mask adds
    local f = ember.tensor({{0, 0, -math.huge}}, {dtype = "float64"})
    close("float padding mask", mha(q, k, k, {key_padding_mask = f}), a, 0)
  end)

  it("uses dropout on the weights in training mode only", function()
    local mha = nn.MultiheadAttention(8, 2, {dropout = 0.5, dtype = "float64"})
    local q = D(6, 2, 8)
    local _, w = mha(q, q, q, {average_attn_weights = false})
    local zeros = (w:eq(0)):sum():item()
    assert(zeros > 0, "no weight dropped in training mode")
    local f1 = mha(q, q, q, {need_weights = false})          -- the fused path drops too
    local f2 = mha(q, q, q, {need_weights = false})
    assert(max_rel_err(f1, f2) > 0, "training mode: two fused calls agree")
    mha:eval()
    local a = mha(q, q, q)
    local b = mha(q, q, q)
    close("eval is deterministic", a, b, 0)
    close("eval, fused", mha(q, q, q, {need_weights = false}), a, 1e-12)
  end)

  it("refuses bad arguments and bad masks, at the caller's line", function()
    local e = err(function() local _ = nn.MultiheadAttention(10, 3) end)
    has(e, "embed_dim (10) must be divisible by num_heads (3)"); at_this_line(e)
    e = err(function() local _ = nn.MultiheadAttention(8, 2, {dropout = 2}) end)
    has(e, "dropout must be a probability"); at_this_line(e)
    e = err(function() local _ = nn.MultiheadAttention(8, 2, {heads = 2}) end)
    has(e, "unknown option 'heads'"); at_this_line(e)
    local mha = nn.MultiheadAttention(8, 2)
    local q, k = ember.randn(3, 2, 8), ember.randn(4, 2, 8)
    e = err(function() local _ = mha(q, k, k, {attn_mask = ember.zeros(3, 3)}) end)
    has(e, "the 2-D attn_mask has shape [3, 3], but should be [3, 4]"); at_this_line(e)
    e = err(function() local _ = mha(q, k, k, {attn_mask = ember.zeros(2, 3, 4)}) end)
    has(e, "the 3-D attn_mask has shape [2, 3, 4], but should be [4, 3, 4]"); at_this_line(e)
    e = err(function() local _ = mha(q, k, k, {attn_mask = ember.zeros(1, 1, 3, 4)}) end)
    has(e, "attn_mask must be 2-D"); at_this_line(e)
    e = err(function() local _ = mha(q, k, k, {attn_mask = ember.zeros({3, 4}, {dtype = "int64"})}) end)
    has(e, "attn_mask must be a bool or floating-point tensor, got int64"); at_this_line(e)
    e = err(function() local _ = mha(q, k, k, {key_padding_mask = ember.zeros({4, 2}, {dtype = "bool"})}) end)
    has(e, "key_padding_mask has shape [4, 2], but should be [2, 4]"); at_this_line(e)
    e = err(function() local _ = mha(ember.randn(3, 2, 6), k, k) end)
    has(e, "with 8, 8 and 8 features"); at_this_line(e)
    e = err(function() local _ = mha(q, ember.randn(4, 3, 8), ember.randn(4, 3, 8)) end)
    has(e, "must share the batch size"); at_this_line(e)
    e = err(function() local _ = mha(q, k, ember.randn(5, 2, 8)) end)
    has(e, "must share the batch size, and key and value the sequence length"); at_this_line(e)
    e = err(function() local _ = mha(ember.randn(3, 8), k, k) end)
    has(e, "must all be 2-D (unbatched)"); at_this_line(e)
    e = err(function() local _ = mha(ember.randn(8), k, k) end)
    has(e, "expected a query of shape"); at_this_line(e)
    e = err(function() local _ = mha(q, k, "v") end)
    has(e, "expected a tensor as value"); at_this_line(e)
    e = err(function() local _ = mha(q, k, k, {need_weights = "yes"}) end)
    has(e, "need_weights must be a boolean"); at_this_line(e)
  end)
end)

-- ---- the transformer layers ---------------------------------------------------------------------------

describe("TransformerEncoderLayer and TransformerDecoderLayer", function()
  it("have PyTorch's submodules and parameter names", function()
    local enc = nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16})
    local names = {}
    for n in enc:named_children() do names[#names + 1] = n end
    assert.same({"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"}, names)
    local pnames = {}
    for n in enc:named_parameters() do pnames[#pnames + 1] = n end
    assert.same({"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                 "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                 "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}, pnames)
    assert.equal(0.1, enc.dropout.p)
    assert.equal(0.1, enc.self_attn.dropout)
    local dec = nn.TransformerDecoderLayer(8, 2)
    names = {}
    for n in dec:named_children() do names[#names + 1] = n end
    assert.same({"self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "norm3",
                 "dropout1", "dropout2", "dropout3"}, names)
    assert.same({2048, 8}, dec.linear1.weight.shape)
  end)

  it("keep the input's shape, batch first or not, batched or not", function()
    local enc = nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16, batch_first = true})
    assert.same({2, 5, 8}, enc(ember.randn(2, 5, 8)).shape)
    assert.same({5, 8}, enc(ember.randn(5, 8)).shape)
    local dec = nn.TransformerDecoderLayer(8, 2, 16)
    assert.same({3, 2, 8}, dec(ember.randn(3, 2, 8), ember.randn(5, 2, 8)).shape)
  end)

  it("take activation as a string, a function or a module", function()
    ember.manual_seed(5)
    local a = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8, activation = "gelu", dtype = "float64"})
    local b = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8, activation = function(x) return x:gelu() end,
                                               dtype = "float64"})
    local c = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8, activation = nn.GELU(), dtype = "float64"})
    b:load_state_dict(a:state_dict())
    c:load_state_dict(a:state_dict())
    a:eval(); b:eval(); c:eval()
    local x = D(3, 2, 4)
    close("function", b(x), a(x), 0)
    close("module", c(x), a(x), 0)
    local e = err(function() local _ = nn.TransformerEncoderLayer(4, 2, {activation = "tanh"}) end)
    has(e, "activation should be \"relu\" or \"gelu\", not \"tanh\""); at_this_line(e)
  end)

  it("pass is_causal on to the attention", function()
    local enc = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8, dtype = "float64"})
    enc:eval()
    local x = D(3, 2, 4)
    local mask = nn.Transformer.generate_square_subsequent_mask(3, {dtype = "float64"})
    close("is_causal", enc(x, {is_causal = true}), enc(x, mask), 1e-12)
  end)

  it("use dropout in training mode only", function()
    local enc = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8, dropout = 0.5, dtype = "float64"})
    local x = D(6, 2, 4)
    assert(max_rel_err(enc(x), enc(x)) > 0, "training mode: two calls agree")
    enc:eval()
    close("eval", enc(x), enc(x), 0)
  end)

  it("refuse bad input at the caller's line", function()
    local enc = nn.TransformerEncoderLayer(8, 2, {dim_feedforward = 16})
    local e = err(function() local _ = enc(ember.randn(5, 2, 6)) end)
    has(e, "expected src of shape [T, N, 8]"); at_this_line(e)
    e = err(function() local _ = enc(ember.randn(5, 2, 8), {src_mask = ember.zeros(4, 4)}) end)
    has(e, "the 2-D attn_mask has shape [4, 4], but should be [5, 5]"); at_this_line(e)
    e = err(function() local _ = nn.TransformerEncoderLayer(8, 3) end)
    has(e, "must be divisible by num_heads"); at_this_line(e)
    local dec = nn.TransformerDecoderLayer(8, 2, {dim_feedforward = 16})
    e = err(function() local _ = dec(ember.randn(3, 2, 8), ember.randn(5, 3, 8)) end)
    has(e, "must share the batch size"); at_this_line(e)
    e = err(function() local _ = dec(ember.randn(3, 2, 8)) end)
    has(e, "expected a tensor as memory"); at_this_line(e)
  end)
end)

describe("TransformerEncoder, TransformerDecoder and Transformer", function()
  it("hold deep copies of the layer, named layers.0, layers.1, ... (PyTorch's names)", function()
    local layer = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 8})
    local enc = nn.TransformerEncoder(layer, 3)
    assert.equal(3, #enc.layers)
    local names = {}
    for n in enc:named_parameters() do if n:match("in_proj_weight") then names[#names + 1] = n end end
    assert.same({"layers.0.self_attn.in_proj_weight", "layers.1.self_attn.in_proj_weight",
                 "layers.2.self_attn.in_proj_weight"}, names)
    local w1, w2 = enc.layers[1].self_attn.in_proj_weight, enc.layers[2].self_attn.in_proj_weight
    assert(w1 ~= w2 and w1 ~= layer.self_attn.in_proj_weight, "copies share a parameter")
    close("copies start equal", w1, layer.self_attn.in_proj_weight, 0)
    assert(w1.is_leaf and w1.requires_grad)
    ember.no_grad(function() w1:fill_(1) end)
    assert(layer.self_attn.in_proj_weight:ne(1):any():item(), "writing a copy changed the original")
    assert.equal(3 * layer:num_parameters(), enc:num_parameters())
    -- eval on the stack reaches the copies
    enc:eval()
    assert.is_false(enc.layers[2].dropout.training)
  end)

  it("keep a weight tied inside the layer tied in each copy", function()
    local layer = nn.TransformerEncoderLayer(4, 2, {dim_feedforward = 4})
    layer.linear2.weight = layer.linear1.weight        -- [4, 4] both
    local enc = nn.TransformerEncoder(layer, 2)
    local c = enc.layers[1]
    assert(c.linear1.weight == c.linear2.weight, "the copy lost the tie")
    assert(c.linear1.weight ~= layer.linear1.weight)
  end)

  it("run a decoder stack with its norm and the full Transformer", function()
    local dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, {dim_feedforward = 8, batch_first = true}), 2,
                                      nn.LayerNorm(4))
    local y = dec(ember.randn(2, 3, 4), ember.randn(2, 5, 4), {tgt_is_causal = true})
    assert.same({2, 3, 4}, y.shape)
    close("final norm: zero mean", y:mean(-1), ember.zeros(2, 3), 1e-5)
    local t = nn.Transformer({d_model = 8, nhead = 2, num_encoder_layers = 2, num_decoder_layers = 1,
                              dim_feedforward = 16})
    assert.equal(2, #t.encoder.layers)
    assert.equal(1, #t.decoder.layers)
    assert.equal("LayerNorm", getmetatable(t.encoder.norm).__name)
    local mask = t:generate_square_subsequent_mask(3)
    assert.same({3, 2, 8}, t(ember.randn(5, 2, 8), ember.randn(3, 2, 8), {tgt_mask = mask}).shape)
    local e = err(function() local _ = t(ember.randn(5, 2, 8), ember.randn(3, 4, 8)) end)
    has(e, "the batch size of src and tgt must be equal"); at_this_line(e)
    e = err(function() local _ = nn.TransformerEncoder(nn.Linear(2, 2), 2) end)
    has(e, "expected a TransformerEncoderLayer as the layer, got Linear"); at_this_line(e)
  end)

  it("generate_square_subsequent_mask is -inf above the diagonal, 0 elsewhere", function()
    local m = nn.Transformer.generate_square_subsequent_mask(3)
    check(m, {{0, -math.huge, -math.huge}, {0, 0, -math.huge}, {0, 0, 0}})
    assert.equal(ember.get_default_dtype(), m.dtype)
    assert.equal("float64", nn.Transformer.generate_square_subsequent_mask(2, {dtype = "float64"}).dtype)
    local e = err(function() local _ = nn.Transformer.generate_square_subsequent_mask(-1) end)
    has(e, "sz must be an integer >= 0"); at_this_line(e)
  end)
end)

-- ---- Identity, ModuleDict, weight tying ---------------------------------------------------------------------

describe("Identity and ModuleDict", function()
  it("Identity returns its input and ignores its arguments", function()
    local x = ember.randn(3)
    assert(nn.Identity(54, {unused = true})(x) == x)
  end)

  it("ModuleDict: indexing, iteration in insertion order, update, pop, clear", function()
    local d = nn.ModuleDict({{"fc", nn.Linear(2, 3)}, {"act", nn.ReLU()}})
    assert.equal(2, #d)
    assert.same({"fc", "act"}, d:keys())
    assert.equal("Linear", getmetatable(d["fc"]).__name)
    assert(d.act == d:values()[2])
    local seen = {}
    for k, m in pairs(d) do seen[#seen + 1] = k .. "=" .. getmetatable(m).__name end
    assert.same({"fc=Linear", "act=ReLU"}, seen)
    seen = {}
    for k in d:items() do seen[#seen + 1] = k end
    assert.same({"fc", "act"}, seen)
    d:update({z = nn.Tanh(), b = nn.Sigmoid()})         -- a plain table: sorted keys
    assert.same({"fc", "act", "b", "z"}, d:keys())
    d["act"] = nn.GELU()                                 -- replaces, keeps the place
    assert.same({"fc", "act", "b", "z"}, d:keys())
    assert.equal("GELU", getmetatable(d.act).__name)
    assert(d:contains("z") and not d:contains("y"))
    local z = d:pop("z")
    assert.equal("Tanh", getmetatable(z).__name)
    assert.is_false(d:contains("z"))
    local names = {}
    for n in d:named_parameters() do names[#names + 1] = n end
    assert.same({"fc.weight", "fc.bias"}, names)
    d:clear()
    assert.equal(0, #d)
    local e = err(function() local _ = nn.ModuleDict({keys = nn.ReLU()}) end)
    has(e, "the key 'keys' is the name of a method"); at_this_line(e)
    e = err(function() d["update"] = nn.ReLU() end)
    has(e, "the key 'update' is the name of a method"); at_this_line(e)
    e = err(function() local _ = d:pop("nope") end)
    has(e, "no key 'nope'"); at_this_line(e)
    e = err(function() local _ = nn.ModuleDict({a = 1}) end)
    has(e, "the value for 'a' must be a module"); at_this_line(e)
    -- update takes another ModuleDict (its order), and refuses nothing at all, as PyTorch's
    local other = nn.ModuleDict({{"y", nn.Tanh()}, {"x", nn.ReLU()}})
    d:update(other)
    assert.same({"y", "x"}, d:keys())
    assert.equal(0, #nn.ModuleDict())
    e = err(function() d:update() end)
    has(e, "ModuleDict:update: expected a table name -> module or a list of {name, module} pairs, got nil")
    at_this_line(e)
    e = err(function() d:update({nn.ReLU()}) end)
    has(e, "ModuleDict:update: item 1 must be a {name, module} pair"); at_this_line(e)
    e = err(function() d:update(nn.ReLU()) end)
    has(e, "got a module"); at_this_line(e)
  end)
end)

describe("weight tying", function()
  it("lists a shared parameter once and accumulates its gradient from both uses", function()
    ember.manual_seed(3)
    local Tied = nn.Module:extend("Tied")
    function Tied:init()
      self.emb = nn.Embedding(5, 4, {dtype = "float64"})
      self.head = nn.Linear(4, 5, {bias = false, dtype = "float64"})
      self.head.weight = self.emb.weight
    end
    function Tied:forward(idx) return self.head(self.emb(idx)) end
    local m = Tied()
    assert.equal(1, #m:parameters())
    local names = {}
    for n in m:named_parameters() do names[#names + 1] = n end
    assert.same({"emb.weight"}, names)
    assert.equal(20, m:num_parameters())
    local idx = ember.tensor({1, 3, 3, 5})
    local w = D(4, 5)
    local loss = (m(idx) * w):sum()
    loss:backward()
    -- the same sum with two independent copies of the weight: their gradients add up
    local W = m.emb.weight:detach()
    local a, b = W:clone():requires_grad_(), W:clone():requires_grad_()
    local loss2 = (F.linear(F.embedding(idx, a), b) * w):sum()
    loss2:backward()
    close("tied gradient", m.emb.weight.grad, a.grad + b.grad, 1e-12)
    -- an optimizer step moves the one tensor both modules use
    local opt = ember.optim.SGD(m:parameters(), {lr = 0.1})
    opt:step()
    assert(m.head.weight == m.emb.weight)
    close("after the step", m.head.weight, W, 0)   -- W shares the parameter's memory
  end)
end)

-- ---- F.scaled_dot_product_attention --------------------------------------------------------------------

describe("F.scaled_dot_product_attention", function()
  it("matches softmax(q k^T / sqrt(D) + mask) v; bool masks are true where attention is allowed", function()
    local q, k, v = D(2, 3, 4), D(2, 5, 4), D(2, 5, 6)
    local allow = ember.rand(3, 5):gt(0.3)
    for i = 1, 3 do allow[i][1] = true end
    local add = ember.zeros(3, 5, {dtype = "float64"}):masked_fill(allow:logical_not(), -math.huge)
    local want = (q:matmul(k:transpose(-2, -1)) / 2 + add):softmax(-1):matmul(v)
    close("bool mask", F.scaled_dot_product_attention(q, k, v, {attn_mask = allow}), want, 1e-12)
    close("float mask", F.scaled_dot_product_attention(q, k, v, add), want, 1e-12)
    local causal = (q:matmul(k:narrow(2, 1, 3):transpose(-2, -1)) * 0.5
                    + nn.Transformer.generate_square_subsequent_mask(3, {dtype = "float64"})):softmax(-1)
                   :matmul(v:narrow(2, 1, 3))
    close("is_causal", F.scaled_dot_product_attention(q, k:narrow(2, 1, 3), v:narrow(2, 1, 3), {is_causal = true}),
          causal, 1e-12)
  end)
end)
