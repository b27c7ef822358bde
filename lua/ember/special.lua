-- ember.special — PyTorch's torch.special: its other names of ember's functions (erf,
-- expit = sigmoid, gammaln = lgamma, psi = digamma, multigammaln = mvlgamma, ...) and the
-- functions written here over ember's ops: the modified Bessel functions i0, i0e, i1, i1e
-- (Cephes' Chebyshev expansions, as PyTorch's), the Bessel functions J0, J1, Y0, Y1 and the
-- modified K0, K1 (and their exp(x)-scaled forms; Cephes'), the regularized incomplete gamma
-- functions gammainc and gammaincc, the orthogonal polynomials (Chebyshev, Hermite, Laguerre,
-- Legendre), erfcx, ndtr, log_ndtr, ndtri, entr, xlog1py, zeta and spherical_bessel_j0.
--
-- Each function with a formula for its gradient in PyTorch (derivatives.yaml) is an
-- autograd Function with that formula as its backward, written with these functions, so
-- second derivatives work too; the values are computed in float64 (the formulas are those
-- of double precision) and rounded to the input's float dtype. Integer and bool inputs
-- give the default float dtype, as PyTorch's.
local ember = require "ember"
local errors = require "ember.errors"
local raise, check_tensor = errors.raise, errors.check_tensor

-- the composites aliased below (sinc, i0, mvlgamma) are installed when it loads
require "ember.composite"

local S = {}

local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local SQRT_PI, SQRT_2PI, SQRT1_2 = math.sqrt(math.pi), math.sqrt(2 * math.pi), math.sqrt(0.5)

-- x as a float tensor: integer and bool inputs become the default dtype
local function as_float(x, op, what)
  check_tensor(x, op, what or "input")
  if FLOAT[x.dtype] then return x end
  return x:to(ember.get_default_dtype())
end

-- An elementwise function: forward(x) its values from a float64 x, grad(x, y, g) PyTorch's
-- formula of its gradient (y the result, g the incoming gradient).
local function elementwise(name, forward, grad)
  local Fn
  return function(x)
    x = as_float(x, name)
    if not Fn then
      Fn = ember.autograd.Function:extend(name)
      function Fn.forward(ctx, t)
        local y = forward(t:to("float64")):to(t.dtype)
        ctx:save_for_backward(t, y)
        return y
      end
      function Fn.backward(ctx, g)
        local t, y = table.unpack(ctx.saved_tensors)
        return grad(t, y, g)
      end
    end
    return Fn.apply(x)
  end
end

-- a and b (tensors, or one of them a number) as tensors of their promoted dtype, a float
-- one (the default dtype for integers), on the tensor's device
local function float_pair(op, a, b)
  local at, bt = ember.is_tensor(a), ember.is_tensor(b)
  if not at and not bt then
    raise(string.format("%s: expected a tensor as input or other, got %s and %s", op, type(a), type(b)))
  end
  for _, v in ipairs({{a, at, "input"}, {b, bt, "other"}}) do
    if not v[2] and type(v[1]) ~= "number" then
      raise(string.format("%s: %s must be a tensor or a number, got %s", op, v[3], type(v[1])))
    end
  end
  local dtype = ember.result_type(a, b)
  if not FLOAT[dtype] then dtype = ember.get_default_dtype() end
  local device = (at and a or b).device
  local function cast(v, is_t) return is_t and v:to(dtype) or ember.tensor(v, {dtype = dtype, device = device}) end
  return cast(a, at), cast(b, bt)
end

-- A function of two broadcast tensors: forward(x, y) its values (in their dtype), grad(x,
-- y, r, g, needs) the gradients of both (nil for one not needed).
local function binary(name, forward, grad)
  local Fn
  return function(a, b)
    a, b = float_pair(name, a, b)
    if not Fn then
      Fn = ember.autograd.Function:extend(name)
      function Fn.forward(ctx, x, y)
        local r = forward(x, y)
        ctx:save_for_backward(x, y, r)
        return r
      end
      function Fn.backward(ctx, g)
        local x, y, r = table.unpack(ctx.saved_tensors)
        return grad(x, y, r, g, ctx.needs_input_grad)
      end
    end
    return Fn.apply(a, b)
  end
end

-- the smallest e with 1 + e ~= 1 in t's dtype
local EPS = {float64 = 2.0 ^ -52, float32 = 2.0 ^ -23, float16 = 2.0 ^ -10, bfloat16 = 2.0 ^ -7}

-- ---- the modified Bessel functions of the first kind ------------------------------------
-- Cephes' Chebyshev expansions of exp(-x) I0(x), exp(-x) I1(x) / x on [0, 8] and of
-- exp(-x) sqrt(x) I0(x), exp(-x) sqrt(x) I1(x) on (8, inf) in 32 / x, the coefficients
-- PyTorch uses (ATen/native/Math.h, from the Cephes Math Library, 3-clause BSD).

local I0_A = {
  -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
  1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
  -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
  9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
  -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
  1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
  -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
  1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
  -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
  1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1}
local I0_B = {
  -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
  3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
  1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
  -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
  7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
  -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
  3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
  2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
  8.04490411014108831608E-1}
local I1_A = {
  2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
  -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
  3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
  -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
  9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
  -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
  4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
  -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
  2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
  -1.76416518357834055153E-1, 2.52587186443633654823E-1}
local I1_B = {
  7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
  -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
  -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
  4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
  -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
  3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
  -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
  -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
  7.78576235018280120474E-1}

-- sum of c[i] T_i(y) / 2 by Clenshaw's recurrence (Cephes' chbevl)
local function chbevl(y, c)
  local b0, b1, b2 = ember.full_like(y, c[1]), ember.zeros_like(y), nil
  for i = 2, #c do
    b2, b1 = b1, b0
    b0 = y * b1 - b2 + c[i]
  end
  return (b0 - b2) * 0.5
end

-- exp(-|x|) I(|x|) from the expansions A (times |x| when order 1) and B
local function scaled(x, A, B, order1)
  local ax = x:abs()
  local near = ax:clamp_max(8)   -- each expansion on the inputs of its interval only
  local inner = chbevl(near * 0.5 - 2, A)
  if order1 then inner = inner * near end
  local far = ax:clamp_min(8)
  local outer = chbevl(far:reciprocal() * 32 - 2, B) / far:sqrt()
  return ember.where(ax:le(8), inner, outer)
end

-- I1 and I1e are odd
local function odd(x, v) return ember.where(x:lt(0), -v, v) end

local function i0e_forward(x) return scaled(x, I0_A, I0_B, false) end
local function i1e_forward(x) return odd(x, scaled(x, I1_A, I1_B, true)) end

-- where |x| is below the dtype's epsilon the gradients of i1 and i1e are 1/2 (PyTorch's
-- i1_backward): the formula's result / x is 0 / 0 there
local function tiny_x(x)
  local tiny = x:abs():le(EPS[x.dtype])
  return tiny, ember.where(tiny, EPS[x.dtype], x)
end

-- I0(x), the modified Bessel function of the first kind of order 0: ember.i0, which calls
-- it as S._i0 (ember.special.i0 is ember.i0)
local i0 = elementwise("i0", function(x) return x:abs():exp() * i0e_forward(x) end,
                       function(x, _, g) return g * S.i1(x) end)
S._i0 = i0

--- ember.special.i0e(x) -> exp(-|x|) I0(x).
S.i0e = elementwise("i0e", i0e_forward, function(x, y, g) return g * (S.i1e(x) - x:sgn() * y) end)

--- ember.special.i1(x) -> I1(x), of order 1.
S.i1 = elementwise("i1", function(x) return odd(x, x:abs():exp() * scaled(x, I1_A, I1_B, true)) end,
                   function(x, y, g)
                     local tiny, safe = tiny_x(x)
                     return g * ember.where(tiny, 0.5, i0(safe) - y / safe)
                   end)

--- ember.special.i1e(x) -> exp(-|x|) I1(x).
S.i1e = elementwise("i1e", i1e_forward, function(x, y, g)
  local tiny, safe = tiny_x(x)
  return g * ember.where(tiny, 0.5, S.i0e(safe) - y * (safe:sgn() + safe:reciprocal()))
end)

-- ---- the Bessel functions of the first and second kind, and K -----------------------------
-- Cephes' j0.c, j1.c, k0.c and k1.c (3-clause BSD) with their coefficients, which PyTorch's
-- ATen/native/Math.h also holds; ember evaluates them as Cephes does: QQ, RQ and the YQ are
-- monic (p1evl, a leading 1 not stored), where PyTorch's Math.h drops that 1 and its J0,
-- J1, Y0 and Y1 lose up to 2.4e-5 relative (README deviation 56). Y0 and Y1 share J0's and
-- J1's asymptotic tables (PP, PQ, QP, QQ: the same Hankel expansion), as in Cephes.

local J0_PP = {
  7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
  5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
  9.99999999999999997821e-01}
local J0_PQ = {
  9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
  5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
  1.00000000000000000218e+00}
local J0_QP = {
  -1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
  -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
  -5.14105326766599330220e+01, -6.05014350600728481186e+00}
local J0_QQ = {
  6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
  7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
  2.42005740240291393179e+02}
local J0_RP = {
  -4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
  9.70862251047306323952e+15}
local J0_RQ = {
  4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
  1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
  3.18121955943204943306e+16, 1.71086294081043136091e+18}
local J1_PP = {
  7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
  5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
  1.00000000000000000254e+00}
local J1_PQ = {
  5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
  5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
  9.99999999999999997461e-01}
local J1_QP = {
  5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
  3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
  2.11688757100572135698e+02, 2.52070205858023719784e+01}
local J1_QQ = {
  7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
  9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
  3.36093607810698293419e+02}
local J1_RP = {
  -8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
  3.68295732863852883286e+15}
local J1_RQ = {
  6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
  2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
  8.95222336184627338078e+16, 5.32278620332680085395e+18}
local Y0_YP = {
  1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
  -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
  4.42733268572569800351e+16, -1.84950800436986690637e+16}
local Y0_YQ = {
  1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
  8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
  2.50596256172653059228e+17}
local Y1_YP = {
  1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
  -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17}
local Y1_YQ = {
  5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
  1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
  6.87141087355300489866e+16, 3.97270608116560655612e+18}
local K0_A = {
  1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
  1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
  1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
  -5.35327393233902768720e-01}
local K0_B = {
  5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
  -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
  6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
  -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
  1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
  -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
  2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
  -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
  2.44030308206595545468e+00}
local K1_A = {
  -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
  -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
  -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
  -3.53155960776544875667e-01, 1.52530022733894777053e+00}
local K1_B = {
  -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
  1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
  -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
  3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
  -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
  2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
  -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
  1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
  2.72062619048444266945e+00}


local DR1, DR2 = 5.78318596294678452118e0, 3.04712623436620863991e1      -- J0's first zeros, squared
local Z1, Z2 = 1.46819706421238932572e1, 4.92184563216946036703e1        -- J1's
local PIO4, THPIO4 = 0.78539816339744830962, 2.35619449019234492885
local SQ2OPI, TWOOPI = 7.9788456080286535587989e-1, 6.36619772367581343075535e-1

-- c[1] z^n + ... + c[n + 1] (Cephes' polevl), and the same with a leading 1 not in c (p1evl)
local function polevl(z, c)
  local r = ember.full_like(z, c[1])
  for i = 2, #c do r = r * z + c[i] end
  return r
end
local function p1evl(z, c)
  local r = z + c[1]
  for i = 2, #c do r = r * z + c[i] end
  return r
end

-- x > 5 (clamped there): Cephes' Hankel asymptotic form, phase shifted by shift, sine
-- (second kind) or cosine (first kind) leading
local function bessel_far(ax, P, Q, shift, second)
  local far = ax:clamp_min(5)
  local w = far:reciprocal() * 5
  local z = w * w
  local p = polevl(z, P[1]) / polevl(z, P[2])
  local q = polevl(z, Q[1]) / p1evl(z, Q[2])
  local xn = far - shift
  local v = second and p * xn:sin() + w * q * xn:cos() or p * xn:cos() - w * q * xn:sin()
  return v * SQ2OPI / far:sqrt()
end

local function limits(x, v)   -- every one of them tends to 0 at +-inf (Cephes' form gives NaN)
  return ember.where(x:isinf(), 0.0, v)
end

local function j0_forward(x)
  local ax = x:abs()
  local near = ax:clamp_max(5)
  local z = near * near
  local small = ember.where(near:lt(1e-5), 1 - z * 0.25, (z - DR1) * (z - DR2) * polevl(z, J0_RP) / p1evl(z, J0_RQ))
  return limits(x, ember.where(ax:le(5), small, bessel_far(ax, {J0_PP, J0_PQ}, {J0_QP, J0_QQ}, PIO4, false)))
end

local function j1_forward(x)
  local ax = x:abs()
  local near = ax:clamp_max(5)
  local z = near * near
  local small = polevl(z, J1_RP) / p1evl(z, J1_RQ) * near * (z - Z1) * (z - Z2)
  return limits(x, odd(x, ember.where(ax:le(5), small, bessel_far(ax, {J1_PP, J1_PQ}, {J1_QP, J1_QQ}, THPIO4, false))))
end

-- Y's: -inf at 0, NaN below
local function second_kind(x, v)
  v = ember.where(x:eq(0), -math.huge, v)
  return limits(x, ember.where(x:lt(0), 0 / 0, v))
end

local function y0_forward(x)
  local near = x:clamp(1e-300, 5)
  local z = near * near
  local small = polevl(z, Y0_YP) / p1evl(z, Y0_YQ) + near:log() * j0_forward(near) * TWOOPI
  return second_kind(x, ember.where(x:le(5), small, bessel_far(x, {J0_PP, J0_PQ}, {J0_QP, J0_QQ}, PIO4, true)))
end

local function y1_forward(x)
  local near = x:clamp(1e-300, 5)
  local z = near * near
  local small = near * (polevl(z, Y1_YP) / p1evl(z, Y1_YQ)) + (j1_forward(near) * near:log() - near:reciprocal()) * TWOOPI
  return second_kind(x, ember.where(x:le(5), small, bessel_far(x, {J1_PP, J1_PQ}, {J1_QP, J1_QQ}, THPIO4, true)))
end

-- K's: Chebyshev expansions on (0, 2] (with I's logarithmic term) and beyond; +inf at 0, NaN
-- below. scaled: times exp(x), the form the far expansion gives directly.
local function k_forward(x, A, B, order1, scaled_k)
  local near = x:clamp(1e-300, 2)
  local small
  if order1 then
    small = (near * 0.5):log() * S.i1(near) + chbevl(near * near - 2, A) / near
  else
    small = chbevl(near * near - 2, A) - (near * 0.5):log() * ember.i0(near)
  end
  local far = x:clamp_min(2)
  local big = chbevl(far:reciprocal() * 8 - 2, B) / far:sqrt()
  local v
  if scaled_k then v = ember.where(x:le(2), small * near:exp(), big)
  else v = ember.where(x:le(2), small, big * (-far):exp()) end
  v = ember.where(x:eq(0), math.huge, v)
  v = ember.where(x:eq(math.huge), 0.0, v)
  return ember.where(x:lt(0), 0 / 0, v)
end

local function k0_forward(x) return k_forward(x, K0_A, K0_B, false, false) end
local function k1_forward(x) return k_forward(x, K1_A, K1_B, true, false) end
local function k0e_forward(x) return k_forward(x, K0_A, K0_B, false, true) end
local function k1e_forward(x) return k_forward(x, K1_A, K1_B, true, true) end

--- ember.special.bessel_j0(x) -> J0(x), the Bessel function of the first kind of order 0.
S.bessel_j0 = elementwise("bessel_j0", j0_forward, function(x, _, g) return -g * S.bessel_j1(x) end)

--- ember.special.bessel_j1(x) -> J1(x), of order 1 (odd).
S.bessel_j1 = elementwise("bessel_j1", j1_forward, function(x, y, g)
  local tiny, safe = tiny_x(x)
  return g * ember.where(tiny, 0.5, S.bessel_j0(safe) - y / safe)
end)

--- ember.special.bessel_y0(x) -> Y0(x), the Bessel function of the second kind of order 0 (x > 0;
-- -inf at 0, NaN below).
S.bessel_y0 = elementwise("bessel_y0", y0_forward, function(x, _, g) return -g * S.bessel_y1(x) end)

--- ember.special.bessel_y1(x) -> Y1(x), of order 1.
S.bessel_y1 = elementwise("bessel_y1", y1_forward, function(x, y, g) return g * (S.bessel_y0(x) - y / x) end)

--- ember.special.modified_bessel_k0(x) -> K0(x), the modified Bessel function of the second kind of
-- order 0 (x > 0; inf at 0, NaN below).
S.modified_bessel_k0 = elementwise("modified_bessel_k0", k0_forward,
                                   function(x, _, g) return -g * S.modified_bessel_k1(x) end)

--- ember.special.modified_bessel_k1(x) -> K1(x), of order 1.
S.modified_bessel_k1 = elementwise("modified_bessel_k1", k1_forward, function(x, y, g)
  return -g * (S.modified_bessel_k0(x) + y / x)
end)

--- ember.special.scaled_modified_bessel_k0(x) -> exp(x) K0(x).
S.scaled_modified_bessel_k0 = elementwise("scaled_modified_bessel_k0", k0e_forward, function(x, y, g)
  return g * (y - S.scaled_modified_bessel_k1(x))
end)

--- ember.special.scaled_modified_bessel_k1(x) -> exp(x) K1(x).
S.scaled_modified_bessel_k1 = elementwise("scaled_modified_bessel_k1", k1e_forward, function(x, y, g)
  return g * (y - y / x - S.scaled_modified_bessel_k0(x))
end)

-- ---- the error function's relatives -----------------------------------------------------

-- exp(x^2) erfc(x) in float64. Below 25: erfc (accurate to an ulp down to its underflow near
-- 26.5) times exp(x^2), with x^2 split into hi^2 (hi: x's upper 26 bits, so hi^2 is exact)
-- plus the small rest, so the exponent's rounding does not grow with x^2. From 25: the
-- asymptotic series 1 / (x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k, whose 10th term is
-- below 1e-22 there.
local function erfcx_forward(x)
  local xd = x:clamp(-27, 25)   -- below -26.7 exp(x^2) overflows, as erfcx does
  local c = xd * 134217729      -- 2^27 + 1: Dekker's split
  local hi = c - (c - xd)
  local lo = xd - hi
  local direct = (hi * hi):exp() * ((hi * 2 + lo) * lo):exp() * xd:erfc()
  local xa = x:clamp_min(25)
  local z = (xa * xa * 2):reciprocal()
  local term, sum = ember.ones_like(z), ember.ones_like(z)
  for k = 1, 10 do
    term = term * z * -(2 * k - 1)
    sum = sum + term
  end
  return ember.where(x:lt(25), direct, sum / (xa * SQRT_PI))
end

--- ember.special.erfcx(x) -> exp(x^2) erfc(x), the scaled complementary error function.
S.erfcx = elementwise("erfcx", erfcx_forward, function(x, y, g) return g * (x * y * 2 - 2 / SQRT_PI) end)

-- log(ndtr(x)) in float64 as PyTorch writes it: below -1 from erfcx (ndtr underflows there),
-- above from log1p (ndtr is near 1)
local function log_ndtr_forward(x)
  local t = x * SQRT1_2
  local left = (erfcx_forward(-t) * 0.5):log() - t * t
  local right = (t:erfc() * -0.5):log1p()
  return ember.where(x:lt(-1), left, right)
end

--- ember.special.ndtr(x) -> the standard normal distribution function, erfc(-x / sqrt 2) / 2.
function S.ndtr(x)
  x = as_float(x, "ndtr")
  return (x * -SQRT1_2):erfc() * 0.5
end

--- ember.special.log_ndtr(x) -> log(ndtr(x)), accurate far into both tails.
S.log_ndtr = elementwise("log_ndtr", log_ndtr_forward, function(x, y, g)
  return g * (y + x:square() * 0.5):neg():exp() / SQRT_2PI
end)

-- ndtri in float64: q = min(p, 1 - p) (1 - p is exact for p >= 1/2), a first guess (from
-- erfinv above 1e-3, where 2q - 1 keeps q's digits, else from the tail's asymptotic form
-- q ~ phi(x) / |x|), then Newton's steps on log(ndtr(x)) = log(q), concave, so they
-- converge from any start, quadratically: four reach double precision from either guess.
local function ndtri_forward(p)
  local q = ember.minimum(p, 1 - p)
  local valid = q:gt(0)   -- false for q = 0, for p outside [0, 1] and for NaN
  local qs = ember.where(valid, q, 0.25)
  local central = (qs * 2 - 1):erfinv() * math.sqrt(2)
  local t = qs:clamp_max(1e-3):log() * -2
  local tail = (t - t:log() - math.log(2 * math.pi)):sqrt():neg()
  local x = ember.where(qs:gt(1e-3), central, tail)
  local lq = qs:log()
  for _ = 1, 4 do
    local l = log_ndtr_forward(x)
    x = x - (l - lq) * (x:square() * 0.5 + l):exp() * SQRT_2PI
  end
  x = ember.where(p:gt(0.5), -x, x)
  x = ember.where(p:eq(0), -math.huge, ember.where(p:eq(1), math.huge, x))
  return ember.where(valid:logical_or(p:eq(0)):logical_or(p:eq(1)), x, 0 / 0)
end

--- ember.special.ndtri(p) -> x with ndtr(x) = p: -inf at 0, inf at 1, NaN outside [0, 1].
S.ndtri = elementwise("ndtri", ndtri_forward, function(_, y, g) return g * (y:square() * 0.5):exp() * SQRT_2PI end)

-- ---- entropy and logarithms -------------------------------------------------------------

--- ember.special.entr(x) -> -x log(x); 0 at 0, -inf below 0.
S.entr = elementwise("entr", function(x)
  local v = ember.where(x:gt(0), x * x:log():neg(), ember.where(x:eq(0), 0, -math.huge))
  return ember.where(x:isnan(), x, v)
end, function(x, _, g) return g * x:log():add(1):neg() end)

--- ember.special.xlog1py(x, y) -> x log1p(y), 0 where x == 0 unless y is NaN.
S.xlog1py = binary("xlog1py", function(x, y)
  return ember.where(x:eq(0):logical_and(y:isnan():logical_not()), 0, x * y:log1p())
end, function(x, y, _, g, needs)
  local gx, gy
  if needs[1] then gx = ember.where(x:eq(0):logical_and(y:le(-1)), 0, S.xlog1py(g, y)) end
  if needs[2] then gy = g * x / (y + 1) end
  return gx, gy
end)

-- ---- zeta --------------------------------------------------------------------------------

-- Cephes' zeta (Euler-Maclaurin summation), as PyTorch's: the coefficients (2k)! / B_2k
local ZETA_A = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                1.8152105401943546773e17, -7.1661652561756670113e18}
local MACHEP = 1.11022302462515654042E-16
-- q below this would take more than as many terms (PyTorch loops over them)
local ZETA_MIN_Q = -1e4

-- the Hurwitz zeta function in float64 (x, q broadcast): each element's sum stops where
-- PyTorch's loop returns (a term below MACHEP of the sum), so the values are its own
local function zeta_forward(x, q)
  x, q = ember.broadcast_tensors(x, q)
  local pole = x:eq(1):logical_or(q:le(0):logical_and(q:eq(q:floor())))
  local nan = x:lt(1):logical_or(q:le(0):logical_and(x:ne(x:floor())))
  local bad = pole:logical_or(nan)
  if q:numel() == 0 then return q:clone() end
  local qmin = ember.where(bad, 1, q):min():item()
  if qmin < ZETA_MIN_Q then
    raise(string.format("zeta: q = %g is below %g (its sum would take -q terms)", qmin, ZETA_MIN_Q))
  end
  q = ember.where(bad, 1, q)
  local s = q:pow(-x)
  local a, b = q, ember.zeros_like(s)
  local done = ember.zeros_like(s, {dtype = "bool"})
  -- the terms (q + i)^-x, i = 1, 2, ...: at least 9, and until q + i > 9
  local i = 0
  while true do
    local active = done:logical_not()
    if i >= 9 then
      active = active:logical_and(a:le(9))
      if not active:any():item() then break end
    end
    i = i + 1
    a = ember.where(active, a + 1, a)
    b = ember.where(active, a:pow(-x), b)
    s = ember.where(active, s + b, s)
    done = done:logical_or(active:logical_and(b:gt(s * -MACHEP)):logical_and(b:lt(s * MACHEP)))
  end
  -- the rest of the sum by the Euler-Maclaurin formula, where the terms did not end it
  local w = a
  local open = done:logical_not()
  s = ember.where(open, s + b * w / (x - 1) - b * 0.5, s)
  local f, k = ember.ones_like(s), 0
  for _, A in ipairs(ZETA_A) do
    f = f * (x + k)
    b = b / w
    local t = f * b / A
    s = ember.where(open, s + t, s)
    open = open:logical_and((t / s):abs():ge(MACHEP))
    k = k + 1
    f = f * (x + k)
    b = b / w
    k = k + 1
  end
  return ember.where(pole, math.huge, ember.where(nan, 0 / 0, s))
end

--- ember.special.zeta(x, q) -> the Hurwitz zeta function sum over k >= 0 of (k + q)^-x.
S.zeta = binary("zeta", function(x, y) return zeta_forward(x:to("float64"), y:to("float64")):to(x.dtype) end,
                function(x, q, _, g, needs)
  if needs[1] then
    raise("zeta: the gradient with respect to x is not implemented (as in PyTorch); only q has one")
  end
  return nil, g * x:neg() * S.zeta(x + 1, q)
end)

-- ---- the regularized incomplete gamma functions -------------------------------------------
-- P(a, x) = gamma(a, x) / Gamma(a) by its power series where x < a + 1 and Q = 1 - P by its
-- continued fraction (modified Lentz) elsewhere, each where it converges fast and has no
-- cancellation, in float64 (Numerical Recipes' gser / gcf). The iterations run over the whole
-- tensor until every element of the branch has converged (checked every 16), at most
-- 20000: enough for a up to ~1e6 near x = a, where the series needs ~10 sqrt(a) terms.

local IG_EPS, IG_TINY, IG_MAX = 2.0 ^ -53, 1e-300, 20000

-- the converged mask of the elements where active, every 16 iterations (else nil)
local function settled(i, active, done)
  if i % 16 ~= 0 then return false end
  return done:logical_or(active:logical_not()):all():item()
end

-- P(a, x) for x < a + 1 (other elements: any finite value)
local function igamma_series(a, x, active)
  local ap, del = a:clone(), a:reciprocal()
  local sum = del:clone()
  for i = 1, IG_MAX do
    ap:add_(1)
    del = del * x / ap
    sum = sum + del
    if settled(i, active, del:abs():lt(sum:abs() * IG_EPS)) then break end
  end
  return sum
end

-- Q(a, x) / (x^a e^-x / Gamma(a)) for x >= a + 1
local function igamma_fraction(a, x, active)
  local b = x + 1 - a
  local c = ember.full_like(x, 1 / IG_TINY)
  local d = b:reciprocal()
  local h = d:clone()
  for i = 1, IG_MAX do
    local an = (a - i) * i
    b = b + 2
    d = an * d + b
    d = ember.where(d:abs():lt(IG_TINY), IG_TINY, d)
    c = b + an / c
    c = ember.where(c:abs():lt(IG_TINY), IG_TINY, c)
    d = d:reciprocal()
    local del = d * c
    h = h * del
    if settled(i, active, (del - 1):abs():lt(IG_EPS)) then break end
  end
  return h
end

-- P(a, x) (upper false) or Q(a, x) in float64, with PyTorch's values where a or x is 0, inf,
-- negative or NaN
local function igamma_forward(a, x, upper)
  a, x = ember.broadcast_tensors(a:to("float64"), x:to("float64"))
  local series = x:lt(a + 1)
  -- each branch on stand-ins where the other one applies, so neither meets 0, inf or NaN
  local ok = a:gt(0):logical_and(x:gt(0)):logical_and(a:isfinite()):logical_and(x:isfinite())
  local sa, sx = ember.where(ok, a, 1.0), ember.where(ok, x, 0.5)
  local log_pre = sa * sx:log() - sx - ember.lgamma(sa)
  local pre = log_pre:exp()
  local p_series = igamma_series(sa, ember.where(series, sx, 0.5 * sa), series:logical_and(ok)) * pre
  local fx = ember.where(series, sa + 2, sx)
  local q_fraction = igamma_fraction(sa, fx, series:logical_not():logical_and(ok)) *
                     (sa * fx:log() - fx - ember.lgamma(sa)):exp()
  local p = ember.where(series, p_series, 1 - q_fraction)
  local q = ember.where(series, 1 - p_series, q_fraction)
  local v = upper and q or p
  -- PyTorch's: x = 0 gives P = 0 (a > 0); a = 0 gives P = 1 (x > 0); x = inf gives P = 1;
  -- a = inf gives P = 0 (x finite); negative a or x, both 0, and NaN give NaN
  local zero_p, one_p = upper and 1.0 or 0.0, upper and 0.0 or 1.0
  v = ember.where(x:eq(0):logical_and(a:gt(0)), zero_p, v)
  v = ember.where(a:eq(0):logical_and(x:gt(0)), one_p, v)
  v = ember.where(x:eq(math.huge):logical_and(a:ge(0)):logical_and(a:isfinite()), one_p, v)
  v = ember.where(a:eq(math.huge):logical_and(x:isfinite()):logical_and(x:ge(0)), zero_p, v)
  local bad = a:lt(0):logical_or(x:lt(0)):logical_or(a:eq(0):logical_and(x:eq(0)))
      :logical_or(a:isnan()):logical_or(x:isnan()):logical_or(a:eq(math.huge):logical_and(x:eq(math.huge)))
  return ember.where(bad, 0 / 0, v)
end

-- d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a); PyTorch has no gradient with respect to a
local function igamma_grad(name, sign)
  return function(a, x, _, g, needs)
    if needs[1] then
      raise(name .. ": the gradient with respect to a (input) is not implemented (as in PyTorch); only x has one")
    end
    return nil, g * ((a - 1) * x:log() - x - ember.lgamma(a)):exp() * sign
  end
end

--- ember.special.gammainc(a, x) -> P(a, x), the regularized lower incomplete gamma function (torch.igamma).
S.gammainc = binary("gammainc", function(a, x) return igamma_forward(a, x, false):to(a.dtype) end,
                    igamma_grad("gammainc", 1))

--- ember.special.gammaincc(a, x) -> Q(a, x) = 1 - P(a, x), the upper one (torch.igammac).
S.gammaincc = binary("gammaincc", function(a, x) return igamma_forward(a, x, true):to(a.dtype) end,
                     igamma_grad("gammaincc", -1))

-- ---- orthogonal polynomials ------------------------------------------------------------------
-- P_n(x) for each element, as PyTorch's (ATen/native/Math.h): n is truncated to an integer
-- (n < 0 gives 0), each family's own values at its special points, the trigonometric forms
-- of the Chebyshev polynomials where PyTorch takes them, and otherwise the three-term
-- recurrence, run over the whole tensor up to the largest n that needs it (an element whose
-- value turns NaN on the way keeps NaN, as PyTorch's loop stops there). In float64, rounded
-- to the inputs' promoted dtype; no gradient (PyTorch has none).

local where = ember.where
local function even(n) return n:remainder(2):eq(0) end

-- the family: arg(x) the polynomial's argument (x, or 2x - 1 for the shifted ones); p1(y) =
-- P_1; step(j, y, p, q) = P_{j+1} from p = P_{j-1}, q = P_j; direct(x, y, n) -> mask, value
-- of the elements whose value needs no recurrence (their special points and closed forms)
local function polynomial(name, arg, p1, step, direct)
  return function(x, n)
    x, n = float_pair("special." .. name, x, n)
    local dtype = x.dtype
    return ember.no_grad(function()
      local X, N = ember.broadcast_tensors(x:to("float64"), n:to("float64"))
      N = where(N:isnan(), -1.0, N:trunc())
      if X:numel() == 0 then return X:to(dtype) end
      local y = arg(X)
      local done, fixed = direct(X, y, N, dtype)
      done = done:logical_or(N:lt(2))
      local v = where(N:eq(0), 1.0, p1(y))
      local loop = done:logical_not()
      if loop:any():item() then
        local maxn = where(loop, N, 0.0):max():item()
        local p, q = ember.ones_like(y), p1(y)
        for j = 1, maxn - 1 do
          local r = step(j, y, p, q)
          local later = N:gt(j + 1)
          v = where(N:eq(j + 1):logical_or(later:logical_and(r:isnan())), r, v)
          p, q = q, r
          if j % 64 == 0 and not loop:logical_and(later):logical_and(r:isnan():logical_not()):any():item() then break end
        end
      end
      v = where(done:logical_and(N:ge(2)), fixed.value, v)
      return where(N:lt(0), 0.0, v):to(dtype)
    end)
  end
end

-- the Chebyshev families' shared recurrence 2y P_j - P_{j-1}
local function cheb_step(_, y, p, q) return y * 2 * q - p end

-- T at |y| = 1: +-1 (-1 for odd n at -1); closed form cos(n acos y) inside, n above limit
local function cheb_t_direct(limit)
  return function(_, y, n)
    local edge, inside = y:abs():eq(1), y:abs():lt(1):logical_and(n:gt(limit))
    local value = where(edge, where(y:gt(0):logical_or(even(n)), 1.0, -1.0), (n * y:acos()):cos())
    return edge:logical_or(inside), {value = value}
  end
end

local function identity(x) return x end
local function shifted(x) return x * 2 - 1 end

--- ember.special.chebyshev_polynomial_t(x, n) -> T_n(x), of the first kind.
S.chebyshev_polynomial_t = polynomial("chebyshev_polynomial_t", identity, identity, cheb_step, cheb_t_direct(6))

-- U: n + 1 at 1, (-1)^n (n + 1) at -1; sin((n + 1) t) / sin t, t = acos y, inside
local function cheb_u_direct(limit, at)
  return function(x, y, n)
    local one, minus = at(x, y)
    local edge, inside = one:logical_or(minus), y:abs():lt(1):logical_and(n:gt(limit))
    local t = y:clamp(-1, 1):acos()
    local closed = where(t:sin():ne(0), ((n + 1) * t):sin() / t:sin(), (n + 1) * ((n + 1) * t):cos() / y)
    local value = where(edge, where(one:logical_or(even(n)), n + 1, -(n + 1)), closed)
    return edge:logical_or(inside), {value = value}
  end
end
local function unshifted_edges(_, y) return y:eq(1), y:eq(-1) end
local function shifted_edges(x) return x:eq(1), x:eq(0) end

--- ember.special.chebyshev_polynomial_u(x, n) -> U_n(x), of the second kind.
S.chebyshev_polynomial_u = polynomial("chebyshev_polynomial_u", identity, function(y) return y * 2 end, cheb_step,
                                      cheb_u_direct(8, unshifted_edges))

-- V: 1 at 1, (-1)^n (2n + 1) at -1; cos((n + 1/2) t) / cos(t / 2) inside (or the -1 value
-- where sin(t / 2) is 1)
local function cheb_v_direct(limit, at)
  return function(x, y, n)
    local one, minus = at(x, y)
    local edge, inside = one:logical_or(minus), y:abs():lt(1):logical_and(n:gt(limit))
    local t = y:clamp(-1, 1):acos()
    local odd_end = where(even(n), 2 * n + 1, -(2 * n + 1))
    local closed = where((t / 2):sin():ne(1), ((n + 0.5) * t):cos() / (t / 2):cos(), odd_end)
    return edge:logical_or(inside), {value = where(edge, where(one, 1.0, odd_end), closed)}
  end
end

--- ember.special.chebyshev_polynomial_v(x, n) -> V_n(x), of the third kind.
S.chebyshev_polynomial_v = polynomial("chebyshev_polynomial_v", identity, function(y) return y * 2 - 1 end,
                                      cheb_step, cheb_v_direct(8, unshifted_edges))

-- W: 2n + 1 at 1, (-1)^n at -1; sin((n + 1/2) t) / sin(t / 2) inside (where cos(t / 2) is 1:
-- PyTorch's unshifted form gives the value at 1 when y > 0, its shifted form (-1)^n)
local function cheb_w_direct(limit, at, shifted_form)
  return function(x, y, n)
    local one, minus = at(x, y)
    local edge, inside = one:logical_or(minus), y:abs():lt(1):logical_and(n:gt(limit))
    local t = y:clamp(-1, 1):acos()
    local sign = where(even(n), 1.0, -1.0)
    local fallback = shifted_form and sign or where(y:gt(0), 2 * n + 1, sign)
    local closed = where((t / 2):cos():ne(1), ((n + 0.5) * t):sin() / (t / 2):sin(), fallback)
    return edge:logical_or(inside), {value = where(edge, where(one, 2 * n + 1, sign), closed)}
  end
end

--- ember.special.chebyshev_polynomial_w(x, n) -> W_n(x), of the fourth kind.
S.chebyshev_polynomial_w = polynomial("chebyshev_polynomial_w", identity, function(y) return y * 2 + 1 end,
                                      cheb_step, cheb_w_direct(8, unshifted_edges, false))

--- ember.special.shifted_chebyshev_polynomial_t(x, n) -> T_n(2x - 1), and _u, _v, _w likewise.
S.shifted_chebyshev_polynomial_t = polynomial("shifted_chebyshev_polynomial_t", shifted, identity, cheb_step,
  function(x, y, n)
    local one, zero = x:eq(1), x:eq(0)
    local edge, inside = one:logical_or(zero), y:abs():lt(1):logical_and(n:gt(6))
    local value = where(one, 1.0, where(zero, where(even(n), 1.0, -1.0), (n * y:clamp(-1, 1):acos()):cos()))
    return edge:logical_or(inside), {value = value}
  end)
S.shifted_chebyshev_polynomial_u = polynomial("shifted_chebyshev_polynomial_u", shifted, function(y) return y * 2 end,
                                              cheb_step, cheb_u_direct(6, shifted_edges))
S.shifted_chebyshev_polynomial_v = polynomial("shifted_chebyshev_polynomial_v", shifted,
                                              function(y) return y * 2 - 1 end, cheb_step, cheb_v_direct(6, shifted_edges))
S.shifted_chebyshev_polynomial_w = polynomial("shifted_chebyshev_polynomial_w", shifted,
                                              function(y) return y * 2 + 1 end, cheb_step,
                                              cheb_w_direct(4, shifted_edges, true))

-- the Hermite polynomials give NaN past n = 512 in float64, 128 in float32, 1024 otherwise
local HERMITE_LIMIT = {float64 = 512, float32 = 128}
local function hermite_direct(_, y, n, dtype)
  local over = n:gt(HERMITE_LIMIT[dtype] or 1024)
  return over, {value = ember.full_like(y, 0 / 0)}
end

--- ember.special.hermite_polynomial_h(x, n) -> H_n(x), the physicists' Hermite polynomial.
S.hermite_polynomial_h = polynomial("hermite_polynomial_h", identity, function(y) return y * 2 end,
                                    function(j, y, p, q) return y * 2 * q - p * (2 * j) end, hermite_direct)

--- ember.special.hermite_polynomial_he(x, n) -> He_n(x), the probabilists' Hermite polynomial.
S.hermite_polynomial_he = polynomial("hermite_polynomial_he", identity, identity,
                                     function(j, y, p, q) return y * q - p * j end, hermite_direct)

--- ember.special.laguerre_polynomial_l(x, n) -> L_n(x), the Laguerre polynomial (1 at x = 0).
S.laguerre_polynomial_l = polynomial("laguerre_polynomial_l", identity, function(y) return 1 - y end,
  function(j, y, p, q) return ((1 - y + 2 * j) * q - p * j) / (j + 1) end,   -- PyTorch's order of operations
  function(x) return x:eq(0), {value = ember.ones_like(x)} end)

--- ember.special.legendre_polynomial_p(x, n) -> P_n(x), the Legendre polynomial.
S.legendre_polynomial_p = polynomial("legendre_polynomial_p", identity, identity,
  function(j, y, p, q) return (y * (2 * j + 1) * q - p * j) / (j + 1) end,
  function(_, y, n)
    local edge = y:abs():eq(1)
    return edge, {value = where(y:gt(0):logical_or(even(n)), 1.0, -1.0)}
  end)

-- ---- spherical Bessel -------------------------------------------------------------------

--- ember.special.spherical_bessel_j0(x) -> sin(x) / x, 1 at 0 and 0 at +-inf.
function S.spherical_bessel_j0(x)
  x = as_float(x, "spherical_bessel_j0")
  local zero, inf = x:eq(0), x:isinf()
  -- the quotient at safe stand-ins for 0 and inf, so its backward makes no NaN there
  local safe = ember.where(zero:logical_or(inf), 1, x)
  return ember.where(zero, 1, ember.where(inf, 0, safe:sin() / safe))
end

-- ---- other names -------------------------------------------------------------------------

-- PyTorch's torch.special names of ember's functions: the same functions
local ALIASES = {
  erf = "erf", erfc = "erfc", erfinv = "erfinv", expm1 = "expm1", exp2 = "exp2", log1p = "log1p",
  logit = "logit", expit = "sigmoid", xlogy = "xlogy", digamma = "digamma", psi = "digamma",
  polygamma = "polygamma", gammaln = "lgamma", sinc = "sinc", round = "round", softmax = "softmax",
  log_softmax = "log_softmax", logsumexp = "logsumexp", multigammaln = "mvlgamma",
}
for name, target in pairs(ALIASES) do S[name] = assert(ember[target], target) end
S.i0 = ember.i0   -- which calls S._i0
S.modified_bessel_i0 = ember.i0
S.modified_bessel_i1 = S.i1

return S
