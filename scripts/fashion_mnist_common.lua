-- fashion_mnist_common.lua — the training program the Fashion-MNIST scripts share,
-- loaded with dofile from the script's own folder (not a script to run):
--
--   local common = dofile((arg[0]:match("^(.*/)") or "./") .. "fashion_mnist_common.lua")
--   common.main(arg, {name = "fashion_mnist_cnn", title = "Fashion-MNIST CNN",
--                     model = function() return nn.Sequential(...) end,
--                     layout = function(x) return x:view(-1, 1, 28, 28) end})
--
-- It parses the command line (--epochs, --lr, --seed, --device, --batch-size,
-- --checkpoint, --resume, --data, --limit, --plot, --plot-file, --stop-after, --distributed,
-- --tensorboard, --tensorboard-every),
-- trains with AdamW (learning rate on a cosine schedule) on cross-entropy, prints
-- one line per epoch (train loss, test accuracy, seconds, samples/s) with a
-- progress bar on a terminal, saves a checkpoint after every epoch, resumes from
-- it exactly, and draws the loss curves with --plot. The same code as
-- fashion_mnist_mlp.lua's, with the model and the input layout as parameters.
--
-- --distributed (under `ember --nproc N` or mpirun): data-parallel training with
-- nn.parallel.DistributedDataParallel; each rank trains on batch-size / N samples of
-- every batch (its DistributedSampler share of the data, reshuffled each epoch); rank 0
-- prints, evaluates and writes the checkpoint (the unwrapped model's names, so it
-- resumes with or without --distributed). Without a launcher it is a world of one.
local ember = require "ember"
local optim, data = ember.optim, ember.data

local M = {}

local function usage(name)
  return string.format([[
usage: ember scripts/%s.lua [options]
  --epochs N        epochs to train in all (default 10)
  --lr X            AdamW learning rate (default 1e-3)
  --seed N          seed for initialisation and shuffling (default 1)
  --device D        cpu or cuda (default cpu)
  --batch-size N    (default 128)
  --checkpoint PATH where to save after each epoch (default %s.safetensors)
  --resume          continue from the checkpoint
  --data DIR        the Fashion-MNIST files (default: Debian's dataset-fashion-mnist)
  --limit N         use only the first N training images (for quick runs)
  --plot            loss curves: inline at each epoch end on a terminal, and a file
  --plot-file PATH  where --plot writes them (default loss.png; .svg and .pdf work too)
  --stop-after N    stop after epoch N as if interrupted (to test --resume)
  --tensorboard DIR TensorBoard event files in DIR (ember.utils.tensorboard): train/loss
                    every --tensorboard-every steps (the mean since the last, default 10),
                    test/loss, test/accuracy and lr each epoch; steps count batches
  --cuda-graph      replay each full batch's step from a CUDA graph (needs --device cuda;
                    3 eager warm-up steps, a new capture each epoch for the learning
                    rate, the last partial batch of an epoch runs eagerly)
  --amp DTYPE       mixed precision: the forward and the loss under ember.autocast with
                    bfloat16 or float16 (float16 also scales the loss with a GradScaler)
  --distributed     data-parallel over the ranks of `ember --nproc N` or mpirun
                    (DistributedDataParallel): --batch-size is the global batch, split
                    evenly (it must divide by N); rank 0 prints and checkpoints]], name, name)
end

function M.parse_args(argv, name)
  local opts = {epochs = 10, lr = 1e-3, seed = 1, device = "cpu", batch_size = 128,
                checkpoint = name .. ".safetensors", resume = false, plot = false,
                plot_file = "loss.png", cuda_graph = false, amp = false, distributed = false,
                tensorboard = false, tensorboard_every = 10}
  local numeric = {epochs = true, lr = true, seed = true, batch_size = true, limit = true, stop_after = true,
                   tensorboard_every = true}
  local function fail(...)
    io.stderr:write(name, ": ", ...)
    io.stderr:write("\n")
    os.exit(1)
  end
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if a == "--resume" then
      opts.resume = true
    elseif a == "--plot" then
      opts.plot = true
    elseif a == "--cuda-graph" then
      opts.cuda_graph = true
    elseif a == "--distributed" then
      opts.distributed = true
    elseif a == "-h" or a == "--help" then
      print(usage(name))
      os.exit(0)
    elseif a:match("^%-%-") then
      local key = a:sub(3):gsub("-", "_")
      local value = argv[i + 1]
      if opts[key] == nil and not numeric[key] and key ~= "data" then fail("unknown option ", a, "\n", usage(name)) end
      if value == nil then fail(a, " needs a value") end
      if numeric[key] then
        value = tonumber(value)
        if not value then fail(a, " needs a number") end
        if key ~= "lr" then value = math.tointeger(value) or value end
      end
      opts[key] = value
      i = i + 1
    else
      fail("unexpected argument ", a, "\n", usage(name))
    end
    i = i + 1
  end
  if opts.tensorboard_every < 1 or math.type(opts.tensorboard_every) ~= "integer" then
    fail("--tensorboard-every needs a whole number >= 1, got ", tostring(opts.tensorboard_every))
  end
  if opts.amp and opts.amp ~= "bfloat16" and opts.amp ~= "float16" then
    fail("--amp takes bfloat16 or float16, got ", opts.amp)
  end
  if opts.cuda_graph and opts.amp == "float16" then
    fail("--cuda-graph cannot be combined with --amp float16: the GradScaler's step reads its inf/NaN check ",
         "back to the host, which a captured step cannot (use --amp bfloat16, which needs no scaler)")
  end
  if opts.distributed and opts.cuda_graph then
    fail("--distributed cannot be combined with --cuda-graph: DistributedDataParallel's all-reduces run ",
         "from backward's hooks, which a captured step does not replay")
  end
  if opts.cuda_graph then
    if not tostring(opts.device):match("^cuda") then fail("--cuda-graph needs --device cuda") end
    local ok, why = ember.cuda.is_available()
    if not ok then fail("--cuda-graph needs a CUDA device: ", tostring(why)) end
  end
  return opts
end

-- Images as float in [0, 1], normalised with the training set's mean and
-- standard deviation (0.2860, 0.3530); layout(x [N, 28, 28]) gives the model's input.
local MEAN, STD = 0.2860, 0.3530
-- the folder of this file (cuda_graph_step.lua sits beside it)
local function here_of()
  return debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
end

local function normalise(images) return (images:float() / 255 - MEAN) / STD end

local function progress(done, total, loss)
  local width = 30
  local filled = math.floor(width * done / total)
  io.write(string.format("\r  [%s%s] %d/%d  loss %.4f", string.rep("=", filled), string.rep(" ", width - filled),
                         done, total, loss))
  io.flush()
end

-- accuracy and mean cross-entropy loss on a test set
local function evaluate(model, criterion, images, labels, device, layout)
  local _ <close> = ember.no_grad()
  model:eval()
  local correct, loss_sum, n = 0, 0, images:size(1)
  for start = 1, n, 1000 do
    local len = math.min(1000, n - start + 1)
    local x = layout(normalise(images:narrow(1, start, len))):to(device)
    local y = labels:narrow(1, start, len):to(device) + 1
    local logits = model(x)
    correct = correct + logits:argmax(2):eq(y):sum():item()
    loss_sum = loss_sum + criterion(logits, y):item() * len
  end
  model:train()
  return correct / n, loss_sum / n
end

-- common.main(argv, spec): trains spec.model() (called after seeding) on inputs
-- spec.layout(x [N, 28, 28] normalised); spec.name names the checkpoint and the
-- messages, spec.title the plot.
function M.main(argv, spec)
  local opts = M.parse_args(argv, spec.name)
  local dist, world, main = ember.distributed, 1, true
  if opts.distributed then
    dist.init_process_group()
    world, main = dist.get_world_size(), dist.is_main_process()
    if opts.batch_size % world ~= 0 then
      io.stderr:write(string.format("%s: --batch-size %d does not split evenly over %d ranks\n", spec.name,
                                    opts.batch_size, world))
      os.exit(1)
    end
  end
  -- print on rank 0 only
  local function say(...) if main then print(...) end end
  ember.manual_seed(opts.seed)
  local ds = data.fashion_mnist(opts.data)
  local train_x, train_y = ds.train.images, ds.train.labels
  if opts.limit then
    train_x, train_y = train_x:narrow(1, 1, opts.limit), train_y:narrow(1, 1, opts.limit)
  end
  local train_set = data.TensorDataset(train_x, train_y)
  local loader, sampler
  if opts.distributed then
    sampler = data.DistributedSampler(train_set, {shuffle = true, seed = opts.seed})
    loader = data.DataLoader(train_set, {batch_size = opts.batch_size // world, sampler = sampler})
  else
    loader = data.DataLoader(train_set, {batch_size = opts.batch_size, shuffle = true, seed = opts.seed})
  end

  local model = spec.model()
  model:to(opts.device)
  -- the wrapper trains; the model itself is evaluated and checkpointed
  local net = opts.distributed and ember.nn.parallel.DistributedDataParallel(model) or model
  local criterion = ember.nn.CrossEntropyLoss()
  -- capturable: the step count lives on the device, so graph replays count on
  local opt = optim.AdamW(model:parameters(), {lr = opts.lr, capturable = opts.cuda_graph})
  -- the learning rate follows a cosine from lr down to 0 over the run
  local sched = optim.lr_scheduler.CosineAnnealingLR(opt, {T_max = opts.epochs})

  local first_epoch = 1
  if opts.resume then
    local info = ember.load_checkpoint(opts.checkpoint, {model = model, optimizer = opt, scheduler = sched})
    first_epoch = info.epoch + 1
    say(string.format("resumed from %s after epoch %d", opts.checkpoint, info.epoch))
  end

  -- (under mpirun, stdout is a pseudo-terminal even when the job's output goes to a file)
  local tty = world == 1 and ember.isatty(1)
  local nbatches = #loader
  -- loss curves, drawn inline only at epoch ends (below that epoch's line:
  -- inline = false keeps add from drawing); the train curve gets 20 points
  -- per epoch (each the mean loss of the batches since the last), the test
  -- curve one per epoch
  local live
  if opts.plot and main then
    live = ember.plot.live{title = spec.title, xlabel = "epoch", ylabel = "cross-entropy loss",
                           inline = false, inplace = false}
  end
  local plot_every = math.max(1, nbatches // 20)
  -- TensorBoard (rank 0): steps count batches from the start of the run; a
  -- resumed run marks the steps from where it resumes as stale (purge_step)
  local tb
  if opts.tensorboard and main then
    tb = ember.utils.tensorboard.SummaryWriter(opts.tensorboard,
                                               {purge_step = first_epoch > 1 and (first_epoch - 1) * nbatches or nil})
  end
  local amp_device = opts.device:match("^(%a+)")
  -- float16's narrow range needs the loss scaled so small gradients survive;
  -- bfloat16 has float32's range and needs no scaler (as in PyTorch practice)
  local scaler = opts.amp == "float16" and ember.amp.GradScaler() or nil
  local function forward_loss(x, y)
    if not opts.amp then return criterion(net(x), y) end
    local _ <close> = ember.autocast(amp_device, {dtype = opts.amp})
    return criterion(net(x), y)
  end
  local function step(x, y)
    opt:zero_grad()
    local loss = forward_loss(x, y)
    if scaler then
      scaler:scale(loss):backward()
      scaler:step(opt)
      scaler:update()
    else
      loss:backward()
      opt:step()
    end
    return loss
  end
  local graphed = opts.cuda_graph and dofile(here_of() .. "cuda_graph_step.lua").new(step, {warmup = 3})
  for epoch = first_epoch, opts.epochs do
    loader:set_epoch(epoch)
    if sampler then sampler:set_epoch(epoch) end
    if graphed then graphed:recapture() end    -- this epoch's learning rate
    local t0 = ember.wall_time()
    -- the loss is summed on the device: reading it every step would wait
    -- for the GPU at every step
    local loss_sum, seen, b = ember.zeros({}, {device = opts.device, dtype = "float64"}), 0, 0
    local window_start, window_seen = 0, 0   -- loss_sum and seen at the last plotted point
    local tb_start, tb_seen = 0, 0            -- the same at the last TensorBoard point
    local step0 = (epoch - 1) * nbatches
    if tb then tb:add_scalar("lr", opt.param_groups[1].lr, step0) end
    for images, labels in loader:iter() do
      local x = spec.layout(normalise(images)):to(opts.device)
      local y = (labels + 1):to(opts.device)     -- classes are 1-based in ember
      local n = y:size(1)
      local loss
      if graphed and n == opts.batch_size then loss = graphed:run(x, y) else loss = step(x, y) end
      loss_sum = loss_sum + loss:detach() * n
      seen = seen + n
      b = b + 1
      if tty and (b % 20 == 0 or b == nbatches) then progress(b, nbatches, loss_sum:item() / seen) end
      if live and (b % plot_every == 0 or b == nbatches) then
        local total = loss_sum:item()
        live:add("train", epoch - 1 + b / nbatches, (total - window_start) / (seen - window_seen))
        window_start, window_seen = total, seen
      end
      if tb and (b % opts.tensorboard_every == 0 or b == nbatches) then
        local total = loss_sum:item()
        tb:add_scalar("train/loss", (total - tb_start) / (seen - tb_seen), step0 + b)
        tb_start, tb_seen = total, seen
      end
    end
    if opts.distributed then       -- the whole job's loss and samples
      local totals = ember.tensor({loss_sum:item(), seen}, {dtype = "float64"})
      dist.all_reduce(totals)
      loss_sum, seen = totals[1], math.tointeger(totals[2]:item())
    end
    local mean_loss = loss_sum:item() / seen      -- waits for the epoch's work
    local seconds = ember.wall_time() - t0
    if tty then io.write("\r", string.rep(" ", 70), "\r") end
    local acc, test_loss
    if main then acc, test_loss = evaluate(model, criterion, ds.test.images, ds.test.labels, opts.device, spec.layout) end
    say(string.format("epoch %2d/%d  train loss %.4f  test accuracy %.4f  %.2f s  %.0f samples/s",
                        epoch, opts.epochs, mean_loss, acc or 0, seconds, seen / seconds))
    if tb then
      tb:add_scalar("test/loss", test_loss, epoch * nbatches)
      tb:add_scalar("test/accuracy", acc, epoch * nbatches)
      tb:flush()
    end
    if live then
      live:add("test", epoch, test_loss)
      if tty then live:draw() end
    end
    sched:step()
    ember.save_checkpoint(opts.checkpoint, {model = model, optimizer = opt, scheduler = sched, epoch = epoch})
    if opts.stop_after and epoch >= opts.stop_after then break end
  end
  if tb then tb:close() end
  if live and live:points("train") then
    live:save(opts.plot_file)
    print("loss curves written to " .. opts.plot_file)
  end
  if opts.distributed then dist.destroy_process_group() end
end

return M
