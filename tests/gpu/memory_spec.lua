-- memory_spec.lua (GPU) — the caching allocator and its statistics:
-- blocks are reused from one training step to the next, dropped tensors give
-- their bytes back, empty_cache returns cached blocks to the driver, peaks
-- reset, an impossible request raises "out of memory" and the session goes
-- on; CUDA events time work on the stream.
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
local nn = require("ember.nn")
local F = nn.functional
local optim = require("ember.optim")

local MiB = 1 << 20

local function collect()
  collectgarbage()
  collectgarbage()
end

describe("caching allocator", function()
  cuda_it("after one training step, further steps make no new device allocations", function()
    ember.manual_seed(1)
    local m = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)):to(DEV)
    local opt = optim.AdamW(m:parameters(), {lr = 1e-3})
    local X, Y = ember.randn(512, 64, {device = DEV}), ember.randint(1, 11, {512}):to(DEV)
    local function step()
      opt:zero_grad()
      local loss = F.cross_entropy(m(X), Y, {label_smoothing = 0.1})
      loss:backward()
      nn.utils.clip_grad_norm_(m:parameters(), 1.0)
      opt:step()
      return loss:item()
    end
    step()
    -- tensors are freed when Lua collects them: collect after each step,
    -- as the device would otherwise see the garbage of several steps at once
    collect()
    local s0 = cuda.memory_stats(DEV)
    for _ = 1, 5 do
      step()
      collect()
    end
    local s1 = cuda.memory_stats(DEV)
    assert.are.equal(s0.device_mallocs, s1.device_mallocs, "device mallocs after the first step")
    assert.is_true(s1.alloc_calls > s0.alloc_calls, "the steps allocated through the cache")
    assert.are.equal(s0.allocated_bytes, s1.allocated_bytes, "bytes in use after each collected step")
  end)

  cuda_it("memory_allocated returns to its earlier value once tensors are dropped and collected", function()
    collect()
    local base = cuda.memory_allocated(DEV)
    do
      local a = ember.randn(1000, 1000, {device = DEV})
      local b = a * 2 + 1
      local c = b:matmul(a)
      assert.is_true(cuda.memory_allocated(DEV) >= base + 3 * 4e6)
      assert.are.equal(g.devname, c.device)
    end
    collect()
    assert.are.equal(base, cuda.memory_allocated(DEV))
    -- the forms of the device argument read the same numbers
    local index = tonumber(g.devname:match("%d+$"))
    assert.are.equal(cuda.memory_allocated(DEV), cuda.memory_allocated(index))
    assert.are.equal(cuda.memory_allocated(DEV), cuda.memory_allocated(g.devname))
    if index == 0 then assert.are.equal(cuda.memory_allocated(DEV), cuda.memory_allocated()) end
  end)

  cuda_it("a <close> variable frees at once, without the collector", function()
    collect()
    collectgarbage("stop")
    local ok, err = pcall(function()
      local base = cuda.memory_allocated(DEV)
      do
        local t <close> = ember.empty(MiB, {device = DEV})
        assert.is_true(cuda.memory_allocated(DEV) >= base + 4 * MiB)
      end
      assert.are.equal(base, cuda.memory_allocated(DEV))
    end)
    collectgarbage("restart")
    assert(ok, err)
  end)

  cuda_it("empty_cache gives cached blocks back and lowers memory_reserved", function()
    collect()
    do
      local big = ember.empty(64 * MiB // 4, {device = DEV})
      big:fill_(1)
    end
    collect()
    local allocated, r1 = cuda.memory_allocated(DEV), cuda.memory_reserved(DEV)
    assert.is_true(r1 >= 64 * MiB, "the freed block stays cached")
    local frees = cuda.memory_stats(DEV).device_frees
    cuda.empty_cache(DEV)
    local r2 = cuda.memory_reserved(DEV)
    assert.is_true(r1 - r2 >= 64 * MiB, ("reserved %d before empty_cache, %d after"):format(r1, r2))
    assert.is_true(cuda.memory_stats(DEV).device_frees > frees)
    assert.are.equal(allocated, cuda.memory_allocated(DEV))
    assert.is_true(r2 >= cuda.memory_allocated(DEV))
    -- the allocator works after emptying
    assert.are.equal(10, ember.ones(10, {device = DEV}):sum():item())
  end)

  cuda_it("max_memory_allocated follows the peak until reset_peak_memory_stats", function()
    collect()
    cuda.reset_peak_memory_stats(DEV)
    local base = cuda.memory_allocated(DEV)
    assert.are.equal(base, cuda.max_memory_allocated(DEV))
    do
      local t = ember.empty(8 * MiB, {device = DEV})     -- 32 MiB
      t:zero_()
    end
    collect()
    assert.are.equal(base, cuda.memory_allocated(DEV))
    assert.is_true(cuda.max_memory_allocated(DEV) >= base + 32 * MiB)
    assert.is_true(cuda.max_memory_reserved(DEV) >= cuda.memory_reserved(DEV))
    cuda.reset_peak_memory_stats(DEV)
    assert.are.equal(cuda.memory_allocated(DEV), cuda.max_memory_allocated(DEV))
  end)

  cuda_it("memory_stats has every counter; memory_summary names the device", function()
    local s = cuda.memory_stats(DEV)
    for _, k in ipairs({"allocated_bytes", "reserved_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
                        "alloc_calls", "free_calls", "device_mallocs", "device_frees", "num_ooms"}) do
      assert.are.equal("integer", math.type(s[k]), k)
      assert.is_true(s[k] >= 0, k)
    end
    assert.is_true(s.alloc_calls >= s.free_calls)
    assert.is_true(s.reserved_bytes >= s.allocated_bytes)
    assert.are.equal(s.allocated_bytes, cuda.memory_allocated(DEV))
    local text = cuda.memory_summary(DEV)
    assert.are.equal("string", type(text))
    g.has(text, g.devname, "allocated", "reserved")
  end)

  cuda_it("a tensor larger than the GPU raises 'out of memory' and the session continues", function()
    local before = cuda.memory_stats(DEV).num_ooms
    local allocated = cuda.memory_allocated(DEV)
    local msg = g.err(function() return ember.empty(1 << 38, {device = DEV}) end)      -- 1 TiB of float32
    g.has(msg, "out of memory")
    assert.is_true(cuda.memory_stats(DEV).num_ooms > before)
    assert.is_true(cuda.memory_allocated(DEV) <= allocated)
    msg = g.err(function() return ember.zeros(1 << 20, 1 << 20, {device = DEV, dtype = "float64"}) end)
    g.has(msg, "out of memory")
    -- still working
    local x = ember.ones(1000, {device = DEV})
    assert.are.equal(2000, (x * 2):sum():item())
    cuda.synchronize(DEV)
  end)
end)

describe("events", function()
  cuda_it("elapsed_time between two recorded events is a positive number of milliseconds", function()
    local start = cuda.Event({enable_timing = true, device = DEV})
    local stop = cuda.Event({enable_timing = true, device = DEV})
    -- (on the emulated device the matmuls run on the CPU: a smaller matrix)
    local n = g.emulated and 384 or 2048
    local a = ember.randn(n, n, {device = DEV})
    assert.are.equal(start, start:record())
    for _ = 1, 5 do a = a:matmul(a):div(45) end
    stop:record()
    stop:synchronize()
    local ms = start:elapsed_time(stop)
    assert.are.equal("number", type(ms))
    assert.is_true(ms > 0, "elapsed " .. tostring(ms) .. " ms")
    assert.is_true(ms < 60000)
  end)

  cuda_it("events take a device option and reject bad arguments", function()
    local e = cuda.Event({device = g.devname})
    e:record()
    e:synchronize()
    g.has(g.err(cuda.Event, {device = "cuda:99"}), "cuda:99")
    g.has(g.err(cuda.Event, "x"), "Event")
    g.has(g.err(e.elapsed_time, e, 5), "Event")
  end)
end)
