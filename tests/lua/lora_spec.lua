-- lora_spec.lua — ember.lora against PEFT 0.21 (tests/lua/fixtures/lora/, written by
-- scripts/fixtures/make_lora_fixtures.py, which also checks that PEFT reads the adapters
-- ember saves): PEFT's adapters for the tiny Llama and GPT-2 (Conv1D, fan_in_fan_out,
-- rsLoRA) folders give PEFT's logits, merged or not; training moves the adapters only;
-- save and load round-trip; bad folders and options fail naming the problem.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local lora = ember.lora

local HF = h.FIXTURES .. "hf/"
local LORA = h.FIXTURES .. "lora/"

local function max_diff(a, b) return (a - b):abs():max():item() end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p '" .. d .. "'"))
  return d
end

local function rmdir(d) os.execute("rm -rf '" .. d .. "'") end

local function copy_dir(from, to)
  assert(os.execute(string.format("mkdir -p '%s' && cp '%s'/* '%s'/", to, from, to)))
end

local write = h.write_file

local read = h.read_file

for _, name in ipairs({"llama", "gpt2"}) do
  describe("ember.lora: PEFT's " .. name .. " adapter", function()
    local want = ember.load(LORA .. name .. ".expected.safetensors")
    local ids = want.input_ids + 1

    it("gives PEFT's logits (within 1e-4) and the base model's without the adapter", function()
      local peft = lora.load(ember.hf.load(HF .. name), LORA .. name)
      assert.is_true(max_diff(peft(ids), want.logits) < 1e-4)
      peft:disable_adapter_layers()
      assert.is_true(max_diff(peft(ids), want.base_logits) < 1e-4)
      peft:enable_adapter_layers()
      assert.is_true(max_diff(peft(ids), want.logits) < 1e-4)
    end)

    it("merge, unmerge and merge_and_unload keep the outputs", function()
      local peft = lora.load(ember.hf.load(HF .. name), LORA .. name)
      local before = peft(ids)
      local base = peft:get_base_model():state_dict()
      local w0 = {}
      for k, t in pairs(base) do w0[k] = t:clone() end
      peft:merge()
      assert.is_true(max_diff(peft(ids), before) < 1e-4)
      peft:merge()   -- a second merge adds nothing
      assert.is_true(max_diff(peft(ids), before) < 1e-4)
      peft:unmerge()
      assert.is_true(max_diff(peft(ids), before) < 1e-4)
      for k, t in pairs(peft:get_base_model():state_dict()) do
        if w0[k] then assert.is_true(max_diff(t, w0[k]) < 1e-5, k) end
      end
      local plain = lora.merge_and_unload(peft)
      assert.is_true(max_diff(plain(ids), want.merged_logits) < 1e-4)
      for pname, m in plain:named_modules() do
        assert.are_not.equal("lora.Linear", getmetatable(m).__name, pname)
      end
      -- the file's names again, so the merged model saves as a transformers folder
      local sd = plain:state_dict()
      local target = name == "llama" and "model.layers.0.self_attn.q_proj.weight" or "transformer.h.0.attn.c_attn.weight"
      assert.is_not_nil(sd[target])
    end)

    it("reads PEFT's config: r, lora_alpha, fan_in_fan_out, use_rslora, target_modules", function()
      local peft = lora.load(ember.hf.load(HF .. name), LORA .. name)
      local cfg = peft.peft_config.default
      assert.are.equal(4, cfg.r)
      if name == "gpt2" then
        assert.is_true(cfg.fan_in_fan_out)
        assert.is_true(cfg.use_rslora)
        local layer = peft:get_base_model().transformer.h[1].attn.c_attn
        assert.are.equal(8 / 2, layer.scaling)
        assert.are.same({"c_attn", "mlp.c_proj"}, {cfg.target_modules[1], cfg.target_modules[2], cfg.target_modules[3]})
      else
        assert.is_false(cfg.fan_in_fan_out)
        local layer = peft:get_base_model().model.layers[1].self_attn.q_proj
        assert.are.equal(16 / 4, layer.scaling)
        -- "mlp.down_proj" matched as a suffix; the attention's o_proj was not targeted
        assert.are.equal("lora.Linear", getmetatable(peft:get_base_model().model.layers[2].mlp.down_proj).__name)
        assert.are.equal("Linear", getmetatable(peft:get_base_model().model.layers[2].self_attn.o_proj).__name)
      end
      -- PEFT's from_pretrained default: inference mode, nothing trainable
      local trainable = peft:get_nb_trainable_parameters()
      assert.are.equal(0, trainable)
    end)
  end)
end

describe("ember.lora.wrap", function()
  it("starts as the base model (lora_B zeros) and freezes every base parameter", function()
    local model = ember.hf.load(HF .. "llama")
    local ids = ember.tensor({{4, 9, 2, 7, 1}})
    local before = model(ids)
    ember.manual_seed(3)
    local peft = lora.wrap(model, {r = 8, alpha = 16, target_modules = {"q_proj", "v_proj"}})
    assert.is_true(max_diff(peft(ids), before) == 0)
    local n = 0
    for pname, p in peft:named_parameters() do
      local adapter = pname:find("lora_", 1, true) ~= nil
      assert.are.equal(adapter, p.requires_grad, pname)
      if adapter then n = n + 1 end
    end
    assert.are.equal(2 * 2 * 2, n)   -- 2 layers x {q, v} x {A, B}
    local layer = peft:get_base_model().model.layers[1].self_attn.q_proj
    assert.are.equal(2, layer.scaling)
    assert.is_true(layer.lora_B.default.weight:eq(0):all():item())
    -- A ~ U(-1/sqrt(in), 1/sqrt(in)): kaiming_uniform with a = sqrt(5)
    local a = layer.lora_A.default.weight
    assert.are.same({8, 32}, a.shape)
    assert.is_true(a:abs():max():item() <= 1 / math.sqrt(32) and a:std():item() > 0.05)
    -- PEFT's state_dict names
    local sd = peft:state_dict()
    assert.is_not_nil(sd["base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight"])
    assert.is_not_nil(sd["base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight"])
  end)

  it("uses PEFT's default target_modules and 'all-linear'", function()
    local peft = lora.wrap((ember.hf.load(HF .. "gpt2")))
    has(err(lora.wrap, ember.hf.load(HF .. "gpt2")), "put its call in parentheses")
    assert.are.same({"c_attn"}, peft.peft_config.default.target_modules)
    assert.is_true(peft.peft_config.default.fan_in_fan_out)
    local all = lora.wrap(ember.hf.load(HF .. "llama"), {target_modules = "all-linear"})
    local n = 0
    for _, m in all:named_modules() do if getmetatable(m).__name == "lora.Linear" then n = n + 1 end end
    assert.are.equal(2 * 7, n)   -- every projection of the 2 layers, not lm_head
    assert.are.equal("Linear", getmetatable(all:get_base_model().lm_head).__name)
    local ex = lora.wrap(ember.hf.load(HF .. "llama"), {target_modules = {"q_proj", "v_proj"},
                                                         exclude_modules = {"model.layers.1.self_attn.v_proj"}})
    assert.are.equal("Linear", getmetatable(ex:get_base_model().model.layers[2].self_attn.v_proj).__name)
    assert.are.equal("lora.Linear", getmetatable(ex:get_base_model().model.layers[1].self_attn.v_proj).__name)
  end)

  it("trains the adapters only: AdamW lowers the loss, base weights stay bit-identical", function()
    ember.manual_seed(5)
    local model = ember.hf.load(HF .. "gpt2")
    local base = {}
    for k, t in pairs(model:state_dict()) do base[k] = t:clone() end
    local peft = lora.wrap(model, {r = 4, lora_alpha = 8, target_modules = {"c_attn", "c_proj"}})
    peft:train()
    local opt = ember.optim.AdamW(peft:parameters(), {lr = 1e-2})
    local ids = ember.randint(1, 121, {4, 12})
    local function loss_of()
      local logits = peft(ids:narrow(2, 1, 11))
      return ember.nn.functional.cross_entropy(logits:reshape(-1, 120), ids:narrow(2, 2, 11):reshape(-1))
    end
    model:eval()   -- no dropout: the losses compare
    local first, last
    for step = 1, 8 do
      opt:zero_grad()
      local loss = loss_of()
      loss:backward()
      if step == 1 then
        first = loss:item()
        for pname, p in peft:named_parameters() do
          if pname:find("lora_", 1, true) then assert.is_not_nil(p.grad, pname)
          else assert.is_nil(p.grad, pname) end
        end
      end
      opt:step()
    end
    last = loss_of():item()
    assert.is_true(last < first - 0.1, string.format("loss %g -> %g", first, last))
    for k, t in pairs(peft:get_base_model():state_dict()) do
      local orig = base[k:gsub("%.base_layer", "")]
      if orig then assert.is_true(t:eq(orig):all():item(), k .. " moved") end
    end
  end)

  it("dropout applies to the adapter's input in training mode only", function()
    ember.manual_seed(9)
    local peft = lora.wrap(ember.hf.load(HF .. "llama"), {r = 2, lora_dropout = 0.5, init_lora_weights = false})
    local ids = ember.tensor({{4, 9, 2, 7, 1}})
    local a = peft(ids)
    assert.is_true(max_diff(peft(ids), a) == 0)
    peft:train()
    assert.is_true(max_diff(peft(ids), a) > 0)
  end)

  it("bf16 models keep float32 adapters; the output stays bfloat16", function()
    local model = ember.hf.load(HF .. "llama", {dtype = "bfloat16"})
    local peft = lora.wrap(model, {r = 2, init_lora_weights = false})
    local layer = peft:get_base_model().model.layers[1].self_attn.q_proj
    assert.are.equal("float32", layer.lora_A.default.weight.dtype)
    assert.are.equal("bfloat16", peft(ember.tensor({{1, 2, 3}})).dtype)
  end)
end)

describe("ember.lora.save and load", function()
  it("round-trips an adapter; PEFT's file names and config keys", function()
    ember.manual_seed(2)
    local peft = lora.wrap(ember.hf.load(HF .. "gpt2"), {r = 3, lora_alpha = 5, init_lora_weights = false,
                                                         target_modules = {"c_attn", "c_fc"}})
    local ids = ember.tensor({{5, 6, 7, 8}, {9, 10, 11, 12}})
    local y = peft(ids)
    local dir = tmpdir()
    peft:save_pretrained(dir)
    local t = ember.load(dir .. "/adapter_model.safetensors")
    assert.are.same({3, 32}, t["base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"].shape)
    assert.are.same({96, 3}, t["base_model.model.transformer.h.0.attn.c_attn.lora_B.weight"].shape)
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    assert.are.equal(2 * 2 * 2, n)
    local f = ember.safe_open(dir .. "/adapter_model.safetensors")
    assert.are.equal("pt", f:metadata().format)
    local cfg = require("ember.serialize")._json_decode(read(dir .. "/adapter_config.json"))
    assert.are.equal("LORA", cfg.peft_type)
    assert.are.equal(3, cfg.r)
    assert.are.equal(5, cfg.lora_alpha)
    assert.is_true(cfg.fan_in_fan_out)
    assert.is_true(cfg.inference_mode)
    assert.are.equal("CAUSAL_LM", cfg.task_type)
    assert.are.same({"c_attn", "c_fc"}, {cfg.target_modules[1], cfg.target_modules[2], cfg.target_modules[3]})
    assert.is_truthy(cfg.base_model_name_or_path:find("hf/gpt2", 1, true))
    local again = lora.load(ember.hf.load(HF .. "gpt2"), dir, {is_trainable = true})
    assert.are.equal(0, max_diff(again(ids), y))
    assert.is_true(again:get_nb_trainable_parameters() > 0)
    rmdir(dir)
  end)

  local function broken(setup)
    local dir = tmpdir()
    copy_dir(LORA .. "llama", dir)
    setup(dir)
    local msg = err(lora.load, ember.hf.load(HF .. "llama"), dir)
    rmdir(dir)
    return msg
  end

  it("names a missing file", function()
    has(broken(function(d) os.remove(d .. "/adapter_config.json") end), "adapter_config.json: no such file")
    has(broken(function(d) os.remove(d .. "/adapter_model.safetensors") end), "adapter_model.safetensors: no such file")
    local m = broken(function(d)
      os.rename(d .. "/adapter_model.safetensors", d .. "/adapter_model.bin")
    end)
    has(m, "adapter_model.bin, PyTorch's pickle")
  end)

  it("names an unsupported peft_type and options", function()
    local function with_config(edit)
      return broken(function(d)
        local text = read(d .. "/adapter_config.json")
        write(d .. "/adapter_config.json", edit(text))
      end)
    end
    has(with_config(function(s) return (s:gsub('"LORA"', '"IA3"')) end), "peft_type 'IA3' is not supported")
    has(with_config(function(s) return (s:gsub('"use_dora": false', '"use_dora": true')) end), "DoRA")
    has(with_config(function(s) return (s:gsub('"r": 4', '"r": 0')) end), "r must be an integer >= 1, got 0")
    has(with_config(function(s) return (s:gsub('"bias": "none"', '"bias": "all"')) end), "bias = 'all' is not supported")
    has(with_config(function() return "{not json" end), "adapter_config.json")
  end)

  it("names a shape mismatch: the tensor, both shapes, r", function()
    local m = broken(function(d)
      local t = ember.load(d .. "/adapter_model.safetensors")
      t["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"] = ember.zeros(4, 31)
      ember.save(d .. "/adapter_model.safetensors", t)
    end)
    has(m, "tensor 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight' has shape [4, 31], expected [4, 32]")
    has(m, "r = 4")
  end)

  it("names a target module the model lacks, and a lone lora_A", function()
    local m = broken(function(d)
      local t = ember.load(d .. "/adapter_model.safetensors")
      t["base_model.model.model.layers.5.self_attn.q_proj.lora_A.weight"] = ember.zeros(4, 32)
      t["base_model.model.model.layers.5.self_attn.q_proj.lora_B.weight"] = ember.zeros(32, 4)
      ember.save(d .. "/adapter_model.safetensors", t)
    end)
    has(m, "target module 'model.layers.5.self_attn.q_proj' is not in the model")
    m = broken(function(d)
      local t = ember.load(d .. "/adapter_model.safetensors")
      t["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"] = nil
      ember.save(d .. "/adapter_model.safetensors", t)
    end)
    has(m, "model.layers.0.self_attn.q_proj has lora_A.weight but no lora_B.weight")
    m = broken(function(d)
      local t = ember.load(d .. "/adapter_model.safetensors")
      t["base_model.model.lm_head.weight"] = ember.zeros(2)
      ember.save(d .. "/adapter_model.safetensors", t)
    end)
    has(m, "tensor 'base_model.model.lm_head.weight' is not a LoRA weight")
  end)

  it("wrap's errors: targets not found, a non-linear target, bad options, wrapping twice", function()
    local model = ember.hf.load(HF .. "llama")
    local m = err(lora.wrap, model, {target_modules = {"qq_proj"}})
    has(m, "target modules qq_proj not found in the model")
    has(m, "q_proj")
    has(err(lora.wrap, model, {target_modules = {"mlp"}}), "target module 'model.layers.0.mlp' is a LlamaMLP")
    has(err(lora.wrap, model, {r = 0}), "r must be an integer >= 1")
    has(err(lora.wrap, model, {lora_dropout = 1}), "lora_dropout must be < 1")
    has(err(lora.wrap, model, {rr = 3}), "unknown option 'rr'")
    has(err(lora.wrap, model, {target_modules = {}}), "target_modules must be a list of module names")
    has(err(lora.wrap, "model"), "model must be an nn.Module")
    has(err(lora.wrap, ember.nn.Linear(2, 2)), "target_modules is needed")
    local peft = lora.wrap(model)
    assert.is_false(peft.training)   -- the model's mode, and its new layers'
    has(err(lora.wrap, peft), "already has LoRA adapters")
    has(err(lora.wrap, model), "already has LoRA layers")
    has(err(lora.save, model, "/tmp/x"), "expected a model that ember.lora.wrap or ember.lora.load returned")
    has(err(lora.load, ember.hf.load(HF .. "llama"), LORA .. "llama", {trainable = true}), "unknown option 'trainable'")
  end)

  it("a plain nn.Linear model: wrap, save, load", function()
    ember.manual_seed(4)
    local Net = ember.nn.Module:extend("Net")
    function Net:init() self.fc1 = ember.nn.Linear(3, 5); self.fc2 = ember.nn.Linear(5, 2) end
    function Net:forward(x) return self.fc2(self.fc1(x):relu()) end
    local net = Net()
    local sd = net:state_dict()
    local peft = lora.wrap(net, {r = 2, target_modules = {"fc1", "fc2"}, init_lora_weights = false})
    local x = ember.randn(4, 3)
    local y = peft(x)
    local dir = tmpdir()
    lora.save(peft, dir)
    local net2 = Net()
    net2:load_state_dict(sd)
    assert.are.equal(0, max_diff(lora.load(net2, dir)(x), y))
    rmdir(dir)
  end)
end)
