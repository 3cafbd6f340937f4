"""The live page of a running experiment: an aiohttp server on 127.0.0.1,
in a daemon thread with its own event loop, for as long as the run.

Every request must carry the run's random token (`?token=`), the page,
its data, the stream and the commands alike, and name this server as its
Host (and Origin, when it sends one): a page of another site that a DNS
name points here (DNS rebinding) is refused even with the token.
Anything else gets 403 and nothing more.  No response tells another site
the page's address (`Referrer-Policy: no-referrer`): it holds the token.
The page's controls send the console's command lines, carried out by the
run's one `control.Commands` with the source `ui`.
"""

import asyncio
import json
import secrets
import threading
import time

from aiohttp import web

from testbed.emulation.commands import CommandError, failure_line
from testbed.run.control import MAX_LINE_BYTES
from testbed.ui import page
from testbed.ui import state as statemod

HOST = "127.0.0.1"
INTERVAL = 1.0         # seconds between two states sent to a page
FRESH = 0.5            # a state this young is sent again rather than rebuilt
SOURCE = "ui"


def token_ok(given, token):
    """Whether a request's token is the run's, compared in constant time."""
    return isinstance(given, str) and bool(token) and secrets.compare_digest(
        given.encode(), token.encode())


class LiveServer:
    def __init__(self, commands, port=0, interval=INTERVAL):
        self.commands = commands
        self.port = port
        self.interval = interval
        self.token = secrets.token_urlsafe(24)
        self.reader = statemod.RunReader(commands.run_dir)
        self._state_lock = threading.Lock()
        self._state = (0.0, None)           # (when built, JSON text)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failed = None
        self._runner = None
        self._closing = None
        self._thread = threading.Thread(target=self._serve, daemon=True, name="live-page")

    @property
    def url(self):
        return f"http://{HOST}:{self.port}/?token={self.token}"

    # ------------------------------------------------------------ life

    def start(self):
        """Serve; returns self once the port listens (OSError if it cannot)."""
        self._thread.start()
        self._ready.wait()
        if self._failed is not None:
            raise self._failed
        return self

    def _serve(self):
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._open())
        except OSError as e:
            self._failed = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.run_until_complete(self._loop.shutdown_default_executor())
        self._loop.close()

    async def _open(self):
        self._closing = asyncio.Event()
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_LINE_BYTES * 2)
        app.on_response_prepare.append(self._no_referrer)
        app.router.add_get("/", self._page)
        app.router.add_get("/state", self._state_json)
        app.router.add_get("/events", self._events)
        app.router.add_post("/command", self._command)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    def stop(self):
        """Close the port and end every stream; safe to call twice."""
        if not self._thread.is_alive():
            return
        self._loop.call_soon_threadsafe(self._closing.set)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # ------------------------------------------------------------ requests

    def own_hosts(self):
        """The Host values a request to this server may carry."""
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    def allowed(self, request):
        """Whether a request has the token and names this server as its Host
        and, if it says where it comes from, as its Origin."""
        origin = request.headers.get("Origin")
        return (token_ok(request.query.get("token"), self.token)
                and request.headers.get("Host") in self.own_hosts()
                and (origin is None or origin in {f"http://{h}" for h in self.own_hosts()}))

    @web.middleware
    async def _guard(self, request, handler):
        if not self.allowed(request):
            return web.Response(status=403, text="forbidden\n")
        return await handler(request)

    @staticmethod
    async def _no_referrer(request, response):
        response.headers["Referrer-Policy"] = "no-referrer"

    async def _page(self, request):
        name = self.commands.net.spec.name
        return web.Response(text=page.live_page(name, self.token), content_type="text/html",
                            headers={"Cache-Control": "no-store"})

    def current_state(self):
        """The state as JSON text, rebuilt at most every FRESH seconds."""
        with self._state_lock:
            built, text = self._state
            if text is None or time.monotonic() - built >= FRESH:
                self.reader.refresh()
                now = time.monotonic()
                data = statemod.state(self.reader, current=dict(self.commands.net.current), now=now)
                data["status"] = "running"
                text = json.dumps(data, separators=(",", ":"))
                self._state = (now, text)
            return text

    async def _state_json(self, request):
        text = await self._loop.run_in_executor(None, self.current_state)
        return web.Response(text=text, content_type="application/json")

    async def _events(self, request):
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                             "Cache-Control": "no-store"})
        await stream.prepare(request)
        while not self._closing.is_set():
            text = await self._loop.run_in_executor(None, self.current_state)
            try:
                await stream.write(f"data: {text}\n\n".encode())
            except (ConnectionError, RuntimeError):
                break
            try:
                await asyncio.wait_for(self._closing.wait(), self.interval)
            except asyncio.TimeoutError:   # not the builtin one before Python 3.11
                pass
        return stream

    async def _command(self, request):
        try:
            body = await request.json()
            line = body["line"]
            if not isinstance(line, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return web.json_response({"ok": False, "text": 'send {"line": "a command"} as JSON'},
                                     status=400)
        return web.json_response(await self._loop.run_in_executor(None, self.execute, line))

    def execute(self, line):
        """{"ok", "text"}: what the console would print for the line."""
        try:
            if len(line.encode()) > MAX_LINE_BYTES:
                raise CommandError(f"the command is over {MAX_LINE_BYTES} bytes")
            text = self.commands.execute(line, SOURCE)
            with self._state_lock:
                self._state = (0.0, None)     # the next state shows the change
            return {"ok": True, "text": text}
        except CommandError as e:
            return {"ok": False, "text": str(e)}
        except Exception as e:  # noqa: BLE001 - the page serves the rest of the run
            return {"ok": False, "text": failure_line(e)}
