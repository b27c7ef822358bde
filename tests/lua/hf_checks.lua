-- hf_checks.lua — what tests/lua/hf_models_spec.lua and tests/gpu/hf_models_spec.lua share:
-- the transformers fixtures of tests/lua/fixtures/hf/ (scripts/fixtures/make_hf_fixtures.py)
-- and the check of a loaded model's logits and hidden states against them.
local ember = require "ember"
local h = require "helpers"

local M = {}

M.HF = h.FIXTURES .. "hf/"
M.cases = h.fixture("hf_cases.lua")

function M.by_name(name)
  for _, c in ipairs(M.cases) do if c.name == name then return c end end
end

-- got equals want within tol relative to want's largest magnitude (for bfloat16 results,
-- whose errors are units of the last place of the largest values)
local function close_to_scale(what, got, want, tol)
  local scale = want:abs():max():item()
  local d = (got:to("float32") - want):abs():max():item()
  assert(d <= tol * scale, string.format("%s: differs by %.3g, %.3g of the largest |value| %.3g", what, d, d / scale,
                                         scale))
end

-- runs the model on the fixture's batch padded on `side`; checks logits and hidden states
-- (within tol relative to max(1, |want|), or to the largest |want| when loose)
local function check_batch(model, e, prefix, side, tol, what, loose)
  local p = prefix .. side .. "."
  local dev = model:parameters()[1].device
  local o = {attention_mask = e[p .. "attention_mask"]:to(dev), output_hidden_states = true}
  if e[p .. "token_type_ids"] then o.token_type_ids = (e[p .. "token_type_ids"] + 1):to(dev) end
  local logits, hidden = model((e[p .. "input_ids"] + 1):to(dev), o)    -- the vocabulary's ids + 1
  assert(logits.device == dev, what .. ": logits on " .. logits.device .. ", the model on " .. dev)
  local close = loose and close_to_scale or h.close_tensors
  close(what .. " " .. side .. " logits", logits:cpu(), e[p .. "logits"], tol)
  local n = 0
  while e[p .. "hidden." .. n] do n = n + 1 end
  assert(n == #hidden, string.format("%s: %d hidden states, transformers gives %d", what, #hidden, n))
  for k = 1, n do
    close(string.format("%s %s hidden state %d", what, side, k - 1), hidden[k]:cpu(), e[p .. "hidden." .. (k - 1)], tol)
  end
end

--- check_case(c [, device]): the folder of case c loaded (on device) gives transformers'
-- logits and hidden states, padded on the right and on the left: within 1e-4 in float32;
-- a bfloat16 folder loosely in its dtype, and within 1e-4 converted to float32 on loading
-- (against transformers running the same bfloat16 weights in float32).
function M.check_case(c, device)
  local e = ember.load(M.HF .. c.name .. ".expected.safetensors")
  local model, info = ember.hf.load(M.HF .. c.name, {device = device})
  assert(#info.unexpected_keys == 0, "unused tensors: " .. table.concat(info.unexpected_keys, ", "))
  assert(model:parameters()[1].dtype == c.dtype, "the model's dtype is the file's")
  local loose = c.dtype ~= "float32"
  for _, side in ipairs{"right", "left"} do check_batch(model, e, "", side, loose and 0.03 or 1e-4, c.name, loose) end
  if loose then
    local m32 = ember.hf.load(M.HF .. c.name, {dtype = "float32", device = device})
    assert(m32:parameters()[1].dtype == "float32")
    for _, side in ipairs{"right", "left"} do check_batch(m32, e, "f32.", side, 1e-4, c.name .. " as float32") end
  end
end

--- check_grads(c [, device]): the gradients of sum(logits * w) (w = sin(1), sin(2), ... in
-- row-major order) for the left-padded batch, with respect to the parameters the case
-- names, equal transformers' within tol (relative to max(1, |want|)); a tied tensor's holds
-- both of its uses.
function M.check_grads(c, device, tol)
  local e = ember.load(M.HF .. c.name .. ".expected.safetensors")
  local model = ember.hf.load(M.HF .. c.name, {device = device})
  local dev = model:parameters()[1].device
  local o = {attention_mask = e["left.attention_mask"]:to(dev)}
  if e["left.token_type_ids"] then o.token_type_ids = (e["left.token_type_ids"] + 1):to(dev) end
  local logits = model((e["left.input_ids"] + 1):to(dev), o)
  local w = ember.arange(1, logits:numel() + 1, {dtype = "float64"}):sin():to("float32"):reshape(logits.shape)
  ;(logits * w:to(dev)):sum():backward()
  local params = model:state_dict({keep_vars = true})
  for _, name in ipairs(c.grads) do
    local g = params[name].grad
    assert(g ~= nil, name .. " got no gradient")
    h.close_tensors(c.name .. " gradient of " .. name, g:cpu(), e["grad." .. name], tol)
  end
end

return M
