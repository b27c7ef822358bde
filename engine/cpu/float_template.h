/* float_template.h — naming for the CPU kernels written once for float32
 * and float64 (the *_float.inc files). A .c file includes such a file once
 * per type, with
 *   T    the element type (float, double)
 *   SFX  the suffix of the functions' names (f32, f64)
 * defined before, and the .inc undefines both at its end. FT(pre, post)
 * names pre<SFX>post: FT(bin_, _vs) is bin_f32_vs for float. The file that
 * includes the .inc includes <tgmath.h> rather than <math.h> where the
 * bodies call math functions, so that fmod, pow, log1p and the rest are
 * the type's own (fmodf for float) and each instance compiles to what a
 * body written for its type would; literals in the bodies are cast to T
 * for the same reason (a double constant would widen a float loop). */
#ifndef EMBER_CPU_FLOAT_TEMPLATE_H
#define EMBER_CPU_FLOAT_TEMPLATE_H

#define FT_CAT_(a, b, c) a##b##c
#define FT_CAT(a, b, c) FT_CAT_(a, b, c)
#define FT(pre, post) FT_CAT(pre, SFX, post)

#endif
