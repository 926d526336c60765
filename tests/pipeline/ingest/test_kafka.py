"""At least once, idempotent, on the real engines: Kafka → ingest processes → ClickHouse server.

* an ingest process killed with SIGKILL in mid-stream and started again;
* the broker stopped and started in mid-stream;
* two ingest processes sharing the partitions through their consumer group.

Each shows every produced sample in the store exactly once: ``count() FINAL`` equals what was
produced, the distinct (series, event time) keys are exactly the produced ones, and after a
merge (``OPTIMIZE ... FINAL``) the raw row count is exact too.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pipeline.bus.base import Topics
from pipeline.ingest.loop import Ingest
from pipeline.model import SampleBatch
from pipeline.store.base import Store
from pipeline.wire.publish import publish_batches

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NS = 1_000_000_000
DEVICES = 8


def produced_batches(batch_factory: Any, rounds: int) -> list[SampleBatch]:
    """``rounds`` polls of DEVICES devices (48 series each), consecutive in event time."""
    start = (time.time_ns() // NS - rounds * 10 - 60) * NS
    out: list[SampleBatch] = []
    for r in range(rounds):
        whole = batch_factory(devices=DEVICES, ports=4, seconds=10, start_ns=start + r * 10 * NS,
                              seed=r)
        out.extend(whole.take(np.flatnonzero(whole.device == d)) for d in range(DEVICES))
    return out


def fingerprint(batches: list[SampleBatch]) -> tuple[int, int]:
    """(rows, sum of a hash of every sample's key) of what was produced."""
    keys: set[tuple[Any, ...]] = set()
    for b in batches:
        keys.update((r[1], r[2], r[3], r[4], r[0]) for r in b.rows())
    return len(keys), sum(hash(k) & 0xFFFF for k in keys)


def stored_keys(store: Store) -> tuple[int, int]:
    d = store.dialect
    c = store.query(f"SELECT device, port, metric, qual, {d.time_ns('ts')} AS t "
                    f"FROM {store.database}.samples FINAL")
    keys = set(zip(c["device"], c["port"], c["metric"], c["qual"].tolist(), c["t"].tolist(),
                   strict=True))
    return len(c["t"]), sum(hash(k) & 0xFFFF for k in keys)


def count_final(store: Store) -> int:
    return int(store.query(f"SELECT count() AS n FROM {store.database}.samples FINAL")["n"][0])


def wait_for(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def assert_exactly_once(store: Store, batches: list[SampleBatch]) -> None:
    want_rows, want_hash = fingerprint(batches)
    got_rows, got_hash = stored_keys(store)
    assert (got_rows, got_hash) == (want_rows, want_hash)
    store.execute(f"OPTIMIZE TABLE {store.database}.samples FINAL")
    raw = store.query(f"SELECT count() AS n FROM {store.database}.samples")
    assert int(raw["n"][0]) == want_rows


@pytest.fixture
def deployment(tmp_path: Path, kafka_address: str, clickhouse_store: Any,
               unique_name: Any) -> dict[str, Any]:
    """A config for separate role processes: Kafka bus, the test ClickHouse database."""
    ch = clickhouse_store.settings.clickhouse
    config = {
        "bus": {"kind": "kafka", "topic_prefix": unique_name("rw") + ".",
                "kafka": {"bootstrap": kafka_address, "partitions": 4, "linger_ms": 5,
                          "group_prefix": unique_name("g") + "-", "session_timeout_ms": 6000,
                          "heartbeat_interval_ms": 500, "bootstrap_timeout_ms": 20_000}},
        "store": {"kind": "clickhouse", "database": clickhouse_store.database,
                  "clickhouse": {"host": ch.host, "port": ch.port}},
    }
    path = tmp_path / "rocewatch.yaml"
    path.write_text(yaml.safe_dump(config))
    return {"path": path, "config": config, "topics": Topics(config["bus"]["topic_prefix"]),
            "store": clickhouse_store, "logs": tmp_path}


class IngestProcess:
    """``rocewatch run --role ingest`` (or another role) as a child process."""

    def __init__(self, config: Path, log: Path, role: str = "ingest") -> None:
        self.log = log
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocewatch", "-v", "run", "--role", role, "-c",
             str(config)], stdout=self._out, stderr=subprocess.STDOUT, env=env)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._out.close()


@pytest.fixture
def processes() -> Iterator[list[IngestProcess]]:
    running: list[IngestProcess] = []
    yield running
    for p in running:
        p.stop()


def bus_for(deployment: dict[str, Any]) -> Any:
    from pipeline.bus.kafka import KafkaBus
    from pipeline.config import BusSettings

    return KafkaBus(BusSettings.model_validate(deployment["config"]["bus"]))


def produce_paced(bus: Any, topics: Topics, batches: list[SampleBatch], seconds: float,
                  during: Any = None) -> None:
    """Send the batches spread over ``seconds``; ``during(i)`` runs before the i-th send."""
    producer = bus.producer()
    pause = seconds / max(1, len(batches))
    for i, b in enumerate(batches):
        if during is not None:
            during(i)
        publish_batches(producer, topics, [b])
        time.sleep(pause)  # pacing the stream, not a synchronisation
    producer.flush(60)
    producer.close()


def test_an_ingest_process_killed_mid_stream_loses_and_doubles_nothing(
        deployment: dict[str, Any], processes: list[IngestProcess], batch_factory: Any) -> None:
    store, topics = deployment["store"], deployment["topics"]
    bus = bus_for(deployment)
    bus.ensure_topics(topics.all())
    batches = produced_batches(batch_factory, rounds=30)
    total = fingerprint(batches)[0]
    processes.append(IngestProcess(deployment["path"], deployment["logs"] / "ingest-1.log"))
    killed = threading.Event()

    def kill_when_half_stored(i: int) -> None:
        if not killed.is_set() and i >= len(batches) // 2:
            wait_for(lambda: count_final(store) > 0, 60, "the first process to store something")
            processes[0].kill()
            killed.set()

    produce_paced(bus, topics, batches, seconds=4, during=kill_when_half_stored)
    assert killed.is_set()
    stored_at_kill = count_final(store)
    assert 0 < stored_at_kill < total
    processes.append(IngestProcess(deployment["path"], deployment["logs"] / "ingest-2.log"))
    wait_for(lambda: count_final(store) >= total, 90, "the restarted process to catch up")
    assert_exactly_once(store, batches)
    bus.close()


def test_a_broker_restart_mid_stream_loses_and_doubles_nothing(
        deployment: dict[str, Any], kafka_broker: Any, batch_factory: Any) -> None:
    store, topics = deployment["store"], deployment["topics"]
    bus = bus_for(deployment)
    bus.ensure_topics(topics.all())
    batches = produced_batches(batch_factory, rounds=20)
    total = fingerprint(batches)[0]
    ingest = Ingest(bus, store, topics, group="ingest", max_wait_s=0.3)
    stop = threading.Event()
    runner = threading.Thread(target=ingest.run, args=(stop,), daemon=True)
    runner.start()
    restarted = threading.Event()

    def restart_broker_halfway(i: int) -> None:
        if not restarted.is_set() and i == len(batches) // 2:
            kafka_broker.stop()
            kafka_broker.start()
            restarted.set()

    try:
        produce_paced(bus, topics, batches, seconds=3, during=restart_broker_halfway)
        wait_for(lambda: count_final(store) >= total, 120, "ingest to store every sample")
    finally:
        stop.set()
        runner.join(30)
        bus.close()
    assert restarted.is_set()
    assert_exactly_once(store, batches)


def test_two_ingest_processes_share_the_partitions_and_an_api_process_reads_them(
        deployment: dict[str, Any], processes: list[IngestProcess], batch_factory: Any) -> None:
    import httpx

    store, topics = deployment["store"], deployment["topics"]
    bus = bus_for(deployment)
    bus.ensure_topics(topics.all())
    for i in range(2):
        processes.append(IngestProcess(deployment["path"], deployment["logs"] / f"ingest{i}.log"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        api_port = s.getsockname()[1]
    api_config = deployment["logs"] / "api.yaml"
    api_config.write_text(yaml.safe_dump({**deployment["config"],
                                          "api": {"host": "127.0.0.1", "port": api_port}}))
    processes.append(IngestProcess(api_config, deployment["logs"] / "api.log", role="api"))
    group = deployment["config"]["bus"]["kafka"]["group_prefix"] + "ingest"
    admin = bus._admin_client()

    def members() -> list[Any]:
        return list(admin.describe_groups([group]).get(group, {}).get("members", []))

    def samples_partitions(member: Any) -> set[int]:
        return {p for a in member["member_assignment"]["assigned_partitions"]
                if a["topic"] == topics.samples for p in a["partitions"]}

    wait_for(lambda: len(members()) == 2, 60, "both processes to join the group")
    batches = produced_batches(batch_factory, rounds=10)
    produce_paced(bus, topics, batches, seconds=1)
    total = fingerprint(batches)[0]
    wait_for(lambda: count_final(store) >= total, 60, "both processes to store everything")
    held = [samples_partitions(m) for m in members()]
    assert len(held) == 2 and all(held) and not held[0] & held[1]
    assert held[0] | held[1] == set(range(4))

    def committed() -> int:
        offsets = admin.list_group_offsets({group: None})[group]
        return sum(o.offset for tp, o in offsets.items() if tp.topic == topics.samples)

    # the commit follows the insert: every message is committed soon after it is stored
    wait_for(lambda: committed() == len(batches), 30, "the group to commit every message")
    newest = max(int(b.ts_ns.max()) for b in batches)

    def api_sees_the_newest() -> bool:
        try:
            clock = httpx.get(f"http://127.0.0.1:{api_port}/v1/clock", timeout=2).json()
        except (httpx.HTTPError, ValueError):
            return False
        return bool(clock.get("latest_sample_ns") == newest)

    wait_for(api_sees_the_newest, 60, "the api process to answer from the server store")
    assert_exactly_once(store, batches)
    bus.close()
