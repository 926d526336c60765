"""Random scenarios for backtesting: always valid for the lab, and reproducible from the seed."""

from __future__ import annotations

from pathlib import Path

from lab.scenario.load import load_scenario
from pipeline.kinds import FAULT_KINDS
from rocewatch.scenario.generate import generate, write


def test_generated_scenarios_are_valid_and_cover_every_kind(tmp_path: Path) -> None:
    seen: set[str] = set()
    controls = 0
    for path in write(tmp_path, seed=3, count=60):
        scenario = load_scenario(path)  # raises on anything the format refuses
        seen.update(f.kind for f in scenario.faults)
        controls += not scenario.faults
    assert seen == set(FAULT_KINDS)
    assert controls > 0


def test_same_seed_same_scenarios() -> None:
    assert generate(5, 2) == generate(5, 2)
    assert generate(5, 2) != generate(6, 2)
