"""The chain against the lab's physics, in process and deterministic: the simulation's counters go
straight into the chain (no agents, no collectors), so what is tested is the detectors' reading of
honest physics, sample for sample the same every run. The real path is tested in tests/e2e."""

from __future__ import annotations

from pathlib import Path

import pytest

from detectors.chain import DetectionChain
from detectors.settings import DetectionSettings
from lab.scenario.load import load_scenario
from pipeline.model import Alert
from rocewatch.scenario.runner import Gathered, build_report
from rocewatch.scenario.scoring import score
from tests.detectors.simfeed import EPOCH_NS, SimFeed, run_chain

ROOT = Path(__file__).parent.parent
CASES = {
    "e2e/faults.yaml": {("pfc_storm", "host3"), ("faulty_link", "leaf1~spine2"),
                        ("link_down", "leaf4~spine1")},
    "e2e/control.yaml": set(),
    "scenarios/15-pfc-deadlock.yaml": {
        ("pfc_deadlock", "leaf1~spine1,leaf1~spine2,leaf2~spine1,leaf2~spine2")},
}

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", sorted(CASES))
def test_physics_of_each_fault_reads_as_its_incident(name: str) -> None:
    scenario = load_scenario(ROOT / name)
    chain = DetectionChain(DetectionSettings(), scenario.topology())
    gathered = Gathered(alerts=run_chain(SimFeed(scenario), chain))
    report = build_report(scenario.name, scenario.sample_interval_s, scenario.topology(),
                          scenario.truth(), gathered, EPOCH_NS, scenario.duration_s)
    roots = {(a["kind"], a["entity"]) for a in report["alerts"] if a["root_cause"]}
    assert roots == CASES[name]
    s = score(report)
    assert s.precision == 1.0 and s.recall == 1.0
    for truth in s.truths:
        limit = 3 if truth.kind == "pfc_deadlock" else 2
        assert truth.ttd_s is not None and truth.ttd_s <= limit * scenario.sample_interval_s


def test_a_deadlock_is_named_in_time_while_some_of_its_switches_report_late() -> None:
    # the leaves of the cycle go quiet from the deadlock's start for four intervals (an SNMP
    # poll that lags, a collector that fell behind); the spines see every link of the cycle,
    # two ports held in their own egress and two held at the far end, which they pause
    scenario = load_scenario(ROOT / "scenarios/15-pfc-deadlock.yaml")
    start = scenario.faults[0].at_s
    late = ("leaf1", "leaf2")
    chain = DetectionChain(DetectionSettings(), scenario.topology())
    alerts: list[Alert] = []
    for t, batches in SimFeed(scenario).run(start + 8):
        quiet = start < t <= start + 4
        alerts.extend(chain.observe([b for b in batches
                                     if not (quiet and b.devices[0] in late)]))
    first = min(((a.updated_ns - EPOCH_NS) / 1e9 for a in alerts
                 if a.name == "pfc_deadlock" and a.root_cause), default=None)
    assert first is not None and first - start <= 3 * scenario.sample_interval_s
