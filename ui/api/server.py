"""The ``api`` role's loop: serve the REST API with uvicorn until the platform stops.

``run(ctx, stop)`` builds the query layer over the store the process owns (what may be asked for
is what ``store`` keeps: ``retention_days`` and the rollups' days), binds
``settings.api.host:port`` itself (so a taken port is a clear error, and port 0 works), and serves
in the calling thread until ``stop`` is set. Who may use it is the ``access`` section
(:mod:`ui.api.access`): its tokens, and the file it names, are read before the port is bound, so a
bad one stops the role with the same one-line error ``rocewatch check-config`` gives. It registers
nothing global: no signal handlers, no logging configuration; the API's health is published in
``ctx.health["api"]``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import uvicorn
from fastapi import FastAPI

from pipeline.errors import ConfigError, StoreError
from pipeline.stage import CoreSettings, StageContext
from ui.api.access import AccessSettings, Tokens
from ui.api.app import ApiStats, create_app
from ui.api.client import http_url
from ui.api.commands import CommandPublisher
from ui.query.layer import Query
from ui.query.params import Limits


class WithAccess(CoreSettings, Protocol):
    """The api role's settings: the core's and the ``access`` section."""

    @property
    def access(self) -> AccessSettings: ...


class _Server(uvicorn.Server):
    """uvicorn that leaves signals to the platform and stops when ``stop`` is set."""

    def __init__(self, config: uvicorn.Config, stop: threading.Event) -> None:
        super().__init__(config)
        self._stop = stop

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def on_tick(self, counter: int) -> bool:
        if self._stop.is_set():
            self.should_exit = True
        return await super().on_tick(counter)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a ConfigError naming the setting to change."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}", "api.port") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return http_url(host, port)


def serve(app: FastAPI, sock: socket.socket, stop: threading.Event) -> None:
    """Serve ``app`` on a bound socket in this thread until ``stop`` is set."""
    config = uvicorn.Config(app, log_config=None, log_level=None, access_log=False,
                            lifespan="off", timeout_graceful_shutdown=3)
    server = _Server(config, stop)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


@dataclass
class Running:
    """An API served from a background thread (tests, benchmarks, ``rocewatch up``)."""

    url: str
    stop_event: threading.Event
    thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout)


def start_background(app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> Running:
    sock = bind(host, port)
    url = url_of(sock)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(app, sock, stop), name="rocewatch-api",
                              daemon=True)
    thread.start()
    return Running(url, stop, thread)


def _probes(ctx: StageContext[WithAccess]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, probe in list(ctx.health.items()):
        if name == "api":
            continue
        try:
            out[name] = dict(probe())
        except Exception as exc:  # a broken probe is reported, never fatal to /healthz
            out[name] = {"alive": None, "probe_error": f"{type(exc).__name__}: {exc}"}
    return out


def run(ctx: StageContext[WithAccess], stop: threading.Event) -> None:
    """The api role's loop."""
    if ctx.store is None:
        raise StoreError("the api role needs a store: run it with ingest (embedded chDB) or "
                         "set store.kind: clickhouse")
    settings = ctx.settings.api
    query = Query(ctx.store, lambda: ctx.topology, Limits.for_store(ctx.settings.store, settings))
    tokens = Tokens(ctx.settings.access)
    bus = ctx.settings.bus
    publisher = CommandPublisher(ctx.bus, ctx.topics, max_message_bytes=(
        bus.kafka.max_message_bytes if bus.kind == "kafka" else None))
    stats = ApiStats()
    app = create_app(query, probes=lambda: _probes(ctx), publisher=publisher, stats=stats,
                     tokens=tokens, metrics=ctx.metrics)
    sock = bind(settings.host, settings.port)
    url = url_of(sock)
    ctx.health["api"] = lambda: {"url": url, **stats.as_dict()}
    try:
        serve(app, sock, stop)
    finally:
        publisher.close()
