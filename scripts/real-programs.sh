#!/bin/sh
# Builds the real programs the compiling tier is benchmarked on (docs/BENCHMARKS.md, "The
# compiling tier"), static, with the riscv64 cross compiler, as their users build them:
#   Lua 5.5 (lua/lua 53b41d0c), zstd (facebook/zstd 2dddf0905), zlib's minigzip
#   (madler/zlib d201f04), SQLite 3.53.2 (better-sqlite3 12.11.1's amalgamation) + a driver.
# Usage: scripts/real-programs.sh DIR [LUA_GIT_DIR ZSTD_GIT_DIR ZLIB_GIT_DIR]
# Without the git directories it clones from GitHub. Needs gcc-riscv64-linux-gnu,
# libc6-dev-riscv64-cross, git, make and npm. Then:
#   cargo run --release -p xtask -- bench-exec --runs 5 --dir DIR --program './lua fib.lua' \
#     --program './zstd -c -5 input.txt' --program './minigzip -c input.txt' --program './sqlite'
set -eu
out=$(mkdir -p "$1" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
CC=riscv64-linux-gnu-gcc
src() { # name url commit [git dir]
    if [ -n "${4:-}" ]; then
        mkdir -p "$out/$1-src" && git --git-dir="$4" archive "$3" | tar -x -C "$out/$1-src"
    else
        git clone -q "$2" "$out/$1-src" && git -C "$out/$1-src" checkout -q "$3"
    fi
}
[ -x "$out/lua" ] || {
    src lua https://github.com/lua/lua 53b41d0c "${2:-}"
    $CC -O2 -static -DLUA_USE_LINUX -o "$out/lua" "$out/lua-src/onelua.c" -lm
}
[ -x "$out/zstd" ] || {
    src zstd https://github.com/facebook/zstd 2dddf0905 "${3:-}"
    make -s -j2 -C "$out/zstd-src/programs" zstd CC=$CC LDFLAGS=-static HAVE_THREAD=0 \
        HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0
    cp "$out/zstd-src/programs/zstd" "$out/zstd"
}
[ -x "$out/minigzip" ] || {
    src zlib https://github.com/madler/zlib d201f04 "${4:-}"
    (cd "$out/zlib-src" && $CC -O2 -static -I. -o "$out/minigzip" test/minigzip.c adler32.c \
        crc32.c deflate.c infback.c inffast.c inflate.c inftrees.c trees.c zutil.c compress.c \
        uncompr.c gzclose.c gzlib.c gzread.c gzwrite.c)
}
[ -x "$out/sqlite" ] || {
    mkdir -p "$out/sq" && (cd "$out/sq" && npm pack -q better-sqlite3@12.11.1 >/dev/null &&
        tar xzf better-sqlite3-12.11.1.tgz)
    $CC -O2 -static -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -I"$out/sq/package/deps/sqlite3" \
        -o "$out/sqlite" "$here/real-programs/sqldrv.c" "$out/sq/package/deps/sqlite3/sqlite3.c"
}
cp "$here/real-programs/fib.lua" "$out/fib.lua"
# 2 MB of text to compress: this repository's Rust sources
cat "$here"/../crates/*/src/*.rs "$here"/../crates/*/src/*/*.rs > "$out/input.txt"
echo "built in $out: lua zstd minigzip sqlite (inputs fib.lua, input.txt)"
