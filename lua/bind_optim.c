/* bind_optim.c — placeholder, filled in by its owner. */
#include "binding.h"

void emlua_open_optim(lua_State *L) { (void)L; }
