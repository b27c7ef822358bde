/* safetensors.c — saving and loading checkpoints in the safetensors format.
 *
 * Loading treats the file as hostile: every number in the header is checked
 * against the real file size before anything is allocated from it, so a
 * corrupted or malicious file gives an error, never a crash or a huge
 * allocation. Saving writes a temporary file and renames it, so a crash
 * mid-save leaves the previous checkpoint intact.
 *
 * Tensor bytes are written and read through host copies (em_to_device), so
 * this file touches data pointers of CPU tensors only. */
#include "safetensors.h"
#include "internal.h"

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
/* Integers above 2^53 do not survive cJSON's doubles; no real file needs them. */
#define JSON_INT_MAX 9007199254740992.0

static const em_device HOST = {EM_CPU, 0};

/* Indexed by em_dtype. */
static const char *const st_names[EM_NDTYPES] = {"F32", "F64", "I64", "I32", "U8", "BOOL", "F16", "BF16"};

static int st_dtype(const char *s, em_dtype *out)
{
    for (int d = 0; d < EM_NDTYPES; d++)
        if (strcmp(s, st_names[d]) == 0) { *out = (em_dtype)d; return 0; }
    return -1;
}

/* ---- saving --------------------------------------------------------------- */

static cJSON *json_int(uint64_t v)
{
    /* raw text, so integers print exactly (cJSON's numbers are doubles and
     * large ones would come out as 1e+15, which integer parsers reject) */
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(buf);
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        /* stay below the 2 GB a single write() transfers on Linux */
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t w = write(fd, c, chunk);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
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

/* The folder part of path ("." when there is none), in buf. */
static const char *dir_of(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return ".";
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    if (len >= n) return NULL;
    memcpy(buf, path, len);
    buf[len] = '\0';
    return buf;
}

int em_save_safetensors(const char *path, const char *const *names, em_tensor *const *tensors, int n,
                        const char *const *meta_keys, const char *const *meta_values, int nmeta)
{
    if (!path || !path[0]) return em_set_error("save: empty file name");
    if (n < 0 || nmeta < 0) return em_set_error("save: %s: negative tensor or metadata count", path);
    size_t hlen = 0;
    char *hdr = build_header(path, names, tensors, n, meta_keys, meta_values, nmeta, &hlen);
    if (!hdr) return -1;

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) { free(hdr); return em_set_error("save: %s: out of memory", path); }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(hdr);
        free(tmp);
        return em_set_error("save: %s: cannot create a temporary file beside it: %s", path, strerror(e));
    }
    /* mkstemp makes the file 0600; give it the mode a plain fopen would */
    mode_t mask = umask(0);
    umask(mask);
    const char *what = "write";
    int err = 0;
    if (fchmod(fd, 0666 & ~mask) != 0) { what = "chmod"; err = errno; goto fail; }
    if (write_all(fd, hdr, hlen) != 0) { err = errno; goto fail; }
    for (int i = 0; i < n; i++) {
        em_tensor *h = em_to_device(tensors[i], HOST);
        em_tensor *c = h ? em_contiguous(h) : NULL;
        em_release(h);
        if (!c) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", em_error());
            em_set_error("save: %s: tensor \"%s\": %s", path, names[i], msg);
            close(fd);
            unlink(tmp);
            free(hdr);
            free(tmp);
            return -1;
        }
        size_t nbytes = (size_t)em_numel(c) * em_dtype_size(c->dtype);
        int rc = nbytes ? write_all(fd, em_data_ptr(c), nbytes) : 0;
        err = errno;
        em_release(c);
        if (rc != 0) goto fail;
    }
    if (fsync(fd) != 0) { what = "fsync"; err = errno; goto fail; }
    if (close(fd) != 0) { fd = -1; what = "close"; err = errno; goto fail; }
    fd = -1;
    if (rename(tmp, path) != 0) { what = "rename"; err = errno; goto fail; }
    free(hdr);
    free(tmp);

    /* the rename itself is durable only once the folder is synced */
    char dbuf[4096];
    const char *dir = dir_of(path, dbuf, sizeof dbuf);
    if (dir) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            int rc = fsync(dfd);
            int e = errno;
            close(dfd);
            /* some file systems cannot sync a folder (EINVAL): nothing to do there */
            if (rc != 0 && e != EINVAL && e != ENOTSUP)
                return em_set_error("save: %s: fsync of folder %s: %s", path, dir, strerror(e));
        }
    }
    return 0;
fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
    free(hdr);
    free(tmp);
    return em_set_error("save: %s: %s failed: %s", path, what, strerror(err));
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

/* A JSON number that is a non-negative integer no larger than 2^53:
 * 0, or -1 when it is not a non-negative integer, -2 when it is too large. */
static int json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0) || d != floor(d)) return -1;
    if (d > JSON_INT_MAX) return -2;
    *out = (uint64_t)d;
    return 0;
}

static int parse_entry(const char *path, const cJSON *item, entry *e)
{
    const char *name = item->string;
    e->name = name;
    if (!cJSON_IsObject(item))
        return em_set_error("load: %s: tensor \"%s\": expected an object {dtype, shape, data_offsets}", path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dt)) return em_set_error("load: %s: tensor \"%s\": missing or non-string \"dtype\"", path, name);
    if (st_dtype(dt->valuestring, &e->dtype) != 0)
        return em_set_error("load: %s: tensor \"%s\": unsupported dtype \"%.32s\" (ember reads F32, F64, I64, I32, "
                            "U8, BOOL, F16, BF16)", path, name, dt->valuestring);
    if (!cJSON_IsArray(shape)) return em_set_error("load: %s: tensor \"%s\": missing or non-list \"shape\"", path, name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > EM_MAX_DIMS)
        return em_set_error("load: %s: tensor \"%s\": %d dimensions (ember supports at most %d)", path, name, nd,
                            EM_MAX_DIMS);
    e->ndim = 0;
    uint64_t numel = 1;
    bool overflow = false;
    for (const cJSON *v = shape->child; v; v = v->next) {
        uint64_t s;
        int rc = json_uint(v, &s);
        if (rc == -2)
            return em_set_error("load: %s: tensor \"%s\": shape entry %d (%.17g) is too large", path, name,
                                e->ndim + 1, v->valuedouble);
        if (rc != 0) {
            if (cJSON_IsNumber(v) && v->valuedouble < 0)
                return em_set_error("load: %s: tensor \"%s\": negative dimension %.0f in shape", path, name,
                                    v->valuedouble);
            return em_set_error("load: %s: tensor \"%s\": shape entry %d is not a non-negative integer", path, name,
                                e->ndim + 1);
        }
        e->sizes[e->ndim++] = (int64_t)s;
        if (__builtin_mul_overflow(numel, s, &numel)) overflow = true;
    }
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || json_uint(offs->child, &e->begin) != 0 ||
        json_uint(offs->child->next, &e->end) != 0)
        return em_set_error("load: %s: tensor \"%s\": \"data_offsets\" must be two non-negative integers [begin, end]",
                            path, name);
    if (e->begin > e->end)
        return em_set_error("load: %s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin", path, name,
                            (unsigned long long)e->begin, (unsigned long long)e->end);
    uint64_t nbytes;
    /* a running product that overflows is an error even if a later
     * dimension is 0, as in the reference reader */
    if (overflow || __builtin_mul_overflow(numel, (uint64_t)em_dtype_size(e->dtype), &nbytes))
        return em_set_error("load: %s: tensor \"%s\": shape %s has too many elements", path, name,
                            em_sizes_tmp(e->sizes, e->ndim));
    if (nbytes != e->end - e->begin)
        return em_set_error("load: %s: tensor \"%s\": %s %s needs %llu bytes but data_offsets [%llu, %llu] hold %llu",
                            path, name, dt->valuestring, em_sizes_tmp(e->sizes, e->ndim),
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
static int check_layout(const char *path, entry *es, int n, uint64_t data_len)
{
    entry **order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return em_set_error("load: %s: out of memory", path);
    for (int i = 0; i < n; i++) order[i] = &es[i];
    int rc = 0;
    qsort(order, (size_t)n, sizeof *order, by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
            rc = em_set_error("load: %s: tensor \"%s\" appears twice in the header", path, order[i]->name);
            goto done;
        }
    qsort(order, (size_t)n, sizeof *order, by_offset);
    uint64_t expect = 0;
    for (int i = 0; i < n; i++) {
        const entry *e = order[i];
        if (e->end > data_len) {
            rc = em_set_error("load: %s: truncated file: tensor \"%s\" ends at byte %llu of the data section, "
                              "which has %llu bytes", path, e->name, (unsigned long long)e->end,
                              (unsigned long long)data_len);
            goto done;
        }
        if (e->begin < expect) {
            rc = em_set_error("load: %s: tensor \"%s\" (bytes %llu to %llu) overlaps the previous tensor \"%s\"",
                              path, e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                              order[i - 1]->name);
            goto done;
        }
        if (e->begin > expect) {
            rc = em_set_error("load: %s: a hole in the data section: bytes %llu to %llu belong to no tensor "
                              "(next is \"%s\")", path, (unsigned long long)expect, (unsigned long long)e->begin,
                              e->name);
            goto done;
        }
        expect = e->end;
    }
    if (expect != data_len)
        rc = em_set_error("load: %s: the data section has %llu bytes but the tensors cover %llu", path,
                          (unsigned long long)data_len, (unsigned long long)expect);
done:
    free(order);
    return rc;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int read_exact(FILE *f, void *p, size_t n)
{
    return fread(p, 1, n, f) == n ? 0 : -1;
}

em_checkpoint *em_load_safetensors(const char *path)
{
    if (!path || !path[0]) return em_set_error("load: empty file name"), NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return em_set_error("load: %s: %s", path, strerror(errno)), NULL;
    char *hdr = NULL;
    cJSON *root = NULL;
    entry *es = NULL;
    em_checkpoint *c = NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) { em_set_error("load: %s: %s", path, strerror(errno)); goto fail; }
    if (S_ISDIR(st.st_mode)) { em_set_error("load: %s: is a directory", path); goto fail; }
    uint64_t fsize = (uint64_t)st.st_size;
    unsigned char lenbuf[8];
    if (fsize < 8 || read_exact(f, lenbuf, 8) != 0) {
        em_set_error("load: %s: truncated file (%llu bytes; a safetensors file starts with an 8-byte header "
                     "length)", path, (unsigned long long)fsize);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | lenbuf[i];
    if (hlen > HEADER_MAX) {
        em_set_error("load: %s: header length %llu is larger than the 100000000-byte limit (not a safetensors "
                     "file?)", path, (unsigned long long)hlen);
        goto fail;
    }
    if (hlen > fsize - 8) {
        em_set_error("load: %s: truncated file (header says %llu bytes, file has %llu after the length)", path,
                     (unsigned long long)hlen, (unsigned long long)(fsize - 8));
        goto fail;
    }
    if (hlen < 2) { em_set_error("load: %s: header of %llu bytes is too short", path, (unsigned long long)hlen); goto fail; }
    hdr = malloc(hlen + 1);
    if (!hdr) { em_set_error("load: %s: out of memory reading a %llu-byte header", path, (unsigned long long)hlen); goto fail; }
    if (read_exact(f, hdr, hlen) != 0) {
        em_set_error("load: %s: read error in the header: %s", path, ferror(f) ? strerror(errno) : "file shrank");
        goto fail;
    }
    hdr[hlen] = '\0';
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
    if (!root) {
        size_t at = cJSON_GetErrorPtr() && cJSON_GetErrorPtr() >= hdr ? (size_t)(cJSON_GetErrorPtr() - hdr) : 0;
        em_set_error("load: %s: the header is not valid JSON (error near byte %zu)", path, at);
        goto fail;
    }
    for (const char *p = end; p && p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            em_set_error("load: %s: unexpected bytes after the JSON header (at byte %zu)", path, (size_t)(p - hdr));
            goto fail;
        }
    if (!cJSON_IsObject(root)) { em_set_error("load: %s: the header is not a JSON object", path); goto fail; }

    int n = 0, nmeta = 0;
    const cJSON *meta = NULL;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (meta) { em_set_error("load: %s: \"__metadata__\" appears twice", path); goto fail; }
            meta = it;
        } else {
            n++;
        }
    }
    if (meta) {
        if (!cJSON_IsObject(meta)) { em_set_error("load: %s: \"__metadata__\" is not an object", path); goto fail; }
        for (const cJSON *it = meta->child; it; it = it->next) {
            if (!cJSON_IsString(it)) {
                em_set_error("load: %s: metadata \"%s\" is not a string", path, it->string);
                goto fail;
            }
            nmeta++;
        }
    }
    es = calloc((size_t)(n ? n : 1), sizeof *es);
    if (!es) { em_set_error("load: %s: out of memory", path); goto fail; }
    int k = 0;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (it == meta) continue;
        if (parse_entry(path, it, &es[k]) != 0) goto fail;
        k++;
    }
    uint64_t data_len = fsize - 8 - hlen;
    if (check_layout(path, es, n, data_len) != 0) goto fail;

    /* from here every size is backed by bytes that exist in the file */
    c = calloc(1, sizeof *c);
    if (!c) { em_set_error("load: %s: out of memory", path); goto fail; }
    c->names = calloc((size_t)(n ? n : 1), sizeof *c->names);
    c->tensors = calloc((size_t)(n ? n : 1), sizeof *c->tensors);
    c->meta_keys = calloc((size_t)(nmeta ? nmeta : 1), sizeof *c->meta_keys);
    c->meta_values = calloc((size_t)(nmeta ? nmeta : 1), sizeof *c->meta_values);
    if (!c->names || !c->tensors || !c->meta_keys || !c->meta_values) {
        em_set_error("load: %s: out of memory", path);
        goto fail;
    }
    if (meta) {
        for (const cJSON *it = meta->child; it; it = it->next) {
            int i = c->nmeta;
            c->meta_keys[i] = dup_str(it->string);
            c->meta_values[i] = dup_str(it->valuestring);
            c->nmeta++;
            if (!c->meta_keys[i] || !c->meta_values[i]) { em_set_error("load: %s: out of memory", path); goto fail; }
        }
    }
    for (int i = 0; i < n; i++) {
        const entry *e = &es[i];
        c->n = i + 1;
        c->names[i] = dup_str(e->name);
        if (!c->names[i]) { em_set_error("load: %s: out of memory", path); goto fail; }
        em_tensor *t = em_empty(e->sizes, e->ndim, e->dtype, HOST);
        if (!t) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", em_error());
            em_set_error("load: %s: tensor \"%s\": %s", path, e->name, msg);
            goto fail;
        }
        c->tensors[i] = t;
        size_t nbytes = (size_t)(e->end - e->begin);
        if (nbytes == 0) continue;
        if (fseeko(f, (off_t)(8 + hlen + e->begin), SEEK_SET) != 0 || read_exact(f, em_data_ptr(t), nbytes) != 0) {
            em_set_error("load: %s: tensor \"%s\": read error: %s", path, e->name,
                         ferror(f) ? strerror(errno) : "the file shrank while being read");
            goto fail;
        }
        if (e->dtype == EM_BOOL) {
            /* any non-zero byte is true; store the canonical 1 */
            uint8_t *b = em_data_ptr(t);
            for (size_t j = 0; j < nbytes; j++) b[j] = b[j] != 0;
        }
    }
    fclose(f);
    free(hdr);
    free(es);
    cJSON_Delete(root);
    return c;
fail:
    em_checkpoint_free(c);
    fclose(f);
    free(hdr);
    free(es);
    cJSON_Delete(root);
    return NULL;
}
