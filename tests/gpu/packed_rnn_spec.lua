-- packed_rnn_spec.lua (GPU) — ember.nn.utils.rnn and PackedSequence inputs to nn.RNN /
-- LSTM / GRU on the device: packing a device tensor keeps the indices on its device
-- (batch_sizes on the CPU), PackedSequence:to moves them, and a bidirectional 2-layer
-- LSTM and GRU over an unsorted packed batch compute on the device what they compute on
-- the CPU, values and gradients (float64, so differences are the kernels' rounding).
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close = g.dev, g.close
local nn = require("ember.nn")
local R = nn.utils.rnn

local function D(...) return ember.randn({...}, {dtype = "float64"}) end

describe("packed sequences on the device", function()
  it("pack, pad and PackedSequence:to keep the indices with the data, batch_sizes on the CPU", function()
    ember.manual_seed(51)
    local x = D(5, 3, 2)
    local p_cpu = R.pack_padded_sequence(x, {2, 5, 3}, {enforce_sorted = false})
    local p = R.pack_padded_sequence(dev(x), {2, 5, 3}, {enforce_sorted = false})
    assert.equal(g.devname, p.data.device)
    assert.equal(g.devname, p.sorted_indices.device)
    assert.equal(g.devname, p.unsorted_indices.device)
    assert.equal("cpu", p.batch_sizes.device)
    assert.equal(g.is_cuda, p.is_cuda)
    close(p.data, p_cpu.data)
    local moved = p_cpu:to(g.DEV)
    assert.equal(g.devname, moved.sorted_indices.device)
    assert.equal("cpu", moved.batch_sizes.device)
    local padded, lengths = R.pad_packed_sequence(moved, {batch_first = true, padding_value = -1})
    close(padded, (R.pad_packed_sequence(p_cpu, {batch_first = true, padding_value = -1})))
    assert.equal("cpu", lengths.device)
    assert.same({2, 5, 3}, lengths:tolist())
    local back = moved:cpu()
    assert.equal("cpu", back.unsorted_indices.device)
  end)

  it("a bidirectional 2-layer LSTM and GRU over an unsorted batch agree with the CPU", function()
    for _, kind in ipairs{"LSTM", "GRU"} do
      ember.manual_seed(52)
      local m_cpu = nn[kind](3, 4, {num_layers = 2, bidirectional = true, batch_first = true, dtype = "float64"})
      local m_dev = nn[kind](3, 4, {num_layers = 2, bidirectional = true, batch_first = true, dtype = "float64"})
      m_dev:load_state_dict(m_cpu:state_dict())
      m_dev:to(g.DEV)
      local x, h0, c0 = D(4, 5, 3), D(4, 4, 4), D(4, 4, 4)
      local function run(m, xs, hs, cs)
        local xl, hl = xs:detach():clone():requires_grad_(), hs:detach():clone():requires_grad_()
        local packed = R.pack_padded_sequence(xl, {2, 5, 1, 4}, {batch_first = true, enforce_sorted = false})
        local out, st = m(packed, kind == "LSTM" and {hl, cs} or hl)
        local h_n = kind == "LSTM" and st[1] or st
        local y = R.pad_packed_sequence(out, {batch_first = true})
        local w = ember.linspace(-1, 1, y:numel(), {dtype = "float64"}):reshape(y.shape):to(y.device)
        ;((y * w):sum() + (h_n * h_n):sum()):backward()
        return y:detach(), h_n:detach(), xl.grad, hl.grad
      end
      local got = {run(m_dev, dev(x), dev(h0), dev(c0))}
      local want = {run(m_cpu, x, h0, c0)}
      for i, what in ipairs{"output", "h_n", "grad of input", "grad of h0"} do
        close(got[i], want[i], {rtol = 1e-9, atol = 1e-11, what = kind .. " " .. what})
      end
      local pd, pc = m_dev:parameters(), m_cpu:parameters()
      for i = 1, #pc do
        close(pd[i].grad, pc[i].grad, {rtol = 1e-9, atol = 1e-11, what = kind .. " parameter " .. i})
      end
    end
  end)
end)
