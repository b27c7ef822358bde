-- plot_spec.lua — ember.plot against a real gnuplot: files it writes, the
-- text it draws, its errors, its death, and the live plot's throttle.
-- Expected positions in text charts come from the chart's own frame and a
-- linear map of the data, computed here; not from an earlier run.
local ember = require "ember"
local plot = require "ember.plot"

local tmpdir = os.getenv("TMPDIR") or "/tmp"

local read_file = require("helpers").read_file

local function pid_alive(pid)
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == true
end

-- big-endian 32-bit integer at byte i
local function be32(s, i)
  local a, b, c, d = s:byte(i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local captured
local saved_config = {}
local function capture_setup()
  for k, v in pairs(plot.config) do saved_config[k] = v end
  captured = {}
  plot.config.terminal = "dumb"
  plot.config.color = false
  plot.config.write = function(s) captured[#captured + 1] = s end
end
local function capture_teardown()
  for k in pairs(plot.config) do plot.config[k] = saved_config[k] end
  captured = nil
end

-- The chart's frame and labels: rows and columns are 1-based positions.
local function parse_chart(text)
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local top, bottom
  for i, line in ipairs(lines) do
    if line:find("%+%-%-%-%-%-+%+") then
      top = top or i
      bottom = i
    end
  end
  assert(top and bottom and bottom > top, "no frame found in:\n" .. text)
  local left = lines[top]:find("+", 1, true)
  local right = #lines[top]:match("^(.*%+)")
  local chart = {lines = lines, top = top, bottom = bottom, left = left, right = right, ylabels = {}, xlabels = {}}
  for r = top, bottom do
    local label = lines[r]:sub(1, left - 1):match("^%s*(%-?[%d%.]+)%s*$")
    if label then chart.ylabels[#chart.ylabels + 1] = {value = tonumber(label), row = r} end
  end
  local below = lines[bottom + 1] or ""
  local pos = 1
  while true do
    local s, e, num = below:find("(%-?[%d%.]+)", pos)
    if not s then break end
    chart.xlabels[#chart.xlabels + 1] = {value = tonumber(num), col = (s + e) / 2}
    pos = e + 1
  end
  chart.marks = {}
  for r = top + 1, bottom - 1 do
    local line = lines[r]
    for c = left + 1, right - 1 do
      if line:sub(c, c) == "*" then chart.marks[#chart.marks + 1] = {row = r, col = c} end
    end
  end
  return chart
end

describe("plot files", function()
  it("writes a PNG of the requested size", function()
    local path = tmpdir .. "/ember_plot_spec.png"
    os.remove(path)
    local fig = plot.figure{title = "sine"}
    fig:line(ember.linspace(0, 6.28, 200):sin())
    fig:save(path, {size = {320, 240}})
    local png = read_file(path)
    assert.are.equal("\137PNG\r\n\26\n", png:sub(1, 8))
    assert.are.equal("IHDR", png:sub(13, 16))
    assert.are.equal(320, be32(png, 17))
    assert.are.equal(240, be32(png, 21))
    fig:close()
    os.remove(path)
  end)

  it("writes well-formed SVG holding the series titles", function()
    local path = tmpdir .. "/ember_plot_spec.svg"
    os.remove(path)
    local x = ember.arange(1, 11)
    local fig = plot.line(x, {x:double():log(), x:double():sqrt()},
                          {labels = {"log <x>", "sqrt & 'root'"}, show = false, title = "two"})
    fig:save(path, {size = {400, 300}})
    local svg = read_file(path)
    -- python3 is a test dependency (the shell tests); its XML parser is independent of gnuplot
    local ok = os.execute("python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' " .. path)
    assert.is_true(ok == true, "python3 could not parse " .. path)
    local entities = {lt = "<", gt = ">", amp = "&", apos = "'", quot = '"'}
    local text = svg:gsub("&(%a+);", entities)
    assert.truthy(text:find(">log <x></text>", 1, true), "first series title missing")
    assert.truthy(text:find(">sqrt & 'root'</text>", 1, true), "second series title missing")
    assert.truthy(svg:find('width="400"', 1, true))
    fig:close()
    os.remove(path)
  end)

  it("writes PDF and text files, chosen by the extension", function()
    local fig = plot.figure():line({3, 1, 2})
    local pdf = tmpdir .. "/ember_plot_spec.pdf"
    if plot.terminals().pdfcairo then
      fig:save(pdf)
      assert.are.equal("%PDF-", read_file(pdf):sub(1, 5))
      os.remove(pdf)
    end
    local txt = tmpdir .. "/ember_plot_spec.txt"
    fig:save(txt, {size = {50, 15}})
    local text = read_file(txt)
    local n = 0
    for line in text:gmatch("([^\n]*)\n") do
      n = n + 1
      assert.are.equal(50, #line)
    end
    assert.are.equal(15, n)
    assert.is_nil(text:find("[\f\27]"), "a text file holds neither form feeds nor colours")
    os.remove(txt)
    assert.has_error(function() fig:save(tmpdir .. "/x.jpg") end,
                     "plot.Figure:save: " .. tmpdir .. "/x.jpg: unknown extension; use .png, .svg, .pdf or .txt")
    assert.has_error(function() fig:save("/nonexistent-dir/x.png") end,
                     "plot.Figure:save: /nonexistent-dir/x.png: cannot create a temporary file beside it: "
                     .. "No such file or directory")
    -- a drawing that fails leaves no empty file behind
    local bad = tmpdir .. "/ember_plot_spec_bad.png"
    os.remove(bad)
    local fails = plot.figure():line({1, 2}, {with = "linesx"})
    assert.has_error(function() fails:save(bad) end)
    assert.is_nil(io.open(bad))
    fails:close()
    fig:close()
  end)

  -- as ember.save writes: a link's target, whole or not at all
  it("writes a link's target and keeps the link; a failed drawing leaves the old file", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/far"))
    local target, link = dir .. "/far/loss.txt", dir .. "/loss.txt"
    local f = assert(io.open(target, "w"))
    f:write("old chart\n")
    f:close()
    assert(os.execute("ln -s far/loss.txt " .. link))
    local fig = plot.figure():line({3, 1, 2})
    fig:save(link, {size = {40, 12}})
    assert.is_true(os.execute("test -L " .. link))
    local text = read_file(target)
    assert.are.equal(12, select(2, text:gsub("\n", "")))
    local fails = plot.figure():line({1, 2}, {with = "linesx"})
    local png = dir .. "/far/loss.png"
    f = assert(io.open(png, "w"))
    f:write("old png")
    f:close()
    assert(os.execute("ln -s far/loss.png " .. dir .. "/loss.png"))
    assert.has_error(function() fails:save(dir .. "/loss.png") end)
    assert.are.equal("old png", read_file(png))
    assert(os.execute("mkdir " .. dir .. "/d.txt"))
    assert.has_error(function() fig:save(dir .. "/d.txt") end, "plot.Figure:save: " .. dir .. "/d.txt: is a directory")
    local ls = io.popen("ls -a " .. dir .. " " .. dir .. "/far")
    for name in ls:lines() do assert.is_nil(name:find(".tmp.", 1, true), name) end
    ls:close()
    fails:close()
    fig:close()
    os.execute("rm -rf " .. dir)
  end)
end)

describe("plot inline text", function()
  before_each(capture_setup)
  after_each(capture_teardown)

  it("draws y = x with axes, tick labels and marks where the data puts them", function()
    local x = ember.linspace(0, 10, 101)
    local fig = plot.figure{size = {61, 21}}:line(x, x):xrange(0, 10):yrange(0, 10)
    fig:show()
    assert.are.equal(1, #captured)
    local c = parse_chart(captured[1])
    local h, w = c.bottom - c.top, c.right - c.left
    assert.is_true(h >= 12 and w >= 40, "frame too small: " .. h .. "x" .. w)
    -- y tick labels: 0 on the bottom border, 10 on the top one, each on its row
    assert.is_true(#c.ylabels >= 3, "fewer than 3 y labels")
    local seen = {}
    for _, l in ipairs(c.ylabels) do
      seen[l.value] = true
      local want = c.bottom - l.value / 10 * h
      assert.is_true(math.abs(l.row - want) <= 0.5 + 1e-9,
                     string.format("y label %g on row %d, expected %.1f", l.value, l.row, want))
    end
    assert.is_true(seen[0] and seen[10], "the y axis should be labelled 0 and 10")
    -- x tick labels: centred under their columns
    assert.is_true(#c.xlabels >= 3, "fewer than 3 x labels")
    seen = {}
    for _, l in ipairs(c.xlabels) do
      seen[l.value] = true
      local want = c.left + l.value / 10 * w
      assert.is_true(math.abs(l.col - want) <= 1.5,
                     string.format("x label %g at column %.1f, expected %.1f", l.value, l.col, want))
    end
    assert.is_true(seen[0] and seen[10], "the x axis should be labelled 0 and 10")
    -- the curve: every mark within a cell of the diagonal, and the curve crosses every row
    assert.is_true(#c.marks >= h, "too few marks: " .. #c.marks)
    local rows = {}
    for _, m in ipairs(c.marks) do
      local mx = (m.col - c.left) / w * 10
      local my = (c.bottom - m.row) / h * 10
      assert.is_true(math.abs(mx - my) <= 10 / h + 10 / w + 1e-9,
                     string.format("mark at row %d column %d is (%.2f, %.2f), off y = x", m.row, m.col, mx, my))
      rows[m.row] = true
    end
    for r = c.top + 1, c.bottom - 1 do assert.is_true(rows[r], "no mark on row " .. r) end
    fig:close()
  end)

  it("sizes the text chart to the terminal by default", function()
    local old_cols, old_lines = os.getenv("COLUMNS"), os.getenv("LINES")
    -- busted's stdout is a pipe here, so the size comes from COLUMNS/LINES or 80x24
    if old_cols == nil and old_lines == nil then
      plot.line({1, 2, 3})
      local first = captured[1]:match("^[^\n]*")
      assert.are.equal(80, #first)
      local n = select(2, captured[1]:gsub("\n", ""))
      assert.are.equal(21, n)   -- 24 rows less 3 for the prompt and the call
    else
      pending("COLUMNS or LINES is set")
    end
  end)

  it("names several series in the legend, from a 2-D tensor or a list", function()
    local y = ember.stack({ember.arange(1, 6):double(), ember.arange(5, 0, -1):double()}, 2)
    local fig = plot.line(y, {labels = {"up", "down"}, size = {60, 15}})
    assert.truthy(captured[1]:find("up", 1, true))
    assert.truthy(captured[1]:find("down", 1, true))
    assert.are.equal(2, #fig.series)
    fig:close()
    fig = plot.line({1, 2, 3}, {{1, 4, 9}, {1, 8, 27}}, {labels = {"sq", "cube"}, size = {60, 15}})
    assert.are.equal(2, #fig.series)
    assert.truthy(captured[2]:find("cube", 1, true))
    fig:close()
  end)

  it("draws scatter plots, histograms and images", function()
    local fig = plot.scatter({1, 2, 3}, {3, 1, 2}, {size = {40, 12}})
    assert.truthy(captured[1]:find("+----", 1, true))
    fig:close()
    fig = plot.hist(ember.randn(1000), 10, {size = {40, 12}, title = "randn"})
    assert.truthy(captured[2]:find("randn", 1, true))
    fig:close()
    -- an image on a text terminal without colours: grey levels as characters,
    -- 0 -> " ", the maximum -> "@", each pixel two characters wide
    fig = plot.image(ember.tensor({{0, 1, 2}, {3, 4, 9}}), {size = {40, 12}})
    local ramp = " .:-=+*#%@"
    local function ch(v) local k = math.floor(v / 9 * 9 + 0.5) + 1; return ramp:sub(k, k):rep(2) end
    assert.are.equal(ch(0) .. ch(1) .. ch(2) .. "\n" .. ch(3) .. ch(4) .. ch(9) .. "\n", captured[3])
    fig:close()
  end)

  it("draws sixel images and other gnuplot terminals inline, when asked", function()
    if plot.terminals().sixelgd then
      plot.config.terminal = "sixel"
      local fig = plot.line({1, 3, 2}, {size = {200, 120}})
      -- a sixel image: DCS "\27P", the raster attributes "1;1;200;120, ..., ST "\27\\"
      assert.are.equal("\27P", captured[1]:sub(1, 2))
      assert.truthy(captured[1]:find('"1;1;200;120', 1, true), captured[1]:sub(1, 40))
      assert.truthy(captured[1]:find("\27\\%s*$"))
      fig:close()
    end
    plot.config.terminal = "dumb size 30,8 mono"
    local fig = plot.line({1, 3, 2})
    assert.are.equal(8, select(2, captured[#captured]:gsub("\n", "")))
    fig:close()
    local has_window = false
    for _, t in ipairs{"qt", "wxt", "x11", "aqua"} do has_window = has_window or plot.terminals()[t] end
    if not has_window then
      plot.config.terminal = "window"
      assert.has_error(function() plot.line({1, 2}) end,
                       "plot: this gnuplot has no window terminal (gnuplot-nox has none: install gnuplot-qt)")
    end
  end)

  it("counts histogram bins as torch.histc", function()
    local centers, counts = plot._histogram(ember.tensor({0, 0.1, 0.5, 0.9, 1.0, 2.0}, {dtype = "float64"}),
                                            2, 0, 1)
    assert.are.same({2, 3}, counts:tolist())   -- 2.0 is outside; 1.0 goes into the last bin
    assert.are.same({0.25, 0.75}, centers:tolist())
  end)
end)

describe("plot errors", function()
  before_each(capture_setup)
  after_each(capture_teardown)

  it("raises gnuplot's own message, and the figure goes on working", function()
    local fig = plot.figure{size = {40, 12}}:line({1, 2, 3})
    local ok, err = pcall(fig.set, fig, "nosuchoption 1")
    assert.is_false(ok)
    assert.truthy(err:lower():find("plot.figure:set: gnuplot: unrecognized option", 1, true), err)
    assert.truthy(err:find("in: set nosuchoption 1", 1, true), err)
    ok, err = pcall(plot.line, {1, 2}, {with = "linesx", size = {40, 12}})
    assert.is_false(ok)
    assert.truthy(err:find("gnuplot: ", 1, true) and err:find("linesx", 1, true), err)
    fig:set("xtics 1")
    fig:show()
    assert.truthy(captured[#captured]:find("+----", 1, true))
    fig:close()
  end)

  it("checks its arguments", function()
    local fig = plot.figure()
    assert.has_error(function() fig:show() end,
                     "plot.Figure:show: the figure has nothing to draw (add a line, scatter, hist or image)")
    assert.has_error(function() plot.line(ember.zeros(2, 2, 2)) end,
                     "plot.line: y must be 1-D (or 2-D: one series per column), got [2, 2, 2]")
    assert.has_error(function() plot.line({1, 2}, {1, 2, 3}) end, "plot.line: x has 2 points, y has 3")
    assert.has_error(function() plot.line({1, "a"}) end, "plot.line: y: element 2 is a string, expected a number")
    assert.has_error(function() plot.line() end, "plot.line: expected data (a tensor or a table of numbers)")
    assert.has_error(function() plot.line(ember.zeros(0)) end, "plot.line: series 1 has no points")
    assert.has_error(function() plot.line({1, 2}, "title") end, "plot.line: options: expected a table, got string")
    assert.has_error(function() plot.line({1, 2}, {xlable = "step"}) end,
                     "plot.line: unknown option xlable (known: color, decimate, grid, label, labels, legend, "
                     .. "logx, logy, show, size, title, width, with, xlabel, xrange, ylabel, yrange)")
    assert.has_error(function() plot.figure{title = "t", show = false} end, "plot.figure: unknown option show "
                     .. "(known: decimate, grid, legend, logx, logy, size, title, xlabel, xrange, ylabel, yrange)")
    assert.has_error(function() plot.figure{xrange = "0:1"} end, "plot.figure: option xrange: expected {lo, hi}")
    assert.has_error(function() plot.figure{logy = 1} end, "plot.figure: option logy: expected a boolean, got number")
    assert.has_error(function() plot.figure{size = {0, 10}} end,
                     "plot.figure: option size: expected {width, height} (positive numbers)")
    assert.has_error(function() plot.line({1, 2}, {with = "lines, sin(x)"}) end,
                     "plot.line: option with: expected a string without ',', ';' or newlines")
    assert.has_error(function() plot.image(ember.eye(2), {palette = "gray\n!ls"}) end,
                     "plot.image: option palette: expected a string without ';' or newlines")
    assert.has_error(function() fig:line({1, 2}, {title = "x"}) end,
                     "plot.Figure:line: unknown option title (known: color, label, labels, show, width, with)")
    assert.has_error(function() fig:line(ember.zeros(2, 2, 2)) end,
                     "plot.Figure:line: y must be 1-D (or 2-D: one series per column), got [2, 2, 2]")
    assert.has_error(function() fig:title({}) end, "plot.Figure:title: expected a string (or nil to remove it), got table")
    assert.has_error(function() plot.hist({1, 2}, "10") end, "plot.hist: bins must be a positive integer, got 10")
    assert.has_error(function() plot.line({1, 2}, {color = 3}) end,
                     "plot.line: option color: expected a string such as \"red\" or \"#ff8800\"")
    assert.has_error(function() plot.hist({1, 2}, {color = {}}) end,
                     "plot.hist: option color: expected a string such as \"red\" or \"#ff8800\"")
    assert.has_error(function() plot.line({1, 2}, {width = 0}) end, "plot.line: option width: expected a positive number")
    assert.has_error(function() plot.line({1, 2}, {labels = "a"}) end, "plot.line: option labels: expected a list of strings")
    assert.has_error(function() plot.line(ember.zeros(2, 2), ember.zeros(2)) end, "plot.line: x must be 1-D, got [2, 2]")
    assert.has_error(function() plot.line({ember.zeros(2, 2)}) end, "plot.line: series 1 must be 1-D, got [2, 2]")
    assert.has_error(function() plot.hist(ember.zeros(0)) end, "plot.hist: no values")
    assert.has_error(function() plot.image(ember.zeros(0, 3)) end, "plot.image: the image is empty: [0, 3]")
    assert.has_error(function() plot.figure{title = {}} end, "plot.figure: option title: expected a string, got table")
    assert.has_error(function() plot.figure{legend = 1} end,
                     "plot.figure: option legend: expected a position such as \"top left\", or false")
    assert.has_error(function() fig:legend(true) end,
                     "plot.Figure:legend: expected a position such as \"top left\", or false")
    assert.has_error(function() fig:yrange("a") end, "plot.Figure:yrange: expected numbers (or nil for automatic)")
    assert.has_error(function() fig:save("") end, "plot.Figure:save: expected a file name")
    assert.has_error(function() fig:save(tmpdir .. "/x.png", {size = {800}}) end,
                     "plot.Figure:save: option size: expected {width, height} (positive numbers)")
    assert.has_error(function() plot.live{smooth = "ema"} end,
                     "plot.live: smooth: expected a number (EMA factor) or {ema = a} or {window = n}")
    -- the private C half checks what plot.lua hands it
    local P = ember._plot
    assert.has_error(function() P.write_data(tmpdir .. "/x.bin", {ember.zeros(2)}) end,
                     "plot.write_data: column 1: expected a contiguous float64 CPU tensor")
    assert.has_error(function() P.write_data(tmpdir .. "/x.bin", {ember.zeros(2):double(), ember.zeros(3):double()}) end,
                     "plot.write_data: column 2 has 3 values, column 1 has 2")
    assert.has_error(function() P.decimate(ember.zeros(2), ember.zeros(2), 4) end,
                     "plot.decimate: expected two contiguous float64 CPU tensors of one length")
    local ok, err = pcall(P.spawn, {})
    assert.is_false(ok)
    assert.truthy(err:find("expected a list of 1 to 63 strings", 1, true), err)
    assert.has_error(function() plot.hist({1, 2}, 0) end, "plot.hist: bins must be a positive integer, got 0")
    assert.has_error(function() plot.hist({1, 2}, {range = {1, 0}}) end, "plot.hist: range must be {lo, hi} with lo < hi")
    assert.has_error(function() plot.image(ember.zeros(3)) end,
                     "plot.image: expected a 2-D tensor (or [1, h, w]), got [3]")
    assert.has_error(function() fig:xrange(2, 1) end, "plot.Figure:xrange: 2 >= 1")
    assert.has_error(function() fig:logscale("z") end, "plot.Figure:logscale: axes must be \"x\", \"y\" or \"xy\"")
    assert.has_error(function() fig:set("grid; !ls") end,
                     "plot.Figure:set: expected one gnuplot set command (a string without ';' or newlines)")
    assert.has_error(function() plot.Figure.show({}) end,
                     "plot.Figure:show: expected a figure (call it as fig:show(...))")
    fig:close()
    assert.has_error(function() fig:line({1}) end, "plot.Figure:line: the figure was closed")
    assert.has_error(function() plot.live{interval = -1} end, "plot.live: interval must be a number of milliseconds >= 0")
    assert.has_error(function() plot.live{smooth = 1.5} end, "plot.live: smooth.ema must be in [0, 1)")
    assert.has_error(function() plot.live{smooth = {window = 0}} end, "plot.live: smooth.window must be a positive integer")
    local live = plot.live{inline = false}
    assert.has_error(function() live:add("a", 1, "x") end,
                     "plot.Live:add: value: expected a number or a one-element tensor, got string")
    assert.has_error(function() live:add(1, 1, 1) end, "plot.Live:add: series name: expected a string, got number")
    assert.has_error(function() live:add("a", "x", 1) end, "plot.Live:add: step: expected a number, got string")
    assert.is_nil(live:points("a"), "a failed add leaves no empty series")
    assert.has_error(function() live:draw() end, "plot.Live: nothing to draw yet (add points with live:add)")
  end)

  it("says which package to install when gnuplot is missing", function()
    plot.config.gnuplot = "/nonexistent/gnuplot"
    local ok, err = pcall(plot.line, {1, 2})
    assert.is_false(ok)
    assert.are.equal("plot.Figure:show: gnuplot not found (/nonexistent/gnuplot); install Debian's gnuplot-nox "
                     .. "package (apt-get install gnuplot-nox), or set EMBER_GNUPLOT to the gnuplot program", err)
  end)

  it("restarts a gnuplot that was killed between drawings", function()
    plot.config.timeout = 5   -- bounds every wait below
    local fig = plot.line({1, 2, 3}, {size = {40, 12}})
    local pid = fig:gnuplot_pid()
    assert.is_true(pid_alive(pid))
    os.execute("kill -9 " .. pid)
    -- either an error naming the death or a drawing by a new gnuplot; then it works
    local ok, err = pcall(fig.show, fig)
    if not ok then assert.truthy(err:find("killed by signal 9", 1, true), err) end
    fig:show()
    assert.are_not.equal(pid, fig:gnuplot_pid())
    assert.truthy(captured[#captured]:find("+----", 1, true))
    fig:close()
  end)

  it("gives up on a gnuplot that stops answering, and the next drawing starts a new one", function()
    local fig = plot.line({1, 2, 3}, {size = {40, 12}})
    local pid = fig:gnuplot_pid()
    os.execute("kill -STOP " .. pid)
    plot.config.timeout = 0.5
    local ok, err = pcall(fig.show, fig)
    assert.is_false(ok)
    assert.are.equal("plot.Figure:show: gnuplot (pid " .. pid .. ") did not answer within 0.5 s and was stopped; "
                     .. "the next drawing starts a new one", err)
    assert.is_false(pid_alive(pid))
    plot.config.timeout = 5
    fig:show()
    assert.are_not.equal(pid, fig:gnuplot_pid())
    fig:close()
  end)

  it("reports a gnuplot that dies during a drawing", function()
    -- a stand-in that reads one line and exits with status 3
    local fake = os.tmpname()
    local f = assert(io.open(fake, "w"))
    f:write("#!/bin/sh\nread line\nexit 3\n")
    f:close()
    os.execute("chmod +x " .. fake)
    plot.config.gnuplot = fake
    plot.config.timeout = 5
    local ok, err = pcall(plot.line, {1, 2})
    os.remove(fake)
    assert.is_false(ok)
    assert.truthy(err:match("^plot.Figure:show: gnuplot %(pid %d+%) exited with status 3; the next drawing starts a new one$"),
                  err)
  end)

  it("stops gnuplot and removes its files when a figure is closed or collected", function()
    local fig = plot.line({1, 2, 3}, {size = {40, 12}})
    local pid, dir = fig:gnuplot_pid(), fig.dir
    assert.truthy(io.open(dir .. "/1.bin"))
    fig:close()
    assert.is_false(pid_alive(pid))
    assert.is_nil(io.open(dir .. "/1.bin"))
    fig = plot.line({1, 2, 3}, {size = {40, 12}})
    pid, dir = fig:gnuplot_pid(), fig.dir
    fig = nil   -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.is_false(pid_alive(pid))
    assert.is_nil(io.open(dir .. "/1.bin"))
  end)
end)

describe("plot resources", function()
  before_each(capture_setup)
  after_each(capture_teardown)

  it("keeps at most config.max_processes gnuplots, stopping the least recently used", function()
    plot.config.max_processes = 3
    local figs, pids = {}, {}
    for i = 1, 5 do
      figs[i] = plot.line({1, i, 2}, {size = {40, 12}})
      pids[i] = figs[i]:gnuplot_pid()
    end
    local alive = 0
    for i = 1, 5 do if pid_alive(pids[i]) then alive = alive + 1 end end
    assert.are.equal(3, alive)
    assert.is_nil(figs[1]:gnuplot_pid())
    assert.is_false(pid_alive(pids[1]))
    assert.is_true(pid_alive(pids[5]))
    figs[1]:show()            -- a stopped figure draws again with a new gnuplot
    assert.is_not_nil(figs[1]:gnuplot_pid())
    assert.is_nil(figs[2]:gnuplot_pid())   -- now the least recently used
    for i = 1, 5 do figs[i]:close() end
  end)

  it("draws a dense sorted line from each slice's first, lowest, highest and last points", function()
    ember.manual_seed(5)
    local n, buckets = 10007, 50
    local x = ember.arange(1, n + 1, {dtype = "float64"})
    local y = ember.randn(n, {dtype = "float64"})
    y[500] = 0 / 0     -- a gap
    local dx, dy = ember._plot.decimate(x, y, buckets)
    -- the same, by brute force
    local xs, ys = x:tolist(), y:tolist()
    local lo, hi = xs[1], xs[n]
    local keep, slices = {}, {}
    local function flush(sl)
      if not sl then return end
      local idx = {sl.first, sl.lo, sl.hi, sl.last}
      table.sort(idx)
      for k, i in ipairs(idx) do if k == 1 or i ~= idx[k - 1] then keep[#keep + 1] = i end end
    end
    local cur, sl
    for i = 1, n do
      if ys[i] ~= ys[i] then
        flush(sl); sl = nil; keep[#keep + 1] = i
      else
        local b = math.min(buckets - 1, math.floor((xs[i] - lo) * buckets / (hi - lo)))
        if b ~= cur then flush(sl); sl = nil; cur = b end
        if not sl then sl = {first = i, last = i, lo = i, hi = i}; slices[#slices + 1] = sl
        else
          sl.last = i
          if ys[i] < ys[sl.lo] then sl.lo = i end
          if ys[i] > ys[sl.hi] then sl.hi = i end
        end
      end
    end
    flush(sl)
    assert.are.equal(#keep, dx:size(1))
    local gx, gy = dx:tolist(), dy:tolist()
    for k, i in ipairs(keep) do
      assert.are.equal(xs[i], gx[k])
      if ys[i] == ys[i] then assert.are.equal(ys[i], gy[k]) else assert.is_true(gy[k] ~= gy[k]) end
    end
    assert.is_true(#keep <= 4 * buckets + 3)
    -- x out of order: no decimation
    assert.is_nil(ember._plot.decimate(ember.tensor({1, 3, 2}, {dtype = "float64"}), x:narrow(1, 1, 3), 2))
  end)

  it("thins dense lines for pictures but not for text or zoomed axes", function()
    local n = 200000
    local x = ember.arange(1, n + 1, {dtype = "float64"})
    local fig = plot.figure():line(x, x:sin())
    local png = tmpdir .. "/ember_plot_dense.png"
    fig:save(png, {size = {400, 300}})
    local s = fig.series[1]
    assert.is_not_nil(s.files[1600], "a 400-pixel picture draws from 1600 slices")
    assert.is_true(s.files[1600][2] <= 4 * 1600)
    fig:show()
    assert.is_not_nil(s.files[0], "text charts draw every point")
    assert.are.equal(n, s.files[0][2])
    fig:close()
    fig = plot.figure{xrange = {1, 100}}:line(x, x:sin())
    fig:save(png, {size = {400, 300}})
    assert.is_nil(fig.series[1].files[1600])
    fig:close()
    os.remove(png)
  end)
end)

describe("plot.live", function()
  before_each(capture_setup)
  after_each(capture_teardown)

  it("redraws at most once per interval over 10,000 adds, and keeps every point", function()
    local interval = 50
    local live = plot.live{title = "loss", interval = interval, inline = true, size = {60, 15}}
    local t0 = ember.wall_time()
    for i = 1, 10000 do
      -- a training step's worth of work: 50 microseconds
      local until_t = ember.wall_time() + 50e-6
      while ember.wall_time() < until_t do end
      live:add("train", i, 1 / i)
    end
    local elapsed_ms = (ember.wall_time() - t0) * 1000
    assert.is_true(live.redraws >= 2, "expected several redraws in " .. elapsed_ms .. " ms")
    assert.is_true(live.redraws <= elapsed_ms / interval + 1,
                   string.format("%d redraws in %.0f ms at most every %d ms", live.redraws, elapsed_ms, interval))
    assert.are.equal(live.redraws, #captured)
    local steps, values = live:points("train")
    assert.are.equal(10000, #steps)
    assert.are.equal(1 / 7, values[7])
    local path = tmpdir .. "/ember_plot_live.png"
    live:save(path)
    assert.are.equal("\137PNG\r\n\26\n", read_file(path):sub(1, 8))
    os.remove(path)
    live:close()
  end)

  it("draws nothing inline when inline is off, and on draw()", function()
    local live = plot.live{inline = false, size = {60, 15}}
    for i = 1, 100 do live:add("a", i, i) end
    live:add("b", 2)          -- step defaults to the series' count + 1
    assert.are.equal(0, live.redraws)
    assert.are.equal(0, #captured)
    assert.are.same({1}, (live:points("b")))
    live:draw()
    assert.are.equal(1, #captured)
    assert.truthy(captured[1]:find("a", 1, true))
    live:close()
  end)

  it("smooths with a debiased EMA or a moving average", function()
    -- EMA 0.5 of 1, 0, 0: s = 0.5, 0.25, 0.125 over weights 0.5, 0.75, 0.875
    local e = plot._smooth({1, 0, 0}, {ema = 0.5})
    assert.are.same({1, 1 / 3, 1 / 7}, e)
    assert.are.same({1, 1.5, 2.5, 3.5}, plot._smooth({1, 2, 3, 4}, {window = 2}))
    local live = plot.live{inline = false, smooth = 0.9, size = {60, 15}}
    live:add("loss", 1, 2)
    live:draw()
    assert.truthy(captured[1]:find("loss (EMA 0.9)", 1, true))
    live:close()
  end)
end)
