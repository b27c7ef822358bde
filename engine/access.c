/* access.c — reading tensor values from the host: single elements (for
 * printing and item()) and whole tensors (tolist). Device tensors are
 * brought to the host first. */
#include "internal.h"

#include <string.h>

/* The element at row-major position `linear` of a CPU view. */
static const char *elem_at(const em_tensor *t, int64_t linear)
{
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t i = linear % t->sizes[d];
        linear /= t->sizes[d];
        off += i * t->strides[d];
    }
    return (const char *)t->storage->data + off * (int64_t)em_dtype_size(t->dtype);
}

static double load_f64(const char *p, em_dtype d)
{
    switch (d) {
    case EM_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case EM_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
    case EM_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case EM_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case EM_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case EM_INT8: return (int8_t)*p;
    case EM_UINT8: return (uint8_t)*p;
    case EM_BOOL: return *p != 0;
    case EM_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return em_half_to_float(v); }
    case EM_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return em_bf16_to_float(v); }
    default: return 0;
    }
}

static int64_t load_i64(const char *p, em_dtype d)
{
    switch (d) {
    case EM_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case EM_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case EM_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case EM_INT8: return (int8_t)*p;
    case EM_UINT8: return (uint8_t)*p;
    case EM_BOOL: return *p != 0;
    default: return (int64_t)load_f64(p, d);
    }
}

/* A CPU copy of t when it lives elsewhere (new reference). */
static em_tensor *on_host(const em_tensor *t)
{
    if (em_dev(t).type == EM_CPU) return em_retain((em_tensor *)t);
    return em_to_device(t, (em_device){EM_CPU, 0});
}

/* The element at `linear`, read on the host as a double or an int64. */
static void get_elem(const em_tensor *t, int64_t linear, double *f, int64_t *i)
{
    em_tensor *h = on_host(t);
    if (h && f) *f = load_f64(elem_at(h, linear), h->dtype);
    if (h && i) *i = load_i64(elem_at(h, linear), h->dtype);
    em_release(h);
}

double em_get_f(const em_tensor *t, int64_t linear)
{
    double v = 0;
    get_elem(t, linear, &v, NULL);
    return v;
}

int64_t em_get_i(const em_tensor *t, int64_t linear)
{
    int64_t v = 0;
    get_elem(t, linear, NULL, &v);
    return v;
}

/* Every element of t, in row-major order, as doubles (f) or int64s (i). */
static int to_host(const em_tensor *t, double *f, int64_t *i)
{
    em_tensor *h = on_host(t);
    if (!h) return -1;
    int64_t n = em_numel(h);
    if (f && h->dtype == EM_FLOAT64 && em_is_contiguous(h)) memcpy(f, em_data_ptr(h), (size_t)n * 8);
    else if (f) for (int64_t k = 0; k < n; k++) f[k] = load_f64(elem_at(h, k), h->dtype);
    else for (int64_t k = 0; k < n; k++) i[k] = load_i64(elem_at(h, k), h->dtype);
    em_release(h);
    return 0;
}

int em_item(const em_tensor *t, double *out)
{
    int64_t n = em_numel(t);
    if (n != 1)
        return em_set_error("item: a tensor with %lld elements (%s) cannot be converted to a number; "
                            "expected exactly one element", (long long)n, SHAPE(t));
    if (em_check_not_capturing(em_dev(t), "item", "read a value back to the host (an op that needs one: item(), "
                               "a check of index values, a size that depends on values)"))
        return -1;
    return to_host(t, out, NULL);
}

int em_to_host_f64(const em_tensor *t, double *out) { return to_host(t, out, NULL); }
int em_to_host_i64(const em_tensor *t, int64_t *out) { return to_host(t, NULL, out); }
