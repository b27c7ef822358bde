-- finetune_lora.lua — fine-tunes a Hugging Face causal language model (GPT-2, Llama, Mistral,
-- Qwen2 folders that ember.hf.load reads) on a text file with LoRA adapters (ember.lora),
-- and saves the adapter in PEFT's format, which PEFT's PeftModel.from_pretrained reads.
--
--   ember scripts/finetune_lora.lua MODEL_DIR TEXT_FILE --steps 200 --out adapter
--
-- The text is tokenized once by the folder's tokenizer (ember.hf.tokenizer); each micro-batch
-- is --batch random windows of --context + 1 tokens; --accum micro-batches make one AdamW step
-- (gradient accumulation: the loss of each divided by --accum). The learning rate warms up
-- linearly over --warmup steps then follows a cosine to 0 (transformers'
-- get_cosine_schedule_with_warmup, through ember.optim.lr_scheduler.LambdaLR); gradients are
-- clipped to norm --clip. A fixed held-out batch (drawn with its own seed from the text) is
-- scored before training and after, and printed: "eval loss before X after Y".
local ember = require "ember"
local lora = ember.lora
local F = ember.nn.functional

local NAME = "finetune_lora"
local USAGE = [[
usage: ember scripts/finetune_lora.lua MODEL_DIR TEXT_FILE [options]
  MODEL_DIR          a Hugging Face folder: config.json, *.safetensors, tokenizer.json
  TEXT_FILE          the text to train on
options:
  --steps N          optimizer steps (default 100)
  --lr X             peak learning rate of AdamW (default 2e-4)
  --warmup N         linear warm-up steps, then a cosine to 0 (default: a tenth of --steps)
  --r N              LoRA rank (default 8)
  --alpha X          lora_alpha: the adapters are scaled by alpha / r (default 16)
  --dropout X        lora_dropout (default 0.05)
  --targets A,B      target_modules, comma-separated (default: PEFT's for the model type)
  --batch N          sequences per micro-batch (default 4)
  --context N        tokens per sequence (default 128, or the model's positions if fewer)
  --accum K          micro-batches per optimizer step (default 1)
  --clip X           gradient-norm clipping, 0 for none (default 1.0)
  --weight-decay X   AdamW's (default 0.0)
  --bf16             the forward and the loss under ember.autocast in bfloat16
  --seed N           (default 1)
  --device D         cpu or cuda (default cpu)
  --tokenizer DIR    the folder of tokenizer.json when MODEL_DIR has none
  --out DIR          where the adapter is saved (default finetune_lora_adapter)
  --save-every N     also save every N steps (default: at the end only)
  --log-every N      print the loss every N steps (default 1)
  --tensorboard DIR  TensorBoard event files: train/loss, lr, eval/loss
  --sample N         after training, print N tokens generated from --prompt
  --prompt TEXT      the text to continue (default: the text's first line)
  --temperature T    sampling temperature (default 0.8; 0 is greedy)]]

local options = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "script_options.lua")
local function fail(...) options.fail(NAME, ...) end

-- kind: "int" (positive unless ZERO_OK), "num", "str", "flag"
local OPTIONS = {
  steps = "int", lr = "num", warmup = "int", r = "int", alpha = "num", dropout = "num", targets = "str",
  batch = "int", context = "int", accum = "int", clip = "num", weight_decay = "num", bf16 = "flag", seed = "int",
  device = "str", tokenizer = "str", out = "str", save_every = "int", log_every = "int", tensorboard = "str",
  sample = "int", prompt = "str", temperature = "num",
}
local ZERO_OK = {warmup = true, seed = true, save_every = true}

local function parse_args(argv)
  local o, pos = options.parse(argv, {name = NAME, usage = USAGE, kinds = OPTIONS, zero_ok = ZERO_OK, defaults = {
    steps = 100, lr = 2e-4, r = 8, alpha = 16, dropout = 0.05, batch = 4, accum = 1, clip = 1.0, weight_decay = 0.0,
    bf16 = false, seed = 1, device = "cpu", out = NAME .. "_adapter", save_every = 0, log_every = 1,
    temperature = 0.8}})
  if #pos ~= 2 then fail("a MODEL_DIR and a TEXT_FILE are needed (got ", #pos, " arguments)\n", USAGE) end
  o.model_dir, o.text = pos[1], pos[2]
  o.warmup = o.warmup or o.steps // 10
  if o.lr <= 0 then fail("--lr must be positive, got ", o.lr) end
  if o.dropout < 0 or o.dropout >= 1 then fail("--dropout must be in [0, 1), got ", o.dropout) end
  if o.temperature < 0 then fail("--temperature must not be negative, got ", o.temperature) end
  if o.targets then
    local list = {}
    for t in o.targets:gmatch("[^,]+") do list[#list + 1] = t end
    o.targets = list
  end
  return o
end

local function read_text(path) return options.read_text(NAME, path) end

-- the model's number of positions (GPT-2's n_positions, the Llama family's max_position_embeddings)
local function max_positions(config)
  return config.n_positions or config.max_position_embeddings or math.huge
end

-- rows [B, T + 1] of ids from random offsets
local function windows(ids, B, T)
  local n = ids:numel()
  local starts = ember.randint(1, n - T + 1, {B})
  local rows = {}
  for b = 1, B do rows[b] = ids:narrow(1, starts[b]:item(), T + 1) end
  return ember.stack(rows)
end

local function main(argv)
  local o = parse_args(argv)
  local ok, model = pcall(ember.hf.load, o.model_dir, {device = o.device})
  if not ok then fail(tostring(model):gsub("^[^\n]-:%d+: ", "", 1)) end
  if type(model.generate) ~= "function" then fail(o.model_dir, ": not a causal language model (", model.config.model_type, ")") end
  local tok
  ok, tok = pcall(ember.hf.tokenizer, o.tokenizer or o.model_dir)
  if not ok then fail(tostring(tok):gsub("^[^\n]-:%d+: ", "", 1), " (--tokenizer names another folder)") end
  local vocab = model.config.vocab_size
  if tok:get_vocab_size() > vocab then
    fail("the tokenizer has ", tok:get_vocab_size(), " tokens, the model's vocabulary ", vocab)
  end
  local limit = max_positions(model.config)
  o.context = o.context or math.min(128, limit)
  if o.context > limit then fail("--context ", o.context, " is more than the model's ", limit, " positions") end

  local text = read_text(o.text)
  local ids = tok:encode(text, false)
  if ids:numel() < 2 * (o.context + 1) then
    fail("the text has ", ids:numel(), " tokens, too few for --context ", o.context)
  end
  ids = ids:to(o.device)

  -- the held-out batch: drawn with a seed of its own, so that it does not move the training draws
  ember.manual_seed(o.seed + 1000)
  local eval_rows = windows(ids, math.max(o.batch, 4), o.context)
  ember.manual_seed(o.seed)

  local peft
  ok, peft = pcall(lora.wrap, model, {r = o.r, lora_alpha = o.alpha, lora_dropout = o.dropout,
                                      target_modules = o.targets})
  if not ok then fail(tostring(peft):gsub("^[^\n]-:%d+: ", "", 1)) end
  peft:print_trainable_parameters()
  print(string.format("%d tokens of text, %d per step (%d x %d x %d)", ids:numel(), o.batch * o.context * o.accum,
                      o.accum, o.batch, o.context))

  local device_type = o.device:match("^%a+")
  local function loss_of(rows)
    local x, y = rows:narrow(2, 1, o.context), rows:narrow(2, 2, o.context)
    local function run()
      local logits = peft(x)
      return F.cross_entropy(logits:reshape(-1, logits.shape[3]):float(), y:reshape(-1))
    end
    if not o.bf16 then return run() end
    local _ <close> = ember.autocast(device_type, {dtype = "bfloat16"})
    return run()
  end

  local function eval_loss()
    peft:eval()
    local l = ember.no_grad(function() return loss_of(eval_rows):item() end)
    peft:train()
    return l
  end
  local before = eval_loss()
  print(string.format("eval loss before training %.4f", before))

  local opt = ember.optim.AdamW(peft:parameters(), {lr = o.lr, weight_decay = o.weight_decay})
  local warmup, total = o.warmup, o.steps
  local sched = ember.optim.lr_scheduler.LambdaLR(opt, {lr_lambda = function(step)
    if step < warmup then return step / math.max(1, warmup) end
    local progress = (step - warmup) / math.max(1, total - warmup)
    return math.max(0, 0.5 * (1 + math.cos(math.pi * progress)))
  end})
  local trainable = {}
  for _, p in ipairs(peft:parameters()) do if p.requires_grad then trainable[#trainable + 1] = p end end
  local tb = o.tensorboard and ember.utils.tensorboard.SummaryWriter(o.tensorboard)

  peft:train()
  local t0 = ember.wall_time()
  for s = 1, o.steps do
    local lr = sched:get_last_lr()[1]
    local loss_sum = 0
    for _ = 1, o.accum do
      local loss = loss_of(windows(ids, o.batch, o.context))
      ;(loss / o.accum):backward()
      loss_sum = loss_sum + loss:item()
    end
    if o.clip > 0 then ember.nn.utils.clip_grad_norm_(trainable, o.clip) end
    opt:step()
    opt:zero_grad()
    sched:step()
    local mean = loss_sum / o.accum
    if s % o.log_every == 0 or s == o.steps then
      local dt = (ember.wall_time() - t0) / s
      print(string.format("step %4d/%d  loss %.4f  lr %.2e  %.0f ms/step", s, o.steps, mean, lr, dt * 1e3))
    end
    if tb then
      tb:add_scalar("train/loss", mean, s)
      tb:add_scalar("lr", lr, s)
    end
    if o.save_every > 0 and s % o.save_every == 0 and s < o.steps then lora.save(peft, o.out) end
  end
  local after = eval_loss()
  print(string.format("eval loss before %.4f after %.4f", before, after))
  if tb then
    tb:add_scalar("eval/loss", before, 0)
    tb:add_scalar("eval/loss", after, o.steps)
    tb:close()
  end
  lora.save(peft, o.out)
  print("adapter saved to " .. o.out)

  if o.sample then
    peft:eval()
    local prompt = o.prompt or text:match("^[^\n]*")
    local p = tok:encode(prompt, false)
    if p:numel() == 0 then fail("--prompt has no tokens") end
    if p:numel() + o.sample > limit then p = p:narrow(1, p:numel() - (limit - o.sample) + 1, limit - o.sample) end
    local gen = peft:generate(p:view(1, -1):to(o.device), {max_new_tokens = o.sample, temperature = o.temperature})
    print("--- sample ---")
    print(tok:decode(gen[1]:cpu()))
  end
end

main(arg)
