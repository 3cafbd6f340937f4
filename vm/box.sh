#!/usr/bin/env bash
# `make box`: packs the VM's image (vm/build.sh, the same one `make vm`
# boots) as a Vagrant box for the libvirt provider and adds it to Vagrant as
# `geo-testbed`, so that `cd vagrant && vagrant up` needs no network.  The
# image has no boot loader: the box carries its kernel and initrd and its
# Vagrantfile has libvirt boot them directly.  Prints the box's path.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
image=$(bash vm/build.sh | tail -n 1)
box=$image/geo-testbed-libvirt.box
if [ ! -f "$box" ]; then
  work=$(mktemp -d "$image/box.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  qemu-img convert -O qcow2 "$image/disk.raw" "$work/box.img"
  cp "$image/vmlinuz" "$image/initrd.img" "$work/"
  cp vm/box.Vagrantfile "$work/Vagrantfile"
  gib=$(( ($(stat -c %s "$image/disk.raw") + (1 << 30) - 1) >> 30 ))
  printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": %d}\n' "$gib" > "$work/metadata.json"
  # Not compressed: the image is mostly compressed packages already.
  tar -C "$work" -cf "$work/box.tar" metadata.json Vagrantfile box.img vmlinuz initrd.img
  mv "$work/box.tar" "$box"
fi
if command -v vagrant >/dev/null; then
  vagrant box add --force --name geo-testbed "$box" >&2
else
  echo "vagrant is not installed; add the box later with: vagrant box add --name geo-testbed $box" >&2
fi
echo "$box"
