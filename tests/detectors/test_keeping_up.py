"""Detection's scale paths (issue 13.2) change no answer: rates taken a chunk of rows at a time,
port ids through the vocabularies' table, series ids reused while a stream repeats its layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import detectors.chain
from detectors.chain import DetectionChain
from detectors.series import SeriesIndex
from detectors.settings import DetectionSettings
from detectors.signals import At
from lab.scenario.load import load_scenario
from pipeline.metrics import metric_id
from pipeline.model import Alert, SampleBatch
from pipeline.rates.rule import (
    CADENCE_INTERVALS,
    CADENCE_MIN,
    HORIZON_NS,
    MISSING,
    NS,
    cadence,
)
from tests.detectors.simfeed import SimFeed, run_chain

SCENARIO = """
format: 1
name: chunks
seed: 5
duration_s: 40
sample_interval_s: 1
fabric:
  spines: 2
  leaves: 4
  hosts_per_leaf: 3
  uplinks_per_pair: 1
  link_gbps: 400
  host_gbps: 400
  agents: {gnmi: 0.75, snmp: 0.25}
  profiles: [openconfig, arista, sonic]
routing: ecmp
traffic:
  - {pattern: allreduce, hosts: all, load: 0.4, qps_per_flow: 2}
faults:
  - {kind: pfc_storm, target: host2, at_s: 12.4, until_s: 30, params: {priority: 3}}
"""


def _run(tmp: Path) -> list[tuple[object, ...]]:
    path = tmp / "chunks.yaml"
    path.write_text(SCENARIO)
    scenario = load_scenario(path)
    chain = DetectionChain(DetectionSettings(), scenario.topology())
    alerts: list[Alert] = run_chain(SimFeed(scenario), chain)
    return [(a.name, a.entity, a.root_cause, a.starts_ns, a.updated_ns, a.severity,
             sorted(a.evidence.items()), a.ports) for a in alerts]


def test_rates_taken_in_chunks_give_the_alerts_of_one_pass(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _run(tmp_path)
    assert any(a[0] == "pfc_storm" and a[1] == "host2" and a[2] for a in whole)
    monkeypatch.setattr(detectors.chain, "CHUNK_ROWS", 97)  # splits every wave, mid-port
    assert _run(tmp_path) == whole


def _batch(devices: tuple[str, ...], ports: tuple[str, ...],
           rows: list[tuple[int, int, str, int]]) -> SampleBatch:
    n = len(rows)
    return SampleBatch(np.full(n, 1, np.int64), np.array([r[0] for r in rows], np.int32),
                       np.array([r[1] for r in rows], np.int32),
                       np.array([metric_id(r[2]) for r in rows], np.uint16),
                       np.array([r[3] for r in rows], np.int16), np.zeros(n),
                       np.zeros(n, np.uint8), devices, ports)


def test_series_ids_follow_names_whatever_the_vocabularies_and_layout() -> None:
    names = SeriesIndex()
    rows = [(0, 0, "if_in_octets", -1), (0, 1, "if_in_octets", -1), (1, 0, "pfc_rx_frames", 3)]
    first = names.ids(_batch(("leaf1", "leaf2"), ("Ethernet0", "Ethernet4"), rows))
    again = names.ids(_batch(("leaf1", "leaf2"), ("Ethernet0", "Ethernet4"), rows))
    assert first.series.tolist() == again.series.tolist() == [0, 1, 2]
    assert first.port.tolist() == again.port.tolist() == [0, 1, 2]
    # the same names through other vocabularies, in another order, and a new port and series
    other = names.ids(_batch(("leaf2", "leaf1"), ("Ethernet4", "Ethernet0"),
                             [(0, 1, "pfc_rx_frames", 3), (1, 1, "if_in_octets", -1),
                              (0, 0, "if_in_octets", -1), (1, 0, "if_in_octets", -1)]))
    assert [names.port_label(p) for p in other.port.tolist()] == [
        "leaf2:Ethernet0", "leaf1:Ethernet0", "leaf2:Ethernet4", "leaf1:Ethernet4"]
    assert other.series.tolist() == [2, 0, 3, 1]
    # a layout that repeats with one changed row is judged again, not reused
    changed = names.ids(_batch(("leaf1", "leaf2"), ("Ethernet0", "Ethernet4"),
                               [*rows[:2], (1, 0, "pfc_rx_frames", 4)]))
    assert changed.series.tolist() == [0, 1, 4]


class _Shuffled:
    """A chain fed every batch with its rows in a seeded random order."""

    def __init__(self, chain: DetectionChain) -> None:
        self.chain = chain
        self.rng = np.random.default_rng(3)

    def observe(self, batches: list[SampleBatch]) -> list[Alert]:
        return self.chain.observe([b.take(self.rng.permutation(len(b))) for b in batches])


def test_rows_in_any_order_give_the_same_alerts(tmp_path: Path) -> None:
    """The rate rule keeps a live interval's rows in their order (each series once: no sort);
    any order of the same rows gives the same state and the same alerts."""
    whole = _run(tmp_path)
    path = tmp_path / "chunks.yaml"
    scenario = load_scenario(path)
    chain = DetectionChain(DetectionSettings(), scenario.topology())
    alerts: list[Alert] = run_chain(SimFeed(scenario), _Shuffled(chain))
    assert [(a.name, a.entity, a.root_cause, a.starts_ns, a.updated_ns, a.severity,
             sorted(a.evidence.items()), a.ports) for a in alerts] == whole


def test_switches_judged_together_give_the_alerts_of_each_judged_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-switch rules compute each signal once over every due switch and judge each switch on
    its part (At.split); an At of each switch's own gives the same alerts."""
    spec = tmp_path / "device.yaml"
    spec.write_text(SCENARIO.replace(
        "faults:\n", "faults:\n  - {kind: buffer_misconfig, target: leaf2, at_s: 8, "
        "params: {xoff_fraction: 0.1}}\n"))
    scenario = load_scenario(spec)

    def alerts() -> list[tuple[object, ...]]:
        chain = DetectionChain(DetectionSettings(), scenario.topology())
        return [(a.name, a.entity, a.root_cause, a.starts_ns, sorted(a.evidence.items()),
                 a.ports) for a in run_chain(SimFeed(scenario), chain)]

    together = alerts()
    assert any(a[0] in ("pause_without_load", "uplink_imbalance") for a in together)
    monkeypatch.setattr(At, "split", lambda self, part: At(self.pids[part], self.ts[part],
                                                           self.slack_s[part]))
    assert alerts() == together


def test_cadence_is_the_median_of_the_recent_intervals() -> None:
    """The cadence's sorting network gives the median of the valid intervals (those that began
    within the horizon), as a sort would."""
    rng = np.random.default_rng(11)
    n = 4000
    steps = rng.choice([1, 10, 10, 10, 30, 200], size=(n, CADENCE_INTERVALS + 1)) * NS
    times = np.cumsum(steps, axis=1)[:, ::-1].copy()
    times = np.concatenate([times[:, :1] + rng.integers(1, 20, n)[:, None] * NS, times], axis=1)
    cut = rng.integers(1, CADENCE_INTERVALS + 3, n)  # rows with a shorter history
    times[np.arange(CADENCE_INTERVALS + 2)[None, :] >= cut[:, None]] = MISSING
    got = cadence(times)
    for i in range(n):
        row = times[i]
        widths = [row[k + 1] - row[k + 2] for k in range(CADENCE_INTERVALS)
                  if row[k + 2] != MISSING and row[k + 2] >= row[0] - HORIZON_NS]
        want = float(np.median(widths)) if len(widths) >= CADENCE_MIN else 0.0
        assert got[i] == want, (i, row.tolist(), got[i], want)


def test_the_table_keeps_the_newest_row_of_each_series() -> None:
    """A backlog (two sample times per series, rows grouped by series) stores each series'
    newest rate or gauge value, its time and interval; every port seen is listed once, sorted."""
    from detectors.features import FeatureTable, col
    from pipeline.rates.state import RateState

    names = SeriesIndex()
    rows = [(0, 1, "if_out_octets", -1), (0, 0, "if_out_octets", -1),
            (0, 0, "queue_occupancy_bytes", 3), (1, 0, "pfc_rx_frames", 3)]
    state, table = RateState(), FeatureTable()
    for k, scale in ((1, 0.0), (2, 100.0), (3, 300.0)):
        batch = _batch(("leaf1", "leaf2"), ("Ethernet0", "Ethernet4"), rows)
        batch = SampleBatch(np.full(len(rows), k * NS, np.int64), batch.device, batch.port,
                            batch.metric, batch.qual, np.full(len(rows), scale),
                            batch.flags, batch.devices, batch.ports)
        ids = names.ids(batch)
        if k == 1:
            touched = table.apply(state.update(batch, ids.series, ids.port))
            continue
        if k == 2:
            backlog, backlog_ids = batch, ids
            continue
        both = SampleBatch.concat([backlog, batch])
        series = np.concatenate([backlog_ids.series, ids.series])
        port = np.concatenate([backlog_ids.port, ids.port])
        touched = table.apply(state.update(both, series, port))
    assert touched.tolist() == sorted(set(touched.tolist())) == [0, 1, 2]
    pid = {names.port_label(p): p for p in touched.tolist()}
    out = col("if_out_octets")
    assert table.value[pid["leaf1:Ethernet0"], out] == 200.0  # (300 - 100) over 1 s: the newest
    assert table.ts[pid["leaf1:Ethernet0"], out] == 3 * NS
    assert table.dt[pid["leaf1:Ethernet0"], out] == 1.0
    assert table.value[pid["leaf1:Ethernet0"], col("queue_occupancy_bytes", 3)] == 300.0
    assert table.port_ts[pid["leaf2:Ethernet0"]] == 3 * NS
