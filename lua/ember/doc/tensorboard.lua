-- Docs of ember.utils and ember.utils.tensorboard (TensorBoard event files).
-- Format: ember/help.lua.
local SETUP = [=[
local SummaryWriter = ember.utils.tensorboard.SummaryWriter
local dir = os.tmpname(); os.remove(dir)      -- a fresh folder name
local w = SummaryWriter(dir)
]=]

return {
  {
    name = "ember.utils",
    sig = "local utils = ember.utils",
    doc = [=[
As torch.utils: ember.utils.tensorboard (TensorBoard files) and ember.utils.checkpoint
(activation checkpointing), each loaded on first use.]=],
    example = [=[
print(type(ember.utils.tensorboard.SummaryWriter))   -- table]=],
  },
  {
    name = "ember.utils.tensorboard",
    sig = "local tensorboard = ember.utils.tensorboard",
    doc = [=[
TensorBoard logging, as torch.utils.tensorboard: SummaryWriter writes event files
(TFRecords of protobuf Event messages, the format TensorBoard reads) with scalars,
scalar groups, histograms, images, text and hyperparameters. View them with
`tensorboard --logdir runs`. No TensorFlow or Python is needed to write them.]=],
    example = SETUP .. [=[
w:add_scalar("loss", 0.5, 1)
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter",
    sig = "SummaryWriter([log_dir], [comment], [purge_step], [max_queue], [flush_secs],\n"
       .. "              [filename_suffix]) -> writer   (or one options table)",
    doc = [=[
A writer of TensorBoard event files, as torch.utils.tensorboard.SummaryWriter.
log_dir: the folder (made with its parents); default
runs/<Mon>DD_HH-MM-SS_<host><comment>. The file is
log_dir/events.out.tfevents.<time>.<host>.<pid>.<n><filename_suffix>; its first record
is the file version "brain.Event:2". Records are queued and written every max_queue (10)
events, every flush_secs (120) seconds (checked when an event is added),
at flush() and at close(). purge_step: TensorBoard hides the steps from it on written by
an earlier run into the same folder (for a resumed run). A writer closes at the end of a
`local w <close>` scope, and when collected. Writing errors (a folder that cannot be
made, a full disk) raise, naming the op and the file; the records not written stay
queued for the next flush, and the file still ends at its last complete record (cut
back after a partial write; where it cannot be, the next flush starts a new event
file), so TensorBoard reads every record written after the disk frees up. A path with
a zero byte (log_dir, filename_suffix) raises.]=],
    example = [=[
local SummaryWriter = ember.utils.tensorboard.SummaryWriter
local dir = os.tmpname(); os.remove(dir)
do
  local w <close> = SummaryWriter(dir, {flush_secs = 10})
  for step = 1, 3 do w:add_scalar("loss", 1 / step, step) end
end                                           -- closed here
print(SummaryWriter{log_dir = dir, comment = "x"}:get_logdir() == dir)   -- true]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_scalar",
    sig = "writer:add_scalar(tag, scalar_value, [global_step], [walltime])",
    doc = [=[
Logs a number (or a one-element tensor) under tag at global_step (an integer; a float is
truncated) and walltime (seconds since the epoch; default now), as a float32
simple_value, as PyTorch does.]=],
    example = SETUP .. [=[
w:add_scalar("train/loss", 0.25, 100)
w:add_scalar("accuracy", ember.tensor(0.9), {global_step = 100})
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_scalars",
    sig = "writer:add_scalars(main_tag, tag_scalar_dict, [global_step], [walltime])",
    doc = [=[
Logs several scalars in one chart, as PyTorch: each entry tag = value goes to its own
run log_dir/<main_tag with / as _>_<tag> under the tag main_tag (one event file each,
made on first use). Entries are written in the order of their sorted tags.]=],
    example = SETUP .. [=[
w:add_scalars("loss", {train = 0.3, test = 0.4}, 5)   -- runs loss_train, loss_test
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_histogram",
    sig = "writer:add_histogram(tag, values, [global_step], [bins = 'tensorflow'], [walltime])",
    doc = [=[
Logs the histogram of a tensor (or a list of numbers) as a HistogramProto (min, max, num,
sum, sum_squares, bucket limits and counts), computed as PyTorch's make_histogram:
bins 'tensorflow' (TensorBoard's default edges: 0 and +-1e-12 * 1.1^k up to 1e20), a
number of equal bins over [min, max] (numpy.histogram's edges), or a list/tensor of
increasing edges; the buckets kept run from the one before the first non-empty bucket
to the last non-empty one, each given by its right edge. Values must be finite. At most
ember.utils.tensorboard.MAX_HISTOGRAM_BINS (100000) bins, as a count or as edges (one
more); more raise. max_bins is not supported.]=],
    example = SETUP .. [=[
w:add_histogram("weights", ember.randn(1000), 1)
w:add_histogram("counts", {1, 2, 2, 3, 3, 3}, 2, {bins = 3})
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_image",
    sig = "writer:add_image(tag, img_tensor, [global_step], [walltime], [dataformats = 'CHW'])",
    doc = [=[
Logs an image as a PNG. img_tensor: a tensor laid out as dataformats (CHW, HWC, HW or
another order of those letters) with 1 (grey, stored as RGB as PyTorch does), 3 (RGB) or
4 (RGBA) channels; uint8 values are kept, others are taken in [0, 1] and scaled by 255 in
float32, then truncated (values outside are clamped; NaN gives 0). Or an ember.plot
figure, drawn by gnuplot's PNG terminal (see add_figure).]=],
    example = SETUP .. [=[
local img = ember.zeros(3, 8, 8)
img[1]:fill_(1)                           -- red
w:add_image("red", img, 0)
w:add_image("grey", ember.rand(8, 8), 0, {dataformats = "HW"})
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_figure",
    sig = "writer:add_figure(tag, figure, [global_step], [close = true], [walltime])",
    doc = [=[
Logs an ember.plot figure as an image: drawn to PNG by gnuplot (fig:save's path), then
closed unless close = false, as PyTorch's add_figure does with a matplotlib figure.
Needs gnuplot with the pngcairo or png terminal.]=],
    example = SETUP .. [=[
local fig = ember.plot.figure{title = "loss"}
fig:line({3, 2, 1.5, 1.2})
if ember.plot.terminals().pngcairo or ember.plot.terminals().png then w:add_figure("curve", fig, 1) end
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_text",
    sig = "writer:add_text(tag, text_string, [global_step], [walltime])",
    doc = [=[
Logs a string (Markdown in TensorBoard's text tab) under tag/text_summary, as a string
tensor with the text plugin's metadata, as PyTorch does.]=],
    example = SETUP .. [=[
w:add_text("notes", "lr **1e-3**, batch 128", 0)
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:add_hparams",
    sig = "writer:add_hparams(hparam_dict, metric_dict, [hparam_domain_discrete], [run_name])",
    doc = [=[
Logs one training run's hyperparameters and final metrics for TensorBoard's HPARAMS tab,
as PyTorch: a sub-run log_dir/<run_name> (default: the current time) gets the hparams
plugin's experiment, session_start_info and session_end_info summaries and each metric
as a scalar. Values: numbers, strings, booleans (written as bool_value: PyTorch 1.13
writes a Python bool as the number 1/0) or one-element tensors.
hparam_domain_discrete: name = {the values it can take} (same type as its value).
Hyperparameters and metrics are written in the order of their sorted names.]=],
    example = SETUP .. [=[
w:add_hparams({lr = 0.01, optimizer = "adam"}, {["hparam/accuracy"] = 0.91},
              {hparam_domain_discrete = {optimizer = {"adam", "sgd"}}, run_name = "trial1"})
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:flush",
    sig = "writer:flush()",
    doc = "Writes the queued records of every event file of the writer (add_scalars' too) to disk.",
    example = SETUP .. [=[
w:add_scalar("x", 1, 0)
w:flush()
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:close",
    sig = "writer:close()",
    doc = [=[
Flushes and closes every event file. A second close does nothing; a later add_* opens a
new event file in log_dir, as PyTorch's writer does.]=],
    example = SETUP .. [=[
w:close()
w:close()]=],
  },
  {
    name = "ember.utils.tensorboard.SummaryWriter:get_logdir",
    sig = "writer:get_logdir() -> string",
    doc = "The folder the writer's event files are in.",
    example = SETUP .. [=[
print(w:get_logdir() == dir)   -- true
w:close()]=],
  },
}
