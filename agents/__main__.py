"""python -m agents ROLE --config FILE.json"""

import argparse
import importlib
import signal
import sys

from agents.config import AgentConfig
from agents.events import EventLog
from agents.transport import PeerDead

# Each role is a module of agents.roles with a run(cfg, log).
ROLES = ("server", "worker", "probe", "coordinator", "machine", "scheduler")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m agents")
    p.add_argument("role", choices=ROLES)
    p.add_argument("--config", required=True)
    args = p.parse_args(argv)
    try:
        cfg = AgentConfig.load(args.config)
    except (OSError, ValueError, TypeError) as e:
        print(f"error: cannot read agent config {args.config}: {e}", file=sys.stderr)
        return 2
    if cfg.role != args.role:
        print(f"error: {args.config} is for a {cfg.role}, not a {args.role}", file=sys.stderr)
        return 2
    log = EventLog(cfg.events, cfg.name)

    def terminate(signum, frame):
        raise SystemExit(143)

    signal.signal(signal.SIGTERM, terminate)
    run = importlib.import_module(f"agents.roles.{args.role}").run
    try:
        run(cfg, log)
    except PeerDead as e:
        log("error", reason=str(e), peer=e.peer)
        print(f"error: {cfg.name}: {e}", file=sys.stderr)
        return 3
    except SystemExit:
        log("stopped", reason="terminated")
        raise
    finally:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
