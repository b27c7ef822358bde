-- ember.nn.utils.rnn — variable-length batches for the recurrent layers (PyTorch's
-- torch.nn.utils.rnn): pad_sequence, pack_padded_sequence, pad_packed_sequence,
-- pack_sequence, unpack_sequence, unpad_sequence and the PackedSequence they make.
--
--   local rnn_utils = ember.nn.utils.rnn
--   local packed = rnn_utils.pack_padded_sequence(x, {5, 3, 2}, {batch_first = true})
--   local out, state = lstm(packed)               -- nn.RNN / LSTM / GRU take it as input
--   local padded, lengths = rnn_utils.pad_packed_sequence(out, {batch_first = true})
--
-- A PackedSequence holds the valid steps only, time step after time step: data's first
-- batch_sizes[1] rows are step 1 of every sequence, the next batch_sizes[2] rows step 2 of
-- those at least 2 long, ..., the sequences ordered longest first. sorted_indices (nil when
-- the batch came sorted) lists, for each position in that order, the sequence's position in
-- the caller's batch; unsorted_indices is its inverse. Both are 1-based (ember's one
-- deviation; PyTorch's are 0-based), int64 on data's device; batch_sizes is an int64 CPU
-- tensor, as in PyTorch.
--
-- Every function is differentiable in its tensors: the packing and padding are one
-- index_select each (whose gradient is one index_add), never a loop over samples.
local ember = require "ember"
local raise = require("ember.errors").raise
local options = require("ember.nn.functional")._options

local M = {}

local function list_str(t)
  local parts = {}
  for i = 1, math.min(#t, 16) do parts[i] = tostring(t[i]) end
  return "{" .. table.concat(parts, ", ") .. (#t > 16 and ", ..." or "") .. "}"
end

local function shape_str(t) return "[" .. table.concat(t.shape, ", ") .. "]" end

-- ---- PackedSequence ---------------------------------------------------------------------

--- rnn_utils.PackedSequence(data, batch_sizes [, sorted_indices [, unsorted_indices]]) -> a packed batch.
-- Usually made by pack_padded_sequence or pack_sequence, not by hand.
-- Example: local p = rnn_utils.PackedSequence(ember.randn(3, 2), {2, 1})
local PackedSequence = setmetatable({}, {__call = function(_, ...) return M._new_checked(...) end})
PackedSequence.__index = PackedSequence
PackedSequence.__name = "PackedSequence"
M.PackedSequence = PackedSequence

-- a PackedSequence from parts already known to be right
-- (is_cuda: data's device is a CUDA one, a field as on tensors)
local function new_packed(data, batch_sizes, sorted_indices, unsorted_indices)
  return setmetatable({data = data, batch_sizes = batch_sizes, sorted_indices = sorted_indices,
                       unsorted_indices = unsorted_indices, is_cuda = data.is_cuda}, PackedSequence)
end
M._new = new_packed

-- v is a PackedSequence (PyTorch: isinstance(v, PackedSequence))
local function is_packed(v) return getmetatable(v) == PackedSequence end
M._is_packed = is_packed

-- what v is, for an error message
local function what_is(v)
  if is_packed(v) then return "a PackedSequence" end
  if ember.is_tensor(v) then return "a tensor of shape " .. shape_str(v) end
  return type(v) == "string" and string.format("%q", v) or tostring(v) .. " (a " .. type(v) .. ")"
end

-- an integer-valued number as an integer, else nil
local function integer(v) return type(v) == "number" and math.tointeger(v) or nil end

-- lengths (a Lua list of integers, or a 1-D CPU tensor of integer values) as a Lua list
local function int_list(v, op, what)
  local list
  if ember.is_tensor(v) then
    if v.device ~= "cpu" then
      raise(string.format("%s: '%s' should be a 1-D CPU int64 tensor or a Lua list, got a tensor on %s",
                          op, what, v.device))
    end
    if v.ndim ~= 1 then
      raise(string.format("%s: '%s' should be a 1-D CPU int64 tensor or a Lua list, got a tensor of shape %s",
                          op, what, shape_str(v)))
    end
    list = v:tolist()
  elseif type(v) == "table" and not is_packed(v) then
    list = v
  else
    raise(string.format("%s: '%s' should be a Lua list or a 1-D CPU int64 tensor, got %s", op, what, what_is(v)))
  end
  local out = {}
  for i = 1, #list do
    out[i] = integer(list[i])
    if not out[i] then
      raise(string.format("%s: '%s' must hold integers, got %s at position %d", op, what, tostring(list[i]), i))
    end
  end
  return out
end

local function int64(list, device)
  return ember.tensor(list, {dtype = "int64", device = device})
end

-- the inverse of the permutation perm (a Lua list)
local function inverse(perm)
  local inv = {}
  for i, p in ipairs(perm) do inv[p] = i end
  return inv
end

-- the index tensor idx for x:index_select(1, idx), on x's device
local function gather(x, idx) return x:index_select(1, int64(idx, x.device)) end

-- the first dim's size (the batch) of a permutation tensor, checked
local function check_perm(t, n, op, what)
  if not ember.is_tensor(t) or t.ndim ~= 1 or t.shape[1] ~= n then
    raise(string.format("%s: %s must be a 1-D tensor of %d indices (the batch), got %s", op, what, n, what_is(t)))
  end
  local list, seen = int_list(t:to("cpu"), op, what), {}
  for i, p in ipairs(list) do
    if p < 1 or p > n or seen[p] then
      raise(string.format("%s: %s must be a permutation of 1..%d, got %s at position %d", op, what, n, p, i))
    end
    seen[p] = true
  end
  return list
end

-- PackedSequence(...) as the user calls it: the parts checked
function M._new_checked(data, batch_sizes, sorted_indices, unsorted_indices)
  local op = "PackedSequence"
  if not ember.is_tensor(data) or data.ndim < 1 then
    raise(string.format("%s: expected data to be a tensor of at least 1 dimension, got %s", op, what_is(data)))
  end
  local bs = int_list(batch_sizes, op, "batch_sizes")
  if #bs == 0 then raise(op .. ": batch_sizes must hold at least one step, got an empty list") end
  local total = 0
  for t, n in ipairs(bs) do
    if n < 1 or (t > 1 and n > bs[t - 1]) then
      raise(string.format("%s: batch_sizes must be positive and non-increasing, got %s", op, list_str(bs)))
    end
    total = total + n
  end
  if total ~= data.shape[1] then
    raise(string.format("%s: batch_sizes %s add up to %d, but data has %d rows (shape %s)", op, list_str(bs),
                        total, data.shape[1], shape_str(data)))
  end
  local B = bs[1] or 0
  local sorted, unsorted
  if sorted_indices ~= nil then
    sorted = check_perm(sorted_indices, B, op, "sorted_indices")
    unsorted = unsorted_indices ~= nil and check_perm(unsorted_indices, B, op, "unsorted_indices") or inverse(sorted)
    local inv = inverse(sorted)
    for i = 1, B do
      if unsorted[i] ~= inv[i] then
        raise(string.format("%s: unsorted_indices %s is not the inverse of sorted_indices %s", op,
                            list_str(unsorted), list_str(sorted)))
      end
    end
  elseif unsorted_indices ~= nil then
    raise(op .. ": unsorted_indices given without sorted_indices")
  end
  return new_packed(data, int64(bs, "cpu"), sorted and int64(sorted, data.device),
                    unsorted and int64(unsorted, data.device))
end

--- p:to(...) -> the PackedSequence with data:to(...) (a device, a dtype or both, as
-- Tensor:to); sorted_indices and unsorted_indices follow data's device, batch_sizes stays
-- on the CPU. Example: local p64 = p:to("float64")
function PackedSequence:to(...)
  local data = self.data:to(...)
  local function moved(t) return t and t:to(data.device) end
  return new_packed(data, self.batch_sizes, moved(self.sorted_indices), moved(self.unsorted_indices))
end

--- p:cpu(), p:cuda(), p:double(), p:float(), p:half() -> p:to("cpu"), p:to("cuda"), p:to("float64"), ...
function PackedSequence:cpu() return self:to("cpu") end
function PackedSequence:cuda() return self:to("cuda") end
function PackedSequence:double() return self:to("float64") end
function PackedSequence:float() return self:to("float32") end
function PackedSequence:half() return self:to("float16") end

function PackedSequence:__tostring()
  return string.format("PackedSequence(data=%s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)",
                       tostring(self.data), tostring(self.batch_sizes), tostring(self.sorted_indices),
                       tostring(self.unsorted_indices))
end

-- ---- padding ----------------------------------------------------------------------------

-- rows with one more row of value at the end (whose position is #rows + 1): the padding
-- that index_select picks where a step is missing
local function with_pad_row(rows, value, op)
  if type(value) ~= "number" then
    raise(string.format("%s: padding_value must be a number, got %s", op, what_is(value)))
  end
  local shape = {1}
  for d = 2, rows.ndim do shape[d] = rows.shape[d] end
  return ember.cat({rows, ember.full(shape, value, {dtype = rows.dtype, device = rows.device})}, 1)
end

-- the padded [T, B, ...] ([B, T, ...] with batch_first) tensor whose step t of sequence b
-- is rows[row(b, t)]: one index_select
local function padded_from(rows, T, B, batch_first, row)
  local idx = {}
  if batch_first then
    for b = 1, B do for t = 1, T do idx[#idx + 1] = row(b, t) end end
  else
    for t = 1, T do for b = 1, B do idx[#idx + 1] = row(b, t) end end
  end
  local flat = gather(rows, idx)
  local shape = batch_first and {B, T} or {T, B}
  for d = 2, flat.ndim do shape[d + 1] = flat.shape[d] end
  return flat:reshape(shape)
end

local function boolean(v, default, op, what)
  if v == nil then return default end
  if type(v) ~= "boolean" then raise(string.format("%s: %s must be a boolean, got %s", op, what, what_is(v))) end
  return v
end

-- pad_sequence's work; op names the function the user called
local function pad(op, sequences, batch_first, padding_value, padding_side)
  if type(sequences) ~= "table" or ember.is_tensor(sequences) or is_packed(sequences) then
    raise(string.format("%s: expected a Lua list of tensors, got %s", op, what_is(sequences)))
  end
  local B = #sequences
  if B == 0 then raise(op .. ": received an empty list of sequences") end
  local first = sequences[1]
  local lens, T = {}, 0
  for b = 1, B do
    local s = sequences[b]
    if not ember.is_tensor(s) or s.ndim < 1 then
      raise(string.format("%s: sequence %d must be a tensor of at least 1 dimension, got %s", op, b, what_is(s)))
    end
    local same = s.ndim == first.ndim
    for d = 2, s.ndim do same = same and s.shape[d] == first.shape[d] end
    if not same then
      raise(string.format("%s: every sequence must have the trailing shape of sequence 1 (%s), "
                          .. "but sequence %d has shape %s", op, shape_str(first), b, shape_str(s)))
    end
    if s.dtype ~= first.dtype or s.device ~= first.device then
      raise(string.format("%s: sequence %d is %s on %s, sequence 1 %s on %s (expected the same)", op, b,
                          s.dtype, s.device, first.dtype, first.device))
    end
    lens[b] = s.shape[1]
    if lens[b] > T then T = lens[b] end
  end
  local side = padding_side == nil and "right" or padding_side
  if side ~= "right" and side ~= "left" then
    raise(string.format("%s: padding_side must be \"right\" or \"left\", got %s", op, what_is(side)))
  end
  local rows = with_pad_row(ember.cat(sequences, 1), padding_value == nil and 0 or padding_value, op)
  local pad_row, starts = rows.shape[1], {}
  local start = 0
  for b = 1, B do starts[b] = start; start = start + lens[b] end
  -- row of sequence b at step t (0-based step from its first one), or the padding
  local function row(b, t)
    local s = side == "left" and t - (T - lens[b]) or t
    return (s >= 1 and s <= lens[b]) and starts[b] + s or pad_row
  end
  return padded_from(rows, T, B, batch_first, row)
end

--- rnn_utils.pad_sequence(sequences [, {batch_first = false, padding_value = 0, padding_side = "right"}]) -> padded.
-- sequences: a Lua list of tensors [L_i, *]; padded [T, B, *] ([B, T, *] with batch_first).
function M.pad_sequence(sequences, ...)
  local op = "pad_sequence"
  local o = options(op, {"batch_first", "padding_value", "padding_side"}, ...)
  return pad(op, sequences, boolean(o.batch_first, false, op, "batch_first"), o.padding_value, o.padding_side)
end

-- ---- packing ----------------------------------------------------------------------------

-- lengths checked against the batch B and the time dim T; returns the order of the
-- sequences, longest first (nil when enforce_sorted: the order given)
local function sort_lengths(op, lens, B, T, enforce_sorted)
  if B == 0 then raise(op .. ": expected a batch of at least one sequence, got an input with batch size 0") end
  if #lens ~= B then
    raise(string.format("%s: Expected `len(lengths)` to be equal to batch_size, but got %d (batch_size=%d): "
                        .. "lengths %s", op, #lens, B, list_str(lens)))
  end
  for i, n in ipairs(lens) do
    if n <= 0 then
      raise(string.format("%s: Length of all samples has to be greater than 0, but found an element in "
                          .. "'lengths' that is <= 0: lengths[%d] = %d in %s", op, i, n, list_str(lens)))
    end
    if n > T then
      raise(string.format("%s: lengths[%d] = %d is larger than the time dimension of the input (%d): lengths %s",
                          op, i, n, T, list_str(lens)))
    end
  end
  if enforce_sorted then
    for i = 2, B do
      if lens[i] > lens[i - 1] then
        raise(string.format("%s: `lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                            .. "true, got %s. You can pass {enforce_sorted = false} to pack_padded_sequence "
                            .. "and/or pack_sequence to sidestep this requirement.", op, list_str(lens)))
      end
    end
    return nil
  end
  local order = {}
  for i = 1, B do order[i] = i end
  table.sort(order, function(a, b)   -- longest first; ties keep the batch order
    if lens[a] ~= lens[b] then return lens[a] > lens[b] end
    return a < b
  end)
  return order
end

-- batch_sizes[t] = how many of the lengths (sorted, longest first) are >= t
local function batch_sizes_of(sorted_lens)
  local bs = {}
  for k = #sorted_lens, 1, -1 do
    for t = #bs + 1, sorted_lens[k] do bs[t] = k end
  end
  return bs
end

-- pack_padded_sequence's work; op names the function the user called
local function pack(op, input, lengths, batch_first, enforce_sorted)
  if not ember.is_tensor(input) or input.ndim < 2 then
    raise(string.format("%s: expected the input as a tensor of at least 2 dimensions ([%s, *]), got %s", op,
                        batch_first and "batch, seq_len" or "seq_len, batch", what_is(input)))
  end
  local B, T = input.shape[2], input.shape[1]
  if batch_first then B, T = T, B end
  local lens = int_list(lengths, op, "lengths")
  local order = sort_lengths(op, lens, B, T, enforce_sorted)
  local sorted_lens = {}
  for k = 1, B do sorted_lens[k] = lens[order and order[k] or k] end
  local bs = batch_sizes_of(sorted_lens)
  -- row of step t of the k-th longest sequence in input viewed as [T * B, *] ([B * T, *])
  local idx = {}
  for t = 1, #bs do
    for k = 1, bs[t] do
      local b = order and order[k] or k
      idx[#idx + 1] = batch_first and (b - 1) * T + t or (t - 1) * B + b
    end
  end
  local flat_shape = {B * T}
  for d = 3, input.ndim do flat_shape[d - 1] = input.shape[d] end
  local data = gather(input:reshape(flat_shape), idx)
  return new_packed(data, int64(bs, "cpu"), order and int64(order, input.device),
                    order and int64(inverse(order), input.device))
end

--- rnn_utils.pack_padded_sequence(input, lengths [, {batch_first = false, enforce_sorted = true}]) -> PackedSequence.
-- input [T, B, *] ([B, T, *] with batch_first); lengths a Lua list or a 1-D CPU int64 tensor.
function M.pack_padded_sequence(input, lengths, ...)
  local op = "pack_padded_sequence"
  local o = options(op, {"batch_first", "enforce_sorted"}, ...)
  return pack(op, input, lengths, boolean(o.batch_first, false, op, "batch_first"),
              boolean(o.enforce_sorted, true, op, "enforce_sorted"))
end

--- rnn_utils.pack_sequence(sequences [, {enforce_sorted = true}]) -> PackedSequence.
-- sequences: a Lua list of tensors [L_i, *], each at least one step long.
function M.pack_sequence(sequences, ...)
  local op = "pack_sequence"
  local o = options(op, {"enforce_sorted"}, ...)
  local padded = pad(op, sequences, false, 0, "right")
  local lens = {}
  for b, s in ipairs(sequences) do lens[b] = s.shape[1] end
  return pack(op, padded, lens, false, boolean(o.enforce_sorted, true, op, "enforce_sorted"))
end

-- ---- unpacking --------------------------------------------------------------------------

local function check_packed(v, op)
  if not is_packed(v) then raise(string.format("%s: expected a PackedSequence, got %s", op, what_is(v))) end
end

-- the lengths of a PackedSequence's sequences, in its sorted order, and its batch_sizes
local function packed_lengths(p)
  local bs = p.batch_sizes:tolist()
  local lens = {}
  for t, n in ipairs(bs) do for k = 1, n do lens[k] = t end end
  return lens, bs
end

-- pad_packed_sequence's work: padded, and the lengths in the caller's batch order (a list)
local function unpack_packed(op, p, batch_first, padding_value, total_length)
  check_packed(p, op)
  local sorted_lens, bs = packed_lengths(p)
  local T, B = #bs, bs[1] or 0
  if total_length ~= nil then
    local n = integer(total_length)
    if not n or n < T then
      raise(string.format("%s: Expected total_length to be at least the length of the longest sequence in "
                          .. "input, but got total_length=%s and max sequence length being %d", op,
                          tostring(total_length), T))
    end
    T = n
  end
  local offsets, off = {}, 0
  for t, n in ipairs(bs) do offsets[t] = off; off = off + n end
  local unsorted = p.unsorted_indices and p.unsorted_indices:to("cpu"):tolist()
  local rows = with_pad_row(p.data, padding_value == nil and 0 or padding_value, op)
  local pad_row = rows.shape[1]
  -- row of step t of the caller's sequence b
  local function row(b, t)
    local k = unsorted and unsorted[b] or b
    return t <= sorted_lens[k] and offsets[t] + k or pad_row
  end
  local lengths = {}
  for b = 1, B do lengths[b] = sorted_lens[unsorted and unsorted[b] or b] end
  return padded_from(rows, T, B, batch_first, row), lengths
end

--- rnn_utils.pad_packed_sequence(sequence [, {batch_first = false, padding_value = 0,
-- total_length}]) -> padded, lengths.
-- The inverse of pack_padded_sequence; lengths an int64 CPU tensor in the original order.
function M.pad_packed_sequence(sequence, ...)
  local op = "pad_packed_sequence"
  local o = options(op, {"batch_first", "padding_value", "total_length"}, ...)
  local padded, lengths = unpack_packed(op, sequence, boolean(o.batch_first, false, op, "batch_first"),
                                 o.padding_value, o.total_length)
  return padded, int64(lengths, "cpu")
end

--- rnn_utils.unpack_sequence(packed) -> a Lua list of the sequences [L_i, *], in the original order.
function M.unpack_sequence(packed)
  local padded, lengths = unpack_packed("unpack_sequence", packed, true, 0, nil)
  local out = {}
  for b, n in ipairs(lengths) do out[b] = padded[b]:narrow(1, 1, n) end
  return out
end

--- rnn_utils.unpad_sequence(padded, lengths [, {batch_first = false}]) -> a Lua list of the sequences [L_i, *].
function M.unpad_sequence(padded_sequences, lengths, ...)
  local op = "unpad_sequence"
  local o = options(op, {"batch_first"}, ...)
  local batch_first = boolean(o.batch_first, false, op, "batch_first")
  local x = padded_sequences
  if not ember.is_tensor(x) or x.ndim < 2 then
    raise(string.format("%s: expected the padded sequences as a tensor of at least 2 dimensions, got %s", op,
                        what_is(x)))
  end
  if not batch_first then x = x:transpose(1, 2) end
  local B, T = x.shape[1], x.shape[2]
  local lens = int_list(lengths, op, "lengths")
  if #lens ~= B then
    raise(string.format("%s: expected %d lengths (the batch), got %d: %s", op, B, #lens, list_str(lens)))
  end
  local out = {}
  for b, n in ipairs(lens) do
    if n < 0 or n > T then
      raise(string.format("%s: lengths[%d] = %d is outside 0..%d (the time dimension)", op, b, n, T))
    end
    out[b] = x[b]:narrow(1, 1, n)
  end
  return out
end

return M
