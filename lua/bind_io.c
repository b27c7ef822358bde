/* bind_io.c — ember.save / ember.load: checkpoints in the safetensors format,
 * and PyTorch's torch.save files for ember.load.
 *
 *   ember.save(path, tensors [, {metadata = {key = "value"}}])
 *   local tensors, metadata = ember.load(path [, {device = "cuda", mmap = true}])
 *   local obj = ember.load("model.pt" [, {device = "cuda"}])
 *   local f <close> = ember.safe_open(path [, {framework = "pt", device = "cpu"}])
 *   f:keys(), f:get_tensor(name), f:metadata(), f:close()
 *
 * mmap = true (torch.load's mmap=True) maps a safetensors file instead of
 * reading it: the tensors are copy-on-write views of the file's pages
 * (engine/mapping.h), read when first touched. ember.safe_open is
 * safetensors' safe_open: the header read and checked, the file mapped, and
 * each tensor made (a view of the mapping) only when asked for. For a
 * torch.save file mmap is accepted and the tensors are read.
 *
 * ember.load tells the formats apart by the file's first bytes (a zip
 * archive or a bare pickle is PyTorch's, anything else is read as
 * safetensors) and hands PyTorch's to ember.torchfile (Lua), which reads the
 * archive through the private ember._zip_open handle below (engine/zipfile.h)
 * and makes the tensors' views with ember._as_strided.
 *
 * `tensors` maps names to tensors; nested tables are flattened with "."
 * joined keys ({layer = {weight = w}} is saved as "layer.weight"), integer
 * keys written in decimal ({w1, w2} gives "1", "2"). ember.load returns the
 * flat table, not the nesting. Names are written sorted, so the same tensors
 * always give the same file. Metadata keys and values are strings (numbers
 * are converted). See engine/safetensors.h for the format and the atomic
 * write.
 *
 * A table that also holds numbers, booleans or strings (an optimizer's
 * state_dict()) goes to lua/ember/serialize.lua: the same file, its tensors
 * under the same dotted names, plus the metadata entry "ember.tree" (the
 * table's shape and plain values as versioned JSON), from which ember.load
 * gives the table back as it was. "ember.tree" is reserved in metadata.
 * ember._save_raw is ember.save without that (serialize.lua's writer).
 *
 * Also ember._savefile(path, op), the same atomic write (engine/savefile.h)
 * for files another program writes by name (gnuplot's plots):
 *   local out = ember._savefile(path, op)   -- raises for a directory, ...
 *   -- write out:path() (a temporary file beside the target, or the device)
 *   out:commit()                            -- or out:abort() on failure
 * A handle dropped without either is aborted by the collector. */
#include "binding.h"
#include "../engine/safetensors.h"
#include "../engine/savefile.h"
#include "../engine/zipfile.h"

#include <stdlib.h>
#include <string.h>

#define BOX_MT "ember.checkpoint_box"
/* deeper nesting than any real state dict (serialize.lua's MAX_DEPTH too) */
#define MAX_DEPTH 64
/* the metadata entry of a table with plain values (lua/ember/serialize.lua) */
#define TREE_KEY "ember.tree"

/* Whether the table at idx holds, at any depth, a number, boolean or string (a value
 * only serialize.lua saves). Tables on the current path (cycles) and nesting past
 * MAX_DEPTH are not entered: flatten or serialize.lua reports those. */
static bool has_plain_value(lua_State *L, int idx, int onpath, int depth)
{
    if (depth > MAX_DEPTH) return false;
    luaL_checkstack(L, 6, "save: nesting");
    bool found = false;
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, onpath);
    lua_pushnil(L);
    while (!found && lua_next(L, idx) != 0) {
        int t = lua_type(L, -1);
        if (t == LUA_TNUMBER || t == LUA_TBOOLEAN || t == LUA_TSTRING) {
            found = true;
        } else if (t == LUA_TTABLE) {
            lua_pushvalue(L, -1);
            bool seen = lua_rawget(L, onpath) != LUA_TNIL;
            lua_pop(L, 1);
            if (!seen) found = has_plain_value(L, lua_gettop(L), onpath, depth + 1);
        }
        lua_pop(L, 1);
    }
    if (found) lua_pop(L, 1);   /* the key lua_next left */
    lua_pushvalue(L, idx);
    lua_pushnil(L);
    lua_rawset(L, onpath);
    return found;
}

/* Adds the tensors of the table at `src` to the flat table at `dst`, each
 * under prefix + key. The prefix string is at the top of the stack (or
 * absent when has_prefix is false). `onpath` holds the tables being walked. */
static void flatten(lua_State *L, int src, int dst, int onpath, bool has_prefix, int depth, int argn)
{
    const char *op = "save";
    if (depth > MAX_DEPTH) emlua_argerror(L, argn, op, "tables nested more than %d deep", MAX_DEPTH);
    luaL_checkstack(L, 8, "save: nesting");
    int prefix = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, src) != 0) {
        /* stack: ... key value; build the full name without touching key */
        int kt = lua_type(L, -2);
        if (has_prefix) lua_pushvalue(L, prefix);
        if (kt == LUA_TSTRING) {
            lua_pushvalue(L, -2 - has_prefix);
        } else if (kt == LUA_TNUMBER && lua_isinteger(L, -2 - has_prefix)) {
            lua_pushfstring(L, "%I", (LUAI_UACINT)lua_tointeger(L, -2 - has_prefix));
        } else {
            emlua_argerror(L, argn, op, "keys must be strings or integers, got a %s key", luaL_typename(L, -2 - has_prefix));
        }
        if (has_prefix) {
            lua_pushliteral(L, ".");
            lua_insert(L, -2);
            lua_concat(L, 3);
        }
        /* stack: ... key value name */
        size_t len;
        const char *name = lua_tolstring(L, -1, &len);
        if (len == 0) emlua_argerror(L, argn, op, "empty tensor name");
        if (strlen(name) != len) emlua_argerror(L, argn, op, "tensor name \"%s...\" contains a zero byte", name);
        if (emlua_test(L, -2)) {
            if (lua_getfield(L, dst, name) != LUA_TNIL)
                emlua_argerror(L, argn, op, "the name \"%s\" is given twice (after flattening nested tables)", name);
            lua_pop(L, 1);
            lua_pushvalue(L, -2);
            lua_setfield(L, dst, name);
            lua_pop(L, 2);              /* name, value */
        } else if (lua_type(L, -2) == LUA_TTABLE) {
            lua_pushvalue(L, -2);
            if (lua_rawget(L, onpath) == LUA_TSTRING) {
                const char *at = lua_tostring(L, -1);
                if (*at) emlua_argerror(L, argn, op, "\"%s\" is the table at \"%s\" again, which contains it (a cycle)",
                                        name, at);
                emlua_argerror(L, argn, op, "\"%s\" is the table given again, which contains it (a cycle)", name);
            }
            lua_pop(L, 1);
            lua_pushvalue(L, -2);
            lua_pushvalue(L, -2);                      /* the name: where the cycle starts */
            lua_rawset(L, onpath);
            flatten(L, lua_gettop(L) - 1, dst, onpath, true, depth + 1, argn);
            lua_pushvalue(L, -2);
            lua_pushnil(L);
            lua_rawset(L, onpath);
            lua_pop(L, 2);
        } else {
            emlua_argerror(L, argn, op, "\"%s\" is a %s (expected a tensor, number, boolean, string or table)", name,
                           luaL_typename(L, -2));
        }
    }
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Calls require("ember.serialize")[fn] with the n values on top of the stack, leaving
 * nres results; an error is raised again at the caller of the API function. */
static void call_serialize(lua_State *L, const char *fn, int n, int nres)
{
    lua_getglobal(L, "require");
    lua_pushliteral(L, "ember.serialize");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    lua_insert(L, -n - 1);
    if (lua_pcall(L, n, nres, 0) != LUA_OK) {
        luaL_where(L, 1);
        lua_insert(L, -2);
        lua_concat(L, 2);
        lua_error(L);
    }
}

static int save_impl(lua_State *L, bool raw)
{
    const char *op = "save";
    /* torch.save(obj, f)'s order as well: a table first and a path second
     * (the errors then name the table argument 1, as the caller wrote it) */
    int argn = 2;
    if (lua_type(L, 1) == LUA_TTABLE && lua_type(L, 2) == LUA_TSTRING) {
        lua_pushvalue(L, 2);
        lua_remove(L, 2);
        lua_insert(L, 1);
        argn = 1;
    }
    const char *path = emlua_check_path(L, 1, op);
    if (lua_type(L, 2) != LUA_TTABLE || emlua_test(L, 2))
        return emlua_typeerror(L, 2, op, "a table of tensors (name -> tensor)");
    int opts = emlua_opt_table(L, 3, op, "an options table {metadata = {key = \"value\"}}");
    lua_settop(L, 3);

    if (!raw) {
        lua_newtable(L);                               /* 4: tables on the path */
        bool plain = has_plain_value(L, 2, 4, 0);
        lua_settop(L, 3);
        if (plain) {                                   /* numbers, booleans or strings: serialize.lua */
            lua_pushvalue(L, 1);
            lua_pushvalue(L, 2);
            lua_pushvalue(L, 3);
            lua_pushinteger(L, argn);
            call_serialize(L, "save", 4, 0);
            return 0;
        }
    }

    lua_newtable(L);                                   /* 4: flat name -> tensor */
    lua_newtable(L);                                   /* 5: tables on the path */
    lua_pushvalue(L, 2);
    lua_pushliteral(L, "");
    lua_rawset(L, 5);
    flatten(L, 2, 4, 5, false, 0, argn);
    lua_settop(L, 4);
    int n = 0;
    for (lua_pushnil(L); lua_next(L, 4); lua_pop(L, 1)) n++;

    /* metadata: copied into a table of strings (5) so the C strings stay alive */
    lua_newtable(L);                                   /* 5 */
    int nmeta = 0;
    if (opts) {
        int mt = lua_getfield(L, opts, "metadata");    /* 6 */
        if (mt == LUA_TTABLE) {
            for (lua_pushnil(L); lua_next(L, 6); lua_pop(L, 1)) {
                if (lua_type(L, -2) != LUA_TSTRING)
                    emlua_argerror(L, 3, op, "metadata keys must be strings, got a %s key", luaL_typename(L, -2));
                int vt = lua_type(L, -1);
                if (vt != LUA_TSTRING && vt != LUA_TNUMBER)
                    emlua_argerror(L, 3, op, "metadata \"%s\" is a %s (expected a string)", lua_tostring(L, -2),
                                   luaL_typename(L, -1));
                size_t kl, vl;
                const char *k = lua_tolstring(L, -2, &kl);
                if (!raw && strcmp(k, TREE_KEY) == 0)
                    emlua_argerror(L, 3, op, "metadata \"%s\" is reserved (ember.save writes it for tables that "
                                   "hold numbers, booleans or strings)", TREE_KEY);
                lua_pushvalue(L, -1);
                const char *v = lua_tolstring(L, -1, &vl);     /* a copy: numbers become strings */
                if (strlen(k) != kl || strlen(v) != vl)
                    emlua_argerror(L, 3, op, "metadata \"%s\" contains a zero byte", k);
                lua_pushvalue(L, -3);
                lua_insert(L, -2);
                lua_rawset(L, 5);
                nmeta++;
            }
        } else if (mt != LUA_TNIL) {
            emlua_argerror(L, 3, op, "metadata must be a table of strings, got a %s", luaL_typename(L, -1));
        }
        lua_pop(L, 1);
    }

    /* scratch arrays in a userdata: freed by the collector even if we raise */
    size_t nn = (size_t)(n ? n : 1), nm = (size_t)(nmeta ? nmeta : 1);
    char *mem = lua_newuserdatauv(L, nn * (sizeof(char *) + sizeof(em_tensor *)) + 2 * nm * sizeof(char *), 0);
    const char **names = (const char **)mem;
    em_tensor **tensors = (em_tensor **)(mem + nn * sizeof(char *));
    const char **mkeys = (const char **)(mem + nn * (sizeof(char *) + sizeof(em_tensor *)));
    const char **mvals = mkeys + nm;
    int i = 0;
    for (lua_pushnil(L); lua_next(L, 4); lua_pop(L, 1)) names[i++] = lua_tostring(L, -2);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (i = 0; i < n; i++) {
        lua_getfield(L, 4, names[i]);
        tensors[i] = emlua_test(L, -1);   /* kept alive by the flat table */
        lua_pop(L, 1);
    }
    i = 0;
    for (lua_pushnil(L); lua_next(L, 5); lua_pop(L, 1)) {
        mkeys[i] = lua_tostring(L, -2);
        mvals[i] = lua_tostring(L, -1);
        i++;
    }
    qsort(mkeys, (size_t)nmeta, sizeof *mkeys, cmp_names);
    for (i = 0; i < nmeta; i++) {
        lua_getfield(L, 5, mkeys[i]);
        mvals[i] = lua_tostring(L, -1);   /* kept alive by table 5 */
        lua_pop(L, 1);
    }
    if (em_save_safetensors(path, names, tensors, n, mkeys, mvals, nmeta) != 0) return emlua_fail(L);
    return 0;
}

static int l_save(lua_State *L) { return save_impl(L, false); }
static int l_save_raw(lua_State *L) { return save_impl(L, true); }

static int box_gc(lua_State *L)
{
    em_checkpoint_free(emlua_unbox(L, 1, BOX_MT));
    return 0;
}

static int l_load(lua_State *L)
{
    const char *op = "load";
    const char *path = emlua_check_path(L, 1, op);
    int opts = emlua_opt_table(L, 2, op, "an options table {device = ..., mmap = ...}");
    em_device cpu = {EM_CPU, 0};
    em_device dev = emlua_opt_device(L, opts, op, cpu);
    bool mmap = false;
    if (opts) {
        int mt = lua_getfield(L, opts, "mmap");
        if (mt != LUA_TNIL && mt != LUA_TBOOLEAN)
            return emlua_argerror(L, 2, op, "mmap must be a boolean, got %s", luaL_typename(L, -1));
        mmap = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    if (opts) {
        /* torch.load's names: map_location as a device string; weights_only
         * is what ember always does */
        int mt = lua_getfield(L, opts, "map_location");
        emlua_device_arg(L, -1);
        mt = lua_type(L, -1);
        if (mt != LUA_TNIL) {
            if (mt != LUA_TSTRING || em_device_parse(lua_tostring(L, -1), &dev) != 0)
                return emlua_argerror(L, 2, op, "map_location must be a device string (\"cpu\", \"cuda:0\"), got %s",
                                      mt == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
            lua_getfield(L, opts, "device");
            if (!lua_isnil(L, -1)) return emlua_argerror(L, 2, op, "give device or map_location, not both");
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        int wt = lua_getfield(L, opts, "weights_only");
        if (wt != LUA_TNIL && !(wt == LUA_TBOOLEAN && lua_toboolean(L, -1)))
            return emlua_argerror(L, 2, op, "weights_only must be true or absent: ember never runs code from a file");
        lua_pop(L, 1);
    }
    lua_settop(L, 2);

    em_file_kind kind = em_file_kind_of(path);
    if (kind != EM_FILE_OTHER) {
        lua_getglobal(L, "require");
        lua_pushliteral(L, "ember.torchfile");
        lua_call(L, 1, 1);
        lua_getfield(L, -1, "load");
        lua_pushvalue(L, 1);
        if (em_device_eq(dev, cpu)) {
            lua_pushnil(L);
        } else {
            char buf[32];
            lua_pushstring(L, em_device_str(dev, buf, sizeof buf));
        }
        lua_pushstring(L, kind == EM_FILE_ZIP ? "zip" : "pickle");
        lua_call(L, 3, 1);
        return 1;
    }

    /* the loaded arrays live in a box the collector frees, so an error while
     * building the tables leaks nothing */
    em_checkpoint **box = lua_newuserdatauv(L, sizeof *box, 0);   /* 3 */
    *box = NULL;
    emlua_new_class(L, BOX_MT, NULL, box_gc, NULL, NULL);      /* made on first use */
    luaL_setmetatable(L, BOX_MT);
    *box = mmap ? em_load_safetensors_mapped(path) : em_load_safetensors(path);
    em_checkpoint *c = *box;
    if (!c) return emlua_fail(L);

    lua_createtable(L, 0, c->n);                     /* 4: tensors */
    for (int i = 0; i < c->n; i++) {
        em_tensor *t = c->tensors[i];
        if (!em_device_eq(dev, cpu)) {
            /* a mapped tensor is copied from the mapping, and dropped at once:
             * its pages are the file's, which the kernel may take back */
            em_tensor *moved = em_to_device(t, dev);
            if (!moved) return luaL_error(L, "load: %s: tensor \"%s\": %s", path, c->names[i], em_error());
            em_release(t);
            c->tensors[i] = NULL;
            t = moved;
        } else {
            c->tensors[i] = NULL;                    /* the userdata takes our reference */
        }
        emlua_push(L, t);
        lua_setfield(L, 4, c->names[i]);
    }
    lua_createtable(L, 0, c->nmeta);                 /* 5: metadata */
    for (int i = 0; i < c->nmeta; i++) {
        lua_pushstring(L, c->meta_values[i]);
        lua_setfield(L, 5, c->meta_keys[i]);
    }
    em_checkpoint_free(c);
    *box = NULL;
    if (lua_getfield(L, 5, TREE_KEY) == LUA_TSTRING) {   /* 6: a table saved with its plain values */
        lua_pushvalue(L, 4);
        lua_insert(L, -2);
        lua_pushstring(L, path);
        call_serialize(L, "unflatten", 3, 1);          /* 6: the table */
        lua_pushnil(L);
        lua_setfield(L, 5, TREE_KEY);
        lua_replace(L, 4);
    }
    lua_settop(L, 5);
    return 2;
}

/* ---- ember.safe_open ------------------------------------------------------
 * The handle's user value 1 is the path as given, for messages. */
#define SAFE_MT "ember.SafeOpen"

typedef struct safe_box {
    em_safe_file *f;
    em_device dev;
} safe_box;

static safe_box *check_safe(lua_State *L, const char *op)
{
    safe_box *b = luaL_checkudata(L, 1, SAFE_MT);
    if (!b->f) {
        lua_getiuservalue(L, 1, 1);
        luaL_error(L, "%s: %s: the file is closed", op, lua_tostring(L, -1));
    }
    return b;
}

static int l_safe_open(lua_State *L)
{
    const char *op = "safe_open";
    const char *path = emlua_check_path(L, 1, op);
    int opts = emlua_opt_table(L, 2, op, "an options table {framework = \"pt\", device = ...}");
    em_device dev = emlua_opt_device(L, opts, op, (em_device){EM_CPU, 0});
    if (opts) {
        int ft = lua_getfield(L, opts, "framework");
        if (ft != LUA_TNIL && !(ft == LUA_TSTRING && (strcmp(lua_tostring(L, -1), "pt") == 0 ||
                                                       strcmp(lua_tostring(L, -1), "torch") == 0)))
            return emlua_argerror(L, 2, op, "framework must be \"pt\" (ember's tensors), got %s",
                                  ft == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    safe_box *b = lua_newuserdatauv(L, sizeof *b, 1);
    b->f = NULL;
    b->dev = dev;
    luaL_setmetatable(L, SAFE_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    b->f = em_safe_open(op, path);
    if (!b->f) return emlua_fail(L);
    return 1;
}

/* f:keys() -> the tensor names, sorted (as safetensors gives them) */
static int safe_keys(lua_State *L)
{
    const em_checkpoint *c = em_safe_header(check_safe(L, "keys")->f);
    lua_createtable(L, c->n, 0);
    for (int i = 0; i < c->n; i++) {
        lua_pushstring(L, c->names[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "sort");
    lua_pushvalue(L, -3);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    return 1;
}

/* f:metadata() -> the "__metadata__" table, or nil when the file has none */
static int safe_metadata(lua_State *L)
{
    safe_box *b = check_safe(L, "metadata");
    if (!em_safe_has_metadata(b->f)) return 0;
    const em_checkpoint *c = em_safe_header(b->f);
    lua_createtable(L, 0, c->nmeta);
    for (int i = 0; i < c->nmeta; i++) {
        lua_pushstring(L, c->meta_values[i]);
        lua_setfield(L, -2, c->meta_keys[i]);
    }
    return 1;
}

/* f:get_tensor(name) -> a view of the mapping (on the CPU), or its copy on
 * the handle's device */
static int safe_get_tensor(lua_State *L)
{
    const char *op = "get_tensor";
    safe_box *b = check_safe(L, op);
    if (lua_type(L, 2) != LUA_TSTRING) return emlua_typeerror(L, 2, op, "a tensor name (string)");
    int i = em_safe_find(b->f, lua_tostring(L, 2));
    if (i < 0) {
        lua_getiuservalue(L, 1, 1);
        return luaL_error(L, "%s: %s: the file has no tensor \"%s\"", op, lua_tostring(L, -1), lua_tostring(L, 2));
    }
    em_tensor *t = em_safe_tensor(b->f, i);
    if (t && !em_device_eq(b->dev, (em_device){EM_CPU, 0})) {
        em_tensor *moved = em_to_device(t, b->dev);
        em_release(t);
        t = moved;
    }
    return emlua_push(L, t);
}

/* f:close(), also __close and __gc: tensors already taken stay valid */
static int safe_close(lua_State *L)
{
    safe_box *b = luaL_checkudata(L, 1, SAFE_MT);
    em_safe_close(b->f);
    b->f = NULL;
    return 0;
}

#define SAVEFILE_MT "ember.SaveFile"

typedef struct savefile_box {
    em_savefile f;
    bool live;
} savefile_box;

static savefile_box *check_savefile(lua_State *L)
{
    savefile_box *b = luaL_checkudata(L, 1, SAVEFILE_MT);
    if (!b->live) luaL_error(L, "savefile: already committed or aborted");
    return b;
}

/* ember._savefile(path, op) -> handle (the op names the errors) */
static int l_savefile(lua_State *L)
{
    if (lua_type(L, 2) != LUA_TSTRING) return emlua_typeerror(L, 2, "_savefile", "an op name (string)");
    const char *op = lua_tostring(L, 2);
    const char *path = emlua_check_path(L, 1, op);
    savefile_box *b = lua_newuserdatauv(L, sizeof *b, 1);
    b->live = false;
    luaL_setmetatable(L, SAVEFILE_MT);
    lua_pushvalue(L, 2);                 /* keeps the op string, which f points to, alive */
    lua_setiuservalue(L, -2, 1);
    if (em_savefile_open(&b->f, lua_tostring(L, 2), path, EM_SAVEFILE_NAMED) != 0) return emlua_fail(L);
    b->live = true;
    return 1;
}

static int savefile_path(lua_State *L)
{
    lua_pushstring(L, check_savefile(L)->f.write_path);
    return 1;
}

static int savefile_commit(lua_State *L)
{
    savefile_box *b = check_savefile(L);
    b->live = false;
    if (em_savefile_commit(&b->f) != 0) return emlua_fail(L);
    return 0;
}

static int savefile_abort(lua_State *L)
{
    savefile_box *b = luaL_checkudata(L, 1, SAVEFILE_MT);
    if (b->live) em_savefile_abort(&b->f);
    b->live = false;
    return 0;
}

/* ---- the private half of ember.torchfile ------------------------------------
 *   local z <close> = ember._zip_open(path)  -- raises "load: <path>: ..."
 *   z:members()        -> {name, ...}, {size, ...} (member i is names[i])
 *   z:read(i)          -> the member's bytes as a string
 *   z:tensor(i, dtype, numel, big_endian) -> a 1-D CPU tensor of its bytes
 *   z:close()
 *   ember._as_strided(t, sizes, strides, offset) -> a view of t's storage
 *     (0-based element offset; the engine checks it stays inside) */
#define ZIP_MT "ember.ZipFile"

static em_zip **check_zip(lua_State *L)
{
    em_zip **b = luaL_checkudata(L, 1, ZIP_MT);
    if (!*b) luaL_error(L, "load: the archive is already closed");
    return b;
}

static int check_member(lua_State *L, em_zip *z, int arg)
{
    lua_Integer i = luaL_checkinteger(L, arg);
    if (i < 1 || i > em_zip_count(z)) luaL_error(L, "load: no archive member %d", (int)i);
    return (int)i - 1;
}

static int l_zip_open(lua_State *L)
{
    const char *path = emlua_check_path(L, 1, "load");
    em_zip **b = lua_newuserdatauv(L, sizeof *b, 0);
    *b = NULL;
    luaL_setmetatable(L, ZIP_MT);
    *b = em_zip_open("load", path);
    if (!*b) return emlua_fail(L);
    return 1;
}

static int zip_members(lua_State *L)
{
    em_zip *z = *check_zip(L);
    int n = em_zip_count(z);
    lua_createtable(L, n, 0);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushstring(L, em_zip_name(z, i));
        lua_rawseti(L, -3, i + 1);
        lua_pushinteger(L, (lua_Integer)em_zip_size(z, i));
        lua_rawseti(L, -2, i + 1);
    }
    return 2;
}

static int zip_read(lua_State *L)
{
    em_zip *z = *check_zip(L);
    int i = check_member(L, z, 2);
    size_t n = (size_t)em_zip_size(z, i);
    luaL_Buffer b;
    char *p = luaL_buffinitsize(L, &b, n);
    if (em_zip_read(z, i, p) != 0) return emlua_fail(L);
    luaL_pushresultsize(&b, n);
    return 1;
}

static int zip_tensor(lua_State *L)
{
    em_zip *z = *check_zip(L);
    int i = check_member(L, z, 2);
    em_dtype d = emlua_check_dtype(L, 3, "load");
    lua_Integer numel = luaL_checkinteger(L, 4);
    return emlua_push(L, em_zip_tensor(z, i, d, numel, lua_toboolean(L, 5)));
}

static int zip_close(lua_State *L)
{
    em_zip_close(emlua_unbox(L, 1, ZIP_MT));
    return 0;
}

/* A table of at most EM_MAX_DIMS integers; returns the count. */
static int int_list(lua_State *L, int arg, const char *what, int64_t *out)
{
    const char *op = "as_strided";
    if (lua_type(L, arg) != LUA_TTABLE || emlua_test(L, arg))
        return emlua_typeerror(L, arg, op, "a list of integers");
    lua_Integer n = (lua_Integer)lua_rawlen(L, arg);
    if (n < 0 || n > EM_MAX_DIMS) return emlua_argerror(L, arg, op, "%d %s (at most %d)", (int)n, what, EM_MAX_DIMS);
    lua_Integer bad = emlua_table_integers(L, arg, n, out);
    if (bad) return emlua_argerror(L, arg, op, "%s %d is not an integer", what, (int)bad);
    return (int)n;
}

static int l_as_strided(lua_State *L)
{
    em_tensor *t = emlua_check(L, 1, "as_strided");
    int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
    int ndim = int_list(L, 2, "sizes", sizes);
    if (int_list(L, 3, "strides", strides) != ndim) return emlua_argerror(L, 3, "as_strided", "not one stride a size");
    if (!lua_isinteger(L, 4)) return emlua_typeerror(L, 4, "as_strided", "an integer offset");
    lua_Integer offset = lua_tointeger(L, 4);
    return emlua_push(L, em_as_strided(t, sizes, strides, ndim, (int64_t)offset));
}

void emlua_open_io(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"save", l_save},
        {"_save_raw", l_save_raw},
        {"load", l_load},
        {"safe_open", l_safe_open},
        {"_savefile", l_savefile},
        {"_zip_open", l_zip_open},
        {"_as_strided", l_as_strided},
        {NULL, NULL},
    };
    static const luaL_Reg zip_methods[] = {
        {"members", zip_members}, {"read", zip_read}, {"tensor", zip_tensor}, {"close", zip_close}, {NULL, NULL},
    };
    emlua_new_class(L, ZIP_MT, zip_methods, zip_close, zip_close, NULL);
    static const luaL_Reg safe_methods[] = {
        {"keys", safe_keys}, {"get_tensor", safe_get_tensor}, {"metadata", safe_metadata}, {"close", safe_close},
        {NULL, NULL},
    };
    emlua_new_class(L, SAFE_MT, safe_methods, safe_close, safe_close, NULL);
    static const luaL_Reg savefile_methods[] = {
        {"path", savefile_path}, {"commit", savefile_commit}, {"abort", savefile_abort}, {NULL, NULL},
    };
    emlua_new_class(L, SAVEFILE_MT, savefile_methods, savefile_abort, NULL, NULL);
    emlua_register(L, NULL, functions);
}
