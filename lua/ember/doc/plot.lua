-- Docs of ember.plot: plots drawn by gnuplot, inline, in a window or to files, and live
-- training curves (Figure, Live, config). Format: ember/help.lua.
return {
  {
    name = "ember.plot",
    sig = "local plot = ember.plot   -- pre-loaded as plot in the ember shell",
    doc = [=[
Plots drawn by gnuplot (matplotlib's role; Lua Torch's gnuplot package, but gnuplot's
errors come back as Lua errors). gnuplot must be installed (Debian: gnuplot-nox) or
named by $EMBER_GNUPLOT or plot.config.gnuplot.
Outputs: inline in the terminal (a text chart, or a sixel image on terminals that show
them), a window (needs a gnuplot with qt, wxt, x11 or aqua), or files (.png, .svg, .pdf,
.txt) with fig:save. plot.config chooses the inline output, its size and colours.
  plot.line, scatter, hist, image   one call: make a figure, draw it inline, return it
  plot.figure(opts)                 an empty Figure: add series, set titles, ranges,
                                    then fig:show() and/or fig:save(path)
  plot.live(opts)                   a Live plot: curves fed point by point (live:add)
                                    while training, redrawn inline now and then
  plot.terminals()                  the gnuplot terminals available
Data are tensors (any device and dtype; copied as float64 when added, so later changes
do not show) or Lua tables of numbers, sent to gnuplot as binary files. Each figure has
its own gnuplot process, started by its first drawing and kept until fig:close() or
garbage collection (at most config.max_processes at once: the least recently used is
stopped); every drawing sends the whole figure, so a figure whose gnuplot was stopped
or died draws again with a new one. Pictures of dense lines (x sorted, far more points
than pixel columns) are drawn from each slice's first, lowest, highest and last points:
a 1M-point line to PNG in about 0.1 s. Unknown option names raise.
Errors are Lua errors named by the call: gnuplot's own messages read
"plot.Figure:show: gnuplot: <message> (in: <command>)"; a missing gnuplot says how to
install it; gnuplot's warnings are printed to stderr. A gnuplot that does not answer
within config.timeout seconds, or dies, is stopped and reported; Ctrl-C raises
"interrupted!". Neither hangs the caller.]=],
    example = [=[
local plot = ember.plot
local x = ember.linspace(0, 6.28, 100)
local fig = plot.line(x, {x:sin(), x:cos()}, {labels = {"sin", "cos"}, title = "waves"})
fig:close()
local h = plot.hist(ember.randn(1000), 20, {title = "randn"})
h:close()]=],
  },
  {
    name = "ember.plot.config",
    sig = "plot.config = {terminal = nil, gnuplot = nil, timeout = 30,\n"
       .. "               max_processes = 8, color = nil, size = nil, write = nil,\n"
       .. "               display = nil}",
    doc = [=[
The module's settings; change them in place (plot.config.terminal = "sixel").
  terminal  the inline output of fig:show(): "dumb" (a text chart), "sixel" (an image
            in the terminal; needs gnuplot's sixelgd terminal), "window" (the first of
            gnuplot's qt, wxt, x11, aqua that exists), or any other gnuplot terminal
            line, used as is (its output goes to write). nil: $EMBER_PLOT_TERMINAL,
            else "sixel" when stdout is a terminal known to show sixel images (foot,
            mlterm, yaft, contour, WezTerm) and gnuplot has sixelgd, else "dumb".
  gnuplot   the gnuplot program, searched on PATH (default: $EMBER_GNUPLOT, else
            "gnuplot"); a program name only, no arguments.
  timeout   seconds to wait for gnuplot to take a drawing and answer it; past them
            gnuplot is stopped and the call raises.
  max_processes  how many figures keep a gnuplot running; starting one more stops
            the least recently used (never a window's), which starts a new one when
            it draws again.
  color     colours in text charts: nil (auto: stdout is a terminal, NO_COLOR unset or
            empty, TERM not "dumb"), true or false.
  size      the inline size {w, h}: characters for "dumb" (default: the terminal's
            width, and its height less 3 kept within 10..40; else $COLUMNS, $LINES,
            else 80x24), pixels for "sixel" (default 640x400); a figure's own size
            option comes first. Not used by "window", other terminals or fig:save.
  write     function(text) given the inline output (default: written to io.stdout and
            flushed); set it to capture or silence drawings.
  display   function(fig) that fig:show() (and the one-call plots, live:draw) calls
            instead of drawing inline. The Jupyter kernel (ember --kernel) sets it: the
            figure goes to the notebook as a PNG (pngcairo, 640x480 unless the figure
            has a size in pixels).]=],
    example = [=[
local plot = ember.plot
local terminal, size, write = plot.config.terminal, plot.config.size, plot.config.write
local text
plot.config.terminal, plot.config.size = "dumb", {50, 12}   -- a 50x12 text chart
plot.config.write = function(s) text = s end                -- captured, not printed
plot.line({1, 4, 9, 16}):close()
print(text)
plot.config.terminal, plot.config.size, plot.config.write = terminal, size, write]=],
  },
  {
    name = "ember.plot.terminals",
    sig = "plot.terminals() -> {name = true, ...}",
    doc = [=[
The set of terminals this gnuplot has (its GPVAL_TERMINALS): "dumb", "pngcairo",
"sixelgd", "qt", .... Asked once per gnuplot program (config.gnuplot), from a
short-lived gnuplot, and kept. Raises when gnuplot cannot be started.]=],
    example = [=[
local plot = ember.plot
local t = plot.terminals()
print(t.dumb, t.pngcairo, t.qt)   -- true true nil with Debian's gnuplot-nox]=],
  },
  {
    name = "ember.plot.figure",
    sig = "plot.figure([{title =, xlabel =, ylabel =, logx = false, logy = false,\n"
       .. "              xrange =, yrange =, grid = false, legend =, size =,\n"
       .. "              decimate = true}]) -> figure",
    doc = [=[
An empty Figure, to which fig:line, scatter, hist and image add series; nothing is
drawn (and no gnuplot started) until fig:show() or fig:save(path). The options are the
figure's settings, also settable later by the methods of the same names: title, xlabel,
ylabel (strings), logx, logy, grid (booleans), xrange, yrange ({lo, hi}), legend (a
position such as "bottom left", or false to hide it), size (the inline size {w, h},
before config.size; not used by save), decimate (false: pictures draw every point of
dense lines; see Figure:line). An unknown option or a value of the wrong type raises.
Like matplotlib's plt.figure() plus ax.set_*; close the figure when done (or let it be
collected, or declare it `local fig <close> = plot.figure()`).]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure{title = "loss", xlabel = "epoch", logy = true, grid = true}
fig:line({2.3, 0.9, 0.5, 0.4}, {label = "train"})
fig:line({2.2, 1.0, 0.7, 0.65}, {label = "test"})
fig:show()
print(fig)   -- figure n (line, line: loss)
fig:close()]=],
  },
  {
    name = "ember.plot.line",
    also = {"ember.plot.plot"},
    sig = "plot.line([x,] y [, opts]) -> figure\nplot.plot([x,] y [, opts]) -> figure",
    doc = [=[
A line plot in one call: a new figure with fig:line(x, y, opts), drawn inline at once
(fig:show()) and returned (plt.plot; Lua Torch's gnuplot.plot). opts holds both the
figure's options (title, xlabel, ylabel, logx, logy, xrange, yrange, grid, legend,
size; see plot.figure) and the series' (label, labels, with, color, width; see
Figure:line); show = false only builds the figure; any other name raises. The
returned figure keeps its gnuplot process: close it, or it goes when the figure is
collected or config.max_processes newer figures have drawn. When adding the data or
drawing fails, the figure is closed and the error raised. plot.plot is the same function
under matplotlib's name (its errors say plot.plot).]=],
    example = [=[
local plot = ember.plot
local x = ember.linspace(0, 3, 30)
local fig = plot.line(x, {x, x ^ 2}, {labels = {"x", "x^2"}, title = "powers"})
fig:close()
local quiet = plot.line({3, 1, 2}, {show = false})   -- built, not drawn
quiet:close()]=],
  },
  {
    name = "ember.plot.scatter",
    sig = "plot.scatter(x, y [, opts]) -> figure\nplot.scatter(y [, opts]) -> figure",
    doc = [=[
A scatter plot in one call: fig:scatter(x, y, opts) on a new figure, shown at once and
returned (plt.scatter). Options as plot.line: the figure's, the series' (label, labels,
with, color, width) and show = false. Points are small filled circles unless `with`
says otherwise; y alone is plotted against 1..n.]=],
    example = [=[
local plot = ember.plot
local x = ember.randn(200)
local fig = plot.scatter(x, x * 2 + ember.randn(200) * 0.3, {title = "y = 2x + noise"})
fig:close()]=],
  },
  {
    name = "ember.plot.hist",
    sig = "plot.hist(t [, bins] [, opts]) -> figure",
    doc = [=[
A histogram in one call: fig:hist(t, bins, opts) on a new figure, shown at once and
returned (plt.hist; Lua Torch's gnuplot.hist). opts: the figure's options, the
histogram's (bins, range, density, label, color; see Figure:hist) and show = false.]=],
    example = [=[
local plot = ember.plot
local fig = plot.hist(ember.randn(10000), 40, {title = "randn", density = true})
fig:close()]=],
  },
  {
    name = "ember.plot.image",
    sig = "plot.image(t [, opts]) -> figure",
    doc = [=[
A 2-D tensor as an image in one call: fig:image(t, opts) on a new figure, shown at once
and returned (plt.imshow; Lua Torch's gnuplot.imagesc). opts: the figure's options, the
image's (palette, colorbar, label; see Figure:image) and show = false.]=],
    example = [=[
local plot = ember.plot
local w = ember.randn(8, 16)
local fig = plot.image(w, {palette = "heat", title = "weights"})
fig:close()]=],
  },
  {
    name = "ember.plot.live",
    sig = "plot.live([{interval = 500, smooth = nil, raw = false, inline =,\n"
       .. "            inplace = true, title =, xlabel = \"step\", ...}]) -> live plot",
    doc = [=[
A Live plot: named curves fed one point at a time with live:add(name, step, value),
typically the losses of a training run, redrawn inline while they grow and saved at
the end with live:save(path). Options, besides plot.figure's (xlabel defaults to
"step"):
  interval  at most one inline redraw per interval milliseconds (>= 0; default 500)
  smooth    draws each curve smoothed: a number a in [0, 1) or {ema = a} for an
            exponential moving average debiased like TensorBoard's slider, or
            {window = n} for the mean of the last n points; the legend says which
  raw       with smooth, also draws the unsmoothed points (as dots, "<name> (raw)")
  inline    redraw on live:add (default: when stdout is a terminal)
  inplace   draw each text chart over the previous one (default true; only when the
            last drawing was a "dumb" chart and stdout is a terminal)
Curves of up to 50 points are drawn with their points marked. The points are kept in
Lua tables; every drawing sends them all.]=],
    example = [=[
local plot = ember.plot
local live = plot.live{title = "loss", smooth = 0.9, inline = false}
for step = 1, 100 do
  live:add("train", step, 1 / step + 0.05 * math.random())
  if step % 25 == 0 then live:add("test", step, 1 / step + 0.1) end
end
live:draw()
live:close()]=],
  },

  -- ---- Figure ---------------------------------------------------------------------
  {
    name = "ember.plot.Figure",
    sig = "plot.figure([opts]) -> fig   -- also from plot.line, scatter, hist, image",
    doc = [=[
A figure: series (lines, scatters, histograms, images) and settings, drawn by its own
gnuplot process on fig:show() (inline) and fig:save(path) (a file), as often as
wanted. Series are drawn in the order added, on shared axes, with the legend listing
those that have a label. The methods that add or set return the figure, so calls
chain: plot.figure():line(y):title("loss"):show().
Settings: title, xlabel, ylabel, grid, xrange, yrange, logscale, legend, and set for
any gnuplot `set` command. fig:close() stops gnuplot and removes the data files (also
done on collection and by `local fig <close>`); a closed figure's methods raise
"the figure was closed". tostring(fig) names its series and title.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({1, 3, 2}, {label = "a"}):scatter({2, 2, 3}, {label = "b"})
fig:title("two series"):grid():show()
print(fig)   -- figure n (line, scatter: two series)
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:line",
    sig = "fig:line([x,] y [, {label =, labels =, with = \"lines\", color =,\n"
       .. "                         width =}]) -> fig",
    doc = [=[
Adds lines. y is a 1-D tensor or table of numbers (one series), a 2-D tensor (one
series per column), or a list of 1-D series; x (1-D, as long as each series) defaults
to 1..n. When the second argument is data (a tensor or a non-empty plain table), the
first is x and the second y; otherwise the first is y and the second the options.
  label   the legend title of the series (the first one only, if several)
  labels  a list of titles, one per series; series without a title have no legend entry
  with    a gnuplot plot style: "lines", "linespoints", "points", "steps", "impulses",
          ... with modifiers if wanted ("lines dt 2"); no ',', ';' or newline (that
          raises here; a style gnuplot does not know raises when drawn)
  color   a gnuplot colour: "red", "#1f77b4"
  width   the line width (gnuplot's lw)
The data are copied when added. Wrong shapes, lengths, element types or option names
raise here. In pictures (PNG, SVG, PDF, sixel, window), a series drawn "with lines"
whose x is sorted and that has over 8 points per pixel column is drawn from 4 slices
per column, each by its first, lowest, highest and last points (M4): the same picture
at a fraction of the cost. Text charts, logx, xrange and set commands naming a range or
a log scale draw every point; so does the figure option decimate = false.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure{title = "lines"}
local t = ember.arange(1, 21)
fig:line(t, ember.randn(20, 2):cumsum(1), {labels = {"walk 1", "walk 2"}})
fig:line(t, ember.zeros(20), {with = "lines dt 2", color = "gray"})
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:scatter",
    sig = "fig:scatter(x, y [, opts]) -> fig\nfig:scatter(y [, opts]) -> fig",
    doc = [=[
Adds points: as fig:line, with the same data forms and options, but drawn by default
as small filled circles ("points pt 7 ps 0.6"); `with` changes that.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure{title = "clusters"}
fig:scatter(ember.randn(50), ember.randn(50), {label = "a"})
fig:scatter(ember.randn(50) + 3, ember.randn(50) + 3, {label = "b", color = "red"})
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:hist",
    sig = "fig:hist(t [, bins = 10] [, {bins =, range = {lo, hi}, density = false,\n"
       .. "                              label =, color =}]) -> fig",
    doc = [=[
Adds a histogram of all of t's values (any shape; a tensor or a table of numbers):
bins equal bins over range (default: t's min and max; a single value v gets
[v - 0.5, v + 0.5]). As torch.histc, values outside the range are left out and hi
falls in the last bin. bins, a positive integer, may also be given as opts.bins; the
argument comes first. density divides the counts so that the bars' areas sum to 1.
Drawn as filled boxes; label and color as in Figure:line.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure{title = "two samples"}
fig:hist(ember.randn(1000), 30, {range = {-4, 4}, label = "randn"})
fig:hist(ember.rand(1000) * 8 - 4, {bins = 30, range = {-4, 4}, label = "rand"})
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:image",
    sig = "fig:image(t [, {palette = \"gray\", colorbar = true, label =}]) -> fig",
    doc = [=[
Adds a 2-D tensor [h, w] (or [1, h, w]) as an image: element (r, c) is the pixel at
x = c, y = r, row 1 at the top, pixels square; the colours follow t's values (gnuplot's
automatic colour range). palette: "gray" (or "grey", the default), "heat", or any
argument of gnuplot's `set palette` ("rgbformulae 33,13,10"; a ';' or newline raises);
colorbar = false hides
the colour scale; label titles it in the legend. The axes are set to the image's
pixels (xrange and yrange still apply); in a figure with several images the last one's
settings win. A tensor only: a table of rows is not taken.
On a "dumb" text output without colours, a figure holding only an image is drawn as
characters from dark " " to bright "@", two per pixel, scaled down to fit the width
(the palette is not used).]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure{title = "a gradient"}
fig:image(ember.arange(1, 13):reshape(3, 4), {palette = "heat", colorbar = false})
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:title",
    sig = "fig:title(s) -> fig",
    doc = "Sets the figure's title (nil removes it); used by the next drawing.",
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({1, 2, 4}):title("growth")
print(fig)   -- figure n (line: growth)
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:xlabel",
    sig = "fig:xlabel(s) -> fig",
    doc = "Sets the x axis label (nil removes it); used by the next drawing.",
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({0.9, 0.5, 0.3}):xlabel("epoch"):ylabel("loss")
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:ylabel",
    sig = "fig:ylabel(s) -> fig",
    doc = "Sets the y axis label (nil removes it); used by the next drawing.",
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({0.1, 0.6, 0.8}):ylabel("accuracy")
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:grid",
    sig = "fig:grid([on = true]) -> fig",
    doc = "Draws grid lines at the tics; fig:grid(false) removes them.",
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({1, 3, 2}):grid()
fig:show()
fig:grid(false):show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:xrange",
    sig = "fig:xrange([lo] [, hi]) -> fig",
    doc = [=[
Limits the x axis to [lo, hi]; a nil end is automatic (fig:xrange(nil, 10)), and
fig:xrange() makes both automatic. Non-numbers, or lo >= hi, raise.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line(ember.arange(1, 101):log()):xrange(1, 20)
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:yrange",
    sig = "fig:yrange([lo] [, hi]) -> fig",
    doc = [=[
Limits the y axis to [lo, hi]; a nil end is automatic (fig:yrange(0) starts the axis at
0), and fig:yrange() makes both automatic. Non-numbers, or lo >= hi, raise.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({0.5, 0.8, 0.9, 0.95}):yrange(0, 1)
fig:show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:logscale",
    sig = "fig:logscale(axes [, on = true]) -> fig   -- axes: \"x\", \"y\" or \"xy\"",
    doc = [=[
Makes the named axes logarithmic (base 10), or linear again with on = false; the same
as the logx and logy options of plot.figure. Other axes strings raise.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line(ember.arange(1, 11), ember.arange(1, 11) ^ 3)
fig:logscale("xy"):show()
fig:logscale("x", false):show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:legend",
    sig = "fig:legend(position) -> fig\nfig:legend(false) -> fig",
    doc = [=[
Where the legend goes, in gnuplot's `set key` words: "top right" (the default),
"bottom left", "top left", "outside", ... (only letters, digits and spaces are kept);
false hides it, nil restores the default; other values raise. The legend is opaque:
drawn over the curves. It lists the series that have a label.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({3, 2, 1}, {label = "falling"}):legend("bottom left")
fig:show()
fig:legend(false):show()
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:set",
    sig = "fig:set(command) -> fig",
    doc = [=[
Any gnuplot `set` command, without the word set ("xtics 0.5", "key box", "format y
'%.1e'"), kept and sent after the figure's own settings on every drawing. It is tried
at once in the figure's gnuplot (starting it if needed), so a bad command raises here
with gnuplot's message and is not kept. One command: no ';' or newline. There is no
way to drop a kept command.]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({1, 2, 3, 4}):set("xtics 1"):set("key box")
fig:show()
print(pcall(fig.set, fig, "no_such_setting"))   -- false  plot.Figure:set: gnuplot: ...
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:show",
    sig = "fig:show() -> fig",
    doc = [=[
Draws the figure on the inline output plot.config.terminal chooses: a text chart or a
sixel image handed to config.write (stdout by default), or a window. The size is the
figure's size option, else config.size, else the default of the output. Raises when
the figure has no series, with gnuplot's message when gnuplot rejects the figure, and
when the output cannot be had ("sixel" or "window" that this gnuplot lacks).]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure{title = "shown twice", size = {60, 15}}
fig:line({1, 2, 3})
fig:show()
fig:line({3, 2, 1}):show()   -- the whole figure again, now with two lines
fig:close()]=],
  },
  {
    name = "ember.plot.Figure:save",
    sig = "fig:save(path [, {size = {w, h}}]) -> fig",
    doc = [=[
Writes the figure to a file whose type is the path's extension (any case): .png
(gnuplot's pngcairo, else png), .svg, .pdf (pdfcairo) or .txt (a text chart without
colours). size is in pixels (default 800x600), inches for PDF (6x4.5), characters for
.txt (80x25); the inline size settings are not used. The file is written as ember.save
writes: into a temporary file beside it, renamed over it once drawn (a failed drawing
leaves the old file), links followed, devices and FIFOs written through. Raises for
another extension, a directory, a folder that cannot be written, or a format this
gnuplot cannot write.]=],
    example = [=[
local plot = ember.plot
local tmp = os.tmpname()
local path = tmp .. ".png"
local fig = plot.figure{title = "saved"}:line({1, 4, 9})
fig:save(path, {size = {400, 300}})
local f = io.open(path, "rb")
print(f:read(4):sub(2))   -- PNG
f:close()
fig:close()
os.remove(path); os.remove(tmp)]=],
  },
  {
    name = "ember.plot.Figure:close",
    sig = "fig:close()",
    doc = [=[
Ends the figure's gnuplot (its stdin is closed; one that does not exit within 300 ms
is killed) and removes its data files. Closing twice does nothing; other methods of a
closed figure raise. Also done when the figure is collected, and at the end of a
`local fig <close>` scope. Like matplotlib's plt.close(fig).]=],
    example = [=[
local plot = ember.plot
do
  local fig <close> = plot.figure():line({1, 2})
  fig:show()
end   -- closed here
local fig = plot.line({2, 1})
fig:close()
print(fig)   -- figure n (line) closed]=],
  },
  {
    name = "ember.plot.Figure:gnuplot_pid",
    sig = "fig:gnuplot_pid() -> integer or nil",
    doc = [=[
The process id of the figure's gnuplot, or nil when it has none: before the first
drawing (or fig:set), after close, and after a gnuplot that timed out or died was
dropped (the next drawing starts a new one).]=],
    example = [=[
local plot = ember.plot
local fig = plot.figure():line({1, 2, 3})
print(fig:gnuplot_pid())   -- nil: nothing drawn yet
fig:show()
print(fig:gnuplot_pid())   -- 12345
fig:close()
print(fig:gnuplot_pid())   -- nil]=],
  },

  -- ---- Live -----------------------------------------------------------------------
  {
    name = "ember.plot.Live",
    sig = "plot.live([opts]) -> live",
    doc = [=[
A live plot of named curves (see plot.live for the options): live:add appends points
and redraws inline at most every interval ms; live:draw redraws now; live:save writes
the whole run to a file; live:points gives a curve's points back; live:close ends it
(also at the end of a `local live <close>` scope; its figure is closed when collected).
live.fig is the Figure it draws. tostring(live) lists the curves and their counts.]=],
    example = [=[
local plot = ember.plot
local live = plot.live{title = "loss", inline = false}
for epoch = 1, 5 do live:add("train", epoch, 1 / epoch) end
print(live)   -- live plot (train: 5)
live:close()]=],
  },
  {
    name = "ember.plot.Live:add",
    sig = "live:add(name, step, value) -> live\nlive:add(name, value) -> live",
    doc = [=[
Appends the point (step, value) to the curve called name, created by its first point.
value: a number or a one-element tensor (read with :item(), which waits for the GPU);
step: a number, by default the curve's point count + 1. When the plot is inline and
interval ms have passed since the last drawing (the first add always draws), redraws.]=],
    example = [=[
local plot = ember.plot
local live = plot.live{inline = false}
live:add("train", 10, 0.9)
live:add("train", 20, ember.tensor(0.7))
live:add("lr", 0.1)   -- step 1
live:add("lr", 0.05)  -- step 2
print(live)           -- live plot (train: 2, lr: 2)
live:close()]=],
  },
  {
    name = "ember.plot.Live:points",
    sig = "live:points(name) -> steps, values",
    doc = [=[
The points of the curve called name as two Lua lists (the live plot's own: do not
change them), or nil for a name never added. The values are the raw ones, not
smoothed.]=],
    example = [=[
local plot = ember.plot
local live = plot.live{inline = false}
live:add("loss", 1, 0.5)
live:add("loss", 2, 0.25)
local steps, values = live:points("loss")
print(#steps, values[2])     -- 2 0.25
print(live:points("other"))  -- nil
live:close()]=],
  },
  {
    name = "ember.plot.Live:draw",
    sig = "live:draw() -> live",
    doc = [=[
Draws all curves inline now (as Figure:show, with the figure's size option or
config.size), over the previous text chart when inplace; whether the plot is inline or
not. Raises when no point was added yet or the live plot was closed.]=],
    example = [=[
local plot = ember.plot
local live = plot.live{title = "accuracy", inline = false}
for step = 1, 30 do live:add("train", step, 1 - 1 / step) end
live:draw()
live:close()]=],
  },
  {
    name = "ember.plot.Live:save",
    sig = "live:save(path [, {size = {w, h}}]) -> live",
    doc = [=[
Writes all curves to a file, as Figure:save (.png, .svg, .pdf or .txt by extension).
Raises when no point was added yet or the live plot was closed.]=],
    example = [=[
local plot = ember.plot
local tmp = os.tmpname()
local path = tmp .. ".svg"
local live = plot.live{title = "loss", smooth = {window = 5}, raw = true, inline = false}
for step = 1, 40 do live:add("train", step, 1 / step + 0.1 * math.random()) end
live:save(path)
live:close()
os.remove(path); os.remove(tmp)]=],
  },
  {
    name = "ember.plot.Live:close",
    sig = "live:close()",
    doc = [=[
Closes the live plot's figure: its gnuplot ends and its data files go. Later draws and
saves raise "the live plot was closed"; the points stay readable with live:points.]=],
    example = [=[
local plot = ember.plot
local live = plot.live{inline = false}
live:add("loss", 1.0)
live:close()
print(pcall(live.draw, live))   -- false  plot.Live: the live plot was closed]=],
  },
}
