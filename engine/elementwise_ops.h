/*
 * elementwise_ops.h — the unary and binary elementwise ops, each declared
 * once. Included by ember.h (which makes the enums em_unary_op and
 * em_binary_op from it); the engine's name tables, the backward nodes' names,
 * the CUDA kernels' name tables and the Lua registration (lua/
 * bind_elementwise.c, which also lists the table for Lua as ember._ops()) are
 * made from the same lists, so they cannot disagree.
 *
 * The lists declare; they never make function bodies. A unary op's formula
 * is written once in engine/unary_math.h, for the CPU's loops
 * (engine/cpu/unary.c) and the CUDA kernels (kernels/unary.cu), whose
 * dispatch is made from the UNARY list; a binary op has its hand-written CPU
 * loop (engine/cpu/binary.c) and CUDA functor (kernels/binary.cu). Each has
 * its backward (engine/grad_elementwise.c). Those switches have no default
 * case, so gcc's -Wswitch (-Wall -Werror) refuses a build where an op of the
 * list has no case there.
 *
 * Adding a unary op: a line here (the enum value's position is its line's),
 * its cases in unary_math.h and its backward case: three files; then its
 * domain in tests/gpu/ops_table_spec.lua (which fails while the op is
 * missing there) and its doc entry (lua/ember/doc/). A binary op: a line
 * here, its loops, its CUDA functor, its backward case, its domain and its
 * doc entry.
 *
 * Columns of X(op, name, inplace, backward, dtypes, autocast, binding):
 *   op        the enum value
 *   name      PyTorch's name (errors, kernels, Lua)
 *   inplace   the in-place spelling, NULL when PyTorch has none
 *   backward  the autograd node's name, NULL when the op records no node
 *             (bool and integer results never record one)
 *   dtypes    the em_op_dtypes class: which input dtypes the op takes and
 *             what it returns
 *   autocast  the op's em_autocast_policy (NONE, FP32_CUDA or PROMOTE)
 *   binding   em_op_binding: how Lua reaches the op
 */
#ifndef EMBER_ELEMENTWISE_OPS_H
#define EMBER_ELEMENTWISE_OPS_H

/* Input dtypes an op takes (float16 and bfloat16 count as floats: the
 * engine computes them in float32, or the backend's half loops do). */
typedef enum em_op_dtypes {
    EM_OPDT_FLOAT,      /* floats; integer and bool inputs promote to the default float dtype */
    EM_OPDT_NUMERIC,    /* floats and integers (an integer loop); bool refused */
    EM_OPDT_ALL,        /* every dtype, bool included */
    EM_OPDT_INTEGER,    /* integers only (shifts) */
    EM_OPDT_BITWISE,    /* integers and bool */
    EM_OPDT_TO_BOOL,    /* every dtype; the result is bool (comparisons, logical ops) */
    EM_NOPDT
} em_op_dtypes;

/* What autocast does to an op's tensor inputs while it is active (PyTorch's
 * autocast lists, which differ by device type: each tensor is cast by its own
 * device type's list; engine/autocast.c applies them). Eligible tensors are
 * floating, not float64, on a device type whose autocast is on.
 *   NONE        nothing: the op runs in its inputs' dtypes;
 *   FP32_CUDA   to float32 on CUDA devices (its float16 result loses too
 *               much); PyTorch's CPU lists leave these ops in their dtype;
 *   PROMOTE     to the widest float among the eligible inputs;
 *   LOWER       to the region's low-precision dtype (matmul, conv, ...);
 *   FP32        to float32 on every device (prod, cdist, cross_entropy);
 *   LOWER_CUDA  LOWER on CUDA devices, nothing on the CPU (mv, addmv);
 *   PROMOTE_CUDA_LOWER_CPU  PROMOTE on CUDA devices, LOWER on the CPU
 *               (tensordot: PyTorch's CPU reaches it through its mm).
 * The op table's autocast column takes the first three. */
typedef enum em_autocast_policy {
    EM_AC_NONE, EM_AC_FP32_CUDA, EM_AC_PROMOTE, EM_AC_LOWER, EM_AC_FP32, EM_AC_LOWER_CUDA,
    EM_AC_PROMOTE_CUDA_LOWER_CPU, EM_NAC
} em_autocast_policy;

/* How Lua reaches the op: */
typedef enum em_op_binding {
    EM_OPB_GENERIC,     /* ember.name(t, ...) and t:name(...) (and the in-place name) are
                         * the generic functions of lua/bind_elementwise.c */
    EM_OPB_OWN,         /* the binding writes its own functions under these names (extra
                         * arguments: add's alpha, div's rounding_mode, round's decimals,
                         * gelu's approximate) */
    EM_OPB_INTERNAL,    /* no Lua name (reached through another op: div's rounding modes,
                         * gelu's backward) */
    EM_NOPB
} em_op_binding;

#define EM_UNARY_OPS(X)                                                                                                         \
    X(EM_NEG,         "neg",         "neg_",         "NegBackward",        EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ABS,         "abs",         "abs_",         "AbsBackward",        EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_SIGN,        "sign",        "sign_",        "SignBackward",       EM_OPDT_ALL,     EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_EXP,         "exp",         "exp_",         "ExpBackward",        EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_LOG,         "log",         "log_",         "LogBackward",        EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_LOG1P,       "log1p",       "log1p_",       "Log1pBackward",      EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_EXPM1,       "expm1",       "expm1_",       "Expm1Backward",      EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_SQRT,        "sqrt",        "sqrt_",        "SqrtBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_RSQRT,       "rsqrt",       "rsqrt_",       "RsqrtBackward",      EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_SIN,         "sin",         "sin_",         "SinBackward",        EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_COS,         "cos",         "cos_",         "CosBackward",        EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_TANH,        "tanh",        "tanh_",        "TanhBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_SIGMOID,     "sigmoid",     "sigmoid_",     "SigmoidBackward",    EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_RELU,        "relu",        "relu_",        "ReluBackward",       EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_GELU,        "gelu",        "gelu_",        "GeluBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_OWN)        \
    X(EM_SILU,        "silu",        "silu_",        "SiluBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_FLOOR,       "floor",       "floor_",       "FloorBackward",      EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_CEIL,        "ceil",        "ceil_",        "CeilBackward",       EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ROUND,       "round",       "round_",       "RoundBackward",      EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_OWN)        \
    X(EM_LOGICAL_NOT, "logical_not", "logical_not_", NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_RECIPROCAL,  "reciprocal",  "reciprocal_",  "ReciprocalBackward", EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    /* bool squares to int64 (square is pow(x, 2)) */                                                                           \
    X(EM_SQUARE,      "square",      "square_",      "SquareBackward",     EM_OPDT_ALL,     EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* d/dx gelu(x) = Phi(x) + x phi(x): GELU's backward */                                                                     \
    X(EM_GELU_GRAD,   "gelu_grad",   NULL,           "GeluGradBackward",   EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_INTERNAL)   \
    /* elementwise math */                                                                                                      \
    X(EM_EXP2,        "exp2",        "exp2_",        "Exp2Backward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LOG2,        "log2",        "log2_",        "Log2Backward",       EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_LOG10,       "log10",       "log10_",       "Log10Backward",      EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_ERF,         "erf",         "erf_",         "ErfBackward",        EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ERFC,        "erfc",        "erfc_",        "ErfcBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ERFINV,      "erfinv",      "erfinv_",      "ErfinvBackward",     EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_TRUNC,       "trunc",       "trunc_",       "TruncBackward",      EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_TAN,         "tan",         "tan_",         "TanBackward",        EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_SINH,        "sinh",        "sinh_",        "SinhBackward",       EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_COSH,        "cosh",        "cosh_",        "CoshBackward",       EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_ASIN,        "asin",        "asin_",        "AsinBackward",       EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_ACOS,        "acos",        "acos_",        "AcosBackward",       EM_OPDT_FLOAT,   EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_ATAN,        "atan",        "atan_",        "AtanBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ASINH,       "asinh",       "asinh_",       "AsinhBackward",      EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ACOSH,       "acosh",       "acosh_",       "AcoshBackward",      EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_ATANH,       "atanh",       "atanh_",       "AtanhBackward",      EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* digamma = polygamma(0, x) (engine/polygamma.h); lgamma = log |Gamma(x)| */                                               \
    X(EM_DIGAMMA,     "digamma",     "digamma_",     "DigammaBackward",    EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LGAMMA,      "lgamma",      "lgamma_",      "LgammaBackward",     EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* bool goes to logical_not */                                                                                              \
    X(EM_BITWISE_NOT, "bitwise_not", "bitwise_not_", NULL,                 EM_OPDT_BITWISE, EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* gelu(x, approximate = "tanh") = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), also the fused */                       \
    /* linear's activation (reached through gelu's binding), and its derivative */                                              \
    X(EM_GELU_TANH,   "gelu_tanh",   NULL,           "GeluBackward",       EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_INTERNAL)   \
    X(EM_GELU_TANH_GRAD, "gelu_tanh_grad", NULL, "GeluTanhGradBackward", EM_OPDT_FLOAT, EM_AC_NONE, EM_OPB_INTERNAL) \
    /* d/dx silu(x) = s (1 + x (1 - s)), s = sigmoid(x): SiLU's backward in one pass */                                     \
    X(EM_SILU_GRAD,   "silu_grad",   NULL,           "SiluGradBackward",   EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_INTERNAL) \
    /* y (1 - y) of sigmoid's output y: its derivative in one pass */                                                      \
    X(EM_SIGMOID_GRAD, "sigmoid_grad", NULL,         "SigmoidGradBackward", EM_OPDT_FLOAT,  EM_AC_NONE,      EM_OPB_INTERNAL)

#define EM_BINARY_OPS(X)                                                                                                                           \
    X(EM_ADD,            "add",                 "add_",                 "AddBackward",        EM_OPDT_ALL,     EM_AC_NONE,      EM_OPB_OWN)        \
    X(EM_SUB,            "sub",                 "sub_",                 "SubBackward",        EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_OWN)        \
    X(EM_MUL,            "mul",                 "mul_",                 "MulBackward",        EM_OPDT_ALL,     EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_DIV,            "div",                 "div_",                 "DivBackward",        EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_OWN)        \
    X(EM_REMAINDER,      "remainder",           "remainder_",           "RemainderBackward",  EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_POW,            "pow",                 "pow_",                 "PowBackward",        EM_OPDT_NUMERIC, EM_AC_FP32_CUDA, EM_OPB_GENERIC)    \
    X(EM_MAXIMUM,        "maximum",             "maximum_",             "MaximumBackward",    EM_OPDT_ALL,     EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_MINIMUM,        "minimum",             "minimum_",             "MinimumBackward",    EM_OPDT_ALL,     EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_EQ,             "eq",                  "eq_",                  NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_NE,             "ne",                  "ne_",                  NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LT,             "lt",                  "lt_",                  NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LE,             "le",                  "le_",                  NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_GT,             "gt",                  "gt_",                  NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_GE,             "ge",                  "ge_",                  NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LOGICAL_AND,    "logical_and",         "logical_and_",         NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LOGICAL_OR,     "logical_or",          "logical_or_",          NULL,                 EM_OPDT_TO_BOOL, EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* elementwise math */                                                                                                                         \
    X(EM_ATAN2,          "atan2",               "atan2_",               "Atan2Backward",      EM_OPDT_FLOAT,   EM_AC_PROMOTE,   EM_OPB_GENERIC)    \
    X(EM_HYPOT,          "hypot",               "hypot_",               "HypotBackward",      EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_COPYSIGN,       "copysign",            "copysign_",            "CopysignBackward",   EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LOGADDEXP,      "logaddexp",           NULL,                   "LogaddexpBackward",  EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_LOGADDEXP2,     "logaddexp2",          NULL,                   "Logaddexp2Backward", EM_OPDT_FLOAT,   EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* C fmod (the sign of the dividend), and division rounded toward zero or down: */                                                             \
    /* div(a, b, {rounding_mode = "trunc"}) and floor_divide; integer division by zero is an error */                                              \
    X(EM_FMOD,           "fmod",                "fmod_",                "FmodBackward",       EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_DIV_TRUNC,      "div_trunc",           "div_trunc_",           "DivBackward",        EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_INTERNAL)   \
    X(EM_DIV_FLOOR,      "div_floor",           "div_floor_",           "DivBackward",        EM_OPDT_NUMERIC, EM_AC_NONE,      EM_OPB_INTERNAL)   \
    /* a shift by a negative count or by the width of the type or more gives 0 (left) or the sign fill (right) */                                  \
    X(EM_BITWISE_AND,    "bitwise_and",         "bitwise_and_",         NULL,                 EM_OPDT_BITWISE, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_BITWISE_OR,     "bitwise_or",          "bitwise_or_",          NULL,                 EM_OPDT_BITWISE, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_BITWISE_XOR,    "bitwise_xor",         "bitwise_xor_",         NULL,                 EM_OPDT_BITWISE, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_BITWISE_LSHIFT, "bitwise_left_shift",  "bitwise_left_shift_",  NULL,                 EM_OPDT_INTEGER, EM_AC_NONE,      EM_OPB_GENERIC)    \
    X(EM_BITWISE_RSHIFT, "bitwise_right_shift", "bitwise_right_shift_", NULL,                 EM_OPDT_INTEGER, EM_AC_NONE,      EM_OPB_GENERIC)    \
    /* polygamma(n, x) as the binary op (x, n): the order n is a parameter that travels as the */                                                  \
    /* second operand, a number the binding checks is a non-negative integer and the engine */                                                     \
    /* passes as a stride-0 scalar, so the table's binary kernels, broadcasting, dtype rules and */                                                \
    /* recording serve it with no new kernel family; each kernel evaluates engine/polygamma.h */                                                   \
    /* (NaN for an n that is not a non-negative integer). x gets the gradient polygamma(n+1, x), */                                                \
    /* n none */                                                                                                                                   \
    X(EM_POLYGAMMA,      "polygamma",           "polygamma_",           "PolygammaBackward",  EM_OPDT_FLOAT,   EM_AC_NONE,    EM_OPB_OWN)

#endif
