/* format.c — tostring(t): a tensor printed the way PyTorch 1.13 prints it
 * (torch/_tensor_str.py), so that output can be compared with PyTorch's at a
 * glance. The options are PyTorch's (torch.set_printoptions, here
 * ember.set_printoptions): by default 4 decimals, summarised above 1000
 * elements with 3 edge items per side, lines of 80 columns, scientific
 * notation where the values call for it. Like PyTorch's, they are global to
 * the process.
 *
 * Three steps: a formatter looks at the values that will be shown and
 * decides how every element prints (integer / fixed / scientific, and the
 * common width); an element printer turns one value into its padded text; a
 * recursive row printer lays the elements out in nested brackets. Values are
 * read with em_get_f / em_get_i, which follow any view's strides, so no
 * contiguous copy is made; a device tensor is brought to the host once. */
#include "binding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static emlua_print_options opts = EMLUA_PRINT_OPTIONS_DEFAULT;

/* The longest element text: a float64 in fixed notation (sci_mode = false) has
 * up to 309 digits before the point, then the point and 30 decimals at most. */
enum { TEXT_MAX = 352 };

emlua_print_options emlua_get_print_options(void) { return opts; }
void emlua_set_print_options(emlua_print_options o) { opts = o; }

/* ---- a growing string ---------------------------------------------------- */

/* A plain C buffer rather than luaL_Buffer: the recursive printer is then
 * free to run without keeping the Lua stack balanced around it. */
typedef struct strbuf {
    char *p;
    size_t len, cap;
    bool failed;        /* an allocation failed; the text is incomplete */
} strbuf;

static void sb_add(strbuf *sb, const char *s, size_t n)
{
    if (sb->failed) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + n + 1) cap *= 2;
        char *p = realloc(sb->p, cap);
        if (!p) { sb->failed = true; return; }
        sb->p = p;
        sb->cap = cap;
    }
    memcpy(sb->p + sb->len, s, n);
    sb->len += n;
    sb->p[sb->len] = '\0';
}

static void sb_adds(strbuf *sb, const char *s) { sb_add(sb, s, strlen(s)); }

static void sb_spaces(strbuf *sb, int n)
{
    for (; n > 0; n--) sb_add(sb, " ", 1);
}

/* ---- the formatter ------------------------------------------------------- */

typedef enum value_kind { KIND_BOOL, KIND_INT, KIND_FLOAT } value_kind;

typedef struct formatter {
    value_kind kind;
    bool int_mode;      /* floats whose shown values are all integral: "2." */
    bool sci_mode;      /* floats in scientific notation: "1.0000e+05" */
    int width;          /* every element is right-aligned to this width */
} formatter;

static value_kind kind_of(em_dtype d)
{
    if (d == EM_BOOL) return KIND_BOOL;
    return em_dtype_is_float(d) ? KIND_FLOAT : KIND_INT;
}

/* The text of a float without padding. Non-finite values are spelled as
 * Python spells them (glibc would write "-nan" for a NaN with its sign set). */
static int float_text(const formatter *f, double v, char *buf, size_t n)
{
    if (isnan(v)) return snprintf(buf, n, "nan");
    if (isinf(v)) return snprintf(buf, n, v > 0 ? "inf" : "-inf");
    if (f->sci_mode) return snprintf(buf, n, "%.*e", opts.precision, v);
    if (f->int_mode) return snprintf(buf, n, "%.0f.", v);
    return snprintf(buf, n, "%.*f", opts.precision, v);
}

/* The text of element `linear` (row-major position) without padding. */
static int value_text(const formatter *f, const em_tensor *t, int64_t linear, char *buf, size_t n)
{
    switch (f->kind) {
    case KIND_BOOL: return snprintf(buf, n, "%s", em_get_i(t, linear) ? "True" : "False");
    case KIND_INT: return snprintf(buf, n, "%lld", (long long)em_get_i(t, linear));
    default: return float_text(f, em_get_f(t, linear), buf, n);
    }
}

/* Calls fn on the row-major position of every element that a summarised
 * print shows: along a dim longer than 2 * edgeitems only the first and last
 * edgeitems indices (PyTorch's get_summarized_data). */
typedef void (*visit_fn)(void *ctx, const em_tensor *t, int64_t linear);

static void visit_shown(const em_tensor *t, bool summarize, int dim, int64_t base,
                        visit_fn fn, void *ctx)
{
    if (dim == t->ndim) { fn(ctx, t, base); return; }
    int64_t n = t->sizes[dim];
    bool cut = summarize && n > 2 * opts.edgeitems;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == opts.edgeitems) i = n - opts.edgeitems;
        visit_shown(t, summarize, dim + 1, base * n + i, fn, ctx);
    }
}

/* What the float formatter needs to know about the nonzero finite values. */
typedef struct float_stats {
    bool any;
    bool all_integral;
    double min_abs, max_abs;
} float_stats;

static void gather_float_stats(void *ctx, const em_tensor *t, int64_t linear)
{
    float_stats *s = ctx;
    double v = em_get_f(t, linear);
    if (!isfinite(v) || v == 0) return;
    double a = fabs(v);
    if (!s->any || a < s->min_abs) s->min_abs = a;
    if (!s->any || a > s->max_abs) s->max_abs = a;
    if (v != ceil(v)) s->all_integral = false;
    s->any = true;
}

typedef struct width_ctx {
    formatter *f;
    bool finite_nonzero_only;   /* floats: PyTorch sizes only those */
} width_ctx;

static void widen(void *ctx, const em_tensor *t, int64_t linear)
{
    width_ctx *w = ctx;
    if (w->finite_nonzero_only) {
        double v = em_get_f(t, linear);
        if (!isfinite(v) || v == 0) return;
    }
    char buf[TEXT_MAX];
    int len = value_text(w->f, t, linear, buf, sizeof buf);
    if (len > w->f->width) w->f->width = len;
}

static formatter make_formatter(const em_tensor *t, bool summarize)
{
    formatter f = {kind_of(t->dtype), true, false, 1};
    width_ctx w = {&f, f.kind == KIND_FLOAT};
    if (f.kind == KIND_FLOAT) {
        float_stats s = {false, true, 0, 0};
        visit_shown(t, summarize, 0, 0, gather_float_stats, &s);
        if (!s.any) return f;     /* zeros and non-finite values only: "0.", "nan" */
        f.int_mode = s.all_integral;
        if (opts.sci_mode != EMLUA_SCI_AUTO)
            f.sci_mode = opts.sci_mode == EMLUA_SCI_ON;
        else
            f.sci_mode = s.max_abs / s.min_abs > 1000. || s.max_abs > 1.e8 ||
                         (!f.int_mode && s.min_abs < 1.e-4);
    }
    visit_shown(t, summarize, 0, 0, widen, &w);
    return f;
}

/* ---- the element and row printers ---------------------------------------- */

typedef struct printer {
    const em_tensor *t;
    const formatter *f;
    bool summarize;
    strbuf *sb;
} printer;

static void print_element(const printer *pr, int64_t linear)
{
    char buf[TEXT_MAX];
    int len = value_text(pr->f, pr->t, linear, buf, sizeof buf);
    if (len >= (int)sizeof buf) len = (int)sizeof buf - 1;
    sb_spaces(pr->sb, pr->f->width - len);
    sb_add(pr->sb, buf, (size_t)len);
}

/* The last dim: elements separated by ", ", wrapped so that a line holds as
 * many elements as fit in the line width after the indent. */
static void print_vector(const printer *pr, int64_t base, int indent)
{
    int64_t n = pr->t->sizes[pr->t->ndim - 1];
    bool cut = pr->summarize && n > 2 * opts.edgeitems;
    int64_t shown = cut ? 2 * opts.edgeitems + 1 : n;    /* the "..." counts as one */
    int64_t per_line = (opts.linewidth - indent) / (pr->f->width + 2);
    if (per_line < 1) per_line = 1;

    sb_adds(pr->sb, "[");
    for (int64_t k = 0; k < shown; k++) {
        if (k > 0) {
            if (k % per_line == 0) {
                sb_adds(pr->sb, ",\n");
                sb_spaces(pr->sb, indent + 1);
            } else {
                sb_adds(pr->sb, ", ");
            }
        }
        if (cut && k == opts.edgeitems) { sb_adds(pr->sb, " ..."); continue; }
        int64_t i = cut && k > opts.edgeitems ? n - (shown - k) : k;
        print_element(pr, base * n + i);
    }
    sb_adds(pr->sb, "]");
}

/* Dims dim..ndim-1 of the sub-tensor whose row-major prefix is `base`.
 * Sub-tensors of d dims are separated by "," and d-1 newlines. */
static void print_rows(const printer *pr, int dim, int64_t base, int indent)
{
    const em_tensor *t = pr->t;
    if (dim == t->ndim - 1) { print_vector(pr, base, indent); return; }
    int64_t n = t->sizes[dim];
    bool cut = pr->summarize && n > 2 * opts.edgeitems;
    int sub_dims = t->ndim - dim - 1;

    sb_adds(pr->sb, "[");
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) {
            sb_adds(pr->sb, ",");
            for (int k = 0; k < sub_dims; k++) sb_adds(pr->sb, "\n");
            sb_spaces(pr->sb, indent + 1);
        }
        if (cut && i == opts.edgeitems) {
            sb_adds(pr->sb, "...,");
            for (int k = 0; k < sub_dims; k++) sb_adds(pr->sb, "\n");
            sb_spaces(pr->sb, indent + 1);
            i = n - opts.edgeitems;
        }
        print_rows(pr, dim + 1, base * n + i, indent + 1);
    }
    sb_adds(pr->sb, "]");
}

static void print_body(const em_tensor *t, strbuf *sb, int indent)
{
    bool summarize = (double)em_numel(t) > opts.threshold;
    formatter f = make_formatter(t, summarize);
    printer pr = {t, &f, summarize, sb};
    if (t->ndim == 0) print_element(&pr, 0);
    else print_rows(&pr, 0, 0, indent);
}

/* ---- suffixes ------------------------------------------------------------ */

/* Appends ", suffix", or ",\n<indent>suffix" when it would pass the line width.
 * The column count reproduces PyTorch's _add_suffixes, quirks included. */
static void add_suffix(strbuf *sb, size_t *last_line_len, int indent, const char *suffix)
{
    size_t n = strlen(suffix);
    if (*last_line_len + n + 2 > (size_t)opts.linewidth) {
        sb_adds(sb, ",\n");
        sb_spaces(sb, indent);
        *last_line_len = (size_t)indent + n;
    } else {
        sb_adds(sb, ", ");
        *last_line_len += n + 2;
    }
    sb_adds(sb, suffix);
}

static size_t last_line_length(const strbuf *sb)
{
    const char *nl = sb->p ? strrchr(sb->p, '\n') : NULL;
    /* PyTorch: len(s) - s.rfind('\n') + 1, where rfind gives -1 when absent */
    return nl ? (size_t)(sb->p + sb->len - nl) + 1 : sb->len + 2;
}

/* The "size=(0, 3)" of an empty tensor, as Python prints a tuple. */
static void size_suffix(const em_tensor *t, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "size=(");
    for (int d = 0; d < t->ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, d ? ", %lld" : "%lld", (long long)t->sizes[d]);
    if (len < n) snprintf(buf + len, n - len, t->ndim == 1 ? ",)" : ")");
}

static void print_suffixes(const em_tensor *t, em_device dev, strbuf *sb, int indent)
{
    char buf[320];
    size_t col = last_line_length(sb);
    em_dtype d = t->dtype;
    bool empty = em_numel(t) == 0;
    if (dev.type != EM_CPU) {
        char name[32];
        snprintf(buf, sizeof buf, "device='%s'", em_device_str(dev, name, sizeof name));
        add_suffix(sb, &col, indent, buf);
    }
    if (empty && t->ndim != 1) {
        size_suffix(t, buf, sizeof buf);
        add_suffix(sb, &col, indent, buf);
    }
    /* An empty tensor shows no values to tell int64 from float, so only the
     * default float dtype goes unnamed; otherwise int64 and bool do too. */
    bool implied = empty ? d == em_default_dtype()
                         : d == em_default_dtype() || d == EM_INT64 || d == EM_BOOL;
    if (!implied) {
        snprintf(buf, sizeof buf, "dtype=%s", em_dtype_name(d));
        add_suffix(sb, &col, indent, buf);
    }
    /* As PyTorch: a result of recorded ops names the node that made it
     * (grad_fn=<MulBackward>; ember's node names carry no overload number),
     * a leaf that requires grad says so */
    const char *fn = t->requires_grad ? em_grad_fn_name(t) : NULL;
    if (fn) {
        snprintf(buf, sizeof buf, "grad_fn=<%s>", fn);
        add_suffix(sb, &col, indent, buf);
    } else if (t->requires_grad) {
        add_suffix(sb, &col, indent, "requires_grad=True");
    }
}

/* ---- entry points -------------------------------------------------------- */

void emlua_format_tensor(lua_State *L, const em_tensor *t)
{
    static const char prefix[] = "tensor(";
    const int indent = (int)sizeof prefix - 1;
    em_device dev = t->storage->device;
    em_tensor *host = NULL;
    if (dev.type != EM_CPU) {
        /* one copy, not one per element read */
        host = em_to_device(t, (em_device){EM_CPU, 0});
        if (!host) emlua_fail(L);
    }
    const em_tensor *src = host ? host : t;

    strbuf sb = {NULL, 0, 0, false};
    sb_adds(&sb, prefix);
    if (em_numel(src) == 0) sb_adds(&sb, "[]");
    else print_body(src, &sb, indent);
    print_suffixes(src, dev, &sb, indent);
    sb_adds(&sb, ")");
    em_release(host);

    if (sb.failed) {
        free(sb.p);
        luaL_error(L, "tostring: out of memory while formatting a tensor of shape %s",
                   em_shape_str(t, (char[160]){0}, 160));
        return;
    }
    lua_pushlstring(L, sb.p, sb.len);
    free(sb.p);
}

int emlua_tostring(lua_State *L)
{
    emlua_format_tensor(L, emlua_check(L, 1, "tostring"));
    if (emlua_nan_stop) emlua_nan_poll(L);
    return 1;
}
