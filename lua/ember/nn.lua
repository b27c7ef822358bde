-- ember.nn — neural-network modules, layers, losses and initialisers (PyTorch's
-- torch.nn, with ember's 1-based conventions).
--
--   local nn = ember.nn
--   local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
--   local loss = nn.CrossEntropyLoss()(model(x), y)      -- y: 1-based class indices
--   loss:backward()
--   print(model)                                          -- the tree with parameter counts
--
-- Names are PyTorch's: Sequential / ModuleList children are named "0", "1", ..., so
-- parameter names are "0.weight", "2.bias" and state_dicts cross both ways; seq[1] (Lua's
-- indexing) is still the first layer. Deviations from PyTorch, all from ember's 1-based world:
--   * Class indices (CrossEntropyLoss / NLLLoss targets, Embedding inputs) are 1-based.
--   * Keyword arguments go in a trailing options table: nn.Linear(3, 4, {bias = false}).
--   * parameters() / children() / modules() return lists; named_*() return iterators
--     (see ember/nn/module.lua for the class system and the registration rules).
--   * MSELoss and BCEWithLogitsLoss refuse differing input/target shapes instead of broadcasting.
--
-- Public functions and classes carry a doc block of `---` lines above their definition:
-- the signature first, then what it does, then an example.
--
-- Files: nn/module.lua (Module, Parameter), nn/layers.lua, nn/conv_layers.lua
-- (convolution, pooling, normalisation, upsampling layers), nn/transformer.lua (attention and
-- transformer layers, Identity, ModuleDict; both merged into layers), nn/loss.lua,
-- nn/functional.lua (ember.nn.functional), nn/initializers.lua (ember.nn.init),
-- nn/utils/rnn.lua (ember.nn.utils.rnn).
local base = require "ember.nn.module"
local layers = require "ember.nn.layers"
local losses = require "ember.nn.loss"

local nn = {}

nn.Module = base.Module
nn.Parameter = base.Parameter
nn.Buffer = base.Buffer
nn.is_module = base.is_module
for k, v in pairs(layers) do nn[k] = v end
for k, v in pairs(losses) do nn[k] = v end

--- ember.nn.functional — the layers and losses as functions (F.linear, F.cross_entropy, ...).
nn.functional = require "ember.nn.functional"
--- ember.nn.init — in-place initialisers (uniform_, normal_, zeros_, ones_, kaiming_uniform_, xavier_uniform_, ...).
nn.init = require "ember.nn.initializers"
--- ember.nn.parallel — DistributedDataParallel (data-parallel training over ember.distributed).
nn.parallel = require "ember.nn.parallel"

--- ember.nn.utils — clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_,
--- parameters_to_vector, vector_to_parameters, parametrize, parametrizations (weight_norm,
--- spectral_norm), the older hook forms weight_norm / spectral_norm and their remove_*:
--- see ember/nn/utils.lua.
nn.utils = require "ember.nn.utils"
--- ember.nn.utils.rnn — variable-length batches for nn.RNN / LSTM / GRU: pad_sequence,
--- pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence,
--- unpad_sequence, PackedSequence.
nn.utils.rnn = require "ember.nn.utils.rnn"

return nn
