-- Docs of lua/ember/nn/sampling.lua: F.grid_sample and F.affine_grid (spatial transformer
-- networks). Format: ember/help.lua.
return {
  {
    name = "ember.nn.functional.grid_sample",
    sig = "F.grid_sample(input, grid [, mode = \"bilinear\" [, padding_mode = \"zeros\" [, align_corners = false]]])"
       .. "\n  -> output",
    doc = [[
Samples input at the positions grid gives, as torch.nn.functional.grid_sample.
input [N, C, H, W] with grid [N, H_out, W_out, 2] gives [N, C, H_out, W_out]; input
[N, C, D, H, W] with grid [N, D_out, H_out, W_out, 3] gives [N, C, D_out, H_out, W_out].
grid[n, ..., :] is a position (x, y[, z]), x first (along W), normalised to [-1, 1] over
the input: these are coordinates, not indices, so they are PyTorch's numbers unchanged
(no 1-based shift). With align_corners = false (the default) -1 and 1 are the outer
edges of the corner pixels; with true, the centres of the corner pixels.
mode: "bilinear" (trilinear on a 5-D input), "nearest" (ties to the even pixel), or
"bicubic" (cubic convolution, A = -0.75; tricubic on a 5-D input, as PyTorch 2.15).
padding_mode, for positions outside the input: "zeros" (reads 0), "border" (the nearest
edge pixel), "reflection" (reflected by the edges until inside; bicubic reflects each
tap).
The optional arguments are positional or one options table {mode =, padding_mode =,
align_corners =}. input and grid have the same float dtype (float32, float64; float16
and bfloat16 are computed in float32 and rounded once) and device; under ember.autocast
it runs in float32 on the CPU and in the wider dtype on CUDA, as PyTorch.
Gradients: to input, and to grid for bilinear and bicubic (nearest gives the grid a
zero gradient), with PyTorch's conventions where the function has a kink: a position
on or beyond the edge gets 0 through border and reflection padding.
Differences from PyTorch: a NaN in the grid gives NaN at that output for every mode
and padding, and an infinite coordinate is a point infinitely far away: 0 with zeros
padding, the edge with border (NaN for bicubic, as PyTorch), NaN with reflection.
PyTorch's CPU kernels answer these differently in 4-D and 5-D, and crash on some.
With nearest, a position within an ulp of the tie between two pixels may pick the
other pixel than PyTorch's 4-D CPU kernel, which fuses (g + 1) * s - 0.5 into one
multiply-add (its 5-D kernel rounds twice, as ember). float16 and bfloat16 results
are more exact than PyTorch's CPU kernel, which computes positions in the half dtype.]],
    example = [[local F = ember.nn.functional
local img = ember.arange(1, 13, {dtype = "float32"}):reshape(1, 1, 3, 4)
local grid = ember.tensor({{{{-1, -1}, {1, 1}, {0, 0}}}}, {dtype = "float32"})   -- x, y
print(F.grid_sample(img, grid, {align_corners = true}))             -- 1, 12, 6.5
print(F.grid_sample(img, grid * 2, "nearest", "reflection", true))
local vol = ember.randn(2, 3, 4, 5, 6, {requires_grad = true})
local g3 = (ember.rand(2, 4, 4, 4, 3) * 2 - 1):requires_grad_()
local out = F.grid_sample(vol, g3, {mode = "bicubic", padding_mode = "border"})
out:sum():backward()
print(out.shape, vol.grad.shape, g3.grad.shape)]],
  },
  {
    name = "ember.nn.functional.affine_grid",
    sig = "F.affine_grid(theta, size [, align_corners = false]) -> grid",
    doc = [[
The sampling grid of a batch of affine maps, as torch.nn.functional.affine_grid, for
F.grid_sample (spatial transformer networks). theta [N, 2, 3] with size {N, C, H, W}
gives [N, H, W, 2]; theta [N, 3, 4] with size {N, C, D, H, W} gives [N, D, H, W, 3].
Each output point is theta @ (x, y[, z], 1) for the normalised position (x, y[, z]) of
that pixel of the output: -1 .. 1 over the pixels' centres with align_corners = true,
over their outer edges with false (the default); a dim of size 1 has position 0. size is
a list or an ember.Size (x.shape); C is not used. theta is float32 or float64 (float16
and bfloat16 computed in float32, rounded once); the gradient flows to theta.
align_corners is positional or {align_corners =}. Unlike PyTorch, which fails inside bmm,
theta's batch must match size[1], with an error saying so.]],
    example = [[local F = ember.nn.functional
local theta = ember.tensor({{{1.0, 0, 0}, {0, 1, 0}}})              -- the identity
print(F.affine_grid(theta, {1, 1, 2, 3}, false))
-- a spatial transformer: rotate by 30 degrees, with the gradient to the angle
local angle = ember.tensor(math.rad(30), {requires_grad = true})
local c, s = angle:cos(), angle:sin()
local zero = ember.tensor(0.0)
local th = ember.stack({ember.stack({c, -s, zero}), ember.stack({s, c, zero})}):unsqueeze(1)
local x = ember.randn(1, 3, 8, 8)
local y = F.grid_sample(x, F.affine_grid(th, x.shape, false))
y:sum():backward()
print(y.shape, angle.grad)]],
  },
}
