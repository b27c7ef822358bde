-- device_object_spec.lua — ember.device, torch.device's counterpart: its fields and text,
-- and every argument that takes a device name taking it (t:to, the factories' device
-- option, module:to, set_default_device, Generator, load's map_location, make_tensor).
-- What PyTorch prints for the same objects: device(type='cuda', index=1) -> "cuda:1".
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has

describe("ember.device", function()
  it("has torch.device's type, index and text", function()
    local d = ember.device("cuda", 1)
    assert.are.same({"cuda", 1, "cuda:1"}, {d.type, d.index, tostring(d)})
    d = ember.device("cuda:2")
    assert.are.same({"cuda", 2, "cuda:2"}, {d.type, d.index, tostring(d)})
    d = ember.device("cpu")
    assert.are.same({"cpu", "cpu"}, {d.type, tostring(d)})
    assert.is_nil(d.index)
    assert.are.equal("cuda", tostring(ember.device("cuda")))
    assert.is_true(ember.device("cuda", 0) == ember.device("cuda:0"))
    assert.is_false(ember.device("cuda") == ember.device("cuda:0"))      -- as PyTorch: index None vs 0
    assert.is_true(rawequal(ember.device(d), d))
    assert.are.equal("on cpu", "on " .. d)
  end)

  it("is taken wherever a device name is", function()
    local d = ember.device("cpu")
    assert.are.equal("cpu", ember.ones(2):to(d).device)
    assert.are.equal("float64", ember.ones(2):to(d, "float64").dtype)
    assert.are.equal("cpu", ember.zeros(2, {device = d}).device)
    assert.are.equal("cpu", ember.tensor({1, 2}, {device = d}).device)
    assert.are.equal("cpu", ember.ones(2):new_zeros({3}, {device = d}).device)
    assert.are.equal("cpu", ember.nn.Linear(2, 2):to(d).weight.device)
    ember.set_default_device(d)
    ember.set_default_device(nil)
    assert.are.equal("Generator(device=cpu)", tostring(ember.Generator(d)))
    assert.are.equal("cpu", ember.testing.make_tensor({2}, {dtype = "float32", device = d}).device)
    local path = os.tmpname()
    ember.save(path, {w = ember.ones(2)})
    assert.are.equal("cpu", ember.load(path, {map_location = d}).w.device)
    os.remove(path)
  end)

  it("refuses other names and changes, at the caller's line", function()
    has(err(function() local _ = ember.device("gpu") end), 'ember.device: expected "cpu", "cuda" or "cuda:N", got "gpu"',
        "device_object_spec.lua:")
    has(err(function() local _ = ember.device("cuda:1", 2) end), '"cuda:1" names an index already')
    has(err(function() local _ = ember.device("cuda", -1) end), "index must be an integer >= 0, got -1")
    has(err(function() local _ = ember.device(0) end), "expected a device name")
    has(err(function() ember.device("cpu").type = "cuda" end), "its fields are read-only (assigned 'type')",
        "device_object_spec.lua:")
    -- a device object naming no device this build has is the same error as its name
    local e1 = err(function() local _ = ember.ones(2):to("cuda:7") end)
    local e2 = err(function() local _ = ember.ones(2):to(ember.device("cuda", 7)) end)
    assert.are.equal(e1:gsub("^[^:]+:%d+: ", ""), e2:gsub("^[^:]+:%d+: ", ""))
  end)
end)
