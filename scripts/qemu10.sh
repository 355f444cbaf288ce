#!/bin/sh
# Prints the path of a qemu-riscv64 that knows Zicond, Zcb, Zfa and Zimop (Debian 12's 7.2 does
# not): Debian trixie's qemu-user 10 (a static binary), fetched once into ~/.cache/outcrop.
# Used to record tests/fixtures/ext and by .ci/run's check of the extension workload.
set -eu
dir=${XDG_CACHE_HOME:-$HOME/.cache}/outcrop/qemu10
bin=$dir/usr/bin/qemu-riscv64
if [ ! -x "$bin" ]; then
  mkdir -p "$dir/lists/partial" "$dir/deb"
  echo 'deb http://deb.debian.org/debian trixie main' > "$dir/trixie.list"
  apt_opts="-o Dir::Etc::sourcelist=$dir/trixie.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$dir/lists -o Debug::NoLocking=1"
  # shellcheck disable=SC2086
  apt-get $apt_opts update -qq >&2
  # shellcheck disable=SC2086
  (cd "$dir/deb" && apt-get $apt_opts download qemu-user >&2 2>/dev/null)
  dpkg -x "$dir"/deb/qemu-user_*.deb "$dir"
  rm -rf "$dir/deb" "$dir/lists"
fi
echo "$bin"
