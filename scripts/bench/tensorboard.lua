-- tensorboard.lua — what SummaryWriter's calls cost: add_scalar (10,000 calls, per call), add_histogram
-- of 1M float32 values (default bins) and add_image of a random 3x512x512 float image, best of 5;
-- the log folder is a temporary one, removed at the end.
--   build/ember scripts/bench/tensorboard.lua
local dir = os.tmpname()
os.remove(dir)
local w = ember.utils.tensorboard.SummaryWriter(dir)
local function best(n, f)
  local b = math.huge
  for _ = 1, 5 do
    local t0 = ember.wall_time()
    for i = 1, n do f(i) end
    b = math.min(b, (ember.wall_time() - t0) / n)
  end
  return b * 1e3
end
ember.manual_seed(1)
local values, img = ember.randn(1000000), ember.rand(3, 512, 512)
print(string.format("tb_add_scalar_us %.2f", best(10000, function(i) w:add_scalar("loss", 1 / i, i, 0) end) * 1e3))
print(string.format("tb_add_histogram_1m_ms %.1f", best(1, function(i) w:add_histogram("w", values, i) end)))
print(string.format("tb_add_image_3x512x512_ms %.1f", best(1, function(i) w:add_image("img", img, i) end)))
w:close()
os.execute("rm -rf '" .. dir .. "'")
