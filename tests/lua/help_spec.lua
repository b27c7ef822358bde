-- help_spec.lua — ember.help and the docs under lua/ember/doc/: every public function
-- documented (signature, meaning, example), every example runs, every documented name
-- exists, and help() finds entries by value, by name and through expressions.
local ember = require "ember"
local help = require "ember.help"

local DOC_FILES = {"tensor", "ember", "conv", "attention", "nn", "optim", "data", "autograd", "cuda", "plot", "math", "reduction", "shape", "einsum", "linalg", "activation", "rnn", "optimizers", "amp", "autocast", "distributed", "tensorboard", "activation_checkpoint", "composite", "composite_shape", "composite_aliases", "composite_random", "special", "distributions", "testing", "profiler", "memory", "debug", "hf", "hf_tokenizer", "lora", "nn_extra", "composite_extra", "ctc", "grid_sample", "func"}

-- Runs f with print captured; returns the printed text and f's results.
local function capture(f, ...)
  local G = require("_G")
  local out, saved = {}, G.print
  G.print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    out[#out + 1] = table.concat(parts, "\t")
  end
  local res = table.pack(pcall(f, ...))
  G.print = saved
  if not res[1] then error(res[2], 0) end
  return table.concat(out, "\n"), table.unpack(res, 2, res.n)
end

local function has_text(s) return type(s) == "string" and s:match("%S") ~= nil end

-- ---- the public surface, found here independently of ember.help's own walk ----------------

local function sorted_pairs(t)
  local keys = {}
  for k in pairs(t) do if type(k) == "string" and k:sub(1, 1) ~= "_" then keys[#keys + 1] = k end end
  table.sort(keys)
  local i = 0
  return function()
    i = i + 1
    if keys[i] then return keys[i], t[keys[i]] end
  end
end

local function callable(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__call ~= nil
end

-- {name, function} for every public function: ember.*, Tensor:*, the functions of the
-- submodules, and the methods each class defines (classes: callable tables, or tables
-- holding their instances' __index).
local function public_functions()
  require "ember.composite"   -- its functions are installed when first asked for
  local out = {}
  local modules = {
    {"ember.nn", ember.nn}, {"ember.nn.functional", ember.nn.functional},
    {"ember.nn.init", ember.nn.init}, {"ember.nn.utils", ember.nn.utils},
    {"ember.optim", ember.optim}, {"ember.optim.lr_scheduler", ember.optim.lr_scheduler},
    {"ember.data", ember.data}, {"ember.autograd", ember.autograd}, {"ember.cuda", ember.cuda},
    {"ember.backends.cuda", ember.backends.cuda}, {"ember.help", help}, {"ember.plot", ember.plot},
    {"ember.utils.tensorboard", ember.utils.tensorboard}, {"ember.utils.checkpoint", ember.utils.checkpoint},
    {"ember.lora", ember.lora}, {"ember.special", ember.special},
    {"ember.distributions", ember.distributions}, {"ember.testing", ember.testing},
    {"ember.func", ember.func}, {"ember.optim.swa_utils", ember.optim.swa_utils},
  }
  local is_module = {[ember] = true, [ember.Tensor] = true}
  for _, m in ipairs(modules) do is_module[m[2]] = true end
  for k, v in sorted_pairs(ember) do
    if type(v) == "function" then out[#out + 1] = {"ember." .. k, v} end
  end
  for _, k in ipairs{"save_checkpoint", "load_checkpoint", "vmap", "cond", "while_loop"} do   -- loaded on first use
    out[#out + 1] = {"ember." .. k, ember[k]}
  end
  for k, v in sorted_pairs(ember.Tensor) do
    if type(v) == "function" then out[#out + 1] = {"Tensor:" .. k, v} end
  end
  for _, m in ipairs(modules) do
    for k, v in sorted_pairs(m[2]) do
      if type(v) == "function" then
        out[#out + 1] = {m[1] .. "." .. k, v}
      elseif type(v) == "table" and not is_module[v] and (callable(v) or rawget(v, "__index")) then
        for mk, mv in sorted_pairs(v) do
          if type(rawget(v, mk)) == "function" then out[#out + 1] = {m[1] .. "." .. k .. ":" .. mk, mv} end
        end
      end
    end
  end
  local event_mt = debug.getregistry()["ember.cuda.Event"]
  for k, v in sorted_pairs(event_mt.__index) do out[#out + 1] = {"ember.cuda.Event:" .. k, v} end
  return out
end

-- every entry of every doc file present, with its file
local function all_entries()
  local out = {}
  for _, base in ipairs(DOC_FILES) do
    for _, e in ipairs(help.entries(base) or {}) do out[#out + 1] = {e, base .. ".md"} end
  end
  return out
end

-- The value a documented name stands for, or nil: "ember.nn.Linear", "Tensor:sum",
-- "Tensor.shape" (a property: read on a tensor), "ember.optim.SGD:step".
local function resolve(name)
  local sample = ember.zeros(2, 2)
  local first, rest = name:match("^([%w_]+)(.*)$")
  local cur
  if first == "Tensor" then cur = ember.Tensor elseif first == "ember" then cur = ember else return nil end
  -- what plain indexing from ember does not reach: ember.help before the binding loads it,
  -- and the methods of cuda events, which only a GPU can make
  local roots = {["ember.help"] = help, ["ember.cuda.Event:"] = debug.getregistry()["ember.cuda.Event"].__index,
                 ["ember.cuda.CUDAGraph:"] = debug.getregistry()["ember.cuda.CUDAGraph"].__index,
                 ["ember.Generator:"] = debug.getregistry()["ember.Generator"].methods}
  for prefix, t in pairs(roots) do
    if name:sub(1, #prefix) == prefix then cur, rest = t, name:sub(#prefix + 1) end
  end
  if rest:match("^[%w_]") then rest = "." .. rest end
  for sep, k in rest:gmatch("([.:])([%w_]+)") do
    if type(cur) ~= "table" and type(cur) ~= "userdata" then return nil end
    local v = cur[k]
    if v == nil and cur == ember.Tensor then   -- a property, or a metamethod
      local mt = getmetatable(sample)
      for _, prop in ipairs(mt.__dir) do if prop == k then v = true end end
      if v == nil then v = mt[k] end
    end
    if v == nil and sep == "." and rawequal(cur, ember.backends.cuda.matmul) then v = cur[k] end
    cur = v
  end
  return cur
end

describe("the docs", function()
  it("load without problems: no clashing names, no broken files", function()
    local problems = help.problems()
    assert(#problems == 0, "doc problems:\n  " .. table.concat(problems, "\n  "))
  end)

  it("cover every public function, class method and tensor method", function()
    local missing, incomplete, unwalked = {}, {}, {}
    local walked = {}
    for _, p in ipairs(help.public_values()) do walked[p[1]] = p[2] end
    local funcs = public_functions()
    assert(#funcs > 400, "the walk found only " .. #funcs .. " functions")
    for _, p in ipairs(funcs) do
      local name, v = p[1], p[2]
      if walked[name] ~= v then unwalked[#unwalked + 1] = name end
      local e = help.lookup(v)
      if not e then
        missing[#missing + 1] = name
      elseif not (has_text(e.sig) and has_text(e.doc) and has_text(e.example)) then
        incomplete[#incomplete + 1] = name .. " (entry " .. e.name .. ")"
      end
    end
    local msg = {}
    if #missing > 0 then
      msg[#msg + 1] = string.format("%d of %d public functions have no doc entry:\n  %s", #missing, #funcs,
                                    table.concat(missing, "\n  "))
    end
    if #incomplete > 0 then
      msg[#msg + 1] = "entries without sig, doc or example:\n  " .. table.concat(incomplete, "\n  ")
    end
    if #unwalked > 0 then
      msg[#msg + 1] = "help.public_values() misses:\n  " .. table.concat(unwalked, "\n  ")
    end
    assert(#msg == 0, table.concat(msg, "\n"))
  end)

  it("name only things that exist", function()
    local bad = {}
    for _, p in ipairs(all_entries()) do
      local e, file = p[1], p[2]
      local names = {e.name}
      for _, a in ipairs(e.also or {}) do names[#names + 1] = a end
      for _, n in ipairs(names) do
        if resolve(n) == nil then bad[#bad + 1] = file .. ": " .. n end
      end
    end
    assert(#bad == 0, "documented names that resolve to nothing:\n  " .. table.concat(bad, "\n  "))
  end)

  it("keep doc lines within 90 columns and mark needs only as cuda or file", function()
    local bad = {}
    for _, p in ipairs(all_entries()) do
      local e, file = p[1], p[2]
      for line in ((e.doc or "") .. "\n"):gmatch("(.-)\n") do
        if #line > 90 then bad[#bad + 1] = string.format("%s: %s: a doc line of %d columns", file, e.name, #line) end
      end
      if e.needs ~= nil and e.needs ~= "cuda" and e.needs ~= "file" then
        bad[#bad + 1] = string.format("%s: %s: needs = %s", file, e.name, tostring(e.needs))
      end
    end
    assert(#bad == 0, table.concat(bad, "\n"))
  end)
end)

describe("the examples run on the CPU", function()
  for _, base in ipairs(DOC_FILES) do
    local entries = help.entries(base)
    if not entries then
      pending(base .. ".md: not written yet")
    else
      it("of " .. base .. ".md", function()
        local failures, ran = {}, 0
        -- plots drawn by the examples go nowhere (files they save are their own business)
        local plot_write = ember.plot.config.write
        ember.plot.config.write = function() end
        finally(function() ember.plot.config.write = plot_write end)
        for _, e in ipairs(entries) do
          if has_text(e.example) then
            local env = setmetatable({ember = ember}, {__index = _G})
            env.print = function() end
            local chunk, err = load(e.example, "=" .. e.name, "t", env)
            if not chunk then
              failures[#failures + 1] = e.name .. ": does not compile: " .. tostring(err)
            elseif e.needs == nil then
              local ok, run_err = pcall(capture, chunk)   -- quiet: help() prints through _G
              ran = ran + 1
              if not ok then failures[#failures + 1] = e.name .. ": " .. tostring(run_err) end
            end
          end
        end
        assert(#failures == 0, #failures .. " example(s) of " .. base .. ".md fail:\n  "
                               .. table.concat(failures, "\n  "))
        assert(ran > 0, base .. ".md: no example ran")
      end)
    end
  end
end)

describe("help.lookup", function()
  it("finds functions, classes and modules by value", function()
    assert.are.equal("ember.zeros", (help.lookup(ember.zeros) or {}).name)
    assert.are.equal("ember.nn.Linear", help.lookup(ember.nn.Linear).name)
    assert.are.equal("ember.nn", help.lookup(ember.nn).name)
    assert.are.equal("ember.optim.SGD", help.lookup(ember.optim.SGD).name)
    assert.are.equal("ember.cuda.is_available", help.lookup(ember.cuda.is_available).name)
  end)

  it("finds an instance's methods and an instance's class", function()
    local fc = ember.nn.Linear(2, 3)
    local e, q = help.lookup(fc.parameters)
    assert.are.equal("ember.nn.Module:parameters", e.name)
    assert.are.equal("ember.nn.Module:parameters", q)
    assert.are.equal("ember.nn.Linear", help.lookup(fc.forward).name)
    assert.are.equal("ember.nn.Linear", help.lookup(fc).name)
    local opt = ember.optim.SGD(fc:parameters(), {lr = 0.1})
    assert.are.equal("ember.optim.Optimizer:step", help.lookup(opt.step).name)
    assert.are.equal("ember.optim.SGD", help.lookup(opt).name)
    -- an object of a class written in C: its class's entry, by its metatable's name
    assert.are.equal("ember.Generator", help.lookup(ember.Generator()).name)
    assert.are.equal("ember.Generator", help.lookup(ember.default_generator).name)
    -- a class defined outside ember: the nearest documented parent
    local MLP = ember.nn.Module:extend("MLP")
    assert.are.equal("ember.nn.Module", help.lookup(MLP()).name)
    assert.are.equal("ember.nn.Module", help.lookup(MLP).name)
    local Squares = ember.data.Dataset:extend("Squares")
    assert.are.equal("ember.data.Dataset", help.lookup(Squares()).name)
  end)

  it("finds a tensor method shared with ember.* under one entry", function()
    local e = help.lookup(ember.Tensor.sum)
    assert.is_not_nil(e, "no entry for ember.Tensor.sum")
    assert.are.equal("ember.sum", e.name)
    assert.are.equal(e, help.lookup("Tensor:sum"))
  end)

  it("gives the Tensor overview for a tensor value", function()
    local e = help.lookup(ember.zeros(2))
    assert.is_not_nil(e, "no entry for a tensor")
    assert.is_truthy(e.name == "ember.Tensor" or e.name == "Tensor", e.name)
  end)

  it("finds names, short prefixes and expressions", function()
    local linear = help.lookup(ember.nn.Linear)
    local e, q = help.lookup("nn.Linear")
    assert.are.equal(linear, e)
    assert.are.equal("ember.nn.Linear", q)
    assert.are.equal(linear, help.lookup("ember.nn.Linear"))
    assert.are.equal(linear, help.lookup("?nn.Linear"))
    assert.are.equal(linear, help.lookup("Linear"))
    assert.are.equal(help.lookup(ember.nn.functional.linear), help.lookup("F.linear"))
    assert.are.equal("ember.nn.functional.linear", help.lookup("F.linear").name)
    assert.are.equal("ember.optim.AdamW", help.lookup("optim.AdamW").name)
    -- through a class's __index chain: Linear inherits parameters from Module
    assert.are.equal("ember.nn.Module:parameters", help.lookup("nn.Linear:parameters").name)
    assert.are.equal("ember.nn.Module:parameters", help.lookup("ember.nn.Module.parameters").name)
  end)

  it("resolves t:sum through a tensor global, and model:to through a module global", function()
    local env = {t = ember.ones(3), model = ember.nn.Sequential(ember.nn.Linear(2, 2))}
    local e, q = help.lookup("t:sum", env)
    assert.is_not_nil(e, "no entry for t:sum")
    assert.are.equal(help.lookup(ember.Tensor.sum), e)
    assert.are.equal("Tensor:sum", q)
    assert.are.equal("ember.nn.Module:to", help.lookup("model:to", env).name)
    -- the default env is _G
    rawset(_G, "help_spec_t", ember.ones(2))
    local ok, found = pcall(help.lookup, "help_spec_t:sum")
    rawset(_G, "help_spec_t", nil)
    assert.is_true(ok)
    assert.are.equal(e, found)
  end)

  it("returns nil for unknown names and values, without raising", function()
    assert.is_nil(help.lookup("ember.no_such_function"))
    assert.is_nil(help.lookup("nn.Linear:no_such_method"))
    assert.is_nil(help.lookup("not an ( expression"))
    assert.is_nil(help.lookup(function() end))
    assert.is_nil(help.lookup({}))
    assert.is_nil(help.lookup(42))
    assert.is_nil(help.lookup(nil))
  end)
end)

describe("help.format", function()
  it("prints sig, doc indented 2, the example indented 4 and the also names", function()
    local e = {name = "x.y", sig = "x.y(a)\nx:y()", doc = "Does it.\n\nMore.", example = "local a = 1\nprint(a)",
               also = {"x.z", "x.w"}}
    assert.are.equal("x.y(a)\nx:y()\n\n  Does it.\n\n  More.\n\n  Example:\n    local a = 1\n    print(a)\n\n"
                     .. "  Also: x.z, x.w", help.format(e))
  end)

  it("starts a real entry with its signature and shows its example", function()
    local e = help.lookup("nn.Linear")
    local text = help.format(e)
    assert.are.equal(e.sig:match("^[^\n]*"), text:match("^[^\n]*"))
    assert.is_truthy(text:find("\n  Example:\n    local nn = ember.nn\n", 1, true))
    assert.is_truthy(text:find("  Also: ember.nn.Linear:init", 1, true))
  end)

  it("rejects what is not an entry", function()
    local ok, err = pcall(help.format, 42)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("expected a doc entry", 1, true))
  end)
end)

describe("help()", function()
  it("prints an entry and returns nothing", function()
    local out, n = capture(function(...) return select("#", help(...)) end, ember.nn.Linear)
    assert.are.equal(0, n)
    assert.are.equal(help.format(help.lookup(ember.nn.Linear)), out)
    assert.are.equal(out, (capture(help.help, "nn.Linear")))
  end)

  it("prints an overview with no argument", function()
    local out = capture(help)
    assert.is_truthy(out:find("ember.nn", 1, true))
    assert.is_truthy(out:find("?", 1, true))
    assert.is_truthy(out:find(":help", 1, true))
  end)

  it("suggests close names for an unknown one", function()
    local out = capture(help, "nn.Linaer")
    assert.is_truthy(out:find("no documentation for 'nn.Linaer'", 1, true), out)
    assert.is_truthy(out:find("ember.nn.Linear", 1, true), out)
    out = capture(help, "optim.Adamw")
    assert.is_truthy(out:find("ember.optim.AdamW", 1, true), out)
    out = capture(help, "F.cross")       -- a prefix
    assert.is_truthy(out:find("ember.nn.functional.cross_entropy", 1, true), out)
    assert.are.same({}, help.suggest("qqqqqqqqqqqq"))
  end)

  it("never raises on odd input", function()
    for _, x in ipairs{42, true, {}, function() end, "", "(((", "t:", ".."} do
      local ok, err = pcall(capture, help, x)
      assert(ok, tostring(err))
    end
    local out = capture(help, nil)
    assert.is_truthy(out:find("got nil", 1, true), out)
  end)
end)

describe("help.names", function()
  it("is sorted and holds entry names and also names", function()
    local names = help.names()
    for i = 2, #names do assert(names[i - 1] < names[i], names[i - 1] .. " before " .. names[i]) end
    local set = {}
    for _, n in ipairs(names) do set[n] = true end
    for _, n in ipairs{"ember", "ember.nn", "ember.nn.Linear", "ember.optim.SGD", "ember.data.DataLoader",
                       "ember.nn.Sequential:append", "ember.cuda.synchronize", "ember.autograd.grad"} do
      assert(set[n], n .. " is not in names()")
    end
  end)
end)

describe("help.parse", function()
  local function md(lines) return table.concat(lines, "\n") .. "\n" end

  it("reads name, also over two lines, needs, sig, doc and example; each may be missing", function()
    local text = md{
      "# Demo",                                               -- 1
      "A line about the file.",                               -- 2
      "",                                                     -- 3
      "## demo.f",                                            -- 4
      "also: demo.g, Demo:f",                                 -- 5
      "also: demo.h",                                         -- 6
      "needs: cuda",                                          -- 7
      "",                                                     -- 8
      "```",                                                  -- 9
      "demo.f(x) -> y",                                       -- 10
      "Demo:f()",                                             -- 11
      "```",                                                  -- 12
      "",                                                     -- 13
      "Doubles x.",                                           -- 14
      "",                                                     -- 15
      "  Kept as written: # not a heading, *not* emphasis.",  -- 16
      "",                                                     -- 17
      "```lua",                                               -- 18
      "## not a heading inside a fence",                      -- 19
      "print(demo.f(2))",                                     -- 20
      "```",                                                  -- 21
      "",                                                     -- 22
      "## demo.nosig",                                        -- 23
      "",                                                     -- 24
      "Only prose and an example.",                           -- 25
      "```lua",                                               -- 26
      "print(1)",                                             -- 27
      "```",                                                  -- 28
      "## demo.noexample",                                    -- 29
      "needs: file",                                          -- 30
      "```",                                                  -- 31
      "demo.noexample()",                                     -- 32
      "```",                                                  -- 33
      "Prose, no example.",                                   -- 34
      "",                                                     -- 35
      "## demo.bare",                                         -- 36
    }
    local entries, problems = help.parse(text, "demo.md")
    assert.are.same({}, problems)
    assert.are.same({
      {name = "demo.f", also = {"demo.g", "Demo:f", "demo.h"}, needs = "cuda", sig = "demo.f(x) -> y\nDemo:f()",
       doc = "Doubles x.\n\n  Kept as written: # not a heading, *not* emphasis.",
       example = "## not a heading inside a fence\nprint(demo.f(2))"},
      {name = "demo.nosig", doc = "Only prose and an example.", example = "print(1)"},
      {name = "demo.noexample", needs = "file", sig = "demo.noexample()", doc = "Prose, no example."},
      {name = "demo.bare"},
    }, entries)
    assert.are.equal("demo.bare", help.format(entries[4]))
    assert.are.equal("demo.noexample()\n\n  Prose, no example.", help.format(entries[3]))
  end)

  it("reports each malformed part as <file>:<line> and keeps the rest", function()
    local cases = {
      {{"# T", "## a", "", "```lua", "print(1)"}, "bad.md:4: an unterminated fence", {{name = "a"}}},
      {{"# T", "## ", "Lost.", "## b"}, "bad.md:2: a heading with no name (its entry is skipped)", {{name = "b"}}},
      {{"# T", "## a", "also: x", "see: y"},
       "bad.md:4: an unknown key 'see:' after the heading (also: and needs: only)", {{name = "a", also = {"x"}}}},
      {{"## a", "```", "a()", "```", "```", "a(x)", "```"}, "bad.md:5: a second signature in a",
       {{name = "a", sig = "a()"}}},
      {{"## a", "```lua", "print(1)", "```", "```lua", "print(2)", "```"}, "bad.md:5: a second example in a",
       {{name = "a", example = "print(1)"}}},
      {{"## a", "```python", "print(1)", "```"},
       "bad.md:2: a fence of 'python': only ``` (the signature) and ```lua (the example)", {{name = "a"}}},
      {{"## a", "```lua", "print(1)", "```", "More."}, "bad.md:5: text after the example of a",
       {{name = "a", example = "print(1)"}}},
    }
    for _, c in ipairs(cases) do
      local entries, problems = help.parse(md(c[1]), "bad.md")
      assert.are.same({c[2]}, problems)
      assert.are.same(c[3], entries)
    end
  end)

  it("never raises on odd text", function()
    local f = assert(io.open(assert(package.searchpath("ember.doc.README", (package.path:gsub("%?%.lua", "?.md"))))))
    local readme = f:read("a")   -- about the format, with fences of four backticks: not a doc file
    f:close()
    for _, text in ipairs{"", "##", "```", "## a\n```", "## a\n```\n````\n", "## a\nalso:\nneeds:", readme,
                          "\r\n## a\r\n```\r\nx\r\n```\r\n"} do
      local ok, entries, problems = pcall(help.parse, text)
      assert(ok, tostring(entries))
      assert.are.equal("table", type(entries))
      assert.are.equal("table", type(problems))
    end
    assert.are.same({{name = "a", sig = "x"}}, (help.parse("\r\n## a\r\n```\r\nx\r\n```\r\n")))
    -- only a line of three backticks (and blanks) closes a fence
    assert.are.same({{name = "a", sig = "````\n``` x\n```lua"}}, (help.parse("## a\n```\n````\n``` x\n```lua\n```")))
  end)

  it("help.entries gives one file's entries, nil for a file that is not there", function()
    local entries, problems = help.entries("autocast")
    assert.are.same({}, problems)
    assert.are.equal("ember.autocast", entries[1].name)
    assert.are.equal(help.format(help.lookup("ember.autocast")), help.format(entries[1]))
    assert.is_nil(help.entries("no_such_area"))
  end)
end)
