#!/usr/bin/env bash
# Provisioning of the Debian 12 VM: the kernel's netem module, then the
# project's own install script with a virtualenv outside the synced folder
# (VENV, default /opt/geo-testbed-venv), then a selftest that shows the links
# do what they are told, with netem.  A box made by `make box` was built
# with this install script already (it records which): then nothing is
# installed, so it provisions offline.
set -euo pipefail
venv=${VENV:-/opt/geo-testbed-venv}
testbed_dir=${TESTBED_DIR:-/testbed}

# Debian's stock kernel has sch_netem as a module: load it now and at boot.
if ! modprobe sch_netem; then
  echo "this kernel ($(uname -r)) has no sch_netem module; use the Debian 12 box the Vagrantfile names" >&2
  exit 1
fi
echo sch_netem > /etc/modules-load.d/geo-testbed.conf

cd "$testbed_dir"
built_with=/etc/geo-testbed-install.sha256
if [ -x "$venv/bin/testbed" ] && [ -f "$built_with" ] &&
   [ "$(cat scripts/install.sh setup.py | sha256sum | cut -d' ' -f1)" = "$(cat "$built_with")" ]; then
  echo "this box was built with this install script and setup.py: nothing to install"
else
  VENV="$venv" bash scripts/install.sh
fi
"$venv/bin/testbed" doctor
# Under QEMU's software emulation (no KVM) the guest keeps up with a few
# Mbit/s only: the selftest then runs at such rates (docs/vm.md).
if [ "$(systemd-detect-virt --vm)" = qemu ]; then
  "$venv/bin/testbed" selftest --delay-backend netem tests/vm/low-rate.yaml
else
  "$venv/bin/testbed" selftest --delay-backend netem
fi
