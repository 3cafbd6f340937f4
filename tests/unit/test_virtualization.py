"""What `testbed doctor` says about the machine it runs on: a virtual
machine (which hypervisor) or not, a container or not."""

from testbed.emulation import capability

QEMU_GUEST = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu vme de pse tsc msr pae hypervisor lahf_lm
"""
BARE_METAL = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu vme de pse tsc msr pae vmx lahf_lm
"""


def test_the_cpus_hypervisor_flag_and_dmi_vendor_name_the_hypervisor():
    assert capability.vm_from_files(QEMU_GUEST, "QEMU\n") == "QEMU"
    assert capability.vm_from_files(QEMU_GUEST, "") == "a hypervisor"


def test_without_the_hypervisor_flag_it_is_no_virtual_machine_whatever_dmi_says():
    assert capability.vm_from_files(BARE_METAL, "Dell Inc.\n") == "none"
    assert capability.vm_from_files("", "QEMU") == "none"


def test_the_detail_names_the_hypervisor_and_the_container():
    assert capability.virtualization_detail("qemu", "none") == "in a virtual machine (qemu)"
    assert capability.virtualization_detail("kvm", "docker") == \
        "in a virtual machine (kvm), in a container (docker)"
    assert capability.virtualization_detail("none", None) == "not in a virtual machine"


def test_doctor_lists_where_it_runs_before_the_delay_backend_a_run_uses():
    names = [c.name for c in capability.checks()]
    assert names.index("virtualization") + 1 == names.index("delay backend of a run")
