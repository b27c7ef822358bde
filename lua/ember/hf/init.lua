-- ember.hf — Hugging Face model folders, opened offline.
--
--   local model = ember.hf.load("path/to/gpt2")              -- config.json + *.safetensors
--   local logits = model(input_ids, {attention_mask = mask})  -- [B, T, vocab]
--   local logits, hidden = model(input_ids, {output_hidden_states = true})
--
-- load reads config.json and model.safetensors, or the shards model.safetensors.index.json
-- lists, and builds the architecture config.model_type names (gpt2.lua: GPT-2; llama.lua:
-- llama, mistral, qwen2; bert.lua: BERT with its masked-LM head) from the file's tensors:
-- parameter names are the file's ("transformer.h.0.attn.c_attn.weight"), so state_dict()
-- round-trips to the file; a tied tensor (lm_head to the token embedding, BERT's decoder)
-- is one tensor under each of its names, as in transformers.
--
-- Token ids follow ember's rule for positions (README, "Positions are 1-based"): input_ids
-- are the vocabulary's ids plus one (nn.Embedding's rows), and logits[..., k] scores the
-- vocabulary's id k - 1, so argmax gives an id to feed back as it is. token_type_ids and
-- position_ids are 1-based too.
local ember = require "ember"
local errors = require "ember.errors"
local raise = errors.raise

local M = {}

local ARCH = {gpt2 = "ember.hf.gpt2", llama = "ember.hf.llama", mistral = "ember.hf.llama", qwen2 = "ember.hf.llama",
              bert = "ember.hf.bert"}

local FLOAT = {float32 = true, float16 = true, bfloat16 = true, float64 = true}

local function join(dir, name) return (dir:gsub("/+$", "")) .. "/" .. name end

local function read_text(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function read_json(path, op)
  local text = read_text(path)
  if not text then return nil end
  local ok, v = pcall(require("ember.serialize")._json_decode, text)
  if not ok then raise(string.format("%s: %s: %s", op, path, tostring(v))) end
  if type(v) ~= "table" then raise(string.format("%s: %s: expected a JSON object", op, path)) end
  return v
end

local function supported()
  local names = {}
  for k in pairs(ARCH) do names[#names + 1] = k end
  table.sort(names)
  return table.concat(names, ", ")
end

-- name -> tensor of every weight file, and name -> the file it came from
local function read_weights(dir, device, op)
  local single = join(dir, "model.safetensors")
  local index_path = join(dir, "model.safetensors.index.json")
  local tensors, source = {}, {}
  local function load(path)
    local ok, t = pcall(ember.load, path, device and {device = device} or nil)
    if not ok then raise(string.format("%s: %s: %s", op, path, tostring(t):gsub("^[^\n]-:%d+: ", "", 1))) end
    return t
  end
  if exists(single) then
    for k, v in pairs(load(single)) do tensors[k], source[k] = v, single end
    return tensors, source
  end
  local index = read_json(index_path, op)
  if not index then
    raise(string.format("%s: %s has no model.safetensors and no model.safetensors.index.json (only safetensors "
                        .. "weights are read)", op, dir))
  end
  if type(index.weight_map) ~= "table" then raise(string.format("%s: %s: no weight_map", op, index_path)) end
  local shards = {}
  for name, file in pairs(index.weight_map) do
    if type(file) ~= "string" or file:find("/", 1, true) then
      raise(string.format("%s: %s: tensor '%s' is mapped to %s, not a file of the folder", op, index_path, name,
                          tostring(file)))
    end
    shards[file] = shards[file] or {}
    table.insert(shards[file], name)
  end
  local files = {}
  for f in pairs(shards) do files[#files + 1] = f end
  table.sort(files)
  for _, f in ipairs(files) do
    local path = join(dir, f)
    if not exists(path) then raise(string.format("%s: %s names the shard %s, which is missing", op, index_path, path)) end
    local t = load(path)
    for _, name in ipairs(shards[f]) do
      if t[name] == nil then
        raise(string.format("%s: %s: tensor '%s' is not in the shard %s that the index names", op, index_path, name, path))
      end
    end
    for k, v in pairs(t) do tensors[k], source[k] = v, path end
  end
  return tensors, source
end

-- The dtype of the model: the dtype option, else config's dtype (torch_dtype in older
-- files), else the first floating-point tensor's (transformers' dtype = "auto").
local function model_dtype(opt, config, tensors, op)
  local d = opt or config.dtype or config.torch_dtype
  if d == nil then
    local names = {}
    for k, t in pairs(tensors) do if t:is_floating_point() then names[#names + 1] = k end end
    table.sort(names)
    d = names[1] and tensors[names[1]].dtype or "float32"
  end
  if not FLOAT[d] then
    raise(string.format("%s: dtype must be float32, float16, bfloat16 or float64, got %s", op, tostring(d)))
  end
  return d
end

--- ember.hf.load(dir [, {device =, dtype =}]) -> model, info
function M.load(dir, ...)
  local op = "ember.hf.load"
  local o = require("ember.args").options(op, {"device", "dtype"}, ...)
  if type(dir) ~= "string" then raise(op .. ": dir must be a folder's path (a string), got " .. type(dir)) end
  errors.check_path(op, "dir", dir)
  local config_path = join(dir, "config.json")
  local config = read_json(config_path, op)
  if not config then raise(string.format("%s: %s: no such file (a Hugging Face model folder has one)", op, config_path)) end
  local arch = ARCH[config.model_type]
  if not arch then
    raise(string.format("%s: %s: model_type '%s' is not supported (supported: %s)", op, config_path,
                        tostring(config.model_type), supported()))
  end
  if o.dtype ~= nil and type(o.dtype) ~= "string" then raise(op .. ": dtype must be a string, got " .. type(o.dtype)) end
  if o.device ~= nil and type(o.device) ~= "string" then raise(op .. ": device must be a string, got " .. type(o.device)) end
  local tensors, source = read_weights(dir, o.device, op)
  local dtype = model_dtype(o.dtype, config, tensors, op)
  local used = {}
  -- the parameter `name` of the given shape, from the file: an error names the file and
  -- the tensor when it is missing or has another shape
  local function take(name, shape, optional)
    local t = tensors[name]
    if t == nil then
      if optional then return nil end
      local files = {}
      for _, f in pairs(source) do files[f] = true end
      local list = {}
      for f in pairs(files) do list[#list + 1] = f end
      table.sort(list)
      raise(string.format("%s: tensor '%s' (%s, %s) is missing from %s", op, name, config.model_type,
                          "[" .. table.concat(shape, ", ") .. "]", #list > 0 and table.concat(list, ", ") or dir))
    end
    local ok = #t.shape == #shape
    for i = 1, #shape do ok = ok and t.shape[i] == shape[i] end
    if not ok then
      raise(string.format("%s: %s: tensor '%s' has shape [%s], config.json gives [%s]", op, source[name], name,
                          table.concat(t.shape, ", "), table.concat(shape, ", ")))
    end
    if not t:is_floating_point() then
      raise(string.format("%s: %s: tensor '%s' is %s, expected a floating-point tensor", op, source[name], name, t.dtype))
    end
    used[name] = true
    if t.dtype ~= dtype then t = t:to(dtype) end
    return ember.nn.Parameter(t)
  end
  local function has(name) return tensors[name] ~= nil end
  local model = require(arch).build(config, {take = take, has = has, config_path = config_path, op = op})
  local unexpected = {}
  for name in pairs(tensors) do if not used[name] then unexpected[#unexpected + 1] = name end end
  table.sort(unexpected)
  model.config = config
  model.name_or_path = dir   -- transformers' name_or_path: what an adapter's config records as its base model
  model:eval()
  return model, {unexpected_keys = unexpected, dtype = dtype}
end

--- ember.hf.DynamicCache() -> an empty key/value cache for a causal model's cache option.
M.DynamicCache = require("ember.hf.common").DynamicCache

--- ember.hf.tokenizer(dir, ...) -> the folder's tokenizer (ember.hf.tokenizer.load).
function M.tokenizer(dir, ...) return require("ember.hf.tokenizer").load(dir, ...) end

-- ember.hf.Tokenizer, the tokenizers' class, with its file loaded on first use
return setmetatable(M, {__index = function(t, k)
  if k ~= "Tokenizer" then return nil end
  local T = require("ember.hf.tokenizer").Tokenizer
  rawset(t, k, T)
  return T
end})
