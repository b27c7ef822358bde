/* safetensors.c — saving and loading checkpoints in the safetensors format.
 *
 * Loading treats the file as hostile: every number in the header is checked
 * against the real file size before anything is allocated from it, so a
 * corrupted or malicious file gives an error, never a crash or a huge
 * allocation. Saving goes through savefile.h: symbolic links followed, a
 * temporary file renamed over the target (so a crash mid-save leaves the
 * previous checkpoint intact), devices and FIFOs written through.
 *
 * Tensor bytes are written and read through host copies (em_to_device), so
 * this file touches data pointers of CPU tensors only. */
#include "safetensors.h"
#include "internal.h"
#include "mapping.h"
#include "savefile.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c writes host bytes as little-endian data: port it for big-endian hosts"
#endif

/* The reference implementation's limit on the header (MAX_HEADER_SIZE). */
#define HEADER_MAX 100000000ULL
/* From 2^53 on, cJSON's doubles no longer hold every integer (2^53 + 1 reads
 * as 2^53): such numbers are refused, and no real file needs them. */
#define JSON_INT_MAX 9007199254740992.0

static const em_device HOST = {EM_CPU, 0};

/* Indexed by em_dtype. */
static const char *const st_names[EM_NDTYPES] = {"F32", "F64", "I64", "I32", "U8", "BOOL", "F16", "BF16", "I8", "I16"};

static int st_dtype(const char *s, em_dtype *out)
{
    for (int d = 0; d < EM_NDTYPES; d++)
        if (strcmp(s, st_names[d]) == 0) { *out = (em_dtype)d; return 0; }
    return -1;
}

/* ---- saving --------------------------------------------------------------- */

static int save_ordered(const char *path, const char *const *names, em_tensor *const *tensors, int n,
                        const char *const *meta_keys, const char *const *meta_values, int nmeta);

static cJSON *json_int(uint64_t v)
{
    /* raw text, so integers print exactly (cJSON's numbers are doubles and
     * large ones would come out as 1e+15, which integer parsers reject) */
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(buf);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names must be unique: sort a copy of the list (n log n for big models). */
static int check_unique(const char *path, const char *const *names, int n)
{
    if (n < 2) return 0;
    const char **sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted) return em_set_error("save: %s: out of memory", path);
    memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
    int rc = 0;
    for (int i = 1; i < n && rc == 0; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            rc = em_set_error("save: %s: duplicate tensor name \"%s\"", path, sorted[i]);
    free(sorted);
    return rc;
}

/* The length prefix and the JSON header, padded with spaces to a multiple
 * of 8 bytes; NULL with an error on failure. */
static char *build_header(const char *path, const char *const *names, em_tensor *const *tensors, int n,
                          const char *const *meta_keys, const char *const *meta_values, int nmeta,
                          size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) goto oom;
    if (nmeta > 0) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        if (!meta) goto oom;
        for (int i = 0; i < nmeta; i++) {
            if (!meta_keys[i] || !meta_values[i]) {
                em_set_error("save: %s: metadata entry %d has no key or value", path, i + 1);
                goto fail;
            }
            if (cJSON_GetObjectItemCaseSensitive(meta, meta_keys[i])) {
                em_set_error("save: %s: duplicate metadata key \"%s\"", path, meta_keys[i]);
                goto fail;
            }
            if (!cJSON_AddStringToObject(meta, meta_keys[i], meta_values[i])) goto oom;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0]) {
            em_set_error("save: %s: tensor %d has an empty name", path, i + 1);
            goto fail;
        }
        if (strcmp(names[i], "__metadata__") == 0) {
            em_set_error("save: %s: \"__metadata__\" is reserved and cannot name a tensor", path);
            goto fail;
        }
        if (!tensors[i]) {
            em_set_error("save: %s: tensor \"%s\" is missing (NULL)", path, names[i]);
            goto fail;
        }
    }
    if (check_unique(path, names, n) != 0) goto fail;
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        const em_tensor *t = tensors[i];
        uint64_t nbytes = (uint64_t)em_numel(t) * em_dtype_size(t->dtype);
        cJSON *entry = cJSON_CreateObject();
        if (!entry || !cJSON_AddItemToObject(root, names[i], entry)) { cJSON_Delete(entry); goto oom; }
        /* the field order of the reference writer */
        if (!cJSON_AddStringToObject(entry, "dtype", st_names[t->dtype])) goto oom;
        cJSON *shape = cJSON_AddArrayToObject(entry, "shape");
        if (!shape) goto oom;
        for (int d = 0; d < t->ndim; d++) {
            cJSON *v = json_int((uint64_t)t->sizes[d]);
            if (!v || !cJSON_AddItemToArray(shape, v)) { cJSON_Delete(v); goto oom; }
        }
        cJSON *offs = cJSON_AddArrayToObject(entry, "data_offsets");
        if (!offs) goto oom;
        cJSON *b = json_int(offset), *e = json_int(offset + nbytes);
        if (!b || !cJSON_AddItemToArray(offs, b)) { cJSON_Delete(b); cJSON_Delete(e); goto oom; }
        if (!e || !cJSON_AddItemToArray(offs, e)) { cJSON_Delete(e); goto oom; }
        offset += nbytes;
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    root = NULL;
    if (!json) goto oom;
    size_t jl = strlen(json);
    size_t padded = (jl + 7) / 8 * 8;
    if (padded > HEADER_MAX) {
        cJSON_free(json);
        em_set_error("save: %s: the header of %zu bytes is over the 100000000-byte limit of safetensors readers "
                     "(too many tensors)", path, padded);
        return NULL;
    }
    char *hdr = malloc(8 + padded);
    if (!hdr) { cJSON_free(json); goto oom; }
    uint64_t le = padded;                  /* little-endian host, checked above */
    memcpy(hdr, &le, 8);
    memcpy(hdr + 8, json, jl);
    memset(hdr + 8 + jl, ' ', padded - jl);
    cJSON_free(json);
    *len = 8 + padded;
    return hdr;
oom:
    em_set_error("save: %s: out of memory building the header", path);
fail:
    cJSON_Delete(root);
    return NULL;
}

/* The order the reference writer lays tensors out in: larger elements
 * first, so that (the header being padded to 8 bytes) every tensor's data
 * starts at a multiple of its element size, as a mapped load needs to view
 * it in place; within one size, the order given. */
static em_tensor *const *sort_tensors;

static int by_element_size(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    em_tensor *ti = sort_tensors[i], *tj = sort_tensors[j];
    size_t si = ti ? em_dtype_size(ti->dtype) : 0, sj = tj ? em_dtype_size(tj->dtype) : 0;
    if (si != sj) return si > sj ? -1 : 1;
    return (i > j) - (i < j);
}

int em_save_safetensors(const char *path, const char *const *in_names, em_tensor *const *in_tensors, int n,
                        const char *const *meta_keys, const char *const *meta_values, int nmeta)
{
    if (!path || !path[0]) return em_set_error("save: empty file name");
    if (n < 0 || nmeta < 0) return em_set_error("save: %s: negative tensor or metadata count", path);
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    const char **names = malloc((size_t)(n ? n : 1) * sizeof *names);
    em_tensor **tensors = malloc((size_t)(n ? n : 1) * sizeof *tensors);
    if (!order || !names || !tensors) {
        free(order);
        free(names);
        free(tensors);
        return em_set_error("save: %s: out of memory", path);
    }
    for (int i = 0; i < n; i++) order[i] = i;
    sort_tensors = in_tensors;
    qsort(order, (size_t)n, sizeof *order, by_element_size);
    for (int i = 0; i < n; i++) {
        names[i] = in_names[order[i]];
        tensors[i] = in_tensors[order[i]];
    }
    free(order);
    int rc = save_ordered(path, names, tensors, n, meta_keys, meta_values, nmeta);
    free(names);
    free(tensors);
    return rc;
}

static int save_ordered(const char *path, const char *const *names, em_tensor *const *tensors, int n,
                        const char *const *meta_keys, const char *const *meta_values, int nmeta)
{
    size_t hlen = 0;
    char *hdr = build_header(path, names, tensors, n, meta_keys, meta_values, nmeta, &hlen);
    if (!hdr) return -1;
    em_savefile f;
    if (em_savefile_open(&f, "save", path, 0) != 0) { free(hdr); return -1; }
    int rc = em_savefile_write(&f, hdr, hlen);
    free(hdr);
    for (int i = 0; i < n && rc == 0; i++) {
        em_tensor *h = em_to_device(tensors[i], HOST);
        em_tensor *c = h ? em_contiguous(h) : NULL;
        em_release(h);
        if (!c) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", em_error());
            rc = em_set_error("save: %s: tensor \"%s\": %s", path, names[i], msg);
            break;
        }
        size_t nbytes = (size_t)em_numel(c) * em_dtype_size(c->dtype);
        rc = nbytes ? em_savefile_write(&f, em_data_ptr(c), nbytes) : 0;
        em_release(c);
    }
    if (rc != 0) {
        em_savefile_abort(&f);
        return -1;
    }
    return em_savefile_commit(&f);
}

/* ---- loading -------------------------------------------------------------- */

typedef struct entry {
    const char *name;       /* points into the parsed JSON */
    em_dtype dtype;
    int ndim;
    int64_t sizes[EM_MAX_DIMS];
    uint64_t begin, end;
} entry;

void em_checkpoint_free(em_checkpoint *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        if (c->names) free(c->names[i]);
        if (c->tensors) em_release(c->tensors[i]);
    }
    for (int i = 0; i < c->nmeta; i++) {
        if (c->meta_keys) free(c->meta_keys[i]);
        if (c->meta_values) free(c->meta_values[i]);
    }
    free(c->names);
    free(c->tensors);
    free(c->meta_keys);
    free(c->meta_values);
    free(c);
}

/* A JSON number that is a non-negative integer below 2^53:
 * 0, or -1 when it is not a non-negative integer, -2 when it is too large. */
static int json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0) || d != floor(d)) return -1;
    if (d >= JSON_INT_MAX) return -2;
    *out = (uint64_t)d;
    return 0;
}

static int parse_entry(const char *where, const cJSON *item, entry *e)
{
    const char *name = item->string;
    e->name = name;
    if (!cJSON_IsObject(item))
        return em_set_error("%s: tensor \"%s\": expected an object {dtype, shape, data_offsets}", where, name);
    /* cJSON keeps duplicate keys and its lookups see the first: a second
     * "dtype" would be ignored silently. Unknown keys are refused too (a
     * misspelt field is a damaged file, not an extension). */
    int seen[3] = {0, 0, 0};
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    for (const cJSON *f = item->child; f; f = f->next) {
        int k = 0;
        while (k < 3 && strcmp(f->string, fields[k]) != 0) k++;
        if (k == 3)
            return em_set_error("%s: tensor \"%s\": unknown field \"%.64s\" (expected dtype, shape, "
                                "data_offsets)", where, name, f->string);
        if (seen[k]++)
            return em_set_error("%s: tensor \"%s\": field \"%s\" appears twice", where, name, fields[k]);
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dt)) return em_set_error("%s: tensor \"%s\": missing or non-string \"dtype\"", where, name);
    if (st_dtype(dt->valuestring, &e->dtype) != 0)
        return em_set_error("%s: tensor \"%s\": unsupported dtype \"%.32s\" (ember reads F32, F64, I64, I32, "
                            "I16, I8, U8, BOOL, F16, BF16)", where, name, dt->valuestring);
    if (!cJSON_IsArray(shape)) return em_set_error("%s: tensor \"%s\": missing or non-list \"shape\"", where, name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > EM_MAX_DIMS)
        return em_set_error("%s: tensor \"%s\": %d dimensions (ember supports at most %d)", where, name, nd,
                            EM_MAX_DIMS);
    e->ndim = 0;
    uint64_t numel = 1;
    bool overflow = false;
    for (const cJSON *v = shape->child; v; v = v->next) {
        uint64_t s;
        int rc = json_uint(v, &s);
        if (rc == -2)
            return em_set_error("%s: tensor \"%s\": shape entry %d (%.17g) is too large", where, name,
                                e->ndim + 1, v->valuedouble);
        if (rc != 0) {
            if (cJSON_IsNumber(v) && v->valuedouble < 0)
                return em_set_error("%s: tensor \"%s\": negative dimension %.0f in shape", where, name,
                                    v->valuedouble);
            return em_set_error("%s: tensor \"%s\": shape entry %d is not a non-negative integer", where, name,
                                e->ndim + 1);
        }
        e->sizes[e->ndim++] = (int64_t)s;
        if (__builtin_mul_overflow(numel, s, &numel)) overflow = true;
    }
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || json_uint(offs->child, &e->begin) != 0 ||
        json_uint(offs->child->next, &e->end) != 0)
        return em_set_error("%s: tensor \"%s\": \"data_offsets\" must be two non-negative integers [begin, end]",
                            where, name);
    if (e->begin > e->end)
        return em_set_error("%s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin", where, name,
                            (unsigned long long)e->begin, (unsigned long long)e->end);
    uint64_t nbytes;
    /* a running product that overflows is an error even if a later
     * dimension is 0, as in the reference reader */
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)em_dtype_size(e->dtype), &nbytes))
        return em_set_error("%s: tensor \"%s\": shape %s has too many elements", where, name,
                            em_sizes_tmp(e->sizes, e->ndim));
    if (nbytes != e->end - e->begin)
        return em_set_error("%s: tensor \"%s\": %s %s needs %llu bytes but data_offsets [%llu, %llu] hold %llu",
                            where, name, dt->valuestring, em_sizes_tmp(e->sizes, e->ndim),
                            (unsigned long long)nbytes, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)(e->end - e->begin));
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const entry *const *)a)->name, (*(const entry *const *)b)->name);
}

/* The tensors' byte ranges must tile [0, data_len) exactly, as the reference
 * reader requires: no overlap (two tensors sharing bytes), no holes, nothing
 * past the end. Also rejects duplicate names. */
static int check_layout(const char *where, entry *es, int n, uint64_t data_len)
{
    entry **order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return em_set_error("%s: out of memory", where);
    for (int i = 0; i < n; i++) order[i] = &es[i];
    int rc = 0;
    qsort(order, (size_t)n, sizeof *order, by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
            rc = em_set_error("%s: tensor \"%s\" appears twice in the header", where, order[i]->name);
            goto done;
        }
    qsort(order, (size_t)n, sizeof *order, by_offset);
    uint64_t expect = 0;
    for (int i = 0; i < n; i++) {
        const entry *e = order[i];
        if (e->end > data_len) {
            rc = em_set_error("%s: truncated file: tensor \"%s\" ends at byte %llu of the data section, "
                              "which has %llu bytes", where, e->name, (unsigned long long)e->end,
                              (unsigned long long)data_len);
            goto done;
        }
        if (e->begin < expect) {
            rc = em_set_error("%s: tensor \"%s\" (bytes %llu to %llu) overlaps the previous tensor \"%s\"",
                              where, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                              order[i - 1]->name);
            goto done;
        }
        if (e->begin > expect) {
            rc = em_set_error("%s: a hole in the data section: bytes %llu to %llu belong to no tensor "
                              "(next is \"%s\")", where, (unsigned long long)expect, (unsigned long long)e->begin,
                              e->name);
            goto done;
        }
        expect = e->end;
    }
    if (expect != data_len)
        rc = em_set_error("%s: the data section has %llu bytes but the tensors cover %llu", where,
                          (unsigned long long)data_len, (unsigned long long)expect);
done:
    free(order);
    return rc;
}

/* The header's text, before cJSON sees it. JSON strings cannot hold raw
 * control characters, and cJSON decodes "\u0000" into a C string that ends
 * early: the dtype "F32\u0000junk" would read as "F32", the name "a\u0000b"
 * as "a". So: no byte below 0x20 except whitespace between tokens, valid
 * UTF-8 (as the reference reader requires), and no \u0000 escape. A string
 * holding one is shown as written, with its role in the header (tensor name,
 * dtype, metadata key...), found from the nesting depth and the key before
 * it. */
static bool raw_is(const unsigned char *h, size_t at, size_t end, const char *word)
{
    size_t n = strlen(word);
    return end - at == n + 1 && memcmp(h + at + 1, word, n) == 0;
}

static int nul_error(const char *where, const unsigned char *h, size_t n, size_t at, size_t end, size_t nul,
                     int depth, bool in_meta, bool after_dtype)
{
    size_t after = end + 1;
    while (after < n && (h[after] == ' ' || h[after] == '\t' || h[after] == '\n' || h[after] == '\r')) after++;
    bool key = after < n && h[after] == ':';
    const char *role = "string";
    if (depth == 1 && key) role = "tensor name";
    else if (depth == 2 && in_meta) role = key ? "metadata key" : "metadata value";
    else if (depth == 2 && key) role = "field name";
    else if (depth == 2 && after_dtype) role = "dtype";
    char shown[64];
    size_t k = 0;
    for (size_t j = at; j <= end && j < n && k < 60; j++) shown[k++] = h[j] >= 0x20 && h[j] < 0x7f ? (char)h[j] : '?';
    shown[k] = '\0';
    return em_set_error("%s: %s %s%s holds a NUL character (\\u0000 at byte %zu of the header), which "
                        "tensor names, dtypes and metadata cannot contain", where, role, shown,
                        end + 1 - at > k ? "..." : "", nul);
}

static int check_header_text(const char *where, const unsigned char *h, size_t n)
{
    bool in_str = false, in_meta = false, after_dtype = false, top_is_meta = false;
    int depth = 0;
    size_t str_at = 0, nul = SIZE_MAX, key_at = 0, key_end = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = h[i];
        if (c < 0x20) {
            if (!in_str && (c == '\t' || c == '\n' || c == '\r')) continue;
            return em_set_error("%s: the header has a control byte 0x%02x at byte %zu%s (not valid JSON)",
                                where, c, i, in_str ? ", inside a string" : "");
        }
        if (c >= 0x80) {
            /* one UTF-8 sequence: lead byte, continuation bytes, no overlong
             * forms, no surrogates, nothing past U+10FFFF */
            size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
            uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
            bool ok = c >= 0xc2 && c <= 0xf4 && i + len <= n;
            for (size_t k = 1; ok && k < len; k++) {
                ok = (h[i + k] & 0xc0) == 0x80;
                cp = cp << 6 | (h[i + k] & 0x3f);
            }
            if (ok) ok = !(len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) &&
                         !(len == 4 && (cp < 0x10000 || cp > 0x10ffff));
            if (!ok) return em_set_error("%s: the header is not valid UTF-8 (at byte %zu)", where, i);
            i += len - 1;
            continue;
        }
        if (in_str) {
            if (c == '\\') {
                if (nul == SIZE_MAX && i + 5 < n && h[i + 1] == 'u' && h[i + 2] == '0' && h[i + 3] == '0' &&
                    h[i + 4] == '0' && h[i + 5] == '0')
                    nul = i;
                i++;   /* the escaped character: a quote or backslash there is not special */
            } else if (c == '"') {
                in_str = false;
                if (nul != SIZE_MAX)
                    return nul_error(where, h, n, str_at, i, nul, depth, in_meta, after_dtype);
                key_at = str_at;
                key_end = i;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_str = true;
            str_at = i;
            break;
        case ':':
            /* the string just closed was a key */
            if (depth == 1) top_is_meta = raw_is(h, key_at, key_end, "__metadata__");
            if (depth == 2) after_dtype = raw_is(h, key_at, key_end, "dtype");
            break;
        case ',':
            after_dtype = false;
            break;
        case '{':
        case '[':
            depth++;
            if (depth == 2) in_meta = top_is_meta;
            break;
        case '}':
        case ']':
            depth--;
            after_dtype = false;
            break;
        }
    }
    if (in_str && nul != SIZE_MAX) return nul_error(where, h, n, str_at, n - 1, nul, depth, in_meta, after_dtype);
    return 0;
}

/* The name of a key that appears twice among obj's members, or NULL (also
 * when out of memory: -1 in *oom). */
static const char *duplicate_key(const cJSON *obj, int *oom)
{
    int n = cJSON_GetArraySize(obj);
    *oom = 0;
    if (n < 2) return NULL;
    const char **keys = malloc((size_t)n * sizeof *keys);
    if (!keys) { *oom = -1; return NULL; }
    int k = 0;
    for (const cJSON *it = obj->child; it; it = it->next) keys[k++] = it->string;
    qsort(keys, (size_t)k, sizeof *keys, cmp_str);
    const char *dup = NULL;
    for (int i = 1; i < k && !dup; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0) dup = keys[i];
    free(keys);
    return dup;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* n bytes at offset off of fd: 0, or -1 with errno set (0 when the file
 * ended early) */
static int read_at(int fd, void *p, size_t n, uint64_t off)
{
    unsigned char *b = p;
    while (n > 0) {
        ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = 0;
            return -1;
        }
        b += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* A file whose header has been read and checked against its size: every
 * tensor's bytes lie inside the file, 8 + hlen + begin onwards. */
typedef struct header {
    int fd;
    uint64_t fsize, hlen;
    char *text;
    cJSON *root;
    const cJSON *meta;      /* the "__metadata__" object, or NULL */
    entry *es;              /* n entries in header order */
    int n, nmeta;
} header;

static void header_done(header *h)
{
    if (h->fd >= 0) close(h->fd);
    h->fd = -1;
    free(h->text);
    h->text = NULL;
    free(h->es);
    h->es = NULL;
    cJSON_Delete(h->root);
    h->root = NULL;
}

/* Opens path and reads and checks its header; 0, or -1 with an error
 * "<where>: ..." and nothing held. */
static int read_header(const char *where, const char *path, header *h)
{
    memset(h, 0, sizeof *h);
    h->fd = -1;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
     * below, as is anything that is not a regular file: the header is checked
     * against the file's size) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return em_set_error("%s: %s", where, strerror(errno));
    h->fd = fd;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        em_set_error("%s: %s", where, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) em_set_error("%s: is a directory", where);
        else em_set_error("%s: not a regular file (a safetensors file is read by its size)", where);
        goto fail;
    }
    uint64_t fsize = (uint64_t)st.st_size;
    h->fsize = fsize;
    unsigned char lenbuf[8];
    if (fsize < 8 || read_at(fd, lenbuf, 8, 0) != 0) {
        em_set_error("%s: truncated file (%llu bytes; a safetensors file starts with an 8-byte header "
                     "length)", where, (unsigned long long)fsize);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | lenbuf[i];
    if (hlen > HEADER_MAX) {
        em_set_error("%s: header length %llu is larger than the 100000000-byte limit (not a safetensors "
                     "file?)", where, (unsigned long long)hlen);
        goto fail;
    }
    if (hlen > fsize - 8) {
        em_set_error("%s: truncated file (header says %llu bytes, file has %llu after the length)", where,
                     (unsigned long long)hlen, (unsigned long long)(fsize - 8));
        goto fail;
    }
    if (hlen < 2) { em_set_error("%s: header of %llu bytes is too short", where, (unsigned long long)hlen); goto fail; }
    h->hlen = hlen;
    char *hdr = h->text = malloc(hlen + 1);
    if (!hdr) { em_set_error("%s: out of memory reading a %llu-byte header", where, (unsigned long long)hlen); goto fail; }
    if (read_at(fd, hdr, hlen, 8) != 0) {
        em_set_error("%s: read error in the header: %s", where, errno ? strerror(errno) : "file shrank");
        goto fail;
    }
    hdr[hlen] = '\0';
    if (check_header_text(where, (const unsigned char *)hdr, hlen) != 0) goto fail;
    const char *end = NULL;
    h->root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
    const cJSON *root = h->root;
    if (!root) {
        size_t at = cJSON_GetErrorPtr() && cJSON_GetErrorPtr() >= hdr ? (size_t)(cJSON_GetErrorPtr() - hdr) : 0;
        em_set_error("%s: the header is not valid JSON (error near byte %zu)", where, at);
        goto fail;
    }
    for (const char *p = end; p && p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            em_set_error("%s: unexpected bytes after the JSON header (at byte %zu)", where, (size_t)(p - hdr));
            goto fail;
        }
    if (!cJSON_IsObject(root)) { em_set_error("%s: the header is not a JSON object", where); goto fail; }

    int n = 0, nmeta = 0;
    const cJSON *meta = NULL;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (meta) { em_set_error("%s: \"__metadata__\" appears twice", where); goto fail; }
            meta = it;
        } else {
            n++;
        }
    }
    if (meta) {
        if (!cJSON_IsObject(meta)) { em_set_error("%s: \"__metadata__\" is not an object", where); goto fail; }
        int oom;
        const char *dup = duplicate_key(meta, &oom);
        if (oom) { em_set_error("%s: out of memory", where); goto fail; }
        if (dup) { em_set_error("%s: metadata key \"%s\" appears twice", where, dup); goto fail; }
        for (const cJSON *it = meta->child; it; it = it->next) {
            if (!cJSON_IsString(it)) {
                em_set_error("%s: metadata \"%s\" is not a string", where, it->string);
                goto fail;
            }
            nmeta++;
        }
    }
    h->meta = meta;
    h->n = n;
    h->nmeta = nmeta;
    h->es = calloc((size_t)(n ? n : 1), sizeof *h->es);
    if (!h->es) { em_set_error("%s: out of memory", where); goto fail; }
    int k = 0;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (it == meta) continue;
        if (parse_entry(where, it, &h->es[k]) != 0) goto fail;
        k++;
    }
    if (check_layout(where, h->es, n, fsize - 8 - hlen) != 0) goto fail;
    return 0;
fail:
    header_done(h);
    return -1;
}

/* A checkpoint with the header's names and metadata and no tensors yet;
 * the entries' names then point to its copies (the JSON may go). */
static em_checkpoint *checkpoint_of(const char *where, header *h)
{
    int n = h->n, nmeta = h->nmeta;
    em_checkpoint *c = calloc(1, sizeof *c);
    if (!c) return em_set_error("%s: out of memory", where), NULL;
    c->names = calloc((size_t)(n ? n : 1), sizeof *c->names);
    c->tensors = calloc((size_t)(n ? n : 1), sizeof *c->tensors);
    c->meta_keys = calloc((size_t)(nmeta ? nmeta : 1), sizeof *c->meta_keys);
    c->meta_values = calloc((size_t)(nmeta ? nmeta : 1), sizeof *c->meta_values);
    if (!c->names || !c->tensors || !c->meta_keys || !c->meta_values) goto oom;
    if (h->meta) {
        for (const cJSON *it = h->meta->child; it; it = it->next) {
            int i = c->nmeta;
            c->meta_keys[i] = dup_str(it->string);
            c->meta_values[i] = dup_str(it->valuestring);
            c->nmeta++;
            if (!c->meta_keys[i] || !c->meta_values[i]) goto oom;
        }
    }
    for (int i = 0; i < n; i++) {
        c->n = i + 1;
        c->names[i] = dup_str(h->es[i].name);
        if (!c->names[i]) goto oom;
        h->es[i].name = c->names[i];
    }
    return c;
oom:
    em_set_error("%s: out of memory", where);
    em_checkpoint_free(c);
    return NULL;
}

/* "<where>: tensor "<name>": <the error just set>" */
static void tensor_error(const char *where, const char *name)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", em_error());
    em_set_error("%s: tensor \"%s\": %s", where, name, msg);
}

/* "load: <path>", malloc'd: the start of every message */
static char *where_of(const char *op, const char *path)
{
    size_t n = strlen(op) + strlen(path) + 3;
    char *w = malloc(n);
    if (w) snprintf(w, n, "%s: %s", op, path);
    else em_set_error("%s: %s: out of memory", op, path);
    return w;
}

em_checkpoint *em_load_safetensors(const char *path)
{
    if (!path || !path[0]) return em_set_error("load: empty file name"), NULL;
    char *where = where_of("load", path);
    if (!where) return NULL;
    header h;
    em_checkpoint *c = NULL;
    if (read_header(where, path, &h) != 0) goto fail;
    /* from here every size is backed by bytes that exist in the file */
    c = checkpoint_of(where, &h);
    if (!c) goto fail;
    for (int i = 0; i < h.n; i++) {
        const entry *e = &h.es[i];
        em_tensor *t = em_empty(e->sizes, e->ndim, e->dtype, HOST);
        if (!t) { tensor_error(where, e->name); goto fail; }
        c->tensors[i] = t;
        size_t nbytes = (size_t)(e->end - e->begin);
        if (nbytes == 0) continue;
        if (read_at(h.fd, em_data_ptr(t), nbytes, 8 + h.hlen + e->begin) != 0) {
            em_set_error("%s: tensor \"%s\": read error: %s", where, e->name,
                         errno ? strerror(errno) : "the file shrank while being read");
            goto fail;
        }
        if (e->dtype == EM_BOOL) {
            /* any non-zero byte is true; store the canonical 1 */
            uint8_t *b = em_data_ptr(t);
            for (size_t j = 0; j < nbytes; j++) b[j] = b[j] != 0;
        }
    }
    header_done(&h);
    free(where);
    return c;
fail:
    em_checkpoint_free(c);
    header_done(&h);
    free(where);
    return NULL;
}

/* ---- mapped files (ember.safe_open, ember.load's mmap) -------------------- */

struct em_safe_file {
    em_checkpoint *c;       /* names in header order and metadata; no tensors */
    entry *es;              /* the entries, names pointing into c */
    int *by_name;           /* entry indices sorted by name, for em_safe_find */
    em_mapping *map;        /* the whole file */
    uint64_t data_start;    /* 8 + the header's length */
    bool has_meta;
    char *where;            /* "<op>: <path>" */
};

static const entry *sort_base;

static int by_index_name(const void *a, const void *b)
{
    return strcmp(sort_base[*(const int *)a].name, sort_base[*(const int *)b].name);
}

void em_safe_close(em_safe_file *f)
{
    if (!f) return;
    em_checkpoint_free(f->c);
    free(f->es);
    free(f->by_name);
    em_mapping_release(f->map);   /* tensors made from it keep it mapped */
    free(f->where);
    free(f);
}

em_safe_file *em_safe_open(const char *op, const char *path)
{
    if (!path || !path[0]) return em_set_error("%s: empty file name", op), NULL;
    em_safe_file *f = calloc(1, sizeof *f);
    if (!f) return em_set_error("%s: %s: out of memory", op, path), NULL;
    f->where = where_of(op, path);
    if (!f->where) { free(f); return NULL; }
    header h;
    if (read_header(f->where, path, &h) != 0) goto fail;
    /* the size was checked against every tensor's range just now: what the
     * file holds from here on is the user's to keep (mapping.h) */
    f->c = checkpoint_of(f->where, &h);
    if (!f->c) goto fail;
    f->has_meta = h.meta != NULL;
    f->data_start = 8 + h.hlen;
    f->by_name = malloc((size_t)(h.n ? h.n : 1) * sizeof *f->by_name);
    if (!f->by_name) { em_set_error("%s: out of memory", f->where); goto fail; }
    for (int i = 0; i < h.n; i++) f->by_name[i] = i;
    sort_base = h.es;
    qsort(f->by_name, (size_t)h.n, sizeof *f->by_name, by_index_name);
    f->map = em_mapping_open(h.fd, (size_t)h.fsize, op, path);
    if (!f->map) goto fail;
    f->es = h.es;
    h.es = NULL;
    header_done(&h);
    return f;
fail:
    header_done(&h);
    em_safe_close(f);
    return NULL;
}

const em_checkpoint *em_safe_header(const em_safe_file *f) { return f->c; }

bool em_safe_has_metadata(const em_safe_file *f) { return f->has_meta; }

int em_safe_find(const em_safe_file *f, const char *name)
{
    int lo = 0, hi = f->c->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int cmp = strcmp(f->es[f->by_name[mid]].name, name);
        if (cmp == 0) return f->by_name[mid];
        if (cmp < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

em_tensor *em_safe_tensor(em_safe_file *f, int i)
{
    if (i < 0 || i >= f->c->n) return em_set_error("%s: no tensor %d", f->where, i + 1), NULL;
    const entry *e = &f->es[i];
    uint64_t at = f->data_start + e->begin;
    size_t nbytes = (size_t)(e->end - e->begin);
    const unsigned char *src = em_mapping_data(f->map) + at;
    /* A view needs its first byte at the element size's alignment (the
     * mapping starts on a page; the format does not align the data), and
     * bool bytes that are all 0 or 1 (the engine's true is 1; reading them
     * touches the pages, but bool tensors are masks, seldom large). Any
     * other tensor is copied out of the mapping. */
    bool view = nbytes > 0 && at % em_dtype_size(e->dtype) == 0;
    if (view && e->dtype == EM_BOOL)
        for (size_t j = 0; j < nbytes && view; j++) view = src[j] <= 1;
    em_tensor *t;
    if (view) {
        t = em_tensor_on_mapping(f->map, (size_t)at, e->sizes, e->ndim, e->dtype);
    } else {
        t = em_empty(e->sizes, e->ndim, e->dtype, HOST);
        if (t && nbytes) {
            uint8_t *b = em_data_ptr(t);
            memcpy(b, src, nbytes);
            if (e->dtype == EM_BOOL)
                for (size_t j = 0; j < nbytes; j++) b[j] = b[j] != 0;
        }
    }
    if (!t) tensor_error(f->where, e->name);
    return t;
}

em_checkpoint *em_load_safetensors_mapped(const char *path)
{
    em_safe_file *f = em_safe_open("load", path);
    if (!f) return NULL;
    em_checkpoint *c = f->c;
    for (int i = 0; i < c->n; i++) {
        c->tensors[i] = em_safe_tensor(f, i);
        if (!c->tensors[i]) { em_safe_close(f); return NULL; }
    }
    f->c = NULL;          /* its tensors hold the mapping */
    em_safe_close(f);
    return c;
}
