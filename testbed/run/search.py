"""A search run's part in the runner: its agents (a machine on every host
of the cluster DC, the scheduler on the cluster's router) and how it
ended.  The network, the launch, the watch and the teardown are the
runner's, as for an experiment."""

import dataclasses

from agents.config import AgentConfig, Peer, SearchSection, Transport
from agents.planning.wan import GOODPUT_SHARE
from testbed.run import runend
from testbed.spec.units import plural

# What ends a search: its scheduler ran every stage and told the machines.
FINISHED = "search-finished"


def agent_configs(spec, net, folder, agent_port, scheduler_port):
    search = spec.search
    hosts = {h.name: h for h in net.plan.hosts}
    machines = [Peer(name, hosts[name].ip, agent_port, search.dc) for name in search.machines]
    scheduler = Peer(f"{search.dc}-c", net.plan.router(search.dc).ip, scheduler_port, search.dc)
    # The transport's frames carry one chunk each, so a chunk is what is paced.
    transport = Transport(chunk_bytes=search.chunk_bytes)
    configs = [AgentConfig(name=p.name, role="machine", dc=p.dc, host=p.host, port=p.port,
                           events=folder.agent_file(p.name, "jsonl"), workers=machines,
                           coordinator=scheduler, transport=transport)
               for p in machines]
    params = dataclasses.asdict(search.params)
    params["scale"] = search.params.scale * 1e6          # model sizes in bytes
    configs.append(AgentConfig(
        name=scheduler.name, role="scheduler", dc=scheduler.dc, host=scheduler.host,
        port=scheduler.port, events=folder.agent_file(scheduler.name, "jsonl"), workers=machines,
        coordinator=scheduler, transport=transport,
        search=SearchSection(search=params, policy=search.policy,
                             policy_options=dict(search.policy_options),
                             # Every NIC, each way, in payload bytes/s: the big switch's ports.
                             capacity=spec.lan.rate * GOODPUT_SHARE / 8)))
    return configs


def conclude(seen, detail, events, max_time=None):
    """The RunEnd of a search from what the runner saw and the scheduler's events."""
    finished = any(e["ev"] == "search_done" for e in events)
    if seen == runend.WORKERS_FINISHED and finished:
        return runend.RunEnd("completed", FINISHED, None, "every stage of every task finished")
    if seen == runend.WORKERS_FINISHED:
        return runend.RunEnd("failed", runend.AGENT_FAILURE, None,
                             "the machines stopped before the search finished")
    if seen == runend.TIME:
        coflows = sum(e["ev"] == "coflow_done" for e in events)
        limit = f" of {max_time:g}s" if max_time is not None else ""
        if not coflows:
            return runend.RunEnd("failed", runend.TIME, None,
                                 f"the time limit{limit} ended the search before any coflow finished")
        return runend.RunEnd("completed", runend.TIME, None,
                             f"the time limit{limit} ended the search after {plural(coflows, 'coflow')}")
    return runend.conclude(seen, detail)
