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
  data.DataLoader       batches, shuffling (seed or generator), samplers, collate_fn
  data.Subset, data.ConcatDataset, data.random_split: parts and sums of datasets
  data.Sampler          base class of samplers: SequentialSampler, RandomSampler,
                        SubsetRandomSampler, WeightedRandomSampler, BatchSampler,
                        DistributedSampler (DataLoader's sampler and batch_sampler)
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
    sig = "data.DataLoader(dataset [, batch_size [, shuffle [, sampler [, batch_sampler ...]]]]\n"
       .. "                [, {batch_size = 1, shuffle = false, drop_last = false, generator = nil,\n"
       .. "                    seed = nil, collate_fn = nil, sampler = nil, batch_sampler = nil}]) -> loader",
    doc = [=[
Iterates over a dataset in batches: for x, y in loader do ... end, each loop one epoch
(as PyTorch's for x, y in loader:); loader:iter() and loader() give the same iterator.
The arguments after dataset come in PyTorch's order or in the options table.
#loader is the number of batches; with drop_last the last incomplete one is left out.
Samples are stacked field by field: tensors with ember.stack, numbers into a tensor,
anything else into a list; collate_fn(samples) replaces that (each sample a table.pack
of get(i)'s values) and is not used for datasets with get_batch.
shuffle draws a new order each epoch: from generator (an ember.Generator, advancing it
alone) when given; with seed (ember's own option), epoch e's order depends only on
(seed, e) and other random numbers are not disturbed; without either the global
generator shuffles, so ember.manual_seed makes the run reproducible. seed and generator
exclude each other. No worker processes: num_workers, pin_memory, timeout,
persistent_workers are accepted only at PyTorch's defaults (num_workers = 0, ...).
sampler (a data.Sampler such as RandomSampler or DistributedSampler: an object with
indices() and a length, or a plain list of indices) gives each epoch's order instead;
it excludes shuffle = true. batch_sampler (such as data.BatchSampler, or a list of
batches) gives each epoch's batches; as in PyTorch it excludes batch_size (other than
1), shuffle, sampler and drop_last, and loader.batch_size is then nil.]=],
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
or every epoch has the same order. for i in s do ... end visits indices().]=],
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
  {
    name = "ember.data.Subset",
    also = {"ember.data.Subset:init"},
    sig = "data.Subset(dataset, indices) -> dataset",
    doc = [=[
The samples of dataset at indices (a list of 1-based indices or a 1-D integer tensor),
in that order, repeats allowed: sub:get(i) is dataset:get(indices[i]). As
torch.utils.data.Subset, with sub.dataset and sub.indices (a Lua list); the indices are
checked against #dataset when the Subset is made (PyTorch finds a bad one when read).
Has get_batch when the dataset does, so a DataLoader over a Subset of a TensorDataset
takes each batch with one index_select per tensor.]=],
    example = [=[
local data = ember.data
local ds = data.TensorDataset(ember.arange(10, 20))
local sub = data.Subset(ds, {3, 1, 10})
print(#sub, sub:get(1), sub:get(3))   -- 3 tensor(12) tensor(19)]=],
  },
  {
    name = "ember.data.Subset:len",
    sig = "sub:len() -> integer",
    doc = "The number of indices (#sub).",
    example = [=[
print(ember.data.Subset({10, 20, 30}, {2, 2}):len())   -- 2]=],
  },
  {
    name = "ember.data.Subset:get",
    sig = "sub:get(i) -> the fields of dataset:get(indices[i])",
    doc = "Sample indices[i] of the dataset; i outside 1..#sub is an error.",
    example = [=[
local sub = ember.data.Subset({10, 20, 30}, {3, 1})
print(sub:get(1), sub:get(2))   -- 30 10]=],
  },
  {
    name = "ember.data.ConcatDataset",
    also = {"ember.data.ConcatDataset:init"},
    sig = "data.ConcatDataset({ds1, ds2, ...}) -> dataset\nds1 + ds2  (a Dataset's __add)",
    doc = [=[
The samples of the datasets one after the other, as torch.utils.data.ConcatDataset:
cat:get(i) finds the part holding sample i (cat.cumulative_sizes[k] counts the samples
of parts 1..k, read when it is made) and reads it there. Empty parts are allowed; an
empty list is an error. Indices are 1-based, and negative ones are refused as for
every ember dataset. Has get_batch when every part does (each part's share of a batch
is taken in one call, then the rows are put back in the batch's order). ds1 + ds2 is
ConcatDataset({ds1, ds2}) for instances of Dataset classes.]=],
    example = [=[
local data = ember.data
local a, b = data.TensorDataset(ember.arange(1, 4)), data.TensorDataset(ember.arange(101, 103))
local cat = data.ConcatDataset({a, b})
print(#cat, cat:get(4), table.concat(cat.cumulative_sizes, " "))   -- 5 tensor(101) 3 5
print(#(a + b))                                                    -- 5]=],
  },
  {
    name = "ember.data.ConcatDataset:len",
    sig = "cat:len() -> integer",
    doc = "The total number of samples (the last of cumulative_sizes).",
    example = [=[
print(ember.data.ConcatDataset({{1, 2}, {}, {3}}):len())   -- 3]=],
  },
  {
    name = "ember.data.ConcatDataset:get",
    sig = "cat:get(i) -> the fields of sample i",
    doc = "Sample i (1..#cat) of the concatenation, read from the part that holds it.",
    example = [=[
local cat = ember.data.ConcatDataset({{"a", "b"}, {"c"}})
print(cat:get(3))   -- c]=],
  },
  {
    name = "ember.data.random_split",
    sig = "data.random_split(dataset, lengths [, generator]) -> {Subset, ...}\n"
       .. "data.random_split(dataset, lengths, {generator = g})",
    doc = [=[
Splits a dataset into non-overlapping Subsets of random samples, as
torch.utils.data.random_split. lengths are counts summing to #dataset, or fractions
summing to 1 (PyTorch's test: the sum is within 1e-9 of 1 and not above it): each split
gets floor(n * fraction) samples and the remainder is handed out one at a time
round-robin from the first split; an empty split from fractions prints PyTorch's
warning ("Length of split at index k is 0", k 1-based) to stderr. A fraction outside
0..1, a negative or fractional count, or a sum that is not #dataset is an error.
The permutation is drawn from generator (default: the global generator).]=],
    example = [=[
local data = ember.data
local g = ember.Generator():manual_seed(42)
local train, val = table.unpack(data.random_split(data.TensorDataset(ember.arange(1, 11)), {0.8, 0.2}, g))
print(#train, #val)   -- 8 2]=],
  },
  {
    name = "ember.data.Sampler",
    also = {"ember.data.Sampler:extend"},
    sig = "data.Sampler:extend(name) -> a sampler class\nCls(...) -> an instance (calls Cls:init(...))",
    doc = [=[
The base class of samplers (torch.utils.data.Sampler). The sampler protocol, what
DataLoader's sampler and batch_sampler options take: s:indices() returns one epoch's
list of 1-based dataset indices (a batch sampler's: a list of batches, each a list of
indices), each call a new epoch (a new draw for random samplers), and #s is its length.
A subclass defines init (optional), len and indices; its instances also answer #s,
s:iter() and for i in s do ... end (PyTorch's for i in s:). Loops over one sampler may
not nest in that form (the loop is found again from the index it last gave, and indices
repeat): nest with s:iter().]=],
    example = [=[
local data = ember.data
local Evens = data.Sampler:extend("Evens")
function Evens:init(n) self.n = n end
function Evens:len() return self.n // 2 end
function Evens:indices()
  local out = {}
  for i = 2, self.n, 2 do out[#out + 1] = i end
  return out
end
for i in Evens(6) do io.write(i, " ") end print()   -- 2 4 6
print(#Evens(6))                                     -- 3]=],
  },
  {
    name = "ember.data.Sampler:len",
    sig = "s:len() -> integer",
    doc = [=[
The length of one epoch's list; #s calls it. Sampler's own raises "len() is not
implemented": subclasses define it.]=],
    example = [=[
print(ember.data.SequentialSampler({5, 6, 7}):len())   -- 3]=],
  },
  {
    name = "ember.data.Sampler:indices",
    sig = "s:indices() -> list",
    doc = [=[
One epoch's list of 1-based dataset indices (a batch sampler's: a list of lists); each
call is a new epoch. Sampler's own raises "indices() is not implemented".]=],
    example = [=[
print(table.concat(ember.data.SequentialSampler({5, 6, 7}):indices(), " "))   -- 1 2 3]=],
  },
  {
    name = "ember.data.Sampler:iter",
    sig = "for i in s:iter() do ... end",
    doc = [=[
An iterator over one epoch's list (one call of indices()); for i in s do ... end does the
same, and s:iter() may also nest over the same sampler.]=],
    example = [=[
local s = ember.data.BatchSampler({1, 2, 3, 4, 5}, 2, false)
for batch in s:iter() do print(table.concat(batch, ",")) end   -- 1,2  3,4  5]=],
  },
  {
    name = "ember.data.SequentialSampler",
    also = {"ember.data.SequentialSampler:init", "ember.data.SequentialSampler:len",
            "ember.data.SequentialSampler:indices"},
    sig = "data.SequentialSampler(data_source) -> sampler",
    doc = [=[
The indices 1, 2, ..., #data_source in order, every epoch (torch.utils.data's
SequentialSampler, 1-based). data_source is a dataset or a plain list; its length is
read at each indices() and #s.]=],
    example = [=[
local s = ember.data.SequentialSampler(ember.data.TensorDataset(ember.zeros(4)))
print(#s, table.concat(s:indices(), " "))   -- 4 1 2 3 4]=],
  },
  {
    name = "ember.data.RandomSampler",
    also = {"ember.data.RandomSampler:init", "ember.data.RandomSampler:len", "ember.data.RandomSampler:indices"},
    sig = "data.RandomSampler(data_source [, replacement = false [, num_samples [, generator]]]\n"
       .. "                  [, {replacement =, num_samples =, generator =}]) -> sampler",
    doc = [=[
A random order of 1..#data_source each epoch, as torch.utils.data.RandomSampler.
Without replacement: a permutation (num_samples > n: whole permutations one after
another, then the start of one more); with replacement: num_samples independent
uniform draws. num_samples defaults to #data_source (read each time) and must be
positive, so an empty data source is an error, as in PyTorch. Draws come from
generator, advancing it alone; without one each epoch seeds a new generator from one
draw of the global generator (PyTorch's way). The numbers differ from PyTorch's
(another random engine); the structure is the same.]=],
    example = [=[
local data = ember.data
local g = ember.Generator():manual_seed(0)
local s = data.RandomSampler(data.TensorDataset(ember.zeros(5)), {generator = g})
print(#s, table.concat(s:indices(), " "))                      -- 5 and a permutation of 1..5
print(#data.RandomSampler({1, 2, 3}, true, 10):indices())      -- 10]=],
  },
  {
    name = "ember.data.SubsetRandomSampler",
    also = {"ember.data.SubsetRandomSampler:init", "ember.data.SubsetRandomSampler:len",
            "ember.data.SubsetRandomSampler:indices"},
    sig = "data.SubsetRandomSampler(indices [, generator]) -> sampler",
    doc = [=[
The given dataset indices (a list or a 1-D integer tensor, 1-based) in a new random
order each epoch, as torch.utils.data.SubsetRandomSampler; the permutation comes from
generator (default: the global generator). PyTorch's s.indices is s.indices_list here
(s:indices() is the sampler protocol's method).]=],
    example = [=[
local s = ember.data.SubsetRandomSampler({10, 20, 30}, ember.Generator():manual_seed(1))
print(#s, table.concat(s:indices(), " "))   -- 3 and 10, 20, 30 in some order]=],
  },
  {
    name = "ember.data.WeightedRandomSampler",
    also = {"ember.data.WeightedRandomSampler:init", "ember.data.WeightedRandomSampler:len",
            "ember.data.WeightedRandomSampler:indices"},
    sig = "data.WeightedRandomSampler(weights, num_samples [, replacement = true [, generator]]\n"
       .. "                          [, {replacement =, generator =}]) -> sampler",
    doc = [=[
num_samples indices from 1..#weights drawn with probabilities proportional to weights
(a list or a 1-D tensor, kept as float64), as torch.utils.data.WeightedRandomSampler,
from generator: with replacement independent draws (found in the weights' running sums,
O(n + k log n)), without, ember.multinomial (distinct indices). Checked when made:
num_samples a positive integer, weights 1-D, finite, non-negative and not all 0, and
without replacement num_samples at most the number of non-zero weights (PyTorch then
returns zero-weight indices; ember refuses).]=],
    example = [=[
local s = ember.data.WeightedRandomSampler({0.1, 0, 0.9}, 8, true, ember.Generator():manual_seed(2))
print(table.concat(s:indices(), " "))   -- mostly 3, some 1, never 2]=],
  },
  {
    name = "ember.data.BatchSampler",
    also = {"ember.data.BatchSampler:init", "ember.data.BatchSampler:len", "ember.data.BatchSampler:indices"},
    sig = "data.BatchSampler(sampler, batch_size, drop_last) -> batch sampler\n"
       .. "data.BatchSampler(sampler, {batch_size =, drop_last =})",
    doc = [=[
The indices of sampler (a sampler or a plain list of indices) in batches of batch_size,
as torch.utils.data.BatchSampler: the last batch shorter, or left out with drop_last
(true or false, required as in PyTorch). #b is the number of batches. For DataLoader's
batch_sampler option.]=],
    example = [=[
local data = ember.data
local b = data.BatchSampler(data.SequentialSampler({1, 2, 3, 4, 5, 6, 7}), 3, false)
for batch in b do print(table.concat(batch, " ")) end   -- 1 2 3 | 4 5 6 | 7
local loader = data.DataLoader(data.TensorDataset(ember.arange(1, 8)), {batch_sampler = b})
print(#loader)                                          -- 3]=],
  },
}
