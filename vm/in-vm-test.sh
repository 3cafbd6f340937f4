#!/usr/bin/env bash
# `make vm-test`, inside the VM: doctor, a selftest with the netem backend,
# then the Mininet tier of the tests, where every network's delay comes from
# netem (the backend `auto` picks).  Under KVM all of it; under TCG, whose
# guest runs about 15 times slower than the host, the tests named in
# vm/tcg-tests.txt, chosen to end within 15 minutes.
set -uo pipefail
export COLUMNS=${COLUMNS:-160}
python=/opt/geo-testbed-venv/bin/python

testbed doctor || exit
testbed selftest --delay-backend netem || exit
accel=$(systemd-detect-virt --vm)
echo "Mininet tests in the VM (hypervisor: $accel)"
if [ "$accel" = kvm ]; then
  exec $python -m pytest tests/mininet -v -p no:cacheprovider --durations=15
fi
exec $python -m pytest $(grep -v "^#" vm/tcg-tests.txt) -v -p no:cacheprovider --durations=15
