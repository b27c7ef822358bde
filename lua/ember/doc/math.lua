-- Docstrings of the elementwise math of lua/bind_elementwise.c:
-- exp2 ... heaviside. Format: see ember.lua's header. Most entries are built
-- from one line of data each, as ember.lua does for the older elementwise ops.

local entries = {}

local function add(e) entries[#entries + 1] = e end

local FLOAT_RESULT = "Integer and bool inputs give the default float dtype (float32)."

local function also_of(name, aliases, inplace)
  local suffix = inplace and "_" or ""
  local also = {}
  for _, a in ipairs(aliases) do also[#also + 1] = "ember." .. a .. suffix end
  also[#also + 1] = "Tensor:" .. name .. suffix
  for _, a in ipairs(aliases) do also[#also + 1] = "Tensor:" .. a .. suffix end
  return also
end

local function sig_of(name, aliases, fargs, margs, suffix)
  local lines = {}
  for _, n in ipairs({name, table.unpack(aliases)}) do lines[#lines + 1] = ("ember.%s%s(%s)"):format(n, suffix, fargs) end
  for _, n in ipairs({name, table.unpack(aliases)}) do lines[#lines + 1] = ("Tensor:%s%s(%s)"):format(n, suffix, margs) end
  return table.concat(lines, "\n")
end

local function like(name, aliases)
  local names = {"torch." .. name}
  for _, a in ipairs(aliases) do names[#names + 1] = "torch." .. a end
  return "Like " .. table.concat(names, " / ") .. "."
end

-- One op with its in-place twin. u = {name, aliases, fargs, margs, doc, example,
-- inplace_example (nil: no in-place form)}
local function op(u)
  local name, aliases, fargs, margs, doc, example, inplace = table.unpack(u)
  add {
    name = "ember." .. name,
    also = also_of(name, aliases, false),
    sig = sig_of(name, aliases, fargs, margs, ""),
    doc = doc .. "\n" .. like(name, aliases),
    example = example,
  }
  if inplace then
    add {
      name = "ember." .. name .. "_",
      also = also_of(name, aliases, true),
      sig = sig_of(name, aliases, fargs, margs, "_"),
      doc = ("In-place form of ember.%s: writes the result into t (which must be able to hold its "
        .. "dtype and shape) and returns t. Refused on a tensor that requires grad while grad mode is "
        .. "on."):format(name),
      example = inplace,
    }
  end
end

-- unary float functions: {name, aliases, meaning, input}
local unary = {
  {"exp2", {}, "Returns 2^t, elementwise.", "{0, 3, -1}"},
  {"log2", {}, "Returns the base-2 logarithm of t, elementwise (-inf at 0, nan below).", "{1, 8, 0.5}"},
  {"log10", {}, "Returns the base-10 logarithm of t, elementwise.", "{1, 1000, 0.1}"},
  {"erf", {}, "Returns the error function of t, elementwise.", "{-1, 0, 0.5}"},
  {"erfc", {}, "Returns 1 - erf(t), elementwise, accurate where erf(t) is near 1.", "{0, 3, 10}"},
  {"erfinv", {}, "Returns the inverse error function of t, elementwise: -inf at -1, inf at 1, nan "
    .. "outside [-1, 1]. Accurate to double precision also near +-1.", "{-0.5, 0, 0.9999}"},
  {"tan", {}, "Returns the tangent of t (radians), elementwise.", "{0, 0.5, -1}"},
  {"sinh", {}, "Returns the hyperbolic sine of t, elementwise.", "{-1, 0, 2}"},
  {"cosh", {}, "Returns the hyperbolic cosine of t, elementwise.", "{-1, 0, 2}"},
  {"asin", {"arcsin"}, "Returns the arcsine of t (radians), elementwise; nan outside [-1, 1].", "{-1, 0, 0.5}"},
  {"acos", {"arccos"}, "Returns the arccosine of t (radians), elementwise; nan outside [-1, 1].", "{-1, 0, 0.5}"},
  {"atan", {"arctan"}, "Returns the arctangent of t (radians), elementwise.", "{-1, 0, 100}"},
  {"asinh", {"arcsinh"}, "Returns the inverse hyperbolic sine of t, elementwise.", "{-1, 0, 2}"},
  {"acosh", {"arccosh"}, "Returns the inverse hyperbolic cosine of t, elementwise; nan below 1.", "{1, 2, 10}"},
  {"atanh", {"arctanh"}, "Returns the inverse hyperbolic tangent of t, elementwise; +-inf at +-1.", "{-0.5, 0, 0.9}"},
  {"digamma", {}, "Returns psi(t) = Gamma'(t) / Gamma(t), the logarithmic derivative of Gamma, "
    .. "elementwise (polygamma(0, t)): -inf at 0, inf at -0, nan at the negative integers. "
    .. "Within a few ulp of the exact value (near its roots at negative t, of the reflection's "
    .. "terms). Its derivative is polygamma(1, t).", "{1, 0.5, -0.5}"},
  {"lgamma", {}, "Returns log |Gamma(t)|, elementwise: inf at 0 and the negative integers. "
    .. "Its derivative is digamma(t).", "{1, 0.5, 10}"},
}
for _, u in ipairs(unary) do
  local name, aliases, meaning, input = table.unpack(u)
  op {name, aliases, "t", "", meaning .. "\n" .. FLOAT_RESULT .. " Differentiable.",
      ("local t = ember.tensor(%s)\nprint(ember.%s(t))\nprint(t:%s())"):format(input, name, name),
      ("local t = ember.tensor(%s, {dtype = \"float32\"})\nt:%s_()\nprint(t)"):format(input, name)}
end

op {"polygamma", {}, "n, t", "n",
    "Returns psi^(n)(t), the n-th derivative of digamma, elementwise: polygamma(0, t) is "
    .. "digamma(t). n is a non-negative integer (a float such as 2.0 is refused, as PyTorch's int "
    .. "is). At t = 0 and the negative integers +inf for odd n and -inf for even n (n >= 1); at "
    .. "+inf 0. Within a few ulp of the exact value for small n (near a pole the error grows "
    .. "to about n + 1 ulp).\n" .. FLOAT_RESULT .. " Differentiable in t: the derivative is "
    .. "polygamma(n + 1, t); n has none.",
    "local t = ember.tensor({1, 2.5, -0.5})\nprint(ember.polygamma(1, t))\nprint(t:polygamma(2))",
    "local t = ember.tensor({1, 2.5}, {dtype = \"float32\"})\nt:polygamma_(1)\nprint(t)"}

op {"trunc", {"fix"}, "t", "", [[
Rounds toward zero, elementwise. Integer tensors are returned unchanged (a copy); bool
tensors are refused. The gradient is 0.]],
  "print(ember.trunc(ember.tensor({-1.7, 0.5, 2.9})))   -- tensor([-1., 0., 2.])",
  "local t = ember.tensor({-1.7, 2.9})\nt:fix_()\nprint(t)"}

op {"frac", {}, "t", "", [[
Returns t - trunc(t), elementwise (the fractional part, with t's sign). Float tensors
only. The gradient is 1.]],
  "print(ember.frac(ember.tensor({-1.75, 2.5})))   -- tensor([-0.7500, 0.5000])",
  "local t = ember.tensor({-1.75, 2.5})\nt:frac_()\nprint(t)"}

op {"sgn", {}, "t", "", [[
The sign of t: -1, 0 or 1 in t's dtype (for real tensors, the same as ember.sign).]],
  "print(ember.sgn(ember.tensor({-2.5, 0, 3})))",
  "local t = ember.tensor({-2.5, 0, 3})\nt:sgn_()\nprint(t)"}

op {"logit", {}, "t, [eps]", "[eps]", [[
Returns log(t / (1 - t)), elementwise. With eps (a number, also as {eps = ...}), t is
first clamped to [eps, 1 - eps]; a negative eps clamps nothing. Integer inputs give the
default float dtype. The gradient is 0 where eps clamps.]],
  "print(ember.logit(ember.tensor({0.25, 0.5, 1}), 0.1))",
  "local t = ember.tensor({0.25, 0.5})\nt:logit_()\nprint(t)"}

op {"nan_to_num", {}, "t, [nan], [posinf], [neginf]", "[nan], [posinf], [neginf]", [[
Replaces NaN by nan (0), +inf by posinf and -inf by neginf, elementwise; the defaults
for the infinities are the largest and lowest finite values of t's dtype. Also as an
options table {nan = , posinf = , neginf = }. Integer tensors are returned as a copy.
The gradient is 0 at replaced elements.]],
  "print(ember.nan_to_num(ember.tensor({0/0, math.huge, -math.huge, 1}), {posinf = 100}))",
  "local t = ember.tensor({0/0, 1})\nt:nan_to_num_(-1)\nprint(t)"}

op {"bitwise_not", {}, "t", "", [[
Bitwise NOT of an integer tensor (~t), logical NOT of a bool tensor. Float tensors are
refused.]],
  "print(ember.bitwise_not(ember.tensor({0, 5, -1})), ember.bitwise_not(ember.tensor({true, false})))",
  "local t = ember.tensor({0, 5})\nt:bitwise_not_()\nprint(t)"}

-- predicates: {name, meaning}
for _, p in ipairs({
  {"isnan", "t is NaN"}, {"isinf", "t is +inf or -inf"}, {"isfinite", "t is neither infinite nor NaN"},
  {"isposinf", "t is +inf"}, {"isneginf", "t is -inf"},
}) do
  op {p[1], {}, "t", "", ("Returns a bool tensor: true where %s. Integer and bool tensors are always "
      .. "finite."):format(p[2]),
      ("print(ember.%s(ember.tensor({1, 0/0, math.huge, -math.huge})))"):format(p[1])}
end

-- binary ops: {name, aliases, meaning, example inputs, in-place}
local binary = {
  {"atan2", {"arctan2"}, "Returns the angle of the point (b, a), atan(a / b) in the right quadrant, "
    .. "elementwise (a is the y coordinate). " .. FLOAT_RESULT .. " Differentiable.", "{1, -1}, {-1, -1}"},
  {"hypot", {}, "Returns sqrt(a^2 + b^2), elementwise, without overflow. " .. FLOAT_RESULT
    .. " Differentiable.", "{3, 5}, {4, 12}"},
  {"copysign", {}, "Returns |a| with the sign of b, elementwise (the sign bit: -0.0 counts as "
    .. "negative). " .. FLOAT_RESULT .. " The gradient goes to a only.", "{1, 2}, {-0.0, 3}"},
  {"fmod", {}, "Returns the remainder of a / b with the sign of a (C's fmod; ember.remainder takes "
    .. "b's sign). Integer inputs stay integers; an integer division by zero is an error. The "
    .. "gradient: 1 for a, -trunc(a / b) for b.", "{-7, 7}, {2, -2}"},
  {"floor_divide", {}, "Returns floor(a / b), elementwise (the same as ember.div with rounding_mode "
    .. "\"floor\"). Integer inputs stay integers; an integer division by zero is an error. The "
    .. "gradient is 0.", "{-7, 7}, {2, 2}"},
  {"logaddexp", {}, "Returns log(exp(a) + exp(b)), elementwise, without overflow (equal infinities "
    .. "give themselves). " .. FLOAT_RESULT .. " Differentiable.", "{1000, -math.huge}, {1000, 0}"},
  {"logaddexp2", {}, "Returns log2(2^a + 2^b), elementwise, without overflow. " .. FLOAT_RESULT
    .. " Differentiable.", "{1, 10}, {1, 0}"},
  {"bitwise_and", {}, "Returns a & b, elementwise, for integer and bool tensors (floats are refused).",
    "{12, 5}, {10, 3}"},
  {"bitwise_or", {}, "Returns a | b, elementwise, for integer and bool tensors (floats are refused).",
    "{12, 5}, {10, 3}"},
  {"bitwise_xor", {}, "Returns a ^ b (Lua's a ~ b), elementwise, for integer and bool tensors (floats "
    .. "are refused).", "{12, 5}, {10, 3}"},
  {"bitwise_left_shift", {}, "Returns a << b, elementwise, for integer tensors (bool and floats are "
    .. "refused); a shift by a negative count or by the type's width or more gives 0.", "{1, 3}, {4, 1}"},
  {"bitwise_right_shift", {}, "Returns a >> b (arithmetic: the sign is kept), elementwise, for "
    .. "integer tensors; a shift by a negative count or by the type's width or more gives 0 or -1.",
    "{16, -16}, {2, 2}"},
  {"xlogy", {}, "Returns a * log(b), elementwise, with 0 where a == 0 (also where b is 0 or inf) "
    .. "unless b is NaN. " .. FLOAT_RESULT .. " Differentiable; a gets no gradient where a == 0.",
    "{0, 2}, {0, 4}"},
  {"logical_xor", {}, "Returns a bool tensor: true where exactly one of a and b is non-zero.",
    "{1, 0}, {1, 1}"},
}
for _, b in ipairs(binary) do
  local name, aliases, meaning, inputs = table.unpack(b)
  local a_in, b_in = inputs:match("^(%b{}), (%b{})$")
  op {name, aliases, "a, b", "b", meaning
      .. "\na and b broadcast; either may be a number (not both).",
      ("local a, b = ember.tensor(%s), ember.tensor(%s)\nprint(ember.%s(a, b))\nprint(a:%s(b))"):format(
        a_in, b_in, name, name),
      name ~= "logaddexp" and name ~= "logaddexp2"
        and ("local a = ember.tensor(%s)\na:%s_(ember.tensor(%s))\nprint(a)"):format(
          name:match("^bitwise") and a_in or a_in:gsub("(%d+)", "%1.0"), name, b_in) or nil}
end

op {"heaviside", {}, "t, values", "values", [[
The Heaviside step: 0 where t < 0, values where t == 0, 1 where t > 0 (NaN gives 0).
values is a tensor of t's dtype, broadcast against t. Not differentiable (the result
is not recorded for autograd).]],
  "print(ember.heaviside(ember.tensor({-1.5, 0, 2}), ember.tensor({0.5})))",
  "local t = ember.tensor({-1.5, 0, 2})\nt:heaviside_(ember.tensor({0.5}))\nprint(t)"}

op {"lerp", {}, "start, end, weight", "end, weight", [[
Linear interpolation start + weight * (end - start), computed as PyTorch does (end -
(end - start) * (1 - weight) for weight >= 0.5, so weight 1 gives end exactly). weight
is a number or a tensor; start, end and a weight tensor must share one float dtype and
broadcast. Differentiable in all three.]],
  "print(ember.lerp(ember.tensor({0.0, 10}), ember.tensor({10.0, 20}), 0.25))",
  "local t = ember.tensor({0.0, 10})\nt:lerp_(ember.tensor({10.0, 20}), ember.tensor({0.5, 1}))\nprint(t)"}

op {"addcmul", {}, "t, t1, t2, [opts]", "t1, t2, [opts]", [[
Returns t + value * t1 * t2 (opts.value, default 1, also as a 4th argument), with
broadcasting and PyTorch's type promotion (value is a weak scalar). Differentiable.]],
  "print(ember.addcmul(ember.ones(2), ember.tensor({1.0, 2}), ember.tensor({3.0, 4}), {value = 0.5}))",
  "local t = ember.ones(2)\nt:addcmul_(ember.tensor({1.0, 2}), ember.tensor({3.0, 4}))\nprint(t)"}

op {"addcdiv", {}, "t, t1, t2, [opts]", "t1, t2, [opts]", [[
Returns t + value * t1 / t2 (opts.value, default 1), with broadcasting. t1 and t2 may
not both be integer tensors (PyTorch refuses integer division here). Differentiable.]],
  "print(ember.addcdiv(ember.ones(2), ember.tensor({1.0, 2}), ember.tensor({4.0, 8}), {value = 2}))",
  "local t = ember.ones(2)\nt:addcdiv_(ember.tensor({1.0, 2}), ember.tensor({4.0, 8}))\nprint(t)"}

op {"isclose", {}, "a, b, [rtol], [atol], [equal_nan]", "b, [rtol], [atol], [equal_nan]", [[
Returns a bool tensor: true where |a - b| <= atol + |rtol * b| (rtol 1e-5, atol 1e-8;
also as an options table), or a == b (equal infinities). NaN equals NaN only with
equal_nan. a and b must have one dtype; they broadcast.]],
  "print(ember.isclose(ember.tensor({1.0, 0/0}), ember.tensor({1.000001, 0/0}), {equal_nan = true}))"}

op {"allclose", {}, "a, b, [rtol], [atol], [equal_nan]", "b, [rtol], [atol], [equal_nan]", [[
Returns a Lua boolean: whether ember.isclose(a, b, ...) holds everywhere.]],
  "print(ember.allclose(ember.tensor({1.0, 2}), ember.tensor({1.0, 2.0000001})))   -- true"}

op {"equal", {}, "a, b", "b", [[
Returns a Lua boolean: whether a and b have the same shape and equal values (compared
after type promotion; NaN is never equal).]],
  "print(ember.equal(ember.tensor({1, 2}), ember.tensor({1.0, 2.0})), ember.equal(ember.ones(2), ember.ones(3)))"}

-- the data above is written in long lines: wrap each doc line at 88 columns
local function wrap(text)
  local out = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do
    local cur = ""
    for word in line:gmatch("%S+") do
      if cur ~= "" and #cur + 1 + #word > 88 then
        out[#out + 1] = cur
        cur = word
      else
        cur = cur == "" and word or cur .. " " .. word
      end
    end
    out[#out + 1] = cur
  end
  return table.concat(out, "\n")
end

for _, e in ipairs(entries) do e.doc = wrap(e.doc) end

return entries
