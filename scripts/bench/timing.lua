-- scripts/bench/timing.lua — what the Lua benchmark scripts share, loaded
-- with dofile from the script's own folder (see ops.lua):
--   best(repeats, fn)  the lowest wall time of fn over the repeats, in
--                      seconds (the run least disturbed by the machine)
--   transformer_step() a function running one training step of a
--                      TransformerEncoderLayer (d 128, 4 heads, batch 16 x 64)
--                      and a 65-way head with AdamW (profiler.lua, debug_tools.lua;
--                      debug_tools_torch.py is PyTorch's)
local ember = require "ember"
local wall = ember.wall_time   -- monotonic (os.clock is CPU time)

local function best(repeats, fn)
  local b = math.huge
  for _ = 1, repeats do
    local t0 = wall()
    fn()
    local dt = wall() - t0
    if dt < b then b = dt end
  end
  return b
end

local function transformer_step()
  local nn, F = ember.nn, ember.nn.functional
  ember.manual_seed(0)
  local d, T, B = 128, 64, 16
  local layer = nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, {batch_first = true})
  local head = nn.Linear(d, 65)
  local params = layer:parameters()
  for _, p in ipairs(head:parameters()) do params[#params + 1] = p end
  local opt = ember.optim.AdamW(params, 1e-3)
  local x = ember.randn(B, T, d)
  local y = ember.randint(1, 66, {B * T})
  return function()
    opt:zero_grad()
    local logits = head(layer(x))
    local loss = F.cross_entropy(logits:reshape(B * T, 65), y)
    loss:backward()
    opt:step()
  end
end

return {best = best, transformer_step = transformer_step}
