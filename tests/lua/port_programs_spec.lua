-- port_programs_spec.lua — two PyTorch 2.x training programs ported to ember the way a
-- PyTorch user would (the Python is scripts/fixtures/make_port_fixtures.py): a VAE with
-- Sequential parts, reparameterisation, BCE-with-logits + KL and Adam; a residual CNN with
-- BatchNorm2d, a ModuleList of blocks, AdamW, clip_grad_norm_, CosineAnnealingLR and label
-- smoothing. Each loads PyTorch's initial state_dict as it is (strict), trains the same
-- steps on the same data, and must give PyTorch's loss at every step, its final weights
-- and (the CNN) its eval-mode output.
local ember = require "ember"
local h = require "helpers"
local nn, F, optim = ember.nn, ember.nn.functional, ember.optim

local info = h.fixture("port_programs.lua")
local T = ember.load(h.FIXTURES .. "port_programs.safetensors")

-- the entries under prefix, with it taken off: a state_dict as PyTorch saved it
local function sub(prefix)
  local sd = {}
  for k, v in pairs(T) do
    if k:sub(1, #prefix) == prefix then sd[k:sub(#prefix + 1)] = v end
  end
  return sd
end

local function same_state(model, want, tol)
  local got = model:state_dict()
  local n = 0
  for k, w in pairs(want) do
    n = n + 1
    assert(got[k], "missing " .. k)
    local d = (got[k]:to("float64") - w:to("float64")):abs():max():item()
    assert(d <= tol, string.format("%s differs by %g", k, d))
  end
  local m = 0
  for _ in pairs(got) do m = m + 1 end
  assert.equal(n, m)
end

describe("a VAE ported from PyTorch", function()
  it("trains as PyTorch does, from PyTorch's state_dict", function()
    local VAE = nn.Module:extend("VAE")
    function VAE:init()
      self.enc = nn.Sequential(nn.Linear(16, 8), nn.ReLU())
      self.mu = nn.Linear(8, 2)
      self.logvar = nn.Linear(8, 2)
      self.dec = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 16))
    end
    function VAE:forward(x, eps)
      local hdn = self.enc(x)
      local mu, logvar = self.mu(hdn), self.logvar(hdn)
      local z = mu + eps * ember.exp(0.5 * logvar)
      return self.dec(z), mu, logvar
    end

    local vae = VAE():double()
    vae:load_state_dict(sub("vae.init."))
    local x, eps = T["vae.x"], T["vae.eps"]
    local opt = optim.Adam(vae:parameters(), {lr = 1e-2})
    for step = 1, 5 do
      opt:zero_grad()
      local logits, mu, logvar = vae(x, eps[step])
      local bce = F.binary_cross_entropy_with_logits(logits, x, {reduction = "sum"})
      local kl = -0.5 * ember.sum(1 + logvar - mu:pow(2) - logvar:exp())
      local loss = (bce + kl) / x.shape[1]
      loss:backward()
      opt:step()
      assert.near(info.vae_losses[step], loss:item(), 1e-10 * math.abs(info.vae_losses[step]))
    end
    same_state(vae, sub("vae.final."), 1e-10)
  end)
end)

describe("a residual CNN ported from PyTorch", function()
  it("trains as PyTorch does, from PyTorch's state_dict", function()
    local Block = nn.Module:extend("Block")
    function Block:init(c)
      self.conv1 = nn.Conv2d(c, c, 3, 1, 1, {bias = false})
      self.bn1 = nn.BatchNorm2d(c)
      self.conv2 = nn.Conv2d(c, c, 3, 1, 1, {bias = false})
      self.bn2 = nn.BatchNorm2d(c)
    end
    function Block:forward(x)
      local y = F.relu(self.bn1(self.conv1(x)))
      y = self.bn2(self.conv2(y))
      return F.relu(x + y)
    end

    local Net = nn.Module:extend("Net")
    function Net:init()
      self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, {padding = 1}), nn.BatchNorm2d(4), nn.ReLU())
      self.blocks = nn.ModuleList({Block(4), Block(4)})
      self.head = nn.Linear(4, 5)
    end
    function Net:forward(x)
      x = self.stem(x)
      for _, b in ipairs(self.blocks) do x = b(x) end
      x = F.adaptive_avg_pool2d(x, 1):flatten(2)
      return self.head(x)
    end

    local net = Net():double()
    net:load_state_dict(sub("cnn.init."))
    local xb, yb = T["cnn.x"], T["cnn.y"] + 1          -- class labels are 1-based in ember
    local opt = optim.AdamW(net:parameters(), {lr = 3e-2, weight_decay = 0.05})
    local sched = optim.lr_scheduler.CosineAnnealingLR(opt, {T_max = 4})
    for step = 1, 4 do
      opt:zero_grad()
      local loss = F.cross_entropy(net(xb), yb, {label_smoothing = 0.1})
      loss:backward()
      local norm = nn.utils.clip_grad_norm_(net:parameters(), 1.0)
      opt:step()
      sched:step()
      assert.near(info.cnn_losses[step], loss:item(), 1e-10)
      assert.near(info.cnn_norms[step], norm:item(), 1e-10)
    end
    net:eval()
    local out = ember.no_grad(function() return net(xb) end)
    assert((out - T["cnn.eval_out"]):abs():max():item() < 1e-10)
    -- Adam divides by the root of the squared gradients: float64 sums taken in another order
    -- (the bias gradients of a convolution) move a weight by a few 1e-10 over four steps
    same_state(net, sub("cnn.final."), 1e-8)
  end)
end)
