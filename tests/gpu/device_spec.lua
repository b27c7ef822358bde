-- device_spec.lua (GPU) — devices as the user sees them: ember.cuda's
-- queries, moving tensors (t:cuda(), t:cpu(), t:to(...)), creating them on
-- the device, errors that name both devices when an op mixes them, unknown
-- devices, printing, and item/tolist seeing every queued kernel.
--
-- Tests about CUDA itself are pending under EMBER_GPU_TEST_DEVICE=cpu; the
-- ones that only need "a device" run there too.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local cuda = ember.cuda
local cuda_it = g.cuda_it(it, pending)
local dev, same, err, has = g.dev, g.same, g.err, g.has

describe("ember.cuda queries", function()
  cuda_it("is_available, device_count and get_device_name", function()
    assert.is_true(cuda.is_available())
    assert.are.equal(1, select("#", cuda.is_available()))
    local n = cuda.device_count()
    assert.are.equal("integer", math.type(n))
    assert.is_true(n >= 1)
    local name = cuda.get_device_name()
    assert.are.equal("string", type(name))
    assert.is_true(#name > 0)
    assert.are.equal(name, cuda.get_device_name(0))
    assert.are.equal(name, cuda.get_device_name("cuda:0"))
    has(err(cuda.get_device_name, n), ("cuda:%d"):format(n), "no such device")
    has(err(cuda.get_device_name, "cpu"), "expected a CUDA device")
  end)

  cuda_it("synchronize takes nothing, an index or a device string", function()
    cuda.synchronize()
    cuda.synchronize(0)
    cuda.synchronize("cuda:0")
    has(err(cuda.synchronize, 99), "cuda:99", "no such device")
    has(err(cuda.synchronize, "cpu"), "expected a CUDA device")
  end)
end)

describe("moving tensors", function()
  cuda_it("t:cuda(), t:cpu(), t:to('cuda'), t:to('cuda:0') and t.device", function()
    local x = ember.tensor({{1.5, -2}, {3, 4.25}})
    local c = x:cuda()
    assert.are.equal("cuda:0", c.device)
    assert.are.equal("float32", c.dtype)
    assert.are.equal("cuda:0", x:cuda(0).device)
    assert.are.equal("cuda:0", x:to("cuda").device)
    assert.are.equal("cuda:0", x:to("cuda:0").device)
    assert.are.equal("cuda:0", x:to({device = "cuda"}).device)
    local back = c:cpu()
    assert.are.equal("cpu", back.device)
    same(back, x, {any_device = true})
    same(c:to("cpu"), x, {any_device = true})
    -- device and dtype at once, in either order
    local d = x:to("cuda", "float64")
    assert.are.equal("cuda:0", d.device)
    assert.are.equal("float64", d.dtype)
    assert.are.equal("float64", x:to("float64", "cuda").dtype)
    assert.are.equal("cuda:0", x:to(c).device)                       -- like another tensor
    assert.are.equal("cpu", c:to(x).device)
    -- every dtype survives the round trip
    for _, dt in ipairs(g.dtypes) do
      local t = ember.tensor({0, 1, 2, 3}, {dtype = dt})
      same(t:cuda():cpu(), t, {any_device = true, what = dt})
    end
  end)

  it("views of a device tensor stay on the device; non-contiguous tensors move by value", function()
    local x = dev(ember.arange(24):view(2, 3, 4))
    for _, v in ipairs({x:transpose(1, 3), x:narrow(2, 2, 2), x[1], x:view(6, 4), x:clone(), x:detach(), x:contiguous()}) do
      assert.are.equal(g.devname, v.device)
    end
    local t = x:transpose(1, 3)
    same(t:cpu(), ember.arange(24):view(2, 3, 4):transpose(1, 3), {any_device = true})
    same(dev(ember.arange(24):view(2, 3, 4):transpose(1, 3)), ember.arange(24):view(2, 3, 4):transpose(1, 3))
  end)

  it("creating tensors with {device = ...}", function()
    local o = {device = DEV}
    local made = {
      ember.zeros(2, 3, o), ember.ones(4, o), ember.full({2}, 7, o), ember.empty(3, o),
      ember.tensor({1, 2, 3}, o), ember.tensor(2.5, o), ember.arange(5, o), ember.linspace(0, 1, 5, o),
      ember.eye(3, o), ember.rand(3, o), ember.randn(3, o), ember.randint(5, {3}, o), ember.randperm(4, o),
      ember.zeros(0, o),
    }
    for i, t in ipairs(made) do assert.are.equal(g.devname, t.device, "tensor " .. i) end
    local base = ember.zeros(2, o)
    for i, t in ipairs({ember.zeros_like(base), ember.ones_like(base), ember.full_like(base, 3), ember.empty_like(base),
                        ember.rand_like(base), ember.randn_like(base), ember.randint_like(base, 9)}) do
      assert.are.equal(g.devname, t.device, "like " .. i)
    end
    assert.are.equal("cpu", ember.zeros_like(base, {device = "cpu"}).device)
    same(ember.tensor({{1, 2}, {3, 4}}, {device = DEV, dtype = "float64"}), ember.tensor({{1, 2}, {3, 4}}, {dtype = "float64"}))
  end)
end)

describe("mixing devices", function()
  cuda_it("an op on a CPU and a CUDA tensor raises an error naming both devices", function()
    local c = ember.ones(2, 3)
    local d = ember.ones(2, 3, {device = "cuda"})
    local i_cpu, i_dev = ember.tensor({1, 2}), ember.tensor({1, 2}, {device = "cuda"})
    for name, f in pairs({
      add = function() return c + d end,
      add_reversed = function() return d:add(c) end,
      add_ = function() return d:add_(c) end,
      mul = function() return d * c end,
      matmul = function() return c:matmul(d:t()) end,
      matmul_reversed = function() return d:matmul(c:t()) end,
      cat = function() return ember.cat({c, d}) end,
      stack = function() return ember.stack({d, c}) end,
      index_select = function() return d:index_select(2, i_cpu) end,
      index_select_cpu = function() return c:index_select(2, i_dev) end,
      gather = function() return d:gather(2, ember.tensor({{1}, {2}})) end,
      where = function() return ember.where(c:gt(0), d, d) end,
      masked_fill = function() return d:masked_fill(c:gt(0), 1) end,
    }) do
      local msg = err(f)
      has(msg, "cpu", "cuda:0")
      assert(msg:match("device"), name .. ": " .. msg)
    end
  end)

  cuda_it("a 0-d CPU tensor combines with a CUDA tensor, as in PyTorch", function()
    local d = ember.ones(3, {device = "cuda"})
    local r = d * ember.tensor(2.5)
    assert.are.equal("cuda:0", r.device)
    same(r:cpu(), ember.full({3}, 2.5), {any_device = true})
  end)

  cuda_it("copy_ moves values across devices in either direction", function()
    local d = ember.zeros(2, 3, {device = "cuda"})
    d:copy_(ember.arange(6):view(2, 3))
    local c = ember.zeros(3, 2, {dtype = "int64"})
    c:copy_(d:t())
    same(c, ember.arange(6):view(2, 3):t():contiguous(), {any_device = true})
  end)

  cuda_it("unknown devices give a clear error", function()
    for _, f in ipairs({
      function() return ember.zeros(2, {device = "cuda:99"}) end,
      function() return ember.zeros(2):to("cuda:99") end,
      function() return ember.zeros(2):cuda(99) end,
      function() return cuda.memory_allocated("cuda:99") end,
    }) do
      has(err(f), "cuda:99")
    end
    has(err(function() return ember.zeros(2, {device = "cuda:999"}) end), "cuda:999")
    has(err(function() return ember.zeros(2):to("cuda:x") end), "cuda:x")
    has(err(function() return ember.zeros(2, {device = "gpu"}) end), "gpu")
    -- and the session goes on
    assert.are.equal(2, ember.ones(2, {device = "cuda"}):sum():item())
  end)
end)

describe("printing and reading back", function()
  it("tostring of a device tensor shows its values and device", function()
    local cases = {
      ember.tensor({1.5, -2, 3}), ember.tensor({{1, 2}, {3, 4}}), ember.tensor(2.5),
      ember.tensor({true, false}), ember.zeros(0, 3), ember.arange(2000):to("float64"),
    }
    for _, t in ipairs(cases) do
      local s, sd = tostring(t), tostring(dev(t))
      if g.is_cuda then
        has(sd, "device='" .. g.devname .. "'")
        -- the same text with the device suffix taken out
        local plain = sd:gsub(",%s*device='[^']*'", "")
        assert.are.equal(s, plain)
      else
        assert.are.equal(s, sd)
      end
    end
  end)

  it("item, tolist and indexing see every queued kernel", function()
    local x = ember.ones(1000000, {device = DEV, dtype = "float64"})
    for _ = 1, 100 do x:add_(1) end
    assert.are.equal(101000000, x:sum():item())
    local l = x:narrow(1, 999998, 3):tolist()
    assert.are.same({101, 101, 101}, l)
    assert.are.equal(101, x[1000000]:item())
    x[5] = -1
    assert.are.equal(-1, x[5]:item())
    assert.are.equal(101 * 999999 - 1, x:sum():item())
    local m = ember.zeros(3, 4, {device = DEV})
    m[2][3] = 7
    m[{3, {1, 2}}] = 5
    same(m:cpu(), ember.tensor({{0, 0, 0, 0}, {0, 0, 7, 0}, {5, 5, 0, 0}}):to("float32"), {any_device = true})
    assert.are.equal(7, m[2][3]:item())
    -- a copy to the host waits for the kernels before it
    local y = ember.randn(512, 512, {device = DEV})
    local z = y:matmul(y):add_(1)
    same(z:cpu(), z:to("cpu"), {any_device = true})
  end)

  cuda_it("the TF32 switch reads false until set", function()
    assert.is_false(ember.backends.cuda.matmul.allow_tf32)
  end)
end)

-- What follows a kernel fault, which only the emulated device can cause on
-- purpose (EMBER_CUDA_EMU_FAULT=N faults the Nth launch): as on a GPU the
-- context keeps the error, every later CUDA call reports it as a Lua error at
-- the caller's line, the CPU goes on, and nothing crashes.
describe("after a kernel fault", function()
  local emu_it = g.emulated and it or function(name)
    pending(name .. " (only the emulated device can fault a kernel on purpose: EMBER_CUDA=emu)")
  end
  emu_it("every CUDA call raises the sticky error at the caller's line; the CPU goes on", function()
    local exe = os.getenv("EMBER") or "build/ember"
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local a = ember.ones(4, {device = "cuda"})
print("first", pcall(function() return a:sum():item() end))
print("again", pcall(function() return ember.ones(2, {device = "cuda"}):tolist() end))
print("cpu", ember.ones(3):sum():item())
]])
    f:close()
    local p = assert(io.popen(("EMBER_CUDA=emu EMBER_CUDA_EMU_FAULT=1 '%s' '%s' 2>&1; echo status $?"):format(exe, script)))
    local out = p:read("a")
    p:close()
    os.remove(script)
    assert.matches("first\tfalse\t[^\n]*:2: [^\n]*CUDA error: an illegal memory access was encountered", out)
    assert.matches("again\tfalse\t[^\n]*:3: [^\n]*CUDA error: an illegal memory access was encountered", out)
    assert.matches("cpu\t3%.0", out)
    assert.matches("kernel [%w_<>]+: the fault EMBER_CUDA_EMU_FAULT=1 asked for", out)
    assert.matches("status 0", out)
  end)
end)
