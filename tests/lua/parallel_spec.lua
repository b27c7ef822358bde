-- The engine support of DistributedDataParallel (post-accumulate hooks, callbacks queued on a
-- backward pass), and DistributedDataParallel in a world of one (no mpirun): argument errors,
-- gradients equal to the unwrapped model's, no_sync. The 2-rank checks are tests/shell/ddp_test.sh.
local ember = require "ember"
local nn = ember.nn
local dist = ember.distributed

describe("register_post_accumulate_grad_hook and autograd.queue_callback", function()
  it("runs after .grad is updated, once per leaf and pass; callbacks after every leaf", function()
    local w = ember.tensor({1.0, 2.0}):requires_grad_()
    local b = ember.tensor({3.0}):requires_grad_()
    local log = {}
    w:register_post_accumulate_grad_hook(function(p)
      log[#log + 1] = "w " .. table.concat(p.grad:tolist(), ",")
      ember.autograd.queue_callback(function() log[#log + 1] = "end, b.grad " .. b.grad:item() end)
    end)
    b:register_post_accumulate_grad_hook(function() log[#log + 1] = "b" end)
    -- w is used twice: its hook still runs once, with the summed gradient
    local y = (w * 2):sum() + (w * w):sum() + b:sum() * 3
    y:backward()
    assert.are.same({"b", "w 4.0,6.0", "end, b.grad 3.0"}, log)
    -- a second backward accumulates: the hook sees the sum
    log = {}
    ((w * 2):sum()):backward()
    assert.are.same({"w 6.0,8.0", "end, b.grad 3.0"}, log)
    -- autograd.grad accumulates nothing, so no hook runs
    log = {}
    ember.autograd.grad((w * 2):sum(), w)
    assert.are.same({}, log)
  end)

  it("an error in a hook or a callback fails the backward at the caller's line", function()
    local w = ember.tensor({1.0}):requires_grad_()
    w:register_post_accumulate_grad_hook(function() ember.autograd.queue_callback(function() error("late", 0) end) end)
    local ok, err = pcall(function() local y = (w * 2):sum(); y:backward(); return y end)
    assert.is_false(ok)
    assert.matches("parallel_spec.lua:%d+: late", err)
    local v = ember.tensor({1.0}):requires_grad_()
    v:register_post_accumulate_grad_hook(function() error("early", 0) end)
    ok, err = pcall(function() local y = (v * 2):sum(); y:backward(); return y end)
    assert.matches("post%-accumulate hook: early", err)
  end)

  it("refuses non-leaves, tensors without grad, non-functions, and callbacks outside backward", function()
    local w = ember.tensor({1.0}):requires_grad_()
    local ok, err = pcall(function() local h = w * 2; h:register_post_accumulate_grad_hook(print); return h end)
    assert.matches("only leaf tensors %(parameters%) accumulate a gradient; this tensor has grad_fn MulBackward", err)
    ok, err = pcall(function() ember.ones(2):register_post_accumulate_grad_hook(print) end)
    assert.matches("doesn't require gradient", err)
    ok, err = pcall(function() w:register_post_accumulate_grad_hook(42) end)
    assert.matches("register_post_accumulate_grad_hook: argument 1: expected a function", err)
    ok, err = pcall(ember.autograd.queue_callback, print)
    assert.matches("no backward pass is running", err)
    assert.is_false(ok)
  end)
end)

describe("DistributedDataParallel in a world of one", function()
  local MLP = nn.Module:extend("MLP")
  function MLP:init()
    self.fc1 = nn.Linear(4, 8)
    self.fc2 = nn.Linear(8, 3)
  end
  function MLP:forward(x) return self.fc2(self.fc1(x):relu()) end

  it("needs a process group", function()
    local ok, err = pcall(function() local m = nn.parallel.DistributedDataParallel(MLP()); return m end)
    assert.is_false(ok)
    assert.matches("parallel_spec.lua:%d+: DistributedDataParallel: the default process group is not initialised", err)
  end)

  it("gives the unwrapped model's gradients; no_sync; bad arguments", function()
    dist.init_process_group()
    finally(function() dist.destroy_process_group() end)
    ember.manual_seed(1)
    local ref = MLP():double()
    local model = nn.parallel.DistributedDataParallel(MLP():double(), {bucket_cap_mb = 0.0001})
    model.module:load_state_dict(ref:state_dict())
    -- 104 bytes = 13 float64 a bucket: fc2.bias (3), then each larger parameter alone
    assert.are.same({3, 24, 8, 32}, model:bucket_sizes())
    local x = ember.randn(5, 4, {dtype = "float64"})
    for _ = 1, 2 do
      model(x):sum():backward()
      ref(x):sum():backward()
    end
    model:no_sync(function() model(x):sum():backward() end)
    ref(x):sum():backward()
    for i, p in ipairs(model:parameters()) do assert.is_true(ember.allclose(p.grad, ref:parameters()[i].grad)) end
    local DDP = nn.parallel.DistributedDataParallel
    for _, c in ipairs({
      {{bucket_cap_mb = 0}, "bucket_cap_mb must be a positive number, got 0"},
      {{find_unused_parameters = 1}, "find_unused_parameters must be a boolean, got number"},
      {{device_ids = {0}}, "device_ids must be nil for a module on the CPU (as PyTorch), got {0}"},
      {{device_ids = {"cuda:0", "cuda:1"}}, "device_ids must hold exactly one device"},
      {{device_ids = 0}, "device_ids must be a list, got number"},
      {{output_device = "cuda:1"}, "output_device cuda:1 differs from the module's device cpu"},
      {{static_graph = "yes"}, "static_graph must be a boolean, got string"},
      {{gradient_as_bucket_view = 1}, "gradient_as_bucket_view must be a boolean, got number"},
      {{bucket_size = 1}, "unknown option 'bucket_size'"},
      {42, "device_ids must be a list, got number"},
    }) do
      local ok, err = pcall(function() local m = DDP(MLP(), c[1]); return m end)
      assert.is_false(ok)
      assert.matches("parallel_spec.lua:%d+: DistributedDataParallel: " .. c[2]:gsub("[%(%)%.%-]", "%%%0"), err)
    end
    local ok, err = pcall(function() local m = DDP(ember.ones(2)); return m end)
    assert.matches("expected an nn.Module to wrap, got userdata", err)
    assert.is_false(ok)
    -- accepted as PyTorch takes them for a CPU module
    assert.is_truthy(DDP(MLP(), {device_ids = nil, output_device = "cpu", static_graph = true}))
  end)

  it("gradient_as_bucket_view: .grad become views of the bucket, with the same values", function()
    dist.init_process_group()
    finally(function() dist.destroy_process_group() end)
    ember.manual_seed(2)
    local ref = MLP():double()
    local model = nn.parallel.DistributedDataParallel(MLP():double(), {gradient_as_bucket_view = true})
    model.module:load_state_dict(ref:state_dict())
    local x = ember.randn(5, 4, {dtype = "float64"})
    model(x):sum():backward()
    ref(x):sum():backward()
    local ps, rs = model:parameters(), ref:parameters()
    for i = 2, #ps do assert.is_true(ps[i].grad:is_view_of(ps[1].grad)) end
    -- a second backward accumulates into the views (the bucket) in place
    model(x):sum():backward()
    ref(x):sum():backward()
    for i, p in ipairs(ps) do assert.is_true(ember.allclose(p.grad, rs[i].grad, 0, 0)) end
    for i = 2, #ps do assert.is_true(ps[i].grad:is_view_of(ps[1].grad)) end
  end)
end)
