build-reduce/shell/main.o: shell/main.c shell/shell.h \
 /usr/include/lua5.4/lua.h /usr/include/lua5.4/luaconf.h \
 /usr/include/lua5.4/lauxlib.h /usr/include/lua5.4/lua.h \
 /usr/include/lua5.4/lualib.h
shell/shell.h:
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/luaconf.h:
/usr/include/lua5.4/lauxlib.h:
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/lualib.h:
