/* bind_data.c — ember.read_idx(path): an IDX file (plain or gzip) as a CPU
 * tensor. The rest of data loading (datasets, loaders, Fashion-MNIST) is Lua,
 * in lua/ember/data.lua. */
#include "binding.h"
#include "../engine/idx.h"

static int l_read_idx(lua_State *L)
{
    const char *path = emlua_check_path(L, 1, "read_idx");
    return emlua_push(L, em_read_idx(path));
}

void emlua_open_data(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"read_idx", l_read_idx},
        {NULL, NULL},
    };
    emlua_register(L, NULL, functions);
}
