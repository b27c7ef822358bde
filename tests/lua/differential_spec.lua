-- differential_spec.lua — every op family and its gradient against PyTorch.
--
-- The cases and their expected values are in tests/lua/fixtures/torch_*.lua,
-- written by scripts/fixtures/make_torch_fixtures.py from PyTorch's own
-- results (regenerate with `python3 scripts/fixtures/make_torch_fixtures.py`;
-- PyTorch is needed only for that, this spec reads the files). Each case
-- builds its inputs with the same views PyTorch saw (transposed, narrowed,
-- stepped, expanded, 0-d, empty), calls the ember op, and compares every
-- output (dtype, shape, values) and, for float64 inputs, the gradient of
-- sum_k sum(out_k * w_k) with respect to each input's base tensor. Dims and
-- indices in the files are already ember's (1-based): the generator
-- translates them in one place.
local ember = require "ember"
local h = require "helpers"

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local FIXTURES = here .. "fixtures/"
local FAMILIES = {"unary", "binary", "reduce", "softmax", "index", "view", "matmul", "loss", "create", "inplace",
                  "convert", "edge", "large", "getitem", "error"}

-- tolerance relative to max(1, |want|), by the dtype compared
local TOL = {float64 = 1e-9, float32 = 1e-5}

local function numel(shape)
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    return n
end

-- flat row-major values -> nested tables of the given (non-empty) shape
local function nest(values, shape, d, offset)
    d, offset = d or 1, offset or 0
    local stride = 1
    for i = d + 1, #shape do stride = stride * shape[i] end
    local t = {}
    for i = 1, shape[d] do
        if d == #shape then t[i] = values[offset + i]
        else t[i] = nest(values, shape, d + 1, offset + (i - 1) * stride) end
    end
    return t
end

-- the values of an input or weight given by a formula (the generator's lcg()):
-- ((i * a + c) % m - d) / scale for i = 0..n-1, integers when scale is 1
local function lcg(n, g)
    local a, c, m, d, scale = g[1], g[2], g[3], g[4], g[5]
    local vs = {}
    for i = 0, n - 1 do
        local v = (i * a + c) % m - d
        vs[i + 1] = scale == 1 and v or v / scale
    end
    return vs
end

local function make_tensor(values, shape, dtype)
    if #shape == 0 then return ember.tensor(values[1], {dtype = dtype}) end
    if numel(shape) == 0 then return ember.zeros(shape, {dtype = dtype}) end
    return ember.tensor(nest(values, shape), {dtype = dtype})
end

local function apply_views(x, views)
    for _, v in ipairs(views or {}) do
        local name = v[1]
        if name == "reshape" then x = x:reshape(v[2])
        elseif name == "expand" or name == "permute" then x = x[name](x, table.unpack(v[2]))
        else x = x[name](x, table.unpack(v, 2)) end
    end
    return x
end

-- the base tensor and the view of it the op is given (spec.alias: another
-- view of an earlier input's base)
local function make_input(spec, bases)
    if spec.alias then return bases[spec.alias], apply_views(bases[spec.alias], spec.views) end
    local values = spec.values
    if spec.gen then
        values = lcg(numel(spec.shape), spec.gen)
        if spec.dtype == "bool" then
            for i, v in ipairs(values) do values[i] = v ~= 0 end
        end
    end
    local base = make_tensor(values, spec.shape, spec.dtype)
    if spec.grad then base.requires_grad = true end
    return base, apply_views(base, spec.views)
end

-- {ref = i} -> the i-th input, recursively through lists and options tables
local function resolve(a, xs)
    if type(a) ~= "table" then return a end
    if a.ref then return xs[a.ref] end
    local r = {}
    for k, v in pairs(a) do r[k] = resolve(v, xs) end
    return r
end

local OPS = {
    add = function(a, b) return a + b end, sub = function(a, b) return a - b end,
    mul = function(a, b) return a * b end, div = function(a, b) return a / b end,
    mod = function(a, b) return a % b end, pow = function(a, b) return a ^ b end,
    unm = function(a) return -a end,
    index = function(t, key) return t[key] end,
    newindex = function(t, key, v) t[key] = v; return t end,
}

local function resolve_call(call)
    local ns, name = call:match("^(%w+)%.(.+)$")
    local f
    if ns == "ember" then f = ember[name]
    elseif ns == "F" then f = ember.nn.functional[name]
    elseif ns == "op" then f = OPS[name]
    elseif ns == "warn" then f = ember.nn.functional[name]   -- PyTorch warns, ember refuses (README deviation)
    elseif ns == "method" or ns == "overlap" then   -- overlap: ember reads an overlapping source as a clone
        f = function(self, ...)
            local m = self[name]
            if type(m) ~= "function" then error("no method " .. name, 2) end
            return m(self, ...)
        end
    end
    if not f then error("ember has no " .. call, 0) end
    return f
end

local function flatten(v, out)
    out = out or {}
    if type(v) == "table" then
        for i = 1, #v do flatten(v[i], out) end
    else
        out[#out + 1] = v
    end
    return out
end

local function show_list(vs)
    local parts = {}
    for i = 1, math.min(#vs, 12) do parts[i] = tostring(vs[i]) end
    if #vs > 12 then parts[#parts + 1] = "... (" .. #vs .. ")" end
    return "{" .. table.concat(parts, ", ") .. "}"
end

local function close(got, want, tol)
    if type(want) ~= "number" or type(got) ~= "number" then return got == want end
    if want ~= want then return got ~= got end
    if got == want then return true end
    if want == math.huge or want == -math.huge then return false end
    return math.abs(got - want) <= tol * math.max(1, math.abs(want))
end

-- nil when the flat values agree, else a message. want is a list, or for
-- large tensors {n =, at = {positions}, v = {values there}, sum =, abssum =}
local function compare_values(what, got, want, tol)
    if want.at then
        if #got ~= want.n then return string.format("%s: %d values, expected %d", what, #got, want.n) end
        for k, i in ipairs(want.at) do
            if not close(got[i], want.v[k], tol) then
                return string.format("%s: value %d is %s, expected %s", what, i, tostring(got[i]), tostring(want.v[k]))
            end
        end
        local sum = 0
        for i = 1, #got do
            local v = got[i]
            sum = sum + (v == true and 1 or v == false and 0 or v)
        end
        if not (math.abs(sum - want.sum) <= tol * math.max(1, want.abssum)) then
            return string.format("%s: the values sum to %.17g, expected %.17g", what, sum, want.sum)
        end
        return
    end
    if #got ~= #want then
        return string.format("%s: %d values, expected %d\n  got  %s\n  want %s", what, #got, #want, show_list(got), show_list(want))
    end
    for i = 1, #want do
        if not close(got[i], want[i], tol) then
            return string.format("%s: value %d is %s, expected %s\n  got  %s\n  want %s", what, i,
                                 tostring(got[i]), tostring(want[i]), show_list(got), show_list(want))
        end
    end
end

local function compare_tensor(what, t, want, tol)
    if not ember.is_tensor(t) then return what .. ": expected a tensor, got " .. type(t) end
    if t.dtype ~= want.dtype then return string.format("%s: dtype %s, expected %s", what, t.dtype, want.dtype) end
    if not h.same(t.shape, want.shape) then
        return string.format("%s: shape %s, expected %s", what, h.show(t.shape), h.show(want.shape))
    end
    return compare_values(what, flatten(t:tolist()), want.values, tol or TOL[want.dtype] or 0)
end

local function all_zero(vs)
    if vs.at then return vs.abssum == 0 end
    for _, v in ipairs(vs) do if v ~= 0 then return false end end
    return true
end

local function run_case(c)
    local bases, xs = {}, {}
    for i, spec in ipairs(c.inputs) do bases[i], xs[i] = make_input(spec, bases) end
    local args = {}
    for i = 1, c.nargs do args[i] = resolve(c.args[i], xs) end
    local fn = resolve_call(c.call)
    local res = table.pack(pcall(fn, table.unpack(args, 1, c.nargs)))
    if c.error then
        assert(not res[1], "PyTorch raises (" .. c.error .. "), ember returned a value")
        return
    end
    if not res[1] then error("ember raised: " .. tostring(res[2]), 0) end
    local problems = {}
    local function note(msg) if msg then problems[#problems + 1] = msg end end
    if res.n - 1 ~= #c.outs then
        note(string.format("returned %d values, expected %d", res.n - 1, #c.outs))
    end
    for k, want in ipairs(c.outs) do
        local got = res[k + 1]
        -- README deviation 7: one element picked by t[...] is a Lua number
        if c.number and type(got) == "number" then got = ember.tensor(got, {dtype = want.dtype}) end
        note(compare_tensor("output " .. k, got, want, c.tol))
    end
    if c.after then
        note(compare_values("input 1 after the in-place op", flatten(bases[1]:tolist()), c.after,
                            c.tol or TOL[c.inputs[1].dtype] or 0))
    end
    if c.grads and #problems == 0 then
        local loss
        for k, want in ipairs(c.outs) do
            if want.weights then
                local w = want.weights
                if w.gen then w = lcg(numel(want.shape), w.gen) end
                local term = (res[k + 1] * make_tensor(w, want.shape, want.dtype)):sum()
                loss = loss and loss + term or term
            end
        end
        local ok, err = true, nil
        if loss.requires_grad then ok, err = pcall(loss.backward, loss) end
        if not ok then
            note("backward raised: " .. tostring(err))
        else
            for i, spec in ipairs(c.inputs) do
                local want = c.grads[i]
                if spec.grad and want then
                    local g = bases[i].grad
                    if g == nil then
                        if not all_zero(want) then note(string.format("input %d: no gradient, expected %s", i, show_list(want))) end
                    else
                        note(compare_tensor("grad of input " .. i, g, {dtype = "float64", shape = spec.shape, values = want}, c.tol))
                    end
                end
            end
        end
    end
    if #problems > 0 then error(table.concat(problems, "\n"), 0) end
end

for _, family in ipairs(FAMILIES) do
    local cases = dofile(FIXTURES .. "torch_" .. family .. ".lua")
    describe("differential " .. family .. " vs PyTorch", function()
        for _, c in ipairs(cases) do
            it(c.name, function() run_case(c) end)
        end
    end)
end
