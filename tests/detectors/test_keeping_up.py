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
from lab.scenario.load import load_scenario
from pipeline.metrics import metric_id
from pipeline.model import Alert, SampleBatch
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
