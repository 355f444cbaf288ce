/* Lua's standalone interpreter reduced to what the benchmarks use: run the script named by
 * argv[1] with the standard libraries, print an error and exit 1 if it fails. (The lua-src
 * crate vendors the library, not lua.c.) */
#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: lua SCRIPT\n"); return 2; }
    lua_State *L = luaL_newstate();
    if (!L) return 1;
    luaL_openlibs(L);
    if (luaL_dofile(L, argv[1]) != LUA_OK) {
        fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
        lua_close(L);
        return 1;
    }
    lua_close(L);
    return 0;
}
