-- ember.nn recurrent layers: nn.RNN, nn.LSTM, nn.GRU and the single-step cells nn.RNNCell,
-- nn.LSTMCell, nn.GRUCell. PyTorch's constructor arguments, parameter names and shapes
-- (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse, weight_hr_l0 with
-- proj_size), gate order (LSTM i, f, g, o; GRU r, z, n) and initialisation, so PyTorch
-- state_dicts load. Merged into ember.nn by nn/layers.lua.
--
-- Where PyTorch returns a tuple, Lua returns several values, and a (h, c) pair is a table:
--   local output, h_n = gru(x, h0)                    -- h0 optional (zeros)
--   local output, state = lstm(x, {h0, c0})           -- state = {h_n, c_n}: lstm(x2, state) goes on
--   local h = cell(x, h); local h, c = lstm_cell(x, {h, c})
--   local out, h_n = gru(packed)     -- a PackedSequence (nn.utils.rnn) in, one out
-- Optional constructor arguments come positionally in PyTorch's order or as one trailing
-- options table: nn.LSTM(8, 16, {num_layers = 2, batch_first = true}).
--
-- Speed: the input projections of all time steps of a layer are one GEMM before the time
-- loop; only the hidden-state GEMM and the gate arithmetic run per step. Everything is
-- composed from engine ops, so autograd and the GPU come with them.
local ember = require "ember"
local raise = require("ember.errors").raise
local base = require "ember.nn.module"
local F = require "ember.nn.functional"
local init = require "ember.nn.initializers"
local packed_seq = require "ember.nn.utils.rnn"

local Module, Parameter = base.Module, base.Parameter
local shape_str = Module._shape_str
local count = Module._count
local boolean = Module._boolean
local options = F._options

local M = {}

local function name_of(self) return tostring(getmetatable(self).__name) end
local function op_name(self) return name_of(self) .. "(" .. self:extra_repr() .. ")" end

local function nonlinearity(v, op)
  if v == nil then return "tanh" end
  if v ~= "tanh" and v ~= "relu" then
    raise(string.format("%s: nonlinearity must be \"tanh\" or \"relu\", got %s", op,
                        type(v) == "string" and string.format("%q", v) or tostring(v)))
  end
  return v
end

local function list_str(t) return "[" .. table.concat(t, ", ") .. "]" end

-- ---- one time step --------------------------------------------------------------------
-- xi is the input's projection W_ih x + b_ih of this step ([N, G * hidden]); h, c the state.

local function rnn_step(act, xi, h, w_hh, b_hh)
  local pre = xi + F.linear(h, w_hh, b_hh)
  return act == "relu" and pre:relu() or pre:tanh()
end

local function lstm_step(xi, h, c, w_hh, b_hh, w_hr)
  local i, f, g, o = (xi + F.linear(h, w_hh, b_hh)):chunk(4, -1)
  local c2 = f:sigmoid() * c + i:sigmoid() * g:tanh()
  local h2 = o:sigmoid() * c2:tanh()
  if w_hr then h2 = F.linear(h2, w_hr) end
  return h2, c2
end

local function gru_step(xi, h, w_hh, b_hh)
  local xr, xz, xn = xi:chunk(3, -1)
  local hr, hz, hn = F.linear(h, w_hh, b_hh):chunk(3, -1)
  local r = (xr + hr):sigmoid()
  local z = (xz + hz):sigmoid()
  local n = (xn + r * hn):tanh()
  return n + z * (h - n)   -- (1 - z) * n + z * h
end

-- ---- the layers ----------------------------------------------------------------------

local GATES = {RNN = 1, LSTM = 4, GRU = 3}

local layer_names = {
  RNN = {"num_layers", "nonlinearity", "bias", "batch_first", "dropout", "bidirectional", "device", "dtype"},
  LSTM = {"num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size", "device", "dtype"},
  GRU = {"num_layers", "bias", "batch_first", "dropout", "bidirectional", "device", "dtype"},
}

-- the common base of RNN, LSTM and GRU (PyTorch's RNNBase); not exported
local RNNBase = Module:extend("RNNBase")

function RNNBase:init(input_size, hidden_size, ...)
  local mode = name_of(self)
  local op = mode
  local o = options(op, layer_names[mode], ...)
  self.mode = mode
  self.input_size = count(input_size, op, "input_size", 1)
  self.hidden_size = count(hidden_size, op, "hidden_size", 1)
  self.num_layers = count(o.num_layers == nil and 1 or o.num_layers, op, "num_layers", 1)
  self.nonlinearity = mode == "RNN" and nonlinearity(o.nonlinearity, op) or nil
  self.bias = boolean(o.bias, true, op, "bias")
  self.batch_first = boolean(o.batch_first, false, op, "batch_first")
  local p = o.dropout == nil and 0 or o.dropout
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then
    raise(string.format("%s: dropout must be a probability in [0, 1], got %s", op, tostring(p)))
  end
  self.dropout = p
  self.bidirectional = boolean(o.bidirectional, false, op, "bidirectional")
  self.proj_size = count(o.proj_size == nil and 0 or o.proj_size, op, "proj_size", 0)
  if self.proj_size >= self.hidden_size then
    raise(string.format("%s: proj_size (%d) must be smaller than hidden_size (%d)", op, self.proj_size,
                        self.hidden_size))
  end
  local topts = {dtype = o.dtype, device = o.device}
  local G, H = GATES[mode], self.hidden_size
  local out_size = self.proj_size > 0 and self.proj_size or H
  local dirs = self.bidirectional and 2 or 1
  -- PyTorch's order: per layer, per direction, w_ih, w_hh, b_ih, b_hh, w_hr
  for layer = 0, self.num_layers - 1 do
    local in_size = layer == 0 and self.input_size or out_size * dirs
    for d = 1, dirs do
      local sfx = "_l" .. layer .. (d == 2 and "_reverse" or "")
      self["weight_ih" .. sfx] = Parameter(ember.empty({G * H, in_size}, topts))
      self["weight_hh" .. sfx] = Parameter(ember.empty({G * H, out_size}, topts))
      if self.bias then
        self["bias_ih" .. sfx] = Parameter(ember.empty({G * H}, topts))
        self["bias_hh" .. sfx] = Parameter(ember.empty({G * H}, topts))
      end
      if self.proj_size > 0 then self["weight_hr" .. sfx] = Parameter(ember.empty({self.proj_size, H}, topts)) end
    end
  end
  self:reset_parameters()
end

-- every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch draws them
local function reset_uniform(self)
  local bound = 1 / math.sqrt(self.hidden_size)
  for _, p in ipairs(self:parameters()) do init.uniform_(p, -bound, bound) end
end

function RNNBase:reset_parameters() reset_uniform(self) end

-- PyTorch compacts cuDNN's weights here; ember's weights are always usable as they are.
function RNNBase:flatten_parameters() end

function RNNBase:extra_repr()
  local s = string.format("%d, %d", self.input_size, self.hidden_size)
  if self.proj_size ~= 0 then s = s .. ", proj_size=" .. self.proj_size end
  if self.num_layers ~= 1 then s = s .. ", num_layers=" .. self.num_layers end
  if self.nonlinearity and self.nonlinearity ~= "tanh" then s = s .. ", nonlinearity=\"" .. self.nonlinearity .. "\"" end
  if not self.bias then s = s .. ", bias=false" end
  if self.batch_first then s = s .. ", batch_first=true" end
  if self.dropout ~= 0 then s = s .. ", dropout=" .. self.dropout end
  if self.bidirectional then s = s .. ", bidirectional=true" end
  return s
end

-- a given state tensor t (what: "h0", "c", ...), checked: a tensor of x's dtype and of
-- the shape list want; fits says in the error what that shape is for
local function check_state(t, want, fits, what, x, op)
  if not ember.is_tensor(t) then raise(string.format("%s: expected %s to be a tensor, got %s", op, what, type(t))) end
  local ok = t.ndim == #want
  for i = 1, #want do ok = ok and t.shape[i] == want[i] end
  if not ok then
    raise(string.format("%s: expected %s of shape %s %s, got %s", op, what, list_str(want), fits, shape_str(t)))
  end
  if t.dtype ~= x.dtype then
    raise(string.format("%s: %s has dtype %s, the input %s (expected the same)", op, what, t.dtype, x.dtype))
  end
end

-- an LSTM's state argument {h, c} as h, c (nil, nil when nil); names words it in the error
local function state_pair(hx, op, names)
  if hx == nil then return nil, nil end
  if type(hx) ~= "table" or ember.is_tensor(hx) or not ember.is_tensor(hx[1]) or not ember.is_tensor(hx[2]) then
    raise(string.format("%s: expected the state as a table %s of two tensors, got %s", op, names,
                        ember.is_tensor(hx) and "a tensor" or type(hx)))
  end
  return hx[1], hx[2]
end

-- h0 (or c0) as [layers * dirs, N, size]: the given tensor, checked, or zeros
local function initial_state(self, t, what, size, N, batched, x, op)
  local dirs = self.bidirectional and 2 or 1
  local want = batched and {self.num_layers * dirs, N, size} or {self.num_layers * dirs, size}
  if t == nil then return ember.zeros({want[1], N, size}, {dtype = x.dtype, device = x.device}) end
  check_state(t, want, string.format("(num_layers * num_directions, %s%d) for a%s input", batched and "batch, " or "",
                                     size, batched and " batched" or "n unbatched"), what, x, op)
  return batched and t or t:unsqueeze(2)
end

-- the hidden (and cell) state argument: a tensor for RNN and GRU, {h0, c0} for LSTM
local function split_state(self, hx, op)
  if self.mode ~= "LSTM" then return hx, nil end
  return state_pair(hx, op, "{h0, c0}")
end

-- steps[first .. last] = the consecutive row blocks of x, step s having sizes[s] rows.
-- Halving rather than one narrow a step: the gradient of a slice is embedded in zeros of
-- its parent's shape, so T slices of x cost T * x's size in the backward (quadratic in T);
-- halving makes it size * log2(T).
local function row_blocks(x, sizes, first, last, steps)
  if last - first < 4 then
    local row = 1
    for s = first, last do
      steps[s] = x:narrow(1, row, sizes[s])
      row = row + sizes[s]
    end
    return
  end
  local mid = (first + last) // 2
  local rows = 0
  for s = first, mid do rows = rows + sizes[s] end
  row_blocks(x:narrow(1, 1, rows), sizes, first, mid, steps)
  row_blocks(x:narrow(1, rows + 1, x.shape[1] - rows), sizes, mid + 1, last, steps)
end

-- the weights of one direction of one layer (sfx "_l0", "_l1_reverse", ...) and its input
-- projections W_ih x + b_ih of every step (x [rows, in]): one GEMM, cut into the steps'
-- row blocks (sizes[s] rows for step s)
local function projections(self, x, sfx, sizes)
  local xi = F.linear(x, self["weight_ih" .. sfx], self["bias_ih" .. sfx])
  if xi.ndim == 3 then xi = xi:reshape(-1, xi.shape[3]) end   -- [T, N, G * H]: steps of N rows
  local steps = {}
  row_blocks(xi, sizes, 1, #sizes, steps)
  return steps, self["weight_hh" .. sfx], self["bias_hh" .. sfx], self["weight_hr" .. sfx]
end

-- one step of the layer's cell: h, c from xi (this step's projection) and the state
local function cell_step(self, xi, h, c, w_hh, b_hh, w_hr)
  if self.mode == "LSTM" then return lstm_step(xi, h, c, w_hh, b_hh, w_hr) end
  if self.mode == "GRU" then return gru_step(xi, h, w_hh, b_hh) end
  return rnn_step(self.nonlinearity, xi, h, w_hh, b_hh)
end

-- one direction of one layer over the whole sequence x [T, N, in]; returns the outputs
-- [T, N, out] and the final h (and c)
local function run_direction(self, x, sfx, h, c, reverse)
  local T, N = x.shape[1], x.shape[2]
  local sizes = {}
  for t = 1, T do sizes[t] = N end
  local steps, w_hh, b_hh, w_hr = projections(self, x, sfx, sizes)
  local outs = {}
  for s = 1, T do
    local t = reverse and T - s + 1 or s
    h, c = cell_step(self, steps[t], h, c, w_hh, b_hh, w_hr)
    outs[t] = h
  end
  return ember.stack(outs, 1), h, c
end

-- rows first .. first + n - 1 of t, or t itself when that is all of it
local function rows(t, first, n)
  if t == nil or (first == 1 and n == t.shape[1]) then return t end
  return t:narrow(1, first, n)
end

-- one direction of one layer over packed data x [sum(lengths), in] whose step t holds the
-- bs[t] longest sequences (longest first); h0, c0 [bs[1], size] the initial states. Each step
-- runs the cell on the rows still going: forward, a sequence leaves the batch after its
-- last step; reverse, it joins the batch at its last step with its initial state. Returns
-- the packed outputs [sum(lengths), out] and the final h (and c) of every sequence.
local function run_direction_packed(self, x, sfx, h0, c0, reverse, bs)
  local steps, w_hh, b_hh, w_hr = projections(self, x, sfx, bs)
  local T, outs = #bs, {}
  if reverse then
    local h, c
    for t = T, 1, -1 do
      local have = h and h.shape[1] or 0
      if bs[t] > have then   -- sequences whose last step is t start here
        local new_h, new_c = rows(h0, have + 1, bs[t] - have), rows(c0, have + 1, bs[t] - have)
        h = h and ember.cat({h, new_h}, 1) or new_h
        if c0 then c = c and ember.cat({c, new_c}, 1) or new_c end
      end
      h, c = cell_step(self, steps[t], h, c, w_hh, b_hh, w_hr)
      outs[t] = h
    end
    return ember.cat(outs, 1), h, c
  end
  local h, c = h0, c0
  local done_h, done_c = {}, {}   -- final states of the sequences that ended, longest first
  for t = 1, T do
    local n = h.shape[1]
    if bs[t] < n then   -- sequences bs[t] + 1 .. n ended at step t - 1
      table.insert(done_h, 1, h:narrow(1, bs[t] + 1, n - bs[t]))
      h = h:narrow(1, 1, bs[t])
      if c then
        table.insert(done_c, 1, c:narrow(1, bs[t] + 1, n - bs[t]))
        c = c:narrow(1, 1, bs[t])
      end
    end
    h, c = cell_step(self, steps[t], h, c, w_hh, b_hh, w_hr)
    outs[t] = h
  end
  if #done_h == 0 then return ember.cat(outs, 1), h, c end   -- every sequence as long as the batch
  table.insert(done_h, 1, h)
  if c then table.insert(done_c, 1, c) end
  return ember.cat(outs, 1), ember.cat(done_h, 1), c and ember.cat(done_c, 1)
end

-- every layer and direction over x (padded [T, N, in], or packed data with the batch
-- sizes bs); h0, c0 [layers * dirs, N, size]. Returns the last layer's output and the
-- final states [layers * dirs, N, size].
local function run_layers(self, x, h0, c0, bs)
  local dirs = self.bidirectional and 2 or 1
  local hs, cs = {}, {}
  for layer = 0, self.num_layers - 1 do
    local outs = {}
    for d = 1, dirs do
      local k = layer * dirs + d
      local sfx = "_l" .. layer .. (d == 2 and "_reverse" or "")
      if bs then
        outs[d], hs[k], cs[k] = run_direction_packed(self, x, sfx, h0[k], c0 and c0[k], d == 2, bs)
      else
        outs[d], hs[k], cs[k] = run_direction(self, x, sfx, h0[k], c0 and c0[k], d == 2)
      end
    end
    x = dirs == 2 and ember.cat(outs, -1) or outs[1]
    if layer < self.num_layers - 1 and self.dropout > 0 and self.training then
      x = F.dropout(x, self.dropout, true)
    end
  end
  return x, ember.stack(hs, 1), c0 and ember.stack(cs, 1)
end

-- the dtype check both inputs get
local function check_dtype(self, x, op)
  if x.dtype ~= self.weight_ih_l0.dtype then
    raise(string.format("%s: the input has dtype %s, the parameters %s (expected the same)", op, x.dtype,
                        self.weight_ih_l0.dtype))
  end
end

-- forward over a PackedSequence: states in and out are in the caller's batch order,
-- permuted to and from the packed (longest first) order as PyTorch does
local function forward_packed(self, input, hx, op)
  local x = input.data
  if x.ndim ~= 2 or x.shape[2] ~= self.input_size then
    raise(string.format("%s: expected a PackedSequence whose data is [sum(lengths), %d] (input_size %d), got %s",
                        op, self.input_size, self.input_size, shape_str(x)))
  end
  check_dtype(self, x, op)
  local bs = input.batch_sizes:tolist()
  local N = bs[1]
  local lstm = self.mode == "LSTM"
  local out_size = self.proj_size > 0 and self.proj_size or self.hidden_size
  local h0, c0 = split_state(self, hx, op)
  local given = h0 ~= nil
  h0 = initial_state(self, h0, lstm and "h0" or "hx", out_size, N, true, x, op)
  if lstm then c0 = initial_state(self, c0, "c0", self.hidden_size, N, true, x, op) end
  local sorted, unsorted = input.sorted_indices, input.unsorted_indices
  if sorted and given then
    h0 = h0:index_select(2, sorted)
    if lstm then c0 = c0:index_select(2, sorted) end
  end
  local out, h_n, c_n = run_layers(self, x, h0, c0, bs)
  if unsorted then
    h_n = h_n:index_select(2, unsorted)
    if lstm then c_n = c_n:index_select(2, unsorted) end
  end
  out = packed_seq._new(out, input.batch_sizes, sorted, unsorted)
  if lstm then return out, {h_n, c_n} end
  return out, h_n
end

function RNNBase:forward(input, hx)
  local op = op_name(self)
  if packed_seq._is_packed(input) then return forward_packed(self, input, hx, op) end
  if not ember.is_tensor(input) then
    raise(string.format("%s: expected a tensor as input (or a PackedSequence), got %s", op, type(input)))
  end
  local batched = input.ndim == 3
  if input.ndim ~= 2 and input.ndim ~= 3 then
    raise(string.format("%s: expected a 2-D (unbatched) input [seq_len, %d] or a 3-D input %s, got %s", op,
                        self.input_size, self.batch_first and "[batch, seq_len, " .. self.input_size .. "]"
                        or "[seq_len, batch, " .. self.input_size .. "]", shape_str(input)))
  end
  if input.shape[input.ndim] ~= self.input_size then
    raise(string.format("%s: expected an input with %d features in its last dimension (input_size), got %s",
                        op, self.input_size, shape_str(input)))
  end
  check_dtype(self, input, op)
  local x = input
  if not batched then x = x:unsqueeze(2) elseif self.batch_first then x = x:transpose(1, 2) end
  if x.shape[1] == 0 then
    raise(string.format("%s: expected a sequence of at least one step, got %s", op, shape_str(input)))
  end
  local N = x.shape[2]
  local lstm = self.mode == "LSTM"
  local out_size = self.proj_size > 0 and self.proj_size or self.hidden_size
  local h0, c0 = split_state(self, hx, op)
  h0 = initial_state(self, h0, lstm and "h0" or "hx", out_size, N, batched, input, op)
  if lstm then c0 = initial_state(self, c0, "c0", self.hidden_size, N, batched, input, op) end
  local h_n, c_n
  x, h_n, c_n = run_layers(self, x, h0, c0, nil)
  if not batched then
    x, h_n = x:squeeze(2), h_n:squeeze(2)
    if c_n then c_n = c_n:squeeze(2) end
  elseif self.batch_first then
    x = x:transpose(1, 2)
  end
  if lstm then return x, {h_n, c_n} end
  return x, h_n
end

--- nn.RNN(input_size, hidden_size [, num_layers = 1 [, nonlinearity = "tanh" [, bias = true [, batch_first = false [, dropout = 0 [, bidirectional = false]]]]]]) -> an Elman RNN.
-- h_t = act(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh). rnn(x [, h0]) -> output, h_n.
-- Example: local out, h = nn.RNN(4, 8)(ember.randn(5, 2, 4))
M.RNN = RNNBase:extend("RNN")

--- nn.LSTM(input_size, hidden_size [, num_layers = 1 [, bias = true [, batch_first = false [, dropout = 0 [, bidirectional = false [, proj_size = 0]]]]]]) -> an LSTM.
-- lstm(x [, {h0, c0}]) -> output, {h_n, c_n}.
-- Example: local out, state = nn.LSTM(4, 8)(ember.randn(5, 2, 4)); local h_n, c_n = state[1], state[2]
M.LSTM = RNNBase:extend("LSTM")

--- nn.GRU(input_size, hidden_size [, num_layers = 1 [, bias = true [, batch_first = false [, dropout = 0 [, bidirectional = false]]]]]) -> a GRU.
-- gru(x [, h0]) -> output, h_n.
-- Example: local out, h = nn.GRU(4, 8)(ember.randn(5, 2, 4))
M.GRU = RNNBase:extend("GRU")

-- each class holds the shared methods itself, as functions of its own, so that
-- help(lstm.forward) finds LSTM's entry and not GRU's
local function own_methods(cls, from, names)
  for _, k in ipairs(names) do
    local f = from[k]
    rawset(cls, k, function(...) return f(...) end)
  end
end
for _, cls in ipairs{M.RNN, M.LSTM, M.GRU} do
  own_methods(cls, RNNBase, {"init", "forward", "extra_repr", "reset_parameters", "flatten_parameters"})
end

-- ---- the cells ----------------------------------------------------------------------

local cell_names = {
  RNNCell = {"bias", "nonlinearity", "device", "dtype"},
  LSTMCell = {"bias", "device", "dtype"},
  GRUCell = {"bias", "device", "dtype"},
}
local CELL_GATES = {RNNCell = 1, LSTMCell = 4, GRUCell = 3}

local RNNCellBase = Module:extend("RNNCellBase")

function RNNCellBase:init(input_size, hidden_size, ...)
  local kind = name_of(self)
  local op = kind
  local o = options(op, cell_names[kind], ...)
  self.input_size = count(input_size, op, "input_size", 1)
  self.hidden_size = count(hidden_size, op, "hidden_size", 1)
  self.bias = boolean(o.bias, true, op, "bias")
  self.nonlinearity = kind == "RNNCell" and nonlinearity(o.nonlinearity, op) or nil
  local topts = {dtype = o.dtype, device = o.device}
  local G, H = CELL_GATES[kind], self.hidden_size
  self.weight_ih = Parameter(ember.empty({G * H, self.input_size}, topts))
  self.weight_hh = Parameter(ember.empty({G * H, H}, topts))
  if self.bias then
    self.bias_ih = Parameter(ember.empty({G * H}, topts))
    self.bias_hh = Parameter(ember.empty({G * H}, topts))
  end
  self:reset_parameters()
end

function RNNCellBase:reset_parameters() reset_uniform(self) end

function RNNCellBase:extra_repr()
  local s = string.format("%d, %d", self.input_size, self.hidden_size)
  if not self.bias then s = s .. ", bias=false" end
  if self.nonlinearity and self.nonlinearity ~= "tanh" then s = s .. ", nonlinearity=\"" .. self.nonlinearity .. "\"" end
  return s
end

-- the input as [N, input_size] (and whether it was batched), checked
local function cell_input(self, input, op)
  if not ember.is_tensor(input) then
    raise(string.format("%s: expected a tensor as input, got %s", op, Module._not_tensor(input)))
  end
  if (input.ndim ~= 1 and input.ndim ~= 2) or input.shape[input.ndim] ~= self.input_size then
    raise(string.format("%s: expected an input of shape [batch, %d] or [%d] (unbatched), got %s", op,
                        self.input_size, self.input_size, shape_str(input)))
  end
  if input.dtype ~= self.weight_ih.dtype then
    raise(string.format("%s: the input has dtype %s, the parameters %s (expected the same)", op, input.dtype,
                        self.weight_ih.dtype))
  end
  local batched = input.ndim == 2
  return batched and input or input:unsqueeze(1), batched
end

-- a state tensor as [N, hidden_size]: the given one, checked, or zeros
local function cell_state(self, t, what, x, batched, op)
  local N, H = x.shape[1], self.hidden_size
  if t == nil then return ember.zeros({N, H}, {dtype = x.dtype, device = x.device}) end
  check_state(t, batched and {N, H} or {H}, "for an input of shape " ..
              (batched and list_str(x.shape) or "[" .. self.input_size .. "]"), what, x, op)
  return batched and t or t:unsqueeze(1)
end

local function unbatch(t, batched) return batched and t or t:squeeze(1) end

-- A one-state cell's (RNNCell's, GRUCell's) checked arguments: the input's
-- projection x W_ih^T + b_ih, the state h (zeros when not given), and
-- whether the input was batched.
local function one_state_cell_args(self, input, hx)
  local op = op_name(self)
  local x, batched = cell_input(self, input, op)
  local h = cell_state(self, hx, "hx", x, batched, op)
  return F.linear(x, self.weight_ih, self.bias_ih), h, batched
end

--- nn.RNNCell(input_size, hidden_size [, bias = true [, nonlinearity = "tanh"]]) -> one step of an Elman RNN.
-- cell(x [, h]) -> h'. Example: local h = nn.RNNCell(4, 8)(ember.randn(2, 4))
M.RNNCell = RNNCellBase:extend("RNNCell")
function M.RNNCell:forward(input, hx)
  local xi, h, batched = one_state_cell_args(self, input, hx)
  return unbatch(rnn_step(self.nonlinearity, xi, h, self.weight_hh, self.bias_hh), batched)
end

--- nn.LSTMCell(input_size, hidden_size [, bias = true]) -> one step of an LSTM.
-- cell(x [, {h, c}]) -> h', c'. Example: local h, c = nn.LSTMCell(4, 8)(ember.randn(2, 4))
M.LSTMCell = RNNCellBase:extend("LSTMCell")
function M.LSTMCell:forward(input, hx)
  local op = op_name(self)
  local x, batched = cell_input(self, input, op)
  local h, c = state_pair(hx, op, "{h, c}")
  h = cell_state(self, h, "h", x, batched, op)
  c = cell_state(self, c, "c", x, batched, op)
  local xi = F.linear(x, self.weight_ih, self.bias_ih)
  local h2, c2 = lstm_step(xi, h, c, self.weight_hh, self.bias_hh)
  return unbatch(h2, batched), unbatch(c2, batched)
end

--- nn.GRUCell(input_size, hidden_size [, bias = true]) -> one step of a GRU.
-- cell(x [, h]) -> h'. Example: local h = nn.GRUCell(4, 8)(ember.randn(2, 4))
M.GRUCell = RNNCellBase:extend("GRUCell")
function M.GRUCell:forward(input, hx)
  local xi, h, batched = one_state_cell_args(self, input, hx)
  return unbatch(gru_step(xi, h, self.weight_hh, self.bias_hh), batched)
end

for _, cls in ipairs{M.RNNCell, M.LSTMCell, M.GRUCell} do
  own_methods(cls, RNNCellBase, {"init", "extra_repr", "reset_parameters"})
end

return M
