/* print.c — the REPL's value printer.
 *
 * Values are rendered into a C buffer and written at the end, so that a
 * failure half-way (out of memory) still shows what was rendered. Tables are
 * walked with lua_next and read with lua_rawget: the only user code that
 * runs is a __tostring metamethod, always under lua_pcall. A table is first
 * rendered on one line; when that would pass the terminal's width it is
 * rendered one field per line, each field again trying one line first. */
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

static void colored(printer *p, sbuf *b, const char *code, const char *s, size_t n)
{
    sgr(p, b, code);
    sb_text(b, s, n);
    sgr(p, b, SGR_RESET);
}

static int terminal_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
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
    bool done = false;
    /* each field takes at least 3 columns on one line ("1, "): a big
     * table is not even tried there, sparing a sort of all its keys */
    if (b->limit == 0 && count_fields(L, t, (p->width - b->col) / 3 + 1) * 3 <= p->width - b->col) {
        /* try it on one line first, in a scratch buffer */
        int limit = p->width - reserve;
        sbuf line = {.col = b->col, .limit = limit > 0 ? limit : 1};
        sb_text(&line, "{", 1);
        put_fields(p, &line, t, depth, false);
        sb_text(&line, "}", 1);
        if (!line.over && !line.oom) {
            sb_raw(b, line.s, line.len);
            b->col = line.col;
            done = true;
        }
        free(line.s);
    }
    if (!done) {
        sb_text(b, "{", 1);
        put_fields(p, b, t, depth, b->limit == 0);
        sb_text(b, "}", 1);
    }
    p->npath--;
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
            put_table(p, b, idx, depth, reserve);
        }
        break;
    default:
        if (is_tensor(L, idx)) put_tensor_summary(p, b, idx);
        else put_tostring(p, b, idx, true);
        break;
    }
}

/* A value the REPL prints: strings raw, tensors in full (their __tostring
 * summarises large ones), the rest as inside a table. */
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

/* Under lua_pcall: one line about the value (for ":vars"). A table shows
 * its size, a long string its start; the rest print as inside a table. */
static int summary_k(lua_State *L)
{
    printer *p = lua_touserdata(L, 1);
    sbuf *b = &p->out;
    if (lua_type(L, 2) == LUA_TTABLE && luaL_getmetafield(L, 2, "__tostring") == LUA_TNIL) {
        lua_Integer n = count_fields(L, 2, LUA_MAXINTEGER);
        const char *s = lua_pushfstring(L, "%I field%s", (LUAI_UACINT)n, n == 1 ? "" : "s");
        colored(p, b, SGR_DIM, s, strlen(s));
    } else if (lua_type(L, 2) == LUA_TSTRING && lua_rawlen(L, 2) > SUMMARY_CHARS) {
        sgr(p, b, SGR_STRING);
        put_quoted(b, lua_tostring(L, 2), SUMMARY_CHARS);
        sgr(p, b, SGR_RESET);
        sb_text(b, "...", 3);
    } else {
        if (lua_type(L, 2) == LUA_TTABLE) lua_pop(L, 1);   /* the __tostring */
        put_value(p, b, 2, 1, 0);
    }
    sb_text(b, "\n", 1);
    return 0;
}

/* Runs k(printer, values...) protected and writes what it rendered. */
static void render(lua_State *L, lua_CFunction k, int n, bool color)
{
    printer p = {.L = L, .color = color, .width = terminal_width()};
    lua_pushcfunction(L, k);
    lua_pushlightuserdata(L, &p);
    lua_rotate(L, -(n + 2), 2);
    int status = lua_pcall(L, n + 1, 0, 0);
    if (p.out.len) fwrite(p.out.s, 1, p.out.len, stdout);
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        printf("%s<error printing values: %s>\n", p.out.col ? "\n" : "", msg ? msg : "?");
        lua_pop(L, 1);
    } else if (p.out.oom) {
        printf("%s<out of memory printing values>\n", p.out.col ? "\n" : "");
    }
    fflush(stdout);
    free(p.out.s);
}

void emsh_print_summary(lua_State *L, int idx, bool color)
{
    if (!lua_checkstack(L, 4)) {
        fputs("<not enough stack to print the value>\n", stdout);
        return;
    }
    lua_pushvalue(L, idx);
    render(L, summary_k, 1, color);
}

void emsh_print_values(lua_State *L, int n, bool color)
{
    if (n <= 0) return;
    if (!lua_checkstack(L, 4)) {
        lua_pop(L, n);
        fputs("<not enough stack to print the values>\n", stdout);
        return;
    }
    render(L, print_k, n, color);
}
