"""Fixtures of the remediation tests: hand-built alerts on event time, loopback HTTP servers that
record what they are sent, and a loopback gNMI target and TE controller for the runbooks."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pipeline.model import Alert
from tests.remediation.gnmi_target import Targets
from tests.remediation.rig import Rig, fabric, settings
from tests.remediation.support import make_alert
from tests.remediation.te_controller import TeController


@pytest.fixture
def alert() -> Callable[..., Alert]:
    """``alert(name, entity, start=s, end=s, ...)``: an alert on the tests' event time."""
    return make_alert


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class HttpPeer:
    """A loopback HTTP server: records every request; answers from a script of statuses."""

    url: str
    requests: list[Recorded] = field(default_factory=list)
    #: statuses to answer with, in order; when empty, ``default`` (body ``reply``)
    script: list[int] = field(default_factory=list)
    default: int = 200
    reply: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    event: threading.Event = field(default_factory=threading.Event)

    def wait(self, count: int, timeout: float = 10.0) -> list[Recorded]:
        deadline = threading.Event()
        for _ in range(int(timeout * 20)):
            if len(self.requests) >= count:
                return self.requests
            deadline.wait(0.05)
        raise AssertionError(f"wanted {count} request(s), got {len(self.requests)}")


@pytest.fixture
def http_peer() -> Iterator[Callable[..., HttpPeer]]:
    """``http_peer()`` starts a recording HTTP server on 127.0.0.1; all stop after the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(**kw: Any) -> HttpPeer:
        peer: HttpPeer

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                peer.requests.append(Recorded(self.command, self.path,
                                              {k.lower(): v for k, v in self.headers.items()},
                                              body))
                status = peer.script.pop(0) if peer.script else peer.default
                out = json.dumps(peer.reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for k, v in peer.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                peer.event.set()

            do_POST = do_PUT = do_DELETE = do_GET = _handle  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        peer = HttpPeer(f"http://127.0.0.1:{server.server_address[1]}", **kw)
        return peer

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def targets() -> Iterator[Targets]:
    """A gNMI target per switch of the test fabric."""
    t = Targets(fabric())
    yield t
    t.stop()


@pytest.fixture
def rig(targets: Targets) -> Iterator[Any]:
    """``rig(**settings)``: the drainer wired to ``targets`` and a fresh TE endpoint."""
    started: list[TeController] = []

    def build(**over: Any) -> tuple[Rig, TeController]:
        te = TeController(targets.fabric.topology).start()
        started.append(te)
        return Rig(targets.fabric.topology, targets, te.url, settings(**over)), te
    yield build
    for te in started:
        te.stop()
