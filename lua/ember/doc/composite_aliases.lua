-- Docs of lua/ember/composite/aliases.lua: PyTorch's other names of ember's ops and their
-- in-place forms, rsub, the predicates and conjugations, type_as, ndimension, cumsum_,
-- cumprod_, addmm_, fill_diagonal_, sum_to_size, unravel_index and the dtype helpers
-- (result_type, promote_types, can_cast, broadcast_shapes). Format: ember/help.lua.
local entries = {}

local function entry(name, also, sig, doc, torch_name, example)
  entries[#entries + 1] = {name = name, also = also, sig = sig, doc = doc .. "\nLike torch." .. torch_name .. ".",
                           example = example}
end

-- ---- other names -------------------------------------------------------------------------

-- ember.X, Tensor:X and Tensor:X_, other names of ember.of (and Tensor:of_)
local function comparison(name, of, symbol)
  entry("ember." .. name, {"Tensor:" .. name, "Tensor:" .. name .. "_"},
        "ember." .. name .. "(input, other)\nTensor:" .. name .. "(other)\nTensor:" .. name .. "_(other)",
        "Another name of ember." .. of .. ": the bool tensor input " .. symbol .. " other, elementwise (other a\n"
        .. "tensor or a number; broadcast and compared in the promoted dtype). The in-place\n"
        .. "form writes 1 or 0 into self, which keeps its dtype (Tensor:" .. of .. "_).",
        name, "print(ember." .. name .. "(ember.tensor({1.0, 2.0, 3.0}), 2))")
end

comparison("greater", "gt", ">")
comparison("greater_equal", "ge", ">=")
comparison("less", "lt", "<")
comparison("less_equal", "le", "<=")
comparison("not_equal", "ne", "~=")

entry("ember.absolute", {"Tensor:absolute", "Tensor:absolute_"},
      "ember.absolute(input)\nTensor:absolute()\nTensor:absolute_()",
      "Another name of ember.abs: |input| elementwise (refused for bool); absolute_ is abs_.",
      "absolute", "print(ember.absolute(ember.tensor({-1.5, 2.0})))   -- [1.5, 2]")

-- Tensor:X_, the in-place form of ember.X (a C alias of ember.of): Tensor:of_
local function inplace_alias(name, of, args, doc, example)
  entry("Tensor:" .. name .. "_", nil, "Tensor:" .. name .. "_(" .. args .. ")",
        "The in-place form of ember." .. name .. " (Tensor:" .. of .. "_):\n" .. doc, name, example)
end

inplace_alias("multiply", "mul", "other", "self * other written into self.",
              "local t = ember.tensor({1.0, 2.0})\nprint(t:multiply_(3), t)   -- [3, 6] twice")
inplace_alias("divide", "div", "other [, {rounding_mode = nil}]",
              "self / other written into self; rounding_mode \"trunc\" or \"floor\" rounds\n"
              .. "the quotient (then an integer self works too).",
              "print(ember.tensor({7.0, -7.0}):divide_(2, {rounding_mode = \"floor\"}))   -- [3, -4]")
inplace_alias("true_divide", "div", "other", "self / other written into self (a float self).",
              "print(ember.tensor({7.0}):true_divide_(2))   -- [3.5]")
inplace_alias("subtract", "sub", "other [, {alpha = 1}]", "self - alpha * other written into self.",
              "print(ember.tensor({7.0}):subtract_(1, {alpha = 2}))   -- [5]")
inplace_alias("negative", "neg", "", "-self written into self (refused for bool).",
              "print(ember.tensor({1.0, -2.0}):negative_())   -- [-1, 2]")

entry("ember.rsub", nil, "ember.rsub(input, other [, {alpha = 1}])",
      "other - alpha * input (subtraction with the operands swapped): input a tensor, other a\n"
      .. "tensor or a number; broadcast and promoted as ember.sub. alpha is keyword-only, and an\n"
      .. "integer when the result is an integer dtype; bool operands are refused. There is no\n"
      .. "Tensor:rsub, as in PyTorch.",
      "rsub", "print(ember.rsub(ember.tensor({1.0, 2.0}), 10, {alpha = 2}))   -- [8, 6]")

-- ---- predicates and conjugations ---------------------------------------------------------

entry("ember.is_floating_point", nil, "ember.is_floating_point(input)",
      "Whether input's dtype is float32, float64, float16 or bfloat16 (the function form of\n"
      .. "Tensor:is_floating_point).",
      "is_floating_point", "print(ember.is_floating_point(ember.ones(2)), ember.is_floating_point(ember.tensor({1})))")
entry("ember.is_signed", {"Tensor:is_signed"}, "ember.is_signed(input)\nTensor:is_signed()",
      "Whether input's dtype holds negative numbers: every dtype but uint8 and bool.",
      "is_signed", "print(ember.ones(2):is_signed(), ember.tensor({1}, {dtype = \"uint8\"}):is_signed())")
entry("ember.is_nonzero", {"Tensor:is_nonzero"}, "ember.is_nonzero(input)\nTensor:is_nonzero()",
      "Whether the one element of input is not zero (NaN is not zero; false is zero). A tensor\n"
      .. "of no element or of more than one is an error: its truth is ambiguous.",
      "is_nonzero", "print(ember.tensor({0.0}):is_nonzero(), ember.is_nonzero(ember.tensor(3)))   -- false  true")
entry("ember.is_same_size", {"Tensor:is_same_size"}, "ember.is_same_size(input, other)\nTensor:is_same_size(other)",
      "Whether the two tensors have the same shape (their dtypes and devices may differ).",
      "is_same_size", "print(ember.ones(2, 3):is_same_size(ember.zeros(2, 3, {dtype = \"int64\"})))   -- true")
entry("ember.get_device", {"Tensor:get_device"}, "ember.get_device(input)\nTensor:get_device()",
      "The index of the CUDA device input is on (0-based, as in t.device's \"cuda:N\"); -1 for a\n"
      .. "tensor on the CPU.",
      "get_device", "print(ember.ones(2):get_device())   -- -1")
-- ember.X and Tensor:X, always false
local function never(name, why)
  entry("ember." .. name, {"Tensor:" .. name}, "ember." .. name .. "(input)\nTensor:" .. name .. "()",
        "false: " .. why, name, "print(ember." .. name .. "(ember.ones(2)))   -- false")
end

never("is_complex", "ember has no complex dtypes.")
never("is_conj", "ember has no complex dtypes, so no tensor is a lazily conjugated view.")
never("is_neg", "ember has no lazily negated views (PyTorch makes them only for complex\nconjugates).")

-- ember.X and Tensor:X, the identity on ember's (real) tensors
local function identity(name, also, what)
  local sig = "ember." .. name .. "(input)\nTensor:" .. name .. "()"
  also = also or {}
  table.insert(also, 1, "Tensor:" .. name)
  if also[2] then sig = sig .. "\nTensor:" .. name .. "_()" end
  entry("ember." .. name, also, sig, "input itself: " .. what .. " ember's tensors are real\n"
        .. "(no complex dtypes), so nothing changes, and no copy is made, as PyTorch does for real\ndtypes.",
        name, "local x = ember.tensor({1.0, -2.0})\nprint(rawequal(ember." .. name .. "(x), x))   -- true")
end

identity("conj", nil, "the complex conjugate;")
identity("conj_physical", {"Tensor:conj_physical_"}, "the conjugate, materialised;")
identity("resolve_conj", nil, "a conjugate view made real;")
identity("resolve_neg", nil, "a negated view made real;")

entry("Tensor:ndimension", nil, "Tensor:ndimension()", "The number of dimensions: t:dim().",
      "Tensor.ndimension", "print(ember.ones(2, 3):ndimension())   -- 2")
entry("Tensor:type_as", nil, "Tensor:type_as(other)",
      "t converted to other's dtype, and to the CPU or CUDA when other is there and t is not (a\n"
      .. "tensor on a GPU stays on its GPU, one moving goes to the current device, as PyTorch's\n"
      .. "t.type(other.type())); t itself when nothing changes. Recorded by autograd.",
      "Tensor.type_as", "print(ember.tensor({1, 2}):type_as(ember.ones(1, {dtype = \"float64\"})))")

-- ---- in-place forms ----------------------------------------------------------------------

local INPLACE = "self keeps its shape and dtype; refused on a tensor autograd records."

entry("Tensor:cumsum_", nil, "Tensor:cumsum_(dim [, {dtype}])",
      "self holding its cumulative sums along dim (1-based, negative from the end), computed\n"
      .. "in self's dtype (integers wrap); dtype may be given only as self's. Bool is refused.\n" .. INPLACE,
      "Tensor.cumsum_", "print(ember.tensor({1, 2, 3}):cumsum_(1))   -- [1, 3, 6]")
entry("Tensor:cumprod_", nil, "Tensor:cumprod_(dim [, {dtype}])",
      "self holding its cumulative products along dim, computed in self's dtype (integers\n"
      .. "wrap); dtype may be given only as self's. Bool is refused.\n" .. INPLACE,
      "Tensor.cumprod_", "print(ember.tensor({{1.0, 2.0, 3.0}}):cumprod_(2))   -- [[1, 2, 6]]")
entry("Tensor:addmm_", nil, "Tensor:addmm_(mat1, mat2 [, {beta = 1, alpha = 1}])",
      "self holding beta * self + alpha * (mat1 @ mat2), as ember.addmm; self must have the\n"
      .. "product's shape (no broadcasting) and a dtype the result casts to. Refused on a tensor\n"
      .. "autograd records (self, mat1 or mat2).",
      "Tensor.addmm_", "print(ember.zeros(2, 2):addmm_(ember.ones(2, 3), ember.ones(3, 2), {alpha = 2}))   -- 6s")
entry("Tensor:fill_diagonal_", nil, "Tensor:fill_diagonal_(fill_value [, wrap = false])",
      "self with its main diagonal set to fill_value: the elements [i, i] (i from 1 to the\n"
      .. "smaller size) of a matrix, [i, i, ..., i] of a tensor of more dims, all of one size.\n"
      .. "With wrap, a matrix taller than wide gets the diagonal again every width + 1 rows, as\n"
      .. "numpy's (counted in row-major order, where PyTorch follows the memory's strides: they\n"
      .. "differ only for a non-contiguous tall matrix). Refused on a tensor autograd records.",
      "Tensor.fill_diagonal_", "print(ember.zeros(3, 3):fill_diagonal_(5))")
entry("Tensor:sum_to_size", nil, "Tensor:sum_to_size(size...)\nTensor:sum_to_size(sizes)",
      "t summed to the shape size, one t broadcasts from (as the gradient of a broadcast is\n"
      .. "reduced): the leading dims and those where size has 1 are summed. t itself when size\n"
      .. "is t's shape. Integer and bool tensors sum to int64, as t:sum().",
      "Tensor.sum_to_size", "print(ember.ones(2, 3):sum_to_size(1, 3))   -- [[2, 2, 2]]")

-- ---- positions and dtypes ----------------------------------------------------------------

entry("ember.unravel_index", nil, "ember.unravel_index(indices, shape)",
      "The coordinates in a tensor of shape that the flat positions indices point at: one int64\n"
      .. "tensor of indices' shape per dim of shape, returned as several values. Positions and\n"
      .. "coordinates are 1-based (negative positions count from the end: -1 is the last);\n"
      .. "indices is an integer tensor or an integer, shape a list or an integer. A position\n"
      .. "out of range is an error (PyTorch leaves it undefined).",
      "unravel_index", "local rows, cols = ember.unravel_index(ember.tensor({1, 5, 6}), {2, 3})\n"
      .. "print(rows, cols)   -- [1, 2, 2]  [1, 2, 3]")
entry("ember.result_type", nil, "ember.result_type(tensor1, tensor2)",
      "The dtype of a binary op's result on the two operands (tensors, numbers or booleans), by\n"
      .. "the rule every ember op follows: tensors with dims outrank 0-d tensors, which outrank\n"
      .. "numbers, unless the lower one is of a higher kind (bool < integer < float); a Lua\n"
      .. "integer is an integer, a Lua float a float of the default dtype.",
      "result_type", "print(ember.result_type(ember.tensor({1, 2}), 1.5))   -- float32")
entry("ember.promote_types", nil, "ember.promote_types(type1, type2)",
      "The dtype that tensors of dtypes type1 and type2 promote to (dtype names as strings).",
      "promote_types", "print(ember.promote_types(\"int32\", \"float16\"), ember.promote_types(\"float16\", \"bfloat16\"))")
entry("ember.can_cast", nil, "ember.can_cast(from, to)",
      "Whether an op may write a result of dtype from into a tensor of dtype to (the rule of\n"
      .. "the in-place forms): never float to an integer or bool, never a number to bool.",
      "can_cast", "print(ember.can_cast(\"float64\", \"float16\"), ember.can_cast(\"float32\", \"int64\"))   -- true  false")
entry("ember.broadcast_shapes", nil, "ember.broadcast_shapes(shape...)",
      "The shape tensors of the given shapes broadcast to, as an ember.Size (each shape a list,\n"
      .. "an ember.Size or an integer for a 1-D shape); shapes that do not broadcast are an error.",
      "broadcast_shapes", "print(ember.broadcast_shapes({2, 1}, {1, 3}), ember.broadcast_shapes(2, {3, 1}))")

return entries
