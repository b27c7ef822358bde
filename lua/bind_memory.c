/* bind_memory.c — the C half of ember.memory (lua/ember/memory.lua): which
 * Lua line made each live storage, and the bytes held over time.
 *
 * While recording, the engine's storage hook (engine/debug.h) enters every
 * new storage in a table keyed by its address and removes it when freed.
 * A storage made inside a backward pass is marked with the node computing
 * it and the line of the backward() call; any other gets its line when the
 * binding first hands a tensor on it to Lua (emlua_push): the first calling
 * frame outside ember's Lua library, so a layer's weights count at the line
 * that built the model. Storages never seen from Lua (an op's temporaries)
 * stay "made inside an op".
 *   ember._mem_record(on, max_entries, lib_prefix)  start (clearing) or stop
 *   ember._mem_snapshot() -> {{site =, node =, count =, bytes =, device =}, ...},
 *                            tracked CPU bytes, tracked CUDA bytes
 *   ember._mem_history()  -> times, CPU bytes, CUDA bytes, the change's signed
 *                            bytes and its line (one entry per change)
 *   ember._mem_free_bytes() -> the host's available memory (MemAvailable), or nil */
#include "binding.h"
#include "../engine/debug.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool emlua_mem_recording;

typedef struct entry {
    const em_storage *s;    /* NULL: empty slot */
    size_t nbytes;
    int cuda;
    int site;               /* index into sites, -1: not yet seen from Lua */
    const char *node;       /* the backward node that made it, or NULL */
    int bsite;              /* the backward() call's line then */
    uint32_t serial;        /* the storage's number in this recording */
} entry;

static entry *table;
static size_t cap, count;           /* cap: a power of two */
static char **sites;
static int nsites, sites_cap;
static int backward_site = -1;      /* the line of the backward() running now */
static char *lib_prefix;
static size_t max_entries;
static double *hist_t;
static size_t *hist_cpu, *hist_cuda;
static int64_t *hist_delta;         /* bytes made (> 0) or freed (< 0) */
static uint32_t *hist_serial;       /* by which storage */
static size_t nhist, hist_cap;
/* Each recorded storage's line, by its serial number, for the history by line
 * (a storage gets its line after it is made, when Lua first sees it):
 * SITE_IN_OP while unseen, SITE_BACKWARD_UNKNOWN, or 2 * site + (made by a
 * backward node). */
enum { SITE_IN_OP = -1, SITE_BACKWARD_UNKNOWN = -2 };
static int *serial_site;
static uint32_t nserial, serial_cap;
static size_t live[2];              /* tracked bytes, CPU and CUDA */

static size_t slot_of(const em_storage *s)
{
    uintptr_t h = (uintptr_t)s;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 7) & (cap - 1);
}

static bool grow(void)
{
    size_t ncap = cap ? cap * 2 : 4096;
    entry *nt = calloc(ncap, sizeof *nt);
    if (!nt) return false;
    entry *old = table;
    size_t ocap = cap;
    table = nt;
    cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].s) continue;
        size_t j = slot_of(old[i].s);
        while (table[j].s) j = (j + 1) & (cap - 1);
        table[j] = old[i];
    }
    free(old);
    return true;
}

static entry *find(const em_storage *s)
{
    if (!cap) return NULL;
    for (size_t j = slot_of(s);; j = (j + 1) & (cap - 1)) {
        if (table[j].s == s) return &table[j];
        if (!table[j].s) return NULL;
    }
}

/* removal with backward shift: later entries of the run move up, so a probe
 * never stops early at the hole */
static void remove_at(size_t i)
{
    table[i].s = NULL;
    for (size_t j = (i + 1) & (cap - 1); table[j].s; j = (j + 1) & (cap - 1)) {
        size_t home = slot_of(table[j].s);
        /* j's entry may fill i when its home is not in (i, j] cyclically */
        bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!between) {
            table[i] = table[j];
            table[j].s = NULL;
            i = j;
        }
    }
}

/* reallocates the array p to ncap elements, or returns false from the caller */
#define GROW_ARRAY(p, ncap)                                 \
    do {                                                    \
        void *grown_ = realloc((p), (ncap) * sizeof *(p)); \
        if (!grown_) return false;                          \
        (p) = grown_;                                       \
    } while (0)

static bool grow_history(size_t ncap)
{
    GROW_ARRAY(hist_t, ncap);
    GROW_ARRAY(hist_cpu, ncap);
    GROW_ARRAY(hist_cuda, ncap);
    GROW_ARRAY(hist_delta, ncap);
    GROW_ARRAY(hist_serial, ncap);
    hist_cap = ncap;
    return true;
}

static bool grow_serials(uint32_t ncap)
{
    GROW_ARRAY(serial_site, ncap);
    serial_cap = ncap;
    return true;
}

static void note_history(int64_t delta, uint32_t serial)
{
    if (nhist >= max_entries) return;
    if (nhist == hist_cap) {
        size_t ncap = hist_cap ? hist_cap * 2 : 4096;
        if (!grow_history(ncap)) return;
    }
    hist_t[nhist] = emlua_now();
    hist_cpu[nhist] = live[0];
    hist_cuda[nhist] = live[1];
    hist_delta[nhist] = delta;
    hist_serial[nhist] = serial;
    nhist++;
}

/* a serial number for a new storage and its line code; UINT32_MAX when out of memory */
static uint32_t new_serial(int code)
{
    if (nserial == serial_cap) {
        uint32_t ncap = serial_cap ? serial_cap * 2 : 4096;
        if (ncap <= serial_cap || !grow_serials(ncap)) return UINT32_MAX;
    }
    serial_site[nserial] = code;
    return nserial++;
}

static void set_serial_site(uint32_t serial, int code)
{
    if (serial < nserial) serial_site[serial] = code;
}

static void storage_hook(const em_storage *s, bool alive)
{
    int cuda = s->device.type == EM_CUDA;
    if (!alive) {
        if (!cap) return;
        for (size_t j = slot_of(s);; j = (j + 1) & (cap - 1)) {
            if (!table[j].s) return;          /* made before the recording */
            if (table[j].s == s) {
                live[table[j].cuda] -= table[j].nbytes;
                int64_t freed = -(int64_t)table[j].nbytes;
                uint32_t serial = table[j].serial;
                remove_at(j);
                count--;
                note_history(freed, serial);
                return;
            }
        }
    }
    if ((count + 1) * 2 > cap && !grow()) return;
    size_t j = slot_of(s);
    while (table[j].s) j = (j + 1) & (cap - 1);
    const char *node = em_ag_running_node();
    int bsite = node ? backward_site : -1;
    uint32_t serial = new_serial(node ? (bsite >= 0 ? 2 * bsite + 1 : SITE_BACKWARD_UNKNOWN) : SITE_IN_OP);
    table[j] = (entry){s, s->nbytes, cuda, -1, node, bsite, serial};
    count++;
    live[cuda] += s->nbytes;
    note_history((int64_t)s->nbytes, serial);
}

static void clear(void)
{
    free(table);
    table = NULL;
    cap = count = 0;
    for (int i = 0; i < nsites; i++) free(sites[i]);
    free(sites);
    sites = NULL;
    nsites = sites_cap = 0;
    free(hist_t); free(hist_cpu); free(hist_cuda); free(hist_delta); free(hist_serial); free(serial_site);
    hist_t = NULL; hist_cpu = hist_cuda = NULL;
    hist_delta = NULL;
    hist_serial = NULL;
    serial_site = NULL;
    nhist = hist_cap = 0;
    nserial = serial_cap = 0;
    live[0] = live[1] = 0;
    backward_site = -1;
}

/* the index of site text (copied), or -1 */
static int intern(const char *text)
{
    for (int i = nsites - 1; i >= 0 && i >= nsites - 64; i--)   /* recent sites repeat */
        if (strcmp(sites[i], text) == 0) return i;
    for (int i = 0; i < nsites - 64; i++)
        if (strcmp(sites[i], text) == 0) return i;
    if (nsites == sites_cap) {
        int ncap = sites_cap ? sites_cap * 2 : 256;
        char **g = realloc(sites, (size_t)ncap * sizeof *g);
        if (!g) return -1;
        sites = g;
        sites_cap = ncap;
    }
    char *copy = strdup(text);
    if (!copy) return -1;
    sites[nsites] = copy;
    return nsites++;
}

/* "file:line" of the first calling frame outside C and ember's Lua library */
static int user_site(lua_State *L)
{
    lua_Debug ar;
    size_t plen = lib_prefix ? strlen(lib_prefix) : 0;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline < 0) continue;
        if (plen && strncmp(ar.source, lib_prefix, plen) == 0) continue;
        char buf[LUA_IDSIZE + 32];
        snprintf(buf, sizeof buf, "%s:%d", ar.short_src, ar.currentline);
        return intern(buf);
    }
    return intern("?");
}

void emlua_mem_seen(lua_State *L, const em_tensor *t)
{
    entry *e = find(t->storage);
    if (e && e->site < 0 && !e->node) {
        e->site = user_site(L);
        if (e->site >= 0) set_serial_site(e->serial, 2 * e->site);
    }
}

void emlua_mem_backward(lua_State *L, bool begin)
{
    backward_site = begin ? user_site(L) : -1;
}

/* the lines holding the most tracked bytes, for an out-of-memory message:
 * pushes a string (empty when not recording) */
void emlua_mem_top_lines(lua_State *L, int n)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (!emlua_mem_recording) { luaL_pushresult(&b); return; }
    /* bytes per site (-1: made inside an op, node: by backward) */
    size_t *bytes = calloc((size_t)nsites + 1, sizeof *bytes);
    if (!bytes) { luaL_pushresult(&b); return; }
    for (size_t i = 0; i < cap; i++)
        if (table[i].s) bytes[(table[i].node ? table[i].bsite : table[i].site) + 1] += table[i].nbytes;
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int i = 0; i <= nsites; i++)
            if (bytes[i] && (best < 0 || bytes[i] > bytes[best])) best = i;
        if (best < 0) break;
        char line[LUA_IDSIZE + 64];
        snprintf(line, sizeof line, "%s%s %.1f MB", k ? ", " : "", best ? sites[best - 1] : "(inside an op)",
                 (double)bytes[best] / 1e6);
        luaL_addstring(&b, line);
        bytes[best] = 0;
    }
    free(bytes);
    luaL_pushresult(&b);
}

static int m_mem_record(lua_State *L)
{
    bool on = lua_toboolean(L, 1);
    clear();
    free(lib_prefix);
    lib_prefix = NULL;
    if (on) {
        lua_Integer max = luaL_optinteger(L, 2, 1000000);
        if (max < 0) return luaL_error(L, "record_history: max_entries must be >= 0, got %d", (int)max);
        max_entries = (size_t)max;
        const char *p = luaL_optstring(L, 3, NULL);
        lib_prefix = p ? strdup(p) : NULL;
    }
    emlua_mem_recording = on;
    em_set_storage_hook(on ? storage_hook : NULL);
    return 0;
}

static int m_mem_snapshot(lua_State *L)
{
    /* groups by (site, node, bsite, device), in a Lua table keyed by a string */
    lua_newtable(L);                    /* key -> group */
    int groups = lua_gettop(L);
    for (size_t i = 0; i < cap; i++) {
        const entry *e = &table[i];
        if (!e->s) continue;
        lua_pushfstring(L, "%d|%s|%d|%d", e->site, e->node ? e->node : "", e->bsite, e->cuda);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, groups) == LUA_TNIL) {
            lua_pop(L, 1);
            lua_createtable(L, 0, 5);
            if (e->node) {
                lua_pushstring(L, e->bsite >= 0 ? sites[e->bsite] : "?");
                lua_setfield(L, -2, "site");
                lua_pushstring(L, e->node);
                lua_setfield(L, -2, "node");
            } else {
                lua_pushstring(L, e->site >= 0 ? sites[e->site] : "(inside an op)");
                lua_setfield(L, -2, "site");
            }
            lua_pushstring(L, e->cuda ? "cuda" : "cpu");
            lua_setfield(L, -2, "device");
            lua_pushinteger(L, 0);
            lua_setfield(L, -2, "count");
            lua_pushinteger(L, 0);
            lua_setfield(L, -2, "bytes");
            lua_pushvalue(L, -2);
            lua_pushvalue(L, -2);
            lua_rawset(L, groups);
        }
        lua_getfield(L, -1, "count");
        lua_Integer c = lua_tointeger(L, -1) + 1;
        lua_pop(L, 1);
        lua_pushinteger(L, c);
        lua_setfield(L, -2, "count");
        lua_getfield(L, -1, "bytes");
        lua_Integer nb = lua_tointeger(L, -1) + (lua_Integer)e->nbytes;
        lua_pop(L, 1);
        lua_pushinteger(L, nb);
        lua_setfield(L, -2, "bytes");
        lua_pop(L, 2);
    }
    /* as a list */
    lua_newtable(L);
    int list = lua_gettop(L);
    lua_Integer k = 0;
    lua_pushnil(L);
    while (lua_next(L, groups)) {
        lua_rawseti(L, list, ++k);
    }
    lua_pushinteger(L, (lua_Integer)live[0]);
    lua_pushinteger(L, (lua_Integer)live[1]);
    return 3;
}

/* the text of a line code: "file:line", "file:line (backward)", "(inside an op)" */
static void push_site(lua_State *L, int code)
{
    if (code == SITE_IN_OP) lua_pushliteral(L, "(inside an op)");
    else if (code < 0) lua_pushliteral(L, "? (backward)");
    else if (code & 1) lua_pushfstring(L, "%s (backward)", sites[code >> 1]);
    else lua_pushstring(L, sites[code >> 1]);
}

static int m_mem_history(lua_State *L)
{
    luaL_checkstack(L, 8, "memory history");
    for (int k = 0; k < 5; k++) lua_createtable(L, (int)nhist, 0);
    int base = lua_gettop(L) - 4;   /* t, cpu, cuda, delta, site */
    lua_newtable(L);                /* code -> site text, made once each */
    int texts = lua_gettop(L);
    for (size_t i = 0; i < nhist; i++) {
        lua_Integer k = (lua_Integer)i + 1;
        lua_pushnumber(L, hist_t[i]);
        lua_rawseti(L, base, k);
        lua_pushinteger(L, (lua_Integer)hist_cpu[i]);
        lua_rawseti(L, base + 1, k);
        lua_pushinteger(L, (lua_Integer)hist_cuda[i]);
        lua_rawseti(L, base + 2, k);
        lua_pushinteger(L, (lua_Integer)hist_delta[i]);
        lua_rawseti(L, base + 3, k);
        int code = hist_serial[i] < nserial ? serial_site[hist_serial[i]] : SITE_IN_OP;
        if (lua_rawgeti(L, texts, code) == LUA_TNIL) {
            lua_pop(L, 1);
            push_site(L, code);
            lua_pushvalue(L, -1);
            lua_rawseti(L, texts, code);
        }
        lua_rawseti(L, base + 4, k);
    }
    lua_pop(L, 1);
    return 5;
}

/* MemAvailable from /proc/meminfo, in bytes; -1 when unknown */
double emlua_host_free_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

static int m_mem_free_bytes(lua_State *L)
{
    double b = emlua_host_free_bytes();
    if (b < 0) lua_pushnil(L);
    else lua_pushinteger(L, (lua_Integer)b);
    return 1;
}

void emlua_open_memory(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_mem_record", m_mem_record},
        {"_mem_snapshot", m_mem_snapshot},
        {"_mem_history", m_mem_history},
        {"_mem_free_bytes", m_mem_free_bytes},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}
