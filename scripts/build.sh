#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Configures (once) and builds a meson build folder.
# Usage: scripts/build.sh BUILD_DIR [MESON_OPTION...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$1; shift
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$top" "$@" >/dev/null
else
  meson configure "$dir" "$@" >/dev/null 2>&1 || true
fi
# quiet when it builds; the compiler's messages when it does not
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! ninja -C "$dir" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
