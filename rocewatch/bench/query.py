"""``rocewatch bench query``: latency of the read-side API over a realistic amount of data.

It fills a fresh chDB store (a temporary directory) with ``--samples`` samples of a spine-leaf
fabric (every port: octets in/out, FCS and symbol errors, PFC rx/tx on two priorities, ECN marks,
queue occupancy, at ``--interval``), plus alert history and actions, serves the API with uvicorn on
loopback, and times HTTP requests end to end (client included), sequentially. With
``--fabric reference`` the store holds ``--intervals`` of the 24,576-GPU reference fabric with a
storm across zones (:mod:`rocewatch.bench.reference`), and the fabric view and heat map are timed
too. It prints what it measured and how; it asserts nothing.
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
import httpx
import numpy as np

from pipeline.config import StoreSettings
from pipeline.kinds import FAULTY_LINK, PFC_STORM
from pipeline.metrics import METRIC_ID
from pipeline.model import ActionResult, Alert, SampleBatch, Severity
from pipeline.store.base import Store, open_store
from pipeline.store.rollup.job import RollupJob
from pipeline.topology.model import Topology, spine_leaf
from rocewatch.bench.reference import Reference
from rocewatch.bench.reference import fill as reference_fill
from ui.api.app import create_app
from ui.api.server import start_background
from ui.query.layer import Query, StatusOptions

NS = 1_000_000_000

#: per port: (metric, qual, kind of values)
SERIES: tuple[tuple[str, int, str], ...] = (
    ("if_in_octets", -1, "busy"), ("if_out_octets", -1, "busy"),
    ("if_in_fcs_errors", -1, "rare"), ("if_in_symbol_errors", -1, "rare"),
    ("pfc_rx_frames", 3, "some"), ("pfc_rx_frames", 4, "some"),
    ("pfc_tx_frames", 3, "some"), ("pfc_tx_frames", 4, "some"),
    ("queue_ecn_marked_pkts", 3, "some"), ("queue_occupancy_bytes", 3, "gauge"),
)


@dataclass(frozen=True)
class Fabric:
    topology: Topology
    ports: list[tuple[str, str]]
    start_ns: int
    end_ns: int
    interval_ns: int


def fill(store: Store, samples: int, leaves: int, interval_s: float,
         chunk_rows: int = 2_000_000) -> tuple[Fabric, float]:
    """Write ``samples`` rows; returns the fabric and the seconds the inserts took."""
    topo = spine_leaf(spines=max(2, leaves // 4), leaves=leaves, hosts_per_leaf=16)
    ports = [(p.device, p.name) for dev in topo.switches for p in topo.ports(dev)]
    per_series = max(2, samples // (len(ports) * len(SERIES)))
    interval_ns = int(interval_s * NS)
    end_ns = time.time_ns() // NS * NS
    start_ns = end_ns - (per_series - 1) * interval_ns
    ts = start_ns + np.arange(per_series, dtype=np.int64) * interval_ns
    rng = np.random.default_rng(1)
    devices = sorted({d for d, _ in ports})
    dev_code = {d: i for i, d in enumerate(devices)}
    names = sorted({p for _, p in ports})
    port_code = {p: i for i, p in enumerate(names)}
    series_per_chunk = max(1, chunk_rows // per_series)
    keys = [(d, p, m, q, k) for d, p in ports for m, q, k in SERIES]
    spent = 0.0
    for first in range(0, len(keys), series_per_chunk):
        part = keys[first:first + series_per_chunk]
        n = len(part)
        steps = {
            "busy": lambda size: rng.integers(1 << 28, 1 << 30, size),
            "some": lambda size: rng.integers(0, 50, size),
            "rare": lambda size: (rng.random(size) < 0.01) * rng.integers(1, 20, size),
        }
        values = np.empty((n, per_series))
        for i, (_, _, _, _, kind) in enumerate(part):
            if kind == "gauge":
                values[i] = rng.integers(0, 1 << 20, per_series)
            else:
                values[i] = np.cumsum(steps[kind](per_series))
        batch = SampleBatch(
            np.tile(ts, n),
            np.repeat(np.array([dev_code[k[0]] for k in part], np.int32), per_series),
            np.repeat(np.array([port_code[k[1]] for k in part], np.int32), per_series),
            np.repeat(np.array([METRIC_ID[k[2]] for k in part], np.uint16), per_series),
            np.repeat(np.array([k[3] for k in part], np.int16), per_series),
            values.ravel(), np.zeros(n * per_series, np.uint8), tuple(devices), tuple(names))
        t0 = time.perf_counter()
        store.insert_samples(batch)
        spent += time.perf_counter() - t0
    return Fabric(topo, ports, start_ns, end_ns, interval_ns), spent


def fill_alerts(store: Store, fabric: Fabric, episodes: int) -> int:
    """Alert history: ``episodes`` fire/update/resolve sequences, a few still firing."""
    rng = np.random.default_rng(2)
    span = fabric.end_ns - fabric.start_ns
    alerts: list[Alert] = []
    actions: list[ActionResult] = []
    links = fabric.topology.links
    for i in range(episodes):
        link = links[int(rng.integers(len(links)))]
        start = fabric.start_ns + int(rng.integers(span))
        first = Alert(name=FAULTY_LINK if i % 3 else PFC_STORM, entity=link.id,
                      severity=Severity.CRITICAL, ports=(str(link.a), str(link.b)),
                      starts_ns=start, updated_ns=start, evidence={"rate": 1.0 * i})
        alerts.append(first)
        alerts.append(first.model_copy(update={"updated_ns": start + 30 * NS}))
        if i < episodes - 40:  # the last few are still firing
            end = start + 90 * NS
            alerts.append(first.model_copy(update={"updated_ns": end, "ends_ns": end}))
        actions.append(ActionResult(action="drain", target=link.id, outcome="done",
                                    alert_fingerprint=first.fingerprint, at_ns=start + 5 * NS))
    store.insert_alerts(alerts)
    store.insert_actions(actions)
    return len(alerts)


def settle(store: Store, limit_s: float = 120.0) -> float:
    """Wait (at most ``limit_s``) until the engine has no merges running; returns the wait."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        running = store.query("SELECT count() AS n FROM system.merges")["n"]
        if not len(running) or int(running[0]) == 0:
            break
        time.sleep(0.5)
    return time.perf_counter() - t0


def timed(call: Callable[[], httpx.Response], runs: int) -> tuple[list[float], int]:
    call()  # warm caches and connections
    out = []
    size = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        resp = call()
        out.append((time.perf_counter() - t0) * 1000)
        resp.raise_for_status()
        size = len(resp.content)
    return out, size


def _getter(http: httpx.Client, url: str,
            params: dict[str, Any]) -> Callable[[], httpx.Response]:
    return lambda: http.get(url, params=params)


def _cases(fabric: Fabric) -> list[tuple[str, str, dict[str, Any]]]:
    dev, port = fabric.ports[len(fabric.ports) // 2]
    span_h = (fabric.end_ns - fabric.start_ns) / 3600 / NS
    return [
        ("series: 1 metric, 2 priorities, 15m auto step", "/v1/series",
         {"device": dev, "port": port, "metric": "pfc_rx_frames", "start": "now-15m"}),
        ("series: 8 metrics (drill-down), 1h auto step", "/v1/series",
         {"device": dev, "port": port, "start": "now-1h", "metric": [
             "pfc_rx_frames", "pfc_tx_frames", "if_in_fcs_errors", "if_in_symbol_errors",
             "queue_ecn_marked_pkts", "if_in_octets", "if_out_octets",
             "queue_occupancy_bytes"]}),
        (f"series: 1 counter, whole {span_h:.1f} h, step 1m, raw", "/v1/series",
         {"device": dev, "port": port, "metric": "if_in_octets",
          "start": str(fabric.start_ns), "step": "1m", "source": "raw"}),
        (f"series: 1 counter, whole {span_h:.1f} h, step 1m, 1m rollup", "/v1/series",
         {"device": dev, "port": port, "metric": "if_in_octets",
          "start": str(fabric.start_ns), "step": "1m", "source": "1m"}),
        ("alerts: firing now", "/v1/alerts", {}),
        ("alerts: state at a past time", "/v1/alerts",
         {"at": str(fabric.start_ns + (fabric.end_ns - fabric.start_ns) // 2)}),
        ("alerts: episodes in the last hour", "/v1/alerts", {"start": "now-1h"}),
        ("incidents: firing now, with symptoms", "/v1/incidents", {}),
        ("status: whole fabric (levels + utilisation), uncached", "/v1/status", {}),
    ]


def _fabric_cases(ref: Reference) -> list[tuple[str, str, dict[str, Any]]]:
    zone = "z3"
    return [
        ("fabric: zones worst first, every switch's health", "/v1/fabric", {}),
        (f"fabric: zone {zone}", "/v1/fabric", {"group": zone}),
        ("fabric: a spine's 224 ports", "/v1/fabric", {"switch": "z3-spine1"}),
        ("fabric: the storm's pause tree", "/v1/fabric", {"incident": ref.storm.fingerprint}),
        ("heat map: 50 ports by PFC received, whole fabric", "/v1/heatmap", {}),
        ("heat map: zone 6 by errors, search 'agg1'", "/v1/heatmap",
         {"scope": "z6", "sort": "errors", "search": "agg1"}),
        ("topology: every link and host (4.7 MB)", "/v1/topology", {}),
    ]


def _reference(store: Store, intervals: int, interval_s: float,
               episodes: int) -> tuple[Fabric, Reference]:
    t0 = time.perf_counter()
    ref = reference_fill(store, SERIES, intervals, interval_s, progress=click.echo)
    topo = ref.topology
    ports = [(p.device, p.name) for dev in topo.switches for p in topo.ports(dev)]
    fabric = Fabric(topo, ports, ref.start_ns, ref.end_ns, int(interval_s * NS))
    alert_rows = fill_alerts(store, fabric, episodes)
    click.echo(f"store: {ref.samples:,} samples of {len(ports) * len(SERIES):,} series "
               f"({len(topo.switches)} switches, {len(ports):,} ports), {intervals} intervals of "
               f"{interval_s:g} s in event-time order; inserts {ref.insert_s:.0f} s "
               f"({ref.samples / ref.insert_s / 1e6:.2f} M rows/s), rollup job "
               f"{ref.rollup_s:.0f} s, {time.perf_counter() - t0:.0f} s in all; a storm over "
               f"{len(ref.paused_ports):,} ports and {alert_rows:,} alert rows of history")
    return fabric, ref


def _row(title: str, ms: list[float], size: int) -> str:
    ms.sort()
    return (f"| {title} | {statistics.median(ms):.1f} | {ms[int(0.95 * (len(ms) - 1))]:.1f} | "
            f"{ms[-1]:.1f} | {size / 1024:.0f} |")


def _cold(store: Store, topology: Topology, params: dict[str, Any]) -> float:
    """One status answer computed from nothing cached but the topology's index (ms)."""
    fresh = Query(store, topology, options=StatusOptions(silent_after_s=1e9))
    t0 = time.perf_counter()
    fresh.status(int(params.get("top", 20)))
    return (time.perf_counter() - t0) * 1000


@click.command("query")
@click.option("--fabric", "shape", type=click.Choice(["spine-leaf", "reference"]),
              default="spine-leaf", show_default=True,
              help="spine-leaf: --leaves leaves, --samples samples; reference: the 24,576-GPU "
                   "three-tier fabric (928 switches, 81,920 ports), --intervals of it.")
@click.option("--samples", type=int, default=10_000_000, show_default=True)
@click.option("--leaves", type=int, default=32, show_default=True,
              help="Fabric size: leaves (spines = leaves/4, 16 hosts per leaf).")
@click.option("--intervals", type=int, default=60, show_default=True,
              help="reference: sample intervals written, in event-time order.")
@click.option("--interval", "interval_s", type=float, default=10.0, show_default=True,
              help="Seconds between samples of a series.")
@click.option("--episodes", type=int, default=20_000, show_default=True,
              help="Alert episodes in the history.")
@click.option("--runs", type=int, default=30, show_default=True, help="Requests per case.")
@click.option("--dir", "path", type=click.Path(file_okay=False), default=None,
              help="chDB directory (default: a temporary one).")
def query(shape: str, samples: int, leaves: int, intervals: int, interval_s: float,
          episodes: int, runs: int, path: str | None) -> None:
    """Latency of /v1/series, /v1/alerts, /v1/status, /v1/fabric and friends over a filled
    store."""
    with tempfile.TemporaryDirectory(prefix="rocewatch-bench-") as tmp:
        store = open_store(StoreSettings(chdb_path=path or tmp, database="bench"))
        store.execute("DROP DATABASE IF EXISTS bench")
        store.migrate()
        ref = None
        if shape == "reference":
            fabric, ref = _reference(store, intervals, interval_s, episodes)
        else:
            fabric, insert_s = fill(store, samples, leaves, interval_s)
            rows = int(store.query("SELECT count() AS n FROM bench.samples")["n"][0])
            t0 = time.perf_counter()  # what the ingest role's rollup job does as the data comes
            RollupJob(store, store.settings).catch_up()
            roll_s = time.perf_counter() - t0
            alert_rows = fill_alerts(store, fabric, episodes)
            click.echo(f"store: {rows:,} samples of {len(fabric.ports) * len(SERIES):,} series "
                       f"({len(fabric.topology.switches)} switches, {len(fabric.ports):,} "
                       f"ports), {(fabric.end_ns - fabric.start_ns) / 3600 / NS:.1f} h at "
                       f"{interval_s:g} s; inserted in {insert_s:.1f} s "
                       f"({rows / insert_s / 1e6:.2f} M rows/s), rolled up in {roll_s:.1f} s; "
                       f"{alert_rows:,} alert rows")
        settle_s = settle(store)
        click.echo(f"background merges settled in {settle_s:.1f} s")
        cold = [_cold(store, fabric.topology, {}) for _ in range(max(3, runs // 10))]
        # no answer caches: every request below pays its full cost (but the topology's index)
        query_layer = Query(store, fabric.topology, options=StatusOptions(
            silent_after_s=1e9, status_cache_s=0, utilisation_cache_s=0, live_cache_s=0,
            seen_cache_s=0, rolled_cache_s=0))
        served = Query(store, fabric.topology, options=StatusOptions(silent_after_s=1e9))
        running = start_background(create_app(query_layer))
        as_served = start_background(create_app(served))
        cases = _cases(fabric) + (_fabric_cases(ref) if ref is not None else [])
        lines = [_row("status: whole fabric, a new query layer (nothing cached but the "
                      "topology's index)", cold, 0)]
        try:
            with httpx.Client(base_url=running.url, timeout=120) as http:
                for title, url, params in cases:
                    ms, size = timed(_getter(http, url, params), runs)
                    lines.append(_row(title, ms, size))
            with httpx.Client(base_url=as_served.url, timeout=120) as http:
                for title, url, params in [("status, as served (answers reused 1 s, port "
                                            "values once per rolled minute)", "/v1/status", {}),
                                           ("fabric, as served", "/v1/fabric", {})]:
                    ms, size = timed(_getter(http, url, params), runs)
                    lines.append(_row(title, ms, size))
        finally:
            running.stop()
            as_served.stop()
            store.close()
    load = os.getloadavg()[0]
    click.echo(f"machine: {os.cpu_count()} CPUs (load average {load:.1f} at the end), "
               f"{platform.python_implementation()} {platform.python_version()}; {runs} "
               f"sequential requests per case over HTTP (httpx → uvicorn on 127.0.0.1), "
               f"answer caches off unless the case says otherwise")
    click.echo("| request | p50 ms | p95 ms | max ms | answer KiB |")
    click.echo("|---|---:|---:|---:|---:|")
    for line in lines:
        click.echo(line)
