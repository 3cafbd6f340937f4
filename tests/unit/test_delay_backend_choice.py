"""Which delay backend "auto" picks, and what doctor says about it."""

import pytest

from testbed.emulation import capability
from testbed.emulation.delay import DELAYLINE_ENV, CompiledRelayDelay, make_backend


@pytest.fixture
def no_netem(monkeypatch):
    monkeypatch.setattr(capability, "qdisc_available", lambda kind: kind != "netem")


@pytest.fixture
def with_netem(monkeypatch):
    monkeypatch.setattr(capability, "qdisc_available", lambda kind: True)


def test_auto_takes_netem_where_the_kernel_has_it(with_netem, monkeypatch):
    monkeypatch.setenv(DELAYLINE_ENV, "/bin/true")
    assert capability.choose_delay_backend("auto") == "netem"


def test_auto_takes_the_compiled_delay_line_without_netem_when_it_runs(no_netem, monkeypatch):
    monkeypatch.setenv(DELAYLINE_ENV, "/bin/true")
    assert capability.choose_delay_backend("auto") == "crelay"
    check = capability.delay_backend_check()
    assert check.ok and check.detail.startswith("crelay")


@pytest.mark.parametrize("program", ["/nonexistent/testbed-delayline", "/bin/false"])
def test_auto_falls_back_to_the_python_relay_and_doctor_says_how_to_build(no_netem, monkeypatch,
                                                                         program):
    monkeypatch.setenv(DELAYLINE_ENV, program)
    assert capability.choose_delay_backend("auto") == "relay"
    check = capability.delay_backend_check()
    assert not check.ok and not check.essential
    assert check.detail.startswith("relay") and program in check.detail
    assert "scripts/install.sh" in check.fix


def test_asking_for_crelay_without_the_binary_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(DELAYLINE_ENV, "/nonexistent/testbed-delayline")
    with pytest.raises(capability.CapabilityError, match="scripts/install.sh"):
        capability.choose_delay_backend("crelay")


def test_crelay_runs_the_binary_with_the_relays_options(monkeypatch):
    monkeypatch.setenv(DELAYLINE_ENV, "/opt/x/testbed-delayline")
    backend = make_backend("crelay")
    assert isinstance(backend, CompiledRelayDelay) and backend.uses_relays
    assert backend.command() == ["/opt/x/testbed-delayline"]
    assert "crelay" in capability.DELAY_BACKENDS


def test_a_links_option_for_the_compiled_line_carries_its_interfaces_socket_and_settings():
    from testbed import spec as specmod
    from testbed.emulation.delay import link_option
    from testbed.emulation.plan import make_plan
    spec = specmod.loads("""
datacenters: [{name: east, workers: 1}, {name: west, workers: 1}]
wan: [{between: [east, west], bw: 20mbit, delay: 40ms, forward: {jitter: 2ms, loss: 1%}}]
""")
    w = make_plan(spec, "00aa", with_relays=True).wan[0]
    option = link_option(w, spec.wan[0], "/run/x/relay-0.sock", 7, "/proc/42/ns/net")
    assert option == (f"a={w.relay_a},b={w.relay_b},control=/run/x/relay-0.sock,"
                      "netns=/proc/42/ns/net,seed=7,"
                      "ab-delay=0.04,ab-jitter=0.002,ab-loss=0.01,"
                      "ba-delay=0.04,ba-jitter=0.0,ba-loss=0.0")
    assert w.relay_a == "tb00aad0-a" and w.relay_b == "tb00aad0-b"
