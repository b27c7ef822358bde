-- default_device_spec.lua (GPU) — ember.set_default_device: the factories called without a
-- device option create on the default device (the device under test here), an explicit
-- device still wins, the *_like forms keep their tensor's device, modules' parameters
-- follow (as torch.set_default_device's do), and nil or "cpu" sets it back.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

describe("ember.set_default_device", function()
  after_each(function() ember.set_default_device(nil) end)

  it("moves every factory without a device option to the default device", function()
    assert.equals("cpu", ember.get_default_device())
    ember.set_default_device(g.DEV)
    assert.equals(g.devname, ember.get_default_device())
    local made = {
      zeros = ember.zeros(2), ones = ember.ones(2, 2), empty = ember.empty(3), full = ember.full({2}, 7),
      tensor = ember.tensor({1, 2}), arange = ember.arange(4), linspace = ember.linspace(0, 1, 3),
      logspace = ember.logspace(0, 1, 3), eye = ember.eye(2), rand = ember.rand(2), randn = ember.randn(2),
      randint = ember.randint(5, {3}), randperm = ember.randperm(4), tril_indices = ember.tril_indices(2, 2),
      normal = ember.normal(0, 1, {2}), hann_window = ember.hann_window(4),
      linear_weight = ember.nn.Linear(2, 3).weight,
    }
    for name, t in pairs(made) do assert.equals(g.devname, t.device, name) end
    -- values are those the CPU gives
    g.same(ember.arange(4), ember.arange(4, {device = "cpu"}))
    g.same(ember.full({2}, 7), ember.full({2}, 7, {device = "cpu"}))
  end)

  it("leaves explicit devices and the *_like forms alone", function()
    ember.set_default_device(g.DEV)
    assert.equals("cpu", ember.zeros(2, {device = "cpu"}).device)
    local host = ember.ones(2, {device = "cpu"})
    assert.equals("cpu", ember.zeros_like(host).device)
    assert.equals("cpu", ember.rand_like(host).device)
    assert.equals("cpu", (host + 1).device)
  end)

  it("goes back to the CPU with nil or \"cpu\", and refuses what is not a device", function()
    ember.set_default_device(g.DEV)
    ember.set_default_device("cpu")
    assert.equals("cpu", ember.zeros(1).device)
    ember.set_default_device(g.DEV)
    ember.set_default_device(nil)
    assert.equals("cpu", ember.get_default_device())
    g.has(g.err(ember.set_default_device, "tpu"), "ember.set_default_device: argument 1: unknown device 'tpu'")
    g.has(g.err(ember.set_default_device, 0), "expected a device name")
    assert.equals("cpu", ember.get_default_device())
  end)
end)
