/* zipfile.c — reading zip members from a hostile file (see zipfile.h).
 *
 * Every offset and size comes from the file, so each is checked before it
 * is used: arithmetic in uint64_t with the sums compared against the file's
 * size (no sum of two values below 2^63 overflows), reads with pread at
 * checked offsets into buffers of the checked size, and no allocation larger
 * than the bytes the file holds (a deflated member: 1032 times them). */
#include "zipfile.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define EOCD_SIZE 22
#define LOCATOR64_SIZE 20
#define EOCD64_SIZE 56
#define CENTRAL_SIZE 46
#define LOCAL_SIZE 30
/* deflate's largest ratio (zlib's FAQ), and some slack for tiny members */
#define DEFLATE_RATIO 1032
#define DEFLATE_SLACK 1024
/* reads and inflate calls go in pieces of this size (inflate counts in uInt) */
#define CHUNK (1u << 20)

typedef struct member {
    char *name;
    uint64_t csize, usize, local;   /* compressed and uncompressed sizes, local header offset */
    uint64_t data;                  /* where the data starts (0 until the local header is read) */
    uint32_t crc;
    uint16_t method;
} member;

struct em_zip {
    int fd;
    uint64_t fsize;
    uint64_t cd_start;              /* the central directory: members' data lies before it */
    int n;
    member *m;
    char *op, *path;
};

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static int zfail(const em_zip *z, const char *fmt, const char *detail)
{
    return em_set_error("%s: %s: %s%s", z->op, z->path, fmt, detail ? detail : "");
}

/* Reads n bytes at off, which the caller checked lie inside the file. */
static int read_at(const em_zip *z, uint64_t off, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = pread(z->fd, p, n > CHUNK ? CHUNK : n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return em_set_error("%s: %s: read error: %s", z->op, z->path, strerror(errno));
        if (r == 0) return em_set_error("%s: %s: the file shrank while being read", z->op, z->path);
        p += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    return 0;
}

em_file_kind em_file_kind_of(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return EM_FILE_OTHER;
    struct stat st;
    unsigned char b[8] = {0};
    em_file_kind k = EM_FILE_OTHER;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, b, sizeof b, 0) >= 4) {
        if (b[0] == 'P' && b[1] == 'K' && ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6))) k = EM_FILE_ZIP;
        /* a safetensors file starts with its header length, below 2^27:
         * bytes 4..7 are zero there, never in a pickle's opening opcodes */
        else if (b[0] == 0x80 && b[1] >= 2 && b[1] <= 5 && (b[4] | b[5] | b[6] | b[7]) != 0) k = EM_FILE_PICKLE;
    }
    close(fd);
    return k;
}

void em_zip_close(em_zip *z)
{
    if (!z) return;
    if (z->fd >= 0) close(z->fd);
    for (int i = 0; z->m && i < z->n; i++) free(z->m[i].name);
    free(z->m);
    free(z->op);
    free(z->path);
    free(z);
}

/* The end of central directory record: the last signature whose comment
 * reaches exactly to the end of the file. Fills the central directory's
 * place and member count (from the zip64 record where the classic fields say
 * to look there). */
static int find_directory(em_zip *z, uint64_t *cd_off, uint64_t *cd_size, uint64_t *count)
{
    uint64_t tail = z->fsize < EOCD_SIZE + 65535 ? z->fsize : EOCD_SIZE + 65535;
    if (z->fsize < EOCD_SIZE)
        return zfail(z, "truncated or not a zip archive (no end of central directory record)", NULL);
    unsigned char *buf = malloc(tail);
    if (!buf) return zfail(z, "out of memory", NULL);
    if (read_at(z, z->fsize - tail, buf, tail) != 0) { free(buf); return -1; }
    int64_t at = -1;
    for (int64_t i = (int64_t)tail - EOCD_SIZE; i >= 0; i--) {
        if (le32(buf + i) == SIG_EOCD && (uint64_t)i + EOCD_SIZE + le16(buf + i + 20) == tail) { at = i; break; }
    }
    if (at < 0) {
        free(buf);
        return zfail(z, "truncated or not a zip archive (no end of central directory record)", NULL);
    }
    const unsigned char *e = buf + at;
    uint64_t eocd_pos = z->fsize - tail + (uint64_t)at;
    uint16_t disk = le16(e + 4), cd_disk = le16(e + 6), n_here = le16(e + 8);
    *count = le16(e + 10);
    *cd_size = le32(e + 12);
    *cd_off = le32(e + 16);
    free(buf);
    uint64_t end = eocd_pos;   /* the central directory ends before this */
    if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu || disk == 0xffff ||
        cd_disk == 0xffff) {
        unsigned char loc[LOCATOR64_SIZE], r[EOCD64_SIZE];
        if (eocd_pos < LOCATOR64_SIZE) return zfail(z, "damaged zip archive: the zip64 locator is missing", NULL);
        if (read_at(z, eocd_pos - LOCATOR64_SIZE, loc, sizeof loc) != 0) return -1;
        if (le32(loc) != SIG_LOCATOR64) return zfail(z, "damaged zip archive: the zip64 locator is missing", NULL);
        uint64_t r_off = le64(loc + 8);
        if (le32(loc + 4) != 0 || le32(loc + 16) != 1)
            return zfail(z, "a zip archive split over several disks (not supported)", NULL);
        if (r_off > eocd_pos - LOCATOR64_SIZE || eocd_pos - LOCATOR64_SIZE - r_off < EOCD64_SIZE)
            return zfail(z, "damaged zip archive: the zip64 end record lies outside the file", NULL);
        if (read_at(z, r_off, r, sizeof r) != 0) return -1;
        if (le32(r) != SIG_EOCD64) return zfail(z, "damaged zip archive: no zip64 end record where the locator points", NULL);
        disk = le32(r + 16) ? 1 : 0;
        cd_disk = le32(r + 20) ? 1 : 0;
        n_here = le64(r + 24) == le64(r + 32) ? 0 : 1;
        *count = le64(r + 32);
        *cd_size = le64(r + 40);
        *cd_off = le64(r + 48);
        end = r_off;
        if (disk || cd_disk || n_here) return zfail(z, "a zip archive split over several disks (not supported)", NULL);
    } else if (disk != 0 || cd_disk != 0 || n_here != *count) {
        return zfail(z, "a zip archive split over several disks (not supported)", NULL);
    }
    if (*cd_off > end || *cd_size > end - *cd_off)
        return zfail(z, "damaged zip archive: the central directory lies outside the file", NULL);
    if (*count > *cd_size / CENTRAL_SIZE)
        return zfail(z, "damaged zip archive: more members claimed than the central directory holds", NULL);
    return 0;
}

/* The zip64 extra field of a central header: replaces the 32-bit values that
 * are 0xffffffff, in this order. */
static int zip64_extra(em_zip *z, const unsigned char *x, size_t xlen, member *m, bool need_u, bool need_c,
                       bool need_l)
{
    while (xlen >= 4) {
        uint16_t id = le16(x), len = le16(x + 2);
        if (len > xlen - 4) return zfail(z, "damaged zip archive: an extra field runs past its header", NULL);
        if (id == 1) {
            size_t at = 4, want = 4 + 8 * (size_t)(need_u + need_c + need_l);
            if (len + 4u < want) return zfail(z, "damaged zip archive: a zip64 field is too short", NULL);
            if (need_u) { m->usize = le64(x + at); at += 8; }
            if (need_c) { m->csize = le64(x + at); at += 8; }
            if (need_l) m->local = le64(x + at);
            return 0;
        }
        x += 4 + len;
        xlen -= 4 + (size_t)len;
    }
    if (need_u || need_c || need_l) return zfail(z, "damaged zip archive: a zip64 field is missing", NULL);
    return 0;
}

static int cmp_member_name(const void *a, const void *b)
{
    return strcmp((*(const member *const *)a)->name, (*(const member *const *)b)->name);
}

static int parse_directory(em_zip *z, const unsigned char *cd, uint64_t cd_size, uint64_t count)
{
    z->m = calloc(count ? (size_t)count : 1, sizeof *z->m);
    if (!z->m) return zfail(z, "out of memory", NULL);
    uint64_t at = 0;
    for (uint64_t i = 0; i < count; i++) {
        if (cd_size - at < CENTRAL_SIZE || le32(cd + at) != SIG_CENTRAL)
            return zfail(z, "damaged zip archive: a central directory entry is missing or cut short", NULL);
        const unsigned char *h = cd + at;
        member *m = &z->m[i];
        uint16_t flags = le16(h + 8), nlen = le16(h + 28), xlen = le16(h + 30), clen = le16(h + 32);
        m->method = le16(h + 10);
        m->crc = le32(h + 16);
        m->csize = le32(h + 20);
        m->usize = le32(h + 24);
        m->local = le32(h + 42);
        if (cd_size - at - CENTRAL_SIZE < (uint64_t)nlen + xlen + clen)
            return zfail(z, "damaged zip archive: a central directory entry runs past the directory", NULL);
        if (nlen == 0) return zfail(z, "damaged zip archive: a member without a name", NULL);
        if (memchr(h + CENTRAL_SIZE, 0, nlen)) return zfail(z, "damaged zip archive: a member name holds a NUL byte", NULL);
        m->name = malloc((size_t)nlen + 1);
        if (!m->name) return zfail(z, "out of memory", NULL);
        memcpy(m->name, h + CENTRAL_SIZE, nlen);
        m->name[nlen] = '\0';
        z->n = (int)i + 1;
        if (zip64_extra(z, h + CENTRAL_SIZE + nlen, xlen, m, m->usize == 0xffffffffu, m->csize == 0xffffffffu,
                        m->local == 0xffffffffu) != 0)
            return -1;
        if (flags & 1) return zfail(z, "encrypted members are not supported: ", m->name);
        if (m->method != 0 && m->method != 8) {
            char msg[96];
            snprintf(msg, sizeof msg, "compression method %u (only stored and deflated are supported): ", m->method);
            return zfail(z, msg, m->name);
        }
        if (m->local > z->cd_start || m->csize > z->cd_start)
            return zfail(z, "damaged zip archive: the data lies outside the file: ", m->name);
        if (m->method == 0 && m->csize != m->usize)
            return zfail(z, "damaged zip archive: a stored member's two sizes differ: ", m->name);
        if (m->method == 8 && m->usize > m->csize * DEFLATE_RATIO + DEFLATE_SLACK)
            return zfail(z, "damaged zip archive: a deflated member claims more than deflate can hold: ", m->name);
        at += CENTRAL_SIZE + (uint64_t)nlen + xlen + clen;
    }
    if (at != cd_size)
        return zfail(z, "damaged zip archive: the central directory holds more than the members it counts", NULL);
    /* duplicate names would let two readers of one file see different data */
    if (count > 1) {
        const member **s = malloc((size_t)count * sizeof *s);
        if (!s) return zfail(z, "out of memory", NULL);
        for (uint64_t i = 0; i < count; i++) s[i] = &z->m[i];
        qsort(s, (size_t)count, sizeof *s, cmp_member_name);
        for (uint64_t i = 1; i < count; i++) {
            if (strcmp(s[i - 1]->name, s[i]->name) == 0) {
                int rc = zfail(z, "damaged zip archive: two members are named ", s[i]->name);
                free(s);
                return rc;
            }
        }
        free(s);
    }
    return 0;
}

em_zip *em_zip_open(const char *op, const char *path)
{
    em_zip *z = calloc(1, sizeof *z);
    if (!z) return em_set_error("%s: %s: out of memory", op, path), NULL;
    z->fd = -1;
    z->op = strdup(op);
    z->path = strdup(path);
    if (!z->op || !z->path) { em_set_error("%s: %s: out of memory", op, path); goto fail; }
    z->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (z->fd < 0) { em_set_error("%s: %s: %s", op, path, strerror(errno)); goto fail; }
    struct stat st;
    if (fstat(z->fd, &st) != 0) { em_set_error("%s: %s: %s", op, path, strerror(errno)); goto fail; }
    if (!S_ISREG(st.st_mode)) {
        em_set_error("%s: %s: %s", op, path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        goto fail;
    }
    z->fsize = (uint64_t)st.st_size;
    uint64_t cd_off = 0, cd_size = 0, count = 0;
    if (find_directory(z, &cd_off, &cd_size, &count) != 0) goto fail;
    if (count > 0x7fffffff) { zfail(z, "damaged zip archive: too many members", NULL); goto fail; }
    z->cd_start = cd_off;
    unsigned char *cd = malloc(cd_size ? (size_t)cd_size : 1);
    if (!cd) { zfail(z, "out of memory reading the central directory", NULL); goto fail; }
    int rc = read_at(z, cd_off, cd, (size_t)cd_size);
    if (rc == 0) rc = parse_directory(z, cd, cd_size, count);
    free(cd);
    if (rc != 0) goto fail;
    return z;
fail:
    em_zip_close(z);
    return NULL;
}

int em_zip_count(const em_zip *z) { return z->n; }
const char *em_zip_name(const em_zip *z, int i) { return z->m[i].name; }
uint64_t em_zip_size(const em_zip *z, int i) { return z->m[i].usize; }

/* Finds where member i's data starts, from its local header. */
static int locate(em_zip *z, member *m)
{
    if (m->data) return 0;
    unsigned char h[LOCAL_SIZE];
    if (z->cd_start - m->local < LOCAL_SIZE) return zfail(z, "damaged zip archive: a local header runs into the central directory: ", m->name);
    if (read_at(z, m->local, h, sizeof h) != 0) return -1;
    if (le32(h) != SIG_LOCAL) return zfail(z, "damaged zip archive: no local header where the directory points: ", m->name);
    uint64_t nlen = le16(h + 26), xlen = le16(h + 28);
    uint64_t data = m->local + LOCAL_SIZE + nlen + xlen;
    if (data > z->cd_start || m->csize > z->cd_start - data)
        return zfail(z, "damaged zip archive: the data runs into the central directory: ", m->name);
    char name[256];
    size_t want = strlen(m->name);
    if (nlen != want) return zfail(z, "damaged zip archive: the local header names another member than the directory: ", m->name);
    for (uint64_t k = 0; k < nlen; k += sizeof name) {
        size_t piece = nlen - k < sizeof name ? (size_t)(nlen - k) : sizeof name;
        if (read_at(z, m->local + LOCAL_SIZE + k, name, piece) != 0) return -1;
        if (memcmp(name, m->name + k, piece) != 0)
            return zfail(z, "damaged zip archive: the local header names another member than the directory: ", m->name);
    }
    m->data = data;
    return 0;
}

static int inflate_member(em_zip *z, const member *m, unsigned char *out)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -MAX_WBITS) != Z_OK) return zfail(z, "out of memory starting inflate for ", m->name);
    unsigned char *in = malloc(CHUNK);
    if (!in) { inflateEnd(&s); return zfail(z, "out of memory", NULL); }
    uint64_t in_left = m->csize, out_done = 0;
    int rc = 0, zr = Z_OK;
    while (zr != Z_STREAM_END) {
        if (s.avail_in == 0 && in_left > 0) {
            size_t piece = in_left < CHUNK ? (size_t)in_left : CHUNK;
            if (read_at(z, m->data + (m->csize - in_left), in, piece) != 0) { rc = -1; break; }
            s.next_in = in;
            s.avail_in = (uInt)piece;
            in_left -= piece;
        }
        uint64_t room = m->usize - out_done;
        uInt give = room < CHUNK ? (uInt)room : CHUNK;
        /* one spare byte past the declared size: inflating into it means the member is longer */
        unsigned char spare;
        s.next_out = give ? out + out_done : &spare;
        s.avail_out = give ? give : 1;
        zr = inflate(&s, Z_NO_FLUSH);
        out_done += (give ? give : 1) - s.avail_out;
        if (out_done > m->usize) { rc = zfail(z, "damaged zip archive: inflates to more than its declared size: ", m->name); break; }
        if (zr == Z_STREAM_END) break;
        if (zr == Z_BUF_ERROR && s.avail_in == 0 && in_left == 0) {
            rc = zfail(z, "damaged zip archive: the deflate data ends early: ", m->name);
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = zfail(z, "damaged zip archive: corrupt deflate data: ", m->name);
            break;
        }
    }
    if (rc == 0 && out_done != m->usize)
        rc = zfail(z, "damaged zip archive: inflates to less than its declared size: ", m->name);
    if (rc == 0 && (s.avail_in != 0 || in_left != 0))
        rc = zfail(z, "damaged zip archive: bytes after the end of the deflate data: ", m->name);
    free(in);
    inflateEnd(&s);
    return rc;
}

int em_zip_read(em_zip *z, int i, void *buf)
{
    if (i < 0 || i >= z->n) return em_set_error("%s: %s: no member %d", z->op, z->path, i);
    member *m = &z->m[i];
    if (locate(z, m) != 0) return -1;
    if (m->method == 0) {
        if (read_at(z, m->data, buf, (size_t)m->usize) != 0) return -1;
    } else if (inflate_member(z, m, buf) != 0) {
        return -1;
    }
    if (m->crc != 0) {
        uLong crc = crc32(0L, Z_NULL, 0);
        const unsigned char *p = buf;
        for (uint64_t left = m->usize; left > 0;) {
            uInt piece = left < CHUNK ? (uInt)left : CHUNK;
            crc = crc32(crc, p, piece);
            p += piece;
            left -= piece;
        }
        if ((uint32_t)crc != m->crc) return zfail(z, "damaged zip archive: CRC-32 mismatch (corrupt data) in ", m->name);
    }
    return 0;
}

em_tensor *em_zip_tensor(em_zip *z, int i, em_dtype d, int64_t numel, bool swap)
{
    if (i < 0 || i >= z->n) return em_set_error("%s: %s: no member %d", z->op, z->path, i), NULL;
    const member *m = &z->m[i];
    size_t esz = em_dtype_size(d);
    uint64_t want;
    if (numel < 0 || __builtin_mul_overflow((uint64_t)numel, (uint64_t)esz, &want) || want != m->usize) {
        em_set_error("%s: %s: %s holds %llu bytes, not the %lld x %zu bytes of its storage", z->op, z->path,
                     m->name, (unsigned long long)m->usize, (long long)numel, esz);
        return NULL;
    }
    int64_t size = numel;
    em_tensor *t = em_empty(&size, 1, d, (em_device){EM_CPU, 0});
    if (!t) return NULL;
    if (m->usize > 0 && em_zip_read(z, i, em_data_ptr(t)) != 0) {
        em_release(t);
        return NULL;
    }
    unsigned char *p = em_data_ptr(t);
    if (d == EM_BOOL) {
        for (int64_t k = 0; k < numel; k++) p[k] = p[k] != 0;
    } else if (swap && esz > 1) {
        for (int64_t k = 0; k < numel; k++) {
            unsigned char *e = p + (size_t)k * esz;
            for (size_t a = 0, b = esz - 1; a < b; a++, b--) {
                unsigned char c = e[a];
                e[a] = e[b];
                e[b] = c;
            }
        }
    }
    return t;
}
