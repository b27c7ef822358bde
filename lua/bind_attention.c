/* bind_attention.c — ember.scaled_dot_product_attention for Lua (also
 * ember.nn.functional's).
 *
 *   ember.scaled_dot_product_attention(query, key, value [, attn_mask, dropout_p, is_causal, scale])
 *
 * The arguments after value may also come as one trailing options table
 * with PyTorch 2.x's keyword names {attn_mask =, dropout_p =, is_causal =,
 * scale =} (binding.h's emlua_args). */
#include "binding.h"

#include <math.h>

static const char *const sdpa_names[] = {"attn_mask", "dropout_p", "is_causal", "scale", NULL};

static int l_scaled_dot_product_attention(lua_State *L)
{
    const char *op = "scaled_dot_product_attention";
    em_tensor *q = emlua_check(L, 1, op), *k = emlua_check(L, 2, op), *v = emlua_check(L, 3, op);
    emlua_args a;
    emlua_args_start(&a, L, op, 4, sdpa_names);
    em_tensor *mask = emlua_arg_tensor(&a, 0);
    double dropout_p = emlua_arg_number(&a, 1, 0);
    bool causal = emlua_arg_bool(&a, 2, false);
    double scale = 0;
    if (emlua_arg_at(&a, 3)) {
        scale = emlua_arg_number(&a, 3, 0);
        if (!(scale > 0) || isinf(scale))
            emlua_argerror(L, a.first + 3, op, "scale must be a positive finite number (nil: 1/sqrt(D)), got %g",
                           scale);
    }
    if (causal && mask)
        emlua_argerror(L, a.first, op, "give attn_mask or is_causal = true, not both (as PyTorch)");
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
