-- missing_ops_spec.lua (GPU) — the functions ember composes in Lua
-- (lua/ember/composite.lua) and the nn.functional additions composed over device
-- ops, on the device under test against the CPU on the same inputs: results stay on
-- the device, values and dtypes match, gradients flow back to device leaves.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close, same = g.dev, g.close, g.same
local F = ember.nn.functional

describe("composed ops on the device", function()
  it("the matrix family, float32 and float64", function()
    for _, d in ipairs({"float32", "float64"}) do
      ember.manual_seed(4)
      local m, v, w = ember.randn(3, 4, {dtype = d}), ember.randn(4, {dtype = d}), ember.randn(3, {dtype = d})
      local b1, b2 = ember.randn(2, 3, 4, {dtype = d}), ember.randn(2, 4, 5, {dtype = d})
      local o = {what = d, scale = 1e-5}
      close(ember.mv(dev(m), dev(v)), ember.mv(m, v), o)
      close(ember.addmv(dev(w), dev(m), dev(v), {beta = 0.5, alpha = 2}), ember.addmv(w, m, v, {beta = 0.5, alpha = 2}), o)
      close(ember.addr(dev(m), dev(w), dev(v)), ember.addr(m, w, v), o)
      close(ember.baddbmm(dev(ember.ones(3, 5, {dtype = d})), dev(b1), dev(b2)),
            ember.baddbmm(ember.ones(3, 5, {dtype = d}), b1, b2), o)
      close(ember.addbmm(dev(ember.ones(5, {dtype = d})), dev(b1), dev(b2)), ember.addbmm(ember.ones(5, {dtype = d}), b1, b2), o)
      close(ember.inner(dev(m), dev(b1)), ember.inner(m, b1), o)
      close(ember.vdot(dev(v), dev(v)), ember.vdot(v, v), o)
      close(ember.ger(dev(w), dev(v)), ember.ger(w, v), o)
    end
  end)
  it("elementwise and integer functions, in-place forms", function()
    local nan = 0 / 0
    local x = ember.tensor({0.0, 0.5, -1.5, nan, -0.0, 3.0}, {dtype = "float64"})
    local y = ember.tensor({1.0, nan, -2.0, 2.0, 0.0, 3.0}, {dtype = "float64"})
    local e = ember.tensor({1, -2, 3, 0, 4, -1})
    for _, op in ipairs({"fmin", "fmax", "float_power"}) do
      close(ember[op](dev(x), dev(y)), ember[op](x, y), {what = op})
    end
    for _, op in ipairs({"sinc", "rad2deg", "deg2rad"}) do close(ember[op](dev(x)), ember[op](x), {what = op}) end
    same(ember.signbit(dev(x)), ember.signbit(x), {what = "signbit"})
    same(ember.isreal(dev(x)), ember.isreal(x), {what = "isreal"})
    close(ember.ldexp(dev(x), dev(e)), ember.ldexp(x, e), {what = "ldexp"})
    for _, d in ipairs({"float64", "float32", "float16", "bfloat16"}) do
      local xd, yd = x:to(d), ember.tensor({-1.0, math.huge, 0.0, 1.0, 1.0, 3.0}, {dtype = d})
      same(ember.nextafter(dev(xd), dev(yd)), ember.nextafter(xd, yd), {what = "nextafter " .. d})
    end
    local a, b = ember.tensor({12, -18, 0, 7, 35}), ember.tensor({8, 12, 0, 0, 21})
    same(ember.gcd(dev(a), dev(b)), ember.gcd(a, b), {what = "gcd"})
    same(ember.lcm(dev(a), dev(b)), ember.lcm(a, b), {what = "lcm"})
    local t = dev(x:clone())
    same(t:rad2deg_(), ember.rad2deg(x), {what = "rad2deg_"})
  end)
  it("gradients reach device leaves", function()
    local x = g.leaf(ember.tensor({0.0, 0.3, -1.2}, {dtype = "float64"}))
    ember.sinc(x):sum():backward()
    local cx = ember.tensor({0.0, 0.3, -1.2}, {dtype = "float64", requires_grad = true})
    ember.sinc(cx):sum():backward()
    close(x.grad, cx.grad, {what = "sinc grad"})
  end)
  it("nn.functional additions", function()
    ember.manual_seed(9)
    local x = ember.randn(2, 8, 2, 3, {dtype = "float64"})
    same(F.pixel_shuffle(dev(x), 2), F.pixel_shuffle(x, 2), {what = "pixel_shuffle"})
    local z = x:reshape(2, 2, 4, 6)
    same(F.pixel_unshuffle(dev(z), 2), F.pixel_unshuffle(z, 2), {what = "pixel_unshuffle"})
    close(F.local_response_norm(dev(x), 3), F.local_response_norm(x, 3), {what = "local_response_norm"})
    local s, y = ember.randn(4, 5, {dtype = "float64"}), ember.tensor({1, 5, 2, 3})
    close(F.multi_margin_loss(dev(s), dev(y)), F.multi_margin_loss(s, y), {what = "multi_margin_loss"})
    local t = ember.randn(4, 5, {dtype = "float64"}):sign()
    close(F.soft_margin_loss(dev(s), dev(t)), F.soft_margin_loss(s, t), {what = "soft_margin_loss"})
    close(F.rrelu(dev(s)), F.rrelu(s), {what = "rrelu eval"})
    local r = F.rrelu(dev(-ember.ones(100, {dtype = "float64"})), 0.1, 0.3, true)
    assert(r.device == g.devname, r.device)
    local slopes = (-r):to("cpu")
    assert(slopes:min():item() >= 0.1 and slopes:max():item() <= 0.3)
  end)
end)
