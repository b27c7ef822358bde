-- lora_spec.lua (GPU) — ember.lora on the device: PEFT's adapters for the tiny Llama and
-- GPT-2 folders (tests/lua/fixtures/lora/) loaded onto a model on the device under test
-- give PEFT's logits, merged or not, keep every tensor there, and a training step on the
-- device moves the adapters as the same step on the CPU does; a bfloat16 base model
-- gives the CPU's bfloat16 logits.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local h = require "helpers"
local lora = ember.lora
local HF, LORA = h.FIXTURES .. "hf/", h.FIXTURES .. "lora/"

local function max_diff(a, b) return (a:to("cpu"):double() - b:to("cpu"):double()):abs():max():item() end

-- one AdamW step on the adapters of a fresh copy on device; the adapters' state after it
local function step_on(name, device, ids)
  local peft = lora.load(ember.hf.load(HF .. name, {device = device}), LORA .. name, {is_trainable = true})
  peft:eval()   -- no dropout: the two devices' random masks differ
  local opt = ember.optim.AdamW(peft:parameters(), {lr = 1e-2})
  local logits = peft(ids:to(device))
  local V = logits.shape[3]
  local loss = ember.nn.functional.cross_entropy(logits:narrow(2, 1, logits.shape[2] - 1):reshape(-1, V),
                                                ids:narrow(2, 2, ids.shape[2] - 1):reshape(-1):to(device))
  loss:backward()
  opt:step()
  local out = {}
  for k, t in pairs(peft:state_dict()) do
    if k:find("lora_") then out[k] = t end
  end
  return out, loss:item()
end

for _, name in ipairs({"llama", "gpt2"}) do
  describe("ember.lora on the device: " .. name, function()
    local want = ember.load(LORA .. name .. ".expected.safetensors")
    local ids = want.input_ids + 1

    it("PEFT's logits, merged and not, and every tensor on the device", function()
      local peft = lora.load(ember.hf.load(HF .. name, {device = g.DEV}), LORA .. name)
      for k, t in pairs(peft:state_dict()) do assert.are.equal(g.devname, t.device, k) end
      local got = peft(ids:to(g.DEV))
      assert.are.equal(g.devname, got.device)
      assert.is_true(max_diff(got, want.logits) < 1e-4)
      peft:merge()
      assert.is_true(max_diff(peft(ids:to(g.DEV)), want.logits) < 1e-4)
    end)

    it("a training step moves the adapters as on the CPU", function()
      local dev, dev_loss = step_on(name, g.DEV, ids)
      local cpu, cpu_loss = step_on(name, "cpu", ids)
      assert.is_true(math.abs(dev_loss - cpu_loss) < 1e-4)
      local n = 0
      for k, t in pairs(cpu) do
        assert.is_true(max_diff(dev[k], t) < 1e-4, k)
        n = n + 1
      end
      assert.is_true(n > 0)
    end)

    it("bfloat16 weights: as the CPU's bfloat16 model, and near PEFT's float32 logits", function()
      local function logits_on(device)
        local peft = lora.load(ember.hf.load(HF .. name, {device = device, dtype = "bfloat16"}), LORA .. name)
        return peft(ids:to(device)):float()
      end
      local got, cpu = logits_on(g.DEV), logits_on("cpu")
      local scale = want.logits:abs():max():item()
      -- bfloat16 keeps 8 bits: the same model on two backends rounds alike to about 1 %, and the
      -- whole network's rounding leaves it within a few per cent of float32's
      assert.is_true(max_diff(got, cpu) < 0.02 * scale)
      assert.is_true(max_diff(got, want.logits) < 0.1 * scale)
    end)
  end)
end
