-- nvml_spec.lua (GPU) — GPU monitoring against the real driver: the NVML
-- readings are in range, the CUDA device is found among NVML's by its PCI
-- bus id, mem_get_info agrees with NVML and sees ember's allocations, and
-- the shell's :gpu prints the device with ember's allocator figures.
-- (tests/lua/nvml_spec.lua checks exact values against a fake NVML.)
--
-- All of it is about the GPU: under EMBER_GPU_TEST_DEVICE=cpu each test is
-- pending.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local cuda = ember.cuda
local cuda_it = g.cuda_it(it, pending)
local index = tonumber(DEV:match("^cuda:(%d+)$") or "0")
local MiB = 1 << 20

-- NVML's row for the device under test (matched through its PCI bus id)
local function my_row()
  for _, row in ipairs(cuda.gpu_status()) do
    if row.cuda == index then return row end
  end
end

describe("NVML readings on the GPU", function()
  cuda_it("utilization and memory_usage are percentages (integers)", function()
    for _, f in ipairs({"utilization", "memory_usage"}) do
      local v = cuda[f](DEV)
      assert.equal("integer", math.type(v), f)
      assert.is_true(v >= 0 and v <= 100, f .. " = " .. v)
    end
  end)

  local hw_it = g.real_gpu_it(it, pending, "its utilization is not measured, and 400 matmuls of 4096^3 would take hours on the CPU")
  hw_it("utilization rises while the GPU is busy", function()
    local a = ember.randn(4096, 4096, {device = DEV})
    local busy = 0
    for _ = 1, 20 do
      for _ = 1, 20 do a = (a:matmul(a)):tanh() end
      busy = math.max(busy, cuda.utilization(DEV))
    end
    cuda.synchronize(DEV)
    assert.is_true(busy > 0, "utilization stayed at 0 during matmuls")
  end)

  cuda_it("temperature in 10..100 C, power draw > 0 milliwatts", function()
    local t = cuda.temperature(DEV)
    assert.is_true(t >= 10 and t <= 100, "temperature " .. t)
    local p = cuda.power_draw(DEV)
    assert.is_true(p > 0, "power draw " .. p)
    -- milliwatts, not watts: no GPU draws under 1 W while on
    assert.is_true(p > 1000, "power draw " .. p .. " mW")
  end)

  cuda_it("the device is found among NVML's by its PCI bus id, with CUDA's name", function()
    local row = my_row()
    assert.is_truthy(row, "no NVML row maps to cuda:" .. index)
    assert.equal(cuda.get_device_name(index), row.name)
    assert.is_truthy(row.pci_bus_id:match("^%x%x%x%x:%x%x:%x%x%.0$"), row.pci_bus_id)
    assert.is_truthy(cuda.gpu_status().driver_version:match("^%d+%.%d+"))
  end)
end)

describe("mem_get_info on the GPU", function()
  cuda_it("free <= total, total close to NVML's figure for the device", function()
    local free, total = cuda.mem_get_info(DEV)
    assert.equal("integer", math.type(free))
    assert.is_true(free > 0 and free <= total, free .. " of " .. total)
    local nvml_total = my_row().memory_total
    -- the driver keeps a little for itself, so CUDA's total is at most NVML's
    assert.is_true(total <= nvml_total and total > 0.9 * nvml_total, total .. " vs NVML's " .. nvml_total)
  end)

  cuda_it("free memory falls by an allocation of 512 MiB and comes back after empty_cache", function()
    collectgarbage()
    cuda.empty_cache(DEV)
    local free0 = cuda.mem_get_info(DEV)
    local t = ember.empty(128 * MiB, {dtype = "float32", device = DEV})
    local free1 = cuda.mem_get_info(DEV)
    assert.is_true(free0 - free1 >= 500 * MiB, ("free fell by %.1f MiB"):format((free0 - free1) / MiB))
    t = nil -- luacheck: ignore
    collectgarbage()
    cuda.empty_cache(DEV)
    local free2 = cuda.mem_get_info(DEV)
    assert.is_true(free2 - free1 >= 500 * MiB, ("free rose by %.1f MiB"):format((free2 - free1) / MiB))
  end)
end)

describe(":gpu in the shell on the GPU", function()
  cuda_it("prints the device, its CUDA name and ember's allocator figures, without an error", function()
    local exe = os.getenv("EMBER") or "build/ember"
    local input = os.tmpname()
    local f = assert(io.open(input, "w"))
    f:write(("x = ember.zeros(1024, 1024, {device = %q})\n:gpu\n"):format(DEV))
    f:close()
    local p = assert(io.popen(("'%s' < '%s' 2>&1"):format(exe, input)))
    local out = p:read("a")
    p:close()
    os.remove(input)
    assert.matches("NVIDIA driver %d+", out)
    assert.is_truthy(out:find(cuda.get_device_name(index):sub(1, 24), 1, true), out)
    assert.matches("cuda:" .. index .. "%s", out)
    assert.matches("ember's caching allocator", out)
    assert.matches("cuda:" .. index .. "%s+4%.0 MiB", out)     -- x: 4 MiB allocated
    assert.is_falsy(out:find("no GPU table", 1, true), out)
    assert.is_falsy(out:find("error", 1, true), out)
  end)
end)
