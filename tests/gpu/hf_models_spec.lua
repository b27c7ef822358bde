-- hf_models_spec.lua (GPU) — ember.hf.load's models on the device: every folder of
-- tests/lua/fixtures/hf/ loaded with device = the device under test gives transformers'
-- logits, hidden states and gradients (the same checks as tests/lua/hf_models_spec.lua, through
-- tests/lua/hf_checks.lua), padded on the right and on the left, and keeps its tensors and
-- results there.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local checks = require "hf_checks"

describe("ember.hf models on the device", function()
  for _, c in ipairs(checks.cases) do
    it(string.format("%s (%s, %s): logits and hidden states as transformers'", c.name, c.class, c.dtype), function()
      checks.check_case(c, g.DEV)
    end)
    if #c.grads > 0 then
      it(c.name .. ": gradients as transformers'", function() checks.check_grads(c, g.DEV, 1e-4) end)
    end
  end

  it("keeps every parameter on the device, tied ones shared", function()
    local m = ember.hf.load(checks.HF .. "qwen2", {device = g.DEV})
    for name, p in pairs(m:state_dict()) do assert.are.equal(g.devname, p.device, name) end
    assert.are.equal(m.model.embed_tokens.weight, m.lm_head.weight)
  end)
end)
