# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the scripts in pipelines/ (after setting $top): one dependency
# step, one build step and one element check for all of them, so that each
# runs on a fresh Debian 12 machine and fails at once, saying what is
# missing, rather than in the middle of a pipeline (a gst-launch
# description naming an element that is not installed builds no pipeline
# or, with tt-launch before it failed on parse errors, one that never
# prerolled).
#
#   tt_setup [PACKAGE...]   installs the project's Debian packages and these
#       (scripts/ensure-deps.sh); then builds build/ (scripts/build.sh),
#       unless TT_BUILD_DIR names a build folder that is already built,
#       used as it is (the smoke tests run inside `meson test`, which must
#       not see its build folder rebuilt under it). Sets $build and adds
#       $build/gst to GST_PLUGIN_PATH.
#   tt_need ELEMENT:PACKAGE...   fails unless each GStreamer element can
#       be found, naming every missing one and the Debian package that has
#       it ("project": the plugin built here).
#   tt_need_command COMMAND:PACKAGE...   the same for programs.
#
# QUICK=1 (each script documents its own figures) runs a short
# configuration: one epoch of a few hundred samples, for the smoke tests
# (tests/pipelines/) and a first try.

# shellcheck disable=SC2154  # $top: set by the script that sources this
tt_setup () {
  # one dependency step at a time: apt-get and dpkg take a lock of their
  # own and fail, not wait, when two scripts install at once
  flock "${TMPDIR:-/tmp}/tensor-trainer-ensure-deps.lock" \
    "$top/scripts/ensure-deps.sh" "$@"
  if [ -n "${TT_BUILD_DIR:-}" ]; then
    build=$(cd "$TT_BUILD_DIR" 2>/dev/null && pwd) || build=$TT_BUILD_DIR
    if [ ! -x "$build/tools/tt-launch" ] || [ ! -x "$build/tools/tensor-trainer" ]; then
      echo "error: TT_BUILD_DIR=$TT_BUILD_DIR is not a built build folder" \
        "(no tools/tt-launch, tools/tensor-trainer)" >&2
      exit 1
    fi
  else
    build=$top/build
    "$top/scripts/build.sh" "$build"
  fi
  export GST_PLUGIN_PATH="$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
}

tt_need () {
  local item element package missing=0
  for item in "$@"; do
    element=${item%%:*} package=${item#*:}
    # by name: Debian's gst-inspect-1.0 --exists is unreliable
    gst-inspect-1.0 "$element" >/dev/null 2>&1 && continue
    if [ "$package" = project ]; then
      echo "error: GStreamer element $element is missing: it is built" \
        "here, in $build/gst (a failed build, or the plugin does not load:" \
        "gst-inspect-1.0 $build/gst/libgsttensortrainer.so says why)" >&2
    else
      echo "error: GStreamer element $element is missing: install the" \
        "Debian package $package" >&2
    fi
    missing=1
  done
  [ "$missing" -eq 0 ] || exit 1
}

tt_need_command () {
  local item missing=0
  for item in "$@"; do
    command -v "${item%%:*}" >/dev/null && continue
    echo "error: program ${item%%:*} is missing: install the Debian" \
      "package ${item#*:}" >&2
    missing=1
  done
  [ "$missing" -eq 0 ] || exit 1
}
