-- cuda_graph_step.lua — a training step replayed from a CUDA graph, for the
-- training scripts' --cuda-graph:
--   local graphed = dofile(here .. "cuda_graph_step.lua").new(step, {warmup = 3})
--   local loss = graphed:run(x, y)     -- full batches: same shapes every time
--   graphed:recapture()                -- after a learning-rate change
-- step(x, y) runs forward, backward and the optimizer step and returns the
-- loss; it must start with opt:zero_grad() (gradients set to nil), so that
-- the captured backward makes fresh gradients rather than adding to old
-- ones. The first `warmup` calls run eagerly (they create the optimizer's
-- state and the libraries' handles, which a capture must not); the next one
-- copies x and y into static tensors, captures step on them and replays it;
-- later calls copy their batch in and replay. The returned loss is the
-- static one: the next run overwrites it, so use it before then.
-- The learning rate is baked into the capture: recapture after changing it,
-- or give capturable Adam/AdamW a tensor lr and fill_ it before each run
-- (scripts/char_gpt.lua --cuda-graph does).
local ember = require "ember"

local M = {}
M.__index = M

function M.new(step, opts)
  local ok, why = ember.cuda.is_available()
  if not ok then error("--cuda-graph needs a CUDA device: " .. tostring(why), 2) end
  return setmetatable({step = step, warmup = (opts and opts.warmup) or 3, done = 0}, M)
end

function M:run(x, y)
  if self.done < self.warmup then
    self.done = self.done + 1
    return self.step(x, y)
  end
  if not self.captured then
    self.x, self.y = x:clone(), y:clone()
    self.g = self.g or ember.cuda.CUDAGraph()
    -- the pool outlives recaptures, so each new capture reuses its memory
    ember.cuda.graph(self.g, function() self.loss = self.step(self.x, self.y) end, {pool = self.pool})
    self.pool = self.pool or self.g:pool()
    self.captured = true
  else
    self.x:copy_(x)
    self.y:copy_(y)
  end
  self.g:replay()
  return self.loss
end

function M:recapture()
  if self.captured then
    self.g:reset()
    self.captured = false
  end
end

return M
