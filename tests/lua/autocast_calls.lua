-- autocast_calls.lua — ember's calls of the ops in PyTorch's autocast tables
-- (tests/lua/fixtures/autocast_cpu.lua and autocast_cuda.lua, written by
-- scripts/fixtures/make_autocast_fixtures.py), by the names the fixtures use, and the
-- check of a region against a table. Shared by tests/lua/autocast_spec.lua (the CPU)
-- and tests/gpu/autocast_spec.lua (the device under test).
local ember = require "ember"
local F = ember.nn.functional

local M = {}

-- t(...) makes an input of the region's dtype d on the device; idx an index tensor there
local function low_calls(t, d, idx)
  return {
    exp = function() return t(4):exp() end, log = function() return t(4):log() end,
    log1p = function() return t(4):log1p() end, expm1 = function() return t(4):expm1() end,
    rsqrt = function() return t(4):rsqrt() end, reciprocal = function() return t(4):reciprocal() end,
    log2 = function() return t(4):log2() end, log10 = function() return t(4):log10() end,
    erfinv = function() return t(4):erfinv() end, tan = function() return t(4):tan() end,
    sinh = function() return t(4):sinh() end, cosh = function() return t(4):cosh() end,
    asin = function() return t(4):asin() end, acos = function() return t(4):acos() end,
    pow = function() return t(4):pow(2) end,
    softmax = function() return t(4, 4):softmax(2) end, log_softmax = function() return t(4, 4):log_softmax(2) end,
    cumsum = function() return t(4):cumsum(1) end, cumprod = function() return t(4):cumprod(1) end,
    sum = function() return t(4):sum() end, mean = function() return t(4):mean() end,
    prod = function() return t(4):prod() end, logsumexp = function() return t(4, 4):logsumexp(2) end,
    norm = function() return t(4):norm() end, cdist = function() return ember.cdist(t(3, 4), t(2, 4)) end,
    layer_norm = function() return F.layer_norm(t(2, 4), {4}) end,
    group_norm = function() return F.group_norm(t(2, 4, 3), 2) end,
    batch_norm = function() return F.batch_norm(t(2, 3), nil, nil, nil, nil, true) end,
    cross_entropy = function() return F.cross_entropy(t(3, 5), idx) end,
    nll_loss = function() return F.nll_loss(t(3, 5), idx) end,
    mse_loss = function() return F.mse_loss(t(4), t(4)) end, l1_loss = function() return F.l1_loss(t(4), t(4)) end,
    smooth_l1_loss = function() return F.smooth_l1_loss(t(4), t(4)) end,
    huber_loss = function() return F.huber_loss(t(4), t(4)) end,
    kl_div = function() return F.kl_div(t(4), t(4), {reduction = "batchmean"}) end,
    binary_cross_entropy_with_logits = function() return F.binary_cross_entropy_with_logits(t(4), t(4)) end,
    binary_cross_entropy = function() return F.binary_cross_entropy(t(4), t(4)) end,
    softplus = function() return F.softplus(t(4)) end,
    margin_ranking_loss = function() return F.margin_ranking_loss(t(4), t(4), t(4):sign()) end,
    hinge_embedding_loss = function() return F.hinge_embedding_loss(t(4), t(4):sign()) end,
    soft_margin_loss = function() return F.soft_margin_loss(t(4), t(4):sign()) end,
    multi_margin_loss = function() return F.multi_margin_loss(t(3, 4), idx) end,
    triplet_margin_loss = function() return F.triplet_margin_loss(t(2, 4), t(2, 4), t(2, 4)) end,
    cosine_embedding_loss = function() return F.cosine_embedding_loss(t(2, 4), t(2, 4), t(2):sign()) end,
    poisson_nll_loss = function() return F.poisson_nll_loss(t(4), t(4)) end,
    gaussian_nll_loss = function() return F.gaussian_nll_loss(t(4), t(4), t(4)) end,
    multilabel_soft_margin_loss = function() return F.multilabel_soft_margin_loss(t(2, 4), t(2, 4):sign()) end,
    cosine_similarity = function() return F.cosine_similarity(t(2, 4), t(2, 4)) end,
    normalize = function() return F.normalize(t(2, 4)) end,
    vector_norm = function() return ember.linalg.vector_norm(t(4)) end,
    matrix_norm = function() return ember.linalg.matrix_norm(t(3, 3)) end,
    linalg_norm = function() return ember.linalg.norm(t(3, 3)) end,
    relu = function() return F.relu(t(4)) end, add = function() return t(4) + t(4) end,
    var = function() return t(4):var() end, std = function() return t(4):std() end,
    gelu = function() return F.gelu(t(4)) end, silu = function() return F.silu(t(4)) end,
    tanh = function() return t(4):tanh() end, sqrt = function() return t(4):sqrt() end,
    rms_norm = function() return F.rms_norm(t(2, 4), {4}) end,
    interpolate = function() return F.interpolate(t(1, 2, 4), {scale_factor = 2}) end,
    interpolate_bilinear = function() return F.interpolate(t(1, 1, 2, 4), {scale_factor = 2, mode = "bilinear"}) end,
    pairwise_distance = function() return F.pairwise_distance(t(2, 4), t(2, 4)) end,
    cat_mixed = function() return ember.cat({t(2), t(2):float()}) end,
    stack_mixed = function() return ember.stack({t(2), t(2):float()}) end,
    sum_dtype = function() return t(4):sum(1, {dtype = d}) end,
    softmax_dtype = function() return t(4, 4):softmax(2, {dtype = d}) end,
    atan2 = function() return ember.atan2(t(4), t(4)) end,
    atan2_mixed = function() return ember.atan2(t(4), t(4):float()) end,
    addcmul_mixed = function() return ember.addcmul(t(4), t(4), t(4):float()) end,
    softmin = function() return F.softmin(t(4, 4), 2) end, logsigmoid = function() return F.logsigmoid(t(4)) end,
    elu = function() return F.elu(t(4)) end, mish = function() return F.mish(t(4)) end,
    hardswish = function() return F.hardswish(t(4)) end, glu = function() return F.glu(t(2, 4)) end,
    avg_pool2d = function() return F.avg_pool2d(t(1, 1, 4, 4), 2) end,
    max_pool2d = function() return F.max_pool2d(t(1, 1, 4, 4), 2) end,
    adaptive_avg_pool2d = function() return F.adaptive_avg_pool2d(t(1, 1, 4, 4), 2) end,
    instance_norm = function() return F.instance_norm(t(1, 2, 4)) end,
    local_response_norm = function() return F.local_response_norm(t(1, 4, 3), 2) end,
    pad = function() return F.pad(t(2, 3), {1, 1}) end, embedding = function() return F.embedding(idx, t(5, 4)) end,
    celu = function() return F.celu(t(4)) end, selu = function() return F.selu(t(4)) end,
    softsign = function() return F.softsign(t(4)) end, tanhshrink = function() return F.tanhshrink(t(4)) end,
    xlogy = function() return ember.xlogy(t(4), t(4)) end, logit = function() return ember.logit(t(4)) end,
    logaddexp = function() return ember.logaddexp(t(4), t(4)) end, hypot = function() return ember.hypot(t(4), t(4)) end,
    sinc = function() return ember.sinc(t(4)) end, lerp = function() return ember.lerp(t(4), t(4), 0.5) end,
  }
end
local function f32_calls(t)
  return {
    matmul = function() return t(3, 3):matmul(t(3, 3)) end, mm = function() return ember.mm(t(3, 3), t(3, 3)) end,
    bmm = function() return ember.bmm(t(1, 3, 3), t(1, 3, 3)) end,
    addmm = function() return ember.addmm(t(3), t(3, 3), t(3, 3)) end,
    baddbmm = function() return ember.baddbmm(t(1, 3, 3), t(1, 3, 3), t(1, 3, 3)) end,
    addbmm = function() return ember.addbmm(t(3, 3), t(1, 3, 3), t(1, 3, 3)) end,
    linear = function() return F.linear(t(2, 3), t(4, 3), t(4)) end,
    conv2d = function() return F.conv2d(t(1, 2, 4, 4), t(3, 2, 3, 3)) end,
    sdpa = function() return F.scaled_dot_product_attention(t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4)) end,
    einsum = function() return ember.einsum("ij,jk->ik", t(3, 3), t(3, 3)) end,
    dot = function() return ember.dot(t(3), t(3)) end, softmax_f32 = function() return t(4):softmax(1) end,
    mv = function() return ember.mv(t(3, 3), t(3)) end, addmv = function() return ember.addmv(t(3), t(3, 3), t(3)) end,
    addr = function() return ember.addr(t(3, 3), t(3), t(3)) end, vdot = function() return ember.vdot(t(3), t(3)) end,
    inner = function() return ember.inner(t(3), t(3)) end, inner_2d = function() return ember.inner(t(2, 3), t(2, 3)) end,
    outer = function() return ember.outer(t(3), t(3)) end, ger = function() return ember.ger(t(3), t(3)) end,
    tensordot = function() return ember.tensordot(t(3, 3), t(3, 3), 1) end,
    prelu = function() return F.prelu(t(2, 3), t(1)) end, conv1d = function() return F.conv1d(t(1, 2, 5), t(3, 2, 3)) end,
    conv_transpose2d = function() return F.conv_transpose2d(t(1, 2, 3, 3), t(2, 3, 2, 2)) end,
    unfold = function() return F.unfold(t(1, 1, 4, 4), 2) end,
  }
end

-- The ops of a fixture whose result dtype under ember.autocast(devtype, {dtype = d})
-- differs from PyTorch's, as lines. low(...) and f32(...) make inputs of dtype d and
-- float32 on the device; idx is an index tensor there. "error": PyTorch refuses the op
-- in a region, so ember must raise; "unmeasured" rows are passed over.
function M.mismatches(expected, devtype, d, low, f32, idx)
  local calls = {low = low_calls(low, d, idx), f32 = f32_calls(f32)}
  local wrong = {}
  ember.autocast(devtype, {dtype = d}, function()
    for _, e in ipairs(expected) do
      local fn = calls[e.kind][e.op]
      assert(fn, "no ember call for " .. e.op)
      local want = e[d]
      if want ~= "unmeasured" then
        local ok, r = pcall(fn)
        local got = ok and r.dtype or "error"
        if got ~= want then
          wrong[#wrong + 1] = ("%s (%s inputs): %s, PyTorch %s%s"):format(e.op, e.kind, got, want,
                                                                            ok and "" or " [" .. tostring(r) .. "]")
        end
      end
    end
  end)
  return wrong
end

return M
