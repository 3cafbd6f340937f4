"""PS push+pull goodput against iperf3 on the same emulated link, in one run.

Builds two data centers joined by one WAN link, a parameter server in one and
a worker in the other, and moves a 64 MB model by the real PS agents
(`python -m agents server|worker`, SSGD over the PS star, a synthetic model of
exactly 64 MB, no compute time): each iteration pushes 64 MB and pulls 64 MB.
The executor sends each summed segment back at once, so pushes and pulls
overlap and both directions of the link carry data at the same time; the
like-for-like reference is therefore iperf3 moving the same 64 MB both ways
at once (`--bidir`).  Prints the goodput of each (bytes of both directions
over the time) and the ratio PS / iperf3, for a 50 Mbit/s shaped link and
for an unshaped one (shaped at 10 Gbit/s, so the emulation path is the limit).

    sudo .venv/bin/python benchmarks/transport_goodput.py [--iterations 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from agents.config import AgentConfig, Peer, Transport, WorkloadSettings
from agents.events import read_events
from agents.overlay.layout import Layout
from testbed import spec as specmod
from testbed.emulation import network

MODEL_BYTES = 64 * 1024 * 1024
LINKS = {"shaped 50mbit": "bw: 50mbit\n    delay: 10ms", "unshaped": "bw: 10gbit"}


def topology(link):
    return specmod.loads(f"""
name: bench
datacenters:
  - {{name: east, workers: 1}}
  - {{name: west, servers: 1}}
wan:
  - between: [east, west]
    {link}
""")


def ps_goodput(net, folder, iterations):
    server = Peer("west-s0", net.ip("west-s0"), 7000, "west")
    worker = Peer("east-w0", net.ip("east-w0"), 7000, "east")
    workload = WorkloadSettings(kind="synthetic", model=f"flat-{MODEL_BYTES // 4}", compute_time=0.0,
                        lr=0.0, momentum=0.0)
    layout = Layout(size=0, workers=[[worker.name, worker.dc]], servers=[[server.name, server.dc]],
                    server_dc=server.dc, dcs=["east", "west"], links=[]).to_dict()
    procs = []
    for role, me in (("server", server), ("worker", worker)):
        cfg = AgentConfig(name=me.name, role=role, dc=me.dc, host=me.host, port=me.port,
                          events=os.path.join(folder, f"{me.name}.jsonl"), servers=[server],
                          workers=[worker], max_iterations=iterations, workload=workload,
                          layout=layout,
                          transport=Transport(dead_after=60.0))
        path = os.path.join(folder, f"{me.name}.json")
        cfg.save(path)
        procs.append(net.node(me.name).popen([sys.executable, "-m", "agents", role, "--config", path]))
    for p in procs:
        if p.wait(timeout=3600) != 0:
            raise SystemExit(f"a PS agent failed with code {p.returncode}")
    syncs = [e["sync"] for e in read_events(os.path.join(folder, "east-w0.jsonl")) if e["ev"] == "iter"]
    # The first iteration also opens the connections; the rest are steady state.
    steady = syncs[1:] or syncs
    return 2 * MODEL_BYTES * 8 / statistics.median(steady), syncs


def iperf3_goodput(net):
    """Goodput of iperf3 moving MODEL_BYTES each way at once (both
    directions' received bits over the time), and each direction's."""
    server = net.node("west-s0").popen(["iperf3", "-s", "-p", "5201"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(50):
            r = subprocess.run(["mnexec", "-a", str(net.node("east-w0").pid), "iperf3", "-c",
                                net.ip("west-s0"), "-p", "5201", "-n", str(MODEL_BYTES), "--bidir",
                                "-J"], capture_output=True, text=True)
            if r.returncode == 0:
                break
        end = json.loads(r.stdout)["end"]
        rates = [end["sum_received"]["bits_per_second"],
                 end["sum_received_bidir_reverse"]["bits_per_second"]]
        return sum(rates), rates
    finally:
        server.terminate()
        server.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iterations", type=int, default=3)
    args = p.parse_args()
    rows = []
    for name, link in LINKS.items():
        with network.build(topology(link)) as net, tempfile.TemporaryDirectory() as folder:
            ps, syncs = ps_goodput(net, folder, args.iterations)
            ip, ip_rates = iperf3_goodput(net)
            rows.append((name, ps, ip, ps / ip))
            print(f"{name}: PS push+pull {ps / 1e6:.1f} Mbit/s (sync times "
                  f"{', '.join(f'{s:.2f}s' for s in syncs)}), iperf3 {ip / 1e6:.1f} Mbit/s "
                  f"(both ways at once: {', '.join(f'{r / 1e6:.1f}' for r in ip_rates)}), "
                  f"ratio PS/iperf3 = {ps / ip:.3f}  [delay by {net.backend.name}]", flush=True)
    print("\nlink            PS Mbit/s  iperf3 Mbit/s  PS/iperf3")
    for name, ps, ip, ratio in rows:
        print(f"{name:15} {ps / 1e6:9.1f}  {ip / 1e6:13.1f}  {ratio:9.3f}")


if __name__ == "__main__":
    main()
