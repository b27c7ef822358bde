-- Docs of ember.nn's recurrent layers (ember/nn/rnn.lua): RNN, LSTM, GRU and the cells
-- RNNCell, LSTMCell, GRUCell. Format: ember/help.lua. A class entry also documents the
-- class's own init (the constructor), forward (what calling an instance does) and
-- extra_repr (the text inside tostring's parentheses).
local class_also = require("ember.help")._class_also

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
and a dtype other than the parameters' are errors naming the module and the shapes.
The input may be a PackedSequence (nn.utils.rnn.pack_padded_sequence, pack_sequence):
a batch of sequences of different lengths. Each step then runs on the sequences still
going (batch_sizes[t] rows, longest first), the reverse direction of each sequence
starts at its own last step, and the output is a PackedSequence with the same
batch_sizes and indices; h_n (c_n) hold each sequence's state after its own last
step, in the caller's batch order (h0, c0 are in that order too), as in PyTorch.]=]

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
  {
    name = "ember.nn.utils.rnn",
    sig = "ember.nn.utils.rnn   (PyTorch's torch.nn.utils.rnn)",
    doc = [=[
Variable-length batches for nn.RNN, nn.LSTM and nn.GRU: pad_sequence,
pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence,
unpad_sequence and PackedSequence.
Keyword arguments go in a trailing options table ({batch_first = true}), or positionally
in PyTorch's order. A PackedSequence's sorted_indices and unsorted_indices are 1-based
(PyTorch's are 0-based). Every function is differentiable in its tensors.]=],
    example = [=[
local R = ember.nn.utils.rnn
local x = ember.randn(3, 5, 4)                       -- batch 3, up to 5 steps
local packed = R.pack_padded_sequence(x, {2, 5, 3},
                                      {batch_first = true, enforce_sorted = false})
local out, h_n = ember.nn.GRU(4, 8, {batch_first = true})(packed)
local y, lengths = R.pad_packed_sequence(out, {batch_first = true})
print(y.shape, lengths, h_n.shape)   -- {3, 5, 8} tensor([2, 5, 3]) {1, 3, 8}]=],
  },
  {
    name = "ember.nn.utils.rnn.pad_sequence",
    sig = "nn.utils.rnn.pad_sequence(sequences [, {batch_first = false, padding_value = 0,\n"
       .. "    padding_side = \"right\"}]) -> padded",
    doc = [=[
Stacks a Lua list of tensors [L_i, *] (same trailing shape, dtype and device; lengths
may differ, 0 included) into [T, B, *] ([B, T, *] with batch_first), T the longest
length, filling the rest with padding_value. padding_side = "left" puts the padding
before each sequence (PyTorch 2.6). Errors name the sequence whose shape differs.]=],
    example = [=[
local R = ember.nn.utils.rnn
local p = R.pad_sequence({ember.ones(3), ember.ones(1) * 2},
                         {batch_first = true, padding_value = -1})
print(p)   -- [[1, 1, 1], [2, -1, -1]]]=],
  },
  {
    name = "ember.nn.utils.rnn.pack_padded_sequence",
    sig = "nn.utils.rnn.pack_padded_sequence(input, lengths [, {batch_first = false,\n"
       .. "    enforce_sorted = true}]) -> PackedSequence",
    doc = [=[
Packs a padded batch input [T, B, *] ([B, T, *] with batch_first) whose sequence b has
lengths[b] valid steps (lengths: a Lua list or a 1-D CPU int64 tensor, each in 1..T).
With enforce_sorted the lengths must be non-increasing; enforce_sorted = false sorts the
batch (longest first, ties in batch order) and keeps sorted_indices / unsorted_indices
so that the results come back in the caller's order. One index_select: the gradient
reaches input, zero at the padding.]=],
    example = [=[
local R = ember.nn.utils.rnn
local x = ember.randn(4, 3, 2)                        -- 4 steps, batch 3
local p = R.pack_padded_sequence(x, {4, 2, 1})
print(p.data.shape, p.batch_sizes)                     -- {7, 2} tensor([3, 2, 1, 1])]=],
  },
  {
    name = "ember.nn.utils.rnn.pad_packed_sequence",
    sig = "nn.utils.rnn.pad_packed_sequence(sequence [, {batch_first = false, padding_value = 0,\n"
       .. "    total_length = nil}]) -> padded, lengths",
    doc = [=[
The inverse of pack_padded_sequence: padded [T, B, *] ([B, T, *] with batch_first), T the
longest length or total_length (at least that), padding_value after each sequence's end;
lengths an int64 CPU tensor. Both in the caller's batch order (unsorted_indices
applied).]=],
    example = [=[
local R = ember.nn.utils.rnn
local p = R.pack_padded_sequence(ember.randn(3, 2, 4), {1, 3}, {enforce_sorted = false})
local y, lengths = R.pad_packed_sequence(p, {total_length = 5})
print(y.shape, lengths)   -- {5, 2, 4} tensor([1, 3])]=],
  },
  {
    name = "ember.nn.utils.rnn.pack_sequence",
    sig = "nn.utils.rnn.pack_sequence(sequences [, {enforce_sorted = true}]) -> PackedSequence",
    doc = [=[
pack_padded_sequence(pad_sequence(sequences), their lengths, {enforce_sorted = ...}):
packs a Lua list of tensors [L_i, *], each at least one step long.]=],
    example = [=[
local R = ember.nn.utils.rnn
local p = R.pack_sequence({ember.randn(2, 3), ember.randn(4, 3)}, {enforce_sorted = false})
print(p.batch_sizes, p.sorted_indices)   -- tensor([2, 2, 1, 1]) tensor([2, 1])]=],
  },
  {
    name = "ember.nn.utils.rnn.unpack_sequence",
    sig = "nn.utils.rnn.unpack_sequence(packed) -> {seq_1, ..., seq_B}",
    doc = [=[
The sequences of a PackedSequence as a Lua list of tensors [L_i, *], in the caller's
batch order: the inverse of pack_sequence.]=],
    example = [=[
local R = ember.nn.utils.rnn
local seqs = R.unpack_sequence(R.pack_sequence({ember.ones(3, 2), ember.ones(1, 2)}))
print(#seqs, seqs[1].shape, seqs[2].shape)   -- 2 {3, 2} {1, 2}]=],
  },
  {
    name = "ember.nn.utils.rnn.unpad_sequence",
    sig = "nn.utils.rnn.unpad_sequence(padded, lengths [, {batch_first = false}])\n"
       .. "    -> {seq_1, ..., seq_B}",
    doc = [=[
The inverse of pad_sequence: sequence b is padded's first lengths[b] steps (lengths a Lua
list or a 1-D CPU tensor, each in 0..T). padded itself is left as it is (PyTorch
transposes it in place when batch_first is false).]=],
    example = [=[
local R = ember.nn.utils.rnn
local parts = R.unpad_sequence(ember.randn(4, 2, 3), {4, 2})
print(parts[1].shape, parts[2].shape)   -- {4, 3} {2, 3}]=],
  },
  {
    name = "ember.nn.utils.rnn.PackedSequence",
    sig = "nn.utils.rnn.PackedSequence(data, batch_sizes [, sorted_indices [, unsorted_indices]])\n"
       .. "    -> PackedSequence\n"
       .. "fields: data, batch_sizes, sorted_indices, unsorted_indices, is_cuda",
    doc = [=[
A batch of sequences of different lengths, packed: data [sum(lengths), *] holds step 1 of
every sequence, then step 2 of those at least 2 long, ..., each step's sequences longest
first; batch_sizes (int64, CPU) how many sequences each step has. sorted_indices[k] is the
caller's batch position of the k-th longest sequence, unsorted_indices its inverse (both
1-based, int64 on data's device; nil when the batch came sorted). Usually made by
pack_padded_sequence or pack_sequence; made by hand, the parts are checked (batch_sizes
non-increasing and adding up to data's rows, the indices a permutation), and
unsorted_indices is computed when only sorted_indices is given. nn.RNN, nn.LSTM and
nn.GRU take one as input; other modules refuse it, naming it.]=],
    example = [=[
local R = ember.nn.utils.rnn
local p = R.PackedSequence(ember.randn(5, 2), {2, 2, 1}, ember.tensor({2, 1}))
local _, lengths = R.pad_packed_sequence(p)
print(p.unsorted_indices, lengths)   -- tensor([2, 1]) tensor([2, 3])]=],
  },
  {
    name = "ember.nn.utils.rnn.PackedSequence:to",
    also = {"ember.nn.utils.rnn.PackedSequence:cpu", "ember.nn.utils.rnn.PackedSequence:cuda",
            "ember.nn.utils.rnn.PackedSequence:double", "ember.nn.utils.rnn.PackedSequence:float",
            "ember.nn.utils.rnn.PackedSequence:half"},
    sig = "p:to(device or dtype [, ...]) -> PackedSequence\n"
       .. "p:cpu(), p:cuda(), p:double(), p:float(), p:half() -> PackedSequence",
    doc = [=[
A PackedSequence whose data is data:to(...) (the arguments of Tensor:to). sorted_indices
and unsorted_indices follow data to its device; batch_sizes stays on the CPU, as in
PyTorch. cpu, cuda, double, float and half are to("cpu"), to("cuda"), to("float64"),
to("float32") and to("float16").]=],
    example = [=[
local R = ember.nn.utils.rnn
local p = R.pack_sequence({ember.randn(2, 3), ember.randn(1, 3)})
print(p:to("float64").data.dtype, p:double().batch_sizes.device)   -- float64 cpu]=],
  },
}
