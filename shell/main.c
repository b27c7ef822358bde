/* main.c — the `ember` executable: a Lua 5.4 interpreter with the ember
 * module built in. The command line is lua.c's (same options, same `arg`
 * table, same exit statuses), plus -h/--help; with no script it is a REPL.
 *
 * Start-up stays cheap (a CPU session must start in milliseconds): the
 * standard libraries and the ember module's tables, nothing more. CUDA,
 * readline's history file and the like are touched only when used. */
#include "shell.h"
#include "../lua/binding.h"   /* luaopen_ember */

#include <dlfcn.h>
#include <limits.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Modules loaded before any user code runs, each also set as a global of
 * its name (and in package.loaded, so `require` returns the same table). */
static const luaL_Reg preloaded[] = {
    {"ember", luaopen_ember},
    {NULL, NULL},
};

/* The Lua half of the library the shell offers as globals (DESIGN.md:
 * ember, nn, optim, plot). They are loaded on first use, not at start-up:
 * compiling them took most of a start (about 380 KB of Lua). The globals
 * table gets a metatable whose __index requires the module when one of
 * these names is first read and stores it as a plain global (and in the
 * ember table, as ember's own lazy loader would). Its __dir lists the
 * names for completion and :vars, and __lazy marks them as loaders that
 * completion may run (shell/complete.c). */
static const char *const lazy_globals[][2] = {
    {"nn", "ember.nn"},
    {"optim", "ember.optim"},
    {"plot", "ember.plot"},
    {NULL, NULL},
};

/* help(x): ember.help, looked up at each call so that the documentation
 * is only loaded when asked for. */
static int shell_help(lua_State *L)
{
    lua_getglobal(L, "ember");
    lua_getfield(L, -1, "help");
    lua_insert(L, 1);
    lua_pop(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* _G's __index(t, key): one of lazy_globals, loaded now; nil otherwise */
static int lazy_global(lua_State *L)
{
    const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
    for (int i = 0; key && lazy_globals[i][0]; i++) {
        if (strcmp(key, lazy_globals[i][0]) != 0) continue;
        lua_getglobal(L, "require");
        lua_pushstring(L, lazy_globals[i][1]);
        lua_call(L, 1, 1);
        lua_pushvalue(L, 2);
        lua_pushvalue(L, -2);
        lua_rawset(L, 1);
        lua_getglobal(L, "ember");
        if (lua_istable(L, -1)) {
            lua_pushstring(L, lazy_globals[i][1] + sizeof "ember." - 1);
            lua_pushvalue(L, -3);
            lua_rawset(L, -3);
        }
        lua_pop(L, 1);
        return 1;
    }
    return 0;
}

static void preload_modules(lua_State *L)
{
    for (const luaL_Reg *m = preloaded; m->name; m++) {
        luaL_requiref(L, m->name, m->func, 1);
        lua_pop(L, 1);
    }
    lua_pushglobaltable(L);
    lua_newtable(L);                                  /* its metatable */
    lua_pushcfunction(L, lazy_global);
    lua_setfield(L, -2, "__index");
    lua_newtable(L);                                  /* __dir */
    lua_newtable(L);                                  /* __lazy */
    for (int i = 0; lazy_globals[i][0]; i++) {
        lua_pushstring(L, lazy_globals[i][0]);
        lua_rawseti(L, -3, i + 1);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, lazy_globals[i][0]);
    }
    lua_setfield(L, -3, "__lazy");
    lua_setfield(L, -2, "__dir");
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    lua_pushcfunction(L, shell_help);
    lua_setglobal(L, "help");
}

/* ---- options ------------------------------------------------------------- */

enum {
    HAS_ERROR = 1,  /* bad option: argv[first] names it */
    HAS_I = 2,      /* -i */
    HAS_V = 4,      /* -v */
    HAS_E = 8,      /* -e */
    HAS_ENV = 16,   /* -E: ignore environment variables */
    HAS_HELP = 32,  /* -h, --help */
    HAS_D = 64,     /* -d: under the debugger */
    HAS_P = 128,    /* -p: Ctrl-C pauses in the debugger */
    HAS_PM = 256,   /* --pm: post-mortem debugger on an uncaught error */
    HAS_KERNEL = 512, /* --kernel FILE: a Jupyter kernel */
    HAS_LISTEN = 1024, /* --listen: a debugger may attach (ember --attach PID) */
};

static const char *kernel_connection_file;   /* --kernel's argument */

static const char usage_text[] =
    "usage: ember [options] [script [args]]\n"
    "Available options are:\n"
    "  -e stat   execute string 'stat'\n"
    "  -i        enter interactive mode after executing 'script'\n"
    "  -l mod    require library 'mod' into global 'mod'\n"
    "  -l g=mod  require library 'mod' into global 'g'\n"
    "  -v        show version information\n"
    "  -E        ignore environment variables (EMBER_INIT)\n"
    "  -W        turn warnings on\n"
    "  -d        debug: stop at the script's first line, Ctrl-C pauses, and an\n"
    "            uncaught error opens the debugger in the failing frame\n"
    "  -p        Ctrl-C pauses running code in the debugger (continue resumes)\n"
    "  --pm      open the debugger on an uncaught error (post-mortem)\n"
    "  --listen  let a debugger attach later from another terminal (also\n"
    "            EMBER_LISTEN=1): ember --attach PID\n"
    "  --attach PID  the debugger's prompt in the running job PID (started\n"
    "            with --listen); detach leaves it running\n"
    "  --nproc N run N processes of the script under mpirun (ember.distributed)\n"
    "  --kernel FILE  run as a Jupyter kernel (FILE: the connection file)\n"
    "  --install-kernel [--user] [--prefix P]  write the Jupyter kernelspec\n"
    "            (system-wide, in the user's Jupyter data dir, or under P)\n"
    "  -h        show this help (also --help)\n"
    "  --        stop handling options\n"
    "  -         stop handling options and execute stdin\n"
    "With no script and no -e, ember reads statements and expressions from\n"
    "stdin (an interactive shell on a terminal) and prints their values.\n";

static void print_usage_error(const char *badoption)
{
    if (badoption[1] == 'e' || badoption[1] == 'l' || strcmp(badoption, "--kernel") == 0)
        fprintf(stderr, "%s: '%s' needs argument\n", emsh_progname, badoption);
    else
        fprintf(stderr, "%s: unrecognized option '%s'\n", emsh_progname, badoption);
    fputs(usage_text, stderr);
    fflush(stderr);
}

/* The bits an option that stands alone (-v, never -vx) sets: -i implies -v;
 * -W is acted on in run_args; -h ends the scan. -1: not such an option. */
static int lone_option(char c)
{
    switch (c) {
    case 'E': return HAS_ENV;
    case 'W': return 0;
    case 'd': return HAS_D;
    case 'p': return HAS_P;
    case 'i': return HAS_I | HAS_V;
    case 'v': return HAS_V;
    case 'h': return HAS_HELP;
    default: return -1;
    }
}

/* Scans the options (lua.c's collectargs). *first is set to the index of
 * the script name, 0 when there is none, or the bad option on HAS_ERROR. */
static int collect_args(char **argv, int *first)
{
    int args = 0;
    int i;
    *first = 0;
    for (i = 1; argv[i] != NULL; i++) {
        *first = i;
        const char *a = argv[i];
        if (a[0] != '-') return args;               /* the script */
        if (strcmp(a, "--help") == 0) return args | HAS_HELP;
        if (strcmp(a, "--pm") == 0) {
            args |= HAS_PM;
            continue;
        }
        if (strcmp(a, "--listen") == 0) {
            args |= HAS_LISTEN;
            continue;
        }
        if (strcmp(a, "--kernel") == 0) {
            if (argv[i + 1] == NULL) return HAS_ERROR;
            kernel_connection_file = argv[++i];
            args |= HAS_KERNEL;
            continue;
        }
        int lone = lone_option(a[1]);
        if (lone >= 0) {
            if (a[2] != '\0') return HAS_ERROR;   /* -vx: not -v */
            args |= lone;
            if (lone & HAS_HELP) return args;
            continue;
        }
        switch (a[1]) {
        case '-':                                   /* -- */
            if (a[2] != '\0') return HAS_ERROR;
            *first = argv[i + 1] ? i + 1 : 0;
            return args;
        case '\0':                                  /* - : stdin is the script */
            return args;
        case 'e':
            args |= HAS_E;
            /* fall through */
        case 'l':               /* both need an argument */
            if (a[2] == '\0') {
                i++;
                if (argv[i] == NULL || argv[i][0] == '-') return HAS_ERROR;
            }
            break;
        default:
            return HAS_ERROR;
        }
    }
    *first = 0;
    return args;
}

/* arg[0] is the script, arg[1..] its arguments, the interpreter and its
 * options at negative indices. With no script, arg[0] is the interpreter. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script)
{
    int narg = argc - (script + 1);
    lua_createtable(L, narg > 0 ? narg : 0, script + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

/* ---- running chunks ------------------------------------------------------ */

static int dochunk(lua_State *L, int status)
{
    if (status == LUA_OK) status = emsh_docall(L, 0, 0);
    return emsh_report(L, status);
}

static int dostring(lua_State *L, const char *s, const char *name)
{
    return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* -l mod or -l g=mod: g = require("mod") */
static int dolibrary(lua_State *L, const char *spec)
{
    const char *eq = strchr(spec, '=');
    const char *modname = eq ? eq + 1 : spec;
    lua_getglobal(L, "require");
    lua_pushstring(L, modname);
    int status = emsh_docall(L, 1, 1);
    if (status == LUA_OK) {
        if (eq) lua_pushlstring(L, spec, (size_t)(eq - spec));
        else lua_pushstring(L, spec);
        lua_insert(L, -2);
        lua_setglobal(L, lua_tostring(L, -2));
        lua_pop(L, 1);
    }
    return emsh_report(L, status);
}

/* EMBER_INIT: a chunk to run first, or "@file" to run a file. */
static int handle_init(lua_State *L)
{
    const char *init = getenv("EMBER_INIT");
    if (init == NULL || init[0] == '\0') return LUA_OK;
    if (init[0] == '@') return dochunk(L, luaL_loadfile(L, init + 1));
    return dostring(L, init, "=EMBER_INIT");
}

/* -e and -l, in command-line order. */
static int run_args(lua_State *L, char **argv, int n)
{
    for (int i = 1; i < n; i++) {
        char option = argv[i][1];
        if (option == 'e' || option == 'l') {
            const char *extra = argv[i] + 2;
            if (*extra == '\0') extra = argv[++i];
            int status = option == 'e' ? dostring(L, extra, "=(command line)")
                                       : dolibrary(L, extra);
            if (status != LUA_OK) return 0;
        } else if (option == 'W') {
            lua_warning(L, "@on", 0);
        }
    }
    return 1;
}

static int push_script_args(lua_State *L)
{
    if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
    lua_remove(L, -n - 1);
    return n;
}

static int handle_script(lua_State *L, char **argv)
{
    const char *fname = argv[0];
    if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL;
    int status = luaL_loadfile(L, fname);
    if (status == LUA_OK) {
        int n = push_script_args(L);
        status = emsh_docall(L, n, LUA_MULTRET);
    }
    return emsh_report(L, status);
}

/* Everything runs in protected mode, so that even a memory error while
 * setting up is reported rather than ending the process. */
/* --kernel: the protocol side (ZeroMQ, OpenSSL) is libember_kernel.so beside
 * this executable, or $EMBER_KERNEL_LIB, opened only here so that a normal
 * start loads neither library. */
static int run_kernel(lua_State *L, const char *connection_file)
{
    char path[PATH_MAX] = "";
    const char *lib = getenv("EMBER_KERNEL_LIB");
    if (!lib) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
        char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
        if (slash) strcpy(slash + 1, "libember_kernel.so");
        lib = slash ? path : "libember_kernel.so";
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    int (*run)(lua_State *, const char *) = NULL;
    if (h) *(void **)&run = dlsym(h, "emsh_kernel_run");
    if (!run) {
        char msg[PATH_MAX + 512];
        snprintf(msg, sizeof msg, "--kernel: cannot load the Jupyter kernel (%s): %s; it is built when ZeroMQ and "
                 "OpenSSL are there (Debian: libzmq3-dev libssl-dev, then make)", lib,
                 h ? "it has no emsh_kernel_run" : dlerror());
        emsh_message(emsh_progname, msg);
        return -1;
    }
    return run(L, connection_file);
}

/* EMBER_LISTEN=1 (any value but "" and "0"): as --listen, for jobs that
 * another tool starts */
static bool listen_from_env(void)
{
    const char *v = getenv("EMBER_LISTEN");
    return v && v[0] && strcmp(v, "0") != 0;
}

static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = lua_touserdata(L, 2);
    int script;
    int args = collect_args(argv, &script);
    int optlim = script > 0 ? script : argc;
    luaL_checkversion(L);
    if (args == HAS_ERROR) {
        print_usage_error(argv[script]);
        return 0;
    }
    if (args & HAS_HELP) {
        fputs(usage_text, stdout);
        lua_pushboolean(L, 1);
        return 1;
    }
    if (args & HAS_V) emsh_print_version();
    if (args & HAS_ENV) {
        lua_pushboolean(L, 1);   /* tells package to ignore LUA_PATH & co. */
        lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
    }
    luaL_openlibs(L);
    preload_modules(L);
    emsh_run_open(L);
    emsh_debug_open(L);
    if (args & (HAS_D | HAS_P)) emsh_set_pause_on_interrupt(true);
    if (args & (HAS_D | HAS_PM)) emsh_set_auto_postmortem(true);
    if ((args & HAS_LISTEN) || (!(args & HAS_ENV) && listen_from_env())) emsh_listen();
    create_arg_table(L, argv, argc, script);
    lua_gc(L, LUA_GCRESTART);
    lua_gc(L, LUA_GCGEN, 0, 0);
    if (!(args & HAS_ENV) && handle_init(L) != LUA_OK) return 0;
    if (args & HAS_KERNEL) {
        lua_pushboolean(L, run_kernel(L, kernel_connection_file) == 0);
        return 1;
    }
    if (!run_args(L, argv, optlim)) {
        emsh_end_job_on_error();
        return 0;
    }
    if (script > 0) {
        if (args & HAS_D) emsh_debug_step_in(L);
        if (handle_script(L, argv + script) != LUA_OK) {
            emsh_end_job_on_error();
            return 0;
        }
    }
    if (args & HAS_I) {
        emsh_repl(L);
    } else if (script == 0 && !(args & (HAS_E | HAS_V))) {
        if (isatty(STDIN_FILENO)) emsh_print_version();
        emsh_repl(L);
    }
    lua_pushboolean(L, 1);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--install-kernel") == 0) return emsh_install_kernel(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "--attach") == 0) return emsh_attach_client(argc - 2, argv + 2);
    emsh_launch(argc, argv);
    emsh_join_job();
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        emsh_message(emsh_progname, "cannot create state: not enough memory");
        return EXIT_FAILURE;
    }
    lua_gc(L, LUA_GCSTOP);   /* no collections while building the state */
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    int status = lua_pcall(L, 2, 1, 0);
    int ok = lua_toboolean(L, -1);
    emsh_report(L, status);
    lua_close(L);
    return ok && status == LUA_OK ? EXIT_SUCCESS : EXIT_FAILURE;
}
