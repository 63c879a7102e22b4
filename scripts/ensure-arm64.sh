#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what the arm64 cross build (scripts/cross/aarch64-linux-gnu.ini)
# needs, only what is missing: Debian's cross compiler, qemu-user-static,
# and the engine's libraries as arm64 multiarch packages.
#
# Never at the cost of a host package: the arm64 -dev packages of some
# libraries conflict with their amd64 twins (libgstreamer-plugins-base1.0-dev
# does, so the arm64 build leaves out the GStreamer plugin), so the install
# is simulated first and refused if it would remove anything.
# Usage: scripts/ensure-arm64.sh
set -euo pipefail

packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
  libiniparser-dev:arm64 zlib1g-dev:arm64 libopenblas-dev:arm64)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing packages (${missing[*]}) and not root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing (arm64 cross build): ${missing[*]}"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
fi
apt-get update -q >/dev/null
removed=$(apt-get install -s -q --no-install-recommends "${missing[@]}" |
  awk '/^Remv / {print $2}')
if [ -n "$removed" ]; then
  echo "error: installing ${missing[*]} would remove host packages:" \
    $removed >&2
  exit 1
fi
apt-get install -y -q --no-install-recommends "${missing[@]}"
