# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the script tests. In a cross build (tests/run.sh's arm64
# configuration) the programs under test are the target's, which the
# build machine runs only through meson's exe wrapper (qemu): meson gives
# it to the tests as MESON_EXE_WRAPPER, already shell-quoted.
#
# target_exe PROGRAM DIR: prints a command that runs PROGRAM (PROGRAM
# itself, or a wrapper script written into DIR), usable wherever the
# program's path was, including inside `sh -c` strings.
target_exe () {
  if [ -z "${MESON_EXE_WRAPPER:-}" ]; then
    printf '%s\n' "$1"
    return
  fi
  local wrapped
  wrapped=$2/$(basename "$1").target
  printf '#!/bin/sh\nexec %s %q "$@"\n' "$MESON_EXE_WRAPPER" "$1" > "$wrapped"
  chmod +x "$wrapped"
  printf '%s\n' "$wrapped"
}
