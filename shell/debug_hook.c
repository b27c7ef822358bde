/* debug_hook.c — the debugger's hook: breakpoints and stepping.
 *
 * Nothing is hooked while no breakpoint is enabled and no step is under
 * way. Otherwise the hook runs on calls and returns, and adds line events
 * for a thread only while the function executing there needs them: it
 * holds an enabled breakpoint, or a step wants to stop in it. That is what
 * keeps a breakpoint in one function from slowing down all the others.
 *
 * Which functions hold breakpoints is cached per function, keyed by its
 * chunk source (the string's address, checked by its length and last
 * bytes) and its line range; the cache is dropped whenever breakpoints
 * change.
 *
 * Stepping is decided by stack depths, never by counting calls and
 * returns: an error unwinds frames without return events, a tail call
 * replaces a frame without one, and a yield leaves a thread without one.
 * "next" stops at a line at the depth of its frame or less; "finish" when
 * a return happens at that depth (a tail call keeps the logical frame's
 * depth, so its callee's return is the frame's). A coroutine that yields or
 * ends hands the step to the thread that resumed it, whose coroutine.resume
 * (a C function) then returns: its return event takes the step over. */
#include "debug.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void hook(lua_State *L, lua_Debug *ar);
static void quit_hook(lua_State *L, lua_Debug *ar);

static dbg_step_mode mode;
static lua_State *step_L;   /* NULL: any thread (ember -d before the first stop) */
static int step_depth;
static int nenabled;        /* enabled breakpoints */
static bool in_prompt;      /* the (dbg) prompt is open: no stops, no hooks */
static lua_State *main_thread;
static const char step_key = 's';   /* registry: step_L, kept alive */

static bool needed(void) { return nenabled > 0 || mode != STEP_NONE; }

/* ---- threads ----------------------------------------------------------------
 * The chain of resumes, outermost first, from coroutine.resume/wrap (run.c).
 * A thread found in it was last resumed by the one before it, which is
 * waiting in that resume as long as the thread runs, so it is alive. */

#define MAX_CHAIN 128
static lua_State *chain[MAX_CHAIN];
static int nchain;

lua_State *dbg_resumer(lua_State *L)
{
    for (int i = nchain - 1; i > 0; i--)
        if (chain[i] == L) return chain[i - 1];
    return NULL;
}

static void track_resume(lua_State *L, lua_State *co)
{
    int i = nchain - 1;
    while (i >= 0 && chain[i] != L) i--;
    if (i < 0) {
        chain[0] = L;
        nchain = 1;
    } else {
        nchain = i + 1;
    }
    if (nchain < MAX_CHAIN) chain[nchain++] = co;
    else nchain = 0;   /* too deep to follow: forget it all */
}

/* Is S waiting in a resume (so that the running thread is deeper)? */
static bool is_waiting(lua_State *S)
{
    if (S == main_thread) return true;
    if (lua_status(S) != LUA_OK) return false;   /* yielded, or died */
    lua_Debug ar;
    return lua_getstack(S, 0, &ar) != 0;         /* else it has ended */
}

int dbg_stack_depth(lua_State *L)
{
    lua_Debug ar;
    if (!lua_getstack(L, 0, &ar)) return 0;
    int lo = 0, hi = 1;   /* level lo exists; find the first that does not */
    while (lua_getstack(L, hi, &ar)) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (lua_getstack(L, mid, &ar)) lo = mid;
        else hi = mid;
    }
    return lo + 1;
}

/* depth(L) <= d, in O(d) */
static bool depth_at_most(lua_State *L, int d)
{
    lua_Debug ar;
    return d >= 0 && !lua_getstack(L, d, &ar);
}

/* ---- which functions hold breakpoints ------------------------------------- */

#define CACHE_SIZE 1024   /* a power of two */
#define MAX_LINES 8

typedef struct {
    const char *source;
    size_t srclen;
    uint64_t tail;        /* the source's last bytes: an address reused by a new string */
    int ld, lld;
    unsigned gen;         /* dbg_generation when filled; 0: empty */
    int nlines;           /* breakpoint lines here; > MAX_LINES: check them all */
    int lines[MAX_LINES];
} fentry;

static fentry cache[CACHE_SIZE];
static int cache_used;
static unsigned cache_gen;

static uint64_t source_tail(const char *s, size_t n)
{
    uint64_t t = 0;
    size_t k = n < sizeof t ? n : sizeof t;
    memcpy(&t, s + n - k, k);
    return t;
}

static void fill(lua_State *L, lua_Debug *ar, fentry *e)
{
    e->source = ar->source;
    e->srclen = ar->srclen;
    e->tail = source_tail(ar->source, ar->srclen);
    e->ld = ar->linedefined;
    e->lld = ar->lastlinedefined;
    e->gen = dbg_generation;
    e->nlines = 0;
    for (int i = 0; i < dbg_nbreaks; i++) {
        dbg_break *b = dbg_breaks[i];
        if (!b->enabled || !dbg_source_matches(b, ar->source, ar->srclen)) continue;
        const dbg_place *p = dbg_place_for(L, b, ar);
        if (!p || p->linedefined != e->ld || p->lastlinedefined != e->lld) continue;
        if (e->nlines < MAX_LINES) e->lines[e->nlines] = p->line;
        e->nlines++;
    }
}

/* The entry of the Lua function ar describes ("S" filled in). */
static fentry *lookup(lua_State *L, lua_Debug *ar)
{
    if (cache_gen != dbg_generation || cache_used > CACHE_SIZE / 2) {
        memset(cache, 0, sizeof cache);
        cache_used = 0;
        cache_gen = dbg_generation;
    }
    uintptr_t h = ((uintptr_t)ar->source >> 4) ^ ((uintptr_t)ar->linedefined * 0x9e3779b1u);
    for (uintptr_t i = h & (CACHE_SIZE - 1);; i = (i + 1) & (CACHE_SIZE - 1)) {
        fentry *e = &cache[i];
        if (e->gen == 0) {
            cache_used++;
            fill(L, ar, e);
            return e;
        }
        if (e->source == ar->source && e->ld == ar->linedefined && e->lld == ar->lastlinedefined &&
            e->srclen == ar->srclen && e->tail == source_tail(ar->source, ar->srclen))
            return e;
    }
}

static bool has_breaks(lua_State *L, lua_Debug *ar)
{
    return nenabled > 0 && ar->what[0] != 'C' && lookup(L, ar)->nlines > 0;
}

/* Does the function at level hold breakpoints? */
static bool level_has_breaks(lua_State *L, int level)
{
    lua_Debug ar;
    if (nenabled == 0 || !lua_getstack(L, level, &ar)) return false;
    lua_getinfo(L, "S", &ar);
    return has_breaks(L, &ar);
}

/* ---- hook masks --------------------------------------------------------------
 * A thread is hooked LIGHT (calls only) while no frame on its stack holds a
 * breakpoint: a function with one can then only start running through a
 * call. Entering one makes it FULL (returns too, and lines while that
 * function runs), remembering the depth of that first frame (the anchor):
 * when a return at that depth or less happens, no frame with a breakpoint
 * is left, and the thread goes back to LIGHT. (Frames that an error unwinds
 * without return events only delay that until a shallower return.) Steps
 * keep threads FULL. */

#define LIGHT LUA_MASKCALL
#define FULL (LUA_MASKCALL | LUA_MASKRET)

static void set_mask(lua_State *L, int mask)
{
    /* lua_sethook walks the whole stack (it marks every Lua frame): only
     * when something changes */
    if (lua_gethook(L) != hook || lua_gethookmask(L) != mask) lua_sethook(L, hook, mask, 0);
}

static void unhook(lua_State *L)
{
    if (lua_gethook(L) == hook) lua_sethook(L, NULL, 0, 0);
}

/* The anchors of the FULL threads, by thread; a thread not found is scanned. */
#define NANCHORS 64
typedef struct {
    lua_State *L;
    unsigned gen;
    int anchor;   /* 0: no frame holds a breakpoint */
} anchor_slot;
static anchor_slot anchors[NANCHORS];

static anchor_slot *anchor_slot_of(lua_State *L)
{
    return &anchors[((uintptr_t)L >> 6) & (NANCHORS - 1)];
}

static void set_anchor(lua_State *L, int anchor)
{
    *anchor_slot_of(L) = (anchor_slot){L, dbg_generation, anchor};
}

/* The depth of the shallowest frame of L that holds a breakpoint, or 0. */
static int scan_anchor(lua_State *L)
{
    int depth = dbg_stack_depth(L), anchor = 0;
    for (int level = 0; level < depth && nenabled > 0; level++)
        if (level_has_breaks(L, level)) anchor = depth - level;
    set_anchor(L, anchor);
    return anchor;
}

static int anchor_of(lua_State *L)
{
    anchor_slot *a = anchor_slot_of(L);
    if (a->L == L && a->gen == dbg_generation) return a->anchor;
    return scan_anchor(L);
}

/* Does a step want line events in the function at level of L? */
static bool step_wants_lines(lua_State *L, int level)
{
    if (mode == STEP_INTO) return true;
    if (mode == STEP_OVER && L == step_L) return depth_at_most(L, step_depth + level);
    return false;
}

/* The mask L needs with the function at level about to run. */
static int mask_for(lua_State *L, int level)
{
    if (mode != STEP_NONE)
        return FULL | (step_wants_lines(L, level) || level_has_breaks(L, level) ? LUA_MASKLINE : 0);
    if (scan_anchor(L) == 0) return LIGHT;
    return FULL | (level_has_breaks(L, level) ? LUA_MASKLINE : 0);
}

static void release_step(lua_State *L)
{
    mode = STEP_NONE;
    step_L = NULL;
    if (lua_checkstack(L, 1)) {
        lua_pushnil(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &step_key);
    }
}

void dbg_arm(lua_State *L, dbg_step_mode m, int depth)
{
    mode = m;
    step_depth = depth;
    step_L = L;
    if (L && lua_checkstack(L, 1)) {   /* a thread that ends must not be freed under us */
        lua_pushthread(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &step_key);
    }
    if (m == STEP_NONE) release_step(L ? L : main_thread);
}

void dbg_update_hooks(lua_State *L, int level)
{
    if (!needed()) {
        unhook(L);
        for (lua_State *r = dbg_resumer(L); r; r = dbg_resumer(r)) unhook(r);
        unhook(main_thread);
        return;
    }
    /* new threads take the hook of the thread that makes them: every chunk
     * the shell runs is a coroutine made from the main thread */
    if (main_thread != L) set_mask(main_thread, mask_for(main_thread, 0) & ~LUA_MASKLINE);
    /* the resumers get control back through the return of coroutine.resume */
    for (lua_State *r = dbg_resumer(L); r; r = dbg_resumer(r))
        if (r != main_thread) set_mask(r, mask_for(r, 0) & ~LUA_MASKLINE);
    set_mask(L, mask_for(L, level));
}

void dbg_breaks_changed(lua_State *L)
{
    dbg_generation++;
    nenabled = dbg_enabled_count();
    if (!in_prompt) dbg_update_hooks(L, 0);
}

void dbg_set_in_prompt(bool on) { in_prompt = on; }

void dbg_open_hooks(lua_State *L)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    main_thread = lua_tothread(L, -1);
    lua_pop(L, 1);
}

bool dbg_in_prompt(void) { return in_prompt; }

void *dbg_save_chain(void)
{
    lua_State **saved = malloc(sizeof chain + sizeof(lua_State *));
    if (!saved) return NULL;
    saved[0] = (lua_State *)(intptr_t)nchain;
    memcpy(saved + 1, chain, sizeof chain);
    return saved;
}

void dbg_restore_chain(void *p)
{
    lua_State **saved = p;
    if (!saved) return;
    nchain = (int)(intptr_t)saved[0];
    memcpy(chain, saved + 1, sizeof chain);
    free(saved);
}

/* ---- events ---------------------------------------------------------------- */

static void stop(lua_State *L, const char *reason, int level)
{
    release_step(L);
    dbg_stop_here(L, reason, level);
}

/* Line events: a step that ends here, or a breakpoint. */
static void on_line(lua_State *L, lua_Debug *ar)
{
    if (mode == STEP_INTO) {
        stop(L, NULL, 0);
        return;
    }
    if (mode == STEP_OVER && L == step_L && depth_at_most(L, step_depth)) {
        stop(L, NULL, 0);
        return;
    }
    lua_getinfo(L, "S", ar);
    fentry *e = nenabled > 0 ? lookup(L, ar) : NULL;
    if (!e || e->nlines == 0) {
        if (!step_wants_lines(L, 0)) set_mask(L, FULL);
        return;
    }
    bool maybe = e->nlines > MAX_LINES;
    for (int i = 0; i < e->nlines && i < MAX_LINES && !maybe; i++) maybe = e->lines[i] == ar->currentline;
    if (!maybe) return;
    int hit = 0;
    for (int i = 0; i < dbg_nbreaks; i++) {
        dbg_break *b = dbg_breaks[i];
        if (!b->enabled || !dbg_source_matches(b, ar->source, ar->srclen)) continue;
        const dbg_place *p = dbg_place_for(L, b, ar);
        if (!p || p->line != ar->currentline || p->linedefined != ar->linedefined ||
            p->lastlinedefined != ar->lastlinedefined)
            continue;
        if (b->cond && !dbg_condition_true(L, b)) continue;
        b->hits++;
        if (b->hits >= b->hits_wanted && hit == 0) hit = b->id;
    }
    if (hit) {
        char reason[32];
        snprintf(reason, sizeof reason, "breakpoint %d", hit);
        dbg_break *b = dbg_find_break(hit);
        if (b && b->temporary) {
            dbg_delete_break(hit);
            dbg_breaks_changed(L);
        }
        stop(L, reason, 0);
    }
}

/* A call or tail call: returns whether a step wants lines in the new
 * function. */
static bool step_on_call(lua_State *L, bool tail)
{
    if (mode == STEP_INTO) return true;
    if (L != step_L || !depth_at_most(L, step_depth)) return false;
    /* the new function is no deeper than the stepping frame: that frame is
     * gone (an error unwound it, or it tail-called) */
    int d = dbg_stack_depth(L);
    if (mode == STEP_OUT && tail && d == step_depth) return false;   /* the frame goes on */
    mode = STEP_OVER;
    step_depth = d - 1;
    return false;
}

static void on_call(lua_State *L, lua_Debug *ar)
{
    bool line = mode != STEP_NONE && step_on_call(L, ar->event == LUA_HOOKTAILCALL);
    lua_getinfo(L, "S", ar);
    if (ar->what[0] == 'C') return;   /* no lines there; the return event decides for the caller */
    bool bp = has_breaks(L, ar);
    if (mode != STEP_NONE) {
        set_mask(L, FULL | (line || bp ? LUA_MASKLINE : 0));
    } else if (bp) {
        if (!(lua_gethookmask(L) & LUA_MASKRET)) set_anchor(L, dbg_stack_depth(L));
        set_mask(L, FULL | LUA_MASKLINE);
    } else if (lua_gethookmask(L) & LUA_MASKLINE) {
        set_mask(L, FULL);
    }
}

static void print_returned(lua_State *L, lua_Debug *ar)
{
    lua_getinfo(L, "Snr", ar);
    lua_State *E = dbg_eval_thread(L);
    int top = lua_gettop(E);
    int n = 0;
    for (int i = 0; i < ar->ntransfer && lua_checkstack(L, 1) && lua_checkstack(E, 2); i++) {
        if (!lua_getlocal(L, ar, ar->ftransfer + i)) break;
        lua_xmove(L, E, 1);
        n++;
    }
    char name[128];
    dbg_function_name(L, ar, name, sizeof name);
    if (n == 0) {
        dbg_printf("%s returned nothing\n", name);
    } else {
        dbg_printf("%s returned ", name);
        emsh_print_values_to(E, n, dbg_color(), dbg_out());
    }
    lua_settop(E, top);
}

/* Returns true when it stopped. */
static bool step_on_return(lua_State *L, lua_Debug *ar)
{
    if (L != step_L || !depth_at_most(L, step_depth)) return false;
    /* the frame of the step returns (its depth was reached from below) */
    lua_Debug caller;
    bool lua_caller = lua_getstack(L, 1, &caller) && (lua_getinfo(L, "S", &caller), caller.what[0] != 'C');
    if (mode == STEP_OUT) {
        print_returned(L, ar);
        stop(L, NULL, lua_caller ? 1 : 0);
        return true;
    }
    /* next at a frame's last line: where its caller is C (a callback, the
     * main chunk of a script) stop on the way out rather than run on */
    if (!lua_caller && !dbg_resumer(L)) {
        lua_getinfo(L, "S", ar);
        if (ar->what[0] != 'C') {
            stop(L, "returning", 0);
            return true;
        }
    }
    return false;
}

static void on_return(lua_State *L, lua_Debug *ar)
{
    if (mode == STEP_NONE) {
        int anchor = anchor_of(L);
        if (anchor == 0 || depth_at_most(L, anchor)) {   /* no frame with a breakpoint is left */
            set_anchor(L, 0);
            set_mask(L, LIGHT);
        } else {
            set_mask(L, FULL | (level_has_breaks(L, 1) ? LUA_MASKLINE : 0));
        }
        return;
    }
    if ((mode == STEP_OVER || mode == STEP_OUT) && step_on_return(L, ar)) return;
    bool line = false;
    if (mode == STEP_INTO) {
        line = true;
    } else if (mode == STEP_OVER) {
        if (L == step_L) {
            line = depth_at_most(L, step_depth + 1);   /* back in the stepping frame */
        } else if (step_L && !is_waiting(step_L) && dbg_resumer(step_L) == L) {
            /* the stepping coroutine yielded or ended: its resumer goes on */
            dbg_arm(L, STEP_OVER, dbg_stack_depth(L) - 1);
            line = true;
        }
    }
    if ((mode == STEP_OVER || mode == STEP_INTO) && L == step_L && !line) {
        lua_Debug caller;
        if (!lua_getstack(L, 1, &caller) && !dbg_resumer(L)) {   /* the thread ends */
            release_step(L);
            if (!needed()) {
                unhook(L);
                return;
            }
        }
    }
    set_mask(L, FULL | (line || level_has_breaks(L, 1) ? LUA_MASKLINE : 0));
}

static void hook(lua_State *L, lua_Debug *ar)
{
    if (in_prompt) return;
    if (!needed()) {
        lua_sethook(L, NULL, 0, 0);
        return;
    }
    switch (ar->event) {
    case LUA_HOOKLINE: on_line(L, ar); break;
    case LUA_HOOKCALL:
    case LUA_HOOKTAILCALL: on_call(L, ar); break;
    case LUA_HOOKRET: on_return(L, ar); break;
    default: break;
    }
}

/* ---- entry points ------------------------------------------------------------ */

void dbg_thread_resumed(lua_State *L, lua_State *co)
{
    track_resume(L, co);
    if (in_prompt || !needed()) return;
    /* a thread made before the hook was: it must see calls (and during a
     * step the return of this resume, which may take the step over) */
    if (lua_gethook(L) == NULL) set_mask(L, mode == STEP_NONE ? LIGHT : FULL);
    /* co may be suspended inside a function with a breakpoint */
    set_mask(co, mode == STEP_INTO ? FULL | LUA_MASKLINE : mask_for(co, 0) & ~LUA_MASKLINE);
}

void dbg_restore_hook(lua_State *L)
{
    if (lua_gethook(L) == quit_hook) return;   /* still unwinding a quit */
    if (!needed()) {
        lua_sethook(L, NULL, 0, 0);
        return;
    }
    lua_sethook(L, hook, FULL, 0);
    set_mask(L, mask_for(L, 0));
}

/* quit: the error "quit" at every event until the code has unwound, so that
 * a pcall in the stopped code cannot swallow it; the runner puts the normal
 * hook back when the chunk has ended (emsh_debug_restore_hook is not called
 * for a thread with this hook). */
static void quit_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_pushliteral(L, "quit");
    lua_error(L);
}

bool dbg_quitting(lua_State *L) { return lua_gethook(L) == quit_hook; }

void dbg_quit(lua_State *L)
{
    release_step(L);
    int m = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
    for (lua_State *r = dbg_resumer(L); r; r = dbg_resumer(r))
        if (r != main_thread) lua_sethook(r, quit_hook, m, 1);
    if (L != main_thread) lua_sethook(L, quit_hook, m, 1);
    lua_pushliteral(L, "quit");
    lua_error(L);
    abort();   /* lua_error does not return */
}
