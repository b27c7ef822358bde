-- scripts/bench/plot.lua — what plotting costs (ember.plot, gnuplot behind
-- it), run at the end of `make bench`:
--   plot_1m_png_s    a 1M-point line to an 800x600 PNG: the data written,
--                    gnuplot started (a new figure each time) and drawing;
--                    beside matplotlib's time for the same (Agg backend)
--   plot_1m_text_s   the same points drawn as a text chart (the inline
--                    default), and beside it the way Lua Torch's gnuplot
--                    sent data: as text on gnuplot's stdin
--   live_add_us      one live:add with inline redraws throttled to 500 ms
--                    (the cost a training loop sees per logged value)
-- Each figure is the best of 3 runs (scripts/bench/timing.lua).
local ember = require "ember"
local plot = require "ember.plot"
local here = arg and arg[0] and arg[0]:match("^(.*)/[^/]*$") or "scripts/bench"
local best = dofile(here .. "/timing.lua").best

local N = 1000000
local x = ember.arange(1, N + 1, {dtype = "float64"})
local y = (x / 1000):sin() + (x / 37):cos() * 0.1
local png = os.tmpname() .. ".png"

local png_s = best(3, function()
  local fig <close> = plot.figure()
  fig:line(x, y)
  fig:save(png, {size = {800, 600}})
end)
os.remove(png)

-- inline text chart, captured rather than printed
local saved = {plot.config.write, plot.config.terminal, plot.config.color}
plot.config.write, plot.config.terminal, plot.config.color = function() end, "dumb", false
local text_s = best(3, function()
  local fig <close> = plot.line(x, y, {size = {100, 30}})
end)

-- the same chart with the data sent as text: one formatted number pair per line
local text_pipe_s = best(3, function()
  local proc <close> = assert(ember._plot.spawn{os.getenv("EMBER_GNUPLOT") or "gnuplot"})
  local xs, ys, lines = x:tolist(), y:tolist(), {}
  for i = 1, N do lines[i] = string.format("%.17g %.17g", xs[i], ys[i]) end
  assert(proc:send("set terminal dumb size 100,30 mono\nplot '-' with lines\n" .. table.concat(lines, "\n")
                   .. "\ne\nset print '-'\nprint 'done'\nset print\nprint 'done'\n", 60000))
  assert(proc:wait_for("done", 60000))
end)

-- live:add with redraws throttled to 500 ms
local ADDS = 200000
local live_s = best(3, function()
  local live <close> = plot.live{interval = 500, inline = true, size = {100, 30}}
  for i = 1, ADDS do live:add("loss", i, 1 / i) end
end)
plot.config.write, plot.config.terminal, plot.config.color = saved[1], saved[2], saved[3]

-- matplotlib, when Debian's python3-matplotlib is installed
local mpl
local p = io.popen("/usr/bin/python3 " .. here .. "/plot_matplotlib.py " .. N .. " 3 2>/dev/null")
if p then
  local out = p:read("a")
  p:close()
  mpl = tonumber(out:match("plot_1m_png_s ([%d%.]+)"))
end

print(string.format("%-22s %14s %14s %10s  %s", "benchmark", "ember", "other", "ratio", "other is"))
local function row(name, ours, other, unit, what)
  print(string.format("%-22s %14s %14s %10s  %s", name, string.format("%.3f %s", ours, unit),
                      other and string.format("%.3f %s", other, unit) or "n/a",
                      other and string.format("%.3f", ours / other) or "n/a", what))
end
row("plot_1m_png_s", png_s, mpl, "s", "matplotlib (Agg), same PNG")
row("plot_1m_text_s", text_s, text_pipe_s, "s", "data sent as text (Lua Torch's way)")
row("live_add_us", live_s / ADDS * 1e6, nil, "us", "")
