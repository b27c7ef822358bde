-- fashion_mnist_mlp.lua — a 784-256-128-10 MLP on Fashion-MNIST, trained
-- with AdamW (learning rate on a cosine schedule) in batches of 128. One line per epoch (train loss, test
-- accuracy, seconds, samples/s), a progress bar on a terminal, a checkpoint
-- after every epoch, and --resume to continue from it exactly. --plot draws
-- the train and test loss curves (inline at each epoch end on a terminal)
-- and writes them to loss.png. The loop is scripts/fashion_mnist_common.lua,
-- shared with fashion_mnist_cnn.lua.
--
--   build/ember scripts/fashion_mnist_mlp.lua [--epochs 10] [--lr 1e-3]
--       [--seed 1] [--device cpu] [--batch-size 128] [--checkpoint PATH]
--       [--resume] [--data DIR] [--limit N] [--plot] [--plot-file PATH]
local ember = require "ember"
local nn = ember.nn

local here = (arg and arg[0] and arg[0]:match("^(.*/)")) or "./"
local common = dofile(here .. "fashion_mnist_common.lua")

local function model()
  return nn.Sequential(
    nn.Linear(784, 256), nn.ReLU(),
    nn.Linear(256, 128), nn.ReLU(),
    nn.Linear(128, 10))
end

common.main(arg or {...}, {
  name = "fashion_mnist_mlp",
  title = "Fashion-MNIST MLP",
  model = model,
  layout = function(x) return x:view(-1, 784) end,
})
