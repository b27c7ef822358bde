-- load_mmap_spec.lua (GPU) — mapped safetensors tensors reach the device by a
-- copy from the mapping: ember.load(path, {mmap = true, device = ...}),
-- ember.safe_open(path, {device = ...}) and t:to(device) of a mapped tensor
-- give the file's values, and neither a later change to the file nor a
-- write on the device reaches the other.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV
local cuda_it = g.cuda_it(it, pending)

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local function path(name) return dir .. "/" .. name end

local function read_file(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- overwrites the first bytes of the data section (tensor "a", the first
-- tensor of its size class) in place
local function patch_first(p, bytes)
  local s = read_file(p)
  local hlen = string.unpack("<I8", s)
  local f = assert(io.open(p, "r+b"))
  f:seek("set", 8 + hlen)
  f:write(bytes)
  f:close()
end

local function tensors()
  return {
    a = ember.arange(1, 1001):float() / 8,
    h = ember.tensor({0.5, -2, 3}, {dtype = "float16"}),
    bf = ember.tensor({{1, 2}, {3, 4}}, {dtype = "bfloat16"}),
    i = ember.tensor({7, -8}, {dtype = "int32"}),
    m = ember.tensor({true, false, true}),
  }
end

describe("mapped safetensors on " .. DEV, function()
  it("ember.load(path, {mmap = true, device = ...}) copies every tensor from the mapping", function()
    local p = path("dev.safetensors")
    local want = tensors()
    ember.save(p, want)
    local got = ember.load(p, {mmap = true, device = DEV})
    for name, w in pairs(want) do
      assert.are.equal(g.devname, got[name].device, name)
      assert.are.equal(w.dtype, got[name].dtype, name)
      assert.is_true(ember.equal(got[name]:cpu(), w), name)
    end
    -- copies: the file changed afterwards does not reach them (on the CPU
    -- backend itself they are the mapping's views)
    if g.is_cuda then
      patch_first(p, string.pack("<f", 99))
      assert.are.equal(0.125, got.a[1]:item())
    end
  end)

  cuda_it("a mapped CPU tensor moved to the device is a copy; writes on either side stay there", function()
    local p = path("move.safetensors")
    ember.save(p, tensors())
    local before = read_file(p)
    local t = ember.load(p, {mmap = true})
    local d = t.a:to(DEV)
    assert.are.equal(0.125, d[1]:item())
    d:add_(1)
    assert.are.equal(1.125, d[1]:item())
    assert.are.equal(0.125, t.a[1]:item())
    assert.are.equal(before, read_file(p))
    patch_first(p, string.pack("<f", 42))
    assert.are.equal(42, t.a[1]:item())        -- the CPU tensor is the file's page
    assert.are.equal(1.125, d[1]:item())
    -- and back: the device's values land in a new CPU tensor
    local back = d:cpu()
    assert.are.equal(1.125, back[1]:item())
    assert.is_true(ember.equal(t.h:to(DEV):cpu(), tensors().h))
  end)

  it("ember.safe_open(path, {device = ...}) gives device tensors", function()
    local p = path("open.safetensors")
    local want = tensors()
    ember.save(p, want)
    local f <close> = ember.safe_open(p, {device = DEV})
    for _, name in ipairs(f:keys()) do
      local t = f:get_tensor(name)
      assert.are.equal(g.devname, t.device, name)
      assert.is_true(ember.equal(t:cpu(), want[name]), name)
    end
  end)
end)
