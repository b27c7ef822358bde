-- torchfile_spec.lua — ember.load of PyTorch's torch.save files (.pt / .pth), as
-- torch.load(weights_only=True): files written by PyTorch 2.15
-- (scripts/fixtures/make_torchfile_fixtures.py, values in expected.safetensors),
-- archives built byte by byte (hostile_torch.lua), and what must be refused.
local ember = require "ember"
local H = require "helpers"
local hostile = require "hostile"
local ht = require "hostile_torch"
local nn = ember.nn

local D = H.FIXTURES .. "torchfile/"
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))
local function path(name) return dir .. "/" .. name end

local expected = ember.load(D .. "expected.safetensors")

-- got has dtype and the exact values of expected[name] (float64)
local function same_values(got, name, dtype)
  local want = expected[name]
  assert(want, "no expected " .. name)
  assert(ember.is_tensor(got), name .. ": expected a tensor, got " .. type(got))
  assert.are.equal(dtype, got.dtype, name)
  assert.are.same(want.shape, got.shape, name)
  assert(H.same(got:double():tolist(), want:tolist()), name .. ": values differ from PyTorch's")
end

local function keys_in_order(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  return out
end

local Model = nn.Module:extend("TorchfileModel")
function Model:init()
  self.fc1 = nn.Linear(4, 3)
  self.bn = nn.BatchNorm1d(3)
  self.fc2 = nn.Linear(3, 2)
end
function Model:forward(x) return self.fc2(self.bn(self.fc1(x)):relu()) end

describe("ember.load of torch.save files", function()
  it("a model's state_dict loads into the same ember model, which then gives PyTorch's output", function()
    local sd = ember.load(D .. "model.pt")
    assert.are.same({"fc1.weight", "fc1.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                     "bn.num_batches_tracked", "fc2.weight", "fc2.bias"}, keys_in_order(sd))
    for k, v in pairs(sd) do same_values(v, "model." .. k, k == "bn.num_batches_tracked" and "int64" or "float32") end
    assert.are.same({}, sd["bn.num_batches_tracked"].shape)
    assert.are.equal(3, sd["bn.num_batches_tracked"]:item())
    local m = Model()
    local r = m:load_state_dict(sd)
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    m:eval()
    local y = ember.no_grad(function() return m(expected["model.input"]:float()) end)
    local err = (y:double() - expected["model.output"]):abs():max():item()
    assert(err < 1e-6, "output differs from PyTorch's by " .. err)
  end)

  it("an optimizer's state_dict (torch.optim.Adam) loads into ember's Adam", function()
    local osd = ember.load(D .. "optimizer.pt")
    local g = osd.param_groups[1]
    assert.are.same({0, 1, 2, 3, 4, 5}, g.params)
    assert.are.same({0.9, 0.999}, g.betas)
    assert.are.equal(0.01, g.lr)
    assert.is_false(g.amsgrad)
    assert.is_nil(g.foreach)            -- None
    local m = Model()
    m:load_state_dict(ember.load(D .. "model.pt"))
    local opt = ember.optim.Adam(m:parameters(), {lr = 0.5})
    opt:load_state_dict(osd)
    assert.are.equal(0.01, opt.param_groups[1].lr)
    for i, p in ipairs(m:parameters()) do
      local st = opt.state[p]
      assert.are.equal(3, st.step)
      same_values(st.exp_avg, string.format("optim.%d.exp_avg", i - 1), "float32")
      same_values(st.exp_avg_sq, string.format("optim.%d.exp_avg_sq", i - 1), "float32")
    end
  end)

  it("every dtype ember has, with PyTorch's values; 0-d, empty and non-contiguous tensors", function()
    local t = ember.load(D .. "mixed.pt")
    local dtypes = {f32 = "float32", f64 = "float64", f16 = "float16", bf16 = "bfloat16", i64 = "int64",
                    i32 = "int32", u8 = "uint8", bool = "bool", scalar = "float32", empty = "float32",
                    noncontig = "float32", base = "float32", row = "float32", col = "float32", tview = "float32",
                    param = "float32", grad = "float32"}
    for k, d in pairs(dtypes) do same_values(t[k], "mixed." .. k, d) end
    assert.are.equal(2 ^ 40, t.i64[1]:item() * -1)
    assert.are.same({}, t.scalar.shape)
    assert.are.equal(3.5, t.scalar:item())
    assert.are.same({0, 3}, t.empty.shape)
    assert.is_false(t.noncontig:is_contiguous())
    assert.are.same({1, 4}, {t.noncontig:stride(1), t.noncontig:stride(2)})
  end)

  it("int8 (CharStorage), with the values PyTorch saved", function()
    -- make_torchfile_fixtures.py: {"ok": torch.ones(2), "q": torch.tensor([1, -2], dtype=torch.int8)}
    local t = ember.load(D .. "int8.pt")
    assert.are.equal("int8", t.q.dtype)
    assert.are.same({1, -2}, t.q:tolist())
    assert.are.same({1, 1}, t.ok:tolist())
  end)

  it("keeps the saved key order, and the tensors that share a storage share memory", function()
    local t = ember.load(D .. "mixed.pt")
    assert.are.same({"f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool", "scalar", "empty", "noncontig",
                     "base", "row", "col", "tview", "param", "grad", "nested", "values", "set", "counter", "size",
                     "device", "dtype", "same", "attr", "param_attr"}, keys_in_order(t))
    assert.are.equal(4, t.row:storage_offset())
    assert.are.equal(2, t.col:storage_offset())
    assert.are.equal(4, t.col:stride(1))
    assert.is_false(t.tview:is_contiguous())
    t.base:mul_(-1)
    assert.are.same({-4, -5, -6, -7}, t.row:tolist())
    assert.are.same({-2, -6, -10}, t.col:tolist())
    assert.are.same({-1, -5, -9}, t.tview[2]:tolist())
    assert.are.same({-4, -5, -6, -7}, t.nested.list[1]:tolist())    -- the same view, reached twice
    assert(rawequal(t.same, t.f32), "one tensor pickled twice must load as one")
    -- a key added after loading is still walked by pairs
    t.added = 1
    local ks = keys_in_order(t)
    assert.are.equal("added", ks[#ks])
    t.f64 = nil
    for k in pairs(t) do assert.are_not.equal("f64", k) end
  end)

  it("requires_grad as saved: Parameters and tensors that required grad are leaves that do", function()
    local t = ember.load(D .. "mixed.pt")
    assert.is_true(t.param.requires_grad)
    assert.is_true(t.grad.requires_grad)
    assert.is_false(t.f32.requires_grad)
    -- with Python attributes (_rebuild_from_type_v2, _rebuild_parameter_with_state)
    same_values(t.attr, "mixed.attr", "float32")
    assert.is_false(t.attr.requires_grad)
    same_values(t.param_attr, "mixed.param_attr", "float32")
    assert.is_true(t.param_attr.requires_grad)
    local sd = ember.load(D .. "model.pt")   -- state_dict tensors are detached in PyTorch
    assert.is_false(sd["fc1.weight"].requires_grad)
    local y = (t.param * 2):sum()
    y:backward()
    assert.are.same({2, 2}, t.param.grad:tolist())
  end)

  it("nested containers and plain values", function()
    local t = ember.load(D .. "mixed.pt")
    local l = t.nested.list
    assert.are.same({1, 2.5, "s", true}, {l[2], l[3], l[4], l[5]})
    assert.is_nil(l[6])                            -- None
    assert.are.same({1, 2}, l[7])
    assert.are.equal("x", t.nested.tuple[2])
    same_values(t.nested.tuple[1], "mixed.col", "float32")
    same_values(t.nested.deep.a.b, "mixed.deep", "float32")
    assert.are.same({}, t.nested.empty_list)
    assert.are.same({}, t.nested.empty_dict)
    local v = t.values
    assert.are.equal(7, v.int)
    assert.are.equal(math.tointeger(2 ^ 40), v.big)
    assert.are.equal("integer", math.type(v.big))
    assert.are.equal(-3, v.neg)
    assert.are.equal(math.mininteger, v.huge)
    assert.are.equal(0.1, v.float)
    assert.are.equal(math.huge, v.inf)
    assert.is_false(v["false"])
    assert.is_nil(v.none)
    assert.are.equal("h\u{e9}llo \u{263a}", v.str)
    assert.are.equal("\0\255ab", v.bytes)
    assert.are.equal("xy\128", v.bytearray)
    assert.are.equal("three", v[3])
    assert.are.same({[1] = true, [2] = true}, t.set)
    assert.are.same({a = 2, b = 1}, t.counter)
    assert.are.same({2, 3}, t.size)
    assert.are.equal("cuda:1", t.device)
    assert.are.equal("float16", t.dtype)
  end)

  it("a bare tensor, a deflated archive, an archive without CRCs", function()
    same_values(ember.load(D .. "tensor.pt"), "tensor", "float64")
    local a, b = ember.load(D .. "mixed.pt"), ember.load(D .. "deflated.pt")
    assert.are.same(keys_in_order(a), keys_in_order(b))
    for k, v in pairs(a) do
      if ember.is_tensor(v) then assert.are.same(v:tolist(), b[k]:tolist()) end
    end
    assert.are.same({1, 1, 1}, ember.load(D .. "nocrc.pt").w:tolist())
  end)

  it("a big-endian archive (byteorder \"big\") is read byte-swapped", function()
    local st = {["0"] = string.pack(">ffffff", 1, 2, 3, 4, 5, 6), ["1"] = string.pack(">i8i8", -7, 9)}
    local p = path("big.pt")
    hostile.write(p, ht.torch_file(ht.GOOD_PICKLE, st, {byteorder = "big"}))
    local t = ember.load(p)
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, t.w:tolist())
    assert.are.same({4, 5, 6}, t.v:tolist())
    assert.are.same({-7, 9}, t.n:tolist())
    hostile.write(p, ht.good())
    assert.are.same({-7, 9}, ember.load(p).n:tolist())
  end)

  it("options: device, map_location, weights_only", function()
    local t = ember.load(D .. "tensor.pt", {device = "cpu"})
    assert.are.equal("cpu", t.device)
    assert.are.equal("cpu", ember.load(D .. "tensor.pt", {map_location = "cpu"}).device)
    assert.are.equal("cpu", ember.load(D .. "tensor.pt", {weights_only = true}).device)
    H.has(H.err(ember.load, D .. "tensor.pt", {weights_only = false}),
          "load: argument 2: weights_only must be true or absent: ember never runs code from a file")
    H.has(H.err(ember.load, D .. "tensor.pt", {map_location = function() end}),
          "map_location must be a device string")
    H.has(H.err(ember.load, D .. "tensor.pt", {map_location = "cpu", device = "cpu"}),
          "give device or map_location, not both")
    if not ember.cuda.is_available() then
      pending("no CUDA device: loading onto the GPU is checked where there is one")
      return
    end
    local g = ember.load(D .. "mixed.pt", {device = "cuda"})
    assert.are.equal("cuda:0", g.base.device)
    g.base:mul_(-1)
    assert.are.same({-4, -5, -6, -7}, g.row:tolist())      -- views share memory on the device too
  end)

  it("ember's own safetensors files still load, whatever their first bytes", function()
    local p = path("own.safetensors")
    ember.save(p, {w = ember.arange(3)})
    assert.are.same({0, 1, 2}, ember.load(p).w:tolist())
    -- a header of 640 bytes: the file starts 80 02, as a pickle does
    local json = '{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    json = json .. string.rep(" ", 640 - #json)
    hostile.write(p, string.pack("<I8", #json) .. json .. string.pack("<f", 2.5))
    assert.are.equal(0x80, hostile.safetensors_file(json):byte(1))
    assert.are.same({2.5}, ember.load(p).w:tolist())
  end)
end)

describe("ember.load refuses", function()
  it("a dtype ember lacks, naming it", function()
    H.has(H.err(ember.load, D .. "uint16.pt"), "load: " .. D .. "uint16.pt: a tensor of size [2] has dtype "
          .. "torch.uint16, which ember does not have")
  end)

  it("code: an os.system REDUCE and a custom class are refused, never run", function()
    local marker = "/tmp/ember-torchfile-pwned"
    os.remove(marker)
    H.has(H.err(ember.load, D .. "evil_reduce.pt"), 'data.pkl: GLOBAL "posix.system" is refused')
    assert.is_false(H.exists(marker))
    H.has(H.err(ember.load, D .. "custom_class.pt"), 'GLOBAL "__main__.Custom" is not allowed')
  end)

  it("the legacy format, TorchScript archives and other zips, with what to do instead", function()
    H.has(H.err(ember.load, D .. "legacy.pt"), "PyTorch's legacy format (torch.save before PyTorch 1.6, or a bare "
          .. "pickle) is not supported: re-save it")
    H.has(H.err(ember.load, D .. "torchscript.pt"), "a TorchScript archive (torch.jit.save)")
  end)

  it("errors point at the caller's line", function()
    local ok, e = pcall(function() return ember.load(D .. "uint16.pt") end)
    assert.is_false(ok)
    assert(tostring(e):find("torchfile_spec.lua:%d+: load: "), e)
  end)
end)

describe("hostile torch.save files", function()
  it("every damaged zip container gives an error naming the file and the problem", function()
    assert.are.same({}, hostile.check_all(ht.zip_cases(), dir, ember.load, "load: "))
  end)

  it("every malicious or damaged pickle gives an error naming the file and the problem", function()
    assert.are.same({}, hostile.check_all(ht.pickle_cases(), dir, ember.load, "load: "))
    assert.is_false(H.exists("/tmp/ember-pwned"))
  end)

  it("every truncation of a PyTorch file is refused", function()
    local good = H.read_file(D .. "model.pt")
    local p = path("cut.pt")
    for k = 0, #good - 1 do
      hostile.write(p, good:sub(1, k))
      local ok, err = pcall(ember.load, p)
      assert(not ok, "a " .. k .. "-byte prefix loaded")
      H.has(tostring(err), "load: " .. p .. ": ")
    end
  end)

  it("every one-byte change of an archive loads or gives a load error", function()
    local good = ht.good()
    local p = path("flip.pt")
    for k = 1, #good do
      for _, x in ipairs({0x01, 0x80, 0xff}) do
        hostile.write(p, good:sub(1, k - 1) .. string.char(good:byte(k) ~ x) .. good:sub(k + 1))
        local ok, err = pcall(ember.load, p)
        assert(ok or tostring(err):find("load: " .. p .. ": ", 1, true), "byte " .. k .. ": " .. tostring(err))
      end
    end
  end)

  it("deep nesting and cycles load without recursion", function()
    local P = ht.P
    local p = path("deep.pt")
    local n = 200000
    hostile.write(p, ht.torch_file("\x80\x02" .. string.rep("]", n) .. string.rep("a", n - 1) .. "."))
    local t, depth = ember.load(p), 0
    while t do depth, t = depth + 1, t[1] end
    assert.are.equal(n, depth)
    hostile.write(p, ht.torch_file(P.file("]q\0h\0a")))        -- a list that holds itself
    local l = ember.load(p)
    assert(rawequal(l, l[1]))
  end)
end)
