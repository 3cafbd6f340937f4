#!/usr/bin/env python3
"""Boots the testbed's Debian 12 VM (vm/build.sh's image) with QEMU.

    vm/run.py -- 'testbed doctor'      run a shell command in the VM (in the
                                       checkout, /testbed); its output comes
                                       here and its exit code is this one's
    vm/run.py --shell                  boot with systemd, root's shell on this
                                       terminal (Ctrl-A x quits), ssh on
                                       localhost:2222 (user vagrant)

KVM where it boots a guest, else TCG (software emulation), said at start;
GEO_VM_ACCEL=kvm|tcg skips the probe.  The image is never written (QEMU's
snapshot mode), so any number of VMs can boot it at once.  The checkout is
shared read-only (9p) with a tmpfs overlay for the guest's writes, or
read-write with --shell.  Only the Python standard library, as this runs
with the host's python3.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
QEMU = "qemu-system-x86_64"
PROBE_SECONDS = 15.0
# A kernel that booted under KVM prints its banner within a second or two;
# where nested virtualization is broken it hangs entering long mode, silent.
PROBE_BANNER = b"Linux version"
PROBE_CACHE = "/run/geo-testbed-vm-accel"
RUNNING = "geo-vm: running"          # printed by the guest's init before the command
KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\] ")   # the kernel's console messages ("sysrq: Power Off")
BOOT_TIMEOUT_EXIT = 124


class VmError(RuntimeError):
    """Something that stops the VM from running; one sentence."""


def image_dir():
    """The cached image's directory, built first if missing (vm/build.sh)."""
    r = subprocess.run(["bash", os.path.join(HERE, "build.sh")], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise VmError("building the VM image failed (its output is above)")
    return r.stdout.strip().splitlines()[-1]


def kvm_usable():
    return os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK)


def probe_kvm(image):
    """True if a guest kernel boots under KVM here: the image's kernel, with
    no disk, must print its banner within PROBE_SECONDS."""
    args = [QEMU, "-accel", "kvm", "-cpu", "host", "-m", "256M", "-smp", "1",
            "-kernel", os.path.join(image, "vmlinuz"),
            "-append", "console=ttyS0 earlyprintk=serial panic=-1",
            "-nic", "none", "-display", "none", "-serial", "stdio", "-monitor", "none",
            "-no-reboot"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    seen = bytearray()
    reader = threading.Thread(target=lambda: seen.extend(proc.stdout.read()), daemon=True)
    reader.start()
    deadline = time.monotonic() + PROBE_SECONDS
    while time.monotonic() < deadline and PROBE_BANNER not in seen and proc.poll() is None:
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    reader.join(timeout=2)
    return PROBE_BANNER in seen


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def choose_accel(image):
    """(accelerator, why): GEO_VM_ACCEL if set; else KVM if its device is
    usable and a probe boot shows it works, the answer kept until the host
    reboots; else TCG."""
    forced = os.environ.get("GEO_VM_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise VmError(f"GEO_VM_ACCEL is kvm or tcg, not {forced!r}")
        return forced, "GEO_VM_ACCEL"
    if not kvm_usable():
        return "tcg", "no usable /dev/kvm"
    try:
        with open(PROBE_CACHE) as f:
            cached_boot, accel = f.read().split()
        if cached_boot == boot_id():
            return accel, ("KVM boots guests here" if accel == "kvm" else
                           "/dev/kvm is there but a guest kernel hangs under it")
    except (OSError, ValueError):
        pass
    accel = "kvm" if probe_kvm(image) else "tcg"
    try:
        with open(PROBE_CACHE, "w") as f:
            f.write(f"{boot_id()} {accel}\n")
    except OSError:
        pass
    return accel, ("KVM boots guests here" if accel == "kvm" else
                   "/dev/kvm is there but a guest kernel hangs under it (probe boot)")


def qemu_args(image, accel, cpus, memory, append, shares):
    cpu = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else \
        ["-accel", "tcg,thread=multi", "-cpu", "max"]
    args = [QEMU] + cpu + ["-smp", str(cpus), "-m", memory,
                           "-kernel", os.path.join(image, "vmlinuz"),
                           "-initrd", os.path.join(image, "initrd.img"),
                           "-append", append,
                           "-drive", f"file={os.path.join(image, 'disk.raw')},format=raw,"
                                     f"if=virtio,snapshot=on",
                           "-display", "none", "-no-reboot"]
    for tag, path, readonly in shares:
        args += ["-virtfs", f"local,path={path},mount_tag={tag},security_model=none"
                            + (",readonly=on" if readonly else "")]
    return args


KERNEL_ARGS = "root=/dev/vda rw console=ttyS0 panic=-1"


def command_script(command):
    """The script the guest's init runs: the marker, then the command with
    its output through a pipe, so that programs see no terminal (no progress
    spinners on the console) and print tables COLUMNS wide; its exit code."""
    return (f"echo '{RUNNING}'\n"
            f"export COLUMNS=${{COLUMNS:-160}}\n"
            f"( {command}\n) 2>&1 | cat\n"
            f"exit ${{PIPESTATUS[0]}}\n")


def run_command(image, accel, command, cpus, memory, timeout, verbose):
    """Boot, run `command` (a shell command) in /testbed, power off; returns
    its exit code.  The boot's own messages show only with `verbose` or
    when the command never started."""
    exchange = tempfile.mkdtemp(prefix="geo-vm-")
    try:
        with open(os.path.join(exchange, "command"), "w") as f:
            f.write(command_script(command))
        args = qemu_args(image, accel, cpus, memory,
                         f"{KERNEL_ARGS} quiet init=/usr/local/sbin/geo-vm-init",
                         [("geo-testbed", CHECKOUT, True), ("geo-exchange", exchange, False)])
        args += ["-nic", "none", "-serial", "stdio", "-monitor", "none"]
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        boot_lines, started = [], False
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            for raw in proc.stdout:
                line = raw.decode(errors="replace").replace("\r", "")
                if not started and line.strip() == RUNNING:
                    started = True
                    continue
                if verbose or (started and not KERNEL_LINE.match(line)):
                    sys.stdout.write(line)
                    sys.stdout.flush()
                else:
                    boot_lines.append(line)
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if not started:
            sys.stdout.write("".join(boot_lines[-40:]))
        try:
            with open(os.path.join(exchange, "exit-code")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            if proc.returncode == -9:
                raise VmError(f"the VM did not finish within {timeout:g} s and was stopped") from None
            raise VmError("the VM stopped before the command finished"
                          + ("" if started else " (it never started: the boot's last lines are above)")) from None
    finally:
        shutil.rmtree(exchange, ignore_errors=True)


def run_shell(image, accel, cpus, memory, ssh_port):
    args = qemu_args(image, accel, cpus, memory, KERNEL_ARGS,
                     [("geo-testbed", CHECKOUT, False)])
    args += ["-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
             "-serial", "mon:stdio"]
    os.execvp(args[0], args)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("command", nargs="*", help="a shell command to run in /testbed in the VM")
    p.add_argument("--shell", action="store_true", help="boot with systemd and log in here")
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--memory", default="4G")
    p.add_argument("--timeout", type=float, default=3600.0,
                   help="seconds before the VM is stopped (the command counts as failed)")
    p.add_argument("--ssh-port", type=int, default=2222, help="with --shell")
    p.add_argument("--verbose", action="store_true", help="show the boot's messages too")
    args = p.parse_args()
    if bool(args.command) == args.shell:
        p.error("give a command to run, or --shell")
    if args.cpus < 1 or args.timeout <= 0:
        p.error("--cpus and --timeout must be positive")
    if os.geteuid() != 0:
        print("vm/run.py must run as root (the image is built and read as root).", file=sys.stderr)
        return 2
    if shutil.which(QEMU) is None:
        print(f"{QEMU} is not installed: run vm/tools.sh (apt-get install qemu-system-x86).",
              file=sys.stderr)
        return 2
    try:
        image = image_dir()
        accel, why = choose_accel(image)
        print(f"VM: {accel.upper()} ({why}), {args.cpus} vCPUs, {args.memory} memory, "
              f"image {image}", flush=True)
        if args.shell:
            run_shell(image, accel, args.cpus, args.memory, args.ssh_port)
        command = shlex.join(args.command) if len(args.command) > 1 else args.command[0]
        started = time.monotonic()
        code = run_command(image, accel, command, args.cpus, args.memory, args.timeout,
                           args.verbose)
        print(f"VM: the command exited {code}, {time.monotonic() - started:.0f} s after the "
              f"boot began", flush=True)
        return code
    except VmError as e:
        print(f"VM: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
