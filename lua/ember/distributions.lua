-- ember.distributions — probability distributions with PyTorch's
-- torch.distributions semantics: parameters, batch_shape and event_shape (as
-- ember.Size), sample / rsample (reparameterised: gradients reach the parameters),
-- log_prob, cdf, icdf, entropy, mean, mode, variance, stddev, expand, argument
-- and value validation (validate_args, on by default), and kl_divergence.
--
--   local D = ember.distributions
--   local d = D.Normal(ember.zeros(3), 1)
--   local x = d:rsample({5})            -- [5, 3]
--   local lp = d:log_prob(x)            -- [5, 3]
--   D.kl_divergence(d, D.Normal(1, 2))
--
-- Random numbers come from ember's generator, so ember.manual_seed governs them.
-- Categorical's classes are 1-based, as every position in ember.
--
-- The classes live in ember/distributions/ (base: Distribution and the shared
-- machinery; continuous, discrete, multivariate, transformed: the classes; transforms:
-- the maps TransformedDistribution pushes a base through; kl: the divergences;
-- constraints: the supports).
local B = require "ember.distributions.base"

local M = {
  Distribution = B.Distribution,
  constraints = B.constraints,
}

for _, file in ipairs({"continuous", "discrete", "multivariate", "transformed"}) do
  for name, cls in pairs(require("ember.distributions." .. file)) do
    if type(cls) == "table" then M[name] = cls end
  end
end

-- torch.distributions.transforms, its classes also in ember.distributions (as PyTorch's)
local T = require "ember.distributions.transforms"
M.transforms = T
for name, cls in pairs(T) do
  if type(cls) == "table" and name:match("^%u") then M[name] = cls end
end

local kl = require "ember.distributions.kl"
M.kl_divergence = kl.kl_divergence
M.register_kl = kl.register_kl

return M
