-- ember.optim.lbfgs — optim.LBFGS, torch.optim.LBFGS 2.x step for step:
-- the two-loop recursion over the last history_size (y, s) pairs, a fixed
-- step (lr) or the strong Wolfe line search, all parameters as one flat
-- vector. Scalars (dot products, the loss) come back to the host, as in
-- PyTorch, so each iteration synchronises with the device.
--
-- State (opt.state[first parameter], PyTorch's names): func_evals, n_iter,
-- d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss. PyTorch's
-- scratch list `al` is recomputed before every use and is not kept.
local ember = require "ember"
local flat = require "ember.optim.flat"

local function cubic_interpolate(x1, f1, g1, x2, f2, g2, lo, hi)
  if lo == nil then
    if x1 <= x2 then lo, hi = x1, x2 else lo, hi = x2, x1 end
  end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2_square = d1 ^ 2 - g1 * g2
  if d2_square >= 0 then
    local d2 = math.sqrt(d2_square)
    local min_pos
    if x1 <= x2 then
      min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else
      min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    end
    return math.min(math.max(min_pos, lo), hi)
  end
  return (lo + hi) / 2
end

local function dot(a, b) return a:dot(b):item() end

local function copy_list(t)
  local c = {}
  for i, x in ipairs(t) do c[i] = x end
  return c
end

-- The strong Wolfe line search (PyTorch's _strong_wolfe, from minFunc).
-- max_ls: PyTorch 2.x passes the evaluations max_eval leaves (max_eval - evaluations so far)
local function strong_wolfe(obj, x, t, d, f, g, gtd, max_ls)
  local c1, c2, tolerance_change = 1e-4, 0.9, 1e-9
  local d_norm = d:abs():max():item()
  g = g:clone()
  local f_new, g_new = obj(x, t, d)
  local evals = 1
  local gtd_new = dot(g_new, d)
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done = false
  local ls_iter = 0
  local bracket, bf, bg, bgtd
  while ls_iter < max_ls do
    if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) then
      bracket, bf, bg, bgtd = {t_prev, t}, {f_prev, f_new}, {g_prev, g_new:clone()}, {gtd_prev, gtd_new}
      break
    end
    if math.abs(gtd_new) <= -c2 * gtd then
      bracket, bf, bg = {t}, {f_new}, {g_new}
      done = true
      break
    end
    if gtd_new >= 0 then
      bracket, bf, bg, bgtd = {t_prev, t}, {f_prev, f_new}, {g_prev, g_new:clone()}, {gtd_prev, gtd_new}
      break
    end
    local min_step = t + 0.01 * (t - t_prev)
    local max_step = t * 10
    local tmp = t
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step)
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:clone(), gtd_new
    f_new, g_new = obj(x, t, d)
    evals = evals + 1
    gtd_new = dot(g_new, d)
    ls_iter = ls_iter + 1
  end
  if ls_iter == max_ls then
    bracket, bf, bg = {0, t}, {f, f_new}, {g, g_new}
  end
  local insuf_progress = false
  local low, high = 1, 2
  if bf[1] > bf[#bf] then low, high = 2, 1 end
  while not done and ls_iter < max_ls do
    if math.abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
    t = cubic_interpolate(bracket[1], bf[1], bgtd[1], bracket[2], bf[2], bgtd[2])
    local bmax, bmin = math.max(bracket[1], bracket[2]), math.min(bracket[1], bracket[2])
    local eps = 0.1 * (bmax - bmin)
    if math.min(bmax - t, t - bmin) < eps then
      if insuf_progress or t >= bmax or t <= bmin then
        if math.abs(t - bmax) < math.abs(t - bmin) then t = bmax - eps else t = bmin + eps end
        insuf_progress = false
      else
        insuf_progress = true
      end
    else
      insuf_progress = false
    end
    f_new, g_new = obj(x, t, d)
    evals = evals + 1
    gtd_new = dot(g_new, d)
    ls_iter = ls_iter + 1
    if f_new > f + c1 * t * gtd or f_new >= bf[low] then
      bracket[high], bf[high], bg[high], bgtd[high] = t, f_new, g_new:clone(), gtd_new
      if bf[1] <= bf[2] then low, high = 1, 2 else low, high = 2, 1 end
    else
      if math.abs(gtd_new) <= -c2 * gtd then
        done = true
      elseif gtd_new * (bracket[high] - bracket[low]) >= 0 then
        bracket[high], bf[high], bg[high], bgtd[high] = bracket[low], bf[low], bg[low], bgtd[low]
      end
      bracket[low], bf[low], bg[low], bgtd[low] = t, f_new, g_new:clone(), gtd_new
    end
  end
  return bf[low], bg[low], bracket[low], evals
end

local LIST_STATE = {old_dirs = true, old_stps = true}

return function(M, H)
  local class, check_number, fail = H.class, H.check_number, H.fail

  local function check_lbfgs(g, where)
    check_number(where, "lr", g.lr, 0, false, nil, nil, "learning rate")
    if math.type(g.max_iter) ~= "integer" or g.max_iter < 1 then
      fail("%s: invalid max_iter = %s (must be an integer >= 1)", where, tostring(g.max_iter))
    end
    if g.max_eval == false then g.max_eval = g.max_iter * 5 // 4 end
    if math.type(g.max_eval) ~= "integer" or g.max_eval < 1 then
      fail("%s: invalid max_eval = %s (must be an integer >= 1)", where, tostring(g.max_eval))
    end
    check_number(where, "tolerance_grad", g.tolerance_grad, 0)
    check_number(where, "tolerance_change", g.tolerance_change, 0)
    if math.type(g.history_size) ~= "integer" or g.history_size < 1 then
      fail("%s: invalid history_size = %s (must be an integer >= 1)", where, tostring(g.history_size))
    end
    if g.line_search_fn ~= false and g.line_search_fn ~= "strong_wolfe" then
      fail("%s: line_search_fn must be nil or \"strong_wolfe\", got %s", where, tostring(g.line_search_fn))
    end
    H.check_boolean(where, "maximize", g.maximize)
  end

  local LBFGS = class("LBFGS", {lr = 1, max_iter = 20, max_eval = false, tolerance_grad = 1e-7,
                                tolerance_change = 1e-9, history_size = 100, line_search_fn = false,
                                maximize = false},
                      {}, check_lbfgs, nil)
  LBFGS._unsupported = {}     -- PyTorch's LBFGS has neither differentiable nor capturable

  --- optim.LBFGS(params, {lr = 1, max_iter = 20, max_eval = max_iter*5//4, tolerance_grad = 1e-7,
  ---                      tolerance_change = 1e-9, history_size = 100, line_search_fn = nil | "strong_wolfe",
  ---                      maximize = false})
  getmetatable(LBFGS).__call = function(cls, params, ...)
    local ok, self = pcall(H.construct, cls, params, ...)
    if not ok then error(self, 2) end
    if #self.param_groups ~= 1 then
      error("LBFGS doesn't support per-parameter options (parameter groups)", 2)
    end
    return self
  end

  -- maximize: the search runs on the negated loss and gradients, as PyTorch 2.x's
  local function gather_flat_grad(params, maximize)
    local views = {}
    for i, p in ipairs(params) do
      local g = p.grad
      views[i] = g ~= nil and g:reshape(-1) or ember.zeros(p:numel(), {dtype = p.dtype, device = p.device})
    end
    local flat_grad = #views == 1 and views[1]:clone() or ember.cat(views, 1)
    if maximize then flat_grad:neg_() end
    return flat_grad
  end

  local function add_grad(params, step, update)
    local offset = 0
    for _, p in ipairs(params) do
      local n = p:numel()
      p:add_(update:narrow(1, offset + 1, n):view_as(p), {alpha = step})
      offset = offset + n
    end
  end

  --- opt:step(closure): runs up to max_iter iterations; the closure
  --- re-evaluates the loss and its gradients (zero_grad, forward, backward)
  --- and returns the loss. Returns the closure's first loss.
  function LBFGS:step(closure)
    if type(closure) ~= "function" then
      fail("LBFGS: step: a closure that re-evaluates the model and returns the loss is required, got %s",
           type(closure))
    end
    local group = self.param_groups[1]
    self:_check_group(group, "LBFGS (group 1)")
    local params = group.params
    local maximize = group.maximize
    -- the closure's loss as it returned it, and as a number (negated for maximize)
    local function eval()
      local l = ember.enable_grad(closure)
      local v = l
      if ember.is_tensor(l) then v = l:item()
      elseif type(l) ~= "number" then fail("LBFGS: step: the closure returned a %s, not the loss", type(l)) end
      return l, maximize and -v or v
    end
    local _ <close> = ember.no_grad()
    local lr, max_iter, max_eval = group.lr, group.max_iter, group.max_eval
    local tolerance_grad, tolerance_change = group.tolerance_grad, group.tolerance_change
    local history_size = group.history_size
    local state = self.state[params[1]]
    if state == nil then state = {}; self.state[params[1]] = state end
    state.func_evals = state.func_evals or 0
    state.n_iter = state.n_iter or 0

    local orig_loss, loss = eval()
    local current_evals = 1
    state.func_evals = state.func_evals + 1
    local flat_grad = gather_flat_grad(params, maximize)
    if flat_grad:abs():max():item() <= tolerance_grad then return orig_loss end

    local d, t = state.d, state.t
    local old_dirs, old_stps, ro = state.old_dirs, state.old_stps, state.ro
    local H_diag, prev_flat_grad, prev_loss = state.H_diag, state.prev_flat_grad, state.prev_loss
    local n_iter = 0
    while n_iter < max_iter do
      n_iter = n_iter + 1
      state.n_iter = state.n_iter + 1
      if state.n_iter == 1 then
        d = -flat_grad
        old_dirs, old_stps, ro = {}, {}, {}
        H_diag = 1
      else
        local y = flat_grad - prev_flat_grad
        local s = d * t
        local ys = dot(y, s)
        if ys > 1e-10 then
          if #old_dirs == history_size then
            table.remove(old_dirs, 1); table.remove(old_stps, 1); table.remove(ro, 1)
          end
          old_dirs[#old_dirs + 1] = y
          old_stps[#old_stps + 1] = s
          ro[#ro + 1] = 1 / ys
          H_diag = ys / dot(y, y)
        end
        local al = {}
        local q = -flat_grad
        for i = #old_dirs, 1, -1 do
          al[i] = dot(old_stps[i], q) * ro[i]
          q:add_(old_dirs[i], {alpha = -al[i]})
        end
        d = q * H_diag
        for i = 1, #old_dirs do
          local be_i = dot(old_dirs[i], d) * ro[i]
          d:add_(old_stps[i], {alpha = al[i] - be_i})
        end
      end
      if prev_flat_grad == nil then prev_flat_grad = flat_grad:clone() else prev_flat_grad:copy_(flat_grad) end
      prev_loss = loss
      if state.n_iter == 1 then
        t = math.min(1, 1 / flat_grad:abs():sum():item()) * lr
      else
        t = lr
      end
      local gtd = dot(flat_grad, d)
      if gtd > -tolerance_change then break end

      local ls_func_evals = 0
      local opt_cond = false
      if group.line_search_fn == "strong_wolfe" then
        local x_init = {}
        for i, p in ipairs(params) do x_init[i] = p:clone() end
        local function obj(x, step, dir)
          add_grad(params, step, dir)
          local _, l = eval()
          local fg = gather_flat_grad(params, maximize)
          for i, p in ipairs(params) do p:copy_(x[i]) end
          return l, fg
        end
        loss, flat_grad, t, ls_func_evals = strong_wolfe(obj, x_init, t, d, loss, flat_grad, gtd,
                                                         max_eval - current_evals)
        add_grad(params, t, d)
        opt_cond = flat_grad:abs():max():item() <= tolerance_grad
      else
        add_grad(params, t, d)
        if n_iter ~= max_iter then
          local _, l = eval()
          loss = l
          flat_grad = gather_flat_grad(params, maximize)
          opt_cond = flat_grad:abs():max():item() <= tolerance_grad
          ls_func_evals = 1
        end
      end
      current_evals = current_evals + ls_func_evals
      state.func_evals = state.func_evals + ls_func_evals
      if n_iter == max_iter or current_evals >= max_eval or opt_cond then break end
      if (d * t):abs():max():item() <= tolerance_change then break end
      if math.abs(loss - prev_loss) < tolerance_change then break end
    end
    state.d, state.t = d, t
    state.old_dirs, state.old_stps, state.ro = old_dirs, old_stps, ro
    state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_flat_grad, prev_loss
    return orig_loss
  end

  -- LBFGS's state is not shaped like the parameters (flat vectors, lists of
  -- them), so it has its own (de)serialisation; the layout is PyTorch's.
  function LBFGS:state_dict()
    local p = self.param_groups[1].params[1]
    local sd = H.Optimizer.state_dict(self)
    local st = self.state[p]
    sd.state = {}
    if st and next(st) then
      local c = {}
      for k, v in pairs(st) do c[k] = type(v) == "table" and copy_list(v) or v end
      sd.state[1] = c
    end
    return sd
  end

  function LBFGS:load_state_dict(sd)
    local name = "LBFGS: load_state_dict"
    if type(sd) ~= "table" or type(sd.param_groups) ~= "table" then
      fail("%s: expected a table {state = ..., param_groups = ...}", name)
    end
    -- the state is the first parameter's, numbered as the dict numbers it (from 0 in PyTorch's)
    local g1 = sd.param_groups[1]
    local first = type(g1) == "table" and type(g1.params) == "table" and g1.params[1] or 1
    local st = (sd.state or {})[first]
    local rest = {state = {}, param_groups = sd.param_groups, class = sd.class}
    local ok, err = pcall(H.Optimizer.load_state_dict, self, rest)
    if not ok then error(err, 2) end
    local params = self.param_groups[1].params
    local n = 0
    for _, p in ipairs(params) do n = n + p:numel() end
    local ref = params[1]
    local function vec(v, what)
      if not ember.is_tensor(v) or v:numel() ~= n then
        fail("%s: state '%s' must be a tensor of %d elements (all parameters, flattened)", name, what, n)
      end
      return v:detach():to(ref):reshape(-1):clone()
    end
    local new = {}
    if st then
      local lists = {}
      for k, v in pairs(st) do
        -- the flat form names list entries "old_dirs.<i>"
        local base, i = tostring(k):match("^(.-)%.(%d+)$")
        if base and LIST_STATE[base] then
          lists[base] = lists[base] or {}
          lists[base][tonumber(i)] = v
        elseif LIST_STATE[k] then
          lists[k] = lists[k] or {}
          for j, x in ipairs(v) do lists[k][j] = x end
        elseif k == "al" then
          -- PyTorch's scratch list for the two-loop recursion; ember recomputes it
        elseif k == "ro" and type(v) == "table" then
          -- PyTorch's entries are 0-d tensors (1 / y.s), ember's numbers
          new[k] = {}
          for j, x in ipairs(v) do new[k][j] = ember.is_tensor(x) and x:item() or x end
        elseif k == "d" or k == "prev_flat_grad" then
          new[k] = vec(v, k)
        elseif ember.is_tensor(v) then
          new[k] = v:item()
        elseif type(v) == "table" then
          new[k] = copy_list(v)
        else
          new[k] = v
        end
      end
      for _, k in ipairs({"old_dirs", "old_stps"}) do
        if lists[k] or st.n_iter then
          new[k] = {}
          for j, x in ipairs(lists[k] or {}) do new[k][j] = vec(x, k .. "[" .. j .. "]") end
        end
      end
      if type(new.ro) == "number" then new.ro = {new.ro} end
      for _, k in ipairs({"func_evals", "n_iter"}) do
        if new[k] ~= nil then new[k] = math.tointeger(new[k]) or new[k] end
      end
    end
    self.state = {}
    if next(new) then self.state[params[1]] = new end
  end

  function LBFGS:state_dict_flat()
    local sd = self:state_dict()
    local tensors, meta = {}, {}
    H.flatten_state(sd.state, tensors, meta, "LBFGS: state_dict_flat: ", LIST_STATE)
    meta.class = sd.class
    meta.param_groups = "1"
    for k, v in pairs(sd.param_groups[1]) do
      meta["param_groups.1." .. k] = flat.encode(v, "LBFGS: state_dict_flat: " .. k)
    end
    return tensors, meta
  end

  M.LBFGS = LBFGS
end
