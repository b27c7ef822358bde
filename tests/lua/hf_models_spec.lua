-- hf_models_spec.lua — ember.hf.load against transformers 5.24 (tests/lua/fixtures/hf/, written
-- by scripts/fixtures/make_hf_fixtures.py): GPT-2, Llama (grouped-query attention, rope_theta
-- 500000, untied, sharded), Qwen2 (q/k/v biases, tied), Mistral (linear rope scaling, a
-- sliding window shorter than the batch), Llama with llama3 rope scaling saved in bfloat16,
-- BERT (masked LM). Logits and every hidden state equal transformers' for a batch padded on
-- the right and on the left; state_dict names are transformers'; tied tensors are one
-- tensor; the errors a bad folder or bad input gets name the file and the tensor.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local hf = ember.hf

local THIS_FILE = "hf_models_spec.lua:"
local checks = require "hf_checks"
local HF, cases, by_name = checks.HF, checks.cases, checks.by_name

describe("ember.hf.load against transformers", function()
  for _, c in ipairs(cases) do
    local what = c.dtype == "float32" and "logits and hidden states, right and left padding"
                 or "loads and runs in its dtype; float32 exactly"
    it(string.format("%s (%s, %s): %s", c.name, c.class, c.dtype, what), function() checks.check_case(c) end)
    if #c.grads > 0 then
      it(c.name .. ": gradients as transformers'", function() checks.check_grads(c, nil, 1e-4) end)
    end

    it(c.name .. ": state_dict has transformers' names in its order, and the file's tensors", function()
      local model = hf.load(HF .. c.name)
      local sd = model:state_dict()
      local names = {}
      for k in pairs(sd) do names[#names + 1] = k end
      assert.are.same(c.state_dict, names)
      -- every tensor of the file, unchanged (the index's shards for the sharded folder)
      local files, n = {}, 0
      for _, f in ipairs(c.files) do if f:match("%.safetensors$") then files[#files + 1] = f end end
      for _, f in ipairs(files) do
        for k, t in pairs(ember.load(HF .. c.name .. "/" .. f)) do
          n = n + 1
          assert(sd[k] ~= nil, k .. " of " .. f .. " is not in the state_dict")
          assert(sd[k]:cpu():eq(t):all():item(), k .. " differs from " .. f .. "'s")
        end
      end
      assert(n > 0)
    end)
  end

  it("reads the sharded folder through its index", function()
    local files = by_name("llama").files
    local shards = 0
    for _, f in ipairs(files) do if f:match("^model%-%d+%-of%-%d+%.safetensors$") then shards = shards + 1 end end
    assert(shards > 1, "the llama fixture is sharded")
    has(table.concat(files, " "), "model.safetensors.index.json")
  end)
end)

-- a scratch copy of a fixture folder, with `edit(files)` applied to its name -> content table
local function scratch(name, edit)
  local dir = os.tmpname(); os.remove(dir); assert(os.execute("mkdir " .. dir))
  local files = {}
  for _, f in ipairs(by_name(name).files) do files[f] = io.open(HF .. name .. "/" .. f, "rb"):read("a") end
  if edit then edit(files, dir) end
  for f, content in pairs(files) do
    local out = io.open(dir .. "/" .. f, "wb"); out:write(content); out:close()
  end
  finally(function()
    for f in pairs(files) do os.remove(dir .. "/" .. f) end
    os.remove(dir)
  end)
  return dir
end

describe("ember.hf models", function()
  it("tie lm_head to the token embedding as transformers does", function()
    local g = hf.load(HF .. "gpt2")
    assert.are.equal(g.transformer.wte.weight, g.lm_head.weight)
    local q = hf.load(HF .. "qwen2")
    assert.are.equal(q.model.embed_tokens.weight, q.lm_head.weight)
    local l = hf.load(HF .. "llama")               -- tie_word_embeddings = false
    assert.are_not.equal(l.model.embed_tokens.weight, l.lm_head.weight)
    local b = hf.load(HF .. "bert")
    assert.are.equal(b.bert.embeddings.word_embeddings.weight, b.cls.predictions.decoder.weight)
    assert.are.equal(b.cls.predictions.bias, b.cls.predictions.decoder.bias)
    -- one parameter for both names: the embedding's gradient includes the head's
    local ids = ember.tensor({{3, 7, 1}})
    g(ids):sum():backward()
    assert(g.lm_head.weight.grad ~= nil)
    h.close_tensors("the tied gradient", g.transformer.wte.weight.grad, g.lm_head.weight.grad, 0)
    local count = 0
    for _ in g:named_parameters() do count = count + 1 end
    assert.are.equal(#by_name("gpt2").state_dict - 1, count)   -- named_parameters lists it once
  end)

  it("save a state_dict that loads back into a folder", function()
    local dir = os.tmpname(); os.remove(dir); assert(os.execute("mkdir " .. dir))
    finally(function() os.remove(dir .. "/config.json"); os.remove(dir .. "/model.safetensors"); os.remove(dir) end)
    local src = io.open(HF .. "qwen2/config.json", "rb"):read("a")
    local f = io.open(dir .. "/config.json", "wb"); f:write(src); f:close()
    local m = hf.load(HF .. "qwen2")
    ember.save(dir .. "/model.safetensors", m:state_dict())
    local m2 = hf.load(dir)
    local ids = ember.tensor({{5, 9, 2, 4}})
    h.close_tensors("reloaded", m2(ids), m(ids), 0)
  end)

  it("read a bare model's file (GPT2Model's names, no lm_head) with the file's names", function()
    local g = hf.load(HF .. "gpt2")
    local dir = scratch("gpt2", function(files, d)
      local bare = {}
      for k, t in pairs(ember.load(HF .. "gpt2/model.safetensors")) do bare[k:gsub("^transformer%.", "")] = t end
      ember.save(d .. "/model.safetensors", bare)
      files["model.safetensors"] = io.open(d .. "/model.safetensors", "rb"):read("a")
    end)
    local m = hf.load(dir)
    local names = {}
    for k in pairs(m:state_dict()) do names[#names + 1] = k end
    local want = {}
    for _, k in ipairs(by_name("gpt2").state_dict) do want[#want + 1] = (k:gsub("^transformer%.", "")) end
    assert.are.same(want, names)
    assert.are.equal(m.wte.weight, m.lm_head.weight)
    local ids = ember.tensor({{5, 9, 2, 4}})
    h.close_tensors("bare GPT-2", m(ids), g(ids), 0)
  end)

  it("decode with a cache (ember.hf.DynamicCache) to transformers' logits, token by token", function()
    for _, name in ipairs{"gpt2", "llama", "qwen2", "mistral"} do
      local m = hf.load(HF .. name)
      local e = ember.load(HF .. name .. ".expected.safetensors")
      for _, side in ipairs{"right", "left"} do
        local ids, mask = e[side .. ".input_ids"] + 1, e[side .. ".attention_mask"]
        local T = ids.shape[2]
        local cache = hf.DynamicCache()
        -- a prompt of 3 tokens, then one at a time; the mask covers the cache and the new tokens
        local parts = {m(ids[{{}, {1, 3}}], {attention_mask = mask[{{}, {1, 3}}], cache = cache})}
        assert.are.equal(3, cache:get_seq_length())
        for t = 4, T do
          parts[#parts + 1] = m(ids[{{}, {t, t}}], {attention_mask = mask[{{}, {1, t}}], cache = cache})
        end
        assert.are.equal(T, cache:get_seq_length())
        h.close_tensors(name .. " " .. side .. " cached logits", ember.cat(parts, 2), e[side .. ".logits"], 1e-4)
      end
    end
    -- without a mask: the new token sees every cached one
    for _, name in ipairs{"gpt2", "llama", "mistral"} do
      local m = hf.load(HF .. name)
      local ids = ember.tensor({{5, 9, 2, 4, 7, 3}, {8, 1, 6, 6, 2, 9}})
      local cache = hf.DynamicCache()
      local parts = {m(ids[{{}, {1, 2}}], {cache = cache})}
      for t = 3, 6 do parts[#parts + 1] = m(ids[{{}, {t, t}}], {cache = cache}) end
      h.close_tensors(name .. " cached, no mask", ember.cat(parts, 2), m(ids), 1e-5)
    end
    local g = hf.load(HF .. "gpt2")
    local cache = hf.DynamicCache()
    g(ember.tensor({{1, 2}}), {cache = cache})
    local e = err(function() local _ = g(ember.tensor({{3}}), {cache = cache, attention_mask = ember.tensor({{1}})}) end)
    has(e, THIS_FILE); has(e, "attention_mask [1, 1] must have shape [1, 3]: the cache's 2 tokens and input_ids' 1")
    e = err(function() local _ = g(ember.tensor({{3}}), {cache = {}}) end)
    has(e, THIS_FILE); has(e, "cache must be an ember.hf.DynamicCache(), got a table")
    e = err(function() local _ = hf.load(HF .. "bert")(ember.tensor({{3}}), {cache = hf.DynamicCache()}) end)
    has(e, THIS_FILE); has(e, "BertForMaskedLM: cache is for causal models")
  end)

  it("read older config.json files (rope_theta and rope_scaling) as transformers 5.x does", function()
    local m = hf.load(HF .. "mistral")
    local dir = scratch("mistral", function(files)
      local cfg, n = files["config.json"]:gsub('"rope_parameters": {[^}]*}',
                                               '"rope_scaling": {"type": "linear", "factor": 2.0}, "rope_theta": 10000.0')
      assert(n == 1)
      files["config.json"] = cfg
    end)
    local old = hf.load(dir)
    assert.are.same({rope_type = "linear", type = "linear", factor = 2.0, rope_theta = 10000.0}, old.cfg.rope)
    local ids = ember.tensor({{5, 9, 2, 4, 7, 1}})
    h.close_tensors("old config", old(ids), m(ids), 0)
  end)

  it("list the file's tensors it does not use (GPT-2's old attn.bias masks)", function()
    local dir = scratch("gpt2", function(files, d)
      local t = ember.load(HF .. "gpt2/model.safetensors")
      t["transformer.h.0.attn.bias"] = ember.ones(1, 1, 32, 32):tril()
      ember.save(d .. "/model.safetensors", t)
      files["model.safetensors"] = io.open(d .. "/model.safetensors", "rb"):read("a")
    end)
    local _, info = hf.load(dir)
    assert.are.same({"transformer.h.0.attn.bias"}, info.unexpected_keys)
  end)

  it("convert on loading (dtype) and turn dropout on with train()", function()
    local m = hf.load(HF .. "gpt2", {dtype = "bfloat16"})
    for _, p in ipairs(m:parameters()) do assert.are.equal("bfloat16", p.dtype) end
    local logits = m(ember.tensor({{1, 2, 3}}))
    assert.are.equal("bfloat16", logits.dtype)
    local g = hf.load(HF .. "gpt2")
    local ids = ember.tensor({{4, 8, 15, 16, 23}})
    local a = g(ids)
    h.close_tensors("eval is deterministic", g(ids), a, 0)
    g:train()
    assert(h.max_rel_err_tensors(g(ids), a) > 1e-3, "dropout (p = 0.1) changes the logits in training mode")
  end)

  it("count positions from the first column, or from position_ids (1-based)", function()
    local g = hf.load(HF .. "gpt2")
    local ids = ember.tensor({{4, 8, 15}})
    h.close_tensors("default positions", g(ids, {position_ids = ember.tensor({{1, 2, 3}})}), g(ids), 0)
    -- a row shifted by two places with its positions shifted back gives the same logits
    local shifted = g(ember.tensor({{1, 1, 4, 8, 15}}), {attention_mask = ember.tensor({{0, 0, 1, 1, 1}}),
                                                         position_ids = ember.tensor({{1, 1, 1, 2, 3}})})
    h.close_tensors("left padding with position_ids", shifted[{{}, {3, 5}}], g(ids), 1e-5)
  end)
end)

describe("ember.hf.load's errors", function()
  it("a folder without config.json", function()
    local dir = scratch("gpt2", function(files) files["config.json"] = nil end)
    local e = err(function() local _ = hf.load(dir) end)
    has(e, THIS_FILE); has(e, "ember.hf.load: " .. dir .. "/config.json: no such file")
  end)

  it("an unknown model_type", function()
    local dir = scratch("gpt2", function(files)
      files["config.json"] = files["config.json"]:gsub('"model_type": "gpt2"', '"model_type": "gpt_neox"')
    end)
    local e = err(function() local _ = hf.load(dir) end)
    has(e, THIS_FILE); has(e, dir .. "/config.json"); has(e, "model_type 'gpt_neox' is not supported")
    has(e, "gpt2, llama, mistral, qwen2")
  end)

  it("a missing tensor, naming it and the file", function()
    local dir = scratch("gpt2", function(files, d)
      local t = ember.load(HF .. "gpt2/model.safetensors")
      t["transformer.h.1.mlp.c_fc.bias"] = nil
      ember.save(d .. "/model.safetensors", t)
      files["model.safetensors"] = io.open(d .. "/model.safetensors", "rb"):read("a")
    end)
    local e = err(function() local _ = hf.load(dir) end)
    has(e, THIS_FILE); has(e, "tensor 'transformer.h.1.mlp.c_fc.bias' (gpt2, [128]) is missing from " .. dir
                              .. "/model.safetensors")
  end)

  it("a tensor whose shape differs from config.json's", function()
    local dir = scratch("llama", function(files)
      files["config.json"] = files["config.json"]:gsub('"intermediate_size": 64', '"intermediate_size": 60')
    end)
    local e = err(function() local _ = hf.load(dir) end)
    has(e, THIS_FILE); has(e, dir .. "/model-0000"); has(e, "tensor 'model.layers.0.mlp.gate_proj.weight' has shape "
                                                            .. "[64, 32], config.json gives [60, 32]")
  end)

  it("a shard the index names but the folder lacks", function()
    local dir = scratch("llama", function(files) files["model-00003-of-00007.safetensors"] = nil end)
    local e = err(function() local _ = hf.load(dir) end)
    has(e, THIS_FILE); has(e, "model.safetensors.index.json names the shard " .. dir .. "/model-00003-of-00007"
                              .. ".safetensors, which is missing")
  end)

  it("no weights, and bad arguments", function()
    local dir = scratch("gpt2", function(files) files["model.safetensors"] = nil end)
    local e = err(function() local _ = hf.load(dir) end)
    has(e, THIS_FILE); has(e, "has no model.safetensors and no model.safetensors.index.json")
    e = err(function() local _ = hf.load(42) end)
    has(e, THIS_FILE); has(e, "dir must be a folder's path")
    e = err(function() local _ = hf.load(HF .. "gpt2", {dtype = "int64"}) end)
    has(e, THIS_FILE); has(e, "dtype must be float32, float16, bfloat16 or float64, got int64")
    e = err(function() local _ = hf.load(HF .. "gpt2", {devices = "cpu"}) end)
    has(e, THIS_FILE); has(e, "unknown option 'devices'")
  end)

  it("bad input to a model, at the caller's line", function()
    local g = hf.load(HF .. "gpt2")
    local e = err(function() local _ = g(ember.tensor({{1.5, 2}})) end)
    has(e, THIS_FILE); has(e, "GPT2LMHeadModel: input_ids must be an integer tensor [batch, sequence]")
    has(e, "float32 [1, 2]")
    e = err(function() local _ = g(ember.tensor({{1, 2}}), {attention_mask = ember.tensor({1, 1})}) end)
    has(e, THIS_FILE); has(e, "attention_mask [2] must have input_ids' shape [1, 2]")
    e = err(function() local _ = g(ember.ones(1, 40, {dtype = "int64"})) end)
    has(e, THIS_FILE); has(e, "40 tokens is more than the model's 32 positions")
    e = err(function() local _ = g(ember.tensor({{0, 2}})) end)
    has(e, THIS_FILE); has(e, "index out of range"); has(e, "1-based")
    e = err(function() local _ = g(ember.tensor({{1, 2}}), {mask = 1}) end)
    has(e, THIS_FILE); has(e, "unknown option 'mask'")
    local l = hf.load(HF .. "llama")
    e = err(function() local _ = l(ember.tensor({{1, 2}}), {token_type_ids = ember.tensor({{1, 1}})}) end)
    has(e, THIS_FILE); has(e, "LlamaForCausalLM: token_type_ids is not an input of this model")
    local b = hf.load(HF .. "bert")
    e = err(function() local _ = b(ember.tensor({{1, 2}}), {token_type_ids = ember.tensor({1, 1})}) end)
    has(e, THIS_FILE); has(e, "token_type_ids must be an integer tensor of input_ids' shape [1, 2] (1-based)")
  end)
end)
