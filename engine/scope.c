/* scope.c — the one way to chain engine ops with temporaries: a formula
 * composed of engine ops keeps every intermediate in an em_scope and
 * releases them together at the end. The es_* forms below take operands
 * that may be NULL (an earlier step failed: NULL passes through, the error
 * already set), keep their result in the scope, and so let a formula read
 * as one expression per line and fail once, at em_scope_finish. */
#include "internal.h"

em_tensor *em_scope_keep(em_scope *s, em_tensor *t)
{
    if (!t) return NULL;
    if (s->n == EM_SCOPE_CAP) {
        em_release(t);
        return em_set_error("internal: more than %d temporaries in one formula", EM_SCOPE_CAP), NULL;
    }
    s->t[s->n++] = t;
    return t;
}

void em_scope_drop(em_scope *s)
{
    for (int i = 0; i < s->n; i++) em_release(s->t[i]);
    s->n = 0;
}

em_tensor *em_scope_finish(em_scope *s, em_tensor *r)
{
    if (r) em_retain(r);
    em_scope_drop(s);
    return r;
}

em_tensor *es_binary(em_scope *s, em_binary_op op, const em_tensor *a, const em_tensor *b)
{
    return a && b ? em_scope_keep(s, ei_binary(op, a, b)) : NULL;
}

em_tensor *es_add(em_scope *s, const em_tensor *a, const em_tensor *b) { return es_binary(s, EM_ADD, a, b); }
em_tensor *es_sub(em_scope *s, const em_tensor *a, const em_tensor *b) { return es_binary(s, EM_SUB, a, b); }
em_tensor *es_mul(em_scope *s, const em_tensor *a, const em_tensor *b) { return es_binary(s, EM_MUL, a, b); }
em_tensor *es_div(em_scope *s, const em_tensor *a, const em_tensor *b) { return es_binary(s, EM_DIV, a, b); }

em_tensor *es_scalar(em_scope *s, em_binary_op op, const em_tensor *a, double x)
{
    return es_scalar_ex(s, op, a, x, false, false);
}

em_tensor *es_scalar_ex(em_scope *s, em_binary_op op, const em_tensor *a, double x, bool x_is_int, bool x_first)
{
    return a ? em_scope_keep(s, ei_binary_scalar(op, a, x, x_is_int, x_first)) : NULL;
}

em_tensor *es_unary(em_scope *s, em_unary_op op, const em_tensor *a)
{
    return a ? em_scope_keep(s, ei_unary(op, a)) : NULL;
}

em_tensor *es_matmul(em_scope *s, const em_tensor *a, const em_tensor *b)
{
    return a && b ? em_scope_keep(s, ei_matmul(a, b)) : NULL;
}

em_tensor *es_mT(em_scope *s, const em_tensor *a) { return a ? em_scope_keep(s, em_transpose(a, -1, -2)) : NULL; }

em_tensor *es_unsqueeze(em_scope *s, const em_tensor *a, int dim)
{
    return a ? em_scope_keep(s, em_unsqueeze(a, dim)) : NULL;
}

em_tensor *es_narrow(em_scope *s, const em_tensor *a, int dim, int64_t start, int64_t length)
{
    return a ? em_scope_keep(s, em_narrow(a, dim, start, length)) : NULL;
}

em_tensor *es_to(em_scope *s, const em_tensor *a, em_dtype d) { return a ? em_scope_keep(s, em_to_dtype(a, d)) : NULL; }

em_tensor *es_sum(em_scope *s, const em_tensor *a, const int *dims, int ndims, bool keepdim)
{
    return a ? em_scope_keep(s, ei_sum(a, dims, ndims, keepdim)) : NULL;
}
