"""`experiment.programs`: the commands a `workload: command` experiment
runs in its hosts instead of the testbed's agents.

    experiment:
      workload: command
      programs:
        - hosts: workers              # workers, servers, all, a DC's name, or a list of hosts
          command: python3 train.py --rank {rank} --world {world_size}
          env: {OMP_NUM_THREADS: "1"}
      master_port: 29500              # MASTER_PORT (default 29500)
      user: alice                     # who runs them (default: the user who ran sudo)
      workdir: ../code                # where they run, from topo.yaml's folder (default: that one)

Each process is one rank: ranks go in the order of `programs`, and of the
hosts in each entry as topo.yaml lists them.  The command is a shell line
whose {fields} are filled in per process (FIELDS); the same values are in
its environment (ENVIRONMENT), with what standard launchers read.
"""

import string
from dataclasses import dataclass

from testbed.spec import validate as check
from testbed.spec.declare import Key, Section
from testbed.spec.units import shown
from testbed.spec.validate import SpecError

FIELDS = ("rank", "world_size", "master_addr", "master_port", "host", "dc", "ip", "run_dir",
          "metrics")
ENVIRONMENT = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               "TESTBED_HOST", "TESTBED_DC", "TESTBED_IP", "TESTBED_IFNAME", "TESTBED_PEERS",
               "TESTBED_METRICS", "TESTBED_RUN")
GROUPS = ("workers", "servers", "all")
PROGRAM = Section("experiment.programs[]", "one program and the hosts that run it", [
    Key("hosts", "hosts", "workers, servers, all, a data center's name, or a list of hosts",
        default="workers"),
    Key("command", "text", "the shell line each process runs, with {fields}: " + ", ".join(FIELDS),
        required=True),
    Key("env", "env", "more environment variables: NAME: value"),
])
KEYS = PROGRAM.names


@dataclass(frozen=True)
class ProgramSpec:
    hosts: tuple          # host names, in rank order
    command: str          # a shell line with {fields}
    env: tuple = ()       # ((NAME, value), ...)


def hosts_of(selector, datacenters, path):
    """The host names a selector names, in topo.yaml's order."""
    if selector in GROUPS:       # a host is DC-sN (a server) or DC-wN (a worker)
        return [h for d in datacenters for h in d.hosts
                if selector == "all" or h[len(d.name) + 1] == selector[0]]
    if isinstance(selector, str):
        dcs = {d.name: d for d in datacenters}
        if selector not in dcs:
            raise SpecError(path, f"{shown(selector)} is not workers, servers, all, a data "
                                  f"center or a list of hosts")
        return list(dcs[selector].hosts)
    names = check.sequence(selector, path, "host names")
    known = {h for d in datacenters for h in d.hosts}
    for i, name in enumerate(names):
        if name not in known:
            raise SpecError(f"{path}[{i}]", f"unknown host {shown(name)} (hosts: "
                                            f"{', '.join(sorted(known))})")
    return list(names)


def parse(raw, datacenters, path):
    """The `programs` list -> (ProgramSpec, ...); a host runs one program."""
    entries = check.sequence(raw, path, "entries of hosts and command")
    if not entries:
        raise SpecError(path, "a command workload needs at least one program")
    out, taken = [], {}
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        check.mapping(entry, where, "hosts, command, env")
        PROGRAM.check_keys(entry, where)
        if "command" not in entry:
            raise SpecError(f"{where}.command", "missing: the shell line to run")
        command = entry["command"]
        if not isinstance(command, str) or not command.strip():
            raise SpecError(f"{where}.command", f"{shown(command)} is not a shell line (quote it)")
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(command) if f is not None]
        except ValueError as e:
            raise SpecError(f"{where}.command", f"{e}: write {{{{ and }}}} for braces") from None
        for field in fields:
            if field not in FIELDS:
                raise SpecError(f"{where}.command", f"unknown field {{{field}}}; fields: "
                                                    f"{', '.join('{' + f + '}' for f in FIELDS)}")
        hosts = hosts_of(entry.get("hosts", PROGRAM["hosts"].default), datacenters, f"{where}.hosts")
        if not hosts:
            raise SpecError(f"{where}.hosts", "names no host")
        for h in hosts:
            if h in taken:
                raise SpecError(f"{where}.hosts", f"{h} already runs program {taken[h]}: a host "
                                                  "runs one")
            taken[h] = i
        env = check.mapping(entry.get("env", {}), f"{where}.env", "NAME: value")
        for name, value in env.items():
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise SpecError(f"{where}.env.{name}", "must be a string or a number")
            if name in ENVIRONMENT:
                raise SpecError(f"{where}.env.{name}", "is set by the testbed for every process")
        out.append(ProgramSpec(tuple(hosts), command, tuple((k, str(v)) for k, v in env.items())))
    return tuple(out)
