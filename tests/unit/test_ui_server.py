"""The live page's server answers only requests for itself: the run's
token, its own Host and Origin (a DNS-rebound name is refused even with
the token), and no response hands the page's address to another site."""

import http.client
import json

import pytest

from testbed.ui.server import LiveServer
from tests.unit.test_netconsole import commands


@pytest.fixture
def server(tmp_path):
    live = LiveServer(commands(run_dir=str(tmp_path))).start()
    yield live
    live.stop()


def ask(server, path, host=None, origin=None, body=None, token=True):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Host": host or f"127.0.0.1:{server.port}"}
    if origin:
        headers["Origin"] = origin
    query = f"?token={server.token}" if token else ""
    conn.request("POST" if body else "GET", path + query, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), r.read()


def test_the_run_s_own_requests_are_served_without_a_referrer(server):
    status, headers, body = ask(server, "/state")
    assert status == 200 and json.loads(body)["status"] == "running"
    assert headers["Referrer-Policy"] == "no-referrer"
    status, headers, _ = ask(server, "/", host=f"localhost:{server.port}")
    assert status == 200 and headers["Referrer-Policy"] == "no-referrer"
    status, _, body = ask(server, "/command", origin=f"http://127.0.0.1:{server.port}",
                          body=json.dumps({"line": "show links"}).encode())
    assert status == 200 and json.loads(body)["ok"]


@pytest.mark.parametrize("host,origin", [
    ("attacker.example", None),                            # a DNS name rebound to 127.0.0.1
    ("attacker.example:{port}", None),
    ("127.0.0.1:1", None),
    ("127.0.0.1:{port}", "http://attacker.example"),       # another site's page, through the browser
    ("127.0.0.1:{port}", "http://attacker.example:{port}"),
    ("127.0.0.1:{port}", "null"),
])
def test_a_request_with_the_token_for_another_host_or_from_another_origin_is_refused(server, host,
                                                                                       origin):
    fill = lambda text: text and text.format(port=server.port)  # noqa: E731
    for path, body in (("/", None), ("/state", None), ("/events", None),
                       ("/command", json.dumps({"line": "link virginia tokyo down"}).encode())):
        status, headers, text = ask(server, path, host=fill(host), origin=fill(origin), body=body)
        assert (status, text) == (403, b"forbidden\n"), path
        assert headers["Referrer-Policy"] == "no-referrer"


def test_without_the_token_nothing_is_served_even_to_its_own_host(server):
    assert ask(server, "/state", token=False)[0] == 403
