/* bind_lapack.c — ember.linalg: decompositions and solves (LAPACK on the CPU, cuSOLVER on the GPU). */
#include "binding.h"

void emlua_open_lapack(lua_State *L)
{
    (void)L;
}
