"""The run page as one self-contained HTML document: the template, its
stylesheet and script inlined, and the page's configuration (live: the
token; replay: every frame) as JSON in the page."""

import html
import json
import os
import re

from testbed.ui import state as statemod

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
REPORT_NAME = "report.html"
PLACEHOLDER = re.compile(r"__(CSS|JS|TITLE|CONFIG)__")


def _asset(name):
    with open(os.path.join(STATIC, name)) as f:
        return f.read()


def script_json(data):
    """JSON that cannot end the <script> element it sits in."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/")


def render(title, config):
    """The page; config: {"mode": "live", "token": ...} or
    {"mode": "replay", "replay": {"frames": [...]}}."""
    parts = {"__CSS__": _asset("ui.css"), "__JS__": _asset("ui.js"),
             "__TITLE__": html.escape(title), "__CONFIG__": script_json(config)}
    # One pass: nothing inlined is searched for another placeholder.
    return PLACEHOLDER.sub(lambda m: parts[m.group(0)], _asset("page.html"))


def live_page(name, token):
    return render(f"{name} (live)", {"mode": "live", "token": token})


def write_report(run_dir):
    """RUN/report.html: the page replaying a finished run; returns its path."""
    data = statemod.replay(run_dir)
    name = data["frames"][-1]["name"] or os.path.basename(os.path.normpath(run_dir))
    path = os.path.join(run_dir, REPORT_NAME)
    with open(path + ".tmp", "w") as f:
        f.write(render(name, {"mode": "replay", "replay": data}))
    os.replace(path + ".tmp", path)
    return path
