-- ember.plot — plots drawn by gnuplot: inline in the terminal (text, or sixel
-- images), in a window, or to PNG/SVG/PDF files; and live training curves.
--
--   plot.line(y)                          -- shown at once; returns the figure
--   plot.line(x, {train, test}, {labels = {"train", "test"}, title = "loss", logy = true})
--   plot.scatter(x, y); plot.hist(t, 50); plot.image(w, {palette = "heat"})
--   local fig = plot.figure{title = "loss"}; fig:line(y); fig:show(); fig:save("loss.png")
--   local live = plot.live{title = "loss"}; live:add("train", step, loss); live:save("loss.png")
--
-- How it talks to gnuplot (the C half is lua/bind_plot.c, ember._plot):
--  - one gnuplot process per figure, started on the figure's first drawing and
--    kept, on pipes for its stdin, stdout and stderr. Each drawing sends one
--    script ending in two `print` markers (one to stdout, one to stderr) and
--    reads both streams up to them: stdout is the inline drawing, stderr holds
--    gnuplot's errors, which become Lua errors with gnuplot's message;
--  - series data go to a binary file of float64 records in the figure's own
--    temporary folder (one write, no text formatting), read by gnuplot with
--    `binary record=(n)`. A file rather than inline data on the pipe: if a
--    plot command fails, gnuplot would read inline binary data as commands;
--  - every drawing starts with `reset` and sends the whole figure, so a
--    figure never depends on what an earlier drawing left in gnuplot, and a
--    gnuplot that died is simply started again by the next drawing;
--  - waits have a deadline (config.timeout) and notice Ctrl-C and the death of
--    the process; the figure then drops its gnuplot and reports it;
--  - the process and the data files go when the figure is closed or collected.
local ember = require "ember"
local C = ember._plot

local M = {}

-- Settings; change them in place (plot.config.terminal = "sixel").
M.config = {
  terminal = nil,  -- inline output: nil (auto), "dumb", "sixel", "window", or a gnuplot terminal
  gnuplot = nil,   -- the gnuplot program (default: $EMBER_GNUPLOT, else "gnuplot" on PATH)
  timeout = 30,    -- seconds to wait for gnuplot before giving up on it
  max_processes = 8,  -- gnuplots kept running; beyond, the least recently used one stops
  color = nil,     -- colours in text plots: nil (auto: a terminal, NO_COLOR unset), true, false
  size = nil,      -- inline size {w, h}: characters for dumb, pixels otherwise
  write = nil,     -- function(text) taking inline output (default: io.stdout)
  display = nil,   -- function(fig) that shows figures instead (the Jupyter kernel sets it: a PNG)
}

local PACKAGE_HINT = "install Debian's gnuplot-nox package (apt-get install gnuplot-nox), " ..
                     "or set EMBER_GNUPLOT to the gnuplot program"

-- ---- small helpers --------------------------------------------------------------------

-- A gnuplot string literal. Single quotes: gnuplot expands `command` and
-- macros inside double quotes, never inside single ones. A newline is joined
-- in as a double-quoted "\n", which holds nothing else.
local function quote(s)
  s = tostring(s):gsub("[%z\1-\9\11-\31]", " "):gsub("'", "''")
  return "'" .. s:gsub("\n", "'.\"\\n\".'") .. "'"
end

local function is_data(v)
  if ember.is_tensor(v) then return true end
  return type(v) == "table" and getmetatable(v) == nil and v[1] ~= nil
end

-- Data as a contiguous float64 CPU tensor of its own (a copy: later changes
-- to v do not change the figure).
local function to_f64(v, op, what)
  if ember.is_tensor(v) then
    return v:detach():to("cpu"):double():contiguous():clone()
  end
  if type(v) ~= "table" then
    error(string.format("%s: %s: expected a tensor or a table of numbers, got %s", op, what, type(v)), 0)
  end
  for i = 1, #v do
    if type(v[i]) ~= "number" then
      error(string.format("%s: %s: element %d is a %s, expected a number", op, what, i, type(v[i])), 0)
    end
  end
  if #v == 0 then error(string.format("%s: %s: no values", op, what), 0) end
  return ember.tensor(v, {dtype = "float64"})
end

local function shape_str(t)
  local s = {}
  for i = 1, t:dim() do s[i] = tostring(t:size(i)) end
  return "[" .. table.concat(s, ", ") .. "]"
end

local function check_options(opts, op)
  if opts ~= nil and type(opts) ~= "table" then
    error(string.format("%s: options: expected a table, got %s", op, type(opts)), 0)
  end
  return opts or {}
end

local function write_inline(text)
  if M.config.write then return M.config.write(text) end
  io.stdout:write(text)
  io.stdout:flush()
end

local function use_color()
  if M.config.color ~= nil then return M.config.color end
  local nc = os.getenv("NO_COLOR")
  return ember.isatty(1) and (nc == nil or nc == "") and os.getenv("TERM") ~= "dumb"
end

-- The terminal's size in characters: the tty, else $COLUMNS/$LINES, else 80x24.
local function terminal_chars()
  local cols, rows = C.terminal_size()
  cols = cols or tonumber(os.getenv("COLUMNS") or "") or 80
  rows = rows or tonumber(os.getenv("LINES") or "") or 24
  return cols, rows
end

-- ---- the gnuplot process --------------------------------------------------------------

local sync_count = 0

local function gnuplot_program()
  return M.config.gnuplot or os.getenv("EMBER_GNUPLOT") or "gnuplot"
end

local function start_gnuplot(op)
  local prog = gnuplot_program()
  local proc, err, errno = C.spawn{prog}
  if not proc then
    if errno == 2 then   -- ENOENT
      error(string.format("%s: gnuplot not found (%s); %s", op, prog, PACKAGE_HINT), 0)
    end
    error(string.format("%s: cannot start gnuplot: %s", op, err), 0)
  end
  return proc
end

-- gnuplot's error message in its stderr text, or nil; warnings go to `warnings`.
local function parse_errors(text, warnings)
  local command, message
  for line in text:gmatch("[^\n]+") do
    local cmd = line:match("^gnuplot> (.*)$")
    if cmd then command = cmd end
    local msg = line:match("line %d+: (.*)$")
    if msg then
      if msg:match("^warning:") then
        warnings[#warnings + 1] = msg
      elseif not message then
        message = msg
      end
    elseif line:match("^%s*warning: ") then
      warnings[#warnings + 1] = line:match("^%s*(.*)$")
    end
  end
  if message and command then message = message .. " (in: " .. command .. ")" end
  return message
end

-- The holders (figures) with a running gnuplot, weakly, with when each was
-- last used. Starting one more than config.max_processes stops the least
-- recently used one, but never a window's (that would close the window): a
-- shell session that draws a hundred one-call plots does not keep a hundred
-- gnuplots. A stopped figure starts a new gnuplot at its next drawing.
local running = setmetatable({}, {__mode = "k"})
local use_count = 0

local function stop_gnuplot(holder)
  if holder.proc then holder.proc:close() end
  holder.proc = nil
  running[holder] = nil
end

local function make_room()
  local n, oldest, oldest_use = 0, nil, math.huge
  for h, used in pairs(running) do
    if h.proc then
      n = n + 1
      if h.last_target ~= "window" and used < oldest_use then oldest, oldest_use = h, used end
    else
      running[h] = nil
    end
  end
  if n >= M.config.max_processes and oldest then stop_gnuplot(oldest) end
end

-- Runs a script in the holder's gnuplot (started when there is none, or
-- when the last one died) and returns its stdout. gnuplot's errors raise.
local function run_gnuplot(holder, script, op)
  local proc = holder.proc
  if proc and not proc:alive() then
    stop_gnuplot(holder)
    proc = nil
  end
  if not proc then
    make_room()
    proc = start_gnuplot(op)
    holder.proc = proc
  end
  use_count = use_count + 1
  running[holder] = use_count
  sync_count = sync_count + 1
  local marker = "ember-plot-sync-" .. sync_count
  local ms = M.config.timeout * 1000
  local tail = string.format("\nset print '-'\nprint %s\nset print\nprint %s\n", quote(marker), quote(marker))
  local ok, why = proc:send(script .. tail, ms)
  local out, err
  if ok then
    local a, b, _, d = proc:wait_for(marker, ms)
    if a then out, err = a, b else why, err = b, d end
  end
  if not out then
    local pid = proc:pid()
    stop_gnuplot(holder)
    if why == "interrupted" then error("interrupted!", 0) end
    if why == "timeout" then
      why = string.format("did not answer within %g s and was stopped", M.config.timeout)
    end
    local detail = err and err:match("line %d+: ([^\n]*)")
    error(string.format("%s: gnuplot (pid %d) %s%s; the next drawing starts a new one", op, pid, why,
                        detail and (" after: " .. detail) or ""), 0)
  end
  local warnings = {}
  local message = parse_errors(err, warnings)
  for _, w in ipairs(warnings) do io.stderr:write(op, ": gnuplot ", w, "\n") end
  if message then error(op .. ": gnuplot: " .. message, 0) end
  return out
end

-- The terminals gnuplot has (a set of names), asked once per gnuplot program.
local terminals = {}
function M.terminals()
  local prog = gnuplot_program()
  if not terminals[prog] then
    local holder = {}
    local out = run_gnuplot(holder, "set print '-'\nprint GPVAL_TERMINALS\nset print", "plot.terminals")
    stop_gnuplot(holder)
    local set = {}
    for name in out:gmatch("%S+") do set[name] = true end
    terminals[prog] = set
  end
  return terminals[prog]
end

-- Terminals known to draw sixel images, by the variables they set. Others
-- (xterm -ti vt340, Konsole, VS Code with a setting) are asked for with
-- plot.config.terminal = "sixel" or EMBER_PLOT_TERMINAL=sixel.
local function sixel_terminal()
  local term, prog = os.getenv("TERM") or "", os.getenv("TERM_PROGRAM") or ""
  return term:match("^foot") or term:match("^mlterm") or term:match("^yaft") or term:match("^contour")
         or prog == "WezTerm" or prog == "mlterm"
end

local WINDOW_TERMINALS = {"qt", "wxt", "x11", "aqua"}

-- The inline output: {kind = "dumb"|"sixel"|"window"|"custom", spec = terminal line}.
local function inline_target(fig_size)
  local want = M.config.terminal or os.getenv("EMBER_PLOT_TERMINAL")
  if want == "" then want = nil end
  if want == nil then
    want = (ember.isatty(1) and sixel_terminal() and M.terminals().sixelgd) and "sixel" or "dumb"
  end
  local size = fig_size or M.config.size
  if want == "dumb" then
    local w, h
    if size then
      w, h = size[1], size[2]
    else
      local cols, rows = terminal_chars()
      w, h = cols, math.max(10, math.min(rows - 3, 40))
    end
    return {kind = "dumb", w = w, h = h, color = use_color()}
  elseif want == "sixel" then
    if not M.terminals().sixelgd then error("plot: this gnuplot has no sixelgd terminal", 0) end
    size = size or {640, 400}
    return {kind = "sixel", width = size[1],
            spec = string.format("sixelgd size %d,%d truecolor", size[1], size[2])}
  elseif want == "window" then
    for _, t in ipairs(WINDOW_TERMINALS) do
      if M.terminals()[t] then return {kind = "window", spec = t, width = 1920} end
    end
    error("plot: this gnuplot has no window terminal (gnuplot-nox has none: install gnuplot-qt)", 0)
  end
  return {kind = "custom", spec = want}
end

-- ---- figures --------------------------------------------------------------------------

local Figure = {}
Figure.__index = Figure
M.Figure = Figure

-- The options each call takes: an unknown name is an error (a typo such as
-- {xlable = "step"} would otherwise be lost without a word).
local FIGURE_OPTIONS = {"title", "xlabel", "ylabel", "logx", "logy", "xrange", "yrange", "grid",
                        "legend", "size", "decimate"}
local CALL_OPTIONS = {
  figure = {},
  line = {"show", "label", "labels", "with", "color", "width"},
  hist = {"show", "bins", "range", "density", "label", "color"},
  image = {"show", "palette", "colorbar", "label"},
  live = {"interval", "smooth", "raw", "inline", "inplace"},
}
CALL_OPTIONS.scatter = CALL_OPTIONS.line

local function check_keys(opts, op, kind, with_figure)
  local known = {}
  for _, k in ipairs(CALL_OPTIONS[kind]) do known[k] = true end
  if with_figure then for _, k in ipairs(FIGURE_OPTIONS) do known[k] = true end end
  for k in pairs(opts) do
    if not known[k] then
      local names = {}
      for n in pairs(known) do names[#names + 1] = n end
      table.sort(names)
      error(string.format("%s: unknown option %s (known: %s)", op, tostring(k), table.concat(names, ", ")), 0)
    end
  end
end

-- A string passed to gnuplot that must stay one command (palette: no ';' or
-- newline) or one clause of the plot command (with: no ',' either).
local function check_clause(v, op, name, comma_ok)
  if v ~= nil and (type(v) ~= "string" or v:find(comma_ok and "[\n;]" or "[\n;,]")) then
    error(string.format("%s: option %s: expected a string without %s", op, name,
                        comma_ok and "';' or newlines" or "',', ';' or newlines"), 0)
  end
  return v
end

local function check_color(color, op)
  if color ~= nil and type(color) ~= "string" then
    error(op .. ": option color: expected a string such as \"red\" or \"#ff8800\"", 0)
  end
end

-- {width, height}: characters for text, pixels (inches for PDF) otherwise
local function check_size(size, op)
  if size ~= nil and (type(size) ~= "table" or type(size[1]) ~= "number" or type(size[2]) ~= "number"
                      or size[1] <= 0 or size[2] <= 0) then
    error(op .. ": option size: expected {width, height} (positive numbers)", 0)
  end
  return size
end

local function check_legend(pos, op)
  if pos ~= nil and pos ~= false and type(pos) ~= "string" then
    error(op .. ": expected a position such as \"top left\", or false", 0)
  end
  return pos
end

local function check_range(op, lo, hi)
  if (lo ~= nil and type(lo) ~= "number") or (hi ~= nil and type(hi) ~= "number") then
    error(op .. ": expected numbers (or nil for automatic)", 0)
  end
  if lo and hi and lo >= hi then error(string.format("%s: %g >= %g", op, lo, hi), 0) end
  return {lo, hi}
end

local function check_figure_options(opts, op)
  local out = {}
  for _, k in ipairs{"title", "xlabel", "ylabel"} do
    local v = opts[k]
    if v ~= nil and type(v) ~= "string" and type(v) ~= "number" then
      error(string.format("%s: option %s: expected a string, got %s", op, k, type(v)), 0)
    end
    out[k] = v
  end
  for _, k in ipairs{"logx", "logy", "grid", "decimate"} do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(string.format("%s: option %s: expected a boolean, got %s", op, k, type(opts[k])), 0)
    end
    out[k] = opts[k]
  end
  for _, k in ipairs{"xrange", "yrange"} do
    local r = opts[k]
    if r ~= nil then
      if type(r) ~= "table" then error(string.format("%s: option %s: expected {lo, hi}", op, k), 0) end
      out[k] = check_range(op .. ": option " .. k, r[1], r[2])
    end
  end
  out.legend = check_legend(opts.legend, op .. ": option legend")
  out.size = check_size(opts.size, op)
  return out
end

local figure_count = 0

-- A figure from a call's options: those of the figure and those of `kind`.
local function new_figure(opts, op, kind)
  opts = check_options(opts, op)
  check_keys(opts, op, kind, true)
  figure_count = figure_count + 1
  -- data files are <dir>/<first_file..files>.bin
  return setmetatable({id = figure_count, series = {}, settings = {}, files = 0, first_file = 1,
                       opts = check_figure_options(opts, op)}, Figure)
end

-- plot.figure(opts) -> an empty figure
function M.figure(opts) return new_figure(opts, "plot.figure", "figure") end

local function check_open(fig, op)
  if getmetatable(fig) ~= Figure then error(op .. ": expected a figure (call it as fig:" ..
                                            op:match("[%w_]+$") .. "(...))", 0) end
  if fig.closed then error(op .. ": the figure was closed", 0) end
end

-- A new data file in the figure's folder, holding the columns as records.
local function data_file(fig, cols)
  if not fig.dir then
    local tmp = os.getenv("TMPDIR")
    if not tmp or tmp == "" then tmp = "/tmp" end
    fig.dir = C.mkdtemp(tmp .. "/ember-plot-XXXXXX")
  end
  fig.files = fig.files + 1
  local path = string.format("%s/%d.bin", fig.dir, fig.files)
  C.write_data(path, cols)
  return path
end

local function add_series(fig, s)
  s.files = {}   -- data files written for drawings, by decimation (0: all points)
  fig.series[#fig.series + 1] = s
  return fig
end

-- The data file of a series for a picture `width` pixels (or characters)
-- wide, and its number of points. A dense line (more than 8 points per
-- column, x sorted) is cut to what the picture can show (C.decimate: each
-- slice's first, lowest, highest and last points), except where the figure
-- zooms or bends the x axis (xrange, logx, raw settings of either), or
-- says decimate = false.
local function series_file(fig, s, width)
  local key = 0
  local o = fig.opts
  if s.kind == "line" and (s.with == nil or s.with == "lines") and width and s.n > 8 * width
     and o.decimate ~= false and not o.logx and not o.xrange then
    key = 4 * width
    for _, cmd in ipairs(fig.settings) do
      if cmd:find("range") or cmd:find("log") then key = 0 end
    end
  end
  local f = s.files[key]
  if not f then
    local cols = s.cols
    if key > 0 then
      local dx, dy = C.decimate(cols[1], cols[2], key)
      if dx then cols = {dx, dy} else key = 0 end   -- x not sorted: every point
    end
    f = s.files[key] or {data_file(fig, cols), cols[1]:numel()}
    s.files[key] = f
  end
  return f[1], f[2]
end

-- The series of a line or scatter call: y is 1-D, 2-D (a series per column)
-- or a list of 1-D series; x is nil (1..n) or 1-D.
local function xy_series(fig, op, loose, a, b, c, style)
  local x, y, opts
  if b ~= nil and is_data(b) then x, y, opts = a, b, c else y, opts = a, b end
  opts = check_options(opts, op)
  check_keys(opts, op, style, loose)
  if y == nil then error(op .. ": expected data (a tensor or a table of numbers)", 0) end
  local ys = {}
  if type(y) == "table" and not ember.is_tensor(y) and type(y[1]) ~= "number" then
    for i, yi in ipairs(y) do ys[i] = to_f64(yi, op, "series " .. i) end
  else
    local t = to_f64(y, op, "y")
    if t:dim() == 2 then
      for j = 1, t:size(2) do ys[j] = t:select(2, j):contiguous() end
    elseif t:dim() == 1 then
      ys[1] = t
    else
      error(string.format("%s: y must be 1-D (or 2-D: one series per column), got %s", op, shape_str(t)), 0)
    end
  end
  local xt = x ~= nil and to_f64(x, op, "x") or nil
  if xt and xt:dim() ~= 1 then
    error(string.format("%s: x must be 1-D, got %s", op, shape_str(xt)), 0)
  end
  local labels = opts.labels or {}
  if opts.label ~= nil then labels = {opts.label} end
  if type(labels) ~= "table" then error(op .. ": option labels: expected a list of strings", 0) end
  check_clause(opts.with, op, "with")
  if opts.width ~= nil and (type(opts.width) ~= "number" or opts.width <= 0) then
    error(op .. ": option width: expected a positive number", 0)
  end
  check_color(opts.color, op)
  for i, yi in ipairs(ys) do
    if yi:dim() ~= 1 then
      error(string.format("%s: series %d must be 1-D, got %s", op, i, shape_str(yi)), 0)
    end
    local n = yi:size(1)
    if n == 0 then error(string.format("%s: series %d has no points", op, i), 0) end
    local xi = xt or ember.arange(1, n + 1, {dtype = "float64"})
    if xi:size(1) ~= n then
      error(string.format("%s: x has %d points, y%s has %d", op, xi:size(1),
                          #ys > 1 and (" series " .. i) or "", n), 0)
    end
    add_series(fig, {kind = style, n = n, cols = {xi, yi},
                     title = labels[i], with = opts.with, color = opts.color, width = opts.width})
  end
  return fig
end

-- fig:line([x,] y [, opts]): lines; opts: label/labels, with ("lines",
-- "linespoints", "points", "steps", ...), color, width
-- What each kind of series does with a call's arguments; op names the call
-- in errors (plot.line or plot.Figure:line).
local add = {}
-- loose: the call's options may hold figure options too (plot.line(y, {title = ...})).
function add.line(fig, op, loose, a, b, c) return xy_series(fig, op, loose, a, b, c, "line") end
function add.scatter(fig, op, loose, a, b, c) return xy_series(fig, op, loose, a, b, c, "scatter") end

function Figure:line(a, b, c)
  check_open(self, "plot.Figure:line")
  return add.line(self, "plot.Figure:line", false, a, b, c)
end

-- fig:scatter(x, y [, opts]) (or fig:scatter(y)): points
function Figure:scatter(a, b, c)
  check_open(self, "plot.Figure:scatter")
  return add.scatter(self, "plot.Figure:scatter", false, a, b, c)
end

-- Counts of t's values in `bins` equal bins over [lo, hi] (default: t's min
-- and max); values outside are left out, hi goes into the last bin (histc).
local function histogram(t, bins, lo, hi)
  local flat = t:view(-1)
  lo = lo or flat:min():item()
  hi = hi or flat:max():item()
  if hi == lo then lo, hi = lo - 0.5, hi + 0.5 end
  local inside = flat:masked_select(flat:ge(lo):logical_and(flat:le(hi)))
  local idx = ((inside - lo) * (bins / (hi - lo))):floor():clamp(0, bins - 1):long() + 1
  local counts = ember.zeros(bins, {dtype = "float64"}):index_add(1, idx, ember.ones(idx:size(1), {dtype = "float64"}))
  local width = (hi - lo) / bins
  local centers = ember.arange(bins, {dtype = "float64"}) * width + (lo + width / 2)
  return centers, counts, width
end
M._histogram = histogram   -- for the tests

-- fig:hist(t [, bins] [, opts]): a histogram of all of t's values; opts:
-- bins (default 10), range {lo, hi}, density (areas sum to 1), label, color
function add.hist(fig, op, loose, t, bins, opts)
  if type(bins) == "table" and opts == nil then bins, opts = nil, bins end
  opts = check_options(opts, op)
  check_keys(opts, op, "hist", loose)
  bins = bins or opts.bins or 10
  if type(bins) ~= "number" or bins ~= math.floor(bins) or bins < 1 then
    error(string.format("%s: bins must be a positive integer, got %s", op, tostring(bins)), 0)
  end
  bins = math.tointeger(bins)
  local v = to_f64(t, op, "t")
  if v:numel() == 0 then error(op .. ": no values", 0) end
  check_color(opts.color, op)
  local range = opts.range
  if range ~= nil and (type(range) ~= "table" or type(range[1]) ~= "number" or type(range[2]) ~= "number"
                       or range[2] <= range[1]) then
    error(op .. ": range must be {lo, hi} with lo < hi", 0)
  end
  local centers, counts, width = histogram(v, bins, range and range[1], range and range[2])
  if opts.density then counts = counts / (counts:sum():item() * width) end
  local widths = ember.full({bins}, width, {dtype = "float64"})
  return add_series(fig, {kind = "hist", n = bins, cols = {centers, counts, widths},
                          title = opts.label, color = opts.color})
end

function Figure:hist(t, bins, opts)
  check_open(self, "plot.Figure:hist")
  return add.hist(self, "plot.Figure:hist", false, t, bins, opts)
end

-- fig:image(t [, opts]): a 2-D tensor as an image, row 1 at the top; opts:
-- palette ("gray" (default), "heat", or a gnuplot palette such as
-- "rgbformulae 33,13,10"), colorbar (default true)
function add.image(fig, op, loose, t, opts)
  opts = check_options(opts, op)
  check_keys(opts, op, "image", loose)
  check_clause(opts.palette, op, "palette", true)
  local v = to_f64(t, op, "t")
  if v:dim() == 3 and v:size(1) == 1 then v = v:select(1, 1):contiguous() end
  if v:dim() ~= 2 then
    error(string.format("%s: expected a 2-D tensor (or [1, h, w]), got %s", op, shape_str(v)), 0)
  end
  local h, w = v:size(1), v:size(2)
  if h == 0 or w == 0 then error(string.format("%s: the image is empty: %s", op, shape_str(v)), 0) end
  return add_series(fig, {kind = "image", w = w, h = h, cols = {v},
                          palette = opts.palette or "gray", colorbar = opts.colorbar ~= false,
                          title = opts.label})
end

function Figure:image(t, opts)
  check_open(self, "plot.Figure:image")
  return add.image(self, "plot.Figure:image", false, t, opts)
end

-- Figure settings; each returns the figure, to be chained. They change what
-- the next drawing shows.
local function set_text(fig, key, s)
  local op = "plot.Figure:" .. key
  check_open(fig, op)
  if s ~= nil and type(s) ~= "string" and type(s) ~= "number" then
    error(string.format("%s: expected a string (or nil to remove it), got %s", op, type(s)), 0)
  end
  fig.opts[key] = s
  return fig
end
function Figure:title(s) return set_text(self, "title", s) end
function Figure:xlabel(s) return set_text(self, "xlabel", s) end
function Figure:ylabel(s) return set_text(self, "ylabel", s) end
function Figure:grid(on) check_open(self, "plot.Figure:grid"); self.opts.grid = on ~= false; return self end

function Figure:xrange(lo, hi)
  check_open(self, "plot.Figure:xrange")
  self.opts.xrange = check_range("plot.Figure:xrange", lo, hi)
  return self
end

function Figure:yrange(lo, hi)
  check_open(self, "plot.Figure:yrange")
  self.opts.yrange = check_range("plot.Figure:yrange", lo, hi)
  return self
end

-- fig:logscale("x" | "y" | "xy" [, on])
function Figure:logscale(axes, on)
  check_open(self, "plot.Figure:logscale")
  if type(axes) ~= "string" or not axes:match("^[xy]+$") then
    error("plot.Figure:logscale: axes must be \"x\", \"y\" or \"xy\"", 0)
  end
  for a in axes:gmatch(".") do self.opts["log" .. a] = on ~= false end
  return self
end

-- fig:legend(position | false): "top right" (default), "bottom left", ... or false to hide
function Figure:legend(pos)
  check_open(self, "plot.Figure:legend")
  self.opts.legend = check_legend(pos, "plot.Figure:legend")
  return self
end

-- fig:set(command): any gnuplot `set` command, kept for every drawing
-- (fig:set("key box"), fig:set("xtics 0.5")). It is tried at once, so a bad
-- one raises here with gnuplot's message and is not kept.
function Figure:set(command)
  check_open(self, "plot.Figure:set")
  if type(command) ~= "string" or command:find("[\n;]") then
    error("plot.Figure:set: expected one gnuplot set command (a string without ';' or newlines)", 0)
  end
  run_gnuplot(self, "reset\nset " .. command, "plot.Figure:set")
  self.settings[#self.settings + 1] = "set " .. command
  return self
end

local function range_str(r)
  local function b(v) return v and string.format("%.17g", v) or "*" end
  return "[" .. b(r[1]) .. ":" .. b(r[2]) .. "]"
end

local PALETTES = {gray = "gray", grey = "gray", heat = "rgbformulae 21,22,23"}

-- The gnuplot lines that draw the figure on an already chosen terminal,
-- `width` pixels (characters) wide.
local function figure_script(fig, op, width)
  if #fig.series == 0 then error(op .. ": the figure has nothing to draw (add a line, scatter, hist or image)", 0) end
  local o, lines = fig.opts, {}
  local function add(s) lines[#lines + 1] = s end
  if o.title then add("set title " .. quote(o.title)) end
  if o.xlabel then add("set xlabel " .. quote(o.xlabel)) end
  if o.ylabel then add("set ylabel " .. quote(o.ylabel)) end
  if o.logx then add("set logscale x") end
  if o.logy then add("set logscale y") end
  if o.grid then add("set grid") end
  -- opaque: the key is drawn over the curves, so a curve never hides a title
  if o.legend == false then add("unset key")
  else add("set key opaque " .. (type(o.legend) == "string" and o.legend:gsub("[^%w ]", "") or "")) end
  local image
  for _, s in ipairs(fig.series) do if s.kind == "image" then image = s end end
  if image then
    add(string.format("set xrange [0.5:%d.5]", image.w))
    add(string.format("set yrange [%d.5:0.5]", image.h))
    add("set size ratio -1")
    add("set palette " .. (PALETTES[image.palette] or image.palette))
    if not image.colorbar then add("unset colorbox") end
  end
  if o.xrange then add("set xrange " .. range_str(o.xrange)) end
  if o.yrange then add("set yrange " .. range_str(o.yrange)) end
  for _, s in ipairs(fig.series) do
    if s.kind == "hist" then add("set style fill solid 0.5 border"); break end
  end
  for _, s in ipairs(fig.settings) do add(s) end
  local parts = {}
  for _, s in ipairs(fig.series) do
    local p
    if s.kind == "image" then
      p = string.format("%s binary array=(%d,%d) format='%%float64' origin=(1,1) with image",
                        quote((series_file(fig, s))), s.w, s.h)
    elseif s.kind == "hist" then
      p = string.format("%s binary record=(%d) format='%%float64%%float64%%float64' using 1:2:3 with boxes",
                        quote((series_file(fig, s))), s.n)
    else
      local with = s.with or (s.kind == "scatter" and "points pt 7 ps 0.6" or "lines")
      local file, n = series_file(fig, s, width)
      p = string.format("%s binary record=(%d) format='%%float64%%float64' using 1:2 with %s",
                        quote(file), n, with)
      if s.width then p = p .. string.format(" lw %g", s.width) end
    end
    if s.color then p = p .. " lc rgb " .. quote(s.color) end
    p = p .. (s.title and (" title " .. quote(s.title)) or " notitle")
    parts[#parts + 1] = p
  end
  add("plot " .. table.concat(parts, ", \\\n     "))
  return table.concat(lines, "\n")
end

-- Draws the figure with a terminal line; output: a file path, or nil for
-- stdout. Returns what gnuplot wrote to stdout.
local function draw(fig, spec, output, op, width)
  local script = {"reset", "set terminal " .. spec, "set termoption noenhanced"}
  script[#script + 1] = output and ("set output " .. quote(output)) or "set output"
  script[#script + 1] = figure_script(fig, op, width)
  script[#script + 1] = "unset output"
  return run_gnuplot(fig, table.concat(script, "\n"), op)
end

-- A grey-level picture in characters, for images on a text terminal without
-- colours (where gnuplot's dumb terminal draws no image): each pixel is two
-- characters from dark " " to bright "@", scaled down to fit `cols`.
local RAMP = " .:-=+*#%@"
local function ascii_image(s, cols, title)
  local v = s.cols[1]
  local lo, hi = v:min():item(), v:max():item()
  local step = math.max(1, math.ceil(s.w * 2 / math.max(cols - 1, 2)))
  local out = {}
  if title then out[1] = title end
  local rows = v:tolist()
  for r = 1, s.h, step do
    local line = {}
    for c = 1, s.w, step do
      local x = rows[r][c]
      local k = hi > lo and math.floor((x - lo) / (hi - lo) * (#RAMP - 1) + 0.5) or 0
      line[#line + 1] = RAMP:sub(k + 1, k + 1):rep(2)
    end
    out[#out + 1] = table.concat(line)
  end
  return table.concat(out, "\n") .. "\n"
end

-- The figure as a text chart (gnuplot's dumb terminal) w x h characters.
-- Lines are drawn from every point: text is cheap to draw, and thinning
-- them would move a few characters. An image alone without colours is drawn
-- in grey-level characters, since dumb then draws nothing.
local function text_chart(fig, w, h, color, op)
  local only = #fig.series == 1 and fig.series[1]
  if only and only.kind == "image" and not color then return ascii_image(only, w, fig.opts.title) end
  local spec = string.format("dumb size %d,%d %s", w, h, color and "ansi256" or "mono")
  return (draw(fig, spec, nil, op, nil):gsub("^\f", ""))
end

-- fig:show(): draws the figure inline (text or sixel) or in a window, as
-- plot.config.terminal says. Returns the figure.
function Figure:show()
  check_open(self, "plot.Figure:show")
  if M.config.display then
    M.config.display(self)
    self.last_target, self.last_lines = "display", 0
    return self
  end
  local target = inline_target(self.opts.size)
  local text
  if target.kind == "dumb" then
    text = text_chart(self, target.w, target.h, target.color, "plot.Figure:show")
  else
    text = draw(self, target.spec, nil, "plot.Figure:show", target.width)
  end
  self.last_target = target.kind
  self.last_lines = select(2, text:gsub("\n", "\n"))
  if text ~= "" then write_inline(text) end
  return self
end

-- Terminals for files, by extension; size defaults (pixels; PDF in inches).
local FILE_TERMINALS = {
  png = {"pngcairo", "png", size = "%d,%d", default = {800, 600}},
  svg = {"svg", size = "%d,%d", default = {800, 600}},
  pdf = {"pdfcairo", size = "%gin,%gin", default = {6, 4.5}, points_per_unit = 72},
  txt = {"dumb", default = {80, 25}},
}

-- fig:save(path [, opts]): writes PNG, SVG, PDF or text, by the path's
-- extension; opts.size {w, h} in pixels (inches for PDF, characters for .txt).
function Figure:save(path, opts)
  local op = "plot.Figure:save"
  check_open(self, op)
  opts = check_options(opts, op)
  if type(path) ~= "string" or path == "" then error(op .. ": expected a file name", 0) end
  require("ember.errors").check_path(op, "argument 1", path)
  local ext = (path:match("%.(%w+)$") or ""):lower()
  local kind = FILE_TERMINALS[ext]
  if not kind then
    error(string.format("%s: %s: unknown extension; use .png, .svg, .pdf or .txt", op, path), 0)
  end
  local size = check_size(opts.size, op) or kind.default
  -- as ember.save writes (engine/savefile.h): links followed, a temporary
  -- file beside the target renamed over it once whole (a failed drawing
  -- leaves the old file, or none), a device or FIFO written through
  local out = ember._savefile(path, op)
  local ok, err = pcall(function()
    if ext == "txt" then
      local text = text_chart(self, math.floor(size[1]), math.floor(size[2]), false, op)
      local f, ferr = io.open(out:path(), "wb")
      if not f then error(op .. ": " .. ferr, 0) end
      local wok, werr = f:write(text)
      if wok then wok, werr = f:close() else f:close() end
      if not wok then error(op .. ": " .. path .. ": " .. tostring(werr), 0) end
      return
    end
    local name
    for _, t in ipairs(kind) do if M.terminals()[t] then name = t; break end end
    if not name then error(op .. ": this gnuplot cannot write ." .. ext .. " files", 0) end
    local spec = name .. " size " .. string.format(kind.size, size[1], size[2])
    draw(self, spec, out:path(), op, math.ceil(size[1] * (kind.points_per_unit or 1)))
  end)
  if not ok then
    out:abort()
    error(err, 0)
  end
  out:commit()
  return self
end

-- Removes the figure's data files up to number `last`.
local function remove_files(fig, last)
  for i = fig.first_file, last do os.remove(string.format("%s/%d.bin", fig.dir, i)) end
  fig.first_file = math.max(fig.first_file, last + 1)
end

-- fig:close(): stops the figure's gnuplot and removes its data files. Also
-- done when the figure is collected, or leaves a `local fig <close>` scope.
function Figure:close()
  if self.closed then return end
  self.closed = true
  stop_gnuplot(self)
  if self.dir then
    remove_files(self, self.files)
    os.remove(self.dir)
    self.dir = nil
  end
end
Figure.__gc = Figure.close
Figure.__close = Figure.close

function Figure:__tostring()
  local kinds = {}
  for _, s in ipairs(self.series) do kinds[#kinds + 1] = s.kind end
  return string.format("figure %d (%s%s)%s", self.id, #kinds > 0 and table.concat(kinds, ", ") or "empty",
                       self.opts.title and (": " .. tostring(self.opts.title)) or "",
                       self.closed and " closed" or "")
end

-- fig:gnuplot_pid(): the pid of the figure's gnuplot, or nil before its first drawing
function Figure:gnuplot_pid()
  return self.proc and self.proc:pid() or nil
end

-- ---- one-call plots -------------------------------------------------------------------

-- A figure made of one call's series, shown unless opts.show == false. The
-- options table (the last table argument that is not data) holds both the
-- figure's options and the series'.
local function quick(kind, op, ...)
  local opts = {}
  for i = select("#", ...), 1, -1 do
    local v = select(i, ...)
    if type(v) == "table" and not is_data(v) then opts = v; break end
  end
  local fig = new_figure(opts, op, kind)
  local ok, err = pcall(add[kind], fig, op, true, ...)
  if ok and opts.show ~= false then ok, err = pcall(fig.show, fig) end
  if not ok then
    fig:close()
    error(err, 0)
  end
  return fig
end

-- plot.line([x,] y [, opts]) -> figure, shown at once (opts.show = false:
-- not). opts: title, xlabel, ylabel, logx, logy, xrange, yrange, grid,
-- legend, size, label/labels, with, color, width
function M.line(...) return quick("line", "plot.line", ...) end
-- plot.plot: plot.line under matplotlib's (plt.plot) and Lua Torch's (gnuplot.plot) name
function M.plot(...) return quick("line", "plot.plot", ...) end
function M.scatter(...) return quick("scatter", "plot.scatter", ...) end
function M.hist(...) return quick("hist", "plot.hist", ...) end
function M.image(...) return quick("image", "plot.image", ...) end

-- ---- live curves ----------------------------------------------------------------------

local Live = {}
Live.__index = Live
M.Live = Live

-- The smoothed values of a series: EMA (debiased, as TensorBoard's slider)
-- or a trailing moving average.
local function smooth_values(values, smooth)
  if not smooth then return values end
  local out = {}
  if smooth.ema then
    local a, s, w = smooth.ema, 0, 0
    for i, v in ipairs(values) do
      s = a * s + (1 - a) * v
      w = a * w + (1 - a)
      out[i] = s / w
    end
  else
    local n, sum = smooth.window, 0
    for i, v in ipairs(values) do
      sum = sum + v
      if i > n then sum = sum - values[i - n] end
      out[i] = sum / math.min(i, n)
    end
  end
  return out
end
M._smooth = smooth_values   -- for the tests

local function check_smooth(s)
  if s == nil or s == false then return nil end
  if type(s) == "number" then s = {ema = s} end
  if type(s) ~= "table" then error("plot.live: smooth: expected a number (EMA factor) or {ema = a} or {window = n}", 0) end
  if s.ema ~= nil then
    if type(s.ema) ~= "number" or s.ema < 0 or s.ema >= 1 then
      error("plot.live: smooth.ema must be in [0, 1)", 0)
    end
    return {ema = s.ema}
  end
  if math.type(s.window) ~= "integer" or s.window < 1 then
    error("plot.live: smooth.window must be a positive integer", 0)
  end
  return {window = s.window}
end

-- plot.live(opts) -> a live plot. opts: the figure options (title, xlabel,
-- ylabel, logy, ...), interval (ms between inline redraws, default 500),
-- smooth (an EMA factor such as 0.9, {ema = a} or {window = n}), raw (also
-- draw the unsmoothed points), inline (default: stdout is a terminal),
-- inplace (redraw over the last drawing, default true).
function M.live(opts)
  local fig = new_figure(opts, "plot.live", "live")
  opts = opts or {}
  local interval = opts.interval or 500
  if type(interval) ~= "number" or interval < 0 then
    error("plot.live: interval must be a number of milliseconds >= 0", 0)
  end
  local live = setmetatable({
    fig = fig, names = {}, data = {}, interval = interval, smooth = check_smooth(opts.smooth),
    raw = opts.raw, inplace = opts.inplace ~= false, redraws = 0, last_draw = -math.huge,
  }, Live)
  if opts.inline == nil then live.inline = ember.isatty(1) else live.inline = opts.inline and true or false end
  if live.fig.opts.xlabel == nil then live.fig.opts.xlabel = "step" end
  return live
end

-- live:add(series, step, value) (or live:add(series, value): step is the
-- series' count + 1). value: a number or a one-element tensor. Redraws
-- inline when `interval` ms have passed since the last drawing.
function Live:add(name, step, value)
  if value == nil then step, value = nil, step end
  if type(name) ~= "string" then error("plot.Live:add: series name: expected a string, got " .. type(name), 0) end
  if ember.is_tensor(value) then value = value:item() end
  if type(value) ~= "number" then
    error("plot.Live:add: value: expected a number or a one-element tensor, got " .. type(value), 0)
  end
  if ember.is_tensor(step) then step = step:item() end
  if step ~= nil and type(step) ~= "number" then
    error("plot.Live:add: step: expected a number, got " .. type(step), 0)
  end
  local d = self.data[name]
  if not d then
    d = {steps = {}, values = {}}
    self.data[name] = d
    self.names[#self.names + 1] = name
  end
  local n = #d.steps + 1
  if step == nil then step = n end
  d.steps[n], d.values[n] = step, value
  if self.inline then
    local now = ember.wall_time() * 1000
    if now - self.last_draw >= self.interval then self:draw() end
  end
  return self
end

-- live:points(series) -> steps, values (the tables kept; do not change them)
function Live:points(name)
  local d = self.data[name]
  if not d then return nil end
  return d.steps, d.values
end

-- The figure's series from the points (smoothed as asked).
local function rebuild(live)
  local fig = live.fig
  if fig.closed then error("plot.Live: the live plot was closed", 0) end
  if #live.names == 0 then error("plot.Live: nothing to draw yet (add points with live:add)", 0) end
  remove_files(fig, fig.files)   -- the data of earlier drawings
  fig.series = {}
  for _, name in ipairs(live.names) do
    local d = live.data[name]
    if live.smooth and live.raw then
      fig:line(d.steps, d.values, {label = name .. " (raw)", with = "dots"})
    end
    local label = name
    if live.smooth then
      label = name .. (live.smooth.ema and string.format(" (EMA %g)", live.smooth.ema)
                       or string.format(" (mean of %d)", live.smooth.window))
    end
    -- a series of a few points (one per epoch) shows its points
    fig:line(d.steps, smooth_values(d.values, live.smooth),
             {label = label, with = #d.steps <= 50 and "linespoints" or "lines"})
  end
end

-- live:draw(): redraws inline now (over the previous drawing when inplace)
function Live:draw()
  rebuild(self)
  local fig = self.fig
  local before = fig.last_lines
  if self.inplace and before and fig.last_target == "dumb" and ember.isatty(1) then
    write_inline(string.format("\27[%dF\27[J", before))   -- up to the last drawing's first line, clear
  end
  fig:show()
  self.redraws = self.redraws + 1
  self.last_draw = ember.wall_time() * 1000
  return self
end

-- live:save(path [, opts]): the whole run to a file (as fig:save)
function Live:save(path, opts)
  if type(path) == "string" then require("ember.errors").check_path("plot.Live:save", "argument 1", path) end
  rebuild(self)
  self.fig:save(path, opts)
  return self
end

function Live:close() self.fig:close() end
Live.__close = Live.close

function Live:__tostring()
  local parts = {}
  for _, name in ipairs(self.names) do parts[#parts + 1] = name .. ": " .. #self.data[name].steps end
  return "live plot (" .. (#parts > 0 and table.concat(parts, ", ") or "empty") .. ")"
end

return M
