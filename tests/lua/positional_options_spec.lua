-- positional_options_spec.lua — PyTorch's positional-then-keyword calls:
-- f(a, b, 2, 1, {bias = false}) reads 2 and 1 by position and the rest from the trailing
-- options table, in nn layers and functions, optim, the schedulers, the DataLoader and the
-- C-bound ops; an argument given both ways is an error naming it, as Python's "got multiple
-- values for argument". Expected values: PyTorch's parameter order (its signatures) and hand
-- calculation.
local ember = require "ember"
local h = require "helpers"
local nn, optim, data = ember.nn, ember.optim, ember.data
local F = nn.functional

local err, has, check = h.err, h.has, h.check

-- the error f(...) raises, which must name this file's line (the call is made here)
local function err_here(f, ...)
  local args = table.pack(...)
  local e = err(function() local r = f(table.unpack(args, 1, args.n)); return r end)   -- not a tail call
  assert(e:find("positional_options_spec.lua:%d+:"), "expected the caller's line in: " .. e)
  return e
end

describe("positional arguments then an options table", function()
  it("nn.Conv2d(cin, cout, 3, stride, 1, {bias = false}) (the issue's case)", function()
    local c = nn.Conv2d(3, 8, 3, 2, 1, {bias = false})
    assert.are.same({2, 2}, c.stride)
    assert.are.same({1, 1}, c.padding)
    assert.are.same({1, 1}, c.dilation)
    assert.is_nil(c.bias)
    -- (8 + 2 - 3) // 2 + 1 = 4
    h.check_shape(c(ember.randn(1, 3, 8, 8)), {1, 8, 4, 4})
    -- the same with everything positional, and everything by keyword
    assert.are.same({2, 2}, nn.Conv2d(3, 8, 3, 2, 1, 1, 1, false).stride)
    assert.is_nil(nn.Conv2d(3, 8, 3, {stride = 2, padding = 1, bias = false}).bias)
    local t = nn.ConvTranspose2d(4, 2, 3, 2, 1, {output_padding = 1, bias = false})
    assert.are.same({1, 1}, t.output_padding)
    assert.is_nil(t.bias)
  end)

  it("an argument given by position and in the table is an error naming it", function()
    has(err_here(nn.Conv2d, 3, 8, 3, 2, 1, {stride = 2}), "Conv2d: got multiple values for argument 'stride'")
    has(err_here(nn.Linear, 3, 4, false, {bias = true}), "Linear: got multiple values for argument 'bias'")
    has(err_here(optim.SGD, {ember.zeros(2, {requires_grad = true})}, 0.1, {lr = 0.2}),
        "SGD: got multiple values for argument 'lr'")
    local x, w = ember.randn(1, 1, 5, 5), ember.randn(1, 1, 3, 3)
    has(err_here(F.conv2d, x, w, nil, 2, {stride = 1}), "conv2d: argument 4: got multiple values for argument 'stride'")
    has(err_here(function() return ember.ones(2, 3):sum(2, {dim = 1}) end), "sum: argument 1: got multiple values for argument 'dim'")
    has(err_here(function() return ember.tensor({3, 1, 2}):topk(2, 1, {dim = 1}) end),
        "topk: argument 2: got multiple values for argument 'dim'")
    has(err_here(function() return ember.tensor({3, 1, 2}):sort(1, {dim = 1}) end), "sort: argument 1: got multiple values")
    has(err_here(data.DataLoader, {1, 2, 3}, 2, {batch_size = 1}), "DataLoader: got multiple values for argument 'batch_size'")
  end)

  it("unknown options, too many positional arguments and keyword-only ones", function()
    has(err_here(nn.Conv2d, 3, 8, 3, {strid = 2}), "Conv2d: unknown option 'strid'")
    has(err_here(nn.Linear, 3, 4, true, "cpu", "float32", 5), "Linear: too many positional arguments")
    -- Embedding's dtype comes after PyTorch's unsupported max_norm ...: keyword only here
    has(err_here(nn.Embedding, 3, 4, 1, "float64"), "Embedding: too many positional arguments")
    has(err_here(function() return ember.tensor({3, 1, 2}):topk(2, {k = 2}) end), "topk: unknown option 'k'")
    -- PyTorch's deprecated size_average / reduce keep their places but are refused
    local a = ember.ones(2)
    has(err_here(F.mse_loss, a, a, true), "mse_loss: size_average is deprecated")
    has(err_here(nn.L1Loss, nil, false), "L1Loss: reduce is deprecated")
  end)

  it("nn layers take PyTorch's positional order", function()
    local lin = nn.Linear(3, 4, false, {dtype = "float64"})
    assert.is_nil(lin.bias)
    assert.are.equal("float64", lin.weight.dtype)
    local emb = nn.Embedding(5, 2, 3)               -- padding_idx
    assert.are.equal(3, emb.padding_idx)
    check(emb.weight[3], {0, 0})
    local ln = nn.LayerNorm(4, 1e-3, false)         -- eps, elementwise_affine
    assert.are.equal(1e-3, ln.eps)
    assert.is_nil(ln.weight)
    assert.are.equal("tanh", nn.GELU("tanh").approximate)
    assert.are.equal(-1, nn.Softmax({dim = -1}).dim)
    assert.are.same({3, -1}, {nn.Flatten(3).start_dim, nn.Flatten(3).end_dim})
    local d = nn.Dropout(0.25, {inplace = true})
    assert.are.same({0.25, true}, {d.p, d.inplace})
    assert.are.equal(0.3, nn.LeakyReLU(0.3, {inplace = false}).negative_slope)
    local pool = nn.MaxPool2d(2, 1, {padding = 1})
    assert.are.same({1, 1}, {pool.stride, pool.padding})
    local bn = nn.BatchNorm2d(3, 1e-3, {momentum = 0.2})
    assert.are.same({1e-3, 0.2}, {bn.eps, bn.momentum})
    local ce = nn.CrossEntropyLoss(ember.tensor({1.0, 1.0, 2.0}), {reduction = "sum"})
    -- logits [1, 2, 3], target 3 (weight 2): 2 * (log(e + e^2 + e^3) - 3)
    local want = 2 * (math.log(math.exp(1) + math.exp(2) + math.exp(3)) - 3)
    assert.is_true(math.abs(ce(ember.tensor({{1.0, 2.0, 3.0}}), ember.tensor({3})):item() - want) < 1e-5)
  end)

  it("nn.functional takes PyTorch's positional order", function()
    local logits, y = ember.tensor({{1.0, 2.0, 3.0}, {0.0, 0.0, 0.0}}), ember.tensor({3, 1})
    local w = ember.tensor({1.0, 1.0, 2.0})
    -- weight by position, reduction from the table: 2 (log(e + e^2 + e^3) - 3) + log 3
    local want = 2 * (math.log(math.exp(1) + math.exp(2) + math.exp(3)) - 3) + math.log(3)
    assert.is_true(math.abs(F.cross_entropy(logits, y, w, {reduction = "sum"}):item() - want) < 1e-5)
    -- ignore_index in its place (after size_average): the second row is left out
    local only_first = F.cross_entropy(logits, y, nil, nil, 1, {reduction = "sum"}):item()
    assert.is_true(math.abs(only_first - (math.log(math.exp(1) + math.exp(2) + math.exp(3)) - 3)) < 1e-5)
    -- huber_loss(input, target, reduction, delta): |d| = 2 > delta 1: delta (|d| - delta / 2) = 1.5
    check(F.huber_loss(ember.tensor({2.0}), ember.tensor({0.0}), "sum", 1), 1.5)
    check(F.dropout(ember.ones(3), 0.5, false), {1, 1, 1})                   -- training = false
    local z = ember.ones(4)
    F.dropout(z, 1, true, {inplace = true})
    check(z, {0, 0, 0, 0})
    check(F.embedding(ember.tensor({2}), ember.tensor({{1.0, 2.0}, {3.0, 4.0}}), 2), {{3, 4}})
    check(F.leaky_relu(ember.tensor({-2.0}), 0.5, {inplace = false}), {-1})
  end)

  it("nn.init takes PyTorch's positional order", function()
    local t = ember.empty(3, 4)
    nn.init.uniform_(t, 2, {b = 3})
    assert.is_true(t:min():item() >= 2 and t:max():item() <= 3)
    nn.init.constant_(t, 7)
    check(t, {{7, 7, 7, 7}, {7, 7, 7, 7}, {7, 7, 7, 7}})
    -- a = 0, mode = fan_out: relu gain sqrt(2) / sqrt(fan_out 3), bound sqrt(3) times that = sqrt(2)
    nn.init.kaiming_uniform_(t, 0, "fan_out", {nonlinearity = "relu"})
    assert.is_true(t:abs():max():item() <= math.sqrt(2) + 1e-6)
    has(err_here(nn.init.kaiming_uniform_, t, 0, {a = 1}), "kaiming_uniform_: got multiple values for argument 'a'")
  end)

  it("optimizers and schedulers take PyTorch's positional order", function()
    local p = ember.zeros(2, {requires_grad = true})
    local sgd = optim.SGD({p}, 0.1, 0.9, {nesterov = true})
    assert.are.same({0.1, 0.9, true}, {sgd.param_groups[1].lr, sgd.param_groups[1].momentum, sgd.param_groups[1].nesterov})
    local adam = optim.Adam({p}, 0.01, {0.8, 0.9}, {eps = 1e-6})
    assert.are.same({0.8, 0.9}, adam.param_groups[1].betas)
    assert.are.equal(1e-6, adam.param_groups[1].eps)
    local step = optim.lr_scheduler.StepLR(sgd, 2, 0.5)            -- step_size, gamma
    step:step(); step:step()
    assert.is_true(math.abs(sgd.param_groups[1].lr - 0.05) < 1e-12)
    has(err_here(optim.lr_scheduler.StepLR, sgd, 2, {step_size = 3}), "StepLR: got multiple values for argument 'step_size'")
    local plateau = optim.lr_scheduler.ReduceLROnPlateau(adam, "max", 0.5)
    assert.are.same({"max", 0.5}, {plateau.mode, plateau.factor})
  end)

  it("the DataLoader takes PyTorch's positional order", function()
    local ds = data.TensorDataset(ember.arange(1, 6))
    local loader = data.DataLoader(ds, 2, false, {drop_last = true})
    assert.are.same({2, false, true}, {loader.batch_size, loader.shuffle, loader.drop_last})
    assert.are.equal(2, #loader)
    has(err_here(data.DataLoader, ds, 2, false, nil, nil, 4), "DataLoader: option 'num_workers' is not supported")
  end)

  it("the C-bound ops and tensor creation take positions then options", function()
    check(ember.zeros(2, 3, {dtype = "int64"}), {{0, 0, 0}, {0, 0, 0}})
    check(ember.arange(1, 6, 2, {dtype = "float64"}), {1, 3, 5})
    check(ember.full({2}, 3, {dtype = "int64"}), {3, 3})
    check(ember.ones(2, 3):sum(2, true, {dtype = "float64"}), {{3}, {3}})
    local v, i = ember.tensor({3, 1, 2}):topk(2, 1, false, {sorted = true})
    check(v, {1, 2}); check(i, {2, 3})
    local s, j = ember.tensor({3, 1, 2}):sort(1, {descending = true})
    check(s, {3, 2, 1}); check(j, {1, 3, 2})
    check(ember.ones(3, 3):tril(-1), {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}})
    has(err_here(function() return ember.ones(3, 3):tril(0, {diagonal = 1}) end), "got multiple values for argument 'diagonal'")
    has(err_here(function() return ember.tensor({1.0, 1.0}):multinomial(1, true, {replacement = false}) end),
        "got multiple values for argument 'replacement'")
  end)

  it("the C-bound ops' shared checks of integer tables, options tables and option types name the op and the entry", function()
    local x = ember.arange(6)
    has(err_here(function() return x:split({2, "a", 2}) end), "split: argument 1: entry 2 of the split sizes is not an integer")
    has(err_here(ember.randint, 5, {2, 1.5}), "ember.randint: argument 2: size entry 2 is not an integer")
    has(err_here(function() return x:index_select(1, {1, 2.5}) end),
        "index_select: argument 2: entry 2 of the index table is not an integer")
    has(err_here(function() return x:roll({1, "b"}, 1) end), "roll: argument 1: entry 2 is not an integer")
    has(err_here(ember._as_strided, x, {2, 3}, {3, "q"}, 0), "as_strided: argument 3: strides 2 is not an integer")
    has(err_here(ember.zeros, 2, {dtype = 3}), "ember.zeros: argument 2: option 'dtype': expected a dtype name")
    has(err_here(ember.zeros, 2, {dtype = "nope"}), "ember.zeros: argument 2: option 'dtype': unknown dtype 'nope'")
    has(err_here(ember.zeros, 2, {device = true}), "ember.zeros: argument 2: option 'device': expected a device name")
    local z = ember.zeros(2, 2)
    has(err_here(ember.addmm, z, z, z, {beta = "x"}), "addmm: argument 4: option 'beta': expected a number, got string")
    has(err_here(ember.addmm, z, z, z, 5), "addmm: argument 4: expected an options table {beta=, alpha=}, got number")
    has(err_here(function() return x:index_add(1, {1}, ember.ones(1), 3) end),
        "index_add: argument 4: expected an options table {alpha=}, got number")
    has(err_here(ember.randperm, 3, "x"), "ember.randperm: argument 2: expected an options table, got string")
    check(ember.addmm(z, z, z, {beta = 2}), {{0, 0}, {0, 0}})
    check(ember.randperm(3, {dtype = "int64"}):sort(), {1, 2, 3})
  end)
end)
