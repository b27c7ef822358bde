/* test_safetensors.c — the safetensors writer and reader: round trips of
 * every dtype and odd shapes, one file compared byte for byte with a
 * hand-written expectation, and hostile files that must give an error (run
 * under the sanitizers to show they never read out of bounds or leak). */
#include "../../engine/ember.h"
#include "../../engine/safetensors.h"
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const em_device CPU = {EM_CPU, 0};
static char dir[64];
static char pathbuf[64 + 320];

static const char *file(const char *name)
{
    snprintf(pathbuf, sizeof pathbuf, "%s/%s", dir, name);
    return pathbuf;
}

static int has(const char *msg, const char *part)
{
    if (strstr(msg, part)) return 1;
    printf("#   expected '%s' in: %s\n", part, msg);
    return 0;
}

/* A tensor filled with bytes i*37+11 (every byte pattern the dtype allows,
 * except bool which gets 0/1). */
static em_tensor *patterned(const int64_t *sizes, int ndim, em_dtype d)
{
    em_tensor *t = em_empty(sizes, ndim, d, CPU);
    if (!t) return NULL;
    size_t nb = (size_t)em_numel(t) * em_dtype_size(d);
    unsigned char *p = em_data_ptr(t);
    for (size_t i = 0; i < nb; i++) p[i] = d == EM_BOOL ? (unsigned char)(i % 3 == 0) : (unsigned char)(i * 37 + 11);
    return t;
}

static int same_bytes(const em_tensor *a, const em_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->sizes[i] != b->sizes[i]) return 0;
    size_t nb = (size_t)em_numel(a) * em_dtype_size(a->dtype);
    return nb == 0 || memcmp(em_data_ptr(a), em_data_ptr(b), nb) == 0;
}

static int find(const em_checkpoint *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0) return i;
    return -1;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}

/* A file with the given length prefix, header text and data_len zero bytes. */
static void write_raw(const char *path, uint64_t hlen, const char *json, size_t data_len)
{
    size_t jl = strlen(json);
    unsigned char *buf = calloc(1, 8 + jl + data_len + 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 8, json, jl);
    write_bytes(path, buf, 8 + jl + data_len);
    free(buf);
}

/* A well-formed length prefix for json, then data_len zero bytes. */
static void write_st(const char *path, const char *json, size_t data_len)
{
    write_raw(path, strlen(json), json, data_len);
}

/* loading path must fail with a message containing part (and "load:") */
static int load_fails(const char *path, const char *part)
{
    em_clear_error();
    em_checkpoint *c = em_load_safetensors(path);
    if (c) {
        printf("#   %s loaded but should have failed (%s)\n", path, part);
        em_checkpoint_free(c);
        return 0;
    }
    return has(em_error(), "load: ") && has(em_error(), part);
}

static int count_temp_files(void)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

/* ---- round trips ---------------------------------------------------------- */

static void round_trip_every_dtype(void)
{
    const char *names[EM_NDTYPES] = {"f32", "f64", "i64", "i32", "u8", "bool", "f16", "bf16", "i8", "i16"};
    em_tensor *ts[EM_NDTYPES];
    int64_t sizes[2] = {3, 5};
    for (int d = 0; d < EM_NDTYPES; d++) ts[d] = patterned(sizes, 2, (em_dtype)d);
    const char *mk[2] = {"format", "epoch"}, *mv[2] = {"pt", "12"};
    CHECK(em_save_safetensors(file("all.safetensors"), names, ts, EM_NDTYPES, mk, mv, 2) == 0);
    em_checkpoint *c = em_load_safetensors(file("all.safetensors"));
    CHECK(c != NULL);
    if (c) {
        CHECK(c->n == EM_NDTYPES);
        for (int d = 0; d < EM_NDTYPES; d++) {
            int i = find(c, names[d]);
            CHECK(i >= 0);
            if (i >= 0) CHECK(same_bytes(c->tensors[i], ts[d]));
        }
        CHECK(c->nmeta == 2);
        for (int i = 0; i < c->nmeta; i++) {
            if (strcmp(c->meta_keys[i], "format") == 0) CHECK(strcmp(c->meta_values[i], "pt") == 0);
            else CHECK(strcmp(c->meta_keys[i], "epoch") == 0 && strcmp(c->meta_values[i], "12") == 0);
        }
    }
    em_checkpoint_free(c);
    for (int d = 0; d < EM_NDTYPES; d++) em_release(ts[d]);
    CHECK(count_temp_files() == 0);
}

static void round_trip_shapes(void)
{
    int64_t s0[1] = {0}, s1[3] = {2, 0, 3}, s2[4] = {2, 1, 3, 2};
    em_tensor *ts[4] = {patterned(NULL, 0, EM_FLOAT64), patterned(s0, 1, EM_FLOAT32), patterned(s1, 3, EM_INT32),
                        patterned(s2, 4, EM_UINT8)};
    const char *names[4] = {"scalar", "empty", "empty3", "four.d"};
    CHECK(em_save_safetensors(file("shapes.safetensors"), names, ts, 4, NULL, NULL, 0) == 0);
    em_checkpoint *c = em_load_safetensors(file("shapes.safetensors"));
    CHECK(c != NULL);
    if (c) {
        CHECK(c->n == 4 && c->nmeta == 0);
        for (int k = 0; k < 4; k++) {
            int i = find(c, names[k]);
            CHECK(i >= 0);
            if (i >= 0) CHECK(same_bytes(c->tensors[i], ts[k]));
        }
        int i = find(c, "scalar");
        if (i >= 0) CHECK(c->tensors[i]->ndim == 0);
    }
    em_checkpoint_free(c);
    for (int k = 0; k < 4; k++) em_release(ts[k]);

    /* no tensors at all is a valid file: "{}" padded */
    CHECK(em_save_safetensors(file("none.safetensors"), NULL, NULL, 0, NULL, NULL, 0) == 0);
    c = em_load_safetensors(file("none.safetensors"));
    CHECK(c != NULL && c->n == 0 && c->nmeta == 0);
    em_checkpoint_free(c);
}

/* transposed, sliced and expanded views are written as their row-major values */
static void round_trip_non_contiguous(void)
{
    double v[6] = {1, 2, 3, 4, 5, 6};
    int64_t sz[2] = {2, 3};
    em_tensor *a = em_from_host(sz, 2, EM_FLOAT32, v, NULL);
    em_tensor *t = em_transpose(a, 0, 1);                  /* [[1,4],[2,5],[3,6]] */
    em_tensor *s = em_slice(a, 1, 0, 3, 2);                /* [[1,3],[4,6]] */
    int64_t ez[2] = {2, 3};
    int64_t one = 3;
    em_tensor *row = em_from_host(&one, 1, EM_INT64, NULL, (int64_t[]){7, 8, 9});
    em_tensor *e = em_expand(row, ez, 2);                  /* [[7,8,9],[7,8,9]] */
    CHECK(t && s && e && !em_is_contiguous(t) && !em_is_contiguous(s) && !em_is_contiguous(e));
    const char *names[3] = {"t", "s", "e"};
    em_tensor *ts[3] = {t, s, e};
    CHECK(em_save_safetensors(file("views.safetensors"), names, ts, 3, NULL, NULL, 0) == 0);
    em_checkpoint *c = em_load_safetensors(file("views.safetensors"));
    CHECK(c != NULL);
    if (c) {
        const float want_t[6] = {1, 4, 2, 5, 3, 6}, want_s[4] = {1, 3, 4, 6};
        const int64_t want_e[6] = {7, 8, 9, 7, 8, 9};
        int it = find(c, "t"), is = find(c, "s"), ie = find(c, "e");
        CHECK(it >= 0 && is >= 0 && ie >= 0);
        if (it >= 0) CHECK(c->tensors[it]->sizes[0] == 3 && memcmp(em_data_ptr(c->tensors[it]), want_t, 24) == 0);
        if (is >= 0) CHECK(c->tensors[is]->sizes[1] == 2 && memcmp(em_data_ptr(c->tensors[is]), want_s, 16) == 0);
        if (ie >= 0) CHECK(c->tensors[ie]->dtype == EM_INT64 && memcmp(em_data_ptr(c->tensors[ie]), want_e, 48) == 0);
    }
    em_checkpoint_free(c);
    em_release(a);
    em_release(t);
    em_release(s);
    em_release(row);
    em_release(e);
}

/* ---- the exact bytes -------------------------------------------------------- */

static void byte_exact_file(void)
{
    /* JSON of 132 bytes padded with 4 spaces to 136 = 0x88; __metadata__
     * first, then the tensors in the order given; data back to back. */
    static const char expected[] =
        "\x88\x00\x00\x00\x00\x00\x00\x00"
        "{\"__metadata__\":{\"k\":\"v\"},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"a\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[8,12]}}    "
        "\x00\x00\x80\x3f" "\x00\x00\x00\xc0"   /* 1.0f, -2.0f */
        "\x07\x00\x00\x00";                     /* int32 7 */
    size_t want = sizeof expected - 1;
    int64_t two = 2;
    em_tensor *b = em_from_host(&two, 1, EM_FLOAT32, (double[]){1.0, -2.0}, NULL);
    em_tensor *a = em_from_host(NULL, 0, EM_INT32, NULL, (int64_t[]){7});
    const char *names[2] = {"b", "a"};
    em_tensor *ts[2] = {b, a};
    const char *mk[1] = {"k"}, *mv[1] = {"v"};
    CHECK(em_save_safetensors(file("exact.safetensors"), names, ts, 2, mk, mv, 1) == 0);
    FILE *f = fopen(file("exact.safetensors"), "rb");
    CHECK(f != NULL);
    if (f) {
        char got[512];
        size_t n = fread(got, 1, sizeof got, f);
        fclose(f);
        CHECK(n == want);
        CHECK(n == want && memcmp(got, expected, want) == 0);
    }
    em_release(a);
    em_release(b);
}

/* ---- saving errors and atomicity -------------------------------------------- */

static void save_errors(void)
{
    int64_t two = 2;
    em_tensor *x = em_zeros(&two, 1, EM_FLOAT32, CPU);
    em_tensor *ts[2] = {x, x};
    const char *dup[2] = {"w", "w"}, *empty[1] = {""}, *reserved[1] = {"__metadata__"};
    CHECK(em_save_safetensors(file("bad.safetensors"), dup, ts, 2, NULL, NULL, 0) != 0);
    CHECK(has(em_error(), "save: ") && has(em_error(), "duplicate tensor name \"w\""));
    CHECK(em_save_safetensors(file("bad.safetensors"), empty, ts, 1, NULL, NULL, 0) != 0);
    CHECK(has(em_error(), "empty name"));
    CHECK(em_save_safetensors(file("bad.safetensors"), reserved, ts, 1, NULL, NULL, 0) != 0);
    CHECK(has(em_error(), "reserved"));
    const char *mk[2] = {"a", "a"}, *mv[2] = {"1", "2"};
    CHECK(em_save_safetensors(file("bad.safetensors"), dup, ts, 1, mk, mv, 2) != 0);
    CHECK(has(em_error(), "duplicate metadata key"));
    CHECK(em_save_safetensors("/nonexistent-ember-dir/x.safetensors", dup, ts, 1, NULL, NULL, 0) != 0);
    CHECK(has(em_error(), "save: /nonexistent-ember-dir/x.safetensors") && has(em_error(), "No such file"));
    CHECK(access(file("bad.safetensors"), F_OK) != 0);
    CHECK(count_temp_files() == 0);
    em_release(x);
}

/* saving over a file replaces it whole; the new file has the usual mode */
static void save_replaces(void)
{
    int64_t n = 4;
    em_tensor *x = em_full(&n, 1, 1.0, EM_FLOAT32, CPU), *y = em_full(&n, 1, 2.0, EM_FLOAT64, CPU);
    const char *nx[1] = {"x"}, *ny[1] = {"y"};
    CHECK(em_save_safetensors(file("re.safetensors"), nx, &x, 1, NULL, NULL, 0) == 0);
    CHECK(em_save_safetensors(file("re.safetensors"), ny, &y, 1, NULL, NULL, 0) == 0);
    em_checkpoint *c = em_load_safetensors(file("re.safetensors"));
    CHECK(c && c->n == 1 && strcmp(c->names[0], "y") == 0 && same_bytes(c->tensors[0], y));
    em_checkpoint_free(c);
    struct stat st;
    mode_t mask = umask(0);
    umask(mask);
    CHECK(stat(file("re.safetensors"), &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));
    CHECK(count_temp_files() == 0);
    em_release(x);
    em_release(y);
}

/* ---- hostile files ---------------------------------------------------------- */

static void hostile_sizes(void)
{
    const char *p = file("h.safetensors");
    write_bytes(p, "\x10\x00\x00", 3);
    CHECK(load_fails(p, "truncated file (3 bytes"));
    write_bytes(p, "", 0);
    CHECK(load_fails(p, "truncated file (0 bytes"));
    write_raw(p, 4096, "{}", 90);
    CHECK(load_fails(p, "truncated file (header says 4096 bytes, file has 92"));
    write_raw(p, (uint64_t)1 << 63, "{}", 0);
    CHECK(load_fails(p, "header length 9223372036854775808 is larger than"));
    write_raw(p, UINT64_MAX, "{}", 0);
    CHECK(load_fails(p, "larger than"));
    write_raw(p, 100000001, "{}", 0);
    CHECK(load_fails(p, "larger than"));
    write_raw(p, 0, "", 0);
    CHECK(load_fails(p, "too short"));
    CHECK(load_fails(file("missing.safetensors"), "No such file"));
    CHECK(load_fails(dir, "directory"));
}

static void hostile_json(void)
{
    const char *p = file("h.safetensors");
    write_st(p, "{\"a\": {\"dtype\": \"F32\", ", 0);
    CHECK(load_fails(p, "not valid JSON"));
    write_st(p, "[1, 2]", 0);
    CHECK(load_fails(p, "not a JSON object"));
    write_st(p, "{} x", 0);
    CHECK(load_fails(p, "unexpected bytes after the JSON header"));
    write_st(p, "{\"a\": 5}", 0);
    CHECK(load_fails(p, "expected an object"));
    write_st(p, "{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "\"dtype\""));
    write_st(p, "{\"__metadata__\": {\"k\": 1}}", 0);
    CHECK(load_fails(p, "metadata \"k\" is not a string"));
    write_st(p, "{\"__metadata__\": [], \"a\": {}}", 0);
    CHECK(load_fails(p, "not an object"));
    /* deep nesting must not blow the stack */
    char *deep = malloc(20003);
    deep[0] = '{';
    memcpy(deep + 1, "\"a\":", 4);
    for (int i = 0; i < 9990; i++) deep[5 + i] = '[';
    deep[9995] = '\0';
    write_st(p, deep, 0);
    free(deep);
    CHECK(load_fails(p, "not valid JSON"));
}

static void hostile_entries(void)
{
    const char *p = file("h.safetensors");
    write_st(p, "{\"a\": {\"dtype\": \"F33\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "unsupported dtype \"F33\""));
    write_st(p, "{\"a\": {\"dtype\": \"U16\", \"shape\": [1], \"data_offsets\": [0, 2]}}", 2);
    CHECK(load_fails(p, "unsupported dtype \"U16\""));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 8);
    CHECK(load_fails(p, "negative dimension -2"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not a non-negative integer"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 8]}}", 8);
    CHECK(load_fails(p, "not a non-negative integer"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": 3, \"data_offsets\": [0, 12]}}", 12);
    CHECK(load_fails(p, "\"shape\""));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1], "
                "\"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "17 dimensions"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8);
    CHECK(load_fails(p, "needs 12 bytes but data_offsets [0, 8] hold 8"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 8);
    CHECK(load_fails(p, "two non-negative integers"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 0]}}", 8);
    CHECK(load_fails(p, "two non-negative integers"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [8, 0]}}", 8);
    CHECK(load_fails(p, "end before they begin"));
    /* 2^32 * 2^32 * 2 overflows 64 bits; so does the product before a zero */
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 2], \"data_offsets\": [0, 0]}}", 0);
    CHECK(load_fails(p, "too many elements"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 0], \"data_offsets\": [0, 0]}}", 0);
    CHECK(load_fails(p, "too many elements"));
    /* 2^62 elements of 8 bytes: the byte count overflows */
    write_st(p, "{\"a\": {\"dtype\": \"F64\", \"shape\": [1125899906842624, 4096], \"data_offsets\": [0, 0]}}", 0);
    CHECK(load_fails(p, "shape [1125899906842624,4096] has too many elements"));
    /* beyond 2^53 JSON numbers are not exact integers any more */
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1e300], \"data_offsets\": [0, 0]}}", 0);
    CHECK(load_fails(p, "shape entry 1 (1.0000000000000001e+300) is too large"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 1e20]}}", 8);
    CHECK(load_fails(p, "two non-negative integers"));
    /* no elements, but strides that would not fit: the allocator refuses */
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [0, 4294967296, 4294967296], \"data_offsets\": [0, 0]}}", 0);
    CHECK(load_fails(p, "too large"));
}

static void hostile_layout(void)
{
    const char *p = file("h.safetensors");
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", 8);
    CHECK(load_fails(p, "truncated file: tensor \"a\" ends at byte 16 of the data section, which has 8"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", 12);
    CHECK(load_fails(p, "overlaps the previous tensor \"a\""));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8);
    CHECK(load_fails(p, "overlaps"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}", 12);
    CHECK(load_fails(p, "a hole in the data section: bytes 4 to 8"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8);
    CHECK(load_fails(p, "a hole in the data section: bytes 0 to 4"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 12);
    CHECK(load_fails(p, "the data section has 12 bytes but the tensors cover 4"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8);
    CHECK(load_fails(p, "appears twice"));
    /* a legal file with the tensors listed out of data order, zero-size ones
     * between, and a length prefix not padded to 8 */
    write_st(p, "{\"b\": {\"dtype\": \"U8\", \"shape\": [3], \"data_offsets\": [4, 7]},"
                " \"z\": {\"dtype\": \"F64\", \"shape\": [0, 5], \"data_offsets\": [4, 4]},"
                " \"a\": {\"dtype\": \"BOOL\", \"shape\": [2, 2], \"data_offsets\": [0, 4]}}", 7);
    em_checkpoint *c = em_load_safetensors(p);
    CHECK(c != NULL);
    if (c) {
        CHECK(c->n == 3 && strcmp(c->names[0], "b") == 0 && strcmp(c->names[2], "a") == 0);
        CHECK(c->tensors[1]->ndim == 2 && c->tensors[1]->sizes[0] == 0 && c->tensors[1]->sizes[1] == 5);
        CHECK(c->tensors[2]->dtype == EM_BOOL && em_numel(c->tensors[2]) == 4);
    }
    em_checkpoint_free(c);
}

/* Strings in the header: cJSON decodes \u0000 into a C string that ends
 * early, so the dtype "F32\u0000" read as F32 (the reported bug). */
static void hostile_strings(void)
{
    const char *p = file("h.safetensors");
    write_st(p, "{\"a\": {\"dtype\": \"F32\\u0000\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "dtype \"F32\\u0000\" holds a NUL character"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\\u0000junk\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "dtype \"F32\\u0000junk\" holds a NUL character"));
    write_st(p, "{\"a\\u0000b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "tensor name \"a\\u0000b\" holds a NUL"));
    write_st(p, "{\"__metadata__\": {\"k\": \"v\\u0000\"}}", 0);
    CHECK(load_fails(p, "metadata value \"v\\u0000\" holds a NUL"));
    write_st(p, "{\"__metadata__\": {\"k\\u0000x\": \"v\"}}", 0);
    CHECK(load_fails(p, "metadata key \"k\\u0000x\" holds a NUL"));
    /* an escaped backslash followed by u0000 is six ordinary characters */
    write_st(p, "{\"a\": {\"dtype\": \"F32\\\\u0000\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "unsupported dtype \"F32\\u0000\""));
    write_st(p, "{\"__metadata__\": {\"k\": \"\\\\u0000\"}}", 0);
    em_checkpoint *c = em_load_safetensors(p);
    CHECK(c && c->nmeta == 1 && strcmp(c->meta_values[0], "\\u0000") == 0);
    em_checkpoint_free(c);
    /* raw control bytes and bad UTF-8 */
    {
        static const char j[] = "{\"a\": {\"dtype\": \"F32\0\", \"shape\": [1], \"data_offsets\": [0, 4]}}";
        unsigned char buf[8 + sizeof j - 1 + 4] = {0};
        buf[0] = sizeof j - 1;
        memcpy(buf + 8, j, sizeof j - 1);
        write_bytes(p, buf, sizeof buf);
        CHECK(load_fails(p, "control byte 0x00 at byte 20, inside a string"));
        /* NUL padding after the JSON instead of spaces */
        static const char k[] = "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}\0\0\0";
        unsigned char buf2[8 + sizeof k - 1 + 4] = {0};
        buf2[0] = sizeof k - 1;
        memcpy(buf2 + 8, k, sizeof k - 1);
        write_bytes(p, buf2, sizeof buf2);
        CHECK(load_fails(p, "control byte 0x00 at byte 61 (not valid JSON)"));
    }
    write_st(p, "{\"a\xff\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not valid UTF-8 (at byte 3)"));
    write_st(p, "{\"a\xc0\x80\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not valid UTF-8"));
    write_st(p, "{\"a\xed\xa0\x80\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not valid UTF-8"));
    write_st(p, "{\"a\xe2\x82\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not valid UTF-8"));
    /* lone surrogate escapes */
    write_st(p, "{\"a\\udc00\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not valid JSON"));
    /* real UTF-8 names are fine */
    write_st(p, "{\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1);
    c = em_load_safetensors(p);
    CHECK(c && c->n == 1 && strcmp(c->names[0], "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5") == 0);
    em_checkpoint_free(c);
}

/* Duplicate keys: cJSON keeps both and its lookups see the first. */
static void hostile_duplicates(void)
{
    const char *p = file("h.safetensors");
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F64\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "tensor \"a\": field \"dtype\" appears twice"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"shape\": [2], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "field \"shape\" appears twice"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "field \"data_offsets\" appears twice"));
    write_st(p, "{\"__metadata__\": {\"k\": \"1\", \"j\": \"2\", \"k\": \"3\"}}", 0);
    CHECK(load_fails(p, "metadata key \"k\" appears twice"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], \"offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "tensor \"a\": unknown field \"offsets\""));
    write_st(p, "{\"a\": {\"dtype\": [\"F32\"], \"shape\": [1], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "non-string \"dtype\""));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": {\"0\": 1}, \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "non-list \"shape\""));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": {\"a\": 0, \"b\": 4}}}", 4);
    CHECK(load_fails(p, "two non-negative integers"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4, 8]}}", 4);
    CHECK(load_fails(p, "two non-negative integers"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [null], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not a non-negative integer"));
    write_st(p, "{\"a\": {\"dtype\": \"F32\", \"shape\": [true], \"data_offsets\": [0, 4]}}", 4);
    CHECK(load_fails(p, "not a non-negative integer"));
    write_st(p, "{\"__metadata__\": {\"k\": {\"nested\": \"x\"}}}", 0);
    CHECK(load_fails(p, "metadata \"k\" is not a string"));
    write_st(p, "{\"__metadata__\": \"x\"}", 0);
    CHECK(load_fails(p, "\"__metadata__\" is not an object"));
    write_st(p, "{\"__metadata__\": {}, \"__metadata__\": {}}", 0);
    CHECK(load_fails(p, "\"__metadata__\" appears twice"));
}

/* Not regular files: a FIFO must not block the reader, a device has no size. */
static void not_regular_files(void)
{
    const char *p = file("fifo.safetensors");
    CHECK(mkfifo(p, 0600) == 0);
    CHECK(load_fails(p, "not a regular file"));
    unlink(p);
    CHECK(load_fails("/dev/null", "load: /dev/null: not a regular file"));
    CHECK(load_fails("/dev/zero", "not a regular file"));
    CHECK(load_fails(dir, "is a directory"));
}

/* A touch of a file: n bytes, no lock. */
static void touch(const char *path)
{
    write_bytes(path, "partial", 7);
}

/* Leftover temporary files of a killed save are removed by the next save of
 * the same path; nothing else is: not other targets' files, not names that
 * only look alike, not directories or links, not a file a live writer holds
 * (its flock). */
static void stale_temp_files(void)
{
    int64_t two = 2;
    em_tensor *x = em_full(&two, 1, 3.0, EM_FLOAT32, CPU);
    const char *names[1] = {"x"};
    char stale1[400], stale2[400], held[400];
    snprintf(stale1, sizeof stale1, "%s", file("s.safetensors.tmp.AbC123"));
    snprintf(stale2, sizeof stale2, "%s", file("s.safetensors.tmp.zzzzzz"));
    snprintf(held, sizeof held, "%s", file("s.safetensors.tmp.HELD00"));
    touch(stale1);
    touch(stale2);
    touch(held);
    static const char *const keep[] = {
        "s.safetensors.tmp.AbC12",   "s.safetensors.tmp.AbC1234", "s.safetensors.tmp.AbC-23",
        "t.safetensors.tmp.AbC123",  "xs.safetensors.tmp.AbC123", "s.safetensors.tmp.AbC123.bak",
        "s.safetensors.tmp.",        "s.safetensors.TMP.AbC123",  "s.safetensor.tmp.AbC123",
    };
    int nkeep = (int)(sizeof keep / sizeof keep[0]);
    for (int i = 0; i < nkeep; i++) touch(file(keep[i]));
    char d[400], l[400], target[400];
    snprintf(d, sizeof d, "%s", file("s.safetensors.tmp.DIRDIR"));
    snprintf(l, sizeof l, "%s", file("s.safetensors.tmp.LINKED"));
    snprintf(target, sizeof target, "%s", file("link-target"));
    CHECK(mkdir(d, 0700) == 0);
    touch(target);
    CHECK(symlink(target, l) == 0);
    /* a live writer: its lock is on another open file description */
    int hfd = open(held, O_RDONLY);
    CHECK(hfd >= 0 && flock(hfd, LOCK_EX) == 0);

    CHECK(em_save_safetensors(file("s.safetensors"), names, &x, 1, NULL, NULL, 0) == 0);
    CHECK(access(stale1, F_OK) != 0);
    CHECK(access(stale2, F_OK) != 0);
    CHECK(access(held, F_OK) == 0);
    for (int i = 0; i < nkeep; i++) {
        if (access(file(keep[i]), F_OK) != 0) printf("#   %s was removed\n", keep[i]);
        CHECK(access(file(keep[i]), F_OK) == 0);
    }
    struct stat st;
    CHECK(stat(d, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(lstat(l, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(access(target, F_OK) == 0);
    em_checkpoint *c = em_load_safetensors(file("s.safetensors"));
    CHECK(c && c->n == 1 && same_bytes(c->tensors[0], x));
    em_checkpoint_free(c);

    /* once its writer is gone (the lock dropped), the next save removes it */
    close(hfd);
    CHECK(em_save_safetensors(file("s.safetensors"), names, &x, 1, NULL, NULL, 0) == 0);
    CHECK(access(held, F_OK) != 0);

    rmdir(d);
    unlink(l);
    unlink(target);
    for (int i = 0; i < nkeep; i++) unlink(file(keep[i]));
    CHECK(count_temp_files() == 0);
    em_release(x);
}

/* every truncation of a good file fails cleanly */
static void every_truncation(void)
{
    int64_t sz[2] = {3, 4};
    em_tensor *a = patterned(sz, 2, EM_FLOAT32), *b = patterned(sz, 1, EM_INT64);
    const char *names[2] = {"a", "b"};
    em_tensor *ts[2] = {a, b};
    CHECK(em_save_safetensors(file("good.safetensors"), names, ts, 2, NULL, NULL, 0) == 0);
    FILE *f = fopen(file("good.safetensors"), "rb");
    unsigned char buf[4096];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    CHECK(n > 8);
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        write_bytes(file("cut.safetensors"), buf, k);
        em_checkpoint *c = em_load_safetensors(file("cut.safetensors"));
        if (c) { bad++; em_checkpoint_free(c); }
    }
    CHECK(bad == 0);
    /* and flipping any byte of the header never crashes (it may still load) */
    for (size_t k = 0; k < n && k < 200; k++) {
        unsigned char save = buf[k];
        buf[k] ^= 0x5a;
        write_bytes(file("cut.safetensors"), buf, n);
        em_checkpoint_free(em_load_safetensors(file("cut.safetensors")));
        buf[k] = save;
    }
    em_release(a);
    em_release(b);
}

static void cleanup(void)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') unlink(file(e->d_name));
    closedir(d);
    rmdir(dir);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/ember-st-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("not ok 1 - mkdtemp failed\n");
        return 1;
    }
    RUN(round_trip_every_dtype);
    RUN(round_trip_shapes);
    RUN(round_trip_non_contiguous);
    RUN(byte_exact_file);
    RUN(save_errors);
    RUN(save_replaces);
    RUN(hostile_sizes);
    RUN(hostile_json);
    RUN(hostile_entries);
    RUN(hostile_layout);
    RUN(hostile_strings);
    RUN(hostile_duplicates);
    RUN(not_regular_files);
    RUN(stale_temp_files);
    RUN(every_truncation);
    cleanup();
    CHECK_DONE();
}
