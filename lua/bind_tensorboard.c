/* bind_tensorboard.c — the C half of ember.utils.tensorboard
 * (lua/ember/utils/tensorboard.lua), as the private table ember._tensorboard:
 * the TFRecord framing of event files (length and data each followed by a
 * masked CRC32C), the event file handle that never leaves a broken record
 * at the end of a file, a PNG encoder for add_image, the bucket counts of
 * add_histogram, and the few system facts an event file's name needs.
 * The protobuf messages themselves are built in Lua (string.pack). */
#include "binding.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const em_device CPU = {EM_CPU, 0};

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum
 * TFRecord uses; a byte-wise table is fast enough next to zlib's deflate of
 * the same image bytes. */
static uint32_t crc32c_table[256];

static void crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc32c_table[i] = c;
    }
}

static uint32_t crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = crc32c_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* TFRecord masks its CRCs so that a CRC of data holding CRCs stays strong. */
static uint32_t masked_crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = crc32c(p, n);
    return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* _tensorboard.crc32c(s), masked_crc32c(s): for the tests */
static int l_crc32c(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_pushinteger(L, (lua_Integer)crc32c((const unsigned char *)s, n));
    return 1;
}

static int l_masked_crc32c(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_pushinteger(L, (lua_Integer)masked_crc32c((const unsigned char *)s, n));
    return 1;
}

/* _tensorboard.record(data): data framed as one TFRecord: uint64 length,
 * masked CRC of those 8 bytes, the data, masked CRC of the data. */
static int l_record(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    unsigned char head[12], tail[4];
    uint64_t len = n;
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)(len >> (8 * i));
    put_le32(head + 8, masked_crc32c(head, 8));
    put_le32(tail, masked_crc32c((const unsigned char *)s, n));
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, (const char *)head, 12);
    luaL_addlstring(&b, s, n);
    luaL_addlstring(&b, (const char *)tail, 4);
    luaL_pushresult(&b);
    return 1;
}

/* An event file: written with write(2), no stdio buffer, so that the file
 * size after each call is known. A write that fails midway (disk full, a
 * file size limit) would leave half a record, and TensorBoard's reader stops
 * reading a file at its first broken record: every later record would be
 * lost though written. So a failed write truncates the file back to the end
 * of its last complete record; where that fails too (a device, a file system
 * that refuses), the handle is marked broken and the writer starts a new
 * event file (lua/ember/utils/tensorboard.lua). */
#define EVENTS_MT "ember.tensorboard.EventFile"

typedef struct event_file {
    int fd;
    off_t good;       /* the end of the last complete record */
    bool broken;      /* ends in a partial record that could not be cut off */
} event_file;

static event_file *check_events(lua_State *L)
{
    event_file *f = luaL_checkudata(L, 1, EVENTS_MT);
    if (f->fd < 0) luaL_error(L, "tensorboard: the event file is closed");
    return f;
}

/* _tensorboard.open_events(path) -> handle | nil, message */
static int l_open_events(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    event_file *f = lua_newuserdatauv(L, sizeof *f, 0);
    f->fd = -1;
    f->good = 0;
    f->broken = false;
    luaL_setmetatable(L, EVENTS_MT);
    do f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0666);
    while (f->fd < 0 && errno == EINTR);
    if (f->fd < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s: %s", path, strerror(errno));
        return 2;
    }
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ef:write(records) -> n | n, message, broken: writes the framed records of
 * the list in order; on a failure, n records were written whole and the file
 * ends after them (unless broken: it could not be cut back). */
static int l_events_write(lua_State *L)
{
    event_file *f = check_events(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (f->broken) return luaL_error(L, "tensorboard: the event file ends in a broken record");
    lua_Integer n = luaL_len(L, 2);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 2, i);
        size_t len;
        const char *rec = luaL_checklstring(L, -1, &len);
        if (write_all(f->fd, rec, len) != 0) {
            int e = errno;
            f->broken = ftruncate(f->fd, f->good) != 0 || lseek(f->fd, f->good, SEEK_SET) != f->good;
            lua_pushinteger(L, i - 1);
            lua_pushstring(L, strerror(e));
            lua_pushboolean(L, f->broken);
            return 3;
        }
        f->good += (off_t)len;
        lua_pop(L, 1);
    }
    lua_pushinteger(L, n);
    return 1;
}

/* ef:close() -> true | nil, message */
static int l_events_close(lua_State *L)
{
    event_file *f = luaL_checkudata(L, 1, EVENTS_MT);
    int fd = f->fd;
    f->fd = -1;
    if (fd >= 0 && close(fd) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, strerror(errno));
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int l_events_gc(lua_State *L)
{
    event_file *f = luaL_checkudata(L, 1, EVENTS_MT);
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    return 0;
}

/* A CPU, contiguous copy (or the tensor itself) of t in dtype d: a new
 * reference, or NULL with the engine's error set. */
static em_tensor *cpu_contiguous(const em_tensor *t, em_dtype d)
{
    em_tensor *a = em_to_device(t, CPU);
    if (!a) return NULL;
    em_tensor *b = em_to_dtype(a, d);
    em_release(a);
    if (!b) return NULL;
    em_tensor *c = em_contiguous(b);
    em_release(b);
    return c;
}

/* One PNG chunk: length, type, data, CRC-32 of type and data. */
static void add_chunk(luaL_Buffer *b, const char *type, const unsigned char *data, size_t n)
{
    unsigned char head[8], tail[4];
    put_be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (n) crc = crc32(crc, data, (uInt)n);
    put_be32(tail, (uint32_t)crc);
    luaL_addlstring(b, (const char *)head, 8);
    if (n) luaL_addlstring(b, (const char *)data, n);
    luaL_addlstring(b, (const char *)tail, 4);
}

/* _tensorboard.png(t): a PNG of the uint8 image t, shaped (H, W, C) with C
 * 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA). Rows are stored unfiltered
 * (filter type 0) and deflated by zlib at its default level. */
static int l_png(lua_State *L)
{
    const char *op = "tensorboard.png";
    em_tensor *t = emlua_check(L, 1, op);
    if (t->dtype != EM_UINT8 || t->ndim != 3 || t->sizes[2] < 1 || t->sizes[2] > 4 || t->sizes[0] < 1 ||
        t->sizes[1] < 1)
        return emlua_argerror(L, 1, op, "expected a uint8 tensor shaped (H, W, C) with C in 1..4");
    int64_t h = t->sizes[0], w = t->sizes[1], c = t->sizes[2];
    if (h > 0x7FFFFFFF || w > 0x7FFFFFFF / c - 1)
        return emlua_argerror(L, 1, op, "image of %lld x %lld is too large for a PNG", (long long)h, (long long)w);
    em_tensor *img = cpu_contiguous(t, EM_UINT8);
    if (!img) return emlua_fail(L);
    size_t row = (size_t)(w * c) + 1, raw_n = row * (size_t)h;
    uLongf packed_n = compressBound((uLong)raw_n);
    unsigned char *raw = malloc(raw_n), *packed = malloc(packed_n);
    if (!raw || !packed) {
        free(raw);
        free(packed);
        em_release(img);
        return luaL_error(L, "%s: out of memory for a %lld x %lld image", op, (long long)h, (long long)w);
    }
    const unsigned char *px = em_data_ptr(img);
    for (int64_t y = 0; y < h; y++) {
        raw[(size_t)y * row] = 0;
        memcpy(raw + (size_t)y * row + 1, px + (size_t)(y * w * c), row - 1);
    }
    em_release(img);
    int rc = compress2(packed, &packed_n, raw, (uLong)raw_n, Z_DEFAULT_COMPRESSION);
    free(raw);
    if (rc != Z_OK) {
        free(packed);
        return luaL_error(L, "%s: zlib compress failed (%d)", op, rc);
    }
    static const unsigned char color_type[5] = {0, 0, 4, 2, 6};
    unsigned char ihdr[13];
    put_be32(ihdr, (uint32_t)w);
    put_be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;                /* bits per sample */
    ihdr[9] = color_type[c];
    ihdr[10] = ihdr[11] = ihdr[12] = 0;   /* deflate, adaptive filtering, no interlace */
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, "\x89PNG\r\n\x1a\n", 8);
    add_chunk(&b, "IHDR", ihdr, 13);
    add_chunk(&b, "IDAT", packed, packed_n);
    add_chunk(&b, "IEND", NULL, 0);
    free(packed);
    luaL_pushresult(&b);
    return 1;
}

/* The most bins add_histogram takes (ember.utils.tensorboard.MAX_HISTOGRAM_BINS):
 * far more than a chart shows (TensorBoard's default has 1549), and the
 * cost stays small: bins = 1e7 took minutes and 2 GB, mostly in Lua tables
 * of edges and counts and a 160 MB event record. */
#define MAX_HISTOGRAM_BINS 100000

/* _tensorboard.histogram(values, edges): numpy.histogram's counts of the
 * values (any tensor, taken as float64) for the increasing bin edges (a
 * float64 tensor): bin i holds edges[i] <= v < edges[i+1], the last bin also
 * v == its right edge; values outside are not counted. Returns min, max,
 * num, sum, sum of squares and the counts (a table). */
static int l_histogram(lua_State *L)
{
    const char *op = "add_histogram";
    em_tensor *vt = emlua_check(L, 1, op), *et = emlua_check(L, 2, op);
    if (em_numel(vt) == 0) return luaL_error(L, "%s: the values are empty", op);
    if (et->ndim != 1 || et->sizes[0] < 2)
        return luaL_error(L, "%s: expected at least 2 bin edges", op);
    if (et->sizes[0] - 1 > MAX_HISTOGRAM_BINS)
        return luaL_error(L, "%s: %I bins is over the limit of %d", op, (LUAI_UACINT)(et->sizes[0] - 1),
                          MAX_HISTOGRAM_BINS);
    em_tensor *v = cpu_contiguous(vt, EM_FLOAT64);
    if (!v) return emlua_fail(L);
    em_tensor *e = cpu_contiguous(et, EM_FLOAT64);
    if (!e) {
        em_release(v);
        return emlua_fail(L);
    }
    const double *x = em_data_ptr(v), *edges = em_data_ptr(e);
    int64_t n = em_numel(v), nb = et->sizes[0] - 1;
    int64_t *counts = calloc((size_t)nb, sizeof *counts);
    if (!counts) {
        em_release(v);
        em_release(e);
        return luaL_error(L, "%s: out of memory for %lld bins", op, (long long)nb);
    }
    double lo = x[0], hi = x[0], sum = 0, sumsq = 0;
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        double a = x[i];
        if (!isfinite(a)) { finite = false; break; }
        lo = a < lo ? a : lo;
        hi = a > hi ? a : hi;
        sum += a;
        sumsq += a * a;
        if (a < edges[0] || a > edges[nb]) continue;
        /* the last edge <= a, searched in [0, nb): a == edges[nb] falls in bin nb-1 */
        int64_t l = 0, r = nb;
        while (r - l > 1) {
            int64_t m = l + (r - l) / 2;
            if (edges[m] <= a) l = m; else r = m;
        }
        counts[l]++;
    }
    em_release(v);
    em_release(e);
    if (!finite) {
        free(counts);
        return luaL_error(L, "%s: the values contain NaN or infinity", op);
    }
    lua_pushnumber(L, lo);
    lua_pushnumber(L, hi);
    lua_pushinteger(L, (lua_Integer)n);
    lua_pushnumber(L, sum);
    lua_pushnumber(L, sumsq);
    lua_createtable(L, (int)nb, 0);
    for (int64_t i = 0; i < nb; i++) {
        lua_pushinteger(L, (lua_Integer)counts[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    free(counts);
    return 6;
}

/* _tensorboard.makedirs(path): mkdir -p; true, or nil and the reason */
static int l_makedirs(lua_State *L)
{
    size_t n;
    char *p = emlua_string_copy(L, 1, &n);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char saved = p[i];
        p[i] = '\0';
        struct stat st;
        if (mkdir(p, 0777) != 0 && !(errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))) {
            lua_pushnil(L);
            lua_pushfstring(L, "%s: %s", p, strerror(errno == EEXIST ? ENOTDIR : errno));
            return 2;
        }
        p[i] = saved;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* _tensorboard.time(): seconds since the epoch (event wall times) */
static int l_time(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    return 1;
}

static int l_hostname(lua_State *L)
{
    char name[256];
    if (gethostname(name, sizeof name) != 0) strcpy(name, "localhost");
    name[sizeof name - 1] = '\0';
    lua_pushstring(L, name);
    return 1;
}

static int l_getpid(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)getpid());
    return 1;
}

void emlua_open_tensorboard(lua_State *L)
{
    crc32c_init();
    static const luaL_Reg functions[] = {
        {"crc32c", l_crc32c},       {"masked_crc32c", l_masked_crc32c},
        {"record", l_record},       {"png", l_png},
        {"histogram", l_histogram}, {"makedirs", l_makedirs},
        {"time", l_time},           {"hostname", l_hostname},
        {"getpid", l_getpid},       {"open_events", l_open_events},
        {NULL, NULL},
    };
    static const luaL_Reg events_methods[] = {
        {"write", l_events_write}, {"close", l_events_close}, {NULL, NULL},
    };
    emlua_new_class(L, EVENTS_MT, events_methods, l_events_gc, NULL, NULL);
    luaL_newlib(L, functions);
    lua_pushinteger(L, MAX_HISTOGRAM_BINS);
    lua_setfield(L, -2, "MAX_HISTOGRAM_BINS");
    lua_setfield(L, -2, "_tensorboard");
}
