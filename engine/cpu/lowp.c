/* lowp.c — float16/bfloat16 for the CPU kernels that compute in float32 only
 * (conv, pooling, normalisation, attention): the operands are widened to
 * float32 working copies, the float32 kernel runs, and the outputs are
 * rounded back (to nearest even, by cpu_cast) once at the end, so the result
 * is what the float32 kernel gives on the same rounded inputs, rounded once. */
#include "cpu.h"

bool cpu_is_lowp(const em_tensor *t)
{
    return t && (t->dtype == EM_FLOAT16 || t->dtype == EM_BFLOAT16);
}

bool cpu_any_lowp(const em_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (cpu_is_lowp(ts[i])) return true;
    return false;
}

/* A float32 copy of t (contiguous) when t is float16/bfloat16, else t. An
 * output's copy starts with the output's values too, for kernels that add
 * into it or leave parts of it alone. */
const em_tensor *cpu_widen(cpu_widened *w, const em_tensor *t, bool is_out)
{
    if (!cpu_is_lowp(t) || w->failed) return t;
    if (w->n == CPU_MAX_WIDENED) {
        w->failed = true;
        em_set_error("cpu_widen: more than %d operands", CPU_MAX_WIDENED);
        return t;
    }
    em_tensor *f = em_empty(t->sizes, t->ndim, EM_FLOAT32, em_dev(t));
    if (!f || cpu_cast(f, t)) {
        em_release(f);
        w->failed = true;
        return t;
    }
    w->orig[w->n] = (em_tensor *)t;
    w->wide[w->n] = f;
    w->out[w->n] = is_out;
    w->n++;
    return f;
}

int cpu_narrow(cpu_widened *w, int rc)
{
    if (w->failed && rc == 0) rc = -1;
    for (int i = 0; i < w->n; i++) {
        if (rc == 0 && w->out[i] && cpu_cast(w->orig[i], w->wide[i])) rc = -1;
        em_release(w->wide[i]);
    }
    w->n = 0;
    return rc;
}
