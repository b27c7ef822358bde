/* bind_attention.c — ember.scaled_dot_product_attention for Lua (also
 * ember.nn.functional's).
 *
 *   ember.scaled_dot_product_attention(query, key, value [, attn_mask, dropout_p, is_causal, scale])
 *
 * The arguments after value may also come as one trailing options table
 * with PyTorch 2.x's keyword names {attn_mask =, dropout_p =, is_causal =,
 * scale =}. The small positional-or-keyword helper is a copy of
 * bind_nn.c's (the two files keep their own until a shared home exists). */
#include "binding.h"

#include <math.h>
#include <string.h>

static const char *const sdpa_names[] = {"attn_mask", "dropout_p", "is_causal", "scale", NULL};

/* The stack index of optional argument k (positional first + k, or a field
 * of the options table at opts pushed onto the stack), or 0 when absent. */
static int arg_at(lua_State *L, int first, int opts, int k)
{
    int pos = first + k;
    if (!opts || pos < opts) return lua_isnoneornil(L, pos) ? 0 : pos;
    lua_getfield(L, opts, sdpa_names[k]);
    if (lua_isnil(L, -1)) { lua_pop(L, 1); return 0; }
    return lua_gettop(L);
}

static void check_option_names(lua_State *L, int opts, const char *op)
{
    lua_pushnil(L);
    while (lua_next(L, opts)) {
        lua_pop(L, 1);
        bool known = false;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (int i = 0; sdpa_names[i] && !known; i++) known = strcmp(lua_tostring(L, -1), sdpa_names[i]) == 0;
        if (!known) {
            const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
            luaL_error(L, "%s: unknown option '%s'", op, key);
        }
    }
}

static int l_scaled_dot_product_attention(lua_State *L)
{
    const char *op = "scaled_dot_product_attention";
    em_tensor *q = emlua_check(L, 1, op), *k = emlua_check(L, 2, op), *v = emlua_check(L, 3, op);
    int first = 4, opts = emlua_options_index(L, first);
    if (opts) check_option_names(L, opts, op);
    em_tensor *mask = NULL;
    int i = arg_at(L, first, opts, 0);
    if (i) {
        mask = emlua_test(L, i);
        if (!mask) emlua_argerror(L, first, op, "attn_mask must be a tensor or nil, got %s", luaL_typename(L, i));
    }
    double dropout_p = 0, scale = 0;
    i = arg_at(L, first, opts, 1);
    if (i) {
        if (lua_type(L, i) != LUA_TNUMBER)
            emlua_argerror(L, first + 1, op, "dropout_p must be a number, got %s", luaL_typename(L, i));
        dropout_p = lua_tonumber(L, i);
    }
    bool causal = false;
    i = arg_at(L, first, opts, 2);
    if (i) {
        if (!lua_isboolean(L, i))
            emlua_argerror(L, first + 2, op, "is_causal must be a boolean, got %s", luaL_typename(L, i));
        causal = lua_toboolean(L, i);
    }
    i = arg_at(L, first, opts, 3);
    if (i) {
        if (lua_type(L, i) != LUA_TNUMBER)
            emlua_argerror(L, first + 3, op, "scale must be a number, got %s", luaL_typename(L, i));
        scale = lua_tonumber(L, i);
        if (!(scale > 0) || isinf(scale))
            emlua_argerror(L, first + 3, op, "scale must be a positive finite number (nil: 1/sqrt(D)), got %g",
                           scale);
    }
    if (causal && mask)
        emlua_argerror(L, first, op, "give attn_mask or is_causal = true, not both (as PyTorch)");
    return emlua_push(L, em_scaled_dot_product_attention(q, k, v, mask, dropout_p, causal, scale));
}

static const luaL_Reg attention_funcs[] = {
    {"scaled_dot_product_attention", l_scaled_dot_product_attention},
    {NULL, NULL}
};

void emlua_open_attention(lua_State *L)
{
    emlua_register(L, NULL, attention_funcs);
}
