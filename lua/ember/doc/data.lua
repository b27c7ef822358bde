-- Docs of ember.data: the dataset protocol, Dataset, TensorDataset, DataLoader and
-- the Fashion-MNIST files. Format: ember/help.lua.
return {
  {
    name = "ember.data",
    sig = "local data = ember.data",
    doc = [=[
Datasets and batch loaders (torch.utils.data), and the Fashion-MNIST files:
  data.Dataset          base class: extend it with len() and get(i)
  data.TensorDataset    samples are the rows of tensors
  data.DataLoader       batches, shuffling (reproducible with seed), collate_fn
  data.fashion_mnist    loads the Fashion-MNIST files
The dataset protocol: ds:len() is the number of samples, ds:get(i) returns sample i
(1-based) as one or more values; an optional ds:get_batch(index) returns a whole batch
at once (index: a 1-D int64 tensor of sample numbers), which DataLoader uses when there.
A plain Lua list of samples works too (#list, list[i]).]=],
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.randn(10, 3), ember.arange(1, 11))
local loader = data.DataLoader(ds, {batch_size = 4, shuffle = true, seed = 1})
for x, y in loader do print(x.shape[1], y) end   -- batches of 4, 4, 2]=],
  },
  {
    name = "ember.data.Dataset",
    sig = "data.Dataset:extend(name) -> a dataset class\nCls(...) -> an instance (calls Cls:init(...))",
    doc = [=[
The base class of datasets. A subclass defines init (optional), len and get; instances
also answer #ds (len) and ds[i], which is the table of sample i's fields ({x, y}) since
an index expression gives one value; ds:get(i) gives them as separate values.
for x, y in ds do ... end visits the samples in order (PyTorch's for x, y in ds:).
tostring(ds) gives the class name and the sample count.]=],
    example = [=[
local data = ember.data
local Squares = data.Dataset:extend("Squares")
function Squares:init(n) self.n = n end
function Squares:len() return self.n end
function Squares:get(i) return ember.tensor({i}), i * i end
local ds = Squares(10)
print(#ds, ds[3][2], ds)   -- 10 9 Squares(10 samples)]=],
  },
  {
    name = "ember.data.Dataset:len",
    sig = "ds:len() -> integer",
    doc = [=[
The number of samples; #ds calls it. Dataset's own raises "len() is not implemented":
subclasses define it.]=],
    example = [=[
local data = ember.data
local Three = data.Dataset:extend("Three")
function Three:len() return 3 end
function Three:get(i) return i end
print(Three():len(), #Three())   -- 3 3]=],
  },
  {
    name = "ember.data.Dataset:get",
    sig = "ds:get(i) -> field1, field2, ...",
    doc = [=[
Sample i (1-based) as one or more values, e.g. an input tensor and a label. Dataset's
own raises "get(i) is not implemented": subclasses define it. ds[i] packs the values
in a table.]=],
    example = [=[
local data = ember.data
local Pairs = data.Dataset:extend("Pairs")
function Pairs:len() return 2 end
function Pairs:get(i) return ember.full({2}, i), i end
local x, y = Pairs():get(2)
print(x, y)   -- [2, 2] 2]=],
  },
  {
    name = "ember.data.TensorDataset",
    also = {"ember.data.TensorDataset:init"},
    sig = "data.TensorDataset(t1, t2, ...) -> dataset",
    doc = [=[
A dataset whose sample i is row i (along dim 1) of each tensor: ds:get(i) returns
t1[i], t2[i], .... The tensors must share their size along dim 1; a 0-d tensor or a
non-tensor argument is an error. A row of a 1-D tensor is a 0-d tensor, as in PyTorch.
Has get_batch, so DataLoader takes whole batches with one index_select per tensor.]=],
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.arange(1, 11):reshape(5, 2), ember.tensor({1, 2, 3, 4, 5}))
local x, y = ds:get(2)
print(#ds, x, y)   -- 5 [3, 4] 2
print(ds)]=],
  },
  {
    name = "ember.data.TensorDataset:len",
    sig = "ds:len() -> integer",
    doc = "The number of rows (the tensors' size along dim 1).",
    example = [=[
local data = ember.data
print(data.TensorDataset(ember.zeros(7, 2)):len())   -- 7]=],
  },
  {
    name = "ember.data.TensorDataset:get",
    sig = "ds:get(i) -> row i of each tensor",
    doc = "Row i (1-based) of each tensor, as separate values. i outside 1..#ds is an error.",
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.tensor({{1, 2}, {3, 4}}), ember.tensor({10, 20}))
print(ds:get(2))   -- [3, 4]  20]=],
  },
  {
    name = "ember.data.TensorDataset:get_batch",
    sig = "ds:get_batch(index) -> the rows of each tensor",
    doc = [=[
The rows picked by index (a 1-D int64 tensor of 1-based sample numbers) of each tensor,
one index_select each: what DataLoader calls instead of get for every sample.]=],
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.tensor({{1, 2}, {3, 4}, {5, 6}}), ember.tensor({10, 20, 30}))
local x, y = ds:get_batch(ember.tensor({3, 1}))
print(x, y)   -- [[5, 6], [1, 2]]  [30, 10]]=],
  },
  {
    name = "ember.data.DataLoader",
    also = {"ember.data.DataLoader.new"},
    sig = "data.DataLoader(dataset [, batch_size [, shuffle [, sampler ...]]]\n"
       .. "                [, {batch_size = 1, shuffle = false, drop_last = false,\n"
       .. "                    seed = nil, collate_fn = nil, sampler = nil}]) -> loader",
    doc = [=[
Iterates over a dataset in batches: for x, y in loader do ... end, each loop one epoch
(as PyTorch's for x, y in loader:); loader:iter() and loader() give the same iterator.
The arguments after dataset come in PyTorch's order or in the options table.
#loader is the number of batches; with drop_last the last incomplete one is left out.
Samples are stacked field by field: tensors with ember.stack, numbers into a tensor,
anything else into a list; collate_fn(samples) replaces that (each sample a table.pack
of get(i)'s values) and is not used for datasets with get_batch.
shuffle draws a new order each epoch: with seed, epoch e's order depends only on
(seed, e) and other random numbers are not disturbed; without it the global generator
shuffles, so ember.manual_seed makes the run reproducible. No worker processes.
sampler (such as data.DistributedSampler: an object with indices() and a length) gives
each epoch's order instead; it excludes shuffle = true.]=],
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.randn(10, 3), ember.arange(1, 11))
local loader = data.DataLoader(ds, {batch_size = 4, drop_last = true})
print(#loader)                                 -- 2
for x, y in loader do print(x.shape[1], y) end]=],
  },
  {
    name = "ember.data.DataLoader:iter",
    sig = "for x, y, ... in loader do ... end\nfor x, y, ... in loader:iter() do ... end\nfor x, y in loader() do ... end",
    doc = [=[
An iterator over one epoch's batches; each loop over the loader (and each call of iter())
starts the next epoch (loader.epoch tells which), so a seeded shuffle differs from epoch
to epoch. A loop left by break is dropped: the next loop starts a fresh epoch. Loops
over the same loader may nest.]=],
    example = [=[
local data = ember.data
local loader = data.DataLoader(data.TensorDataset(ember.arange(1, 7)), {batch_size = 4})
for x in loader:iter() do print(x) end   -- [1, 2, 3, 4] then [5, 6]
print(loader.epoch)                      -- 1]=],
  },
  {
    name = "ember.data.DataLoader:order",
    sig = "loader:order(epoch) -> index",
    doc = [=[
The sample order of an epoch as a 1-D int64 tensor of 1-based indices: 1..n without
shuffle; with a seed, the same tensor for the same epoch every time.]=],
    example = [=[
local data = ember.data
local loader = data.DataLoader(data.TensorDataset(ember.zeros(5)), {shuffle = true, seed = 7})
print(loader:order(1), loader:order(1):eq(loader:order(1)):all():item())   -- a permutation, true]=],
  },
  {
    name = "ember.data.DataLoader:set_epoch",
    sig = "loader:set_epoch(e)",
    doc = [=[
Makes the next iter() run epoch e (a positive integer), e.g. to resume a seeded run at
the epoch it stopped in, with the same sample order.]=],
    example = [=[
local data = ember.data
local loader = data.DataLoader(data.TensorDataset(ember.arange(1, 5)), {shuffle = true, seed = 3})
loader:set_epoch(2)
for x in loader:iter() do print(x) end
print(loader.epoch)   -- 2]=],
  },
  {
    name = "ember.data.fashion_mnist",
    sig = "data.fashion_mnist([root]) -> {train = {images =, labels =}, test = {images =, labels =}}",
    doc = [=[
Reads the Fashion-MNIST files (gzipped or not) from root, by default
data.fashion_mnist_root (the folder of Debian's dataset-fashion-mnist package):
train.images uint8 [60000, 28, 28], train.labels int64 [60000], and test with 10000.
Labels are the files' class numbers 0..9; ember's class indices are 1-based, so add 1
for CrossEntropyLoss. Names: data.fashion_mnist_classes. Missing files are an error
saying how to install them.]=],
    needs = "file",
    example = [=[
local data = ember.data
local fm = data.fashion_mnist()
print(fm.train.images.shape[1], data.fashion_mnist_classes[fm.train.labels[1] + 1])
local x = fm.train.images:float():div(255):reshape(-1, 784)]=],
  },
  {
    name = "ember.data.fashion_mnist_root",
    sig = "data.fashion_mnist_root  (a string)",
    doc = [=[
The folder data.fashion_mnist reads by default: "/usr/share/datasets/fashion-mnist".
Assign another folder to change the default.]=],
    example = [=[
local data = ember.data
print(data.fashion_mnist_root)]=],
  },
  {
    name = "ember.data.fashion_mnist_classes",
    sig = "data.fashion_mnist_classes  (a list of 10 strings)",
    doc = [=[
The class names of Fashion-MNIST; entry label + 1 names the file's label (0..9):
"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
"Bag", "Ankle boot".]=],
    example = [=[
local data = ember.data
print(#data.fashion_mnist_classes, data.fashion_mnist_classes[10])   -- 10 Ankle boot]=],
  },
  {
    name = "ember.data.DistributedSampler",
    also = {"ember.data.DistributedSampler.new"},
    sig = "data.DistributedSampler(dataset [, {num_replicas =, rank =, shuffle = true, seed = 0,\n"
       .. "                                    drop_last = false}]) -> sampler",
    doc = [=[
This rank's share of a dataset, as torch.utils.data.DistributedSampler, for
DataLoader(ds, {sampler = s}). num_replicas and rank default to the process group's
(ember.distributed; ranks are 0-based). Every rank draws the same order (with shuffle,
a permutation that depends only on seed and the epoch set with set_epoch), pads it by
repeating its first indices up to a multiple of num_replicas (drop_last cuts the tail
instead), and takes every num_replicas-th index from its rank on. #sampler is the
number of samples per rank. Indices are 1-based. Call s:set_epoch(e) before each epoch,
or every epoch has the same order.]=],
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.arange(1, 8))
local s = data.DistributedSampler(ds, {num_replicas = 3, rank = 1, shuffle = false})
print(#s, table.concat(s:indices(), " "))          -- 3  2 5 1
local loader = data.DataLoader(ds, {batch_size = 2, sampler = s})
for x in loader:iter() do print(x) end             -- [2, 5] then [1]]=],
  },
  {
    name = "ember.data.DistributedSampler:set_epoch",
    sig = "sampler:set_epoch(epoch)",
    doc = [=[
Sets the epoch (0 or more) whose shuffle indices() draws; as in PyTorch, call it at the
start of each epoch with the same value on every rank.]=],
    example = [=[
local s = ember.data.DistributedSampler({1, 2, 3, 4}, {num_replicas = 2, rank = 0, seed = 7})
s:set_epoch(1)
print(#s:indices())                                -- 2]=],
  },
  {
    name = "ember.data.DistributedSampler:indices",
    sig = "sampler:indices() -> list",
    doc = [=[
This rank's dataset indices (1-based) for the current epoch, as a Lua list.]=],
    example = [=[
local s = ember.data.DistributedSampler({1, 2, 3, 4, 5}, {num_replicas = 2, rank = 1, shuffle = false,
                                                          drop_last = true})
print(table.concat(s:indices(), " "))              -- 2 4]=],
  },
}
