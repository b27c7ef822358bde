-- Docs of ember.lora (LoRA adapters in PEFT's format). Format: ember/help.lua.
-- The examples adapt a small model of their own (two nn.Linear layers).
local SETUP = [=[
local nn = ember.nn
local Net = nn.Module:extend("Net")
function Net:init() self.fc1 = nn.Linear(4, 8); self.fc2 = nn.Linear(8, 2) end
function Net:forward(x) return self.fc2(self.fc1(x):relu()) end
ember.manual_seed(0)
]=]
local DIR = [=[
local dir = os.tmpname(); os.remove(dir)
]=]
local CLEANUP = [=[
os.remove(dir .. "/adapter_config.json"); os.remove(dir .. "/adapter_model.safetensors"); os.remove(dir)]=]

return {
  {
    name = "ember.lora",
    sig = "local lora = ember.lora",
    doc = [=[
Low-rank adapters (LoRA) as Hugging Face's PEFT library makes them, in its file format:
  lora.wrap(model, opts)       PEFT's get_peft_model: frozen model, trainable adapters
  lora.load(model, dir)        PEFT's PeftModel.from_pretrained: an adapter folder
  lora.save(peft, dir)         adapter_config.json and adapter_model.safetensors
  lora.merge_and_unload(peft)  the model with the adapters merged into its weights
A targeted nn.Linear (or GPT-2's Conv1D from ember.hf) becomes a lora.Linear computing
base_layer(x) + lora_B(lora_A(dropout(x))) * lora_alpha / r. Loaded on first use.
scripts/finetune_lora.lua fine-tunes a Hugging Face folder with it.]=],
    example = [=[
print(type(ember.lora.wrap))   -- function]=],
  },
  {
    name = "ember.lora.wrap",
    sig = "local peft = ember.lora.wrap(model, [{r = 8, lora_alpha = 8, lora_dropout = 0, target_modules =,\n"
          .. "    exclude_modules =, use_rslora = false, init_lora_weights = true, bias = \"none\",\n"
          .. "    task_type = \"CAUSAL_LM\", autocast_adapter_dtype = true}])",
    doc = [=[
PEFT's get_peft_model with a LoraConfig: sets requires_grad = false on every parameter of
model and replaces each targeted layer, in place, by a lora.Linear holding it as
base_layer, with lora_A [r, in] (nn.Linear's kaiming-uniform draw, a = sqrt(5)) and
lora_B [out, r] (zeros: the wrapped model starts as the model). The scaling is
lora_alpha / r (lora_alpha / sqrt(r) with use_rslora); alpha and dropout are accepted for
lora_alpha and lora_dropout. target_modules: a list of module names, each matching a
module whose name is it or ends with "." .. it ("q_proj", "mlp.down_proj"); the string
"all-linear" (every Linear and Conv1D but lm_head); another string is a Lua pattern
matched against the whole name (PEFT: a regular expression). Without it, PEFT's default
for config.model_type (llama, mistral, qwen2: q_proj, v_proj; gpt2: c_attn; bert: query,
value). exclude_modules: names matched the same way, left alone. GPT-2's Conv1D gets
fan_in_fan_out = true, a Linear false, as PEFT sets them. Adapters of a float16 or
bfloat16 model are float32 (PEFT's autocast_adapter_dtype). init_lora_weights = false
draws lora_B as lora_A (the adapter then changes the outputs at once).
Returns a PeftModel: forward and generate are the model's; parameters() lists every
parameter, as PyTorch, and the optimizers skip the frozen ones (no .grad), so
optim.AdamW(peft:parameters()) trains the adapters. state_dict() names are PEFT's
("base_model.model.<module>.lora_A.default.weight"). Errors: target modules not found
(with the model's Linear layer names), a target that is not a Linear or Conv1D, the
options PEFT has and ember does not (bias other than "none", DoRA, modules_to_save,
rank_pattern, ...), a model already wrapped.]=],
    example = SETUP .. [=[
local peft = ember.lora.wrap(Net(), {r = 2, lora_alpha = 4, target_modules = {"fc1"}})
peft:print_trainable_parameters()   -- trainable params: 24 || all params: 82 || ...
local opt = ember.optim.AdamW(peft:parameters(), {lr = 1e-2})
local x, y = ember.randn(16, 4), ember.randn(16, 2)
for _ = 1, 3 do
  opt:zero_grad()
  local loss = ember.nn.functional.mse_loss(peft(x), y)
  loss:backward()
  opt:step()
end
print(peft:get_base_model().fc1.base_layer.weight.grad)   -- nil: frozen]=],
  },
  {
    name = "ember.lora.load",
    sig = "local peft = ember.lora.load(model, dir, [{is_trainable = false}])",
    doc = [=[
PEFT's PeftModel.from_pretrained: reads dir/adapter_config.json and
dir/adapter_model.safetensors (as PEFT's save_pretrained writes them), wraps the modules
the file's tensors name (base_model.model.<module>.lora_A.weight and .lora_B.weight)
with the config's r, lora_alpha, use_rslora and fan_in_fan_out, and copies the tensors
in. As PEFT, the adapter is frozen (inference mode) unless is_trainable. model must be
the base model the adapter was made for. Errors name the problem: a missing file (an
adapter_model.bin, PyTorch's pickle, is not read), a peft_type other than LORA or an
option ember lacks, a tensor that is not a LoRA weight, a module the model does not
have, a lora_A without its lora_B, a shape other than [r, in_features] / [out_features, r]
(the tensor, both shapes and r).]=],
    example = SETUP .. DIR .. [=[
local peft = ember.lora.wrap(Net(), {r = 2, target_modules = {"fc1", "fc2"}, init_lora_weights = false})
peft:save_pretrained(dir)
local again = ember.lora.load(Net(), dir)
print(again.peft_config.default.r)   -- 2
]=] .. CLEANUP,
  },
  {
    name = "ember.lora.save",
    also = {"ember.lora.PeftModel:save_pretrained"},
    sig = "ember.lora.save(peft, dir)\npeft:save_pretrained(dir)",
    doc = [=[
Writes PEFT's adapter folder (made when missing): adapter_model.safetensors with the
adapters only, under PEFT's names ("base_model.model.model.layers.0.self_attn.q_proj.
lora_A.weight"; metadata format = "pt"), and adapter_config.json with every key of PEFT
0.21's LoraConfig (peft_type "LORA", r, lora_alpha, lora_dropout, target_modules, bias,
fan_in_fan_out, use_rslora, task_type, base_model_name_or_path (the folder ember.hf.load
read), inference_mode = true, ...), so that PEFT's PeftModel.from_pretrained reads it.
PEFT's README.md model card is not written.]=],
    example = SETUP .. DIR .. [=[
local peft = ember.lora.wrap(Net(), {target_modules = {"fc2"}})
ember.lora.save(peft, dir)
for name, t in pairs(ember.load(dir .. "/adapter_model.safetensors")) do print(name, t.shape) end
]=] .. CLEANUP,
  },
  {
    name = "ember.lora.merge_and_unload",
    also = {"ember.lora.PeftModel:merge_and_unload", "ember.lora.PeftModel:unload"},
    sig = "local model = ember.lora.merge_and_unload(peft)\nlocal model = peft:merge_and_unload()\n"
          .. "local model = peft:unload()",
    doc = [=[
The wrapped model with each lora.Linear replaced by its base layer: merge_and_unload
first adds lora_B @ lora_A * scaling into the base weight (transposed for Conv1D), so the
model computes what the adapted one did without the adapters' cost; unload drops the
adapters unmerged (the base model again). The model's parameters stay frozen, as PEFT
leaves them.]=],
    example = SETUP .. [=[
local peft = ember.lora.wrap(Net(), {target_modules = {"fc1"}, init_lora_weights = false})
local x = ember.randn(3, 4)
local y = peft(x)
local model = peft:merge_and_unload()
print((model(x) - y):abs():max():item() < 1e-5, model.fc1)   -- true  Linear(...)]=],
  },
  {
    name = "ember.lora.PeftModel",
    also = {"ember.lora.PeftModel:init", "ember.lora.PeftModel:forward", "ember.lora.PeftModel:get_base_model",
            "ember.lora.PeftModel:generate"},
    sig = "peft(...)   peft:get_base_model()   peft:generate(...)   peft.peft_config.default",
    doc = [=[
What ember.lora.wrap and ember.lora.load return (PEFT's PeftModel): an nn.Module whose
child base_model (a LoraModel) holds the model as its child `model`. Calling it, and
generate, run the model, whose targeted layers are lora.Linear; get_base_model() returns
that model. peft_config.default is the LoraConfig as a table of PEFT's keys.]=],
    example = SETUP .. [=[
local peft = ember.lora.wrap(Net(), {target_modules = {"fc1"}})
print(peft(ember.randn(2, 4)).shape, peft.peft_config.default.r)   -- {2, 2} 8
print(peft:get_base_model().fc1)]=],
  },
  {
    name = "ember.lora.PeftModel:merge",
    also = {"ember.lora.PeftModel:unmerge", "ember.lora.PeftModel:merge_adapter", "ember.lora.PeftModel:unmerge_adapter",
            "ember.lora.Linear:merge", "ember.lora.Linear:unmerge", "ember.lora.Linear:delta_weight"},
    sig = "peft:merge()   peft:unmerge()   (PEFT: merge_adapter, unmerge_adapter)",
    doc = [=[
merge adds each adapter's lora_B @ lora_A * scaling into its base weight in place (in
the weight's dtype), after which forward skips the adapters; unmerge subtracts it again.
Merging twice adds nothing. The outputs agree before and after within float rounding.
lora.Linear:delta_weight() is the tensor added.]=],
    example = SETUP .. [=[
local peft = ember.lora.wrap(Net(), {target_modules = {"fc1", "fc2"}, init_lora_weights = false})
local x = ember.randn(3, 4)
local y = peft(x)
peft:merge()
print((peft(x) - y):abs():max():item() < 1e-5)   -- true
peft:unmerge()]=],
  },
  {
    name = "ember.lora.PeftModel:disable_adapter_layers",
    also = {"ember.lora.PeftModel:enable_adapter_layers"},
    sig = "peft:disable_adapter_layers()   peft:enable_adapter_layers()",
    doc = [=[
Turns the adapters off (the base model's outputs) and on again, without merging.]=],
    example = SETUP .. [=[
local net = Net()
local x = ember.randn(2, 4)
local y0 = net(x)
local peft = ember.lora.wrap(net, {target_modules = {"fc1"}, init_lora_weights = false})
peft:disable_adapter_layers()
print(peft(x):equal(y0))   -- true
peft:enable_adapter_layers()]=],
  },
  {
    name = "ember.lora.PeftModel:print_trainable_parameters",
    also = {"ember.lora.PeftModel:get_nb_trainable_parameters"},
    sig = "peft:print_trainable_parameters()\nlocal trainable, total = peft:get_nb_trainable_parameters()",
    doc = [=[
PEFT's count of the elements of the trainable parameters (the adapters) and of all of
them, and its line "trainable params: N || all params: M || trainable%: P".]=],
    example = SETUP .. [=[
local peft = ember.lora.wrap(Net(), {r = 2, target_modules = {"fc1"}})
print(peft:get_nb_trainable_parameters())   -- 24  82]=],
  },
  {
    name = "ember.lora.Linear",
    also = {"ember.lora.Linear:init", "ember.lora.Linear:forward", "ember.lora.Linear:extra_repr"},
    sig = "local layer = ember.lora.Linear(base_layer, cfg, kind)   -- made by wrap and load",
    doc = [=[
The LoRA layer (PEFT's lora.Linear): base_layer (the nn.Linear or Conv1D it replaced),
lora_A.default and lora_B.default (nn.Linear without bias, in ModuleDicts as PEFT's, so
state_dict() names match), lora_dropout.default (nn.Dropout, or nn.Identity for 0).
forward(x) = base_layer(x) + lora_B(lora_A(dropout(x))) * scaling, the adapters' input
cast to their dtype and their output back; merged or disabled, base_layer(x) alone.
Fields: r, lora_alpha, scaling, in_features, out_features, fan_in_fan_out, merged.]=],
    example = SETUP .. [=[
local peft = ember.lora.wrap(Net(), {r = 2, target_modules = {"fc1"}})
local layer = peft:get_base_model().fc1
print(layer.r, layer.scaling, layer.lora_A.default.weight.shape)   -- 2  4.0  {2, 4}]=],
  },
}
