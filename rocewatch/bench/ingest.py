"""``rocewatch bench ingest``: samples per second from Kafka into each store backend, with the
rollups rolled as the ingest role rolls them, and the CPU each sample costs.

The benchmark fills a fresh topic with encoded per-device batches (as collectors send them: one
message per device and poll, polls ``--interval`` seconds of event time apart), then runs one
ingest consumer in this process against each backend in turn, from a fresh consumer group into a
fresh database, with the rollup job on its schedule beside it (as ``rocewatch run --role ingest``
does). The clock stops once every sample is stored and committed and the rollup job has rolled
every bucket the data's event time completed. It prints wall-clock samples/s and CPU per sample:
of this process (every thread: kafka-python's fetcher, decoding, batching, the driver's
serialisation, the rollup job; chDB's engine runs in here too) and, when its PID is known, of the
ClickHouse server (raw inserts, rolls, merges). ``--profile FILE`` writes a cProfile of it.
"""

from __future__ import annotations

import cProfile
import os
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from pipeline.bus.base import Topics
from pipeline.config import BusSettings, ClickHouseSettings, KafkaSettings, StoreSettings
from pipeline.metrics import CATALOG
from pipeline.model import SampleBatch
from pipeline.store.rollup.job import RollupStats

NS = 1_000_000_000


@dataclass
class Result:
    backend: str
    samples: int
    wall_s: float
    cpu_s: float
    inserts: int
    #: seconds from the last commit until the rollups had caught up
    rollup_tail_s: float
    rollup: RollupStats
    #: the ClickHouse server's CPU seconds over the same time (None: not measured)
    server_cpu_s: float | None
    #: samples the rolled minute buckets hold
    rolled_samples: int

    @property
    def rate(self) -> float:
        return self.samples / self.wall_s

    @property
    def cpu_us(self) -> float:
        return self.cpu_s / self.samples * 1e6


def make_batches(samples: int, batch_rows: int, devices: int, interval_s: float = 10.0,
                 seed: int = 7) -> list[SampleBatch]:
    """Per-device batches of ``batch_rows`` samples: a poll of 64 ports' counters and gauges,
    each device polled every ``interval_s`` of event time, from the start of the minute an hour
    ago (so the same buckets complete on every run)."""
    rng = np.random.default_rng(seed)
    ports = tuple(f"Ethernet{i * 4}" for i in range(64))
    count = max(1, samples // batch_rows)
    start = (time.time_ns() // NS - 3600) // 60 * 60 * NS
    step = int(interval_s * NS)
    out = []
    for i in range(count):
        device = i % devices
        poll = i // devices
        port = np.arange(batch_rows, dtype=np.int32) % len(ports)
        metric = (np.arange(batch_rows) // len(ports) % len(CATALOG)).astype(np.uint16)
        out.append(SampleBatch(
            np.full(batch_rows, start + poll * step, np.int64)
            + np.arange(batch_rows, dtype=np.int64),
            np.zeros(batch_rows, np.int32), port, metric,
            (np.arange(batch_rows) % 8).astype(np.int16),
            rng.integers(0, 1 << 40, batch_rows).astype(np.float64),
            np.zeros(batch_rows, np.uint8), (f"leaf{device:04d}",), ports))
    return out


def produce(bus_settings: BusSettings, topics: Topics, batches: list[SampleBatch]) -> float:
    """Fill the samples topic; returns the seconds it took."""
    from pipeline.bus.kafka import KafkaBus
    from pipeline.wire.publish import publish_batches

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


class ServerClock:
    """CPU seconds of a local process (the ClickHouse server), from ``/proc/<pid>/stat``."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self._tick = os.sysconf("SC_CLK_TCK")

    def cpu_s(self) -> float | None:
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / self._tick  # utime, stime


def server_pid(given: int | None) -> int | None:
    """The ClickHouse server's PID: given, or the one ``tests/services`` recorded."""
    if given:
        return given
    run = Path(os.environ.get("ROCEWATCH_SERVICES_DIR", "var/services"))
    try:
        pid = int((run / "clickhouse" / "clickhouse.pid").read_text())
        if b"clickhouse" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    except (OSError, ValueError):
        pass
    return None


def ingest_into(backend: str, store_settings: StoreSettings, bus_settings: BusSettings,
                topics: Topics, samples: int, max_rows: int, inflight: int,
                profile: cProfile.Profile | None, server: ServerClock) -> Result:
    """Consume the whole topic into one backend with the rollup job running; time it."""
    from pipeline.bus.kafka import KafkaBus
    from pipeline.ingest.loop import Ingest
    from pipeline.store.base import open_store
    from pipeline.store.rollup.job import RollupJob

    store = open_store(store_settings)
    bus = KafkaBus(bus_settings)
    ingest = Ingest(bus, store, topics, group=f"bench-{backend}-{uuid.uuid4().hex[:6]}",
                    max_rows=max_rows, max_wait_s=0.5, inflight=inflight)
    rollups = RollupJob(store, store_settings)
    stop = threading.Event()
    if profile is not None:
        profile.enable()
    wall0, cpu0, server0 = time.perf_counter(), time.process_time(), server.cpu_s()
    # the production loop (gathering the next batch while the last one is inserted), and the
    # rollup job on its schedule, as the ingest role runs them
    rollups.start()
    runner = threading.Thread(target=ingest.run, args=(stop,), name="bench-ingest")
    runner.start()
    deadline = wall0 + 600
    while ingest.stats.samples < samples and time.perf_counter() < deadline:
        time.sleep(0.005)  # polling the loop's counters, not pacing it
    stored = time.perf_counter()
    rollups.stop()  # lets a run in progress finish
    rollups.catch_up()  # what the next scheduled runs would do
    end, cpu, server1 = time.perf_counter(), time.process_time() - cpu0, server.cpu_s()
    if profile is not None:
        profile.disable()
    stop.set()
    runner.join(60)
    server_cpu = None if server0 is None or server1 is None else server1 - server0
    rolled = 0
    if rollups.needed:
        found = store.query(f"SELECT sum(n) AS n FROM {store.database}.samples_1m FINAL")
        rolled = int(found["n"][0]) if len(found["n"]) else 0
    result = Result(backend, ingest.stats.samples, end - wall0, cpu, ingest.stats.inserts,
                    end - stored, rollups.stats, server_cpu, rolled)
    store.execute(f"DROP DATABASE IF EXISTS {store.database}")
    store.close()
    bus.close()
    return result


def _address(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return (host, int(port)) if host else (text, default_port)


def _report(result: Result, rollups: bool) -> str:
    stats = result.rollup
    server = ("" if result.server_cpu_s is None else
              f"  server {result.server_cpu_s / result.samples * 1e6:5.2f} µs CPU/sample")
    line = (f"ingest → {result.backend:<10} {result.samples:>12,} samples in "
            f"{result.wall_s:6.2f} s  {result.rate:>12,.0f} samples/s  "
            f"{result.cpu_us:5.2f} µs CPU/sample{server}  ({result.inserts} inserts)")
    if not rollups:
        return line
    return (f"{line}\n"
            f"  stored and committed in {result.wall_s - result.rollup_tail_s:.2f} s; "
            f"rollups: {stats.rolled.get('samples_1m', 0)} minute and "
            f"{stats.rolled.get('samples_1h', 0)} hour buckets rolled, holding "
            f"{result.rolled_samples / result.samples:.0%} of the samples (the rest is in "
            f"buckets still open), {sum(stats.rerolled.values())} re-rolled for late samples, "
            f"{stats.statements} statements, {stats.busy_s:.2f} s in the job; caught up "
            f"{result.rollup_tail_s:.2f} s after the last commit")


@click.command("ingest")
@click.option("--samples", default=12_000_000, show_default=True, help="Samples to ingest.")
@click.option("--batch-rows", default=2048, show_default=True,
              help="Samples per bus message (one device's poll).")
@click.option("--devices", default=256, show_default=True)
@click.option("--interval", "interval_s", default=10.0, show_default=True,
              help="Event-time seconds between a device's polls.")
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
@click.option("--server-pid", "pid", type=int, default=None,
              help="The ClickHouse server's PID, to count its CPU (default: the one "
                   "tests/services/services.sh started, if any).")
@click.option("--chdb-path", default="var/bench-chdb", show_default=True)
@click.option("--compression", default="lz4", show_default=True,
              type=click.Choice(["none", "gzip", "lz4", "zstd"]), help="Kafka compression.")
@click.option("--inflight", default=2, show_default=True,
              help="Inserts in flight while the next batch is gathered.")
@click.option("--rollups/--no-rollups", default=True, show_default=True,
              help="Keep the 1-minute and 1-hour rollups and run their job (store.rollups).")
@click.option("--profile", "profile_path", default="", help="Write a cProfile of ingest here.")
def ingest(samples: int, batch_rows: int, devices: int, interval_s: float, max_rows: int,
           backends: tuple[str, ...], kafka: str, clickhouse: str, pid: int | None,
           chdb_path: str, compression: str, inflight: int, rollups: bool,
           profile_path: str) -> None:
    """Samples/s from Kafka into each store backend, rollups included, and CPU µs per sample."""
    run = uuid.uuid4().hex[:8]
    topics = Topics(f"bench{run}.")
    bus_settings = BusSettings(kind="kafka", kafka=KafkaSettings(
        bootstrap=kafka, partitions=6, compression=compression,
        linger_ms=20, batch_bytes=1 << 20, group_prefix=f"bench{run}-"))
    batches = make_batches(samples, batch_rows, devices, interval_s)
    total = sum(len(b) for b in batches)
    span_s = (int(batches[-1].ts_ns.max()) - int(batches[0].ts_ns.min())) / NS
    defaults = StoreSettings()
    job = (f"on (job every {defaults.rollup_every_s:g} s, lateness "
           f"{defaults.rollup_lateness_s:g} s)" if rollups else "off")
    click.echo(f"rollups {job}, {inflight} insert(s) in flight, "
               f"{max_rows:,} samples per insert; load average "
               f"{os.getloadavg()[0]:.2f}")
    click.echo(f"producing {total:,} samples in {len(batches):,} messages of {batch_rows} "
               f"({compression}) to {kafka}: {devices} devices x {batch_rows} series every "
               f"{interval_s:g} s, {span_s:.0f} s of event time ...")
    elapsed = produce(bus_settings, topics, batches)
    click.echo(f"  produced in {elapsed:.2f} s ({total / elapsed:,.0f} samples/s)")
    profile = cProfile.Profile() if profile_path else None
    host, port = _address(clickhouse, 9000)
    for backend in backends or ("clickhouse", "chdb"):
        store_settings: Any
        if backend == "clickhouse":
            store_settings = StoreSettings(kind="clickhouse", database=f"bench{run}",
                                           rollups=rollups,
                                           clickhouse=ClickHouseSettings(host=host, port=port))
            server = ServerClock(server_pid(pid))
        else:
            store_settings = StoreSettings(kind="chdb", chdb_path=chdb_path, rollups=rollups,
                                           database=f"bench{run}")
            server = ServerClock(None)
        result = ingest_into(backend, store_settings, bus_settings, topics, total, max_rows,
                             inflight, profile, server)
        click.echo(_report(result, rollups))
        click.echo(f"  load average {os.getloadavg()[0]:.2f}")
    if profile is not None:
        profile.dump_stats(profile_path)
        click.echo(f"profile written to {profile_path}")
