#!/usr/bin/env bash
# Installs geo-testbed on Debian/Ubuntu, as root: system tools (apt) and a
# virtualenv (.venv, or $VENV) with the package.
#
#   scripts/install.sh            what running needs (`make run`)
#   scripts/install.sh --test     and what the tests need (`make test`): Chromium
#                                 and its driver, pytest and its plug-ins,
#                                 hypothesis, Selenium, check-jsonschema, Ray
#   scripts/install.sh --cluster  and Ray, for sweeps across machines
#
# TORCH_VARIANT=cuda for a CUDA build of torch.  No host setting is changed:
# the testbed's bridges live in network namespaces of their own.  Used by the
# Makefile (so by .ci/run) and vagrant/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

extras=""
test_tools=0
for arg in "$@"; do
  case "$arg" in
    --test) extras="$extras,test,cluster,parquet"; test_tools=1 ;;
    --cluster) extras="$extras,cluster" ;;
    *) echo "install.sh takes --test and --cluster, not '$arg'." >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh must run as root (Mininet needs it)." >&2
  exit 1
fi

torch_variant=${TORCH_VARIANT:-cpu}
case "$torch_variant" in
  cpu|cuda) ;;
  *) echo "TORCH_VARIANT is cpu (the default) or cuda, not '$torch_variant'." >&2; exit 2 ;;
esac

# iptables: a test proves the host's firewall rules never see emulated traffic.
# gcc, libc6-dev: the compiled delay line (testbed-delayline).
apt_packages="mininet iperf3 iputils-ping bridge-utils ethtool iproute2 net-tools procps iptables python3 python3-venv python3-pip gcc libc6-dev"
# chromium, chromium-driver: the tests look at the run pages in a headless browser.
if [ "$test_tools" = 1 ]; then
  apt_packages="$apt_packages chromium chromium-driver"
fi
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

python=${PYTHON:-python3}
venv=${VENV:-.venv}             # the Vagrant VM keeps its own outside the synced folder
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# Byte-compiled once at the end, on every core (pip compiles a file at a time).
"$venv/bin/pip" install -q --no-compile --upgrade pip setuptools wheel
# torch: setup.py takes a range of releases, so a torch already in the
# virtualenv stays.  Otherwise this release, a CPU build unless
# TORCH_VARIANT=cuda: a wheel pip finds on local disk (find-links in pip's
# config or PIP_FIND_LINKS) is taken as it is; else the CPU build comes from
# PyTorch's CPU-only index, since PyPI's default Linux build carries
# gigabytes of CUDA.
torch_pin="torch==${TORCH_VERSION:-2.13.0}"
if "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  :
elif [ "$torch_variant" = cuda ]; then
  "$venv/bin/pip" install -q --no-compile "$torch_pin"
elif ! "$venv/bin/pip" install -q --dry-run --no-index --no-deps "$torch_pin" >/dev/null 2>&1; then
  "$venv/bin/pip" install -q --no-compile --extra-index-url https://download.pytorch.org/whl/cpu "$torch_pin+cpu"
else
  "$venv/bin/pip" install -q --no-compile "$torch_pin"
fi
"$venv/bin/pip" install -q --no-compile -e ".${extras:+[${extras#,}]}"
# The checkout's own modules too: where PYTHONDONTWRITEBYTECODE is set, no
# import keeps what it compiled, and every agent would compile them anew.
# Some packages ship files for other Pythons that do not compile; pip skips
# those too.
"$venv/bin/python" -m compileall -q -j 0 "$venv/lib" >/dev/null 2>&1 || true
"$venv/bin/python" -m compileall -q -j 0 testbed agents >/dev/null
# The delay line where the kernel has no netem; the Python one is the fallback.
cc -O2 -Wall -o "$venv/bin/testbed-delayline" testbed/emulation/delayline.c -lm
echo "geo-testbed installed: $(cd "$venv" && pwd)/bin/testbed"
