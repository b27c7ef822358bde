-- load_mmap_spec.lua — ember.load(path, {mmap = true}) and ember.safe_open:
-- safetensors files mapped instead of read. The tensors must be views of the
-- file's pages (shown by changing the file in place, which a mapped tensor
-- sees and a read one does not), writes to them copy-on-write (the file's
-- bytes never change), the mapping alive exactly while a tensor uses it
-- (/proc/self/maps), misaligned and non-canonical bool data copied, and every
-- damaged file refused before anything is mapped.
local ember = require "ember"
local H = require "helpers"
local hostile = require "hostile"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local function path(name) return dir .. "/" .. name end

local write_file = H.write_file

-- overwrites bytes of p from 0-based offset `at`, in place (same inode)
local function patch_file(p, at, bytes)
  local f = assert(io.open(p, "r+b"))
  f:seek("set", at)
  f:write(bytes)
  f:close()
end

-- a safetensors file from a header text and data bytes, as written by hand
local function st(json, data) return string.pack("<I8", #json) .. json .. (data or "") end

-- where tensor `name`'s data starts in the file p (ember.save's layout)
local function data_start(p, name)
  local bytes = H.read_file(p)
  local hlen = string.unpack("<I8", bytes)
  local json = bytes:sub(9, 8 + hlen)
  local b = json:match('"' .. name .. '":{[^}]*"data_offsets":%[(%d+),')
  assert(b, "no entry for " .. name)
  return 8 + hlen + tonumber(b)
end

-- how many lines of /proc/self/maps name the file p (nil without /proc)
local function mappings_of(p)
  local f = io.open("/proc/self/maps", "r")
  if not f then return nil end
  local n = 0
  for line in f:lines() do
    if line:sub(-#p - 1) == " " .. p then n = n + 1 end
  end
  f:close()
  return n
end

local function collect()
  collectgarbage()
  collectgarbage()
end

local function mmap_load(p) return ember.load(p, {mmap = true}) end

-- one tensor of every dtype, shapes with odd sizes so that offsets vary
local function every_dtype()
  return {
    f32 = ember.arange(1, 7):float():view(2, 3) / 4,
    f64 = ember.tensor({1.5, -2.25, 1e300}, {dtype = "float64"}),
    i64 = ember.tensor({-(1 << 62), 3, 1 << 53 + 1}, {dtype = "int64"}),
    i32 = ember.tensor({{-7, 8, 9}}, {dtype = "int32"}),
    u8 = ember.tensor({0, 255, 17, 4, 5}, {dtype = "uint8"}),
    bool = ember.tensor({true, false, true}),
    f16 = ember.tensor({0.5, -1, 65504}, {dtype = "float16"}),
    bf16 = ember.tensor({{1, 2}, {3, 1e38}}, {dtype = "bfloat16"}),
    empty = ember.zeros(0, 3),
    scalar = ember.tensor(42.5),
  }
end

describe("ember.load(path, {mmap = true})", function()
  it("gives every dtype, shape and the metadata exactly as a plain load", function()
    local p = path("all.safetensors")
    ember.save(p, every_dtype(), {metadata = {epoch = 3, note = "x"}})
    local read, rmeta = ember.load(p)
    local mapped, mmeta = mmap_load(p)
    assert.are.same(rmeta, mmeta)
    assert.are.same({epoch = "3", note = "x"}, mmeta)
    local n = 0
    for name, want in pairs(read) do
      local got = mapped[name]
      assert(got, "missing " .. name)
      assert.are.equal(want.dtype, got.dtype, name)
      assert.are.same(want.shape, got.shape, name)
      assert.is_true(ember.equal(want, got), name)
      assert.is_true(got:is_contiguous(), name)
      assert.are.equal("cpu", got.device, name)
      n = n + 1
    end
    for name in pairs(mapped) do assert(read[name], "extra " .. name) end
    assert.are.equal(10, n)
  end)

  it("gives back a table saved with plain values (an optimizer's state_dict)", function()
    local p = path("opt.safetensors")
    local fc = ember.nn.Linear(3, 2)
    local opt = ember.optim.Adam(fc:parameters(), {lr = 0.01})
    fc(ember.ones(1, 3)):sum():backward()
    opt:step()
    ember.save(p, opt:state_dict())
    local back = mmap_load(p)
    assert.are.equal(1, back.state[1].step)
    assert.is_true(ember.equal(back.state[1].exp_avg, opt:state_dict().state[1].exp_avg))
    local opt2 = ember.optim.Adam(ember.nn.Linear(3, 2):parameters(), {lr = 0.01})
    opt2:load_state_dict(back)
  end)

  it("makes views of the file's pages: a change to the file shows in a mapped tensor, not in a read one", function()
    -- the hazard mapping.h documents, used here as the proof that no copy was made
    local p = path("view.safetensors")
    ember.save(p, {a = ember.zeros(4), b = ember.ones(2, {dtype = "int64"}), flag = ember.tensor({true, false})})
    local read = ember.load(p)
    local mapped = mmap_load(p)
    patch_file(p, data_start(p, "a") + 4, string.pack("<f", 9.5))
    patch_file(p, data_start(p, "b"), string.pack("<i8", -3))
    patch_file(p, data_start(p, "flag") + 1, "\1")
    assert.are.same({0, 9.5, 0, 0}, mapped.a:tolist())
    assert.are.same({-3, 1}, mapped.b:tolist())
    assert.are.same({true, true}, mapped.flag:tolist())
    assert.are.same({0, 0, 0, 0}, read.a:tolist())
    assert.are.same({1, 1}, read.b:tolist())
  end)

  it("writes in place copy-on-write: the tensor changes, the file's bytes never do", function()
    local p = path("cow.safetensors")
    ember.save(p, {w = ember.arange(1000):float(), h = ember.ones(3, {dtype = "float16"})})
    local before = H.read_file(p)
    local t = mmap_load(p)
    local other = mmap_load(p)
    t.w:add_(1)
    t.w[1] = -5
    t.h:mul_(4)
    t.w:narrow(1, 10, 5):zero_()
    assert.are.equal(-5, t.w[1]:item())
    assert.are.equal(3, t.w[3]:item())
    assert.are.equal(0, t.w[12]:item())
    assert.are.same({4, 4, 4}, t.h:tolist())
    assert.are.equal(before, H.read_file(p))
    -- another mapping of the file is private too
    assert.are.equal(0, other.w[1]:item())
    assert.are.same({1, 1, 1}, other.h:tolist())
    assert.are.equal(2, ember.load(p).w[3]:item())
    -- a copy-on-write page stops following the file; an untouched one still does
    patch_file(p, data_start(p, "w") + 4 * 2, string.pack("<f", 77))
    assert.are.equal(3, t.w[3]:item())
    assert.are.equal(77, other.w[3]:item())
  end)

  it("keeps the file mapped while any tensor or view uses it, and unmaps it after the last", function()
    local p = path("life.safetensors")
    ember.save(p, {a = ember.arange(2048):float(), b = ember.arange(10):double()})
    if mappings_of(p) == nil then pending("no /proc/self/maps") return end
    collect()
    assert.are.equal(0, mappings_of(p))
    local t = mmap_load(p)
    assert.are.equal(1, mappings_of(p))      -- one mapping for every tensor of the file
    local v = t.a:narrow(1, 2001, 5)
    local b = t.b
    t = nil
    collect()
    assert.are.equal(1, mappings_of(p))
    b = nil
    collect()
    assert.are.equal(1, mappings_of(p))      -- the view keeps it
    assert.are.same({2000, 2001, 2002, 2003, 2004}, v:tolist())
    v = nil
    collect()
    assert.are.equal(0, mappings_of(p))
    -- a plain load maps nothing
    local r = ember.load(p)
    assert.are.equal(0, mappings_of(p))
    assert.are.equal(2047, r.a[-1]:item())
  end)

  it("stays valid after the file is removed or replaced by ember.save", function()
    local p = path("gone.safetensors")
    ember.save(p, {w = ember.arange(5):float()})
    local t = mmap_load(p)
    ember.save(p, {w = ember.zeros(5)})      -- a new file renamed over the old one
    assert.are.same({0, 1, 2, 3, 4}, t.w:tolist())
    os.remove(p)
    collect()
    assert.are.same({0, 1, 2, 3, 4}, t.w:tolist())
    assert.are.equal(10, t.w:sum():item())
  end)

  it("copies a tensor whose data is not aligned to its element size, with the right values", function()
    -- a u8 [3] first puts f32, f64, i64, f16 and i32 at addresses that are
    -- not multiples of their element sizes (the header padded to 8 bytes, as
    -- writers do)
    local data = "\1\2\3" .. string.pack("<ff", 1.5, -2) .. string.pack("<d", 0.1) .. string.pack("<i8", -9)
                 .. string.pack("<i2", 0x3c00) .. string.pack("<i4", 123456)
    local json = '{"u":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},'
              .. '"f":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},'
              .. '"d":{"dtype":"F64","shape":[1],"data_offsets":[11,19]},'
              .. '"i":{"dtype":"I64","shape":[1,1],"data_offsets":[19,27]},'
              .. '"h":{"dtype":"F16","shape":[1],"data_offsets":[27,29]},'
              .. '"k":{"dtype":"I32","shape":[1],"data_offsets":[29,33]}}'
    json = json .. string.rep(" ", (8 - #json % 8) % 8)
    local p = path("misaligned.safetensors")
    write_file(p, st(json, data))
    local function check(t)
      assert.are.same({1, 2, 3}, t.u:tolist())
      assert.are.same({1.5, -2}, t.f:tolist())
      assert.are.equal(0.1, t.d[1]:item())
      assert.are.same({{-9}}, t.i:tolist())
      assert.are.same({1}, t.h:tolist())
      assert.are.same({123456}, t.k:tolist())
      -- kernels run on them (through BLAS too)
      assert.are.equal(-0.5, t.f:sum():item())
      assert.are.same({{1.5 * 1.5 + 4}}, t.f:view(1, 2):matmul(t.f:view(2, 1)):tolist())
    end
    local t = mmap_load(p)
    check(t)
    local f <close> = ember.safe_open(p)
    local ft = {}
    for _, k in ipairs(f:keys()) do ft[k] = f:get_tensor(k) end
    check(ft)
    -- copies: the file changed under them does not show; the u8 one (any
    -- address is aligned for a byte) is a view and does
    patch_file(p, 8 + #json, "\9")
    patch_file(p, 8 + #json + 3, string.pack("<f", 7))
    assert.are.same({1.5, -2}, t.f:tolist())
    assert.are.same({1.5, -2}, ft.f:tolist())
    assert.are.equal(9, t.u[1]:item())
    assert.are.equal(9, ft.u[1]:item())
  end)

  it("reads bool bytes other than 0 and 1 as true, copying such a tensor", function()
    local p = path("bool.safetensors")
    write_file(p, st('{"m":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}}', "\0\2\255\1"))
    local t = mmap_load(p)
    assert.are.same({false, true, true, true}, t.m:tolist())
    assert.are.equal(3, t.m:sum():item())
    assert.is_true(ember.equal(t.m, ember.tensor({false, true, true, true})))
    -- the bytes are 0 and 1 (ops read any non-zero byte as true; a save shows the bytes)
    local q = path("bool-again.safetensors")
    ember.save(q, {m = t.m})
    assert.are.equal("\0\1\1\1", H.read_file(q):sub(-4))
    local f <close> = ember.safe_open(p)
    assert.are.same({false, true, true, true}, f:get_tensor("m"):tolist())
  end)

  it("refuses a truncated file at load, before mapping it", function()
    local p = path("short.safetensors")
    ember.save(p, {a = ember.ones(1024), b = ember.ones(3)})
    local bytes = H.read_file(p)
    write_file(p, bytes:sub(1, #bytes - 4))
    H.has(H.err(mmap_load, p), "load: " .. p .. ": truncated file: tensor \"b\" ends at byte 4108 of the "
                               .. "data section, which has 4104")
    H.has(H.err(ember.safe_open, p), "safe_open: " .. p .. ": truncated file")
    if mappings_of(p) then assert.are.equal(0, mappings_of(p)) end
  end)

  it("refuses every truncation of a good file, and every damaged or malicious file", function()
    local good = hostile.safetensors_good()
    local p = path("cut.safetensors")
    write_file(p, good)
    assert.are.equal(-7, (mmap_load(p)).b:item())
    for k = 0, #good - 1 do
      write_file(p, good:sub(1, k))
      local ok, err = pcall(mmap_load, p)
      assert.is_false(ok, "a " .. k .. "-byte prefix loaded")
      H.has(err, "load: " .. p .. ": ")
      ok, err = pcall(ember.safe_open, p)
      assert.is_false(ok, "a " .. k .. "-byte prefix opened")
      H.has(err, "safe_open: " .. p .. ": ")
    end
    assert.are.same({}, hostile.check_all(hostile.safetensors_cases(), dir, mmap_load, "load: "))
    assert.are.same({}, hostile.check_all(hostile.safetensors_cases(), dir, ember.safe_open, "safe_open: "))
  end)

  it("checks its option, names the op and the file, and raises at the caller's line", function()
    local p = path("opt.safetensors")
    ember.save(p, {a = ember.ones(1)})
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() return ember.load(p, {mmap = "yes"}) end)
    assert.is_false(ok)
    H.has(err, "load_mmap_spec.lua:" .. line .. ": load: argument 2: mmap must be a boolean, got string")
    H.has(H.err(ember.load, path("none.safetensors"), {mmap = true}), "load: " .. path("none.safetensors")
                                                                         .. ": No such file or directory")
    H.has(H.err(ember.load, dir, {mmap = true}), "load: " .. dir .. ": is a directory")
    H.has(H.err(ember.load, "/dev/zero", {mmap = true}), "load: /dev/zero: not a regular file")
    -- mmap = false is a plain load
    local t = ember.load(p, {mmap = false})
    assert.are.same({1}, t.a:tolist())
  end)

  it("accepts mmap for a torch.save file and reads its tensors", function()
    local D = H.FIXTURES .. "torchfile/"
    local a = ember.load(D .. "model.pt")
    local b = ember.load(D .. "model.pt", {mmap = true})
    local n = 0
    for k, v in pairs(a) do
      assert.is_true(ember.equal(v, b[k]), k)
      n = n + 1
    end
    assert.is_true(n > 0)
  end)

  it("gives tensors that train: a model loads mapped weights and steps", function()
    local p = path("model.safetensors")
    ember.manual_seed(3)
    local m = ember.nn.Linear(4, 2)
    ember.save(p, m:state_dict())
    local before = H.read_file(p)
    local m2 = ember.nn.Linear(4, 2)
    m2:load_state_dict(mmap_load(p))
    assert.is_true(ember.equal(m.weight, m2.weight))
    local opt = ember.optim.SGD(m2:parameters(), {lr = 0.1})
    m2(ember.ones(3, 4)):sum():backward()
    opt:step()
    assert.is_false(ember.equal(m.weight, m2.weight))
    assert.are.equal(before, H.read_file(p))
  end)
end)

describe("ember.safe_open", function()
  local p = path("sharded-1.safetensors")
  ember.save(p, {["model.b"] = ember.arange(3):float(), ["model.a"] = ember.ones(2, 2, {dtype = "bfloat16"}),
                 z = ember.tensor({1, 2}, {dtype = "int32"})}, {metadata = {format = "pt"}})

  it("lists the names sorted, gives each tensor and the metadata", function()
    local f <close> = ember.safe_open(p, {framework = "pt", device = "cpu"})
    assert.are.same({"model.a", "model.b", "z"}, f:keys())
    assert.are.same({format = "pt"}, f:metadata())
    assert.are.same({0, 1, 2}, f:get_tensor("model.b"):tolist())
    local a = f:get_tensor("model.a")
    assert.are.equal("bfloat16", a.dtype)
    assert.are.same({{1, 1}, {1, 1}}, a:tolist())
    assert.are.equal("int32", f:get_tensor("z").dtype)
  end)

  it("gives nil metadata for a file without any, and an empty table for an empty one", function()
    local q = path("nometa.safetensors")
    ember.save(q, {x = ember.ones(1)})
    local f = ember.safe_open(q)
    assert.is_nil(f:metadata())
    f:close()
    write_file(q, st('{"__metadata__":{},"x":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}', "\7"))
    f = ember.safe_open(q)
    assert.are.same({}, f:metadata())
    assert.are.equal(7, f:get_tensor("x"):item())
    f:close()
  end)

  it("reads only what it is asked for: tensors are views of the mapping", function()
    local q = path("lazy.safetensors")
    ember.save(q, {a = ember.zeros(3), b = ember.zeros(3)})
    local f <close> = ember.safe_open(q)
    local a = f:get_tensor("a")
    patch_file(q, data_start(q, "a"), string.pack("<f", 4))
    patch_file(q, data_start(q, "b"), string.pack("<f", 5))
    assert.are.same({4, 0, 0}, a:tolist())
    assert.are.same({5, 0, 0}, f:get_tensor("b"):tolist())
    -- one mapping for the file, as safetensors' safe_open: a write to a
    -- tensor is private to the process, and seen by a later get_tensor of it
    a:add_(1)
    assert.are.same({5, 1, 1}, f:get_tensor("a"):tolist())
    local raw = H.read_file(q)
    assert.are.equal(string.pack("<f", 4), raw:sub(data_start(q, "a") + 1, data_start(q, "a") + 4))
  end)

  it("keeps tensors valid after close; the handle refuses use after it", function()
    local f = ember.safe_open(p)
    local b = f:get_tensor("model.b")
    f:close()
    f:close()    -- twice is fine
    collect()
    assert.are.same({0, 1, 2}, b:tolist())
    H.has(H.err(f.get_tensor, f, "z"), "get_tensor: " .. p .. ": the file is closed")
    H.has(H.err(f.keys, f), "keys: " .. p .. ": the file is closed")
    H.has(H.err(f.metadata, f), "metadata: " .. p .. ": the file is closed")
    do
      local g <close> = ember.safe_open(p)
      b = g:get_tensor("z")
      f = g
    end
    H.has(H.err(f.keys, f), "the file is closed")
    assert.are.same({1, 2}, b:tolist())
  end)

  it("names the op, the file and what was wrong", function()
    local f <close> = ember.safe_open(p)
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() return f:get_tensor("model.c") end)
    assert.is_false(ok)
    H.has(err, "load_mmap_spec.lua:" .. line .. ": get_tensor: " .. p .. ': the file has no tensor "model.c"')
    H.has(H.err(function() return f:get_tensor(3) end),
          "get_tensor: argument 1: expected a tensor name (string), got number")
    H.has(H.err(ember.safe_open, p, {framework = "np"}), 'safe_open: argument 2: framework must be "pt"')
    H.has(H.err(ember.safe_open, p, "pt"), "safe_open: argument 2: expected an options table")
    H.has(H.err(ember.safe_open, p, {device = "tpu"}), "safe_open")
    H.has(H.err(ember.safe_open, path("missing")), "safe_open: " .. path("missing") .. ": No such file")
    H.has(H.err(ember.safe_open, ""), "safe_open")
    H.has(H.err(ember.safe_open, dir), "safe_open: " .. dir .. ": is a directory")
  end)
end)
