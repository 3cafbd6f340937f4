#!/usr/bin/env bash
# Installs everything geo-testbed needs on Debian/Ubuntu, as root:
# system tools (apt), kernel settings, and a virtualenv at .venv with the
# package and its test extras.  Used by the Makefile, .ci/run and vagrant/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh must run as root (Mininet needs it)." >&2
  exit 1
fi

apt_packages="mininet iperf3 iputils-ping bridge-utils ethtool iproute2 net-tools procps python3 python3-venv python3-pip"
missing=""
for p in $apt_packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # No recommends: Mininet recommends Open vSwitch, which the testbed does not use.
  apt-get install -y -qq --no-install-recommends $missing
fi

# Bridged frames must not pass through iptables, or emulated traffic can be filtered.
if [ -d /proc/sys/net/bridge ]; then
  for t in iptables ip6tables arptables; do
    sysctl -q -w "net.bridge.bridge-nf-call-$t=0" || true
  done
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip setuptools wheel
# torch's CPU build is pinned so pip takes the local wheel instead of a CUDA build.
.venv/bin/pip install -q -e ".[test]"
echo "geo-testbed installed: $here/.venv/bin/testbed"
