/* bind_data.c — ember.read_idx(path): an IDX file (plain or gzip) as a CPU
 * tensor. The rest of data loading (datasets, loaders, Fashion-MNIST) is Lua,
 * in lua/ember/data.lua. */
#include "binding.h"
#include "../engine/idx.h"

#include <string.h>

static int l_read_idx(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING) emlua_typeerror(L, 1, "read_idx", "a file path (string)");
    size_t len;
    const char *path = lua_tolstring(L, 1, &len);
    if (len == 0) emlua_argerror(L, 1, "read_idx", "empty file name");
    /* the C string would end at the zero byte: another file than the one named */
    if (strlen(path) != len) emlua_argerror(L, 1, "read_idx", "file name contains a zero byte");
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
