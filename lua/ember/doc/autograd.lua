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
