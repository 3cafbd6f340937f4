"""A run's folder: everything about one experiment, written as it happens.

    results/runs/<time>-<name>/
      topo.yaml          the file as it was run
      spec.json          the resolved spec (units as numbers)
      env.json           facts about the machine and the emulation
      status.json        running | completed | failed | killed, why, and when
      control.sock       the control socket, while the run lives
      agents/NAME.json   each agent's config; NAME.jsonl its events; NAME.log its output
      links.jsonl        every live change of a WAN link
      link_samples.jsonl each WAN direction's configured rate and bytes sent, every second
      cpu_samples.jsonl  the share of the machine's cores busy, every second (every machine's, each
                         line naming it, when the WAN spans machines)
      clocks.json        when the WAN spans machines: each one's clock offset and its DCs,
                         and the underlay's round trip between them
      summary.json, *.png   written by the report
"""

import dataclasses
import json
import os
import re
import stat
import time

CONTROL_SOCKET = "control.sock"
# <time>-<spec name>[-n], as create() names a folder.
RUN_NAME_RE = re.compile(r"\d{8}-\d{6}-[a-z][a-z0-9-]{0,14}(-\d{1,6})?")


class RunFolder:
    def __init__(self, path):
        self.path = path
        self.agents = os.path.join(path, "agents")
        self.links = os.path.join(path, "links.jsonl")
        self.link_samples = os.path.join(path, "link_samples.jsonl")
        self.cpu_samples = os.path.join(path, "cpu_samples.jsonl")

    @classmethod
    def create(cls, root, spec, source_text):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = os.path.join(root, f"{stamp}-{spec.name}")
        n = 1
        while os.path.exists(path):
            n += 1
            path = os.path.join(root, f"{stamp}-{spec.name}-{n}")
        os.makedirs(os.path.join(path, "agents"))
        folder = cls(path)
        with open(os.path.join(path, "topo.yaml"), "w") as f:
            f.write(source_text)
        folder.write_json("spec.json", dataclasses.asdict(spec))
        folder.set_status("running")
        return folder

    def file(self, name):
        return os.path.join(self.path, name)

    def agent_file(self, agent, ext):
        return os.path.join(self.agents, f"{agent}.{ext}")

    def write_json(self, name, data):
        tmp = self.file(name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, default=str)
            f.write("\n")
        os.replace(tmp, self.file(name))

    def read_json(self, name, default=None):
        """The file's JSON, or `default` when it is missing, broken or of
        another kind than `default` (a list where a mapping belongs)."""
        try:
            with open(self.file(name)) as f:
                value = json.load(f)
        except (OSError, ValueError):
            return default
        if default is not None and not isinstance(value, type(default)):
            return default
        return value

    def set_status(self, status, reason="", **facts):
        """facts: more about how the run ended (stopped_by, target_reached)."""
        self.write_json("status.json", {"status": status, "reason": reason, **facts,
                                        "wall": time.time()})

    def agent_names(self):
        return sorted(f[:-5] for f in os.listdir(self.agents) if f.endswith(".json"))


def close_killed(path, reason):
    """Close the folder of a run whose runner was killed: remove its control
    socket, and turn a status that still says running into killed (a status
    the runner wrote itself is kept).  Returns True if the status changed."""
    sock = os.path.join(path, CONTROL_SOCKET)
    try:
        if stat.S_ISSOCK(os.lstat(sock).st_mode):
            os.unlink(sock)
    except OSError:
        pass
    folder = RunFolder(path)
    if folder.read_json("status.json", {}).get("status") != "running":
        return False
    folder.set_status("killed", reason)
    return True


def is_run_name(name):
    """Whether `name` is one a run folder gets (never `.`, `..` or a path)."""
    return bool(RUN_NAME_RE.fullmatch(name))


def is_run_folder(path):
    return os.path.isfile(os.path.join(path, "status.json")) and os.path.isdir(os.path.join(path, "agents"))


def newest_run(root):
    if not os.path.isdir(root):
        return None
    runs = [os.path.join(root, d) for d in sorted(os.listdir(root))
            if is_run_folder(os.path.join(root, d))]
    return runs[-1] if runs else None
