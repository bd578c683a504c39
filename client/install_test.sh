#!/bin/sh
# The library as an application outside the tree finds it: `cmake --install`
# into a fresh prefix puts include/sluice/, libsluice.so and sluice.pc there;
# the example publisher compiles against them through pkg-config alone, and
# through find_package(sluice) in a CMake project of its own, and
# loads the installed library; libsluice.so exports the public API and none
# of the internals it is made of.
#
#   install_test.sh BUILD_DIR SOURCE_DIR CXX
set -eu
build=$1 src=$2 cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for h in publisher.h subscriber.h types.h; do
  [ -f "$tmp/prefix/include/sluice/$h" ] || fail "include/sluice/$h not installed"
done
pc=$(find "$tmp/prefix" -name sluice.pc | head -1)
[ -n "$pc" ] || fail "no sluice.pc under the prefix"
lib=$(find "$tmp/prefix" -name 'libsluice.so*' -type f | head -1)
[ -n "$lib" ] || fail "no libsluice.so under the prefix"

export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs sluice) || fail "pkg-config sluice"
# The installed headers, not the tree's: compiled from a copy elsewhere.
cp "$src/examples/publisher.cc" "$tmp/app.cc"
# shellcheck disable=SC2086
"$cxx" "$tmp/app.cc" $flags -o "$tmp/app" || fail "the example does not compile against the installed library ($flags)"
# pkg-config's folders are where the files are, whatever the library folder
# is called (lib, lib64, lib/x86_64-linux-gnu).
[ "$(realpath "$(pkg-config --variable=libdir sluice)")" = "$(realpath "$(dirname "$lib")")" ] ||
  fail "sluice.pc's libdir $(pkg-config --variable=libdir sluice) is not $(dirname "$lib")"
[ -f "$(pkg-config --variable=includedir sluice)/sluice/publisher.h" ] ||
  fail "sluice.pc's includedir $(pkg-config --variable=includedir sluice) holds no sluice/publisher.h"
# find_package(sluice) from a CMake project outside the tree.
mkdir "$tmp/cm"
cp "$src/examples/publisher.cc" "$tmp/cm/app.cc"
cat >"$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(app CXX)
find_package(sluice REQUIRED)
add_executable(app app.cc)
target_link_libraries(app sluice::sluice)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  >"$tmp/cm.log" 2>&1 && cmake --build "$tmp/cm/build" >>"$tmp/cm.log" 2>&1 ||
  { cat "$tmp/cm.log"; fail "find_package(sluice) and sluice::sluice do not build the example"; }
# No arguments: it prints its usage and exits 2, after the loader found libsluice.so.
set +e
LD_LIBRARY_PATH="$(dirname "$lib")" "$tmp/app" >"$tmp/out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] && grep -q usage "$tmp/out" || { cat "$tmp/out"; fail "the installed example exited $rc"; }

# Exported: sluice:: API only (C++ runtime and weak template symbols aside).
leaked=$(nm -D --defined-only -C "$lib" | awk '$2 ~ /^[TDB]$/ {$1=""; $2=""; print}' |
         grep -v -E '^ *sluice::(Publisher|Subscriber|Layout|code_name|type_name)' |
         grep -E 'sluice::' || true)
[ -z "$leaked" ] || fail "libsluice.so exports internals: $(echo "$leaked" | head -5)"
nm -D --defined-only -C "$lib" | grep -q 'sluice::Publisher::open' || fail "libsluice.so does not export Publisher::open"
echo "ok: installed under $tmp/prefix, the example built with pkg-config and with find_package, and loaded libsluice.so"
