"""``rocewatch bench detect``: samples per second through rates, detectors and the correlator.

A synthetic spine-leaf fabric streams one batch per switch per sample interval, every port
carrying the metrics of the SONiC profile (the richest dialect, so every detector has work). Its
counters integrate steady rates with a little noise; halfway through, a host's NIC gets stuck,
so the pause graph, the storm detector and the correlator run on a real incident. The benchmark
times :meth:`DetectionChain.observe` alone (batch building is outside the clock) and prints what
it measured.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from dataclasses import dataclass

import click
import numpy as np

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from pipeline.kinds import ANOMALY
from pipeline.metrics import CATALOG, IS_COUNTER, metric_id
from pipeline.model import SampleBatch
from pipeline.topology.model import Topology, spine_leaf

PORT_METRICS = ("if_in_octets", "if_out_octets", "if_in_pkts", "if_out_pkts", "if_in_errors",
                "if_out_errors", "if_in_discards", "if_out_discards", "if_in_fcs_errors",
                "if_in_symbol_errors", "fec_corrected_blocks", "fec_uncorrectable_blocks",
                "if_carrier_transitions", "if_oper_status", "if_admin_status")
QUEUE_METRICS = ("pfc_rx_frames", "pfc_tx_frames", "pfc_rx_pause_us", "pfc_tx_pause_us",
                 "queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts",
                 "queue_ecn_marked_pkts", "queue_occupancy_bytes", "queue_watermark_bytes")


@dataclass
class _Switch:
    name: str
    ports: tuple[str, ...]
    port_col: np.ndarray
    metric_col: np.ndarray
    qual_col: np.ndarray
    rate: np.ndarray  # per row: per-second rate (counters) or value (gauges)
    value: np.ndarray


#: the reference fabric's subset (issue 13: ~30 series per port): every port metric, every queue
#: metric of the lossless queue (3) and the traffic, drop, ECN and depth counters of the default
#: queue (0)
REFERENCE_QUEUES: dict[int, tuple[str, ...]] = {
    3: QUEUE_METRICS,
    0: ("queue_tx_pkts", "queue_tx_octets", "queue_dropped_pkts", "queue_ecn_marked_pkts",
        "queue_watermark_bytes")}
SERIES_PER_PORT: dict[int, dict[int, tuple[str, ...]]] = {
    30: REFERENCE_QUEUES,
    len(PORT_METRICS) + 8 * len(QUEUE_METRICS): {q: QUEUE_METRICS for q in range(8)}}


def _switch(name: str, topology: Topology, util: float,
            queues: dict[int, tuple[str, ...]]) -> _Switch:
    ports = tuple(p.name for p in topology.ports(name))
    n = len(ports)
    octets = util * 400e9 / 8
    cols: list[tuple[int, int, int, float]] = []
    base = {"if_in_octets": octets, "if_out_octets": octets, "if_in_pkts": octets / 4150,
            "if_out_pkts": octets / 4150, "fec_corrected_blocks": 4000.0, "if_oper_status": 1.0,
            "if_admin_status": 1.0}
    for i in range(n):
        for m in PORT_METRICS:
            cols.append((i, metric_id(m), -1, base.get(m, 0.0)))
        for q in sorted(queues):
            lossless = q == 3
            per_q = {"queue_tx_octets": octets if lossless else 0.0,
                     "queue_tx_pkts": octets / 4150 if lossless else 0.0,
                     "queue_watermark_bytes": 150e3 if lossless else 0.0}
            for m in queues[q]:
                cols.append((i, metric_id(m), q, per_q.get(m, 0.0)))
    arr = np.array(cols, dtype=np.float64)
    return _Switch(name, ports, arr[:, 0].astype(np.int32), arr[:, 1].astype(np.uint16),
                   arr[:, 2].astype(np.int16), arr[:, 3].copy(), np.zeros(len(cols)))


def _stick(sw: _Switch, port_index: int) -> None:
    """The NIC behind this leaf port stops draining: continuous pause, nothing sent."""
    rows = sw.port_col == port_index
    names = np.array([CATALOG[m].name for m in sw.metric_col])
    for metric, q, value in (("pfc_rx_frames", 3, 23842.0), ("pfc_rx_pause_us", 3, 1e6),
                             ("queue_tx_octets", 3, 0.0), ("queue_tx_pkts", 3, 0.0),
                             ("if_out_octets", -1, 0.0), ("if_out_pkts", -1, 0.0)):
        sw.rate[rows & (names == metric) & (sw.qual_col == q)] = value


def _batches(switches: list[_Switch], t: float, rng: np.random.Generator) -> list[SampleBatch]:
    out = []
    ts = 1_700_000_000_000_000_000 + round(t * 1e9)
    for sw in switches:
        counter = IS_COUNTER[sw.metric_col]
        noise = 1.0 + 0.02 * rng.standard_normal(sw.rate.size)
        sw.value = np.where(counter, sw.value + np.maximum(sw.rate * noise, 0.0), sw.rate)
        n = sw.rate.size
        out.append(SampleBatch(np.full(n, ts, np.int64), np.zeros(n, np.int32), sw.port_col,
                               sw.metric_col, sw.qual_col, np.floor(sw.value),
                               np.zeros(n, np.uint8), (sw.name,), sw.ports))
    return out


@click.command("detect")
@click.option("--spines", default=8, show_default=True)
@click.option("--leaves", default=32, show_default=True)
@click.option("--hosts-per-leaf", default=16, show_default=True)
@click.option("--intervals", default=40, show_default=True, help="Sample intervals to stream.")
@click.option("--no-anomaly", is_flag=True, help="Leave the learned detector out.")
@click.option("--series-per-port", type=click.Choice([str(n) for n in SERIES_PER_PORT]),
              default="95", show_default=True,
              help="95: the whole SONiC profile; 30: the reference fabric's subset.")
@click.option("--reference", is_flag=True,
              help="The 24,576-GPU reference fabric (three tiers, 928 switches) instead of "
                   "--spines/--leaves/--hosts-per-leaf.")
@click.option("--polls", default=1, show_default=True,
              help="Deliver each interval in this many parts (a live consumer's polls: the "
                   "switches' messages arrive spread over the interval), gathered into steps "
                   "as the live engine does (detectors.gather).")
@click.option("--every-poll", is_flag=True,
              help="With --polls: one observe per part (the engine before it gathered).")
@click.option("--profile", "profile_to", type=click.Path(dir_okay=False), default=None,
              help="Write a cProfile of the timed calls after the first interval here and "
                   "print the top of it.")
def detect(spines: int, leaves: int, hosts_per_leaf: int, intervals: int,
           no_anomaly: bool, series_per_port: str, reference: bool, polls: int,
           every_poll: bool, profile_to: str | None) -> None:
    """Samples per second through rates + detectors + correlator on a synthetic fabric."""
    from detectors.chain import build_detectors
    from detectors.gather import Gathered
    from pipeline.config import PluginSpec
    from pipeline.registry import Registry

    if reference:
        from rocewatch.bench.reference import SHAPE

        topology = SHAPE.build()
        spines, leaves = len(topology.spines), len(topology.leaves)
    else:
        topology = spine_leaf(spines, leaves, hosts_per_leaf)
    names = Registry("rocewatch.detectors").names()
    if no_anomaly:
        names = [n for n in names if n != ANOMALY]
    settings = DetectionSettings(detectors=tuple(PluginSpec(type=n) for n in names))
    chain = DetectionChain(settings, topology, build_detectors(settings, topology))
    queues = SERIES_PER_PORT[int(series_per_port)]
    switches = [_switch(s, topology, 0.3, queues) for s in topology.switches]
    profiler = cProfile.Profile() if profile_to else None
    rng = np.random.default_rng(7)
    stuck_at = intervals // 2
    host = topology.hosts[0]
    leaf = next(sw for sw in switches if sw.name == host.port.device)
    samples = 0
    busy = cpu = 0.0
    first = first_cpu = 0.0
    incidents: set[str] = set()
    gathered, steps = Gathered(), 0
    for k in range(1, intervals + 1):
        if k == stuck_at:
            _stick(leaf, leaf.ports.index(host.port.name))
        batches = _batches(switches, float(k), rng)
        samples += sum(len(b) for b in batches)
        t0, c0 = time.perf_counter(), time.process_time()
        # the first interval builds ids, port facts and state: not profiled
        watching = profiler if k > 1 else None
        if watching is not None:
            watching.enable()
        changes = []
        size = -(-len(batches) // max(1, polls))
        for lo in range(0, len(batches), size):
            gathered.add(batches[lo:lo + size], 1)
            if every_poll or gathered.due(settings.gather_intervals, chain.interval_ns,
                                          len(chain.names.devices)):
                changes.extend(chain.observe(gathered.batches))
                steps += 1
                gathered = Gathered()
        if watching is not None:
            watching.disable()
        wall, used = time.perf_counter() - t0, time.process_time() - c0
        if k == 1:
            first, first_cpu = wall, used  # new names: ids, port facts, state grown
        busy += wall
        cpu += used
        incidents |= {f"{a.name} {a.entity}" for a in changes if a.root_cause and a.firing}
    per_interval = samples / intervals
    click.echo(f"fabric: {len(topology.aggs)} aggregation switches, {spines} spines, "
               f"{leaves} leaves, {len(topology.hosts)} hosts, "
               f"{chain.names.n_ports} ports, {chain.names.n_series} series")
    click.echo(f"detectors: {', '.join(names)}")
    click.echo(f"streamed {intervals} intervals of {per_interval:,.0f} samples "
               f"({len(switches)} batches each, in {max(1, polls)} part(s); "
               f"{steps / intervals:.1f} steps per interval)")
    click.echo(f"detection time {busy:.2f} s: {samples / busy:,.0f} samples/s, "
               f"{busy / intervals * 1e3:.1f} ms per interval "
               f"(real time up to {per_interval * intervals / busy / per_interval:,.1f} "
               "intervals per second)")
    if intervals > 1:
        steady, steady_cpu = (busy - first) / (intervals - 1), (cpu - first_cpu) / (intervals - 1)
        click.echo(f"after the first interval ({first * 1e3:,.0f} ms, {first_cpu * 1e3:,.0f} ms "
                   f"CPU): {steady * 1e3:,.1f} ms per interval, {steady_cpu * 1e3:,.1f} ms CPU, "
                   f"{per_interval / steady_cpu:,.0f} samples per CPU second, "
                   f"{steady_cpu / per_interval * 1e9:,.0f} ns CPU per sample")
    click.echo(f"incidents raised: {', '.join(sorted(incidents)) or 'none'}")
    if profiler is not None and profile_to:
        profiler.dump_stats(profile_to)
        stats = pstats.Stats(profile_to)
        stats.sort_stats("cumulative").print_stats(25)
        stats.sort_stats("tottime").print_stats(25)
