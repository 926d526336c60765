"""The whole loop, end to end (issue 2): the lab's real agents, the collectors, the bus, ingest into
chDB, detection, remediation in dry-run — at a compressed time scale.

Each injected fault must be named (right host or link) within 3 sample intervals of its event time,
and a run without faults must raise nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocewatch.scenario.runner import run_scenario
from rocewatch.scenario.scoring import score

HERE = Path(__file__).parent
SPEED = 5.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_each_fault_is_named_within_three_intervals(chdb_dir):
    report = run_scenario(HERE / "faults.yaml", speed=SPEED, chdb_path=chdb_dir)
    s = score(report)
    interval = report["sample_interval_s"]
    for truth in s.truths:
        assert truth.detected, f"{truth.kind} on {truth.target} was not named: {report['alerts']}"
        assert truth.ttd_s is not None and truth.ttd_s <= 3 * interval, (truth.kind, truth.ttd_s)
    assert s.precision == 1.0, s.false_positives
    roots = {(a["kind"], a["entity"]) for a in report["alerts"] if a["root_cause"]}
    assert roots == {("pfc_storm", "host3"), ("faulty_link", "leaf1~spine2"),
                     ("link_down", "leaf4~spine1")}


def test_a_run_without_faults_raises_no_alert(chdb_dir):
    report = run_scenario(HERE / "control.yaml", speed=SPEED, chdb_path=chdb_dir)
    assert [a for a in report["alerts"] if a["root_cause"]] == []
    assert report["score"] == {"precision": 1.0, "recall": 1.0, "ttd_s": {}}
