/* idx.c — the IDX file reader (see idx.h for the format and dtypes).
 *
 * A file is untrusted input: every header field is checked, and the data a
 * header claims is only allocated when the file can plausibly hold it. For a
 * plain file that is exact (its size is known). For a gzip file the inflated
 * size is unknown until read, but deflate cannot expand more than 1032:1
 * (zlib's FAQ), so a claim beyond 1032 times the compressed size is refused
 * at once; anything below that costs at most that much memory before a short
 * read is reported as truncation.
 *
 * The tensor is made on the CPU and filled here directly: reading a file is
 * host work by nature, and t:to(device) moves the result. */
#include "idx.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define DEFLATE_MAX_RATIO 1032
/* inflate takes an unsigned count; large reads go in pieces of this size */
#define READ_CHUNK ((size_t)1 << 24)
/* wider types are read into a staging buffer of this size and converted */
#define STAGE_BYTES ((size_t)1 << 16)
/* compressed bytes read from the file at a time */
#define IN_BYTES ((size_t)1 << 18)

typedef struct idx_type {
    unsigned char code;
    size_t file_size;      /* bytes per value in the file */
    em_dtype dtype;
} idx_type;

static const idx_type idx_types[] = {
    {0x08, 1, EM_UINT8}, {0x09, 1, EM_INT32}, {0x0B, 2, EM_INT32},
    {0x0C, 4, EM_INT32}, {0x0D, 4, EM_FLOAT32}, {0x0E, 8, EM_FLOAT64},
};

static const idx_type *find_type(unsigned char code)
{
    for (size_t i = 0; i < sizeof idx_types / sizeof idx_types[0]; i++)
        if (idx_types[i].code == code) return &idx_types[i];
    return NULL;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t be64(const unsigned char *p)
{
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

/* The bytes of the file, inflated when it is gzip. zlib's gzFile layer is
 * not used: it reports a stream cut off before its 8-byte trailer (CRC-32
 * and length) as a plain end of file, and skips anything after the last
 * gzip member, so a damaged file would load without a word. Driving inflate
 * directly, the reader knows whether each member ended properly and what
 * follows it. */
typedef struct source {
    int fd;
    const char *path;
    bool gz;
    z_stream zs;
    unsigned char *in;      /* compressed input buffer (gz) */
    bool in_eof;            /* read() returned 0 */
    bool member_end;        /* inflate finished a member (its trailer checked) */
    bool cut;               /* the compressed data ended inside a member */
} source;

/* Refills the input buffer, keeping unread bytes. 0, or -1 with an error. */
static int refill(source *s)
{
    if (s->in_eof) return 0;
    if (s->zs.avail_in > 0 && s->zs.next_in != s->in) memmove(s->in, s->zs.next_in, s->zs.avail_in);
    s->zs.next_in = s->in;
    for (;;) {
        ssize_t r = read(s->fd, s->in + s->zs.avail_in, IN_BYTES - s->zs.avail_in);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return em_set_error("read_idx: %s: read failed: %s", s->path, strerror(errno));
        if (r == 0) s->in_eof = true;
        s->zs.avail_in += (uInt)r;
        return 0;
    }
}

/* After a member's end: the file must end, or another gzip member start
 * (gzip -c a b > ab is a valid file). 1: another member follows, 0: the end,
 * -1: anything else (an error). */
static int next_member(source *s)
{
    while (s->zs.avail_in < 2 && !s->in_eof)
        if (refill(s) != 0) return -1;
    if (s->zs.avail_in == 0) return 0;
    if (s->zs.avail_in >= 2 && s->zs.next_in[0] == 0x1f && s->zs.next_in[1] == 0x8b) {
        if (inflateReset(&s->zs) != Z_OK) return em_set_error("read_idx: %s: corrupt gzip data", s->path);
        s->member_end = false;
        return 1;
    }
    return em_set_error("read_idx: %s: unexpected bytes after the end of the gzip data (%s)", s->path,
                        s->zs.avail_in >= 2 ? "not another gzip member" : "one stray byte");
}

/* Reads up to n bytes; stops early only at the end of the data. Returns the
 * count read, or -1 with an error for corrupt gzip data or an I/O error. A
 * gzip member cut off early is not an error here (s->cut is set): the caller
 * sees the short count and reports the truncation with the sizes. */
static int64_t read_upto(source *s, void *buf, size_t n)
{
    size_t got = 0;
    if (!s->gz) {
        while (got < n) {
            size_t want = n - got < READ_CHUNK ? n - got : READ_CHUNK;
            ssize_t r = read(s->fd, (char *)buf + got, want);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return em_set_error("read_idx: %s: read failed: %s", s->path, strerror(errno));
            if (r == 0) break;
            got += (size_t)r;
        }
        return (int64_t)got;
    }
    while (got < n && !s->cut) {
        if (s->member_end) {
            int more = next_member(s);
            if (more < 0) return -1;
            if (more == 0) break;
        }
        if (s->zs.avail_in == 0 && refill(s) != 0) return -1;
        size_t want = n - got < READ_CHUNK ? n - got : READ_CHUNK;
        s->zs.next_out = (unsigned char *)buf + got;
        s->zs.avail_out = (uInt)want;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        got += want - s->zs.avail_out;
        switch (rc) {
        case Z_OK:
            break;
        case Z_STREAM_END:
            s->member_end = true;
            break;
        case Z_BUF_ERROR:
            /* no progress: more input is needed, and at the end of the file
             * there is none (with input left it cannot happen; stop anyway) */
            if (s->zs.avail_in == 0 && !s->in_eof) break;
            s->cut = true;
            break;
        case Z_MEM_ERROR:
            return em_set_error("read_idx: %s: out of memory inflating the gzip data", s->path);
        default:   /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
            return em_set_error("read_idx: %s: corrupt gzip data (%s)", s->path,
                                s->zs.msg ? s->zs.msg : "invalid deflate stream");
        }
    }
    return (int64_t)got;
}

/* A note for a short read: why the data ended. */
static const char *cut_note(const source *s)
{
    return s->cut ? "; the gzip stream is cut short" : "";
}

/* Converts n big-endian values of type ty from src into dst (native). */
static void convert(void *dst, const unsigned char *src, size_t n, const idx_type *ty)
{
    switch (ty->code) {
    case 0x08:
        memcpy(dst, src, n);
        break;
    case 0x09: {
        int32_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = (int8_t)src[i];
        break;
    }
    case 0x0B: {
        int32_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = (int16_t)((uint16_t)src[2 * i] << 8 | src[2 * i + 1]);
        break;
    }
    case 0x0C:   /* int32 and float32: the same four bytes, swapped */
    case 0x0D:
        for (size_t i = 0; i < n; i++) {
            uint32_t u = be32(src + 4 * i);
            memcpy((char *)dst + 4 * i, &u, 4);
        }
        break;
    case 0x0E:
        for (size_t i = 0; i < n; i++) {
            uint64_t u = be64(src + 8 * i);
            memcpy((char *)dst + 8 * i, &u, 8);
        }
        break;
    }
}

/* Reads `numel` values of type ty into t's data, then checks that the data
 * ends there. Returns 0, or -1 with an error (truncation reports the data
 * bytes expected and found). */
static int read_data(source *s, em_tensor *t, int64_t numel, const idx_type *ty)
{
    const char *path = s->path;
    uint64_t expected = (uint64_t)numel * ty->file_size;
    uint64_t got = 0;
    if (ty->code == 0x08) {
        /* bytes need no conversion: read straight into the tensor */
        int64_t r = expected ? read_upto(s, em_data_ptr(t), (size_t)expected) : 0;
        if (r < 0) return -1;
        got = (uint64_t)r;
    } else {
        unsigned char *stage = malloc(STAGE_BYTES);
        if (!stage) return em_set_error("read_idx: %s: out of memory", path);
        char *dst = em_data_ptr(t);
        size_t out_size = em_dtype_size(t->dtype);
        while (got < expected) {
            size_t want = expected - got < STAGE_BYTES ? (size_t)(expected - got) : STAGE_BYTES;
            int64_t r = read_upto(s, stage, want);
            if (r < 0) { free(stage); return -1; }
            /* a partial value at the end is dropped: the error follows below */
            size_t values = (size_t)r / ty->file_size;
            convert(dst + (got / ty->file_size) * out_size, stage, values, ty);
            got += (uint64_t)r;
            if ((size_t)r < want) break;
        }
        free(stage);
    }
    if (got < expected)
        return em_set_error("read_idx: %s: truncated (expected %llu data bytes, got %llu%s)", path,
                            (unsigned long long)expected, (unsigned long long)got, cut_note(s));
    unsigned char extra;
    int64_t r = read_upto(s, &extra, 1);
    if (r < 0) return -1;
    if (r > 0)
        return em_set_error("read_idx: %s: unexpected bytes after the %llu data bytes the header describes",
                            path, (unsigned long long)expected);
    if (s->cut)
        return em_set_error("read_idx: %s: truncated or corrupt gzip file: the compressed stream stops before "
                            "its end (its last block or its 8-byte trailer, the CRC-32 and length, is missing)",
                            path);
    return 0;
}

/* Parses and checks the header: fills the sizes, the element count and the
 * type, or returns -1 with an error. */
static int read_header(source *s, int64_t *sizes, int *ndim, int64_t *numel, const idx_type **type)
{
    const char *path = s->path;
    unsigned char magic[4];
    int64_t r = read_upto(s, magic, 4);
    if (r < 0) return -1;
    if (r < 4)
        return em_set_error("read_idx: %s: truncated header (%lld of 4 magic bytes%s)", path, (long long)r,
                            cut_note(s));
    if (magic[0] != 0 || magic[1] != 0)
        return em_set_error("read_idx: %s: not an IDX file (magic starts %02x %02x, expected 00 00)",
                            path, magic[0], magic[1]);
    const idx_type *ty = find_type(magic[2]);
    if (!ty)
        return em_set_error("read_idx: %s: unknown IDX data type 0x%02x (expected 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)",
                            path, magic[2]);
    int nd = magic[3];
    if (nd < 1 || nd > EM_MAX_DIMS)
        return em_set_error("read_idx: %s: %d dimensions (expected 1..%d)", path, nd, EM_MAX_DIMS);
    unsigned char dims[4 * EM_MAX_DIMS];
    r = read_upto(s, dims, 4 * (size_t)nd);
    if (r < 0) return -1;
    if (r < 4 * nd)
        return em_set_error("read_idx: %s: truncated header (%lld of %d size bytes%s)", path, (long long)r,
                            4 * nd, cut_note(s));
    /* the element count is checked against the cap as it grows, so it never
     * overflows: the cap is far below INT64_MAX / UINT32_MAX */
    uint64_t n = 1;
    bool empty = false;
    for (int i = 0; i < nd; i++) {
        uint32_t d = be32(dims + 4 * i);
        if (d > INT32_MAX)
            return em_set_error("read_idx: %s: size %u of dimension %d is negative as a signed 32-bit integer",
                                path, d, i + 1);
        sizes[i] = d;
        if (d == 0) empty = true;
        if (!empty) n *= d;
        if (!empty && n * ty->file_size > EM_IDX_MAX_BYTES)
            return em_set_error("read_idx: %s: header claims sizes %s, more than the %llu GiB limit", path,
                                em_sizes_tmp(sizes, i + 1), (unsigned long long)(EM_IDX_MAX_BYTES >> 30));
    }
    if (empty) n = 0;
    *ndim = nd;
    *numel = (int64_t)n;
    *type = ty;
    return 0;
}

em_tensor *em_read_idx(const char *path)
{
    if (!path) return em_set_error("read_idx: no path given"), NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return em_set_error("read_idx: %s: %s", path, strerror(errno)), NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        em_set_error("read_idx: %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return em_set_error("read_idx: %s: is a directory", path), NULL;
    }
    /* The most a gzip file can inflate to (see the top comment); a plain
     * file is checked against its size. Pipes and devices have no size:
     * only the cap applies to them (and they are read as plain files). */
    unsigned char sig[2];
    bool gz = pread(fd, sig, 2, 0) == 2 && sig[0] == 0x1f && sig[1] == 0x8b;
    uint64_t fsize = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    uint64_t limit = UINT64_MAX;
    if (gz && S_ISREG(st.st_mode) && fsize <= UINT64_MAX / DEFLATE_MAX_RATIO) limit = fsize * DEFLATE_MAX_RATIO;

    source s = {.fd = fd, .path = path, .gz = gz};
    if (gz) {
        s.in = malloc(IN_BYTES);
        /* 16 + MAX_WBITS: a gzip wrapper (header, CRC-32 and length checked) */
        if (!s.in || inflateInit2(&s.zs, 16 + MAX_WBITS) != Z_OK) {
            free(s.in);
            close(fd);
            return em_set_error("read_idx: %s: out of memory", path), NULL;
        }
        s.zs.next_in = s.in;
    }

    int64_t sizes[EM_MAX_DIMS];
    int ndim = 0;
    int64_t numel = 0;
    const idx_type *ty = NULL;
    em_tensor *t = NULL;
    int rc = read_header(&s, sizes, &ndim, &numel, &ty);
    if (rc == 0) {
        uint64_t header = 4 + 4 * (uint64_t)ndim;
        uint64_t bytes = (uint64_t)numel * ty->file_size;
        if (!gz && S_ISREG(st.st_mode) && fsize < header + bytes) {
            em_set_error("read_idx: %s: truncated (expected %llu data bytes, got %llu)", path,
                         (unsigned long long)bytes, (unsigned long long)(fsize - header));
            rc = -1;
        } else if (gz && bytes > limit) {
            em_set_error("read_idx: %s: truncated (expected %llu data bytes, but a %llu-byte gzip file "
                         "inflates to at most %llu)", path, (unsigned long long)bytes,
                         (unsigned long long)fsize, (unsigned long long)limit);
            rc = -1;
        }
    }
    if (rc == 0) {
        t = em_empty(sizes, ndim, ty->dtype, (em_device){EM_CPU, 0});
        if (!t) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", em_error());
            em_set_error("read_idx: %s: %s", path, msg);
        } else if (read_data(&s, t, numel, ty)) {
            em_release(t);
            t = NULL;
        }
    }
    if (gz) {
        inflateEnd(&s.zs);
        free(s.in);
    }
    close(fd);
    return t;
}
