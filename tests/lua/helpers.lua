-- helpers.lua — assertions the Lua specs share (found through LUA_PATH,
-- which tests/run.sh points at tests/lua/).
local M = {}

function M.is_nan(x) return x ~= x end

-- Deep comparison of tolist() output with expected nested tables. NaN equals
-- NaN; numbers agree within tol relative to max(1, |want|) (exactly when nil).
function M.same(got, want, tol)
  if type(want) == "table" then
    if type(got) ~= "table" or #got ~= #want then return false end
    for i = 1, #want do
      if not M.same(got[i], want[i], tol) then return false end
    end
    return true
  end
  if type(want) == "number" then
    if type(got) ~= "number" then return false end
    if M.is_nan(want) then return M.is_nan(got) end
    if want == got then return true end
    if want == math.huge or want == -math.huge then return false end
    return math.abs(got - want) <= (tol or 0) * math.max(1, math.abs(want))
  end
  return got == want
end

-- The whole content of a file, in binary.
function M.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Writes the string s to path (binary).
function M.write_file(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- Whether a file can be opened for reading.
function M.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The command that runs a Lua script with ember in a child process: the
-- executable tests/run.sh points EMBER at (the sanitizer build under make
-- asan), else lua5.4 with the same module path.
function M.runner()
  local e = os.getenv("EMBER")
  if e and M.exists(e) then return e end
  return "lua5.4"
end

-- What the Lua chunk src prints (stdout and stderr) when it runs in a fresh process
-- (M.runner() -e src): for what must work before anything else was loaded.
function M.run_fresh(src)
  local p = assert(io.popen(string.format("%s -e %q 2>&1", M.runner(), src)))
  local out = p:read("a")
  p:close()
  return out
end

function M.show(v)
  if type(v) ~= "table" then return tostring(v) end
  local parts = {}
  for i = 1, #v do parts[i] = M.show(v[i]) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- t's values equal want (nested tables), within tol when given
function M.check(t, want, tol)
  local ember = require "ember"
  assert(ember.is_tensor(t), "expected a tensor, got " .. type(t))
  local got = t:tolist()
  assert(M.same(got, want, tol), "expected " .. M.show(want) .. ", got " .. M.show(got))
end

function M.check_shape(t, want)
  assert(M.same(t.shape, want), "expected shape " .. M.show(want) .. ", got " .. M.show(t.shape))
end

-- the message of the error f(...) raises (the call must fail)
function M.err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

-- msg contains each text given (plain, not patterns)
function M.has(msg, ...)
  local texts = table.pack(...)
  assert(texts.n > 0, "has: no text to look for")
  for i = 1, texts.n do
    local text = texts[i]
    assert(msg:find(text, 1, true), "expected the message to contain '" .. text .. "', got: " .. msg)
  end
end

-- A float64 tensor of the given sizes with distinct values far enough apart
-- (0.5, plus noise of 0.01) that a finite-difference step never changes which
-- element is the largest or where it sorts.
function M.spread(...)
  local ember = require "ember"
  local n = 1
  for _, s in ipairs({...}) do n = n * s end
  return (ember.randperm(n, {dtype = "float64"}) * 0.5 + ember.randn(n, {dtype = "float64"}) * 0.01):reshape(...)
end

-- ---- PyTorch fixtures (tests/lua/fixtures/, written by scripts/fixtures/) ----------------

-- the folder of the fixture files, wherever busted runs from
M.FIXTURES = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "fixtures/"

-- what the fixture file name (under tests/lua/fixtures/) returns
function M.fixture(name) return dofile(M.FIXTURES .. name) end

-- a tensor from a fixture's {shape, dtype, values} (values flat, empty for no elements)
function M.from_spec(spec)
  local ember = require "ember"
  if #spec.values == 0 then return ember.zeros(spec.shape, {dtype = spec.dtype}) end
  return ember.tensor(spec.values, {dtype = spec.dtype}):reshape(spec.shape)
end

-- a tensor from a fixture's {shape, v} (v flat; shape {} for a scalar), of dtype when given
function M.from_flat(spec, dtype)
  local ember = require "ember"
  local t = ember.tensor(spec.v, {dtype = dtype})
  if #spec.shape == 0 then return t:reshape({}) end
  return t:reshape(spec.shape)
end

-- the numbers of a nested list in row-major order (a number: a list of it)
function M.flat(v, out)
  out = out or {}
  if type(v) ~= "table" then out[#out + 1] = v return out end
  for _, x in ipairs(v) do M.flat(x, out) end
  return out
end

-- t's flat values equal want (a flat list) within tol (NaN equal to NaN); what names t
function M.check_flat(t, want, what, tol)
  local got = t:reshape(-1):tolist()
  assert(M.same(got, want, tol), what .. ": expected " .. M.show(want) .. ", got " .. M.show(got))
end

-- the largest |g - w| / max(1, |w|) over the flat lists g and want, and where (a NaN error
-- counts as math.huge; g equal to w counts 0, so an infinite w needs the same infinity);
-- with nan_equal, a NaN in want must be matched by a NaN
local function worst_rel_err(g, want, nan_equal)
  local worst, at = 0, 0
  for i, w in ipairs(want) do
    local e
    if nan_equal and w ~= w then e = g[i] ~= g[i] and 0 or math.huge
    elseif w == g[i] then e = 0
    else e = math.abs(g[i] - w) / math.max(1, math.abs(w)) end
    if e ~= e then e = math.huge end
    if e > worst then worst, at = e, i end
  end
  return worst, at
end

-- the worst relative error of tensor got against the flat list want (NaN matching NaN), and where
function M.max_rel_err(got, want)
  return worst_rel_err(got:detach():to("float64"):reshape(-1):tolist(), want, true)
end

-- got matches the fixture's spec: shape, dtype, and values within tol (relative, NaN matching NaN)
function M.compare(what, got, spec, tol)
  local ember = require "ember"
  assert(ember.is_tensor(got), what .. ": expected a tensor, got " .. type(got))
  assert(M.same(got.shape, spec.shape), string.format("%s: shape %s, PyTorch %s", what, M.show(got.shape), M.show(spec.shape)))
  assert(got.dtype == spec.dtype, string.format("%s: dtype %s, PyTorch %s", what, got.dtype, spec.dtype))
  local e, at = M.max_rel_err(got, spec.values)
  assert(e <= tol, string.format("%s: value %d is %s, PyTorch's %s (relative error %.3g, tolerance %g)", what, at,
                                 tostring(got:detach():reshape(-1):tolist()[at]), tostring(spec.values[at]), e, tol))
end

-- One fixture case of nn.functional: c.call (F and ember in scope, the inputs as a[i]) on
-- c.inputs; its output c.out (or outputs c.outs), then the gradients of sum(out1 * c.weights)
-- for the inputs marked grad, then c.after (inputs changed in place).
function M.run_fixture_case(c)
  local ember = require "ember"
  local F = ember.nn.functional
  local a = {}
  for i, spec in ipairs(c.inputs) do
    a[i] = M.from_spec(spec)
    if spec.grad then a[i]:requires_grad_() end
  end
  local fn = assert(load("local F, ember = ...; return function(a) return " .. c.call .. " end", "=" .. c.name, "t"))(F, ember)
  local outs = table.pack(fn(a))
  if c.outs then
    assert(outs.n >= #c.outs, string.format("%s: %d outputs, PyTorch %d", c.call, outs.n, #c.outs))
    for k, spec in ipairs(c.outs) do M.compare(c.call .. " output " .. k, outs[k], spec, c.tol) end
  else
    M.compare(c.call .. " output", outs[1], c.out, c.tol)
  end
  if c.grads then
    local xs, which = {}, {}
    for i, spec in ipairs(c.inputs) do if spec.grad then xs[#xs + 1] = a[i]; which[#which + 1] = i end end
    local loss = (outs[1] * M.from_spec(c.weights)):sum()
    local gs = {ember.autograd.grad({loss}, xs, {allow_unused = true})}
    for j, i in ipairs(which) do
      local g = gs[j] or ember.zeros(c.inputs[i].shape, {dtype = "float64"})
      M.compare(c.call .. " gradient of input " .. i, g, c.grads[i], c.tol)
    end
  end
  for i, spec in pairs(c.after or {}) do M.compare(c.call .. " input " .. i .. " after the call", a[i], spec, c.tol) end
end

-- the largest |got - want| / max(1, |want|) of two tensors; NaN (even against NaN) and
-- shape mismatches count as math.huge
function M.max_rel_err_tensors(got, want)
  if #got.shape ~= #want.shape then return math.huge end
  for i, s in ipairs(want.shape) do if got.shape[i] ~= s then return math.huge end end
  return (worst_rel_err(got:detach():to("float64"):reshape(-1):tolist(),
                        want:detach():to("float64"):reshape(-1):tolist(), false))
end

-- tensor got equals tensor want within tol (relative, default 1e-10); what names it
function M.close_tensors(what, got, want, tol)
  local ember = require "ember"
  assert(ember.is_tensor(got), what .. ": expected a tensor, got " .. type(got))
  local e = M.max_rel_err_tensors(got, want)
  assert(e <= (tol or 1e-10), string.format("%s: differs by %.3g (relative; shapes %s and %s)", what, e,
                                            M.show(got.shape), M.show(want.shape)))
end

-- The tensors of one case of a safetensors fixture whose names are "<case>.<kind>.<name>",
-- by name.
function M.fixture_group(tensors, case_name, kind)
  local out, prefix = {}, case_name .. "." .. kind .. "."
  for k, t in pairs(tensors) do
    if k:sub(1, #prefix) == prefix then out[k:sub(#prefix + 1)] = t end
  end
  return out
end

-- Checks the named outputs outs[name] against want[name] (close_tensors); returns the
-- loss sum over them of (o * sin(1..numel)), whose gradients the fixtures hold.
function M.check_outputs(outs, want, names)
  local ember = require "ember"
  local loss
  for _, name in ipairs(names) do
    local o = outs[name]
    M.close_tensors(name, o, want[name])
    local w = ember.arange(1, o:numel() + 1, {dtype = "float64"}):sin():reshape(o.shape)
    local term = (o * w):sum()
    loss = loss and loss + term or term
  end
  return loss
end

-- ---- gradients -------------------------------------------------------------------------

-- gradcheck(fn, inputs, opts) passes (its report as the failure message)
function M.gradcheck_ok(fn, inputs, opts)
  local ok, report = require("ember").autograd.gradcheck(fn, inputs, opts)
  assert(ok, report)
end

-- a copy of a nested table (tables copied all the way down)
function M.deep_copy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = M.deep_copy(v) end
  return c
end

-- ---- flat row-major matrices (the GEMM specs' exact references) ----------

-- n pseudo-random integers in [-r, r] (a fixed LCG: the same values every run)
function M.lcg_ints(n, seed, r)
  local s, out = seed, {}
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = s % (2 * r + 1) - r
  end
  return out
end

-- nested [rows][cols] from a flat row-major list
function M.nest(flat, rows, cols)
  local t = {}
  for i = 1, rows do
    t[i] = {}
    for j = 1, cols do t[i][j] = flat[(i - 1) * cols + j] end
  end
  return t
end

-- the transpose of a flat [rows, cols] list, flat [cols, rows]
function M.transpose_flat(flat, rows, cols)
  local t = {}
  for i = 1, rows do
    for j = 1, cols do t[(j - 1) * rows + i] = flat[(i - 1) * cols + j] end
  end
  return t
end

-- flat A [M, K] @ B [K, N] in double, and sum |a||b| per entry
function M.ref_mm(A, B, m, k, n)
  local C, S = {}, {}
  for i = 1, m do
    for j = 1, n do
      local c, s = 0, 0
      for q = 1, k do
        local p = A[(i - 1) * k + q] * B[(q - 1) * n + j]
        c, s = c + p, s + math.abs(p)
      end
      C[(i - 1) * n + j], S[(i - 1) * n + j] = c, s
    end
  end
  return C, S
end

-- the spacing of float32 numbers at |y| (2^-149 among the subnormals): the
-- unit of the float32 error measures (gelu_spec, unary_accuracy_spec)
function M.ulp32(y)
  y = math.abs(y)
  if y < 2 ^ -126 then return 2 ^ -149 end
  local e = math.floor(math.log(y, 2))
  if 2 ^ e > y then e = e - 1 elseif 2 ^ (e + 1) <= y then e = e + 1 end
  return 2 ^ (e - 23)
end

return M
