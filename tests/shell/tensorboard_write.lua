-- tensorboard_write.lua DIR — writes a known set of summaries with ember's
-- SummaryWriter into DIR/ember (tensorboard_test.sh reads them back with
-- TensorBoard's loader, tensorboard_read.py, and compares them with what
-- PyTorch's SummaryWriter writes for the same calls, tensorboard_torch.py).
-- Every call gives its walltime, so the records can match byte for byte.
local ember = require("ember")
local SummaryWriter = ember.utils.tensorboard.SummaryWriter

local dir = assert(arg[1], "usage: tensorboard_write.lua DIR")
local w <close> = SummaryWriter(dir .. "/ember")
local t = 1000
local function wall() t = t + 1; return t + 0.25 end

for i = 0, 4 do w:add_scalar("loss", 1 / (i + 1), i, wall()) end
w:add_scalar("tensor_scalar", ember.tensor({2.5}), 10, wall())
w:add_scalar("zero", 0, 0, wall())
w:add_scalar("negative_step", -3.75, -2, wall())
for i = 0, 2 do w:add_scalars("grp/x", {a = i, b = 2 * i + 0.5}, i, wall()) end

w:add_histogram("hist3", ember.tensor({1, 2, 2, 3, 3, 3}), 1, {bins = 3, walltime = wall()})
w:add_histogram("hist_tf", ember.tensor({-1.5, 0.25, 0.25, 3, 0}), 2, {walltime = wall()})
w:add_histogram("hist_same", ember.tensor({2, 2, 2}), 3, {bins = 4, walltime = wall()})

-- uint8 HWC 2x3 RGB: pixel (y, x, c) = 10 * (3y + x) + c (0-based)
local px = {}
for y = 0, 1 do
  local row = {}
  for x = 0, 2 do row[x + 1] = {10 * (3 * y + x), 10 * (3 * y + x) + 1, 10 * (3 * y + x) + 2} end
  px[y + 1] = row
end
w:add_image("img_u8_hwc", ember.tensor(px, {dtype = ember.uint8}), 0, wall(), "HWC")
-- float CHW, one channel: grey, repeated to RGB
w:add_image("img_f_chw", ember.tensor({{{0, 0.5}, {1, 0.25}}}), 1, {walltime = wall()})
-- float HW
w:add_image("img_hw", ember.tensor({{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}}), 2, wall(), "HW")
-- float RGBA CHW
w:add_image("img_rgba", ember.tensor({{{1, 0}}, {{0, 1}}, {{0.5, 0.5}}, {{1, 0.2}}}), 3, wall())

w:add_text("note", "hello *world*", 3, wall())
w:add_text("empty", "", 4, wall())

w:add_hparams({lr = 0.01, optimizer = "sgd", layers = 3},
              {["hparam/accuracy"] = 0.75, ["hparam/loss"] = 0.5},
              {hparam_domain_discrete = {optimizer = {"adam", "sgd"}}, run_name = "hp"})

local p <close> = SummaryWriter(dir .. "/ember_purge", {purge_step = 5})
p:add_scalar("after_purge", 1, 5, wall())
