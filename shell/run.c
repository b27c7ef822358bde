/* run.c — running Lua code under protection: errors get a traceback and are
 * printed, and Ctrl-C stops the running code without ending the session.
 *
 * Ctrl-C works as in lua.c: the signal handler cannot touch the Lua state
 * safely except through lua_sethook, so it installs a hook that fires at the
 * next call, return, line or instruction count and raises "interrupted!"
 * from inside the running code, where an error is allowed. */
#include "shell.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

const char *emsh_progname = "ember";

/* The state the SIGINT handler interrupts; set while code runs. */
static lua_State *running_L;

void emsh_message(const char *progname, const char *msg)
{
    fflush(stdout);   /* keep printed values and errors in order when both are piped */
    if (progname) fprintf(stderr, "%s: ", progname);
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

int emsh_report(lua_State *L, int status)
{
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (msg == NULL) msg = "(error object is not a string)";
        emsh_message(emsh_progname, msg);
        lua_pop(L, 1);
    }
    return status;
}

/* The message handler: the error message with a traceback appended. */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;   /* an error object that prints itself: no traceback */
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static void lstop(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    luaL_error(L, "interrupted!");
}

static void laction(int sig)
{
    (void)sig;
    /* a second Ctrl-C before the hook fires falls back to the default: a
     * program stuck in C code can still be killed */
    signal(SIGINT, SIG_DFL);
    lua_sethook(running_L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

/* SA_RESTART so that code blocked in io.read keeps reading after Ctrl-C. */
static void set_sigint(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

int emsh_docall(lua_State *L, int narg, int nres)
{
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    struct sigaction saved;
    sigaction(SIGINT, NULL, &saved);
    running_L = L;
    set_sigint(laction);
    int status = lua_pcall(L, narg, nres, base);
    sigaction(SIGINT, &saved, NULL);
    if (lua_gethook(L) == lstop)   /* a Ctrl-C that came too late to fire */
        lua_sethook(L, NULL, 0, 0);
    lua_remove(L, base);
    return status;
}

void emsh_print_version(void)
{
    printf("ember %s (%s)\n", EMBER_VERSION, LUA_RELEASE);
    fflush(stdout);
}
