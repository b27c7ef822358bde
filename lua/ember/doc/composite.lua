-- Docs of the functions composed in Lua (lua/ember/composite.lua): the matrix-vector
-- family, gcd/lcm, fmin/fmax, float_power, sinc, signbit, ldexp, nextafter, rad2deg/deg2rad,
-- isreal, positive. Format: ember/help.lua. Each is ember.X and Tensor:X; the in-place
-- Tensor:X_ (where PyTorch has one) writes X's result into self, which must keep its
-- shape and be able to hold the result's dtype, and is refused on a tensor autograd records.
local entries = {}

-- name, signature after the name, in-place form?, doc, example
local function fn(name, args, inplace, doc, example)
  local also = {"Tensor:" .. name}
  local sig = "ember." .. name .. "(" .. args .. ")\nTensor:" .. name .. "(" .. args:gsub("^[%w_]+,? ?", "") .. ")"
  if inplace then
    also[#also + 1] = "Tensor:" .. name .. "_"
    sig = sig .. "\nTensor:" .. name .. "_(" .. args:gsub("^[%w_]+,? ?", "") .. ")"
  end
  entries[#entries + 1] = {name = "ember." .. name, also = also, sig = sig,
                           doc = doc .. "\nLike torch." .. name .. ".", example = example}
end

local BA = "beta and alpha are keyword-only, in the options table (integers for integer inputs);\n"
        .. "with beta = 0 input is not read, so its NaN and infinities do not reach the result."

fn("mv", "mat, vec", false, "mat @ vec for a 2-D mat [n, m] and a 1-D vec [m] of the same dtype: [n].",
   "print(ember.mv(ember.tensor({{1.0, 2.0}, {3.0, 4.0}}), ember.tensor({1.0, 1.0})))   -- [3, 7]")
fn("addmv", "input, mat, vec [, {beta = 1, alpha = 1}]", true,
   "beta * input + alpha * (mat @ vec); input broadcasts to [n].\n" .. BA,
   "local m = ember.tensor({{1.0, 2.0}, {3.0, 4.0}})\n"
   .. "print(ember.addmv(ember.ones(2), m, ember.tensor({1.0, 1.0}), {beta = 2, alpha = 3}))   -- [11, 23]")
fn("addr", "input, vec1, vec2 [, {beta = 1, alpha = 1}]", true,
   "beta * input + alpha * outer(vec1, vec2); input broadcasts to [n, m].\n" .. BA,
   "print(ember.addr(ember.zeros(2, 2), ember.tensor({1.0, 2.0}), ember.tensor({3.0, 4.0}), {alpha = 2}))")
fn("baddbmm", "input, batch1, batch2 [, {beta = 1, alpha = 1}]", true,
   "beta * input + alpha * bmm(batch1, batch2) for batch1 [b, n, m], batch2 [b, m, p].\n" .. BA,
   "print(ember.baddbmm(ember.ones(2, 1, 1), ember.ones(2, 1, 3), ember.ones(2, 3, 1)))   -- 4s")
fn("addbmm", "input, batch1, batch2 [, {beta = 1, alpha = 1}]", true,
   "beta * input + alpha * (the sum over b of batch1[b] @ batch2[b]): [n, p], one GEMM.\n" .. BA,
   "print(ember.addbmm(ember.zeros(1, 1), ember.ones(3, 1, 2), ember.ones(3, 2, 1)))   -- [[6]]")
fn("vdot", "a, b", false, "The dot product of two 1-D tensors of one size and dtype, as a 0-d tensor\n"
   .. "(ember has no complex dtypes, so nothing is conjugated).",
   "print(ember.vdot(ember.tensor({1.0, 2.0}), ember.tensor({3.0, 4.0})))   -- 11")
fn("inner", "a, b", false, "Sums of products over the last dims of a and b (equal sizes): the result's shape is\n"
   .. "a's without its last dim then b's without its last dim; a * b when either is 0-d.",
   "print(ember.inner(ember.ones(2, 3), ember.ones(4, 3)).shape)   -- {2, 4}")
fn("ger", "vec1, vec2", false, "outer(vec1, vec2): PyTorch's older name of ember.outer.",
   "print(ember.ger(ember.tensor({1.0, 2.0}), ember.tensor({1.0, 10.0})))")
fn("gcd", "a, b", true, "The greatest common divisor of integer tensors, broadcast and promoted; always >= 0,\n"
   .. "gcd(0, 0) = 0. Float or bool inputs are errors. Euclid's algorithm on all elements at\n"
   .. "once (a pass per remainder step, at most ~92 for int64).",
   "print(ember.gcd(ember.tensor({12, -18, 0}), ember.tensor({8, 12, 5})))   -- [4, 6, 5]")
fn("lcm", "a, b", true, "The least common multiple of integer tensors, broadcast and promoted; >= 0, and 0\n"
   .. "where either is 0.", "print(ember.lcm(ember.tensor({4, -6}), ember.tensor({6, 4})))   -- [12, 12]")
fn("fmin", "a, b", false, "The elementwise minimum ignoring NaN: NaN only where both are NaN (ember.minimum\n"
   .. "propagates NaN). Broadcasts and promotes; a tie shares the gradient as PyTorch's does.",
   "print(ember.fmin(ember.tensor({1.0, 0/0, 3.0}), ember.tensor({2.0, 1.0, 0/0})))   -- [1, 1, 3]")
fn("fmax", "a, b", false, "The elementwise maximum ignoring NaN: NaN only where both are NaN.",
   "print(ember.fmax(ember.tensor({1.0, 0/0}), ember.tensor({2.0, 1.0})))   -- [2, 1]")
fn("float_power", "input, exponent", true, "input ^ exponent computed in float64 whatever the inputs' dtypes (either may be a\n"
   .. "number); the in-place form needs a float64 self.",
   "print(ember.float_power(ember.tensor({2, 4}), 0.5))   -- float64 [1.4142, 2]")
fn("sinc", "x", true, "sin(pi x) / (pi x), and 1 at x = 0, where the gradient is 0. Integer and bool\n"
   .. "inputs give the default float dtype.",
   "print(ember.sinc(ember.tensor({0.0, 0.5, 1.0})))   -- [1, 0.6366, ~0]")
fn("signbit", "x", false, "A bool tensor: whether x's sign bit is set (true for -0.0 and negative integers;\n"
   .. "false for unsigned and bool inputs).",
   "print(ember.signbit(ember.tensor({-0.0, 0.0, -2.0})))   -- [true, false, true]")
fn("ldexp", "x, e", true, "x * 2^e elementwise (a float result; integer x becomes the default float dtype).",
   "print(ember.ldexp(ember.tensor({1.0, 3.0}), ember.tensor({3, -1})))   -- [8, 1.5]")
fn("nextafter", "input, other", true, "The next floating-point value after input towards other, elementwise in\n"
   .. "their promoted float dtype (float32, float64, float16 or bfloat16; other itself where\n"
   .. "they are equal, NaN if either is NaN). Integer-only inputs are refused. The gradient\n"
   .. "passes to input unchanged; other gets zero (PyTorch's rule).",
   "print(ember.nextafter(ember.tensor({1.0}), ember.tensor({2.0})) - 1)   -- [1.1921e-07], float32's epsilon")
fn("rad2deg", "x", true, "x * 180 / pi (integer input: the default float dtype).",
   "print(ember.rad2deg(ember.tensor({math.pi, -math.pi / 2})))   -- [180, -90]")
fn("deg2rad", "x", true, "x * pi / 180 (integer input: the default float dtype).",
   "print(ember.deg2rad(ember.tensor({180.0, 90.0})))   -- [3.1416, 1.5708]")
fn("isreal", "x", false, "A bool tensor of x's shape, all true: ember has no complex dtypes.",
   "print(ember.isreal(ember.ones(2)))")
fn("positive", "x", false, "x itself, as a view sharing x's storage; refused for bool tensors, as PyTorch.",
   "local x = ember.tensor({1.0, -2.0})\nprint(ember.positive(x))")

return entries
