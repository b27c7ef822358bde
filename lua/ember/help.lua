-- ember.help — the documentation behind help(obj) and ?name in the shell.
--
--   local help = require "ember.help"      -- also ember.help
--   help(ember.zeros)                      -- by value: functions, classes, modules, tensors
--   help("nn.Linear")                      -- by name; "nn.", "optim.", "F." are short prefixes
--   help("t:sum")                          -- an expression on a global: t is a tensor here
--   help()                                 -- an overview
--   help.lookup(x) -> entry or nil, the qualified name it was found under
--   help.names()   -> every documented name, sorted
--   help.format(entry) -> the text help() prints
--   help.entries(area) -> the entries of lua/ember/doc/<area>.md; help.parse(text, file)
--
-- The entries live in Markdown files, one per area, lua/ember/doc/<area>.md (as Lua
-- Torch kept torch7's doc/*.md), read on first use, never at require "ember" time:
--
--   # Title of the area                  first line; prose up to the first "## " is ignored
--
--   ## ember.amax                        an entry starts at a line "## <name>" (outside fences)
--   also: Tensor:amax, Tensor:other      optional, right after the heading, comma-separated;
--   needs: cuda                          may repeat. needs: "cuda" or "file" (the example
--                                        runs only with a CUDA device, or data files)
--   ```                                  a fence with no info string: the signature (sig)
--   ember.amax(t, [dim], [keepdim])
--   ```
--   Prose up to the example: the doc text, verbatim (the blank lines around it dropped).
--   ```lua                               the example, verbatim
--   print(ember.tensor({{1, 5}, {7, 2}}):amax())
--   ```
--
-- sig, doc and example may each be missing. A "## " line with no name, an unknown "key:"
-- line right after a heading, an unterminated fence, a fence of another language, a
-- second sig or example in one entry and text after the example are reported by
-- help.problems() as "<file>.md:<line>: <what is wrong>"; the rest of the file still loads.
-- Values are found through a reverse map built once, on first use, by walking the public
-- tables (ember, ember.Tensor, ember.nn and its classes, ...), so help(m.forward) on a
-- module instance finds the documented class method.
local ember = require "ember"

local M = {}

-- The doc files, in load order. Missing ones are skipped: docs are written area by area.
local DOC_FILES = {"tensor", "ember", "conv", "attention", "nn", "optim", "data", "autograd", "cuda", "plot", "math", "reduction", "shape", "einsum", "linalg", "activation", "rnn", "optimizers", "amp", "autocast", "distributed", "tensorboard", "activation_checkpoint", "composite", "composite_shape", "composite_aliases", "composite_random", "special", "distributions", "testing", "profiler", "memory", "debug", "hf", "hf_tokenizer", "lora", "nn_extra", "composite_extra", "ctc", "grid_sample", "func"}

-- Short prefixes accepted in names, as the shell pre-loads nn, optim, ... as globals.
local PREFIXES = {
  {"F.", "ember.nn.functional."},
  {"nn.", "ember.nn."},
  {"optim.", "ember.optim."},
  {"functional.", "ember.nn.functional."},
  {"init.", "ember.nn.init."},
  {"lr_scheduler.", "ember.optim.lr_scheduler."},
  {"data.", "ember.data."},
  {"autograd.", "ember.autograd."},
  {"cuda.", "ember.cuda."},
  {"backends.", "ember.backends."},
  {"plot.", "ember.plot."},
  {"special.", "ember.special."},
  {"ember.Tensor:", "Tensor:"},
  {"ember.Tensor.", "Tensor."},
}

-- Where a bare word ("zeros", "Linear") may live, most likely first.
local BARE_PLACES = {"ember.", "Tensor:", "Tensor.", "ember.nn.", "ember.optim.", "ember.optim.lr_scheduler.",
                     "ember.data.", "ember.nn.functional.", "ember.nn.init.", "ember.autograd.", "ember.cuda.",
                     "ember.plot.", "ember.nn.utils.rnn."}

-- The roots of expressions such as "nn.Linear" when no global of that name exists.
local ROOTS = {
  ember = function() return ember end,
  Tensor = function() return ember.Tensor end,
  nn = function() return ember.nn end,
  optim = function() return ember.optim end,
  F = function() return ember.nn.functional end,
  data = function() return ember.data end,
  autograd = function() return ember.autograd end,
  cuda = function() return ember.cuda end,
  plot = function() return ember.plot end,
}

-- ember functions that the binding loads on first use, so pairs(ember) misses them.
local LAZY_FUNCTIONS = {"save_checkpoint", "load_checkpoint", "vmap", "cond", "while_loop"}

-- ---- loading the entries ------------------------------------------------------------

local index       -- {entries, by_name, by_loose, file_of, problems}, built on first use
local value_names -- value -> list of qualified names, built on first use

-- "Tensor:sum" and "Tensor.sum" are the same question: one key for both.
local function loose(name) return (name:gsub(":", ".")) end

local function add_name(idx, name, entry, file)
  local prev = idx.by_name[name]
  if prev and prev ~= entry then
    idx.problems[#idx.problems + 1] = string.format("%s: %s: '%s' is already documented in %s, by %s", file,
                                                    entry.name, name, idx.file_of[prev], prev.name)
    return
  end
  idx.by_name[name] = entry
  local key = loose(name)
  if idx.by_loose[key] == nil then idx.by_loose[key] = name end
end

--- help.parse(text [, file = "?"]) -> entries, problems: the entries of a doc file's
-- Markdown text (format above) and the problems found ("<file>:<line>: ..."). Never raises.
-- It jumps from one heading or fence line to the next with plain string.find and cuts the
-- doc and the fences' bodies out whole: a loop over every line, or a pattern tried at
-- every byte, made help's first call twice as slow as when the docs were Lua files.
function M.parse(text, file)
  file = file or "?"
  if text:find("\r", 1, true) then text = text:gsub("\r\n", "\n") end
  text = "\n" .. text .. "\n"           -- every line starts after a "\n"
  local entries, problems = {}, {}
  local function problem(at, msg)       -- at: a byte of the line; its number counted only now
    local n = select(2, text:sub(1, at - 1):gsub("\n", ""))
    problems[#problems + 1] = string.format("%s:%d: %s", file, n, msg)
  end
  -- the start of the first heading or fence line after byte p (nil: none); h and t keep
  -- the next "\n#" and "\n`" found, so that each part of the text is searched once
  local h, t = 0, 0
  local function next_mark(p)
    while true do
      if h and h < p then h = text:find("\n#", p, true) end
      if t and t < p then t = text:find("\n`", p, true) end
      local m = h and t and math.min(h, t) or h or t
      if not m then return nil end
      if text:find("^##%s", m + 1) or text:find("^```", m + 1) then return m + 1 end
      p = m + 1
    end
  end
  local e, doc                          -- the entry being read (nil before the first), its doc
  local pos = 2                         -- the line being read starts at byte pos
  while true do
    local mark = next_mark(pos - 1)
    -- up to the mark: prose, the doc (the blank lines around it dropped)
    local prose = text:sub(pos, (mark or #text + 1) - 2)
    local first = e and prose:find("%S")
    if first then
      local last = #prose
      while prose:find("^%s", last) do last = last - 1 end
      if e.example then
        problem(pos + first - 1, "text after the example of " .. e.name)
      else
        doc[#doc + 1] = prose:sub(prose:match("^%s*\n()") or 1, last)
      end
    end
    if not mark then break end
    local eol = text:find("\n", mark, true)
    local line = text:sub(mark, eol - 1)
    pos = eol + 1
    if line:byte(1) == 35 then          -- "## name", then its key lines
      if e and doc[1] then e.doc = table.concat(doc, "\n") end
      local name = line:match("^##%s*(.-)%s*$")
      e, doc = nil, {}
      if name == "" then
        problem(mark, "a heading with no name (its entry is skipped)")
      else
        e = {name = name}
        entries[#entries + 1] = e
      end
      while e do
        local key, value, after = text:match("^(%a[%w_]*):[ \t]*([^\n]-)[ \t]*\n()", pos)
        if key == "also" then
          e.also = e.also or {}
          for a in value:gmatch("[^,%s]+") do e.also[#e.also + 1] = a end
        elseif key == "needs" then
          e.needs = value
        elseif key then
          problem(pos, "an unknown key '" .. key .. ":' after the heading (also: and needs: only)")
        else
          break
        end
        pos = after
      end
    else                                -- a fence, up to a line "```"
      local info = line:match("^```%s*(.-)%s*$")
      local field = (info == "" and "sig") or (info == "lua" and "example") or nil
      if not field then
        problem(mark, "a fence of '" .. info .. "': only ``` (the signature) and ```lua (the example)")
      elseif e and e[field] then
        problem(mark, "a second " .. (field == "sig" and "signature" or "example") .. " in " .. e.name)
        field = nil
      end
      local from, close, after = eol, nil, nil
      repeat
        close = text:find("\n```", from, true)
        after = close and select(2, text:find("^```[ \t]*\n", close + 1))
        from = close and close + 1
      until after or not close
      if not close then
        problem(mark, "an unterminated fence")
        break
      end
      if e and field then e[field] = text:sub(eol + 1, close - 1) end
      pos = after + 1
    end
  end
  if e and doc[1] then e.doc = table.concat(doc, "\n") end
  return entries, problems
end

local function doc_path(base)
  return package.searchpath("ember.doc." .. base, (package.path:gsub("%?%.lua", "?.md")))
end

-- base -> entries, problems as help.parse gives them; nil when the file is missing.
local function read_doc(base)
  local path = doc_path(base)
  if not path then return nil end
  local f, err = io.open(path, "rb")
  if not f then return {}, {base .. ".md: " .. tostring(err)} end
  local text = f:read("a")
  f:close()
  return M.parse(text, base .. ".md")
end

--- help.entries(area) -> the entries of lua/ember/doc/<area>.md in file order (fresh tables),
-- and the problems found in it; nil when there is no such file.
function M.entries(base) return read_doc(base) end

local function load_file(idx, base)
  local entries, problems = read_doc(base)
  if not entries then return end
  local file = base .. ".md"
  idx.files[#idx.files + 1] = file
  table.move(problems, 1, #problems, #idx.problems + 1, idx.problems)
  for _, e in ipairs(entries) do
    idx.entries[#idx.entries + 1] = e
    idx.file_of[e] = file
    add_name(idx, e.name, e, file)
    for _, a in ipairs(e.also or {}) do add_name(idx, a, e, file) end
  end
end

local function get_index()
  if index then return index end
  local idx = {entries = {}, by_name = {}, by_loose = {}, file_of = {}, problems = {}, files = {}}
  for _, base in ipairs(DOC_FILES) do load_file(idx, base) end
  index = idx
  return idx
end

-- ---- the reverse map: values -> names --------------------------------------------------

local function starts_private(k) return type(k) ~= "string" or k:sub(1, 1) == "_" end

-- Classes are tables carrying their instances' metamethods (__index) or a __name.
local function is_class(v)
  return type(v) == "table" and (rawget(v, "__index") ~= nil or rawget(v, "__name") ~= nil)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do if not starts_private(k) then keys[#keys + 1] = k end end
  table.sort(keys)
  return keys
end

-- The public tables as (qualified name, table, separator before the members' names).
local function public_modules()
  local mods = {
    {"ember", ember}, {"ember.nn", ember.nn}, {"ember.nn.functional", ember.nn.functional},
    {"ember.nn.init", ember.nn.init}, {"ember.nn.utils", ember.nn.utils},
    {"ember.nn.utils.rnn", ember.nn.utils.rnn}, {"ember.optim", ember.optim},
    {"ember.optim.lr_scheduler", ember.optim.lr_scheduler}, {"ember.data", ember.data},
    {"ember.autograd", ember.autograd}, {"ember.cuda", ember.cuda}, {"ember.backends", ember.backends},
    {"ember.backends.cuda", ember.backends and ember.backends.cuda},
    {"ember.help", M}, {"ember.plot", ember.plot},
    {"ember.utils.tensorboard", ember.utils.tensorboard},
    {"ember.utils.checkpoint", ember.utils.checkpoint}, {"ember.profiler", ember.profiler},
    {"ember.memory", ember.memory}, {"ember.debug", ember.debug},
    {"ember.hf", ember.hf}, {"ember.lora", ember.lora}, {"ember.special", ember.special},
    {"ember.distributions", ember.distributions}, {"ember.testing", ember.testing},
    {"ember.func", ember.func}, {"ember.optim.swa_utils", ember.optim.swa_utils},
  }
  local out = {}
  for _, m in ipairs(mods) do if type(m[2]) == "table" then out[#out + 1] = m end end
  return out
end

-- Every public function, class and module of ember, as a list of {name, value}, in a
-- stable order: modules' functions ("ember.nn.functional.linear"), tensor methods
-- ("Tensor:sum"), classes ("ember.nn.Linear") and their own methods ("ember.nn.Linear:forward").
-- Inherited methods are listed once, under the class that defines them.
function M.public_values()
  require "ember.composite"   -- the functions written in Lua, installed when first asked for
  local out = {}
  local function add(name, v) out[#out + 1] = {name, v} end
  local modules = public_modules()
  local is_module_table = {}
  for _, m in ipairs(modules) do is_module_table[m[2]] = true end
  for _, m in ipairs(modules) do
    local prefix, t = m[1], m[2]
    add(prefix, t)
    for _, k in ipairs(sorted_keys(t)) do
      local v = t[k]
      if type(v) == "function" then
        add(prefix .. "." .. k, v)
      elseif is_class(v) and not is_module_table[v] and v ~= ember.Tensor then
        add(prefix .. "." .. k, v)
        for _, mk in ipairs(sorted_keys(v)) do
          if type(rawget(v, mk)) == "function" then add(prefix .. "." .. k .. ":" .. mk, rawget(v, mk)) end
        end
      end
    end
  end
  for _, k in ipairs(LAZY_FUNCTIONS) do
    local ok, v = pcall(function() return ember[k] end)
    if ok and type(v) == "function" then add("ember." .. k, v) end
  end
  add("ember.Tensor", ember.Tensor)
  for _, k in ipairs(sorted_keys(ember.Tensor)) do
    if type(ember.Tensor[k]) == "function" then add("Tensor:" .. k, ember.Tensor[k]) end
  end
  -- cuda.Event's and cuda.CUDAGraph's methods sit in the registry, reachable
  -- without a GPU only through debug
  local reg = debug and debug.getregistry and debug.getregistry()
  for _, class in ipairs({"Event", "CUDAGraph"}) do
    local mt = type(reg) == "table" and reg["ember.cuda." .. class]
    if type(mt) == "table" and type(mt.__index) == "table" then
      for _, k in ipairs(sorted_keys(mt.__index)) do
        if type(mt.__index[k]) == "function" then add("ember.cuda." .. class .. ":" .. k, mt.__index[k]) end
      end
    end
  end
  return out
end

local function get_value_names()
  if value_names then return value_names end
  local map = {}
  local function add(v, name)
    local names = map[v]
    if not names then names = {}; map[v] = names end
    names[#names + 1] = name
  end
  for _, p in ipairs(M.public_values()) do add(p[2], p[1]) end
  value_names = map
  return map
end

-- ---- lookups -------------------------------------------------------------------------

local function entry_named(name)
  local idx = get_index()
  local e = idx.by_name[name]
  if e then return e, name end
  local exact = idx.by_loose[loose(name)]
  if exact then return idx.by_name[exact], exact end
  return nil
end

local function tensor_overview()
  for _, n in ipairs{"ember.Tensor", "Tensor"} do
    local e, q = entry_named(n)
    if e then return e, q end
  end
  return nil
end

local resolve_expression

-- value -> documented names, for values public_values() does not list (functions of the
-- modules loaded on first use: ember.autocast, ember.linalg.*, ember.amp.*, ...): every
-- documented name resolved once, as help("name") resolves it.
local documented_values
local function get_documented_values()
  if documented_values then return documented_values end
  local map = {}
  local env = {ember = ember}
  for name in pairs(get_index().by_name) do
    if name:match("^ember[.:]") then
      local ok, v = pcall(resolve_expression, name, env)
      if ok and (type(v) == "function" or type(v) == "table") then
        map[v] = map[v] or {}
        table.insert(map[v], name)
      end
    end
  end
  for _, names in pairs(map) do table.sort(names) end
  documented_values = map
  return map
end

local function lookup_value(v)
  if ember.is_tensor(v) then return tensor_overview() end
  -- an object of a class written in C (a Generator, a CUDA event): its class's entry, by the
  -- metatable's name
  if type(v) == "userdata" then
    local mt = getmetatable(v)
    local name = type(mt) == "table" and rawget(mt, "__name")
    if type(name) == "string" then
      local e, q = entry_named(name:match("^ember%.") and name or "ember." .. name)
      if e then return e, q end
    end
  end
  local names = get_value_names()[v] or get_documented_values()[v]
  for _, n in ipairs(names or {}) do
    local e, q = entry_named(n)
    if e then return e, q end
  end
  -- an instance (a module, an optimizer, a dataset): its class, or the nearest documented
  -- parent of a class defined outside ember (MLP = nn.Module:extend("MLP"))
  if type(v) == "table" then
    local queue, seen, i = {v}, {[v] = true}, 1
    while queue[i] and i <= 16 do
      local c = queue[i]
      i = i + 1
      if c ~= v and (get_value_names()[c] or get_documented_values()[c]) then return lookup_value(c) end
      local meta = getmetatable(c)
      if type(meta) == "table" then
        for _, nxt in ipairs{meta, rawget(meta, "__index")} do
          if type(nxt) == "table" and not seen[nxt] then
            seen[nxt] = true
            queue[#queue + 1] = nxt
          end
        end
      end
    end
  end
  return nil
end

-- The names a string may stand for, most specific first.
local function candidates(s)
  local out = {s}
  for _, p in ipairs(PREFIXES) do
    if s:sub(1, #p[1]) == p[1] then out[#out + 1] = p[2] .. s:sub(#p[1] + 1) end
    if s .. "." == p[1] then out[#out + 1] = p[2]:sub(1, -2) end   -- "nn" -> "ember.nn"
  end
  if s:match("^[%a_][%w_]*$") then
    for _, place in ipairs(BARE_PLACES) do out[#out + 1] = place .. s end
  end
  return out
end

-- "t:sum", "ember.nn.Linear", "model.fc1": walks the fields from a global (or a short root)
-- with plain indexing; returns the value and, for a tensor's field, the name "Tensor:<field>".
function resolve_expression(s, env)
  local parts = {}
  local first = s:match("^([%a_][%w_]*)")
  if not first then return nil end
  parts[1] = first
  local rest = s:sub(#first + 1)
  while rest ~= "" do
    local name = rest:match("^[.:]([%a_][%w_]*)")
    if not name then return nil end
    parts[#parts + 1] = name
    rest = rest:sub(#name + 2)
  end
  local ok, cur = pcall(function() return env[first] end)
  if not ok then return nil end
  if cur == nil and ROOTS[first] then cur = ROOTS[first]() end
  if cur == nil then return nil end
  local tensor_field
  for i = 2, #parts do
    local t = type(cur)
    if t ~= "table" and t ~= "userdata" then return nil end
    tensor_field = ember.is_tensor(cur) and parts[i] or nil
    local k = parts[i]
    ok, cur = pcall(function() return cur[k] end)
    if not ok then return nil end
    if cur == nil and not tensor_field then return nil end
  end
  return cur, tensor_field
end

local function lookup_name(s, env)
  s = s:gsub("^%s*%??%s*", ""):gsub("%s*%(?%)?%s*$", "")
  for _, c in ipairs(candidates(s)) do
    local e, q = entry_named(c)
    if e then return e, q end
  end
  local v, tensor_field = resolve_expression(s, env or _G)
  if tensor_field then
    local e, q = entry_named("Tensor:" .. tensor_field)
    if e then return e, q end
  end
  if v ~= nil and (type(v) == "function" or type(v) == "table" or ember.is_tensor(v)) then
    return lookup_value(v)
  end
  return nil
end

--- help.lookup(obj_or_name [, env]) -> entry, qualified name; or nil when undocumented.
-- Names are resolved as in help(); env (default _G) holds the globals of expressions.
function M.lookup(x, env)
  if type(x) == "string" then return lookup_name(x, env) end
  if x == nil then return nil end
  return lookup_value(x)
end

--- help.names() -> a sorted list of every documented name (entry names and their also names).
function M.names()
  local list = {}
  for name in pairs(get_index().by_name) do list[#list + 1] = name end
  table.sort(list)
  return list
end

--- help.problems() -> list of messages about doc files that failed to load or clash.
function M.problems()
  local out = {}
  for i, p in ipairs(get_index().problems) do out[i] = p end
  return out
end

-- ---- not found: close matches ------------------------------------------------------------

-- Levenshtein distance, giving up (returning limit + 1) once it exceeds limit.
local function distance(a, b, limit)
  if math.abs(#a - #b) > limit then return limit + 1 end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur, best = {[0] = i}, i
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if cur[j] < best then best = cur[j] end
    end
    if best > limit then return limit + 1 end
    prev = cur
  end
  return prev[#b]
end

local function last_part(name) return name:match("([^.:]+)$") or name end

--- help.suggest(name [, env = _G]) -> up to 10 documented names close to name (a shared
-- prefix, or within edit distance 2), best first.
function M.suggest(s, env)
  if type(s) ~= "string" then return {} end
  s = s:gsub("^%s*%??%s*", ""):gsub("%s*%(?%)?%s*$", "")
  -- "t:summ" with t a tensor: the close names are tensor methods
  local root, rest = s:match("^([%a_][%w_]*)[.:]([%w_]*)$")
  if root then
    local ok, v = pcall(function() return (env or _G)[root] end)
    if ok and ember.is_tensor(v) then s = "Tensor:" .. rest end
  end
  local wants = {}
  for _, c in ipairs(candidates(s)) do wants[#wants + 1] = loose(c):lower() end
  local word = last_part(s):lower()
  -- Lower is closer: the whole name first (a typo, then a prefix), then its last part
  -- alone (the right word in another module).
  local scored, best = {}, math.huge
  for _, name in ipairs(M.names()) do
    local ln, part = loose(name):lower(), last_part(name):lower()
    local score = math.huge
    for _, w in ipairs(wants) do
      local d = distance(w, ln, 2)
      if d <= 2 then score = math.min(score, d) end
      if #w >= 3 and ln:sub(1, #w) == w then score = math.min(score, 2.5) end
    end
    if #word >= 2 then
      local d = distance(word, part, 2)
      if d <= 2 then score = math.min(score, 3 + d) end
      if #word >= 3 and part:sub(1, #word) == word then score = math.min(score, 4.5) end
    end
    if score <= 5 then
      scored[#scored + 1] = {score, name}
      best = math.min(best, score)
    end
  end
  table.sort(scored, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local out = {}
  for _, p in ipairs(scored) do
    if #out == 10 or p[1] > best + 1.5 then break end
    out[#out + 1] = p[2]
  end
  return out
end

-- ---- output ---------------------------------------------------------------------------------

local function indented(text, pad)
  local lines = {}
  for line in (text:gsub("%s+$", "") .. "\n"):gmatch("(.-)\n") do
    lines[#lines + 1] = line == "" and "" or pad .. line
  end
  return table.concat(lines, "\n")
end

--- help.format(entry) -> the text help() prints for entry.
function M.format(e)
  if type(e) ~= "table" or type(e.name) ~= "string" then
    error("help.format: expected a doc entry (a table with a name), got " .. type(e), 2)
  end
  local parts = {e.sig and e.sig ~= "" and e.sig:gsub("%s+$", "") or e.name}
  if e.doc and e.doc:match("%S") then parts[#parts + 1] = indented(e.doc, "  ") end
  if e.example and e.example:match("%S") then
    local head = "  Example:"
    if e.needs == "cuda" then head = "  Example (needs a CUDA device):"
    elseif e.needs == "file" then head = "  Example (needs data files):" end
    parts[#parts + 1] = head .. "\n" .. indented(e.example, "    ")
  end
  if e.also and #e.also > 0 then parts[#parts + 1] = "  Also: " .. table.concat(e.also, ", ") end
  return table.concat(parts, "\n\n")
end

local OVERVIEW = [[
ember: tensors, autograd and neural networks with PyTorch's names; dims and indices are 1-based.
Python's keywords are a trailing table: t:sum(2, {keepdim = true}), ember.add(a, b, {alpha = 2,
out = c}) (out=: where PyTorch has it); an argument a function does not take is an error.

Modules:
  ember                   tensors: creation, math, reductions, indexing, linear algebra, I/O
  ember.Tensor            the methods and properties of tensors: t:sum(), t.shape, ...
  ember.nn                Module, layers and losses: nn.Linear, nn.CrossEntropyLoss, ...
  ember.nn.functional     the layers and losses as functions (F.linear, F.cross_entropy, ...)
  ember.nn.init           in-place initialisers (kaiming_uniform_, zeros_, ...)
  ember.optim             SGD, Adam, AdamW, clip_grad_norm_; ember.optim.lr_scheduler
  ember.data              Dataset, TensorDataset, DataLoader, fashion_mnist
  ember.autograd          grad, backward, gradcheck, detect_anomaly
  ember.cuda              GPUs: is_available, synchronize, memory figures, Event
  ember.backends          ember.backends.cuda.matmul.allow_tf32, ember.backends.cudnn
  ember.plot              gnuplot: line, scatter, hist, image, figures, files, live curves
  ember.profiler          where the time goes: ops and Lua lines, backward nodes, Chrome traces
  ember.memory            who holds the memory: live tensors by the line that made them
  ember.debug             stop_on_nan: the debugger at the first op that makes a NaN
  ember.lora              LoRA adapters in PEFT's format: wrap, train, merge, save, load

Usage:
  help(x)  or  ?x         x: a function, class, module or tensor, or a name:
                          ?ember.zeros   ?nn.Linear   ?Tensor:sum   ?t:sum   ?F.cross_entropy
  help("ember.nn")        a module's overview: what is inside
  ember.help.names()      every documented name
  :help                   lists the shell's commands]]

--- help.overview() -> the text help() prints with no argument.
function M.overview()
  return OVERVIEW .. string.format("\n\n%d names documented.", #M.names())
end

local function not_found_message(x)
  if type(x) == "string" then
    local msg = string.format("help: no documentation for '%s'.", x)
    local close = M.suggest(x)
    if #close > 0 then msg = msg .. "\nDid you mean: " .. table.concat(close, ", ") .. "?" end
    return msg .. "\nhelp() gives an overview of the modules."
  end
  if x == nil then
    return "help: got nil (an undefined variable?). Pass a value or a name: help(ember.zeros), help(\"nn.Linear\")."
  end
  return string.format("help: no documentation for this %s (%s): it is not a public function, class or "
                       .. "module of ember.", type(x), tostring(x))
end

--- help([obj_or_name]) prints the documentation of a function, class, module, tensor or name;
-- with no argument, an overview. Returns nothing; an unknown name prints close matches.
function M.help(...)
  if select("#", ...) == 0 then
    print(M.overview())
    return
  end
  local x = ...
  local e = M.lookup(x)
  if e then print(M.format(e)) else print(not_found_message(x)) end
end

return setmetatable(M, {__call = function(_, ...) return M.help(...) end})
