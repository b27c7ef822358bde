-- scripts/bench/checkpoint_memory.lua — what activation checkpointing saves and costs:
-- one training step (forward, backward, AdamW step) of a stack of
-- nn.TransformerEncoderLayer, without checkpointing and with each layer checkpointed
-- (ember.utils.checkpoint), each in a process of its own, printing each one's peak memory
-- and its step time (the best of the timed steps, after one warm-up step).
--
--   build/ember scripts/bench/checkpoint_memory.lua [--device cpu|cuda] [--layers 12]
--       [--batch 8] [--seq 128] [--d-model 256] [--heads 4] [--ff 1024] [--steps 3]
--
-- The peak is that of the timed steps, after a warm-up step that allocated AdamW's
-- state. The CPU backend keeps no allocation statistics, so on the CPU it is the
-- process's VmHWM (peak resident set, /proc/self/status) reset to VmRSS after the warm-up
-- (/proc/self/clear_refs); on CUDA ember.cuda.max_memory_allocated (the caching
-- allocator's count, as torch.cuda.max_memory_allocated) from a reset after the warm-up.
-- before_step_mb is VmRSS or memory_allocated at that point: parameters, gradients and
-- AdamW's state, and on the CPU also the interpreter and the freed blocks the CPU
-- allocator keeps cached for reuse (engine/cpu/memory.c), which the warm-up's
-- activations filled: on the CPU only the peaks compare.
-- --mode plain|checkpoint runs one side in this process (what the parent starts).
local ember = require "ember"
local nn = ember.nn
local optim = ember.optim
local checkpoint = ember.utils.checkpoint.checkpoint

local opts = {device = "cpu", layers = 12, batch = 8, seq = 128, ["d-model"] = 256, heads = 4, ff = 1024,
              steps = 3, mode = nil}
local i = 1
while i <= #arg do
  local k = arg[i]:match("^%-%-(.+)$")
  if not k or opts[k] == nil and k ~= "mode" then error("checkpoint_memory: unknown argument " .. arg[i]) end
  opts[k] = tonumber(arg[i + 1]) or arg[i + 1]
  i = i + 2
end

local function status_kb(field)
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match(field .. ":%s*(%d+) kB"))
end

local function side(mode)
  local cuda = opts.device ~= "cpu"
  ember.manual_seed(0)
  local layers = {}
  for l = 1, opts.layers do
    layers[l] = nn.TransformerEncoderLayer(opts["d-model"], opts.heads,
                                           {dim_feedforward = opts.ff, dropout = 0.1, batch_first = true})
  end
  local model = nn.Sequential(layers):to(opts.device)
  local opt = optim.AdamW(model:parameters(), 1e-4)
  local x = ember.randn(opts.batch, opts.seq, opts["d-model"], {device = opts.device})
  local target = ember.randn(opts.batch, opts.seq, opts["d-model"], {device = opts.device})
  local function step()
    opt:zero_grad()
    local h = x
    for l = 1, opts.layers do
      if mode == "checkpoint" then h = checkpoint(layers[l], h) else h = layers[l](h) end
    end
    local loss = (h - target):pow(2):mean()
    loss:backward()
    opt:step()
    return loss:item()
  end
  -- the warm-up step allocates AdamW's state; the peak is then that of the timed steps
  local loss = step()
  local base
  if cuda then
    ember.cuda.synchronize()
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated() / 2^20
  else
    collectgarbage()
    local f = assert(io.open("/proc/self/clear_refs", "w"))   -- 5: VmHWM starts again from VmRSS
    f:write("5")
    f:close()
    base = status_kb("VmRSS") / 1024
  end
  local best = math.huge
  for _ = 1, opts.steps do
    local t0 = ember.wall_time()
    step()
    if cuda then ember.cuda.synchronize() end
    best = math.min(best, ember.wall_time() - t0)
  end
  local peak = cuda and ember.cuda.max_memory_allocated() / 2^20 or status_kb("VmHWM") / 1024
  print(string.format("%-10s peak_mb=%.1f before_step_mb=%.1f step_ms=%.1f loss=%.6f", mode, peak, base,
                      best * 1000, loss))
end

if opts.mode then
  side(opts.mode)
  return
end

print(string.format("checkpoint_memory: %d x TransformerEncoderLayer(d_model %d, %d heads, ff %d, dropout 0.1), "
                    .. "batch %d x seq %d, AdamW, device %s; peak memory %s", opts.layers, opts["d-model"],
                    opts.heads, opts.ff, opts.batch, opts.seq, opts.device,
                    opts.device == "cpu" and "VmHWM" or "max_memory_allocated"))
local self_args = {}
for k, v in pairs(opts) do
  if k ~= "mode" then self_args[#self_args + 1] = "--" .. k .. " " .. tostring(v) end
end
local exe = arg[-1] or "build/ember"
local results = {}
for _, mode in ipairs({"plain", "checkpoint"}) do
  local cmd = string.format("%s %s %s --mode %s", exe, arg[0], table.concat(self_args, " "), mode)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  io.write(out)
  results[mode] = {peak = tonumber(out:match(" peak_mb=([%d.]+)")), ms = tonumber(out:match("step_ms=([%d.]+)")),
                   loss = out:match("loss=([%d.%-e]+)")}
end
local a, b = results.plain, results.checkpoint
if a.peak and b.peak then
  print(string.format("checkpointed / plain: peak %.2f, step time %.2f; same first loss: %s", b.peak / a.peak,
                      b.ms / a.ms, tostring(a.loss == b.loss)))
end
