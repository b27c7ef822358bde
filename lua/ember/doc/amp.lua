-- Docs of ember.amp (gradient scaling for mixed precision). Format: ember/help.lua.
local SETUP = [=[
local p = ember.tensor({1.0, 2.0}, {requires_grad = true})
local opt = ember.optim.SGD({p}, {lr = 0.1})
local scaler = ember.amp.GradScaler()
]=]

return {
  {
    name = "ember.amp",
    sig = "local amp = ember.amp",
    doc = [=[
Mixed-precision helpers, as torch.amp: GradScaler, and autocast (the same function as
ember.autocast).]=],
    example = [=[
print(ember.amp.GradScaler():get_scale())   -- 65536]=],
  },
  {
    name = "ember.amp.GradScaler",
    sig = "ember.amp.GradScaler([device], [{init_scale = 65536, growth_factor = 2, backoff_factor = 0.5,\n"
       .. "                    growth_interval = 2000, enabled = true}]) -> scaler",
    doc = [=[
Scales the loss so low-precision gradients do not underflow, as torch.amp.GradScaler:
scaler:scale(loss):backward(); scaler:step(optimizer) unscales the gradients in place
(one pass each: multiply and look for inf/NaN at once) and skips the step when any is
inf or NaN; scaler:update() then multiplies the scale by backoff_factor after such a
step, or by growth_factor after growth_interval clean steps in a row (never into
inf). The scale lives on the device of the first outputs scaled and update() changes it
with tensor ops; step() reads the inf flags back once. Works on any device (PyTorch
1.13's torch.cuda.amp.GradScaler disables itself without CUDA). enabled = false makes
every method a pass-through.]=],
    example = SETUP .. [=[
for _ = 1, 3 do
  opt:zero_grad()
  scaler:scale((p * p):sum()):backward()
  scaler:step(opt)
  scaler:update()
end
print(p, scaler:get_scale())]=],
  },
  {
    name = "ember.amp.GradScaler:scale",
    sig = "scaler:scale(outputs) -> outputs * scale",
    doc = "Multiplies a tensor, or every tensor of a (nested) list, by the current scale.",
    example = [=[
print(ember.amp.GradScaler({init_scale = 4}):scale(ember.ones(2)))]=],
  },
  {
    name = "ember.amp.GradScaler:unscale_",
    sig = "scaler:unscale_(optimizer)",
    doc = [=[
Divides the optimizer's gradients by the scale in place (e.g. before clipping them) and
records whether any is inf or NaN: one multi-tensor pass over all the gradients of a
device, with 1/scale kept on the device (float32, as PyTorch's inv_scale), so nothing is
read back to the host; step() reads the inf/NaN flags once. At most once per optimizer
between updates; step() then does not unscale again. float16 gradients are refused as
in PyTorch (keep the optimized parameters in float32; bfloat16 is accepted).]=],
    example = SETUP .. [=[
opt:zero_grad()
scaler:scale((p * p):sum()):backward()
scaler:unscale_(opt)
print(p.grad)                                        -- [2, 4]
ember.optim.clip_grad_norm_({p}, 1.0)
scaler:step(opt)
scaler:update()]=],
  },
  {
    name = "ember.amp.GradScaler:step",
    sig = "scaler:step(optimizer) -> optimizer:step()'s result, or nil when skipped",
    doc = "Unscales (unless unscale_ ran) and steps unless a gradient is inf or NaN. No closures.",
    example = SETUP .. [=[
opt:zero_grad()
scaler:scale((p * p):sum()):backward()
p.grad[1] = 0 / 0                                    -- a NaN gradient
scaler:step(opt)                                     -- skipped
scaler:update()
print(p, scaler:get_scale())                         -- unchanged, 32768]=],
  },
  {
    name = "ember.amp.GradScaler:update",
    sig = "scaler:update([new_scale])",
    doc = [=[
After each step: backs off or grows the scale (see GradScaler), or sets it to new_scale
(a number or a one-element tensor), and readies every optimizer for the next iteration.]=],
    example = SETUP .. [=[
opt:zero_grad()
scaler:scale((p * p):sum()):backward()
scaler:step(opt)
scaler:update(1024)
print(scaler:get_scale())   -- 1024]=],
  },
  {
    name = "ember.amp.GradScaler:get_scale",
    also = {"ember.amp.GradScaler:is_enabled", "ember.amp.GradScaler:get_growth_factor",
            "ember.amp.GradScaler:set_growth_factor", "ember.amp.GradScaler:get_backoff_factor",
            "ember.amp.GradScaler:set_backoff_factor", "ember.amp.GradScaler:get_growth_interval",
            "ember.amp.GradScaler:set_growth_interval"},
    sig = "scaler:get_scale() -> number; is_enabled(); get_/set_growth_factor, get_/set_backoff_factor,\n"
       .. "get_/set_growth_interval",
    doc = "The current scale (1.0 when disabled, one read-back from the device), and the settings.",
    example = [=[
local s = ember.amp.GradScaler({growth_interval = 100})
s:set_growth_factor(4)
print(s:get_scale(), s:get_growth_factor(), s:get_growth_interval(), s:is_enabled())]=],
  },
  {
    name = "ember.amp.GradScaler:state_dict",
    also = {"ember.amp.GradScaler:load_state_dict"},
    sig = "scaler:state_dict() -> table; scaler:load_state_dict(sd)",
    doc = [=[
PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
(an empty table when disabled; loading an empty one is an error). Numbers only, so it
goes into checkpoints as they are.]=],
    example = [=[
local a = ember.amp.GradScaler({init_scale = 256})
local b = ember.amp.GradScaler()
b:load_state_dict(a:state_dict())
print(b:get_scale())   -- 256]=],
  },
}
