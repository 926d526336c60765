"""``rocewatch bench ingest``: samples per second from Kafka into each store backend, and the CPU
the ingest path spends per sample.

The benchmark fills a fresh topic with encoded per-device batches (as collectors send them), then
runs one ingest consumer in this process against each backend in turn, from a fresh consumer
group and a fresh database, until every sample is stored. It prints wall-clock samples/s and the
process CPU time per sample (every thread of the process: kafka-python's fetcher, decoding,
batching, the driver's serialisation; the servers' own CPU is not counted). ``--profile FILE``
writes a cProfile of the ingest phase.
"""

from __future__ import annotations

import cProfile
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import click
import numpy as np

from pipeline.bus import Topics
from pipeline.config import BusSettings, ClickHouseSettings, KafkaSettings, StoreSettings
from pipeline.metrics import CATALOG
from pipeline.model import SampleBatch


@dataclass
class Result:
    backend: str
    samples: int
    wall_s: float
    cpu_s: float
    inserts: int

    @property
    def rate(self) -> float:
        return self.samples / self.wall_s

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / self.samples * 1e6


def make_batches(samples: int, batch_rows: int, devices: int, seed: int = 7) -> list[SampleBatch]:
    """Per-device batches of ``batch_rows`` samples: a poll of 64 ports' counters and gauges."""
    rng = np.random.default_rng(seed)
    ports = tuple(f"Ethernet{i * 4}" for i in range(64))
    count = max(1, samples // batch_rows)
    start = (time.time_ns() // 1_000_000_000 - 3600) * 1_000_000_000
    out = []
    for i in range(count):
        device = i % devices
        poll = i // devices
        port = np.arange(batch_rows, dtype=np.int32) % len(ports)
        metric = (np.arange(batch_rows) // len(ports) % len(CATALOG)).astype(np.uint16)
        out.append(SampleBatch(
            np.full(batch_rows, start + poll * 1_000_000_000, np.int64)
            + np.arange(batch_rows, dtype=np.int64),
            np.zeros(batch_rows, np.int32), port, metric,
            (np.arange(batch_rows) % 8).astype(np.int16),
            rng.integers(0, 1 << 40, batch_rows).astype(np.float64),
            np.zeros(batch_rows, np.uint8), (f"leaf{device:04d}",), ports))
    return out


def produce(bus_settings: BusSettings, topics: Topics, batches: list[SampleBatch]) -> float:
    """Fill the samples topic; returns the seconds it took."""
    from pipeline.bus_kafka import KafkaBus
    from pipeline.ingest import publish_batches

    bus = KafkaBus(bus_settings)
    bus.ensure_topics(topics.all())
    producer = bus.producer()
    t0 = time.perf_counter()
    publish_batches(producer, topics, batches)
    producer.flush(120)
    elapsed = time.perf_counter() - t0
    producer.close()
    bus.close()
    return elapsed


def ingest_into(backend: str, store_settings: StoreSettings, bus_settings: BusSettings,
                topics: Topics, samples: int, max_rows: int, inflight: int,
                profile: cProfile.Profile | None) -> Result:
    """Consume the whole topic into one backend; time it."""
    from pipeline.bus_kafka import KafkaBus
    from pipeline.ingest import Ingest
    from pipeline.store import open_store

    store = open_store(store_settings)
    bus = KafkaBus(bus_settings)
    ingest = Ingest(bus, store, topics, group=f"bench-{backend}-{uuid.uuid4().hex[:6]}",
                    max_rows=max_rows, max_wait_s=0.5, inflight=inflight)
    stop = threading.Event()
    if profile is not None:
        profile.enable()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    # the production loop (gathering the next batch while the last one is inserted)
    runner = threading.Thread(target=ingest.run, args=(stop,), name="bench-ingest")
    runner.start()
    deadline = wall0 + 600
    while ingest.stats.samples < samples and time.perf_counter() < deadline:
        time.sleep(0.005)  # polling the loop's counters, not pacing it
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if profile is not None:
        profile.disable()
    stop.set()
    runner.join(60)
    result = Result(backend, ingest.stats.samples, wall, cpu, ingest.stats.inserts)
    store.execute(f"DROP DATABASE IF EXISTS {store.database}")
    store.close()
    bus.close()
    return result


def _address(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return (host, int(port)) if host else (text, default_port)


@click.command("ingest")
@click.option("--samples", default=4_000_000, show_default=True, help="Samples to ingest.")
@click.option("--batch-rows", default=2048, show_default=True,
              help="Samples per bus message (one device's poll).")
@click.option("--devices", default=256, show_default=True)
@click.option("--max-rows", default=500_000, show_default=True,
              help="Samples ingest gathers per store insert.")
@click.option("--backend", "backends", multiple=True, type=click.Choice(["clickhouse", "chdb"]),
              help="Store backends (repeat; default: both).")
@click.option("--kafka", "kafka", default=lambda: os.environ.get("ROCEWATCH_TEST_KAFKA",
                                                                  "127.0.0.1:9092"),
              show_default="$ROCEWATCH_TEST_KAFKA or 127.0.0.1:9092", help="Broker host:port.")
@click.option("--clickhouse", "clickhouse",
              default=lambda: os.environ.get("ROCEWATCH_TEST_CLICKHOUSE", "127.0.0.1:9000"),
              show_default="$ROCEWATCH_TEST_CLICKHOUSE or 127.0.0.1:9000",
              help="ClickHouse server host:port (native protocol).")
@click.option("--chdb-path", default="var/bench-chdb", show_default=True)
@click.option("--compression", default="lz4", show_default=True,
              type=click.Choice(["none", "gzip", "lz4", "zstd"]), help="Kafka compression.")
@click.option("--inflight", default=2, show_default=True,
              help="Inserts in flight while the next batch is gathered.")
@click.option("--rollups/--no-rollups", default=True, show_default=True,
              help="Keep the 1-minute and 1-hour rollup views (store.rollups).")
@click.option("--profile", "profile_path", default="", help="Write a cProfile of ingest here.")
def ingest(samples: int, batch_rows: int, devices: int, max_rows: int, backends: tuple[str, ...],
           kafka: str, clickhouse: str, chdb_path: str, compression: str, inflight: int,
           rollups: bool, profile_path: str) -> None:
    """Samples/s from Kafka into each store backend, and CPU µs per sample of the ingest path."""
    run = uuid.uuid4().hex[:8]
    topics = Topics(f"bench{run}.")
    bus_settings = BusSettings(kind="kafka", kafka=KafkaSettings(
        bootstrap=kafka, partitions=6, compression=compression,
        linger_ms=20, batch_bytes=1 << 20, group_prefix=f"bench{run}-"))
    batches = make_batches(samples, batch_rows, devices)
    total = sum(len(b) for b in batches)
    click.echo(f"rollup views {'on' if rollups else 'off'}, {inflight} insert(s) in flight, "
               f"{max_rows:,} samples per insert")
    click.echo(f"producing {total:,} samples in {len(batches):,} messages of {batch_rows} "
               f"({compression}) to {kafka} ...")
    elapsed = produce(bus_settings, topics, batches)
    click.echo(f"  produced in {elapsed:.2f} s ({total / elapsed:,.0f} samples/s)")
    profile = cProfile.Profile() if profile_path else None
    host, port = _address(clickhouse, 9000)
    results: list[Result] = []
    for backend in backends or ("clickhouse", "chdb"):
        store_settings: Any
        if backend == "clickhouse":
            store_settings = StoreSettings(kind="clickhouse", database=f"bench{run}",
                                           rollups=rollups,
                                           clickhouse=ClickHouseSettings(host=host, port=port))
        else:
            store_settings = StoreSettings(kind="chdb", chdb_path=chdb_path, rollups=rollups,
                                           database=f"bench{run}")
        result = ingest_into(backend, store_settings, bus_settings, topics, total, max_rows,
                             inflight, profile)
        results.append(result)
        click.echo(f"ingest → {backend:<10} {result.samples:>12,} samples in {result.wall_s:6.2f} s"
                   f"  {result.rate:>12,.0f} samples/s  {result.cpu_us:5.2f} µs CPU/sample"
                   f"  ({result.inserts} inserts)")
    if profile is not None:
        profile.dump_stats(profile_path)
        click.echo(f"profile written to {profile_path}")
