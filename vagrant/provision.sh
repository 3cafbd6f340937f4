#!/usr/bin/env bash
# Provisioning of the VM: the kernel's netem module, then the project's own
# install script, then a selftest that shows the links do what they are told.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Ubuntu ships sch_netem in linux-modules-extra; Debian has it in the base image.
apt-get install -y -qq "linux-modules-extra-$(uname -r)" || true
modprobe sch_netem
echo sch_netem > /etc/modules-load.d/geo-testbed.conf
cd /testbed
bash scripts/install.sh
.venv/bin/testbed doctor
.venv/bin/testbed selftest --delay-backend netem
