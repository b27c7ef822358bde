/* complete.c — tab completion.
 *
 * The word before the cursor is found the way readline finds it (an
 * unclosed quote starts a string: file names; otherwise the text after the
 * last word-break character, where '.' and ':' are not breaks, so that
 * `a.b:c` is one word), then completed as
 *   - a ":" command name, at the start of a line that begins with ':';
 *   - a file name, inside a string or after the commands that take files;
 *   - a Lua name: keywords and globals for a bare word; for `a.b.c` or
 *     `a.b:c` the fields (after ':' only functions) of a.b.
 * Values are reached with raw reads only: tables, the tables a metatable's
 * __index leads to, and the names a metatable's __dir table lists (then its
 * own metatable's __index chain): what userdata such as tensors declare.
 * No function is called, so no user code runs and nothing waits on a GPU;
 * the collector is stopped meanwhile, so no finalizer runs either.
 *
 * emsh_complete_print runs the same code on a whole line, for ":complete"
 * and for tests without a terminal. */
#include "shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rl.h"   /* last: it names readline's functions and variables */

/* Readline's defaults without '.' and ':', plus Lua's operators and '?'
 * (the help prefix). Quotes are breaks too: a closed string ends a word;
 * an unclosed one is found first through rl_completer_quote_characters. */
#define WORD_BREAKS " \t\n\"\\'`@$><=;|&{(,)}[]+-*/%^~#?"
/* after ":load", ":!", ":break": file names, which may hold '/', '-', '+' */
#define FILE_BREAKS " \t\n\"'"
#define QUOTES "\"'"
#define MAX_CHAIN 32   /* __index tables followed, at most */

/* ":" commands whose arguments are file names */
static const char *const file_commands[] = {"load", "!", "break", NULL};

/* ---- candidate lists ----------------------------------------------------- */

typedef struct {
    char **v;
    size_t n, cap;
    bool oom;
} names;

static void names_add(names *ns, const char *a, size_t na, const char *b, size_t nb)
{
    if (ns->oom) return;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 32;
        char **v = realloc(ns->v, cap * sizeof *v);
        if (!v) {
            ns->oom = true;
            return;
        }
        ns->v = v;
        ns->cap = cap;
    }
    char *s = malloc(na + nb + 1);
    if (!s) {
        ns->oom = true;
        return;
    }
    memcpy(s, a, na);
    memcpy(s + na, b, nb);
    s[na + nb] = '\0';
    ns->v[ns->n++] = s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort_unique(names *ns)
{
    if (ns->n == 0) return;
    qsort(ns->v, ns->n, sizeof *ns->v, cmp_str);
    size_t k = 1;
    for (size_t i = 1; i < ns->n; i++) {
        if (strcmp(ns->v[i], ns->v[k - 1]) == 0) free(ns->v[i]);
        else ns->v[k++] = ns->v[i];
    }
    ns->n = k;
}

static void names_free(names *ns)
{
    for (size_t i = 0; i < ns->n; i++) free(ns->v[i]);
    free(ns->v);
    *ns = (names){0};
}

/* ---- finding the word ---------------------------------------------------- */

typedef struct {
    int start;    /* where the word begins */
    char quote;   /* the quote of an unclosed string it is in, or 0 */
} word;

static bool takes_files(const char *cmd, size_t n)
{
    for (int i = 0; file_commands[i]; i++)
        if (strlen(file_commands[i]) == n && memcmp(cmd, file_commands[i], n) == 0) return true;
    return false;
}

/* The ":" command a line starts with (its name's length in *n), or NULL. */
static const char *command_of(const char *line, size_t *n)
{
    while (*line == ' ' || *line == '\t') line++;
    if (*line != ':') return NULL;
    line++;
    *n = line[0] == '!' ? 1 : strcspn(line, " \t");
    return line;
}

/* The quote of the string left open before end (0 if none), and in *open
 * where its text starts: readline's scan, a backslash escaping the next
 * character except inside single quotes. */
static char open_quote(const char *line, int end, int *open)
{
    char quote = 0;
    bool pass_next = false;
    *open = end;
    for (int i = 0; i < end; i++) {
        if (pass_next) {
            pass_next = false;
        } else if (quote != '\'' && line[i] == '\\') {
            pass_next = true;
        } else if (quote) {
            if (line[i] == quote) quote = 0;
        } else if (strchr(QUOTES, line[i])) {
            quote = line[i];
            *open = i + 1;
        }
    }
    if (!quote) *open = end;
    return quote;
}

/* The word-break characters for a line: a file name (in a string, or an
 * argument of a file command) is split at blanks only, so that readline
 * does not take its leading '/' for a break. */
static const char *breaks_for(const char *line, int end)
{
    int open;
    if (open_quote(line, end, &open)) return FILE_BREAKS;
    size_t n;
    const char *cmd = command_of(line, &n);
    return cmd && cmd[n] != '\0' && takes_files(cmd, n) ? FILE_BREAKS : WORD_BREAKS;
}

/* readline's _rl_find_completion_word with our characters and no
 * rl_char_is_quoted_p, so that both agree on where the word starts. */
static word find_word(const char *line, int end)
{
    const char *breaks = breaks_for(line, end);
    word w = {0, 0};
    int point;
    w.quote = open_quote(line, end, &point);
    if (!w.quote) {
        while (point > 0) {
            point--;
            if (strchr(breaks, line[point])) break;
        }
    }
    if (point < end && line[point] && strchr(breaks, line[point])) point++;
    w.start = point;
    return w;
}

/* ---- names of Lua values ------------------------------------------------- */

static const char *const keywords[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
    "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    NULL,
};

static bool is_keyword(const char *s, size_t n)
{
    for (int i = 0; keywords[i]; i++)
        if (strlen(keywords[i]) == n && memcmp(s, keywords[i], n) == 0) return true;
    return false;
}

/* An identifier, or the start of one (n == 0 allowed when partial). */
static bool is_name(const char *s, size_t n, bool partial)
{
    if (n == 0) return partial;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return partial || !is_keyword(s, n);
}

/* What a walk over a value's tables does with each of them. */
typedef struct walker walker;
struct walker {
    /* a table whose keys are fields; returns true to stop the walk */
    bool (*table)(lua_State *L, int t, walker *w);
    /* a __dir table whose array items name fields */
    bool (*dir)(lua_State *L, int d, walker *w);
    const void *seen[MAX_CHAIN];
    int nseen;
    /* listing */
    const char *base;      /* the word up to and with the last '.' or ':' */
    size_t nbase;
    const char *prefix;    /* the part of the name typed */
    size_t nprefix;
    bool methods_only;     /* after ':' */
    names *out;
    /* lookup */
    const char *key;
    size_t nkey;
    int slot;              /* where the value found goes */
    bool found, known;
};

static bool walk_index(lua_State *L, int mt, walker *w);

/* The value at idx: itself if a table, then what its metatable leads to. */
static bool walk(lua_State *L, int idx, walker *w)
{
    if (!lua_checkstack(L, 6)) return true;
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) == LUA_TTABLE) {
        const void *p = lua_topointer(L, idx);
        for (int i = 0; i < w->nseen; i++)
            if (w->seen[i] == p) return false;
        if (w->nseen == MAX_CHAIN) return false;
        w->seen[w->nseen++] = p;
        if (w->table(L, idx, w)) return true;
    }
    if (!lua_getmetatable(L, idx)) return false;
    int mt = lua_gettop(L);
    bool stop = false;
    lua_pushliteral(L, "__dir");
    if (lua_rawget(L, mt) == LUA_TTABLE) {
        int dir = lua_gettop(L);
        stop = w->dir(L, dir, w);
        if (!stop && lua_getmetatable(L, dir)) {
            stop = walk_index(L, lua_gettop(L), w);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    if (!stop) stop = walk_index(L, mt, w);
    lua_pop(L, 1);
    return stop;
}

/* mt.__index when it is a table. A function is never called; a class
 * whose __index is a function (nn.Module's instances look in their
 * parameters and children first) most often falls back to the metatable
 * itself, the class: its fields and its own chain are offered instead. */
static bool walk_index(lua_State *L, int mt, walker *w)
{
    lua_pushliteral(L, "__index");
    bool stop = false;
    int type = lua_rawget(L, mt);
    if (type == LUA_TTABLE) stop = walk(L, -1, w);
    else if (type == LUA_TFUNCTION) stop = walk(L, mt, w);
    lua_pop(L, 1);
    return stop;
}

/* Names starting with '_' (metamethods, private fields) only when the
 * typed prefix starts with one too. */
static bool wanted(walker *w, const char *s, size_t n)
{
    if (n < w->nprefix || memcmp(s, w->prefix, w->nprefix) != 0) return false;
    if (s[0] == '_' && (w->nprefix == 0 || w->prefix[0] != '_')) return false;
    return is_name(s, n, false);
}

static bool list_table(lua_State *L, int t, walker *w)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            size_t n;
            const char *s = lua_tolstring(L, -2, &n);
            if (wanted(w, s, n) && (!w->methods_only || lua_type(L, -1) == LUA_TFUNCTION))
                names_add(w->out, w->base, w->nbase, s, n);
        }
        lua_pop(L, 1);
    }
    return false;
}

/* __dir items are properties whose values are not known without calling
 * __index: never methods. */
static bool list_dir(lua_State *L, int d, walker *w)
{
    if (w->methods_only) return false;
    lua_Integer n = (lua_Integer)lua_rawlen(L, d);
    for (lua_Integer i = 1; i <= n; i++) {
        if (lua_rawgeti(L, d, i) == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            if (wanted(w, s, len)) names_add(w->out, w->base, w->nbase, s, len);
        }
        lua_pop(L, 1);
    }
    return false;
}

static bool lookup_table(lua_State *L, int t, walker *w)
{
    lua_pushlstring(L, w->key, w->nkey);
    if (lua_rawget(L, t) == LUA_TNIL) {
        lua_pop(L, 1);
        return false;
    }
    lua_replace(L, w->slot);
    w->found = w->known = true;
    return true;
}

/* A name in a __dir list exists, but its value is only known to __index. */
static bool lookup_dir(lua_State *L, int d, walker *w)
{
    lua_Integer n = (lua_Integer)lua_rawlen(L, d);
    for (lua_Integer i = 1; i <= n && !w->found; i++) {
        if (lua_rawgeti(L, d, i) == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            w->found = len == w->nkey && memcmp(s, w->key, len) == 0;
        }
        lua_pop(L, 1);
    }
    return w->found;
}

/* Whether the metatable of the value at idx lists key in its __lazy table:
 * a module of ember's loaded on first use (the shell's nn, optim, plot
 * globals; ember.nn, ember.optim, ...), which completion may load. */
static bool is_lazy(lua_State *L, int idx, const char *key, size_t nkey)
{
    if (!lua_getmetatable(L, idx)) return false;
    bool lazy = false;
    lua_pushliteral(L, "__lazy");
    if (lua_rawget(L, -2) == LUA_TTABLE) {
        lua_pushlstring(L, key, nkey);
        lazy = lua_rawget(L, -2) != LUA_TNIL;
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    return lazy;
}

static int gettable_k(lua_State *L)
{
    lua_gettable(L, 1);
    return 1;
}

/* Replaces the value at slot by its field key (nil when it cannot be
 * known without running code); false then. The one code run is the
 * loader of a lazy module (is_lazy), in protected mode. */
static bool get_field(lua_State *L, int slot, const char *key, size_t nkey)
{
    walker w = {.table = lookup_table, .dir = lookup_dir, .key = key, .nkey = nkey};
    lua_pushnil(L);
    w.slot = lua_gettop(L);
    walk(L, slot, &w);
    bool ok = w.found && w.known;
    if (w.found && !w.known && is_lazy(L, slot, key, nkey)) {
        lua_pushcfunction(L, gettable_k);
        lua_pushvalue(L, slot);
        lua_pushlstring(L, key, nkey);
        if (lua_pcall(L, 2, 1, 0) == LUA_OK) {
            lua_replace(L, w.slot);
            ok = !lua_isnil(L, w.slot);
        } else {
            lua_pop(L, 1);
        }
    }
    lua_replace(L, slot);   /* the result, nil when not found */
    return ok;
}

static void list_fields(lua_State *L, int idx, walker *w)
{
    w->table = list_table;
    w->dir = list_dir;
    walk(L, idx, w);
}

/* Completes a Lua word: a bare name, or a.b.c / a.b:c. */
static void complete_lua(lua_State *L, const char *text, size_t n, names *out)
{
    size_t sep = n;
    while (sep > 0 && text[sep - 1] != '.' && text[sep - 1] != ':') sep--;
    const char *prefix = text + sep;
    size_t nprefix = n - sep;
    if (!is_name(prefix, nprefix, true)) return;
    walker w = {.base = text, .nbase = sep, .prefix = prefix, .nprefix = nprefix, .out = out};
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    int slot = lua_gettop(L);
    if (sep == 0) {
        for (int i = 0; keywords[i]; i++)
            if (strncmp(keywords[i], prefix, nprefix) == 0) names_add(out, "", 0, keywords[i], strlen(keywords[i]));
        list_fields(L, slot, &w);
        lua_pop(L, 1);
        return;
    }
    w.methods_only = text[sep - 1] == ':';
    /* the path a.b.c before the last separator: names joined by '.' only,
     * each looked up in the value the previous one gave */
    size_t last = sep - 1, i = 0;
    bool ok = last > 0;
    while (ok) {
        size_t j = i;
        while (j < last && text[j] != '.' && text[j] != ':') j++;
        ok = is_name(text + i, j - i, false) && (j == last || text[j] == '.') &&
             get_field(L, slot, text + i, j - i);
        if (j == last) break;
        i = j + 1;
    }
    if (ok) list_fields(L, slot, &w);
    lua_pop(L, 1);
}

/* ---- files and commands -------------------------------------------------- */

/* readline's file-name completion (`:complete` reaches it without a
 * terminal, so the library may not be open yet) */
static void complete_files(const char *text, names *out)
{
    char *m;
    if (!emsh_rl_open()) return;
    for (int state = 0; (m = rl_filename_completion_function(text, state)) != NULL; state++) {
        names_add(out, m, strlen(m), "", 0);
        free(m);
    }
}

static void complete_commands(const char *text, size_t n, const char *colon, names *out)
{
    for (int i = 0; emsh_command_names[i]; i++) {
        const char *name = emsh_command_names[i];
        if (name[0] == ':') name++;
        size_t len = strlen(name);
        if (len >= n && strncmp(name, text, n) == 0) names_add(out, colon, strlen(colon), name, len);
    }
}

/* ---- the completer ------------------------------------------------------- */

typedef enum { KIND_NONE, KIND_LUA, KIND_FILES, KIND_COMMANDS, KIND_KEYWORD } kind;

typedef struct {
    const char *line;
    int end;
    word w;
    names out;
    kind kind;
} request;

static void complete_request(lua_State *L, request *r)
{
    const char *line = r->line;
    const char *text = line + r->w.start;
    size_t n = (size_t)(r->end - r->w.start);
    char *copy = malloc(n + 1);   /* the word alone, NUL-terminated */
    if (!copy) return;
    memcpy(copy, text, n);
    copy[n] = '\0';
    size_t ncmd;
    const char *cmd = command_of(line, &ncmd);
    if (r->w.quote) {
        r->kind = KIND_FILES;
        complete_files(copy, &r->out);
    } else if (cmd) {
        if (line + r->w.start == cmd - 1) {
            r->kind = KIND_COMMANDS;
            complete_commands(copy + 1, n - 1, ":", &r->out);
        } else {
            if (takes_files(cmd, ncmd)) {
                r->kind = KIND_FILES;
                complete_files(copy, &r->out);
            } else if (ncmd == 4 && memcmp(cmd, "help", 4) == 0) {
                r->kind = KIND_COMMANDS;
                complete_commands(copy, n, "", &r->out);
            } else {
                r->kind = KIND_LUA;
                complete_lua(L, copy, n, &r->out);
            }
        }
    } else {
        r->kind = KIND_LUA;
        complete_lua(L, copy, n, &r->out);
    }
    free(copy);
    names_sort_unique(&r->out);
    if (r->kind == KIND_LUA && r->out.n == 1 && is_keyword(r->out.v[0], strlen(r->out.v[0])))
        r->kind = KIND_KEYWORD;
}

static int complete_k(lua_State *L)
{
    complete_request(L, lua_touserdata(L, 1));
    return 0;
}

/* Fills r->out for the word ending at r->end; never raises. */
static void run_request(lua_State *L, request *r)
{
    r->w = find_word(r->line, r->end);
    if (!lua_checkstack(L, 2)) return;
    int top = lua_gettop(L);
    bool gc_was_running = lua_gc(L, LUA_GCISRUNNING);
    lua_gc(L, LUA_GCSTOP);
    lua_pushcfunction(L, complete_k);
    lua_pushlightuserdata(L, r);
    lua_pcall(L, 1, 0, 0);   /* an error (out of memory) just ends the list */
    lua_settop(L, top);
    if (gc_was_running) lua_gc(L, LUA_GCRESTART);
}

void emsh_complete_print(lua_State *L, const char *line)
{
    request r = {.line = line, .end = (int)strlen(line)};
    run_request(L, &r);
    for (size_t i = 0; i < r.out.n; i++) {
        struct stat st;
        /* readline marks directories with '/' */
        bool dir = r.kind == KIND_FILES && stat(r.out.v[i], &st) == 0 && S_ISDIR(st.st_mode);
        printf("%s%s\n", r.out.v[i], dir ? "/" : "");
    }
    fflush(stdout);
    names_free(&r.out);
}

size_t emsh_complete_candidates(lua_State *L, const char *line, int end, int *start, char ***out)
{
    request r = {.line = line, .end = end};
    run_request(L, &r);
    *start = r.w.start;
    *out = r.out.v;
    return r.out.n;
}

/* ---- readline ------------------------------------------------------------ */

static lua_State *completion_state;

/* The longest common prefix of the candidates, then the candidates: what
 * readline expects back. The strings are handed over. */
static char **to_matches(names *ns)
{
    char **m = malloc((ns->n + 2) * sizeof *m);
    if (!m) return NULL;
    if (ns->n == 1) {
        m[0] = ns->v[0];
        m[1] = NULL;
    } else {
        size_t common = strlen(ns->v[0]);
        for (size_t i = 1; i < ns->n; i++) {
            size_t k = 0;
            while (k < common && ns->v[i][k] == ns->v[0][k]) k++;
            common = k;
        }
        m[0] = malloc(common + 1);
        if (!m[0]) {
            free(m);
            return NULL;
        }
        memcpy(m[0], ns->v[0], common);
        m[0][common] = '\0';
        memcpy(m + 1, ns->v, ns->n * sizeof *m);
        m[ns->n + 1] = NULL;
    }
    free(ns->v);
    *ns = (names){0};
    return m;
}

/* Candidates are whole words from our own word start; readline replaces
 * the text from its start, which agrees unless the line fooled one of us:
 * then the candidates are cut or extended to its start. */
static void align(names *ns, const char *line, int ours, int theirs)
{
    size_t k = 0;
    for (size_t i = 0; i < ns->n; i++) {
        char *s = ns->v[i];
        if (ours < theirs) {
            size_t cut = (size_t)(theirs - ours);
            if (strncmp(s, line + ours, cut) != 0) {
                free(s);
                continue;
            }
            memmove(s, s + cut, strlen(s + cut) + 1);
        } else {
            size_t add = (size_t)(ours - theirs);
            char *t = malloc(add + strlen(s) + 1);
            if (!t) {
                free(s);
                continue;
            }
            memcpy(t, line + theirs, add);
            strcpy(t + add, s);
            free(s);
            s = t;
        }
        ns->v[k++] = s;
    }
    ns->n = k;
}

static char **attempt_completion(const char *text, int start, int end)
{
    (void)text;
    rl_attempted_completion_over = 1;   /* no fallback to readline's file names */
    request r = {.line = rl_line_buffer, .end = end};
    run_request(completion_state, &r);
    if (r.w.start != start) align(&r.out, rl_line_buffer, r.w.start, start);
    if (r.out.n == 0) {
        names_free(&r.out);
        return NULL;
    }
    /* a space after `t.sum` or `ember` is in the way of what comes next */
    if (r.kind == KIND_LUA || r.kind == KIND_FILES) rl_completion_append_character = '\0';
    if (r.kind == KIND_FILES) rl_filename_completion_desired = 1;
    return to_matches(&r.out);
}

static char *word_breaks(void)
{
    return (char *)breaks_for(rl_line_buffer, rl_point);
}

void emsh_complete_install(lua_State *L)
{
    completion_state = L;
    rl_completion_word_break_hook = word_breaks;
    rl_attempted_completion_function = attempt_completion;
    rl_completer_word_break_characters = WORD_BREAKS;
    rl_completer_quote_characters = QUOTES;
}
