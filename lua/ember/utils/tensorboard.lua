-- ember.utils.tensorboard — PyTorch's torch.utils.tensorboard.SummaryWriter:
-- scalars, scalar groups, histograms, images, text and hyperparameters
-- written as TensorBoard event files.
--
-- An event file is a sequence of TFRecords (framed with masked CRC32C by the
-- C half, ember._tensorboard.record) each holding one protobuf `Event`. The
-- messages are encoded here by hand: proto3, so fields at their default
-- value are left out unless they belong to a oneof, and fields come in
-- field-number order, as protobuf's own serializer writes them; the bytes
-- then match PyTorch's for the same inputs.
local ember = require("ember")
local errors = require("ember.errors")

local C = ember._tensorboard
local raisef = errors.raisef
local M = {}

---------------------------------------------------------------------------
-- protobuf wire format

-- A varint of a 64-bit integer; negative ones take ten bytes (two's
-- complement), as protobuf writes int64. >> is a logical shift in Lua.
local function varint(n)
  local out = {}
  repeat
    local b = n & 0x7F
    n = n >> 7
    out[#out + 1] = string.char(n ~= 0 and (b | 0x80) or b)
  until n == 0
  return table.concat(out)
end

local function field_key(field, wire) return varint(field << 3 | wire) end
local function pb_varint(field, n) return field_key(field, 0) .. varint(n) end
local function pb_double(field, x) return field_key(field, 1) .. string.pack("<d", x) end
local function pb_float(field, x) return field_key(field, 5) .. string.pack("<f", x) end
local function pb_bytes(field, s) return field_key(field, 2) .. varint(#s) .. s end

-- proto3 leaves out scalar fields at their default (outside a oneof)
local function opt_varint(field, n) return n ~= 0 and pb_varint(field, n) or "" end
local function opt_double(field, x) return x ~= 0 and pb_double(field, x) or "" end
local function opt_bytes(field, s) return s ~= "" and pb_bytes(field, s) or "" end

local function pb_packed_doubles(field, list)
  local parts = {}
  for i, x in ipairs(list) do parts[i] = string.pack("<d", x) end
  return opt_bytes(field, table.concat(parts))
end

M._varint = varint   -- for the tests

---------------------------------------------------------------------------
-- messages (tensorboard/compat/proto/{event,summary,histogram,tensor}.proto)

local function summary_metadata(plugin_name, content)
  -- SummaryMetadata.plugin_data = PluginData{plugin_name, content}
  return pb_bytes(1, opt_bytes(1, plugin_name) .. opt_bytes(2, content or ""))
end

-- Summary{value = [Value{tag, <body fields>, metadata}]}; `body` is the
-- encoded oneof member (simple_value 2, image 4, histo 5, tensor 8), which
-- comes before metadata (9) in field order.
local function summary(tag, body, metadata)
  return pb_bytes(1, opt_bytes(1, tag) .. body .. (metadata and pb_bytes(9, metadata) or ""))
end

-- Event{wall_time 1, step 2, <what>}; what: file_version 3, summary 5,
-- session_log 7, source_metadata 10
local function event(wall_time, step, what)
  return pb_double(1, wall_time) .. opt_varint(2, step or 0) .. what
end

local function scalar_summary(tag, value)
  return summary(tag, pb_float(2, value))
end

local function histogram_summary(tag, h)
  local histo = opt_double(1, h.min) .. opt_double(2, h.max) .. opt_double(3, h.num) .. opt_double(4, h.sum)
    .. opt_double(5, h.sum_squares) .. pb_packed_doubles(6, h.bucket_limit) .. pb_packed_doubles(7, h.bucket)
  return summary(tag, pb_bytes(5, histo))
end

local function image_summary(tag, height, width, colorspace, png)
  local image = opt_varint(1, height) .. opt_varint(2, width) .. opt_varint(3, colorspace) .. opt_bytes(4, png)
  return summary(tag, pb_bytes(4, image))
end

local DT_STRING = 7
local function text_summary(tag, text)
  -- TensorProto{dtype, tensor_shape = {dim = [{size = 1}]}, string_val = [text]}
  local tensor = pb_varint(1, DT_STRING) .. pb_bytes(2, pb_bytes(2, pb_varint(1, 1))) .. pb_bytes(8, text)
  -- TextPluginData{version = 0} encodes as no bytes
  return summary(tag .. "/text_summary", pb_bytes(8, tensor), summary_metadata("text", ""))
end

---------------------------------------------------------------------------
-- argument checks

local function is_plain_table(v) return type(v) == "table" and not ember.is_tensor(v) and getmetatable(v) == nil end

-- The arguments after the required ones: PyTorch's positional order (names),
-- or one trailing options table with those names as keys. Returns name -> value.
local function options(op, names, ...)
  local n = select("#", ...)
  local out = {}
  local last = n > 0 and select(n, ...) or nil
  if n > 0 and is_plain_table(last) and last[1] == nil then
    local known = {}
    for _, k in ipairs(names) do known[k] = true end
    for k, v in pairs(last) do
      if not known[k] then
        raisef("%s: unknown option '%s' (expected %s)", op, tostring(k), table.concat(names, ", "))
      end
      out[k] = v
    end
    n = n - 1
  end
  if n > #names then
    raisef("%s: too many arguments (%d after the required ones, at most %d: %s)", op, n, #names,
           table.concat(names, ", "))
  end
  for i = 1, n do
    local v = (select(i, ...))
    if v ~= nil then
      if out[names[i]] ~= nil then raisef("%s: %s given both by position and as an option", op, names[i]) end
      out[names[i]] = v
    end
  end
  return out
end

local function check_tag(op, tag, what)
  if type(tag) ~= "string" then raisef("%s: %s must be a string, got %s", op, what or "tag", type(tag)) end
end

-- A number, or a tensor holding one element; returns a Lua number.
local function check_scalar(op, what, v)
  if type(v) == "number" then return v end
  if ember.is_tensor(v) then
    if v:numel() ~= 1 then
      raisef("%s: %s must be a number or a one-element tensor, got a tensor of shape [%s]", op, what,
             table.concat(v:size(), ", "))
    end
    return v:item()
  end
  raisef("%s: %s must be a number or a one-element tensor, got %s", op, what, type(v))
end

-- global_step: nil (none) or an integer (a float is truncated, as int())
local function check_step(op, step)
  if step == nil then return nil end
  local s = check_scalar(op, "global_step", step)
  if s ~= s or s == math.huge or s == -math.huge then raisef("%s: global_step must be finite, got %s", op, s) end
  local i = math.tointeger(s < 0 and math.ceil(s) or math.floor(s))
  if not i then raisef("%s: global_step %s is out of the int64 range", op, s) end
  return i
end

local function check_walltime(op, walltime)
  if walltime == nil then return C.time() end
  return check_scalar(op, "walltime", walltime)
end

---------------------------------------------------------------------------
-- one event file

local uid = 0   -- numbers the files of this process, as TensorBoard's writer does

local FileWriter = {}
FileWriter.__index = FileWriter

-- A new event file in fw.log_dir; its first record, the file format's
-- version (as every TensorBoard writer starts), goes before what is queued.
local function open_event_file(op, fw)
  local name = string.format("%s/events.out.tfevents.%010d.%s.%d.%d%s", fw.log_dir, math.floor(C.time()),
                             C.hostname(), C.getpid(), uid, fw.filename_suffix)
  uid = uid + 1
  local file, ferr = C.open_events(name)
  if not file then raisef("%s: cannot create the event file %s", op, ferr) end
  fw.path, fw.file = name, file
  local version = event(C.time(), nil, pb_bytes(3, "brain.Event:2") .. pb_bytes(10, pb_bytes(1, "ember.utils.tensorboard")))
  table.insert(fw.pending, 1, C.record(version))
end

local function new_file_writer(op, log_dir, w)
  local ok, err = C.makedirs(log_dir)
  if not ok then raisef("%s: cannot create the log folder %s: %s", op, log_dir, err) end
  local fw = setmetatable({log_dir = log_dir, filename_suffix = w.filename_suffix, pending = {},
                           max_queue = w.max_queue, flush_secs = w.flush_secs, last_flush = C.time()}, FileWriter)
  open_event_file(op, fw)
  fw:flush(op)
  return fw
end

function FileWriter:add(op, record)
  self.pending[#self.pending + 1] = C.record(record)
  if #self.pending >= self.max_queue or C.time() - self.last_flush >= self.flush_secs then self:flush(op) end
end

-- Writes the queued records. On a failure (a full disk) the file still ends
-- at its last complete record, the records not written stay queued (the
-- next flush tries again) and the error names the op and the file. A file
-- that could not be cut back to a complete record is left as it is and the
-- next flush starts a new event file, so no later record is lost behind a
-- broken one.
function FileWriter:flush(op)
  self.last_flush = C.time()
  if #self.pending == 0 then return end
  if self.broken then
    local old = self.file
    open_event_file(op, self)   -- raises (still broken) when no new file can be made
    self.broken = nil
    old:close()
  end
  local n, err, broken = self.file:write(self.pending)
  if n == #self.pending then
    self.pending = {}
    return
  end
  self.pending = table.move(self.pending, n + 1, #self.pending, 1, {})
  self.broken = broken or nil
  raisef("%s: cannot write the event file %s: %s", op, self.path, tostring(err))
end

function FileWriter:close(op)
  self:flush(op)
  local ok, err = self.file:close()
  if not ok then raisef("%s: cannot close the event file %s: %s", op, self.path, tostring(err)) end
end

---------------------------------------------------------------------------
-- SummaryWriter

local SummaryWriter = {}
SummaryWriter.__index = SummaryWriter
SummaryWriter.__name = "SummaryWriter"
M.SummaryWriter = SummaryWriter

local CTOR_NAMES = {"log_dir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix"}

local function check_positive(op, name, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or not (v > 0) then raisef("%s: %s must be a positive number, got %s", op, name, tostring(v)) end
  return v
end

local function new_summary_writer(...)
  local op = "SummaryWriter"
  local o = options(op, CTOR_NAMES, ...)
  local comment = o.comment or ""
  if type(comment) ~= "string" then raisef("%s: comment must be a string, got %s", op, type(comment)) end
  local log_dir = o.log_dir
  if log_dir == nil or log_dir == "" then
    log_dir = "runs/" .. os.date("%b%d_%H-%M-%S") .. "_" .. C.hostname() .. comment
  elseif type(log_dir) ~= "string" then
    raisef("%s: log_dir must be a string, got %s", op, type(log_dir))
  end
  local suffix = o.filename_suffix or ""
  if type(suffix) ~= "string" then raisef("%s: filename_suffix must be a string, got %s", op, type(suffix)) end
  errors.check_path(op, "log_dir", log_dir)   -- a comment is part of the default one
  errors.check_path(op, "filename_suffix", suffix)
  local self = setmetatable({
    log_dir = log_dir,
    purge_step = o.purge_step ~= nil and check_step(op, o.purge_step) or nil,
    max_queue = math.floor(check_positive(op, "max_queue", o.max_queue, 10)),
    flush_secs = check_positive(op, "flush_secs", o.flush_secs, 120),
    filename_suffix = suffix,
  }, SummaryWriter)
  self:_get_file_writer(op)
  return self
end

setmetatable(SummaryWriter, {__call = function(_, ...) return new_summary_writer(...) end})

-- The writer of log_dir, made again after close() as PyTorch does; a
-- purge_step marks the steps from it on as stale for TensorBoard (once).
function SummaryWriter:_get_file_writer(op)
  if self.file_writer then return self.file_writer end
  local fw = new_file_writer(op, self.log_dir, self)
  self.file_writer = fw
  self.all_writers = {[self.log_dir] = fw}
  self.writer_order = {self.log_dir}
  if self.purge_step then
    local now = C.time()
    fw:add(op, event(now, self.purge_step, pb_bytes(3, "brain.Event:2")))
    fw:add(op, event(now, self.purge_step, pb_bytes(7, pb_varint(1, 1))))   -- SessionLog{status = START}
    self.purge_step = nil
  end
  return fw
end

local function check_self(op, self)
  if getmetatable(self) ~= SummaryWriter then raisef("%s: expected a SummaryWriter (call it with ':')", op) end
end

-- What every add_* starts with: self and the tag checked, the arguments
-- after the required ones read (names: PyTorch's order). Returns those
-- options, the step and the wall time.
local function start(op, self, tag, names, ...)
  check_self(op, self)
  check_tag(op, tag)
  local o = options(op, names, ...)
  return o, check_step(op, o.global_step), check_walltime(op, o.walltime)
end

-- Queues an Event holding the encoded Summary summ.
function SummaryWriter:_add_summary(op, step, wall, summ)
  self:_get_file_writer(op):add(op, event(wall, step, pb_bytes(5, summ)))
end

function SummaryWriter:get_logdir()
  check_self("SummaryWriter:get_logdir", self)
  return self.log_dir
end

function SummaryWriter:add_scalar(tag, scalar_value, ...)
  local op = "SummaryWriter:add_scalar"
  local _, step, wall = start(op, self, tag, {"global_step", "walltime"}, ...)
  self:_add_summary(op, step, wall, scalar_summary(tag, check_scalar(op, "scalar_value", scalar_value)))
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

function SummaryWriter:add_scalars(main_tag, tag_scalar_dict, ...)
  local op = "SummaryWriter:add_scalars"
  check_self(op, self)
  check_tag(op, main_tag, "main_tag")
  local _, step, wall = start(op, self, main_tag, {"global_step", "walltime"}, ...)
  if not is_plain_table(tag_scalar_dict) then
    raisef("%s: tag_scalar_dict must be a table of tag = value, got %s", op, type(tag_scalar_dict))
  end
  local values = {}
  -- each tag is written to a folder named after main_tag and the tag
  errors.check_path(op, "main_tag", main_tag)
  for _, tag in ipairs(sorted_keys(tag_scalar_dict)) do
    check_tag(op, tag, "a key of tag_scalar_dict")
    errors.check_path(op, "a key of tag_scalar_dict", tag)
    values[tag] = check_scalar(op, "tag_scalar_dict." .. tag, tag_scalar_dict[tag])
  end
  local logdir = self:_get_file_writer(op).log_dir
  for _, tag in ipairs(sorted_keys(values)) do
    local dir = logdir .. "/" .. main_tag:gsub("/", "_") .. "_" .. tag
    local fw = self.all_writers[dir]
    if not fw then
      fw = new_file_writer(op, dir, self)
      self.all_writers[dir] = fw
      self.writer_order[#self.writer_order + 1] = dir
    end
    fw:add(op, event(wall, step, pb_bytes(5, scalar_summary(main_tag, values[tag]))))
  end
end

-- TensorBoard's default bins, from 1e-12 by factors of 1.1 to 1e20 on both
-- sides of 0 (PyTorch's SummaryWriter.default_bins)
local default_bins
local function tensorflow_bins()
  if default_bins then return default_bins end
  local pos = {}
  local v = 1e-12
  while v < 1e20 do
    pos[#pos + 1] = v
    v = v * 1.1
  end
  local edges = {}
  for i = #pos, 1, -1 do edges[#edges + 1] = -pos[i] end
  edges[#edges + 1] = 0
  for i = 1, #pos do edges[#edges + 1] = pos[i] end
  default_bins = ember.tensor(edges, {dtype = ember.float64})
  return default_bins
end

-- numpy.histogram's edges for `bins` equal bins over the values' range
local function linear_bins(values, bins)
  local lo, hi = values:min():item(), values:max():item()
  if not (lo > -math.huge and hi < math.huge) then return nil end   -- the counting pass reports it
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  local step = (hi - lo) / bins
  local edges = {}
  for i = 0, bins - 1 do edges[i + 1] = i * step + lo end
  edges[bins + 1] = hi
  return ember.tensor(edges, {dtype = ember.float64})
end

-- The most bins add_histogram takes: a count, or edges (one more than bins).
M.MAX_HISTOGRAM_BINS = C.MAX_HISTOGRAM_BINS

local function check_bin_count(op, n)
  if n > M.MAX_HISTOGRAM_BINS then
    raisef("%s: %.0f bins is over the limit of %d (ember.utils.tensorboard.MAX_HISTOGRAM_BINS)", op, n,
           M.MAX_HISTOGRAM_BINS)
  end
end

local function histogram_edges(op, values, bins)
  if bins == nil or bins == "tensorflow" then return tensorflow_bins() end
  if math.type(bins) == "integer" or (type(bins) == "number" and bins == math.floor(bins)) then
    if bins < 1 then raisef("%s: bins must be at least 1, got %d", op, bins) end
    check_bin_count(op, bins)
    return linear_bins(values, math.tointeger(bins)) or tensorflow_bins()
  end
  if ember.is_tensor(bins) or is_plain_table(bins) then
    check_bin_count(op, (ember.is_tensor(bins) and bins:numel() or #bins) - 1)
    local edges = ember.is_tensor(bins) and bins:double():reshape(-1) or ember.tensor(bins, {dtype = ember.float64})
    if edges:numel() < 2 then raisef("%s: bins needs at least 2 edges, got %d", op, edges:numel()) end
    local d = edges:narrow(1, 2, edges:numel() - 1) - edges:narrow(1, 1, edges:numel() - 1)
    if not (d:min():item() >= 0) then raisef("%s: bin edges must increase monotonically", op) end
    return edges
  end
  raisef("%s: bins must be 'tensorflow', a number of bins or a list of edges, got %s", op, tostring(bins))
end

-- The HistogramProto of values for the bin edges, trimmed as PyTorch's
-- make_histogram trims: from the bin before the first non-empty one to the
-- last non-empty one, each bucket given by its right edge.
local function make_histogram(op, values, edges)
  local ok, lo, hi, num, sum, sumsq, counts = pcall(C.histogram, values, edges)
  if not ok then raisef("%s: %s", op, (tostring(lo):gsub("^add_histogram: ", ""))) end
  local first, last
  for i, c in ipairs(counts) do
    if c > 0 then
      first = first or i
      last = i
    end
  end
  if not first then raisef("%s: no value falls inside the bins", op) end
  local e = edges:tolist()
  local bucket, limit = {}, {}
  if first > 1 then
    for i = first - 1, last do bucket[#bucket + 1] = counts[i] end
  else
    bucket[1] = 0
    for i = 1, last do bucket[#bucket + 1] = counts[i] end
  end
  for i = first, last + 1 do limit[#limit + 1] = e[i] end
  return {min = lo, max = hi, num = num, sum = sum, sum_squares = sumsq, bucket_limit = limit, bucket = bucket}
end
M._make_histogram = make_histogram

function SummaryWriter:add_histogram(tag, values, ...)
  local op = "SummaryWriter:add_histogram"
  local o, step, wall = start(op, self, tag, {"global_step", "bins", "walltime", "max_bins"}, ...)
  if is_plain_table(values) then values = ember.tensor(values, {dtype = ember.float64}) end
  if not ember.is_tensor(values) then raisef("%s: values must be a tensor or a list of numbers, got %s", op, type(values)) end
  if values:numel() == 0 then raisef("%s: values are empty", op) end
  if o.max_bins ~= nil then raisef("%s: max_bins is not supported", op) end
  values = values:detach():double()
  local h = make_histogram(op, values, histogram_edges(op, values, o.bins))
  self:_add_summary(op, step, wall, histogram_summary(tag, h))
end

-- The PNG and its size of an image tensor in the given layout, made as
-- PyTorch's summary.image makes it: uint8 kept, anything else scaled by 255
-- (in float32, then truncated; here clamped to 0..255 first), one channel
-- repeated to RGB.
local function tensor_png(op, img, dataformats)
  if type(dataformats) ~= "string" then raisef("%s: dataformats must be a string, got %s", op, type(dataformats)) end
  local fmt = dataformats:upper()
  local want = (#fmt == 3 and "CHW") or (#fmt == 2 and "HW") or nil
  local seen, ok = {}, want ~= nil
  for ch in fmt:gmatch(".") do
    if seen[ch] or not (want or ""):find(ch, 1, true) then ok = false end
    seen[ch] = true
  end
  if not ok then
    raisef("%s: dataformats '%s' is not one of the layouts of CHW, HWC or HW (each letter once)", op, dataformats)
  end
  if img:dim() ~= #fmt then
    raisef("%s: img_tensor of shape [%s] does not match dataformats '%s' (%d dims)", op,
           table.concat(img:size(), ", "), dataformats, #fmt)
  end
  img = img:detach()
  local hpos, wpos = (fmt:find("H", 1, true)), (fmt:find("W", 1, true))
  if #fmt == 2 then
    img = img:permute(hpos, wpos):unsqueeze(3)
  else
    img = img:permute(hpos, wpos, (fmt:find("C", 1, true)))
  end
  local h, w, c = img:size(1), img:size(2), img:size(3)
  if c ~= 1 and c ~= 3 and c ~= 4 then
    raisef("%s: an image needs 1, 3 or 4 channels, got %d (shape [%s] as %s)", op, c,
           table.concat(img:size(), ", "), #fmt == 3 and "HWC" or "HW")
  end
  if h == 0 or w == 0 then raisef("%s: the image is empty (%d x %d)", op, h, w) end
  if c == 1 then img = img:expand(h, w, 3) end
  if img.dtype ~= ember.uint8 then
    img = (img:to("cpu"):float() * 255):nan_to_num(0):clamp(0, 255):byte()
  end
  return C.png(img:contiguous()), h, w, img:size(3)
end

local PNG_CHANNELS = {[0] = 1, [2] = 3, [4] = 2, [6] = 4}

-- An ember.plot figure, drawn by gnuplot to a PNG file and read back.
local function figure_png(op, fig)
  local dir = ember._plot.mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/ember-tb-XXXXXX")
  local path = dir .. "/figure.png"
  local ok, err = pcall(fig.save, fig, path)
  local png
  if ok then
    local f = io.open(path, "rb")
    if f then
      png = f:read("a")
      f:close()
    end
  end
  os.remove(path)
  os.remove(dir)
  if not ok then raisef("%s: %s", op, tostring(err)) end
  if not png or #png < 26 or png:sub(1, 8) ~= "\137PNG\r\n\26\n" then raisef("%s: the figure gave no PNG", op) end
  local w, h = string.unpack(">I4I4", png, 17)
  return png, h, w, PNG_CHANNELS[png:byte(26)] or 3
end

-- An ember.plot figure: by its class's methods, as ember.plot may have been
-- loaded more than once (a test runner that resets package.loaded)
local function is_figure(v)
  local mt = type(v) == "table" and getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__index") == mt and type(rawget(mt, "save")) == "function"
    and type(rawget(mt, "line")) == "function" and type(rawget(mt, "show")) == "function"
end

function SummaryWriter:add_image(tag, img_tensor, ...)
  local op = "SummaryWriter:add_image"
  local o, step, wall = start(op, self, tag, {"global_step", "walltime", "dataformats"}, ...)
  local png, h, w, c
  if ember.is_tensor(img_tensor) then
    png, h, w, c = tensor_png(op, img_tensor, o.dataformats or "CHW")
  elseif is_figure(img_tensor) then
    png, h, w, c = figure_png(op, img_tensor)
  else
    raisef("%s: img_tensor must be a tensor or an ember.plot figure, got %s", op, type(img_tensor))
  end
  self:_add_summary(op, step, wall, image_summary(tag, h, w, c, png))
end

function SummaryWriter:add_figure(tag, figure, ...)
  local op = "SummaryWriter:add_figure"
  local o, step, wall = start(op, self, tag, {"global_step", "close", "walltime"}, ...)
  if not is_figure(figure) then raisef("%s: figure must be an ember.plot figure, got %s", op, type(figure)) end
  local png, h, w, c = figure_png(op, figure)
  if o.close ~= false then figure:close() end
  self:_add_summary(op, step, wall, image_summary(tag, h, w, c, png))
end

function SummaryWriter:add_text(tag, text_string, ...)
  local op = "SummaryWriter:add_text"
  local _, step, wall = start(op, self, tag, {"global_step", "walltime"}, ...)
  if type(text_string) ~= "string" then raisef("%s: text_string must be a string, got %s", op, type(text_string)) end
  self:_add_summary(op, step, wall, text_summary(tag, text_string))
end

---------------------------------------------------------------------------
-- hyperparameters (tensorboard/plugins/hparams/{api,plugin_data}.proto)

local DATA_TYPE = {string = 1, boolean = 2, number = 3}
local STATUS_SUCCESS = 1

-- google.protobuf.Value: number 2, string 3, bool 4 (a oneof: always written)
local function pb_value(v)
  if type(v) == "number" then return pb_double(2, v) end
  if type(v) == "string" then return pb_bytes(3, v) end
  return pb_varint(4, v and 1 or 0)
end

local function hparams_summary(tag, data)
  -- HParamsPluginData{version = 0, <data>}
  return summary(tag, "", summary_metadata("hparams", data))
end

local function hparams_summaries(op, hparam_dict, metric_dict, domains)
  local start, infos, metrics = {}, {}, {}
  for _, k in ipairs(sorted_keys(hparam_dict)) do
    check_tag(op, k, "a key of hparam_dict")
    local v = hparam_dict[k]
    if ember.is_tensor(v) then v = check_scalar(op, "hparam_dict." .. k, v) end
    local ty = DATA_TYPE[type(v)]
    if not ty then raisef("%s: hparam_dict.%s must be a number, string, boolean or tensor, got %s", op, k, type(v)) end
    -- SessionStartInfo.hparams: map entries {key 1, value 2}
    start[#start + 1] = pb_bytes(1, pb_bytes(1, k) .. pb_bytes(2, pb_value(v)))
    local domain = ""
    if domains[k] ~= nil then
      local list = domains[k]
      if not is_plain_table(list) then raisef("%s: hparam_domain_discrete.%s must be a list", op, k) end
      local values = {}
      for i, d in ipairs(list) do
        if type(d) ~= type(v) then
          raisef("%s: hparam_domain_discrete.%s[%d] must be a %s like hparam_dict.%s, got %s", op, k, i, type(v), k, type(d))
        end
        values[i] = pb_bytes(1, pb_value(d))
      end
      domain = pb_bytes(5, table.concat(values))
    end
    -- HParamInfo{name 1, type 4, domain_discrete 5}
    infos[#infos + 1] = pb_bytes(4, pb_bytes(1, k) .. pb_varint(4, ty) .. domain)
  end
  for k in pairs(domains) do
    if hparam_dict[k] == nil then raisef("%s: hparam_domain_discrete.%s has no value in hparam_dict", op, tostring(k)) end
  end
  for _, k in ipairs(sorted_keys(metric_dict)) do
    check_tag(op, k, "a key of metric_dict")
    -- MetricInfo{name = MetricName{tag 2}}
    metrics[#metrics + 1] = pb_bytes(5, pb_bytes(1, pb_bytes(2, k)))
  end
  local exp = hparams_summary("_hparams_/experiment", pb_bytes(2, table.concat(infos) .. table.concat(metrics)))
  local ssi = hparams_summary("_hparams_/session_start_info", pb_bytes(3, table.concat(start)))
  local sei = hparams_summary("_hparams_/session_end_info", pb_bytes(4, pb_varint(1, STATUS_SUCCESS)))
  return exp, ssi, sei
end

function SummaryWriter:add_hparams(hparam_dict, metric_dict, ...)
  local op = "SummaryWriter:add_hparams"
  check_self(op, self)
  if not is_plain_table(hparam_dict) or not is_plain_table(metric_dict) then
    raisef("%s: hparam_dict and metric_dict must be tables of name = value, got %s and %s", op, type(hparam_dict),
           type(metric_dict))
  end
  -- hparam_domain_discrete is itself a table: a third table argument is the
  -- options only when its keys are option names
  local names = {"hparam_domain_discrete", "run_name"}
  local third = ...
  local o
  if select("#", ...) == 1 and is_plain_table(third) and next(third) ~= nil
     and not (third.hparam_domain_discrete ~= nil or third.run_name ~= nil) then
    o = {hparam_domain_discrete = third}
  else
    o = options(op, names, ...)
  end
  local domains = o.hparam_domain_discrete or {}
  if not is_plain_table(domains) then raisef("%s: hparam_domain_discrete must be a table, got %s", op, type(domains)) end
  local metric_values = {}
  for _, k in ipairs(sorted_keys(metric_dict)) do
    metric_values[k] = check_scalar(op, "metric_dict." .. tostring(k), metric_dict[k])
  end
  local exp, ssi, sei = hparams_summaries(op, hparam_dict, metric_dict, domains)
  local run_name = o.run_name
  if run_name == nil or run_name == "" then run_name = string.format("%.6f", C.time()) end
  if type(run_name) ~= "string" then raisef("%s: run_name must be a string, got %s", op, type(run_name)) end
  errors.check_path(op, "run_name", run_name)
  local w <close> = SummaryWriter(self:_get_file_writer(op).log_dir .. "/" .. run_name,
                                  {max_queue = self.max_queue, flush_secs = self.flush_secs})
  local now = C.time()
  for _, s in ipairs({exp, ssi, sei}) do w:_add_summary(op, nil, now, s) end
  for _, k in ipairs(sorted_keys(metric_values)) do
    w:_add_summary(op, nil, C.time(), scalar_summary(k, metric_values[k]))
  end
end

-- Calls method ("flush" or "close") of each open event-file writer, in the
-- order they were opened; returns whether any was open.
local function each_writer(self, op, method)
  check_self(op, self)
  if not self.all_writers then return false end
  for _, dir in ipairs(self.writer_order) do
    local w = self.all_writers[dir]
    w[method](w, op)
  end
  return true
end

function SummaryWriter:flush()
  each_writer(self, "SummaryWriter:flush", "flush")
end

-- close(): writes what is queued and closes the files; a later add_* opens
-- a new event file in log_dir, as PyTorch's writer does.
function SummaryWriter:close()
  if each_writer(self, "SummaryWriter:close", "close") then
    self.file_writer, self.all_writers, self.writer_order = nil, nil, nil
  end
end

SummaryWriter.__close = function(self) self:close() end
-- a writer dropped without close() still writes what it queued
SummaryWriter.__gc = function(self) pcall(SummaryWriter.close, self) end

function SummaryWriter:__tostring()
  return string.format("SummaryWriter(%q)", self.log_dir)
end

return M
