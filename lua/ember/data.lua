-- ember.data — datasets, batch loaders and the Fashion-MNIST files.
--
--   local data = require "ember.data"          -- also ember.data
--   local fm = data.fashion_mnist()            -- {train = {images, labels}, test = {...}}
--   local ds = data.TensorDataset(fm.train.images, fm.train.labels)
--   local loader = data.DataLoader(ds, {batch_size = 128, shuffle = true, seed = 1})
--   for x, y in loader do ... end              -- x: uint8 [128,28,28], y: int64 [128]
--   (loader:iter() and loader() give the same iterator)
--
-- The dataset protocol. A dataset is an object with two methods:
--   ds:len()    the number of samples
--   ds:get(i)   sample i (1-based), as one or more values (x, y, ...)
-- and optionally a fast path the DataLoader uses when present:
--   ds:get_batch(index)   index: a 1-D int64 tensor of 1-based sample numbers;
--                         returns one batched value per field
-- Write a dataset by extending data.Dataset:
--   local Squares = data.Dataset:extend("Squares")
--   function Squares:init(n) self.n = n end
--   function Squares:len() return self.n end
--   function Squares:get(i) return ember.tensor({i}), i * i end
--   local ds = Squares(10)     -- #ds == 10, ds[3] == {tensor{3}, 9}
-- Instances of Dataset classes also answer #ds and ds[i]; since an index
-- expression gives one value, ds[i] is the table of the sample's fields
-- ({x, y}); ds:get(i) gives them as separate values.
--
-- Fashion-MNIST labels are the file's raw class numbers 0..9. ember's class
-- indices (CrossEntropyLoss targets, argmax results) are 1-based, so training
-- scripts add 1: `loss_fn(logits, y + 1)`.
local ember = require "ember"
local options = require("ember.args").options

local data = {}

-- ---- iterating with `for ... in obj do` -------------------------------------------
--
-- PyTorch's `for x, y in loader:` is `for x, y in loader do` in Lua. Lua 5.4's generic
-- for calls the value it is given, here a table with __call, at every step as
-- obj(state, control): state is nil (the loop has only obj), control is the first value
-- the step before returned, nil at the first step. So a nil control starts a fresh pass
-- (a new epoch), and a loop's next step is found from the value it last returned: its
-- iterator is kept, per object, under that value in a weak table. A loop left by break
-- leaves only that weak entry behind; the next loop starts afresh. Loops over the same
-- object may nest. (A generic for over a bare object gets no to-be-closed value, so none
-- is relied on.)
local loops = setmetatable({}, {__mode = "k"})   -- obj -> {last first value -> iterator}

local function remember(obj, it, first, ...)
  if first ~= nil then
    local mine = loops[obj]
    if not mine then
      mine = setmetatable({}, {__mode = "k"})
      loops[obj] = mine
    end
    mine[first] = it
  end
  return first, ...
end

-- One step of `for ... in obj do`: start(obj) makes the iterator of a fresh pass.
local function for_step(obj, start, name, control)
  local it
  if control == nil then
    it = start(obj)
  else
    local mine = loops[obj]
    it = mine and mine[control]
    if not it then
      error(string.format("%s: called with a loop position it did not return: iterate with `for x, y in %s do`",
                          name, name == "DataLoader" and "loader" or "dataset"), 3)
    end
    mine[control] = nil
  end
  return remember(obj, it, it())
end

-- ---- Dataset ------------------------------------------------------------------

local function is_integer(v) return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v)) end

-- A class's metatable for its instances: integer keys read samples, other
-- keys are looked up in the class (and its parents).
local function instance_index(cls)
  return function(self, key)
    if type(key) == "number" then
      return table.pack(self:get(key))
    end
    return cls[key]
  end
end

-- the samples of a dataset in order, each as its fields (x, y, ...)
local function samples(ds)
  local i, n = 0, ds:len()
  return function()
    i = i + 1
    if i > n then return nil end
    return ds:get(i)
  end
end

local Dataset = {__name = "Dataset"}
Dataset.__index = instance_index(Dataset)
Dataset.__len = function(self) return self:len() end
-- `for x, y in ds do` visits the samples in order (PyTorch's `for x, y in ds:`)
Dataset.__call = function(self, _, control)
  return for_step(self, samples, getmetatable(self).__name or "Dataset", control)
end
Dataset.__tostring = function(self)
  return string.format("%s(%d samples)", getmetatable(self).__name or "Dataset", self:len())
end

local function instantiate(cls, ...)
  local obj = setmetatable({}, cls)
  if cls.init then obj:init(...) end
  return obj
end

-- A subclass: a table of methods whose instances are made by calling it.
function Dataset:extend(name)
  local cls = {__name = name or "Dataset", __len = self.__len, __tostring = self.__tostring, __call = self.__call}
  cls.__index = instance_index(cls)
  return setmetatable(cls, {__index = self, __call = instantiate})
end

function Dataset:len()
  error((getmetatable(self).__name or "Dataset") .. ": len() is not implemented (a Dataset subclass defines len and get)", 2)
end

function Dataset:get()
  error((getmetatable(self).__name or "Dataset") .. ": get(i) is not implemented (a Dataset subclass defines len and get)", 2)
end

setmetatable(Dataset, {__call = instantiate})
data.Dataset = Dataset

-- ---- TensorDataset ---------------------------------------------------------------

-- Samples are the rows (dim 1) of the given tensors, which share that size.
-- A row of a 1-D tensor is a 0-d tensor (as in PyTorch), not a number.
local TensorDataset = Dataset:extend("TensorDataset")

function TensorDataset:init(...)
  local n = select("#", ...)
  if n == 0 then error("TensorDataset: expected at least one tensor", 3) end
  self.tensors = {}
  for k = 1, n do
    local t = select(k, ...)
    if not ember.is_tensor(t) then
      error(string.format("TensorDataset: argument %d: expected a tensor, got %s", k, type(t)), 3)
    end
    if t:dim() == 0 then
      error(string.format("TensorDataset: argument %d: a 0-d tensor has no rows", k), 3)
    end
    if k > 1 and t:size(1) ~= self.tensors[1]:size(1) then
      error(string.format("TensorDataset: argument %d has %d rows, argument 1 has %d (tensors must share dim 1)",
                          k, t:size(1), self.tensors[1]:size(1)), 3)
    end
    self.tensors[k] = t
  end
  self.n = self.tensors[1]:size(1)
end

function TensorDataset:len() return self.n end

function TensorDataset:get(i)
  if not is_integer(i) or i < 1 or i > self.n then
    error(string.format("TensorDataset: index %s out of range (expected 1..%d)", tostring(i), self.n), 2)
  end
  i = math.tointeger(i)
  local rows = {}
  for k, t in ipairs(self.tensors) do rows[k] = t:select(1, i) end
  return table.unpack(rows, 1, #self.tensors)
end

-- One index_select per tensor: a batch costs a few ops whatever its size.
function TensorDataset:get_batch(index)
  local out = {}
  for k, t in ipairs(self.tensors) do out[k] = t:index_select(1, index) end
  return table.unpack(out, 1, #self.tensors)
end

TensorDataset.__tostring = function(self)
  local shapes = {}
  for k, t in ipairs(self.tensors) do
    shapes[k] = "[" .. table.concat(t.shape, ",") .. "] " .. t.dtype
  end
  return string.format("TensorDataset(%d samples: %s)", self.n, table.concat(shapes, ", "))
end

data.TensorDataset = TensorDataset

-- ---- DataLoader --------------------------------------------------------------------

-- Any dataset as (len, get): the protocol's methods, or #ds and ds[i] for a
-- plain table (ds[i] a table of fields, or one value).
local function accessors(ds, op)
  if type(ds) == "table" or type(ds) == "userdata" then
    local ok, len = pcall(function() return ds.len end)
    if ok and type(len) == "function" and type(ds.get) == "function" then
      return function() return ds:len() end, function(i) return ds:get(i) end
    end
  end
  if type(ds) == "table" and not ember.is_tensor(ds) then
    return function() return #ds end, function(i)
      local s = ds[i]
      if type(s) == "table" and not ember.is_tensor(s) then return table.unpack(s, 1, s.n or #s) end
      return s
    end
  end
  error((op or "DataLoader") .. ": argument 1: expected a dataset (an object with len() and get(i), or a table of samples), got "
        .. (ember.is_tensor(ds) and "a tensor (wrap it: data.TensorDataset(t))" or type(ds)), 3)
end

-- Stacks one field of a list of samples: tensors with ember.stack, numbers
-- into a tensor, anything else into a Lua list.
local function collate_field(values)
  local first = values[1]
  if ember.is_tensor(first) then return ember.stack(values, 1) end
  if type(first) == "number" or type(first) == "boolean" then return ember.tensor(values) end
  return values
end

local function default_collate(samples)
  local nfields = samples[1].n
  local out = {}
  for f = 1, nfields do
    local column = {}
    for s = 1, #samples do
      if samples[s].n ~= nfields then
        error(string.format("DataLoader: sample %d has %d fields, sample 1 has %d", s, samples[s].n, nfields), 0)
      end
      column[s] = samples[s][f]
    end
    out[f] = collate_field(column)
  end
  return table.unpack(out, 1, nfields)
end

local DataLoader = {}
DataLoader.__index = DataLoader
DataLoader.__name = "DataLoader"

local function option(opts, name, kind, default, owner)
  local v = opts[name]
  if v == nil then return default end
  owner = owner or "DataLoader"
  if kind == "integer" then
    if not is_integer(v) then
      error(string.format("%s: option '%s': expected an integer, got %s", owner, name, tostring(v)), 4)
    end
    return math.tointeger(v)
  end
  if type(v) ~= kind then
    error(string.format("%s: option '%s': expected a %s, got %s", owner, name, kind, type(v)), 4)
  end
  return v
end

-- DataLoader(dataset [, batch_size [, shuffle [, sampler [, ...]]]] [, {batch_size = 1, shuffle = false,
--                      drop_last = false, seed = nil, collate_fn = nil, sampler = nil}])
-- The arguments after dataset come in PyTorch's order (batch_size, shuffle, sampler,
-- batch_sampler, num_workers, collate_fn, pin_memory, drop_last, ...) or in the options
-- table; those ember has no use for (worker processes, pinned memory) are refused.
-- sampler: an object with indices() (a list of 1-based dataset indices, the
-- order of one epoch) and a length (#sampler), such as DistributedSampler;
-- it replaces shuffle.
-- With `seed`, epoch e's order depends only on (seed, e): it is drawn from
-- Philox key `seed` at counter (e-1) * 2^40, with the global generator saved
-- and restored around it, so other random numbers are not disturbed and two
-- epochs never share a stream. Without `seed`, the global generator shuffles,
-- so ember.manual_seed makes the whole run reproducible.
-- collate_fn(samples) turns a list of samples (each a table.pack of the
-- fields get(i) returned) into the batch's values; it is not used for
-- datasets with get_batch.
local loader_names = {"batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn", "pin_memory",
                      "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator", "*",
                      "prefetch_factor", "persistent_workers", "pin_memory_device", "in_order", "seed"}
local loader_supported = {batch_size = true, shuffle = true, sampler = true, collate_fn = true, drop_last = true,
                          seed = true}
function DataLoader.new(dataset, ...)
  local opts = options("DataLoader", loader_names, ...)
  for _, k in ipairs(loader_names) do
    if opts[k] ~= nil and k ~= "*" and not loader_supported[k] then
      require("ember.errors").raise("DataLoader: option '" .. k .. "' is not supported (ember loads batches in the "
                                    .. "calling process; supported: batch_size, shuffle, sampler, collate_fn, drop_last, seed)")
    end
  end
  local self = setmetatable({}, DataLoader)
  self.dataset = dataset
  self._len, self._get = accessors(dataset)
  self.batch_size = option(opts, "batch_size", "integer", 1)
  if self.batch_size < 1 then
    error("DataLoader: option 'batch_size': expected a positive integer, got " .. self.batch_size, 3)
  end
  self.shuffle = option(opts, "shuffle", "boolean", false)
  self.drop_last = option(opts, "drop_last", "boolean", false)
  self.seed = option(opts, "seed", "integer", nil)
  self.collate_fn = option(opts, "collate_fn", "function", nil)
  self.sampler = opts.sampler
  if self.sampler ~= nil then
    local ok, fn = pcall(function() return self.sampler.indices end)
    if not ok or type(fn) ~= "function" then
      error("DataLoader: option 'sampler': expected a sampler (an object with indices() and a length), got "
            .. type(self.sampler), 3)
    end
    if self.shuffle then error("DataLoader: option 'sampler' is mutually exclusive with shuffle = true", 3) end
  end
  self.batch_fn = type(dataset) == "table" and not self.collate_fn and type(dataset.get_batch) == "function"
    and dataset.get_batch or nil
  self.epoch = 0          -- the epoch the last iter() began
  self._next_epoch = 1
  return self
end

setmetatable(DataLoader, {__call = function(_, ...) return DataLoader.new(...) end})

-- the number of samples an epoch visits
function DataLoader:_count()
  if self.sampler then return #self.sampler end
  return self._len()
end

function DataLoader:__len()
  local n = self:_count()
  if self.drop_last then return n // self.batch_size end
  return (n + self.batch_size - 1) // self.batch_size
end

function DataLoader:__tostring()
  return string.format("DataLoader(%d batches of %d, shuffle=%s, drop_last=%s%s)", #self, self.batch_size,
                       tostring(self.shuffle), tostring(self.drop_last),
                       self.seed and (", seed=" .. self.seed) or "")
end

-- The next iter() runs epoch e (for resuming a seeded run at its epoch).
function DataLoader:set_epoch(e)
  if not is_integer(e) or e < 1 then error("DataLoader:set_epoch: expected a positive integer, got " .. tostring(e), 2) end
  self._next_epoch = math.tointeger(e)
end

-- The sample order of epoch `epoch`: a 1-D int64 tensor of 1-based indices.
function DataLoader:order(epoch)
  if self.sampler then
    local list = self.sampler:indices()
    if #list == 0 then return ember.zeros(0, {dtype = "int64"}) end
    return ember.tensor(list, {dtype = "int64"})
  end
  local n = self._len()
  if not self.shuffle then return ember.arange(1, n + 1, {dtype = "int64"}) end
  if not self.seed then return ember.randperm(n) end
  local saved = ember.get_rng_state()
  ember.set_rng_state(self.seed, (epoch - 1) << 40)
  local ok, perm = pcall(ember.randperm, n)
  ember.set_rng_state(saved)
  if not ok then error(perm, 0) end
  return perm
end

-- An iterator over one epoch's batches: for x, y in loader:iter() do ... end
function DataLoader:iter()
  local epoch = self._next_epoch
  self._next_epoch = epoch + 1
  self.epoch = epoch
  local n = self:_count()
  local order = self:order(epoch)
  local nbatches, bs = #self, self.batch_size
  local b = 0
  local dataset, batch_fn = self.dataset, self.batch_fn
  local list = not batch_fn and order:tolist() or nil
  return function()
    b = b + 1
    if b > nbatches then return nil end
    local start = (b - 1) * bs + 1
    local len = math.min(bs, n - start + 1)
    if batch_fn then return batch_fn(dataset, order:narrow(1, start, len)) end
    local samples = {}
    for s = 1, len do samples[s] = table.pack(self._get(list[start + s - 1])) end
    return (self.collate_fn or default_collate)(samples)
  end
end

-- `for x, y in loader do` (PyTorch's `for x, y in loader:`): each loop one epoch, a fresh
-- pass (a new order when shuffling); loader() with no arguments is loader:iter().
function DataLoader:__call(...)
  if select("#", ...) == 0 then return self:iter() end
  local _, control = ...
  return for_step(self, DataLoader.iter, "DataLoader", control)
end
data.DataLoader = DataLoader

-- ---- DistributedSampler -------------------------------------------------------------

-- DistributedSampler(dataset [, num_replicas [, rank [, shuffle [, seed [, drop_last]]]]]
--                    [, {num_replicas =, rank =, shuffle = true, seed = 0, drop_last = false}]):
-- rank's share of the dataset, as torch.utils.data.DistributedSampler. Every rank draws the same
-- order (the permutation of epoch e comes from the seed and e alone), pads it by repeating its
-- first indices up to a multiple of num_replicas (or, with drop_last, cuts the tail), and takes
-- every num_replicas-th index starting at its rank. Ranks are 0-based; indices 1-based.
local DistributedSampler = {}
DistributedSampler.__index = DistributedSampler
DistributedSampler.__name = "DistributedSampler"

local function sampler_option(opts, name, kind, default)
  return option(opts, name, kind, default, "DistributedSampler")
end

function DistributedSampler.new(dataset, ...)
  local opts = options("DistributedSampler", {"num_replicas", "rank", "shuffle", "seed", "drop_last"}, ...)
  local self = setmetatable({}, DistributedSampler)
  self.dataset = dataset
  self._len = accessors(dataset, "DistributedSampler")
  local dist = (opts.num_replicas == nil or opts.rank == nil) and require("ember.distributed") or nil
  if dist and not dist.is_initialized() then
    error("DistributedSampler: num_replicas and rank come from the process group, which is not initialised: " ..
          "call ember.distributed.init_process_group first, or give both options", 3)
  end
  self.num_replicas = sampler_option(opts, "num_replicas", "integer", dist and dist.get_world_size())
  self.rank = sampler_option(opts, "rank", "integer", dist and dist.get_rank())
  if self.num_replicas < 1 then
    error("DistributedSampler: option 'num_replicas': expected a positive integer, got " .. self.num_replicas, 3)
  end
  if self.rank < 0 or self.rank >= self.num_replicas then
    error(string.format("DistributedSampler: invalid rank %d: ranks are 0-based, 0..%d for %d replicas", self.rank,
                        self.num_replicas - 1, self.num_replicas), 3)
  end
  self.shuffle = sampler_option(opts, "shuffle", "boolean", true)
  self.seed = sampler_option(opts, "seed", "integer", 0)
  self.drop_last = sampler_option(opts, "drop_last", "boolean", false)
  self.epoch = 0
  local n, r = self._len(), self.num_replicas
  -- PyTorch's counts: with drop_last the tail that cannot go evenly to every rank is cut
  if self.drop_last and n % r ~= 0 then self.num_samples = -((r - n) // r)
  else self.num_samples = -(-n // r) end
  self.total_size = self.num_samples * r
  return self
end

setmetatable(DistributedSampler, {__call = function(_, ...) return DistributedSampler.new(...) end})

function DistributedSampler:__len() return self.num_samples end

function DistributedSampler:__tostring()
  return string.format("DistributedSampler(rank %d of %d, %d samples, shuffle=%s, seed=%d, drop_last=%s)", self.rank,
                       self.num_replicas, self.num_samples, tostring(self.shuffle), self.seed, tostring(self.drop_last))
end

-- set_epoch(e): the shuffle of epoch e (call it before each epoch, as in PyTorch).
function DistributedSampler:set_epoch(e)
  if not is_integer(e) or e < 0 then
    error("DistributedSampler:set_epoch: expected a non-negative integer, got " .. tostring(e), 2)
  end
  self.epoch = math.tointeger(e)
end

-- indices(): this rank's 1-based dataset indices for the current epoch.
function DistributedSampler:indices()
  local n = self._len()
  local all
  if self.shuffle and n > 0 then
    local saved = ember.get_rng_state()
    ember.set_rng_state(self.seed, self.epoch << 40)
    local ok, perm = pcall(ember.randperm, n)
    ember.set_rng_state(saved)
    if not ok then error(perm, 0) end
    all = perm:tolist()
  else
    all = {}
    for i = 1, n do all[i] = i end
  end
  -- padding repeats the order from its start (as often as needed); drop_last cuts the tail
  local k = #all
  for i = k + 1, self.total_size do all[i] = all[(i - 1) % k + 1] end
  local out = {}
  for i = self.rank + 1, self.total_size, self.num_replicas do out[#out + 1] = all[i] end
  return out
end

data.DistributedSampler = DistributedSampler

-- ---- Fashion-MNIST -------------------------------------------------------------------

data.fashion_mnist_root = "/usr/share/datasets/fashion-mnist"
data.fashion_mnist_classes = {
  "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
  "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

local function read_split(root, prefix, n)
  local files = {}
  for _, kind in ipairs({"images-idx3-ubyte", "labels-idx1-ubyte"}) do
    local base = root .. "/" .. prefix .. "-" .. kind
    local path = exists(base .. ".gz") and base .. ".gz" or exists(base) and base or nil
    if not path then
      error(string.format("fashion_mnist: %s.gz: not found; install Debian's dataset-fashion-mnist "
                          .. "(scripts/install-deps.sh does) or pass the folder holding the files", base), 0)
    end
    files[#files + 1] = path
  end
  local images, labels = ember.read_idx(files[1]), ember.read_idx(files[2])
  local shape = images.shape
  if images.dtype ~= "uint8" or #shape ~= 3 or shape[2] ~= 28 or shape[3] ~= 28 then
    error(string.format("fashion_mnist: %s: expected uint8 images [N,28,28], got %s [%s]", files[1],
                        images.dtype, table.concat(shape, ",")), 0)
  end
  if labels.dtype ~= "uint8" or labels:dim() ~= 1 or labels:size(1) ~= shape[1] then
    error(string.format("fashion_mnist: %s: expected %d uint8 labels, got %s [%s]", files[2], shape[1],
                        labels.dtype, table.concat(labels.shape, ",")), 0)
  end
  -- class numbers outside 0..9 would only fail later, inside a loss
  if labels:numel() > 0 then
    local high = labels:max():item()
    if high > 9 then
      error(string.format("fashion_mnist: %s: labels must be class numbers 0..9, found %d", files[2], high), 0)
    end
  end
  if n and shape[1] ~= n then
    error(string.format("fashion_mnist: %s: expected %d images, got %d", files[1], n, shape[1]), 0)
  end
  return {images = images, labels = labels:to("int64")}
end

-- fashion_mnist([root]) -> {train = {images = uint8 [60000,28,28],
--                                    labels = int64 [60000] (0..9)},
--                           test  = {images = uint8 [10000,28,28], labels = int64 [10000]}}
-- root defaults to the folder of Debian's dataset-fashion-mnist package.
function data.fashion_mnist(root)
  if root ~= nil and type(root) ~= "string" then
    error("fashion_mnist: argument 1: expected a folder path, got " .. type(root), 2)
  end
  if root ~= nil then require("ember.errors").check_path("fashion_mnist", "argument 1", root) end
  root = (root or data.fashion_mnist_root):gsub("/+$", "")
  return {train = read_split(root, "train", 60000), test = read_split(root, "t10k", 10000)}
end

return data
