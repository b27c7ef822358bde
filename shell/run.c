/* run.c — running user code: every chunk (a REPL entry, a script, -e) runs
 * in a fresh coroutine, errors get a traceback, and Ctrl-C stops the code
 * (or pauses it in the debugger) without ending the session.
 *
 * Why a coroutine: when code fails inside lua_pcall, Lua unwinds the stack
 * before the caller sees the error, and the failing frame's locals are gone.
 * A coroutine that dies keeps its stack, so the debugger can open on it
 * later (post-mortem) with every local intact.
 *
 * Ctrl-C works as in lua.c: a signal handler may only call lua_sethook, so
 * it installs a hook that fires at the next instruction and raises
 * "interrupted!" from inside the running code, where an error is allowed.
 * Two things lua.c gets wrong are handled here:
 *  - the hook goes on the thread that is executing, which may be a
 *    coroutine: coroutine.resume and coroutine.wrap are replaced by versions
 *    that keep a stack of the running threads;
 *  - the hook stays until the chunk has unwound, so a `pcall` in a loop
 *    cannot swallow the interrupt: every instruction re-raises it. */
#include "shell.h"
#include "../lua/binding.h"   /* emlua_set_interrupt */
#include "../engine/distributed.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *emsh_progname = "ember";

void emsh_message(const char *progname, const char *msg)
{
    fflush(stdout);   /* keep printed values and errors in order when both are piped */
    /* one write: the ranks of a job share stderr, and two writes of one
     * message interleave with another rank's ("ember: ember: rank 0: ...") */
    if (progname) fprintf(stderr, "%s: %s\n", progname, msg);
    else fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

const char emsh_silent_error = 's';

int emsh_report(lua_State *L, int status)
{
    if (status != LUA_OK && lua_touserdata(L, -1) == &emsh_silent_error) {
        lua_pop(L, 1);
    } else if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        if (msg == NULL) msg = "(error object is not a string)";
        /* in a distributed job, which rank failed */
        if (em_dist_is_initialized()) msg = lua_pushfstring(L, "rank %d: %s", em_dist_rank(), msg);
        emsh_message(emsh_progname, msg);
        if (em_dist_is_initialized()) lua_pop(L, 1);
        lua_pop(L, 1);
    }
    return status;
}

void emsh_print_version(void)
{
    printf("ember %s (%s)\n", EMBER_VERSION, LUA_RELEASE);
    fflush(stdout);
}

/* ---- the running threads ------------------------------------------------- */

/* Innermost last. Only the signal handler reads it asynchronously; it sees
 * either the old or the new depth, both valid (entries are written before
 * the depth grows). Deeper nesting is counted but not tracked. */
#define MAX_RUNNING 200
static lua_State *volatile running[MAX_RUNNING];
static volatile sig_atomic_t nrunning;

static void push_running(lua_State *co)
{
    if (nrunning < MAX_RUNNING) running[nrunning] = co;
    nrunning++;
}

static void pop_running(void) { nrunning--; }

/* ---- Ctrl-C -------------------------------------------------------------- */

enum { IDLE, RAISING, PAUSING };
static volatile sig_atomic_t interrupt_state = IDLE;
/* a debugger attached, or its client asked for a pause (debug_attach.c):
 * apart from interrupt_state, which each chunk starts afresh */
static volatile sig_atomic_t attach_wanted;
static volatile sig_atomic_t sigint_count;   /* Ctrl-C presses not yet acted on */
static bool pause_mode;

void emsh_set_pause_on_interrupt(bool on) { pause_mode = on; }
bool emsh_pause_on_interrupt(void) { return pause_mode; }

static void interrupt_hook(lua_State *L, lua_Debug *ar);
/* the hook fires at the next instruction, whatever it is */
#define INTERRUPT_MASK (LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT)

static void hook_running_threads(void)
{
    int n = nrunning < MAX_RUNNING ? (int)nrunning : MAX_RUNNING;
    for (int i = 0; i < n; i++)
        lua_sethook(running[i], interrupt_hook, INTERRUPT_MASK, 1);
}

/* Gives every running thread its normal hook back (the debugger's or none). */
static void unhook_running_threads(void)
{
    int n = nrunning < MAX_RUNNING ? (int)nrunning : MAX_RUNNING;
    for (int i = 0; i < n; i++) emsh_debug_restore_hook(running[i]);
}

static void say(const char *s) { ssize_t r = write(STDERR_FILENO, s, strlen(s)); (void)r; }

static void on_sigint(int sig)
{
    (void)sig;
    sigint_count++;
    if (interrupt_state == IDLE) interrupt_state = pause_mode ? PAUSING : RAISING;
    emlua_set_interrupt(true);   /* long waits in C (GPU sync) poll this */
    hook_running_threads();
    /* The hook fires only when Lua code runs again. Code stuck in C (a huge
     * matmul) cannot be stopped; the third press restores the default
     * action so that the process can still be killed. */
    if (sigint_count == 2)
        say("\nember: still inside C code; it stops at the next Lua instruction "
            "(Ctrl-C again kills ember)\n");
    else if (sigint_count >= 3)
        signal(SIGINT, SIG_DFL);
}

void emsh_request_attach_stop(void)
{
    attach_wanted = 1;
    hook_running_threads();
}

static void interrupt_hook(lua_State *L, lua_Debug *ar)
{
    if (attach_wanted && interrupt_state != RAISING) {
        attach_wanted = 0;
        unhook_running_threads();
        emsh_debug_restore_hook(L);
        emsh_attach_stop(L);
        if (interrupt_state == IDLE) return;
    }
    if (interrupt_state == IDLE) {   /* a hook left from an attach already served */
        emsh_debug_restore_hook(L);
        return;
    }
    if (interrupt_state == PAUSING) {
        interrupt_state = IDLE;
        sigint_count = 0;
        emlua_set_interrupt(false);
        unhook_running_threads();
        emsh_debug_restore_hook(L);
        emsh_debug_pause(L, ar);
        return;
    }
    /* stays installed: a pcall that catches this error meets it again at
     * its next instruction */
    luaL_error(L, "interrupted!");
}

void emsh_set_signal(int sig, void (*handler)(int), struct sigaction *saved)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, saved);
}

/* ---- coroutine.resume and coroutine.wrap, tracked ------------------------- */

/* lcorolib.c's auxresume, with the thread on the running stack while it
 * runs. Returns the number of results pushed on L, or -1 with the error
 * message pushed. */
static int resume_tracked(lua_State *L, lua_State *co, int narg)
{
    /* lua_resume itself refuses dead and running coroutines */
    if (!lua_checkstack(co, narg)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, narg);
    int nres;
    push_running(co);
    if (interrupt_state != IDLE || attach_wanted)
        lua_sethook(co, interrupt_hook, INTERRUPT_MASK, 1);
    else
        emsh_debug_thread_resumed(L, co);
    int status = lua_resume(co, L, narg, &nres);
    pop_running();
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nres + 1)) {
            lua_pop(co, nres);
            lua_pushliteral(L, "too many results to resume");
            return -1;
        }
        lua_xmove(co, L, nres);
        return nres;
    }
    lua_xmove(co, L, 1);   /* the error */
    return -1;
}

static int co_resume(lua_State *L)
{
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "coroutine");
    int r = resume_tracked(L, co, lua_gettop(L) - 1);
    if (r < 0) {
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(r + 1));
    return r + 1;
}

/* lcorolib.c's auxwrap: errors propagate, with position information. */
static int co_wrapped(lua_State *L)
{
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int r = resume_tracked(L, co, lua_gettop(L));
    if (r < 0) {
        int status = lua_status(co);
        if (status != LUA_OK && status != LUA_YIELD) {   /* the coroutine failed */
            lua_resetthread(co);   /* closes its to-be-closed variables */
        }
        if (lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        return lua_error(L);
    }
    return r;
}

static int co_wrap(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    lua_pushcclosure(L, co_wrapped, 1);
    return 1;
}

static void install_coroutine_wrappers(lua_State *L)
{
    if (lua_getglobal(L, "coroutine") == LUA_TTABLE) {
        lua_pushcfunction(L, co_resume);
        lua_setfield(L, -2, "resume");
        lua_pushcfunction(L, co_wrap);
        lua_setfield(L, -2, "wrap");
    }
    lua_pop(L, 1);
}

/* ---- running a chunk ----------------------------------------------------- */

/* Registry keys: the thread of the last uncaught error, and its message. */
static const char last_error_key = 'e';
static bool auto_postmortem;

void emsh_set_auto_postmortem(bool on) { auto_postmortem = on; }

lua_State *emsh_last_error_thread(lua_State *L, const char **msg)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &last_error_key);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return NULL;
    }
    lua_rawgeti(L, -1, 1);
    lua_State *co = lua_tothread(L, -1);
    lua_rawgeti(L, -2, 2);
    /* the table in the registry keeps both alive; the string pointer stays
     * valid while it is there */
    *msg = lua_tostring(L, -1);
    lua_pop(L, 3);
    return co;
}

/* Keeps the dead thread (and with it every local of the failing frames)
 * for post-mortem. */
static void keep_error_thread(lua_State *L, int thread_idx, int msg_idx)
{
    lua_createtable(L, 2, 0);
    lua_pushvalue(L, thread_idx);
    lua_rawseti(L, -2, 1);
    lua_pushvalue(L, msg_idx);
    lua_rawseti(L, -2, 2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &last_error_key);
}

/* Pushes the error message of the dead thread co with its traceback. */
static void push_error_report(lua_State *L, lua_State *co, int status)
{
    if (lua_type(co, -1) != LUA_TSTRING && luaL_callmeta(co, -1, "__tostring") &&
        lua_type(co, -1) == LUA_TSTRING) {
        lua_xmove(co, L, 1);   /* an error object that prints itself: no traceback */
        return;
    }
    const char *msg = lua_tostring(co, -1);
    if (msg == NULL)
        msg = lua_pushfstring(co, "(error object is a %s value)", luaL_typename(co, -1));
    if (status == LUA_ERRMEM) lua_pushstring(L, msg);
    else luaL_traceback(L, co, msg, 0);
}

int emsh_docall(lua_State *L, int narg, int nres)
{
    int base = lua_gettop(L) - narg;   /* the function */
    lua_State *co = lua_newthread(L);
    emlua_mark_top_thread(L, co);      /* the program's main thread, as under plain lua */
    lua_insert(L, base);               /* thread, function, args */
    lua_xmove(L, co, narg + 1);

    struct sigaction saved;
    emsh_set_signal(SIGINT, on_sigint, &saved);
    interrupt_state = IDLE;
    sigint_count = 0;
    push_running(co);
    if (attach_wanted)   /* it came while no Lua code ran (at the REPL's prompt) */
        lua_sethook(co, interrupt_hook, INTERRUPT_MASK, 1);
    int nresults = 0;
    int status = lua_resume(co, L, narg, &nresults);
    pop_running();
    sigaction(SIGINT, &saved, NULL);
    bool was_interrupted = interrupt_state == RAISING;
    interrupt_state = IDLE;
    emlua_set_interrupt(false);
    emsh_debug_restore_hook(co);   /* a late Ctrl-C may have left the interrupt hook */

    if (status == LUA_YIELD) {
        lua_settop(co, 0);
        lua_pushliteral(L, "attempt to yield from outside a coroutine");
        lua_remove(L, base);
        return LUA_ERRRUN;
    }
    if (status != LUA_OK && status != LUA_YIELD && emsh_debug_quitting(co)) {
        /* the (dbg) prompt's quit: the user asked for it, nothing to report */
        lua_remove(L, base);
        lua_pushlightuserdata(L, (void *)&emsh_silent_error);
        return status;
    }
    if (status != LUA_OK) {
        push_error_report(L, co, status);            /* thread, report */
        lua_xmove(co, L, 1);                          /* thread, report, error object */
        /* the message shown by post-mortem: the error if it is a string,
         * else the report (what its __tostring gave, or a description) */
        int msg = lua_type(L, -1) == LUA_TSTRING ? lua_gettop(L) : lua_gettop(L) - 1;
        if (!was_interrupted) keep_error_thread(L, base, msg);
        lua_pop(L, 1);
        lua_remove(L, base);
        if (auto_postmortem && !was_interrupted) {
            emsh_report(L, status);
            const char *msg;
            lua_State *dead = emsh_last_error_thread(L, &msg);
            if (dead) emsh_debug_postmortem(L, dead, msg);
            lua_pushlightuserdata(L, (void *)&emsh_silent_error);   /* already reported */
        }
        return status;
    }
    if (nres != LUA_MULTRET) {
        lua_settop(co, nres);
        nresults = nres;
    }
    luaL_checkstack(L, nresults, "too many results");
    lua_xmove(co, L, nresults);
    lua_remove(L, base);
    return LUA_OK;
}

void emsh_run_open(lua_State *L)
{
    install_coroutine_wrappers(L);
}
