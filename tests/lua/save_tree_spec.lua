-- save_tree_spec.lua — ember.save and ember.load take any nested table of tensors,
-- numbers, booleans and strings (lua/ember/serialize.lua): an optimizer's state_dict() round
-- trips through a file and a fresh optimizer continues training exactly as the first; odd and
-- hostile tables get clear errors; files of tensors alone stay as they were (flat, no
-- "ember.tree"), and a damaged or newer "ember.tree" is refused naming the file.
local ember = require "ember"
local H = require "helpers"
local nn, optim = ember.nn, ember.optim

local function tmp()
  local p = os.tmpname()
  finally(function() os.remove(p) end)
  return p
end

local function round_trip(v)
  local p = tmp()
  ember.save(p, v)
  return ember.load(p)
end

describe("tables of tensors, numbers, booleans and strings", function()
  it("come back as they were: nesting, integer keys, number types, empty tables", function()
    local w = ember.randn(2, 3)
    local v = {
      int = 3, float = 2.5, whole_float = 2.0, neg_zero = -0.0, big = math.maxinteger, small = math.mininteger,
      inf = math.huge, ninf = -math.huge, nan = 0 / 0, tenth = 0.1, yes = true, no = false,
      text = "line\n\"quoted\" \0 é", bytes = "\xff\x00\xfe", empty = {}, list = {10, 20.5, "x", {w}},
      [7] = "seven", [-2] = {deep = {deeper = {w = w}}},
    }
    local got, meta = round_trip(v)
    assert.same({}, meta)                              -- "ember.tree" is not handed back
    assert.equal(3, got.int); assert.equal("integer", math.type(got.int))
    assert.equal("float", math.type(got.whole_float)); assert.equal(2.0, got.whole_float)
    assert.equal(-math.huge, 1 / got.neg_zero)
    assert.equal(math.maxinteger, got.big); assert.equal(math.mininteger, got.small)
    assert.equal(math.huge, got.inf); assert.equal(-math.huge, got.ninf)
    assert.is_true(got.nan ~= got.nan)
    assert.equal(0.1, got.tenth)
    assert.is_true(got.yes); assert.is_false(got.no)
    assert.equal(v.text, got.text); assert.equal(v.bytes, got.bytes)
    assert.same({}, got.empty)
    assert.equal(20.5, got.list[2]); assert.equal("x", got.list[3])
    H.check(got.list[4][1], w:tolist(), 0)
    assert.equal("seven", got[7])
    H.check(got[-2].deep.deeper.w, w:tolist(), 0)
  end)

  it("keep the tensors under their dotted names for other readers", function()
    local p = tmp()
    ember.save(p, {state = {[1] = {exp_avg = ember.ones(2), step = 4}}, lr = 0.1}, {metadata = {note = "x"}})
    local raw = H.read_file(p)
    local header = raw:sub(9, 8 + string.unpack("<I8", raw))
    assert.truthy(header:find('"state.1.exp_avg":{"dtype":"F32","shape":[2]', 1, true), header)
    assert.truthy(header:find('"note":"x"', 1, true), header)
    assert.truthy(header:find('"ember.tree":"{\\"ember.tree\\":1,', 1, true), header)
    local _, m2 = ember.load(p)
    assert.same({note = "x"}, m2)
  end)

  it("write floats as Python's repr does (and json.dumps): the shortest text that reads back", function()
    local repr = require("ember.serialize").float_repr
    -- each right-hand side is what Python 3 prints for repr(float) of the same double
    local cases = {{2.0, "2.0"}, {1e-05, "1e-05"}, {0.0001, "0.0001"}, {1e16, "1e+16"},
                   {1e15, "1000000000000000.0"}, {5e-324, "5e-324"}, {0.1 + 0.2, "0.30000000000000004"},
                   {-1.5, "-1.5"}, {123456789.125, "123456789.125"}, {2 ^ 0.5, "1.4142135623730951"},
                   {-0.0, "-0.0"}, {math.huge, "inf"}}
    for _, c in ipairs(cases) do assert.equal(c[2], repr(c[1])) end
    local p = tmp()
    ember.save(p, {w = ember.ones(1), a = 2.0, b = 1e-05})
    local raw = H.read_file(p)
    local header = raw:sub(9, 8 + string.unpack("<I8", raw))
    assert.truthy(header:find('[\\"float\\",\\"2.0\\"]', 1, true), header)
    assert.truthy(header:find('[\\"float\\",\\"1e-05\\"]', 1, true), header)
    local got = ember.load(p)
    assert.equal(2.0, got.a); assert.equal("float", math.type(got.a)); assert.equal(1e-05, got.b)
  end)

  it("tables of tensors alone are saved and loaded as before (flat, no tree)", function()
    local p = tmp()
    ember.save(p, {layer = {weight = ember.ones(1)}, [2] = ember.zeros(1)})
    local got, meta = ember.load(p)
    assert.same({}, meta)
    assert.is_not_nil(got["layer.weight"])
    assert.is_not_nil(got["2"])
  end)
end)

-- ---- optimizers --------------------------------------------------------------------------

local function model()
  ember.manual_seed(11)
  return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
end

local function batch(i)
  ember.manual_seed(100 + i)
  return ember.randn(4, 3), ember.randn(4, 2)
end

local function train(m, opt, from, to)
  for i = from, to do
    local x, y = batch(i)
    opt:zero_grad()
    local loss = (m(x) - y):pow(2):mean()
    loss:backward()
    opt:step()
  end
end

local OPTIMIZERS = {
  {"SGD", function(ps) return optim.SGD(ps, {lr = 0.1}) end},
  {"SGD momentum nesterov", function(ps) return optim.SGD(ps, {lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 1e-3}) end},
  {"Adam", function(ps) return optim.Adam(ps, {lr = 0.01}) end},
  {"Adam amsgrad", function(ps) return optim.Adam(ps, {lr = 0.01, amsgrad = true}) end},
  {"AdamW two groups", function(ps)
    return optim.AdamW({{params = {ps[1], ps[2]}, weight_decay = 0.1}, {params = {ps[3], ps[4]}, weight_decay = 0}},
                       {lr = 0.01, betas = {0.8, 0.95}})
  end},
}

describe("an optimizer's state_dict through ember.save / ember.load", function()
  for _, case in ipairs(OPTIMIZERS) do
    it(case[1] .. ": a fresh optimizer continues training exactly as the first", function()
      local a = model()
      local oa = case[2](a:parameters())
      train(a, oa, 1, 3)
      local p = tmp()
      ember.save(p, {model = a:state_dict(), optimizer = oa:state_dict(), epoch = 3})
      train(a, oa, 4, 6)                           -- the run that was never interrupted

      local b = model()
      local ob = case[2](b:parameters())
      local saved = ember.load(p)
      assert.equal(3, saved.epoch)
      b:load_state_dict(saved.model)
      ob:load_state_dict(saved.optimizer)
      train(b, ob, 4, 6)
      local pa, pb = a:parameters(), b:parameters()
      for i = 1, #pa do assert.is_true(pa[i]:eq(pb[i]):all():item(), case[1] .. ": parameter " .. i .. " differs") end
      for i, p_ in ipairs(pa) do
        for k, v in pairs(oa.state[p_]) do
          local w = ob.state[pb[i]][k]
          if ember.is_tensor(v) then assert.is_true(v:eq(w):all():item(), k) else assert.equal(v, w, k) end
        end
      end
      assert.same(oa.param_groups[#oa.param_groups].betas, ob.param_groups[#ob.param_groups].betas)
    end)
  end

  it("the state_dict alone, as PyTorch's torch.save(opt.state_dict()) is used", function()
    local a = model()
    local oa = optim.AdamW(a:parameters(), {lr = 0.01})
    train(a, oa, 1, 2)
    local sd = round_trip(oa:state_dict())
    assert.equal("AdamW", sd.class)
    assert.equal(2, sd.state[1].step)
    assert.equal("integer", math.type(sd.param_groups[1].params[1]))
    local ob = optim.AdamW(model():parameters(), {lr = 0.5})
    ob:load_state_dict(sd)
    assert.equal(0.01, ob.param_groups[1].lr)
    -- and a scheduler's, which holds numbers only
    local s = optim.lr_scheduler.StepLR(oa, {step_size = 2, gamma = 0.5})
    s:step(); s:step(); s:step()
    local s2 = optim.lr_scheduler.StepLR(ob, {step_size = 2, gamma = 0.5})
    s2:load_state_dict(round_trip(s:state_dict()))
    assert.equal(s.last_epoch, s2.last_epoch)
  end)

  it("LBFGS: its history lists of tensors too", function()
    local a = model()
    local oa = optim.LBFGS(a:parameters(), {lr = 0.5, max_iter = 3, history_size = 4})
    local x, y = batch(1)
    local function closure()
      oa:zero_grad()
      local loss = (a(x) - y):pow(2):mean()
      loss:backward()
      return loss
    end
    oa:step(closure)
    local sd = round_trip(oa:state_dict())
    local b = model()
    b:load_state_dict(a:state_dict())
    local ob = optim.LBFGS(b:parameters(), {lr = 0.5, max_iter = 3, history_size = 4})
    ob:load_state_dict(sd)
    oa:step(closure)
    ob:step(function()
      ob:zero_grad()
      local loss = (b(x) - y):pow(2):mean()
      loss:backward()
      return loss
    end)
    local pa, pb = a:parameters(), b:parameters()
    for i = 1, #pa do assert.is_true(pa[i]:eq(pb[i]):all():item(), "parameter " .. i) end
  end)
end)

describe("torch.save's argument order", function()
  it("ember.save(obj, path) as torch.save(obj, f) writes the same file as ember.save(path, obj)", function()
    local net = nn.Linear(3, 2)
    local p1, p2 = tmp(), tmp()
    ember.save(net:state_dict(), p1)                       -- a port of torch.save(model.state_dict(), path)
    ember.save(p2, net:state_dict())
    assert.equal(H.read_file(p2), H.read_file(p1))
    local sd = ember.load(p1)
    H.check(sd.weight, net.weight:tolist(), 0)
    ember.save({step = 3, w = ember.ones(2)}, p1, {metadata = {note = "x"}})   -- a tree, and the options
    local got, meta = ember.load(p1)
    assert.equal(3, got.step); assert.same({note = "x"}, meta)
  end)

  it("names the table argument 1 in its errors when it comes first", function()
    local p = tmp()
    local cyc = {step = 1, inner = {}}
    cyc.inner.back = cyc
    H.has(H.err(ember.save, cyc, p), 'save: argument 1: "inner.back" is the table given again')
    H.has(H.err(ember.save, {w = ember.ones(1), f = print}, p), 'save: argument 1: "f" is a function')
    H.has(H.err(ember.save, {w = ember.ones(1), [1.5] = 2}, p), "save: argument 1: the table has a key that is the number 1.5")
    H.has(H.err(ember.save, {w = ember.ones(1), [1.5] = ember.ones(1)}, p),
          "save: argument 1: keys must be strings or integers, got a number key")   -- tensors alone: the C walk
    H.has(H.err(ember.save, 3, p), "save: argument 1: expected a file path (string), got number")
  end)
end)

-- ---- errors -------------------------------------------------------------------------------

describe("what cannot be saved gets a clear error and writes nothing", function()
  it("cycles, functions, other userdata, modules, odd keys, deep nesting, the reserved key", function()
    local p = os.tmpname()
    os.remove(p)
    local cyc = {step = 1, inner = {}}
    cyc.inner.back = cyc
    H.has(H.err(ember.save, p, cyc), 'save: argument 2: "inner.back" is the table given again, which contains it (a cycle)')
    local c2 = {n = 1, a = {b = {}}}
    c2.a.b.c = c2.a
    H.has(H.err(ember.save, p, c2), '"a.b.c" is the table at "a" again, which contains it (a cycle)')
    local shared = {1, 2}
    local ok = pcall(ember.save, p, {x = shared, y = shared, n = 1})   -- shared, not a cycle: saved twice
    assert.is_true(ok)
    os.remove(p)
    H.has(H.err(ember.save, p, {n = 1, f = print}), '"f" is a function (expected a tensor, number, boolean, string or table)')
    H.has(H.err(ember.save, p, {n = 1, co = coroutine.create(print)}), '"co" is a thread')
    H.has(H.err(ember.save, p, {n = 1, file = io.stdout}), '"file" is a userdata (FILE*), not a tensor')
    H.has(H.err(ember.save, p, {n = 1, m = nn.Linear(2, 2)}), '"m" is an nn.Module (save its state_dict() instead)')
    H.has(H.err(ember.save, p, {n = 1, [1.5] = 2}), "the table has a key that is the number 1.5 (keys must be strings or integers)")
    H.has(H.err(ember.save, p, {n = 1, t = {[true] = 2}}), '"t" has a key that is a boolean')
    local deep = {n = 1}
    local cur = deep
    for _ = 1, 200 do cur.d = {}; cur = cur.d end
    H.has(H.err(ember.save, p, deep), "tables nested more than 64 deep")
    H.has(H.err(ember.save, p, {n = 1}, {metadata = {["ember.tree"] = "x"}}), 'metadata "ember.tree" is reserved')
    H.has(H.err(ember.save, p, {w = ember.ones(1)}, {metadata = {["ember.tree"] = "x"}}), 'metadata "ember.tree" is reserved')
    H.has(H.err(ember.save, p, {n = 1, ["a.b"] = ember.ones(1), a = {b = ember.ones(1)}}), 'the name "a.b" is given twice')
    assert.is_false(H.exists(p))
  end)

  it("errors point at the caller's line", function()
    local e = H.err(ember.save, os.tmpname(), {n = 1, f = print})
    assert.is_nil(e:find("serialize%.lua"), e)
    local ok, msg = pcall(function() ember.save(os.tmpname(), {n = 1, f = print}) end)
    assert.is_false(ok)
    assert.truthy(msg:find("save_tree_spec%.lua:%d+: save: argument 2"), msg)
  end)
end)

describe("a damaged or newer ember.tree", function()
  local function file_with(tree_text, tensors)
    local p = tmp()
    ember._save_raw(p, tensors or {}, {metadata = {["ember.tree"] = tree_text}})
    return p
  end

  it("is refused, naming the file and the problem", function()
    local cases = {
      {'{"ember.tree":2,"root":["table",[]]}', "format 2, which this ember does not read (it reads 1): the file comes from a newer ember"},
      {'{"ember.tree":1,"root":["table",[]', "malformed JSON"},
      {'not json', "malformed JSON"},
      {'{"root":["table",[]]}', "not an ember tree"},
      {'{"ember.tree":1,"root":["tensor","missing"]}', "names the tensor 'missing', which the file does not hold"},
      {'{"ember.tree":1,"root":["table",[["a",["what",1]]]]}', "at 'a': an unknown node kind 'what'"},
      {'{"ember.tree":1,"root":["table",[["a",["int",1.5]]]]}', "an int node without an integer"},
      {'{"ember.tree":1,"root":["table",[["a",["float","zz"]]]]}', "a float node without a number"},
      {'{"ember.tree":1,"root":["table",[["a",["int",1]],["a",["int",2]]]]}', "the key 'a' appears twice"},
      {'{"ember.tree":1,"root":["table",[[true,["int",1]]]]}', "entry 1 is not a [key, node] pair"},
      {'{"ember.tree":1,"root":["table",[]]}', "the file holds the tensor 'w', which the tree does not place",
       {w = ember.ones(1)}},
    }
    for _, c in ipairs(cases) do
      local p = file_with(c[1], c[3])
      local e = H.err(ember.load, p)
      H.has(e, "load: " .. p .. ": metadata 'ember.tree': ")
      H.has(e, c[2])
    end
  end)
end)
