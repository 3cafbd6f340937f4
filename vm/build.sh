#!/usr/bin/env bash
# Builds the Debian 12 disk image the VM boots, unless the cache holds it;
# prints the image's directory (disk.raw, vmlinuz, initrd.img) last.
#
# The root file system comes from Debian's packages (mmdebstrap), then the
# project's own scripts/install.sh runs in a chroot of it, at the host's
# speed, exactly as on a fresh machine.  pip inside the chroot sees the
# host's pip settings, and the local directories they name (a wheel
# directory, a local index) are bind-mounted in read-only, so torch comes
# from where the host's own install found it.  mke2fs -d turns the tree
# into an ext4 image without loop devices or mounts of the image.
#
# The image's name is a hash of what decides its contents: install.sh (and
# the apt packages it names), setup.py (the Python packages), this script
# and the guest's files.  Cache: $GEO_VM_CACHE, default
# /var/cache/geo-testbed/vm.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

if [ "$(id -u)" -ne 0 ]; then
  echo "vm/build.sh must run as root (mmdebstrap and chroot need it)." >&2
  exit 1
fi

cache=${GEO_VM_CACHE:-/var/cache/geo-testbed/vm}
size=${GEO_VM_DISK_SIZE:-8G}
venv=/opt/geo-testbed-venv
# What the image needs beyond what install.sh installs: a kernel with
# sch_netem, an init, and what `make vm` and a Vagrant box log in with.
packages="linux-image-amd64 initramfs-tools zstd systemd-sysv udev kmod dbus
iproute2 openssh-server sudo rsync ca-certificates procps less"

key() {
  cat scripts/install.sh setup.py vm/build.sh vm/guest/* | sha256sum | cut -c1-16
}
image=$cache/bookworm-$(key)
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9                                  # one build at a time; the others then find it
if [ -f "$image/ready" ]; then
  echo "$image"
  exit 0
fi

start=$(date +%s)
work=$(mktemp -d "$cache/build.XXXXXX")
root=$work/root
mounts() {
  findmnt -rn -o TARGET | { grep "^$root/" || true; } | sort -r
}
cleanup() {
  # Whatever was mounted under the tree, innermost first, then the tree.
  mounts | while read -r m; do umount -l "$m"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building the VM image $image (Debian 12 from Debian's packages)" >&2
# No mirror given: Debian's default one, with updates and security.
# The initramfs settings go in before the kernel, so it is made once.
mmdebstrap --variant=minbase --include="$(echo $packages | tr ' ' ,)" \
  --aptopt='APT::Install-Recommends "false"' \
  --essential-hook="mkdir -p \"\$1/etc/initramfs-tools/conf.d\" \"\$1/etc/initramfs-tools/hooks\"" \
  --essential-hook="echo MODULES=list > \"\$1/etc/initramfs-tools/conf.d/geo-testbed\"" \
  --essential-hook="install -m 755 \"$here/vm/guest/initramfs-hook\" \"\$1/etc/initramfs-tools/hooks/geo-testbed\"" \
  bookworm "$root" </dev/null >&2

# The checkout, as install.sh expects to find it.
mkdir -p "$root/testbed"
tar -C "$here" --exclude=./.git --exclude=./.venv --exclude=./results/runs \
  --exclude='*.egg-info' --exclude=__pycache__ --exclude=.pytest_cache --exclude=.hypothesis \
  --exclude=./vagrant/.vagrant -cf - . | tar -C "$root/testbed" -xf -

for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$root/$m"
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No service starts inside the chroot.
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"

# The host's pip settings, as PIP_* variables, and the local paths they name.
pip_env=()
declare -A bound=()
if command -v pip3 >/dev/null; then
  while IFS= read -r line; do
    name=${line%%=*}; name=${name##*.}; value=${line#*=}; value=${value#\'}; value=${value%\'}
    pip_env+=("PIP_$(echo "$name" | tr 'a-z-' 'A-Z_')=$value")
    for token in $value; do
      path=${token#file://}
      case "$path" in /*) ;; *) continue ;; esac
      # A local index's pages link to files beside its simple/ directory.
      case "$token" in file://*/simple|file://*/simple/) path=$(dirname "$path") ;; esac
      [ -z "${bound[$path]:-}" ] || continue
      bound[$path]=1
      if [ -d "$path" ]; then
        mkdir -p "$root$path"
      elif [ -f "$path" ]; then
        mkdir -p "$(dirname "$root$path")"; touch "$root$path"
      else
        continue
      fi
      mount --bind -o ro "$path" "$root$path"
    done
  done < <(pip3 config list 2>/dev/null)
fi
# With the test tools: `make vm-test` runs the Mininet tests in the VM.
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  VENV="$venv" "${pip_env[@]}" bash /testbed/scripts/install.sh --test >&2

# The guest's own files: the run-mode init, the share's mount, console
# login, network, the testbed on PATH, sch_netem at boot.
install -m 755 vm/guest/geo-vm-init vm/guest/geo-vm-share "$root/usr/local/sbin/"
install -m 644 vm/guest/geo-testbed-share.service "$root/etc/systemd/system/"
mkdir -p "$root/etc/systemd/system/serial-getty@ttyS0.service.d" "$root/etc/systemd/system/ssh.service.d"
install -m 644 vm/guest/autologin.conf "$root/etc/systemd/system/serial-getty@ttyS0.service.d/"
install -m 644 vm/guest/ssh-keygen.conf "$root/etc/systemd/system/ssh.service.d/"
install -m 644 vm/guest/dhcp.network "$root/etc/systemd/network/"
install -m 644 vm/guest/profile.sh "$root/etc/profile.d/geo-testbed.sh"
echo sch_netem > "$root/etc/modules-load.d/geo-testbed.conf"
echo geo-testbed > "$root/etc/hostname"
echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$root/etc/fstab"
chroot "$root" bash -c '
  set -e
  systemctl enable systemd-networkd geo-testbed-share >/dev/null 2>&1
  useradd -m -s /bin/bash -G sudo vagrant 2>/dev/null || true
  echo vagrant:vagrant | chpasswd
  echo "vagrant ALL=(ALL) NOPASSWD: ALL" > /etc/sudoers.d/vagrant
  passwd -d root >/dev/null
  rm -f /etc/ssh/ssh_host_*
  apt-get clean
  rm -rf /var/lib/apt/lists/* /root/.cache
' >&2
# What vagrant/provision.sh compares to know the box needs no install.
cat scripts/install.sh setup.py | sha256sum | cut -d' ' -f1 > "$root/etc/geo-testbed-install.sha256"
rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
mounts | while read -r m; do umount "$m"; done

mkdir -p "$work/image"
cp -L "$root/vmlinuz" "$work/image/vmlinuz"
cp -L "$root/initrd.img" "$work/image/initrd.img"
mke2fs -q -t ext4 -L geo-testbed -d "$root" "$work/image/disk.raw" "$size"
echo "$(( $(date +%s) - start ))" > "$work/image/build-seconds"
touch "$work/image/ready"
rm -rf "$image"
mv "$work/image" "$image"
# Keep the two newest images (another checkout may want the other one).
ls -1dt "$cache"/bookworm-* | tail -n +3 | xargs -r rm -rf
echo "built $image in $(cat "$image/build-seconds") s" >&2
echo "$image"
