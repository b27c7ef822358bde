#!/usr/bin/env python3
"""The polynomials of the float32 GELU in engine/unary_math.h, fitted again.

Run with numpy and mpmath (scripts/bench/torch-python has both):
    scripts/bench/torch-python scripts/fit_normal_polys.py
Prints each table as C, with its largest error on a grid three times finer
than the fit's nodes, measured in 40-digit arithmetic.

- Q11, Q14: Phi(-a) = exp(-a^2 / 2) t Q(t), t = 1 / (1 + a / 4), a in [0, 20];
  least squares weighted for relative error at 600 Chebyshev nodes in t.
- P13: Phi(x) = 1/2 + x P(s), s = x^2 / 9, |x| <= 3; G15: Phi(x) + x phi(x)
  = 1/2 + x G(s). Least squares in a Chebyshev basis at 800 nodes in s,
  weighted for the absolute error of x P(s), then converted to powers of s.
"""
import numpy as np
import mpmath as mp
from numpy.polynomial import Chebyshev

mp.mp.dps = 40


def cheb_nodes(lo, hi, n):
    k = np.arange(n)
    return 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (k + 0.5) / n)


def horner(c, v):
    r = mp.mpf(0)
    for x in reversed(c):
        r = r * v + mp.mpf(float(x))
    return r


def tail_q(deg, a_max=20.0, n=600):
    t_lo = 1 / (1 + a_max / 4)
    tn = cheb_nodes(t_lo, 1.0, n)

    def q(t):
        z = 4 * (1 / mp.mpf(t) - 1) / mp.sqrt(2)
        return 0.5 * mp.erfc(z) * mp.exp(z * z) / t
    qn = np.array([float(q(t)) for t in tn])
    v = np.vander(tn, deg + 1, increasing=True) / qn[:, None]
    c, *_ = np.linalg.lstsq(v, np.ones(n), rcond=None)
    grid = np.linspace(t_lo, 1.0, 3 * n)
    err = max(abs(horner(c, mp.mpf(t)) / q(t) - 1) for t in grid)
    return c, float(err), "relative"


def near(deg, fn, b=3.0, n=800):
    sn = cheb_nodes(0.0, 1.0, n)
    w = b * np.sqrt(sn) + 1e-3
    f = Chebyshev.fit(sn, np.array([float(fn(s)) for s in sn]), deg, domain=[0, 1], w=w)
    c = f.convert(kind=np.polynomial.Polynomial).coef
    grid = np.linspace(0.0, 1.0, 3 * n)
    err = max(abs((horner(c, mp.mpf(s)) - fn(s)) * b * mp.sqrt(mp.mpf(s))) for s in grid)
    return c, float(err), "absolute, of x P(s)"


def p_of_s(s, b=3.0):
    x = b * mp.sqrt(mp.mpf(s))
    return 1 / mp.sqrt(2 * mp.pi) if x == 0 else (mp.ncdf(x) - mp.mpf(0.5)) / x


def g_of_s(s, b=3.0):
    return p_of_s(s, b) + mp.npdf(b * mp.sqrt(mp.mpf(s)))


def emit(name, fit):
    c, err, kind = fit
    print(f"/* largest error {err:.3g} ({kind}) */")
    print(f"static const double {name}[{len(c)}] = {{")
    for i in range(0, len(c), 4):
        print("    " + " ".join(repr(float(x)) + "," for x in c[i:i + 4]))
    print("};")


if __name__ == "__main__":
    emit("um_normal_tail_q11", tail_q(11))
    emit("um_normal_tail_q14", tail_q(14))
    emit("um_normal_near_p13", near(13, p_of_s))
    emit("um_normal_near_g15", near(15, g_of_s))
