#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The installed engine, as someone embedding it sees it: `meson install`
# into a temporary folder (DESTDIR), the files where they belong (shared
# library, headers, tensor-trainer.pc, the CLI, and with GStreamer
# tt-launch and the plugin in LIBDIR/gstreamer-1.0), then tests/install/
# embed.c compiled with the flags `pkg-config tensor-trainer` gives for
# that tree and run: it opens a model, trains a batch, prints tt_version().
#
# usage: install_test.sh BUILD_DIR SOURCE_ROOT PREFIX LIBDIR BINDIR
#            INCLUDEDIR CC CFLAGS gst|no-gst native|cross
#   (LIBDIR, BINDIR, INCLUDEDIR absolute; CC and CFLAGS are word-split:
#    CFLAGS carries the build's sanitizers, which the program needs too)
set -uo pipefail
build=$1 src=$2 prefix=$3 libdir=$4 bindir=$5 includedir=$6 cc=$7 cflags=$8
gst=$9 machine=${10}
if [ "$machine" = cross ]; then
  echo "skipped: a cross build's library and programs cannot be linked" \
    "into and run as a program of this machine"
  exit 77
fi
# only what the test names: not the build folder's libraries, which meson
# test puts on the path
unset LD_LIBRARY_PATH
passed=0 failed=0
check () {
  local what=$1; shift
  if "$@"; then echo "ok: $what"; passed=$((passed + 1))
  else echo "FAIL: $what"; failed=$((failed + 1)); fi
}

tmp=$(mktemp -d /tmp/tt-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
# (--no-rebuild: meson test has built what is installed, and must not see
# its build folder rebuilt under it)
if ! meson install --no-rebuild --destdir "$root" -C "$build" \
    > "$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAIL: meson install"
  exit 1
fi

inc=$root$includedir/tensor-trainer lib=$root$libdir bin=$root$bindir
check "headers in include/tensor-trainer/: the API's, no internal one" \
  test "$(cd "$inc" && ls | tr '\n' ' ')" = \
    "tt_api.h tt_bundle.h tt_engine.h tt_version.h "
check "libtensor-trainer.so -> .so.0 -> .so.0.1.0" \
  test -L "$lib/libtensor-trainer.so" -a -L "$lib/libtensor-trainer.so.0" \
    -a -f "$lib/libtensor-trainer.so.0.1.0"
check "its soname is libtensor-trainer.so.0" \
  sh -c "readelf -d '$lib/libtensor-trainer.so.0.1.0' |
    grep -q 'SONAME.*\[libtensor-trainer.so.0\]'"
pc=$lib/pkgconfig/tensor-trainer.pc
check "tensor-trainer.pc in LIBDIR/pkgconfig" test -f "$pc"
check "the CLI in BINDIR" test -x "$bin/tensor-trainer"
if [ "$gst" = gst ]; then
  check "tt-launch in BINDIR" test -x "$bin/tt-launch"
  plugin=$lib/gstreamer-1.0/libgsttensortrainer.so
  check "the plugin in LIBDIR/gstreamer-1.0" test -f "$plugin"
  check "the plugin exports its entry points only" \
    test "$(nm -D --defined-only "$plugin" | awk '{print $3}' | sort |
      tr '\n' ' ')" = "gst_plugin_tensortrainer_get_desc gst_plugin_tensortrainer_register "
  # (a sanitized plugin cannot load into an uninstrumented gst-inspect)
  if [ -z "$cflags" ] && command -v gst-inspect-1.0 >/dev/null; then
    check "GStreamer loads the installed plugin" sh -c "
      GST_REGISTRY='$tmp/registry.bin' GST_PLUGIN_SYSTEM_PATH_1_0= \
      GST_PLUGIN_PATH_1_0= gst-inspect-1.0 '$plugin' |
      grep -q tensor_trainer"
  fi
fi
check "the installed CLI runs" sh -c "'$bin/tensor-trainer' info \
  '$src/tests/models/fmnist_mlp.ini' | grep -q '^model='"

# pkg-config reads the installed .pc; SYSROOT_DIR puts its paths in DESTDIR
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
check "pkg-config --modversion" \
  test "$(pkg-config --modversion tensor-trainer)" = 0.1.0
flags=$(pkg-config --cflags --libs tensor-trainer) ||
  { echo "FAIL: pkg-config --cflags --libs tensor-trainer"; exit 1; }
echo "pkg-config --cflags --libs tensor-trainer: $flags"
# shellcheck disable=SC2086  # CC, CFLAGS and the flags are word lists
if $cc $cflags -std=c11 -Wall -Wextra -Werror "$src/tests/install/embed.c" \
    $flags -lm -o "$tmp/embed" 2> "$tmp/cc.log"; then
  echo "ok: embed.c compiled against the installed tree"
  passed=$((passed + 1))
  check "embed links libtensor-trainer.so.0" sh -c "readelf -d '$tmp/embed' |
    grep -q 'NEEDED.*\[libtensor-trainer.so.0\]'"
  LD_LIBRARY_PATH=$lib "$tmp/embed" "$src/tests/models/fmnist_mlp.ini" \
    > "$tmp/embed.log" 2>&1
  rc=$?
  cat "$tmp/embed.log"
  check "embed trains a batch (exit $rc)" test $rc -eq 0
  check "and prints tt_version()" grep -q '^version=0\.1\.0 ' "$tmp/embed.log"
else
  cat "$tmp/cc.log"
  echo "FAIL: embed.c does not compile against the installed tree"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
