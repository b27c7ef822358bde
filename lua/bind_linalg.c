/* bind_linalg.c — Lua binding of the matmul family (matmul, mm, bmm, addmm,
 * outer, dot). Each function serves both t:op(u) and ember.op(t, u); the
 * keywords after the tensors go in one trailing options table: out (PyTorch's
 * out=) and addmm's beta and alpha. */
#include "binding.h"

/* ---- matmul family -------------------------------------------------------- */

typedef em_tensor *(*binary_fn)(const em_tensor *, const em_tensor *);

/* op(a, b [, {out = t}]) */
static int pair(lua_State *L, const char *op, binary_fn fn)
{
    em_tensor *a = emlua_check(L, 1, op);
    em_tensor *b = emlua_check(L, 2, op);
    int o = emlua_keywords(L, 3, op, emlua_out_only);
    return emlua_push_out(L, fn(a, b), o, op);
}

static int l_matmul(lua_State *L) { return pair(L, "matmul", em_matmul); }
static int l_mm(lua_State *L) { return pair(L, "mm", em_mm); }
static int l_bmm(lua_State *L) { return pair(L, "bmm", em_bmm); }
static int l_outer(lua_State *L) { return pair(L, "outer", em_outer); }
static int l_dot(lua_State *L) { return pair(L, "dot", em_dot); }

/* addmm(c, a, b, {beta = 1, alpha = 1, out = t}) = beta * c + alpha * (a @ b) */
static int l_addmm(lua_State *L)
{
    static const char *const keys[] = {"beta", "alpha", "out", NULL};
    const char *op = "addmm";
    em_tensor *c = emlua_check(L, 1, op);
    em_tensor *a = emlua_check(L, 2, op);
    em_tensor *b = emlua_check(L, 3, op);
    emlua_opt_table(L, 4, op, "an options table {beta=, alpha=}");   /* its message for a number there */
    int opts = emlua_keywords(L, 4, op, keys);
    double beta = emlua_opt_field_number(L, opts, "beta", op, 1.0);
    double alpha = emlua_opt_field_number(L, opts, "alpha", op, 1.0);
    return emlua_push_out(L, em_addmm(c, a, b, beta, alpha), opts, op);
}

void emlua_open_linalg(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"matmul", l_matmul}, {"mm", l_mm}, {"bmm", l_bmm}, {"addmm", l_addmm},
        {"outer", l_outer}, {"dot", l_dot},
        {NULL, NULL},
    };
    static const luaL_Reg functions[] = {
        {"matmul", l_matmul}, {"mm", l_mm}, {"bmm", l_bmm}, {"addmm", l_addmm},
        {"outer", l_outer}, {"dot", l_dot},
        {NULL, NULL},
    };
    emlua_register(L, methods, functions);
}
