"""What the agents on other machines wrote, brought into the driver's run
folder and put on the driver's clock."""

import io
import json
import tarfile


def unpack(data, root):
    """A machine's gzipped tar of its copy of the run folder, into root.
    What a machine sends is not trusted: tar's "data" filter refuses
    members that would land outside root, links out, devices."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(root, filter="data")


def shift_times(path, by):
    """Every event's `t` in a JSON-lines file moved by `by` seconds (a torn
    last line is kept as it is)."""
    if not by:
        return
    with open(path) as f:
        lines = f.readlines()
    out = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if isinstance(event, dict) and isinstance(event.get("t"), (int, float)):
            event["t"] += by
        out.append(json.dumps(event) + "\n")
    with open(path, "w") as f:
        f.writelines(out)
