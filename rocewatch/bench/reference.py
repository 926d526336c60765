"""The 24,576-GPU reference fabric in a store, for the read side's benchmarks.

The fabric of issue 12: 8 AI zones of 16 spines and 96 leaves (32 hosts per leaf, 2 links per
leaf-spine pair) joined by 32 aggregation switches, 400G everywhere: 928 switches and 81,920
switch ports. :func:`fill` writes its telemetry as ingest would, one batch per 10-second interval
in event-time order, every port reporting the ten series of :data:`rocewatch.bench.query.SERIES`
(819,200 series), and runs the rollup job every minute of data as the ingest role does. From a
third of the way in, a host of zone 3 stops draining: its leaf port pauses continuously and the
pauses climb to all 16 spines of zone 3, through all 32 aggregation switches, into every spine
of zone 6 and one of its leaves (about 1,100 paused ports); the incident and its symptoms are in
the alerts table like the correlator's. A faulty link in zone 5 is the second incident.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pipeline.kinds import FAULTY_LINK, PFC_PAUSED, PFC_STORM, PFC_WATCHDOG
from pipeline.metrics import METRIC_ID
from pipeline.model import Alert, SampleBatch, Severity
from pipeline.store.base import Store
from pipeline.store.rollup.job import RollupJob
from pipeline.topology.model import Link, Topology
from pipeline.topology.shape import FabricShape

NS = 1_000_000_000
SHAPE = FabricShape(spines=16, leaves=96, hosts_per_leaf=32, uplinks_per_pair=2, zones=8,
                    aggs=32)
ROOT_HOST_LEAF = "z3-leaf7"
FAR_LEAF = "z6-leaf40"
CORRUPT_PAIR = ("z5-leaf12", "z5-spine3")
#: pause frames/s each paused port receives during the storm
STORM_PFC = 4_000


@dataclass
class Reference:
    topology: Topology
    start_ns: int
    end_ns: int
    fault_ns: int
    storm: Alert
    paused_ports: list[str]
    corrupt: Link
    samples: int = 0
    insert_s: float = 0.0
    rollup_s: float = 0.0
    alerts: list[Alert] = field(default_factory=list)


def _far(link: Link, device: str) -> str:
    return link.b.device if link.a.device == device else link.a.device


def _end_on(link: Link, device: str) -> str:
    return str(link.a if link.a.device == device else link.b)


def storm_ports(topo: Topology) -> list[str]:
    """The paused ports, from the root outwards: the host's leaf port, each zone-3 spine's port
    to the leaf, each aggregation switch's ports to the zone-3 spines, each zone-6 spine's
    aggregation uplinks, and the far leaf's uplinks."""
    host = topo.host_ports(ROOT_HOST_LEAF)[0]
    out = [str(host.port)]
    out += [_end_on(ln, _far(ln, ROOT_HOST_LEAF)) for ln in topo.up_links(ROOT_HOST_LEAF)]
    for spine in topo.zone_switches(3):
        if topo.role(spine) == "spine":
            out += [_end_on(ln, _far(ln, spine)) for ln in topo.agg_uplinks(spine)]
    for spine in topo.zone_switches(6):
        if topo.role(spine) == "spine":
            out += [_end_on(ln, spine) for ln in topo.agg_uplinks(spine)]
    out += [_end_on(ln, FAR_LEAF) for ln in topo.up_links(FAR_LEAF)]
    return out


def fill(store: Store, series: tuple[tuple[str, int, str], ...], intervals: int,
         interval_s: float = 10.0, progress: Callable[[str], None] = lambda _: None) -> Reference:
    """Write ``intervals`` sample intervals of the reference fabric (see the module doc)."""
    topo = SHAPE.build()
    ports = [(p.device, p.name) for dev in topo.switches for p in topo.ports(dev)]
    devices = list(topo.switches)
    dev_code = {d: i for i, d in enumerate(devices)}
    names = sorted({p for _, p in ports})
    port_code = {p: i for i, p in enumerate(names)}
    keys = [(d, p, m, q, k) for d, p in ports for m, q, k in series]
    n = len(keys)
    dev = np.array([dev_code[k[0]] for k in keys], np.int32)
    prt = np.array([port_code[k[1]] for k in keys], np.int32)
    met = np.array([METRIC_ID[k[2]] for k in keys], np.uint16)
    qual = np.array([k[3] for k in keys], np.int16)
    kind = np.array([k[4] for k in keys])
    interval_ns = int(interval_s * NS)
    end_ns = time.time_ns() // interval_ns * interval_ns
    start_ns = end_ns - (intervals - 1) * interval_ns
    fault_ns = start_ns + (intervals // 3) * interval_ns
    paused = set(storm_ports(topo))
    storming = np.array([k[2] == "pfc_rx_frames" and f"{k[0]}:{k[1]}" in paused for k in keys])
    corrupt = topo.links_between(*CORRUPT_PAIR)[0]
    bad_ends = {str(corrupt.a), str(corrupt.b)}
    corrupting = np.array([k[2] == "if_in_fcs_errors" and f"{k[0]}:{k[1]}" in bad_ends
                           for k in keys])
    rng = np.random.default_rng(7)
    counter = np.zeros(n)
    job = RollupJob(store, store.settings)
    storm, alerts = _alerts(topo, fault_ns, corrupt)
    ref = Reference(topo, start_ns, end_ns, fault_ns, storm, sorted(paused), corrupt,
                    alerts=alerts)
    per_minute = max(1, round(60 / interval_s))
    for i in range(intervals):
        t = start_ns + i * interval_ns
        step = np.where(kind == "busy", rng.integers(1 << 30, 1 << 32, n).astype(np.float64),
                        np.where(kind == "some", rng.integers(0, 40, n),
                                 (rng.random(n) < 0.01) * rng.integers(1, 20, n)))
        if t >= fault_ns:
            step = step + storming * STORM_PFC * interval_s + corrupting * 200 * interval_s
        counter += step
        values = np.where(kind == "gauge", rng.integers(0, 1 << 20, n), counter)
        batch = SampleBatch(np.full(n, t, np.int64), dev, prt, met, qual,
                            values.astype(np.float64), np.zeros(n, np.uint8), tuple(devices),
                            tuple(names))
        t0 = time.perf_counter()
        store.insert_samples(batch)
        ref.insert_s += time.perf_counter() - t0
        ref.samples += n
        if i % per_minute == per_minute - 1 or i == intervals - 1:
            t0 = time.perf_counter()
            job.run_once()
            ref.rollup_s += time.perf_counter() - t0
            progress(f"  {i + 1}/{intervals} intervals: {ref.samples:,} samples, inserts "
                     f"{ref.insert_s:.0f} s, rollups {ref.rollup_s:.0f} s")
    store.insert_alerts(ref.alerts)
    return ref


def _alerts(topo: Topology, fault_ns: int, corrupt: Link) -> tuple[Alert, list[Alert]]:
    """The storm's incident (first) and every alert to store."""
    ports = storm_ports(topo)
    host = topo.host_ports(ROOT_HOST_LEAF)[0]
    storm = Alert(name=PFC_STORM, entity=host.name, severity=Severity.CRITICAL,
                  ports=(ports[0],), starts_ns=fault_ns + 20 * NS, updated_ns=fault_ns + 20 * NS,
                  confidence=0.97, source="correlator",
                  annotations={"summary": f"{host.name} pauses {ports[0]} continuously and "
                                          f"takes nothing"})
    symptoms = [
        Alert(name=PFC_WATCHDOG if i == 0 else PFC_PAUSED, entity=port,
              severity=Severity.CRITICAL if i == 0 else Severity.WARNING, ports=(port,),
              root_cause=False, inhibited_by=storm.fingerprint,
              starts_ns=fault_ns + (10 + i % 30) * NS, updated_ns=fault_ns + 40 * NS,
              source="ports", evidence={"pause_share": 0.8})
        for i, port in enumerate(ports)]
    storm = storm.model_copy(update={"explains": tuple(s.fingerprint for s in symptoms)})
    faulty = Alert(name=FAULTY_LINK, entity=corrupt.id, severity=Severity.CRITICAL,
                   ports=(str(corrupt.a), str(corrupt.b)), starts_ns=fault_ns + 30 * NS,
                   updated_ns=fault_ns + 30 * NS, source="correlator",
                   annotations={"summary": f"{corrupt.id} corrupts frames: both ends count FCS "
                                           f"errors"})
    return storm, [*symptoms, storm, faulty]
