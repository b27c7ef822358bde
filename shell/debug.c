/* debug.c — the debugger's entry points (shell.h) and its stops.
 *
 * breakpoint() in Lua code stops at the next line of its caller. The REPL's
 * ":break" & co. and `ember -d` come here; run.c calls in when a coroutine
 * is resumed (hooks are per thread), when Ctrl-C pauses, and after an error
 * (post-mortem on the dead thread, whose stack is intact).
 *
 * The files: debug_hook.c (the hook, stepping), debug_break.c (the
 * breakpoint table), debug_prompt.c (the (dbg) prompt and evaluation). */
#include "debug.h"

#include <stdlib.h>

/* The first frame from base on that runs Lua code (the one shown). */
static int first_lua_frame(const dbg_stop *s)
{
    lua_Debug ar;
    for (int k = 0; k < s->nframes; k++)
        if (lua_getstack(s->L, s->base + k, &ar) && lua_getinfo(s->L, "S", &ar) && ar.what[0] != 'C')
            return k;
    return 0;
}

void dbg_stop_here(lua_State *L, const char *reason, int base)
{
    void *chain = dbg_save_chain();   /* evaluated code may resume coroutines */
    dbg_set_in_prompt(true);
    dbg_stop s = {.L = L, .base = base, .nframes = dbg_stack_depth(L) - base};
    s.sel = first_lua_frame(&s);
    dbg_print_location(&s, reason);
    dbg_show_displays(&s);
    int depth = 0;
    dbg_action act = dbg_prompt(&s, &depth);
    dbg_set_in_prompt(false);
    dbg_restore_chain(chain);
    switch (act) {
    case ACT_STEP: dbg_arm(L, STEP_INTO, 0); break;
    case ACT_NEXT: dbg_arm(L, STEP_OVER, depth); break;
    case ACT_FINISH: dbg_arm(L, STEP_OUT, depth); break;
    case ACT_CONTINUE: dbg_arm(L, STEP_NONE, 0); break;
    case ACT_QUIT: dbg_quit(L); break;   /* does not return */
    case ACT_DETACH:
        dbg_arm(L, STEP_NONE, 0);
        dbg_attach_end(L, true);
        break;
    }
    if (act != ACT_DETACH) dbg_resumed(act == ACT_CONTINUE);
    dbg_update_hooks(L, base);
}

/* breakpoint(): stop at the caller's next line (as `next` from there). */
static int l_breakpoint(lua_State *L)
{
    if (dbg_in_prompt()) return 0;   /* called by code evaluated at the prompt */
    dbg_arm(L, STEP_OVER, dbg_stack_depth(L) - 1);
    dbg_update_hooks(L, 0);
    return 0;
}

/* registry["ember.debug_stop"](reason): the binding stops here when an op
 * makes the first NaN (ember.debug.stop_on_nan): at the Lua line that
 * called the op, which is still running */
static int l_debug_stop(lua_State *L)
{
    if (dbg_in_prompt()) return 0;
    dbg_stop_here(L, luaL_optstring(L, 1, "stopped"), 0);
    return 0;
}

void emsh_debug_open(lua_State *L)
{
    dbg_open_hooks(L);
    lua_pushcfunction(L, l_breakpoint);
    lua_setglobal(L, "breakpoint");
    lua_pushcfunction(L, l_debug_stop);
    lua_setfield(L, LUA_REGISTRYINDEX, "ember.debug_stop");
}

bool emsh_debug_command(lua_State *L, const char *cmd, const char *args)
{
    if (!dbg_break_command(L, cmd, args, NULL)) return false;
    dbg_breaks_changed(L);
    return true;
}

void emsh_debug_step_in(lua_State *L)
{
    dbg_arm(NULL, STEP_INTO, 0);   /* any thread: the script runs in a new one */
    dbg_update_hooks(L, 0);
}

void emsh_debug_postmortem(lua_State *L, lua_State *co, const char *msg)
{
    (void)L;
    dbg_stop s = {.L = co, .postmortem = true};
    int depth = dbg_stack_depth(co);
    s.nframes = depth;
    s.base = first_lua_frame(&s);   /* the Lua function that raised, not error() */
    s.nframes = depth - s.base;
    dbg_printf("post-mortem: %s\n", msg ? msg : "(no message)");
    if (s.nframes <= 0) {
        dbg_printf("no frames to inspect\n");
        return;
    }
    void *chain = dbg_save_chain();
    dbg_set_in_prompt(true);
    dbg_print_location(&s, NULL);
    int unused;
    dbg_action act = dbg_prompt(&s, &unused);
    dbg_set_in_prompt(false);
    dbg_restore_chain(chain);
    if (act == ACT_DETACH) dbg_attach_end(L, true);
}

void emsh_debug_pause(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    dbg_stop_here(L, "interrupted", 0);
}

void emsh_debug_thread_resumed(lua_State *L, lua_State *co) { dbg_thread_resumed(L, co); }

void emsh_debug_restore_hook(lua_State *L) { dbg_restore_hook(L); }

/* A thread that died of the (dbg) prompt's quit: not an error to report or
 * to open post-mortem on. */
bool emsh_debug_quitting(lua_State *co) { return dbg_quitting(co); }
