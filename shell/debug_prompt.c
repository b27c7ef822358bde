/* debug_prompt.c — the (dbg) prompt: frames, source, locals, evaluation.
 *
 * Code typed at the prompt runs on a thread of its own, never on the
 * stopped one: the stopped thread's levels then stay what the frame list
 * shows while the code runs, and no hook is on the evaluation thread, so
 * evaluated code cannot hit breakpoints. Its globals are a proxy table that
 * looks names up in the selected frame: its active locals (the innermost of
 * a name), then its function's upvalues, then the frame's own _ENV (the
 * globals). Assignments go to the same places, so `lr = 0.01` changes the
 * local of the running function. */
#include "debug.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rl.h"   /* last: it names readline's functions and variables */

/* ---- the console ------------------------------------------------------- */

static const dbg_console *console;   /* NULL: the terminal */

void dbg_set_console(const dbg_console *c) { console = c; }
bool dbg_remote(void) { return console != NULL; }
FILE *dbg_out(void) { return console ? console->out : stdout; }
bool dbg_color(void) { return console ? console->color : emsh_use_color(); }

void dbg_resumed(bool continuing)
{
    if (console && console->resumed) console->resumed(continuing);
}

void dbg_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(dbg_out(), fmt, ap);
    va_end(ap);
    fflush(dbg_out());
}

void dbg_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (console) dbg_printf("%s\n", msg);
    else emsh_message(NULL, msg);
}

/* ---- evaluation ---------------------------------------------------------- */

static const char eval_key = 'e';   /* registry: the evaluation thread */

lua_State *dbg_eval_thread(lua_State *L)
{
    lua_checkstack(L, 2);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &eval_key) == LUA_TTHREAD) {
        lua_State *E = lua_tothread(L, -1);
        lua_pop(L, 1);
        return E;
    }
    lua_pop(L, 1);
    lua_State *E = lua_newthread(L);
    lua_sethook(E, NULL, 0, 0);   /* a new thread takes its maker's hook */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &eval_key);
    return E;
}

enum { VAR_NONE, VAR_LOCAL, VAR_UPVALUE };

/* Where name lives in the frame at level of L1: the innermost active local
 * of that name, else an upvalue of the frame's function. */
static int find_var(lua_State *L1, int level, const char *name, lua_Debug *ar, int *idx)
{
    if (!lua_getstack(L1, level, ar) || !lua_checkstack(L1, 2)) return VAR_NONE;
    int found = 0;
    const char *n;
    for (int i = 1; (n = lua_getlocal(L1, ar, i)) != NULL; i++) {
        lua_pop(L1, 1);
        if (n[0] != '(' && strcmp(n, name) == 0) found = i;
    }
    if (found) {
        *idx = found;
        return VAR_LOCAL;
    }
    lua_getinfo(L1, "f", ar);
    for (int i = 1; (n = lua_getupvalue(L1, -1, i)) != NULL; i++) {
        lua_pop(L1, 1);
        if (strcmp(n, name) == 0) {
            found = i;
            break;
        }
    }
    lua_pop(L1, 1);
    *idx = found;
    return found ? VAR_UPVALUE : VAR_NONE;
}

/* Pushes onto E the value of the variable found by find_var. */
static void push_var(lua_State *E, lua_State *L1, int level, int kind, int idx)
{
    lua_Debug ar;
    lua_getstack(L1, level, &ar);
    if (kind == VAR_LOCAL) {
        lua_getlocal(L1, &ar, idx);
    } else {
        lua_getinfo(L1, "f", &ar);
        lua_getupvalue(L1, -1, idx);
        lua_remove(L1, -2);
    }
    lua_xmove(L1, E, 1);
}

/* Pushes the globals the frame sees: its _ENV, else the global table. */
static void push_frame_env(lua_State *E, lua_State *L1, int level)
{
    lua_Debug ar;
    int idx, kind = find_var(L1, level, "_ENV", &ar, &idx);
    if (kind != VAR_NONE) push_var(E, L1, level, kind, idx);
    else lua_rawgeti(E, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
}

/* For the proxy's __index and __newindex: the frame the proxy stands for
 * (L1 at level, from its upvalues) and where the key (argument 2) lives
 * there, when it is a string naming a local or upvalue (else VAR_NONE). */
static int proxy_var(lua_State *E, lua_State **L1, int *level, int *idx)
{
    *level = (int)lua_tointeger(E, lua_upvalueindex(2));
    *L1 = lua_tothread(E, lua_upvalueindex(1));
    if (lua_type(E, 2) != LUA_TSTRING) return VAR_NONE;
    lua_Debug ar;
    return find_var(*L1, *level, lua_tostring(E, 2), &ar, idx);
}

static int env_index(lua_State *E)
{
    lua_State *L1;
    int level, idx, kind = proxy_var(E, &L1, &level, &idx);
    if (kind != VAR_NONE) {
        push_var(E, L1, level, kind, idx);
        return 1;
    }
    push_frame_env(E, L1, level);
    lua_pushvalue(E, 2);
    lua_gettable(E, -2);
    return 1;
}

static int env_newindex(lua_State *E)
{
    lua_State *L1;
    int level, idx, kind = proxy_var(E, &L1, &level, &idx);
    if (kind != VAR_NONE && lua_checkstack(L1, 2)) {
        lua_Debug ar;
        lua_getstack(L1, level, &ar);
        lua_pushvalue(E, 3);
        if (kind == VAR_LOCAL) {
            lua_xmove(E, L1, 1);
            lua_setlocal(L1, &ar, idx);
        } else {
            lua_getinfo(L1, "f", &ar);
            lua_xmove(E, L1, 1);
            lua_setupvalue(L1, -2, idx);
            lua_pop(L1, 1);
        }
        return 0;
    }
    push_frame_env(E, L1, level);
    lua_pushvalue(E, 2);
    lua_pushvalue(E, 3);
    lua_settable(E, -3);
    return 0;
}

/* Pushes the proxy _ENV for the frame at level of L1. */
static void push_proxy(lua_State *E, lua_State *L1, int level)
{
    lua_newtable(E);
    lua_createtable(E, 0, 2);
    lua_checkstack(L1, 1);
    lua_pushthread(L1);
    lua_xmove(L1, E, 1);
    lua_pushinteger(E, level);
    lua_pushvalue(E, -2);
    lua_pushvalue(E, -2);
    lua_pushcclosure(E, env_index, 2);
    lua_setfield(E, -4, "__index");
    lua_pushcclosure(E, env_newindex, 2);
    lua_setfield(E, -2, "__newindex");
    lua_setmetatable(E, -2);
}

static int traceback_msgh(lua_State *E)
{
    if (lua_type(E, 1) != LUA_TSTRING && luaL_callmeta(E, 1, "__tostring")) return 1;
    if (lua_type(E, 1) != LUA_TSTRING)
        lua_pushfstring(E, "(error object is a %s value)", luaL_typename(E, 1));
    return 1;
}

/* Compiles code as an expression, else as a statement. */
static int compile(lua_State *E, const char *code)
{
    const char *ret = lua_pushfstring(E, "return %s;", code);
    int status = luaL_loadbuffer(E, ret, strlen(ret), "=(dbg)");
    lua_remove(E, -2);
    if (status == LUA_OK) return status;
    lua_pop(E, 1);
    return luaL_loadbuffer(E, code, strlen(code), "=(dbg)");
}

int dbg_eval(lua_State *L1, int level, const char *code, lua_State **Eout, char **errmsg)
{
    lua_State *E = dbg_eval_thread(L1);
    *Eout = E;
    int top = lua_gettop(E);
    lua_checkstack(E, 8);
    lua_pushcfunction(E, traceback_msgh);
    int status = compile(E, code);
    if (status == LUA_OK) {
        push_proxy(E, L1, level);
        lua_setupvalue(E, -2, 1);   /* a chunk's only upvalue is its _ENV */
        status = lua_pcall(E, 0, LUA_MULTRET, top + 1);
    }
    if (status != LUA_OK) {
        const char *msg = lua_tostring(E, -1);
        if (!msg) msg = "(error object is not a string)";
        if (errmsg) *errmsg = strdup(msg);
        else dbg_error("%s", msg);
        lua_settop(E, top);
        return -1;
    }
    lua_remove(E, top + 1);
    return lua_gettop(E) - top;
}

bool dbg_condition_true(lua_State *L, dbg_break *b)
{
    lua_State *E;
    char *err = NULL;
    int n = dbg_eval(L, 0, b->cond, &E, &err);
    if (n < 0) {   /* a condition that fails stops, with the reason */
        dbg_printf("breakpoint %d: error in condition '%s': %s\n", b->id, b->cond, err ? err : "?");
        free(err);
        return true;
    }
    bool yes = n > 0 && lua_toboolean(E, -n);
    lua_pop(E, n);
    return yes;
}

/* ---- frames ------------------------------------------------------------- */

void dbg_function_name(lua_State *L, lua_Debug *ar, char *buf, size_t size)
{
    (void)L;
    if (ar->namewhat && ar->namewhat[0] != '\0')
        snprintf(buf, size, "%s '%s'", strcmp(ar->namewhat, "method") == 0 ? "method" : "function",
                 ar->name);
    else if (ar->what[0] == 'm')
        snprintf(buf, size, "main chunk");
    else if (ar->what[0] == 'C')
        snprintf(buf, size, "a C function");
    else
        snprintf(buf, size, "function <%s:%d>", ar->short_src, ar->linedefined);
}

static bool frame_info(const dbg_stop *s, int k, lua_Debug *ar)
{
    return k >= 0 && k < s->nframes && lua_getstack(s->L, s->base + k, ar) &&
           lua_getinfo(s->L, "Slnt", ar);
}

/* "t.lua:3 (in function 'f')" */
static void describe_frame(const dbg_stop *s, int k, char *buf, size_t size, bool parens)
{
    lua_Debug ar;
    if (!frame_info(s, k, &ar)) {
        snprintf(buf, size, "?");
        return;
    }
    char name[160];
    dbg_function_name(s->L, &ar, name, sizeof name);
    if (ar.istailcall) strncat(name, ", tail-called", sizeof name - strlen(name) - 1);
    const char *open = parens ? "(in " : "in ", *close = parens ? ")" : "";
    if (ar.currentline > 0)
        snprintf(buf, size, "%s:%d %s%s%s", ar.short_src, ar.currentline, open, name, close);
    else
        snprintf(buf, size, "%s %s%s%s", ar.short_src, open, name, close);
}

/* ---- source text --------------------------------------------------------- */

typedef struct {
    char *key;            /* the chunk source it holds */
    char *text;
    size_t len;
    size_t *starts;       /* offset of each line */
    int nlines;
} source_text;

static source_text src;

static void drop_source(void)
{
    free(src.key);
    free(src.text);
    free(src.starts);
    src = (source_text){0};
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t r;
    while (s && (r = fread(s + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) free(s);
            s = t;
        }
    }
    fclose(f);
    *len = n;
    return s;
}

/* Loads the text of the chunk with this source (a file re-read at each
 * stop: it may have been edited). */
static bool load_source(const char *source, bool fresh)
{
    if (src.key && strcmp(src.key, source) == 0 && !fresh) return src.text != NULL;
    drop_source();
    src.key = strdup(source);
    if (source[0] == '=') return false;
    if (source[0] == '@') {
        src.text = read_file(source + 1, &src.len);
    } else {
        src.len = strlen(source);
        src.text = malloc(src.len + 1);
        if (src.text) memcpy(src.text, source, src.len + 1);
    }
    if (!src.text) return false;
    int cap = 64;
    src.starts = malloc(sizeof *src.starts * (size_t)cap);
    if (!src.starts) return false;
    src.starts[src.nlines++] = 0;
    for (size_t i = 0; i < src.len; i++) {
        if (src.text[i] != '\n' || i + 1 == src.len) continue;
        if (src.nlines == cap) {
            size_t *t = realloc(src.starts, sizeof *t * (size_t)(cap *= 2));
            if (!t) break;
            src.starts = t;
        }
        src.starts[src.nlines++] = i + 1;
    }
    return true;
}

static bool print_source_line(int line, bool current)
{
    if (line < 1 || line > src.nlines) return false;
    size_t a = src.starts[line - 1];
    size_t b = line < src.nlines ? src.starts[line] : src.len;
    while (b > a && (src.text[b - 1] == '\n' || src.text[b - 1] == '\r')) b--;
    dbg_printf("%5d %s %.*s\n", line, current ? "->" : "  ", (int)(b - a), src.text + a);
    return true;
}

/* ---- what the prompt remembers -------------------------------------------- */

typedef struct {
    int id;
    char *expr;
} display;

static display *displays;
static int ndisplays, next_display = 1;
static char *last_repeatable;   /* step/next/list: an empty line repeats it */
static int list_next;           /* where a repeated list goes on; 0: around the line */
static HISTORY_STATE *dbg_history;

static void show_display(const dbg_stop *s, const display *d)
{
    lua_State *E;
    char *err = NULL;
    dbg_printf("%d: %s = ", d->id, d->expr);
    int n = dbg_eval(s->L, s->base + s->sel, d->expr, &E, &err);
    if (n < 0) {
        dbg_printf("<error: %s>\n", err ? err : "?");
        free(err);
    } else if (n == 0) {
        dbg_printf("(no value)\n");
    } else {
        emsh_print_values_to(E, n, dbg_color(), dbg_out());
    }
}

void dbg_show_displays(const dbg_stop *s)
{
    for (int i = 0; i < ndisplays; i++) show_display(s, &displays[i]);
}

void dbg_print_location(dbg_stop *s, const char *prefix)
{
    char where[512];
    describe_frame(s, s->sel, where, sizeof where, true);
    dbg_printf("%s%sstopped at %s\n", prefix ? prefix : "", prefix ? ": " : "", where);
    lua_Debug ar;
    if (frame_info(s, s->sel, &ar) && ar.currentline > 0 && load_source(ar.source, true))
        print_source_line(ar.currentline, true);
}

/* ---- commands ------------------------------------------------------------- */

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* An optional count (default def); false when args are not a number. */
static bool count_arg(const char *args, int def, int *out)
{
    args = skip_space(args);
    if (*args == '\0') {
        *out = def;
        return true;
    }
    char *end;
    long v = strtol(args, &end, 10);
    if (*skip_space(end) != '\0' || v < 0 || v > 1000000) return false;
    *out = (int)v;
    return true;
}

static void cmd_backtrace(const dbg_stop *s)
{
    for (int k = 0; k < s->nframes; k++) {
        char where[512];
        describe_frame(s, k, where, sizeof where, false);
        dbg_printf("%c%3d  %s\n", k == s->sel ? '*' : ' ', k, where);
    }
}

static void select_frame(dbg_stop *s, int k)
{
    if (k < 0) k = 0;
    if (k >= s->nframes) k = s->nframes - 1;
    s->sel = k;
    list_next = 0;
    char where[512];
    describe_frame(s, k, where, sizeof where, true);
    dbg_printf("frame %d: %s\n", k, where);
    lua_Debug ar;
    if (frame_info(s, k, &ar) && ar.currentline > 0 && load_source(ar.source, false))
        print_source_line(ar.currentline, true);
}

static void cmd_list(dbg_stop *s, const char *args)
{
    lua_Debug ar;
    if (!frame_info(s, s->sel, &ar) || !load_source(ar.source, false)) {
        dbg_error("list: no source text for %s", frame_info(s, s->sel, &ar) ? ar.short_src : "this frame");
        return;
    }
    int center;
    args = skip_space(args);
    if (*args) {
        if (!count_arg(args, 0, &center) || center < 1) {
            dbg_error("list: expected a line number");
            return;
        }
        list_next = center - 5;
    } else if (list_next == 0) {
        list_next = ar.currentline - 5;
    }
    if (list_next < 1) list_next = 1;
    if (list_next > src.nlines) {
        dbg_error("list: %s has %d lines", ar.short_src, src.nlines);
        return;
    }
    int last = list_next + 10;
    for (int line = list_next; line <= last && line <= src.nlines; line++)
        print_source_line(line, line == ar.currentline);
    list_next = last + 1;
}

/* A value as the locals list shows it: strings quoted (and cut when long),
 * modules, classes and objects on one line, plain data in full. */
static void print_var(lua_State *E, const char *name)
{
    if (lua_type(E, -1) != LUA_TSTRING) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s = ", name);
        emsh_print_brief(E, -1, prefix, dbg_color(), dbg_out());
        lua_pop(E, 1);
        return;
    }
    size_t len;
    const char *s = lua_tolstring(E, -1, &len);
    size_t shown = len > 200 ? 200 : len;
    FILE *out = dbg_out();
    fprintf(out, "%s = \"", name);
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c == '\n') fputs("\\n", out);
        else if (c == '\t') fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f) fprintf(out, "\\%u", c);
        else fputc(c, out);
    }
    fprintf(out, "\"%s\n", shown < len ? "..." : "");
    fflush(out);
    lua_pop(E, 1);
}

/* For :locals and :upvalues: pops the variable on top of L1 and prints it
 * through E, unless hidden; 1 when it was printed. */
static int show_top_var(lua_State *L1, lua_State *E, const char *name, bool hidden)
{
    if (hidden) {
        lua_pop(L1, 1);
        return 0;
    }
    lua_xmove(L1, E, 1);
    print_var(E, name);
    lua_settop(E, 0);
    return 1;
}

static void cmd_locals(const dbg_stop *s)
{
    lua_Debug ar;
    lua_State *L1 = s->L;
    if (!lua_getstack(L1, s->base + s->sel, &ar) || !lua_checkstack(L1, 2)) return;
    lua_State *E = dbg_eval_thread(L1);
    int shown = 0;
    const char *name;
    for (int i = 1; (name = lua_getlocal(L1, &ar, i)) != NULL; i++)
        shown += show_top_var(L1, E, name, name[0] == '(');     /* temporaries: "(for state)", ... */
    if (!shown) dbg_printf("no locals\n");
}

static void cmd_upvalues(const dbg_stop *s)
{
    lua_Debug ar;
    lua_State *L1 = s->L;
    if (!lua_getstack(L1, s->base + s->sel, &ar) || !lua_checkstack(L1, 3)) return;
    lua_State *E = dbg_eval_thread(L1);
    lua_getinfo(L1, "f", &ar);
    int shown = 0;
    const char *name;
    for (int i = 1; (name = lua_getupvalue(L1, -1, i)) != NULL; i++)    /* C upvalues have no names */
        shown += show_top_var(L1, E, name, name[0] == '\0' || strcmp(name, "_ENV") == 0);
    lua_pop(L1, 1);
    if (!shown) dbg_printf("no upvalues\n");
}

static void cmd_eval(const dbg_stop *s, const char *code)
{
    lua_State *E;
    int n = dbg_eval(s->L, s->base + s->sel, code, &E, NULL);
    if (n > 0) emsh_print_values_to(E, n, dbg_color(), dbg_out());
}

static void cmd_display(const dbg_stop *s, const char *args)
{
    args = skip_space(args);
    if (*args == '\0') {
        if (ndisplays == 0) dbg_printf("no displays\n");
        for (int i = 0; i < ndisplays; i++) show_display(s, &displays[i]);
        return;
    }
    display *v = realloc(displays, sizeof *v * (size_t)(ndisplays + 1));
    if (!v) return;
    displays = v;
    displays[ndisplays] = (display){next_display++, strdup(args)};
    show_display(s, &displays[ndisplays++]);
}

static void cmd_undisplay(const char *args)
{
    args = skip_space(args);
    if (*args == '\0') {
        for (int i = 0; i < ndisplays; i++) free(displays[i].expr);
        ndisplays = 0;
        return;
    }
    int id;
    if (!count_arg(args, 0, &id)) {
        dbg_error("undisplay: expected a display number");
        return;
    }
    for (int i = 0; i < ndisplays; i++) {
        if (displays[i].id != id) continue;
        free(displays[i].expr);
        memmove(displays + i, displays + i + 1, sizeof *displays * (size_t)(ndisplays - i - 1));
        ndisplays--;
        return;
    }
    dbg_error("undisplay: no display %d", id);
}

static const char help_text[] =
    "  bt, where            the frames (* marks the selected one)\n"
    "  up [n], down [n]     select the calling / called frame\n"
    "  frame N              select frame N\n"
    "  list, l [line]       source around the line (again: the next lines)\n"
    "  locals, upvalues     the selected frame's variables\n"
    "  p expr, expr         evaluate in the selected frame; statements too:\n"
    "                       x = 1 assigns the frame's local x\n"
    "  step, s              to the next line, into calls\n"
    "  next, n              to the next line in this frame (or a caller)\n"
    "  finish, fin          until the selected frame returns (its values shown)\n"
    "  continue, c          run on\n"
    "  display expr         show expr at each stop; display: show all\n"
    "  undisplay [N]        drop display N (all without N)\n"
    "  break, b file:line [hits N] [if cond]   (line alone: this frame's file)\n"
    "  tbreak ...           a breakpoint deleted at its first stop\n"
    "  breaks               list breakpoints\n"
    "  delete [N], disable N, enable N, condition N [cond]\n"
    "  quit, q              abort the running code (the error \"quit\");\n"
    "                       attached with ember --attach: detach\n"
    "  detach               (attached) leave; the job runs on at full speed\n"
    "  an empty line repeats step, next or list\n";

static bool word_is(const char *w, size_t n, const char *a, const char *b)
{
    return (strlen(a) == n && memcmp(w, a, n) == 0) || (b && strlen(b) == n && memcmp(w, b, n) == 0);
}

/* The file of the selected frame, for "break 12" (NULL if not a file). */
static const char *frame_file(const dbg_stop *s, char *buf, size_t size)
{
    lua_Debug ar;
    if (!frame_info(s, s->sel, &ar) || ar.source[0] != '@') return NULL;
    snprintf(buf, size, "%s", ar.source + 1);
    return buf;
}

/* Runs one command; returns -1 to keep the prompt open, else an action. */
static int run_command(dbg_stop *s, const char *line, int *depth)
{
    const char *w = line;
    size_t n = strcspn(w, " \t");
    const char *args = skip_space(w + n);
    bool bare = *args == '\0';
    int count;
    bool stepping = word_is(w, n, "step", "s") || word_is(w, n, "next", "n") ||
                    word_is(w, n, "finish", "fin") || word_is(w, n, "continue", "c");
    if (stepping && bare) {
        if (s->postmortem && !word_is(w, n, "continue", "c"))
            dbg_printf("post-mortem: the thread has ended; leaving the debugger\n");
        if (word_is(w, n, "continue", "c") || s->postmortem) return ACT_CONTINUE;
        if (word_is(w, n, "step", "s")) return ACT_STEP;
        *depth = dbg_stack_depth(s->L) - s->base - s->sel;
        return word_is(w, n, "next", "n") ? ACT_NEXT : ACT_FINISH;
    }
    if (word_is(w, n, "detach", NULL) && bare) {
        if (dbg_remote()) return ACT_DETACH;
        dbg_error("detach: no debugger is attached (ember --attach PID)");
        return -1;
    }
    if ((word_is(w, n, "quit", "q") || word_is(w, n, "exit", NULL)) && bare) {
        /* a job someone attached to is not theirs to abort by habit */
        if (dbg_remote()) return ACT_DETACH;
        return s->postmortem ? ACT_CONTINUE : ACT_QUIT;
    }
    if (word_is(w, n, "bt", "where") || word_is(w, n, "backtrace", NULL)) {
        if (bare) {
            cmd_backtrace(s);
            return -1;
        }
    } else if (word_is(w, n, "up", "down") && count_arg(args, 1, &count)) {
        select_frame(s, s->sel + (w[0] == 'u' ? count : -count));
        return -1;
    } else if (word_is(w, n, "frame", "f") && !bare && count_arg(args, 0, &count)) {
        if (count >= s->nframes) dbg_error("frame: there are %d frames", s->nframes);
        else select_frame(s, count);
        return -1;
    } else if (word_is(w, n, "list", "l") && (bare || count_arg(args, 0, &count))) {
        cmd_list(s, args);
        return -1;
    } else if (word_is(w, n, "locals", NULL) && bare) {
        cmd_locals(s);
        return -1;
    } else if (word_is(w, n, "upvalues", NULL) && bare) {
        cmd_upvalues(s);
        return -1;
    } else if (word_is(w, n, "info", NULL) && !bare) {
        if (strcmp(args, "locals") == 0) cmd_locals(s);
        else if (strcmp(args, "upvalues") == 0) cmd_upvalues(s);
        else if (strcmp(args, "breaks") == 0 || strcmp(args, "break") == 0) dbg_break_command(s->L, "breaks", "", NULL);
        else if (strcmp(args, "display") == 0) cmd_display(s, "");
        else if (strcmp(args, "frame") == 0) select_frame(s, s->sel);
        else dbg_error("info: locals, upvalues, breaks, display or frame");
        return -1;
    } else if (word_is(w, n, "p", "print") && !bare) {
        cmd_eval(s, args);
        return -1;
    } else if (word_is(w, n, "display", NULL)) {
        cmd_display(s, args);
        return -1;
    } else if (word_is(w, n, "undisplay", NULL)) {
        cmd_undisplay(args);
        return -1;
    } else if (word_is(w, n, "help", "h") && bare) {
        dbg_printf("%s", help_text);
        return -1;
    } else if (word_is(w, n, "break", "b") || word_is(w, n, "tbreak", "breaks") ||
               word_is(w, n, "delete", "disable") || word_is(w, n, "enable", "condition")) {
        /* "b = 2" is Lua: a command's arguments never start with '=' */
        if (args[0] != '=' || args[1] == '=') {
            char cmd[16], file[1024];
            snprintf(cmd, sizeof cmd, "%.*s", (int)n, w);
            if (dbg_break_command(s->L, cmd, args, frame_file(s, file, sizeof file)))
                dbg_breaks_changed(s->L);
            return -1;
        }
    }
    cmd_eval(s, line);
    return -1;
}

/* One line from the user, with the debugger's own readline history. */
static char *read_command(void)
{
    bool tty = isatty(STDIN_FILENO) && emsh_rl_open();
    HISTORY_STATE *repl = NULL;
    if (tty) {
        repl = history_get_history_state();
        if (!dbg_history) dbg_history = calloc(1, sizeof *dbg_history);
        if (dbg_history) history_set_history_state(dbg_history);
    }
    char *line = emsh_read_line("(dbg) ");
    if (tty) {
        if (line && *skip_space(line)) add_history(line);
        free(dbg_history);
        dbg_history = history_get_history_state();
        if (repl) history_set_history_state(repl);
        free(repl);
    }
    return line;
}

static bool repeatable(const char *line)
{
    size_t n = strcspn(line, " \t");
    return word_is(line, n, "step", "s") || word_is(line, n, "next", "n") || word_is(line, n, "list", "l");
}

dbg_action dbg_prompt(dbg_stop *s, int *depth)
{
    list_next = 0;   /* the last command is kept: an empty line repeats a next */
    for (;;) {
        char *line = console ? console->read_line("(dbg) ") : read_command();
        if (!line) {   /* input ended: let the program run on */
            if (console) return ACT_DETACH;
            if (!isatty(STDIN_FILENO)) return ACT_CONTINUE;
            dbg_printf("\n");
            return ACT_CONTINUE;
        }
        const char *cmd = skip_space(line);
        size_t len = strlen(cmd);
        while (len > 0 && (cmd[len - 1] == ' ' || cmd[len - 1] == '\t')) len--;
        char *text = strndup(cmd, len);
        free(line);
        if (!text) return ACT_CONTINUE;
        if (*text == '\0') {
            free(text);
            if (!last_repeatable) continue;
            text = strdup(last_repeatable);
            if (!text) return ACT_CONTINUE;
        } else if (repeatable(text)) {
            size_t n = strcspn(text, " \t");
            free(last_repeatable);
            last_repeatable = strndup(text, n);   /* "list 40" goes on as "list" */
        } else {
            free(last_repeatable);
            last_repeatable = NULL;
        }
        int act = run_command(s, text, depth);
        free(text);
        if (act >= 0) return (dbg_action)act;
    }
}
