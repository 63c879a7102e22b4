#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# This plugin's elements against a real nnstreamer (2.7, built from its
# public source; Debian does not package it), one row of a table each:
#
#   a  videotestsrc ! tensor_converter ! tensor_transform ! tensor_mux !
#      tensor_trainer (ours): 8x8 frames in, a label cut out of the same
#      frame by a second branch; it must learn
#   b  other label types (int32, float32 indices; uint8 is row a) and
#      flexible tensors (from tensor_transform, from tensor_converter):
#      the same training, so the same figures, as row a
#   c  files of nnstreamer's datareposink (static, flexible) read by our
#      tensor_datasrc and by nnstreamer's datareposrc, into our trainer
#   d  our tensor_datasrc ! datareposink: the bytes of the IDX files;
#      read back by both sources, the same bytes
#   e  nnstreamer's documented launch line (datareposrc ! tensor_trainer
#      framework=nntrainer model-config=mnist.ini ... ! tensor_sink) with
#      our tensor_trainer, unchanged
#   f  tensor_predictor (ours) ! tensor_decoder mode=image_labeling
#   unittest_trainer.*  nnstreamer's own unittest_trainer (gtest), each
#      case in a process of its own, against our tensor_trainer
#   subplugin-*  the nnstreamer sub-plugins of gst/nnstreamer/
#      (framework=tensor-trainer) in nnstreamer's own elements: row e's
#      line and row a's training (the BIN of row a, byte for byte) in its
#      tensor_trainer, row a's model in its tensor_filter (our
#      tensor_predictor's outputs, bit for bit); SKIP when not built
#
# Usage: tests/interop/nnstreamer.sh [NNSTREAMER_BUILD_DIR [OUT_DIR]]
#   NNSTREAMER_BUILD_DIR: nnstreamer's meson build folder (its plugins in
#   gst/, sub-plugins in ext/, tests/unittest_trainer, nnstreamer-test.ini;
#   not an install prefix); empty or absent: $NNSTREAMER_BUILD_DIR.
#   Without one the script exits 77 (a skip), saying why; with one that is
#   not a build, 1.
#   OUT_DIR: where the files go (default: a new folder under $TMPDIR); it
#   is emptied first (when it is a former run's; any other folder that is
#   not empty is refused).
# Environment: TT_BUILD_DIR, this project's build folder (default: build/
#   at the top of the tree): its gst/libgsttensortrainer.so and, when
#   built, gst/nnstreamer/libnnstreamer_{trainer,filter}_tensor-trainer.so.
#   NNSTREAMER_SOURCE_ROOT_PATH: nnstreamer's source tree (default: the
#   one the build folder was configured from); rows e and unittest_trainer
#   read its tests/test_models/data/datarepo/mnist.{data,json,ini}.
#   TIMEOUT: seconds per command (default 120).
#
# Both plugins register an element named tensor_trainer; GStreamer's
# registry keeps one feature per name, and the plugin whose plugin_init ran
# LAST owns it: loading nnstreamer's plugin (for tensor_converter, say)
# re-registers its tensor_trainer over ours, whatever the registry file or
# GST_PLUGIN_PATH's order said. So rows that need OUR tensor_trainer next
# to nnstreamer's elements preload both plugins at gst_init
# (--gst-plugin-load, which gst-launch-1.0 and unittest_trainer's gst_init
# take), in the order that leaves ours last; the order is found, not
# assumed (GStreamer 1.22 loads the list last-first): gst-inspect-1.0
# must name our file. Rows that need nnstreamer's tensor_trainer do not
# put our plugin in the path at all. Every configuration has a registry
# file of its own, made fresh in OUT_DIR, and no system plugin folder but
# GStreamer's own (no other nnstreamer is picked up).
#
# Prints a line per row as it ends, then the table; exit status 0 when
# every row passes, 1 when one fails, 77 when none fails but some were
# skipped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
data=$here/nnstreamer
limit=${TIMEOUT:-120}

nns=${1:-${NNSTREAMER_BUILD_DIR:-}}
if [ -z "$nns" ]; then
  echo "SKIP: no nnstreamer build: give its build folder as the argument" \
    "or in NNSTREAMER_BUILD_DIR"
  exit 77
fi
if [ ! -f "$nns/gst/nnstreamer/libnnstreamer.so" ]; then
  echo "FAIL: $nns is not a built nnstreamer build folder" \
    "(no gst/nnstreamer/libnnstreamer.so)"
  exit 1
fi
nns=$(cd "$nns" && pwd)
tt=${TT_BUILD_DIR:-$top/build}
tt=$(cd "$tt" 2>/dev/null && pwd) || {
  echo "FAIL: TT_BUILD_DIR ${TT_BUILD_DIR:-$top/build} is not a folder"
  exit 1
}
ours_so=$tt/gst/libgsttensortrainer.so
nns_so=$nns/gst/nnstreamer/libnnstreamer.so
sub_dir=$tt/gst/nnstreamer
sub_trainer=$sub_dir/libnnstreamer_trainer_tensor-trainer.so
sub_filter=$sub_dir/libnnstreamer_filter_tensor-trainer.so

out=${2:-}
if [ -z "$out" ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/nnstreamer-interop.XXXXXX") || exit 1
else
  # (emptied only when it is empty or a former run's)
  if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] &&
      [ ! -e "$out/.nnstreamer-interop" ]; then
    echo "FAIL: $out is not empty and not a former run's folder"
    exit 1
  fi
  rm -rf "$out" && mkdir -p "$out" || exit 1
  out=$(cd "$out" && pwd)
fi
: > "$out/.nnstreamer-interop"

nns_src=${NNSTREAMER_SOURCE_ROOT_PATH:-}
if [ -z "$nns_src" ] && [ -f "$nns/meson-info/meson-info.json" ]; then
  nns_src=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["directories"]["source"])' \
    "$nns/meson-info/meson-info.json" 2>/dev/null)
fi
repo=${nns_src:-/nonexistent}/tests/test_models/data/datarepo

# GStreamer's own plugin folder (videotestsrc, tee, queue, filesink;
# videocrop from gst-plugins-good), and only it
sysdir=$(pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null)
if [ ! -f "$sysdir/libgstcoreelements.so" ]; then
  sysdir=
  for d in /usr/lib/*/gstreamer-1.0 /usr/lib64/gstreamer-1.0 \
      /usr/lib/gstreamer-1.0; do
    [ -f "$d/libgstcoreelements.so" ] && { sysdir=$d; break; }
  done
fi

# --- the table
names=() states=() reasons=()
row () {
  names+=("$1") states+=("$2") reasons+=("$3")
  printf '%-50s %-4s  %s\n' "$1" "$2" "$3"
}
# the first error line of a log, shortened
why () {
  local line
  line=$(grep -m1 -E '^ERROR|erroneous pipeline|CRITICAL|^FAIL' "$1" |
    tr -s ' \t' ' ' | cut -c1-200)
  [ -n "$line" ] || line=$(grep -v '^$' "$1" | tail -n 1 | cut -c1-200)
  printf '%s' "$line"
}

# --- two configurations: ours and nnstreamer's tensor_trainer
unset GST_PLUGIN_PATH GST_PLUGIN_PATH_1_0 GST_PLUGIN_SYSTEM_PATH \
  GST_REGISTRY GST_REGISTRY_1_0 GST_DEBUG GST_DEBUG_FILE \
  NNSTREAMER_FILTERS NNSTREAMER_TRAINERS NNSTREAMER_DECODERS \
  NNSTREAMER_CONVERTERS
export GST_PLUGIN_SYSTEM_PATH_1_0=$sysdir GST_DEBUG_NO_COLOR=1
export NNSTREAMER_CONF=$nns/nnstreamer-test.ini
export NNSTREAMER_DECODERS=$nns/ext/nnstreamer/tensor_decoder
export NNSTREAMER_SOURCE_ROOT_PATH=${nns_src:-}
env_ours=(GST_REGISTRY_1_0="$out/registry-ours.bin"
  GST_PLUGIN_PATH_1_0="$nns/gst:$tt/gst")
env_nns=(GST_REGISTRY_1_0="$out/registry-nns.bin"
  GST_PLUGIN_PATH_1_0="$nns/gst"
  NNSTREAMER_TRAINERS="$sub_dir" NNSTREAMER_FILTERS="$sub_dir")
preload=()

# LOG ARGS...: gst-launch-1.0 -v with our tensor_trainer
launch_ours () {
  local log=$1; shift
  env "${env_ours[@]}" timeout -k 5 "$limit" \
    gst-launch-1.0 "${preload[@]}" -v "$@" > "$log" 2>&1
}
# LOG ARGS...: gst-launch-1.0 -v with nnstreamer's tensor_trainer
launch_nns () {
  local log=$1; shift
  env "${env_nns[@]}" timeout -k 5 "$limit" \
    gst-launch-1.0 -v "$@" > "$log" 2>&1
}

# ENV_ARRAY [OPTION]: the file of the plugin that owns tensor_trainer
owner_file () {
  local -n e=$1; shift
  env "${e[@]}" timeout -k 5 "$limit" \
    gst-inspect-1.0 "$@" tensor_trainer 2>/dev/null |
    awk '$1 == "Filename" { print $2 }'
}

prereq=ok
if [ -z "$sysdir" ]; then
  row setup FAIL "GStreamer's plugin folder (libgstcoreelements.so) not found"
  prereq=no
fi
if [ ! -f "$ours_so" ]; then
  row setup FAIL "no $ours_so: build this project (TT_BUILD_DIR=$tt)"
  prereq=no
fi

if [ "$prereq" = ok ]; then
  # our tensor_trainer: the preload order that leaves ours registered
  for order in ours,nnstreamer nnstreamer,ours; do
    case $order in
      ours,*) list=$ours_so,$nns_so ;;
      *) list=$nns_so,$ours_so ;;
    esac
    f=$(owner_file env_ours --gst-plugin-load="$list")
    if [ "$f" -ef "$ours_so" ]; then
      preload=(--gst-plugin-load="$list")
      break
    fi
  done
  plain=$(owner_file env_ours)
  if [ ${#preload[@]} -gt 0 ]; then
    row select-ours PASS "ours with --gst-plugin-load=$order (without a\
 preload: ${plain##*/})"
  else
    row select-ours FAIL "neither preload order gives our tensor_trainer\
 (gst-inspect-1.0 names ${f:-nothing})"
    prereq=no
  fi
  f=$(owner_file env_nns)
  if [ "$f" -ef "$nns_so" ]; then
    row select-nns PASS "tensor_trainer is nnstreamer's\
 (GST_PLUGIN_PATH without ours)"
  else
    row select-nns FAIL "gst-inspect-1.0 names ${f:-nothing}, not $nns_so"
  fi
fi

# --- helpers for the rows
# FILE EPOCHS: per-epoch figures of tensor_trainer (float64 loss, accuracy,
# validation loss, validation accuracy per buffer): it learnt (the last 3
# epochs' accuracies at least 0.8 and the loss at most half the first);
# prints a summary or why not
learnt () {
  python3 - "$1" "$2" <<'EOF'
import math, struct, sys
d = open(sys.argv[1], "rb").read()
want = int(sys.argv[2])
rows = [struct.unpack_from("<4d", d, i) for i in range(0, len(d) // 32 * 32, 32)]
if len(rows) != want or len(d) % 32:
    print("%d bytes of figures: not %d epochs" % (len(d), want)); sys.exit(1)
if not all(math.isfinite(x) for r in rows for x in r):
    print("figures not finite: %s" % (rows,)); sys.exit(1)
ta = sum(r[1] for r in rows[-3:]) / 3
va = sum(r[3] for r in rows[-3:]) / 3
s = ("%d epochs: loss %.3f -> %.3f, accuracy %.3f -> %.3f, validation"
     " %.2f -> %.2f" % (want, rows[0][0], rows[-1][0], rows[0][1],
                        rows[-1][1], rows[0][3], rows[-1][3]))
if ta < 0.8 or va < 0.8 or rows[-1][0] > rows[0][0] / 2:
    print("did not learn: " + s); sys.exit(1)
print(s)
EOF
}
# LOG ELEMENT-TYPE: the caps negotiated on the sink pad of the element
# named tt (gst-launch-1.0 -v)
tt_caps () {
  grep -m1 -E "/$2:tt\.GstPad:sink: caps = " "$1" | sed 's/.*caps = //'
}

pix_ini=$data/pixel.ini
trainer=(tensor_trainer name=tt model-config="$pix_ini" num-inputs=1
  num-labels=1 num-training-samples=200 num-validation-samples=50 epochs=10)
# C1 T1 C2 T2: 2500 frames of 8x8 noise; inputs: the frame as float32 in
# [0, 1]; label: its top-left pixel >= 128 (uint8 0 or 1), both through
# tensor_mux. C1 and T1 are an element (or "") after the inputs'
# tensor_converter and tensor_transform, C2 and T2 the same for the label
pixel_src () {
  local c1=() t1=() c2=() t2=()
  [ -n "$1" ] && read -r -a c1 <<< "$1 !"
  [ -n "$2" ] && read -r -a t1 <<< "$2 !"
  [ -n "$3" ] && read -r -a c2 <<< "$3 !"
  [ -n "$4" ] && read -r -a t2 <<< "$4 !"
  # shellcheck disable=SC2054 # (the commas are caps')
  src=(videotestsrc pattern=snow num-buffers=2500
    ! video/x-raw,format=GRAY8,width=8,height=8,framerate=30/1 ! tee name=t
    t. ! queue ! tensor_converter ! "${c1[@]}"
    tensor_transform mode=arithmetic option=typecast:float32,div:255
    ! "${t1[@]}" mux.sink_0
    t. ! queue ! videocrop right=7 bottom=7 ! tensor_converter
    ! "${c2[@]}" tensor_transform mode=arithmetic option=div:128
    ! "${t2[@]}" mux.sink_1 tensor_mux name=mux)
}
# NAME LOG OUTPUT [CAPS-REGEX]: a training row of ours that must give
# the figures of row a, its trainer's sink caps matching CAPS-REGEX
same_as_a () {
  local caps
  caps=$(tt_caps "$2" GstTtTensorTrainer)
  if [ "$rc" -ne 0 ]; then
    row "$1" FAIL "exit $rc: $(why "$2")"
  elif [ -z "$caps" ]; then
    row "$1" FAIL "the trainer is not ours (no GstTtTensorTrainer in $2)"
  elif [ -n "${4:-}" ] && ! [[ $caps =~ $4 ]]; then
    row "$1" FAIL "caps not /$4/: $caps"
  elif [ ! -s "$out/a/figures" ]; then
    row "$1" FAIL "row a has no figures to compare with"
  elif ! cmp -s "$3" "$out/a/figures"; then
    row "$1" FAIL "figures differ from row a's: $(learnt "$3" 10)"
  else
    row "$1" PASS "the figures of row a, bit for bit${4:+ (caps /$4/)}"
  fi
}

# --- 1a-1d: pipelines of both plugins with our tensor_trainer
if [ "$prereq" = ok ]; then
  mkdir -p "$out/a" "$out/b" "$out/c" "$out/d"
  cd "$out/a" || exit 1
  pixel_src "" "" "" ""
  launch_ours a.log "${src[@]}" ! "${trainer[@]}" \
    model-save-path="$out/a/pixel.bin" ! filesink location=figures
  rc=$?
  caps=$(tt_caps a.log GstTtTensorTrainer)
  if [ "$rc" -ne 0 ]; then
    row a-video-mux-train FAIL "exit $rc: $(why a.log)"
  elif [ -z "$caps" ]; then
    row a-video-mux-train FAIL "the trainer is not ours (a/a.log)"
  elif ! [[ $caps =~ float32.,uint8 ]]; then
    row a-video-mux-train FAIL "not float32 inputs + uint8 labels: $caps"
  elif msg=$(learnt figures 10); then
    row a-video-mux-train PASS "uint8 index labels; $msg"
  else
    row a-video-mux-train FAIL "$msg"
  fi

  # tt_tensor_trainer: ours without any preload, though creating
  # nnstreamer's elements gives nnstreamer's plugin the tensor_trainer name
  tt_trainer=(tt_tensor_trainer "${trainer[@]:1}")
  env "${env_ours[@]}" timeout -k 5 "$limit" gst-launch-1.0 -v \
    "${src[@]}" ! "${tt_trainer[@]}" ! filesink location=tt-name \
    > tt-name.log 2>&1
  rc=$?
  same_as_a a-tt_tensor_trainer-name tt-name.log tt-name

  cd "$out/b" || exit 1
  flex=other/tensors,format=flexible
  pixel_src "" "" "" "tensor_transform mode=typecast option=int32"
  launch_ours int32.log "${src[@]}" ! "${trainer[@]}" ! filesink location=int32
  rc=$?
  same_as_a b-label-int32-index int32.log int32 'float32.,int32'
  pixel_src "" "" "" "tensor_transform mode=typecast option=float32"
  launch_ours float32.log "${src[@]}" ! "${trainer[@]}" \
    ! filesink location=float32
  rc=$?
  same_as_a b-label-float32-index float32.log float32 'float32.,float32'
  # flexible out of tensor_transform (both branches) and tensor_mux
  pixel_src "" "$flex" "" "$flex"
  launch_ours flex-transform.log "${src[@]}" ! "$flex" ! "${trainer[@]}" \
    ! filesink location=flex-transform
  rc=$?
  same_as_a b-flexible-transform flex-transform.log flex-transform \
    'format=\(string\)flexible'
  # flexible out of tensor_converter (both branches), through the rest
  pixel_src "$flex" "" "$flex" ""
  launch_ours flex-converter.log "${src[@]}" ! "$flex" ! "${trainer[@]}" \
    ! filesink location=flex-converter
  rc=$?
  same_as_a b-flexible-converter flex-converter.log flex-converter \
    'format=\(string\)flexible'
fi

# --- 1c: datareposink's files (static, flexible) into our trainer
if [ "$prereq" = ok ]; then
  cd "$out/c" || exit 1
  pixel_src "" "" "" ""
  launch_ours sink-static.log "${src[@]}" \
    ! datareposink location=static.data json=static.json sync=false
  rc_static=$?
  launch_ours sink-flexible.log "${src[@]}" ! "$flex" \
    ! datareposink location=flexible.data json=flexible.json sync=false
  rc_flexible=$?
  # NAME KIND SINK-EXIT-STATUS SOURCE...: train on the KIND file through
  # SOURCE
  from_repo () {
    local name=$1 kind=$2 sink_rc=$3; shift 3
    if [ "$sink_rc" -ne 0 ] || [ ! -s "$kind.json" ]; then
      row "$name" FAIL "datareposink wrote no $kind file: $(why "sink-$kind.log")"
      return
    fi
    launch_ours "$name.log" "$@" ! "${trainer[@]}" \
      ! filesink location="$name.figures"
    rc=$?
    same_as_a "$name" "$name.log" "$name.figures"
  }
  from_repo c-static-tensor_datasrc static "$rc_static" \
    tensor_datasrc location=static.data json=static.json
  from_repo c-static-datareposrc static "$rc_static" \
    datareposrc location=static.data json=static.json
  from_repo c-flexible-datareposrc flexible "$rc_flexible" \
    datareposrc location=flexible.data json=flexible.json
  from_repo c-flexible-tensor_datasrc flexible "$rc_flexible" \
    tensor_datasrc location=flexible.data json=flexible.json
  # what our tensor_datasrc pushes from datareposink's files: their bytes
  # (flexible: each tensor's header included, as datareposink wrote it)
  for kind in static flexible; do
    name=c-$kind-tensor_datasrc-bytes
    sink_rc=$rc_static
    [ "$kind" = flexible ] && sink_rc=$rc_flexible
    if [ "$sink_rc" -ne 0 ] || [ ! -s "$kind.data" ]; then
      row "$name" FAIL "datareposink wrote no $kind file"
      continue
    fi
    launch_ours "$name.log" \
      tensor_datasrc location="$kind.data" json="$kind.json" \
      ! filesink location="$kind.read"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      row "$name" FAIL "exit $rc: $(why "$name.log")"
    elif cmp -s "$kind.data" "$kind.read"; then
      row "$name" PASS \
        "pushes datareposink's $(stat -c %s "$kind.data") bytes as written"
    else
      row "$name" FAIL "$(cmp "$kind.data" "$kind.read" 2>&1 | head -n 1)"
    fi
  done
fi

# --- 1d: our tensor_datasrc ! datareposink, and read back
if [ "$prereq" = ok ]; then
  cd "$out/d" || exit 1
  # 40 images of 8x8 and their labels (0..3) as IDX files; the datarepo
  # file they make: per sample the 64 pixels (uint8) and the label as one
  # float32 (label-format=index)
  python3 - <<'EOF'
import struct
n = 40
img = [bytes((i * 37 + j * 11) % 256 for j in range(64)) for i in range(n)]
open("images.idx", "wb").write(struct.pack(">IIII", 0x803, n, 8, 8) + b"".join(img))
open("labels.idx", "wb").write(struct.pack(">II", 0x801, n) + bytes(i % 4 for i in range(n)))
open("expected.data", "wb").write(b"".join(img[i] + struct.pack("<f", i % 4) for i in range(n)))
EOF
  launch_ours write.log tensor_datasrc location=images.idx \
    label-location=labels.idx label-format=index \
    ! datareposink location=d.data json=d.json sync=false
  rc=$?
  if [ "$rc" -ne 0 ]; then
    row d-tensor_datasrc-datareposink FAIL "exit $rc: $(why write.log)"
  elif ! cmp -s expected.data d.data; then
    row d-tensor_datasrc-datareposink FAIL \
      "not the IDX files' bytes: $(cmp expected.data d.data 2>&1 | head -n 1)"
  elif ! grep -q '"total_samples" : 40' d.json; then
    row d-tensor_datasrc-datareposink FAIL "d.json: $(tr -d '\n' < d.json)"
  else
    row d-tensor_datasrc-datareposink PASS \
      "40 samples, the IDX files' pixels + float32 labels, byte for byte"
  fi
  for reader in tensor_datasrc datareposrc; do
    if [ ! -s d.data ]; then
      row "d-readback-$reader" FAIL "no d.data written"
      continue
    fi
    launch_ours "read-$reader.log" "$reader" location=d.data json=d.json \
      ! filesink location="$reader.read"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      row "d-readback-$reader" FAIL "exit $rc: $(why "read-$reader.log")"
    elif cmp -s d.data "$reader.read"; then
      row "d-readback-$reader" PASS "$reader pushes d.data's bytes as written"
    else
      row "d-readback-$reader" FAIL \
        "$(cmp d.data "$reader.read" 2>&1 | head -n 1)"
    fi
  done
fi

# --- 1e: nnstreamer's documented launch line, our tensor_trainer
have_repo=no
[ -f "$repo/mnist.data" ] && [ -f "$repo/mnist.json" ] &&
  [ -f "$repo/mnist.ini" ] && have_repo=yes
no_repo="no nnstreamer test data ($repo/mnist.{data,json,ini}):\
 set NNSTREAMER_SOURCE_ROOT_PATH"
if [ "$prereq" = ok ] && [ "$have_repo" = no ]; then
  row e-documented-launch-line FAIL "$no_repo"
elif [ "$prereq" = ok ]; then
  mkdir -p "$out/e" && cd "$out/e" || exit 1
  # (exactly nnstreamer's, with its files' paths)
  launch_ours e.log -m datareposrc location="$repo/mnist.data" \
    json="$repo/mnist.json" start-sample-index=3 stop-sample-index=202 \
    tensors-sequence=0,1 epochs=5 ! tensor_trainer framework=nntrainer \
    model-config="$repo/mnist.ini" model-save-path=model.bin num-inputs=1 \
    num-labels=1 num-training-samples=100 num-validation-samples=100 \
    epochs=5 ! tensor_sink
  rc=$?
  epochs=$(grep -c 'tensor-trainer-epoch, epoch=.*samples=(guint64)100, validation-samples=(guint64)100' e.log)
  last=$(grep -o 'tensor-trainer-epoch, epoch=(uint)5,.*validation-accuracy=(double)[0-9.e-]*' e.log |
    sed -E 's/.* loss=\(double\)([0-9.]{1,6}).*accuracy=\(double\)([0-9.]{1,5}).*validation-loss.*/loss \1, accuracy \2/')
  if [ "$rc" -ne 0 ]; then
    row e-documented-launch-line FAIL "exit $rc: $(why e.log)"
  elif ! grep -q 'GstTtTensorTrainer:' e.log; then
    row e-documented-launch-line FAIL "the trainer is not ours (e/e.log)"
  elif [ "$epochs" -ne 5 ]; then
    row e-documented-launch-line FAIL \
      "$epochs epochs of 100 + 100 samples, not 5"
  elif [ ! -s model.bin ]; then
    row e-documented-launch-line FAIL "no model.bin saved"
  else
    row e-documented-launch-line PASS \
      "5 epochs of 100 + 100, model.bin $(stat -c %s model.bin) bytes; epoch 5: $last"
  fi
fi

# --- 1f: tensor_predictor ! tensor_decoder mode=image_labeling
if [ "$prereq" = ok ] && [ "$have_repo" = no ]; then
  row f-predictor-image_labeling FAIL "$no_repo"
elif [ "$prereq" = ok ] && [ ! -s "$out/e/model.bin" ]; then
  row f-predictor-image_labeling FAIL "no model.bin from row e"
elif [ "$prereq" = ok ]; then
  mkdir -p "$out/f" && cd "$out/f" || exit 1
  pred=(datareposrc location="$repo/mnist.data" json="$repo/mnist.json"
    start-sample-index=0 stop-sample-index=19 tensors-sequence=0
    ! tensor_predictor model-config="$repo/mnist.ini"
    model-load-path="$out/e/model.bin")
  launch_ours raw.log "${pred[@]}" ! filesink location=pred.raw
  rc_raw=$?
  launch_ours f.log "${pred[@]}" ! tensor_decoder mode=image_labeling \
    option1="$data/digits.txt" ! filesink location=labels.out
  rc=$?
  # the class of each of the 20 outputs (float32 of 10), as its line of
  # digits.txt (the digit itself)
  expect=$(python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read()
p = struct.unpack("<%df" % (len(d) // 4), d)
print("".join(str(max(range(10), key=lambda k: p[i + k])) for i in range(0, len(p), 10)))' \
    pred.raw 2>/dev/null)
  got=$(tr -cd '0-9' < labels.out 2>/dev/null)
  caps=$(grep -m1 -E 'GstTtTensorPredictor:.*src: caps' f.log | sed 's/.*caps = //')
  if [ "$rc_raw" -ne 0 ]; then
    row f-predictor-image_labeling FAIL "the predictor alone: exit $rc_raw: $(why raw.log)"
  elif [ "$rc" -ne 0 ]; then
    row f-predictor-image_labeling FAIL "exit $rc: $(why f.log) (predictor caps: $caps)"
  elif [ ${#expect} -ne 20 ] || [ "$got" != "$expect" ]; then
    row f-predictor-image_labeling FAIL "labels '$got', the predictor's argmax '$expect'"
  else
    row f-predictor-image_labeling PASS "20 labels, each the predictor's argmax ($got)"
  fi
fi

# --- 2: nnstreamer's unittest_trainer against our tensor_trainer
ut=$nns/tests/unittest_trainer
if [ "$prereq" != ok ]; then
  :
elif [ ! -x "$ut" ]; then
  row unittest_trainer FAIL "no $ut (nnstreamer configured without gtest?)"
elif [ "$have_repo" = no ]; then
  row unittest_trainer FAIL "$no_repo"
else
  mkdir -p "$out/unittest" && cd "$out/unittest" || exit 1
  cases=$("$ut" --gtest_list_tests 2>/dev/null | awk '
    /^[^ ]/ { suite = $1 } /^  / { print suite $1 }')
  [ -n "$cases" ] || row unittest_trainer FAIL "--gtest_list_tests lists nothing"
  for c in $cases; do
    log=$c.log
    # GST_PLUGIN_LOADING's lines say which plugin loaded last
    env "${env_ours[@]}" GST_DEBUG=GST_PLUGIN_LOADING:4 \
      GST_DEBUG_FILE="$c.debug" timeout -k 5 "$limit" \
      "$ut" --gtest_filter="$c" "${preload[@]}" > "$log" 2>&1
    rc=$?
    last=$(grep -o 'plugin "[^"]*" loaded' "$c.debug" |
      grep -E 'libnnstreamer\.so|libgsttensortrainer\.so' | tail -n 1)
    failure=$(awk '/: Failure$/ { on = 1; sub(/.*\//, ""); printf "%s", $0; next }
      /^\[/ { on = 0 } on { printf " %s", $0 }' "$log" | tr -s ' ' |
      cut -c1-220)
    if [[ $last != *libgsttensortrainer.so* ]]; then
      row "$c" FAIL "our plugin was not loaded last: ${last:-neither loaded}"
    elif grep -q "^\[       OK \] $c " "$log" && [ "$rc" -eq 0 ]; then
      row "$c" PASS "ours: $(grep -o "OK \] $c ([0-9]* ms)" "$log" | sed 's/.*(/(/')"
    elif grep -q "^\[  FAILED  \] $c " "$log"; then
      row "$c" FAIL "${failure:-$(why "$log")}"
    else
      row "$c" FAIL "exit $rc, no gtest result: $(why "$log")"
    fi
  done
fi

# --- 3: the sub-plugins of gst/nnstreamer/ in nnstreamer's own elements
if [ "$prereq" != ok ]; then
  :
elif [ ! -f "$sub_trainer" ] || [ ! -f "$sub_filter" ]; then
  reason="not built: no $sub_dir/libnnstreamer_{trainer,filter}_tensor-trainer.so\
 (meson builds them when pkg-config finds nnstreamer)"
  row subplugin-trainer SKIP "$reason"
  row subplugin-trainer-video SKIP "$reason"
  row subplugin-filter SKIP "$reason"
else
  mkdir -p "$out/subplugin" && cd "$out/subplugin" || exit 1
  # nnstreamer's launch line of row e, framework=tensor-trainer
  if [ "$have_repo" = no ]; then
    row subplugin-trainer FAIL "$no_repo"
  else
    launch_nns trainer.log datareposrc location="$repo/mnist.data" \
      json="$repo/mnist.json" start-sample-index=3 stop-sample-index=202 \
      tensors-sequence=0,1 epochs=5 ! tensor_trainer name=tt \
      framework=tensor-trainer model-config="$repo/mnist.ini" \
      model-save-path=model.bin num-inputs=1 num-labels=1 \
      num-training-samples=100 num-validation-samples=100 epochs=5 \
      ! filesink location=figures
    rc=$?
    if [ "$rc" -ne 0 ]; then
      row subplugin-trainer FAIL "exit $rc: $(why trainer.log)"
    elif [ -z "$(tt_caps trainer.log GstTensorTrainer)" ]; then
      row subplugin-trainer FAIL "the trainer is not nnstreamer's (trainer.log)"
    elif [ ! -s model.bin ]; then
      row subplugin-trainer FAIL "no model.bin saved"
    elif ! [ -s figures ] || [ $(($(stat -c %s figures) % 32)) -ne 0 ]; then
      row subplugin-trainer FAIL "its output is not float64 1:1:4 records"
    else
      row subplugin-trainer PASS "nnstreamer's tensor_trainer, 5 epochs,\
 model.bin $(stat -c %s model.bin) bytes, $(($(stat -c %s figures) / 32)) result buffers"
    fi
  fi
  # row a's training in nnstreamer's tensor_trainer: row a's BIN
  if [ ! -s "$out/a/pixel.bin" ]; then
    row subplugin-trainer-video FAIL "no pixel.bin from row a"
  else
    pixel_src "" "" "" ""
    launch_nns trainer-video.log "${src[@]}" ! tensor_trainer name=tt \
      framework=tensor-trainer model-config="$pix_ini" num-inputs=1 \
      num-labels=1 num-training-samples=200 num-validation-samples=50 \
      epochs=10 model-save-path=pixel.bin ! filesink location=figures-video
    rc=$?
    if [ "$rc" -ne 0 ]; then
      row subplugin-trainer-video FAIL "exit $rc: $(why trainer-video.log)"
    elif [ -z "$(tt_caps trainer-video.log GstTensorTrainer)" ]; then
      row subplugin-trainer-video FAIL "the trainer is not nnstreamer's"
    elif cmp -s pixel.bin "$out/a/pixel.bin"; then
      row subplugin-trainer-video PASS "row a in nnstreamer's tensor_trainer:\
 its BIN, byte for byte"
    else
      row subplugin-trainer-video FAIL "pixel.bin differs from row a's:\
 $(cmp pixel.bin "$out/a/pixel.bin" 2>&1 | head -n 1)"
    fi
  fi
  # the model of row a through tensor_filter and through our
  # tensor_predictor: the same bytes
  # shellcheck disable=SC2054
  frames=(videotestsrc pattern=snow num-buffers=50
    ! video/x-raw,format=GRAY8,width=8,height=8,framerate=30/1
    ! tensor_converter
    ! tensor_transform mode=arithmetic option=typecast:float32,div:255)
  if [ ! -s "$out/a/pixel.bin" ]; then
    row subplugin-filter FAIL "no pixel.bin from row a"
  else
    launch_ours predictor.log "${frames[@]}" ! tensor_predictor \
      model-config="$pix_ini" model-load-path="$out/a/pixel.bin" \
      ! filesink location=predictor.out
    rc_pred=$?
    # (nnstreamer's dimensions, innermost first: 8:8:1:1 for 1:8:8)
    launch_nns filter.log "${frames[@]}" \
      ! tensor_transform mode=transpose option=1:2:0:3 \
      ! tensor_filter framework=tensor-trainer \
      model="$pix_ini,$out/a/pixel.bin" ! filesink location=filter.out
    rc=$?
    if [ "$rc" -ne 0 ]; then
      row subplugin-filter FAIL "exit $rc: $(why filter.log)"
    elif [ "$rc_pred" -ne 0 ]; then
      row subplugin-filter FAIL "our predictor: exit $rc_pred: $(why predictor.log)"
    elif [ "$(stat -c %s filter.out)" -ne 400 ]; then
      row subplugin-filter FAIL "$(stat -c %s filter.out) bytes, not 50 x 2 float32"
    elif cmp -s filter.out predictor.out; then
      row subplugin-filter PASS "50 frames: tensor_predictor's outputs, bit for bit"
    else
      row subplugin-filter FAIL "outputs differ from tensor_predictor's:\
 $(cmp filter.out predictor.out 2>&1 | head -n 1)"
    fi
  fi
fi

# --- the table
pass=0 fail=0 skip=0
echo
printf '%-50s %-4s  %s\n' ROW RESULT REASON
for i in "${!names[@]}"; do
  printf '%-50s %-4s  %s\n' "${names[$i]}" "${states[$i]}" "${reasons[$i]}"
  case ${states[$i]} in
    PASS) pass=$((pass + 1)) ;;
    FAIL) fail=$((fail + 1)) ;;
    *) skip=$((skip + 1)) ;;
  esac
done
echo "$pass passed, $fail failed, $skip skipped (nnstreamer: $nns;" \
  "ours: $tt; files: $out)"
[ "$fail" -gt 0 ] && exit 1
[ "$skip" -gt 0 ] && exit 77
exit 0
