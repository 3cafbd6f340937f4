"""The live page of a real run, driven in a headless browser, and the
static replay of a run opened with no network at all.  Each test stands
on its own, in any order: the page tests share one long run and look only
at what they change; the end of a run and its replay have a short run of
their own."""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from agents.events import read_events
from testbed import spec as specmod
from testbed.emulation.plan import make_plan
from testbed.spec.units import parse_rate
from tests import browser
from tests.mininet.helpers import ROOT, cli_argv, interruptible

pytestmark = [pytest.mark.mininet,
              pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))]
with open(os.path.join(ROOT, "topologies", "quickstart.yaml")) as _f:
    QUICKSTART = _f.read()
STOP = "stop: {accuracy: 0.9, iterations: 400, time: 3min}"
URL_RE = re.compile(r"live page: (http://127\.0\.0\.1:(\d+)/\?token=(\S+))")
DIRECTIONS = {"virginia>frankfurt", "frankfurt>virginia", "virginia>tokyo", "tokyo>virginia",
              "frankfurt>tokyo", "tokyo>frankfurt"}


class LiveRun:
    def __init__(self, proc, out, runs):
        self.proc, self.out, self.runs = proc, out, runs
        self.url = self.port = self.token = None

    def wait_for_url(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = URL_RE.search(self.out.read_text())
            if m:
                self.url, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
                return
            time.sleep(0.2)
        raise AssertionError("no live page address: " + self.out.read_text()[-2000:])

    @property
    def folder(self):
        (name,) = os.listdir(self.runs)
        return os.path.join(self.runs, name)

    def link_changes(self):
        return read_events(os.path.join(self.folder, "links.jsonl"))


def start_run(tmp, text):
    topo = tmp / "topo.yaml"
    topo.write_text(text)
    out, runs = tmp / "out.txt", tmp / "runs"
    with open(out, "w") as sink:
        proc = subprocess.Popen(cli_argv("run", str(topo), "--runs", str(runs), "--ui"),
                                stdout=sink, stderr=subprocess.STDOUT, preexec_fn=interruptible)
    run = LiveRun(proc, out, runs)
    run.wait_for_url()
    return run


@contextlib.contextmanager
def stopped_at_the_end(run):
    try:
        yield run
    finally:
        if run.proc.poll() is None:
            run.proc.send_signal(signal.SIGINT)
        run.proc.wait(timeout=120)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A run that lives as long as the page tests need it (ended when they
    are done): synthetic work, so it costs the machine little meanwhile."""
    text = QUICKSTART.replace(STOP, "stop: {iterations: 1000000, time: 10min}").replace(
        "  workload: train ", "  workload: synthetic\n  compute_time: 200ms #").replace(
        "  dataset: digits\n", "")
    with stopped_at_the_end(start_run(tmp_path_factory.mktemp("ui-live"), text)) as run:
        yield run


@pytest.fixture(scope="module")
def ended(tmp_path_factory):
    """A short run that trains, with virginia -> tokyo changed to 8 Mbit/s
    at 2 s, for the tests of how a run ends and how it is replayed."""
    text = QUICKSTART.replace(STOP, "stop: {iterations: 100000, time: 10s}") + (
        "dynamics:\n  - {at: 2s, link: [virginia, tokyo], direction: forward, bw: 8mbit}\n")
    with stopped_at_the_end(start_run(tmp_path_factory.mktemp("ui-ended"), text)) as run:
        yield run


@pytest.fixture(scope="module")
def page(live):
    with browser.Browser() as driver:
        driver.get(live.url)
        yield driver


def wait_until(check, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def shaped_rate(run, src, dst):
    """The rate of the src->dst HTB class, read with tc in src's router."""
    spec = specmod.load(os.path.join(run.folder, "topo.yaml"))
    with open(os.path.join(run.folder, "env.json")) as f:
        run_id = json.load(f)["run_id"]
    plan = make_plan(spec, run_id, with_relays=False)
    router, link = plan.router(src).node, plan.link(src, dst)
    dev = link.intf_a if link.a == src else link.intf_b
    out = subprocess.run(["mnexec", "-a", str(shell_of(router)), "tc", "class", "show", "dev", dev],
                         capture_output=True, text=True, check=True).stdout
    return parse_rate(re.search(r"class htb 1:1 .*? rate (\S+)", out).group(1))


def shell_of(node):
    """The pid of a Mininet node's shell (its last argument is mininet:NODE)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if f"mininet:{node}".encode() in args:
            return int(pid)
    raise AssertionError(f"no shell for {node}")


def texts(page, css):
    # Read in one script, inside the page: the page redraws its tables as
    # state comes in, and an element found by one call may be gone by the next.
    return page.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText.trim())", css)


def attrs(page, css, name):
    return page.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.getAttribute(arguments[1]))",
        css, name)


def test_the_live_page_shows_every_dc_and_every_link_direction(page):
    assert wait_until(lambda: len(attrs(page, "#map g.dir", "data-dir")) == 6, 10)
    assert set(attrs(page, "#map g.dc", "data-dc")) == {"virginia", "frankfurt", "tokyo"}
    assert set(attrs(page, "#map g.dir", "data-dir")) == DIRECTIONS
    assert set(attrs(page, "#links tbody tr", "data-dir")) == DIRECTIONS
    # Each direction's tooltip names its rate, its measured throughput and the probe's estimate.
    tooltip = page.execute_script(
        "return document.querySelector('#map g.dir[data-dir=\"tokyo>frankfurt\"] title').textContent")
    assert "configured 15.0 Mbit/s" in tooltip and "measured" in tooltip and "probe estimate" in tooltip


def test_a_rate_typed_on_the_page_reaches_the_wire_and_the_log(live, page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    logged = len(live.link_changes())
    assert shaped_rate(live, "virginia", "tokyo") == 20e6
    Select(page.find_element(By.ID, "link-dir")).select_by_value("virginia tokyo oneway")
    page.find_element(By.ID, "link-bw").send_keys("8mbit")
    page.find_element(By.ID, "link-apply").click()
    assert wait_until(lambda: shaped_rate(live, "virginia", "tokyo") == 8e6, 2.0)
    assert shaped_rate(live, "tokyo", "virginia") == 20e6        # one way only
    # The page shows the new configured rate once the state comes round.
    assert wait_until(lambda: texts(page, '#links tr[data-dir="virginia>tokyo"] td.rate')
                      == ["8.00 Mbit/s"], 5)
    (change,) = live.link_changes()[logged:]
    assert (change["src"], change["dst"], change["rate"], change["source"]) == \
        ("virginia", "tokyo", 8e6, "ui")


def test_a_refused_command_shows_the_console_s_one_line_error(live, page):
    from selenium.webdriver.common.by import By

    logged = len(live.link_changes())
    field = page.find_element(By.ID, "link-bw")
    field.clear()
    field.send_keys("fast")
    page.find_element(By.ID, "link-apply").click()
    reply = page.find_element(By.ID, "reply")
    assert wait_until(lambda: reply.text.startswith("error"), 5)
    assert reply.text == "error: bw: 'fast' is not a rate like 50mbit"
    assert "error" in reply.get_attribute("class")
    assert len(live.link_changes()) == logged


@pytest.mark.parametrize("token", [None, "", "wrong"])
def test_every_request_without_the_run_s_token_is_refused(live, token):
    logged = len(live.link_changes())
    base = f"http://127.0.0.1:{live.port}"
    query = "" if token is None else f"?token={token}"
    for path, body in (("/", None), ("/state", None), ("/events", None),
                       ("/command", b'{"line": "link virginia tokyo down"}')):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(base + path + query, data=body), timeout=5)
        assert refused.value.code == 403 and refused.value.read() == b"forbidden\n"
    assert len(live.link_changes()) == logged


def test_the_port_closes_when_the_run_ends(ended):
    live = ended
    status = os.path.join(live.folder, "status.json")

    def ended():
        with open(status) as f:
            return json.load(f)["status"] != "running"
    assert wait_until(ended, 120, step=0.05)
    # The run has ended but the process still writes its report: the page is gone already.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", live.port), timeout=5)
    assert live.proc.poll() is None
    assert live.proc.wait(timeout=120) == 0, live.out.read_text()[-3000:]


def test_the_static_report_replays_the_run_offline_and_opens_at_its_end(ended):
    from selenium.webdriver.common.by import By

    live = ended
    assert live.proc.wait(timeout=120) == 0
    r = subprocess.run(cli_argv("report", live.folder, "--html"), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(live.folder, "summary.json")) as f:
        summary = json.load(f)
    with browser.Browser(offline=True) as driver:
        driver.get("file://" + os.path.join(live.folder, "report.html"))
        assert texts(driver, "#progress-accuracy")[0].startswith(f"{summary['final_accuracy']:.3f}")
        assert texts(driver, '#links tr[data-dir="virginia>tokyo"] td.rate') == ["8.00 Mbit/s"]
        # Back to the start: the rate as the topology set it.
        driver.execute_script("var s = document.getElementById('slider'); s.value = 0;"
                              "s.dispatchEvent(new Event('input'));")
        assert texts(driver, '#links tr[data-dir="virginia>tokyo"] td.rate') == ["20.0 Mbit/s"]
        assert driver.find_element(By.ID, "slider").get_attribute("max") != "0"
