#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Embedded export: packs a small model (tests/models/branchy_bn.ini) into a
# bundle, exports it with `tensor-trainer export` by both routes (.incbin
# assembly, C array), compiles tests/unit/export_prog.c against each blob
# and the engine's static library, runs it (the model opened from the
# linked symbol, copied and in place, evaluates exactly as from the file),
# and checks with readelf and objdump that the section name and alignment
# asked for are the ones in the object and in the program, read-only.
# A compressed bundle is exported and linked too (copied into the pool).
#
# usage: test_export.sh TENSOR_TRAINER SOURCE_ROOT LIBTTENGINE_A CC \
#            CFLAGS LIBS     (CC, CFLAGS and LIBS are word-split)
set -uo pipefail
cli=$1 src=$2 lib=$3 cc=$4 cflags=$5 libs=$6
passed=0 failed=0
for tool in readelf objdump; do
  command -v $tool >/dev/null || { echo "$tool missing: skipped"; exit 77; }
done
tmp=$(mktemp -d /tmp/tt-export-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/script_lib.sh"
cli=$(target_exe "$cli" "$tmp")
model=$src/tests/models/branchy_bn.ini

"$cli" pack "$model" -o "$tmp/model.ttb" --seed 5 >/dev/null ||
  { echo "pack failed"; exit 1; }
"$cli" pack "$model" -o "$tmp/model_z.ttb" --seed 5 --compress >/dev/null ||
  { echo "pack --compress failed"; exit 1; }
size=$(stat -c %s "$tmp/model.ttb")
size_z=$(stat -c %s "$tmp/model_z.ttb")

# section NAME ALIGN SIZE FILE: the section is in FILE with that alignment
# and size, allocated and neither writable nor executable
section () {
  local name=$1 align=$2 bytes=$3 file=$4 line
  line=$(readelf -SW "$file" | sed -n 's/^ *\[ *[0-9]*\] //p' |
    awk -v n="$name" '$1 == n')
  if [ -z "$line" ]; then echo "  $file: no section $name"; return 1; fi
  set -- $line
  local got_size=$((16#$5)) flags=$7 got_align=${10}
  echo "  readelf $(basename "$file"): $name size=$got_size flags=$flags align=$got_align"
  [ "$got_size" -eq "$bytes" ] && [ "$got_align" -eq "$align" ] &&
    [[ $flags == *A* ]] && [[ $flags != *W* ]] && [[ $flags != *X* ]]
}
# objdump -h says the same (alignment as 2**k)
objdump_align () {
  local name=$1 align=$2 file=$3 k=0 a=1
  while [ $a -lt "$align" ]; do a=$((a * 2)); k=$((k + 1)); done
  objdump -h "$file" | awk -v n="$name" -v w="2**$k" \
    '$2 == n && $7 == w { found = 1 } END { exit !found }'
}

# symbol_aligned SYMBOL ALIGN FILE
symbol_aligned () {
  local addr
  addr=$(nm "$3" | awk -v s="$1" '$3 == s { print $1 }')
  echo "  nm $(basename "$3"): $1 at 0x$addr"
  [ -n "$addr" ] && [ $((16#$addr % $2)) -eq 0 ]
}

# route FORMAT SECTION ALIGN BUNDLE MODE
route () {
  local format=$1 sect=$2 align=$3 bundle=$4 mode=$5
  local dir=$tmp/$format-$(basename "$bundle" .ttb) bytes
  bytes=$(stat -c %s "$bundle")
  echo "== $format, section $sect, align $align, $(basename "$bundle") ($bytes bytes), $mode"
  check "$format: export" "$cli" export "$bundle" --c-out "$dir" \
    --format "$format" --section "$sect" --align "$align" --symbol tt_blob
  local blob=$dir/tt_blob.S
  [ "$format" = c ] && blob=$dir/tt_blob.c
  check "$format: header written" test -s "$dir/tt_blob.h"
  check "$format: blob source written" test -s "$blob"
  check "$format: compile the blob" $cc $cflags -c "$blob" -I "$dir" \
    -o "$dir/blob.o"
  check "$format: object section" section "$sect" "$align" "$bytes" \
    "$dir/blob.o"
  check "$format: objdump alignment" objdump_align "$sect" "$align" \
    "$dir/blob.o"
  check "$format: build the program" $cc $cflags -std=c11 -D_GNU_SOURCE \
    -I "$src/ext/engine/include/tensor-trainer" -I "$src/tests/unit" -I "$dir" \
    "$src/tests/unit/export_prog.c" "$dir/blob.o" "$lib" $libs \
    -o "$dir/prog"
  # the linker folds .rodata.* into .rodata; other names stay sections
  if [[ $sect == .rodata.* ]]; then
    check "$format: symbol aligned in the program" symbol_aligned tt_blob \
      "$align" "$dir/prog"
  else
    check "$format: program section" section "$sect" "$align" "$bytes" \
      "$dir/prog"
  fi
  local out
  out=$("$(target_exe "$dir/prog" "$dir")" "$bundle" "$align" "$mode")
  local rc=$?
  echo "$out" | sed 's/^/  /'
  check "$format: the program ran clean" test $rc -eq 0
  check "$format: the program's checks" grep -q '^[0-9]* passed, 0 failed' \
    <<<"$out"
}

route asm .tt_weights 4096 "$tmp/model.ttb" inplace
route c .tt_model_c 256 "$tmp/model.ttb" inplace
route asm .rodata.tt_blob_z 64 "$tmp/model_z.ttb" copy
route c .rodata.tt_blob_z 64 "$tmp/model_z.ttb" copy

# the defaults: .rodata.<symbol>, aligned to 64 (the bundle's alignment)
"$cli" export "$tmp/model.ttb" --c-out "$tmp/defaults" >/dev/null
check "defaults: assemble" $cc $cflags -c "$tmp/defaults/model.S" \
  -o "$tmp/defaults/model.o"
check "defaults: .rodata.model aligned to 64" section .rodata.model 64 \
  "$size" "$tmp/defaults/model.o"
check "defaults: model_size symbol" sh -c \
  "nm '$tmp/defaults/model.o' | grep -q ' R model_size\$'"
# a page-aligned bundle exports page-aligned by default
"$cli" pack "$model" -o "$tmp/page.ttb" --align 4096 >/dev/null
"$cli" export "$tmp/page.ttb" --c-out "$tmp/page" --format c >/dev/null
check "page bundle: compile" $cc $cflags -c "$tmp/page/page.c" \
  -I "$tmp/page" -o "$tmp/page/page.o"
check "page bundle: aligned to 4096 by default" section .rodata.page 4096 \
  "$(stat -c %s "$tmp/page.ttb")" "$tmp/page/page.o"
# refusals
check "a damaged bundle is not exported" sh -c \
  "cp '$tmp/model.ttb' '$tmp/bad.ttb' && printf 'X' | dd of='$tmp/bad.ttb' \
   bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null && \
   ! '$cli' export '$tmp/bad.ttb' --c-out '$tmp/bad' 2>/dev/null"
check "a bad symbol is refused" sh -c \
  "! '$cli' export '$tmp/model.ttb' --c-out '$tmp/x' --symbol 9x 2>/dev/null"
check "a bad section is refused" sh -c \
  "! '$cli' export '$tmp/model.ttb' --c-out '$tmp/x' --section 'a\"b' 2>/dev/null"
check "a bad alignment is refused" sh -c \
  "! '$cli' export '$tmp/model.ttb' --c-out '$tmp/x' --align 48 2>/dev/null"
check "a bad format is refused" sh -c \
  "! '$cli' export '$tmp/model.ttb' --c-out '$tmp/x' --format obj 2>/dev/null"
echo "bundle sizes: $size bytes, $size_z compressed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
