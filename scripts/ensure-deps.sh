#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the Debian packages this project needs, only those missing.
# Usage: scripts/ensure-deps.sh [EXTRA_PACKAGE...]
set -euo pipefail

packages=(
  gcc libc6-dev meson ninja-build pkg-config
  libiniparser-dev libopenblas-dev zlib1g-dev
  dataset-fashion-mnist
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good libjson-glib-dev
  gstreamer1.0-plugins-bad gnuplot-nox
  libmosquitto-dev mosquitto
  # ONNX import: onnx.proto, compiled by protoc-c at build time; python3-onnx
  # (with python3-torch) only to regenerate tests/onnx/'s fixtures
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev python3-onnx
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "error: missing packages (${missing[*]}) and not root" >&2; exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# never at the cost of an installed package (an arm64 -dev package can
# conflict with its amd64 twin): simulate first, refuse any removal
removed=$(apt-get install -s -q --no-install-recommends "${missing[@]}" |
  awk '/^Remv / {print $2}')
if [ -n "$removed" ]; then
  echo "error: installing ${missing[*]} would remove installed packages:" \
    $removed >&2
  exit 1
fi
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
