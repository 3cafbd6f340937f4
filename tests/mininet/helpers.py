"""Shared helpers for tests that build real emulated networks."""

import os
import subprocess
import sys
import textwrap

from testbed import spec as S

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def topology(name):
    return S.load(os.path.join(ROOT, "topologies", f"{name}.yaml"))


def spec_of(text):
    return S.loads(textwrap.dedent(text))


def cli_argv(*args):
    return [sys.executable, "-m", "testbed.cli", *args]


def root_links_with(prefix):
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()
            if line.split(":")[1].strip().startswith(prefix)]


def processes_in(netns_inodes):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino in netns_inodes:
                found.append(int(pid))
        except OSError:
            pass
    return found
