"""Reading a small text file a user named (a topology, a trace) without
trusting what it is: a FIFO would block, a device would never end, a huge
file would be read whole.  The kind of file is checked before opening and
again on the open descriptor, in case it was swapped in between."""

import os
import stat

FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
              (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


class TextFileError(ValueError):
    """One sentence on why the file cannot be read; never its contents."""


def read_small_text(path, what, limit):
    """The UTF-8 text of a regular file of at most `limit` bytes; `what`
    names the file in errors ("trace x.csv")."""
    def refuse_unless_regular(mode):
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in FILE_KINDS if test(mode)), "not a regular file")
            raise TextFileError(f"{what} is {kind}, not a text file")
    try:
        refuse_unless_regular(os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            refuse_unless_regular(os.fstat(f.fileno()).st_mode)
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise TextFileError(f"cannot read {what}: no such file") from None
    except OSError as e:
        raise TextFileError(f"cannot read {what}: {e.strerror}") from None
    if len(data) > limit:
        raise TextFileError(f"{what} is over {limit // 1024} KiB; it must be smaller")
    if b"\0" in data:
        raise TextFileError(f"{what} is not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TextFileError(f"{what} is not UTF-8 text") from None
