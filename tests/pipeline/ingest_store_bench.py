"""What ingest+store costs per sample at ``bench fabric``'s shape: a benchmark that prints
numbers (not a test; nothing here asserts).

``rocewatch bench fabric --zones 1`` books ~0.14 CPU s per simulated s to ingest+store for
~22,000 samples/s. This reproduces that stage alone, in one process: one zone's switches (16
spines of 194 ports, 96 leaves of 64 ports, 24 series per port, a 10 s cadence, each device at
its own phase; ``--zones`` of them), encoded by the real wire encoding and published per
device, as the collectors' flushes publish them, onto the in-process bus at the pace of simulated
time (``--speed`` times the wall clock). The ingest role (:func:`pipeline.ingest.loop.run`: the
loop, its inserters, the rollup job on its schedule) stores them into a fresh chDB store, its
wall-clock settings (``ingest.gather_s``, ``store.rollup_every_s``) divided by the speed so each
insert and each rollup run covers as much simulated time as in the fabric bench.

It prints, over the simulated seconds after ``--warmup``: the process's CPU (every thread,
chDB's included, the source's left out) per million samples and per simulated second, the stages
as ``bench fabric`` books them (:class:`rocewatch.bench.fabric_meter.ThreadCpu`), the CPU of each
kind of thread and while each kind of store statement ran, and the engine's counters
(:mod:`tests.pipeline.ingest_store_meter`).
After the window it rolls every bucket and prints a digest of the stored rows and rollups (equal
digests: the same rows stored). ``--profile FILE`` writes a cProfile of the ingest loop's gather,
the inserts and the rollup runs::

    PYTHONPATH=. .venv/bin/python -m tests.pipeline.ingest_store_bench --speed 2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import pipeline
from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from pipeline.config import IngestSettings, StoreSettings
from pipeline.ingest.loop import Ingest, run
from pipeline.metrics import CATALOG
from pipeline.model import SampleBatch
from pipeline.stage import StageContext
from pipeline.store.base import open_store
from pipeline.store.rollup.job import RollupJob
from pipeline.wire.samples import encode_batch
from rocewatch.bench.fabric_meter import ThreadCpu
from rocewatch.settings import Settings
from tests.pipeline.ingest_store_meter import (
    EVENTS,
    MeteredConnection,
    Profiles,
    Statements,
    events,
    thread_groups,
)

NS = 1_000_000_000
INTERVAL_NS = 10 * NS
#: what the collectors' flushes do: every device's rows of an interval leave within this
FLUSH_S = 0.5
#: the series of one port: (metric, priority or queue)
PORT_SERIES: tuple[tuple[str, int], ...] = (
    *((m, -1) for m in ("if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts",
                        "if_in_errors", "if_out_errors", "if_in_discards", "if_out_discards",
                        "if_in_fcs_errors", "if_in_symbol_errors", "if_carrier_transitions",
                        "if_oper_status", "if_admin_status", "if_speed",
                        "fec_corrected_blocks", "fec_uncorrectable_blocks")),
    *((m, 3) for m in ("pfc_rx_frames", "pfc_tx_frames", "pfc_rx_pause_us", "pfc_tx_pause_us",
                       "queue_tx_pkts", "queue_tx_octets", "queue_ecn_marked_pkts",
                       "queue_occupancy_bytes")),
)


@dataclass(frozen=True)
class Device:
    name: str
    ports: tuple[str, ...]
    #: when in each interval it is sampled (ns)
    phase_ns: int


def zone_devices(zones: int, seed: int) -> list[Device]:
    """One zone of the reference fabric per ``zones``: 16 spines (192 leaf ports and 2
    aggregation uplinks) and 96 leaves (32 hosts, 32 uplinks)."""
    rng = np.random.default_rng(seed)
    out = []
    for z in range(zones):
        shapes = [(f"z{z}-spine{i}", 194) for i in range(16)]
        shapes += [(f"z{z}-leaf{i}", 64) for i in range(96)]
        for name, n in shapes:
            ports = tuple(f"Ethernet{p // 8 + 1}/{p % 8 + 1}" for p in range(n))
            out.append(Device(name, ports, int(rng.integers(0, INTERVAL_NS // 1_000_000))
                              * 1_000_000))
    return out


class Source:
    """Every device's polls, encoded: counters that grow at per-series rates, steady gauges."""

    def __init__(self, devices: list[Device], start_ns: int, seed: int) -> None:
        codes = {m.name: i for i, m in enumerate(CATALOG)}
        self.devices = devices
        self.start_ns = start_ns
        self._metric = np.array([codes[m] for m, _ in PORT_SERIES], np.uint16)
        self._qual = np.array([q for _, q in PORT_SERIES], np.int16)
        counter = np.array([CATALOG[codes[m]].kind == "counter" for m, _ in PORT_SERIES])
        rng = np.random.default_rng(seed)
        self._rates = []
        self._base = []
        for d in devices:
            n = len(d.ports) * len(PORT_SERIES)
            scale = np.tile(np.where(counter, 1.0, 0.0), len(d.ports))
            self._rates.append(rng.gamma(0.5, 2e8, n) * scale // 1)
            self._base.append(rng.integers(0, 1 << 40, n).astype(np.float64))

    def poll(self, index: int, k: int) -> tuple[int, bytes, bytes]:
        """Device ``index``'s ``k``-th poll: (event time, key, message)."""
        d = self.devices[index]
        n = len(d.ports) * len(PORT_SERIES)
        ts = self.start_ns + k * INTERVAL_NS + d.phase_ns
        batch = SampleBatch(
            np.full(n, ts, np.int64), np.zeros(n, np.int32),
            np.repeat(np.arange(len(d.ports), dtype=np.int32), len(PORT_SERIES)),
            np.tile(self._metric, len(d.ports)), np.tile(self._qual, len(d.ports)),
            self._base[index] + self._rates[index] * (k * 10), np.zeros(n, np.uint8),
            (d.name,), d.ports)
        return ts, d.name.encode(), encode_batch(batch)

    def schedule(self, sim_s: float) -> list[tuple[int, int, int]]:
        """Every poll in the first ``sim_s`` simulated seconds, in event-time order: (event
        time, device index, poll number); :meth:`poll` encodes one when it is due."""
        out = [(self.start_ns + k * INTERVAL_NS + d.phase_ns, i, k)
               for k in range(int(sim_s * NS // INTERVAL_NS) + 1)
               for i, d in enumerate(self.devices)]
        return sorted(m for m in out if m[0] < self.start_ns + sim_s * NS)

    def rows(self, index: int) -> int:
        return len(self.devices[index].ports) * len(PORT_SERIES)


def _wait(until: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not until():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def digest(store: Any, start_ns: int) -> dict[str, tuple[int, int]]:
    """Rows and a content hash of the samples and each rollup, times relative to the start (the
    run's own minute) and floats to 1e-3 (a rollup's float sums come out of parallel threads in
    any order). The hour rollup's hash also depends on the run's minute in its hour."""
    db = store.database
    out = {}
    for table, when in (("samples", "ts"), ("samples_1m", "bucket"), ("samples_1h", "bucket")):
        cols = store.query(f"SELECT name, type FROM system.columns WHERE database = '{db}' "
                           f"AND table = '{table}' ORDER BY position")
        terms = [f"toUnixTimestamp64Nano({n}) - {start_ns}" if n == when else
                 f"{n} - {start_ns}" if n in ("t_first", "t_last") else
                 f"round({n}, 3)" if t == "Float64" else str(n)
                 for n, t in zip(cols["name"], cols["type"], strict=True)]
        got = store.query(f"SELECT count() AS rows_, sum(cityHash64({', '.join(terms)})) AS hash_ "
                          f"FROM {db}.{table} FINAL")
        out[table] = (int(got["rows_"][0]), int(got["hash_"][0]))
    return out


def bench(zones: int, sim_s: float, warmup_s: float, speed: float, profile: str | None,
          seed: int, gather_s: float, rollup_every_s: float) -> None:
    devices = zone_devices(zones, seed)
    # on a minute: the rollup buckets, and so the digests, are the same on every run
    start_ns = (time.time_ns() // (60 * NS) - 1) * 60 * NS
    source = Source(devices, start_ns, seed)
    schedule = source.schedule(sim_s)
    rows = sum(source.rows(i) for _, i, _ in schedule)
    print(f"{len(devices)} devices, {len(schedule):,} messages, {rows:,} samples over "
          f"{sim_s:g} simulated s ({rows / sim_s:,.0f}/s), speed x{speed:g}; "
          f"gather {gather_s:g} s; code in "
          f"{os.path.dirname(os.path.dirname(os.path.abspath(pipeline.__file__)))}",
          flush=True)
    profiles = Profiles() if profile else None
    if profiles:
        profiles.wrap(Ingest, "gather")
        profiles.wrap(Ingest, "finish")
        profiles.wrap(RollupJob, "run_once")
    statements = Statements(StoreSettings().database)
    with tempfile.TemporaryDirectory(prefix="rw-ingest-bench-") as tmp:
        store_settings = StoreSettings(chdb_path=f"{tmp}/chdb",
                                       rollup_every_s=rollup_every_s / speed)
        settings = Settings(store=store_settings, ingest=IngestSettings(gather_s=gather_s / speed))
        store = open_store(store_settings)
        store._conn = MeteredConnection(store._conn, statements)  # type: ignore[attr-defined]
        bus = MemoryBus(partitions=settings.bus.partitions, capacity=settings.bus.capacity)
        topics = Topics()
        ctx = StageContext(settings, bus, topics, store=store)
        stop = threading.Event()
        role = threading.Thread(target=run, args=(ctx, stop), name="rocewatch-ingest")
        role.start()
        _wait(lambda: "rollup" in ctx.health, 30)
        meter = ThreadCpu()
        window: dict[str, Any] = {}

        def stored() -> int:
            return int(ctx.health["ingest"]()["samples"])

        def publish() -> None:
            producer = bus.producer()
            wall0 = time.monotonic()
            for ts, index, k in schedule:
                sim = (ts - start_ns) / NS
                # a collector flushes every FLUSH_S: a poll leaves at the next flush after it
                due = wall0 + (sim // FLUSH_S + 1) * FLUSH_S / speed
                if not window and sim >= warmup_s:
                    window.update(wall=time.monotonic(), cpu=time.process_time(),
                                  stored=stored(), groups=thread_groups(),
                                  events=events(store), statements=statements.since({}),
                                  rolled=dict(ctx.health["rollup"]()["rolled"]))
                    meter.start()
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                _, key, value = source.poll(index, k)  # encoded here: booked to this thread
                producer.send(topics.samples, value, key=key)

        sender = threading.Thread(target=publish, name="bench-publish")
        sender.start()
        sender.join()
        _wait(lambda: stored() >= rows, 120)
        stages, cpu, wall = meter.read(), time.process_time() - window["cpu"], \
            time.monotonic() - window["wall"]
        groups = thread_groups()
        counted = events(store)
        by_kind = statements.since(window["statements"])
        samples = stored() - window["stored"]
        window_sim = sim_s - warmup_s
        stop.set()
        role.join()
        catchup = RollupJob(store, store_settings)
        catchup.catch_up(event_ns=start_ns + int(sim_s * NS) + 3600 * NS)
        print(f"window: {window_sim:g} simulated s ({wall:.1f} s wall), {samples:,} samples "
              f"stored; load average {os.getloadavg()[0]:.2f}")
        before = window["groups"]
        used = sorted(((k, v - before.get(k, 0.0)) for k, v in groups.items()),
                      key=lambda kv: -kv[1])
        cpu -= sum(v for k, v in used if k.startswith("bench-"))  # the source's, not ingest's
        print(f"process CPU but the source's {cpu:.2f} s = {cpu / samples * 1e6:.2f} s per 1 M "
              f"samples = {cpu / window_sim:.3f} CPU s per simulated s")
        ingest_store = stages.get("ingest+store", 0.0)
        print(f"as bench fabric books it: ingest+store {ingest_store / window_sim:.3f} CPU s per "
              f"simulated s ({ingest_store / samples * 1e6:.2f} s per 1 M); "
              + ", ".join(f"{k} {v / window_sim:.3f}" for k, v in sorted(stages.items())
                          if k not in ("ingest+store",) and v > 0.005))
        print("threads (s per 1 M samples): " + ", ".join(
            f"{k} {v / samples * 1e6:.2f}" for k, v in used if v > 0.005))
        print("engine: " + ", ".join(f"{e} {counted.get(e, 0) - window['events'].get(e, 0):,}"
                                     for e in EVENTS))
        print("process CPU while statements ran (s per 1 M samples): " + ", ".join(
            f"{k} {v / samples * 1e6:.2f}"
            for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])))
        health = ctx.health
        rolled = {k: v - window["rolled"].get(k, 0)
                  for k, v in health["rollup"]()["rolled"].items()}
        print(f"inserts {health['ingest']()['inserts']}, rollup runs "
              f"{health['rollup']()['runs']}, statements {health['rollup']()['statements']}; "
              f"buckets rolled in the window {rolled}")
        for table, (n, h) in digest(store, start_ns).items():
            print(f"digest {table}: {n:,} rows, hash {h:x}")
        store.close()
    if profiles and profile:
        profiles.dump(profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zones", type=int, default=1)
    parser.add_argument("--sim-s", type=float, default=180.0,
                        help="simulated seconds of data")
    parser.add_argument("--warmup", type=float, default=60.0,
                        help="simulated seconds before the measured window")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="simulated seconds per wall second")
    parser.add_argument("--profile", help="write a cProfile of the ingest role here")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--gather-s", type=float, default=IngestSettings().gather_s,
                        help="ingest.gather_s, in simulated seconds")
    parser.add_argument("--rollup-every", type=float, default=StoreSettings().rollup_every_s,
                        help="store.rollup_every_s, in simulated seconds")
    a = parser.parse_args()
    bench(a.zones, a.sim_s, a.warmup, a.speed, a.profile, a.seed, a.gather_s, a.rollup_every)


if __name__ == "__main__":
    main()
