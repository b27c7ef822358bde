-- no_grad_coroutine_spec.lua — ember.no_grad(fn) and ember.enable_grad(fn) inside coroutines:
-- fn may yield (as a Python generator wrapped in torch.no_grad() may); while it is suspended
-- the rest of the program sees its own grad mode; each resume sets fn's mode again; an
-- error, a finished fn or a closed coroutine leaves the mode as the caller had it.
local ember = require "ember"
local h = require "helpers"
local has = h.has

local function grad_on() return ember.is_grad_enabled() end

describe("ember.no_grad(fn) inside a coroutine", function()
  after_each(function() ember.set_grad_enabled(true) end)

  it("fn yields and is resumed; values pass both ways; recording is off only inside fn", function()
    local w = ember.ones(2, {requires_grad = true})
    local seen = {}
    local co = coroutine.create(function(a)
      local r1, r2 = ember.no_grad(function(x)
        seen[#seen + 1] = {grad_on(), x, (w * 2).requires_grad}
        local y = coroutine.yield("first", 1)
        seen[#seen + 1] = {grad_on(), y, (w * 2).requires_grad}
        local z = coroutine.yield("second")
        seen[#seen + 1] = {grad_on(), z}
        return "done", 42
      end, a)
      seen[#seen + 1] = {grad_on(), r1, r2, (w * 2).requires_grad}
      return "end"
    end)
    assert.same({true, "first", 1}, {coroutine.resume(co, "a")})
    assert.is_true(grad_on())
    assert.is_true((w * 2).requires_grad)
    assert.same({true, "second"}, {coroutine.resume(co, "b")})
    assert.is_true(grad_on())
    assert.same({true, "end"}, {coroutine.resume(co, "c")})
    assert.equal("dead", coroutine.status(co))
    assert.same({{false, "a", false}, {false, "b", false}, {false, "c"}, {true, "done", 42, true}}, seen)
    assert.is_true(grad_on())
  end)

  it("code outside sees its own mode while fn is suspended, and each resume sets fn's again", function()
    local inside = {}
    local co = coroutine.wrap(function()
      ember.enable_grad(function()
        for _ = 1, 3 do
          inside[#inside + 1] = grad_on()
          coroutine.yield()
        end
      end)
      inside[#inside + 1] = grad_on()
    end)
    ember.set_grad_enabled(false)
    co()
    assert.is_false(grad_on())          -- the resumer's mode, not enable_grad's
    ember.set_grad_enabled(true)
    co()
    assert.is_true(grad_on())
    ember.set_grad_enabled(false)
    co()
    assert.is_false(grad_on())
    co()                                 -- fn returns: the code after it has the resumer's mode
    assert.same({true, true, true, false}, inside)
    assert.is_false(grad_on())
  end)

  it("a generator in the style of PyTorch's: a wrapped coroutine yielding detached results", function()
    local w = ember.tensor({1.0, 2.0, 3.0}, {requires_grad = true})
    local gen = coroutine.wrap(function()
      ember.no_grad(function()
        for k = 1, 3 do coroutine.yield(w * k) end
      end)
    end)
    for k = 1, 3 do
      local t = gen()
      assert.is_false(t.requires_grad)
      h.check(t, {k, 2 * k, 3 * k})
      local u = w * 2                    -- between steps the caller records as usual
      assert.is_true(u.requires_grad)
    end
  end)

  it("an error inside fn (before or after a yield) reaches the caller with its message; the mode is restored", function()
    local co = coroutine.create(function()
      ember.no_grad(function()
        coroutine.yield()
        error("boom in fn")
      end)
    end)
    assert.is_true(coroutine.resume(co))
    local ok, e = coroutine.resume(co)
    assert.is_false(ok)
    has(e, "no_grad_coroutine_spec.lua:")
    has(e, "boom in fn")
    assert.is_true(grad_on())

    local co2 = coroutine.create(function()
      local ok2, e2 = pcall(ember.no_grad, function() error({code = 7}) end)
      return ok2, e2.code, grad_on()
    end)
    assert.same({true, false, 7, true}, {coroutine.resume(co2)})
    assert.is_true(grad_on())
  end)

  it("fn's <close> variables run with fn's mode on an error and when the coroutine is closed mid-fn", function()
    local closed = {}
    local function body(tag, fail)
      return function()
        ember.no_grad(function()
          local _ <close> = setmetatable({}, {__close = function() closed[#closed + 1] = {tag, grad_on()} end})
          coroutine.yield()
          if fail then error("fail " .. tag) end
        end)
      end
    end
    local co = coroutine.create(body("error", true))
    coroutine.resume(co)
    local ok = coroutine.resume(co)
    assert.is_false(ok)
    local co2 = coroutine.create(body("abandoned", false))
    coroutine.resume(co2)
    assert.is_true(coroutine.close(co2))
    assert.same({{"error", false}, {"abandoned", false}}, closed)
    assert.is_true(grad_on())
  end)

  it("a failing __close inside fn: its error is the one raised", function()
    local co = coroutine.create(function()
      ember.no_grad(function()
        local _ <close> = setmetatable({}, {__close = function() error("close failed") end})
        error("first")
      end)
    end)
    local ok, e = coroutine.resume(co)
    assert.is_false(ok)
    has(e, "close failed")
    assert.is_true(grad_on())
  end)

  it("nesting: enable_grad inside no_grad inside a coroutine inside another, each yielding", function()
    local log = {}
    local inner = coroutine.wrap(function()
      ember.no_grad(function()
        log[#log + 1] = "inner no_grad " .. tostring(grad_on())
        ember.enable_grad(function()
          log[#log + 1] = "inner enable " .. tostring(grad_on())
          coroutine.yield("from inner")
          log[#log + 1] = "inner enable again " .. tostring(grad_on())
        end)
        log[#log + 1] = "inner back in no_grad " .. tostring(grad_on())
      end)
      return "inner done"
    end)
    local outer = coroutine.wrap(function()
      return ember.no_grad(function()
        local a = inner()
        log[#log + 1] = "outer after inner yield " .. tostring(grad_on())
        coroutine.yield(a)
        log[#log + 1] = "outer resumed " .. tostring(grad_on())
        return inner()
      end)
    end)
    assert.equal("from inner", outer())
    assert.is_true(grad_on())
    assert.equal("inner done", outer())
    assert.is_true(grad_on())
    assert.same({"inner no_grad false", "inner enable true", "outer after inner yield false", "outer resumed false",
                 "inner enable again true", "inner back in no_grad false"}, log)
  end)

  it("the <close> guard form and the main thread are unchanged", function()
    do
      local _ <close> = ember.no_grad()
      assert.is_false(grad_on())
    end
    assert.is_true(grad_on())
    assert.same({1, 2}, {ember.no_grad(function(a, b) return a, b end, 1, 2)})
    local ok, e = pcall(ember.no_grad, function() coroutine.yield() end)
    assert.is_false(ok)                  -- nothing to yield to outside a coroutine
    has(e, "yield")
    assert.is_true(grad_on())
  end)

  it("a non-function is refused inside a coroutine as outside, at the caller's line", function()
    local co = coroutine.create(function()
      local line = debug.getinfo(1, "l").currentline + 1
      local ok, e = pcall(function() ember.no_grad(5) end)
      return ok, e, line
    end)
    local _, ok, e, line = coroutine.resume(co)
    assert.is_false(ok)
    has(e, "no_grad_coroutine_spec.lua:" .. line .. ":")
    has(e, "ember.no_grad: argument 1: expected a function (or nothing, for a <close> guard), got number")
  end)
end)
