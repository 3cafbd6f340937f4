#!/usr/bin/env bash
# `make vm-test`, inside the VM: doctor, a selftest with the netem backend,
# then the Mininet tier of the tests, where every network's delay comes from
# netem (the backend `auto` picks).  Under KVM: the default selftest and all
# of tests/mininet.  Under TCG, whose guest runs 15 to 20 times slower than
# the host: the selftest at rates such a guest keeps up with
# (tests/vm/low-rate.yaml) and the tests named in vm/tcg-tests.txt, chosen
# to end within 15 minutes.
set -uo pipefail
python=/opt/geo-testbed-venv/bin/python
hypervisor=$(systemd-detect-virt --vm)

testbed doctor || exit
if [ "$hypervisor" = kvm ]; then
  testbed selftest --delay-backend netem || exit
  exec $python -m pytest tests/mininet -v -p no:cacheprovider --durations=15
fi
echo "software emulation ($hypervisor): the selftest at low rates, the Mininet tests in vm/tcg-tests.txt"
testbed selftest --delay-backend netem tests/vm/low-rate.yaml || exit
exec $python -m pytest $(grep -v "^#" vm/tcg-tests.txt) -v -p no:cacheprovider --durations=15
