-- ember.lora — low-rank adapters (LoRA) in the format of Hugging Face's PEFT library.
--
--   local model = ember.hf.load("path/to/llama")
--   local peft = ember.lora.wrap(model, {r = 8, lora_alpha = 16, target_modules = {"q_proj", "v_proj"}})
--   local opt = ember.optim.AdamW(peft:parameters(), {lr = 1e-4})   -- frozen tensors get no grad
--   ...train...
--   peft:save_pretrained("adapter")          -- adapter_config.json + adapter_model.safetensors
--   local again = ember.lora.load(ember.hf.load("path/to/llama"), "adapter")
--
-- wrap freezes every parameter of the model and replaces each targeted layer (nn.Linear,
-- or GPT-2's Conv1D from ember.hf, whose weight is stored [in, out]: PEFT's
-- fan_in_fan_out) by a lora.Linear holding the layer as base_layer and two new layers:
--   y = base_layer(x) + lora_B(lora_A(dropout(x))) * scaling,   scaling = lora_alpha / r
-- (lora_alpha / sqrt(r) with use_rslora), lora_A [r, in] drawn as nn.Linear's default
-- (kaiming_uniform, a = sqrt(5)) and lora_B [out, r] zeros, so the wrapped model starts as
-- the model. It returns a PeftModel: its child base_model (a LoraModel) holds the model as
-- its child `model`, so the names of state_dict() are PEFT's
-- ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight"); the
-- adapter's file drops "default", as PEFT's save_pretrained does.
--
-- Adapters of a model in float16 or bfloat16 are kept in float32 (PEFT's
-- autocast_adapter_dtype); their input is cast to float32 and their output back.
local ember = require "ember"
local nn = ember.nn
local errors = require "ember.errors"
local raise = errors.raise

local M = {}

local CONFIG_NAME, WEIGHTS_NAME = "adapter_config.json", "adapter_model.safetensors"
local PREFIX = "base_model.model."
local NULL = setmetatable({}, {__name = "null"})   -- JSON null in a config being written

-- PEFT's default target_modules by config.model_type (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING)
local DEFAULT_TARGETS = {
  llama = {"q_proj", "v_proj"}, mistral = {"q_proj", "v_proj"}, qwen2 = {"q_proj", "v_proj"},
  gpt2 = {"c_attn"}, bert = {"query", "value"},
}

-- the keys of PEFT 0.21's LoraConfig and the values its save_pretrained writes by default
local CONFIG_DEFAULTS = {
  alora_invocation_tokens = NULL, alpha_pattern = {}, arrow_config = NULL, auto_mapping = NULL,
  base_model_name_or_path = NULL, bias = "none", corda_config = NULL, ensure_weight_tying = false,
  eva_config = NULL, exclude_modules = NULL, fan_in_fan_out = false, inference_mode = true,
  init_lora_weights = true, kasa_config = NULL, layer_replication = NULL, layers_pattern = NULL,
  layers_to_transform = NULL, loftq_config = {}, lora_alpha = 8, lora_bias = false, lora_dropout = 0.0,
  lora_ga_config = NULL, megatron_config = NULL, megatron_core = "megatron.core", modules_to_save = NULL,
  monteclora_config = NULL, peft_type = "LORA", peft_version = "0.21.2", qalora_group_size = 16, r = 8,
  rank_pattern = {}, revision = NULL, target_modules = NULL, target_parameters = NULL, task_type = "CAUSAL_LM",
  trainable_token_indices = NULL, use_bdlora = NULL, use_dora = false, use_qalora = false, use_rslora = false,
  velora_config = NULL,
}

-- PEFT options ember.lora does not implement: refused when set to anything but their default
local UNSUPPORTED = {
  use_dora = "DoRA", use_qalora = "QA-LoRA", lora_bias = "lora_bias", modules_to_save = "modules_to_save",
  layers_to_transform = "layers_to_transform", layers_pattern = "layers_pattern",
  layer_replication = "layer_replication", target_parameters = "target_parameters",
  trainable_token_indices = "trainable_token_indices", alora_invocation_tokens = "aLoRA",
  use_bdlora = "use_bdlora", rank_pattern = "rank_pattern", alpha_pattern = "alpha_pattern",
}

local function is_a(m, cls)
  local mt = getmetatable(m)
  while mt do
    if mt == cls then return true end
    mt = rawget(mt, "super")
  end
  return false
end

local function conv1d_class()
  local ok, common = pcall(require, "ember.hf.common")
  return ok and common.Conv1D or nil
end

-- "linear" or "conv1d" for the layers LoRA wraps, else nil
local function layer_kind(m)
  if is_a(m, nn.Linear) then return "linear" end
  local C = conv1d_class()
  if C and is_a(m, C) then return "conv1d" end
  return nil
end

local function join(dir, name) return (dir:gsub("/+$", "")) .. "/" .. name end

local function shape_str(shape) return "[" .. table.concat(shape, ", ") .. "]" end

local function empty_table(v) return type(v) == "table" and next(v) == nil end

-- ---- the LoRA layer --------------------------------------------------------------------

--- lora.Linear(base_layer, cfg): base_layer (nn.Linear or Conv1D) plus lora_A and lora_B.
local Layer = nn.Module:extend("lora.Linear")
M.Linear = Layer

function Layer:init(base, cfg, kind)
  local w = base.weight
  self.fan_in_fan_out = kind == "conv1d"
  local in_f, out_f = w.shape[2], w.shape[1]
  if self.fan_in_fan_out then in_f, out_f = w.shape[1], w.shape[2] end
  self.in_features, self.out_features, self.r = in_f, out_f, cfg.r
  self.lora_alpha = cfg.lora_alpha
  self.scaling = cfg.use_rslora and cfg.lora_alpha / math.sqrt(cfg.r) or cfg.lora_alpha / cfg.r
  self.merged, self.disabled = false, false
  local dtype = w.dtype
  if (dtype == "float16" or dtype == "bfloat16") and cfg.autocast_adapter_dtype ~= false then dtype = "float32" end
  self.base_layer = base
  local A = nn.Linear(in_f, cfg.r, {bias = false, dtype = dtype, device = w.device})
  local B = nn.Linear(cfg.r, out_f, {bias = false, dtype = dtype, device = w.device})
  if cfg.init_lora_weights ~= false then
    nn.init.kaiming_uniform_(A.weight, {a = math.sqrt(5)})
    nn.init.zeros_(B.weight)
  end
  self.lora_dropout = nn.ModuleDict({default = cfg.lora_dropout > 0 and nn.Dropout(cfg.lora_dropout) or nn.Identity()})
  self.lora_A = nn.ModuleDict({default = A})
  self.lora_B = nn.ModuleDict({default = B})
end

function Layer:extra_repr()
  return string.format("r=%d, lora_alpha=%s, in_features=%d, out_features=%d%s%s", self.r, tostring(self.lora_alpha),
                       self.in_features, self.out_features, self.fan_in_fan_out and ", fan_in_fan_out=true" or "",
                       self.merged and ", merged" or "")
end

function Layer:forward(x)
  local y = self.base_layer(x)
  if self.merged or self.disabled then return y end
  local A, B = self.lora_A.default, self.lora_B.default
  local h = x.dtype == A.weight.dtype and x or x:to(A.weight.dtype)
  local d = B(A(self.lora_dropout.default(h))) * self.scaling
  if d.dtype ~= y.dtype then d = d:to(y.dtype) end
  return y + d
end

-- B @ A * scaling, in the base weight's layout and dtype
function Layer:delta_weight()
  local d = self.lora_B.default.weight:detach():matmul(self.lora_A.default.weight:detach()) * self.scaling
  if self.fan_in_fan_out then d = d:t() end
  return d:to(self.base_layer.weight.dtype)
end

function Layer:merge()
  if self.merged then return end
  ember.no_grad(function() self.base_layer.weight:add_(self:delta_weight()) end)
  self.merged = true
end

function Layer:unmerge()
  if not self.merged then return end
  ember.no_grad(function() self.base_layer.weight:sub_(self:delta_weight()) end)
  self.merged = false
end

-- ---- options and config ------------------------------------------------------------------

local function check_number(op, name, v, integer, lo)
  if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge or (integer and math.type(v) ~= "integer")
     or (lo and v < lo) then
    raise(string.format("%s: %s must be %s%s, got %s", op, name, integer and "an integer" or "a number",
                        lo and " >= " .. tostring(lo) or "", tostring(v)))
  end
end

local function check_targets(op, name, v)
  if v == nil or v == NULL then return end
  if type(v) == "string" then return end
  if type(v) ~= "table" or #v == 0 then
    raise(string.format("%s: %s must be a list of module names or a string, got %s", op, name,
                        type(v) == "table" and "an empty table" or type(v)))
  end
  for i, t in ipairs(v) do
    if type(t) ~= "string" or t == "" then
      raise(string.format("%s: %s[%d] must be a module name (a non-empty string), got %s", op, name, i, tostring(t)))
    end
  end
end

-- the checked config of wrap's options or of an adapter_config.json (PEFT's keys;
-- alpha and dropout are accepted for lora_alpha and lora_dropout)
local function make_config(op, o, model)
  if type(o) ~= "table" then raise(string.format("%s: options must be a table, got %s", op, type(o))) end
  local cfg = {}
  for k, v in pairs(CONFIG_DEFAULTS) do cfg[k] = v end
  for k, v in pairs(o) do
    if type(k) ~= "string" then raise(string.format("%s: option names must be strings, got %s", op, type(k))) end
    if k == "alpha" then k = "lora_alpha" elseif k == "dropout" then k = "lora_dropout" end
    if CONFIG_DEFAULTS[k] == nil and k ~= "autocast_adapter_dtype" then
      raise(string.format("%s: unknown option '%s'%s", op, k, o.unexpected_keys ~= nil and " (ember.hf.load's second "
                          .. "result? put its call in parentheses: wrap((ember.hf.load(dir)), opts))" or ""))
    end
    cfg[k] = v
  end
  if cfg.peft_type ~= "LORA" then
    raise(string.format("%s: peft_type '%s' is not supported (ember.lora reads LORA adapters only)", op,
                        tostring(cfg.peft_type)))
  end
  for k, what in pairs(UNSUPPORTED) do
    local v = cfg[k]
    if not (v == nil or v == NULL or v == false or empty_table(v)) then
      raise(string.format("%s: %s (%s = %s) is not supported by ember.lora", op, what, k,
                          type(v) == "table" and "{...}" or tostring(v)))
    end
  end
  check_number(op, "r", cfg.r, true, 1)
  check_number(op, "lora_alpha", cfg.lora_alpha, false)
  check_number(op, "lora_dropout", cfg.lora_dropout, false, 0)
  if cfg.lora_dropout >= 1 then raise(string.format("%s: lora_dropout must be < 1, got %s", op, cfg.lora_dropout)) end
  if cfg.bias ~= "none" then
    raise(string.format("%s: bias = '%s' is not supported (ember.lora trains the adapters only: bias = 'none')", op,
                        tostring(cfg.bias)))
  end
  for _, k in ipairs({"use_rslora", "inference_mode", "autocast_adapter_dtype"}) do
    if cfg[k] ~= nil and type(cfg[k]) ~= "boolean" then
      raise(string.format("%s: %s must be a boolean, got %s", op, k, tostring(cfg[k])))
    end
  end
  if cfg.fan_in_fan_out ~= nil and cfg.fan_in_fan_out ~= NULL and type(cfg.fan_in_fan_out) ~= "boolean" then
    raise(string.format("%s: fan_in_fan_out must be a boolean or nil, got %s", op, tostring(cfg.fan_in_fan_out)))
  end
  if cfg.init_lora_weights ~= true and cfg.init_lora_weights ~= false then
    raise(string.format("%s: init_lora_weights must be true or false, got %s", op, tostring(cfg.init_lora_weights)))
  end
  check_targets(op, "target_modules", cfg.target_modules)
  check_targets(op, "exclude_modules", cfg.exclude_modules)
  if cfg.target_modules == nil or cfg.target_modules == NULL then
    local mt = type(model.config) == "table" and model.config.model_type
    local d = DEFAULT_TARGETS[mt]
    if not d then
      raise(string.format("%s: target_modules is needed (no default for model_type %s)", op, tostring(mt)))
    end
    cfg.target_modules = {table.unpack(d)}
  end
  return cfg
end

-- does module `name` match a target list entry (PEFT: the name, or a suffix after a dot),
-- or the string target (a Lua pattern matched against the whole name; "all-linear": every
-- Linear and Conv1D but the output layer)
local function matches(targets, name, kind)
  if type(targets) == "string" then
    if targets == "all-linear" then
      local last = name:match("([^.]+)$")
      return kind ~= nil and last ~= "lm_head" and name ~= "cls.predictions.decoder"
    end
    return name:match("^" .. targets .. "$") ~= nil
  end
  for _, t in ipairs(targets) do
    if name == t or (#name > #t and name:sub(-#t - 1) == "." .. t) then return true end
  end
  return false
end

-- ---- the PEFT model --------------------------------------------------------------------

local LoraModel = nn.Module:extend("LoraModel")
function LoraModel:init(model) self.model = model end
function LoraModel:forward(...) return self.model(...) end

--- PeftModel: what wrap and load return; forward is the wrapped model's.
local PeftModel = nn.Module:extend("PeftModel")
M.PeftModel = PeftModel
function PeftModel:init(model, cfg)
  self.base_model = LoraModel(model)
  self.peft_config = {default = cfg}
  self.config = model.config
end

function PeftModel:forward(...) return self.base_model.model(...) end

-- (name, lora.Linear) of every adapter layer, in the model's order (names inside the model)
local function lora_layers(peft)
  local out = {}
  for name, m in peft.base_model.model:named_modules() do
    if getmetatable(m) == Layer then out[#out + 1] = {name, m} end
  end
  return out
end

local function check_peft(op, m)
  if not is_a(m, PeftModel) then
    raise(string.format("%s: expected a model that ember.lora.wrap or ember.lora.load returned, got %s", op,
                        nn.is_module(m) and getmetatable(m).__name or type(m)))
  end
end

--- peft:get_base_model() -> the wrapped model (its targeted layers are lora.Linear).
function PeftModel:get_base_model() return self.base_model.model end

--- peft:generate(...) -> the wrapped model's generate.
function PeftModel:generate(...)
  local m = self.base_model.model
  if type(m.generate) ~= "function" then raise("PeftModel:generate: the wrapped model has no generate") end
  return m:generate(...)
end

--- peft:merge() — adds B @ A * scaling into each base weight (forward then skips the adapters).
function PeftModel:merge() for _, e in ipairs(lora_layers(self)) do e[2]:merge() end return self end
--- peft:unmerge() — subtracts what merge added.
function PeftModel:unmerge() for _, e in ipairs(lora_layers(self)) do e[2]:unmerge() end return self end
PeftModel.merge_adapter, PeftModel.unmerge_adapter = PeftModel.merge, PeftModel.unmerge

--- peft:disable_adapter_layers() / enable_adapter_layers(): the base model's outputs, or the adapted ones.
function PeftModel:disable_adapter_layers() for _, e in ipairs(lora_layers(self)) do e[2].disabled = true end end
function PeftModel:enable_adapter_layers() for _, e in ipairs(lora_layers(self)) do e[2].disabled = false end end

-- the module holding the module `name` of model ("a.b.c": a.b), and the last part of the name
local function parent_of(model, name)
  local path, last = name:match("^(.*)%.([^.]+)$")
  if not path then return model, name end
  local parent = model
  for part in path:gmatch("[^.]+") do parent = rawget(parent, "_modules")[part] end
  return parent, last
end

-- each lora.Linear replaced by its base layer (merged first when merge)
local function unload(op, peft, merge)
  check_peft(op, peft)
  local model = peft.base_model.model
  for _, e in ipairs(lora_layers(peft)) do
    local name, layer = e[1], e[2]
    if merge then layer:merge() elseif layer.merged then layer:unmerge() end
    local parent, last = parent_of(model, name)
    parent[last] = layer.base_layer
  end
  return model
end

--- peft:merge_and_unload() -> the model with the adapters merged into its weights, lora layers removed.
function PeftModel:merge_and_unload() return unload("merge_and_unload", self, true) end
--- peft:unload() -> the model with the lora layers removed, unmerged (the base model again).
function PeftModel:unload() return unload("unload", self, false) end

--- peft:get_nb_trainable_parameters() -> trainable, total (numbers of elements)
function PeftModel:get_nb_trainable_parameters()
  local trainable, total = 0, 0
  for _, p in ipairs(self:parameters()) do
    total = total + p:numel()
    if p.requires_grad then trainable = trainable + p:numel() end
  end
  return trainable, total
end

--- peft:print_trainable_parameters() — prints PEFT's line of counts.
function PeftModel:print_trainable_parameters()
  local t, n = self:get_nb_trainable_parameters()
  print(string.format("trainable params: %s || all params: %s || trainable%%: %.4f", nn.Module._thousands(t),
                      nn.Module._thousands(n), n > 0 and 100 * t / n or 0))
end

--- peft:save_pretrained(dir) — ember.lora.save(peft, dir).
function PeftModel:save_pretrained(dir) return M.save(self, dir) end

-- ---- wrap ------------------------------------------------------------------------------

-- replaces the modules `names` (full names inside model) by lora layers; every parameter frozen
local function inject(op, model, cfg, names)
  local first_fan
  for _, p in ipairs(model:parameters()) do p:requires_grad_(false) end
  for _, name in ipairs(names) do
    local parent, last = parent_of(model, name)
    local base = rawget(parent, "_modules")[last]
    local kind = layer_kind(base)
    if not kind then
      raise(string.format("%s: target module '%s' is a %s; LoRA wraps nn.Linear and GPT-2's Conv1D only", op, name,
                          getmetatable(base).__name or "module"))
    end
    -- as PEFT: Conv1D needs fan_in_fan_out = true, Linear false, whatever was asked
    if first_fan == nil then first_fan = kind == "conv1d" end
    local layer = Layer(base, cfg, kind)
    layer:train(base.training)   -- the mode of the layer it replaces (an hf model is in eval mode)
    parent[last] = layer
  end
  cfg.fan_in_fan_out = first_fan or false
  local peft = PeftModel(model, cfg)
  rawset(peft, "training", model.training)
  rawset(peft.base_model, "training", model.training)
  if cfg.inference_mode == true then
    for _, p in ipairs(peft:parameters()) do p:requires_grad_(false) end
  end
  return peft
end

local function check_model(op, model)
  if not nn.is_module(model) then raise(string.format("%s: model must be an nn.Module, got %s", op, type(model))) end
  if is_a(model, PeftModel) then raise(op .. ": the model already has LoRA adapters (a PeftModel)") end
  for _, m in ipairs(model:modules()) do
    if getmetatable(m) == Layer then raise(op .. ": the model already has LoRA layers (lora.Linear)") end
  end
end

--- ember.lora.wrap(model [, {r = 8, lora_alpha = 8, lora_dropout = 0, target_modules =, exclude_modules =,
-- bias = "none", fan_in_fan_out =, use_rslora = false, init_lora_weights = true, task_type = "CAUSAL_LM"}])
-- -> a PeftModel (PEFT's get_peft_model)
function M.wrap(model, opts)
  local op = "ember.lora.wrap"
  check_model(op, model)
  if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
    raise(string.format("%s: options must be a plain table {r =, lora_alpha =, target_modules =, ...}, got %s", op,
                        ember.is_tensor(opts) and "a tensor" or nn.is_module(opts) and "a module" or type(opts)))
  end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  if o.inference_mode == nil then o.inference_mode = false end
  local cfg = make_config(op, o, model)
  local names, seen = {}, {}
  for name, m in model:named_modules() do
    local kind = layer_kind(m)
    if name ~= "" and matches(cfg.target_modules, name, kind)
       and not (cfg.exclude_modules ~= NULL and cfg.exclude_modules ~= nil and matches(cfg.exclude_modules, name, kind)) then
      names[#names + 1] = name
      seen[name] = true
    end
  end
  if #names == 0 then
    local kinds, list = {}, {}
    for name, m in model:named_modules() do
      local last = name:match("([^.]+)$")
      if last and layer_kind(m) and not kinds[last] then kinds[last] = true; list[#list + 1] = last end
    end
    local t = cfg.target_modules
    raise(string.format("%s: target modules %s not found in the model (its Linear and Conv1D layers: %s)", op,
                        type(t) == "table" and table.concat(t, ", ") or "'" .. t .. "'",
                        #list > 0 and table.concat(list, ", ") or "none"))
  end
  if cfg.base_model_name_or_path == NULL and type(model.name_or_path) == "string" then
    cfg.base_model_name_or_path = model.name_or_path
  end
  return inject(op, model, cfg, names)
end

-- ---- the adapter folder ----------------------------------------------------------------

-- v as JSON, PEFT's layout (json.dumps(indent = 2, sort_keys = True))
local json_string = require("ember.serialize")._json_string
local function to_json(v, indent)
  indent = indent or ""
  if v == NULL or v == nil then return "null" end
  local t = type(v)
  if t == "boolean" then return tostring(v) end
  if t == "string" then return json_string(v) end
  if t == "number" then
    if math.type(v) == "integer" then return string.format("%d", v) end
    local s = string.format("%.17g", v)
    for digits = 15, 16 do
      local c = string.format("%." .. digits .. "g", v)
      if tonumber(c) == v then s = c break end
    end
    if not s:find("[.eEn]") then s = s .. ".0" end
    return s
  end
  if t == "table" then
    local inner = indent .. "  "
    if #v > 0 or rawget(v, "n") == 0 then   -- a list (JSON's arrays read back carry n)
      local parts = {}
      for _, x in ipairs(v) do parts[#parts + 1] = inner .. to_json(x, inner) end
      return "[\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "]"
    end
    local keys = {}
    for k in pairs(v) do if type(k) ~= "string" then raise("ember.lora.save: a config table mixes keys") end keys[#keys + 1] = k end
    if #keys == 0 then return "{}" end
    table.sort(keys)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = inner .. json_string(k) .. ": " .. to_json(v[k], inner) end
    return "{\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "}"
  end
  raise("ember.lora.save: cannot write a " .. t .. " to adapter_config.json")
end

local function write_file(op, path, text)
  local tmp = path .. ".tmp"
  local f, err = io.open(tmp, "wb")
  if not f then raise(string.format("%s: cannot write %s: %s", op, path, tostring(err))) end
  f:write(text)
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then os.remove(tmp) raise(string.format("%s: cannot write %s: %s", op, path, tostring(rerr))) end
end

--- ember.lora.save(peft, dir) — PEFT's save_pretrained: dir/adapter_config.json and
-- dir/adapter_model.safetensors (tensors "base_model.model.<module>.lora_A.weight", ...)
function M.save(peft, dir)
  local op = "ember.lora.save"
  check_peft(op, peft)
  if type(dir) ~= "string" then raise(op .. ": dir must be a folder's path (a string), got " .. type(dir)) end
  errors.check_path(op, "dir", dir)
  local ok, err = ember._tensorboard.makedirs(dir)
  if not ok then raise(string.format("%s: cannot make the folder %s: %s", op, dir, tostring(err))) end
  local tensors = {}
  for _, e in ipairs(lora_layers(peft)) do
    tensors[PREFIX .. e[1] .. ".lora_A.weight"] = e[2].lora_A.default.weight:detach():contiguous()
    tensors[PREFIX .. e[1] .. ".lora_B.weight"] = e[2].lora_B.default.weight:detach():contiguous()
  end
  if next(tensors) == nil then raise(op .. ": the model has no LoRA layers left (merge_and_unload or unload removed them)") end
  ember.save(join(dir, WEIGHTS_NAME), tensors, {metadata = {format = "pt"}})
  local cfg = {}
  for k, v in pairs(peft.peft_config.default) do
    if CONFIG_DEFAULTS[k] ~= nil then cfg[k] = v end
  end
  cfg.inference_mode = true
  write_file(op, join(dir, CONFIG_NAME), to_json(cfg) .. "\n")
end

local function read_json(op, path)
  local f = io.open(path, "rb")
  if not f then raise(string.format("%s: %s: no such file (a PEFT adapter folder has one)", op, path)) end
  local text = f:read("a")
  f:close()
  local ok, v = pcall(require("ember.serialize")._json_decode, text)
  if not ok then raise(string.format("%s: %s: %s", op, path, tostring(v))) end
  if type(v) ~= "table" then raise(string.format("%s: %s: expected a JSON object", op, path)) end
  return v
end

--- ember.lora.load(model, dir [, {is_trainable = false}]) -> a PeftModel with the adapter of dir
-- (PEFT's PeftModel.from_pretrained): wraps the modules the adapter's tensors name, loads them.
function M.load(model, dir, opts)
  local op = "ember.lora.load"
  check_model(op, model)
  if type(dir) ~= "string" then raise(op .. ": dir must be a folder's path (a string), got " .. type(dir)) end
  errors.check_path(op, "dir", dir)
  opts = opts or {}
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then raise(op .. ": options must be a table {is_trainable =}, got " .. type(opts)) end
  for k in pairs(opts) do
    if k ~= "is_trainable" then raise(string.format("%s: unknown option '%s' (expected is_trainable)", op, tostring(k))) end
  end
  if opts.is_trainable ~= nil and type(opts.is_trainable) ~= "boolean" then
    raise(op .. ": is_trainable must be a boolean, got " .. type(opts.is_trainable))
  end
  local config_path, weights_path = join(dir, CONFIG_NAME), join(dir, WEIGHTS_NAME)
  local file = read_json(op, config_path)
  local known = {}
  for k, v in pairs(file) do if CONFIG_DEFAULTS[k] ~= nil then known[k] = v end end
  known.inference_mode = not opts.is_trainable
  local ok, cfg = pcall(make_config, config_path, known, model)
  if not ok then raise(op .. ": " .. tostring(cfg):gsub("^[^\n]-:%d+: ", "", 1)) end
  local f = io.open(weights_path, "rb")
  if not f then
    local bin = io.open(join(dir, "adapter_model.bin"), "rb")
    if bin then bin:close() end
    raise(string.format("%s: %s: no such file%s", op, weights_path,
                        bin and " (the folder has adapter_model.bin, PyTorch's pickle; save it with "
                        .. "safe_serialization = True)" or ""))
  end
  f:close()
  local lok, tensors = pcall(ember.load, weights_path)
  if not lok then raise(string.format("%s: %s: %s", op, weights_path, tostring(tensors):gsub("^[^\n]-:%d+: ", "", 1))) end
  -- module name -> {A =, B =}
  local by_module, names = {}, {}
  local keys = {}
  for k in pairs(tensors) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local mod, which = k:match("^base_model%.model%.(.+)%.lora_([AB])%.weight$")
    if not mod then
      raise(string.format("%s: %s: tensor '%s' is not a LoRA weight (expected base_model.model.<module>.lora_A.weight "
                          .. "or .lora_B.weight)", op, weights_path, k))
    end
    if not by_module[mod] then by_module[mod] = {}; names[#names + 1] = mod end
    by_module[mod][which] = tensors[k]
  end
  if #names == 0 then raise(string.format("%s: %s holds no tensors", op, weights_path)) end
  local modules = {}
  for name, m in model:named_modules() do modules[name] = m end
  for _, name in ipairs(names) do
    local e = by_module[name]
    for _, w in ipairs({"A", "B"}) do
      if not e[w] then
        raise(string.format("%s: %s: %s has lora_%s.weight but no lora_%s.weight", op, weights_path, name,
                            w == "A" and "B" or "A", w))
      end
    end
    local m = modules[name]
    if not m then
      raise(string.format("%s: %s: the adapter's target module '%s' is not in the model (is it the base model the "
                          .. "adapter was trained on? %s)", op, weights_path, name,
                          tostring(file.base_model_name_or_path or "")))
    end
    local kind = layer_kind(m)
    if not kind then
      raise(string.format("%s: target module '%s' is a %s; LoRA wraps nn.Linear and GPT-2's Conv1D only", op, name,
                          getmetatable(m).__name or "module"))
    end
    local w = m.weight
    local in_f, out_f = w.shape[2], w.shape[1]
    if kind == "conv1d" then in_f, out_f = w.shape[1], w.shape[2] end
    local want = {A = {cfg.r, in_f}, B = {out_f, cfg.r}}
    for _, which in ipairs({"A", "B"}) do
      local t, s = e[which], want[which]
      if t.ndim ~= 2 or t.shape[1] ~= s[1] or t.shape[2] ~= s[2] then
        raise(string.format("%s: %s: tensor '%s%s.lora_%s.weight' has shape %s, expected %s (r = %d from %s, the "
                            .. "model's %s has in_features %d, out_features %d)", op, weights_path, PREFIX, name, which,
                            shape_str(t.shape), shape_str(s), cfg.r, CONFIG_NAME, name, in_f, out_f))
      end
      if not t:is_floating_point() then
        raise(string.format("%s: %s: tensor '%s%s.lora_%s.weight' is %s, expected a floating-point tensor", op,
                            weights_path, PREFIX, name, which, t.dtype))
      end
    end
  end
  local peft = inject(op, model, cfg, names)
  cfg.target_modules = known.target_modules or cfg.target_modules
  local layers = {}
  for _, e in ipairs(lora_layers(peft)) do layers[e[1]] = e[2] end
  ember.no_grad(function()
    for _, name in ipairs(names) do
      layers[name].lora_A.default.weight:copy_(by_module[name].A)
      layers[name].lora_B.default.weight:copy_(by_module[name].B)
    end
  end)
  return peft
end

--- ember.lora.merge_and_unload(peft) -> peft:merge_and_unload()
function M.merge_and_unload(peft) return unload("ember.lora.merge_and_unload", peft, true) end

return M
