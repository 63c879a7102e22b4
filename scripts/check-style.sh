#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The code style the project follows, checked: GStreamer's (its
# gst-indent script: GNU indent with the options below, run twice since
# indent is not idempotent in one pass) on every .c file (as GStreamer's
# own pre-commit hook: indent reads headers' extern "C" blocks and
# declaration lists poorly), and the
# whitespace rules of .editorconfig on every text file (no trailing
# blanks, a final newline, no tabs but in a Makefile's recipes, LF).
# Code that indent would mangle (pragmas spelled as macros) sits between
# /* *INDENT-OFF* */ and /* *INDENT-ON* */.
#
# Usage: scripts/check-style.sh [--fix] [FILE...]
#   --fix rewrites the files; FILEs (paths from the top of the tree) limit
#   the check to them, so that several people can fix their own files in
#   one work tree
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
fix=0
[ "${1:-}" = --fix ] && { fix=1; shift; }
if ! command -v indent >/dev/null; then
  "$top/scripts/ensure-deps.sh" indent || exit 1
fi

gst_indent_options=(--braces-on-if-line --case-brace-indentation0
  --case-indentation2 --braces-after-struct-decl-line --line-length80
  --no-tabs --cuddle-else --dont-line-up-parentheses
  --continuation-indentation4 --honour-newlines --tab-size8 --indent-level2
  --leave-preprocessor-space)
gst_indent () {
  indent "${gst_indent_options[@]}" -st "$1" |
    indent "${gst_indent_options[@]}" -st -
}

bad=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
while IFS= read -r f; do
  case $f in
    *.c)
      if ! gst_indent "$f" > "$tmp" 2>/dev/null; then
        echo "$f: indent failed"; bad=$((bad + 1)); continue
      fi
      if ! cmp -s "$f" "$tmp"; then
        if [ $fix -eq 1 ]; then cat "$tmp" > "$f"; echo "fixed $f"
        else
          echo "$f: not in GStreamer's indent style:"
          diff -u "$f" "$tmp" | sed -n '3,20p'
          bad=$((bad + 1))
        fi
      fi ;;
  esac
  # fuzz inputs are malformed on purpose; recordings of other programs'
  # files stay as those wrote them; binary files have no lines
  case $f in
    tests/fuzz/corpus/* | tests/fuzz/regressions/*) continue ;;
    tests/gst/data/nns-*) continue ;;
    *.f32 | *.bin | *.idx | *.ttb | *.gz | *.hdr | *.png) continue ;;
  esac
  [ -s "$f" ] && ! grep -Iq . "$f" && continue
  if grep -q $'\r' "$f"; then echo "$f: CR line endings"; bad=$((bad + 1)); fi
  if grep -qn '[[:blank:]]$' "$f"; then
    echo "$f: trailing blanks at line(s)" \
      "$(grep -n '[[:blank:]]$' "$f" | cut -d: -f1 | head -5 | tr '\n' ' ')"
    bad=$((bad + 1))
  fi
  if [ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ]; then
    echo "$f: no newline at the end"; bad=$((bad + 1))
  fi
  case $f in
    *Makefile* | *.mk) ;;
    *) if grep -q $'\t' "$f"; then
         echo "$f: tab characters"; bad=$((bad + 1))
       fi ;;
  esac
done < <(if [ $# -gt 0 ]; then printf '%s\n' "$@"
         else git ls-files | grep -v -E '^subprojects/packagecache/'; fi)
if [ $bad -ne 0 ]; then
  echo "style: $bad problem(s)"
  exit 1
fi
echo "style: every file follows it"
