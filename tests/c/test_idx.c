/* test_idx.c — the IDX reader: every data type, plain and gzip, and the
 * files it must refuse (bad magic, bad dims, truncated, corrupt, hostile
 * sizes) with a message and without a crash. The files are written here byte
 * by byte, independently of the reader. */
#include "../../engine/idx.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- writing test files ---------------------------------------------------- */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (n == 0) return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_byte(buf *b, unsigned v)
{
    unsigned char c = (unsigned char)v;
    put(b, &c, 1);
}

static void put_be(buf *b, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) put_byte(b, (unsigned)(v >> (8 * i)) & 0xff);
}

static void header(buf *b, unsigned type, int ndim, const uint32_t *dims)
{
    put_byte(b, 0);
    put_byte(b, 0);
    put_byte(b, type);
    put_byte(b, (unsigned)ndim);
    for (int i = 0; i < ndim; i++) put_be(b, dims[i], 4);
}

/* Writes b to a new temporary file (gzip-compressed if gz); returns its path
 * in a static slot (a few live at once). */
static const char *write_file(const buf *b, int gz)
{
    static char paths[4][64];
    static int next;
    char *path = paths[next++ & 3];
    strcpy(path, "/tmp/ember_idx_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    if (gz) {
        gzFile f = gzdopen(fd, "wb");
        if (b->n) gzwrite(f, b->p, (unsigned)b->n);
        gzclose(f);
    } else {
        if (b->n && write(fd, b->p, b->n) != (ssize_t)b->n) path[0] = 0;
        close(fd);
    }
    return path;
}

/* Reads b back through a file (plain or gzip), then removes the file. */
static em_tensor *roundtrip(const buf *b, int gz)
{
    const char *path = write_file(b, gz);
    if (!path || !path[0]) return NULL;
    em_tensor *t = em_read_idx(path);
    unlink(path);
    return t;
}

/* The read must fail with a message holding `text` and the op name. */
static int fails_with(const buf *b, int gz, const char *text)
{
    em_clear_error();
    em_tensor *t = roundtrip(b, gz);
    if (t) {
        em_release(t);
        printf("#   expected an error containing '%s', got a tensor\n", text);
        return 0;
    }
    const char *e = em_error();
    if (strncmp(e, "read_idx: /tmp/ember_idx_", 25) != 0 || !strstr(e, text)) {
        printf("#   expected an error containing '%s', got '%s'\n", text, e);
        return 0;
    }
    return 1;
}

static int shape_is(const em_tensor *t, int ndim, const int64_t *sizes)
{
    if (t->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (t->sizes[i] != sizes[i]) return 0;
    return 1;
}

/* ---- the types ------------------------------------------------------------- */

static void test_uint8(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {2, 3};
        header(&b, 0x08, 2, dims);
        unsigned vals[] = {0, 1, 127, 128, 200, 255};
        for (int i = 0; i < 6; i++) put_byte(&b, vals[i]);
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->dtype == EM_UINT8);
            CHECK(shape_is(t, 2, (int64_t[]){2, 3}));
            CHECK(em_is_contiguous(t));
            for (int i = 0; i < 6; i++) CHECK(em_get_i(t, i) == vals[i]);
            em_release(t);
        }
        free(b.p);
    }
}

static void test_int8(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {4};
        header(&b, 0x09, 1, dims);
        unsigned char raw[] = {0x00, 0x7f, 0x80, 0xff};   /* 0, 127, -128, -1 */
        put(&b, raw, 4);
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->dtype == EM_INT32);
            CHECK(em_get_i(t, 0) == 0);
            CHECK(em_get_i(t, 1) == 127);
            CHECK(em_get_i(t, 2) == -128);
            CHECK(em_get_i(t, 3) == -1);
            em_release(t);
        }
        free(b.p);
    }
}

static void test_int16(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {1, 4};
        header(&b, 0x0B, 2, dims);
        put_be(&b, 0x0102, 2);    /* 258 */
        put_be(&b, 0x7fff, 2);    /* 32767 */
        put_be(&b, 0x8000, 2);    /* -32768 */
        put_be(&b, 0xfffe, 2);    /* -2 */
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->dtype == EM_INT32);
            CHECK(shape_is(t, 2, (int64_t[]){1, 4}));
            CHECK(em_get_i(t, 0) == 258);
            CHECK(em_get_i(t, 1) == 32767);
            CHECK(em_get_i(t, 2) == -32768);
            CHECK(em_get_i(t, 3) == -2);
            em_release(t);
        }
        free(b.p);
    }
}

static void test_int32(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {3};
        header(&b, 0x0C, 1, dims);
        put_be(&b, 0x01020304, 4);   /* 16909060 */
        put_be(&b, 0x80000000, 4);   /* INT32_MIN */
        put_be(&b, 0xffffffff, 4);   /* -1 */
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->dtype == EM_INT32);
            CHECK(em_get_i(t, 0) == 16909060);
            CHECK(em_get_i(t, 1) == INT32_MIN);
            CHECK(em_get_i(t, 2) == -1);
            em_release(t);
        }
        free(b.p);
    }
}

static void test_float32(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {2, 1, 2};
        header(&b, 0x0D, 3, dims);
        put_be(&b, 0x3f800000, 4);   /* 1.0 */
        put_be(&b, 0xc0490fdb, 4);   /* -3.14159274 */
        put_be(&b, 0x00000000, 4);   /* 0 */
        put_be(&b, 0x7f800000, 4);   /* inf */
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->dtype == EM_FLOAT32);
            CHECK(shape_is(t, 3, (int64_t[]){2, 1, 2}));
            CHECK(em_get_f(t, 0) == 1.0);
            CHECK(em_get_f(t, 1) == (double)-3.14159274f);
            CHECK(em_get_f(t, 2) == 0.0);
            CHECK(isinf(em_get_f(t, 3)) && em_get_f(t, 3) > 0);
            em_release(t);
        }
        free(b.p);
    }
}

static void test_float64(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {2};
        header(&b, 0x0E, 1, dims);
        put_be(&b, 0x3ff8000000000000ull, 8);   /* 1.5 */
        put_be(&b, 0xbfb999999999999aull, 8);   /* -0.1 */
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->dtype == EM_FLOAT64);
            CHECK(em_get_f(t, 0) == 1.5);
            CHECK(em_get_f(t, 1) == -0.1);
            em_release(t);
        }
        free(b.p);
    }
}

/* More values than the reader's staging buffer and gzip's internal buffer
 * hold, so chunk boundaries are crossed; odd sizes so they fall mid-value. */
static void test_large(void)
{
    const uint32_t n = 300007;
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        header(&b, 0x0B, 1, &n);
        for (uint32_t i = 0; i < n; i++) put_be(&b, (uint16_t)(int16_t)((int32_t)(i * 7919u % 65536u) - 32768), 2);
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(t->sizes[0] == n);
            int bad = 0;
            for (uint32_t i = 0; i < n; i++)
                if (em_get_i(t, i) != (int64_t)(i * 7919u % 65536u) - 32768) bad++;
            CHECK(bad == 0);
            em_release(t);
        }
        free(b.p);
        b = (buf){0};
        header(&b, 0x08, 1, &n);
        for (uint32_t i = 0; i < n; i++) put_byte(&b, i * 31u % 251u);
        t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            int bad = 0;
            for (uint32_t i = 0; i < n; i++)
                if (em_get_i(t, i) != i * 31u % 251u) bad++;
            CHECK(bad == 0);
            em_release(t);
        }
        free(b.p);
    }
}

static void test_empty_dims(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {0, 28, 28};
        header(&b, 0x08, 3, dims);
        em_tensor *t = roundtrip(&b, gz);
        CHECK(t != NULL);
        if (t) {
            CHECK(shape_is(t, 3, (int64_t[]){0, 28, 28}));
            CHECK(em_numel(t) == 0);
            em_release(t);
        }
        /* an empty tensor with data after it is still an error */
        put_byte(&b, 1);
        CHECK(fails_with(&b, gz, "unexpected bytes after the 0 data bytes"));
        free(b.p);
    }
}

/* ---- files that must be refused ---------------------------------------------- */

static void test_bad_magic(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        unsigned char m[] = {0x01, 0x00, 0x08, 0x01, 0, 0, 0, 1, 7};
        put(&b, m, sizeof m);
        CHECK(fails_with(&b, gz, "not an IDX file (magic starts 01 00, expected 00 00)"));
        free(b.p);
        b = (buf){0};
        unsigned char u[] = {0x00, 0x00, 0x0A, 0x01, 0, 0, 0, 1, 7};
        put(&b, u, sizeof u);
        CHECK(fails_with(&b, gz, "unknown IDX data type 0x0a"));
        free(b.p);
    }
}

static void test_bad_ndims(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        header(&b, 0x08, 0, NULL);
        put_byte(&b, 5);
        CHECK(fails_with(&b, gz, "0 dimensions (expected 1..16)"));
        free(b.p);
        b = (buf){0};
        uint32_t dims[17];
        for (int i = 0; i < 17; i++) dims[i] = 1;
        header(&b, 0x08, 17, dims);
        put_byte(&b, 5);
        CHECK(fails_with(&b, gz, "17 dimensions (expected 1..16)"));
        free(b.p);
        b = (buf){0};
        unsigned char m[] = {0, 0, 0x08, 0xff};
        put(&b, m, 4);
        CHECK(fails_with(&b, gz, "255 dimensions"));
        free(b.p);
    }
}

static void test_truncated_header(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        CHECK(fails_with(&b, gz, "truncated header (0 of 4 magic bytes)"));
        put_byte(&b, 0);
        put_byte(&b, 0);
        CHECK(fails_with(&b, gz, "truncated header (2 of 4 magic bytes)"));
        free(b.p);
        b = (buf){0};
        unsigned char m[] = {0, 0, 0x08, 2, 0, 0, 0, 3, 0, 0};
        put(&b, m, sizeof m);
        CHECK(fails_with(&b, gz, "truncated header (6 of 8 size bytes)"));
        free(b.p);
    }
}

static void test_truncated_data(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {10000, 28, 28};
        header(&b, 0x08, 3, dims);
        for (int i = 0; i < 100; i++) put_byte(&b, (unsigned)i);
        /* a gzip file this small cannot inflate to the claim: refused early */
        CHECK(fails_with(&b, gz, gz ? "truncated (expected 7840000 data bytes, but a " : "truncated (expected 7840000 data bytes, got 100)"));
        free(b.p);
        /* a partial last value */
        b = (buf){0};
        uint32_t two = 2;
        header(&b, 0x0C, 1, &two);
        put_be(&b, 1, 4);
        put_be(&b, 2, 2);
        CHECK(fails_with(&b, gz, "truncated (expected 8 data bytes, got 6)"));
        free(b.p);
        b = (buf){0};
        header(&b, 0x0E, 1, &two);
        CHECK(fails_with(&b, gz, "truncated (expected 16 data bytes, got 0)"));
        free(b.p);
    }
}

/* A gzip file cut short: its inflated stream ends early. */
static void test_truncated_gzip_stream(void)
{
    buf b = {0};
    uint32_t dims[] = {200, 100};
    header(&b, 0x08, 2, dims);
    for (int i = 0; i < 20000; i++) put_byte(&b, (unsigned)(i * 2654435761u >> 24));
    const char *path = write_file(&b, 1);
    CHECK(path != NULL);
    if (!path) { free(b.p); return; }
    FILE *f = fopen(path, "rb");
    buf whole = {0};
    unsigned char tmp[4096];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) put(&whole, tmp, r);
    fclose(f);
    CHECK(whole.n > 100);
    /* keep the first half of the compressed bytes */
    f = fopen(path, "wb");
    fwrite(whole.p, 1, whole.n / 2, f);
    fclose(f);
    em_clear_error();
    em_tensor *t = em_read_idx(path);
    CHECK(t == NULL);
    CHECK(strstr(em_error(), "truncated (expected 20000 data bytes, got ") != NULL);
    if (t) em_release(t);
    unlink(path);
    free(whole.p);
    free(b.p);
}

static void test_corrupt_gzip(void)
{
    buf b = {0};
    /* a gzip header (deflate, no flags) followed by an invalid block type */
    unsigned char m[] = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    put(&b, m, sizeof m);
    CHECK(fails_with(&b, 0, "corrupt gzip data"));
    free(b.p);
}

/* b compressed as one gzip member, in memory (deflate with a gzip wrapper) */
static buf gzip_buf(const buf *b)
{
    buf out = {0};
    z_stream zs = {0};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return out;
    out.cap = deflateBound(&zs, b->n) + 64;
    out.p = malloc(out.cap);
    zs.next_in = b->p;
    zs.avail_in = (uInt)b->n;
    zs.next_out = out.p;
    zs.avail_out = (uInt)out.cap;
    deflate(&zs, Z_FINISH);
    out.n = out.cap - zs.avail_out;
    deflateEnd(&zs);
    return out;
}

/* A small valid IDX file (int16 values, so the data crosses deflate blocks
 * only when large; this one is one block) and its gzip form. */
static buf sample_idx(void)
{
    buf b = {0};
    uint32_t dims[] = {7, 5};
    header(&b, 0x0B, 2, dims);
    for (int i = 0; i < 35; i++) put_be(&b, (uint16_t)(i * 977), 2);
    return b;
}

/* The reported bug: a gzip file without its 8-byte trailer (CRC-32 and
 * length) was read as if whole. Every cut of the trailer, and every shorter
 * prefix of the file, must be refused. */
static void test_gzip_without_trailer(void)
{
    buf b = sample_idx();
    buf gz = gzip_buf(&b);
    CHECK(gz.n > 20);
    buf m = {0};
    put(&m, gz.p, gz.n - 8);
    CHECK(fails_with(&m, 0, "truncated or corrupt gzip file: the compressed stream stops before its end"));
    free(m.p);
    for (size_t cut = 1; cut < 8; cut++) {
        m = (buf){0};
        put(&m, gz.p, gz.n - cut);
        CHECK(fails_with(&m, 0, "gzip"));
        free(m.p);
    }
    int bad = 0;
    for (size_t len = 0; len < gz.n; len++) {
        m = (buf){0};
        put(&m, gz.p, len);
        em_clear_error();
        em_tensor *t = roundtrip(&m, 0);
        if (t) {
            printf("#   a %zu-byte prefix of the %zu-byte gzip file loaded\n", len, gz.n);
            em_release(t);
            bad++;
        } else if (strncmp(em_error(), "read_idx: /tmp/ember_idx_", 25) != 0) {
            printf("#   prefix %zu: unexpected message '%s'\n", len, em_error());
            bad++;
        }
        free(m.p);
    }
    CHECK(bad == 0);
    /* and the whole file still loads */
    em_tensor *t = roundtrip(&gz, 0);
    CHECK(t != NULL);
    if (t) {
        CHECK(shape_is(t, 2, (int64_t[]){7, 5}));
        CHECK(em_get_i(t, 34) == (int16_t)(uint16_t)(34 * 977));
        em_release(t);
    }
    free(gz.p);
    free(b.p);
}

/* A damaged trailer: the CRC-32 or the length does not match the data. */
static void test_gzip_bad_trailer(void)
{
    buf b = sample_idx();
    buf gz = gzip_buf(&b);
    gz.p[gz.n - 8] ^= 0x01;   /* CRC-32 */
    CHECK(fails_with(&gz, 0, "corrupt gzip data (incorrect data check)"));
    gz.p[gz.n - 8] ^= 0x01;
    gz.p[gz.n - 1] ^= 0x40;   /* length */
    CHECK(fails_with(&gz, 0, "corrupt gzip data (incorrect length check)"));
    free(gz.p);
    free(b.p);
}

/* Bytes after the gzip stream are refused (zlib's gz* functions skip them);
 * another whole gzip member is not: gzip -c a b > ab is a valid file. */
static void test_gzip_after_the_end(void)
{
    buf b = sample_idx();
    buf gz = gzip_buf(&b);
    buf m = {0};
    put(&m, gz.p, gz.n);
    put(&m, "junk", 4);
    CHECK(fails_with(&m, 0, "unexpected bytes after the end of the gzip data (not another gzip member)"));
    free(m.p);
    m = (buf){0};
    put(&m, gz.p, gz.n);
    put_byte(&m, 0);
    CHECK(fails_with(&m, 0, "unexpected bytes after the end of the gzip data (one stray byte)"));
    free(m.p);
    /* the header in one member, the data in a second, an empty third */
    buf head = {0}, data = {0}, none = {0};
    put(&head, b.p, 12);
    put(&data, b.p + 12, b.n - 12);
    buf g1 = gzip_buf(&head), g2 = gzip_buf(&data), g3 = gzip_buf(&none);
    m = (buf){0};
    put(&m, g1.p, g1.n);
    put(&m, g2.p, g2.n);
    put(&m, g3.p, g3.n);
    em_tensor *t = roundtrip(&m, 0);
    CHECK(t != NULL);
    if (t) {
        CHECK(shape_is(t, 2, (int64_t[]){7, 5}));
        CHECK(em_get_i(t, 1) == 977);
        em_release(t);
    }
    /* a second member cut short is still a cut stream */
    m.n -= g3.n + 3;
    CHECK(fails_with(&m, 0, "gzip"));
    /* data beyond the header's claim, in a later member */
    m.n = 0;
    put(&m, gz.p, gz.n);
    put(&m, g2.p, g2.n);
    CHECK(fails_with(&m, 0, "unexpected bytes after the 70 data bytes"));
    free(m.p);
    free(g1.p);
    free(g2.p);
    free(g3.p);
    free(head.p);
    free(data.p);
    free(gz.p);
    free(b.p);
}

static void test_trailing_bytes(void)
{
    for (int gz = 0; gz < 2; gz++) {
        buf b = {0};
        uint32_t dims[] = {3};
        header(&b, 0x08, 1, dims);
        put(&b, "abcd", 4);
        CHECK(fails_with(&b, gz, "unexpected bytes after the 3 data bytes"));
        free(b.p);
    }
}

static void test_absurd_dims(void)
{
    for (int gz = 0; gz < 2; gz++) {
        size_t before = em_bytes_in_use(EM_CPU);
        buf b = {0};
        uint32_t huge[] = {0x7fffffff, 0x7fffffff, 0x7fffffff};
        header(&b, 0x0E, 3, huge);
        CHECK(fails_with(&b, gz, "more than the 16 GiB limit"));
        free(b.p);
        b = (buf){0};
        uint32_t neg[] = {3, 0x80000000};
        header(&b, 0x08, 2, neg);
        CHECK(fails_with(&b, gz, "size 2147483648 of dimension 2 is negative"));
        free(b.p);
        /* many dims whose product overflows 64 bits long before the end */
        b = (buf){0};
        uint32_t many[16];
        for (int i = 0; i < 16; i++) many[i] = 0x7fffffff;
        header(&b, 0x08, 16, many);
        CHECK(fails_with(&b, gz, "limit"));
        free(b.p);
        /* under the cap (1 GB) but far more than the file can hold: refused
         * before any allocation */
        b = (buf){0};
        uint32_t big[] = {1000, 1000, 1000};
        header(&b, 0x08, 3, big);
        put(&b, "xyz", 3);
        CHECK(fails_with(&b, gz, gz ? "truncated (expected 1000000000 data bytes, but a " : "truncated (expected 1000000000 data bytes, got 3)"));
        CHECK(em_bytes_in_use(EM_CPU) == before);
        free(b.p);
    }
}

static void test_missing(void)
{
    em_clear_error();
    CHECK(em_read_idx("/nonexistent/ember/file.idx") == NULL);
    CHECK(strcmp(em_error(), "read_idx: /nonexistent/ember/file.idx: No such file or directory") == 0);
    CHECK(em_read_idx("/tmp") == NULL);
    CHECK(strcmp(em_error(), "read_idx: /tmp: is a directory") == 0);
    CHECK(em_read_idx(NULL) == NULL);
    CHECK(strstr(em_error(), "read_idx") != NULL);
}

/* Random bytes after a valid magic: any outcome but a crash is acceptable,
 * and a failure must name the op (run under the sanitizers to mean much). */
static void test_fuzz(void)
{
    uint32_t s = 12345;
    int ok = 1;
    for (int iter = 0; iter < 300; iter++) {
        buf b = {0};
        s = s * 1664525u + 1013904223u;
        unsigned types[] = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E};
        put_byte(&b, 0);
        put_byte(&b, 0);
        put_byte(&b, types[(s >> 8) % 6]);
        put_byte(&b, 1 + (s >> 16) % 4);
        int len = (int)((s >> 4) % 40);
        for (int i = 0; i < len; i++) {
            s = s * 1664525u + 1013904223u;
            /* mostly small bytes, so some headers are satisfiable */
            put_byte(&b, (s >> 24) < 200 ? (s >> 28) : (s >> 16) & 0xff);
        }
        em_clear_error();
        em_tensor *t = roundtrip(&b, iter & 1);
        if (t) em_release(t);
        else if (strncmp(em_error(), "read_idx: ", 10) != 0) ok = 0;
        free(b.p);
    }
    CHECK(ok);
}

/* A valid gzip-compressed file with bytes flipped: corrupt deflate data,
 * bad checksums and damaged headers must all end in an error or a tensor. */
static void test_fuzz_gzip(void)
{
    buf b = {0};
    uint32_t dims[] = {50, 40};
    header(&b, 0x0B, 2, dims);
    for (int i = 0; i < 2000; i++) put_be(&b, (uint16_t)(i * 40503u), 2);
    const char *path = write_file(&b, 1);
    CHECK(path != NULL);
    free(b.p);
    if (!path) return;
    FILE *f = fopen(path, "rb");
    buf gz = {0};
    unsigned char tmp[4096];
    size_t r;
    while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) put(&gz, tmp, r);
    fclose(f);
    unlink(path);
    uint32_t s = 777;
    int ok = 1;
    for (int iter = 0; iter < 200; iter++) {
        buf m = {0};
        put(&m, gz.p, gz.n);
        for (int k = 0; k < 1 + iter % 4; k++) {
            s = s * 1664525u + 1013904223u;
            m.p[(s >> 8) % m.n] ^= (unsigned char)(1u << (s >> 29));
        }
        em_clear_error();
        em_tensor *t = roundtrip(&m, 0);
        if (t) em_release(t);
        else if (strncmp(em_error(), "read_idx: ", 10) != 0) ok = 0;
        free(m.p);
    }
    CHECK(ok);
    free(gz.p);
}

static void test_fashion_mnist(void)
{
    const char *path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
    if (access(path, R_OK) != 0) {
        printf("# fashion-mnist not installed\n");
        return;
    }
    em_tensor *t = em_read_idx(path);
    CHECK(t != NULL);
    if (!t) return;
    CHECK(t->dtype == EM_UINT8);
    CHECK(shape_is(t, 1, (int64_t[]){10000}));
    /* the test set holds 1000 of each class (the dataset's published balance) */
    int64_t counts[10] = {0};
    int bad = 0;
    for (int64_t i = 0; i < 10000; i++) {
        int64_t v = em_get_i(t, i);
        if (v < 0 || v > 9) bad++;
        else counts[v]++;
    }
    CHECK(bad == 0);
    for (int c = 0; c < 10; c++) CHECK(counts[c] == 1000);
    em_release(t);
}

int main(void)
{
    RUN(test_uint8);
    RUN(test_int8);
    RUN(test_int16);
    RUN(test_int32);
    RUN(test_float32);
    RUN(test_float64);
    RUN(test_large);
    RUN(test_empty_dims);
    RUN(test_bad_magic);
    RUN(test_bad_ndims);
    RUN(test_truncated_header);
    RUN(test_truncated_data);
    RUN(test_truncated_gzip_stream);
    RUN(test_corrupt_gzip);
    RUN(test_gzip_without_trailer);
    RUN(test_gzip_bad_trailer);
    RUN(test_gzip_after_the_end);
    RUN(test_trailing_bytes);
    RUN(test_absurd_dims);
    RUN(test_missing);
    RUN(test_fuzz);
    RUN(test_fuzz_gzip);
    RUN(test_fashion_mnist);
    CHECK_DONE();
}
