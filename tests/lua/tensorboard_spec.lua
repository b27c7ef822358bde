-- tensorboard_spec.lua — ember.utils.tensorboard: the checksums and framing of
-- TFRecords, protobuf varints, the PNG encoder, the histogram buckets (all
-- against values worked out by hand here), the event files it writes (read
-- back with a small TFRecord reader written here), and its errors.
-- tests/shell/tensorboard_test.sh reads the files with TensorBoard itself.
local ember = require "ember"
local H = require "helpers"

local tb = ember.utils.tensorboard
local C = ember._tensorboard
local SummaryWriter = tb.SummaryWriter
local SPEC = "tensorboard_spec.lua:"

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d
end

local function rm_rf(d) os.execute("rm -rf '" .. d .. "'") end

-- the masking of TFRecord CRCs, from its definition
local function mask(c) return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF end

-- The records of an event file: each checked against its length and data CRCs.
local function read_records(path)
  local data = H.read_file(path)
  local out, pos = {}, 1
  while pos <= #data do
    local n, lcrc = string.unpack("<I8I4", data, pos)
    assert(lcrc == mask(C.crc32c(data:sub(pos, pos + 7))), "length CRC")
    local body = data:sub(pos + 12, pos + 11 + n)
    assert(string.unpack("<I4", data, pos + 12 + n) == mask(C.crc32c(body)), "data CRC")
    out[#out + 1] = body
    pos = pos + 16 + n
  end
  return out
end

local function event_files(dir)
  local p = io.popen("ls '" .. dir .. "'/events.out.tfevents.* 2>/dev/null")
  local files = {}
  for line in p:lines() do files[#files + 1] = line end
  p:close()
  return files
end

describe("TFRecord framing", function()
  it("computes CRC32C: the standard check value of '123456789' and the empty string", function()
    assert.are.equal(0xE3069283, C.crc32c("123456789"))
    assert.are.equal(0, C.crc32c(""))
    -- RFC 3720 (iSCSI) B.4: 32 bytes of zeros -> 0x8A9136AA, of 0xFF -> 0x62A8AB43
    assert.are.equal(0x8A9136AA, C.crc32c(string.rep("\0", 32)))
    assert.are.equal(0x62A8AB43, C.crc32c(string.rep("\255", 32)))
  end)

  it("masks CRCs as TFRecord does", function()
    assert.are.equal(0xA282EAD8, C.masked_crc32c(""))
    -- 0xE3069283 rotated right by 15: 0x2507C60D, plus 0xA282EAD8 -> 0xC78AB0E5
    assert.are.equal(0xC78AB0E5, C.masked_crc32c("123456789"))
    assert.are.equal(mask(0xE3069283), C.masked_crc32c("123456789"))
  end)

  it("frames a record: length, its masked CRC, the data, its masked CRC", function()
    local r = C.record("abc")
    assert.are.equal(3 + 16, #r)
    assert.are.equal("\3\0\0\0\0\0\0\0", r:sub(1, 8))
    assert.are.equal(mask(C.crc32c("\3\0\0\0\0\0\0\0")), string.unpack("<I4", r, 9))
    assert.are.equal("abc", r:sub(13, 15))
    assert.are.equal(mask(C.crc32c("abc")), string.unpack("<I4", r, 16))
  end)
end)

describe("protobuf varints", function()
  it("encode as worked out by hand", function()
    assert.are.equal("\0", tb._varint(0))
    assert.are.equal("\1", tb._varint(1))
    assert.are.equal("\127", tb._varint(127))
    assert.are.equal("\128\1", tb._varint(128))
    assert.are.equal("\172\2", tb._varint(300))          -- 300 = 0b10_0101100
    assert.are.equal("\255\255\3", tb._varint(65535))
    -- negative int64: ten bytes, two's complement
    assert.are.equal(string.rep("\255", 9) .. "\1", tb._varint(-1))
    assert.are.equal("\254" .. string.rep("\255", 8) .. "\1", tb._varint(-2))
  end)
end)

-- PNG chunks: {type, data}, checking each CRC-32 with a plain bitwise CRC
local function crc32(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do
    c = c ~ s:byte(i)
    for _ = 1, 8 do c = (c & 1) == 1 and ((c >> 1) ~ 0xEDB88320) or (c >> 1) end
  end
  return c ~ 0xFFFFFFFF
end

local function png_chunks(png)
  assert.are.equal("\137PNG\r\n\26\n", png:sub(1, 8))
  local chunks, pos = {}, 9
  while pos <= #png do
    local n, kind = string.unpack(">I4c4", png, pos)
    local body = png:sub(pos + 8, pos + 7 + n)
    assert.are.equal(crc32(kind .. body), (string.unpack(">I4", png, pos + 8 + n)))
    chunks[#chunks + 1] = {kind, body}
    pos = pos + 12 + n
  end
  return chunks
end

-- zlib inflate by an independent route: Python's zlib, when python3 is there
local function inflate(data)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
  local p = io.popen("python3 -c \"import sys, zlib; sys.stdout.write(zlib.decompress(open(sys.argv[1], 'rb')"
                     .. ".read()).hex())\" '" .. path .. "' 2>/dev/null")
  local hex = p:read("a")
  p:close()
  os.remove(path)
  if hex == "" then return nil end
  return (hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

describe("the PNG encoder", function()
  it("writes IHDR, IDAT and IEND with their CRCs; the rows inflate back to the pixels", function()
    -- 2 rows x 3 columns RGB, pixel (y, x, c) = 10 * (3y + x) + c
    local px = {}
    for y = 0, 1 do
      px[y + 1] = {}
      for x = 0, 2 do px[y + 1][x + 1] = {10 * (3 * y + x), 10 * (3 * y + x) + 1, 10 * (3 * y + x) + 2} end
    end
    local chunks = png_chunks(C.png(ember.tensor(px, {dtype = ember.uint8})))
    assert.are.same({"IHDR", "IDAT", "IEND"}, {chunks[1][1], chunks[2][1], chunks[3][1]})
    -- width 3, height 2, depth 8, colour type 2 (RGB), deflate, filter method 0, no interlace
    assert.are.same({3, 2, 8, 2, 0, 0, 0, 14}, {string.unpack(">I4I4BBBBB", chunks[1][2])})
    assert.are.equal("", chunks[3][2])
    local raw = inflate(chunks[2][2])
    if raw == nil then
      pending("no python3 to inflate the IDAT with")
      return
    end
    local want = {}
    for y = 0, 1 do
      want[#want + 1] = "\0"   -- filter type 0 (none)
      for x = 0, 2 do
        for c = 0, 2 do want[#want + 1] = string.char(10 * (3 * y + x) + c) end
      end
    end
    assert.are.equal(table.concat(want), raw)
  end)

  it("gives grey, grey+alpha and RGBA their colour types", function()
    for c, ctype in pairs({[1] = 0, [2] = 4, [4] = 6}) do
      local ihdr = png_chunks(C.png(ember.zeros(5, 4, c, {dtype = ember.uint8})))[1][2]
      assert.are.same({4, 5, 8, ctype, 11}, {string.unpack(">I4I4BB", ihdr)})
    end
  end)

  it("refuses what is not a uint8 (H, W, 1..4) tensor", function()
    H.has(H.err(C.png, ember.zeros(2, 2, 3)), "uint8 tensor shaped (H, W, C)")
    H.has(H.err(C.png, ember.zeros(2, 2, 5, {dtype = ember.uint8})), "C in 1..4")
    H.has(H.err(C.png, ember.zeros(2, 2, {dtype = ember.uint8})), "(H, W, C)")
  end)
end)

describe("histogram buckets", function()
  local function edges(t) return ember.tensor(t, {dtype = ember.float64}) end

  it("count edges[i] <= v < edges[i+1], the last bin closed, from the bin before the first used", function()
    -- bins [0,1) [1,2) [2,3) [3,4]: counts 0, 1, 2, 3; the first used is [1,2), so the
    -- empty [0,1) leads, given by its right edge 1
    local h = tb._make_histogram("op", ember.tensor({1, 2, 2, 3, 3, 3}), edges({0, 1, 2, 3, 4}))
    assert.are.same({min = 1, max = 3, num = 6, sum = 14, sum_squares = 36, bucket = {0, 1, 2, 3},
                     bucket_limit = {1, 2, 3, 4}}, h)
  end)

  it("count a value on the last edge in the last bin and leave values outside out of the buckets", function()
    -- 4 is the last edge: bin [2,4]; 5 lies outside (in num, min, max and the sums only)
    local h = tb._make_histogram("op", ember.tensor({4, 5}), edges({0, 2, 4}))
    assert.are.same({min = 4, max = 5, num = 2, sum = 9, sum_squares = 41, bucket = {0, 1},
                     bucket_limit = {2, 4}}, h)
  end)

  it("put an empty bucket first, ending at the first edge, when the first bin is used", function()
    local h = tb._make_histogram("op", ember.tensor({0.5, 2.5}), edges({0, 1, 2, 3}))
    assert.are.same({0, 1, 0, 1}, h.bucket)
    assert.are.same({0, 1, 2, 3}, h.bucket_limit)
  end)

  it("stop at the last used bin", function()
    local h = tb._make_histogram("op", ember.tensor({2.5}), edges({0, 1, 2, 3, 4, 5}))
    assert.are.same({0, 1}, h.bucket)
    assert.are.same({2, 3}, h.bucket_limit)
  end)
end)

describe("SummaryWriter", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rm_rf(dir) end)

  it("writes the file version first, then one event per call, with the bytes worked out by hand", function()
    local w = SummaryWriter(dir)
    assert.are.equal(dir, w:get_logdir())
    w:add_scalar("a", 0.5, 3, 1000.5)
    w:close()
    local files = event_files(dir)
    assert.are.equal(1, #files)
    local host = io.popen("hostname"):read("l")
    assert.truthy(files[1]:match("/events%.out%.tfevents%.%d%d%d%d%d%d%d%d%d%d%." .. host:gsub("%p", "%%%0")
                                 .. "%.%d+%.%d+$"), files[1])
    local recs = read_records(files[1])
    assert.are.equal(2, #recs)
    assert.truthy(recs[1]:find("\26\13brain.Event:2", 1, true))   -- field 3, 13 bytes
    -- Event{wall_time 1: fixed64 1000.5, step 2: varint 3, summary 5: {value 1: {tag 1: "a",
    -- simple_value 2: fixed32 0.5}}}
    local want = "\9" .. string.pack("<d", 1000.5) .. "\16\3" .. "\42\10" .. "\10\8" .. "\10\1a"
                 .. "\21" .. string.pack("<f", 0.5)
    assert.are.equal(want, recs[2])
  end)

  it("takes its options positionally or as a table, and a default log_dir under runs/", function()
    local w = SummaryWriter(dir, "", nil, 2, 60, ".x")
    assert.are.equal(2, w.max_queue)
    assert.truthy(event_files(dir)[1]:match("%.x$"))
    w:close()
    local w2 = SummaryWriter{log_dir = dir, max_queue = 3}
    assert.are.equal(3, w2.max_queue)
    w2:close()
  end)

  it("queues events up to max_queue, then writes them; flush and close write the rest", function()
    local w = SummaryWriter(dir, {max_queue = 3})
    local file = event_files(dir)[1]
    w:add_scalar("x", 1, 1)
    w:add_scalar("x", 2, 2)
    assert.are.equal(1, #read_records(file))
    w:add_scalar("x", 3, 3)
    assert.are.equal(4, #read_records(file))
    w:add_scalar("x", 4, 4)
    w:flush()
    assert.are.equal(5, #read_records(file))
    w:add_text("t", "hi", 5)
    w:close()
    assert.are.equal(6, #read_records(file))
    w:close()   -- a second close does nothing
  end)

  it("closes at the end of a <close> scope", function()
    do
      local w <close> = SummaryWriter(dir)
      w:add_scalar("x", 1, 1)
    end
    assert.are.equal(2, #read_records(event_files(dir)[1]))
  end)

  it("writes add_scalars into one run per tag, add_hparams into a sub-run", function()
    local w = SummaryWriter(dir)
    w:add_scalars("loss/all", {train = 1, test = 2}, 1)
    w:add_hparams({lr = 0.1}, {acc = 0.5}, {run_name = "hp"})
    w:close()
    assert.are.equal(2, #read_records(event_files(dir .. "/loss_all_train")[1]))
    assert.are.equal(2, #read_records(event_files(dir .. "/loss_all_test")[1]))
    assert.are.equal(1 + 3 + 1, #read_records(event_files(dir .. "/hp")[1]))
  end)

  it("logs an ember.plot figure as its gnuplot PNG, with the PNG's size", function()
    local t = ember.plot.terminals()
    if not (t.pngcairo or t.png) then
      pending("no gnuplot PNG terminal")
      return
    end
    local fig = ember.plot.figure{title = "t"}
    fig:line({1, 3, 2})
    local w = SummaryWriter(dir)
    w:add_image("fig", fig, 1, 5)
    w:add_figure("fig2", fig, 2, {walltime = 6})   -- closes the figure
    w:close()
    local recs = read_records(event_files(dir)[1])
    assert.are.equal(3, #recs)
    -- Summary.Value.image (field 4) holds height 1 = 600, width 2 = 800 (the default
    -- size), then the PNG
    for i = 2, 3 do
      local at = recs[i]:find("\137PNG", 1, true)
      assert.truthy(at)
      local pw, ph = string.unpack(">I4I4", recs[i], at + 16)
      assert.are.same({800, 600}, {pw, ph})
      assert.truthy(recs[i]:find("\8\216\4\16\160\6\24", 1, true))   -- 600, 800, colorspace
    end
    assert.truthy(fig.closed)
  end)

  it("accepts a one-element tensor as a scalar", function()
    local w = SummaryWriter(dir)
    w:add_scalar("x", ember.tensor({{2.5}}), 1, 7)
    w:close()
    local recs = read_records(event_files(dir)[1])
    assert.truthy(recs[2]:find("\21" .. string.pack("<f", 2.5), 1, true))
  end)
end)

describe("SummaryWriter errors", function()
  local dir, w
  before_each(function()
    dir = tmpdir()
    w = SummaryWriter(dir)
  end)
  after_each(function()
    pcall(w.close, w)
    rm_rf(dir)
  end)

  -- the error raised by f, which must point at this file
  local function err_here(f)
    local e = H.err(f)
    H.has(e, SPEC)
    return e
  end

  it("name the op and point at the caller's line", function()
    local e = err_here(function() local r = w:add_scalar(1, 2); return r end)
    H.has(e, "SummaryWriter:add_scalar: tag must be a string, got number")
    e = err_here(function() local r = w:add_scalar("x", ember.zeros(2, 3)); return r end)
    H.has(e, "SummaryWriter:add_scalar: scalar_value must be a number or a one-element tensor, "
             .. "got a tensor of shape [2, 3]")
    e = err_here(function() local r = w:add_scalar("x", "1"); return r end)
    H.has(e, "scalar_value must be a number or a one-element tensor, got string")
    e = err_here(function() local r = w:add_scalar("x", 1, {step = 1}); return r end)
    H.has(e, "SummaryWriter:add_scalar: unknown option 'step' (expected global_step, walltime)")
    e = err_here(function() local r = w:add_text("x", 5); return r end)
    H.has(e, "SummaryWriter:add_text: text_string must be a string, got number")
    e = err_here(function() local r = w:add_scalars("x", 5); return r end)
    H.has(e, "SummaryWriter:add_scalars: tag_scalar_dict must be a table")
    e = err_here(function() local r = w.add_scalar(nil, "x", 1); return r end)
    H.has(e, "expected a SummaryWriter (call it with ':')")
  end)

  it("refuse bad images: dataformats, shapes, channels", function()
    local e = err_here(function() local r = w:add_image("i", ember.zeros(3, 4, 4), 0, nil, "CHX"); return r end)
    H.has(e, "SummaryWriter:add_image: dataformats 'CHX' is not one of the layouts of CHW, HWC or HW")
    e = err_here(function() local r = w:add_image("i", ember.zeros(3, 4, 4), {dataformats = "CCH"}); return r end)
    H.has(e, "dataformats 'CCH'")
    e = err_here(function() local r = w:add_image("i", ember.zeros(4, 4)); return r end)
    H.has(e, "SummaryWriter:add_image: img_tensor of shape [4, 4] does not match dataformats 'CHW' (3 dims)")
    e = err_here(function() local r = w:add_image("i", ember.zeros(2, 4, 4)); return r end)
    H.has(e, "SummaryWriter:add_image: an image needs 1, 3 or 4 channels, got 2")
    e = err_here(function() local r = w:add_image("i", {1, 2}); return r end)
    H.has(e, "img_tensor must be a tensor or an ember.plot figure, got table")
  end)

  it("refuse bad histograms: empty, non-finite, bad bins", function()
    local e = err_here(function() local r = w:add_histogram("h", ember.zeros(0)); return r end)
    H.has(e, "SummaryWriter:add_histogram: values are empty")
    e = err_here(function() local r = w:add_histogram("h", ember.tensor({1, 0 / 0})); return r end)
    H.has(e, "SummaryWriter:add_histogram: the values contain NaN or infinity")
    e = err_here(function() local r = w:add_histogram("h", ember.tensor({1, 2}), 0, "auto"); return r end)
    H.has(e, "bins must be 'tensorflow', a number of bins or a list of edges, got auto")
    e = err_here(function() local r = w:add_histogram("h", ember.tensor({1, 2}), 0, {3, 1, 2}); return r end)
    H.has(e, "SummaryWriter:add_histogram: bin edges must increase monotonically")
    e = err_here(function() local r = w:add_histogram("h", ember.tensor({1, 2}), 0, true); return r end)
    H.has(e, "bins must be 'tensorflow', a number of bins or a list of edges, got true")
    e = err_here(function() local r = w:add_histogram("h", ember.tensor({1, 2}), 0, ember.tensor({3, 1})); return r end)
    H.has(e, "bin edges must increase monotonically")
  end)

  -- bins = 1e7 ran for minutes and grew 2 GB
  it("refuse more histogram bins than MAX_HISTOGRAM_BINS, as a count or as edges", function()
    local max = tb.MAX_HISTOGRAM_BINS
    assert.are.equal(100000, max)
    local v = ember.tensor({1, 2, 3})
    local over = "SummaryWriter:add_histogram: " .. (max + 1) .. " bins is over the limit of " .. max
      .. " (ember.utils.tensorboard.MAX_HISTOGRAM_BINS)"
    H.has(err_here(function() local r = w:add_histogram("h", v, 0, max + 1); return r end), over)
    H.has(err_here(function() local r = w:add_histogram("h", v, 0, ember.arange(max + 2)); return r end), over)
    local edges = {}
    for i = 1, max + 2 do edges[i] = i end
    H.has(err_here(function() local r = w:add_histogram("h", v, 0, edges); return r end), over)
    H.has(err_here(function() local r = w:add_histogram("h", v, 0, 1e7); return r end), "10000000 bins is over the limit")
    H.has(H.err(C.histogram, v, ember.arange(max + 2):double()), "add_histogram: 100001 bins is over the limit")
    -- the limit itself is taken
    w:add_histogram("h", v, 0, max)
    w:add_histogram("h", v, 0, ember.arange(max + 1))
  end)

  it("refuse bad hparams", function()
    local e = err_here(function() local r = w:add_hparams({lr = {1}}, {}); return r end)
    H.has(e, "SummaryWriter:add_hparams: hparam_dict.lr must be a number, string, boolean or tensor, got table")
    e = err_here(function() local r = w:add_hparams({opt = "sgd"}, {}, {opt = {1}}); return r end)
    H.has(e, "hparam_domain_discrete.opt[1] must be a string like hparam_dict.opt, got number")
    e = err_here(function() local r = w:add_hparams({opt = "sgd"}, {}, {hparam_domain_discrete = {x = {1}}}); return r end)
    H.has(e, "hparam_domain_discrete.x has no value in hparam_dict")
  end)

  it("name the folder that cannot be made", function()
    local file = os.tmpname()   -- a plain file: no folder can be made below it
    local e = err_here(function() local r = SummaryWriter(file .. "/run"); return r end)
    os.remove(file)
    H.has(e, "SummaryWriter: cannot create the log folder " .. file .. "/run: " .. file .. ": Not a directory")
  end)

  it("raise on a failed write, naming the file, keep the queued records, and go on in a new file", function()
    -- /dev/full: every write fails (ENOSPC) and, a device, it cannot be cut
    -- back to its last complete record, so the writer starts a new file.
    -- Only where it is a character device: opening a missing one would make
    -- a regular file there.
    if not os.execute("test -c /dev/full") then
      pending("no /dev/full character device")
      return
    end
    w:add_scalar("x", 1, 1)
    local fw = w.file_writer
    local first = fw.path
    fw.file:close()
    fw.file = assert(C.open_events("/dev/full"))
    local e = err_here(function() local r = w:flush(); return r end)
    H.has(e, "SummaryWriter:flush: cannot write the event file " .. first)
    H.has(e, "No space left on device")
    assert.are.equal(1, #fw.pending)
    w:close()
    local files = event_files(dir)
    assert.are.equal(2, #files)
    local second = files[1] == first and files[2] or files[1]
    assert.are.equal(1, #read_records(first))            -- the version record, written before
    local recs = read_records(second)                      -- a version record, then the queued scalar
    assert.are.equal(2, #recs)
    assert.is_truthy(recs[1]:find("brain.Event:2", 1, true))
    assert.is_truthy(recs[2]:find("x", 1, true))
  end)
end)

local runner, exists = H.runner, H.exists

-- Waits (up to 30 s) for a file to appear.
local function wait_for(p)
  local deadline = os.time() + 30
  while not exists(p) and os.time() < deadline do os.execute("sleep 0.01") end
  return exists(p)
end

-- The steps of the scalar events of an event file, in order (the step is
-- field 2 of an Event, a varint; the version record has none). The
-- records' framing and CRCs are checked by read_records.
local function scalar_steps(path)
  local steps = {}
  for _, body in ipairs(read_records(path)) do
    if body:find("loss", 1, true) then
      -- wall_time: key 0x09 and 8 bytes, then key 0x10 and the step's varint
      assert.are.equal(0x09, body:byte(1))
      assert.are.equal(0x10, body:byte(10))
      local v, shift, pos = 0, 0, 11
      repeat
        local b = body:byte(pos)
        v = v | (b & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
      until b < 0x80
      steps[#steps + 1] = v
    end
  end
  return steps
end

-- A disk that fills up and frees again, made with a file size limit
-- (RLIMIT_FSIZE: a write past it fails with EFBIG; SIGXFSZ ignored) in a
-- child process, lifted from outside (prlimit --pid) once the child has
-- seen its write fail. No mount needed.
describe("SummaryWriter on a full disk", function()
  it("leaves the file ending at its last complete record, and the retry loses nothing", function()
    if not os.execute("command -v prlimit >/dev/null") then
      pending("prlimit (util-linux) not installed")
      return
    end
    local dir = tmpdir()
    assert(os.execute("mkdir -p " .. dir))
    local logdir, failed, go = dir .. "/run", dir .. "/failed", dir .. "/go"
    local child = dir .. "/child.lua"
    local f = assert(io.open(child, "w"))
    f:write(string.format([[
      local ember = require "ember"
      local logdir, failed, go = %q, %q, %q
      local w = ember.utils.tensorboard.SummaryWriter(logdir, {max_queue = 1000000, flush_secs = 1e9})
      local errors = 0
      for step = 1, 300 do
        w:add_scalar("loss", step * 0.5, step)
        if step %% 10 == 0 then
          local ok, err = pcall(w.flush, w)
          if not ok and errors == 0 then
            errors = 1
            local m = io.open(failed, "w")
            m:write(tostring(err))
            m:close()
            -- the parent checks the file and lifts the limit
            local deadline = os.time() + 30
            while not io.open(go) and os.time() < deadline do os.execute("sleep 0.01") end
          end
        end
      end
      w:close()
      io.write("done ", errors)
    ]], logdir, failed, go))
    f:close()
    local pipe = io.popen(string.format("sh -c 'trap \"\" XFSZ; echo $$; exec prlimit --fsize=4096:unlimited %s %s'",
                                        runner(), child))
    local pid = assert(tonumber(pipe:read("l")))
    local saw = wait_for(failed)
    local files = event_files(logdir)
    local during_ok, during = false, nil
    if saw then
      during_ok, during = pcall(scalar_steps, files[1])
      os.execute("prlimit --pid " .. pid .. " --fsize=unlimited:unlimited")
    end
    io.open(go, "w"):close()
    local out = pipe:read("a")
    pipe:close()
    assert.is_true(saw, "the child's write never failed: " .. out)
    H.has(H.read_file(failed), "cannot write the event file " .. files[1] .. ": File too large")
    assert.are.equal("done 1", out)
    -- while the disk was full: whole records only, the first steps in order
    assert.is_true(during_ok, "the file ended in a broken record: " .. tostring(during))
    assert.is_true(#during > 0 and #during < 300)
    for i, s in ipairs(during) do assert.are.equal(i, s) end
    -- after: every step once, in order, in the one file
    assert.are.same({files[1]}, event_files(logdir))
    local steps = scalar_steps(files[1])
    assert.are.equal(300, #steps)
    for i, s in ipairs(steps) do assert.are.equal(i, s) end
    rm_rf(dir)
  end)
end)
