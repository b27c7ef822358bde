-- Docs of the library as a whole ("ember"), ember.autograd and ember.help.
-- Format: ember/help.lua.
return {
  {
    name = "ember",
    sig = "local ember = require \"ember\"   -- pre-loaded in the ember shell",
    doc = [=[
Tensors on the CPU and the GPU with autograd, PyTorch's names and semantics, and
1-based dims and indices (t[1] is the first element, dim 1 the first dim, -1 the last).
Keyword arguments go in a trailing options table: ember.zeros(2, 3, {dtype = "int64"});
where PyTorch returns a tuple, Lua returns several values: local v, i = t:max(2).
  creation     ember.tensor, zeros, ones, full, empty, arange, linspace, eye, *_like
  random       ember.manual_seed, rand, randn, randint, randperm (Philox: the same
               numbers on every run and device)
  math         elementwise ops (ember.add, ember.exp, ...), also as methods (t:exp())
               and operators (+ - * / % ^ unary -); broadcasting and type promotion
  reductions   sum, mean, max, argmax, std, softmax, logsumexp, cumsum, ...
  indexing     t[i], select, narrow, index_select, gather, scatter, cat, stack, sort, topk
  linear alg.  matmul, mm, bmm, addmm, dot, outer
  autograd     t:backward(), t.grad, ember.no_grad, ember.autograd.grad, gradcheck
  files        ember.save / ember.load (safetensors), save_checkpoint, read_idx
  modules      ember.nn, ember.optim, ember.data, ember.autograd, ember.cuda,
               ember.backends, ember.plot (gnuplot: curves, histograms, images)
help(x) or ?x documents any of these: ?ember.zeros, ?Tensor:sum, ?nn.Linear.]=],
    example = [=[
local x = ember.randn(4, 3, {requires_grad = true})
local w = ember.ones(3, 2)
local loss = x:matmul(w):relu():sum()
loss:backward()
print(x.grad.shape[1], x.grad.shape[2])   -- 4 3
local values, indices = ember.tensor({{1, 5}, {7, 2}}):max(2)
print(indices)                           -- [2, 1]: 1-based]=],
  },
  {
    name = "ember.autograd",
    sig = "local autograd = ember.autograd",
    doc = [=[
Gradients on demand and numerical gradient checks:
  autograd.grad(outputs, inputs, {...})   gradients of outputs w.r.t. inputs, returned
                                          rather than accumulated into .grad
  autograd.backward(tensors, grads, ...)  one backward pass from several tensors
  autograd.detect_anomaly(fn)             stop a backward at the first NaN, naming the op
  autograd.gradcheck(fn, inputs, {...})   autograd against finite differences
The tape itself is driven by t:backward(), t.grad, t:requires_grad_(), t:detach(),
t:retain_grad(), t:register_hook() and ember.no_grad / enable_grad.]=],
    example = [=[
local autograd = ember.autograd
local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
local g = autograd.grad((x * x):sum(), x)
print(g)                                                     -- [2, 4]
print(autograd.gradcheck(function(a) return a:exp() end, ember.randn(3)))   -- true]=],
  },
  {
    name = "ember.autograd.grad",
    sig = "autograd.grad(outputs, inputs [, {grad_outputs =, retain_graph =, create_graph = false,\n"
       .. "                                  allow_unused = false}]) -> grad1, grad2, ...",
    doc = [=[
The gradients of outputs (a tensor or a list) with respect to inputs (a tensor or a
list), one returned value per input, without touching any .grad. Non-scalar outputs
need grad_outputs (one tensor per output). create_graph records the backward itself, so
the gradients can be differentiated again (higher-order gradients); retain_graph
(default: create_graph) keeps the graph for another backward. An input the outputs do
not depend on is an error, or gives nil with allow_unused.]=],
    example = [=[
local autograd = ember.autograd
local x = ember.tensor({1.0, 2.0, 3.0}, {requires_grad = true})
local dy = autograd.grad((x * x * x):sum(), x, {create_graph = true})   -- 3x^2
local d2y = autograd.grad(dy:sum(), x)                                   -- 6x
print(dy, d2y)   -- [3, 12, 27] [6, 12, 18]]=],
  },
  {
    name = "ember.autograd.backward",
    sig = "autograd.backward(tensors [, grad_tensors [, retain_graph [, create_graph]]] [, {inputs =}])",
    doc = [=[
One backward pass from every tensor of tensors (a tensor or a list), each seeded with its
entry of grad_tensors (a tensor or a list; nil entries for single-element tensors), the
gradients summed into the leaves' .grad, as torch.autograd.backward. retain_graph and
create_graph as in Tensor:backward; inputs (a tensor or a list) writes only those
tensors' .grad.]=],
    example = [=[
local x = ember.tensor({1.0, 2.0}, {requires_grad = true})
ember.autograd.backward({x * 2, x * x}, {ember.ones(2), ember.ones(2)})
print(x.grad)   -- [4, 6]: 2 + 2x]=],
  },
  {
    name = "ember.autograd.detect_anomaly",
    sig = "autograd.detect_anomaly([{check_nan = true}]) -> guard\n"
       .. "autograd.detect_anomaly(fn, ... [, {check_nan = true}]) -> fn's results",
    doc = [=[
Anomaly mode, as PyTorch's: while it is on, every op that records a backward node
keeps the Lua traceback of its call, and a backward pass (t:backward, autograd.grad)
stops at the first node that fails or, with check_nan, returns a gradient holding a
NaN: the error names the node ("Function 'SqrtBackward' returned nan values in its
1st output") and prints the traceback of the forward call that made it. Use it as a
guard (local _ <close> = autograd.detect_anomaly()) or around a function; the mode is
put back afterwards, also after an error. autograd.set_detect_anomaly(mode
[, check_nan]) switches it for the rest of the program; autograd.is_anomaly_enabled()
and is_anomaly_check_nan_enabled() read it. Every recorded op costs a traceback while
it is on: a debugging aid. Off, nothing is recorded or checked; nodes made while it
was off carry no traceback.]=],
    example = [=[
local x = ember.tensor({1.0, -1.0}, {requires_grad = true})
local ok, err = pcall(ember.autograd.detect_anomaly, function()
  x:sqrt():sum():backward()     -- d sqrt(x)/dx at -1 is NaN
end)
print(err)   -- ... Function 'SqrtBackward' returned nan values ... Traceback of forward call ...]=],
  },
  {
    name = "ember.autograd.set_detect_anomaly",
    sig = "autograd.set_detect_anomaly(mode [, check_nan = true])",
    doc = [=[
Turns anomaly mode on or off for the rest of the program (see
ember.autograd.detect_anomaly). autograd.is_anomaly_enabled() says whether it is on.]=],
    example = [=[
ember.autograd.set_detect_anomaly(true)
print(ember.autograd.is_anomaly_enabled())   -- true
ember.autograd.set_detect_anomaly(false)]=],
  },
  {
    name = "ember.autograd.is_anomaly_enabled",
    sig = "autograd.is_anomaly_enabled() -> boolean",
    doc = [=[
Whether anomaly mode is on (ember.autograd.detect_anomaly).]=],
    example = [=[
print(ember.autograd.is_anomaly_enabled())   -- false]=],
  },
  {
    name = "ember.autograd.is_anomaly_check_nan_enabled",
    sig = "autograd.is_anomaly_check_nan_enabled() -> boolean",
    doc = [=[
Whether anomaly mode is on and checks the gradients of each backward node for NaN.]=],
    example = [=[
local _ <close> = ember.autograd.detect_anomaly({check_nan = false})
print(ember.autograd.is_anomaly_check_nan_enabled())   -- false]=],
  },
  {
    name = "ember.autograd.gradcheck",
    sig = "autograd.gradcheck(fn, inputs [, {eps = 1e-6, atol = 1e-5, rtol = 1e-3}])\n"
       .. "  -> true, or false and a report",
    doc = [=[
Compares autograd's gradient of fn with central finite differences, in float64 (the
inputs are converted). fn takes the inputs (a tensor or a list of tensors) and returns
a tensor or a list of tensors; all outputs are checked at once through a random
weighting. Returns true, or false and a message naming the input and element that
differ (PyTorch raises instead). Slow: one evaluation pair per input element.]=],
    example = [=[
local autograd = ember.autograd
local ok = autograd.gradcheck(function(a, b) return a * b:sin() end, {ember.randn(3), ember.randn(3)})
print(ok)   -- true]=],
  },

  {
    name = "ember.autograd.gradgradcheck",
    sig = "autograd.gradgradcheck(fn, inputs [, {eps = 1e-6, atol = 1e-5, rtol = 1e-3}])\n"
       .. "  -> true, or false and a report",
    doc = [=[
gradcheck for second derivatives: the gradient of phi(x) = sum_i <grad_i s(x), w_i>
(s: the outputs of fn under a fixed random weighting, w_i fixed random directions),
taken by double backward through create_graph, against central finite differences of
phi, each from a fresh first-order backward. float64; returns true, or false and a
message (PyTorch raises instead). Slower than gradcheck.]=],
    example = [=[
local autograd = ember.autograd
print(autograd.gradgradcheck(function(a) return (a * a):sin() end, ember.randn(3)))   -- true]=],
  },

  {
    name = "ember.autograd.Function",
    also = {"ember.autograd.Function.extend"},
    sig = "local F = ember.autograd.Function:extend(name)\n"
       .. "function F.forward(ctx, ...) ... end; function F.backward(ctx, grad_outputs...) ... end\n"
       .. "F.apply(...) or F(...)",
    doc = [=[
A differentiable function with a forward and backward written in Lua, as
torch.autograd.Function. forward runs with recording off and gets ctx first, then the
arguments (tensors or any Lua values); it returns one or more values. backward gets ctx
and one gradient per forward result (zeros for a result that got none; nil for
non-tensor results, or for all missing ones after ctx:set_materialize_grads(false)) and
returns one gradient (a tensor or nil) per forward argument, in order: exactly as many
values as forward took, nil for non-tensors. A gradient of a broadcast shape is summed
down to the input's shape and cast to its dtype. backward may use any ember ops: with
create_graph they are recorded, so second derivatives work (see once_differentiable).
ctx: ctx:save_for_backward(t1, ...) then ctx.saved_tensors in backward (checked against
in-place changes; freed after a backward without retain_graph); ctx.needs_input_grad[i];
ctx:mark_dirty(t) for an input forward changed in place and returns (its history becomes
this function; a leaf that requires grad is refused); ctx:mark_non_differentiable(t) for
results with no gradient (integer results must be marked); other fields (ctx.k = 3) for
anything else. Keep tensors in ctx only through save_for_backward: a result stored as a
field would keep itself alive. Several results share one grad_fn name, <name>Backward.
An input returned as it is comes back as a new tensor (its own history is kept).]=],
    example = [=[
local Exp = ember.autograd.Function:extend("Exp")
function Exp.forward(ctx, x)
  local y = x:exp()
  ctx:save_for_backward(y)
  return y
end
function Exp.backward(ctx, grad)
  local y = ctx.saved_tensors[1]
  return grad * y
end
local x = ember.tensor({0.0, 1.0}, {requires_grad = true})
local y = Exp.apply(x)
print(y.grad_fn)          -- ExpBackward
y:sum():backward()
print(x.grad)             -- [1, 2.7183]]=],
  },
  {
    name = "ember.autograd.once_differentiable",
    sig = "F.backward = ember.autograd.once_differentiable(function(ctx, grad_outputs...) ... end)",
    doc = [=[
Wraps a custom Function's backward so it runs with recording off (for backward code that
is not differentiable, e.g. in-place updates). When the incoming gradients require grad
(a create_graph backward), its results are guarded: differentiating them again raises
"trying to differentiate twice" instead of giving a silently wrong zero. As PyTorch's
@once_differentiable.]=],
    example = [=[
local Sq = ember.autograd.Function:extend("Sq")
function Sq.forward(ctx, x) ctx:save_for_backward(x); return x * x end
Sq.backward = ember.autograd.once_differentiable(function(ctx, g)
  return g * 2 * ctx.saved_tensors[1]
end)
local x = ember.tensor({3.0}, {requires_grad = true})
Sq.apply(x):sum():backward()
print(x.grad)   -- [6]]=],
  },
  {
    name = "ember.autograd.functional",
    sig = "local AF = ember.autograd.functional",
    doc = [=[
Derivatives of whole functions, as torch.autograd.functional: jacobian, hessian, vjp,
jvp, hvp, vhp. func takes the inputs (one tensor, or the tensors of a list) and returns
one or more tensors. Options: create_graph (false: results are detached; true: they stay
differentiable in the inputs), strict (true: an output that does not depend on an input
is an error instead of zeros). jvp and hvp use the double-vjp trick (two backward
passes); func must be differentiable twice for them.]=],
    example = [=[
local AF = ember.autograd.functional
print(AF.jacobian(function(x) return x * x end, ember.tensor({1.0, 2.0})))   -- diag(2x)]=],
  },
  {
    name = "ember.autograd.functional.jacobian",
    sig = "AF.jacobian(func, inputs [, {create_graph = false, strict = false}]) -> J",
    doc = [=[
The Jacobian of func at inputs: for an output of shape O and an input of shape I, a
tensor of shape O .. I. Several inputs give a list (one per input); several outputs a
list per output (of tensors, or of lists for several inputs). One backward per output
element.]=],
    example = [=[
local AF = ember.autograd.functional
local A = ember.tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})
print(AF.jacobian(function(x) return A:matmul(x) end, ember.ones(2)))   -- A
local J = AF.jacobian(function(a, b) return a * b end, {ember.tensor({1.0, 2.0}), ember.tensor({3.0, 4.0})})
print(J[1], J[2])]=],
  },
  {
    name = "ember.autograd.functional.hessian",
    sig = "AF.hessian(func, inputs [, {create_graph = false, strict = false}]) -> H",
    doc = [=[
Second derivatives of a func that returns one element: shape I .. I for one input;
for several inputs a list of lists, H[i][j] of shape Ii .. Ij.]=],
    example = [=[
local AF = ember.autograd.functional
print(AF.hessian(function(x) return (x * x * x):sum() end, ember.tensor({1.0, 2.0})))   -- diag(6x)]=],
  },
  {
    name = "ember.autograd.functional.vjp",
    sig = "AF.vjp(func, inputs [, v, {create_graph, strict}]) -> outputs, vjp",
    doc = [=[
func(inputs) and v^T J: v has the outputs' shapes (it may be left out for one output of
one element). Results per input, as inputs were given.]=],
    example = [=[
local AF = ember.autograd.functional
local out, g = AF.vjp(function(x) return x * x end, ember.tensor({1.0, 2.0}), ember.tensor({1.0, 1.0}))
print(out, g)   -- [1, 4] [2, 4]]=],
  },
  {
    name = "ember.autograd.functional.jvp",
    sig = "AF.jvp(func, inputs [, v, {create_graph, strict}]) -> outputs, jvp",
    doc = [=[
func(inputs) and J v: v has the inputs' shapes (it may be left out for one input of
one element).]=],
    example = [=[
local AF = ember.autograd.functional
local out, jv = AF.jvp(function(x) return x * x end, ember.tensor({1.0, 2.0}), ember.tensor({1.0, 0.0}))
print(jv)   -- [2, 0]]=],
  },
  {
    name = "ember.autograd.functional.hvp",
    sig = "AF.hvp(func, inputs, v [, {create_graph, strict}]) -> value, H v",
    doc = [=[
The value of a func that returns one element, and its Hessian times v (v has the
inputs' shapes).]=],
    example = [=[
local AF = ember.autograd.functional
local value, hv = AF.hvp(function(x) return (x * x * x):sum() end, ember.tensor({1.0, 2.0}), ember.ones(2))
print(value, hv)   -- 9 [6, 12]]=],
  },
  {
    name = "ember.autograd.functional.vhp",
    sig = "AF.vhp(func, inputs, v [, {create_graph, strict}]) -> value, v^T H",
    doc = [=[
As hvp with v on the left: v^T H (the same as H v for a twice continuously
differentiable func).]=],
    example = [=[
local AF = ember.autograd.functional
print(AF.vhp(function(x) return (x * x):sum() end, ember.tensor({1.0, 2.0}), ember.ones(2)))   -- 5 [2, 2]]=],
  },

  -- ---- ember.help -----------------------------------------------------------------------
  {
    name = "ember.help",
    also = {"ember.help.help"},
    sig = "ember.help([x])   -- also help(x) and ?x in the shell\nhelp.help([x])",
    doc = [=[
Prints the documentation of x: a function, class, module or tensor of ember, or a name:
"ember.zeros", "Tensor:sum", "nn.Linear", "F.cross_entropy" ("nn.", "optim.", "F." are
short for ember.nn., ember.optim., ember.nn.functional.), or an expression on a global
such as "t:sum" (t a tensor) or "model:parameters". With no argument, an overview.
An unknown name prints close matches. Prints and returns nothing; help.format gives
the text. The docs live in lua/ember/doc/*.lua.]=],
    example = [=[
local help = require("ember.help")   -- also ember.help
help(ember.zeros)
help("nn.Linear")
help("ember.nn.Linaer")   -- Did you mean: ember.nn.Linear?]=],
  },
  {
    name = "ember.help.lookup",
    sig = "help.lookup(x [, env = _G]) -> entry, qualified name; or nil",
    doc = [=[
The doc entry for x (a value or a name, as help takes) and the name it was found under
("Tensor:sum" for "t:sum"), or nil. env holds the globals that expressions start from.
An entry is a table: name, also, sig, doc, example, needs.]=],
    example = [=[
local help = require("ember.help")   -- also ember.help
local entry, name = help.lookup("nn.Linear")
print(name, entry.sig)
print(help.lookup("no_such_thing"))   -- nil]=],
  },
  {
    name = "ember.help.names",
    sig = "help.names() -> list of strings",
    doc = "Every documented name (entry names and their also names), sorted.",
    example = [=[
local names = require("ember.help").names()
print(#names, names[1])]=],
  },
  {
    name = "ember.help.format",
    sig = "help.format(entry) -> string",
    doc = [=[
The text help prints for an entry: the signature, a blank line, the doc indented by 2,
"Example:" with the example indented by 4, and "Also: ..." when the entry has also names.]=],
    example = [=[
local help = require("ember.help")   -- also ember.help
print(help.format({name = "f", sig = "f(x)", doc = "Doubles x.", example = "print(f(2))"}))]=],
  },
  {
    name = "ember.help.suggest",
    sig = "help.suggest(name [, env = _G]) -> list of strings",
    doc = [=[
Up to 10 documented names close to name: sharing a prefix with it, or within an edit
distance of 2 (of the whole name or of its last part), best first. For "t:summ" with t
a tensor global in env, tensor methods.]=],
    example = [=[
local help = require("ember.help")
print(table.concat(help.suggest("optim.Adamw"), ", "))   -- ember.optim.AdamW, ...]=],
  },
  {
    name = "ember.help.overview",
    sig = "help.overview() -> string",
    doc = "The text help() prints with no argument: the modules and how to ask for help.",
    example = [=[
print(require("ember.help").overview())]=],
  },
  {
    name = "ember.help.problems",
    sig = "help.problems() -> list of strings",
    doc = [=[
Messages about doc files that failed to load or entries that clash (a name documented
twice), for whoever edits lua/ember/doc/. Empty when all is well.]=],
    example = [=[
for _, p in ipairs(require("ember.help").problems()) do print(p) end]=],
  },
  {
    name = "ember.help.public_values",
    sig = "help.public_values() -> list of {name, value}",
    doc = [=[
Every public function, class and module of ember with its qualified name: the modules'
functions, tensor methods ("Tensor:sum"), classes and the methods each class defines
("ember.nn.Linear:forward"). What help searches to name a value, and what the test of
the docs' coverage walks.]=],
    example = [=[
local n = 0
for _, p in ipairs(require("ember.help").public_values()) do
  if p[1]:match("^ember%.nn%.functional%.") then n = n + 1 end
end
print(n)]=],
  },
}
