#!/usr/bin/env bash
# The host's tools for the VM, from Debian's packages: QEMU (with 9p),
# mmdebstrap to build the image, qemu-img to pack a Vagrant box.  Only what
# is missing is installed; `make run` needs none of it.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "vm/tools.sh must run as root (apt-get)." >&2
  exit 1
fi
packages="qemu-system-x86 qemu-utils mmdebstrap e2fsprogs"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing
fi
