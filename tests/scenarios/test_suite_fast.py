"""CI's fast subset of the public suite: small scenarios end to end through the real platform at
high speed, asserting what the report found. The whole suite runs with
``rocewatch scenario suite tests/scenarios`` (docs/detection.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocewatch.scenario.runner import run_scenario
from rocewatch.scenario.scoring import names_target, score

HERE = Path(__file__).parent
FAST = ["15-pfc-deadlock.yaml", "20-fast-cadence-down-storm.yaml", "12-link-down-snmp-only.yaml"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
_REPORTS: dict[str, dict[str, Any]] = {}


def report_of(name: str, chdb_dir: Path) -> dict[str, Any]:
    """Each scenario runs once per test session, however many tests read its report."""
    if name not in _REPORTS:
        _REPORTS[name] = run_scenario(HERE / name, speed=5.0, chdb_path=chdb_dir)
    return _REPORTS[name]


@pytest.mark.parametrize("name", FAST)
def test_fast_scenario_finds_every_fault_and_nothing_else(name, chdb_dir, tmp_path):
    report = report_of(name, chdb_dir)
    (tmp_path / "report.json").write_text(json.dumps(report))
    s = score(report)
    assert s.recall == 1.0, report["alerts"]
    assert s.precision == 1.0, s.false_positives
    for truth in report["truth"]:
        hit = [a for a in report["alerts"] if a["root_cause"] and names_target(a, truth["target"])]
        assert hit, truth


def test_report_has_exactly_the_documented_shape(chdb_dir):
    report = report_of("20-fast-cadence-down-storm.yaml", chdb_dir)
    assert list(report) == ["format", "scenario", "sample_interval_s", "topology", "truth",
                            "alerts", "actions", "score"]
    assert set(report["topology"]) == {"links", "hosts"}
    assert set(report["topology"]["links"][0]) == {"id", "a", "b"}
    assert set(report["topology"]["hosts"][0]) == {"name", "port"}
    assert set(report["truth"][0]) == {"kind", "target", "start_s", "end_s"}
    for alert in report["alerts"]:
        assert set(alert) == {"kind", "entity", "ports", "first_s", "last_s", "severity",
                              "root_cause"}
    for action in report["actions"]:
        assert set(action) == {"action", "entity", "at_s", "mode", "outcome"}
    assert set(report["score"]) == {"precision", "recall", "ttd_s"}
