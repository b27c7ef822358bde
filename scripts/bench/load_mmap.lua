-- load_mmap.lua — what ember.load costs with and without mmap: a ~200 MB
-- safetensors file (50 float32 tensors of 1M elements) written to a temporary
-- path, then loaded in fresh processes (this script again, with --child):
-- plain (read into memory), mmap = true (views of the file's pages), and
-- mmap = true followed by a sum over every tensor (every page touched).
-- Each prints the load's wall time and the process's peak resident memory
-- (VmHWM of /proc/self/status) and its resident anonymous and file-backed
-- memory at the end (RssAnon, RssFile); a child that loads nothing gives the
-- baseline. Best time of 3 runs each, twice: with the file in the page cache
-- (it was just written), and with its pages evicted before each run (GNU
-- dd's iflag=nocache, which drops the cached pages of that one file; the
-- cold rows are left out where it fails). The file is removed at the end.
--   build/ember scripts/bench/load_mmap.lua [MB]
local argv = {...}

local function status()
  local f = assert(io.open("/proc/self/status", "r"))
  local s = f:read("a")
  f:close()
  local function kb(field) return tonumber(s:match(field .. ":%s*(%d+) kB")) end
  return kb("VmHWM"), kb("RssAnon"), kb("RssFile")
end

local function child(path, mode)
  local t0 = ember.wall_time()
  local tensors
  if mode == "read" then
    tensors = ember.load(path)
  elseif mode == "mmap" or mode == "mmap_touch" then
    tensors = ember.load(path, {mmap = true})
  elseif mode ~= "none" then
    error("unknown mode " .. mode)
  end
  local total = 0
  if mode == "mmap_touch" then
    for _, t in pairs(tensors or {}) do total = total + t:sum():item() end
  end
  local ms = (ember.wall_time() - t0) * 1e3
  local n = 0
  for _ in pairs(tensors or {}) do n = n + 1 end
  local hwm, anon, file = status()
  print(string.format("RESULT %.3f %d %d %d %d %.17g", ms, hwm, anon, file, n, total))
end

local function run_child(exe, script, path, mode)
  local cmd = string.format("'%s' '%s' --child '%s' %s", exe, script, path, mode)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  p:close()
  local ms, hwm, anon, file, n = out:match("RESULT (%S+) (%d+) (%d+) (%d+) (%d+)")
  if not ms then error("child failed: " .. cmd .. "\n" .. out) end
  return tonumber(ms), tonumber(hwm), tonumber(anon), tonumber(file), tonumber(n)
end

local function main()
  if argv[1] == "--child" then return child(argv[2], argv[3]) end
  local mb = tonumber(argv[1] or "200")
  local ntensors = 50
  local numel = math.floor(mb * 1e6 / 4 / ntensors)
  local path = os.tmpname()
  local exe, script = arg[-1] or "ember", arg[0]
  local ok, err = pcall(function()
    do
      local ts = {}
      for i = 1, ntensors do ts[string.format("layer%02d.weight", i)] = ember.full({numel}, i / 8) end
      ember.save(path, ts)
    end
    collectgarbage()
    local f = assert(io.open(path, "rb"))
    local bytes = f:seek("end")
    f:close()
    print(string.format("ember.load of a %.0f MB safetensors file (%d float32 tensors of %d elements), "
                        .. "each in a fresh process, best of 3:", bytes / 1e6, ntensors, numel))
    local evict = string.format("dd if='%s' iflag=nocache count=0 status=none 2>/dev/null", path)
    for _, cold in ipairs{false, true} do
      if cold and os.execute(evict) ~= true then
        print("  (no cold rows: dd iflag=nocache failed)")
        break
      end
      print(string.format("  %-34s %10s %12s %12s %12s", cold and "cold page cache" or "warm page cache",
                          "load ms", "VmHWM MB", "RssAnon MB", "RssFile MB"))
      for _, mode in ipairs{"none", "read", "mmap", "mmap_touch"} do
        local best, hwm, anon, file, n = math.huge
        for _ = 1, 3 do
          if cold then os.execute(evict) end
          local ms
          ms, hwm, anon, file, n = run_child(exe, script, path, mode)
          best = math.min(best, ms)
        end
        if mode ~= "none" and n ~= ntensors then error(mode .. ": loaded " .. n .. " tensors") end
        local label = ({none = "start-up only (no load)", read = "ember.load(path)",
                        mmap = "ember.load(path, {mmap = true})",
                        mmap_touch = "  the same, then every tensor summed"})[mode]
        print(string.format("  %-34s %10.1f %12.1f %12.1f %12.1f", label, best, hwm / 1024, anon / 1024,
                            file / 1024))
      end
    end
  end)
  os.remove(path)
  if not ok then error(err, 0) end
end

main()
