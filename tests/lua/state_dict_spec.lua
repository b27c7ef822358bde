-- state_dict_spec.lua — state dicts cross between PyTorch and ember unchanged.
-- A model with a Sequential inside a module, a ModuleList of blocks holding Sequentials, a
-- BatchNorm, a non-persistent buffer and an lm_head tied to the embedding
-- (tests/lua/state_dict_model.lua) against the same model in PyTorch 2.15
-- (tests/lua/fixtures/state_dict_torch.*, scripts/fixtures/make_state_dict_fixtures.py, whose
-- --check-ember also loads ember's file strictly into PyTorch): the same names in the same
-- order, a strict load of PyTorch's file, the same outputs and gradients; the files of the
-- ember before (tests/lua/fixtures/state_dict_old_ember.*, children numbered from 1, the tied
-- weight listed once; scripts/fixtures/make_old_ember_fixtures.sh) still load; the errors.
local ember = require "ember"
local h = require "helpers"
local err, has = h.err, h.has
local nn = ember.nn

local new_model = require "state_dict_model"
local info = h.fixture("state_dict_torch.lua")
local tensors = ember.load(h.FIXTURES .. "state_dict_torch.safetensors")
local torch_sd = {}   -- PyTorch's state_dict: "model.<key>" -> <key>
for k, v in pairs(tensors) do
  local name = k:match("^model%.(.*)$")
  if name then torch_sd[name] = v end
end

local function names(iter, ...)
  local out = {}
  for n in iter(...) do out[#out + 1] = n end
  return out
end

local function keys_in_order(sd)
  local out = {}
  for k in pairs(sd) do out[#out + 1] = k end
  return out
end

local function sorted(list)
  local c = {table.unpack(list)}
  table.sort(c)
  return c
end

-- PyTorch's idx are 0-based token ids; ember's Embedding takes 1-based ones
local function input() return tensors["input.idx"] + 1 end

local function tmp()
  local p = os.tmpname()
  finally(function() os.remove(p) end)
  return p
end

describe("names: PyTorch's, in PyTorch's order", function()
  local m = new_model()

  it("state_dict lists PyTorch's keys in PyTorch's order, the tied lm_head.weight included", function()
    assert.same(info.state_dict_keys, keys_in_order(m:state_dict()))
    local sd = m:state_dict()
    sd["tok_emb.weight"][1][1] = 42             -- both names share the model's memory
    assert.equal(42, sd["lm_head.weight"][1][1]:item())
    assert.equal(42, m.lm_head.weight[1][1]:item())
    assert.is_nil(sd.scale)                     -- a non-persistent buffer
  end)

  it("named_parameters, named_modules and named_buffers give PyTorch's lists", function()
    assert.same(info.named_parameters, names(m.named_parameters, m))
    assert.same(info.named_parameters_all, names(m.named_parameters, m, {remove_duplicate = false}))
    assert.same(info.named_parameters_all, names(m.named_parameters, m, "", true, false))   -- positional
    assert.same(info.named_modules, names(m.named_modules, m))
    assert.same(info.named_buffers, names(m.named_buffers, m))
    assert.same({"p.tok_emb.weight"}, {names(m.named_parameters, m, {prefix = "p"})[1]})
    assert.same({}, names(m.named_parameters, m, {recurse = false}))
    assert.same({"scale"}, names(m.named_buffers, m, {recurse = false}))
  end)

  it("Lua indexing stays 1-based: seq[1] is the child named \"0\"", function()
    assert.equal(m.stem["0"], m.stem[1])
    assert.equal(m.stem["2"], m.stem[-1])
    assert.equal(m.blocks["1"], m.blocks[2])
    assert.is_nil(m.stem[0])
    assert.is_nil(m.stem[4])
    assert.equal(3, #m.stem)
    has(tostring(m.stem), "(0): Linear(in_features=8, out_features=8, bias=true)")
  end)

  it("pairs walks a state dict in order, with keys added later after the rest", function()
    local sd = m:state_dict()
    sd["stem.0.bias"] = nil
    sd.extra = ember.zeros(1)
    local ks = keys_in_order(sd)
    assert.equal(#info.state_dict_keys + 0, #ks)
    assert.equal("stem.0.weight", ks[2])
    assert.equal("stem.2.weight", ks[3])
    assert.equal("extra", ks[#ks])
    local prefixed = m:state_dict({prefix = "model."})
    assert.equal("model.tok_emb.weight", keys_in_order(prefixed)[1])
    assert.is_true(m:state_dict({keep_vars = true})["tok_emb.weight"].requires_grad)
    assert.is_false(m:state_dict()["tok_emb.weight"].requires_grad)
  end)
end)

describe("a PyTorch 2.15 file", function()
  it("loads strictly and gives PyTorch's outputs and gradients", function()
    local m = new_model()
    local r = m:load_state_dict(torch_sd)
    assert.same({}, r.missing_keys)
    assert.same({}, r.unexpected_keys)
    assert.is_false(r.renumbered)
    m:eval()
    local logits = m(input())
    h.close_tensors("logits", logits, tensors["out.logits"], 1e-12)
    local w = ember.arange(1, logits:numel() + 1, {dtype = "float64"}):sin():reshape(logits.shape)
    local loss = (logits * w):sum()
    loss:backward()
    for n, p in m:named_parameters() do h.close_tensors("grad of " .. n, p.grad, tensors["grad." .. n], 1e-10) end
    h.close_tensors("bn.running_var", m.bn.running_var, torch_sd["bn.running_var"], 0)
    assert.equal(2, m.bn.num_batches_tracked:item())
  end)

  it("ember writes it back with PyTorch's keys and values (what a strict torch load needs)", function()
    local m = new_model()
    m:load_state_dict(torch_sd)
    local p = tmp()
    ember.save(p, m:state_dict())
    local back = ember.load(p)
    assert.same(sorted(info.state_dict_keys), sorted(keys_in_order(back)))
    for k, t in pairs(torch_sd) do h.close_tensors(k, back[k], t, 0) end
    -- and reads its own file back strictly
    local m2 = new_model()
    m2:load_state_dict(back)
    m:eval(); m2:eval()
    h.close_tensors("logits", m2(input()), m(input()), 0)
  end)

  it("a tied weight needs one of its names; given both, the last listed wins (as PyTorch's load)", function()
    local sd = {}
    for k, v in pairs(torch_sd) do sd[k] = v end
    sd["lm_head.weight"] = nil                    -- safetensors' save_model writes a tied tensor once
    local m = new_model()
    local r = m:load_state_dict(sd)
    assert.same({}, r.missing_keys)
    h.close_tensors("lm_head.weight", m.lm_head.weight, torch_sd["tok_emb.weight"], 0)
    sd["lm_head.weight"] = torch_sd["tok_emb.weight"] * 2
    m:load_state_dict(sd)
    h.close_tensors("tied", m.tok_emb.weight, torch_sd["tok_emb.weight"] * 2, 0)
    assert.is_true(rawequal(m.tok_emb.weight, m.lm_head.weight))
  end)

  it("a missing tensor with no other name is still missing", function()
    local sd = {}
    for k, v in pairs(torch_sd) do sd[k] = v end
    sd["blocks.1.ff.2.bias"] = nil
    has(err(function() new_model():load_state_dict(sd) end), "missing keys: blocks.1.ff.2.bias")
    local r = new_model():load_state_dict(sd, {strict = false})
    assert.same({"blocks.1.ff.2.bias"}, r.missing_keys)
    assert.is_false(r.renumbered)
  end)
end)

describe("files of an older ember (children numbered from 1, a tied weight once)", function()
  it("a state_dict file loads, strictly, renamed, with PyTorch's outputs", function()
    local old = ember.load(h.FIXTURES .. "state_dict_old_ember.safetensors")
    assert.is_not_nil(old["stem.3.weight"])      -- the old numbering: stem.1, stem.3, blocks.2.ff.3
    assert.is_nil(old["lm_head.weight"])
    local m = new_model()
    local r = m:load_state_dict(old)
    assert.is_true(r.renumbered)
    assert.same({}, r.missing_keys)
    assert.same({}, r.unexpected_keys)
    m:eval()
    h.close_tensors("logits", m(input()), tensors["out.logits"], 1e-12)
    r = new_model():load_state_dict(old, {strict = false})
    assert.is_true(r.renumbered)
  end)

  it("a checkpoint (model and AdamW state) loads through load_checkpoint", function()
    local m = new_model()
    local opt = ember.optim.AdamW(m:parameters(), {lr = 0})
    local rng = ember.get_rng_state()
    local info_ = ember.load_checkpoint(h.FIXTURES .. "state_dict_old_ember.ckpt", {model = m, optimizer = opt})
    assert.equal(1, info_.epoch)
    m:eval()
    h.close_tensors("logits", m(input()), tensors["out.logits"], 1e-12)
    assert.equal(1, opt.state[m.stem[3].weight].step)
    assert.same(m.stem[3].weight.shape, opt.state[m.stem[3].weight].exp_avg.shape)
    ember.set_rng_state(rng)
  end)

  it("old files of a lone Sequential: all numbers shifted, and the overlap is read the old way", function()
    -- PyTorch's names 0, 1, 2; the old file's 1, 2, 3 share "1" and "2" with them
    local function mlp() return nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 4), nn.Linear(4, 5)) end
    local a = mlp()
    local old = {}
    for i = 1, 3 do
      old[i .. ".weight"] = a[i].weight:detach()
      old[i .. ".bias"] = a[i].bias:detach()
    end
    local b = mlp()
    assert.is_true(b:load_state_dict(old).renumbered)
    for i = 1, 3 do h.close_tensors("layer " .. i, b[i].weight, a[i].weight, 0) end
    -- a PyTorch file with only "1.*" and "2.*" fits both numberings: read as it is
    local partial = {["1.weight"] = a[2].weight:detach(), ["1.bias"] = a[2].bias:detach()}
    local r = mlp():load_state_dict(partial, {strict = false})
    assert.is_false(r.renumbered)
    assert.same({"0.weight", "0.bias", "2.weight", "2.bias"}, r.missing_keys)
  end)
end)

describe("errors", function()
  it("a strict load whose keys differ only in their numbers says so", function()
    local sd = {}
    for k, v in pairs(torch_sd) do sd[k] = v end
    -- one container renumbered from 1, the rest as PyTorch's: neither numbering fits all
    for _, k in ipairs({"stem.0.weight", "stem.0.bias", "stem.2.weight", "stem.2.bias"}) do
      local i = tonumber(k:match("stem%.(%d+)"))
      sd[k:gsub("stem%.%d+", "stem." .. (i + 1))] = sd[k]
      sd[k] = nil
    end
    local e = err(function() new_model():load_state_dict(sd) end)
    has(e, "missing keys: stem.0.weight, stem.0.bias, stem.2.weight, stem.2.bias")
    has(e, "unexpected keys: stem.1.bias, stem.1.weight, stem.3.bias, stem.3.weight")
    has(e, "the missing and unexpected keys differ only in their numbers (the state dict's 'stem.1.bias' "
        .. "would be the model's 'stem.0.bias'")
    has(e, "ember names the children of Sequential and ModuleList from 0, as PyTorch does")
    -- keys that differ otherwise get no such note
    local e2 = err(function() new_model():load_state_dict({["stem.9.nope"] = ember.zeros(1)}) end)
    assert.is_nil(e2:find("differ only in their numbers", 1, true), e2)
    has(e2, "unexpected keys: stem.9.nope")
  end)

  it("bad arguments", function()
    local m = new_model()
    has(err(function() m:named_parameters({recurse = 1}) end), "named_parameters: recurse must be a boolean")
    has(err(function() m:named_parameters({bogus = true}) end), "unknown option 'bogus'")
    has(err(function() m:named_buffers(5) end), "named_buffers: prefix must be a string")
    has(err(function() m:state_dict(5) end), "state_dict: expected an options table")
    has(err(function() m:load_state_dict(torch_sd, 5) end), "load_state_dict: strict must be a boolean, got number")
    has(err(function() m:register_buffer("b", ember.zeros(1), "no") end), "persistent must be a boolean")
  end)
end)

describe("non-persistent buffers", function()
  it("follow to() and named_buffers, stay out of state_dict, are not expected by load_state_dict", function()
    local M = nn.Module:extend("M")
    function M:init()
      self:register_buffer("mask", ember.ones(2), false)
      self:register_buffer("stat", ember.zeros(2))
    end
    local m = M()
    assert.same({"mask", "stat"}, names(m.named_buffers, m))
    assert.same({"stat"}, keys_in_order(m:state_dict()))
    m:load_state_dict({stat = ember.ones(2)})
    m:double()
    assert.equal("float64", m.mask.dtype)
    m:register_buffer("mask", ember.ones(2))      -- registered again: persistent
    assert.same({"mask", "stat"}, keys_in_order(m:state_dict()))
    m.mask = nil
    assert.same({"stat"}, names(m.named_buffers, m))
  end)
end)
