-- checkpoint_spec.lua — ember.save_checkpoint / ember.load_checkpoint: a
-- model, its optimizer, a scheduler, counters and the random generator
-- survive a round trip, so training continues exactly; bad files and
-- arguments fail clearly.
local ember = require "ember"
local h = require "helpers"
local nn, optim = ember.nn, ember.optim

local function setup()
  ember.manual_seed(3)
  local model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
  local opt = optim.AdamW(model:parameters(), {lr = 0.01})
  local sched = optim.lr_scheduler.StepLR(opt, {step_size = 2, gamma = 0.5})
  return model, opt, sched
end

local function train_step(model, opt, sched)
  local x = ember.randn(5, 4)
  local loss = model(x):square():mean()
  opt:zero_grad()
  loss:backward()
  opt:step()
  sched:step()
  return loss:item()
end

describe("checkpoints", function()
  local path = os.tmpname()
  after_each(function() os.remove(path) end)

  it("resume continues exactly as an uninterrupted run", function()
    local m1, o1, s1 = setup()
    for _ = 1, 3 do train_step(m1, o1, s1) end
    ember.save_checkpoint(path, {model = m1, optimizer = o1, scheduler = s1, epoch = 3, step = 30, extra = {note = "hi"}})
    local expected = {}
    for i = 1, 3 do expected[i] = train_step(m1, o1, s1) end

    local m2, o2, s2 = setup()
    ember.manual_seed(99)                          -- a different generator state, to be restored
    local info = ember.load_checkpoint(path, {model = m2, optimizer = o2, scheduler = s2})
    assert.are.equal(3, info.epoch)
    assert.are.equal(30, info.step)
    assert.are.equal("hi", info.extra.note)
    for i = 1, 3 do assert.are.equal(expected[i], train_step(m2, o2, s2)) end
    assert.are.equal(o1.param_groups[1].lr, o2.param_groups[1].lr)
  end)

  it("refuses files that are not ember checkpoints, and missing files", function()
    ember.save(path, {w = ember.ones(2)})
    h.has(h.err(ember.load_checkpoint, path, {}), "not an ember checkpoint")
    h.has(h.err(ember.load_checkpoint, path .. ".missing", {}), ".missing")
  end)

  it("checks its arguments", function()
    h.has(h.err(ember.save_checkpoint, 5, {}), "save_checkpoint: argument 1: expected a path")
    h.has(h.err(ember.save_checkpoint, path, 5), "save_checkpoint: argument 2: expected a table")
  end)
end)
