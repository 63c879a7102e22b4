#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what the arm64 cross build (scripts/cross/aarch64-linux-gnu.ini)
# needs, only what is missing: Debian's cross compiler, qemu-user-static,
# and the engine's libraries as arm64 multiarch packages.
#
# Never at the cost of a host package: ensure-deps.sh refuses an install
# that would remove one (libgstreamer-plugins-base1.0-dev:arm64 would
# remove the amd64 one, so the arm64 build leaves out the GStreamer plugin).
# Usage: scripts/ensure-arm64.sh
set -euo pipefail

packages=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
  libiniparser-dev:arm64 zlib1g-dev:arm64 libopenblas-dev:arm64)

# the arm64 packages need the architecture known to apt first
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: dpkg --add-architecture arm64 needs root" >&2
    exit 1
  fi
  dpkg --add-architecture arm64
fi
exec "$(dirname "$0")/ensure-deps.sh" "${packages[@]}"
