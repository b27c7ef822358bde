/* bind_shape.c — the shape and indexing ops of issue 16 (flip, roll, repeat, diag, ...). */
#include "binding.h"

void emlua_open_shape(lua_State *L)
{
    (void)L;
}
