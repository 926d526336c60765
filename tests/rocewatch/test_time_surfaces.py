"""One text, one time: the config file, the CLI (``replay``, ``query``) and the API read durations
and instants alike, and resolve ``now`` to the same fabric clock (the newest sample in the store,
not the wall clock)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pipeline.config import StoreSettings
from pipeline.errors import ConfigError
from pipeline.store.base import Store, open_store
from pipeline.times import NS, format_instant, parse_instant
from rocewatch.cli.main import cli
from rocewatch.settings import load_settings
from tests.conftest import unique
from tests.detectors.conftest import Feed, small
from ui.api.app import create_app
from ui.api.server import Running, start_background
from ui.query.layer import Query

#: an hour before the wall clock, on a whole second: recent enough for the store's retention, and
#: far enough from the wall clock that a "now" taken from it would show
START = (time.time_ns() // NS - 3600) * NS
TICKS, STEP_S = 60, 10


@dataclass
class Fabric:
    store: Store
    latest_ns: int
    times: list[int]
    config: Path
    client: TestClient
    api: Running


@pytest.fixture(scope="module")
def fabric(chdb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    """Ten minutes of a small fabric's samples in a chDB store (read-only for the tests), an API
    over it, and a config file naming it."""
    settings = StoreSettings(kind="chdb", chdb_path=str(chdb_dir), database=unique("times"))
    store = open_store(settings)
    feed = Feed(small(), interval=STEP_S, epoch=START)
    times = []
    for _ in range(TICKS):
        for batch in feed.tick():
            store.insert_samples(batch)
            times.extend(int(t) for t in batch.ts_ns)
    config = tmp_path_factory.mktemp("times") / "rocewatch.yaml"
    config.write_text(f"store:\n  kind: chdb\n  chdb_path: {chdb_dir}\n"
                      f"  database: {settings.database}\n")
    app = create_app(Query(store))
    api = start_background(app)
    try:
        yield Fabric(store, max(times), times, config, TestClient(app), api)
    finally:
        api.stop()
        store.execute(f"DROP DATABASE IF EXISTS {store.database}")
        store.close()


def replay(fabric: Fabric, *args: str) -> tuple[int, int, int]:
    """``rocewatch replay`` over the fabric's store: (start ns, end ns, samples replayed)."""
    result = CliRunner().invoke(cli, ["replay", "-c", str(fabric.config), *args])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stderr.splitlines() if x.startswith("replaying "))
    _, start, _, end = line.split()
    samples = int(result.stdout.split("replayed ")[1].split()[0])
    return parse_instant(start, None), parse_instant(end, None), samples


def query_cli(fabric: Fabric, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["query", *args, "--json", "--api", fabric.api.url])
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def test_now_is_the_fabric_clock_for_replay_query_and_the_api(fabric: Fabric) -> None:
    latest = fabric.latest_ns
    assert fabric.client.get("/v1/clock").json()["now_ns"] == latest
    api = fabric.client.get("/v1/alerts", params={"start": "now-5m"}).json()
    assert (api["start_ns"], api["end_ns"]) == (latest - 300 * NS, latest)
    for since in ("now-5m", "5m", "300", "-5m"):
        start, end, samples = replay(fabric, "--since", since)
        assert (start, end) == (api["start_ns"], api["end_ns"]), since
        # both ends included, as the API's ranges: the newest sample is replayed too
        assert samples == sum(1 for t in fabric.times if start <= t <= end)
        assert query_cli(fabric, "alerts", "--since", since)["start_ns"] == api["start_ns"]
    start, end, _ = replay(fabric, "--start", "now-5m", "--end", "now-1m")
    assert (start, end) == (latest - 300 * NS, latest - 60 * NS)


def test_the_same_instant_text_is_the_same_instant_everywhere(fabric: Fabric,
                                                              tmp_path: Path) -> None:
    at = fabric.latest_ns - 125 * NS - NS // 2
    seconds = f"@{at // NS}.{at % NS:09d}"
    for text in (format_instant(at), _in_zone(at, "+05:30"), seconds, str(at)):
        api = fabric.client.get("/v1/alerts", params={"at": text}).json()
        assert api["at_ns"] == at, text
        start, _, _ = replay(fabric, "--start", text)
        assert start == at, text
        cfg = tmp_path / "silence.yaml"
        cfg.write_text("remediation:\n  silences:\n    - matchers: ['alertname=x']\n"
                       f"      starts_at: '{text}'\n      ends_at: '@4000000000'\n")
        assert load_settings(cfg, env={}).remediation.silences[0].starts_at == at, text


def test_the_same_duration_text_is_the_same_duration_everywhere(fabric: Fabric,
                                                                tmp_path: Path) -> None:
    for text, seconds in (("1m30s", 90), ("90", 90), ("2m", 120), ("1.5m", 90)):
        cfg = tmp_path / "guards.yaml"
        cfg.write_text(f"remediation:\n  guards:\n    cooldown: '{text}'\n")
        assert load_settings(cfg, env={}).remediation.guards.cooldown == seconds
        start, end, _ = replay(fabric, "--since", text)
        assert end - start == seconds * NS
        series = fabric.client.get("/v1/series", params={
            "device": "leaf1", "port": "Ethernet1", "metric": "if_in_octets",
            "start": "now-1h", "step": text}).json()
        assert series["results"][0]["step_ns"] == seconds * NS


@pytest.mark.parametrize(("text", "says"), [
    ("2026-11-30T10:00:00", "no time zone"), ("1796032800", "@1796032800"),
    ("tomorrow", "RFC 3339 with a zone"), ("99999999999999999999999", "too far in the future"),
])
def test_a_bad_instant_is_refused_alike(fabric: Fabric, tmp_path: Path, text: str,
                                        says: str) -> None:
    api = fabric.client.get("/v1/alerts", params={"at": text})
    assert api.status_code == 400 and says in api.json()["error"]
    result = CliRunner().invoke(cli, ["replay", "-c", str(fabric.config), "--start", text])
    assert result.exit_code != 0 and says in str(result.exception)
    cfg = tmp_path / "silence.yaml"
    cfg.write_text("remediation:\n  silences:\n    - matchers: ['alertname=x']\n"
                   f"      starts_at: '{text}'\n      ends_at: '@4000000000'\n")
    with pytest.raises(ConfigError, match="starts_at") as err:
        load_settings(cfg, env={})
    assert says in str(err.value)


@pytest.mark.parametrize(("text", "says"), [
    ("30m1h", "want a duration"), ("1e40", "want a duration"),
    ("999999999999", "longest duration accepted"),
])
def test_a_bad_duration_is_refused_alike(fabric: Fabric, tmp_path: Path, text: str,
                                         says: str) -> None:
    api = fabric.client.get("/v1/series", params={
        "device": "leaf1", "port": "Ethernet1", "metric": "if_in_octets", "step": text})
    assert api.status_code == 400 and says in api.json()["error"]
    result = CliRunner().invoke(cli, ["replay", "-c", str(fabric.config), "--since", text])
    assert result.exit_code != 0 and says in str(result.exception)
    cfg = tmp_path / "guards.yaml"
    cfg.write_text(f"remediation:\n  guards:\n    cooldown: '{text}'\n")
    with pytest.raises(ConfigError, match="cooldown") as err:
        load_settings(cfg, env={})
    assert says in str(err.value)


def _in_zone(ns: int, zone: str) -> str:
    """``ns`` written in another zone (``+05:30``), to the ns."""
    sign = 1 if zone[0] == "+" else -1
    shift = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60) * NS
    local = format_instant(ns + shift)  # the wall time there, spelled in UTC's digits
    return local[:-1] + zone
