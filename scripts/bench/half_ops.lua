-- half_ops.lua — bfloat16 elementwise ops and sums on the CPU, [4096, 512], best of 20; one
-- "name ms" line each. PyTorch's figures: /usr/bin/python3 scripts/bench/half_ops_torch.py
--   OPENBLAS_CORETYPE=Haswell build/ember scripts/bench/half_ops.lua
ember.manual_seed(1)
local x = ember.randn(4096, 512):to("bfloat16")
local y = ember.randn(4096, 512):to("bfloat16")
local function best(f)
  local b = math.huge
  for _ = 1, 20 do
    local t0 = ember.wall_time()
    f()
    b = math.min(b, ember.wall_time() - t0)
  end
  return b * 1e3
end
local rows = {
  {"mul", function() return x * y end}, {"add", function() return x + y end},
  {"relu", function() return x:relu() end}, {"neg", function() return -x end},
  {"tanh", function() return x:tanh() end}, {"exp", function() return x:exp() end},
  {"sum_last_dim", function() return x:sum(2) end}, {"sum_first_dim", function() return x:sum(1) end},
}
for _, r in ipairs(rows) do print(string.format("bf16_%s_ms %.3f", r[1], best(r[2]))) end
