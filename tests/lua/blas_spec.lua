-- blas_spec.lua — OpenBLAS opened on first use (engine/cpu/blas.c):
-- ember.backends.cpu.blas_core() and get_cpu_capability(), the kernel set
-- chosen (EMBER_BLAS_CORETYPE, OPENBLAS_CORETYPE), the environment left as
-- it was, no OpenBLAS at start-up, and a clear error without the library
-- (EMBER_BLAS_LIBRARY). Most cases run a child ember, where the library is
-- certainly not open yet. Expected CPU facts come from /proc/cpuinfo (not
-- from cpuid, which the code under test reads); expected values by hand.
local ember = require "ember"
local h = require "helpers"

local root = assert(io.popen("pwd")):read("l")
local exe = os.getenv("EMBER") or (root .. "/build/ember")
-- the variables under test, removed from the child's environment unless a
-- case sets them
local clean = "env -u OPENBLAS_CORETYPE -u OPENBLAS_NUM_THREADS -u EMBER_BLAS_CORETYPE -u EMBER_BLAS_LIBRARY"

-- Runs Lua code in a child ember with the environment assignments `vars`
-- (a string, "A=1 B=2"); returns its output (stdout and stderr) and whether
-- it exited with status 0.
local function run(code, vars)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(code)
  f:close()
  local p = assert(io.popen(string.format("%s %s '%s' '%s' 2>&1", clean, vars or "", exe, file)))
  local out = p:read("a")
  local ok = p:close()
  os.remove(file)
  return out, ok == true
end

local function run_ok(code, vars)
  local out, ok = run(code, vars)
  assert(ok, "the child failed:\n" .. out)
  return out
end

-- The CPU as /proc/cpuinfo describes it: vendor and a set of flags; nil
-- where there is no /proc/cpuinfo.
local cpu = (function()
  local f = io.open("/proc/cpuinfo")
  if not f then return nil end
  local info = {flags = {}}
  for line in f:lines() do
    local v = line:match("^vendor_id%s*:%s*(%S+)")
    if v and not info.vendor then info.vendor = v end
    local fl = line:match("^flags%s*:%s*(.*)$")
    if fl and not next(info.flags) then
      for w in fl:gmatch("%S+") do info.flags[w] = true end
    end
  end
  f:close()
  return info
end)()

local function has(...)
  for _, flag in ipairs({...}) do
    if not (cpu and cpu.flags[flag]) then return false end
  end
  return true
end

local function avx512() return has("avx512f", "avx512vl", "avx512bw", "avx512dq") end
local function intel() return cpu and cpu.vendor == "GenuineIntel" end

describe("ember.backends.cpu", function()
  it("get_cpu_capability follows PyTorch's rule on the CPU's flags", function()
    local got = ember.backends.cpu.get_cpu_capability()
    if not cpu then
      assert.is_true(got == "AVX512" or got == "AVX2" or got == "DEFAULT", got)
      return
    end
    local want = (avx512() and has("fma")) and "AVX512" or has("avx2", "fma") and "AVX2" or "DEFAULT"
    assert.are.equal(want, got)
  end)

  it("blas_core names OpenBLAS's kernel set, a non-empty string", function()
    local core = ember.backends.cpu.blas_core()
    assert.are.equal("string", type(core))
    assert.is_true(#core > 0)
  end)

  it("a matmul, a convolution and a solve give the values worked by hand", function()
    local a = ember.tensor({{1, 2}, {3, 4}}, {dtype = "float64"})
    local b = ember.tensor({{5, 6}, {7, 8}}, {dtype = "float64"})
    h.check(a:matmul(b), {{19, 22}, {43, 50}})
    h.check(a:float():matmul(b:float()), {{19, 22}, {43, 50}})
    -- [1 2 3 4] * [1 1]: sums of neighbours (float64: the reference path, through BLAS)
    local x = ember.tensor({{{1, 2, 3, 4}}}, {dtype = "float64"})
    local w = ember.tensor({{{1, 1}}}, {dtype = "float64"})
    h.check(ember.conv1d(x, w), {{{3, 5, 7}}})
    local A = ember.tensor({{2, 0}, {0, 4}}, {dtype = "float64"})
    h.check(ember.linalg.solve(A, ember.tensor({2, 8}, {dtype = "float64"})), {1, 2})
  end)
end)

describe("the kernel set OpenBLAS is given", function()
  it("EMBER_BLAS_CORETYPE=Haswell forces Haswell", function()
    if not has("avx2", "fma") then pending("the CPU lacks AVX2/FMA, which Haswell's kernels need") return end
    local out = run_ok("print(ember.backends.cpu.blas_core())", "EMBER_BLAS_CORETYPE=Haswell")
    assert.are.equal("Haswell\n", out)
  end)

  it("the user's OPENBLAS_CORETYPE wins over EMBER_BLAS_CORETYPE", function()
    if not has("avx") then pending("the CPU lacks AVX, which Sandybridge's kernels need") return end
    local out = run_ok("print(ember.backends.cpu.blas_core())",
                       "EMBER_BLAS_CORETYPE=Haswell OPENBLAS_CORETYPE=Sandybridge")
    assert.are.equal("Sandybridge\n", out)
  end)

  it("by default on an Intel CPU with AVX2, not Prescott (what OpenBLAS takes for a model it does not know)", function()
    if not has("avx2", "fma") then pending("the CPU lacks AVX2/FMA: OpenBLAS's own choice stands") return end
    if not intel() then pending("not an Intel CPU (" .. tostring(cpu.vendor) .. "): OpenBLAS's own detection stands") return end
    local core = run_ok("print(ember.backends.cpu.blas_core())"):gsub("\n$", "")
    assert.are_not.equal("Prescott", core)
    if has("avx512_bf16") and avx512() then
      assert.are.equal("Cooperlake", core)
    elseif avx512() then
      assert.are.equal("SkylakeX", core)
    else
      assert.are.equal("Haswell", core)
    end
  end)
end)

describe("the environment", function()
  it("OPENBLAS_NUM_THREADS and OPENBLAS_CORETYPE stay unset after the first matmul", function()
    local out = run_ok([[
      print(os.getenv("OPENBLAS_NUM_THREADS"), os.getenv("OPENBLAS_CORETYPE"))
      print(ember.randn(4, 4):matmul(ember.randn(4, 4)).shape[1])
      print(os.getenv("OPENBLAS_NUM_THREADS"), os.getenv("OPENBLAS_CORETYPE"))
      os.execute("echo child:${OPENBLAS_NUM_THREADS-unset}:${OPENBLAS_CORETYPE-unset}")
    ]])
    assert.are.equal("nil\tnil\n4\nnil\tnil\nchild:unset:unset\n", out)
  end)

  it("the user's values stay as they were, EMBER_BLAS_CORETYPE too", function()
    local out = run_ok([[
      print(ember.randn(4, 4):matmul(ember.randn(4, 4)).shape[1])
      print(os.getenv("OPENBLAS_NUM_THREADS"), os.getenv("OPENBLAS_CORETYPE"), os.getenv("EMBER_BLAS_CORETYPE"))
    ]], "OPENBLAS_NUM_THREADS=3 OPENBLAS_CORETYPE=Prescott EMBER_BLAS_CORETYPE=Haswell")
    assert.are.equal("4\n3\tPrescott\tHaswell\n", out)
  end)

  it("with EMBER_BLAS_CORETYPE alone, OPENBLAS_CORETYPE is unset after", function()
    local out = run_ok([[
      ember.randn(4, 4):matmul(ember.randn(4, 4))
      print(os.getenv("OPENBLAS_CORETYPE"), os.getenv("EMBER_BLAS_CORETYPE"))
    ]], "EMBER_BLAS_CORETYPE=Prescott")
    assert.are.equal("nil\tPrescott\n", out)
  end)
end)

describe("threads", function()
  it("OpenBLAS starts no threads of its own (one thread in all with EMBER_NUM_THREADS=1)", function()
    local f = io.open("/proc/self/status")
    if not f then pending("no /proc/self/status to count threads with") return end
    f:close()
    local code = [[
      local function threads()
        for line in io.lines("/proc/self/status") do
          local t = line:match("^Threads:%s*(%d+)")
          if t then return tonumber(t) end
        end
      end
      local before = threads()
      ember.randn(256, 256):matmul(ember.randn(256, 256))
      local x = ember.randn(8, 8, {dtype = "float64"})
      ember.linalg.solve(x:matmul(x:t()) + ember.eye(8, {dtype = "float64"}), ember.randn(8, {dtype = "float64"}))
      print(before, threads())
    ]]
    -- the control: OpenBLAS told to use 2 threads starts a worker, where there are 2 CPUs
    local control = run_ok(code, "EMBER_NUM_THREADS=1 OPENBLAS_NUM_THREADS=2")
    if control == "1\t1\n" then pending("OpenBLAS starts no worker here even when asked (one CPU?)") return end
    assert.are.equal("1\t2\n", control)
    assert.are.equal("1\t1\n", run_ok(code, "EMBER_NUM_THREADS=1"))
  end)
end)

describe("start-up", function()
  -- the dynamic loader's trace of the files it opens (glibc's LD_DEBUG)
  local function loaded_files(code)
    local p = assert(io.popen(string.format("%s LD_DEBUG=files '%s' -e '%s' 2>&1", clean, exe, code)))
    local out = p:read("a")
    p:close()
    return out
  end

  it("ember -e '' does not open OpenBLAS; the first matmul does", function()
    local idle = loaded_files("")
    local busy = loaded_files("ember.randn(2, 2):matmul(ember.randn(2, 2))")
    -- the trace works here (the second run shows the library), and the first shows none
    if not busy:find("libopenblas", 1, true) then
      pending("LD_DEBUG=files shows no trace here (not glibc's loader?)")
      return
    end
    assert.is_nil(idle:find("openblas", 1, true), "OpenBLAS was opened by ember -e '':\n" .. idle)
  end)
end)

describe("without the library", function()
  local missing = "/nonexistent/libopenblas.so.0"

  it("matmul, conv, linalg.solve and blas_core raise an error naming it; the process goes on", function()
    local out = run_ok([[
      local function try(f, ...)
        local ok, e = pcall(f, ...)
        print(ok, e)
      end
      try(function() return ember.randn(4, 4):matmul(ember.randn(4, 4)) end)
      try(function() return ember.randn(4, 4):matmul(ember.randn(4, 4)) end)    -- again: the same error
      local x = ember.tensor({{{1, 2, 3, 4}}}, {dtype = "float64"})
      try(ember.conv1d, x, ember.tensor({{{1, 1}}}, {dtype = "float64"}))
      local A = ember.tensor({{2, 0}, {0, 4}}, {dtype = "float64"})
      try(ember.linalg.solve, A, ember.tensor({2, 8}, {dtype = "float64"}))
      try(ember.backends.cpu.blas_core)
      print((ember.ones(3) + 1):sum():item())   -- the rest of the engine works
      print("done")
    ]], "EMBER_BLAS_LIBRARY=" .. missing)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(7, #lines, out)
    local why = "OpenBLAS (" .. missing .. ") could not be opened: " .. missing .. ": cannot open shared object file"
    for i, op in ipairs({"gemm", "gemm", "conv", "linalg.solve", "blas_core"}) do
      assert.are.equal("false", lines[i]:match("^(%S+)\t"), lines[i])
      h.has(lines[i], op .. ": " .. why)
    end
    assert.are.equal("6.0", lines[6])
    assert.are.equal("done", lines[7])
  end)

  it("a library without OpenBLAS's symbols: an error naming the first one missing", function()
    -- libz is there wherever ember runs (ember links it) and has no cblas_sgemm
    local out = run_ok([[
      print(pcall(function() return ember.randn(4, 4):matmul(ember.randn(4, 4)) end))
    ]], "EMBER_BLAS_LIBRARY=libz.so.1")
    h.has(out, "gemm: OpenBLAS (libz.so.1) could not be opened: it has no cblas_sgemm")
  end)
end)
