#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Records what a real nntrainer produces for the project's models (see
# README.md beside this file): builds record.cc against an installed
# nntrainer and runs it, one process per stage and model, into OUTDIR.
#
#   record.sh NNTRAINER_PREFIX NNTRAINER_SRC [OUTDIR]
#
# NNTRAINER_PREFIX  where nntrainer (libnntrainer + ccapi) was installed
# NNTRAINER_SRC     its source tree: the commit is read from `git rev-parse
#                   HEAD` there, or from the file NNTRAINER_COMMIT in it
# OUTDIR            defaults to recordings/ beside this script; it is
#                   emptied first
#
# RECORD_ONLY="NAME..." records only those models (names as in the list
# below, e.g. a family model's file name without .ini) and merges them
# into OUTDIR: their files are replaced, their MANIFEST.txt lines (files
# and status) and record.log lines are replaced, everything else (the
# other models' files and lines, mlp_best, PROBES.txt) stays as it was.
#
# RECORD_SET=fp16 records only the models of models/fp16/ (mixed
# precision: model_tensor_type = FP16-FP16) into recordings_fp16/ (OUTDIR
# defaults to that), against an nntrainer built with -Denable-fp16=true:
# record.cc is compiled with -DENABLE_FP16=1, as nntrainer's own sources
# were; no mlp_best stage and no probes.
#
# Never run by CI or meson: CI only reads the files this writes.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 NNTRAINER_PREFIX NNTRAINER_SRC [OUTDIR]" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo_models=$(cd "$here/../../models" && pwd)
set_name=${RECORD_SET:-}
case $set_name in
  "") out=${3:-$here/recordings}; set_flags= ;;
  fp16) out=${3:-$here/recordings_fp16}; set_flags=-DENABLE_FP16=1 ;;
  *) echo "$0: RECORD_SET: unknown set '$set_name' (fp16)" >&2; exit 2 ;;
esac

# A model whose BIN after initialize is larger than this is run and listed
# in the manifest (sizes, sha256, weight order) but its BINs and outputs
# are not kept: the recordings are committed and must stay small.
max_bin=${RECORD_MAX_BIN:-300000}
# The same for the BIN train() writes through save_path (weights, and for
# Adam both moments of every trainable weight): kept up to this size only.
max_savepath=${RECORD_MAX_SAVEPATH:-150000}

if commit=$(git -C "$src" rev-parse HEAD 2>/dev/null); then :; else
  commit=$(cat "$src/NNTRAINER_COMMIT")
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

only=${RECORD_ONLY:-}
final_out=$out
if [ -n "$only" ]; then
  [ -d "$final_out" ] || { echo "$0: RECORD_ONLY needs an existing $final_out" >&2; exit 2; }
  out=$work/only_out
fi

# ---- build the recording program ----------------------------------------
pc=$(dirname "$(find "$prefix" -name ccapi-ml-training.pc | head -n 1)")
libdir=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir nntrainer)
cxx=${CXX:-c++}
# shellcheck disable=SC2046,SC2086
"$cxx" -std=c++17 -O2 -Wall $set_flags -o "$work/record" "$here/record.cc" \
  $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs ccapi-ml-training nntrainer) \
  -Wl,-rpath,"$libdir"

# ---- the models ------------------------------------------------------------
# name  INI
models="
branchy_bn            $repo_models/branchy_bn.ini
fmnist_cnn            $repo_models/fmnist_cnn.ini
fmnist_mlp            $repo_models/fmnist_mlp.ini
inception             $repo_models/inception.ini
resnet_bn             $repo_models/resnet_bn.ini
sensor_conv1d         $repo_models/sensor_conv1d.ini
sensor_gru            $repo_models/sensor_gru.ini
sensor_lstm           $repo_models/sensor_lstm.ini
transfer_frozen       $repo_models/transfer_frozen.ini
mlp_adam              $here/models/mlp_adam.ini
mlp_sgd               $here/models/mlp_sgd.ini
mlp_adamw             $here/models/mlp_adamw.ini
input_normalization   $here/models/input_normalization.ini
input_standardization $here/models/input_standardization.ini
branch3_fc            $here/models/branch3_fc.ini
"
# one model per layer family (README.md): appended after the models above,
# so that their files and manifest lines stay where they were
for ini in "$here"/models/families/*.ini; do
  models="$models$(basename "$ini" .ini) $ini
"
done
# RECORD_SET=fp16: the mixed-precision models instead
if [ "$set_name" = fp16 ]; then
  models=
  for ini in "$here"/models/fp16/*.ini; do
    models="$models$(basename "$ini" .ini) $ini
"
  done
fi

if [ -n "$only" ]; then
  models=$(echo "$models" | awk -v only=" $only " 'NF && index(only, " " $1 " ")')
  for n in $only; do
    echo "$models" | awk -v n="$n" '$1 == n { f = 1 } END { exit !f }' ||
      { echo "$0: RECORD_ONLY: no model named $n" >&2; exit 2; }
  done
fi

# Keys nntrainer refuses in our INIs, dropped from the copy it is given:
# model  section  key  reason
drops_file=$here/drops.txt

# copy INI to $2 without the dropped keys of model $3
sanitize() {
  awk -v model="$3" -v drops="$drops_file" '
    BEGIN {
      while ((getline line < drops) > 0) {
        if (line ~ /^[ \t]*(#|$)/) continue
        split(line, f, /[ \t]+/)
        if (f[1] == model) drop[tolower(f[2]) SUBSEP tolower(f[3])] = 1
      }
    }
    /^[ \t]*\[/ {
      sec = tolower($0); gsub(/^[ \t]*\[|\][ \t]*$/, "", sec)
    }
    {
      key = $0
      if (key ~ /=/) {
        sub(/=.*/, "", key); gsub(/[ \t]/, "", key)
        if ((sec SUBSEP tolower(key)) in drop) next
      }
      print
    }' "$1" > "$2"
}

rm -rf "$out"
mkdir -p "$out"
log=$out/record.log
: > "$log"
raw=$work/raw.txt
: > "$raw"

# A stage that nntrainer refuses (an exception: record exits 1 with its
# message), that it crashes in (a signal) or that hangs (killed after
# STAGE_TIMEOUT seconds) is written to the log and, as one line, to
# $d/failure.txt (the manifest's status line); the other models go on.
stage_timeout=${STAGE_TIMEOUT:-600}
run() { # model-dir args...: runs one stage; nntrainer logs into ./logs there
  local d=$1; shift
  local rc=0
  (cd "$d" && exec timeout -k 10 "$stage_timeout" "$work/record" "$@" \
    >> "$raw" 2> "$d/stderr.txt") || rc=$?
  if [ "$rc" -ne 0 ]; then
    local why
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      why="no answer after ${stage_timeout} s (killed)"
    elif [ "$rc" -gt 128 ]; then
      why="killed by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null || echo '?'))"
    else
      why="exit $rc: $(grep -v '^$' "$d/stderr.txt" | tail -n 1 | tr -d '\r')"
    fi
    echo "FAILED: record $* ($why)" | sed "s|$work/||g" | tee -a "$log" >&2
    sed 's/^/  stderr: /' "$d/stderr.txt" | tail -n 20 | tee -a "$log" >&2
    grep -h "ERROR" "$d"/logs/*.out 2>/dev/null | tail -n 5 | sed 's/^/  nntrainer log: /' | tee -a "$log" >&2
    echo "FAILED at stage $1${5:+ of }${5:+$(basename "$5")}: $why" | sed "s|$work/||g" > "$d/failure.txt"
    return 1
  fi
  grep -v "^$" "$d/stderr.txt" | sed "s|^|  stderr ($1 $4): |" >> "$log" || true
}

keep=$work/keep.txt
: > "$keep"
status=$work/status.txt
: > "$status"
echo "$models" | while read -r name ini; do
  [ -n "$name" ] || continue
  d=$work/$name
  mkdir -p "$d/files"
  sanitize "$ini" "$d/$name.ini" "$name"
  if ! cmp -s "$ini" "$d/$name.ini"; then
    cp "$d/$name.ini" "$d/files/$name.nntrainer.ini"
  fi
  f=$d/files
  # each stage needs the one before; what was recorded before a failure is
  # kept (the failure is the model's status line in the manifest)
  run "$d" init "$d/$name.ini" "$f" "$name" &&
    run "$d" infer "$d/$name.ini" "$f" "$name" "$f/$name.init.bin" init 4 1 &&
    run "$d" train "$d/$name.ini" "$f" "$name" "$f/$name.init.bin" &&
    run "$d" infer "$d/$name.ini" "$f" "$name" "$f/$name.trained.bin" trained 4 ||
    true
  if [ -f "$d/failure.txt" ]; then
    echo "$name $(cat "$d/failure.txt")" >> "$status"
  else
    echo "$name recorded: init, infer, train, infer" >> "$status"
  fi
  [ -f "$f/$name.init.bin" ] || continue
  size=$(stat -c %s "$f/$name.init.bin")
  if [ "$size" -le "$max_bin" ]; then
    echo "$name all" >> "$keep"
  else
    echo "$name order" >> "$keep"
    echo "$name: init BIN is $size bytes > $max_bin: only its weight order is kept" >> "$log"
  fi
done

# ---- save_best_path: which validation results make train() save, and where
# models/mlp_best.ini names a relative save_best_path; the stage runs one
# level below the INI's folder, so the file shows which one it is relative to
# (not with RECORD_ONLY)
d=$work/mlp_best
if [ -z "$only" ] && [ -z "$set_name" ]; then
mkdir -p "$d/files" "$d/run"
cp "$here/models/mlp_best.ini" "$d/"
if (cd "$d/run" && "$work/record" best "$d/mlp_best.ini" "$d/files" mlp_best >> "$raw" 2> "$d/stderr.txt"); then
  echo "mlp_best all" >> "$keep"
else
  echo "FAILED: record best mlp_best" | tee -a "$log" >&2
  sed 's/^/  stderr: /' "$d/stderr.txt" | tee -a "$log" >&2
fi
fi

# ---- keep the files and write the manifest -----------------------------------
grep -v "^FILE" "$raw" | tr '\r' '\n' |
  grep -E "^(init|infer|train|probe|best|epoch|save_best_path) " >> "$log" || true

manifest=$out/MANIFEST.txt
{
  echo "# Recordings of a real nntrainer, made by record.sh (see README.md)."
  echo "nntrainer_commit $commit"
  echo "nntrainer_version $(PKG_CONFIG_PATH=$pc pkg-config --modversion nntrainer)"
  echo "compiler $("$cxx" --version | head -n 1)"
  echo "libstdc++ $(dpkg-query -W -f '${Version}' libstdc++6 2>/dev/null || echo unknown)"
  echo "host $(uname -m)"
  echo "max_bin_kept $max_bin (init/trained BIN; larger: only the weight order is committed)"
  echo "max_savepath_kept $max_savepath"
  echo "#"
  echo "# one line per file, fields separated by ' | ':"
  echo "# file | model | shape (batch:c:h:w, float32 LE) | bytes | sha256 | committed | meaning"
} > "$manifest"

# later lines for the same file win (input.f32 is written by both infers)
grep "^FILE" "$raw" | awk -F '\t' '{ line[$2] = $0; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
  END { for (i = 0; i < n; i++) print line[order[i]] }' |
while IFS=$'\t' read -r _ file model shape meaning; do
  path=$work/$model/files/$file
  [ -f "$path" ] || continue
  bytes=$(stat -c %s "$path")
  sum=$(sha256sum "$path" | cut -d ' ' -f 1)
  policy=$(awk -v m="$model" '$1 == m { print $2 }' "$keep")
  committed=no
  if [[ "$file" == *.order.txt ]]; then
    committed=yes
  elif [ "$policy" = all ]; then
    if [[ "$file" != *.savepath.bin ]] || [ "$bytes" -le "$max_savepath" ]; then
      committed=yes
    fi
  fi
  if [ "$committed" = yes ]; then
    cp "$path" "$out/$file"
  fi
  printf '%s | %s | %s | %s | %s | %s | %s\n' "$file" "$model" "$shape" "$bytes" \
    "$sum" "$committed" "$meaning" >> "$manifest"
done

for n in $(awk '{ print $1 }' "$keep"); do
  if [ -f "$work/$n/files/$n.nntrainer.ini" ]; then
    cp "$work/$n/files/$n.nntrainer.ini" "$out/"
    printf '%s | %s | %s | %s | %s | %s | %s\n' "$n.nntrainer.ini" "$n" "text" \
      "$(stat -c %s "$out/$n.nntrainer.ini")" \
      "$(sha256sum "$out/$n.nntrainer.ini" | cut -d ' ' -f 1)" yes \
      "the INI nntrainer was given (drops.txt applied)" >> "$manifest"
  fi
done

{
  echo "#"
  echo "# per model: the stages nntrainer went through, or where it failed (the"
  echo "# files of the stages before a failure are listed above):"
  echo "# status | model | result"
  awk '{ n = $1; $1 = ""; sub(/^ /, ""); print "status | " n " | " $0 }' "$status"
} >> "$manifest"

# ---- RECORD_ONLY: merge into the existing recordings, and stop -------------
if [ -n "$only" ]; then
  sed -i 's/[[:blank:]]*$//' "$log"
  for f in "$out"/*; do
    case $(basename "$f") in
      MANIFEST.txt | record.log) ;;
      *) cp "$f" "$final_out/" ;;
    esac
  done
  # MANIFEST.txt: the old file lines but those of the models, the new
  # ones, then the old status lines but theirs, and the new ones
  awk -v only=" $only " '
    function ours(model) { return index(only, " " model " ") > 0 }
    BEGIN { FS = " [|] " }
    FNR == NR {
      if ($0 ~ /^status [|] /) st[++ns] = $0
      else if ($0 !~ /^#/ && NF >= 7) fl[++nf] = $0
      next
    }
    /^#$/ && !done {
      getline next_line
      if (next_line ~ /^# per model/) {
        for (i = 1; i <= nf; i++) print fl[i]
        done = 1
      }
      print
      print next_line
      next
    }
    /^status [|] / && ours($2) { next }
    $0 !~ /^#/ && NF >= 7 && ours($2) { next }
    { print }
    END { for (i = 1; i <= ns; i++) print st[i] }' \
    "$manifest" "$final_out/MANIFEST.txt" > "$work/manifest.merged"
  mv "$work/manifest.merged" "$final_out/MANIFEST.txt"
  # record.log: the old lines but those naming the models, then the new
  awk -v only=" $only " '{
      n = split($0, w, /[ ():]+/)
      for (i = 1; i <= n; i++) if (w[i] != "" && index(only, " " w[i] " ")) next
      print
    }' "$final_out/record.log" > "$work/log.merged"
  cat "$log" >> "$work/log.merged"
  mv "$work/log.merged" "$final_out/record.log"
  echo "recorded $only into $final_out"
  exit 0
fi

# ---- RECORD_SET: no probes --------------------------------------------------
if [ -n "$set_name" ]; then
  sed -i 's/[[:blank:]]*$//' "$log"
  echo "recorded the $set_name set into $out ($(du -sb "$out" | cut -f 1) bytes)"
  exit 0
fi

# ---- probes: which INI keys and sections this nntrainer accepts ------------
# Each probes/*.ini (but backbone_part.ini, which backbone_ini.ini includes)
# goes through the init stage (loadFromConfig, compile, initialize(TRAIN),
# save) with the working directory one level below the INI, so that a
# relative path that nntrainer resolves against the working directory
# instead of the INI's folder shows.
pw=$work/probes
mkdir -p "$pw/run"
cp "$here"/probes/*.ini "$pw/"
sed -i "s|PROBE_DIR|$pw|g" "$pw"/*.ini
# 2 samples of 4 inputs and 2 one-hot labels, float32
printf '%s\n' 0.1 0.2 0.3 0.4 1 0 0.5 0.6 0.7 0.8 0 1 |
  perl -ne 'print pack("f<", $_)' > "$pw/probe_data.dat"
probes=$out/PROBES.txt
{
  echo "# For each probes/NAME.ini: accepted (with what the init stage wrote)"
  echo "# or refused (with our program's error and nntrainer's last ERROR log"
  echo "# lines). nntrainer commit $commit."
} > "$probes"
for ini in "$pw"/*.ini; do
  name=$(basename "$ini" .ini)
  [ "$name" != backbone_part ] || continue
  rm -rf "$pw/run/logs"
  if (cd "$pw/run" && "$work/record" init "$ini" . "$name" > "$pw/run/out.txt" 2> "$pw/run/err.txt"); then
    bin=$(grep -P "^FILE\t$name.init.bin" "$pw/run/out.txt" | cut -f 5)
    layers=$(awk '/^layer/ { l = $3 } /^  weight/ { w[l] = 1 } /^layer/ { order[n++] = $3 }
      END { for (i = 0; i < n; i++) if (order[i] in w) printf "%s ", order[i] }' "$pw/run/$name.order.txt")
    echo "$name: accepted; weighted layers in BIN order: ${layers% }; $bin" >> "$probes"
  else
    why=$(tr '\n' ' ' < "$pw/run/err.txt")
    nlog=$(grep -h "ERROR" "$pw"/run/logs/*.out 2>/dev/null | tail -n 3 |
      sed -e 's/^\[NNTRAINER [A-Z]* [^]]*\] //' -e "s|$pw|PROBE_DIR|g" \
        -e "s|$src/||g" | tr '\n' ' ' || true)
    echo "$name: refused: ${why% }; nntrainer log: ${nlog% }" >> "$probes"
  fi
done

# the repository's style: no trailing blanks
sed -i 's/[[:blank:]]*$//' "$probes" "$log"

echo "recorded into $out ($(du -sb "$out" | cut -f 1) bytes)"
