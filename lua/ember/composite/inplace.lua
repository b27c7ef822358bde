-- ember.composite.inplace — the in-place forms of the functions written in Lua
-- (t:addmv_, t:greater_, t:bernoulli_, t:i0_, ...) follow one set of rules, PyTorch's for
-- an in-place op, with the engine's refusals where autograd is concerned:
--   * self must be a tensor, and one autograd does not record (self.requires_grad while
--     grad mode is on; allowed under ember.no_grad, as for the engine's in-place ops);
--   * the result keeps self's shape (no broadcasting self up);
--   * the result's dtype must cast to self's (can_cast: never a float into an integer or
--     bool, never a number into bool);
--   * a result that autograd records is not written (autograd does not rebase history).
-- Used by composite.lua and its parts; not a part itself.
local ember = require "ember"
local errors = require "ember.errors"
local raise, check_tensor, shape_str = errors.raise, errors.check_tensor, errors.shape_str

local M = {}

local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}

-- whether a result of dtype `from` may be written into a tensor of dtype `to`
function M.can_cast(from, to)
  return not ((FLOAT[from] and not FLOAT[to]) or (to == "bool" and from ~= "bool"))
end

-- self, checked as the target of the in-place op named op
function M.check_target(op, self)
  check_tensor(self, op, "self")
  if self.requires_grad and ember.is_grad_enabled() then
    raise(string.format("%s: in-place operation on a tensor that requires grad; use the out-of-place form, "
                        .. "or ember.no_grad for updates", op))
  end
end

-- r, computed for self, written into self: returns self. copy_'s own refusals (a self
-- whose elements overlap) are raised at the caller's line.
function M.into(op, self, r)
  M.check_target(op, self)
  if self.shape ~= r.shape then
    raise(string.format("%s: output with shape %s doesn't match the broadcast shape %s", op, shape_str(self),
                        shape_str(r)))
  end
  if not M.can_cast(r.dtype, self.dtype) then
    raise(string.format("%s: result type %s can't be cast to the desired output type %s", op, r.dtype, self.dtype))
  end
  if r.requires_grad and ember.is_grad_enabled() then
    raise(string.format("%s: writing a tensor that requires grad in place is not supported by autograd; use the "
                        .. "out-of-place form %s", op, op:sub(1, -2)))
  end
  return errors.call(self.copy_, self, r)
end

return M
