-- ember.data — datasets, samplers, batch loaders and the Fashion-MNIST files
-- (torch.utils.data: Dataset, TensorDataset, Subset, ConcatDataset, random_split,
-- Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
-- BatchSampler, DistributedSampler, DataLoader).
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

-- One step of `for ... in obj do`: start(obj) makes the iterator of a fresh pass; form is
-- the loop to suggest (default: over a loader or a dataset).
local function for_step(obj, start, name, control, form)
  local it
  if control == nil then
    it = start(obj)
  else
    local mine = loops[obj]
    it = mine and mine[control]
    if not it then
      error(string.format("%s: called with a loop position it did not return: iterate with `%s`", name,
                          form or string.format("for x, y in %s do", name == "DataLoader" and "loader" or "dataset")), 3)
    end
    mine[control] = nil
  end
  return remember(obj, it, it())
end

-- ---- Dataset ------------------------------------------------------------------

-- an integer, or a float with an integer value that fits one (not inf, nan or beyond 2^63)
local function is_integer(v) return math.type(v) == "integer" or (type(v) == "number" and math.tointeger(v) ~= nil) end

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

-- ds1 + ds2 is ConcatDataset({ds1, ds2}), as PyTorch's Dataset.__add__
Dataset.__add = function(a, b) return data.ConcatDataset({a, b}) end

local function instantiate(cls, ...)
  local obj = setmetatable({}, cls)
  if cls.init then obj:init(...) end
  return obj
end

-- A subclass: a table of methods whose instances are made by calling it.
function Dataset:extend(name)
  local cls = {__name = name or "Dataset", __len = self.__len, __tostring = self.__tostring, __call = self.__call,
               __add = self.__add}
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
local function accessors(ds, op, what)
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
  require("ember.errors").raise((op or "DataLoader") .. ": " .. (what or "argument 1")
        .. ": expected a dataset (an object with len() and get(i), or a table of samples), got "
        .. (ember.is_tensor(ds) and "a tensor (wrap it: data.TensorDataset(t))" or type(ds)))
end

local raise = require("ember.errors").raise

-- the generator option g of op, checked: nil or an ember.Generator
local check_generator = require("ember.args").generator

-- a plain Lua list (a table without a metatable that is not a sampler)
local function is_plain_list(v)
  return type(v) == "table" and getmetatable(v) == nil
end

-- v's indices() method, or nil (v may be userdata whose indexing raises)
local function indices_method(v)
  if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
  local ok, fn = pcall(function() return v.indices end)
  return ok and type(fn) == "function" and fn or nil
end

-- One epoch's list from a sampler (an object with indices()) or a plain Lua list.
local function epoch_list(s)
  if indices_method(s) then return s:indices() end
  return s
end

-- A list of 1-based indices from a Lua list or a 1-D integer tensor, checked: integers >= 1
-- (and <= n when n is given). what names the argument in messages.
local function index_list(op, what, v, n)
  local list
  if ember.is_tensor(v) then
    if v:dim() ~= 1 or v.dtype:match("^float") or v.dtype:match("^bfloat") or v.dtype == "bool"
       or v.dtype:match("^complex") then
      raise(string.format("%s: %s: expected a 1-D integer tensor or a list of integers, got %s [%s]", op, what,
                          v.dtype, table.concat(v.shape, ", ")))
    end
    list = v:tolist()
  elseif is_plain_list(v) then
    list = {}
    for k = 1, #v do list[k] = v[k] end
  else
    raise(string.format("%s: %s: expected a list of indices, got %s", op, what, type(v)))
  end
  for k, i in ipairs(list) do
    if not is_integer(i) then
      raise(string.format("%s: %s[%d] = %s is not an integer index", op, what, k, tostring(i)))
    end
    i = math.tointeger(i)
    if i < 1 or (n and i > n) then
      raise(string.format("%s: %s[%d] = %d is out of range (%s)", op, what, k, i,
                          n and string.format("expected 1..%d: indices are 1-based", n) or "indices are 1-based"))
    end
    list[k] = i
  end
  return list
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

-- DataLoader(dataset [, batch_size [, shuffle [, sampler [, batch_sampler ...]]]] [, {batch_size = 1,
--            shuffle = false, sampler = nil, batch_sampler = nil, drop_last = false, generator = nil, seed = nil,
--            collate_fn = nil}])
-- The arguments after dataset come in PyTorch's order (batch_size, shuffle, sampler,
-- batch_sampler, num_workers, collate_fn, pin_memory, drop_last, ...) or in the options
-- table; those ember has no use for (worker processes, pinned memory) are refused unless
-- they hold PyTorch's default (num_workers = 0, pin_memory = false, ...).
-- sampler: an object with indices() (a list of 1-based dataset indices, the
-- order of one epoch) and a length (#sampler), such as RandomSampler or DistributedSampler,
-- or a plain list of indices; it replaces shuffle.
-- batch_sampler: the same giving a list of batches (lists of indices) per epoch, such as
-- BatchSampler, or a plain list of batches; it replaces batch_size, shuffle, sampler and
-- drop_last (PyTorch's rule: batch_size may only be 1, shuffle and drop_last only false).
-- generator: shuffle draws each epoch's permutation from it (advancing it only).
-- With `seed` (ember's own), epoch e's order depends only on (seed, e): it is drawn from
-- Philox key `seed` at counter (e-1) * 2^40, with the global generator saved
-- and restored around it, so other random numbers are not disturbed and two
-- epochs never share a stream. Without `seed` or `generator`, the global generator
-- shuffles, so ember.manual_seed makes the whole run reproducible.
-- collate_fn(samples) turns a list of samples (each a table.pack of the
-- fields get(i) returned) into the batch's values; it is not used for
-- datasets with get_batch.
local loader_names = {"batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn", "pin_memory",
                      "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator", "*",
                      "prefetch_factor", "persistent_workers", "pin_memory_device", "in_order", "seed"}
local loader_supported = {batch_size = true, shuffle = true, sampler = true, batch_sampler = true, collate_fn = true,
                          drop_last = true, generator = true, seed = true, pin_memory = true}
-- PyTorch's defaults of the options about worker processes and pinned memory: they ask for
-- what ember does (load in the calling process), so a script that spells them out runs
-- (num_workers = 0 is common); any other value is refused, as ember cannot honour it.
local loader_inert = {num_workers = 0, timeout = 0, persistent_workers = false, pin_memory_device = "",
                      in_order = true}

-- s is a sampler (an object with indices()) or a plain list; what: "sampler" or "batch_sampler"
local function check_sampler(s, what)
  if indices_method(s) or (is_plain_list(s) and not ember.is_tensor(s)) then return s end
  raise(string.format("DataLoader: option '%s': expected a %s (an object with indices() and a length, or a list of %s), "
                      .. "got %s", what, what == "sampler" and "sampler" or "batch sampler",
                      what == "sampler" and "indices" or "batches", ember.is_tensor(s) and "a tensor" or type(s)))
end

function DataLoader.new(dataset, ...)
  local opts = options("DataLoader", loader_names, ...)
  for _, k in ipairs(loader_names) do
    local v = opts[k]
    if v ~= nil and k ~= "*" and not loader_supported[k] and not rawequal(v, loader_inert[k]) then
      local inert = loader_inert[k] ~= nil and string.format("; only %s = %s, PyTorch's default, is accepted", k,
                                                             string.format("%q", loader_inert[k])) or ""
      raise("DataLoader: option '" .. k .. "' is not supported (ember loads batches in the calling process; "
            .. "supported: batch_size, shuffle, sampler, batch_sampler, collate_fn, pin_memory, drop_last, generator, "
            .. "seed"
            .. inert .. ")")
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
  -- pin_memory: each batch's tensors in page-locked memory (t:pin_memory()), which copies to a GPU
  -- need no staging for; without a CUDA device PyTorch warns and loads as usual, and so does ember
  self.pin_memory = option(opts, "pin_memory", "boolean", false)
  if self.pin_memory and not ember.cuda.is_available() then
    data._warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't be used.")
    self.pin_memory = false
  end
  self.generator = check_generator("DataLoader", opts.generator)
  if self.generator and self.seed then
    raise("DataLoader: options 'seed' and 'generator' are mutually exclusive (both choose the shuffle's random numbers)")
  end
  self.sampler = opts.sampler
  if self.sampler ~= nil then
    check_sampler(self.sampler, "sampler")
    if self.shuffle then error("DataLoader: option 'sampler' is mutually exclusive with shuffle = true", 3) end
  end
  self.batch_sampler = opts.batch_sampler
  if self.batch_sampler ~= nil then
    check_sampler(self.batch_sampler, "batch_sampler")
    if self.batch_size ~= 1 or self.shuffle or self.sampler ~= nil or self.drop_last then
      raise("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last "
            .. string.format("(got batch_size=%d, shuffle=%s, sampler=%s, drop_last=%s)", self.batch_size,
                             tostring(self.shuffle), self.sampler ~= nil and "given" or "nil", tostring(self.drop_last)))
    end
    self.batch_size = nil   -- as PyTorch: the batch sampler sizes the batches
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
  if self.batch_sampler then return #self.batch_sampler end
  local n = self:_count()
  if self.drop_last then return n // self.batch_size end
  return (n + self.batch_size - 1) // self.batch_size
end

function DataLoader:__tostring()
  if self.batch_sampler then
    return string.format("DataLoader(%d batches from a batch sampler)", #self)
  end
  return string.format("DataLoader(%d batches of %d, shuffle=%s, drop_last=%s%s)", #self, self.batch_size,
                       tostring(self.shuffle), tostring(self.drop_last),
                       self.seed and (", seed=" .. self.seed) or "")
end

-- The next iter() runs epoch e (for resuming a seeded run at its epoch).
function DataLoader:set_epoch(e)
  if not is_integer(e) or e < 1 then error("DataLoader:set_epoch: expected a positive integer, got " .. tostring(e), 2) end
  self._next_epoch = math.tointeger(e)
end

local function int64_tensor(list)
  if #list == 0 then return ember.zeros(0, {dtype = "int64"}) end
  return ember.tensor(list, {dtype = "int64"})
end

-- The sample order of epoch `epoch`: a 1-D int64 tensor of 1-based indices (with a batch
-- sampler, its batches one after the other).
function DataLoader:order(epoch)
  if self.batch_sampler then
    local flat = {}
    for _, b in ipairs(epoch_list(self.batch_sampler)) do
      for _, i in ipairs(b) do flat[#flat + 1] = i end
    end
    return int64_tensor(flat)
  end
  if self.sampler then return int64_tensor(epoch_list(self.sampler)) end
  local n = self._len()
  if not self.shuffle then return ember.arange(1, n + 1, {dtype = "int64"}) end
  if self.generator then return ember.randperm(n, {generator = self.generator}) end
  if not self.seed then return ember.randperm(n) end
  epoch = epoch or math.max(self.epoch, 1)
  local saved = ember.get_rng_state()
  ember.set_rng_state(self.seed, (epoch - 1) << 40)
  local ok, perm = pcall(ember.randperm, n)
  ember.set_rng_state(saved)
  if not ok then error(perm, 0) end
  return perm
end

-- v with its tensors (in nested tables too) in page-locked memory (pin_memory = true)
local function pinned(v)
  if ember.is_tensor(v) then return v:pin_memory() end
  if type(v) ~= "table" or getmetatable(v) ~= nil then return v end
  local r = {}
  for k, x in pairs(v) do r[k] = pinned(x) end
  return r
end

local function pin_all(...)
  local r = table.pack(...)
  for i = 1, r.n do r[i] = pinned(r[i]) end
  return table.unpack(r, 1, r.n)
end

-- the batch of samples list[from .. to] (or index, an int64 tensor of them)
function DataLoader:_batch(list, from, to, index)
  local pin = self.pin_memory and pin_all or function(...) return ... end
  if self.batch_fn then
    return pin(self.batch_fn(self.dataset, index or int64_tensor(table.move(list, from, to, 1, {}))))
  end
  local samples = {}
  for s = from, to do samples[#samples + 1] = table.pack(self._get(list[s])) end
  return pin((self.collate_fn or default_collate)(samples))
end

-- An iterator over one epoch's batches: for x, y in loader:iter() do ... end
function DataLoader:iter()
  local epoch = self._next_epoch
  self._next_epoch = epoch + 1
  self.epoch = epoch
  local b = 0
  if self.batch_sampler then
    local batches = epoch_list(self.batch_sampler)
    return function()
      b = b + 1
      local batch = batches[b]
      if batch == nil then return nil end
      if #batch == 0 then raise(string.format("DataLoader: batch %d of the batch sampler is empty", b)) end
      return self:_batch(batch, 1, #batch)
    end
  end
  local order = self:order(epoch)
  local n = order:numel()
  local bs = self.batch_size
  local nbatches = self.drop_last and n // bs or (n + bs - 1) // bs
  local list = not self.batch_fn and order:tolist() or nil
  return function()
    b = b + 1
    if b > nbatches then return nil end
    local start = (b - 1) * bs + 1
    local len = math.min(bs, n - start + 1)
    if self.batch_fn then return self:_batch(nil, nil, nil, order:narrow(1, start, len)) end
    return self:_batch(list, start, start + len - 1)
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

-- DistributedSampler gives `for i in sampler do` too (see Sampler below)
DistributedSampler.__call = function(self, _, control)
  return for_step(self, function(s)
    local list, k = s:indices(), 0
    return function() k = k + 1; return list[k] end
  end, "DistributedSampler", control, "for i in sampler do")
end

-- ---- Subset, ConcatDataset, random_split ------------------------------------------------

-- Subset(dataset, indices): the samples of dataset at indices (a list of 1-based indices or a
-- 1-D integer tensor), in that order; as torch.utils.data.Subset. The indices are checked
-- against the dataset's length here (PyTorch finds a bad one when it is read).
local Subset = Dataset:extend("Subset")

-- one batch through the parent's get_batch: the parent's indices picked by index
local function subset_get_batch(self, index)
  if not self._index then self._index = int64_tensor(self.indices) end
  return self.dataset:get_batch(self._index:index_select(1, index))
end

function Subset:init(dataset, indices)
  local len, get = accessors(dataset, "Subset")
  if indices == nil then raise("Subset: argument 2 (indices): expected a list of indices, got nil") end
  self.dataset = dataset
  self._get_parent = get
  self.indices = index_list("Subset", "indices", indices, len())
  if type(dataset) == "table" and type(dataset.get_batch) == "function" then self.get_batch = subset_get_batch end
end

function Subset:len() return #self.indices end

function Subset:get(i)
  local n = #self.indices
  if not is_integer(i) or i < 1 or i > n then
    raise(string.format("Subset: index %s out of range (expected 1..%d)", tostring(i), n))
  end
  return self._get_parent(self.indices[math.tointeger(i)])
end

data.Subset = Subset

-- ConcatDataset(datasets): the samples of a list of datasets one after the other, as
-- torch.utils.data.ConcatDataset. cumulative_sizes[k] is the number of samples in datasets
-- 1..k (the sizes are read here, as PyTorch does).
local ConcatDataset = Dataset:extend("ConcatDataset")

-- one batch from the parts' get_batch: each part's share of index, then the rows put back
-- in index's order
local function concat_get_batch(self, index)
  local fields, positions = {}, {}
  local nfields
  local lo = 0
  for k, d in ipairs(self.datasets) do
    local hi = self.cumulative_sizes[k]
    if hi > lo then
      local pos = index:gt(lo):logical_and(index:le(hi)):nonzero():view(-1)
      if pos:numel() > 0 then
        local out = table.pack(d:get_batch(index:index_select(1, pos):sub(lo)))
        if nfields and out.n ~= nfields then
          raise(string.format("ConcatDataset: datasets[%d] gives %d fields, an earlier one %d", k, out.n, nfields))
        end
        nfields = out.n
        for f = 1, out.n do
          if not ember.is_tensor(out[f]) then
            raise(string.format("ConcatDataset: datasets[%d]:get_batch gave a %s as field %d, expected a tensor", k,
                                type(out[f]), f))
          end
          fields[f] = fields[f] or {}
          table.insert(fields[f], out[f])
        end
        positions[#positions + 1] = pos
      end
    end
    lo = hi
  end
  if not nfields then   -- an empty index: the first part's empty batch
    return self.datasets[1]:get_batch(index)
  end
  local back = #positions > 1 and ember.cat(positions, 1):argsort() or nil
  local out = {}
  for f = 1, nfields do
    local t = #fields[f] > 1 and ember.cat(fields[f], 1) or fields[f][1]
    out[f] = back and t:index_select(1, back) or t
  end
  return table.unpack(out, 1, nfields)
end

function ConcatDataset:init(datasets)
  if not is_plain_list(datasets) then
    raise("ConcatDataset: argument 1: expected a list of datasets, got "
          .. (ember.is_tensor(datasets) and "a tensor" or type(datasets)))
  end
  if #datasets == 0 then raise("ConcatDataset: datasets should not be an empty list") end
  self.datasets, self.cumulative_sizes, self._gets = {}, {}, {}
  local total, batched = 0, true
  for k = 1, #datasets do
    local d = datasets[k]
    local len, get = accessors(d, "ConcatDataset", string.format("datasets[%d]", k))
    total = total + len()
    self.datasets[k], self.cumulative_sizes[k], self._gets[k] = d, total, get
    batched = batched and type(d) == "table" and type(d.get_batch) == "function"
  end
  if batched then self.get_batch = concat_get_batch end
end

function ConcatDataset:len() return self.cumulative_sizes[#self.cumulative_sizes] end

function ConcatDataset:get(i)
  local n = self:len()
  if not is_integer(i) or i < 1 or i > n then
    raise(string.format("ConcatDataset: index %s out of range (expected 1..%d)", tostring(i), n))
  end
  -- the first part whose cumulative size reaches i (a binary search, as PyTorch's bisect)
  local cum = self.cumulative_sizes
  local lo, hi = 1, #cum
  while lo < hi do
    local mid = (lo + hi) // 2
    if cum[mid] >= i then hi = mid else lo = mid + 1 end
  end
  return self._gets[lo](math.tointeger(i) - (lo > 1 and cum[lo - 1] or 0))
end

data.ConcatDataset = ConcatDataset

-- PyTorch's warnings (UserWarning) go to stderr, each text once a process, as Python's
-- default filter shows them; data._warn may be replaced (the spec does, to see them).
local warned = {}
function data._warn(text)
  if warned[text] then return end
  warned[text] = true
  io.stderr:write("warning: ", text, "\n")
end

-- math.isclose(a, b) with Python's default rel_tol = 1e-9
local function isclose(a, b)
  return a == b or math.abs(a - b) <= 1e-9 * math.max(math.abs(a), math.abs(b))
end

-- random_split(dataset, lengths [, generator]) -> a list of Subsets, as
-- torch.utils.data.random_split: lengths are counts summing to #dataset, or fractions
-- summing to 1 (PyTorch's test: math.isclose(sum, 1) and sum <= 1), whose counts are
-- floor(n * fraction) with the remainder given out one by one, round-robin from the first
-- split; an empty split then gets PyTorch's warning. The permutation is drawn from
-- generator (default: the global generator).
function data.random_split(dataset, lengths, ...)
  local o = options("random_split", {"generator"}, ...)
  local g = check_generator("random_split", o.generator)
  local len = accessors(dataset, "random_split")
  local n = len()
  if ember.is_tensor(lengths) then
    if lengths:dim() ~= 1 then
      raise(string.format("random_split: lengths: expected a list or a 1-D tensor, got shape [%s]",
                          table.concat(lengths.shape, ", ")))
    end
    lengths = lengths:tolist()
  end
  if not is_plain_list(lengths) then
    raise("random_split: argument 2 (lengths): expected a list of counts or fractions, got " .. type(lengths))
  end
  local sum = 0
  for k = 1, #lengths do
    local v = lengths[k]
    if type(v) ~= "number" then
      raise(string.format("random_split: lengths[%d]: expected a number, got %s", k, type(v)))
    end
    sum = sum + v   -- in order, as Python's sum
  end
  local counts = {}
  if isclose(sum, 1) and sum <= 1 then
    for k, frac in ipairs(lengths) do
      if frac < 0 or frac > 1 then
        raise(string.format("random_split: fraction at index %d (%s) is not between 0 and 1", k, tostring(frac)))
      end
      counts[k] = math.tointeger(math.floor(n * frac))
    end
    local remainder = n
    for _, c in ipairs(counts) do remainder = remainder - c end
    for r = 0, remainder - 1 do
      local k = r % #counts + 1
      counts[k] = counts[k] + 1
    end
    for k, c in ipairs(counts) do
      if c == 0 then
        data._warn(string.format("random_split: Length of split at index %d is 0. This might result in an "
                                 .. "empty dataset.", k))
      end
    end
  else
    counts = lengths
  end
  local total = 0
  for _, c in ipairs(counts) do total = total + c end
  if total ~= n then
    local shown = {}
    for k, v in ipairs(counts) do shown[k] = tostring(v) end
    raise(string.format("random_split: sum of input lengths (%s = %s) does not equal the length of the input "
                        .. "dataset (%d)", #shown > 0 and table.concat(shown, " + ") or "none", tostring(total), n))
  end
  if counts == lengths then   -- counts summing to n, checked after the sum as PyTorch does
    counts = {}
    for k, v in ipairs(lengths) do
      if not is_integer(v) then
        raise(string.format("random_split: lengths[%d] = %s: expected an integer count (or fractions summing to 1)",
                            k, tostring(v)))
      end
      if v < 0 then
        raise(string.format("random_split: lengths[%d] = %d: a count cannot be negative", k, math.tointeger(v)))
      end
      counts[k] = math.tointeger(v)
    end
  end
  local perm = n > 0 and ember.randperm(n, {generator = g}):tolist() or {}
  local out, offset = {}, 0
  for k, c in ipairs(counts) do
    out[k] = Subset(dataset, table.move(perm, offset + 1, offset + c, 1, {}))
    offset = offset + c
  end
  return out
end

-- ---- samplers ----------------------------------------------------------------------------
--
-- The sampler protocol (what DataLoader's sampler and batch_sampler take): an object with
--   s:indices()   one epoch's list: 1-based dataset indices (for a batch sampler, a list of
--                 batches, each a list of indices); each call is a new epoch (a new draw)
--   #s            the length of that list
-- Sampler is their base class, as torch.utils.data.Sampler: Sampler:extend(name) makes one
-- whose instances answer #s (s:len()), `for i in s do` (PyTorch's `for i in s:`) and s:iter().
local Sampler = {__name = "Sampler"}
Sampler.__index = Sampler
Sampler.__len = function(self) return self:len() end
Sampler.__tostring = function(self)
  return string.format("%s(%d)", getmetatable(self).__name or "Sampler", self:len())
end

local function list_iter(self)
  local list, k = self:indices(), 0
  return function()
    k = k + 1
    return list[k]
  end
end

-- `for i in sampler do`: each loop an epoch. The loop's next step is found from the value it
-- last returned, so nested loops over one sampler (whose indices repeat) should use :iter().
Sampler.__call = function(self, _, control)
  return for_step(self, list_iter, getmetatable(self).__name or "Sampler", control, "for i in sampler do")
end

function Sampler:extend(name)
  local cls = {__name = name or "Sampler", __len = self.__len, __tostring = self.__tostring, __call = self.__call}
  cls.__index = cls
  return setmetatable(cls, {__index = self, __call = instantiate})
end

function Sampler:len()
  raise((getmetatable(self).__name or "Sampler") .. ": len() is not implemented (a Sampler subclass defines len and indices)")
end

function Sampler:indices()
  raise((getmetatable(self).__name or "Sampler")
        .. ": indices() is not implemented (a Sampler subclass defines len and indices)")
end

-- an iterator over one epoch: for i in sampler:iter() do ... end
function Sampler:iter() return list_iter(self) end

setmetatable(Sampler, {__call = instantiate})
data.Sampler = Sampler

-- SequentialSampler(data_source): 1, 2, ..., #data_source.
local SequentialSampler = Sampler:extend("SequentialSampler")

function SequentialSampler:init(data_source)
  self.data_source = data_source
  self._len = accessors(data_source, "SequentialSampler")
end

function SequentialSampler:len() return self._len() end

function SequentialSampler:indices()
  local out = {}
  for i = 1, self._len() do out[i] = i end
  return out
end

data.SequentialSampler = SequentialSampler

local function check_bool(op, name, v)
  if type(v) ~= "boolean" then
    raise(string.format("%s: %s should be a boolean value, but got %s=%s", op, name, name, tostring(v)))
  end
  return v
end

local function check_positive(op, name, v)
  if not is_integer(v) or v <= 0 then
    raise(string.format("%s: %s should be a positive integer value, but got %s=%s", op, name, name, tostring(v)))
  end
  return math.tointeger(v)
end

-- RandomSampler(data_source [, replacement = false [, num_samples = #data_source [, generator]]]
--               [, {replacement =, num_samples =, generator =}]): a random order each epoch.
-- Without replacement: a permutation of 1..n (num_samples > n: whole permutations one after
-- the other, then the start of one more); with replacement: num_samples independent draws.
-- Without a generator each epoch seeds a new one from the global generator, as PyTorch.
local RandomSampler = Sampler:extend("RandomSampler")

function RandomSampler:init(data_source, ...)
  local o = options("RandomSampler", {"replacement", "num_samples", "generator"}, ...)
  self.data_source = data_source
  self._len = accessors(data_source, "RandomSampler")
  if o.replacement == nil then self.replacement = false
  else self.replacement = check_bool("RandomSampler", "replacement", o.replacement) end
  self._num_samples = o.num_samples
  self.generator = check_generator("RandomSampler", o.generator)
  check_positive("RandomSampler", "num_samples", self:len())
  if o.num_samples ~= nil then self._num_samples = math.tointeger(o.num_samples) end
end

-- num_samples, or the data source's length (read each time, as PyTorch's property)
function RandomSampler:len()
  if self._num_samples ~= nil then return self._num_samples end
  return self._len()
end

function RandomSampler:indices()
  local n, k = self._len(), self:len()
  if n == 0 then raise("RandomSampler: the data source is empty: there is nothing to draw") end
  local g = self.generator
  if g == nil then
    g = ember.Generator():manual_seed(ember.randint(0, 1 << 53, {1}):item())
  end
  if self.replacement then
    return ember.randint(1, n + 1, {k}, {generator = g}):tolist()
  end
  local parts = {}
  for _ = 1, k // n do parts[#parts + 1] = ember.randperm(n, {generator = g}) end
  if k % n > 0 then parts[#parts + 1] = ember.randperm(n, {generator = g}):narrow(1, 1, k % n) end
  return (#parts == 1 and parts[1] or ember.cat(parts, 1)):tolist()
end

data.RandomSampler = RandomSampler

-- SubsetRandomSampler(indices [, generator]): the given indices in a random order each epoch
-- (a permutation drawn from generator, default the global one).
local SubsetRandomSampler = Sampler:extend("SubsetRandomSampler")

function SubsetRandomSampler:init(indices, ...)
  local o = options("SubsetRandomSampler", {"generator"}, ...)
  if indices == nil then raise("SubsetRandomSampler: argument 1 (indices): expected a list of indices, got nil") end
  self.indices_list = index_list("SubsetRandomSampler", "indices", indices)
  self.generator = check_generator("SubsetRandomSampler", o.generator)
end

function SubsetRandomSampler:len() return #self.indices_list end

function SubsetRandomSampler:indices()
  local list = self.indices_list
  if #list == 0 then return {} end
  local out = {}
  for k, p in ipairs(ember.randperm(#list, {generator = self.generator}):tolist()) do out[k] = list[p] end
  return out
end

data.SubsetRandomSampler = SubsetRandomSampler

-- WeightedRandomSampler(weights, num_samples [, replacement = true [, generator]]): num_samples
-- indices 1..#weights drawn with probabilities proportional to weights (multinomial).
local WeightedRandomSampler = Sampler:extend("WeightedRandomSampler")

function WeightedRandomSampler:init(weights, num_samples, ...)
  local op = "WeightedRandomSampler"
  local o = options(op, {"replacement", "generator"}, ...)
  self.num_samples = check_positive(op, "num_samples", num_samples)
  if o.replacement == nil then self.replacement = true
  else self.replacement = check_bool(op, "replacement", o.replacement) end
  self.generator = check_generator(op, o.generator)
  local w
  if ember.is_tensor(weights) then
    if weights.dtype == "bool" or weights.dtype:match("^complex") then
      raise(string.format("%s: weights: expected real numbers, got a %s tensor", op, weights.dtype))
    end
    w = weights.dtype == "float64" and weights or weights:to("float64")
  elseif is_plain_list(weights) then
    local ok, t = pcall(ember.tensor, weights, {dtype = "float64"})
    if not ok then raise(op .. ": weights: expected a list of numbers (" .. tostring(t):gsub("^.-ember%.tensor: ", "") .. ")") end
    w = t
  else
    raise(string.format("%s: weights: expected a list of numbers or a 1-D tensor, got %s", op, type(weights)))
  end
  if w:dim() ~= 1 then
    raise(string.format("%s: weights should be a 1-D sequence but given weights have shape [%s]", op,
                        table.concat(w.shape, ", ")))
  end
  local n = w:numel()
  if n == 0 then raise(op .. ": weights is empty: there is no index to draw") end
  -- what multinomial would find when drawing, found here (a few reads, once)
  if not w:isfinite():logical_and(w:ge(0)):all():item() then
    raise(op .. ": weights must be finite and non-negative (probability tensor contains either `inf`, `nan` or "
          .. "element < 0)")
  end
  if w:sum():item() <= 0 then
    raise(op .. ": invalid multinomial distribution (sum of probabilities <= 0): the weights are all 0")
  end
  if not self.replacement then
    if self.num_samples > n then
      raise(string.format("%s: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                          .. "(num_samples=%d > %d weights)", op, self.num_samples, n))
    end
    local nonzero = w:ne(0):sum():item()
    if self.num_samples > nonzero then
      raise(string.format("%s: without replacement, num_samples=%d is more than the %d non-zero weights", op,
                          self.num_samples, nonzero))
    end
  end
  self.weights = w
end

function WeightedRandomSampler:len() return self.num_samples end

-- The draws are ember.multinomial's, with or without replacement (with it, a binary search of
-- the weights' running sums per draw: O(n + k log n) for k draws from n weights).
function WeightedRandomSampler:indices()
  return ember.multinomial(self.weights, self.num_samples, self.replacement, {generator = self.generator}):tolist()
end

data.WeightedRandomSampler = WeightedRandomSampler

-- BatchSampler(sampler, batch_size, drop_last) or BatchSampler(sampler, {batch_size =, drop_last =}):
-- the indices of sampler (a sampler or a list of indices) in batches of batch_size; the
-- last one shorter, or left out with drop_last. For DataLoader's batch_sampler.
local BatchSampler = Sampler:extend("BatchSampler")

function BatchSampler:init(sampler, ...)
  local op = "BatchSampler"
  local o = options(op, {"batch_size", "drop_last"}, ...)
  if not indices_method(sampler) then
    if not is_plain_list(sampler) then
      raise(string.format("%s: argument 1 (sampler): expected a sampler (an object with indices() and a length) "
                          .. "or a list of indices, got %s", op, ember.is_tensor(sampler) and "a tensor" or type(sampler)))
    end
    sampler = index_list(op, "sampler", sampler)
  end
  self.sampler = sampler
  if type(o.batch_size) == "boolean" then
    raise(op .. ": batch_size should be a positive integer value, but got batch_size=" .. tostring(o.batch_size))
  end
  self.batch_size = check_positive(op, "batch_size", o.batch_size)
  self.drop_last = check_bool(op, "drop_last", o.drop_last)
end

function BatchSampler:len()
  local n, bs = #self.sampler, self.batch_size
  if self.drop_last then return n // bs end
  return (n + bs - 1) // bs
end

function BatchSampler:indices()
  local list, bs = epoch_list(self.sampler), self.batch_size
  local out = {}
  for start = 1, #list, bs do
    local stop = math.min(start + bs - 1, #list)
    if stop - start + 1 < bs and self.drop_last then break end
    out[#out + 1] = table.move(list, start, stop, 1, {})
  end
  return out
end

data.BatchSampler = BatchSampler

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
