"""The api role's loop: serves on the configured address, reports its health, stops on request,
names the setting when its port is taken, leaves signal handlers alone, and serves no further back
than the configured store keeps."""

from __future__ import annotations

import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.config import ApiSettings, StoreSettings
from pipeline.errors import ConfigError, StoreError
from pipeline.stage import StageContext
from pipeline.store.base import open_store
from rocewatch.settings import Settings
from tests.ui.api.conftest import bearer, entries
from tests.ui.conftest import FabricStore
from tests.ui.ui_fabric import FAULTY_LINK, NS, batch, now_s
from ui.api import server
from ui.api.access import AccessSettings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def context(fs: FabricStore, port: int) -> StageContext[Settings]:
    settings = Settings(api=ApiSettings(host="127.0.0.1", port=port))
    return StageContext(settings, MemoryBus(), Topics(), fs.fabric.topology, fs.store)


def wait_up(url: str) -> httpx.Response:
    deadline = time.monotonic() + 10
    while True:
        try:
            return httpx.get(f"{url}/healthz", timeout=2)
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the API did not come up"
            time.sleep(0.05)


@contextmanager
def serving(ctx: StageContext[Settings]) -> Iterator[str]:
    """The api role's loop in a thread; its URL."""
    stop = threading.Event()
    thread = threading.Thread(target=server.run, args=(ctx, stop), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{ctx.settings.api.port}"
    try:
        wait_up(url)
        yield url
    finally:
        stop.set()
        thread.join(10)


def test_run_serves_until_stopped(fabric_store: FabricStore) -> None:
    port = free_port()
    ctx = context(fabric_store, port)
    ctx.health["ingest"] = lambda: {"alive": True}
    stop = threading.Event()
    handler = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=server.run, args=(ctx, stop), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    resp = wait_up(url)
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


def test_the_role_honours_the_access_section_and_refuses_a_bad_tokens_file(
        fabric_store: FabricStore, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({"tokens": [e.model_dump() for e in entries()]}))
    port = free_port()
    ctx = context(fabric_store, port)
    ctx.settings = ctx.settings.model_copy(update={
        "access": AccessSettings(read="token", tokens_file=str(tokens))})
    with serving(ctx) as url:
        assert httpx.get(f"{url}/v1/alerts").status_code == 401
        who = httpx.get(f"{url}/v1/identity", headers=bearer("viewer")).json()
        assert who["name"] == "viewer-1"
        assert httpx.get(f"{url}/v1/alerts", headers=bearer("viewer")).status_code == 200
        resumed = httpx.post(f"{url}/v1/commands", json={"kind": "resume"},
                             headers=bearer("admin"))
        assert resumed.status_code == 202 and resumed.json()["by"] == "admin-1"
    tokens.write_text("tokens: [{name: x, role: boss, sha256: abc}]\n")
    with pytest.raises(ConfigError, match=r"tokens\[0\]\.role"):
        server.run(ctx, threading.Event())  # refused before the port is bound


def test_the_api_role_needs_a_store(fabric_store: FabricStore) -> None:
    ctx = context(fabric_store, free_port())
    ctx.store = None
    with pytest.raises(StoreError, match="needs a store"):
        server.run(ctx, threading.Event())


@pytest.mark.parametrize("retention_days", [14, 30])
def test_the_configured_retention_bounds_how_far_back_the_api_serves(
        chdb_dir: Path, retention_days: int) -> None:
    """Samples from 20 days ago: a store configured to keep 14 days refuses to answer for that
    time (an empty answer would be a wrong one), for samples and alerts alike; one keeping 30 days
    serves them."""
    now = now_s()
    old = now - 20 * 86400 * NS
    settings = Settings(
        api=ApiSettings(host="127.0.0.1", port=free_port()),
        store=StoreSettings(kind="chdb", chdb_path=str(chdb_dir), retention_days=retention_days,
                            database=f"ret{uuid.uuid4().hex[:10]}"))
    store = open_store(settings.store)
    try:
        store.insert_samples(batch([("leaf1", "Ethernet1", "queue_occupancy_bytes", 3,
                                     np.array([old, now]), np.array([7.0, 9.0]), 0)]))
        ctx = StageContext(settings, MemoryBus(), Topics(), None, store)
        window = {"start": old - 60 * NS, "end": old + 60 * NS}
        with serving(ctx) as url:
            series = httpx.get(f"{url}/v1/series", params={
                "device": "leaf1", "port": "Ethernet1", "metric": "queue_occupancy_bytes",
                "qual": 3, "source": "raw", "step": "10s", **window})
            alerts = httpx.get(f"{url}/v1/alerts", params=window)
            recent = httpx.get(f"{url}/v1/series", params={
                "device": "leaf1", "port": "Ethernet1", "metric": "queue_occupancy_bytes",
                "qual": 3, "source": "raw", "start": "now-1m"})
    finally:
        store.execute(f"DROP DATABASE IF EXISTS {store.database}")
        store.close()
    assert recent.status_code == 200, recent.text
    if retention_days < 20:
        assert series.status_code == 400
        assert "keeps raw samples for 14d" in series.json()["error"]
        assert alerts.status_code == 400
        assert "keeps alerts for 14d" in alerts.json()["error"]
    else:
        assert series.status_code == 200, series.text
        [result] = series.json()["results"]
        assert [v for _, v in result["series"][0]["points"] if v is not None] == [7.0]
        assert alerts.status_code == 200, alerts.text
        assert alerts.json()["mode"] == "range"
