-- checkpoint_spec.lua — ember.save_checkpoint / ember.load_checkpoint: a
-- model, its optimizer, a scheduler, counters and the random generator
-- survive a round trip, so training continues exactly; bad arguments fail at
-- the caller's line, bad files name the file and change nothing; a save
-- killed with kill -9 loses nothing and leaves nothing behind for long.
local ember = require "ember"
local H = require "helpers"
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
    H.has(H.err(ember.load_checkpoint, path, {}), "load_checkpoint: " .. path .. ": not an ember checkpoint")
    H.has(H.err(ember.load_checkpoint, path .. ".missing", {}), ".missing: No such file")
  end)

  -- save_checkpoint: errors at the caller's line, saying what was expected
  local function err_at(f)
    local line = debug.getinfo(2, "l").currentline
    local ok, e = pcall(f)
    assert.is_false(ok, "expected an error")
    H.has(e, "checkpoint_spec.lua:" .. line .. ": ")
    return e
  end

  it("checks the arguments of save_checkpoint, pointing at the caller", function()
    local m, o, s = setup()
    H.has(err_at(function() ember.save_checkpoint(5, {}) end),
          "save_checkpoint: argument 1: expected a path (a non-empty string), got the number 5")
    H.has(err_at(function() ember.save_checkpoint("", {}) end), "save_checkpoint: argument 1: expected a path")
    H.has(err_at(function() ember.save_checkpoint(path, 5) end), "save_checkpoint: argument 2: expected a table")
    H.has(err_at(function() ember.save_checkpoint(path, ember.ones(2)) end), "got a tensor")
    H.has(err_at(function() ember.save_checkpoint(path, {model = {}}) end),
          "save_checkpoint: argument 2: field 'model': expected an nn.Module instance (an object with a state_dict method), "
          .. "got a table without a state_dict method")
    H.has(err_at(function() ember.save_checkpoint(path, {model = "m"}) end), "field 'model': expected an nn.Module")
    H.has(err_at(function() ember.save_checkpoint(path, {model = o}) end), "field 'model': expected an nn.Module")
    H.has(err_at(function() ember.save_checkpoint(path, {optimizer = m}) end),
          "field 'optimizer': expected an optimizer (ember.optim) (an object with a state_dict_flat method)")
    H.has(err_at(function() ember.save_checkpoint(path, {scheduler = o}) end),
          "field 'scheduler': expected a learning-rate scheduler")
    H.has(err_at(function() ember.save_checkpoint(path, {epoch = "x"}) end),
          "save_checkpoint: argument 2: field 'epoch': expected an integer, got the string \"x\"")
    H.has(err_at(function() ember.save_checkpoint(path, {epoch = 1.5}) end), "field 'epoch': expected an integer, got the number 1.5")
    H.has(err_at(function() ember.save_checkpoint(path, {step = 0 / 0}) end), "field 'step': expected an integer")
    H.has(err_at(function() ember.save_checkpoint(path, {step = math.huge}) end), "field 'step': expected an integer")
    H.has(err_at(function() ember.save_checkpoint(path, {step = {}}) end), "field 'step': expected an integer, got a table")
    H.has(err_at(function() ember.save_checkpoint(path, {extra = "x"}) end), "field 'extra': expected a table")
    H.has(err_at(function() ember.save_checkpoint(path, {extra = {a = {}}}) end),
          "extra.a is a table (expected a string, number or boolean)")
    H.has(err_at(function() ember.save_checkpoint(path, {extra = {[1] = "x"}}) end), "keys must be strings")
    H.has(err_at(function() ember.save_checkpoint(path, {modle = m}) end),
          "save_checkpoint: argument 2: unknown field 'modle' (expected epoch, extra, model, optimizer, scheduler, step)")
    H.has(err_at(function() ember.save_checkpoint(path, {extra = {["a\0b"] = "x"}}) end), "zero byte")
    H.has(err_at(function() ember.save_checkpoint("/nonexistent-ember/x", {model = m}) end),
          "save_checkpoint: save: /nonexistent-ember/x: cannot create a temporary file")
    assert.is_nil(io.open(path .. ".missing", "rb"))
    -- whole-number floats are integers; extra numbers keep every digit
    ember.save_checkpoint(path, {model = m, optimizer = o, scheduler = s, epoch = 2.0,
                                 extra = {x = 0.1, third = 1 / 3, big = math.maxinteger, yes = true}})
    local info = ember.load_checkpoint(path, {model = m})
    assert.are.equal(2, info.epoch)
    assert.are.equal(math.type(info.epoch), "integer")
    assert.are.same({x = "0.1", third = "0.3333333333333333", big = tostring(math.maxinteger), yes = "true"},
                    info.extra)
    assert.are.equal(1 / 3, tonumber(info.extra.third))
  end)

  it("checks the arguments of load_checkpoint, pointing at the caller", function()
    local m, o = setup()
    ember.save_checkpoint(path, {model = m, optimizer = o})
    H.has(err_at(function() ember.load_checkpoint(nil) end), "load_checkpoint: argument 1: expected a path")
    H.has(err_at(function() ember.load_checkpoint(path, 5) end),
          "load_checkpoint: argument 2: expected a table {model =, optimizer =, scheduler =}, got the number 5")
    H.has(err_at(function() ember.load_checkpoint(path, {model = {}}) end),
          "load_checkpoint: argument 2: field 'model': expected an nn.Module instance (an object with a load_state_dict method)")
    H.has(err_at(function() ember.load_checkpoint(path, {optimizer = m}) end), "field 'optimizer': expected an optimizer")
    H.has(err_at(function() ember.load_checkpoint(path, {scheduler = true}) end),
          "field 'scheduler': expected a learning-rate scheduler (ember.optim.lr_scheduler) (an object with a "
          .. "load_state_dict_flat method), got a boolean")
    H.has(err_at(function() ember.load_checkpoint(path, {model = m, epoch = 3}) end),
          "load_checkpoint: argument 2: unknown field 'epoch' (expected model, optimizer, scheduler)")
    H.has(err_at(function() ember.load_checkpoint(path .. ".missing", {model = m}) end),
          "load_checkpoint: load: " .. path .. ".missing: No such file")
    H.has(err_at(function() ember.load_checkpoint(path, {scheduler = optim.lr_scheduler.StepLR(o, {step_size = 1})}) end),
          "load_checkpoint: " .. path .. ": the file holds no scheduler state")
    local m3 = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 3))
    H.has(err_at(function() ember.load_checkpoint(path, {model = m3}) end),
          "load_checkpoint: " .. path .. ": model: load_state_dict: error(s) loading the state dict into Sequential: "
          .. "size mismatch for 2.weight")
  end)

  -- A checkpoint's own metadata, rewritten: the file stays a valid safetensors
  -- file, only what save_checkpoint wrote is damaged.
  local function rewrite(edit_tensors, edit_meta)
    local tensors, meta = ember.load(path)
    if edit_tensors then edit_tensors(tensors) end
    if edit_meta then edit_meta(meta) end
    ember.save(path, tensors, {metadata = meta})
  end

  it("refuses damaged checkpoints, naming the file and the problem, and changes nothing", function()
    local m1, o1, s1 = setup()
    for _ = 1, 2 do train_step(m1, o1, s1) end
    local cases = {
      {nil, function(meta) meta.format = nil end, "not an ember checkpoint (metadata 'format' is missing"},
      {nil, function(meta) meta.format = "ember-checkpoint-99" end, '(metadata \'format\' is "ember-checkpoint-99"'},
      {nil, function(meta) meta["rng.seed"] = nil end, "metadata 'rng.seed' is missing, expected an integer"},
      {nil, function(meta) meta["rng.offset"] = "12x" end, "metadata 'rng.offset' is \"12x\", expected an integer"},
      {nil, function(meta) meta["rng.seed"] = "99999999999999999999" end, "metadata 'rng.seed' is \"99999999999999999999\""},
      {nil, function(meta) meta.epoch = "3.5" end, "metadata 'epoch' is \"3.5\", expected an integer"},
      {nil, function(meta) meta.step = "" end, "metadata 'step' is \"\", expected an integer"},
      {nil, function(meta) meta.surprise = "1" end, "unexpected metadata 'surprise'"},
      {function(t) t.stray = ember.ones(1) end, nil, "unexpected tensor 'stray'"},
      {nil, function(meta) meta["optimizer.param_groups"] = nil end, "the file holds no optimizer state"},
      {nil, function(meta) meta["scheduler.last_epoch"] = "x" end, "scheduler: "},
      {function(t) t["model.0.weight"] = ember.ones(5, 5) end, nil, "model: load_state_dict: "},
      {function(t) t["model.0.bias"] = nil end, nil, "missing keys: 0.bias"},
      {function(t) t["optimizer.state.1.exp_avg"] = ember.ones(7) end, nil, "optimizer: "},
    }
    for i, c in ipairs(cases) do
      ember.save_checkpoint(path, {model = m1, optimizer = o1, scheduler = s1, epoch = 2, step = 20})
      rewrite(c[1], c[2])
      local m2, o2, s2 = setup()
      train_step(m2, o2, s2)
      -- what must survive the failed load
      ember.manual_seed(1000 + i)
      local rng = ember.get_rng_state()
      local w = m2[1].weight:clone()
      local lr, sched_epoch = o2.param_groups[1].lr, s2.last_epoch
      local exp_avg = o2.state[m2[1].weight].exp_avg:clone()
      local e = H.err(ember.load_checkpoint, path, {model = m2, optimizer = o2, scheduler = s2})
      H.has(e, "load_checkpoint: " .. path .. ": ")
      H.has(e, c[3])
      assert.are.same(rng, ember.get_rng_state())
      assert.is_true(m2[1].weight:eq(w):all():item(), "case " .. i .. ": the model changed")
      assert.are.equal(lr, o2.param_groups[1].lr)
      assert.are.equal(sched_epoch, s2.last_epoch)
      assert.is_true(o2.state[m2[1].weight].exp_avg:eq(exp_avg):all():item(), "case " .. i .. ": the optimizer changed")
    end
  end)

  it("refuses directories, empty files and FIFOs", function()
    local m = setup()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    H.has(H.err(ember.load_checkpoint, dir, {model = m}), "load_checkpoint: load: " .. dir .. ": is a directory")
    local f = assert(io.open(dir .. "/empty", "w"))
    f:close()
    H.has(H.err(ember.load_checkpoint, dir .. "/empty", {model = m}),
          "load_checkpoint: load: " .. dir .. "/empty: truncated file (0 bytes")
    assert(os.execute("mkfifo " .. dir .. "/fifo"))
    H.has(H.err(ember.load_checkpoint, dir .. "/fifo", {model = m}), "fifo: not a regular file")
    -- saving over a directory fails and leaves it alone
    H.has(H.err(ember.save_checkpoint, dir, {model = m}), "save_checkpoint: save: " .. dir .. ": is a directory")
    os.execute("rm -rf " .. dir)
  end)

  it("hostile safetensors files give an error naming the file and the problem", function()
    local hostile = require "hostile"
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local m = setup()
    local problems = hostile.check_all(hostile.safetensors_cases(), dir, function(p)
      return ember.load_checkpoint(p, {model = m})
    end, "load_checkpoint: load: ")
    os.execute("rm -rf " .. dir)
    assert.are.same({}, problems)
  end)
end)

local runner = H.runner

describe("a checkpoint save killed with kill -9", function()
  it("leaves the old file whole and no temporary file (or one the next save removes)", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local p = dir .. "/run.ckpt"
    local m = setup()
    local w = m[1].weight:clone()
    local child = dir .. "/child.lua"
    local f = assert(io.open(child, "w"))
    -- 64 MB of model: the save takes long enough to be caught in the middle
    f:write(string.format([[
      local ember = require "ember"
      local Big = ember.nn.Module:extend("Big")
      function Big:init() self:register_buffer("w", ember.zeros(1 << 24)) end
      local model = Big()
      io.open(%q, "w"):close()
      ember.save_checkpoint(%q, {model = model, epoch = 2})
    ]], dir .. "/ready", p))
    f:close()
    -- Runs the child, waits until it writes its temporary file, stops it
    -- (SIGSTOP, then waits for the stopped state, so no rename can still be
    -- under way) and kills it with SIGKILL. The temporary file is unnamed
    -- where the file system has O_TMPFILE (the child holds a descriptor of a
    -- deleted "#<inode>" file in dir): prints "unnamed"; else it is
    -- "<p>.tmp.XXXXXX": prints "named"; "missed" when the child finished first.
    local script = dir .. "/kill.sh"
    f = assert(io.open(script, "w"))
    f:write(string.format([[
      p=%q; dir=%q; ready=%q
      rm -f "$ready"
      %s %q & pid=$!
      while [ ! -e "$ready" ] && kill -0 $pid 2>/dev/null; do sleep 0.01; done
      caught=missed
      writing() {
        seen=
        ls -l /proc/$pid/fd 2>/dev/null | grep -q -- "-> $dir/#.* (deleted)" && seen=unnamed
        for t in "$p".tmp.*; do [ -e "$t" ] && seen=named; done
        [ -n "$seen" ]
      }
      while [ $caught = missed ] && kill -0 $pid 2>/dev/null; do
        writing || continue
        kill -STOP $pid
        while ! grep -q '^State:.*T' /proc/$pid/status 2>/dev/null; do kill -0 $pid 2>/dev/null || break; done
        if writing; then caught=$seen; kill -9 $pid; else kill -CONT $pid; fi
      done
      wait $pid 2>/dev/null
      echo $caught
    ]], p, dir, dir .. "/ready", runner(), child))
    f:close()
    local caught
    for _ = 1, 6 do
      ember.save_checkpoint(p, {model = m, epoch = 1})
      local pipe = io.popen("bash " .. script)
      local out = pipe:read("a")
      pipe:close()
      caught = out:match("%a+")
      if caught ~= "missed" then break end
    end
    assert.are_not.equal("missed", caught, "the child was never caught in the middle of its save")
    local function ls_temps()
      local pipe = io.popen("ls " .. p .. ".tmp.* 2>/dev/null")
      local out = pipe:read("a")
      pipe:close()
      return out
    end
    local temps = ls_temps()
    if caught == "unnamed" then
      assert.are.equal("", temps)
    else
      assert.is_truthy(temps:match("^" .. p:gsub("%p", "%%%0") .. "%.tmp%.%w%w%w%w%w%w\n$"), temps)
    end
    -- the old checkpoint is whole
    local m2 = setup()
    ember.no_grad(function() m2[1].weight:zero_() end)
    assert.are.equal(1, ember.load_checkpoint(p, {model = m2}).epoch)
    assert.is_true(m2[1].weight:eq(w):all():item())
    -- the next save removes any leftover
    ember.save_checkpoint(p, {model = m, epoch = 3})
    assert.are.equal("", ls_temps())
    assert.are.equal(3, ember.load_checkpoint(p, {model = m2}).epoch)
    os.execute("rm -rf " .. dir)
  end)
end)
