/* print.c — the REPL's value printer.
 *
 * Values are rendered into a C buffer and written at the end, so that a
 * failure half-way (out of memory) still shows what was rendered. Tables are
 * walked with lua_next and read with lua_rawget: the only user code that
 * runs is a __tostring metamethod, always under lua_pcall. A table is first
 * rendered on one line; when that would pass the terminal's width it is
 * rendered one field per line, each field again trying one line first.
 *
 * Tables that hold code rather than data (modules, classes) are never
 * walked: they print as one line naming what they are ("module ember.nn
 * {...}", "class Linear {...}"). Where one line per value is wanted (":vars",
 * the debugger's locals) objects (tables with a class: nn modules,
 * optimizers, sizes) are one line too: their __tostring squeezed onto it. */
#include "shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../lua/binding.h"   /* EMLUA_TENSOR, the tensor metatable's name */

#define MAX_DEPTH 4      /* tables nested deeper print as {...} */
#define MAX_FIELDS 100   /* fields shown per table, then "... (N more)" */
#define INDENT 2
#define SUMMARY_CHARS 40   /* of a long string, in ":vars" */
#define SCAN_FIELDS 256    /* fields looked at to tell a module from data */

#define SGR_NUMBER "\x1b[36m"
#define SGR_STRING "\x1b[32m"
#define SGR_CONST "\x1b[35m"   /* nil, true, false */
#define SGR_KEY "\x1b[33m"
#define SGR_DIM "\x1b[2m"
#define SGR_ERROR "\x1b[31m"
#define SGR_RESET "\x1b[0m"

/* ---- the output buffer --------------------------------------------------- */

typedef struct {
    char *s;
    size_t len, cap;
    int col;      /* visible column after the last newline */
    int limit;    /* > 0: one-line attempt, give up past this column */
    bool over;    /* the attempt went past limit, or wrapped a line */
    bool oom;
} sbuf;

static void sb_raw(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

/* Text that takes room on the screen: the column is tracked (UTF-8
 * continuation bytes take none) to decide whether a table fits. */
static void sb_text(sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') {
            b->col = 0;
            if (b->limit > 0) b->over = true;
        } else if (c == '\t') {
            b->col = (b->col / 8 + 1) * 8;
        } else if ((c & 0xC0) != 0x80) {
            b->col++;
        }
    }
    if (b->limit > 0 && b->col > b->limit) b->over = true;
    sb_raw(b, s, n);
}

static void sb_puts(sbuf *b, const char *s) { sb_text(b, s, strlen(s)); }

static void sb_spaces(sbuf *b, int n)
{
    for (int i = 0; i < n; i++) sb_text(b, " ", 1);
}

/* ---- the printer --------------------------------------------------------- */

typedef struct {
    lua_State *L;
    bool color;
    int width;
    const void *path[MAX_DEPTH + 2];   /* the tables being printed, outermost first */
    int npath;
    sbuf out;
} printer;

static void sgr(printer *p, sbuf *b, const char *code)
{
    if (p->color) sb_raw(b, code, strlen(code));
}

/* s in the colour code ("" for none) */
static void colored(printer *p, sbuf *b, const char *code, const char *s, size_t n)
{
    if (!*code) {
        sb_text(b, s, n);
        return;
    }
    sgr(p, b, code);
    sb_text(b, s, n);
    sgr(p, b, SGR_RESET);
}

/* out's width when it is a terminal (an attached debugger's socket: 80) */
static int terminal_width(FILE *out)
{
    struct winsize ws;
    int fd = fileno(out);
    if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

static int tostring_k(lua_State *L)
{
    luaL_tolstring(L, 1, NULL);
    return 1;
}

/* luaL_tolstring of the value at idx under lua_pcall: pushes the string, or
 * the error turned into "<error in __tostring: msg>"; returns true when it
 * is the error. */
static bool push_tostring(lua_State *L, int idx)
{
    lua_pushcfunction(L, tostring_k);
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) return false;
    const char *msg = lua_tostring(L, -1);
    if (msg) lua_pushfstring(L, "<error in __tostring: %s>", msg);
    else lua_pushfstring(L, "<error in __tostring: (error object is a %s value)>", luaL_typename(L, -1));
    lua_remove(L, -2);
    return true;
}

/* Text that may span lines (a __tostring result inside a table): its later
 * lines are indented to the column where it starts. */
static void put_block(printer *p, sbuf *b, const char *code, const char *s, size_t n)
{
    int indent = b->col;
    sgr(p, b, code);
    for (;;) {
        const char *nl = memchr(s, '\n', n);
        if (!nl) break;
        sb_text(b, s, (size_t)(nl - s + 1));
        sb_spaces(b, indent);
        n -= (size_t)(nl - s + 1);
        s = nl + 1;
    }
    sb_text(b, s, n);
    sgr(p, b, SGR_RESET);
}

static void put_tostring(printer *p, sbuf *b, int idx, bool nested)
{
    lua_State *L = p->L;
    bool err = push_tostring(L, idx);
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (nested) put_block(p, b, err ? SGR_ERROR : "", s, n);
    else if (err) colored(p, b, SGR_ERROR, s, n);
    else sb_text(b, s, n);
    lua_pop(L, 1);
}

static void put_number(printer *p, sbuf *b, int idx)
{
    lua_State *L = p->L;
    lua_pushvalue(L, idx);
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);   /* converts the copy, no metamethod */
    colored(p, b, SGR_NUMBER, s, n);
    lua_pop(L, 1);
}

/* The length of the valid UTF-8 sequence of two or more bytes at s, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    if (len == 0 || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (len == 3 && s[0] == 0xE0 && s[1] < 0xA0) return 0;   /* overlong */
    if (len == 3 && s[0] == 0xED && s[1] >= 0xA0) return 0;  /* surrogate */
    if (len == 4 && s[0] == 0xF0 && s[1] < 0x90) return 0;   /* overlong */
    if (len == 4 && s[0] == 0xF4 && s[1] >= 0x90) return 0;  /* past U+10FFFF */
    return len;
}

/* A string as Lua source, in double quotes, with escapes for the bytes that
 * would not show: control characters and bytes that are not UTF-8 text. */
static void put_quoted(sbuf *b, const char *s, size_t n)
{
    sb_text(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\t': esc = "\\t"; break;
        case '\r': esc = "\\r"; break;
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\v': esc = "\\v"; break;
        default: break;
        }
        if (esc) {
            sb_puts(b, esc);
        } else if (c >= 0x80 && utf8_seq((const unsigned char *)s + i, n - i)) {
            size_t len = utf8_seq((const unsigned char *)s + i, n - i);
            sb_text(b, s + i, len);
            i += len - 1;
        } else if (c < 0x20 || c >= 0x7f) {
            char num[8];
            bool digit_next = i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9';
            snprintf(num, sizeof num, digit_next ? "\\%03u" : "\\%u", c);
            sb_puts(b, num);
        } else {
            sb_text(b, s + i, 1);
        }
    }
    sb_text(b, "\"", 1);
}

static void put_string(printer *p, sbuf *b, int idx)
{
    size_t n;
    const char *s = lua_tolstring(p->L, idx, &n);
    sgr(p, b, SGR_STRING);
    put_quoted(b, s, n);
    sgr(p, b, SGR_RESET);
}

/* "function: 0x... (file.lua:12)", or "function: builtin: 0x..." for C */
static void put_function(printer *p, sbuf *b, int idx)
{
    lua_State *L = p->L;
    char text[LUA_IDSIZE + 64];
    lua_Debug ar;
    lua_pushvalue(L, idx);
    const void *ptr = lua_topointer(L, -1);
    if (lua_getinfo(L, ">S", &ar) && ar.what[0] != 'C')
        snprintf(text, sizeof text, "function: %p (%s:%d)", ptr, ar.short_src, ar.linedefined);
    else
        snprintf(text, sizeof text, "function: builtin: %p", ptr);
    sb_puts(b, text);
}

static bool is_tensor(lua_State *L, int idx)
{
    return luaL_testudata(L, idx, EMLUA_TENSOR) != NULL;
}

/* tensor(float32, [3, 4], cpu): properties through the tensor's own
 * __index, which is ember's and cheap (no data is read). */
static int tensor_summary_k(lua_State *L)
{
    luaL_Buffer b;
    lua_getfield(L, 1, "dtype");
    lua_getfield(L, 1, "shape");
    lua_getfield(L, 1, "device");
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "tensor(");
    luaL_addstring(&b, luaL_optstring(L, 2, "?"));
    luaL_addstring(&b, ", [");
    lua_Integer nd = lua_istable(L, 3) ? (lua_Integer)lua_rawlen(L, 3) : 0;
    for (lua_Integer i = 1; i <= nd; i++) {
        lua_rawgeti(L, 3, i);
        lua_pushfstring(L, i > 1 ? ", %I" : "%I", (LUAI_UACINT)lua_tointeger(L, -1));
        lua_remove(L, -2);
        luaL_addvalue(&b);
    }
    luaL_addstring(&b, "], ");
    luaL_addstring(&b, luaL_optstring(L, 4, "?"));
    luaL_addstring(&b, ")");
    luaL_pushresult(&b);
    return 1;
}

static void put_tensor_summary(printer *p, sbuf *b, int idx)
{
    lua_State *L = p->L;
    lua_pushcfunction(L, tensor_summary_k);
    lua_pushvalue(L, idx);
    size_t n;
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
        const char *s = lua_tolstring(L, -1, &n);
        colored(p, b, SGR_DIM, s, n);
    } else {
        const char *msg = lua_tostring(L, -1);
        lua_pushfstring(L, "tensor(<%s>)", msg ? msg : "error");
        const char *s = lua_tolstring(L, -1, &n);
        colored(p, b, SGR_ERROR, s, n);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* ---- tables -------------------------------------------------------------- */

static bool is_keyword(const char *s)
{
    static const char *const words[] = {
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
        NULL,
    };
    for (int i = 0; words[i]; i++)
        if (strcmp(s, words[i]) == 0) return true;
    return false;
}

static bool is_identifier(const char *s, size_t n)
{
    if (n == 0 || strlen(s) != n) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return !is_keyword(s);
}

/* A key of the hash part, for sorting: numbers, then strings, then the rest
 * by type name and address. */
typedef struct {
    int pos;          /* its index in the key list */
    int rank;         /* 0 number, 1 string, 2 other */
    bool isint;
    lua_Integer i;
    lua_Number d;
    const char *s;    /* string keys stay alive in the key list */
    size_t len;
    const char *tname;
    const void *ptr;
    int b;
} key_entry;

static int cmp_keys(const void *va, const void *vb)
{
    const key_entry *a = va, *b = vb;
    if (a->rank != b->rank) return a->rank - b->rank;
    if (a->rank == 0) {
        if (a->isint && b->isint) return (a->i > b->i) - (a->i < b->i);
        lua_Number x = a->isint ? (lua_Number)a->i : a->d;
        lua_Number y = b->isint ? (lua_Number)b->i : b->d;
        if (x != y) return (x > y) - (x < y);
        return a->isint - b->isint;
    }
    if (a->rank == 1) {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, n);
        if (c) return c;
        return (a->len > b->len) - (a->len < b->len);
    }
    int c = strcmp(a->tname, b->tname);
    if (c) return c;
    if (a->b != b->b) return a->b - b->b;
    return (a->ptr > b->ptr) - (a->ptr < b->ptr);
}

static void fill_entry(lua_State *L, int idx, int pos, key_entry *e)
{
    memset(e, 0, sizeof *e);
    e->pos = pos;
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        e->rank = 0;
        e->isint = lua_isinteger(L, idx);
        if (e->isint) e->i = lua_tointeger(L, idx);
        else e->d = lua_tonumber(L, idx);
        break;
    case LUA_TSTRING:
        e->rank = 1;
        e->s = lua_tolstring(L, idx, &e->len);
        break;
    default:
        e->rank = 2;
        e->tname = luaL_typename(L, idx);
        e->b = lua_toboolean(L, idx);
        e->ptr = lua_topointer(L, idx);
        break;
    }
}

/* The fields of the table at t: pushes a list of the keys shown after the
 * array part (sorted), and returns the array part's length in *narray and
 * the field count in *total. Only the first MAX_FIELDS - narray keys are
 * listed. Returns false (nothing pushed) when memory runs out. */
static bool push_sorted_keys(lua_State *L, int t, lua_Integer *narray, lua_Integer *total)
{
    lua_Integer n = 0;
    while (lua_rawgeti(L, t, n + 1) != LUA_TNIL) {
        lua_pop(L, 1);
        n++;
    }
    lua_pop(L, 1);
    lua_newtable(L);   /* every other key: they stay reachable while sorting */
    int all = lua_gettop(L);
    int nkeys = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1)) {
            lua_Integer k = lua_tointeger(L, -1);
            if (k >= 1 && k <= n) continue;
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, all, ++nkeys);
    }
    key_entry *e = nkeys ? malloc(sizeof *e * (size_t)nkeys) : NULL;
    if (nkeys && !e) {
        lua_pop(L, 1);
        return false;
    }
    for (int i = 0; i < nkeys; i++) {
        lua_rawgeti(L, all, i + 1);
        fill_entry(L, -1, i + 1, &e[i]);
        lua_pop(L, 1);
    }
    if (nkeys) qsort(e, (size_t)nkeys, sizeof *e, cmp_keys);
    lua_Integer shown = MAX_FIELDS - n;
    if (shown > nkeys) shown = nkeys;
    lua_createtable(L, shown > 0 ? (int)shown : 0, 0);
    for (lua_Integer i = 0; i < shown; i++) {
        lua_rawgeti(L, all, e[i].pos);
        lua_rawseti(L, -2, i + 1);
    }
    free(e);
    lua_remove(L, all);
    *narray = n;
    *total = n + nkeys;
    return true;
}

static void put_value(printer *p, sbuf *b, int idx, int depth, int reserve);

static void put_key(printer *p, sbuf *b, int key, int depth)
{
    lua_State *L = p->L;
    size_t n;
    if (lua_type(L, key) == LUA_TSTRING) {
        const char *s = lua_tolstring(L, key, &n);
        if (is_identifier(s, n)) {
            colored(p, b, SGR_KEY, s, n);
        } else {
            sb_text(b, "[", 1);
            sgr(p, b, SGR_KEY);
            put_quoted(b, s, n);
            sgr(p, b, SGR_RESET);
            sb_text(b, "]", 1);
        }
    } else {
        sb_text(b, "[", 1);
        put_value(p, b, key, depth, 1);
        sb_text(b, "]", 1);
    }
    sb_text(b, " = ", 3);
}

/* Field i (1-based) of the table at t: pushes the key (nil for the array
 * part) and the value. */
static void push_field(lua_State *L, int t, int keys, lua_Integer narray, lua_Integer i)
{
    if (i <= narray) {
        lua_pushnil(L);
        lua_rawgeti(L, t, i);
    } else {
        lua_rawgeti(L, keys, i - narray);
        lua_pushvalue(L, -1);
        lua_rawget(L, t);
    }
}

/* The fields between the braces, one line (multiline false) or one per line
 * at depth's indentation. */
static void put_fields(printer *p, sbuf *b, int t, int depth, bool multiline)
{
    lua_State *L = p->L;
    lua_Integer narray, total;
    if (!push_sorted_keys(L, t, &narray, &total)) {
        b->oom = true;
        return;
    }
    int keys = lua_gettop(L);
    lua_Integer shown = total < MAX_FIELDS ? total : MAX_FIELDS;
    for (lua_Integer i = 1; i <= shown && !b->over && !b->oom; i++) {
        bool last = i == total;
        if (multiline) {
            sb_text(b, "\n", 1);
            sb_spaces(b, depth * INDENT);
        } else if (i > 1) {
            sb_text(b, ", ", 2);
        }
        push_field(L, t, keys, narray, i);
        if (!lua_isnil(L, -2)) put_key(p, b, lua_gettop(L) - 1, depth + 1);
        put_value(p, b, lua_gettop(L), depth + 1, last ? (multiline ? 0 : 1) : 1);
        lua_pop(L, 2);
        if (!last && multiline) sb_text(b, ",", 1);
    }
    if (total > shown) {
        char more[64];
        snprintf(more, sizeof more, "... (%lld more)", (long long)(total - shown));
        if (multiline) {
            sb_text(b, "\n", 1);
            sb_spaces(b, depth * INDENT);
        } else {
            sb_text(b, ", ", 2);
        }
        colored(p, b, SGR_DIM, more, strlen(more));
    }
    if (multiline) {
        sb_text(b, "\n", 1);
        sb_spaces(b, (depth - 1) * INDENT);
    }
    lua_pop(L, 1);
}

/* The number of fields of the table at t, counting no further than most. */
static lua_Integer count_fields(lua_State *L, int t, lua_Integer most)
{
    lua_Integer n = 0;
    lua_pushnil(L);
    while (n < most && lua_next(L, t)) {
        lua_pop(L, 1);
        n++;
    }
    if (n >= most) lua_pop(L, 1);   /* the key left by the unfinished walk */
    return n;
}

static bool on_path(printer *p, const void *t)
{
    for (int i = 0; i < p->npath; i++)
        if (p->path[i] == t) return true;
    return false;
}

/* The table at t on one line, appended to b when it fits before the column
 * limit (the width less reserve, or b's own limit); true when it did. */
static bool put_table_line(printer *p, sbuf *b, int t, int depth, int reserve)
{
    int limit = b->limit > 0 ? b->limit : p->width - reserve;
    sbuf line = {.col = b->col, .limit = limit > 0 ? limit : 1};
    sb_text(&line, "{", 1);
    put_fields(p, &line, t, depth, false);
    sb_text(&line, "}", 1);
    bool fits = !line.over && !line.oom;
    if (fits) {
        sb_raw(b, line.s, line.len);
        b->col = line.col;
    }
    if (line.oom) b->oom = true;
    free(line.s);
    return fits;
}

/* The table at t, at nesting depth (1 = a value the REPL prints); reserve:
 * columns that will follow it on its line (a comma, a brace). */
static void put_table(printer *p, sbuf *b, int t, int depth, int reserve)
{
    lua_State *L = p->L;
    const void *ptr = lua_topointer(L, t);
    if (on_path(p, ptr)) {
        char text[64];
        snprintf(text, sizeof text, "<cycle: table: %p>", ptr);
        colored(p, b, SGR_DIM, text, strlen(text));
        return;
    }
    lua_pushnil(L);
    bool empty = !lua_next(L, t);
    if (!empty) lua_pop(L, 2);
    if (empty) {
        sb_text(b, "{}", 2);
        return;
    }
    if (depth > MAX_DEPTH) {
        colored(p, b, SGR_DIM, "{...}", 5);
        return;
    }
    p->path[p->npath++] = ptr;
    /* each field takes at least 3 columns on one line ("1, "): a big
     * table is not even tried there, sparing a sort of all its keys */
    bool done = b->limit == 0 && count_fields(L, t, (p->width - b->col) / 3 + 1) * 3 <= p->width - b->col &&
                put_table_line(p, b, t, depth, reserve);
    if (!done) {
        sb_text(b, "{", 1);
        put_fields(p, b, t, depth, b->limit == 0);
        sb_text(b, "}", 1);
    }
    p->npath--;
}

/* ---- code, objects: one line --------------------------------------------------
 * What a table is decides how it prints. The tests read tables raw (and
 * metatables through lua_getmetatable, which __metatable does not hide), so
 * nothing runs. */

typedef enum {
    TABLE_DATA,     /* anything else: printed in full */
    TABLE_MODULE,   /* in package.loaded, or mostly functions and classes under names */
    TABLE_CLASS,    /* a metatable: has its own __index or __name (nn.Linear, optim.SGD, ember.Size) */
    TABLE_OBJECT,   /* has a class: its metatable has __tostring, a __name or an __index table */
} table_kind;

/* The type of field k of the table at t, read raw; the value is popped. */
static int raw_field_type(lua_State *L, int t, const char *k)
{
    lua_pushstring(L, k);
    int ty = lua_rawget(L, t);
    lua_pop(L, 1);
    return ty;
}

static bool is_class(lua_State *L, int t)
{
    return raw_field_type(L, t, "__index") != LUA_TNIL || raw_field_type(L, t, "__name") == LUA_TSTRING;
}

/* Pushes the name package.loaded holds the table at t under (the shortest,
 * then the first in byte order, when there are several) and returns true;
 * pushes nothing and returns false when it is not there. */
static bool push_module_name(lua_State *L, int t)
{
    t = lua_absindex(L, t);
    if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) != LUA_TTABLE) {
        lua_pop(L, 1);
        return false;
    }
    int loaded = lua_gettop(L);
    lua_pushnil(L);   /* the best name so far */
    lua_pushnil(L);
    while (lua_next(L, loaded)) {
        bool better = false;
        if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, t)) {
            if (lua_isnil(L, loaded + 1)) {
                better = true;
            } else {
                size_t n, m;
                const char *a = lua_tolstring(L, -2, &n), *c = lua_tolstring(L, loaded + 1, &m);
                better = n < m || (n == m && strcmp(a, c) < 0);
            }
        }
        lua_pop(L, 1);
        if (better) {
            lua_pushvalue(L, -1);
            lua_replace(L, loaded + 1);
        }
    }
    lua_remove(L, loaded);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return false;
    }
    return true;
}

static table_kind classify(lua_State *L, int t)
{
    t = lua_absindex(L, t);
    if (is_class(L, t)) return TABLE_CLASS;
    if (push_module_name(L, t)) {
        lua_pop(L, 1);
        return TABLE_MODULE;
    }
    if (lua_getmetatable(L, t)) {
        int mt = lua_gettop(L);
        bool object = raw_field_type(L, mt, "__tostring") != LUA_TNIL || raw_field_type(L, mt, "__index") == LUA_TTABLE ||
                      raw_field_type(L, mt, "__name") == LUA_TSTRING;
        lua_pop(L, 1);
        if (object) return TABLE_OBJECT;
    }
    /* a module made without require: most fields are functions or classes
     * under names (a list of functions, or one callback, stays data) */
    int fields = 0, code = 0;
    lua_pushnil(L);
    while (fields < SCAN_FIELDS && lua_next(L, t)) {
        fields++;
        if (lua_type(L, -2) == LUA_TSTRING &&
            (lua_type(L, -1) == LUA_TFUNCTION || (lua_type(L, -1) == LUA_TTABLE && is_class(L, lua_gettop(L)))))
            code++;
        lua_pop(L, 1);
    }
    if (fields >= SCAN_FIELDS) lua_pop(L, 1);   /* the key left by the unfinished walk */
    return code >= 2 && 2 * code > fields ? TABLE_MODULE : TABLE_DATA;
}

/* The number of visible columns of s[0..n), and in *cut the length of its
 * longest prefix that takes at most `room` columns. */
static int columns(const char *s, size_t n, int room, size_t *cut)
{
    int col = 0;
    *cut = n;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
        if (col == room && *cut == n) *cut = i;
        col++;
    }
    return col;
}

/* One line of text, cut with "..." where it would pass the line's end. */
static void put_cut(printer *p, sbuf *b, const char *code, const char *s, size_t n)
{
    int room = p->width - b->col;
    if (room < 20) room = 20;
    size_t cut;
    if (columns(s, n, room - 3, &cut) > room) {
        colored(p, b, code, s, cut);
        sb_text(b, "...", 3);
    } else {
        colored(p, b, code, s, n);
    }
}

/* The __tostring of the value at idx on one line: each run of white space
 * becomes one space, or none just inside brackets ("Sequential(\n  (1): ..."
 * reads "Sequential((1): ..."). */
static void put_tostring_line(printer *p, sbuf *b, int idx)
{
    lua_State *L = p->L;
    bool err = push_tostring(L, idx);
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    sbuf line = {0};
    bool space = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            space = true;
            continue;
        }
        if (space && line.len > 0 && !strchr("([{", line.s[line.len - 1]) && !strchr(")]}", c)) sb_raw(&line, " ", 1);
        space = false;
        sb_raw(&line, &c, 1);
    }
    if (line.oom) b->oom = true;
    else put_cut(p, b, err ? SGR_ERROR : "", line.s ? line.s : "", line.len);
    free(line.s);
    lua_pop(L, 1);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "module ember.nn" or "class Linear"; without a name, "module (N fields)".
 * full: then the public names (string keys not starting with '_'), sorted,
 * as many as fit on the line: "class Linear {extra_repr, forward, ...}". */
static void put_code(printer *p, sbuf *b, int t, table_kind kind, bool full)
{
    lua_State *L = p->L;
    t = lua_absindex(L, t);
    const char *what = kind == TABLE_CLASS ? "class" : "module";
    bool named;
    if (kind == TABLE_CLASS) {
        lua_pushliteral(L, "__name");
        named = lua_rawget(L, t) == LUA_TSTRING;
        if (!named) lua_pop(L, 1);
    } else {
        named = push_module_name(L, t);
    }
    /* inside a table it is dim, as a tensor's summary is */
    if (!full) sgr(p, b, SGR_DIM);
    sb_puts(b, what);
    if (named) {
        sb_text(b, " ", 1);
        sb_puts(b, lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    if (!full) {
        if (!named) {
            lua_Integer n = count_fields(L, t, LUA_MAXINTEGER);
            const char *s = lua_pushfstring(L, " (%I field%s)", (LUAI_UACINT)n, n == 1 ? "" : "s");
            sb_puts(b, s);
            lua_pop(L, 1);
        }
        sgr(p, b, SGR_RESET);
        return;
    }
    /* the names, kept alive by a list on the stack while they are sorted */
    lua_newtable(L);
    int list = lua_gettop(L), n = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) == LUA_TSTRING && lua_tostring(L, -1)[0] != '_') {
            lua_pushvalue(L, -1);
            lua_rawseti(L, list, ++n);
        }
    }
    const char **names = n ? malloc(sizeof *names * (size_t)n) : NULL;
    if (n && !names) {
        b->oom = true;
        lua_pop(L, 1);
        return;
    }
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, list, i + 1);
        names[i] = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    if (n == 0) {   /* nothing public: the size instead, for a class without a name */
        if (!named) {
            lua_Integer all = count_fields(L, t, LUA_MAXINTEGER);
            const char *s = lua_pushfstring(L, " (%I field%s)", (LUAI_UACINT)all, all == 1 ? "" : "s");
            colored(p, b, SGR_DIM, s, strlen(s));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        return;
    }
    qsort(names, (size_t)n, sizeof *names, compare_names);
    sb_text(b, " {", 2);
    char more[64];
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(names[i]);
        snprintf(more, sizeof more, "... (%d more)}", n - i);
        /* the name, its ", " and room for the count of the rest, unless it is the last */
        int need = (i > 0 ? 2 : 0) + len + (i == n - 1 ? 1 : 2 + (int)strlen(more));
        if (b->col + need > p->width) {
            if (i > 0) sb_text(b, ", ", 2);
            colored(p, b, SGR_DIM, more, strlen(more) - 1);
            break;
        }
        if (i > 0) sb_text(b, ", ", 2);
        sb_text(b, names[i], (size_t)len);
    }
    sb_text(b, "}", 1);
    free(names);
    lua_pop(L, 1);
}

/* An object without __tostring: its class's name, then its fields when they
 * fit on the line ("Point {x = 1, y = 2}"), else their count. */
static void put_object(printer *p, sbuf *b, int t)
{
    lua_State *L = p->L;
    t = lua_absindex(L, t);
    lua_getmetatable(L, t);   /* an object has one */
    lua_pushliteral(L, "__name");
    if (lua_rawget(L, -2) != LUA_TSTRING) {   /* else the name of the class in __index */
        lua_pop(L, 1);
        lua_pushliteral(L, "__index");
        if (lua_rawget(L, -2) == LUA_TTABLE) {
            lua_pushliteral(L, "__name");
            lua_rawget(L, -2);
            lua_remove(L, -2);
        }
    }
    sb_puts(b, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "object");
    lua_pop(L, 2);
    sb_text(b, " ", 1);
    const void *ptr = lua_topointer(L, t);
    if (on_path(p, ptr) || p->npath >= MAX_DEPTH) {
        colored(p, b, SGR_DIM, "{...}", 5);
        return;
    }
    p->path[p->npath++] = ptr;
    if (!put_table_line(p, b, t, 1, 0)) {
        lua_Integer n = count_fields(L, t, LUA_MAXINTEGER);
        const char *s = lua_pushfstring(L, "(%I field%s)", (LUAI_UACINT)n, n == 1 ? "" : "s");
        colored(p, b, SGR_DIM, s, strlen(s));
        lua_pop(L, 1);
    }
    p->npath--;
}

/* One line for the table at t that is not plain data (kind != TABLE_DATA):
 * its __tostring squeezed, a module or class and its names, an object. */
static void put_table_summary(printer *p, sbuf *b, int t, table_kind kind)
{
    lua_State *L = p->L;
    if (luaL_getmetafield(L, t, "__tostring") != LUA_TNIL) {
        lua_pop(L, 1);
        put_tostring_line(p, b, t);
    } else if (kind == TABLE_OBJECT) {
        put_object(p, b, t);
    } else {
        put_code(p, b, t, kind, true);
    }
}

static void put_value(printer *p, sbuf *b, int idx, int depth, int reserve)
{
    lua_State *L = p->L;
    if (!lua_checkstack(L, 8)) {
        b->oom = true;
        return;
    }
    switch (lua_type(L, idx)) {
    case LUA_TNIL: colored(p, b, SGR_CONST, "nil", 3); break;
    case LUA_TBOOLEAN:
        if (lua_toboolean(L, idx)) colored(p, b, SGR_CONST, "true", 4);
        else colored(p, b, SGR_CONST, "false", 5);
        break;
    case LUA_TNUMBER: put_number(p, b, idx); break;
    case LUA_TSTRING: put_string(p, b, idx); break;
    case LUA_TFUNCTION: put_function(p, b, idx); break;
    case LUA_TTABLE:
        if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
            lua_pop(L, 1);
            put_tostring(p, b, idx, true);
        } else {
            table_kind kind = classify(L, idx);
            if (kind == TABLE_MODULE || kind == TABLE_CLASS) put_code(p, b, idx, kind, false);
            else put_table(p, b, idx, depth, reserve);
        }
        break;
    default:
        if (is_tensor(L, idx)) put_tensor_summary(p, b, idx);
        else put_tostring(p, b, idx, true);
        break;
    }
}

/* A value the REPL prints: strings raw, tensors in full (their __tostring
 * summarises large ones), modules and classes as one line, the rest as
 * inside a table. */
static void put_top(printer *p, int idx)
{
    lua_State *L = p->L;
    sbuf *b = &p->out;
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        sb_text(b, s, n);
    } else if (lua_type(L, idx) == LUA_TUSERDATA && is_tensor(L, idx)) {
        put_tostring(p, b, idx, false);
    } else if (lua_type(L, idx) == LUA_TTABLE && luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
        lua_pop(L, 1);
        put_tostring(p, b, idx, false);
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        table_kind kind = classify(L, idx);
        if (kind == TABLE_MODULE || kind == TABLE_CLASS) put_code(p, b, idx, kind, true);
        else put_value(p, b, idx, 1, 0);
    } else {
        put_value(p, b, idx, 1, 0);
    }
}

/* Under lua_pcall: the printer, then the values. */
static int print_k(lua_State *L)
{
    printer *p = lua_touserdata(L, 1);
    int n = lua_gettop(L);
    for (int i = 2; i <= n; i++) {
        if (i > 2) sb_text(&p->out, "\t", 1);
        put_top(p, i);
    }
    sb_text(&p->out, "\n", 1);
    return 0;
}

/* The start of summary_k and brief_k (printer, prefix, value): writes the
 * prefix to b and says what kind of table the value is (TABLE_DATA for a
 * value that is no table). */
static table_kind put_prefix(lua_State *L, sbuf *b)
{
    sb_puts(b, lua_tostring(L, 2));
    return lua_type(L, 3) == LUA_TTABLE ? classify(L, 3) : TABLE_DATA;
}

/* Under lua_pcall (printer, prefix, value): the prefix, then one line about
 * the value (for ":vars"). Plain tables show their size, a long string its
 * start, the rest print as inside a table or as put_table_summary. */
static int summary_k(lua_State *L)
{
    printer *p = lua_touserdata(L, 1);
    sbuf *b = &p->out;
    table_kind kind = put_prefix(L, b);
    if (lua_type(L, 3) == LUA_TTABLE && kind != TABLE_DATA) {
        put_table_summary(p, b, 3, kind);
    } else if (lua_type(L, 3) == LUA_TTABLE) {   /* data: no __tostring, or it would be an object */
        lua_Integer n = count_fields(L, 3, LUA_MAXINTEGER);
        const char *s = lua_pushfstring(L, "%I field%s", (LUAI_UACINT)n, n == 1 ? "" : "s");
        colored(p, b, SGR_DIM, s, strlen(s));
    } else if (lua_type(L, 3) == LUA_TSTRING && lua_rawlen(L, 3) > SUMMARY_CHARS) {
        sgr(p, b, SGR_STRING);
        put_quoted(b, lua_tostring(L, 3), SUMMARY_CHARS);
        sgr(p, b, SGR_RESET);
        sb_text(b, "...", 3);
    } else {
        put_value(p, b, 3, 1, 0);
    }
    sb_text(b, "\n", 1);
    return 0;
}

/* Under lua_pcall (printer, prefix, value): the prefix, then the value as
 * the debugger lists locals: plain data as the REPL prints it, modules,
 * classes and objects on one line. */
static int brief_k(lua_State *L)
{
    printer *p = lua_touserdata(L, 1);
    sbuf *b = &p->out;
    table_kind kind = put_prefix(L, b);
    if (kind != TABLE_DATA) put_table_summary(p, b, 3, kind);
    else put_top(p, 3);
    sb_text(b, "\n", 1);
    return 0;
}

/* Runs k(printer, values...) protected and writes what it rendered. */
static void render(lua_State *L, lua_CFunction k, int n, bool color, FILE *out)
{
    printer p = {.L = L, .color = color, .width = terminal_width(out)};
    lua_pushcfunction(L, k);
    lua_pushlightuserdata(L, &p);
    lua_rotate(L, -(n + 2), 2);
    int status = lua_pcall(L, n + 1, 0, 0);
    if (p.out.len) fwrite(p.out.s, 1, p.out.len, out);
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        fprintf(out, "%s<error printing values: %s>\n", p.out.col ? "\n" : "", msg ? msg : "?");
        lua_pop(L, 1);
    } else if (p.out.oom) {
        fprintf(out, "%s<out of memory printing values>\n", p.out.col ? "\n" : "");
    }
    fflush(out);
    free(p.out.s);
}

static void print_one(lua_State *L, lua_CFunction k, const char *prefix, int idx, bool color, FILE *out)
{
    if (!lua_checkstack(L, 4)) {
        fputs("<not enough stack to print the value>\n", out);
        return;
    }
    idx = lua_absindex(L, idx);
    lua_pushstring(L, prefix ? prefix : "");
    lua_pushvalue(L, idx);
    render(L, k, 2, color, out);
}

void emsh_print_summary(lua_State *L, int idx, const char *prefix, bool color)
{
    print_one(L, summary_k, prefix, idx, color, stdout);
}

void emsh_print_brief(lua_State *L, int idx, const char *prefix, bool color, FILE *out)
{
    print_one(L, brief_k, prefix, idx, color, out);
}

void emsh_print_values_to(lua_State *L, int n, bool color, FILE *out)
{
    if (n <= 0) return;
    if (!lua_checkstack(L, 4)) {
        lua_pop(L, n);
        fputs("<not enough stack to print the values>\n", out);
        return;
    }
    render(L, print_k, n, color, out);
}

void emsh_print_values(lua_State *L, int n, bool color)
{
    emsh_print_values_to(L, n, color, stdout);
}
