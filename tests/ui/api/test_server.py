"""The api role's loop: serves on the configured address, reports its health, stops on request,
names the setting when its port is taken, and leaves signal handlers alone."""

from __future__ import annotations

import signal
import socket
import threading
import time
from types import SimpleNamespace

import httpx
import pytest

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.config import ApiSettings
from pipeline.errors import ConfigError, StoreError
from pipeline.stage import StageContext
from tests.ui.conftest import FabricStore
from tests.ui.ui_fabric import FAULTY_LINK
from ui.api import server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def context(fs: FabricStore, port: int) -> StageContext:
    settings = SimpleNamespace(api=ApiSettings(host="127.0.0.1", port=port))
    return StageContext(settings, MemoryBus(), Topics(), fs.fabric.topology, fs.store)


def test_run_serves_until_stopped(fabric_store: FabricStore) -> None:
    port = free_port()
    ctx = context(fabric_store, port)
    ctx.health["ingest"] = lambda: {"alive": True}
    stop = threading.Event()
    handler = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=server.run, args=(ctx, stop), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            resp = httpx.get(f"{url}/healthz", timeout=2)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the API did not come up"
            time.sleep(0.05)
    assert resp.json()["loops"]["ingest"] == {"alive": True}
    alerts = httpx.get(f"{url}/v1/alerts", params={"kind": "incident"}).json()["alerts"]
    assert [a["entity"] for a in alerts] == [FAULTY_LINK]
    assert ctx.health["api"]()["url"] == url
    assert ctx.health["api"]()["requests"] >= 2
    assert signal.getsignal(signal.SIGTERM) is handler
    t0 = time.monotonic()
    stop.set()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - t0 < 5


def test_a_taken_port_names_the_setting(fabric_store: FabricStore) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        ctx = context(fabric_store, taken.getsockname()[1])
        with pytest.raises(ConfigError, match=r"api\.port"):
            server.run(ctx, threading.Event())


def test_the_api_role_needs_a_store(fabric_store: FabricStore) -> None:
    ctx = context(fabric_store, free_port())
    ctx.store = None
    with pytest.raises(StoreError, match="needs a store"):
        server.run(ctx, threading.Event())
