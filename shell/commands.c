/* commands.c — the REPL's ':' commands. One prefix for everything the shell
 * does that is not Lua: timing, memory, variables, files, the debugger.
 * `:help` lists them. A command's output goes to stdout, its errors to
 * stderr, and nothing here raises: the session always goes on. */
#include "shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

typedef struct {
    const char *name;
    const char *args;
    const char *help;
    void (*run)(lua_State *L, const char *args);
} command;

/* ---- helpers ------------------------------------------------------------- */

static const char *skip(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Calls ember.cuda.<fn>() protected; true with its one result pushed,
 * false with nothing pushed (no such function, or it failed). */
static bool call_cuda(lua_State *L, const char *fn)
{
    int top = lua_gettop(L);
    if (lua_getglobal(L, "ember") == LUA_TTABLE && lua_getfield(L, -1, "cuda") == LUA_TTABLE &&
        lua_getfield(L, -1, fn) == LUA_TFUNCTION && lua_pcall(L, 0, 1, 0) == LUA_OK) {
        lua_replace(L, top + 1);
        lua_settop(L, top + 1);
        return true;
    }
    lua_settop(L, top);
    return false;
}

/* Whether CUDA is loaded already (asking never loads it: timing a CPU
 * expression must not pay for the CUDA library). */
static bool cuda_in_use(lua_State *L)
{
    if (!call_cuda(L, "is_initialized")) return false;
    bool on = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return on;
}

/* ember.cuda.synchronize() when CUDA is in use, with errors reported. */
static int sync_gpu(lua_State *L)
{
    if (!cuda_in_use(L)) return LUA_OK;
    int top = lua_gettop(L);
    lua_getglobal(L, "ember");
    lua_getfield(L, -1, "cuda");
    lua_getfield(L, -1, "synchronize");
    int ok = emsh_docall(L, 0, 0);
    if (ok != LUA_OK) emsh_report(L, ok);
    lua_settop(L, top);
    return ok;
}

/* Compiles text as an expression ("return text") or else a statement. */
static int load_code(lua_State *L, const char *text, const char *name)
{
    const char *ret = lua_pushfstring(L, "return %s;", text);
    int status = luaL_loadbuffer(L, ret, strlen(ret), name);
    lua_remove(L, -2);
    if (status == LUA_OK) return status;
    lua_pop(L, 1);
    return luaL_loadbuffer(L, text, strlen(text), name);
}

/* A command's code (args, already past the command's name) compiled as the
 * only value on L's stack; false after saying why not: usage when there is
 * no code, the compiler's message for a syntax error. */
static bool load_command_code(lua_State *L, const char *args, const char *chunkname, const char *usage)
{
    if (*args == '\0') {
        emsh_message(NULL, usage);
        return false;
    }
    lua_settop(L, 0);
    int status = load_code(L, args, chunkname);
    if (status != LUA_OK) {
        emsh_report(L, status);
        return false;
    }
    return true;
}

/* Pushes require(module)[fn] (LUA_OK), or leaves require's error message
 * and returns its status. */
static int push_module_fn(lua_State *L, const char *module, const char *fn)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    int status = lua_pcall(L, 1, 1, 0);
    if (status == LUA_OK) {
        lua_getfield(L, -1, fn);
        lua_remove(L, -2);
    }
    return status;
}

static void human_bytes(char *buf, size_t n, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, n, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
}

static void human_seconds(char *buf, size_t n, double s)
{
    if (s < 1e-6) snprintf(buf, n, "%.0f ns", s * 1e9);
    else if (s < 1e-3) snprintf(buf, n, "%.1f us", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.2f ms", s * 1e3);
    else snprintf(buf, n, "%.3f s", s);
}

/* ---- :time --------------------------------------------------------------- */

/* ":time [-n N] code": runs the code N times (default 1), synchronising the
 * GPU before each clock reading, and prints the wall time per run (best and
 * mean when N > 1) and the process CPU time. The last run's values are
 * printed like any result (and kept in _). */
static void cmd_time(lua_State *L, const char *args)
{
    long reps = 1;
    args = skip(args);
    if (strncmp(args, "-n", 2) == 0) {
        char *end;
        reps = strtol(args + 2, &end, 10);
        if (reps < 1 || end == args + 2) {
            emsh_message(NULL, ":time: -n needs a positive count (:time -n 100 expr)");
            return;
        }
        args = skip(end);
    }
    if (!load_command_code(L, args, "=(:time)", ":time: nothing to time (:time [-n N] expression or statement)"))
        return;
    double best = 1e300, total = 0, cpu0 = cpu_now();
    for (long r = 0; r < reps; r++) {
        lua_settop(L, 1);
        if (sync_gpu(L) != LUA_OK) return;
        lua_pushvalue(L, 1);
        double t0 = now();
        int status = emsh_docall(L, 0, LUA_MULTRET);
        if (status == LUA_OK && sync_gpu(L) != LUA_OK) return;
        double dt = now() - t0;
        if (status != LUA_OK) {
            emsh_report(L, status);
            return;
        }
        if (dt < best) best = dt;
        total += dt;
    }
    double cpu = (cpu_now() - cpu0) / (double)reps;
    int n = lua_gettop(L) - 1;
    if (n > 0) emsh_print_values(L, n, emsh_use_color());
    char wall[32], mean[32], cpus[32];
    human_seconds(wall, sizeof wall, best);
    human_seconds(cpus, sizeof cpus, cpu);
    if (reps == 1) {
        printf("wall %s, cpu %s\n", wall, cpus);
    } else {
        human_seconds(mean, sizeof mean, total / (double)reps);
        printf("%ld runs: best %s, mean %s, cpu %s per run\n", reps, wall, mean, cpus);
    }
    fflush(stdout);
    lua_settop(L, 0);
}

/* ---- :profile -------------------------------------------------------------- */

/* ":profile code": runs the code under ember.profiler and prints its ops and
 * the Lua lines that took the most time (lua/ember/profiler.lua's _shell()). */
static void cmd_profile(lua_State *L, const char *args)
{
    args = skip(args);
    if (!load_command_code(L, args, "=(:profile)", ":profile: nothing to profile (:profile expression or statement)"))
        return;
    int status = push_module_fn(L, "ember.profiler", "_shell");
    if (status == LUA_OK) {
        lua_pushvalue(L, 1);
        status = emsh_docall(L, 1, 0);
    }
    if (status != LUA_OK) emsh_report(L, status);
    fflush(stdout);
    lua_settop(L, 0);
}

/* ---- :nan ----------------------------------------------------------------- */

/* ":nan on|off": ember.debug.stop_on_nan, the debugger stopping at the first
 * op that makes a NaN or an infinity */
static void cmd_nan(lua_State *L, const char *args)
{
    args = skip(args);
    bool on = strcmp(args, "on") == 0;
    if (!on && strcmp(args, "off") != 0) {
        emsh_message(NULL, ":nan: say on or off (:nan on stops at the first op that makes a NaN or an infinity)");
        return;
    }
    lua_settop(L, 0);
    int status = push_module_fn(L, "ember.debug", "stop_on_nan");
    if (status == LUA_OK) {
        lua_pushboolean(L, on);
        status = lua_pcall(L, 1, 0, 0);
    }
    if (status != LUA_OK) emsh_report(L, status);
    else printf("%s\n", on ? "stopping at the first op that makes a NaN or an infinity (and anomaly mode on)"
                            : "not stopping at NaN");
    fflush(stdout);
    lua_settop(L, 0);
}

/* ---- :mem ---------------------------------------------------------------- */

/* Resident set size from /proc (Linux); -1 when unknown. */
static double rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long pages_total, pages_rss;
    int got = fscanf(f, "%ld %ld", &pages_total, &pages_rss);
    fclose(f);
    return got == 2 ? (double)pages_rss * (double)sysconf(_SC_PAGESIZE) : -1;
}

static void print_bytes_line(const char *what, double bytes)
{
    char b[32];
    human_bytes(b, sizeof b, bytes);
    printf("  %-28s %s\n", what, b);
}

/* ember.cuda.<fn>() as a number (-1 on failure). */
static double cuda_number(lua_State *L, const char *fn)
{
    if (!call_cuda(L, fn)) return -1;
    double v = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
    lua_pop(L, 1);
    return v;
}

static void cmd_mem(lua_State *L, const char *args)
{
    args = skip(args);
    lua_settop(L, 0);
    if (strncmp(args, "top", 3) == 0 && (args[3] == '\0' || args[3] == ' ')) {
        /* ":mem top": the lines holding the most (ember.memory, while it records) */
        int status = push_module_fn(L, "ember.memory", "_shell_top");
        if (status == LUA_OK) status = emsh_docall(L, 0, 0);
        if (status != LUA_OK) emsh_report(L, status);
        fflush(stdout);
        lua_settop(L, 0);
        return;
    }
    if (*args) {
        emsh_message(NULL, ":mem: unknown argument (:mem, or :mem top)");
        return;
    }
    printf("host\n");
    double rss = rss_bytes();
    if (rss >= 0) print_bytes_line("resident (RSS)", rss);
    print_bytes_line("Lua heap", (double)lua_gc(L, LUA_GCCOUNT) * 1024.0 + lua_gc(L, LUA_GCCOUNTB));
    bool gpu = cuda_in_use(L);
    if (gpu) {
        printf("cuda (caching allocator)\n");
        print_bytes_line("allocated", cuda_number(L, "memory_allocated"));
        print_bytes_line("reserved", cuda_number(L, "memory_reserved"));
        print_bytes_line("peak allocated", cuda_number(L, "max_memory_allocated"));
        print_bytes_line("peak reserved", cuda_number(L, "max_memory_reserved"));
    } else {
        printf("cuda: not in use in this session\n");
    }
    fflush(stdout);
}

/* ---- :gpu ---------------------------------------------------------------- */

/* Field `name` of the table at the top as an integer, -1 when absent (a
 * figure the GPU does not report). */
static long long int_field(lua_State *L, const char *name)
{
    lua_getfield(L, -1, name);
    long long v = lua_isinteger(L, -1) ? (long long)lua_tointeger(L, -1) : -1;
    lua_pop(L, 1);
    return v;
}

/* "N/A" for a figure the GPU does not report, else v scaled and formatted */
static void figure(char *buf, size_t n, long long v, double scale, const char *unit)
{
    if (v < 0) snprintf(buf, n, "N/A");
    else snprintf(buf, n, "%.0f%s", (double)v / scale, unit);
}

static void gpu_row(lua_State *L)
{
    char used[32] = "N/A", total[32] = "N/A", util[16], memutil[16], temp[16], draw[16], limit[16], cuda[16] = "-";
    if (int_field(L, "memory_total") >= 0) {
        human_bytes(used, sizeof used, (double)int_field(L, "memory_used"));
        human_bytes(total, sizeof total, (double)int_field(L, "memory_total"));
    }
    figure(util, sizeof util, int_field(L, "utilization"), 1, "%");
    figure(memutil, sizeof memutil, int_field(L, "memory_usage"), 1, "%");
    figure(temp, sizeof temp, int_field(L, "temperature"), 1, "C");
    figure(draw, sizeof draw, int_field(L, "power_draw"), 1000, "W");
    figure(limit, sizeof limit, int_field(L, "power_limit"), 1000, "W");
    if (int_field(L, "cuda") >= 0) snprintf(cuda, sizeof cuda, "cuda:%lld", int_field(L, "cuda"));
    long long index = int_field(L, "index");
    lua_getfield(L, -1, "name");
    printf("%3lld  %-24.24s %-7s %10s / %-10s %5s %5s %5s %6s / %s\n", index,
           lua_isstring(L, -1) ? lua_tostring(L, -1) : "?", cuda, used, total, util, memutil, temp, draw, limit);
    lua_pop(L, 1);
}

/* Pushes ember.cuda.<fn> and returns true when it is a function; else
 * pushes nothing (the user may have replaced ember or ember.cuda). */
static bool push_cuda_function(lua_State *L, const char *fn)
{
    int top = lua_gettop(L);
    bool ok = lua_getglobal(L, "ember") == LUA_TTABLE && lua_getfield(L, -1, "cuda") == LUA_TTABLE &&
              lua_getfield(L, -1, fn) == LUA_TFUNCTION;
    if (ok) lua_replace(L, top + 1);
    lua_settop(L, ok ? top + 1 : top);
    return ok;
}

/* The NVML table, or a one-line reason without NVML. */
static void gpu_table(lua_State *L)
{
    int top = lua_gettop(L);
    if (!push_cuda_function(L, "gpu_status")) {
        printf("no GPU table: ember.cuda.gpu_status is gone\n");
        return;
    }
    if (lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
        const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "ember.cuda.gpu_status failed";
        const char *prefix = "ember.cuda.gpu_status: ";
        if (strncmp(msg, prefix, strlen(prefix)) == 0) msg += strlen(prefix);
        printf("no GPU table: %s\n", msg);
        lua_settop(L, top);
        return;
    }
    lua_getfield(L, -1, "driver_version");
    printf("NVIDIA driver %s (NVML)\n", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
    lua_pop(L, 1);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n == 0) printf("NVML sees no GPU\n");
    else printf("GPU  %-24s %-7s %10s / %-10s %5s %5s %5s %6s / %s\n", "name", "ember", "mem used", "total", "util",
                "mem%", "temp", "power", "limit");
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        gpu_row(L);
        lua_pop(L, 1);
    }
    lua_settop(L, top);
}

/* ember's caching allocator on each CUDA device; nothing is loaded for it. */
static void gpu_allocator(lua_State *L)
{
    if (!cuda_in_use(L)) {
        printf("ember: CUDA not in use in this session (no allocator figures)\n");
        return;
    }
    double n = cuda_number(L, "device_count");
    printf("ember's caching allocator  %12s %12s %12s\n", "allocated", "reserved", "peak alloc");
    for (int i = 0; i < (int)n; i++) {
        int top = lua_gettop(L);
        if (!push_cuda_function(L, "memory_stats")) return;
        lua_pushinteger(L, i);
        if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
            char a[32], r[32], p[32];
            human_bytes(a, sizeof a, (double)int_field(L, "allocated_bytes"));
            human_bytes(r, sizeof r, (double)int_field(L, "reserved_bytes"));
            human_bytes(p, sizeof p, (double)int_field(L, "peak_allocated_bytes"));
            printf("  cuda:%-20d %12s %12s %12s\n", i, a, r, p);
        }
        lua_settop(L, top);
    }
}

/* ":gpu": an nvidia-smi-like table of every GPU NVML sees (NVML's order, the
 * ember column naming the CUDA device it is once CUDA is loaded), then
 * ember's own allocator figures. Asking never loads CUDA. */
static void cmd_gpu(lua_State *L, const char *args)
{
    (void)args;
    lua_settop(L, 0);
    gpu_table(L);
    gpu_allocator(L);
    fflush(stdout);
}

/* ---- :vars --------------------------------------------------------------- */

/* The names the session started with, to tell the user's globals apart. */
static const char startup_globals_key = 'g';

void emsh_commands_open(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &startup_globals_key);
    bool have = lua_istable(L, -1);
    lua_pop(L, 1);
    if (have) return;
    lua_newtable(L);
    lua_pushglobaltable(L);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushboolean(L, 1);
        lua_rawset(L, -5);
    }
    lua_pop(L, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &startup_globals_key);
}

/* _, _1, _2, ...: the REPL's results, not the user's variables */
static bool is_result_name(const char *s)
{
    if (s[0] != '_') return false;
    if (s[1] == '\0') return true;
    for (const char *p = s + 1; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* nn, optim, plot: the shell's globals loaded on first use (main.c), which
 * the globals table's metatable lists in __lazy; not the user's, unless the
 * user gave the name a value of their own (not the module ember loaded) */
static bool is_lazy_global(lua_State *L, const char *name)
{
    bool lazy = false;
    int top = lua_gettop(L);
    lua_pushglobaltable(L);                                      /* top + 1 */
    if (lua_getmetatable(L, -1) && lua_getfield(L, -1, "__lazy") == LUA_TTABLE &&
        lua_getfield(L, -1, name) != LUA_TNIL) {
        lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
        lua_pushfstring(L, "ember.%s", name);
        lua_rawget(L, -2);
        lua_pushstring(L, name);
        lua_rawget(L, top + 1);
        lazy = lua_rawequal(L, -1, -2);
    }
    lua_settop(L, top);
    return lazy;
}

/* ":vars": the globals the user made, sorted, with a one-line summary. */
static void cmd_vars(lua_State *L, const char *args)
{
    (void)args;
    lua_settop(L, 0);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &startup_globals_key);   /* 1 */
    lua_pushglobaltable(L);                                      /* 2 */
    lua_newtable(L);                                             /* 3: names */
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING || is_result_name(lua_tostring(L, -1)) ||
            is_lazy_global(L, lua_tostring(L, -1)))
            continue;
        lua_pushvalue(L, -1);
        if (lua_rawget(L, 1) == LUA_TNIL) {
            lua_pushvalue(L, -2);
            lua_rawseti(L, 3, ++n);
        }
        lua_pop(L, 1);
    }
    if (n == 0) {
        printf("no variables yet\n");
        fflush(stdout);
        lua_settop(L, 0);
        return;
    }
    const char **names = malloc((size_t)n * sizeof *names);
    if (!names) return;
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 3, i);
        names[i - 1] = lua_tostring(L, -1);   /* kept alive by table 3 */
        lua_pop(L, 1);
    }
    qsort(names, (size_t)n, sizeof *names, compare_strings);
    for (int i = 0; i < n; i++) {
        lua_getfield(L, 2, names[i]);
        char prefix[128];
        snprintf(prefix, sizeof prefix, "  %-20s %-9s ", names[i], luaL_typename(L, -1));
        emsh_print_summary(L, lua_gettop(L), prefix, emsh_use_color());
        lua_pop(L, 1);
    }
    free(names);
    lua_settop(L, 0);
}

/* ---- files, the system, the screen ---------------------------------------- */

static void cmd_load(lua_State *L, const char *args)
{
    args = skip(args);
    size_t n = strlen(args);
    while (n > 0 && args[n - 1] == ' ') n--;
    if (n == 0) {
        emsh_message(NULL, ":load: which file? (:load path/to/file.lua)");
        return;
    }
    lua_settop(L, 0);
    lua_pushlstring(L, args, n);
    int status = luaL_loadfile(L, lua_tostring(L, 1));
    if (status == LUA_OK) status = emsh_docall(L, 0, 0);
    emsh_report(L, status);
    lua_settop(L, 0);
}

static void cmd_shell(lua_State *L, const char *args)
{
    (void)L;
    args = skip(args);
    if (*args == '\0') {
        emsh_message(NULL, ":! needs a command (:! ls -l)");
        return;
    }
    fflush(stdout);
    int rc = system(args);
    if (rc != 0) printf("(exit status %d)\n", WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
    fflush(stdout);
}

static void cmd_clear(lua_State *L, const char *args)
{
    (void)L;
    (void)args;
    if (isatty(STDOUT_FILENO)) fputs("\033[H\033[2J", stdout);
    fflush(stdout);
}

static void cmd_quit(lua_State *L, const char *args)
{
    (void)L;
    (void)args;
    emsh_quit_requested = true;
}

/* ---- completion, post-mortem, Ctrl-C --------------------------------------- */

static void cmd_complete(lua_State *L, const char *args)
{
    if (*args == ' ') args++;   /* exactly one separator: the rest is the line */
    emsh_complete_print(L, args);
}

static void cmd_pm(lua_State *L, const char *args)
{
    (void)args;
    const char *msg;
    lua_State *co = emsh_last_error_thread(L, &msg);
    if (!co) {
        emsh_message(NULL, ":pm: no error to inspect (post-mortem opens on the last uncaught error)");
        return;
    }
    emsh_debug_postmortem(L, co, msg);
}

static void cmd_pause(lua_State *L, const char *args)
{
    (void)L;
    args = skip(args);
    if (strncmp(args, "on", 2) == 0) emsh_set_pause_on_interrupt(true);
    else if (strncmp(args, "off", 3) == 0) emsh_set_pause_on_interrupt(false);
    else if (*args != '\0') {
        emsh_message(NULL, ":pause: expected on or off");
        return;
    }
    printf("Ctrl-C while code runs %s\n",
           emsh_pause_on_interrupt() ? "pauses in the debugger" : "stops it (interrupted!)");
    fflush(stdout);
}

/* ---- the table ------------------------------------------------------------- */

static void cmd_help(lua_State *L, const char *args);

static const command commands[] = {
    {"help", "", "this list (?name: help on ember's functions, e.g. ?ember.zeros)", cmd_help},
    {"time", "[-n N] code", "time code; the GPU is synchronised before each clock reading", cmd_time},
    {"profile", "code", "run code under ember.profiler: its ops and lines by time", cmd_profile},
    {"mem", "[top]", "memory: host (RSS, Lua heap) and the CUDA allocator; top: the lines holding the most", cmd_mem},
    {"gpu", "", "the GPUs (NVML: memory, utilisation, temperature, power) and ember's allocator", cmd_gpu},
    {"vars", "", "the global variables you made", cmd_vars},
    {"load", "file", "run a Lua file in this session", cmd_load},
    {"!", "command", "run a shell command", cmd_shell},
    {"clear", "", "clear the screen", cmd_clear},
    {"quit", "", "leave (also Ctrl-D)", cmd_quit},
    {"pm", "", "post-mortem: the debugger on the frame of the last error", cmd_pm},
    {"pause", "[on|off]", "make Ctrl-C pause running code in the debugger", cmd_pause},
    {"nan", "on|off", "stop in the debugger at the first op that makes a NaN or an infinity", cmd_nan},
    {"break", "file:line [if cond] [hits N]", "set a breakpoint", NULL},
    {"breaks", "", "list breakpoints", NULL},
    {"delete", "[N]", "delete breakpoint N (all without N)", NULL},
    {"disable", "N", "disable breakpoint N", NULL},
    {"enable", "N", "enable breakpoint N", NULL},
    {"condition", "N [cond]", "set or clear breakpoint N's condition", NULL},
    {"complete", "text", "what Tab offers at the end of text", cmd_complete},
    {NULL, NULL, NULL, NULL},
};

const char *const emsh_command_names[] = {
    "help", "time", "profile", "mem", "gpu", "vars", "load", "!", "clear", "quit", "pm", "pause", "nan",
    "break", "breaks", "delete", "disable", "enable", "condition", "complete", NULL,
};

static void cmd_help(lua_State *L, const char *args)
{
    (void)L;
    (void)args;
    printf("Commands (a line starting with ':'):\n");
    for (const command *c = commands; c->name; c++) {
        char head[64];
        snprintf(head, sizeof head, ":%s %s", c->name, c->args);
        printf("  %-34s %s\n", head, c->help);
    }
    printf("Ctrl-C stops running code, Ctrl-D leaves; breakpoint() in code stops there.\n");
    fflush(stdout);
}

bool emsh_run_command(lua_State *L, const char *line)
{
    line = skip(line);
    size_t len = line[0] == '!' ? 1 : strcspn(line, " \t");
    if (len == 0) return false;
    const char *args = line + len;
    for (const command *c = commands; c->name; c++) {
        if (strlen(c->name) != len || strncmp(c->name, line, len) != 0) continue;
        if (c->run) c->run(L, args);
        else {
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)len, line);
            if (!emsh_debug_command(L, name, skip(args)))
                emsh_message(NULL, lua_pushfstring(L, ":%s: the debugger is not built in", name));
        }
        lua_settop(L, 0);
        return true;
    }
    /* short forms: :q */
    if (len == 1 && line[0] == 'q') {
        cmd_quit(L, args);
        return true;
    }
    return false;
}
