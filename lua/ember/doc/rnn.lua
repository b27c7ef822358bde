-- Docs of ember.nn's recurrent layers (ember/nn/rnn.lua): RNN, LSTM, GRU and the cells
-- RNNCell, LSTMCell, GRUCell. Format: ember/help.lua. A class entry also documents the
-- class's own init (the constructor), forward (what calling an instance does) and
-- extra_repr (the text inside tostring's parentheses).
local function class_also(cls, extra)
  local also = {cls .. ":init", cls .. ":forward", cls .. ":extra_repr"}
  for _, n in ipairs(extra or {}) do also[#also + 1] = n end
  return also
end

local LAYER_SHAPES = [=[
Input: [seq_len, batch, input_size], or [batch, seq_len, input_size] with batch_first,
or [seq_len, input_size] unbatched. Initial states (optional, zeros when nil) are
[num_layers * num_directions, batch, size] whatever batch_first says ([num_layers *
num_directions, size] unbatched); num_directions is 2 when bidirectional.
output: [seq_len, batch, num_directions * out] (batch first with batch_first, no batch
dim unbatched): the last layer's h_t for every t, the forward and reverse directions
concatenated; the final states have the initial states' shapes, layer by layer, the
forward direction before the reverse one.
Several layers stack: layer k > 1 takes layer k-1's output; dropout (training mode
only) applies to each layer's output except the last. Parameters, for each layer k
(counted from 0 as in PyTorch's names) and direction (suffix "_reverse"):
weight_ih_lk [G * hidden_size, in], weight_hh_lk [G * hidden_size, out], bias_ih_lk,
bias_hh_lk [G * hidden_size] (with bias), all drawn from U(-1/sqrt(hidden_size),
1/sqrt(hidden_size)), so PyTorch state_dicts load with load_state_dict.
Optional arguments come positionally in PyTorch's order or as one options table with
dtype= and device= too. The input projections of all time steps of a layer are one
GEMM; only the hidden GEMM runs per step. Bad shapes (input size, rank, state shapes)
and a dtype other than the parameters' are errors naming the module and the shapes.]=]

return {
  {
    name = "ember.nn.RNN",
    also = class_also("ember.nn.RNN"),
    sig = "nn.RNN(input_size, hidden_size [, num_layers = 1 [, nonlinearity = \"tanh\" [, bias = true\n"
       .. "    [, batch_first = false [, dropout = 0 [, bidirectional = false]]]]]])\n"
       .. "    -> module   (or the options in a table, with dtype=, device=)\n"
       .. "rnn(input [, h0]) -> output, h_n",
    doc = [=[
A multi-layer Elman RNN (torch.nn.RNN): h_t = act(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh),
act tanh or relu (nonlinearity). G = 1, out = hidden_size.
]=] .. LAYER_SHAPES,
    example = [=[
local nn = ember.nn
local rnn = nn.RNN(4, 8, {num_layers = 2, nonlinearity = "relu"})
local out, h_n = rnn(ember.randn(5, 3, 4))
print(out.shape, h_n.shape)   -- {5, 3, 8} {2, 3, 8}
out, h_n = rnn(ember.randn(5, 3, 4), h_n)   -- carry the state on]=],
  },
  {
    name = "ember.nn.LSTM",
    also = class_also("ember.nn.LSTM"),
    sig = "nn.LSTM(input_size, hidden_size [, num_layers = 1 [, bias = true [, batch_first = false\n"
       .. "    [, dropout = 0 [, bidirectional = false [, proj_size = 0]]]]]])\n"
       .. "    -> module   (or the options in a table, with dtype=, device=)\n"
       .. "lstm(input [, {h0, c0}]) -> output, {h_n, c_n}",
    doc = [=[
A multi-layer long short-term memory network (torch.nn.LSTM). Per step, with the gates
in PyTorch's order i, f, g, o (rows of W_ih, W_hh in that order):
  i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)   f = sigmoid(...)   g = tanh(...)
  o = sigmoid(...)   c' = f * c + i * g   h' = o * tanh(c')
G = 4. With proj_size > 0, h' = W_hr (o * tanh(c')) (weight_hr_lk [proj_size,
hidden_size], drawn like the others), so h and the output have proj_size features
(out = proj_size) while c keeps hidden_size. Where PyTorch takes and returns the pair
(h, c), ember uses a table {h, c}: the state lstm returns goes straight into the next
call. h0 has out features, c0 hidden_size.
]=] .. LAYER_SHAPES,
    example = [=[
local nn = ember.nn
local lstm = nn.LSTM(4, 8, {num_layers = 2, batch_first = true})
local x = ember.randn(3, 5, 4)                    -- batch 3, 5 steps
local out, state = lstm(x)
print(out.shape, state[1].shape, state[2].shape)  -- {3, 5, 8} {2, 3, 8} {2, 3, 8}
local out2, state2 = lstm(ember.randn(3, 2, 4), state)   -- two more steps
local h_n, c_n = state2[1], state2[2]]=],
  },
  {
    name = "ember.nn.GRU",
    also = class_also("ember.nn.GRU"),
    sig = "nn.GRU(input_size, hidden_size [, num_layers = 1 [, bias = true [, batch_first = false\n"
       .. "    [, dropout = 0 [, bidirectional = false]]]]])\n"
       .. "    -> module   (or the options in a table, with dtype=, device=)\n"
       .. "gru(input [, h0]) -> output, h_n",
    doc = [=[
A multi-layer gated recurrent unit network (torch.nn.GRU). Per step, with the gates in
PyTorch's order r, z, n:
  r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
  n = tanh(W_in x + b_in + r * (W_hn h + b_hn))   h' = (1 - z) * n + z * h
G = 3, out = hidden_size.
]=] .. LAYER_SHAPES,
    example = [=[
local nn = ember.nn
local gru = nn.GRU(4, 8, {bidirectional = true})
local out, h_n = gru(ember.randn(5, 4))           -- unbatched
print(out.shape, h_n.shape)                       -- {5, 16} {2, 8}]=],
  },
  {
    name = "ember.nn.RNN:reset_parameters",
    also = {"ember.nn.LSTM:reset_parameters", "ember.nn.GRU:reset_parameters", "ember.nn.RNNCell:reset_parameters",
            "ember.nn.LSTMCell:reset_parameters", "ember.nn.GRUCell:reset_parameters"},
    sig = "m:reset_parameters()",
    doc = [=[
Draws every parameter again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as
PyTorch initialises its recurrent layers and cells.]=],
    example = [=[
local lstm = ember.nn.LSTM(4, 8)
lstm:reset_parameters()
print(lstm.weight_hh_l0:abs():max():item() <= 1 / math.sqrt(8))   -- true]=],
  },
  {
    name = "ember.nn.RNN:flatten_parameters",
    also = {"ember.nn.LSTM:flatten_parameters", "ember.nn.GRU:flatten_parameters"},
    sig = "m:flatten_parameters()",
    doc = [=[
Does nothing: PyTorch compacts the weights for cuDNN here, ember's are always usable as
they are. Kept so that code written for PyTorch runs unchanged.]=],
    example = [=[
local gru = ember.nn.GRU(4, 8)
gru:flatten_parameters()]=],
  },
  {
    name = "ember.nn.RNNCell",
    also = class_also("ember.nn.RNNCell"),
    sig = "nn.RNNCell(input_size, hidden_size [, bias = true [, nonlinearity = \"tanh\"]])\n"
       .. "    -> module   (or the options in a table, with dtype=, device=)\n"
       .. "cell(input [, h]) -> h'",
    doc = [=[
One step of an Elman RNN (torch.nn.RNNCell): h' = act(W_ih x + b_ih + W_hh h + b_hh),
act tanh or relu. input [batch, input_size] or [input_size] (unbatched); h [batch,
hidden_size] or [hidden_size], zeros when nil. Parameters weight_ih [hidden_size,
input_size], weight_hh [hidden_size, hidden_size], bias_ih, bias_hh [hidden_size], all
from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)); PyTorch state_dicts load.]=],
    example = [=[
local nn = ember.nn
local cell = nn.RNNCell(4, 8)
local h
for t = 1, 3 do h = cell(ember.randn(2, 4), h) end
print(h.shape)   -- {2, 8}]=],
  },
  {
    name = "ember.nn.LSTMCell",
    also = class_also("ember.nn.LSTMCell"),
    sig = "nn.LSTMCell(input_size, hidden_size [, bias = true])\n"
       .. "    -> module   (or the options in a table, with dtype=, device=)\n"
       .. "cell(input [, {h, c}]) -> h', c'",
    doc = [=[
One step of an LSTM (torch.nn.LSTMCell), gates i, f, g, o as in nn.LSTM. The state is
the table {h, c} (PyTorch's tuple), zeros when nil; the new h and c come back as two
values. input [batch, input_size] or [input_size] (unbatched); h, c [batch,
hidden_size] or [hidden_size]. Parameters weight_ih [4 * hidden_size, input_size],
weight_hh [4 * hidden_size, hidden_size], bias_ih, bias_hh [4 * hidden_size].]=],
    example = [=[
local nn = ember.nn
local cell = nn.LSTMCell(4, 8)
local h, c = cell(ember.randn(2, 4))
h, c = cell(ember.randn(2, 4), {h, c})
print(h.shape, c.shape)   -- {2, 8} {2, 8}]=],
  },
  {
    name = "ember.nn.GRUCell",
    also = class_also("ember.nn.GRUCell"),
    sig = "nn.GRUCell(input_size, hidden_size [, bias = true])\n"
       .. "    -> module   (or the options in a table, with dtype=, device=)\n"
       .. "cell(input [, h]) -> h'",
    doc = [=[
One step of a GRU (torch.nn.GRUCell), gates r, z, n as in nn.GRU:
n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h. input [batch,
input_size] or [input_size] (unbatched); h [batch, hidden_size] or [hidden_size], zeros
when nil. Parameters weight_ih [3 * hidden_size, input_size], weight_hh [3 * hidden_size,
hidden_size], bias_ih, bias_hh [3 * hidden_size].]=],
    example = [=[
local nn = ember.nn
local cell = nn.GRUCell(4, 8, {bias = false})
print(cell(ember.randn(4)).shape)   -- {8}]=],
  },
}
