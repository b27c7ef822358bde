/* bind_lapack.c — ember.linalg: decompositions and solves (LAPACK on the CPU, cuSOLVER on the GPU).
 *
 * The C halves of lua/ember/linalg.lua, as ember._linalg_<name> with plain
 * positional arguments; linalg.lua reads PyTorch's positional-or-options
 * arguments, composes the ops built from these (norms, lstsq, matrix_rank,
 * matrix_power, cross) and re-raises errors at the user's line. */
#include "binding.h"

/* an optional string argument (a mode name) */
static const char *opt_string(lua_State *L, int idx, const char *def, const char *op)
{
    if (lua_isnoneornil(L, idx)) return def;
    if (lua_type(L, idx) != LUA_TSTRING) emlua_typeerror(L, idx, op, "a string");
    return lua_tostring(L, idx);
}

static int push2(lua_State *L, int rc, em_tensor *a, em_tensor *b)
{
    if (rc) emlua_fail(L);
    emlua_push(L, a);
    emlua_push(L, b);
    return 2;
}

static int l_det(lua_State *L) { return emlua_push(L, em_linalg_det(emlua_check(L, 1, "linalg.det"))); }

static int l_slogdet(lua_State *L)
{
    em_tensor *s, *la;
    int rc = em_linalg_slogdet(emlua_check(L, 1, "linalg.slogdet"), &s, &la);
    return push2(L, rc, s, la);
}

static int l_inv(lua_State *L) { return emlua_push(L, em_linalg_inv(emlua_check(L, 1, "linalg.inv"))); }

/* (A, B, left) */
static int l_solve(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.solve"), *B = emlua_check(L, 2, "linalg.solve");
    bool left = lua_isnoneornil(L, 3) ? true : lua_toboolean(L, 3);
    return emlua_push(L, em_linalg_solve_ex(A, B, left));
}

/* (A, upper) */
static int l_cholesky(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.cholesky");
    return emlua_push(L, em_linalg_cholesky(A, lua_toboolean(L, 2)));
}

/* (A, mode) */
static int l_qr(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.qr"), *Q, *R;
    const char *mode = opt_string(L, 2, "reduced", "linalg.qr");
    int rc = em_linalg_qr(A, mode, &Q, &R);
    return push2(L, rc, Q, R);
}

/* (A, full_matrices) */
static int l_svd(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.svd"), *U, *S, *Vh;
    bool full = lua_isnoneornil(L, 2) ? true : lua_toboolean(L, 2);
    if (em_linalg_svd(A, full, &U, &S, &Vh)) emlua_fail(L);
    emlua_push(L, U);
    emlua_push(L, S);
    emlua_push(L, Vh);
    return 3;
}

static int l_svdvals(lua_State *L)
{
    return emlua_push(L, em_linalg_svdvals(emlua_check(L, 1, "linalg.svdvals")));
}

/* (A, UPLO) */
static int l_eigh(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.eigh"), *W, *V;
    int rc = em_linalg_eigh(A, opt_string(L, 2, "L", "linalg.eigh"), &W, &V);
    return push2(L, rc, W, V);
}

static int l_eigvalsh(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.eigvalsh");
    return emlua_push(L, em_linalg_eigvalsh(A, opt_string(L, 2, "L", "linalg.eigvalsh")));
}

/* (A, atol, rtol, hermitian); atol/rtol nil: unset */
static int l_pinv(lua_State *L)
{
    em_tensor *A = emlua_check(L, 1, "linalg.pinv");
    double atol = lua_isnoneornil(L, 2) ? -1 : emlua_check_number(L, 2, "linalg.pinv");
    double rtol = lua_isnoneornil(L, 3) ? -1 : emlua_check_number(L, 3, "linalg.pinv");
    if (!lua_isnoneornil(L, 2) && !(atol >= 0))
        return emlua_argerror(L, 2, "linalg.pinv", "atol must be a non-negative number, got %g", atol);
    if (!lua_isnoneornil(L, 3) && !(rtol >= 0))
        return emlua_argerror(L, 3, "linalg.pinv", "rtol must be a non-negative number, got %g", rtol);
    return emlua_push(L, em_linalg_pinv(A, atol, rtol, lua_toboolean(L, 4)));
}

/* cross(a, b, [dim] [, {dim =, out =}]): dim 1-based, by position or in
 * the options table; absent: the first dim of size 3 for ember.cross (as
 * torch.cross), the last for linalg.cross. out (PyTorch's out=) is a keyword
 * only. */
static int cross_common(lua_State *L, const char *op, bool last_default)
{
    static const char *const keys[] = {"dim", "out", NULL};
    em_tensor *a = emlua_check(L, 1, op), *b = emlua_check(L, 2, op);
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    int dim = last_default ? -1 : -EM_MAX_DIMS - 1;
    /* argument 3: dim or the options table; past dim, only the options table */
    int o = emlua_keywords(L, lua_type(L, 3) == LUA_TTABLE ? 3 : 4, op, keys);
    int at = o == 3 || lua_isnoneornil(L, 3) ? 0 : 3;
    if (o && lua_getfield(L, o, "dim") != LUA_TNIL) {
        if (at) emlua_argerror(L, 3, op, "got multiple values for argument 'dim' (by position and in the options table)");
        at = lua_gettop(L);
    }
    if (at) dim = emlua_check_dim(L, at, nd, op);
    if (dim < -EM_MAX_DIMS) {
        for (int d = 0; d < a->ndim && dim < -EM_MAX_DIMS; d++)
            if (a->sizes[d] == 3) dim = d;
        if (dim < -EM_MAX_DIMS) dim = -1;
    }
    return emlua_push_out(L, last_default ? em_linalg_cross(a, b, dim) : em_cross(a, b, dim), o, op);
}

static int l_cross(lua_State *L)
{
    return cross_common(L, "cross", false);
}
static int l_linalg_cross(lua_State *L) { return cross_common(L, "linalg.cross", true); }

void emlua_open_lapack(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"_linalg_det", l_det},
        {"_linalg_slogdet", l_slogdet},
        {"_linalg_inv", l_inv},
        {"_linalg_solve", l_solve},
        {"_linalg_cholesky", l_cholesky},
        {"_linalg_qr", l_qr},
        {"_linalg_svd", l_svd},
        {"_linalg_svdvals", l_svdvals},
        {"_linalg_eigh", l_eigh},
        {"_linalg_eigvalsh", l_eigvalsh},
        {"_linalg_pinv", l_pinv},
        {"_linalg_cross", l_linalg_cross},
        {"cross", l_cross},
        {NULL, NULL},
    };
    static const luaL_Reg methods[] = {{"cross", l_cross}, {NULL, NULL}};
    emlua_register(L, methods, functions);
}
