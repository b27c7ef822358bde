/* kernel.c — `ember --kernel CONNECTION_FILE`: ember as a Jupyter kernel
 * (messaging protocol 5.3), with the REPL's semantics: a cell is an entry
 * (auto-printed values, `_`, ':' commands, '?' help), completion is the
 * shell's, inspection is ember.help, is_complete is the REPL's <eof> rule.
 *
 * Threads: the main thread owns the Lua state and the shell, stdin and
 * (under a lock, shared with the others) iopub sockets; the control thread
 * answers the control socket even while a cell runs (interrupt_request
 * sends the process SIGINT, which run.c turns into "interrupted!" exactly
 * as Ctrl-C in the shell; shutdown_request also tells the main thread to
 * end); the heartbeat thread echoes; kernel_capture.c's thread turns
 * stdout and stderr into stream messages. Only the main thread takes
 * SIGINT. */
#include "shell.h"
#include "../engine/ember.h"   /* em_interrupt_requested */

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define CONTROL_WAKE "inproc://ember-kernel-control"

typedef struct {
    int count;
    char *code;
    char *output;   /* the result's text/plain, or NULL */
} history_entry;

static struct {
    ekw_connection conn;
    char session[37];
    void *ctx;
    void *sock[EKW_NSOCKETS];
    void *wake_main, *wake_control;   /* PAIR: the control thread tells the main thread to end */
    pthread_t control_thread, hb_thread;
    pthread_mutex_t iopub_lock;
    const ekw_msg *running;           /* the execute_request a cell's output belongs to */
    const ekw_msg *asks;              /* the same while its front end takes input_request (allow_stdin) */
    volatile sig_atomic_t busy;
    int execution_count;
    history_entry *history;
    size_t nhistory, caphistory;
} K = {.iopub_lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- sending -------------------------------------------------------------- */

static const char *str_field(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool bool_field(const cJSON *o, const char *name, bool dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

/* Publishes on iopub (any thread); takes content. */
static void publish(const ekw_msg *parent, const char *msg_type, cJSON *content)
{
    pthread_mutex_lock(&K.iopub_lock);
    ekw_send(K.sock[EKW_IOPUB], &K.conn, K.session, parent, msg_type, msg_type, content);
    pthread_mutex_unlock(&K.iopub_lock);
    cJSON_Delete(content);
}

static void publish_status(const ekw_msg *parent, const char *state)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "execution_state", state);
    publish(parent, "status", c);
}

/* Replies to m on sock (the socket m came from); takes content. */
static void reply(void *sock, const ekw_msg *m, const char *msg_type, cJSON *content)
{
    ekw_send(sock, &K.conn, K.session, m, NULL, msg_type, content);
    cJSON_Delete(content);
}

/* "x_request" -> "x_reply" in buf; false for a name without "_request". */
static bool reply_type(const char *msg_type, char *buf, size_t n)
{
    size_t len = strlen(msg_type), suffix = strlen("_request");
    if (len <= suffix || strcmp(msg_type + len - suffix, "_request") != 0 || len + 1 > n) return false;
    snprintf(buf, n, "%.*s_reply", (int)(len - suffix), msg_type);
    return true;
}

static cJSON *error_content(const char *ename, const char *evalue, const char *traceback)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "status", "error");
    cJSON_AddStringToObject(c, "ename", ename);
    cJSON_AddStringToObject(c, "evalue", evalue);
    cJSON *tb = cJSON_AddArrayToObject(c, "traceback");
    const char *line = traceback;
    while (line && *line) {
        size_t n = strcspn(line, "\n");
        char *s = strndup(line, n);
        if (s) cJSON_AddItemToArray(tb, cJSON_CreateString(s));
        free(s);
        line += n + (line[n] == '\n');
    }
    return c;
}

/* The error reply for a request the kernel cannot serve. */
static void reply_error(void *sock, const ekw_msg *m, const char *ename, const char *evalue)
{
    char type[128];
    if (!reply_type(m->msg_type, type, sizeof type)) {
        ekw_log("dropped a message of type %s (not a request)", m->msg_type);
        return;
    }
    /* evalue may quote the client cut short (%.100s), inside a character */
    char *clean = ekw_utf8_clean(evalue, strlen(evalue), NULL);
    if (clean) evalue = clean;
    ekw_log("answered a request with an error: %s", evalue);
    reply(sock, m, type, error_content(ename, evalue, evalue));
    free(clean);
}

static cJSON *ok_content(void)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "status", "ok");
    return c;
}

/* ---- kernel_info ---------------------------------------------------------- */

static cJSON *kernel_info(void)
{
    cJSON *c = ok_content();
    cJSON_AddStringToObject(c, "protocol_version", "5.3");
    cJSON_AddStringToObject(c, "implementation", "ember");
    cJSON_AddStringToObject(c, "implementation_version", EMBER_VERSION);
    cJSON *li = cJSON_AddObjectToObject(c, "language_info");
    cJSON_AddStringToObject(li, "name", "lua");
    cJSON_AddStringToObject(li, "version", "5.4");
    cJSON_AddStringToObject(li, "mimetype", "text/x-lua");
    cJSON_AddStringToObject(li, "file_extension", ".lua");
    cJSON_AddStringToObject(li, "pygments_lexer", "lua");
    cJSON_AddStringToObject(li, "codemirror_mode", "lua");
    cJSON_AddStringToObject(c, "banner",
                            "ember " EMBER_VERSION " (" LUA_RELEASE "): tensors and autograd in Lua.\n"
                            "help(x) or ?name for documentation, :help for the ':' commands.");
    cJSON *links = cJSON_AddArrayToObject(c, "help_links");
    cJSON *lua = cJSON_CreateObject();
    cJSON_AddStringToObject(lua, "text", "Lua 5.4 manual");
    cJSON_AddStringToObject(lua, "url", "https://www.lua.org/manual/5.4/");
    cJSON_AddItemToArray(links, lua);
    return c;
}

/* ---- output of a running cell --------------------------------------------- */

static void emit_stream(const char *name, const char *text, void *ud)
{
    (void)ud;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", name);
    cJSON_AddStringToObject(c, "text", text);
    pthread_mutex_lock(&K.iopub_lock);
    ekw_send(K.sock[EKW_IOPUB], &K.conn, K.session, K.running, "stream", "stream", c);
    pthread_mutex_unlock(&K.iopub_lock);
    cJSON_Delete(c);
}

static void set_running(const ekw_msg *m)
{
    pthread_mutex_lock(&K.iopub_lock);
    K.running = m;
    pthread_mutex_unlock(&K.iopub_lock);
}

/* display(png, text): ember.plot's display hook sends a figure as a
 * display_data message of the running cell. What the cell printed before
 * goes out first. */
static int lua_display(lua_State *L)
{
    size_t n;
    const char *png = luaL_checklstring(L, 1, &n);
    const char *text = luaL_optstring(L, 2, "<figure>");
    char *b64 = malloc(4 * ((n + 2) / 3) + 1);
    if (!b64) return luaL_error(L, "display: out of memory");
    EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)png, (int)n);
    char *clean = ekw_utf8_clean(text, strlen(text), NULL);
    cJSON *c = cJSON_CreateObject();
    cJSON *data = cJSON_AddObjectToObject(c, "data");
    cJSON_AddStringToObject(data, "image/png", b64);
    cJSON_AddStringToObject(data, "text/plain", clean ? clean : "<figure>");
    cJSON_AddObjectToObject(c, "metadata");
    cJSON_AddObjectToObject(c, "transient");
    free(b64);
    free(clean);
    ekc_flush();
    pthread_mutex_lock(&K.iopub_lock);
    ekw_send(K.sock[EKW_IOPUB], &K.conn, K.session, K.running, "display_data", "display_data", c);
    pthread_mutex_unlock(&K.iopub_lock);
    cJSON_Delete(c);
    return 0;
}

/* The display hook ember.plot calls instead of drawing in the terminal:
 * the figure as a PNG (gnuplot's pngcairo, through fig:save). */
static const char display_hook[] =
    "local display = ...\n"
    "local ok, plot = pcall(require, 'ember.plot')\n"
    "if not ok then return end\n"
    "plot.config.display = function(fig)\n"
    "  local size = fig.opts.size\n"
    "  if not (size and size[1] >= 100) then size = {640, 480} end\n"
    "  local tmp = os.tmpname()\n"
    "  local png = tmp .. '.png'\n"
    "  local ok, err = pcall(fig.save, fig, png, {size = size})\n"
    "  os.remove(tmp)\n"
    "  if not ok then os.remove(png); error(err, 0) end\n"
    "  local f = assert(io.open(png, 'rb'))\n"
    "  local data = f:read('a')\n"
    "  f:close()\n"
    "  os.remove(png)\n"
    "  display(data, tostring(fig))\n"
    "end\n";

/* Runs a hook chunk (display_hook, input_hook) with its C function as the
 * argument; what names it in the log when that fails. */
static void install_hook(lua_State *L, const char *chunk, lua_CFunction fn, const char *what)
{
    if (luaL_loadbuffer(L, chunk, strlen(chunk), "=kernel") != LUA_OK ||
        (lua_pushcfunction(L, fn), lua_pcall(L, 1, 0, 0)) != LUA_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot install %s: %s", what, lua_tostring(L, -1));
        ekw_log("%s", msg);
    }
    lua_settop(L, 0);
}

/* ---- input: io.read() in a cell asks the front end ------------------------- */

/* kernel_input(prompt, password) -> the line the user typed: an
 * input_request on the stdin socket to the front end of the running cell,
 * then its input_reply. Ctrl-C (or interrupt_request) ends the wait. */
static int lua_kernel_input(lua_State *L)
{
    const char *prompt = luaL_optstring(L, 1, "");
    bool password = lua_toboolean(L, 2);
    if (!K.asks)
        return luaL_error(L, "io.read: the front end takes no input for this cell (allow_stdin is false, as in "
                             "nbconvert): give the value in the code instead");
    ekc_flush();   /* what the cell printed comes before the prompt */
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "prompt", prompt);
    cJSON_AddBoolToObject(c, "password", password);
    int sent = ekw_send(K.sock[EKW_STDIN], &K.conn, K.session, K.asks, NULL, "input_request", c);
    cJSON_Delete(c);
    if (sent != 0) return luaL_error(L, "io.read: cannot send the input request to the front end");
    for (;;) {
        zmq_pollitem_t item = {K.sock[EKW_STDIN], 0, ZMQ_POLLIN, 0};
        int n = zmq_poll(&item, 1, 100);
        if (em_interrupt_requested()) return luaL_error(L, "interrupted!");
        if (n <= 0) continue;   /* a timeout, or a signal (EINTR) */
        ekw_msg m;
        int rc = ekw_recv(K.sock[EKW_STDIN], &K.conn, &m);
        if (rc == -2) return luaL_error(L, "io.read: the kernel is shutting down");
        if (rc != 0) continue;
        if (strcmp(m.msg_type, "input_reply") != 0) {
            ekw_msg_free(&m);
            continue;
        }
        const char *bad = m.bad_content;   /* a static string */
        if (bad) {
            ekw_msg_free(&m);
            return luaL_error(L, "io.read: the front end's input_reply: the content frame %s", bad);
        }
        const char *value = str_field(m.content, "value");
        lua_pushstring(L, value ? value : "");
        ekw_msg_free(&m);
        return 1;
    }
}

/* io.read and io.lines() on the standard input (the default input file)
 * become input requests, a line at a time, with io.read's formats; reading
 * from a file or from io.input() set to one is unchanged. */
static const char input_hook[] =
    "local ask = ...\n"
    "local read, lines, stdin = io.read, io.lines, io.stdin\n"
    "local function one(fmt)\n"
    "  local line = ask('', false)\n"
    "  if type(fmt) == 'number' then return line:sub(1, fmt) end\n"
    "  fmt = type(fmt) == 'string' and fmt:gsub('^%*', '') or 'l'\n"
    "  if fmt:sub(1, 1) == 'n' then return tonumber(line) end\n"
    "  if fmt:sub(1, 1) == 'L' then return line .. '\\n' end\n"
    "  return line\n"
    "end\n"
    "io.read = function(...)\n"
    "  if io.input() ~= stdin then return read(...) end\n"
    "  local n = select('#', ...)\n"
    "  if n == 0 then return one('l') end\n"
    "  local out = {}\n"
    "  for i = 1, n do out[i] = one((select(i, ...))) end\n"
    "  return table.unpack(out, 1, n)\n"
    "end\n"
    "io.lines = function(name, ...)\n"
    "  if name ~= nil then return lines(name, ...) end\n"
    "  return function() return io.read() end\n"
    "end\n";

/* ---- help ---------------------------------------------------------------- */

/* ember.help's text for name (an overview for ""), or nil when it has none. */
static const char help_chunk[] =
    "local name = ...\n"
    "local help = require('ember.help')\n"
    "if name == '' then return help.overview() end\n"
    "local e = help.lookup(name)\n"
    "if e then return help.format(e) end\n";

/* The help text of name[0..n) (malloc'd), or NULL. */
static char *help_text(lua_State *L, const char *name, size_t n)
{
    char *text = NULL;
    int top = lua_gettop(L);
    if (luaL_loadbuffer(L, help_chunk, strlen(help_chunk), "=help") == LUA_OK) {
        lua_pushlstring(L, name, n);
        if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            const char *s = lua_tolstring(L, -1, &len);
            text = ekw_utf8_clean(s, len, NULL);
        }
    }
    lua_settop(L, top);
    return text;
}

/* "?name" as a cell: the help text for the pager (the payload of the
 * reply), as IPython does; NULL when there is none (the REPL's message
 * about the unknown name then goes out as a stream). */
static char *page_text(lua_State *L, const char *code)
{
    while (*code == ' ' || *code == '\t' || *code == '\n') code++;
    if (*code != '?') return NULL;
    code++;
    while (*code == ' ' || *code == '\t') code++;
    size_t n = strlen(code);
    while (n > 0 && strchr(" \t\r\n", code[n - 1])) n--;
    return help_text(L, code, n);
}

/* ---- execute -------------------------------------------------------------- */

static void add_history(int count, const char *code)
{
    if (K.nhistory == K.caphistory) {
        size_t cap = K.caphistory ? 2 * K.caphistory : 64;
        history_entry *h = realloc(K.history, cap * sizeof *h);
        if (!h) return;
        K.history = h;
        K.caphistory = cap;
    }
    char *copy = strdup(code);
    if (!copy) return;
    K.history[K.nhistory++] = (history_entry){count, copy, NULL};
}

/* The error on top of the stack as an error content: the first line is the
 * value, every line (with the traceback run.c added) the traceback. */
static cJSON *lua_error_content(lua_State *L, int status, bool compile)
{
    const char *msg = lua_tostring(L, -1);
    if (!msg) msg = lua_touserdata(L, -1) == &emsh_silent_error ? "(error already reported)" : "(error object is not a string)";
    char *clean = ekw_utf8_clean(msg, strlen(msg), NULL);
    if (!clean) return error_content("LuaError", "out of memory", "");
    size_t first = strcspn(clean, "\n");
    char *value = strndup(clean, first);
    const char *ename = compile ? "SyntaxError" : status == LUA_ERRMEM ? "MemoryError" : "LuaError";
    if (value && !compile && strstr(value, "interrupted!")) ename = "Interrupted";
    cJSON *c = error_content(ename, value ? value : "", clean);
    free(value);
    free(clean);
    lua_pop(L, 1);
    return c;
}

/* The ':' commands that need a terminal (the debugger's prompt reads stdin,
 * :clear and :quit act on the terminal session); the rest run as in the
 * shell. */
static const char *const terminal_commands[] = {"pm", "pause", "break", "delete", "disable", "enable",
                                                "condition", "clear", "quit", "q", NULL};

/* A ':' cell naming one of them: says so on stderr (captured). */
static bool refuse_command(const char *code)
{
    while (*code == ' ' || *code == '\t' || *code == '\n') code++;
    if (code[0] != ':' || code[1] == ':') return false;
    code++;
    while (*code == ' ' || *code == '\t') code++;
    size_t n = strcspn(code, " \t\r\n");
    for (int i = 0; terminal_commands[i]; i++) {
        if (strlen(terminal_commands[i]) == n && strncmp(code, terminal_commands[i], n) == 0) {
            fprintf(stderr, ":%.*s needs ember's terminal shell; it does nothing in the Jupyter kernel\n", (int)n,
                    code);
            fflush(stderr);
            return true;
        }
    }
    return false;
}

/* Runs code as a REPL entry. Returns the reply content; the result (text
 * of the values) in *result when there is one to show. */
static cJSON *run_cell(lua_State *L, const char *code, int count, bool show, char **result)
{
    *result = NULL;
    lua_settop(L, 0);
    if (refuse_command(code) || emsh_special_entry(L, code)) {
        lua_settop(L, 0);
        return NULL;
    }
    char chunk[32];
    snprintf(chunk, sizeof chunk, "=In[%d]", count);
    bool quiet = false;
    int status = emsh_compile_entry(L, code, chunk, &quiet);
    if (status != LUA_OK) return lua_error_content(L, status, true);
    status = emsh_docall(L, 0, LUA_MULTRET);
    if (status != LUA_OK) return lua_error_content(L, status, false);
    int n = lua_gettop(L);
    if (n > 0) emsh_keep_results(L, n);
    if (n > 0 && show && !quiet) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            emsh_print_values_to(L, n, false, f);
            fclose(f);
            while (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
            *result = ekw_utf8_clean(buf, len, NULL);
            free(buf);
        }
    }
    lua_settop(L, 0);
    return NULL;
}

static void handle_execute(lua_State *L, const ekw_msg *m)
{
    void *shell = K.sock[EKW_SHELL];
    const char *code = str_field(m->content, "code");
    if (!code) {
        reply_error(shell, m, "BadRequest", "execute_request: content.code must be a string");
        return;
    }
    bool silent = bool_field(m->content, "silent", false);
    bool store = !silent && bool_field(m->content, "store_history", true);
    if (store) {
        K.execution_count++;
        add_history(K.execution_count, code);
    }
    int count = K.execution_count;
    if (!silent) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "code", code);
        cJSON_AddNumberToObject(c, "execution_count", count);
        publish(m, "execute_input", c);
    }
    char *page = page_text(L, code);
    char *result = NULL;
    cJSON *err = NULL;
    if (!page) {
        set_running(m);
        K.asks = bool_field(m->content, "allow_stdin", true) ? m : NULL;
        ekc_begin();
        K.busy = 1;
        err = run_cell(L, code, count, !silent, &result);
        K.busy = 0;
        ekc_end();
        K.asks = NULL;
        set_running(NULL);
    }
    if (result && result[0] && !silent) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "execution_count", count);
        cJSON *data = cJSON_AddObjectToObject(c, "data");
        cJSON_AddStringToObject(data, "text/plain", result);
        cJSON_AddObjectToObject(c, "metadata");
        publish(m, "execute_result", c);
    }
    if (store && result && K.nhistory > 0 && !K.history[K.nhistory - 1].output)
        K.history[K.nhistory - 1].output = result;
    else
        free(result);
    cJSON *rep;
    if (err) {
        if (!silent) publish(m, "error", cJSON_Duplicate(err, true));
        rep = err;
    } else {
        rep = ok_content();
        cJSON_AddObjectToObject(rep, "user_expressions");
        cJSON *payload = cJSON_AddArrayToObject(rep, "payload");
        if (page) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "source", "page");
            cJSON_AddNumberToObject(p, "start", 0);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(p, "data"), "text/plain", page);
            cJSON_AddItemToArray(payload, p);
        }
    }
    free(page);
    cJSON_AddNumberToObject(rep, "execution_count", count);
    reply(shell, m, "execute_reply", rep);
}

/* ---- complete, inspect, is_complete --------------------------------------- */

/* The code and its cursor (a byte offset); false (after an error reply)
 * when the request lacks them. */
static bool code_and_cursor(const ekw_msg *m, const char **code, size_t *cursor)
{
    *code = str_field(m->content, "code");
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(m->content, "cursor_pos");
    if (!*code) {
        reply_error(K.sock[EKW_SHELL], m, "BadRequest", "content.code must be a string");
        return false;
    }
    /* cursor_pos counts characters (code points); absent: the end */
    long chars = cJSON_IsNumber(pos) && pos->valuedouble >= 0 ? (long)pos->valuedouble : LONG_MAX;
    *cursor = ekw_utf8_offset(*code, chars);
    return true;
}

static void handle_complete(lua_State *L, const ekw_msg *m)
{
    const char *code;
    size_t cursor;
    if (!code_and_cursor(m, &code, &cursor)) return;
    size_t line_start = cursor;
    while (line_start > 0 && code[line_start - 1] != '\n') line_start--;
    char *line = strndup(code + line_start, cursor - line_start);
    char **cands = NULL;
    int start = 0;
    size_t n = line ? emsh_complete_candidates(L, line, (int)(cursor - line_start), &start, &cands) : 0;
    cJSON *c = ok_content();
    cJSON *matches = cJSON_AddArrayToObject(c, "matches");
    for (size_t i = 0; i < n; i++) {
        char *clean = ekw_utf8_clean(cands[i], strlen(cands[i]), NULL);
        if (clean) cJSON_AddItemToArray(matches, cJSON_CreateString(clean));
        free(clean);
        free(cands[i]);
    }
    free(cands);
    free(line);
    cJSON_AddNumberToObject(c, "cursor_start", (double)ekw_utf8_chars(code, line_start + (size_t)start));
    cJSON_AddNumberToObject(c, "cursor_end", (double)ekw_utf8_chars(code, cursor));
    cJSON_AddObjectToObject(c, "metadata");
    reply(K.sock[EKW_SHELL], m, "complete_reply", c);
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':';
}

static void handle_inspect(lua_State *L, const ekw_msg *m)
{
    const char *code;
    size_t cursor;
    if (!code_and_cursor(m, &code, &cursor)) return;
    /* the dotted name around the cursor (or just before it) */
    size_t a = cursor, b = cursor;
    while (a > 0 && name_char(code[a - 1])) a--;
    while (code[b] && name_char(code[b])) b++;
    while (b > a && (code[b - 1] == '.' || code[b - 1] == ':')) b--;
    cJSON *c = ok_content();
    cJSON *data = cJSON_AddObjectToObject(c, "data");
    char *text = b > a ? help_text(L, code + a, b - a) : NULL;
    if (text) cJSON_AddStringToObject(data, "text/plain", text);
    bool found = text != NULL;
    free(text);
    cJSON_AddBoolToObject(c, "found", found);
    cJSON_AddObjectToObject(c, "metadata");
    reply(K.sock[EKW_SHELL], m, "inspect_reply", c);
}

static void handle_is_complete(lua_State *L, const ekw_msg *m)
{
    const char *code = str_field(m->content, "code");
    if (!code) {
        reply_error(K.sock[EKW_SHELL], m, "BadRequest", "is_complete_request: content.code must be a string");
        return;
    }
    static const char *const names[] = {"complete", "incomplete", "invalid"};
    emsh_entry_state st = emsh_check_entry(L, code);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "status", names[st]);
    if (st == EMSH_ENTRY_INCOMPLETE) cJSON_AddStringToObject(c, "indent", "  ");
    reply(K.sock[EKW_SHELL], m, "is_complete_reply", c);
}

/* ---- history -------------------------------------------------------------- */

/* [session, count, input] or, with output, [session, count, [input, output]] */
static void add_history_item(cJSON *list, const history_entry *h, bool output)
{
    cJSON *item = cJSON_CreateArray();
    cJSON_AddItemToArray(item, cJSON_CreateNumber(0));   /* session 0: this one */
    cJSON_AddItemToArray(item, cJSON_CreateNumber(h->count));
    cJSON *input = cJSON_CreateString(h->code);
    if (output) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, input);
        cJSON_AddItemToArray(pair, h->output ? cJSON_CreateString(h->output) : cJSON_CreateNull());
        input = pair;
    }
    cJSON_AddItemToArray(item, input);
    cJSON_AddItemToArray(list, item);
}

static long num_field(const cJSON *o, const char *name, long dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

/* tail (the last n), range (this session's cells start <= count < stop)
 * and search (a glob pattern, the last n matches, unique optionally) over
 * this session's cells; inputs only. */
static void handle_history(const ekw_msg *m)
{
    const char *access = str_field(m->content, "hist_access_type");
    cJSON *c = ok_content();
    cJSON *list = cJSON_AddArrayToObject(c, "history");
    long n = num_field(m->content, "n", 10);
    bool output = bool_field(m->content, "output", false);
    if (access && strcmp(access, "tail") == 0) {
        size_t from = n >= 0 && (size_t)n < K.nhistory ? K.nhistory - (size_t)n : 0;
        for (size_t i = from; i < K.nhistory; i++) add_history_item(list, &K.history[i], output);
    } else if (access && strcmp(access, "range") == 0) {
        long session = num_field(m->content, "session", 0);
        long start = num_field(m->content, "start", 1), stop = num_field(m->content, "stop", LONG_MAX);
        for (size_t i = 0; session == 0 && i < K.nhistory; i++)
            if (K.history[i].count >= start && K.history[i].count < stop) add_history_item(list, &K.history[i], output);
    } else if (access && strcmp(access, "search") == 0) {
        const char *pattern = str_field(m->content, "pattern");
        bool unique = bool_field(m->content, "unique", false);
        size_t *hits = malloc((K.nhistory + 1) * sizeof *hits);
        size_t nhits = 0;
        for (size_t i = K.nhistory; hits && pattern && i-- > 0 && (n <= 0 || nhits < (size_t)n);) {
            if (fnmatch(pattern, K.history[i].code, 0) != 0) continue;
            bool seen = false;
            for (size_t k = 0; unique && k < nhits && !seen; k++)
                seen = strcmp(K.history[hits[k]].code, K.history[i].code) == 0;
            if (!seen) hits[nhits++] = i;
        }
        for (size_t k = nhits; k-- > 0;) add_history_item(list, &K.history[hits[k]], output);
        free(hits);
    } else {
        cJSON_Delete(c);
        reply_error(K.sock[EKW_SHELL], m, "BadRequest",
                    "history_request: hist_access_type must be tail, range or search");
        return;
    }
    reply(K.sock[EKW_SHELL], m, "history_reply", c);
}

/* ---- the shell socket ----------------------------------------------------- */

static void handle_shell(lua_State *L, const ekw_msg *m)
{
    void *shell = K.sock[EKW_SHELL];
    publish_status(m, "busy");
    const char *t = m->msg_type;
    if (m->bad_content) {
        char msg[200];
        snprintf(msg, sizeof msg, "the content frame %s", m->bad_content);
        reply_error(shell, m, "BadRequest", msg);
    }
    else if (strcmp(t, "execute_request") == 0) handle_execute(L, m);
    else if (strcmp(t, "kernel_info_request") == 0) reply(shell, m, "kernel_info_reply", kernel_info());
    else if (strcmp(t, "complete_request") == 0) handle_complete(L, m);
    else if (strcmp(t, "inspect_request") == 0) handle_inspect(L, m);
    else if (strcmp(t, "is_complete_request") == 0) handle_is_complete(L, m);
    else if (strcmp(t, "history_request") == 0) handle_history(m);
    else if (strcmp(t, "comm_info_request") == 0) {
        cJSON *c = ok_content();
        cJSON_AddObjectToObject(c, "comms");
        reply(shell, m, "comm_info_reply", c);
    } else {
        char msg[200];
        snprintf(msg, sizeof msg, "unknown message type %.100s", t);
        reply_error(shell, m, "UnknownMessageType", msg);
    }
    publish_status(m, "idle");
}

/* ---- control and heartbeat threads ---------------------------------------- */

static void *control_main(void *arg)
{
    (void)arg;
    void *control = K.sock[EKW_CONTROL];
    for (;;) {
        ekw_msg m;
        int rc = ekw_recv(control, &K.conn, &m);
        if (rc == -2) break;
        if (rc != 0) continue;
        publish_status(&m, "busy");
        const char *t = m.msg_type;
        if (strcmp(t, "interrupt_request") == 0) {
            reply(control, &m, "interrupt_reply", ok_content());
            if (K.busy) kill(getpid(), SIGINT);
        } else if (strcmp(t, "shutdown_request") == 0) {
            cJSON *c = ok_content();
            cJSON_AddBoolToObject(c, "restart", bool_field(m.content, "restart", false));
            reply(control, &m, "shutdown_reply", c);
            zmq_send(K.wake_control, "q", 1, 0);
            if (K.busy) kill(getpid(), SIGINT);   /* a running cell stops first */
        } else if (strcmp(t, "kernel_info_request") == 0) {
            reply(control, &m, "kernel_info_reply", kernel_info());
        } else {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown message type on the control channel: %.100s", t);
            reply_error(control, &m, "UnknownMessageType", msg);
        }
        publish_status(&m, "idle");
        ekw_msg_free(&m);
    }
    return NULL;
}

static void *heartbeat_main(void *arg)
{
    (void)arg;
    void *hb = K.sock[EKW_HB];
    for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, hb, 0) < 0) {
            zmq_msg_close(&msg);
            if (zmq_errno() == ETERM) break;
            continue;
        }
        if (zmq_msg_send(&msg, hb, 0) < 0) zmq_msg_close(&msg);
    }
    return NULL;
}

/* ---- set-up and the loop -------------------------------------------------- */

static void on_idle_sigint(int sig) { (void)sig; }

static int open_sockets(void)
{
    static const int types[EKW_NSOCKETS] = {ZMQ_ROUTER, ZMQ_ROUTER, ZMQ_PUB, ZMQ_ROUTER, ZMQ_REP};
    K.ctx = zmq_ctx_new();
    if (!K.ctx) return -1;
    int linger = 1000;   /* the last replies (shutdown's) still go out */
    for (int i = 0; i < EKW_NSOCKETS; i++) {
        K.sock[i] = zmq_socket(K.ctx, types[i]);
        if (!K.sock[i]) return -1;
        zmq_setsockopt(K.sock[i], ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_bind(K.sock[i], K.conn.endpoint[i]) != 0) {
            ekw_log("cannot bind %s", K.conn.endpoint[i]);
            return -1;
        }
    }
    K.wake_main = zmq_socket(K.ctx, ZMQ_PAIR);
    K.wake_control = zmq_socket(K.ctx, ZMQ_PAIR);
    if (!K.wake_main || !K.wake_control || zmq_bind(K.wake_main, CONTROL_WAKE) != 0 ||
        zmq_connect(K.wake_control, CONTROL_WAKE) != 0)
        return -1;
    return 0;
}

static void close_sockets(void)
{
    for (int i = 0; i < EKW_NSOCKETS; i++)
        if (K.sock[i]) zmq_close(K.sock[i]);
    if (K.wake_main) zmq_close(K.wake_main);
    if (K.wake_control) zmq_close(K.wake_control);
    if (K.ctx) zmq_ctx_term(K.ctx);
}

static void serve(lua_State *L)
{
    for (;;) {
        zmq_pollitem_t items[3] = {
            {K.sock[EKW_SHELL], 0, ZMQ_POLLIN, 0},
            {K.sock[EKW_STDIN], 0, ZMQ_POLLIN, 0},
            {K.wake_main, 0, ZMQ_POLLIN, 0},
        };
        if (zmq_poll(items, 3, -1) < 0) {
            if (zmq_errno() == EINTR) continue;   /* an interrupt with nothing running */
            ekw_log("zmq_poll failed: %s", zmq_strerror(zmq_errno()));
            return;
        }
        if (items[2].revents & ZMQ_POLLIN) return;
        if (items[1].revents & ZMQ_POLLIN) {   /* no input_request is ever sent: drop */
            ekw_msg m;
            if (ekw_recv(K.sock[EKW_STDIN], &K.conn, &m) == 0) ekw_msg_free(&m);
        }
        if (items[0].revents & ZMQ_POLLIN) {
            ekw_msg m;
            int rc = ekw_recv(K.sock[EKW_SHELL], &K.conn, &m);
            if (rc == -2) return;
            if (rc == 0) {
                handle_shell(L, &m);
                ekw_msg_free(&m);
            }
        }
    }
}

int emsh_kernel_run(lua_State *L, const char *connection_file)
{
    if (ekw_read_connection(connection_file, &K.conn) != 0) return -1;
    ekw_uuid(K.session);
    /* every thread started from here (ours and libzmq's) leaves SIGINT to
     * the main thread, where run.c's handler reaches the running Lua code */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = -1;
    bool control_started = false, hb_started = false, capture_started = false;
    if (open_sockets() != 0) goto out;
    if (pthread_create(&K.control_thread, NULL, control_main, NULL) != 0) goto out;
    control_started = true;
    if (pthread_create(&K.hb_thread, NULL, heartbeat_main, NULL) != 0) goto out;
    hb_started = true;
    if (ekc_start(emit_stream, NULL) != 0) goto out;
    capture_started = true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_idle_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    emsh_progname = NULL;   /* as in the REPL: an error is the cell's, not the program's */
    /* nothing types on the kernel's stdin: io.read() asks the front end
     * instead (input_request), and a breakpoint()'s prompt or C code reading
     * fd 0 meets its end rather than waiting for ever */
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) {
        dup2(null_fd, STDIN_FILENO);
        close(null_fd);
    }
    emsh_commands_open(L);
    install_hook(L, display_hook, lua_display, "the plot display hook");
    install_hook(L, input_hook, lua_kernel_input, "io.read's input requests");
    publish_status(NULL, "starting");
    serve(L);
    rc = 0;
out:
    if (rc != 0) ekw_log("cannot start the kernel%s", NULL);
    if (capture_started) ekc_stop();
    if (K.ctx) zmq_ctx_shutdown(K.ctx);
    if (control_started) pthread_join(K.control_thread, NULL);
    if (hb_started) pthread_join(K.hb_thread, NULL);
    close_sockets();
    for (size_t i = 0; i < K.nhistory; i++) {
        free(K.history[i].code);
        free(K.history[i].output);
    }
    free(K.history);
    ekw_free_connection(&K.conn);
    return rc;
}
