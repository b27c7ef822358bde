/* debug_break.c — the breakpoint table: the commands that change it, and
 * where a breakpoint lands in the code.
 *
 * A breakpoint names a file by a path suffix ("train.lua" matches the chunk
 * "@scripts/train.lua" at a '/' boundary) and a line. The line may have no
 * code (a comment, a blank, the inside of a long expression): it then moves
 * to the next line that has code in the function that contains it. The C
 * API cannot reach a chunk's nested functions before they run, so the
 * chunk's text is compiled again and its dump read: it lists every
 * function with its line range and the line of each instruction. That is
 * done when the file is named (to report the move at once) and again for
 * each chunk whose source matches, the first time one of its functions is
 * entered. Chunks without text ("=name") fall back to the active lines of
 * the function being entered. */
#include "debug.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dbg_break **dbg_breaks;
int dbg_nbreaks;
unsigned dbg_generation = 1;
static int next_id = 1;

int dbg_next_break_id(void) { return next_id; }

int dbg_enabled_count(void)
{
    int n = 0;
    for (int i = 0; i < dbg_nbreaks; i++) n += dbg_breaks[i]->enabled;
    return n;
}

dbg_break *dbg_find_break(int id)
{
    for (int i = 0; i < dbg_nbreaks; i++)
        if (dbg_breaks[i]->id == id) return dbg_breaks[i];
    return NULL;
}

static void free_break(dbg_break *b)
{
    dbg_place *p = b->places;
    while (p) {
        dbg_place *next = p->next;
        free(p->source);
        free(p);
        p = next;
    }
    free(b->file);
    free(b->abs);
    free(b->cond);
    free(b);
}

void dbg_delete_break(int id)
{
    for (int i = 0; i < dbg_nbreaks; i++) {
        if (dbg_breaks[i]->id != id) continue;
        free_break(dbg_breaks[i]);
        memmove(dbg_breaks + i, dbg_breaks + i + 1, sizeof *dbg_breaks * (size_t)(dbg_nbreaks - i - 1));
        dbg_nbreaks--;
        return;
    }
}

/* ---- matching files -------------------------------------------------------- */

static const char *skip_dot_slash(const char *s)
{
    while (s[0] == '.' && s[1] == '/') s += 2;
    return s;
}

bool dbg_source_matches(const dbg_break *b, const char *source, size_t srclen)
{
    if (srclen < 2 || (source[0] != '@' && source[0] != '=')) return false;
    const char *s = source + 1;
    size_t n = srclen - 1;
    size_t flen = strlen(b->file);
    if (flen <= n && memcmp(s + n - flen, b->file, flen) == 0 &&
        (flen == n || s[n - flen - 1] == '/'))
        return true;
    if (b->abs && source[0] == '@') {
        /* "/home/me/t.lua" typed, the chunk loaded as "t.lua" */
        char *real = realpath(s, NULL);
        bool same = real && strcmp(real, b->abs) == 0;
        free(real);
        return same;
    }
    return false;
}

/* ---- the functions of a chunk, from its dump --------------------------------
 * Lua 5.4's dump format (ldump.c): a header, then each function as source,
 * line range, flags, code, constants, upvalues, nested functions, and the
 * debug information (a line delta per instruction, absolute lines every so
 * often, local and upvalue names). Only the line information is kept. */

typedef struct {
    int ld, lld;
    int *lines;      /* sorted, distinct: the lines that have code */
    int nlines;
} proto_lines;

typedef struct {
    proto_lines *v;
    int n, cap;
} proto_list;

typedef struct {
    const unsigned char *p, *end;
    bool bad;
} reader;

static bool rd_need(reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return false;
    }
    return true;
}

static int rd_byte(reader *r)
{
    if (!rd_need(r, 1)) return 0;
    return *r->p++;
}

static void rd_skip(reader *r, size_t n)
{
    if (rd_need(r, n)) r->p += n;
}

/* ldump.c's dumpSize: 7 bits a byte, most significant first, the last byte
 * marked by its high bit */
static size_t rd_size(reader *r)
{
    size_t x = 0;
    for (int i = 0; i < 10; i++) {
        int b = rd_byte(r);
        if (r->bad) return 0;
        x = (x << 7) | (size_t)(b & 0x7f);
        if (b & 0x80) return x;
    }
    r->bad = true;
    return 0;
}

static void rd_string(reader *r)
{
    size_t n = rd_size(r);
    if (n > 0) rd_skip(r, n - 1);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

#define ABSLINEINFO (-0x80)

/* The lines of the instructions, as ldebug.c's collectvalidlines sees them
 * (a vararg function's first instruction, VARARGPREP, is left out). */
static bool collect_lines(proto_lines *pl, bool vararg, const signed char *li, size_t nli,
                          const int *abs, size_t nabs)
{
    pl->lines = malloc(sizeof *pl->lines * (nli ? nli : 1));
    if (!pl->lines) return false;
    int line = pl->ld;
    size_t a = 0;
    for (size_t pc = 0; pc < nli; pc++) {
        if (li[pc] == ABSLINEINFO) {
            while (a < nabs && (size_t)abs[2 * a] < pc) a++;
            if (a < nabs) line = abs[2 * a + 1];
        } else {
            line += li[pc];
        }
        if (!(vararg && pc == 0)) pl->lines[pl->nlines++] = line;
    }
    qsort(pl->lines, (size_t)pl->nlines, sizeof *pl->lines, cmp_int);
    int k = 0;
    for (int i = 0; i < pl->nlines; i++)
        if (k == 0 || pl->lines[k - 1] != pl->lines[i]) pl->lines[k++] = pl->lines[i];
    pl->nlines = k;
    return true;
}

static void rd_function(reader *r, proto_list *out, int depth)
{
    if (depth > 200) {   /* the parser's own nesting limit is lower */
        r->bad = true;
        return;
    }
    rd_string(r);
    int ld = (int)rd_size(r), lld = (int)rd_size(r);
    rd_byte(r);                      /* numparams */
    bool vararg = rd_byte(r) != 0;
    rd_byte(r);                      /* maxstacksize */
    size_t ncode = rd_size(r);
    if (ncode > (size_t)(r->end - r->p) / 4) r->bad = true;
    else rd_skip(r, ncode * 4);
    size_t nk = rd_size(r);
    for (size_t i = 0; i < nk && !r->bad; i++) {
        switch (rd_byte(r)) {
        case 3: case 0x13: rd_skip(r, 8); break;     /* integer, float */
        case 4: case 0x14: rd_string(r); break;      /* short, long string */
        default: break;                              /* nil, false, true */
        }
    }
    size_t nup = rd_size(r);
    if (nup > (size_t)(r->end - r->p) / 3) r->bad = true;
    else rd_skip(r, nup * 3);
    size_t np = rd_size(r);
    for (size_t i = 0; i < np && !r->bad; i++) rd_function(r, out, depth + 1);
    size_t nli = rd_size(r);
    const signed char *li = (const signed char *)r->p;
    rd_skip(r, nli);
    size_t nabs = rd_size(r);
    if (r->bad || nabs > (size_t)(r->end - r->p)) {
        r->bad = true;
        return;
    }
    int *abs = malloc(sizeof *abs * 2 * (nabs ? nabs : 1));
    if (!abs) {
        r->bad = true;
        return;
    }
    for (size_t i = 0; i < nabs; i++) {
        abs[2 * i] = (int)rd_size(r);
        abs[2 * i + 1] = (int)rd_size(r);
    }
    size_t nloc = rd_size(r);
    for (size_t i = 0; i < nloc && !r->bad; i++) {
        rd_string(r);
        rd_size(r);
        rd_size(r);
    }
    size_t nupn = rd_size(r);
    for (size_t i = 0; i < nupn && !r->bad; i++) rd_string(r);
    if (!r->bad && out->n == out->cap) {
        int cap = out->cap ? out->cap * 2 : 16;
        proto_lines *v = realloc(out->v, sizeof *v * (size_t)cap);
        if (v) {
            out->v = v;
            out->cap = cap;
        } else {
            r->bad = true;
        }
    }
    if (!r->bad) {
        proto_lines *pl = &out->v[out->n];
        *pl = (proto_lines){.ld = ld, .lld = lld};
        if (collect_lines(pl, vararg, li, nli, abs, nabs)) out->n++;
        else r->bad = true;
    }
    free(abs);
}

static void free_protos(proto_list *pl)
{
    for (int i = 0; i < pl->n; i++) free(pl->v[i].lines);
    free(pl->v);
    *pl = (proto_list){0};
}

typedef struct {
    char *s;
    size_t len, cap;
} dump_buf;

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud)
{
    (void)L;
    dump_buf *b = ud;
    if (b->len + sz > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + sz) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) return 1;
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, sz);
    b->len += sz;
    return 0;
}

static const unsigned char dump_header[] = {
    0x1b, 'L', 'u', 'a', 0x54, 0, 0x19, 0x93, '\r', '\n', 0x1a, '\n',
};

/* The functions of the compiled chunk on top of L (popped). */
static bool protos_of_chunk(lua_State *L, proto_list *out)
{
    dump_buf b = {0};
    int failed = lua_dump(L, dump_writer, &b, 0);
    lua_pop(L, 1);
    *out = (proto_list){0};
    /* header, then the sizes of Instruction, lua_Integer, lua_Number, then
     * LUAC_INT and LUAC_NUM (8 bytes each here), then the upvalue count */
    size_t hdr = sizeof dump_header + 3 + 16 + 1;
    if (failed || b.len < hdr || memcmp(b.s, dump_header, sizeof dump_header) != 0 ||
        b.s[sizeof dump_header] != 4 || b.s[sizeof dump_header + 1] != 8 ||
        b.s[sizeof dump_header + 2] != 8) {
        free(b.s);
        return false;
    }
    reader r = {(const unsigned char *)b.s + hdr, (const unsigned char *)b.s + b.len, false};
    rd_function(&r, out, 0);
    free(b.s);
    if (r.bad) free_protos(out);
    return !r.bad;
}

/* Compiles the chunk's text again: a file ("@path") or the code itself (a
 * chunk loaded from a string has it as its source). */
static bool protos_of_source(lua_State *L, const char *source, size_t srclen, proto_list *out)
{
    if (!lua_checkstack(L, 4)) return false;
    int status;
    if (source[0] == '@') status = luaL_loadfile(L, source + 1);
    else if (source[0] != '=') status = luaL_loadbuffer(L, source, srclen, source);
    else return false;
    if (status != LUA_OK) {
        lua_pop(L, 1);
        return false;
    }
    return protos_of_chunk(L, out);
}

/* Functions whose range holds a line, innermost first (the main chunk,
 * which holds every line, last). */
static int cmp_holders(const void *a, const void *b)
{
    const proto_lines *x = *(const proto_lines *const *)a, *y = *(const proto_lines *const *)b;
    int xl = x->ld == 0 ? -1 : x->ld, yl = y->ld == 0 ? -1 : y->ld;
    if (xl != yl) return (yl > xl) - (yl < xl);
    return (x->lld > y->lld) - (x->lld < y->lld);
}

/* The innermost function whose range holds line, and the first line with
 * code from line on in it (an enclosing function's when it has none). */
static bool resolve(const proto_list *pl, int line, int *ld, int *lld, int *at)
{
    const proto_lines **holders = malloc(sizeof *holders * (size_t)(pl->n ? pl->n : 1));
    if (!holders) return false;
    int n = 0;
    for (int i = 0; i < pl->n; i++) {
        const proto_lines *p = &pl->v[i];
        if (p->ld == 0 || (p->ld <= line && line <= p->lld)) holders[n++] = p;
    }
    qsort(holders, (size_t)n, sizeof *holders, cmp_holders);
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
        const proto_lines *p = holders[i];
        for (int k = 0; k < p->nlines && !found; k++) {
            if (p->lines[k] >= line) {
                *ld = p->ld;
                *lld = p->lld;
                *at = p->lines[k];
                found = true;
            }
        }
    }
    free(holders);
    return found;
}

/* ---- places ------------------------------------------------------------------ */

static dbg_place *add_place(dbg_break *b, const char *source, size_t srclen, int ld, int lld, int line)
{
    dbg_place *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->source = malloc(srclen + 1);
    if (!p->source) {
        free(p);
        return NULL;
    }
    memcpy(p->source, source, srclen);
    p->source[srclen] = '\0';
    p->srclen = srclen;
    p->linedefined = ld;
    p->lastlinedefined = lld;
    p->line = line;
    p->next = b->places;
    b->places = p;
    return p;
}

static void announce(dbg_break *b, int line)
{
    if (b->announced || line == b->line) return;
    b->announced = true;
    dbg_printf("breakpoint %d moved from %s:%d to line %d\n", b->id, b->file, b->line, line);
}

/* Without the chunk's text: the function being entered, if its range holds
 * the line. A main chunk takes only a line of its own (any other line may
 * belong to a function not yet seen). */
static const dbg_place *place_from_function(lua_State *L, dbg_break *b, lua_Debug *ar)
{
    bool main = ar->linedefined == 0;
    if (!main && (b->line < ar->linedefined || b->line > ar->lastlinedefined)) return NULL;
    if (!lua_checkstack(L, 3)) return NULL;
    lua_getinfo(L, "L", ar);
    int at = INT_MAX;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        int line = (int)lua_tointeger(L, -1);
        if (line >= b->line && line < at && (!main || line == b->line)) at = line;
    }
    lua_pop(L, 1);
    if (at == INT_MAX) return NULL;
    dbg_place *p = add_place(b, ar->source, ar->srclen, ar->linedefined, ar->lastlinedefined, at);
    if (p) announce(b, at);
    return p;
}

const dbg_place *dbg_place_for(lua_State *L, dbg_break *b, lua_Debug *ar)
{
    bool have_text = ar->source[0] != '=';
    for (dbg_place *p = b->places; p; p = p->next) {
        if (p->srclen != ar->srclen || memcmp(p->source, ar->source, p->srclen) != 0) continue;
        if (have_text || (p->linedefined == ar->linedefined && p->lastlinedefined == ar->lastlinedefined))
            return p->line ? p : NULL;
    }
    if (!have_text) return place_from_function(L, b, ar);
    proto_list pl;
    if (!protos_of_source(L, ar->source, ar->srclen, &pl)) return place_from_function(L, b, ar);
    int ld = 0, lld = 0, at = 0;
    if (!resolve(&pl, b->line, &ld, &lld, &at)) at = 0;
    free_protos(&pl);
    dbg_place *p = add_place(b, ar->source, ar->srclen, ld, lld, at);
    if (!p) return NULL;
    if (at) announce(b, at);
    else if (!b->announced) {
        b->announced = true;
        dbg_printf("breakpoint %d: no code at or after line %d in %s\n", b->id, b->line, ar->short_src);
    }
    return at ? p : NULL;
}

/* ---- the commands -------------------------------------------------------------- */

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* A positive integer at *s (advanced past it). */
static bool parse_number(const char **s, long *out)
{
    const char *p = skip_space(*s);
    if (*p < '0' || *p > '9') return false;
    char *end;
    long v = strtol(p, &end, 10);
    if (v <= 0 || v > INT_MAX) return false;
    *out = v;
    *s = end;
    return true;
}

/* Checks that the condition compiles as an expression. */
static bool condition_ok(lua_State *L, const char *cond, const char *what)
{
    const char *code = lua_pushfstring(L, "return %s;", cond);
    int status = luaL_loadbuffer(L, code, strlen(code), "=(condition)");
    if (status != LUA_OK) dbg_error("%s: bad condition: %s", what, lua_tostring(L, -1));
    lua_pop(L, 2);
    return status == LUA_OK;
}

/* "file:line" (or "line" with a default file), then "hits N", then
 * "if cond" to the end of the line. */
static bool parse_break(lua_State *L, const char *args, const char *default_file, const char *what,
                        char **file, long *line, long *hits, char **cond)
{
    const char *s = skip_space(args);
    size_t len = strcspn(s, " \t");
    if (len == 0) {
        dbg_error("%s: expected file:line (then optionally hits N, if condition)", what);
        return false;
    }
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ':') colon = s + i;
    const char *num = colon ? colon + 1 : s;
    const char *after = num;
    if (!parse_number(&after, line) || after != s + len) {
        dbg_error("%s: '%.*s' is not file:line", what, (int)len, s);
        return false;
    }
    if (colon) {
        const char *f = skip_dot_slash(s);
        if (f >= colon) {
            dbg_error("%s: '%.*s' names no file", what, (int)len, s);
            return false;
        }
        *file = strndup(f, (size_t)(colon - f));
    } else if (default_file) {
        *file = strdup(default_file);
    } else {
        dbg_error("%s: '%.*s': which file? (file:line)", what, (int)len, s);
        return false;
    }
    s = skip_space(s + len);
    *hits = 0;
    *cond = NULL;
    if (strncmp(s, "hits", 4) == 0 && (s[4] == ' ' || s[4] == '\t')) {
        s += 4;
        if (!parse_number(&s, hits)) {
            dbg_error("%s: hits needs a positive count", what);
            free(*file);
            return false;
        }
        s = skip_space(s);
    }
    if (strncmp(s, "if", 2) == 0 && (s[2] == ' ' || s[2] == '\t')) {
        s = skip_space(s + 2);
        if (*s == '\0' || !condition_ok(L, s, what)) {
            if (*s == '\0') dbg_error("%s: 'if' needs a condition", what);
            free(*file);
            return false;
        }
        *cond = strdup(s);
    } else if (*s != '\0') {
        dbg_error("%s: unexpected '%s' (after file:line: hits N, if condition)", what, s);
        free(*file);
        return false;
    }
    return true;
}

/* Checks the file when it can be read here: says where the breakpoint
 * lands, or why it cannot. Returns false to refuse the breakpoint. */
static bool check_file(lua_State *L, dbg_break *b)
{
    FILE *f = fopen(b->file, "r");
    if (!f) {
        dbg_printf("breakpoint %d pending at %s:%d (no such file here; it is placed when code "
                   "from a file ending in %s runs)\n", b->id, b->file, b->line, b->file);
        return true;
    }
    fclose(f);
    b->abs = realpath(b->file, NULL);
    int status = luaL_loadfile(L, b->file);
    proto_list pl;
    if (status != LUA_OK) {
        dbg_printf("breakpoint %d at %s:%d (the file does not compile: %s)\n", b->id, b->file,
                   b->line, lua_tostring(L, -1));
        lua_pop(L, 1);
        return true;
    }
    if (!protos_of_chunk(L, &pl)) {
        dbg_printf("breakpoint %d at %s:%d\n", b->id, b->file, b->line);
        return true;
    }
    int ld = 0, lld = 0, at = 0;
    bool ok = resolve(&pl, b->line, &ld, &lld, &at);
    free_protos(&pl);
    if (!ok) {
        dbg_error("break: no code at or after line %d in %s", b->line, b->file);
        return false;
    }
    b->at = at;
    if (at == b->line) dbg_printf("breakpoint %d at %s:%d\n", b->id, b->file, b->line);
    else announce(b, at);
    b->announced = true;
    return true;
}

static void cmd_break(lua_State *L, const char *args, const char *default_file, bool temporary)
{
    const char *what = temporary ? "tbreak" : "break";
    char *file, *cond;
    long line, hits;
    if (!parse_break(L, args, default_file, what, &file, &line, &hits, &cond)) return;
    dbg_break *b = calloc(1, sizeof *b);
    dbg_break **v = realloc(dbg_breaks, sizeof *v * (size_t)(dbg_nbreaks + 1));
    if (!b || !v) {
        free(b);
        free(file);
        free(cond);
        dbg_error("%s: out of memory", what);
        return;
    }
    dbg_breaks = v;
    b->id = next_id;
    b->file = file;
    b->line = (int)line;
    b->cond = cond;
    b->hits_wanted = hits;
    b->enabled = true;
    b->temporary = temporary;
    if (!check_file(L, b)) {
        free_break(b);
        return;
    }
    next_id++;
    dbg_breaks[dbg_nbreaks++] = b;
}

static void list_breaks(void)
{
    if (dbg_nbreaks == 0) {
        dbg_printf("no breakpoints\n");
        return;
    }
    for (int i = 0; i < dbg_nbreaks; i++) {
        dbg_break *b = dbg_breaks[i];
        char where[512], moved[64] = "", hits[64];
        snprintf(where, sizeof where, "%s:%d", b->file, b->line);
        int at = b->at;
        for (dbg_place *p = b->places; p; p = p->next)
            if (p->line) at = p->line;
        if (at && at != b->line) snprintf(moved, sizeof moved, " (at line %d)", at);
        else if (!at && !b->places) snprintf(moved, sizeof moved, " (pending)");
        if (b->hits_wanted > 1) snprintf(hits, sizeof hits, "hits %ld, stops from %ld", b->hits, b->hits_wanted);
        else snprintf(hits, sizeof hits, "hits %ld", b->hits);
        dbg_printf("%-3d %s%s  %s  %s%s%s%s\n", b->id, where, moved, b->enabled ? "enabled" : "disabled",
                   hits, b->cond ? "  if " : "", b->cond ? b->cond : "", b->temporary ? "  (temporary)" : "");
    }
}

/* The breakpoint numbered in args, or NULL (the error printed). */
static dbg_break *break_arg(const char **args, const char *what)
{
    long id;
    const char *s = *args;
    if (!parse_number(&s, &id)) {
        dbg_error("%s: expected a breakpoint number", what);
        return NULL;
    }
    dbg_break *b = dbg_find_break((int)id);
    if (!b) dbg_error("%s: no breakpoint %ld", what, id);
    *args = skip_space(s);
    return b;
}

static void cmd_delete(const char *args)
{
    args = skip_space(args);
    if (*args == '\0') {
        int n = dbg_nbreaks;
        while (dbg_nbreaks) dbg_delete_break(dbg_breaks[0]->id);
        dbg_printf("deleted %d breakpoint%s\n", n, n == 1 ? "" : "s");
        return;
    }
    while (*args) {
        dbg_break *b = break_arg(&args, "delete");
        if (!b) return;
        dbg_delete_break(b->id);
    }
}

static void cmd_enable(const char *args, bool on)
{
    args = skip_space(args);
    if (*args == '\0') {
        dbg_error("%s: expected a breakpoint number", on ? "enable" : "disable");
        return;
    }
    while (*args) {
        dbg_break *b = break_arg(&args, on ? "enable" : "disable");
        if (!b) return;
        b->enabled = on;
    }
}

static void cmd_condition(lua_State *L, const char *args)
{
    dbg_break *b = break_arg(&args, "condition");
    if (!b) return;
    if (*args == '\0') {
        free(b->cond);
        b->cond = NULL;
        dbg_printf("breakpoint %d is now unconditional\n", b->id);
        return;
    }
    if (!condition_ok(L, args, "condition")) return;
    free(b->cond);
    b->cond = strdup(args);
}

bool dbg_break_command(lua_State *L, const char *cmd, const char *args, const char *default_file)
{
    if (strcmp(cmd, "break") == 0 || strcmp(cmd, "b") == 0) cmd_break(L, args, default_file, false);
    else if (strcmp(cmd, "tbreak") == 0) cmd_break(L, args, default_file, true);
    else if (strcmp(cmd, "breaks") == 0) list_breaks();
    else if (strcmp(cmd, "delete") == 0) cmd_delete(args);
    else if (strcmp(cmd, "disable") == 0) cmd_enable(args, false);
    else if (strcmp(cmd, "enable") == 0) cmd_enable(args, true);
    else if (strcmp(cmd, "condition") == 0) cmd_condition(L, args);
    else return false;
    return true;
}
