-- data_spec.lua — ember.read_idx, ember.data's Dataset / TensorDataset /
-- DataLoader and the Fashion-MNIST files. IDX files are written here byte by
-- byte with string.pack, independently of the reader.
local ember = require "ember"
local data = require "ember.data"
local H = require "helpers"

local tmpfiles = {}

local function write_bytes(bytes)
  local path = os.tmpname()
  tmpfiles[#tmpfiles + 1] = path
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  return path
end

-- an IDX file: type code, dims, then the packed values
local function idx_bytes(code, dims, fmt, values)
  local parts = {string.char(0, 0, code, #dims)}
  for _, d in ipairs(dims) do parts[#parts + 1] = string.pack(">I4", d) end
  for _, v in ipairs(values or {}) do parts[#parts + 1] = string.pack(fmt, v) end
  return table.concat(parts)
end

local function have_gzip()
  return os.execute("command -v gzip >/dev/null 2>&1") == true
end

local function gzip(path)
  assert(os.execute("gzip -c '" .. path .. "' > '" .. path .. ".gz'"))
  tmpfiles[#tmpfiles + 1] = path .. ".gz"
  return path .. ".gz"
end

teardown(function()
  for _, p in ipairs(tmpfiles) do os.remove(p) end
end)

describe("read_idx", function()
  it("reads unsigned bytes as uint8 with the file's shape", function()
    local path = write_bytes(idx_bytes(0x08, {2, 3}, "B", {0, 1, 127, 128, 200, 255}))
    local t = ember.read_idx(path)
    assert.equal("uint8", t.dtype)
    H.check_shape(t, {2, 3})
    H.check(t, {{0, 1, 127}, {128, 200, 255}})
  end)

  it("widens signed bytes and int16 to int32, keeps int32", function()
    local t = ember.read_idx(write_bytes(idx_bytes(0x09, {4}, ">i1", {0, 127, -128, -1})))
    assert.equal("int32", t.dtype)
    H.check(t, {0, 127, -128, -1})
    t = ember.read_idx(write_bytes(idx_bytes(0x0B, {2, 2}, ">i2", {258, 32767, -32768, -2})))
    assert.equal("int32", t.dtype)
    H.check(t, {{258, 32767}, {-32768, -2}})
    t = ember.read_idx(write_bytes(idx_bytes(0x0C, {3}, ">i4", {16909060, -2147483648, -1})))
    assert.equal("int32", t.dtype)
    H.check(t, {16909060, -2147483648, -1})
  end)

  it("reads float32 and float64", function()
    local t = ember.read_idx(write_bytes(idx_bytes(0x0D, {1, 1, 3}, ">f", {1.5, -0.25, 1e30})))
    assert.equal("float32", t.dtype)
    H.check_shape(t, {1, 1, 3})
    -- 1e30 as float32, through string.pack/unpack (not through the reader)
    local f30 = string.unpack(">f", string.pack(">f", 1e30))
    H.check(t, {{{1.5, -0.25, f30}}})
    t = ember.read_idx(write_bytes(idx_bytes(0x0E, {2}, ">d", {0.1, -1e300})))
    assert.equal("float64", t.dtype)
    H.check(t, {0.1, -1e300})
  end)

  it("reads gzip-compressed files", function()
    if not have_gzip() then pending("no gzip command") return end
    local vals = {}
    for i = 1, 1000 do vals[i] = (i * 37) % 256 end
    local path = gzip(write_bytes(idx_bytes(0x08, {10, 100}, "B", vals)))
    local t = ember.read_idx(path)
    H.check_shape(t, {10, 100})
    local flat = t:view(-1):tolist()
    assert.same(vals, flat)
    path = gzip(write_bytes(idx_bytes(0x0B, {3}, ">i2", {-5, 7, 300})))
    H.check(ember.read_idx(path), {-5, 7, 300})
  end)

  it("reads a dimension of size 0 as an empty tensor", function()
    local t = ember.read_idx(write_bytes(idx_bytes(0x08, {0, 28, 28})))
    H.check_shape(t, {0, 28, 28})
    assert.equal(0, t:numel())
  end)

  it("refuses bad files with a message naming the op and the file", function()
    local function err(bytes) return H.err(ember.read_idx, write_bytes(bytes)) end
    local e = err(string.char(1, 0, 8, 1) .. string.pack(">I4", 1) .. "x")
    H.has(e, "read_idx: /")
    H.has(e, "not an IDX file")
    H.has(err(string.char(0, 0, 0x0A, 1) .. string.pack(">I4", 1) .. "x"), "unknown IDX data type 0x0a")
    H.has(err(string.char(0, 0, 8, 0)), "0 dimensions (expected 1..16)")
    H.has(err(string.char(0, 0, 8, 17) .. string.rep("\0\0\0\1", 17)), "17 dimensions")
    H.has(err(""), "truncated header (0 of 4 magic bytes)")
    H.has(err(string.char(0, 0, 8, 2, 0, 0, 0, 3)), "truncated header (4 of 8 size bytes)")
    H.has(err(idx_bytes(0x08, {10000, 28, 28}) .. string.rep("\7", 100)),
          "truncated (expected 7840000 data bytes, got 100)")
    H.has(err(idx_bytes(0x0C, {2}) .. string.rep("\0", 6)), "truncated (expected 8 data bytes, got 6)")
    H.has(err(idx_bytes(0x08, {3}) .. "abcd"), "unexpected bytes after the 3 data bytes")
    H.has(err(idx_bytes(0x0E, {0x7fffffff, 0x7fffffff})), "more than the 16 GiB limit")
    H.has(err(idx_bytes(0x08, {0x80000000})), "negative as a signed 32-bit integer")
  end)

  it("refuses a truncated gzip file", function()
    if not have_gzip() then pending("no gzip command") return end
    local vals = {}
    for i = 1, 5000 do vals[i] = (i * 2654435761 >> 13) % 256 end
    local gz = gzip(write_bytes(idx_bytes(0x08, {5000}, "B", vals)))
    local f = assert(io.open(gz, "rb"))
    local bytes = f:read("a")
    f:close()
    local cut = write_bytes(bytes:sub(1, #bytes // 2))
    H.has(H.err(ember.read_idx, cut), "truncated (expected 5000 data bytes")
  end)

  it("reports missing files, directories and wrong arguments", function()
    H.has(H.err(ember.read_idx, "/nonexistent/x.idx"), "read_idx: /nonexistent/x.idx: No such file or directory")
    H.has(H.err(ember.read_idx, "/tmp"), "read_idx: /tmp: is a directory")
    H.has(H.err(ember.read_idx, 42), "read_idx: argument 1: expected a file path")
    H.has(H.err(ember.read_idx), "read_idx: argument 1: expected a file path")
    H.has(H.err(ember.read_idx, ""), "read_idx: argument 1: empty file name")
    -- "x\0y" would open "x"
    H.has(H.err(ember.read_idx, write_bytes(idx_bytes(0x08, {1}, "B", {1})) .. "\0junk"),
          "read_idx: argument 1: file name contains a zero byte")
    -- a file that opens but cannot be read
    H.has(H.err(ember.read_idx, "/proc/self/mem"), "read_idx: /proc/self/mem: read failed: Input/output error")
  end)
end)

describe("hostile IDX files", function()
  local hostile = require "hostile"
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("every damaged plain file gives an error naming the file and the problem", function()
    assert.are.same({}, hostile.check_all(hostile.idx_cases(), dir, ember.read_idx, "read_idx: "))
  end)

  it("every damaged gzip file gives an error naming the file and the problem", function()
    local cases, gz = hostile.idx_gzip_cases(dir)
    if not cases then pending("no gzip command") return end
    -- the good file itself loads
    local p = dir .. "/good.gz"
    hostile.write(p, gz)
    H.check_shape(ember.read_idx(p), {3, 4, 5})
    assert.are.same({}, hostile.check_all(cases, dir, ember.read_idx, "read_idx: "))
  end)

  -- the reported bug: gzip's 8-byte trailer (CRC-32, length) cut off
  it("refuses a gzip file without its trailer", function()
    local gz = hostile.gzip(hostile.idx_good(), dir)
    if not gz then pending("no gzip command") return end
    local p = dir .. "/no-trailer.gz"
    hostile.write(p, gz:sub(1, -9))
    H.has(H.err(ember.read_idx, p), "read_idx: " .. p .. ": truncated or corrupt gzip file")
  end)

  it("reads concatenated gzip members as one file (gzip -c a b > ab)", function()
    local good = hostile.idx_good()
    local a, b = hostile.gzip(good:sub(1, 20), dir), hostile.gzip(good:sub(21), dir)
    if not a then pending("no gzip command") return end
    local p = dir .. "/two.gz"
    hostile.write(p, a .. b)
    local t = ember.read_idx(p)
    H.check_shape(t, {3, 4, 5})
    assert.are.equal((60 * 7) % 251, t[3][4][5]:item())
  end)

  -- Fashion-MNIST files in a folder of our own
  local function fm_root(images, labels)
    local root = dir .. "/fm"
    os.execute("rm -rf " .. root .. " && mkdir -p " .. root)
    for _, split in ipairs({"train", "t10k"}) do
      hostile.write(root .. "/" .. split .. "-images-idx3-ubyte", images)
      hostile.write(root .. "/" .. split .. "-labels-idx1-ubyte", labels)
    end
    return root
  end

  it("the Fashion-MNIST loader names the bad file", function()
    local img = hostile.idx_file(0x08, {2, 28, 28}, string.rep("\0", 2 * 784))
    local lab = hostile.idx_file(0x08, {2}, "\1\2")
    local root = fm_root(img, lab)
    -- a well-formed pair of the wrong length for the training set
    H.has(H.err(data.fashion_mnist, root), root .. "/train-images-idx3-ubyte: expected 60000 images, got 2")
    root = fm_root(img:sub(1, -2), lab)
    H.has(H.err(data.fashion_mnist, root), "read_idx: " .. root .. "/train-images-idx3-ubyte: truncated")
    root = fm_root(hostile.idx_file(0x0D, {2, 28, 28}, string.rep("\0", 8 * 784)), lab)
    H.has(H.err(data.fashion_mnist, root), root .. "/train-images-idx3-ubyte: expected uint8 images [N,28,28], got float32")
    root = fm_root(hostile.idx_file(0x08, {2, 27, 29}, string.rep("\0", 2 * 27 * 29)), lab)
    H.has(H.err(data.fashion_mnist, root), "expected uint8 images [N,28,28], got uint8 [2,27,29]")
    root = fm_root(img, hostile.idx_file(0x08, {3}, "\1\2\3"))
    H.has(H.err(data.fashion_mnist, root), root .. "/train-labels-idx1-ubyte: expected 2 uint8 labels, got uint8 [3]")
    root = fm_root(img, hostile.idx_file(0x08, {2}, "\1\200"))
    H.has(H.err(data.fashion_mnist, root), root .. "/train-labels-idx1-ubyte: labels must be class numbers 0..9, found 200")
    root = fm_root(img, lab)
    os.remove(root .. "/train-labels-idx1-ubyte")
    assert(os.execute("mkdir " .. root .. "/train-labels-idx1-ubyte.gz"))
    H.has(H.err(data.fashion_mnist, root), "read_idx: " .. root .. "/train-labels-idx1-ubyte.gz: is a directory")
    local gz = hostile.gzip(lab, dir)
    if gz then
      root = fm_root(img, lab)
      os.remove(root .. "/train-labels-idx1-ubyte")
      hostile.write(root .. "/train-labels-idx1-ubyte.gz", gz:sub(1, -9))
      H.has(H.err(data.fashion_mnist, root), root .. "/train-labels-idx1-ubyte.gz: truncated or corrupt gzip file")
    end
  end)
end)

describe("Dataset", function()
  local Squares = data.Dataset:extend("Squares")
  function Squares:init(n) self.n = n end
  function Squares:len() return self.n end
  function Squares:get(i) return ember.tensor({i, -i}), i * i end

  it("answers #ds, ds[i] (a table of fields) and ds:get(i)", function()
    local ds = Squares(5)
    assert.equal(5, #ds)
    local s = ds[3]
    H.check(s[1], {3, -3})
    assert.equal(9, s[2])
    local x, y = ds:get(4)
    H.check(x, {4, -4})
    assert.equal(16, y)
    assert.equal("Squares(5 samples)", tostring(ds))
  end)

  it("says what a subclass must define", function()
    local Empty = data.Dataset:extend("Empty")
    local ds = Empty()
    H.has(H.err(function() return #ds end), "Empty: len() is not implemented")
    H.has(H.err(function() return ds[1] end), "Empty: get(i) is not implemented")
  end)

  it("subclasses of subclasses inherit methods", function()
    local Shifted = Squares:extend("Shifted")
    function Shifted:get(i) return Squares.get(self, i + 1) end
    local ds = Shifted(3)
    assert.equal(3, #ds)
    assert.equal(16, ds[3][2])
  end)
end)

describe("TensorDataset", function()
  it("indexes rows of every tensor", function()
    local x = ember.arange(12):view(4, 3)
    local y = ember.tensor({10, 20, 30, 40})
    local ds = data.TensorDataset(x, y)
    assert.equal(4, #ds)
    local a, b = ds:get(2)
    H.check(a, {3, 4, 5})
    assert.equal(0, b:dim())            -- a 0-d tensor, as in PyTorch
    assert.equal(20, b:item())
    local s = ds[4]
    H.check(s[1], {9, 10, 11})
    assert.equal(40, s[2]:item())
    assert.equal(2, s.n)
  end)

  it("refuses bad arguments and indices", function()
    H.has(H.err(data.TensorDataset), "TensorDataset: expected at least one tensor")
    H.has(H.err(data.TensorDataset, ember.zeros(3), ember.zeros(4)),
          "TensorDataset: argument 2 has 4 rows, argument 1 has 3")
    H.has(H.err(data.TensorDataset, ember.zeros(3), "y"), "TensorDataset: argument 2: expected a tensor")
    H.has(H.err(data.TensorDataset, ember.tensor(1)), "0-d")
    local ds = data.TensorDataset(ember.zeros(3, 2))
    H.has(H.err(function() return ds:get(0) end), "TensorDataset: index 0 out of range (expected 1..3)")
    H.has(H.err(function() return ds[4] end), "index 4 out of range")
    H.has(H.err(function() return ds:get(1.5) end), "index 1.5 out of range")
  end)
end)

describe("DataLoader", function()
  local function rows(n)
    -- x row i is {i, 100 + i}; y[i] = i
    local x = ember.stack({ember.arange(1, n + 1), ember.arange(101, 101 + n)}, 2)
    return data.TensorDataset(x, ember.arange(1, n + 1))
  end

  -- the y values of one epoch, in order, and the batch sizes
  local function epoch_of(loader)
    local seen, sizes = {}, {}
    for x, y in loader:iter() do
      sizes[#sizes + 1] = x:size(1)
      -- x and y stay aligned: x's first column is y
      assert.same(y:tolist(), x:select(2, 1):tolist())
      for _, v in ipairs(y:tolist()) do seen[#seen + 1] = v end
    end
    return seen, sizes
  end

  it("makes batches in order, with a short last batch", function()
    local loader = data.DataLoader(rows(10), {batch_size = 4})
    assert.equal(3, #loader)
    local shapes = {}
    for x, y in loader:iter() do
      shapes[#shapes + 1] = {x.shape[1], x.shape[2], y.shape[1]}
    end
    assert.same({{4, 2, 4}, {4, 2, 4}, {2, 2, 2}}, shapes)
    local seen = epoch_of(loader)
    assert.same({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seen)
    local first = loader:iter()()
    H.check(first, {{1, 101}, {2, 102}, {3, 103}, {4, 104}})
  end)

  it("drop_last drops the short batch", function()
    local loader = data.DataLoader(rows(10), {batch_size = 4, drop_last = true})
    assert.equal(2, #loader)
    local seen, sizes = epoch_of(loader)
    assert.same({4, 4}, sizes)
    assert.same({1, 2, 3, 4, 5, 6, 7, 8}, seen)
    assert.equal(0, #data.DataLoader(rows(3), {batch_size = 4, drop_last = true}))
    assert.equal(1, #data.DataLoader(rows(3), {batch_size = 4}))
    assert.equal(3, #data.DataLoader(rows(3)))        -- batch_size defaults to 1
  end)

  it("batches are copies: writing into one leaves the dataset alone", function()
    local ds = rows(4)
    local x = data.DataLoader(ds, {batch_size = 2}):iter()()
    x:fill_(0)
    H.check(ds.tensors[1]:select(2, 1), {1, 2, 3, 4})
  end)

  it("shuffling visits every sample exactly once per epoch", function()
    local n = 103
    local loader = data.DataLoader(rows(n), {batch_size = 10, shuffle = true, seed = 7})
    for _ = 1, 3 do
      local seen, sizes = epoch_of(loader)
      assert.equal(11, #sizes)
      assert.equal(3, sizes[11])
      local count = {}
      for _, v in ipairs(seen) do count[v] = (count[v] or 0) + 1 end
      for i = 1, n do assert.equal(1, count[i]) end
      assert.equal(n, #seen)
    end
  end)

  it("the same seed gives the same order; epochs differ", function()
    local a = data.DataLoader(rows(50), {batch_size = 8, shuffle = true, seed = 3})
    local b = data.DataLoader(rows(50), {batch_size = 8, shuffle = true, seed = 3})
    local a1, b1 = epoch_of(a), epoch_of(b)
    assert.same(a1, b1)
    local a2, b2 = epoch_of(a), epoch_of(b)
    assert.same(a2, b2)
    assert.are_not.same(a1, a2)
    local in_order = {}
    for i = 1, 50 do in_order[i] = i end
    assert.are_not.same(in_order, a1)
    local c = data.DataLoader(rows(50), {batch_size = 8, shuffle = true, seed = 4})
    assert.are_not.same(a1, epoch_of(c))
    -- set_epoch replays an epoch (resuming a run)
    a:set_epoch(2)
    assert.same(a2, epoch_of(a))
    assert.equal(2, a.epoch)
    a:set_epoch(1)
    assert.same(a1, epoch_of(a))
  end)

  it("a seeded loader leaves the global generator alone", function()
    ember.manual_seed(11)
    local want = ember.rand(5):tolist()
    ember.manual_seed(11)
    epoch_of(data.DataLoader(rows(30), {batch_size = 4, shuffle = true, seed = 1}))
    assert.same(want, ember.rand(5):tolist())
  end)

  it("without a seed, ember.manual_seed makes the order reproducible", function()
    local loader = data.DataLoader(rows(40), {batch_size = 6, shuffle = true})
    ember.manual_seed(5)
    local a = epoch_of(loader)
    ember.manual_seed(5)
    local b = epoch_of(loader)
    assert.same(a, b)
    assert.are_not.same(a, epoch_of(loader))   -- the stream moved on
  end)

  it("collates samples of a Lua dataset: tensors stacked, numbers to a tensor", function()
    local Squares = data.Dataset:extend("Squares")
    function Squares:init(n) self.n = n end
    function Squares:len() return self.n end
    function Squares:get(i) return ember.tensor({i, -i}), i * i, "s" .. i end
    local batches = {}
    for x, y, s in data.DataLoader(Squares(5), {batch_size = 2}):iter() do
      batches[#batches + 1] = {x:tolist(), y:tolist(), s}
    end
    assert.same({
      {{{1, -1}, {2, -2}}, {1, 4}, {"s1", "s2"}},
      {{{3, -3}, {4, -4}}, {9, 16}, {"s3", "s4"}},
      {{{5, -5}}, {25}, {"s5"}},
    }, batches)
  end)

  it("takes a plain table of samples and a collate_fn", function()
    local samples = {{ember.tensor({1.0}), 1}, {ember.tensor({2.0}), 2}, {ember.tensor({3.0}), 3}}
    local loader = data.DataLoader(samples, {batch_size = 2, shuffle = true, seed = 0})
    local total = 0
    for x, y in loader() do
      H.check(x:view(-1), y:to("float32"):tolist())
      total = total + y:sum():item()
    end
    assert.equal(6, total)
    local sums = {}
    local custom = data.DataLoader(samples, {batch_size = 3, collate_fn = function(batch)
      local s = 0
      for _, sample in ipairs(batch) do s = s + sample[2] end
      return s
    end})
    for s in custom:iter() do sums[#sums + 1] = s end
    assert.same({6}, sums)
  end)

  it("refuses bad datasets and options", function()
    H.has(H.err(data.DataLoader, ember.zeros(3)), "DataLoader: argument 1: expected a dataset")
    H.has(H.err(data.DataLoader, ember.zeros(3)), "TensorDataset")
    H.has(H.err(data.DataLoader, 5), "DataLoader: argument 1: expected a dataset")
    H.has(H.err(data.DataLoader, rows(3), {batch_size = 0}), "option 'batch_size': expected a positive integer")
    H.has(H.err(data.DataLoader, rows(3), {batch_size = 1.5}), "option 'batch_size': expected an integer")
    H.has(H.err(data.DataLoader, rows(3), {shuffle = "yes"}), "option 'shuffle': expected a boolean")
    H.has(H.err(data.DataLoader, rows(3), {bacth_size = 2}), "unknown option 'bacth_size'")
    -- batch_size by position, as PyTorch's DataLoader(ds, 4); given twice, or an option ember lacks
    assert.equal(4, data.DataLoader(rows(3), 4).batch_size)
    H.has(H.err(data.DataLoader, rows(3), 4, {batch_size = 2}), "DataLoader: got multiple values for argument 'batch_size'")
    H.has(H.err(data.DataLoader, rows(3), {num_workers = 4}), "DataLoader: option 'num_workers' is not supported")
  end)

  it("is reachable as ember.data", function()
    assert.equal(data, ember.data)
  end)
end)

describe("fashion_mnist", function()
  local root = data.fashion_mnist_root
  local present = io.open(root .. "/train-images-idx3-ubyte.gz", "rb")
  if present then present:close() end

  it("names the package when the files are missing", function()
    local e = H.err(data.fashion_mnist, "/nonexistent/fm")
    H.has(e, "fashion_mnist: /nonexistent/fm/train-images-idx3-ubyte.gz: not found")
    H.has(e, "dataset-fashion-mnist")
  end)

  it("loads the train and test sets", function()
    if not present then pending("dataset-fashion-mnist is not installed") return end
    local fm = data.fashion_mnist()
    assert.equal("uint8", fm.train.images.dtype)
    H.check_shape(fm.train.images, {60000, 28, 28})
    H.check_shape(fm.train.labels, {60000})
    H.check_shape(fm.test.images, {10000, 28, 28})
    H.check_shape(fm.test.labels, {10000})
    assert.equal("int64", fm.train.labels.dtype)
    assert.equal(0, fm.train.labels:min():item())
    assert.equal(9, fm.train.labels:max():item())
    -- the dataset's published balance: 6000 of each class in train, 1000 in test
    for c = 0, 9 do
      assert.equal(6000, fm.train.labels:eq(c):sum():item())
      assert.equal(1000, fm.test.labels:eq(c):sum():item())
    end
    -- the first image and labels against the raw bytes, decompressed by gzip
    if have_gzip() then
      local p = io.popen("gzip -dc " .. root .. "/train-images-idx3-ubyte.gz | head -c 800")
      local raw = p:read("a")
      p:close()
      assert.equal(800, #raw)
      assert.equal(string.char(0, 0, 8, 3), raw:sub(1, 4))
      local want = {}
      for i = 1, 784 do want[i] = raw:byte(16 + i) end
      assert.same(want, fm.train.images[1]:reshape(784):tolist())
      p = io.popen("gzip -dc " .. root .. "/t10k-labels-idx1-ubyte.gz | head -c 28")
      raw = p:read("a")
      p:close()
      local labels = {}
      for i = 1, 20 do labels[i] = raw:byte(8 + i) end
      assert.same(labels, fm.test.labels:narrow(1, 1, 20):tolist())
    end
  end)
end)
