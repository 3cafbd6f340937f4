"""The VM boots (KVM where it works, else TCG), says it is a VM, has the
kernel's netem, and the testbed inside emulates WAN links with it: doctor,
then a selftest with the netem backend at rates the guest keeps up with,
then the VM powers off and the exit code comes back.

The selftest's rows are a timed check (tests/stalls.py): under software
emulation the guest's clock runs as the host's CPU lets it, so a run during
which the host's hypervisor took more than its share is not judged."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from testbed.emulation import measure
from tests.stalls import Run, judge, stolen_since

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.vm

# A guest that got through doctor ends in an exit code of its own, which
# must come back to the host; the selftest's own verdict is printed.  Its
# 10 s windows keep a read's timing within a few percent of the window
# under software emulation, where starting `ss` takes a good part of a second.
IN_GUEST = ("testbed doctor && { "
            "testbed selftest --seconds 10 --delay-backend netem tests/vm/low-rate.yaml; "
            "echo \"selftest exited $?\"; exit 7; }")


def _qemu_missing():
    if os.geteuid() != 0:
        return "needs root (the image is built with mmdebstrap and chroot)"
    if shutil.which("qemu-system-x86_64") is None:
        return "QEMU is not installed (vm/tools.sh installs it)"
    return None


# The first run builds the image (minutes); a cached one boots at once.
@pytest.mark.timeout(3600)
@pytest.mark.skipif(_qemu_missing() is not None, reason=str(_qemu_missing()))
def test_the_vm_boots_runs_doctor_and_a_netem_selftest_and_gives_the_exit_code_back(request):
    before = measure.cpu_times()
    r = subprocess.run([sys.executable, "vm/run.py", "--timeout", "900", "--", IN_GUEST],
                       cwd=ROOT, capture_output=True, text=True, timeout=3500)
    stolen = stolen_since(before)
    out = r.stdout + r.stderr
    assert r.returncode == 7, out
    assert re.search(r"^VM: (KVM|TCG) \(", out, re.M), out
    assert re.search(r"virtualization\s.*in a virtual machine \((qemu|kvm)\)", out), out
    assert re.search(r"qdisc netem\s.*ok\s.*available", out), out
    assert re.search(r"delay backend of a run\s.*netem \(kernel sch_netem\)", out), out
    assert "(delay backend: netem)" in out, out
    assert "VM: the command exited 7" in out, out
    rows = re.findall(r"^│ (RTT|goodput) .*│ (yes|no)\s*│$", out, re.M)
    assert [what for what, _ in rows] == ["RTT", "goodput", "goodput"], out
    held = all(verdict == "yes" for _, verdict in rows)
    assert ("selftest exited 0" in out) == held, out
    judge(request, "the VM's netem links hold their RTT and goodput",
          [Run(held, stolen, re.findall(r"^│ (?:RTT|goodput) .*│$", out, re.M))])

