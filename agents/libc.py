"""The few libc calls the agents need that Python does not offer:
dying with one's parent and entering another process's namespaces."""

import ctypes
import os

PR_SET_PDEATHSIG = 1
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000


def load_libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_ulong]
    libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


def die_with_parent(libc, sig):
    if libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


def setns(libc, pid, kind, flag):
    fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
    try:
        if libc.setns(fd, flag) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into the {kind} namespace of pid {pid}: {os.strerror(err)}")
    finally:
        os.close(fd)
