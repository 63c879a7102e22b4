# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the script tests: running the programs under test, counting
# checks, making small IDX data sets.
#
# In a cross build (tests/run.sh's arm64
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
  local wrapped program
  # absolute, so that the wrapper runs from any folder
  case $1 in /*) program=$1 ;; *) program=$PWD/$1 ;; esac
  wrapped=$2/$(basename "$1").target
  printf '#!/bin/sh\nexec %s %q "$@"\n' "$MESON_EXE_WRAPPER" "$program" \
    > "$wrapped"
  chmod +x "$wrapped"
  printf '%s\n' "$wrapped"
}

# check DESCRIPTION COMMAND...: runs COMMAND, counts it in passed or
# failed (which the sourcing script sets to 0 and reports)
check () {
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $what"; fi
}

# big-endian 32-bit integer, as IDX headers hold them
be32 () {
  printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"
}

# random_mnist_idx DIR N: N random 28x28 images (DIR/images.idx) and
# labels 0..9 in turn (DIR/labels.idx), MNIST-shaped IDX files
random_mnist_idx () {
  { printf '\x00\x00\x08\x03'; be32 "$2"; be32 28; be32 28
    head -c $(($2 * 784)) /dev/urandom; } > "$1/images.idx"
  { printf '\x00\x00\x08\x01'; be32 "$2"
    for i in $(seq 0 $(($2 - 1))); do printf "\\x$(printf %02x $((i % 10)))"; done
  } > "$1/labels.idx"
}
