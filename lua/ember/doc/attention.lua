-- Docstrings of attention and the transformer-era ops written in C
-- (ember.scaled_dot_product_attention, ...). Format: see doc/ember.lua.
local entries = {}

local function add(e) entries[#entries + 1] = e end

add {
  name = "ember.scaled_dot_product_attention",
  sig = "ember.scaled_dot_product_attention(query, key, value, [attn_mask, dropout_p = 0,\n"
     .. "    is_causal = false, scale])",
  doc = [[
softmax(query key^T * scale + mask) value over the last two dims: query [..., Tq, D],
key [..., Tk, D], value [..., Tk, Dv] give [..., Tq, Dv]; the batch dims broadcast.
attn_mask (broadcastable to [..., Tq, Tk]) is bool (true: the key takes part) or of
query's dtype (added to the scores); is_causal hides key j from query i when j > i
(top-left aligned, also when Tq ~= Tk); give one or the other. scale defaults to
1/sqrt(D). dropout_p drops attention weights with ember's generator (ember.manual_seed)
and scales the rest by 1/(1 - dropout_p); pass 0 when not training. A row whose keys
are all masked gives NaN. Fused: no [Tq, Tk] matrix is held (tiles of keys with an
online softmax), and the backward recomputes the weights; differentiable in query, key
and value to any order (not in attn_mask). Arguments after value may come as one
options table {attn_mask=, dropout_p=, is_causal=, scale=}. Like PyTorch 2.x's
torch.nn.functional.scaled_dot_product_attention.]],
  example = [[
local q, k, v = ember.randn(2, 4, 16, 8), ember.randn(2, 4, 16, 8), ember.randn(2, 4, 16, 8)
local y = ember.scaled_dot_product_attention(q, k, v, {is_causal = true})
print(y.shape)
local pad = ember.tensor({{true, true, false}}):view(1, 1, 1, 3)    -- [N, 1, 1, Tk]
print(ember.scaled_dot_product_attention(ember.randn(1, 2, 5, 4), ember.randn(1, 2, 3, 4),
                                         ember.randn(1, 2, 3, 6), pad).shape)]],
}

return entries
