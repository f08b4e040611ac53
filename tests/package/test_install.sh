#!/usr/bin/env bash
# The installed package, as a user meets it: a shared libattn built from this source tree and
# installed to a temporary prefix; its layout; public headers that include only the standard
# library and attn's own; the example project found with find_package(attn), built and run;
# the same program built with only pkg-config's flags.
#   test_install.sh SOURCE_DIR WORK_DIR [CXX]
set -euo pipefail
src=$1
work=$2
cxx=${3:-c++}
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
jobs=$(nproc)

echo "== build and install a shared libattn"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DBUILD_SHARED_LIBS=ON -DATTN_BUILD_CLI=OFF -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_PYTHON=OFF \
  -DCMAKE_INSTALL_LIBDIR=lib >/dev/null
cmake --build "$work/build" -j "$jobs" >/dev/null
cmake --install "$work/build" --prefix "$prefix" >/dev/null

echo "== layout"
for f in include/attn/attn.hpp lib/libattn.so lib/libattn.so.0.1 lib/libattn.so.0.1.0 \
         lib/cmake/attn/attn-config.cmake lib/cmake/attn/attn-config-version.cmake \
         lib/cmake/attn/attn-targets.cmake lib/pkgconfig/attn.pc; do
  [ -e "$prefix/$f" ] || { echo "missing: $f"; exit 1; }
done
soname=$(objdump -p "$prefix/lib/libattn.so.0.1.0" | awk '/SONAME/ {print $2}')
[ "$soname" = "libattn.so.0.1" ] || { echo "soname is '$soname', expected libattn.so.0.1"; exit 1; }

echo "== public headers include only the standard library and attn/"
# Standard headers have no extension and no directory; anything else (fmt/, nlohmann/, omp.h,
# cblas.h) would make every user install it too.
bad=$(grep -h '^[[:space:]]*#[[:space:]]*include' "$prefix"/include/attn/*.hpp |
      grep -v -E '#[[:space:]]*include[[:space:]]*("attn/[a-z_0-9]+\.hpp"|<[a-z_0-9]+>)' || true)
[ -z "$bad" ] || { echo "non-standard includes in public headers:"; echo "$bad"; exit 1; }
# Each header compiles on its own, from the prefix.
for h in "$prefix"/include/attn/*.hpp; do
  echo "#include <attn/$(basename "$h")>" |
    "$cxx" -std=c++20 -fsyntax-only -x c++ - -I "$prefix/include" ||
    { echo "$(basename "$h") does not compile on its own"; exit 1; }
done

echo "== the example, with find_package(attn)"
cmake -S "$src/examples/embed_and_attend" -B "$work/example" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/example" >/dev/null
out=$("$work/example/embed_and_attend")
echo "$out"
grep -q '^embed: 6 tokens, C \[6, 100\]$' <<<"$out"
grep -q '^sdpa: out \[1, 2, 3, 4\], first query sees only itself: weight 1.000$' <<<"$out"
# grep -q reads from here-strings, not pipes: under pipefail, a writer cut off by grep -q's early
# exit (SIGPIPE) would fail the test at random.
grep -q "$prefix/lib/libattn.so.0.1" <<<"$(ldd "$work/example/embed_and_attend")" ||
  { echo "the example does not use the installed shared library"; ldd "$work/example/embed_and_attend"; exit 1; }

echo "== the example, with pkg-config"
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs attn)
"$cxx" -std=c++20 "$src/examples/embed_and_attend/main.cpp" $flags -o "$work/example_pc"
grep -q '^embed: 6 tokens' <<<"$(LD_LIBRARY_PATH="$prefix/lib" "$work/example_pc")"
echo "ok"
