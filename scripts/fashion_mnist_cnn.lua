-- fashion_mnist_cnn.lua — a small convolutional network on Fashion-MNIST:
--   Conv(1->32, 3x3, pad 1)-BatchNorm-ReLU-MaxPool(2)
--   -> Conv(32->64, 3x3, pad 1)-BatchNorm-ReLU-MaxPool(2)
--   -> Flatten -> Linear(3136->128)-ReLU-Dropout(0.25) -> Linear(128->10)
-- trained with AdamW (lr 1e-3 on a cosine schedule) in batches of 128. The same
-- options, per-epoch line, checkpoints, --resume and --plot as
-- fashion_mnist_mlp.lua (the loop is scripts/fashion_mnist_common.lua).
--
--   build/ember scripts/fashion_mnist_cnn.lua [--epochs 10] [--lr 1e-3]
--       [--seed 1] [--device cpu] [--batch-size 128] [--checkpoint PATH]
--       [--resume] [--data DIR] [--limit N] [--plot] [--plot-file PATH]
local ember = require "ember"
local nn = ember.nn

local here = (arg and arg[0] and arg[0]:match("^(.*/)")) or "./"
local common = dofile(here .. "fashion_mnist_common.lua")

local function model()
  return nn.Sequential(
    nn.Conv2d(1, 32, 3, {padding = 1}), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, {padding = 1}), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
    nn.Linear(128, 10))
end

common.main(arg or {...}, {
  name = "fashion_mnist_cnn",
  title = "Fashion-MNIST CNN",
  model = model,
  layout = function(x) return x:view(-1, 1, 28, 28) end,
})
