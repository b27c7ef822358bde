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

-- steps[first .. first + n - 1] = the slices x[1], ..., x[n] along dim 1.
-- Halving rather than x:unbind(1): the gradient of a slice is embedded in zeros of its
-- parent's shape, so T slices of x cost T * x's size in the backward (quadratic in T);
-- halving makes it size * log2(T).
local function time_steps(x, first, n, steps)
  if n <= 4 then
    for i = 1, n do steps[first + i - 1] = x[i] end
    return
  end
  local half = n // 2
  time_steps(x:narrow(1, 1, half), first, half, steps)
  time_steps(x:narrow(1, half + 1, n - half), first + half, n - half, steps)
end

-- one direction of one layer over the whole sequence x [T, N, in]; returns the outputs
-- [T, N, out] and the final h (and c)
local function run_direction(self, x, sfx, h, c, reverse)
  local w_hh, b_hh = self["weight_hh" .. sfx], self["bias_hh" .. sfx]
  local w_hr = self["weight_hr" .. sfx]
  -- the input projections of every time step: one GEMM
  local xi = F.linear(x, self["weight_ih" .. sfx], self["bias_ih" .. sfx])
  local T, steps, outs = xi.shape[1], {}, {}
  time_steps(xi, 1, T, steps)
  local mode, act = self.mode, self.nonlinearity
  for s = 1, T do
    local t = reverse and T - s + 1 or s
    if mode == "LSTM" then
      h, c = lstm_step(steps[t], h, c, w_hh, b_hh, w_hr)
    elseif mode == "GRU" then
      h = gru_step(steps[t], h, w_hh, b_hh)
    else
      h = rnn_step(act, steps[t], h, w_hh, b_hh)
    end
    outs[t] = h
  end
  return ember.stack(outs, 1), h, c
end

function RNNBase:forward(input, hx)
  local op = op_name(self)
  if not ember.is_tensor(input) then raise(string.format("%s: expected a tensor as input, got %s", op, type(input))) end
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
  if input.dtype ~= self.weight_ih_l0.dtype then
    raise(string.format("%s: the input has dtype %s, the parameters %s (expected the same)", op, input.dtype,
                        self.weight_ih_l0.dtype))
  end
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
  local dirs = self.bidirectional and 2 or 1
  local hs, cs = {}, {}
  for layer = 0, self.num_layers - 1 do
    local outs = {}
    for d = 1, dirs do
      local k = layer * dirs + d
      local sfx = "_l" .. layer .. (d == 2 and "_reverse" or "")
      outs[d], hs[k], cs[k] = run_direction(self, x, sfx, h0[k], lstm and c0[k] or nil, d == 2)
    end
    x = dirs == 2 and ember.cat(outs, 3) or outs[1]
    if layer < self.num_layers - 1 and self.dropout > 0 and self.training then
      x = F.dropout(x, self.dropout, true)
    end
  end
  local h_n = ember.stack(hs, 1)
  local c_n = lstm and ember.stack(cs, 1) or nil
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
  if not ember.is_tensor(input) then raise(string.format("%s: expected a tensor as input, got %s", op, type(input))) end
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

--- nn.RNNCell(input_size, hidden_size [, bias = true [, nonlinearity = "tanh"]]) -> one step of an Elman RNN.
-- cell(x [, h]) -> h'. Example: local h = nn.RNNCell(4, 8)(ember.randn(2, 4))
M.RNNCell = RNNCellBase:extend("RNNCell")
function M.RNNCell:forward(input, hx)
  local op = op_name(self)
  local x, batched = cell_input(self, input, op)
  local h = cell_state(self, hx, "hx", x, batched, op)
  local xi = F.linear(x, self.weight_ih, self.bias_ih)
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
  local op = op_name(self)
  local x, batched = cell_input(self, input, op)
  local h = cell_state(self, hx, "hx", x, batched, op)
  local xi = F.linear(x, self.weight_ih, self.bias_ih)
  return unbatch(gru_step(xi, h, self.weight_hh, self.bias_hh), batched)
end

for _, cls in ipairs{M.RNNCell, M.LSTMCell, M.GRUCell} do
  own_methods(cls, RNNCellBase, {"init", "extra_repr", "reset_parameters"})
end

return M
