-- char_gpt.lua — a character-level GPT: trains a small transformer to predict
-- the next character of a text, and samples text from a trained checkpoint.
--
--   build/ember scripts/char_gpt.lua TEXT_FILE [options]          train
--   build/ember scripts/char_gpt.lua --sample 500 --out CKPT       generate
--   build/ember scripts/char_gpt.lua TEXT_FILE --bench --steps 50  the benchmark lines
--
-- The model: token + learned position embeddings, `--layers` pre-norm blocks
-- (LayerNorm -> causal self-attention with a packed qkv projection ->
-- residual; LayerNorm -> Linear 4x -> GELU -> Linear -> residual), a final
-- LayerNorm and a head tied to the token embedding (--untied: its own
-- weight). The blocks' parameters are named as PyTorch's
-- nn.TransformerEncoderLayer names them (norm1, self_attn.in_proj_weight,
-- self_attn.out_proj, norm2, linear1, linear2), which is what
-- scripts/bench/char_gpt_torch.py builds.
-- Initialisation (GPT-2's, here and in the PyTorch script): weights of
-- linear layers and embeddings ~ N(0, 0.02), the residual projections'
-- (out_proj, linear2) ~ N(0, 0.02 / sqrt(2 * layers)), biases 0.
--
-- Training: AdamW (betas 0.9, 0.99) with weight decay on the matrices
-- (embeddings included) and none on biases and LayerNorm weights; the
-- learning rate rises linearly over --warmup steps to --lr, then follows a
-- cosine down to --min-lr at --steps (set on the groups by hand each step);
-- gradients clipped to a total norm of --clip. Batches are random
-- contiguous windows of the first 90% of the text, drawn from ember's
-- generator (seeded by --seed); the validation loss is the mean over fixed,
-- evenly spaced windows of the last 10% (the same windows every time and in
-- the PyTorch script). A checkpoint (model, optimizer, step, generator, and
-- the vocabulary and model sizes for --sample) is written every
-- --save-every steps and at the end; --resume continues exactly.
--
-- --distributed (under `ember --nproc N` or mpirun): data-parallel over the ranks with
-- nn.parallel.DistributedDataParallel. Every rank builds the same model (rank 0's is
-- broadcast anyway) and draws its own --batch / N windows a step: rank r's generator
-- has key seed + r at the same counter as rank 0's, so a resumed run (the checkpoint
-- holds rank 0's generator) continues each rank's stream exactly. Rank 0 prints,
-- evaluates and writes the checkpoint (the unwrapped model's names).
local ember = require "ember"
local nn, F, optim = ember.nn, ember.nn.functional, ember.optim

local NAME = "char_gpt"

local USAGE = [[
usage: ember scripts/char_gpt.lua TEXT_FILE [options]        train on a text
       ember scripts/char_gpt.lua --sample N [--out CKPT]     print N generated characters
model:
  --layers N         transformer blocks (default 4)
  --heads N          attention heads (default 4)
  --d-model N        embedding width (default 128)
  --context N        characters of context (default 128)
  --dropout P        dropout probability (default 0)
  --untied           a head of its own instead of the token embedding's transpose
training:
  --steps N          optimizer steps in all (default 2000)
  --batch N          windows per step (default 32)
  --lr X             peak learning rate (default 1e-3)
  --min-lr X         learning rate at the end of the cosine (default lr / 10)
  --warmup N         steps of linear warm-up (default 100)
  --weight-decay X   AdamW weight decay on the matrices (default 0.1)
  --clip X           gradient-norm clipping (default 1.0; 0 turns it off)
  --seed N           seed for initialisation and batches (default 1)
  --device D         cpu or cuda (default cpu)
  --amp DTYPE        the forward and loss under ember.autocast in bfloat16 or float16
                     (float16: with a GradScaler)
  --log-every N      a loss line every N steps, with ms/step and tokens/s (default 10)
  --eval-every N     validation loss every N steps (default 200)
  --eval-batches N   validation windows: N batches of --batch (default 8)
  --out PATH         the checkpoint (default char_gpt.safetensors)
  --save-every N     checkpoint every N steps (default: --eval-every) and at the end
  --resume           continue from --out
  --stop-after N     stop after step N as if interrupted (to test --resume)
  --plot             loss curves: inline after each validation on a terminal, and a file
  --plot-file PATH   where --plot writes them (default loss.png)
  --tensorboard DIR  TensorBoard event files in DIR (ember.utils.tensorboard, rank 0):
                     train/loss and lr at each --log-every line, val/loss at each validation
  --bench            time the steps instead: prints gpt_step_ms (median) and gpt_val_loss
  --cuda-graph       replay each step from a CUDA graph (needs --device cuda): 3 eager warm-up
                     steps, then one capture; capturable AdamW reads the learning rate from
                     device tensors filled before each replay
  --distributed      data-parallel over the ranks of `ember --nproc N` or mpirun: --batch
                     is the global batch (it must divide by N); rank 0 prints and saves
sampling (from the checkpoint --out):
  --sample N         characters to generate
  --temperature T    divides the logits (default 1.0)
  --top-k K          sample among the K likeliest characters only (default 0: all)
  --prompt TEXT      the text to continue (default a newline)]]

-- the command line read as finetune_lora.lua reads its own (scripts/script_options.lua)
local options = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "script_options.lua")
local function fail(...) options.fail(NAME, ...) end

---------------------------------------------------------------------------
-- Options

-- kind: "int" (a positive integer unless noted in zero_ok), "num", "str", "flag"
local OPTIONS = {
  layers = "int", heads = "int", d_model = "int", context = "int", dropout = "num", untied = "flag",
  steps = "int", batch = "int", lr = "num", min_lr = "num", warmup = "int", weight_decay = "num",
  clip = "num", seed = "int", device = "str", log_every = "int", eval_every = "int", eval_batches = "int",
  out = "str", save_every = "int", resume = "flag", stop_after = "int", plot = "flag", plot_file = "str",
  bench = "flag", sample = "int", temperature = "num", top_k = "int", prompt = "str", amp = "str",
  cuda_graph = "flag", distributed = "flag", tensorboard = "str",
}
local ZERO_OK = {warmup = true, top_k = true, seed = true}

local function parse_args(argv)
  local defaults = {layers = 4, heads = 4, d_model = 128, context = 128, dropout = 0, untied = false,
                    steps = 2000, batch = 32, lr = 1e-3, warmup = 100, weight_decay = 0.1, clip = 1.0,
                    seed = 1, device = "cpu", log_every = 10, eval_every = 200, eval_batches = 8,
                    out = NAME .. ".safetensors", resume = false, plot = false, plot_file = "loss.png",
                    bench = false, temperature = 1.0, top_k = 0, prompt = "\n"}
  local o, positional, given = options.parse(argv, {name = NAME, usage = USAGE, kinds = OPTIONS, zero_ok = ZERO_OK,
                                                    defaults = defaults})
  o.text = positional[1]
  if positional[2] then fail("unexpected argument ", positional[2], " (one TEXT_FILE only)\n", USAGE) end
  o.min_lr = o.min_lr or o.lr / 10
  o.save_every = o.save_every or o.eval_every
  if o.d_model % o.heads ~= 0 then
    fail("--d-model ", o.d_model, " is not divisible by --heads ", o.heads)
  end
  if o.dropout < 0 or o.dropout >= 1 then fail("--dropout must be in [0, 1), got ", o.dropout) end
  if o.temperature <= 0 then fail("--temperature must be positive, got ", o.temperature) end
  if o.lr <= 0 or o.min_lr < 0 then fail("--lr must be positive and --min-lr not negative") end
  if o.device ~= "cpu" and o.device ~= "cuda" and not o.device:match("^cuda:%d+$") then
    fail("--device must be cpu or cuda, got ", o.device)
  end
  if o.amp and o.amp ~= "bfloat16" and o.amp ~= "float16" then
    fail("--amp must be bfloat16 or float16, got ", o.amp)
  end
  if o.sample == nil and o.text == nil then fail("a TEXT_FILE to train on is needed (or --sample N)\n", USAGE) end
  if o.cuda_graph and not o.device:match("^cuda") then fail("--cuda-graph needs --device cuda") end
  if o.cuda_graph and o.amp == "float16" then
    fail("--cuda-graph cannot be combined with --amp float16: the GradScaler's step reads its inf/NaN check ",
         "back to the host, which a captured step cannot (use --amp bfloat16)")
  end
  if o.distributed and o.cuda_graph then
    fail("--distributed cannot be combined with --cuda-graph: DistributedDataParallel's all-reduces run from ",
         "backward's hooks, which a captured step does not replay")
  end
  o.given = given
  return o
end

---------------------------------------------------------------------------
-- Data: the text as 1-based indices into its sorted alphabet of bytes.

local function read_text(path) return options.read_text(NAME, path) end

-- alphabet: a list of bytes; the vocabulary is written into checkpoints as
-- their decimal codes, so any bytes survive the file's JSON metadata
local function alphabet_of(s)
  local seen = {}
  for i = 1, #s, 8192 do
    for _, b in ipairs({s:byte(i, math.min(i + 8191, #s))}) do seen[b] = true end
  end
  local bytes = {}
  for b = 0, 255 do if seen[b] then bytes[#bytes + 1] = b end end
  return bytes
end

local function encode(s, bytes)
  local index = {}
  for i, b in ipairs(bytes) do index[b] = i end
  local ids = {}
  local n = 0
  for i = 1, #s, 8192 do
    for _, b in ipairs({s:byte(i, math.min(i + 8191, #s))}) do
      n = n + 1
      local id = index[b]
      if not id then return nil, string.char(b) end
      ids[n] = id
    end
  end
  return ember.tensor(ids, {dtype = "int64"})
end

local function vocab_text(bytes) return table.concat(bytes, ",") end
local function vocab_parse(s)
  local bytes = {}
  for b in tostring(s):gmatch("%d+") do bytes[#bytes + 1] = math.tointeger(tonumber(b)) end
  return bytes
end

-- windows of context + 1 characters starting at 1-based `starts` [N] -> x, y [N, context]
local function windows(data, starts, context)
  local n = starts:size(1)
  local idx = starts:view(n, 1) + ember.arange(context + 1):view(1, context + 1)
  local w = data:index_select(1, idx:view(-1)):view(n, context + 1)
  return w:narrow(2, 1, context), w:narrow(2, 2, context)
end

-- B random windows from the generator (one draw: the starts)
local function random_batch(data, batch, context)
  return windows(data, ember.randint(1, data:size(1) - context + 1, {batch}), context)
end

-- the validation windows: n evenly spaced starts, the same in every run
-- (0-based start floor(i * (N - context - 1) / (n - 1)), as the PyTorch script)
local function fixed_starts(len, n, context)
  local last = len - context - 1
  local starts = {}
  for i = 0, n - 1 do starts[i + 1] = (n == 1 and 0 or (i * last) // (n - 1)) + 1 end
  return ember.tensor(starts, {dtype = "int64"})
end

---------------------------------------------------------------------------
-- Attention: ember's fused op when the engine has it, else composed here.

local function composed_attention(q, k, v, dropout_p)
  local T, S = q.shape[q.ndim - 1], k.shape[k.ndim - 1]
  local scores = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(q.shape[q.ndim]))
  -- the keys after each query's position are masked
  local future = ember.arange(T, {device = q.device}):view(T, 1):lt(ember.arange(S, {device = q.device}):view(1, S))
  local p = scores:masked_fill(future, -math.huge):softmax(-1)
  if dropout_p > 0 then p = F.dropout(p, dropout_p, true) end
  return p:matmul(v)
end

local fused = F.scaled_dot_product_attention or ember.scaled_dot_product_attention
-- F's is the engine's fused op when the engine has one, else a composed stand-in
local ATTENTION = ember.scaled_dot_product_attention and "fused" or "composed"
local function attention(q, k, v, dropout_p)
  if fused then return fused(q, k, v, {is_causal = true, dropout_p = dropout_p}) end
  return composed_attention(q, k, v, dropout_p)
end

---------------------------------------------------------------------------
-- The model

local SelfAttention = nn.Module:extend("CausalSelfAttention")
function SelfAttention:init(d, heads, dropout)
  self.heads, self.dropout = heads, dropout
  self.in_proj_weight = nn.Parameter(ember.empty(3 * d, d))
  self.in_proj_bias = nn.Parameter(ember.zeros(3 * d))
  self.out_proj = nn.Linear(d, d)
end
function SelfAttention:forward(x)
  local B, T, C = x.shape[1], x.shape[2], x.shape[3]
  local H = self.heads
  local q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias):split(C, 3)
  local function heads(t) return t:view(B, T, H, C // H):transpose(2, 3) end
  local y = attention(heads(q), heads(k), heads(v), self.training and self.dropout or 0)
  return self.out_proj(y:transpose(2, 3):reshape(B, T, C))
end

local Block = nn.Module:extend("Block")
function Block:init(d, heads, dropout)
  self.norm1 = nn.LayerNorm(d)
  self.self_attn = SelfAttention(d, heads, dropout)
  self.norm2 = nn.LayerNorm(d)
  self.linear1 = nn.Linear(d, 4 * d)
  self.linear2 = nn.Linear(4 * d, d)
  self.activation = nn.GELU()
  self.dropout = nn.Dropout(dropout)
end
function Block:forward(x)
  x = x + self.dropout(self.self_attn(self.norm1(x)))
  return x + self.dropout(self.linear2(self.activation(self.linear1(self.norm2(x)))))
end

local GPT = nn.Module:extend("GPT")
function GPT:init(cfg)
  self.context = cfg.context
  self.tok_emb = nn.Embedding(cfg.vocab, cfg.d_model)
  self.pos_emb = nn.Embedding(cfg.context, cfg.d_model)
  self.drop = nn.Dropout(cfg.dropout)
  self.blocks = nn.ModuleList()
  for _ = 1, cfg.layers do self.blocks:append(Block(cfg.d_model, cfg.heads, cfg.dropout)) end
  self.norm = nn.LayerNorm(cfg.d_model)
  if cfg.untied then self.head = nn.Linear(cfg.d_model, cfg.vocab, {bias = false}) end
  local std = 0.02
  ember.no_grad(function()
    for name, p in self:named_parameters() do
      if name:match("bias$") then p:zero_()
      elseif name:match("^norm") or name:match("%.norm%d%.weight$") then p:fill_(1)
      elseif name:match("out_proj%.weight$") or name:match("linear2%.weight$") then
        nn.init.normal_(p, 0, std / math.sqrt(2 * cfg.layers))
      else nn.init.normal_(p, 0, std) end
    end
  end)
end
-- idx [B, T] (1-based characters) -> logits [B, T, vocab]
function GPT:forward(idx)
  local T = idx.shape[2]
  local pos = ember.arange(1, T + 1, {device = idx.device})
  local x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
  for i = 1, #self.blocks do x = self.blocks[i](x) end
  x = self.norm(x)
  if self.head then return self.head(x) end
  return F.linear(x, self.tok_emb.weight)
end

local function loss_of(model, x, y)
  local logits = model(x)
  local V = logits.shape[3]
  return F.cross_entropy(logits:reshape(-1, V), y:reshape(-1))
end

local function config_of(o, vocab)
  return {vocab = vocab, layers = o.layers, heads = o.heads, d_model = o.d_model, context = o.context,
          dropout = o.dropout, untied = o.untied}
end

---------------------------------------------------------------------------
-- Sampling: ember.multinomial when the engine has it, else the inverse of
-- the cumulative distribution at a uniform draw.

local function draw(probs)
  if ember.multinomial then return ember.multinomial(probs, 1) end
  local u = ember.rand(probs.shape[1], 1, {device = probs.device, dtype = probs.dtype})
  local below = probs:cumsum(-1):lt(u):sum(-1, true)
  return (below + 1):clamp(nil, probs.shape[2]):long()
end

local function sample(o)
  local f = io.open(o.out, "rb")
  if not f then fail("--sample: no checkpoint ", o.out, " (train first, or name it with --out)") end
  f:close()
  local _, meta = ember.load(o.out)
  local function meta_int(k)
    local v = math.tointeger(tonumber(meta["extra." .. k]))
    if not v then fail(o.out, ": not a char_gpt checkpoint (no ", k, ")") end
    return v
  end
  local bytes = vocab_parse(meta["extra.vocab"])
  if #bytes == 0 then fail(o.out, ": not a char_gpt checkpoint (no vocabulary)") end
  local cfg = {vocab = #bytes, layers = meta_int("layers"), heads = meta_int("heads"),
               d_model = meta_int("d_model"), context = meta_int("context"), dropout = 0,
               untied = meta["extra.untied"] == "true"}
  local model = GPT(cfg)
  ember.load_checkpoint(o.out, {model = model})
  ember.manual_seed(o.seed)   -- the sample depends on --seed only, not on the training's generator
  model:to(o.device)
  model:eval()
  local index = {}
  for i, b in ipairs(bytes) do index[b] = i end
  local ids = {}
  for i = 1, #o.prompt do
    local id = index[o.prompt:byte(i)]
    if not id then
      -- a prompt character the text never had: start from the first character instead
      if #o.prompt == 1 then id = 1 else fail("--prompt: '", o.prompt:sub(i, i), "' is not in the vocabulary") end
    end
    ids[#ids + 1] = id
  end
  local _ <close> = ember.no_grad()
  local idx = ember.tensor({ids}, {dtype = "int64"}):to(o.device)
  local out = {}
  for _ = 1, o.sample do
    local ctx = idx
    if ctx.shape[2] > cfg.context then ctx = ctx:narrow(2, ctx.shape[2] - cfg.context + 1, cfg.context) end
    local logits = model(ctx):select(2, ctx.shape[2]) / o.temperature   -- [1, vocab]
    if o.top_k > 0 and o.top_k < cfg.vocab then
      local kth = logits:topk(o.top_k, -1):narrow(2, o.top_k, 1)
      logits = logits:masked_fill(logits:lt(kth), -math.huge)
    end
    local next_id = draw(logits:softmax(-1))
    idx = ember.cat({idx, next_id}, 2)
    out[#out + 1] = string.char(bytes[next_id:item()])
  end
  -- a prompt given is printed before its continuation; the default newline is not
  io.write(o.given.prompt and o.prompt or "", table.concat(out), "\n")
end

---------------------------------------------------------------------------
-- Training

-- the learning rate of step s (1-based): linear warm-up, then cosine to min_lr
local function lr_at(o, s)
  if s <= o.warmup then return o.lr * s / o.warmup end
  if s >= o.steps then return o.min_lr end
  local t = (s - o.warmup) / (o.steps - o.warmup)
  return o.min_lr + 0.5 * (1 + math.cos(math.pi * t)) * (o.lr - o.min_lr)
end

local function make_optimizer(model, o)
  local decay, no_decay = {}, {}
  for _, p in ipairs(model:parameters()) do
    if p:dim() >= 2 then decay[#decay + 1] = p else no_decay[#no_decay + 1] = p end
  end
  return optim.AdamW({{params = decay, weight_decay = o.weight_decay}, {params = no_decay, weight_decay = 0}},
                     {lr = o.lr, betas = {0.9, 0.99}})
end

local function evaluate(model, val, val_starts, o)
  local _ <close> = ember.no_grad()
  model:eval()
  local sum, n = 0, val_starts:size(1)
  for first = 1, n, o.batch do
    local len = math.min(o.batch, n - first + 1)
    local x, y = windows(val, val_starts:narrow(1, first, len), o.context)
    sum = sum + loss_of(model, x:to(o.device), y:to(o.device)):item() * len
  end
  model:train()
  return sum / n
end

local function median(t)
  table.sort(t)
  local n = #t
  if n % 2 == 1 then return t[(n + 1) // 2] end
  return (t[n // 2] + t[n // 2 + 1]) / 2
end

local function train(o)
  local dist, world, rank = ember.distributed, 1, 0
  if o.distributed then
    dist.init_process_group()
    world, rank = dist.get_world_size(), dist.get_rank()
    if o.batch % world ~= 0 then fail("--batch ", o.batch, " does not split evenly over ", world, " ranks") end
  end
  local local_batch = o.batch // world
  local print = rank == 0 and print or function() end
  ember.manual_seed(o.seed)
  local text = read_text(o.text)
  local bytes = alphabet_of(text)
  local data = encode(text, bytes)
  local n = data:size(1)
  local n_train = math.floor(n * 0.9)
  local train_data, val_data = data:narrow(1, 1, n_train), data:narrow(1, n_train + 1, n - n_train)
  if val_data:size(1) < o.context + 2 then
    fail(o.text, ": ", n, " characters are too few for --context ", o.context,
         " (the last 10% is the validation text and must hold a window)")
  end
  local val_starts = fixed_starts(val_data:size(1), o.eval_batches * o.batch, o.context)

  local cfg = config_of(o, #bytes)
  local model = GPT(cfg)
  model:to(o.device)
  -- the wrapper trains; the model itself is evaluated and saved
  local net = o.distributed and nn.parallel.DistributedDataParallel(model) or model
  local opt = make_optimizer(model, o)
  local function save(step)
    ember.save_checkpoint(o.out, {model = model, optimizer = opt, step = step,
      extra = {vocab = vocab_text(bytes), layers = cfg.layers, heads = cfg.heads, d_model = cfg.d_model,
               context = cfg.context, untied = cfg.untied}})
  end

  local first = 1
  if o.resume and not o.bench then
    local f = io.open(o.out, "rb")
    if not f then fail("--resume: no checkpoint ", o.out) end
    f:close()
    local ok, info = pcall(ember.load_checkpoint, o.out, {model = model, optimizer = opt})
    if not ok then fail("--resume: ", (tostring(info):gsub("^[^\n]-:%d+: ", ""))) end
    if info.extra.vocab ~= vocab_text(bytes) then fail("--resume: ", o.out, " was trained on another alphabet") end
    first = (info.step or 0) + 1
    print(string.format("resumed from %s after step %d", o.out, first - 1))
  end
  -- each rank its own windows: rank 0's stream, keyed by seed + rank (after a resume too)
  if rank > 0 then ember.set_rng_state(o.seed + rank, ember.get_rng_state().offset) end

  -- one optimizer step (s: 1-based) on a random batch; returns the loss
  local params = model:parameters()
  local device_type = o.device:match("^%a+")
  -- float16 needs its loss scaled (its range is narrow); bfloat16 does not
  local scaler = o.amp == "float16" and ember.amp.GradScaler(device_type) or nil
  -- the forward and the loss, under autocast with --amp
  local function forward_loss(x, y)
    if not o.amp then return loss_of(net, x, y) end
    local _ <close> = ember.autocast(device_type, {dtype = o.amp})
    return loss_of(net, x, y)
  end
  local graphed    -- --cuda-graph: the step of scripts/cuda_graph_step.lua, replayed on static x, y
  if o.cuda_graph then
    local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
    graphed = dofile(here .. "cuda_graph_step.lua").new(function(x, y)
      opt:zero_grad()
      local loss = forward_loss(x, y)
      loss:backward()
      if o.clip > 0 then optim.clip_grad_norm_(params, o.clip) end   -- fused: no host read
      opt:step()
      return loss
    end, {warmup = 3})
    -- after --resume (which loads the groups): the step count and the learning rate on the device
    for _, g in ipairs(opt.param_groups) do
      g.capturable = true
      g.lr = ember.full({}, lr_at(o, first), {device = o.device})
    end
  end
  local function train_step(s)
    if graphed then
      local x, y = random_batch(train_data, local_batch, o.context)
      for _, g in ipairs(opt.param_groups) do g.lr:fill_(lr_at(o, s)) end   -- queued before the replay
      return graphed:run(x:to(o.device), y:to(o.device))
    end
    for _, g in ipairs(opt.param_groups) do g.lr = lr_at(o, s) end
    local x, y = random_batch(train_data, local_batch, o.context)
    local loss = forward_loss(x:to(o.device), y:to(o.device))
    opt:zero_grad()
    if scaler then
      scaler:scale(loss):backward()
      scaler:unscale_(opt)   -- clipping sees the true gradients
    else
      loss:backward()
    end
    if o.clip > 0 then optim.clip_grad_norm_(params, o.clip) end
    if scaler then
      scaler:step(opt)
      scaler:update()
    else
      opt:step()
    end
    return loss
  end

  if o.bench then
    local times = {}
    for s = 1, o.steps do
      local t0 = ember.wall_time()
      train_step(s):item()   -- waits for the step's work (the device's too)
      if s > math.min(3, o.steps - 1) then times[#times + 1] = ember.wall_time() - t0 end
    end
    print(string.format("gpt_step_ms %.3f ms", median(times) * 1e3))
    if rank == 0 then print(string.format("gpt_val_loss %.4f", evaluate(model, val_data, val_starts, o))) end
    if o.distributed then dist.destroy_process_group() end
    return
  end

  if first == 1 then
    print(string.format("%s: %d characters (%d train, %d validation), vocabulary %d; %d parameters; "
                        .. "attention %s; %s", o.text, n, n_train, n - n_train, #bytes, model:num_parameters(),
                        ATTENTION, o.device))
  end
  local tty = ember.isatty(1)
  local live
  if o.plot and rank == 0 then
    live = ember.plot.live{title = "char-GPT", xlabel = "step", ylabel = "cross-entropy loss",
                           inline = false, inplace = false}
  end
  -- a resumed run marks the steps from where it resumes as stale (purge_step)
  local tb = o.tensorboard and rank == 0
    and ember.utils.tensorboard.SummaryWriter(o.tensorboard, {purge_step = first > 1 and first or nil})
  local tokens_per_step = o.batch * o.context   -- the whole job's
  local loss_sum = ember.zeros({}, {device = o.device, dtype = "float64"})
  local window_steps, t0 = 0, ember.wall_time()
  for s = first, o.steps do
    local loss = train_step(s)
    -- summed on the device: reading the loss every step would wait for it
    loss_sum = loss_sum + loss:detach()
    window_steps = window_steps + 1
    if s % o.log_every == 0 or s == o.steps then
      if o.distributed then dist.all_reduce(loss_sum, {op = "avg"}) end   -- the mean over every rank's windows
      local mean = loss_sum:item() / window_steps
      local dt = (ember.wall_time() - t0) / window_steps
      print(string.format("step %5d/%d  loss %.4f  lr %.2e  %.1f ms/step  %.0f tokens/s", s, o.steps, mean,
                          lr_at(o, s), dt * 1e3, tokens_per_step / dt))
      if live then live:add("train", s, mean) end
      if tb then
        tb:add_scalar("train/loss", mean, s)
        tb:add_scalar("lr", lr_at(o, s), s)
      end
      loss_sum = ember.zeros({}, {device = o.device, dtype = "float64"})
      window_steps, t0 = 0, ember.wall_time()
    end
    local t_pause = ember.wall_time()   -- validation and saving are left out of ms/step
    if rank == 0 and (s % o.eval_every == 0 or s == o.steps) then
      local v = evaluate(model, val_data, val_starts, o)
      print(string.format("step %5d/%d  validation loss %.4f", s, o.steps, v))
      if tb then
        tb:add_scalar("val/loss", v, s)
        tb:flush()
      end
      if live then
        live:add("validation", s, v)
        if tty then live:draw() end
      end
    end
    if s % o.save_every == 0 or s == o.steps or s == o.stop_after then save(s) end
    t0 = t0 + (ember.wall_time() - t_pause)
    if o.stop_after and s >= o.stop_after then break end
  end
  if tb then tb:close() end
  if live and live:points("train") then
    live:save(o.plot_file)
    print("loss curves written to " .. o.plot_file)
  end
  if o.distributed then dist.destroy_process_group() end
end

local o = parse_args(arg or {...})
if o.device ~= "cpu" then
  local ok, why = ember.cuda.is_available()
  if not ok then fail("--device ", o.device, ": ", why or "CUDA is not available") end
end
if o.sample then sample(o) else train(o) end
