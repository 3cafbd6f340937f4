#!/usr/bin/env bash
# The host's tools for the VM, from Debian's packages: QEMU (with 9p),
# mmdebstrap to build the image, mke2fs to make its file system, qemu-img to
# pack a Vagrant box.  Only what is missing is installed; `make run` needs
# none of it.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "vm/tools.sh must run as root (apt-get)." >&2
  exit 1
fi
declare -A package_of=([qemu-system-x86_64]=qemu-system-x86 [qemu-img]=qemu-utils
                       [mmdebstrap]=mmdebstrap [mke2fs]=e2fsprogs)
missing=""
for tool in "${!package_of[@]}"; do
  command -v "$tool" >/dev/null || missing="$missing ${package_of[$tool]}"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
