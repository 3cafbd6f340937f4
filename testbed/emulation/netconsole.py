"""The console of `testbed net`: poke a running emulated WAN by hand.

Link changes use the same grammar as a running experiment's console
(testbed/emulation/commands.py), parsed whole before anything changes.
"""

import cmd

from testbed.emulation import measure
from testbed.emulation.commands import CommandError, failure_line, links_text, parse_link_change, split_words
from testbed.emulation.network import NetworkError, run_in

# iperf3 leaves out its first second as warm-up; the console waits for the whole run.
MIN_IPERF_SECONDS, MAX_IPERF_SECONDS = 2, 600


class NetConsole(cmd.Cmd):
    intro = "Type help for commands, exit to tear the network down."
    prompt = "testbed> "

    def __init__(self, net, out):
        super().__init__(stdout=out)
        self.net = net
        self.out = out
        self.dcs = [dc.name for dc in net.spec.datacenters]

    def say(self, text):
        self.out.write(text + "\n")
        self.out.flush()

    def onecmd(self, line):
        """One command; whatever goes wrong is one line and the network stays up."""
        try:
            return super().onecmd(line)
        except (CommandError, NetworkError, KeyError) as e:
            self.say(f"error: {str(e.args[0] if e.args else e).strip()}")
        except KeyboardInterrupt:
            self.say("interrupted")
        except Exception as e:  # noqa: BLE001 - leaving would tear the network down
            self.say(f"error: {failure_line(e)}")
        return False

    def emptyline(self):
        return False

    def default(self, line):
        self.say(f"error: unknown command {line.split()[0]!r}; type help")

    def do_hosts(self, arg):
        """hosts: every host with its address."""
        for h in self.net.plan.hosts:
            self.say(f"{h.name:24} {h.ip:15} {h.role}")

    def do_links(self, arg):
        """links: every WAN direction as configured now."""
        self.say(links_text(self.net.current))

    def do_ping(self, arg):
        """ping A B: median RTT from host A to host B."""
        a, b = self._two(split_words(arg), "ping A B")
        self.say(f"{a} -> {b}: {measure.ping_rtt(self.net, a, b) * 1e3:.2f} ms")

    def do_iperf(self, arg):
        """iperf A B [SECONDS]: TCP goodput from host A to host B."""
        words = split_words(arg)
        if not 2 <= len(words) <= 3:
            raise CommandError("usage: iperf A B [SECONDS]")
        seconds = 5.0
        if len(words) == 3:
            try:
                seconds = float(words[2])
            except ValueError:
                seconds = -1.0
            if not MIN_IPERF_SECONDS <= seconds <= MAX_IPERF_SECONDS:
                raise CommandError(f"SECONDS is a number from {MIN_IPERF_SECONDS} to {MAX_IPERF_SECONDS}, "
                                   "e.g. iperf A B 10")
        a, b = self._two(words[:2], "iperf A B [SECONDS]")
        bps, _ = measure.iperf3(self.net, a, b, seconds=seconds)
        self.say(f"{a} -> {b}: {bps / 1e6:.2f} Mbit/s goodput")

    def do_link(self, arg):
        """link A B [bw RATE] [delay TIME] [jitter TIME] [loss SHARE] [oneway],
        link A B down|up: change a WAN link live, both directions unless
        oneway (A -> B)."""
        a, b, both, changes = parse_link_change(split_words(arg), self.dcs)
        self.net.change_link(a, b, both=both, source="console", **changes)
        self.do_links("")

    def do_sh(self, arg):
        """sh HOST COMMAND...: run a command in a host's namespace."""
        words = split_words(arg)
        if len(words) < 2:
            raise CommandError("usage: sh HOST COMMAND...")
        self.say(run_in(self.net.node(words[0]), words[1:], check=False).rstrip())

    def do_exit(self, arg):
        """exit: tear the network down and leave."""
        return True

    do_quit = do_exit

    def do_EOF(self, arg):
        self.say("")
        return True

    def _two(self, words, usage):
        if len(words) != 2:
            raise CommandError(f"usage: {usage}")
        for w in words:
            self.net.node(w)
        return words

    def completedefault(self, text, line, begidx, endidx):
        names = self.dcs if line.startswith("link") else self.net.host_names()
        return [n for n in names if n.startswith(text)]
